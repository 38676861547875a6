"""Test settings: the real settings with an isolated lake, Redis database and fast hashing.

Redis is real (``TDWEB_TEST_REDIS_URL``, default database 15 of the local server) for Celery and
Channels; the metadata DB is SQLite unless ``DATABASE_URL`` names PostgreSQL.
"""

import os
import tempfile
import uuid

from tdweb.settings import *  # noqa: F403

TDWEB_LAKE = os.environ.get("TDWEB_TEST_LAKE") or tempfile.mkdtemp(prefix="tdweb-test-lake-")
TDWEB_CATALOG_URL = os.environ.get("TDWEB_TEST_CATALOG_URL", "")  # never a deployment's catalog
REDIS_URL = os.environ.get("TDWEB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
CELERY_BROKER_URL = REDIS_URL
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_REDIS_SOCKET_TIMEOUT_S}],  # noqa: F405
            "prefix": f"tdweb-test-{uuid.uuid4().hex[:8]}",
        },
    }
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]  # noqa: F405  # Django's test client
TDWEB_HEARTBEAT_S = 1.0
STATICFILES_DIRS = [p for p in STATICFILES_DIRS]  # noqa: F405
DJANGO_VITE = {"default": {"dev_mode": False, "manifest_path": FRONTEND_DIST / "manifest.json"}}  # noqa: F405
SILENCED_SYSTEM_CHECKS = ["django_vite.W001"]
# the web processes' pool of metadata-DB connections on PostgreSQL (tdweb/asgi.py turns it on there)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_MAX > 0:  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = DB_POOL  # noqa: F405
