"""Services with the metadata DB (streams_app.services): the stream registry and lifecycle,
progress and delivery records, the supervisor's bookkeeping, notification ingest, the admin
bootstrap. Start requests go to the real Redis broker (database 15)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError
from django.utils import timezone

from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.notify.sender import Attempt
from spark_workers.runtime.paths import checkpoint_location
from spark_workers.runtime.sink import BatchReport
from streams_app.models import Delivery, Inbox, Notification, Stream, StreamProgress
from streams_app.services import supervisor
from streams_app.services.notifications import (
    MAX_MESSAGE_BYTES,
    NotificationError,
    inbox_check_key,
    inbox_get_or_create,
    inbox_users,
    notification_ack,
    notification_ack_all,
    notification_ingest,
    parse_message,
)
from streams_app.services.registry import name_key
from streams_app.services.sql import sql_execute, sql_validate
from streams_app.services.stream_control import (
    stream_action,
    stream_delivery_record,
    stream_drop,
    stream_progress_record,
    stream_set_status,
)
from streams_app.services.users import DEFAULT_INBOX, admin_bootstrap, inbox_url

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
STREAM = (
    "CREATE STREAM {name} INTO power.{out} AS SELECT _wstart, avg(current) FROM power.meters INTERVAL(10s)"
)


def _create(user, name: str = "s1", out: str = "o1") -> Stream:  # type: ignore[no-untyped-def]
    sql_execute(sql=STREAM.format(name=name, out=out), user=user)
    return Stream.objects.exclude(status=Stream.Status.DROPPED).get(name=name)


def _queued(redis_client, queue: str = "streams") -> list[tuple[str, list]]:  # type: ignore[no-untyped-def]
    """(task name, args) of the Celery messages waiting in a Redis queue."""
    out = []
    for raw in redis_client.lrange(queue, 0, -1):
        msg = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(msg["body"]))
        out.append((msg["headers"]["task"], args))
    return out


@pytest.fixture
def broker(_redis_clean):  # type: ignore[no-untyped-def]
    """The test Redis database, emptied before the test."""
    _redis_clean.flushdb()
    return _redis_clean


# ---------------------------------------------------------------------- registry


def test_create_stream_registers_it_and_enqueues_a_start(
    power, admin, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        s = _create(admin)
    assert len(callbacks) == 1
    assert (s.name, s.name_key, s.db, s.owner, s.syntax) == ("s1", "s1", "", admin, "legacy")
    assert (s.desired_state, s.status) == ("running", "starting")
    assert s.start_version == power.version("power", "meters") and s.history_version is None
    assert s.spec["source"] == {"db": "power", "table": "meters"} and s.sql == STREAM.format(
        name="s1", out="o1"
    )
    assert len(s.key) == 16
    assert _queued(broker) == [("streams.run", [s.pk])]


def test_fill_history_records_the_snapshot_version(power, admin) -> None:
    sql_execute(sql=STREAM.format(name="h", out="oh").replace("INTO", "FILL_HISTORY 1 INTO"), user=admin)
    s = Stream.objects.get()
    assert s.history_version == s.start_version == power.version("power", "meters")


def test_anonymous_creator_is_refused_and_creates_nothing(power) -> None:
    # every statement runs with a signed-in user's privileges (docs/security.md)
    with pytest.raises(PermissionError):
        _create(None)
    assert not Stream.objects.filter(name="s1").exists()


def test_live_names_are_unique_but_a_dropped_name_is_reused(power, admin) -> None:
    first = _create(admin)
    with pytest.raises(CatalogError) as err:
        _create(admin, out="o2")
    assert err.value.code == Code.STREAM_ALREADY_EXIST
    sql_execute(
        sql="CREATE STREAM IF NOT EXISTS s1 INTO power.o2 AS SELECT _wstart, count(*) FROM power.meters "
        "INTERVAL(1m)",
        user=admin,
    )
    assert Stream.objects.count() == 1
    sql_execute(sql="DROP STREAM s1", user=admin)
    second = _create(admin, out="o2")
    assert second.pk != first.pk and second.key != first.key
    assert sorted(Stream.objects.values_list("status", flat=True)) == ["dropped", "starting"]
    assert sql_execute(sql="SHOW STREAMS", user=admin).rows[0][5:7] == ["power", "o2"]  # only the live one


def test_name_key_is_case_insensitive_and_per_database() -> None:
    assert name_key("MyStream", None) == "mystream"
    assert name_key("S", "Power") == "power.s"


def test_stream_names_compare_case_insensitively(power, admin) -> None:
    _create(admin, name="Speed")
    with pytest.raises(CatalogError):
        _create(admin, name="SPEED", out="o2")


def test_stream_statements_control_the_registry(power, admin) -> None:
    s = _create(admin)
    sql_execute(sql="PAUSE STREAM s1", user=admin)
    s.refresh_from_db()
    assert (s.desired_state, s.status) == ("paused", "paused")
    sql_execute(sql="RESUME STREAM IGNORE UNTREATED s1", user=admin)
    s.refresh_from_db()
    assert (s.desired_state, s.status) == ("running", "starting")
    assert s.ignore_until_version == power.version("power", "meters")
    sql_execute(sql="DROP STREAM s1", user=admin)
    s.refresh_from_db()
    assert s.status == "dropped"
    with pytest.raises(CatalogError) as err:
        sql_execute(sql="PAUSE STREAM s1", user=admin)
    assert err.value.code == Code.STREAM_NOT_EXIST
    sql_execute(sql="PAUSE STREAM IF EXISTS s1", user=admin)


def test_drop_database_refuses_a_stream_source_unless_forced(power, admin) -> None:
    _create(admin)
    with pytest.raises(CatalogError) as err:
        sql_execute(sql="DROP DATABASE power", user=admin)
    assert "s1" in err.value.desc
    assert [d[0] for d in sql_execute(sql="SHOW DATABASES", user=admin).rows] == [
        "information_schema",
        "performance_schema",
        "power",
    ]


# ---------------------------------------------------------------------- lifecycle


def test_stream_action_pause_stop_resume_start(
    power, admin, broker, django_capture_on_commit_callbacks
) -> None:
    s = _create(admin)
    broker.flushdb()
    assert (stream_action(stream=s, action="pause").status, s.desired_state) == ("paused", "paused")
    with django_capture_on_commit_callbacks(execute=True):
        s = stream_action(stream=s, action="resume")
    assert (s.desired_state, s.status) == ("running", "starting")
    assert _queued(broker) == [("streams.run", [s.pk])]
    s = stream_action(stream=s, action="stop")
    assert (s.desired_state, s.status) == ("stopped", "stopped")
    s = stream_action(stream=s, action="start")
    assert (s.desired_state, s.status) == ("running", "starting")


def test_stream_action_on_a_running_worker_changes_only_the_wish(power, admin) -> None:
    s = _create(admin)
    Stream.objects.filter(pk=s.pk).update(worker="w1", status=Stream.Status.RUNNING)
    s.refresh_from_db()
    s = stream_action(stream=s, action="stop")
    assert (s.desired_state, s.status) == ("stopped", "running")


def test_resume_of_a_failed_stream_restarts_it(power, admin) -> None:
    s = _create(admin)
    s = stream_set_status(stream_id=s.pk, status=Stream.Status.FAILED, error="x" * 5000)
    assert s.status == "failed" and len(s.last_error) == 4000
    assert stream_action(stream=s, action="resume").status == "starting"


def test_stream_action_errors(power, admin) -> None:
    s = _create(admin)
    with pytest.raises(CatalogError) as err:
        stream_action(stream=s, action="explode")
    assert err.value.code == Code.INVALID_OPERATION and "explode" in err.value.desc
    stream_drop(stream=s)
    with pytest.raises(CatalogError) as err:
        stream_action(stream=s, action="resume")
    assert err.value.code == Code.STREAM_NOT_EXIST
    assert Stream.objects.get(pk=s.pk).status == "dropped"


def test_drop_removes_the_checkpoint_when_no_worker_runs_it(power, admin) -> None:
    s = _create(admin)
    ck = Path(checkpoint_location(power.root, s.key))
    ck.mkdir(parents=True)
    (ck / "offsets").write_text("0")
    stream_drop(stream=s)
    assert not ck.parent.exists()
    s.refresh_from_db()
    assert (s.status, s.desired_state) == ("dropped", "stopped")


def test_drop_removes_the_checkpoint_under_tdweb_checkpoints(power, admin, settings, tmp_path) -> None:
    settings.TDWEB_CHECKPOINTS = str(tmp_path / "shared-checkpoints")
    s = _create(admin)
    ck = Path(checkpoint_location(power.root, s.key, settings.TDWEB_CHECKPOINTS))
    assert ck == tmp_path / "shared-checkpoints" / s.key / "checkpoint"
    ck.mkdir(parents=True)
    (ck / "offsets").write_text("0")
    other = tmp_path / "shared-checkpoints" / "another-stream"
    other.mkdir()
    stream_drop(stream=s)
    assert not ck.parent.exists() and other.exists()  # only the dropped stream's folder goes


def test_drop_leaves_the_checkpoint_to_a_running_worker(power, admin) -> None:
    s = _create(admin)
    Stream.objects.filter(pk=s.pk).update(worker="w1")
    ck = Path(checkpoint_location(power.root, s.key))
    ck.mkdir(parents=True)
    stream_drop(stream=s)
    assert ck.exists()  # the worker removes it when its query has stopped


def test_set_status_does_not_revive_a_dropped_stream(power, admin) -> None:
    s = _create(admin)
    stream_drop(stream=s)
    assert stream_set_status(stream_id=s.pk, status=Stream.Status.RUNNING).status == "dropped"


# ---------------------------------------------------------------------- progress and deliveries


def test_progress_updates_counters_status_and_last_progress(power, admin) -> None:
    s = _create(admin)
    p = stream_progress_record(
        stream_id=s.pk,
        report=BatchReport(
            batch_id=0,
            input_rows=100,
            output_rows=4,
            duration_ms=250.0,
            phase="history",
            watermark_ms=5,
            notifications_sent=2,
            notifications_failed=1,
            open_windows=3,
            extra={"source_version": 7},
        ),
    )
    assert (p.batch_id, p.phase, p.rows_per_s, p.open_windows) == (0, "history", 400.0, 3)
    s.refresh_from_db()
    assert s.status == "catching_up" and s.last_batch_id == 0 and s.heartbeat_at is not None
    assert s.last_progress["rows_per_s"] == 400.0 and s.last_progress["source_version"] == 7
    assert s.last_progress["created_at"] == p.created_at.isoformat()
    stream_progress_record(
        stream_id=s.pk, report=BatchReport(batch_id=1, input_rows=50, output_rows=1, notifications_sent=1)
    )
    s.refresh_from_db()
    assert s.status == "running" and s.last_batch_id == 1
    assert (s.rows_in, s.windows_out, s.notifications_sent, s.notifications_failed) == (150, 5, 3, 1)
    assert s.last_progress["rows_per_s"] == 0.0  # no duration: no rate


def test_progress_of_a_paused_stream_keeps_its_status(power, admin) -> None:
    s = stream_action(stream=_create(admin), action="pause")
    stream_progress_record(stream_id=s.pk, report=BatchReport(batch_id=3, input_rows=5))
    s.refresh_from_db()
    assert s.status == "paused" and s.rows_in == 0  # a late batch of a stopping query is only logged
    assert StreamProgress.objects.filter(stream=s).count() == 1


def test_progress_is_pruned_every_100_batches(power, admin, settings) -> None:
    settings.TDWEB_PROGRESS_KEEP = 3
    s = _create(admin)
    for b in range(95, 100):
        stream_progress_record(stream_id=s.pk, report=BatchReport(batch_id=b))
    assert StreamProgress.objects.filter(stream=s).count() == 5
    stream_progress_record(stream_id=s.pk, report=BatchReport(batch_id=100))
    assert list(StreamProgress.objects.filter(stream=s).values_list("batch_id", flat=True)) == [98, 99, 100]


def test_delivery_record(power, admin) -> None:
    s = _create(admin)
    d = stream_delivery_record(
        stream_id=s.pk,
        attempt=Attempt(
            url="ws://x/" + "u" * 2000,
            message_id="m1",
            events=3,
            ok=False,
            latency_ms=12.5,
            error="e" * 5000,
            attempt=2,
        ),
    )
    d = Delivery.objects.get(pk=d.pk)
    assert len(d.url) == 1024 and len(d.error) == 4000
    assert (d.message_id, d.events, d.ok, d.latency_ms, d.attempt, d.stream_id) == (
        "m1",
        3,
        False,
        12.5,
        2,
        s.pk,
    )


# ---------------------------------------------------------------------- supervisor bookkeeping (no Spark)


def test_claim_reconcile_and_recover(power, admin, broker, settings) -> None:
    settings.TDWEB_STALE_AFTER_S = 30
    a, b = _create(admin, "a", "oa"), _create(admin, "b", "ob")
    c = stream_action(stream=_create(admin, "c", "oc"), action="pause")
    broker.flushdb()
    assert supervisor.stream_claim(stream_id=a.pk, worker="w1") is True
    assert supervisor.stream_claim(stream_id=a.pk, worker="w2") is False  # w1 is alive
    assert supervisor.stream_claim(stream_id=a.pk, worker="w1") is True  # its own again
    assert supervisor.stream_claim(stream_id=c.pk, worker="w1") is False  # paused streams are not run
    # b has no worker, a's worker is alive: only b needs one
    assert supervisor.stream_reconcile() == [b.pk]
    assert _queued(broker) == [("streams.run", [b.pk])]
    Stream.objects.filter(pk=a.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    assert sorted(supervisor.stream_reconcile()) == sorted([a.pk, b.pk])  # a's worker went silent
    assert supervisor.stream_claim(stream_id=a.pk, worker="w2") is True
    broker.flushdb()
    assert supervisor.worker_recover(worker="w2") == [a.pk]  # w2 restarted: takes a back at once
    assert Stream.objects.get(pk=a.pk).worker == ""
    assert _queued(broker) == [("streams.run", [a.pk])]


class _Query:
    """A running query as ``_watch`` sees it: it records ``stop`` and ends by itself after 20
    heartbeats (a watch that never stops it returns with ``stopped == 0``)."""

    def __init__(self) -> None:
        self.stopped = 0
        self.beats = 0
        self.lastProgress = None
        self.recentProgress: list[object] = []

    def awaitTermination(self, timeout: float) -> bool:
        self.beats += 1
        return self.stopped > 0 or self.beats > 20

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.stopped += 1


class _StartingQuery(_Query):
    """A query whose first micro-batch commits at its ``first_batch_at``-th poll."""

    def __init__(self, first_batch_at: int) -> None:
        super().__init__()
        self.first_batch_at = first_batch_at

    def awaitTermination(self, timeout: float) -> bool:
        self.beats += 1
        if self.beats >= self.first_batch_at:
            self.recentProgress = [{"batchId": 0}]
        return False


def test_a_starting_query_holds_the_start_gate_until_its_first_micro_batch(settings) -> None:
    """``_await_first_batch`` returns at the poll that sees the first micro-batch, not before and
    not at the limit; a query that ended returns at once."""
    settings.TDWEB_HEARTBEAT_S = 3600  # no beat in this test
    q = _StartingQuery(first_batch_at=3)
    supervisor._await_first_batch(q, 0, "w1", limit_s=3600)
    assert q.beats == 3 and q.recentProgress
    ended = _Query()
    ended.stopped = 1  # awaitTermination answers True: the query has ended
    supervisor._await_first_batch(ended, 0, "w1", limit_s=3600)
    assert ended.beats == 1


def test_the_start_gate_has_TDWEB_START_CONCURRENCY_places(settings, monkeypatch) -> None:
    """A worker starts at most ``TDWEB_START_CONCURRENCY`` queries at once (at least one)."""
    for places, expected in ((2, 2), (0, 1)):
        settings.TDWEB_START_CONCURRENCY = places
        monkeypatch.setattr(supervisor, "_gate", None)
        gate = supervisor.start_gate()
        assert supervisor.start_gate() is gate  # one per worker process
        taken = [gate.acquire(blocking=False) for _ in range(expected + 1)]
        assert taken == [True] * expected + [False]
        for _ in range(expected):
            gate.release()


def test_a_worker_that_lost_its_stream_stops_its_query(power, admin, broker, settings) -> None:
    """w1 was judged dead (no heartbeat for longer than TDWEB_STALE_AFTER_S) and w2 took the stream:
    when w1 beats again it finds the stream is w2's and stops its own query, so the stream does not
    run twice; w2's heartbeat is left alone."""
    settings.TDWEB_STALE_AFTER_S = 15
    settings.TDWEB_HEARTBEAT_S = 0.01
    a = _create(admin, "a", "oa")
    assert supervisor.stream_claim(stream_id=a.pk, worker="w1") is True
    Stream.objects.filter(pk=a.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    assert supervisor.stream_claim(stream_id=a.pk, worker="w2") is True
    w2_beat = Stream.objects.get(pk=a.pk).heartbeat_at
    q = _Query()
    supervisor._watch(q, a.pk, "w1", threading.Event(), [1.0])
    assert q.stopped == 1
    s = Stream.objects.get(pk=a.pk)
    assert (s.worker, s.heartbeat_at) == ("w2", w2_beat)
    q2 = _Query()  # the owner's own watch keeps running (stopped here by pausing the stream)
    stream_action(stream=s, action="pause")
    supervisor._watch(q2, a.pk, "w2", threading.Event(), [1.0])
    assert q2.stopped == 1 and Stream.objects.get(pk=a.pk).worker == "w2"


# ---------------------------------------------------------------------- notifications


def _event(
    window_start: int,
    *,
    result: float | None = 1.0,
    event_type: str = "WINDOW_CLOSE",
    window_id: str | None = None,
) -> dict:
    e = {
        "tableName": "t_a667a16127d3b5a18988e32f3e76cd30",
        "eventType": event_type,
        "eventTime": window_start + 87_097,
        "windowId": window_id or f"window-{window_start}",
        "windowType": "Time",
        "windowStart": window_start,
    }
    if event_type == "WINDOW_CLOSE":
        e["windowEnd"] = window_start + 60_000
        e["result"] = {"_wstart": window_start, "avg(current)": result}
    return e


def _msg(*streams: tuple[str, list[dict]], mid: str = "unique-message-id-12345") -> str:
    return json.dumps(
        {
            "messageId": mid,
            "timestamp": 1733284887203,
            "streams": [{"streamName": n, "events": ev} for n, ev in streams],
        }
    )


@pytest.fixture
def inbox(admin) -> Inbox:  # type: ignore[no-untyped-def]
    return admin.inboxes.get()


def test_ingest_stores_every_event_of_the_seed_message(inbox) -> None:
    w = 1733284800000
    text = _msg(
        (
            "avg_current_stream",
            [
                _event(w, event_type="WINDOW_OPEN", window_id="window-id-67890"),
                _event(w, result=1.3, window_id="window-id-67890"),
            ],
        ),
        (
            "max_voltage_stream",
            [
                {
                    "tableName": "t_96f",
                    "eventType": "WINDOW_OPEN",
                    "eventTime": w + 1,
                    "windowId": "window-id-13579",
                    "windowType": "Event",
                    "windowStart": w,
                    "triggerCondition": {"conditionIndex": 0, "fieldValue": {"c1": 10, "c2": 15}},
                }
            ],
        ),
    )
    created = notification_ingest(inbox=inbox, text=text)
    assert [(n.stream_name, n.event_type) for n in created] == [
        ("avg_current_stream", "WINDOW_OPEN"),
        ("avg_current_stream", "WINDOW_CLOSE"),
        ("max_voltage_stream", "WINDOW_OPEN"),
    ]
    close = created[1]
    assert (close.window_id, close.window_start, close.window_end, close.event_time, close.message_id) == (
        "window-id-67890",
        w,
        w + 60_000,
        w + 87_097,
        "unique-message-id-12345",
    )
    assert close.payload["result"] == {"_wstart": w, "avg(current)": 1.3}
    assert created[2].payload["triggerCondition"]["fieldValue"] == {"c1": 10, "c2": 15}
    assert Notification.objects.filter(inbox=inbox, acknowledged=False).count() == 3


def test_ingest_dedupes_a_resent_message_but_keeps_a_recalculated_window(inbox) -> None:
    text = _msg(("s", [_event(0, result=1.0), _event(60_000, result=2.0)]))
    assert len(notification_ingest(inbox=inbox, text=text)) == 2
    assert notification_ingest(inbox=inbox, text=text) == []  # at-least-once: delivered again
    # the same events in another message (a restarted stream re-sends them with a new id)
    assert notification_ingest(inbox=inbox, text=_msg(("s", [_event(0, result=1.0)]), mid="other")) == []
    # a window recalculated with a different result is news
    again = notification_ingest(inbox=inbox, text=_msg(("s", [_event(0, result=1.5)]), mid="m3"))
    assert len(again) == 1 and again[0].payload["result"]["avg(current)"] == 1.5
    # the same window id in another stream is another window
    assert len(notification_ingest(inbox=inbox, text=_msg(("s2", [_event(0, result=1.0)]), mid="m4"))) == 1
    assert Notification.objects.count() == 4


def test_ingest_dedupes_per_inbox(admin, inbox) -> None:
    other = inbox_get_or_create(name="other", owner=admin)
    text = _msg(("s", [_event(0)]))
    notification_ingest(inbox=inbox, text=text)
    assert len(notification_ingest(inbox=other, text=text)) == 1


def test_events_without_window_id_dedupe_by_message_position(inbox) -> None:
    e = {"eventType": "WINDOW_CLOSE", "windowStart": 0}
    assert len(notification_ingest(inbox=inbox, text=_msg(("s", [e, e]), mid="a"))) == 2
    assert notification_ingest(inbox=inbox, text=_msg(("s", [e, e]), mid="a")) == []
    assert len(notification_ingest(inbox=inbox, text=_msg(("s", [e]), mid="b"))) == 1


def test_ingest_tolerates_odd_numbers_and_long_names(inbox) -> None:
    e = {
        "eventType": "WINDOW_CLOSE",
        "windowId": "w",
        "windowStart": "12",
        "windowEnd": "x",
        "eventTime": None,
    }
    (n,) = notification_ingest(inbox=inbox, text=_msg(("s" * 300, [e])))
    assert (n.window_start, n.window_end, n.event_time, len(n.stream_name)) == (12, None, None, 192)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({"streams": []}), "messageId"),
        (json.dumps({"messageId": "", "streams": []}), "messageId"),
        (json.dumps({"messageId": "m", "streams": {}}), "field streams:"),
        (json.dumps({"messageId": "m", "streams": [{"events": []}]}), "streams[0].streamName"),
        (
            json.dumps({"messageId": "m", "streams": [{"streamName": "s", "events": None}]}),
            "streams[0].events",
        ),
        (
            json.dumps(
                {
                    "messageId": "m",
                    "streams": [{"streamName": "s", "events": [{"eventType": "WINDOW_OPEN"}, {}]}],
                }
            ),
            "streams[0].events[1].eventType",
        ),
    ],
)
def test_malformed_messages_name_the_field(inbox, text, field) -> None:
    with pytest.raises(NotificationError) as err:
        notification_ingest(inbox=inbox, text=text)
    assert field in err.value.message
    assert not Notification.objects.exists()  # nothing of a bad message is stored


