"""Fixtures of the Django layer's tests: real Redis (database 15) and the metadata DB."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model


@pytest.fixture(scope="session", autouse=True)
def _redis_clean():  # type: ignore[no-untyped-def]
    """Flush the test Redis database at start and end: CREATE STREAM enqueues ``streams.run``
    tasks (no worker consumes them here) and Channels keeps group state there."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture(autouse=True)
def _auth_cache_clear():  # type: ignore[no-untyped-def]
    """The REST endpoint caches Basic credentials per process; tests must not share them."""
    from streams_app.api import rest_sql

    rest_sql._auth_cache.clear()
    yield
    rest_sql._auth_cache.clear()


def basic(user: str = "root", password: str = "taosdata") -> str:
    """An ``Authorization: Basic`` header value."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def position(sql: str, token: str) -> tuple[int, int]:
    """1-based (line, column) of the first occurrence of ``token`` in ``sql`` (its end for "")."""
    offset = sql.index(token) if token else len(sql)
    before = sql[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


class Rest:
    """Plain HTTP to ``/rest/sql[/{db}]`` through Django's test client (raw JSON answers)."""

    def __init__(self, client: Any, auth: str) -> None:
        self.client = client
        self.auth = auth

    def post(self, sql: str, db: str | None = None, auth: str | None = None) -> tuple[int, dict[str, Any]]:
        url = f"/rest/sql/{db}" if db else "/rest/sql"
        r = self.client.post(
            url,
            data=sql.encode(),
            content_type="text/plain",
            HTTP_AUTHORIZATION=auth if auth is not None else self.auth,
        )
        return r.status_code, json.loads(r.content)

    def ok(self, sql: str, db: str | None = None) -> dict[str, Any]:
        status, body = self.post(sql, db)
        assert status == 200 and body["code"] == 0, (sql, body)
        return body

    def fails(self, sql: str, db: str | None = None) -> dict[str, Any]:
        status, body = self.post(sql, db)
        assert status == 200, body
        assert body["code"] != 0, (sql, body)
        assert set(body) == {"code", "desc"}, body
        return body


@pytest.fixture
def rest(client, admin, lake) -> Rest:  # type: ignore[no-untyped-def]
    """The REST protocol as the admin, over a fresh lake."""
    return Rest(client, basic())


POWER_SQL = [
    "CREATE DATABASE power PRECISION 'ms'",
    "CREATE STABLE power.meters (ts TIMESTAMP, current FLOAT, voltage INT, phase FLOAT) "
    "TAGS (location VARCHAR(64), groupid INT)",
    "CREATE TABLE power.d1001 USING power.meters TAGS ('California.SanFrancisco', 2) "
    "power.d1002 USING power.meters TAGS ('California.LosAngeles', 3)",
    "INSERT INTO power.d1001 VALUES ('2024-01-01 00:00:00', 10.5, 220, 0.31) "
    "('2024-01-01 00:00:05', 11.0, 221, 0.32) ('2024-01-01 00:00:12', 12.5, 219, 0.33) "
    "power.d1002 VALUES ('2024-01-01 00:00:01', 20.0, 230, 0.5) ('2024-01-01 00:00:06', 21.0, 231, 0.5) "
    "('2024-01-01 00:00:13', 22.0, 232, 0.5)",
]


@pytest.fixture
def power(admin, lake):  # type: ignore[no-untyped-def]
    """Database ``power`` with supertable ``meters`` (seed 000's example) and subtables d1001, d1002
    holding three rows each (2024-01-01 00:00:00/05/12 and 00:00:01/06/13 UTC), written as the admin."""
    from streams_app.services.sql import sql_execute

    for sql in POWER_SQL:
        sql_execute(sql=sql, user=admin)
    return lake


@pytest.fixture
def meters(rest: Rest, power) -> Rest:  # type: ignore[no-untyped-def]
    """``rest`` over the ``power`` database."""
    return rest


@pytest.fixture
def alice(db):  # type: ignore[no-untyped-def]
    """A signed-up, non-staff user who may read and write the test databases ``power`` and ``air``
    (``GRANT ALL ON power.* TO alice``, the same on ``air``: the data she works on belongs to the
    admin)."""
    from streams_app.models import Privilege

    user = get_user_model().objects.create_user("alice", password="alice-pw")
    for db in ("power", "air"):
        Privilege.objects.create(user=user, db=db, read=True, write=True)
    return user


def root_sql(sql: str):  # type: ignore[no-untyped-def]
    """Run ``sql`` as the superuser ``root`` (test set-up and checks that are not about
    privileges); returns the ResultSet."""
    from streams_app.services.sql import sql_execute
    from streams_app.services.users import admin_bootstrap

    return sql_execute(sql=sql, user=admin_bootstrap()[0])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the test settings have no collected static files; whitenoise warns about it on every request
    for item in items:
        if "tests/web/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings("ignore:No directory at:UserWarning"))


def api_client(user=None):  # type: ignore[no-untyped-def]
    """A DRF test client signed in as ``user`` (anonymous when None)."""
    from rest_framework.test import APIClient

    c = APIClient()
    if user is not None:
        c.force_login(user)
    return c


@pytest.fixture
def root_api(admin):  # type: ignore[no-untyped-def]
    """The API as the staff user ``root``."""
    return api_client(admin)


@pytest.fixture
def alice_api(alice):  # type: ignore[no-untyped-def]
    """The API as the non-staff user ``alice``."""
    return api_client(alice)
