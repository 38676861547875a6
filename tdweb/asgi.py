"""ASGI entry point: HTTP to Django, WebSockets to Channels consumers."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tdweb.settings")
# a web process: its requests share a bounded pool of metadata-DB connections on PostgreSQL
# (tdweb/settings.py); read by the settings, so set before get_asgi_application() loads them
os.environ.setdefault("TDWEB_DB_POOLED", "1")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from streams_app.routing import websocket_origin_validator, websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # Origin must be one of ALLOWED_HOSTS (none needed on /ws/notify/: producers are not browsers)
        "websocket": websocket_origin_validator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
