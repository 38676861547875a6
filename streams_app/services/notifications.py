"""The in-app inbox: receive TDengine notification messages, store each event once, push it to
signed-in browsers (group ``inbox.<user_id>``), acknowledge.

A message is the JSON of seed 000/002 (``messageId``, ``timestamp``, ``streams[].events[]``).
Each event is stored once per inbox: its dedupe key is built from the stream, the window/trigger id,
the event type and the result, so a message re-sent after a restart (at-least-once delivery) adds
nothing, while a window recalculated with a new result is a new notification.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q

from spark_workers.errors import Code, TdError
from streams_app.models import Inbox, Notification
from streams_app.selectors import (
    notification_unread_count,
    notifications_filter,
    notifications_visible,
)
from streams_app.serializers import notification_group_context, notification_json

log = logging.getLogger(__name__)
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class NotificationError(TdError):
    """A message that is not a TDengine notification message (says what is wrong and where)."""

    code = Code.INVALID_OPERATION


def inbox_get_or_create(*, name: str, owner: Any | None = None) -> Inbox:
    """The inbox called ``name``, created with a fresh key if missing."""
    inbox, _ = Inbox.objects.get_or_create(name=name, defaults={"key": Inbox.new_key(), "owner": owner})
    return inbox


def inbox_check_key(*, name: str, key: str) -> Inbox | None:
    """The inbox if ``key`` is its key, else None (constant-time compare)."""
    import hmac

    inbox = Inbox.objects.filter(name=name).first()
    if inbox is None or not key or not hmac.compare_digest(inbox.key, key):
        return None
    return inbox


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def parse_message(text: str) -> dict[str, Any]:
    """Validate the message shape; raises ``NotificationError`` naming the faulty field."""
    if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise NotificationError(f"message larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        msg = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotificationError(f"message is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(msg, dict):
        raise NotificationError("message must be a JSON object")
    if not isinstance(msg.get("messageId"), str) or not msg["messageId"]:
        raise NotificationError("field messageId: a non-empty string is required")
    streams = msg.get("streams")
    if not isinstance(streams, list):
        raise NotificationError("field streams: an array is required")
    for i, s in enumerate(streams):
        if not isinstance(s, dict) or not isinstance(s.get("streamName"), str):
            raise NotificationError(f"field streams[{i}].streamName: a string is required")
        if not isinstance(s.get("events"), list):
            raise NotificationError(f"field streams[{i}].events: an array is required")
        for j, ev in enumerate(s["events"]):
            if not isinstance(ev, dict) or not isinstance(ev.get("eventType"), str):
                raise NotificationError(f"field streams[{i}].events[{j}].eventType: a string is required")
    return msg


def _dedupe_key(stream: str, idx: str, event: dict[str, Any]) -> str:
    wid = event.get("windowId") or event.get("triggerId")
    if wid:
        basis = json.dumps(
            [stream, wid, event.get("eventType"), event.get("result")], sort_keys=True, default=str
        )
    else:
        basis = idx
    return hashlib.sha256(basis.encode()).hexdigest()[:64]


def notification_ingest(*, inbox: Inbox, text: str) -> list[Notification]:
    """Store the events of one message (each once); returns the new notifications and pushes them
    to the browsers of the inbox's owner and of staff users.

    Raises:
        NotificationError: the text is not a notification message.
    """
    msg = parse_message(text)
    created: list[Notification] = []
    for i, s in enumerate(msg["streams"]):
        for j, e in enumerate(s["events"]):
            key = _dedupe_key(s["streamName"], f"{msg['messageId']}|{i}|{j}", e)
            try:
                with transaction.atomic():
                    n = Notification.objects.create(
                        inbox=inbox,
                        dedupe_key=key,
                        message_id=msg["messageId"][:128],
                        stream_name=s["streamName"][:192],
                        event_type=str(e["eventType"])[:32],
                        table_name=str(e.get("tableName") or "")[:192],
                        window_id=str(e.get("windowId") or e.get("triggerId") or "")[:128],
                        window_start=_int(e.get("windowStart")),
                        window_end=_int(e.get("windowEnd")),
                        event_time=_int(e.get("eventTime")),
                        payload=e,
                    )
                created.append(n)
            except IntegrityError:
                continue  # already stored: at-least-once delivery sent it again
    if created:
        notifications_push(inbox=inbox, notifications=created)
    return created


def inbox_users(inbox: Inbox) -> list[int]:
    """Users who see an inbox: its owner and staff users."""
    User = get_user_model()
    return list(
        User.objects.filter(Q(is_staff=True) | Q(pk=inbox.owner_id), is_active=True)
        .values_list("pk", flat=True)
        .distinct()
    )


def notifications_push(*, inbox: Inbox, notifications: list[Notification]) -> None:
    """Send new or changed notifications (and the new unread counts) to the users' browser sockets,
    through the channel layer: every web process's browsers get them, whichever process stored or
    acknowledged them."""
    layer = get_channel_layer()
    if layer is None:
        return
    context = notification_group_context(notifications)
    messages = [notification_json(n, context=context) for n in notifications]
    for uid in inbox_users(inbox):
        try:
            for m in messages:
                async_to_sync(layer.group_send)(
                    f"inbox.{uid}", {"type": "inbox.notification", "notification": m}
                )
        except Exception as e:  # live push is best effort; the inbox keeps the truth
            log.warning("push to inbox.%s failed: %s", uid, e)
    unread_push(user_ids=inbox_users(inbox))


def unread_push(*, user_ids: list[int]) -> None:
    """Send each user's unread count (``{"type": "unread", "count": n}`` on ``/ws/inbox/``) to their
    browsers on every web process (best effort: a failed push is logged)."""
    layer = get_channel_layer()
    if layer is None:
        return
    for uid in user_ids:
        try:
            async_to_sync(layer.group_send)(
                f"inbox.{uid}", {"type": "inbox.unread", "count": notification_unread_count(user_id=uid)}
            )
        except Exception as e:
            log.warning("push to inbox.%s failed: %s", uid, e)


def notification_ack(*, notification: Notification) -> Notification:
    """Mark one notification acknowledged. The change is pushed (after commit) to the browsers of
    the inbox's users, the notification and their new unread counts, so the badge and the inbox
    page of a browser connected to another web process follow (issue 14)."""
    if not notification.acknowledged:
        notification.acknowledged = True
        notification.save(update_fields=["acknowledged"])
        inbox = notification.inbox
        transaction.on_commit(lambda: notifications_push(inbox=inbox, notifications=[notification]))
    return notification


def notification_ack_all(
    *,
    user: Any,
    stream: str | None = None,
    event_type: str | None = None,
    group: str | None = None,
    since: dt.datetime | None = None,
) -> int:
    """Acknowledge every unread notification the user sees (``notifications_visible``: the
    inboxes he owns; staff: every inbox) that matches the inbox page's filters (as
    ``notifications_filter``: stream, event type, group ``tableName``, received since); returns how
    many changed. The filters only narrow what the user sees: no filter reaches another user's
    inbox. The new unread counts of the users of the inboxes concerned are pushed to their browsers
    (after commit)."""
    unread = notifications_filter(
        notifications_visible(user=user),
        stream=stream,
        event_type=event_type,
        group=group,
        since=since,
        acknowledged=False,
    )
    inbox_ids = set(unread.order_by().values_list("inbox_id", flat=True).distinct())
    changed = unread.update(acknowledged=True)
    if changed:
        users = sorted(
            {uid for inbox in Inbox.objects.filter(pk__in=inbox_ids) for uid in inbox_users(inbox)}
        )
        transaction.on_commit(lambda: unread_push(user_ids=users))
    return changed
