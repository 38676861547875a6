"""tdweb settings, all from the environment (django-environ); defaults run everything embedded.

Environment variables (README "Configuration"): ``DATABASE_URL`` (default SQLite in var/),
``REDIS_URL`` (default redis://127.0.0.1:6379/0), ``TDWEB_LAKE`` (default var/lake),
``SPARK_MASTER`` (default local[*]), ``TDWEB_TIMEZONE`` (default UTC), ``TDWEB_HOST`` /
``TDWEB_PORT`` (default 127.0.0.1:8000), ``TDWEB_ADMIN_PASSWORD`` (default taosdata),
``TDWEB_SECRET_KEY``, ``TDWEB_DEBUG``, ``TDWEB_STREAM_SLOTS`` (streams per worker, default 32),
``TDWEB_VAR`` (folder for the SQLite DB, logs and the default lake; default var/).
"""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
VAR_DIR = Path(env.str("TDWEB_VAR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("TDWEB_DEBUG", default=False)
SECRET_KEY = env.str("TDWEB_SECRET_KEY", default="tdweb-embedded-insecure-key-change-me-in-production")
TDWEB_HOST = env.str("TDWEB_HOST", default="127.0.0.1")
TDWEB_PORT = env.int("TDWEB_PORT", default=8000)
ALLOWED_HOSTS = env.list(
    "TDWEB_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", TDWEB_HOST, "testserver", "*"]
)
CSRF_TRUSTED_ORIGINS = env.list(
    "TDWEB_CSRF_TRUSTED_ORIGINS",
    default=[
        f"http://{TDWEB_HOST}:{TDWEB_PORT}",
        f"http://127.0.0.1:{TDWEB_PORT}",
        f"http://localhost:{TDWEB_PORT}",
    ],
)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_vite",
    "channels",
    "streams_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
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
TDWEB_LAKE = env.str("TDWEB_LAKE", default=str(VAR_DIR / "lake"))
TDWEB_TIMEZONE = env.str("TDWEB_TIMEZONE", default="UTC")
SPARK_MASTER = env.str("SPARK_MASTER", default="local[*]")
TDWEB_ADMIN_USER = "root"
TDWEB_ADMIN_PASSWORD = env.str("TDWEB_ADMIN_PASSWORD", default="taosdata")
TDWEB_STREAM_SLOTS = env.int("TDWEB_STREAM_SLOTS", default=32)
TDWEB_STREAM_BUCKETS = env.int("TDWEB_STREAM_BUCKETS", default=8)
TDWEB_HEARTBEAT_S = env.float("TDWEB_HEARTBEAT_S", default=5.0)
TDWEB_STALE_AFTER_S = env.float("TDWEB_STALE_AFTER_S", default=30.0)
TDWEB_PROGRESS_KEEP = env.int("TDWEB_PROGRESS_KEEP", default=2000)

# ---------------------------------------------------------------- Redis: Celery, Channels
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": env.str("TDWEB_CHANNEL_PREFIX", default="tdweb:asgi")},
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
        "schedule": env.float("TDWEB_RECONCILE_S", default=10.0),
    },
    "lake-compact": {"task": "lake.compact", "schedule": 3600.0},
}

# ---------------------------------------------------------------- API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
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
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("TDWEB_LOG_LEVEL", default="INFO")},
    "loggers": {"py4j": {"level": "WARNING"}, "daphne": {"level": "WARNING"}},
}