def test_oversized_message_is_refused() -> None:
    with pytest.raises(NotificationError, match="larger than"):
        parse_message(json.dumps({"messageId": "m", "streams": [], "pad": "x" * MAX_MESSAGE_BYTES}))


def test_inbox_keys(inbox) -> None:
    assert inbox_check_key(name=DEFAULT_INBOX, key=inbox.key) == inbox
    assert inbox_check_key(name=DEFAULT_INBOX, key=inbox.key + "x") is None
    assert inbox_check_key(name=DEFAULT_INBOX, key="") is None
    assert inbox_check_key(name="nope", key=inbox.key) is None
    assert inbox_get_or_create(name=DEFAULT_INBOX).key == inbox.key  # an existing inbox keeps its key
    fresh = inbox_get_or_create(name="fresh")
    assert fresh.owner is None and len(fresh.key) >= 32 and fresh.key != inbox.key


def test_inbox_users_are_the_owner_and_active_staff(admin, alice, inbox) -> None:
    User = get_user_model()
    staff = User.objects.create_user("ops", is_staff=True)
    User.objects.create_user("gone", is_staff=True, is_active=False)
    User.objects.create_user("bob")
    assert sorted(inbox_users(inbox)) == sorted([admin.pk, staff.pk])
    alices = inbox_get_or_create(name="alice", owner=alice)
    assert sorted(inbox_users(alices)) == sorted([admin.pk, staff.pk, alice.pk])


