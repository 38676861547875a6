"""WebSocket consumers.

- ``/ws/notify/<inbox>?key=<key>``: producers (tdweb's own streams, or a real TDengine) send
  notification messages (seed 000/002 JSON) as text frames; a wrong or missing key is refused at
  the handshake (HTTP 403). Each message is stored once and pushed to the inbox's users; the
  producer gets no reply frames (TDengine expects none).
- ``/ws/inbox/``: a signed-in browser's inbox (group ``inbox.<user_id>``).
- ``/ws/streams/`` and ``/ws/streams/<id>/``: live status and progress (groups ``streams``,
  ``stream.<id>``).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer

from streams_app.selectors import notification_unread_count, stream_get
from streams_app.services.notifications import NotificationError, inbox_check_key, notification_ingest

log = logging.getLogger(__name__)


class NotifyConsumer(AsyncWebsocketConsumer):
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


class InboxConsumer(AsyncJsonWebsocketConsumer):
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
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def inbox_notification(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "notification", "notification": event["notification"]})

    async def inbox_unread(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "unread", "count": event["count"]})


class StreamsConsumer(AsyncJsonWebsocketConsumer):
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
            await self.channel_layer.group_discard(self.group, self.channel_name)

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
