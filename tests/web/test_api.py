"""REST API ``/api/v1/`` (streams_app.api: urls and the resource modules): permissions,
visibility, streams, SQL, tables, notifications, token authentication and the OpenAPI schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.urls import URLPattern, reverse
from rest_framework.test import APIClient

from spark_workers.errors import Code
from spark_workers.notify.sender import Attempt
from spark_workers.runtime.sink import BatchReport
from streams_app.api import urls as api_urls
from streams_app.models import ImportJob, Notification, Stream, StreamRun
from streams_app.services.api_tokens import api_token_create
from streams_app.services.notifications import inbox_get_or_create, notification_ingest
from streams_app.services.stream_control import stream_delivery_record, stream_progress_record
from streams_app.services.users import DEFAULT_INBOX
from tests.web.conftest import position

pytestmark = pytest.mark.django_db

STREAM = (
    "CREATE STREAM {name} INTO power.{out} AS\n"
    "  SELECT _wstart, avg(current) AS avg_current, max(voltage) AS max_voltage\n"
    "  FROM power.meters PARTITION BY tbname INTERVAL(10s)"
)


def _create(api: APIClient, name: str, out: str) -> dict:
    r = api.post("/api/v1/streams/", {"sql": STREAM.format(name=name, out=out)}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


@pytest.fixture
def two_streams(power, root_api, alice_api):  # type: ignore[no-untyped-def]
    """``s_root`` owned by root and ``s_alice`` owned by alice, both over power.meters."""
    return _create(root_api, "s_root", "out_root"), _create(alice_api, "s_alice", "out_alice")


# ---------------------------------------------------------------------- every endpoint needs a user


ENDPOINTS = [
    ("get", "api-me", {}),
    ("get", "api-dashboard", {}),
    ("get", "api-dashboard-series", {}),
    ("get", "api-streams", {}),
    ("post", "api-streams", {}),
    ("get", "api-stream", {"stream_id": 1}),
    ("patch", "api-stream", {"stream_id": 1}),
    ("delete", "api-stream", {"stream_id": 1}),
    ("post", "api-stream-actions", {"stream_id": 1}),
    ("post", "api-stream-recalc-diff", {"stream_id": 1}),
    ("get", "api-stream-progress", {"stream_id": 1}),
    ("get", "api-stream-deliveries", {"stream_id": 1}),
    ("get", "api-stream-runs", {"stream_id": 1}),
    ("get", "api-stream-diagnosis", {"stream_id": 1}),
    ("post", "api-sql", {}),
    ("post", "api-sql-validate", {}),
    ("get", "api-databases", {}),
    ("get", "api-tables", {"db": "power"}),
    ("get", "api-table", {"db": "power", "name": "meters"}),
    ("get", "api-table-rows", {"db": "power", "name": "meters"}),
    ("post", "api-table-rows", {"db": "power", "name": "d1001"}),
    ("get", "api-imports", {}),
    ("get", "api-import", {"import_id": 1}),
    ("get", "api-notifications", {}),
    ("post", "api-notifications-ack-all", {}),
    ("get", "api-notifications-groups", {}),
    ("post", "api-stream-sql-reveal", {"stream_id": 1}),
    ("get", "api-notifications-unread", {}),
    ("post", "api-notification-ack", {"notification_id": 1}),
]
PUBLIC = {"api-auth-token"}  # exchanges a password for a token


def _own_routes() -> set[str]:
    """Names of the routes of urls.py itself (the designer's included routes are tested with it)."""
    return {p.name for p in api_urls.urlpatterns if isinstance(p, URLPattern) and p.name}


def test_endpoint_list_covers_every_route() -> None:
    assert {e[1] for e in ENDPOINTS} | PUBLIC == _own_routes()


@pytest.mark.parametrize(("method", "name", "kwargs"), ENDPOINTS, ids=[f"{e[0]}-{e[1]}" for e in ENDPOINTS])
def test_anonymous_is_refused(power, method, name, kwargs) -> None:
    before = (
        Stream.objects.count(),
        Notification.objects.filter(acknowledged=True).count(),
        ImportJob.objects.count(),
    )
    r = getattr(APIClient(), method)(
        reverse(name, kwargs=kwargs),
        {"sql": "SHOW DATABASES", "rows": [{"ts": 1, "current": 1.0}], "desired_state": "paused"},
        format="json",
    )
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Token"  # 401, so a client knows to sign in
    assert r.json()["detail"].startswith("Authentication credentials were not provided")
    after = (
        Stream.objects.count(),
        Notification.objects.filter(acknowledged=True).count(),
        ImportJob.objects.count(),
    )
    assert after == before


def test_session_post_without_csrf_token_is_refused(power, admin) -> None:
    c = APIClient(enforce_csrf_checks=True)
    c.force_login(admin)
    r = c.post("/api/v1/streams/", {"sql": STREAM.format(name="s1", out="o1")}, format="json")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    assert not Stream.objects.exists()


def test_token_authentication(power, alice) -> None:
    _token, key = api_token_create(user=alice)
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    r = c.get("/api/v1/me/")
    assert r.status_code == 200 and r.json()["username"] == "alice" and r.json()["is_staff"] is False
    assert c.post("/api/v1/sql/", {"sql": "SELECT count(*) FROM power.meters"}, format="json").json()[
        "data"
    ] == [[6]]
    c.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    r = c.get("/api/v1/me/")
    assert r.status_code == 401 and r.json()["detail"] == "Invalid token."


def test_me_lists_own_inboxes_with_their_url(root_api, admin, settings) -> None:
    settings.TDWEB_HOST, settings.TDWEB_PORT = "example.org", 8123
    body = root_api.get("/api/v1/me/").json()
    inbox = admin.inboxes.get()
    assert body == {
        "username": "root",
        "is_staff": True,
        "inboxes": [
            {"name": DEFAULT_INBOX, "url": f"ws://example.org:8123/ws/notify/{DEFAULT_INBOX}?key={inbox.key}"}
        ],
    }


# ---------------------------------------------------------------------- streams


def test_create_stream_returns_201_with_the_stream(power, alice_api, alice) -> None:
    body = _create(alice_api, "s1", "avg_out")
    s = Stream.objects.get()
    assert s.owner == alice and s.name == "s1" and body["id"] == s.pk
    assert body["status"] == "starting" and body["desired_state"] == "running"
    assert body["source"] == "power.meters" and body["target"] == "power.avg_out"
    assert body["window"] == "INTERVAL(10s)" and body["trigger"] == "WINDOW_CLOSE"
    assert body["spec"] == s.spec and body["spec"]["source"]["table"] == "meters"
    assert body["counters"] == {
        "rows_in": 0,
        "windows_out": 0,
        "notifications_sent": 0,
        "notifications_failed": 0,
    }
    # the output supertable exists with the stream's columns
    cols = alice_api.get("/api/v1/databases/power/tables/avg_out/").json()["columns"]
    assert [c["name"] for c in cols] == ["_wstart", "avg_current", "max_voltage"]


def test_create_stream_with_default_db(power, root_api) -> None:
    sql = "CREATE STREAM s2 INTO o2 AS SELECT _wstart, count(*) FROM meters INTERVAL(1m)"
    r = root_api.post("/api/v1/streams/", {"sql": sql, "db": "power"}, format="json")
    assert r.status_code == 201 and r.json()["target"] == "power.o2"


def test_create_stream_bad_sql_is_400_with_position(power, root_api) -> None:
    sql = "CREATE STREAM s1 INTO power.o1 AS\n  SELECT _wstart, count(*) FROM power.meters INTERVAL(10x)"
    r = root_api.post("/api/v1/streams/", {"sql": sql}, format="json")
    assert r.status_code == 400
    body = r.json()
    line, col = position(sql, "10x")
    assert body["position"] == {"offset": sql.index("10x"), "line": line, "column": col}
    assert body["code"] != 0 and "10x" in body["desc"]
    assert not Stream.objects.exists()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM power.meters",
        STREAM.format(name="a", out="oa") + "; " + STREAM.format(name="b", out="ob"),
    ],
)
def test_create_stream_accepts_exactly_one_create_stream(power, root_api, sql) -> None:
    r = root_api.post("/api/v1/streams/", {"sql": sql}, format="json")
    assert r.status_code == 400 and "exactly one CREATE STREAM" in r.json()["desc"]
    assert not Stream.objects.exists()