def test_ack_and_ack_all(admin, alice, inbox) -> None:
    mine = inbox_get_or_create(name="alice", owner=alice)
    notification_ingest(inbox=mine, text=_msg(("s", [_event(0), _event(60_000)])))
    notification_ingest(inbox=inbox, text=_msg(("r", [_event(0)])))
    n = Notification.objects.filter(inbox=mine).first()
    assert notification_ack(notification=n).acknowledged is True
    assert Notification.objects.get(pk=n.pk).acknowledged is True
    assert notification_ack_all(user=alice) == 1
    assert Notification.objects.filter(inbox=inbox, acknowledged=False).count() == 1  # not alice's to ack
    assert notification_ack_all(user=admin) == 1


# ---------------------------------------------------------------------- SQL validation


def test_sql_validate_does_not_create(power, admin) -> None:
    assert sql_validate(sql=STREAM.format(name="v", out="vo"), user=admin) == {
        "ok": True,
        "statement": "CREATE STREAM v (legacy syntax)",
    }
    for sql, label in [
        ("select * from power.meters", "SELECT"),
        ("INSERT  into power.d1 values (now, 1, 2, 3)", "INSERT INTO"),
        ("create table power.t9 (ts timestamp, v int)", "CREATE TABLE"),
    ]:
        assert sql_validate(sql=sql, user=admin) == {"ok": True, "statement": label}
    assert not Stream.objects.exists() and power.catalog.table("power", "vo") is None
    v337 = (
        "CREATE STREAM power.s7 INTERVAL(10s) SLIDING(10s) FROM power.meters PARTITION BY tbname "
        "INTO power.o7 AS SELECT _twstart, avg(current) FROM %%tbname "
        "WHERE {cond} ts >= _twstart AND ts < _twend"
    )
    assert sql_validate(sql=v337.format(cond=""), user=admin) == {
        "ok": True,
        "statement": "CREATE STREAM power.s7 (TDengine 3.3.7 syntax)",
    }
    # an unknown column of a computation is found at validation, where it stands (not at Create)
    sql = v337.format(cond="nope > 1 AND")
    unknown = sql_validate(sql=sql, user=admin)
    assert unknown["ok"] is False and unknown["code"] == Code.INVALID_COLUMN
    assert unknown["position"]["offset"] == sql.index("nope")
    bad = sql_validate(
        sql="CREATE STREAM v INTO power.vo AS SELECT _wstart, avg(current) FROM power.nope INTERVAL(10s)",
        user=admin,
    )
    assert bad["ok"] is False and bad["code"] == Code.TABLE_NOT_EXIST and "nope" in bad["desc"]


