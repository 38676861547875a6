"""WebSocket routes (see consumers) and the Origin check in front of them.

Browsers send an ``Origin`` header with every WebSocket handshake; a page of another site could
otherwise open ``/ws/inbox/`` or ``/ws/streams/`` with the user's session cookie (cross-site
WebSocket hijacking). ``websocket_origin_validator`` refuses (HTTP 403 at the handshake) any
``Origin`` whose host is not in ``ALLOWED_HOSTS`` (Channels' ``AllowedHostsOriginValidator``), and a
handshake without ``Origin`` too, except on ``/ws/notify/``: producers there (tdweb's own streams, a
real TDengine) are not browsers and send none, and they prove themselves with the inbox key.
"""

from typing import Any

from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from streams_app.consumers import InboxConsumer, NotifyConsumer, StreamsConsumer

websocket_urlpatterns = [
    path("ws/notify/<slug:inbox>", NotifyConsumer.as_asgi()),
    path("ws/notify/<slug:inbox>/", NotifyConsumer.as_asgi()),
    path("ws/inbox/", InboxConsumer.as_asgi()),
    path("ws/streams/", StreamsConsumer.as_asgi()),
    path("ws/streams/<int:stream_id>/", StreamsConsumer.as_asgi()),
]

NOTIFY_PREFIX = "/ws/notify/"


class NotifyAwareOriginValidator:
    """ASGI middleware: Channels' ``AllowedHostsOriginValidator`` for every WebSocket, except that
    a handshake on ``/ws/notify/`` without an ``Origin`` header passes (see module docstring); one
    with an ``Origin`` is checked like any other."""

    def __init__(self, application: Any) -> None:
        self.application = application
        self.validated = AllowedHostsOriginValidator(application)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        no_origin = not any(name == b"origin" for name, _ in scope.get("headers", []))
        if no_origin and scope.get("path", "").startswith(NOTIFY_PREFIX):
            return await self.application(scope, receive, send)
        return await self.validated(scope, receive, send)


def websocket_origin_validator(application: Any) -> NotifyAwareOriginValidator:
    """Wrap the WebSocket application in the Origin check (``tdweb/asgi.py``)."""
    return NotifyAwareOriginValidator(application)