def test_create_stream_duplicate_and_if_not_exists(power, root_api, alice_api) -> None:
    first = _create(root_api, "s1", "o1")
    r = root_api.post("/api/v1/streams/", {"sql": STREAM.format(name="s1", out="o2")}, format="json")
    assert r.status_code == 400 and r.json()["code"] == Code.STREAM_ALREADY_EXIST
    again = STREAM.format(name="s1", out="o2").replace("CREATE STREAM", "CREATE STREAM IF NOT EXISTS")
    for api in (root_api, alice_api):  # the owner sees the stream, alice does not: nothing created either way
        r = api.post("/api/v1/streams/", {"sql": again}, format="json")
        assert r.status_code == 200, r.content
        assert r.json()["code"] == 0 and "already exists" in r.json()["desc"]
    assert list(Stream.objects.values_list("pk", flat=True)) == [first["id"]]


def test_missing_sql_is_400(root_api) -> None:
    r = root_api.post("/api/v1/streams/", {}, format="json")
    assert r.status_code == 400 and "sql" in r.json()


def test_visibility_of_streams(two_streams, root_api, alice_api) -> None:
    s_root, s_alice = two_streams
    mine = alice_api.get("/api/v1/streams/").json()
    assert mine["count"] == 1 and [s["name"] for s in mine["results"]] == ["s_alice"]
    everything = root_api.get("/api/v1/streams/").json()
    assert [s["name"] for s in everything["results"]] == ["s_alice", "s_root"]  # ordered by name
    assert root_api.get(f"/api/v1/streams/{s_alice['id']}/").status_code == 200
    for path in ("", "progress/", "deliveries/", "runs/"):
        assert alice_api.get(f"/api/v1/streams/{s_root['id']}/{path}").status_code == 404, path
    r = alice_api.post(f"/api/v1/streams/{s_root['id']}/actions/", {"action": "pause"}, format="json")
    assert r.status_code == 404
    assert alice_api.delete(f"/api/v1/streams/{s_root['id']}/").status_code == 404
    root = Stream.objects.get(pk=s_root["id"])
    assert (root.status, root.desired_state) == ("starting", "running")


