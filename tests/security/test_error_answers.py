"""Internal errors never reach clients, and the machine-facing doors always answer JSON
(streams_app.api.errors, streams_app.api.parsers, streams_app.request_id, the size limit of
/rest/sql); taosrest against a live server where its parsing matters."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from spark_workers.errors import Code
from tests.web.conftest import basic

SECRET = "/srv/secret/path.py: KeyError('api_key')"
INTERNAL = re.compile(r"internal error \(request id ([0-9a-f]{32})\)")


def _rest(client: Any, body: bytes, auth: str | None = None, **extra: Any) -> tuple[int, Any]:
    r = client.post(
        "/rest/sql", data=body, content_type="text/plain", HTTP_AUTHORIZATION=auth or basic(), **extra
    )
    return r.status_code, r


class _Records(logging.Handler):
    """Log records as the console handler sees them (with tdweb's request-id filter)."""

    def __init__(self) -> None:
        from streams_app.request_id import RequestIdLogFilter

        super().__init__(logging.DEBUG)
        self.addFilter(RequestIdLogFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records():  # type: ignore[no-untyped-def]
    handler = _Records()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler.records
    root.removeHandler(handler)


# ---------------------------------------------------------------------- request ids


def test_every_answer_carries_a_request_id_that_log_records_share(client, admin, records) -> None:
    r = client.get("/api/v1/no-such-endpoint/")
    rid = r["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", rid)
    assert client.get("/accounts/login/")["X-Request-ID"] != rid  # one per request
    logged = [x for x in records if "no-such-endpoint" in x.getMessage()]
    assert logged and all(x.request_id == rid for x in logged)  # type: ignore[attr-defined]
    assert client.get("/accounts/login/", HTTP_X_REQUEST_ID="nginx-7f3a.1")["X-Request-ID"] == "nginx-7f3a.1"
    for insane in ("x" * 65, "a b", "<script>", "id\r\nSet-Cookie: x=1"):
        got = client.get("/accounts/login/", HTTP_X_REQUEST_ID=insane)["X-Request-ID"]
        assert re.fullmatch(r"[0-9a-f]{32}", got), insane


def test_logging_is_configured_with_the_request_id(settings) -> None:
    console = settings.LOGGING["handlers"]["console"]
    assert "request_id" in console["filters"]
    assert "%(request_id)s" in settings.LOGGING["formatters"][console["formatter"]]["format"]


# ---------------------------------------------------------------------- API: unexpected exceptions


@pytest.mark.django_db
def test_unexpected_api_exception_is_a_json_500_with_the_request_id(alice, monkeypatch, records) -> None:
    from streams_app.api import notifications

    def broken(**kwargs: Any) -> int:
        raise KeyError(SECRET)

    monkeypatch.setattr(notifications.selectors, "notification_unread_count", broken)
    c = APIClient()
    c.force_login(alice)
    r = c.get("/api/v1/notifications/unread-count/")
    assert r.status_code == 500 and r["Content-Type"] == "application/json"
    body = r.json()
    assert body["code"] == Code.INTERNAL == 0x0138 and set(body) == {"code", "desc"}
    m = INTERNAL.fullmatch(body["desc"])
    assert m and m.group(1) == r["X-Request-ID"]
    assert "secret" not in r.content.decode() and "KeyError" not in r.content.decode()
    logged = [x for x in records if x.exc_info and x.request_id == m.group(1)]  # type: ignore[attr-defined]
    assert logged and "api_key" in logging.Formatter().format(logged[0])  # the traceback, server-side


@pytest.mark.django_db
def test_drf_errors_keep_their_own_answers(alice) -> None:
    c = APIClient()
    assert c.get("/api/v1/me/").status_code == 401  # not authenticated (WWW-Authenticate: Token)
    c.force_login(alice)
    r = c.post("/api/v1/sql/", {}, format="json")
    assert r.status_code == 400 and "sql" in r.json()  # validation errors as before


# ---------------------------------------------------------------------- /rest/sql: unexpected exceptions


@pytest.mark.django_db(transaction=True)  # /rest/sql checks passwords in a pool thread
@pytest.mark.parametrize(
    "exc", [RecursionError("maximum recursion depth exceeded"), MemoryError(), KeyError(SECRET)]
)
def test_rest_sql_internal_errors_are_answered_with_a_request_id_only(
    client, admin, lake, monkeypatch, exc
) -> None:
    from streams_app.services import sql as sql_service

    def broken(**kwargs: Any) -> Any:
        raise exc

    monkeypatch.setattr(sql_service, "sql_execute", broken)
    status, r = _rest(client, b"SELECT 1")
    body = json.loads(r.content)
    assert status == 200 and body["code"] == Code.INTERNAL and set(body) == {"code", "desc"}
    m = INTERNAL.fullmatch(body["desc"])
    assert m and m.group(1) == r["X-Request-ID"], body
    assert type(exc).__name__ not in body["desc"]


@pytest.mark.django_db(transaction=True)  # /rest/sql checks passwords in a pool thread
def test_rest_sql_keeps_tdengine_errors(client, admin, lake) -> None:
    body = json.loads(_rest(client, b"SELECT * FROM nosuchdb.t")[1].content)
    assert body["code"] != 0 and body["code"] != Code.INTERNAL and "internal" not in body["desc"]


# ---------------------------------------------------------------------- sizes


@pytest.mark.django_db(transaction=True)  # /rest/sql checks passwords in a pool thread
def test_rest_sql_statement_over_the_limit_is_tdengines_error(client, admin, lake, settings) -> None:
    settings.TDWEB_SQL_MAX_BYTES = 1000
    fits = b"SHOW DATABASES" + b" " * (1000 - len(b"SHOW DATABASES"))
    assert json.loads(_rest(client, fits)[1].content)["code"] == 0
    for body in (fits + b" ", b"SELECT 1 " + b" " * (3 * 1024 * 1024)):  # also over Django's 2.5 MB
        status, r = _rest(client, body)
        assert status == 200 and r["Content-Type"] == "application/json"
        assert json.loads(r.content) == {"code": 0x0219, "desc": "SQL statement too long"}


def test_rest_sql_default_limit_is_tdengines_max_sql_length(settings) -> None:
    assert settings.TDWEB_SQL_MAX_BYTES == 1_048_576


@pytest.mark.django_db
def test_api_json_body_over_the_limit_is_413_json(alice, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    c = APIClient()
    c.force_login(alice)
    big = json.dumps({"sql": "SELECT 1 " + " " * 20_000}).encode()
    r = c.post("/api/v1/sql/", data=big, content_type="application/json")
    assert r.status_code == 413 and "at most 10000 bytes" in r.json()["detail"]


# ---------------------------------------------------------------------- deep JSON


def _nested(depth: int) -> bytes:
    return b'{"sql": ' + b"[" * depth + b"1" + b"]" * depth + b"}"


DEEP_POSTS = [
    "/api/v1/sql/",
    "/api/v1/sql/validate/",
    "/api/v1/streams/",
    "/api/v1/designer/compile/",
    "/api/v1/designer/drafts/",
    "/api/v1/auth/token/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", DEEP_POSTS)
def test_deeply_nested_json_is_a_400_everywhere(alice, url) -> None:
    c = APIClient()
    c.force_login(alice)
    for depth in (5000, 64):  # 5000: Python's json recursion; 64 (+1 for the object): the limit
        r = c.post(url, data=_nested(depth), content_type="application/json")
        assert r.status_code == 400, (depth, r.content[:200])
        assert "nested deeper than 64 levels" in r.json()["detail"]
    r = c.post(url, data=_nested(10), content_type="application/json")
    assert "nested deeper" not in r.content.decode()


# ---------------------------------------------------------------------- Django's own error pages


@pytest.mark.django_db
def test_django_error_pages_are_json_on_the_machine_doors(client) -> None:
    r = client.get("/api/v1/no-such-endpoint/")
    assert r.status_code == 404 and r.json() == {"detail": "Not found."}
    r = client.post("/rest/sql/db/and/more", data=b"SELECT 1", content_type="text/plain")
    assert r.status_code == 404 and r.json()["code"] == Code.INVALID_OPERATION
    r = client.post("/rest/sql", data=b"SELECT 1", content_type="text/plain", HTTP_HOST="evil.example")
    assert r.status_code == 400 and r.json() == {"code": Code.INVALID_OPERATION, "desc": "bad request"}
    r = client.get("/api/v1/me/", HTTP_HOST="evil.example")
    assert r.status_code == 400 and r.json() == {"detail": "bad request"}
    assert client.get("/no-such-page/").status_code == 404  # pages stay HTML
    assert b"<" in client.get("/no-such-page/").content


# ---------------------------------------------------------------------- taosrest against a live server


def _taos_error(rest: Any, sql: str) -> tuple[str, int, str]:
    """(error class, errno or HTTP status, message) of a failing ``rest.sql``; nothing of the
    exception is kept (its traceback would hold the HTTP connection open until the server stops)."""
    from taosrest.errors import ConnectError, HTTPError

    try:
        rest.sql(sql)
    except ConnectError as e:
        return "ConnectError", e.errno, e.msg
    except HTTPError as e:
        return "HTTPError", e.status_code, str(e.msg)
    raise AssertionError(f"{sql[:40]!r} did not fail")


@pytest.mark.django_db(transaction=True)
def test_taosrest_parses_every_error_answer(live_server, admin, lake, settings, monkeypatch) -> None:
    from taosrest import RestClient

    settings.TDWEB_SQL_MAX_BYTES = 2000
    rest = RestClient(live_server.url, user="root", password="taosdata", timeout=30)
    assert rest.sql("SHOW DATABASES")["code"] == 0
    assert _taos_error(rest, "SELECT 1 " + " " * 3000) == ("ConnectError", 0x0219, "SQL statement too long")

    from streams_app.services import sql as sql_service

    def broken(**kwargs: Any) -> Any:
        raise RecursionError("deep")

    monkeypatch.setattr(sql_service, "sql_execute", broken)
    kind, errno, msg = _taos_error(rest, "SELECT 1")
    assert (kind, errno) == ("ConnectError", Code.INTERNAL) and INTERNAL.fullmatch(msg)

    wrong = RestClient(live_server.url, user="root", password="wrong", timeout=30)
    assert _taos_error(wrong, "SHOW DATABASES")[:2] == ("HTTPError", 401)
