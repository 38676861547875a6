"""Requests reuse the metadata database's connections (tdweb/settings.py: Django's pool on
PostgreSQL, persistent per-thread connections on SQLite) instead of opening one per request,
and the pool stays within its bound."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created
from django.test import RequestFactory

from streams_app.api import rest_sql
from tests.web.conftest import basic

pytestmark = pytest.mark.django_db(transaction=True)

REQUESTS = 40
THREADS = 4  # the server's pool threads (Daphne runs the view's work in such a pool)


def test_rest_requests_reuse_database_connections(admin, lake) -> None:
    """40 ``/rest/sql`` requests served by 4 pool threads, each authenticating and loading the
    user's grants from the metadata database and closing its connections as a request does
    (``close_old_connections`` before and after), open a connection per thread at most, not one
    per request; on PostgreSQL the pool never holds more than ``TDWEB_DB_POOL_MAX``."""
    created: list[int] = []

    def count(sender, connection, **kwargs) -> None:  # type: ignore[no-untyped-def]
        created.append(1)

    pooled = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    pool = connections["default"].pool if pooled else None
    before = pool.get_stats().get("connections_num", 0) if pool is not None else 0
    request = RequestFactory().post("/rest/sql", data="", content_type="text/plain")

    def serve(_: int) -> tuple[int, dict]:
        return rest_sql._run(request, basic(), "SELECT SERVER_VERSION()", None)

    def end(_: int) -> None:
        connections.close_all()  # what a thread's end does; the pool takes its connection back

    connection_created.connect(count)
    try:
        with ThreadPoolExecutor(THREADS) as threads:
            answers = list(threads.map(serve, range(REQUESTS)))
            list(threads.map(end, range(THREADS)))
    finally:
        connection_created.disconnect(count)
    assert answers == [(200, answers[0][1])] * REQUESTS
    assert answers[0][1]["data"] == [["3.3.7.0"]]  # every request ran its statement
    if pool is not None:
        stats = pool.get_stats()
        opened = stats.get("connections_num", 0) - before
        assert stats["pool_max"] == settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"]
        assert stats["pool_size"] <= stats["pool_max"]
        assert opened <= THREADS + 1, stats
    else:
        assert 0 < len(created) <= THREADS + 1  # one per thread (and one more at most)


def _pools(tmp_path, code: str) -> bool:
    """Does a fresh process that runs ``code`` (then Django's settings) pool its PostgreSQL
    connections? No connection is made."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TDWEB_DB_", "DJANGO_SETTINGS"))}
    env.update(
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/tdweb_never_connected",
        TDWEB_VAR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="tdweb.settings",
    )
    probe = (
        f"{code}\nfrom django.conf import settings\n"
        "print('pool' in settings.DATABASES['default'].get('OPTIONS', {}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.strip().splitlines()[-1] == "True"


def test_web_processes_pool_and_the_worker_does_not(tmp_path) -> None:
    """The pool is the web tier's (``tdweb/asgi.py``, what Daphne loads): the worker's stream
    supervisors each hold a connection while their stream runs, so a bounded pool there would
    keep streams beyond the bound waiting; Celery and management commands set Django up
    without it."""
    assert _pools(tmp_path, "import tdweb.asgi") is True
    assert _pools(tmp_path, "import django\ndjango.setup()") is False
    assert _pools(tmp_path, "import tdweb.celery\nimport django\ndjango.setup()") is False