def test_sql_errors_are_typed(power, admin) -> None:
    with pytest.raises(SqlError) as err:
        sql_execute(sql="SELECT nope FROM power.meters", user=admin)
    assert err.value.code == Code.INVALID_COLUMN and err.value.position.column == 8


# ---------------------------------------------------------------------- admin bootstrap


def test_admin_bootstrap_is_idempotent(db, settings) -> None:
    settings.TDWEB_ADMIN_PASSWORD = "first-secret"
    user, inbox = admin_bootstrap()
    assert user.is_superuser and user.is_staff and user.check_password("first-secret")
    assert inbox.name == DEFAULT_INBOX and inbox.owner == user
    settings.TDWEB_ADMIN_PASSWORD = "second-secret"
    user2, inbox2 = admin_bootstrap()
    assert (user2.pk, inbox2.pk, inbox2.key) == (user.pk, inbox.pk, inbox.key)
    assert (
        get_user_model().objects.get(pk=user.pk).check_password("first-secret")
    )  # a later run changes nothing
    assert get_user_model().objects.count() == 1 and Inbox.objects.count() == 1


def test_admin_bootstrap_keeps_a_changed_password(admin) -> None:
    admin.set_password("changed")
    admin.save()
    admin_bootstrap()
    assert get_user_model().objects.get(pk=admin.pk).check_password("changed")


