"""Credentials that outlive a password change: the ``/rest/sql`` Basic-auth cache and API tokens
(streams_app.api.rest_sql, streams_app.services.api_tokens, streams_app.signals)."""

from __future__ import annotations

import hashlib
import importlib
import json
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.backends import ModelBackend
from django.db import connection
from rest_framework.test import APIClient

from streams_app.models import ApiToken
from streams_app.services.api_tokens import api_token_create
from tests.web.conftest import basic

pytestmark = pytest.mark.django_db(transaction=True)


def _rest(client: Any, auth: str) -> int:
    r = client.post("/rest/sql", data=b"SHOW DATABASES", content_type="text/plain", HTTP_AUTHORIZATION=auth)
    json.loads(r.content)
    return r.status_code


@pytest.fixture
def checks(monkeypatch) -> dict[str, int]:  # type: ignore[no-untyped-def]
    calls = {"n": 0}
    original = ModelBackend.authenticate

    def counting(self, request, username=None, password=None, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return original(self, request, username=username, password=password, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", counting)
    return calls


# ---------------------------------------------------------------------- Basic-auth cache


def test_changed_password_stops_the_cached_basic_credentials_at_once(client, alice, lake, checks) -> None:
    old = basic("alice", "alice-pw")
    assert _rest(client, old) == 200 and _rest(client, old) == 200
    assert checks["n"] == 1  # the second request was a cache hit
    alice.set_password("new-pw")
    alice.save()
    assert _rest(client, old) == 401  # the very next request
    assert _rest(client, basic("alice", "new-pw")) == 200


def test_password_changed_in_the_admin_stops_cached_basic_credentials(client, admin, lake) -> None:
    old = basic("root", "taosdata")
    assert _rest(client, old) == 200
    browser = client.__class__()
    browser.force_login(admin)
    r = browser.post(
        "/admin/password_change/",
        {"old_password": "taosdata", "new_password1": "n3w-root-pw!", "new_password2": "n3w-root-pw!"},
    )
    assert r.status_code == 302, r.content[:500]
    assert _rest(client, old) == 401
    assert _rest(client, basic("root", "n3w-root-pw!")) == 200


def test_deactivated_user_is_refused_despite_the_cache(client, alice, lake) -> None:
    assert _rest(client, basic("alice", "alice-pw")) == 200
    alice.is_active = False
    alice.save()
    assert _rest(client, basic("alice", "alice-pw")) == 401


# ---------------------------------------------------------------------- API tokens


def test_tokens_are_stored_hashed_and_work(alice) -> None:
    r = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"}, format="json")
    assert r.status_code == 200
    key = r.json()["token"]
    stored = list(ApiToken.objects.values())
    assert len(stored) == 1 and key not in json.dumps(stored, default=str)
    assert stored[0]["digest"] == hashlib.sha256(key.encode()).hexdigest()
    with connection.cursor() as cursor:  # nothing else in the database holds it either
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            assert key not in json.dumps(cursor.fetchall(), default=str), table
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert c.get("/api/v1/me/").json()["username"] == "alice"
    c.credentials(HTTP_AUTHORIZATION=f"Token {key[:-1]}x")
    assert c.get("/api/v1/me/").json() == {"detail": "Invalid token."}


def test_password_change_revokes_the_users_tokens_only(alice, bob) -> None:
    _t, alice_key = api_token_create(user=alice)
    _t, bob_key = api_token_create(user=bob)

    def me(key: str) -> int:
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return c.get("/api/v1/me/").status_code

    alice.email = "alice@example.org"
    alice.save()  # not a password change
    APIClient().login(username="alice", password="alice-pw")  # saves last_login only
    assert me(alice_key) == 200
    alice.set_password("new-pw")
    alice.save()
    assert me(alice_key) == 401 and not ApiToken.objects.filter(user=alice).exists()
    assert me(bob_key) == 200


def test_plain_drf_tokens_are_carried_over_as_digests(alice) -> None:
    migration = importlib.import_module("streams_app.migrations.0004_api_tokens")
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {q('authtoken_token')} ({q('key')} varchar(40) PRIMARY KEY, "
            f"{q('created')} timestamp, {q('user_id')} integer)"
        )
        cursor.execute(
            f"INSERT INTO {q('authtoken_token')} VALUES (%s, CURRENT_TIMESTAMP, %s)", ["a" * 40, alice.pk]
        )
    try:
        with connection.schema_editor() as editor:
            migration.hash_plain_drf_tokens(apps, editor)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {q('authtoken_token')}")
            assert cursor.fetchone()[0] == 0  # the plain key is gone
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {'a' * 40}")
        assert c.get("/api/v1/me/").json()["username"] == "alice"  # and the client keeps working
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {q('authtoken_token')}")
