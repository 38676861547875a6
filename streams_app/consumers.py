"""WebSocket consumers.

- ``/ws/notify/<inbox>?key=<key>``: producers (tdweb's own streams, or a real TDengine) send
  notification messages (seed 000/002 JSON) as text frames; a wrong or missing key is refused at
  the handshake (HTTP 403). Each message is stored once and pushed to the inbox's users; the
  producer gets no reply frames (TDengine expects none).
- ``/ws/inbox/``: a signed-in browser's inbox (group ``inbox.<user_id>``).
- ``/ws/streams/`` and ``/ws/streams/<id>/``: live status and progress (groups ``streams``,
  ``stream.<id>``).

Every consumer survives a slow or lost Redis (the channel layer): a failed receive is retried
``LAYER_RETRIES`` times with a one-line warning, then (or when joining a group fails) the socket is
closed with code 1013 "try again later" and a one-line warning; no Redis ``TimeoutError`` or
``ConnectionError`` escapes as a traceback (issue 16 item 9). Browsers reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import redis.exceptions
from channels.consumer import AsyncConsumer
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch

from streams_app.selectors import notification_unread_count, stream_get
from streams_app.services.notifications import NotificationError, inbox_check_key, notification_ingest

log = logging.getLogger(__name__)

# what a slow, restarting or unreachable Redis raises through channels_redis (asyncio's timeouts
# are the built-in TimeoutError since Python 3.11)
LAYER_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.TimeoutError,
    redis.exceptions.ConnectionError,
    TimeoutError,
    ConnectionError,
)
LAYER_RETRIES = 3
LAYER_RETRY_DELAY_S = 0.5
CLOSE_TRY_AGAIN_LATER = 1013  # RFC 6455 registry: "Try Again Later"


def _brief(e: BaseException) -> str:
    """An exception as one short line: its class and first line."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


class LayerSafeConsumer(AsyncConsumer):
    """Channels' consumer loop (``AsyncConsumer.__call__``) made to survive channel-layer
    failures (module docstring): ``channel_receive`` retries, and a failure that still escapes the
    handlers ends the consumer with a warning and the socket closed instead of a traceback."""

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Any) -> None:
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        self.base_send = send
        sources = [receive]
        try:
            if self.channel_layer is not None:
                self.channel_name = await self.channel_layer.new_channel()
                self.channel_receive = self._layer_receive
                sources.append(self.channel_receive)
            await await_many_dispatch(sources, self.dispatch)
        except StopConsumer:
            pass
        except LAYER_ERRORS as e:
            log.warning(
                "websocket %s closed: channel layer unavailable (%s)", scope.get("path", "?"), _brief(e)
            )
            with contextlib.suppress(Exception):  # the client may be gone already
                await send({"type": "websocket.close", "code": CLOSE_TRY_AGAIN_LATER})

    async def _layer_receive(self) -> dict[str, Any]:
        """The next message of this consumer's channel, retrying a failed Redis read
        ``LAYER_RETRIES`` times (0.5 s, 1 s, 1.5 s apart) before giving up (the error escapes)."""
        failures = 0
        while True:
            try:
                return await self.channel_layer.receive(self.channel_name)  # type: ignore[no-any-return]
            except LAYER_ERRORS as e:
                failures += 1
                if failures > LAYER_RETRIES:
                    raise
                path = self.scope.get("path", "?")
                log.warning(
                    "websocket %s: channel layer receive failed (%s), retry %d", path, _brief(e), failures
                )
                await asyncio.sleep(LAYER_RETRY_DELAY_S * failures)

    async def _group_discard(self, group: str) -> None:
        """Leave a group; a failure is only logged (Redis expires the membership by itself)."""
        try:
            await self.channel_layer.group_discard(group, self.channel_name)
        except LAYER_ERRORS as e:
            log.warning("websocket %s: leaving %s failed (%s)", self.scope.get("path", "?"), group, _brief(e))


class NotifyConsumer(LayerSafeConsumer, AsyncWebsocketConsumer):
    """Receiving endpoint of an inbox (key in the query string, as in seed 000's URL examples)."""

    async def connect(self) -> None:
        name = self.scope["url_route"]["kwargs"]["inbox"]
        query = parse_qs(self.scope.get("query_string", b"").decode())
        key = (query.get("key") or [""])[0]
        self.inbox = await database_sync_to_async(inbox_check_key)(name=name, key=key)
        if self.inbox is None:
            await self.close(code=4403)  # before accept: the handshake is refused with HTTP 403
            return
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        text = text_data if text_data is not None else (bytes_data or b"").decode("utf-8", "replace")
        try:
            await database_sync_to_async(notification_ingest)(inbox=self.inbox, text=text)
        except NotificationError as e:
            log.warning("inbox %s: rejected message: %s", self.inbox.name, e.message)


class InboxConsumer(LayerSafeConsumer, AsyncJsonWebsocketConsumer):
    """A signed-in browser's inbox feed; anonymous sockets are refused."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.group = f"inbox.{user.pk}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        count = await database_sync_to_async(notification_unread_count)(user_id=user.pk)
        await self.send_json({"type": "unread", "count": count})

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self._group_discard(self.group)

    async def inbox_notification(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "notification", "notification": event["notification"]})

    async def inbox_unread(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "unread", "count": event["count"]})


class StreamsConsumer(LayerSafeConsumer, AsyncJsonWebsocketConsumer):
    """Live stream status and progress for signed-in users (all streams, or one)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user = user
        stream_id = self.scope["url_route"]["kwargs"].get("stream_id")
        if (
            stream_id is not None
            and await database_sync_to_async(stream_get)(user=user, stream_id=int(stream_id)) is None
        ):
            await self.close(code=4404)
            return
        self.group = f"stream.{stream_id}" if stream_id is not None else "streams"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self._group_discard(self.group)

    async def _visible(self, stream_id: int) -> bool:
        if self.user.is_staff:
            return True
        return await database_sync_to_async(stream_get)(user=self.user, stream_id=stream_id) is not None

    async def stream_status(self, event: dict[str, Any]) -> None:
        if await self._visible(int(event["stream"]["id"])):
            await self.send_json({"type": "stream.status", "stream": event["stream"]})

    async def stream_progress(self, event: dict[str, Any]) -> None:
        if await self._visible(int(event["stream_id"])):
            await self.send_json(
                {"type": "stream.progress", "stream_id": event["stream_id"], "progress": event["progress"]}
            )