def test_stream_detail(two_streams, alice_api) -> None:
    _, s_alice = two_streams
    body = alice_api.get(f"/api/v1/streams/{s_alice['id']}/").json()
    assert body["name"] == "s_alice" and body["sql"] == STREAM.format(name="s_alice", out="out_alice")
    assert body["spec"]["output"]["table"] == "out_alice"
    assert alice_api.get("/api/v1/streams/999999/").status_code == 404


def _act(api: APIClient, sid: int, action: str, **extra: object) -> dict:
    r = api.post(f"/api/v1/streams/{sid}/actions/", {"action": action, **extra}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def test_actions_without_a_worker_take_effect_at_once(two_streams, alice_api) -> None:
    sid = two_streams[1]["id"]
    assert (b := _act(alice_api, sid, "pause"))["desired_state"] == "paused" and b["status"] == "paused"
    assert (b := _act(alice_api, sid, "resume"))["desired_state"] == "running" and b["status"] == "starting"
    assert (b := _act(alice_api, sid, "stop"))["desired_state"] == "stopped" and b["status"] == "stopped"
    assert (b := _act(alice_api, sid, "start"))["desired_state"] == "running" and b["status"] == "starting"
    s = Stream.objects.get(pk=sid)
    assert (s.desired_state, s.status) == ("running", "starting")


def test_actions_with_a_running_worker_leave_status_to_it(two_streams, alice_api) -> None:
    sid = two_streams[1]["id"]
    Stream.objects.filter(pk=sid).update(worker="w1", status=Stream.Status.RUNNING)
    b = _act(alice_api, sid, "pause")
    assert (b["desired_state"], b["status"]) == (
        "paused",
        "running",
    )  # the worker stops it at a batch boundary
    b = _act(alice_api, sid, "resume")
    assert (b["desired_state"], b["status"]) == ("running", "running")


def test_resume_ignore_untreated_records_the_source_version(two_streams, alice_api, power) -> None:
    sid = two_streams[1]["id"]
    _act(alice_api, sid, "pause")
    alice_api.post(
        "/api/v1/sql/",
        {"sql": "INSERT INTO power.d1001 VALUES ('2024-01-01 00:01:00', 1, 1, 1)"},
        format="json",
    )
    _act(alice_api, sid, "resume", ignore_untreated=True)
    s = Stream.objects.get(pk=sid)
    assert (
        s.ignore_until_version == power.version("power", "meters")
        and s.ignore_until_version > s.start_version
    )


def test_unknown_action_is_400(two_streams, alice_api) -> None:
    sid = two_streams[1]["id"]
    r = alice_api.post(f"/api/v1/streams/{sid}/actions/", {"action": "explode"}, format="json")
    assert r.status_code == 400 and "action" in r.json()
    assert Stream.objects.get(pk=sid).desired_state == "running"


def test_delete_drops_the_stream(two_streams, alice_api, root_api) -> None:
    sid = two_streams[1]["id"]
    assert alice_api.delete(f"/api/v1/streams/{sid}/").status_code == 204
    s = Stream.objects.get(pk=sid)
    assert (s.status, s.desired_state) == ("dropped", "stopped")
    assert alice_api.get("/api/v1/streams/").json()["count"] == 0
    assert [x["name"] for x in root_api.get("/api/v1/streams/").json()["results"]] == ["s_root"]
    assert alice_api.get(f"/api/v1/streams/{sid}/").status_code == 404
    # its output table stays, and the name can be used again
    assert alice_api.get("/api/v1/databases/power/tables/out_alice/").status_code == 200
    assert _create(alice_api, "s_alice", "out_alice2")["id"] != sid


def test_progress_deliveries_and_runs(two_streams, alice_api) -> None:
    sid = two_streams[1]["id"]
    for b in (1, 2, 3):
        stream_progress_record(
            stream_id=sid,
            report=BatchReport(
                batch_id=b, input_rows=10 * b, output_rows=b, duration_ms=500.0, watermark_ms=1000 * b
            ),
        )
    stream_delivery_record(
        stream_id=sid,
        attempt=Attempt(
            url="ws://h:1/ws/notify/inbox?key=k",
            message_id="m1",
            events=2,
            ok=False,
            latency_ms=3.5,
            error="refused",
        ),
    )
    stream_delivery_record(
        stream_id=sid,
        attempt=Attempt(
            url="ws://h:1/ws/notify/inbox?key=k",
            message_id="m1",
            events=2,
            ok=True,
            latency_ms=1.5,
            attempt=2,
        ),
    )
    from django.utils import timezone

    StreamRun.objects.create(stream_id=sid, worker="w1", started_at=timezone.now(), restarts=2, error="boom")

    prog = alice_api.get(f"/api/v1/streams/{sid}/progress/?limit=2").json()
    assert [p["batch_id"] for p in prog] == [2, 3]  # the latest two, oldest first
    assert (
        prog[-1]["input_rows"] == 30 and prog[-1]["rows_per_s"] == 60.0 and prog[-1]["watermark_ms"] == 3000
    )
    dels = alice_api.get(f"/api/v1/streams/{sid}/deliveries/").json()
    assert dels["count"] == 2 and dels["next"] is None and dels["previous"] is None
    assert [(d["attempt"], d["ok"], d["error"]) for d in dels["results"]] == [
        (2, True, ""),
        (1, False, "refused"),
    ]
    runs = alice_api.get(f"/api/v1/streams/{sid}/runs/").json()
    assert runs["count"] == 1
    runs = runs["results"]
    assert (
        len(runs) == 1
        and runs[0]["worker"] == "w1"
        and runs[0]["restarts"] == 2
        and runs[0]["state"] == "running"
    )
    detail = alice_api.get(f"/api/v1/streams/{sid}/").json()
    assert detail["counters"]["rows_in"] == 60 and detail["counters"]["windows_out"] == 6
    assert detail["throughput"] == [20.0, 40.0, 60.0] and detail["status"] == "running"


# ---------------------------------------------------------------------- SQL


def test_sql_execute_answers_like_rest(power, root_api) -> None:
    r = root_api.post(
        "/api/v1/sql/", {"sql": "SELECT ts, voltage FROM d1001 LIMIT 1", "db": "power"}, format="json"
    )
    assert r.status_code == 200
    assert r.json() == {
        "code": 0,
        "column_meta": [["ts", "TIMESTAMP", 8], ["voltage", "INT", 4]],
        "data": [["2024-01-01T00:00:00.000Z", 220]],
        "rows": 1,
    }
    bad = root_api.post("/api/v1/sql/", {"sql": "SELECT nope FROM power.meters"}, format="json").json()
    assert bad["code"] == Code.INVALID_COLUMN and "line 1, column 8" in bad["desc"]


def test_sql_validate(power, root_api) -> None:
    ok = root_api.post(
        "/api/v1/sql/validate/", {"sql": STREAM.format(name="v", out="vo")}, format="json"
    ).json()
    assert ok == {"ok": True, "statement": "CREATE STREAM v (legacy syntax)"}
    assert not Stream.objects.exists()  # validation changes nothing
    assert "vo" not in [t["name"] for t in root_api.get("/api/v1/databases/power/tables/").json()]
    sql = "SELECT avg(current)\nFROM power.meters INTERVAL(5q)"
    bad = root_api.post("/api/v1/sql/validate/", {"sql": sql}, format="json").json()
    line, col = position(sql, "5q")
    assert bad["ok"] is False and bad["code"] != 0 and "5q" in bad["desc"]
    assert bad["position"] == {"offset": sql.index("5q"), "line": line, "column": col}
    empty = root_api.post("/api/v1/sql/validate/", {"sql": "  ;"}, format="json").json()
    assert empty["ok"] is False


# ---------------------------------------------------------------------- databases and tables


def test_databases_and_tables(power, alice_api) -> None:
    dbs = alice_api.get("/api/v1/databases/").json()
    assert (
        len(dbs) == 1 and dbs[0]["name"] == "power" and dbs[0]["precision"] == "ms" and dbs[0]["ntables"] == 2
    )
    tables = alice_api.get("/api/v1/databases/power/tables/").json()
    assert sorted((t["name"], t["kind"], t["stable"]) for t in tables) == [
        ("d1001", "sub", "meters"),
        ("d1002", "sub", "meters"),
        ("meters", "super", None),
    ]
    assert [t["name"] for t in alice_api.get("/api/v1/databases/power/tables/?kind=super").json()] == [
        "meters"
    ]
    assert sorted(
        t["name"] for t in alice_api.get("/api/v1/databases/power/tables/?stable=meters").json()
    ) == ["d1001", "d1002"]
    assert alice_api.get("/api/v1/databases/nodb/tables/").status_code == 404


def test_table_detail(power, alice_api) -> None:
    st = alice_api.get("/api/v1/databases/power/tables/meters/").json()
    assert st["kind"] == "super" and st["db"] == "power"
    assert st["columns"] == [
        {"name": "ts", "type": "TIMESTAMP", "length": 8},
        {"name": "current", "type": "FLOAT", "length": 4},
        {"name": "voltage", "type": "INT", "length": 4},
        {"name": "phase", "type": "FLOAT", "length": 4},
    ]
    assert st["tags"] == [
        {"name": "location", "type": "VARCHAR(64)", "length": 64},
        {"name": "groupid", "type": "INT", "length": 4},
    ]
    sub = alice_api.get("/api/v1/databases/power/tables/d1002/").json()
    assert sub["kind"] == "sub" and sub["stable"] == "meters"
    assert sub["tag_values"] == {"location": "California.LosAngeles", "groupid": 3}
    r = alice_api.get("/api/v1/databases/power/tables/nope/")
    assert r.status_code == 404 and "nope" in r.json()["desc"]


def test_table_rows(power, alice_api) -> None:
    body = alice_api.get("/api/v1/databases/power/tables/d1001/rows/?limit=2").json()
    assert body["columns"] == ["ts", "current", "voltage", "phase", "location", "groupid"]
    assert body["types"][:3] == ["TIMESTAMP", "FLOAT", "INT"]
    assert [r[0] for r in body["rows"]] == [
        "2024-01-01T00:00:05.000Z",
        "2024-01-01T00:00:12.000Z",
    ]  # latest, in order
    ranged = alice_api.get(
        "/api/v1/databases/power/tables/meters/rows/",
        {"start": "2024-01-01 00:00:05", "end": "2024-01-01 00:00:06"},
    ).json()
    assert sorted((r[0], r[2]) for r in ranged["rows"]) == [
        ("2024-01-01T00:00:05.000Z", 221),
        ("2024-01-01T00:00:06.000Z", 231),
    ]
    quoted = alice_api.get("/api/v1/databases/power/tables/meters/rows/", {"start": "2024-01-01' OR '1'='1"})
    assert quoted.status_code == 400 and quoted.json()["code"] != 0  # the quote cannot end the literal
    assert alice_api.get("/api/v1/databases/power/tables/nope/rows/").status_code == 404


# ---------------------------------------------------------------------- notifications


def _message(stream: str, window_start: int, *, mid: str = "m", result: float = 1.0) -> str:
    return json.dumps(
        {
            "messageId": f"{mid}-{stream}-{window_start}",
            "timestamp": 1733284887203,
            "streams": [
                {
                    "streamName": stream,
                    "events": [
                        {
                            "tableName": "t_1",
                            "eventType": "WINDOW_CLOSE",
                            "eventTime": window_start + 70_000,
                            "windowId": f"w-{window_start}",
                            "windowType": "Time",
                            "windowStart": window_start,
                            "windowEnd": window_start + 60_000,
                            "result": {"_wstart": window_start, "avg(current)": result},
                        }
                    ],
                }
            ],
        }
    )


@pytest.fixture
def inboxes(admin, alice):  # type: ignore[no-untyped-def]
    """root's inbox with 2 notifications (stream s_root), alice's with 3 (streams a1, a1, a2)."""
    root_inbox = admin.inboxes.get()
    alice_inbox = inbox_get_or_create(name="alice", owner=alice)
    notification_ingest(inbox=root_inbox, text=_message("s_root", 0))
    notification_ingest(inbox=root_inbox, text=_message("s_root", 60_000))
    notification_ingest(inbox=alice_inbox, text=_message("a1", 0))
    notification_ingest(inbox=alice_inbox, text=_message("a1", 60_000))
    notification_ingest(inbox=alice_inbox, text=_message("a2", 0))
    return root_inbox, alice_inbox


def test_notifications_visibility_and_shape(inboxes, root_api, alice_api) -> None:
    mine = alice_api.get("/api/v1/notifications/").json()
    assert mine["count"] == 3 and {n["inbox"] for n in mine["results"]} == {"alice"}
    assert [n["id"] for n in mine["results"]] == sorted(
        (n["id"] for n in mine["results"]), reverse=True
    )  # newest first
    n = mine["results"][0]
    assert (n["stream_name"], n["event_type"], n["window_start"], n["window_end"], n["event_time"]) == (
        "a2",
        "WINDOW_CLOSE",
        0,
        60_000,
        70_000,
    )
    assert n["payload"]["result"] == {"_wstart": 0, "avg(current)": 1.0} and n["acknowledged"] is False
    assert root_api.get("/api/v1/notifications/").json()["count"] == 5  # staff see every inbox


def test_notifications_filters(inboxes, alice_api) -> None:
    def names(query: str) -> list[str]:
        return [n["stream_name"] for n in alice_api.get(f"/api/v1/notifications/?{query}").json()["results"]]

    assert names("stream=a1") == ["a1", "a1"]
    assert names("event_type=WINDOW_OPEN") == []
    assert names("event_type=WINDOW_CLOSE&stream=a2") == ["a2"]
    first = Notification.objects.filter(stream_name="a2").get()
    alice_api.post(f"/api/v1/notifications/{first.pk}/ack/")
    assert names("acknowledged=true") == ["a2"]
    assert names("acknowledged=false") == ["a1", "a1"]
    assert len(names("acknowledged=")) == 3


def test_notification_ack_and_unread_count(inboxes, alice_api, root_api) -> None:
    assert alice_api.get("/api/v1/notifications/unread-count/").json() == {"count": 3}
    assert root_api.get("/api/v1/notifications/unread-count/").json() == {"count": 5}
    theirs = Notification.objects.filter(inbox__name=DEFAULT_INBOX).first()
    assert alice_api.post(f"/api/v1/notifications/{theirs.pk}/ack/").status_code == 404
    assert Notification.objects.get(pk=theirs.pk).acknowledged is False
    own = Notification.objects.filter(inbox__name="alice").first()
    r = alice_api.post(f"/api/v1/notifications/{own.pk}/ack/")
    assert r.status_code == 200 and r.json()["acknowledged"] is True and r.json()["id"] == own.pk
    assert alice_api.post(f"/api/v1/notifications/{own.pk}/ack/").status_code == 200  # idempotent
    assert alice_api.get("/api/v1/notifications/unread-count/").json() == {"count": 2}
    assert alice_api.post("/api/v1/notifications/ack-all/").json() == {"updated": 2}
    assert alice_api.get("/api/v1/notifications/unread-count/").json() == {"count": 0}
    # alice's ack-all did not touch root's inbox
    assert Notification.objects.filter(inbox__name=DEFAULT_INBOX, acknowledged=False).count() == 2
    assert root_api.post("/api/v1/notifications/ack-all/").json() == {"updated": 2}
    assert root_api.get("/api/v1/notifications/unread-count/").json() == {"count": 0}


def test_notifications_are_paginated(admin, root_api) -> None:
    inbox = admin.inboxes.get()
    for i in range(55):
        notification_ingest(inbox=inbox, text=_message("s", i * 60_000))
    page1 = root_api.get("/api/v1/notifications/").json()
    assert (
        page1["count"] == 55 and len(page1["results"]) == 50 and page1["next"] and page1["previous"] is None
    )
    assert "limit=50" in page1["next"] and "offset=50" in page1["next"]
    page2 = root_api.get("/api/v1/notifications/?limit=50&offset=50").json()
    assert len(page2["results"]) == 5 and page2["results"][-1]["window_start"] == 0
    assert page2["next"] is None and page2["previous"]
    small = root_api.get("/api/v1/notifications/?limit=10&offset=5").json()
    assert [n["window_start"] for n in small["results"]] == [(54 - i) * 60_000 for i in range(5, 15)]
    capped = root_api.get("/api/v1/notifications/?limit=100000").json()
    assert len(capped["results"]) == 55  # at most 500 per page


# ---------------------------------------------------------------------- OpenAPI schema


def test_openapi_schema_validates_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    paths = schema["paths"]
    for p in api_urls.urlpatterns:
        if not isinstance(p, URLPattern):
            continue  # the designer's routes (their own tests)
        route = "/api/v1/" + str(p.pattern).replace("<int:", "{").replace("<str:", "{").replace(">", "}")
        assert route in paths, route
    ops = [op["operationId"] for item in paths.values() for op in item.values() if isinstance(op, dict)]
    assert len(ops) == len(set(ops))
    listed = paths["/api/v1/notifications/"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ]
    page = schema["components"]["schemas"][listed["$ref"].rsplit("/", 1)[-1]]
    assert {"count", "next", "previous", "results"} <= set(page["properties"])  # what the view really returns
    for path in (
        "/api/v1/streams/",
        "/api/v1/streams/{stream_id}/deliveries/",
        "/api/v1/streams/{stream_id}/runs/",
        "/api/v1/imports/",
    ):
        op = paths[path]["get"]
        listed = op["responses"]["200"]["content"]["application/json"]["schema"]
        props = schema["components"]["schemas"][listed["$ref"].rsplit("/", 1)[-1]]["properties"]
        assert {"count", "next", "previous", "results"} <= set(props), path
        assert {"limit", "offset"} <= {p["name"] for p in op["parameters"]}, path
    rows = paths["/api/v1/databases/{db}/tables/{name}/rows/"]["post"]["requestBody"]["content"]
    assert {"application/json", "multipart/form-data"} <= set(rows)
    assert paths["/api/v1/auth/token/"]["post"].get("security", [{}]) == [{}]  # no credentials needed
    assert "security" not in schema  # so other operations list their own (cookie, token)
    assert {"cookieAuth": []} in paths["/api/v1/streams/"]["get"]["security"]


# ---------------------------------------------------------------------- HTTP Basic, Swagger UI


def test_http_basic_credentials_sign_in_and_wrong_ones_are_401(alice) -> None:
    """``Authorization: Basic`` (what a TDengine REST client holds) is a way into ``/api/v1``: the
    right password is the user, and no more than the user; a wrong one is HTTP 401 with a
    ``WWW-Authenticate`` challenge (never 403), and it counts against the lockout like every
    password check (issue 16, item 7)."""
    from tests.web.conftest import basic

    c = APIClient()
    me = c.get("/api/v1/me/", HTTP_AUTHORIZATION=basic("alice", "alice-pw"))
    assert me.status_code == 200 and me.json()["username"] == "alice" and me.json()["is_staff"] is False
    # alice's Basic credentials do not reach an admin-only surface
    assert c.get("/api/v1/streams/", HTTP_AUTHORIZATION=basic("alice", "alice-pw")).status_code == 200
    wrong = c.get("/api/v1/me/", HTTP_AUTHORIZATION=basic("alice", "nope"))
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"] == "Token"
    assert "Invalid username/password" in wrong.json()["detail"]
    unknown = c.get("/api/v1/me/", HTTP_AUTHORIZATION=basic("mallory", "x"))
    assert unknown.status_code == 401


def test_http_basic_guessing_is_locked_out(alice, settings) -> None:
    """After ``AXES_FAILURE_LIMIT`` wrong Basic passwords the pair is locked out: even the right
    password is refused (HTTP 429) until the cool-off."""
    from tests.web.conftest import basic

    c = APIClient()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        c.get("/api/v1/me/", HTTP_AUTHORIZATION=basic("alice", "guess"))
    r = c.get("/api/v1/me/", HTTP_AUTHORIZATION=basic("alice", "alice-pw"))
    assert r.status_code == 429


def test_openapi_operations_are_grouped_by_resource(tmp_path: Path) -> None:
    """Swagger UI lists the operations under their resource's tag, not one list (issue 16)."""
    from streams_app.api.schema import TAGS

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    names = {t["name"] for t in TAGS}
    assert {t["name"] for t in schema["tags"]} == names
    tags = {
        path: op["tags"]
        for path, item in schema["paths"].items()
        for op in item.values()
        if isinstance(op, dict)
    }
    assert all(len(t) == 1 and t[0] in names for t in tags.values()), tags
    assert tags["/api/v1/streams/"] == ["streams"] and tags["/api/v1/designer/preview/"] == ["designer"]
    assert tags["/api/v1/databases/{db}/tables/"] == ["tables"] and tags["/api/v1/me/"] == ["auth"]
    assert {t[0] for t in tags.values()} == names  # every tag holds operations


def test_swagger_ui_loads_only_our_own_static_files(db) -> None:
    """``/api/docs/`` names no CDN: Swagger UI's script, style and favicon are our static files
    (drf-spectacular-sidecar), so the page works offline; each of them is served."""
    import re

    from django.test import Client

    page = Client().get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    refs = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    assets = [r for r in refs if r.endswith((".js", ".css", ".png"))]
    assert assets and all(r.startswith("/static/drf_spectacular_sidecar/") for r in assets), refs
    assert not re.search(r"https?://", " ".join(refs))
    for a in assets:
        served = Client().get(a)
        assert served.status_code == 200, a


def test_favicon_is_served(db) -> None:
    """Browsers ask for ``/favicon.ico``: it leads to our icon (no 404 in the web log)."""
    from django.test import Client

    r = Client().get("/favicon.ico", follow=True)
    assert r.status_code == 200 and b"<svg" in b"".join(r.streaming_content)
