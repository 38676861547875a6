"""tdweb settings, all from the environment (django-environ); defaults run everything embedded.

Environment variables (README "Configuration"): ``DATABASE_URL`` (default SQLite in var/),
``REDIS_URL`` (default redis://127.0.0.1:6379/0), ``TDWEB_LAKE`` (default var/lake),
``TDWEB_CATALOG_URL`` (default "": SQLite in the lake; ``postgres://...`` for a shared catalog),
``TDWEB_CHECKPOINTS`` (default "": streams' checkpoints in the lake's local folder),
``SPARK_MASTER`` (default local[*]), ``TDWEB_TIMEZONE`` (default UTC), ``TDWEB_HOST`` /
``TDWEB_PORT`` (default 127.0.0.1:8000), ``TDWEB_ADMIN_PASSWORD`` (default taosdata),
``TDWEB_SECRET_KEY``, ``TDWEB_DEBUG``, ``TDWEB_STREAM_SLOTS`` (streams per worker, default 32),
``TDWEB_VAR`` (folder for the SQLite DB, logs and the default lake; default var/).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import environ
import structlog
from django.core.exceptions import ImproperlyConfigured

from streams_app.api.schema import TAGS as API_TAGS  # plain data, no Django import
from tdweb.secret_key import secret_key_load

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
VAR_DIR = Path(env.str("TDWEB_VAR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("TDWEB_DEBUG", default=False)
# unset: a random key generated once in TDWEB_VAR/secret_key; a known or short key refuses to start
SECRET_KEY = secret_key_load(configured=env.str("TDWEB_SECRET_KEY", default=""), debug=DEBUG, var_dir=VAR_DIR)
TDWEB_HOST = env.str("TDWEB_HOST", default="127.0.0.1")
TDWEB_PORT = env.int("TDWEB_PORT", default=8000)
# the Spark UI link of a stream: "" = http://TDWEB_HOST:<bound UI port>/; else a template with
# {host} and {port} (spark_workers/runtime/session.py public_ui_url)
TDWEB_SPARK_UI_URL = env.str("TDWEB_SPARK_UI_URL", default="")
# deployments name their host names in TDWEB_ALLOWED_HOSTS (docs/security.md)
ALLOWED_HOSTS = env.list("TDWEB_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", TDWEB_HOST])
CSRF_TRUSTED_ORIGINS = env.list(
    "TDWEB_CSRF_TRUSTED_ORIGINS",
    default=[
        f"http://{TDWEB_HOST}:{TDWEB_PORT}",
        f"http://127.0.0.1:{TDWEB_PORT}",
        f"http://localhost:{TDWEB_PORT}",
    ],
)
# HTTPS behind a TLS-terminating proxy: docs/security.md "Production configuration and TLS"; the
# defaults serve plain HTTP on 127.0.0.1 (make demo, make up)
SECURE_SSL_REDIRECT = env.bool("TDWEB_SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("TDWEB_SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("TDWEB_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("TDWEB_SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("TDWEB_SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("TDWEB_CSRF_COOKIE_SECURE", default=False)
_proxy_ssl_header = env.list("TDWEB_SECURE_PROXY_SSL_HEADER", default=[])  # e.g. HTTP_X_FORWARDED_PROTO,https
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured(
        "TDWEB_SECURE_PROXY_SSL_HEADER is 'HEADER,value', e.g. HTTP_X_FORWARDED_PROTO,https"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], _proxy_ssl_header[1]) if _proxy_ssl_header else None
TDWEB_PROXY_HEADERS = env.bool("TDWEB_PROXY_HEADERS", default=False)  # manage.py up: daphne --proxy-headers
# manage.py up: Daphne processes sharing the listening socket (one core each for CPU-bound requests)
TDWEB_WEB_PROCESSES = env.int("TDWEB_WEB_PROCESSES", default=min(os.cpu_count() or 1, 4))

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI from our own static files (no CDN: works offline)
    "axes",
    "django_vite",
    "channels",
    "streams_app",
]

MIDDLEWARE = [
    "streams_app.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

ROOT_URLCONF = "tdweb.urls"
ASGI_APPLICATION = "tdweb.asgi.application"
WSGI_APPLICATION = "tdweb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'tdweb.sqlite3'}")}
# Connections outlive a request (docs/PERFORMANCE.md, "REST and line-protocol ingest"): opening
# one per request cost 4 ms of a trivial /rest/sql request on PostgreSQL (10.5 against 6.5 ms)
# and about 2 ms on SQLite. PostgreSQL, web processes (tdweb/asgi.py sets TDWEB_DB_POOLED):
# Django's pool (psycopg_pool), at most TDWEB_DB_POOL_MAX connections per process (a request
# holds one while it runs; one over the bound waits up to TDWEB_DB_POOL_TIMEOUT_S), so a host's
# total stays under PostgreSQL's max_connections (operations.md); TDWEB_DB_POOL_MAX 0: no pool,
# a connection per request (e.g. behind PgBouncer). Not in the worker: a stream's supervisor
# thread holds its connection as long as the stream runs, so a bounded pool would keep the
# streams beyond the bound from starting. SQLite: each thread keeps its connection for
# TDWEB_DB_CONN_MAX_AGE_S.
DB_POOL_MAX = env.int("TDWEB_DB_POOL_MAX", default=16)
DB_POOL_TIMEOUT_S = env.float("TDWEB_DB_POOL_TIMEOUT_S", default=30.0)
DB_POOL = {"min_size": 1, "max_size": DB_POOL_MAX, "timeout": DB_POOL_TIMEOUT_S}
if (
    DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    and DB_POOL_MAX > 0
    and env.bool("TDWEB_DB_POOLED", default=False)
):
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = DB_POOL
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("TDWEB_DB_CONN_MAX_AGE_S", default=600)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
AUTHENTICATION_BACKENDS = [
    "streams_app.api.authentication.LockoutBackend",  # first: django-axes refuses locked-out pairs
    "django.contrib.auth.backends.ModelBackend",
]
# Authentication throttling (docs/decisions.md): TDWEB_AUTH_FAILURE_LIMIT failed passwords of one
# user name from one client address lock that pair out for TDWEB_AUTH_COOLOFF_S
AXES_FAILURE_LIMIT = env.int("TDWEB_AUTH_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = dt.timedelta(seconds=env.float("TDWEB_AUTH_COOLOFF_S", default=900.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the cool-off runs from the lockout, not the last try
AXES_LOCKOUT_CALLABLE = "streams_app.api.authentication.lockout_response"
AXES_VERBOSE = False
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [FRONTEND_DIST] if FRONTEND_DIST.is_dir() else []
WHITENOISE_USE_FINDERS = True
DJANGO_VITE = {
    "default": {
        "dev_mode": env.bool("TDWEB_VITE_DEV", default=False),
        "dev_server_port": 5173,
        "manifest_path": FRONTEND_DIST / "manifest.json",
        "static_url_prefix": "",
    }
}

# ---------------------------------------------------------------- tdweb
# a local folder or an object-store URL (s3://bucket/prefix, credentials from AWS_*); a remote lake
# keeps its local parts (SQLite catalog, stream checkpoints) under TDWEB_VAR/lake-local, which the
# lake code and Spark's Python workers find through the environment
TDWEB_LAKE = env.str("TDWEB_LAKE", default=str(VAR_DIR / "lake"))
# the catalog: "" = SQLite in the lake folder; postgres://... = shared (docs/operations.md)
TDWEB_CATALOG_URL = env.str("TDWEB_CATALOG_URL", default="")
# streams' checkpoints: "" = <lake's local folder>/_streams; a shared path or a Hadoop URI
# (s3a://, hdfs://) when workers and Spark run on several hosts (docs/operations.md)
TDWEB_CHECKPOINTS = env.str("TDWEB_CHECKPOINTS", default="")
os.environ.setdefault("TDWEB_VAR", str(VAR_DIR))
TDWEB_TIMEZONE = env.str("TDWEB_TIMEZONE", default="UTC")
SPARK_MASTER = env.str("SPARK_MASTER", default="local[*]")
TDWEB_ADMIN_USER = "root"
TDWEB_ADMIN_PASSWORD = env.str("TDWEB_ADMIN_PASSWORD", default="taosdata")
TDWEB_STREAM_SLOTS = env.int("TDWEB_STREAM_SLOTS", default=32)
TDWEB_STREAM_BUCKETS = env.int("TDWEB_STREAM_BUCKETS", default=8)
TDWEB_HEARTBEAT_S = env.float("TDWEB_HEARTBEAT_S", default=3.0)
TDWEB_STALE_AFTER_S = env.float("TDWEB_STALE_AFTER_S", default=15.0)
# queries a worker starts at once, each until its first micro-batch or TDWEB_START_GATE_S
# (services/supervisor.py, the start gate); 4 per CPU: 10 streams after a kill -9 on 2 cores
# were all processing again after 45.6 s with no gate, 56.4 s four at a time, 122 s two at a
# time (docs/PERFORMANCE.md, "Recovery after kill -9")
TDWEB_START_CONCURRENCY = env.int("TDWEB_START_CONCURRENCY", default=4 * (os.cpu_count() or 1))
TDWEB_START_GATE_S = env.float("TDWEB_START_GATE_S", default=30.0)
# memory tracing of the worker process (bench/soak_bench.py --tracemalloc): a folder where the
# worker writes a tracemalloc snapshot every TDWEB_TRACEMALLOC_EVERY_S seconds; empty: off
TDWEB_TRACEMALLOC_DIR = env.str("TDWEB_TRACEMALLOC_DIR", default="")
TDWEB_TRACEMALLOC_EVERY_S = env.float("TDWEB_TRACEMALLOC_EVERY_S", default=300.0)
# memory sampling of the worker process (bench/soak_bench.py --samples): a folder where the worker
# appends a JSON line (RSS, Arrow pool, glibc arenas, Delta snapshots) every
# TDWEB_MEMORY_SAMPLES_EVERY_S seconds; empty: off
TDWEB_MEMORY_SAMPLES_DIR = env.str("TDWEB_MEMORY_SAMPLES_DIR", default="")
TDWEB_MEMORY_SAMPLES_EVERY_S = env.float("TDWEB_MEMORY_SAMPLES_EVERY_S", default=60.0)
TDWEB_PROGRESS_KEEP = env.int("TDWEB_PROGRESS_KEEP", default=2000)
# SQL statement limits (spark_workers/limits.py; docs/decisions.md "SQL sandbox and limits")
TDWEB_SQL_MEMORY_LIMIT = env.str("TDWEB_SQL_MEMORY_LIMIT", default="")  # "" = min(4 GiB, 25 % RAM)
TDWEB_SQL_TIMEOUT_S = env.float("TDWEB_SQL_TIMEOUT_S", default=60.0)  # at most 300
TDWEB_SQL_MAX_ROWS = env.int("TDWEB_SQL_MAX_ROWS", default=1_000_000)
TDWEB_SQL_MAX_RESULT_BYTES = env.int("TDWEB_SQL_MAX_RESULT_BYTES", default=64 * 1024 * 1024)
TDWEB_SQL_MAX_WINDOW_ROWS = env.int("TDWEB_SQL_MAX_WINDOW_ROWS", default=10_000_000)
TDWEB_SQL_MAX_STATEMENTS = env.int("TDWEB_SQL_MAX_STATEMENTS", default=100)
TDWEB_SQL_MAX_DEPTH = env.int("TDWEB_SQL_MAX_DEPTH", default=24)
TDWEB_SQL_MAX_LENGTH = env.int("TDWEB_SQL_MAX_LENGTH", default=1024 * 1024)
TDWEB_SQL_CONCURRENCY = env.int("TDWEB_SQL_CONCURRENCY", default=2)

# ---------------------------------------------------------------- Redis: Celery, Channels
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
# the channel layer's Redis reads wait up to 30 s: redis-py 8 made 5 s the default socket timeout,
# which aborts channels_redis's blocking 5 s BZPOPMIN on a quiet socket, so every WebSocket was torn
# down every 5-10 s and a message sent while the browser reconnected was lost (channels_redis#422)
CHANNEL_REDIS_SOCKET_TIMEOUT_S = 30.0
# every web and worker process must share REDIS_URL and TDWEB_CHANNEL_PREFIX: the groups stream.<id>
# and inbox.<user_id> are the same on all of them (docs/operations.md)
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_REDIS_SOCKET_TIMEOUT_S}],
            "prefix": env.str("TDWEB_CHANNEL_PREFIX", default="tdweb:asgi"),
        },
    }
}
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"streams.run": {"queue": "streams"}}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BEAT_SCHEDULE = {
    "streams-reconcile": {
        "task": "streams.reconcile",
        "schedule": env.float("TDWEB_RECONCILE_S", default=5.0),
    },
    "lake-compact": {"task": "lake.compact", "schedule": 3600.0},
    "lake-retain": {"task": "lake.retain", "schedule": 3600.0},
}

# ---------------------------------------------------------------- API
REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate makes a request without valid credentials HTTP 401 (not
    # 403); HTTP Basic (the credentials TDengine's REST clients hold) goes through the lockout
    # backend like every password check; the browser's session last
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "streams_app.api.authentication.ApiTokenAuthentication",  # hashed at rest
        "streams_app.api.authentication.ApiBasicAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # JSON bounded in size (DATA_UPLOAD_MAX_MEMORY_SIZE) and depth (TDWEB_JSON_MAX_DEPTH)
    "DEFAULT_PARSER_CLASSES": [
        "streams_app.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # unexpected exceptions: HTTP 500 {"code": 312, "desc": "internal error (request id ...)"}
    "EXCEPTION_HANDLER": "streams_app.api.errors.api_exception_handler",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # ?limit=&offset= (default 50, at most 500): the API's one pagination
    "DEFAULT_PAGINATION_CLASS": "streams_app.api.common.ApiPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "tdweb API",
    "DESCRIPTION": "Streams, tables and notifications of tdweb. "
    "TDengine's own REST protocol is at /rest/sql.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "TAGS": API_TAGS,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "streams_app.api.schema.tag_by_resource",
    ],
}

TDWEB_SQL_MAX_BYTES = env.int("TDWEB_SQL_MAX_BYTES", default=1_048_576)  # TDengine's maxSQLLength default
# /influxdb/v1/write bodies (10,000 lines of ~100 bytes, InfluxDB's recommended batch, fit twice over)
TDWEB_INFLUX_MAX_BYTES = env.int("TDWEB_INFLUX_MAX_BYTES", default=4_194_304)
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("TDWEB_DATA_UPLOAD_MAX_BYTES", default=2_621_440)  # Django's default
TDWEB_JSON_MAX_DEPTH = env.int("TDWEB_JSON_MAX_DEPTH", default=64)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "streams_app.request_id.RequestIdLogFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["request_id"], "formatter": "plain"}
    },
    "root": {"handlers": ["console"], "level": env.str("TDWEB_LOG_LEVEL", default="INFO")},
    "loggers": {"py4j": {"level": "WARNING"}, "daphne": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}

# structured logs (structlog) go through the logging configuration above: key=value pairs after
# the event, with what a worker bound for the stream it runs (stream_id, worker) and per
# micro-batch (stream_key, batch_id, ...)
structlog.configure(
    processors=[
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.filter_by_level,
        structlog.processors.format_exc_info,
        structlog.processors.KeyValueRenderer(key_order=["event"]),
    ],
    logger_factory=structlog.stdlib.LoggerFactory(),
    wrapper_class=structlog.stdlib.BoundLogger,
    cache_logger_on_first_use=True,
)
