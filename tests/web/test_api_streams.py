"""``/api/v1/`` streams beyond CRUD (streams_app.api.streams, streams_app.selectors): pagination and
filters, lag / sparkline / catch-up progress fields, PATCH, the recalculate and drop actions,
progress / delivery / run history, the dashboard, notifications since, and obtaining a token."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from spark_workers.notify.sender import Attempt
from spark_workers.runtime.sink import BatchReport
from streams_app.models import ApiToken, Delivery, Notification, Stream, StreamProgress, StreamRun
from streams_app.services.notifications import inbox_get_or_create, notification_ingest
from streams_app.services.sql import sql_execute
from streams_app.services.stream_control import (
    stream_delivery_record,
    stream_progress_record,
    stream_set_status,
)
from tests.web.conftest import root_sql
from tests.web.test_api import STREAM, _message

pytestmark = pytest.mark.django_db

DAY_MS = 86_400_000
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def _create(api: APIClient, sql: str) -> dict:
    r = api.post("/api/v1/streams/", {"sql": sql}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def _report(sid: int, batch: int, **kw: object) -> None:
    stream_progress_record(stream_id=sid, report=BatchReport(batch_id=batch, duration_ms=1000.0, **kw))  # type: ignore[arg-type]


@pytest.fixture
def streams(power, root_api, alice_api):  # type: ignore[no-untyped-def]
    """root: ``beta`` (running), ``gamma`` (failed); alice: ``alpha`` (paused), ``alpha_2``."""
    ids = {}
    for api, name in ((root_api, "beta"), (root_api, "gamma"), (alice_api, "alpha"), (alice_api, "alpha_2")):
        ids[name] = _create(api, STREAM.format(name=name, out=f"o_{name}"))["id"]
    _report(ids["beta"], 1, input_rows=100, watermark_ms=T0, max_event_ms=T0 + 5_000)
    stream_set_status(stream_id=ids["gamma"], status=Stream.Status.FAILED, error="boom: worker lost")
    alice_api.post(f"/api/v1/streams/{ids['alpha']}/actions/", {"action": "pause"}, format="json")
    return ids


# ---------------------------------------------------------------------- list: pagination, filters


def test_streams_are_paginated(streams, root_api) -> None:
    page = root_api.get("/api/v1/streams/?limit=2").json()
    assert page["count"] == 4 and [s["name"] for s in page["results"]] == ["alpha", "alpha_2"]
    assert page["previous"] is None and "offset=2" in page["next"]
    page2 = root_api.get(page["next"]).json()
    assert [s["name"] for s in page2["results"]] == ["beta", "gamma"] and page2["next"] is None
    assert root_api.get("/api/v1/streams/?limit=0").json()["count"] == 4  # invalid limit: the default


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("status=paused", ["alpha"]),
        ("status=running,failed", ["beta", "gamma"]),
        ("status=starting", ["alpha_2"]),
        ("search=ALPHA", ["alpha", "alpha_2"]),
        ("search=zzz", []),
        ("db=power", ["alpha", "alpha_2", "beta", "gamma"]),
        ("db=other", []),
        ("ordering=-name", ["gamma", "beta", "alpha_2", "alpha"]),
        ("ordering=status", ["gamma", "alpha", "beta", "alpha_2"]),
        ("ordering=-created_at&search=a", ["alpha_2", "alpha", "gamma", "beta"]),
    ],
)
def test_stream_filters(streams, root_api, query, names) -> None:
    r = root_api.get(f"/api/v1/streams/?{query}")
    assert r.status_code == 200
    assert [s["name"] for s in r.json()["results"]] == names


def test_non_staff_filters_only_their_own(streams, alice_api) -> None:
    assert [s["name"] for s in alice_api.get("/api/v1/streams/?status=running,paused").json()["results"]] == [
        "alpha"
    ]
    assert alice_api.get("/api/v1/streams/?search=beta").json()["count"] == 0


@pytest.mark.parametrize(
    ("query", "field", "fragment"),
    [
        ("status=runing", "status", "unknown status 'runing'"),
        ("status=dropped", "status", "unknown status 'dropped'"),
        ("ordering=sql", "ordering", "cannot order by 'sql'"),
    ],
)
def test_bad_stream_filters_are_400(streams, root_api, query, field, fragment) -> None:
    r = root_api.get(f"/api/v1/streams/?{query}")
    assert r.status_code == 400 and fragment in r.json()[field][0]


def test_list_fields_lag_throughput_and_errors(streams, root_api) -> None:
    by_name = {s["name"]: s for s in root_api.get("/api/v1/streams/").json()["results"]}
    beta = by_name["beta"]
    assert beta["status"] == "running" and beta["lag_ms"] == 5_000 and beta["throughput"] == [100.0]
    assert beta["progress"] is None  # nothing long under way
    gamma = by_name["gamma"]
    assert gamma["status"] == "failed" and gamma["last_error"] == "boom: worker lost"
    assert gamma["lag_ms"] is None and gamma["throughput"] == []
    assert by_name["alpha"]["status"] == "paused"


def test_sparkline_is_one_query_for_the_page(power, root_api) -> None:
    def list_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert root_api.get("/api/v1/streams/").status_code == 200
        return len(ctx.captured_queries)

    ids = [_create(root_api, STREAM.format(name=f"s{i}", out=f"o{i}"))["id"] for i in range(2)]
    for b in range(1, 4):
        for sid in ids:
            _report(sid, b, input_rows=b * 10)
    few = list_queries()
    ids += [_create(root_api, STREAM.format(name=f"s{i}", out=f"o{i}"))["id"] for i in range(2, 6)]
    for b in range(1, 4):
        for sid in ids[2:]:
            _report(sid, b, input_rows=b)
    assert list_queries() == few
    results = root_api.get("/api/v1/streams/").json()["results"]
    assert [s["throughput"] for s in results[:2]] == [[10.0, 20.0, 30.0]] * 2
    assert results[-1]["throughput"] == [1.0, 2.0, 3.0]


def test_sparkline_keeps_the_last_60_batches(power, root_api) -> None:
    sid = _create(root_api, STREAM.format(name="s", out="o"))["id"]
    for b in range(1, 71):
        _report(sid, b, input_rows=b)
    listed = root_api.get("/api/v1/streams/").json()["results"][0]["throughput"]
    assert listed == [float(b) for b in range(11, 71)]
    assert root_api.get(f"/api/v1/streams/{sid}/").json()["throughput"] == listed


# ---------------------------------------------------------------------- catch-up progress


@pytest.fixture
def history(admin, lake):  # type: ignore[no-untyped-def]
    """Database ``h`` (1-day files) with 2, 3 and 5 rows on three days, and a FILL_HISTORY stream."""
    sql_execute(sql="CREATE DATABASE h PRECISION 'ms' DURATION 1d", user=admin)
    sql_execute(sql="CREATE TABLE h.t (ts TIMESTAMP, v INT)", user=admin)
    for day, n in enumerate((2, 3, 5)):
        values = " ".join(f"({T0 + day * DAY_MS + i * 1000}, {i})" for i in range(n))
        sql_execute(sql=f"INSERT INTO h.t VALUES {values}", user=admin)
    sql_execute(
        sql="CREATE STREAM hs FILL_HISTORY 1 INTO h.out AS SELECT _wstart, count(*) FROM h.t INTERVAL(1h)",
        user=admin,
    )
    return Stream.objects.get(name="hs")


def test_catch_up_progress(history, root_api) -> None:
    sid = history.pk
    stream_set_status(stream_id=sid, status=Stream.Status.CATCHING_UP)
    body = root_api.get(f"/api/v1/streams/{sid}/").json()
    assert body["status"] == "catching_up"
    started_at = body["progress"].pop("started_at")
    assert body["progress"] == {
        "phase": "history",
        "fraction": 0.0,
        "label": "catching up on history: 0% (0 of 10 rows)",
        "rows_done": 0,
        "rows_total": 10,
        "rows_per_s": None,  # no micro-batch yet: no rate, no ETA
        "eta_s": None,
    }
    assert dt.datetime.fromisoformat(started_at) <= timezone.now()
    _report(sid, 0, phase="history", input_rows=5, max_event_ms=T0 + DAY_MS + 2000, watermark_ms=T0 + DAY_MS)
    body = root_api.get("/api/v1/streams/").json()["results"][0]
    assert body["status"] == "catching_up"
    assert (body["progress"]["fraction"], body["progress"]["rows_done"]) == (0.5, 5)
    # 5 snapshot rows in the batch's 1 s: 5 rows/s, the 5 rows left in 1 s
    assert (body["progress"]["rows_per_s"], body["progress"]["eta_s"]) == (5.0, 1.0)
    assert body["progress"]["label"] == "catching up on history: 50% (5 of 10 rows, about 0:00:01 left)"
    assert body["lag_ms"] == 2000
    _report(sid, 1, phase="live", input_rows=5, max_event_ms=T0 + 2 * DAY_MS + 4000)
    body = root_api.get(f"/api/v1/streams/{sid}/").json()
    assert body["status"] == "running" and body["progress"] is None


# ---------------------------------------------------------------------- PATCH and actions


def test_patch_desired_state(streams, alice_api) -> None:
    sid = streams["alpha_2"]
    url = f"/api/v1/streams/{sid}/"
    r = alice_api.patch(url, {"desired_state": "paused"}, format="json")
    assert r.status_code == 200 and (r.json()["desired_state"], r.json()["status"]) == ("paused", "paused")
    assert "spec" in r.json()
    r = alice_api.patch(url, {"desired_state": "running"}, format="json")
    assert (r.json()["desired_state"], r.json()["status"]) == ("running", "starting")
    r = alice_api.patch(url, {"desired_state": "stopped"}, format="json")
    assert Stream.objects.get(pk=sid).desired_state == "stopped"
    bad = alice_api.patch(url, {"desired_state": "flying"}, format="json")
    assert bad.status_code == 400 and "desired_state" in bad.json()
    sql = alice_api.patch(url, {"sql": "SELECT 1", "desired_state": "running"}, format="json")
    assert sql.status_code == 400 and "only desired_state can be changed" in sql.json()["sql"][0]
    assert Stream.objects.get(pk=sid).desired_state == "stopped"
    assert (
        alice_api.patch(
            f"/api/v1/streams/{streams['beta']}/", {"desired_state": "paused"}, format="json"
        ).status_code
        == 404
    )


def test_drop_action(streams, alice_api) -> None:
    sid = streams["alpha_2"]
    r = alice_api.post(f"/api/v1/streams/{sid}/actions/", {"action": "drop"}, format="json")
    assert r.status_code == 200 and r.json()["status"] == "dropped"
    assert alice_api.get(f"/api/v1/streams/{sid}/").status_code == 404


def test_recalculate_action(power, root_api) -> None:
    s = _create(root_api, STREAM.format(name="rc", out="o_rc"))
    url = f"/api/v1/streams/{s['id']}/actions/"
    r = root_api.post(
        url, {"action": "recalculate", "start": "2024-01-01T00:00:00Z", "end": T0 + 60_000}, format="json"
    )
    assert r.status_code == 200, r.content
    # one closed 10 s window per subtable ([0 s, 10 s)); [10 s, 20 s) is not closed by 13 s
    assert r.json()["recalculation"] == {"windows": 2} and r.json()["id"] == s["id"]
    rows = root_sql("SELECT avg_current, max_voltage FROM power.o_rc ORDER BY avg_current").rows
    assert [list(x) for x in rows] == [[10.75, 221], [20.5, 231]]
    again = root_api.post(url, {"action": "recalculate", "start": T0}, format="json")
    assert again.status_code == 200 and again.json()["recalculation"] == {"windows": 2}
    later = root_api.post(url, {"action": "recalculate", "start": T0 + 3_600_000}, format="json")
    assert later.json()["recalculation"] == {"windows": 0}


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({"action": "recalculate"}, "start", "recalculate needs a start time"),
        ({"action": "recalculate", "start": "soon"}, "start", "'soon' is not a time"),
        ({"action": "recalculate", "start": T0, "end": "2023-01-01"}, "end", "the end is before the start"),
    ],
)
def test_recalculate_bad_input_is_400(power, root_api, body, field, fragment) -> None:
    s = _create(root_api, STREAM.format(name="rc", out="o_rc"))
    r = root_api.post(f"/api/v1/streams/{s['id']}/actions/", body, format="json")
    assert r.status_code == 400 and fragment in r.json()[field][0]


def test_recalculate_someone_elses_stream_is_404(streams, alice_api) -> None:
    r = alice_api.post(
        f"/api/v1/streams/{streams['beta']}/actions/", {"action": "recalculate", "start": T0}, format="json"
    )
    assert r.status_code == 404


# ---------------------------------------------------------------------- history endpoints


def test_progress_since_and_limit(streams, root_api) -> None:
    sid = streams["beta"]
    for b in (2, 3, 4):
        _report(sid, b, input_rows=b)
    all_ = root_api.get(f"/api/v1/streams/{sid}/progress/").json()
    assert [p["batch_id"] for p in all_] == [1, 2, 3, 4]
    newer = root_api.get(f"/api/v1/streams/{sid}/progress/", {"since": all_[1]["created_at"]}).json()
    assert [p["batch_id"] for p in newer] == [3, 4]
    ms = int(dt.datetime.fromisoformat(all_[1]["created_at"]).timestamp() * 1000) - 1
    assert [p["batch_id"] for p in root_api.get(f"/api/v1/streams/{sid}/progress/?since={ms}").json()][
        -2:
    ] == [3, 4]
    assert [p["batch_id"] for p in root_api.get(f"/api/v1/streams/{sid}/progress/?limit=1").json()] == [4]
    for q, field in (("limit=x", "limit"), ("limit=0", "limit"), ("since=yesterday", "since")):
        r = root_api.get(f"/api/v1/streams/{sid}/progress/?{q}")
        assert r.status_code == 400 and field in r.json(), q


def test_deliveries_filter_and_pagination(streams, root_api) -> None:
    sid = streams["beta"]
    for i in range(5):
        stream_delivery_record(
            stream_id=sid,
            attempt=Attempt(
                url="ws://x",
                message_id=f"m{i}",
                events=1,
                ok=i % 2 == 0,
                latency_ms=1.0,
                error="" if i % 2 == 0 else "refused",
            ),
        )
    ok = root_api.get(f"/api/v1/streams/{sid}/deliveries/?ok=true").json()
    assert ok["count"] == 3 and [d["message_id"] for d in ok["results"]] == ["m4", "m2", "m0"]
    failed = root_api.get(f"/api/v1/streams/{sid}/deliveries/?ok=false&limit=1&offset=1").json()
    assert failed["count"] == 2 and [d["message_id"] for d in failed["results"]] == ["m1"]
    assert root_api.get(f"/api/v1/streams/{sid}/deliveries/?ok=maybe").status_code == 400


def test_runs_pagination(streams, root_api) -> None:
    sid = streams["beta"]
    now = timezone.now()
    for i in range(3):
        StreamRun.objects.create(stream_id=sid, worker=f"w{i}", started_at=now + dt.timedelta(seconds=i))
    page = root_api.get(f"/api/v1/streams/{sid}/runs/?limit=2").json()
    assert page["count"] == 3 and [r["worker"] for r in page["results"]] == ["w2", "w1"] and page["next"]


# ---------------------------------------------------------------------- dashboard


def test_dashboard(streams, root_api, alice_api, admin, alice) -> None:
    beta, gamma, alpha = streams["beta"], streams["gamma"], streams["alpha"]
    Stream.objects.filter(pk=beta).update(notifications_sent=8, notifications_failed=2)
    Stream.objects.filter(pk=alpha).update(notifications_sent=5)
    StreamRun.objects.create(stream_id=gamma, started_at=timezone.now(), error="older failure")
    for ok in (True, True, True, False):
        stream_delivery_record(
            stream_id=beta, attempt=Attempt(url="ws://x", message_id="m", events=1, ok=ok, latency_ms=1.0)
        )
    old = stream_delivery_record(
        stream_id=beta, attempt=Attempt(url="ws://x", message_id="m", events=1, ok=False, latency_ms=1.0)
    )
    Delivery.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=2))
    notification_ingest(inbox=admin.inboxes.get(), text=_message("beta", 0))
    notification_ingest(inbox=inbox_get_or_create(name="alice", owner=alice), text=_message("alpha", 0))
    notification_ingest(inbox=inbox_get_or_create(name="alice", owner=alice), text=_message("alpha", 60_000))
    Notification.objects.filter(stream_name="alpha", window_start=0).update(acknowledged=True)

    d = root_api.get("/api/v1/dashboard/").json()
    assert d["streams_total"] == 4
    assert d["streams_by_status"] == {"running": 1, "failed": 1, "paused": 1, "starting": 1}
    assert d["throughput_rows_per_s"] == 100 / 60  # beta's 100 rows over the last minute
    assert d["failures"]["streams_failed"] == 1
    errors = [(e["stream_id"], e["name"], e["error"]) for e in d["failures"]["recent_errors"]]
    assert set(errors) == {(gamma, "gamma", "boom: worker lost"), (gamma, "gamma", "older failure")}
    assert all(e["at"] for e in d["failures"]["recent_errors"])
    assert d["notifications"] == {
        "sent": 13,
        "failed": 2,
        "delivery_rate": 13 / 15,
        "last_24h": {"attempts": 4, "ok": 3, "failed": 1, "delivery_rate": 0.75},
    }
    assert d["inbox_unread"] == 2

    mine = alice_api.get("/api/v1/dashboard/").json()
    assert mine["streams_total"] == 2 and mine["streams_by_status"] == {"paused": 1, "starting": 1}
    assert mine["throughput_rows_per_s"] == 0.0 and mine["failures"] == {
        "streams_failed": 0,
        "recent_errors": [],
    }
    assert mine["notifications"] == {
        "sent": 5,
        "failed": 0,
        "delivery_rate": 1.0,
        "last_24h": {"attempts": 0, "ok": 0, "failed": 0, "delivery_rate": None},
    }
    assert mine["inbox_unread"] == 1


def test_dashboard_of_nothing(root_api) -> None:
    d = root_api.get("/api/v1/dashboard/").json()
    assert (
        d["streams_total"] == 0
        and d["streams_by_status"] == {}
        and d["notifications"]["delivery_rate"] is None
    )


# ---------------------------------------------------------------------- notifications since


def test_notifications_since(admin, root_api) -> None:
    inbox = admin.inboxes.get()
    for i in range(3):
        notification_ingest(inbox=inbox, text=_message("s", i * 60_000))
    first, second, third = Notification.objects.order_by("id")
    Notification.objects.filter(pk=first.pk).update(created_at=timezone.now() - dt.timedelta(hours=3))
    since = (timezone.now() - dt.timedelta(hours=1)).isoformat()
    got = root_api.get("/api/v1/notifications/", {"since": since}).json()
    assert [n["id"] for n in got["results"]] == [third.pk, second.pk]
    ms = int((timezone.now() - dt.timedelta(hours=4)).timestamp() * 1000)
    assert root_api.get(f"/api/v1/notifications/?since={ms}").json()["count"] == 3
    r = root_api.get("/api/v1/notifications/?since=later")
    assert r.status_code == 400 and "is not a time" in r.json()["since"][0]
    assert root_api.get("/api/v1/notifications/?acknowledged=perhaps").status_code == 400


# ---------------------------------------------------------------------- tokens


def test_obtain_a_token_with_username_and_password(power, alice) -> None:
    c = APIClient()
    r = c.post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"}, format="json")
    assert r.status_code == 200
    key = r.json()["token"]
    assert ApiToken.objects.get(user=alice).digest == hashlib.sha256(key.encode()).hexdigest()
    again = c.post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"}, format="json")
    assert set(again.json()) == {"token"} and again.json()["token"] != key  # keys are shown once: a new one
    c.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert c.get("/api/v1/streams/").json()["count"] == 0
    r = c.post("/api/v1/streams/", {"sql": STREAM.format(name="tok", out="o_tok")}, format="json")
    assert r.status_code == 201 and Stream.objects.get(name="tok").owner == alice  # no CSRF with a token
    bad = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert bad.status_code == 400 and "Unable to log in" in str(bad.json())
    assert ApiToken.objects.count() == 2


def test_dashboard_throughput_is_zero_when_nothing_flows(streams, root_api) -> None:
    """The current throughput is the rows of the last minute: a stream's last batch of long ago
    does not count (issue 16, item 5)."""
    StreamProgress.objects.filter(stream_id=streams["beta"]).update(
        created_at=timezone.now() - dt.timedelta(minutes=5)
    )
    assert root_api.get("/api/v1/dashboard/").json()["throughput_rows_per_s"] == 0.0


def test_dashboard_series(streams, root_api, alice_api) -> None:
    """Per-stream and total series over a time range: rows per second, event-time lag and
    delivery attempts per bucket, placed by when they happened; another user's streams are not
    in a user's series; a bad range is a 400."""
    beta = streams["beta"]
    now = timezone.now()
    _report(beta, 2, input_rows=600, watermark_ms=T0, max_event_ms=T0 + 30_000)
    latest = StreamProgress.objects.filter(stream_id=beta).order_by("-id")
    StreamProgress.objects.filter(pk=latest[0].pk).update(created_at=now - dt.timedelta(minutes=30))
    for ok in (True, False, True):
        stream_delivery_record(
            stream_id=beta, attempt=Attempt(url="ws://x", message_id="m", events=1, ok=ok, latency_ms=1.0)
        )
    since, until = now - dt.timedelta(hours=1), now + dt.timedelta(minutes=1)
    r = root_api.get(
        "/api/v1/dashboard/series/", {"since": since.isoformat(), "until": until.isoformat()}
    ).json()
    assert len(r["t"]) == 60 and r["bucket_s"] == 61.0
    s = {x["name"]: x for x in r["streams"]}
    assert set(s) == {"alpha", "alpha_2", "beta", "gamma"}  # staff see every live stream
    b = s["beta"]
    old = 30 * 60 // 61  # the bucket 30 minutes after `since`
    assert b["rows_per_s"][old] == 600 / 61 and b["lag_s"][old] == 30.0
    assert sum(b["rows_per_s"]) == pytest.approx((600 + 100) / 61)  # and the fixture's recent 100 rows
    assert sum(b["delivered"]) == 2 and sum(b["failed"]) == 1
    assert r["totals"]["delivered"] == b["delivered"] and b["lag_ms"] is not None
    mine = alice_api.get("/api/v1/dashboard/series/", {"range": "15m"}).json()
    assert {x["name"] for x in mine["streams"]} == {"alpha", "alpha_2"}
    assert root_api.get("/api/v1/dashboard/series/", {"range": "1y"}).status_code == 400
    bad = {"since": now.isoformat(), "until": (now - dt.timedelta(hours=1)).isoformat()}
    assert root_api.get("/api/v1/dashboard/series/", bad).status_code == 400
