"""WebSocket routes (see consumers)."""

from django.urls import path

from streams_app.consumers import InboxConsumer, NotifyConsumer, StreamsConsumer

websocket_urlpatterns = [
    path("ws/notify/<slug:inbox>", NotifyConsumer.as_asgi()),
    path("ws/notify/<slug:inbox>/", NotifyConsumer.as_asgi()),
    path("ws/inbox/", InboxConsumer.as_asgi()),
    path("ws/streams/", StreamsConsumer.as_asgi()),
    path("ws/streams/<int:stream_id>/", StreamsConsumer.as_asgi()),
]