def test_bootstrap_command_prints_the_inbox_url(db, capsys, settings) -> None:
    settings.TDWEB_HOST, settings.TDWEB_PORT = "h", 9
    call_command("bootstrap")
    inbox = Inbox.objects.get()
    assert f"ws://h:9/ws/notify/{DEFAULT_INBOX}?key={inbox.key}" in capsys.readouterr().out
    assert inbox_url(inbox=inbox, host="x", port=1) == f"ws://x:1/ws/notify/{DEFAULT_INBOX}?key={inbox.key}"


def test_admin_password_comes_from_the_environment() -> None:
    env = {**os.environ, "TDWEB_ADMIN_PASSWORD": "from-env", "DJANGO_SETTINGS_MODULE": "tdweb.settings"}
    out = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.TDWEB_ADMIN_PASSWORD)"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "from-env"


def test_counters_cannot_go_negative(power, admin) -> None:
    s = _create(admin)
    with pytest.raises(IntegrityError):
        Stream.objects.filter(pk=s.pk).update(rows_in=-1)


def test_a_cluster_without_shared_catalog_and_checkpoints_fails_the_system_check(settings) -> None:
    """``manage.py check`` (and every stream start) refuses a Spark cluster whose lake is on object
    storage while the catalog or the checkpoints would stay on one host (runtime/deployment.py)."""
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    from streams_app.services.lake import deployment_check

    settings.SPARK_MASTER, settings.TDWEB_LAKE = "spark://spark-master:7077", "s3://bucket/lake"
    settings.TDWEB_CATALOG_URL, settings.TDWEB_CHECKPOINTS = "", ""
    errors = deployment_check()
    assert [e.id for e in errors] == ["tdweb.E001", "tdweb.E002"]
    assert "TDWEB_CATALOG_URL" in errors[0].msg and "TDWEB_CHECKPOINTS" in errors[1].msg
    with pytest.raises(SystemCheckError):
        call_command("check")
    settings.TDWEB_CATALOG_URL = "postgres://pg/tdweb"
    assert [e.id for e in deployment_check()] == ["tdweb.E002"]  # the checkpoints still missing
    settings.TDWEB_CHECKPOINTS = "s3a://bucket/checkpoints"
    assert deployment_check() == []
    settings.TDWEB_CATALOG_URL, settings.TDWEB_CHECKPOINTS = "", ""
    settings.SPARK_MASTER = "local[2]"  # one host: the embedded defaults are fine
    assert deployment_check() == []
    settings.SPARK_MASTER, settings.TDWEB_LAKE = "spark://spark-master:7077", "/shared/lake"
    assert deployment_check() == []  # a lake folder every host mounts carries catalog and checkpoints
