"""Brute force against the password checks (docs/decisions.md "Authentication throttling"):
after ``AXES_FAILURE_LIMIT`` failed passwords of one user name from one address, the sign-in form,
``POST /api/v1/auth/token/`` and HTTP Basic on ``/rest/sql`` refuse that pair without checking the
password until the cool-off has passed; other users from the same address are not affected."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.contrib.auth.backends import ModelBackend
from rest_framework.test import APIClient

from spark_workers.errors import Code
from tests.web.conftest import basic

LIMIT = 5
COOLOFF_S = 60.0  # longer than any attack below takes, on any database


@pytest.fixture
def throttled(settings, monkeypatch) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """A short cool-off, and a count of the password checks (``ModelBackend.authenticate`` calls)."""
    import datetime as dt

    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = dt.timedelta(seconds=COOLOFF_S)
    calls = {"checks": 0}
    original = ModelBackend.authenticate

    def counting(self, request, username=None, password=None, **kwargs):  # type: ignore[no-untyped-def]
        calls["checks"] += 1
        return original(self, request, username=username, password=password, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", counting)
    return calls


def _cool_off(settings) -> None:  # type: ignore[no-untyped-def]
    """Let the cool-off pass on the real clock: shorten it to 1 s, then wait 1 s."""
    import datetime as dt

    settings.AXES_COOLOFF_TIME = dt.timedelta(seconds=1)
    time.sleep(1.2)


def _rest(client: Any, auth: str) -> tuple[int, dict[str, Any]]:
    r = client.post("/rest/sql", data=b"SHOW DATABASES", content_type="text/plain", HTTP_AUTHORIZATION=auth)
    return r.status_code, json.loads(r.content)


@pytest.mark.django_db(transaction=True)
def test_rest_sql_basic_is_locked_out_after_the_limit(client, alice, bob, lake, settings, throttled) -> None:
    answers = [_rest(client, basic("alice", f"guess-{i}")) for i in range(200)]
    assert throttled["checks"] == LIMIT  # 195 of the 200 guesses were refused without a check
    assert all(status == 401 and body["code"] == Code.AUTH_FAILURE for status, body in answers)
    assert answers[0][1] == {"code": Code.AUTH_FAILURE, "desc": "Authentication failure"}
    assert "too many failed sign-in attempts" in answers[-1][1]["desc"]

    status, body = _rest(client, basic("alice", "alice-pw"))  # the right password, during the lockout
    assert status == 401 and "too many" in body["desc"] and throttled["checks"] == LIMIT
    assert _rest(client, basic("bob", "bob-pw"))[0] == 200  # another user from the same address

    _cool_off(settings)
    status, body = _rest(client, basic("alice", "alice-pw"))
    assert status == 200 and body["code"] == 0, body


@pytest.mark.django_db(transaction=True)
def test_token_endpoint_is_locked_out_after_the_limit(alice, bob, settings, throttled) -> None:
    c = APIClient()

    def token(user: str, password: str) -> Any:
        return c.post("/api/v1/auth/token/", {"username": user, "password": password}, format="json")

    first = [token("alice", f"guess-{i}") for i in range(LIMIT)]
    assert [r.status_code for r in first] == [400] * (LIMIT - 1) + [429]
    for _ in range(50):
        r = token("alice", "guess")
        assert r.status_code == 429 and "too many failed sign-in attempts" in r.json()["detail"]
        assert int(r["Retry-After"]) >= 1
    r = token("alice", "alice-pw")
    assert r.status_code == 429 and "token" not in r.json()
    assert throttled["checks"] == LIMIT
    assert token("bob", "bob-pw").status_code == 200

    _cool_off(settings)
    r = token("alice", "alice-pw")
    assert r.status_code == 200 and r.json()["token"]


@pytest.mark.django_db(transaction=True)
def test_sign_in_form_is_locked_out_after_the_limit(client, alice, bob, settings, throttled) -> None:
    def sign_in(user: str, password: str) -> Any:
        return client.post("/accounts/login/", {"username": user, "password": password, "next": "/"})

    for i in range(LIMIT - 1):
        r = sign_in("alice", f"guess-{i}")
        assert r.status_code == 200 and b"Wrong user name or password" in r.content
    for _ in range(20):
        r = sign_in("alice", "guess")
        assert r.status_code == 429 and b"too many failed sign-in attempts" in r.content
        assert b'name="password"' in r.content  # the form, with the reason
    r = sign_in("alice", "alice-pw")
    assert r.status_code == 429 and "_auth_user_id" not in client.session
    assert throttled["checks"] == LIMIT

    other = client.__class__()
    r = other.post("/accounts/login/", {"username": "bob", "password": "bob-pw", "next": "/"})
    assert r.status_code == 302 and "_auth_user_id" in other.session

    _cool_off(settings)
    r = sign_in("alice", "alice-pw")
    assert r.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)


@pytest.mark.django_db(transaction=True)
async def test_lockout_answers_through_the_asgi_middleware_chain(async_client, alice, lake, settings) -> None:
    """Under ASGI (Daphne) the middleware chain runs async: axes' async middleware calls the lockout
    callable with other arguments; the answers must be the same."""
    settings.AXES_FAILURE_LIMIT = 2
    for i in range(3):
        r = await async_client.post(
            "/rest/sql",
            b"SHOW DATABASES",
            content_type="text/plain",
            headers={"Authorization": basic("alice", f"x{i}")},
        )
    body = json.loads(r.content)
    assert r.status_code == 401 and body["code"] == Code.AUTH_FAILURE and "too many" in body["desc"]
    assert r["X-Request-ID"]
    r = await async_client.post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"})
    assert r.status_code == 429 and "too many" in json.loads(r.content)["detail"]
    r = await async_client.post("/accounts/login/", {"username": "alice", "password": "alice-pw"})
    assert r.status_code == 429 and b"too many failed sign-in attempts" in r.content


@pytest.mark.django_db(transaction=True)
def test_influxdb_write_u_p_is_locked_out_after_the_limit(client, alice, lake, settings, throttled) -> None:
    """``/influxdb/v1/write`` checks ``u``/``p`` through the same backend: the lockout holds."""

    def write(password: str) -> tuple[int, dict[str, Any]]:
        r = client.post(
            f"/influxdb/v1/write?db=power&u=alice&p={password}",
            data=b"m v=1",
            content_type="text/plain",
        )
        return r.status_code, json.loads(r.content) if r.content else {}

    answers = [write(f"guess-{i}") for i in range(50)]
    assert throttled["checks"] == LIMIT
    assert all(status == 401 and body["code"] == "forbidden" for status, body in answers)
    assert "too many failed sign-in attempts" in answers[-1][1]["message"]
    status, body = write("alice-pw")  # the right password, during the lockout
    assert status == 401 and "too many" in body["message"] and throttled["checks"] == LIMIT
