""" "Why no output?" (streams_app.services.diagnosis, ``GET /api/v1/streams/{id}/diagnosis/``).

Issue 16's acceptance: a stream whose rows are all expired and one whose notification receiver
is down, each driven through the local pipeline (``LocalRunner``: stage 1, the kernel, the output
sink, the notification sender) with the worker's own recorders (``stream_progress_record``,
``stream_delivery_record``); the diagnosis must name each cause. Expected counts come from the
rows the test wrote and the attempts the sender reported, not from the diagnosis.
"""

from __future__ import annotations

import datetime as dt
import socket

import pytest

from spark_workers.notify.sender import Attempt, Sender
from spark_workers.runtime.local import LocalRunner
from spark_workers.streams.spec import StreamSpec
from spark_workers.streams.stored import stream_compiled
from streams_app.models import Stream
from streams_app.services.diagnosis import StreamNotVisible, iso, stream_diagnosis
from streams_app.services.lake import lake_get
from streams_app.services.stream_control import stream_delivery_record, stream_progress_record
from streams_app.services.streams import stream_create
from tests.web.conftest import api_client, root_sql

pytestmark = pytest.mark.django_db

DOWN_PORT = 18221  # this helper's port range: nothing listens there (checked below)
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

EXPIRED_SQL = (
    "CREATE STREAM exp_s TRIGGER WINDOW_CLOSE IGNORE EXPIRED 1 INTO power.o_exp AS "
    "SELECT _wstart, avg(current) AS a FROM power.meters PARTITION BY tbname INTERVAL(10s)"
)
NOTIFY_SQL = (
    "CREATE STREAM power.ntf_s INTERVAL(10s) SLIDING(10s) FROM power.meters PARTITION BY tbname "
    f"NOTIFY('ws://127.0.0.1:{DOWN_PORT}/notify') ON (WINDOW_CLOSE) INTO power.o_ntf AS "
    "SELECT _twstart, avg(current) AS a FROM %%trows"
)


class Drive:
    """A Django stream run by the local pipeline, recording progress and deliveries as the
    worker does (``supervisor._run_once``); ``attempts`` keeps what the sender reported."""

    def __init__(self, stream: Stream) -> None:
        self.attempts: list[Attempt] = []

        def on_attempt(a: Attempt) -> None:
            self.attempts.append(a)
            stream_delivery_record(stream_id=stream.pk, attempt=a)

        spec = StreamSpec.from_json(stream.spec)
        lake = lake_get()
        self.runner = LocalRunner(
            stream_compiled(spec, stream.compiled, lake, "UTC"),
            lake,
            stream_key=stream.key,
            start_version=stream.start_version,
            history_version=stream.history_version,
            buckets=2,
            sender=Sender(on_attempt=on_attempt, sleep=lambda s: None),
            progress=lambda r: stream_progress_record(stream_id=stream.pk, report=r),
        )

    def insert(self, sql: str) -> None:
        root_sql(sql)
        self.runner.run()


def _at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def _values(table: str, seconds: list[int]) -> str:
    return f"power.{table} VALUES " + " ".join(f"('{_at(s)}', 1.0, 220, 0.3)" for s in seconds)


def _ms(seconds: int) -> int:
    return int((T0 + dt.timedelta(seconds=seconds)).timestamp() * 1000)


def _port_is_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_a_stream_whose_rows_are_all_expired_is_diagnosed(power, admin) -> None:
    stream = stream_create(user=admin, sql=EXPIRED_SQL)
    drive = Drive(stream)
    drive.insert("INSERT INTO " + _values("d1001", [3600]) + " " + _values("d1002", [3600]))
    late = list(range(600, 720))  # 120 rows per subtable, an hour behind the watermark
    drive.insert("INSERT INTO " + _values("d1001", late) + " " + _values("d1002", late))
    d = stream_diagnosis(stream=stream, user=admin)
    behind = 2 * len(late)  # every row of the second insert: windows long closed (WATERMARK 0)
    assert d["dropped"]["expired"] == behind and d["input_rows"] == behind + 2
    assert d["output_rows"] == 0  # the two windows at 01:00:00 stay open
    assert d["latest_event_ms"] == _ms(3600) and d["watermark_ms"] == _ms(3600)
    texts = [c["text"] for c in d["causes"]]
    expired = [c for c in d["causes"] if c["option"] == "IGNORE_EXPIRED 1"]
    assert len(expired) == 1, texts
    assert (
        f"all {behind} rows read since" in expired[0]["text"]
        and "older than the watermark" in expired[0]["text"]
    )
    assert set(d["dropped_sample"]) <= {iso(_ms(s)) for s in late} and d["dropped_sample"]
    assert iso(_ms(late[0])) in d["dropped_sample"] and iso(_ms(late[-1])) in d["dropped_sample"]
    # the stream started after the power fixture's six rows: FILL_HISTORY 0 explains them
    fill = [c["text"] for c in d["causes"] if c["option"] == "FILL_HISTORY 0"]
    assert fill == [
        "FILL_HISTORY 0: rows before the stream's creation are not computed "
        "(the 6 rows the source table held when it was created)"
    ]
    # windows [01:00:00, 01:00:10) are open: a row at or after their end closes them
    window = [c for c in d["causes"] if c["option"] == "WINDOW_CLOSE"]
    assert window and iso(_ms(3610)) in window[0]["text"], texts
    assert d["open_windows"]["count"] == 2 and d["open_windows"]["earliest_end"] == iso(_ms(3610))
    groups = {g["group"]: g for g in d["groups"]}
    assert set(groups) == {"d1001", "d1002"}
    assert groups["d1001"]["latest_event_ms"] == _ms(3600) and groups["d1001"]["rows"] == 3 + 1 + len(late)
    assert iso(_ms(3610)) in groups["d1001"]["closes_when"]


def test_a_stream_whose_receiver_is_down_is_diagnosed(power, admin) -> None:
    assert _port_is_closed(DOWN_PORT)
    stream = stream_create(user=admin, sql=NOTIFY_SQL)
    assert StreamSpec.from_json(stream.spec).notify.on_failure == "DROP"  # type: ignore[union-attr]
    drive = Drive(stream)
    drive.insert("INSERT INTO " + _values("d1001", [100, 105, 112, 125]))  # closes [100,110), [110,120)
    failed = [a for a in drive.attempts if not a.ok]
    assert failed and len(failed) == len(drive.attempts)
    d = stream_diagnosis(stream=stream, user=admin)
    url = f"ws://127.0.0.1:{DOWN_PORT}/notify"
    (receiver,) = d["notifications"]["receivers"]
    assert receiver["url"] == url and receiver["failed"] == len(failed) == receiver["attempts"]
    assert receiver["last_error"] == "connection refused"
    events_lost = sum({a.message_id: a.events for a in failed}.values())  # each message's events once
    assert d["notifications"] == {"sent": 0, "failed": events_lost, "receivers": [receiver]} and events_lost
    refused = [c["text"] for c in d["causes"] if url in c["text"]]
    assert refused == [
        f"the receiver {url} refused the connection {len(failed)} times; "
        "ON_FAILURE DROP: the messages were dropped"
    ]
    assert d["dropped"]["expired"] == 0 and not any(c["option"] == "IGNORE_EXPIRED 1" for c in d["causes"])
    # the 3.3.7 trigger decides when windows close: d1001's rows at 100..125 s leave [120, 130) open
    assert d["trigger"] == "INTERVAL(10s) SLIDING(10s)"
    d1001 = next(g for g in d["groups"] if g["group"] == "d1001")
    assert d1001["closes_when"].startswith(
        f"INTERVAL(10s) SLIDING(10s): a row of this group at or after {iso(_ms(130))}"
    )


def test_diagnosis_api_is_for_the_owner_and_privileged_only(power, admin, alice) -> None:
    stream = stream_create(user=admin, sql=EXPIRED_SQL)
    r = api_client(alice).get(f"/api/v1/streams/{stream.pk}/diagnosis/")
    assert r.status_code == 404
    with pytest.raises(StreamNotVisible):
        stream_diagnosis(stream=stream, user=alice)
    body = api_client(admin).get(f"/api/v1/streams/{stream.pk}/diagnosis/").json()
    assert body["stream_id"] == stream.pk and body["batches"] == 0
    assert any(c["text"].startswith("no row since the stream was created") for c in body["causes"])
    own = stream_create(user=alice, sql=EXPIRED_SQL.replace("exp_s", "alice_s").replace("o_exp", "o_al"))
    assert api_client(alice).get(f"/api/v1/streams/{own.pk}/diagnosis/").status_code == 200


def test_history_windows_without_notify_history_are_named(power, admin) -> None:
    """FILL_HISTORY computes the fixture's six rows (per subtable, rows at 0-1, 5-6 and 12-13 s:
    [0, 10) closes, [10, 20) stays open); without NOTIFY_HISTORY no window is notified."""
    stream = stream_create(
        user=admin,
        sql=NOTIFY_SQL.replace("ntf_s", "hist_s")
        .replace("o_ntf", "o_hist")
        .replace("PARTITION BY tbname ", "PARTITION BY tbname STREAM_OPTIONS(FILL_HISTORY) "),
    )
    assert stream.history_version is not None
    drive = Drive(stream)
    drive.runner.run()
    assert drive.attempts == []  # nothing was sent: not even tried
    d = stream_diagnosis(stream=stream, user=admin)
    assert d["input_rows"] == 6 and d["output_rows"] > 0
    options = [c["option"] for c in d["causes"]]
    assert "NOTIFY_HISTORY 0" in options and "FILL_HISTORY 0" not in options
    (text,) = [c["text"] for c in d["causes"] if c["option"] == "NOTIFY_HISTORY 0"]
    assert text.startswith("NOTIFY_HISTORY 0: history windows are not notified")


@pytest.mark.parametrize(
    ("sql", "trigger", "no_row"),
    [
        (
            "CREATE STREAM power.per_s PERIOD(1h) NOTIFY('ws://127.0.0.1:18222/notify')",
            "PERIOD(1h)",
            "micro-batch",
        ),
        (
            "CREATE STREAM power.ses_s SESSION(ts, 10s) FROM power.meters PARTITION BY tbname "
            "INTO power.o_ses AS SELECT _twstart, count(*) FROM %%trows",
            "SESSION(ts, 10s)",
            "row",
        ),
        (
            "CREATE STREAM st_s INTO power.o_st AS "
            "SELECT _wstart, count(*) FROM power.d1001 STATE_WINDOW(voltage)",
            "WINDOW_CLOSE",
            "row",
        ),
    ],
)
def test_every_trigger_type_is_diagnosed_before_its_first_batch(power, admin, sql, trigger, no_row) -> None:
    stream = stream_create(user=admin, sql=sql)
    d = api_client(admin).get(f"/api/v1/streams/{stream.pk}/diagnosis/").json()
    assert d["trigger"] == trigger and d["batches"] == 0
    assert any(c["text"].startswith(f"no {no_row} since the stream was created (") for c in d["causes"])


# -------------------------------------------------- rows removed by WHERE / PRE_FILTER (stage 1)

FILTER_TABLES = (
    "CREATE STABLE power.st (ts TIMESTAMP, v INT, w FLOAT) TAGS (loc INT)",
    "CREATE TABLE power.t1 USING power.st TAGS (1)",
    "CREATE TABLE power.t2 USING power.st TAGS (2)",
)
WHERE_SQL = (
    "CREATE STREAM wf_s INTO power.o_wf AS SELECT _wstart, count(*) AS n FROM power.st "
    "WHERE v > 100 PARTITION BY tbname INTERVAL(10s)"
)
PRE_FILTER_SQL = (
    "CREATE STREAM power.pf_s INTERVAL(10s) SLIDING(10s) FROM power.st PARTITION BY tbname "
    "STREAM_OPTIONS(PRE_FILTER(v > 100)) INTO power.o_pf AS SELECT _twstart, count(*) AS n FROM %%trows"
)


def _filter_rows(drive: Drive, rows: dict[str, list[tuple[int, int]]]) -> None:
    """Insert ``{subtable: [(second, v)]}`` and run the stream."""
    drive.insert(
        "INSERT INTO "
        + " ".join(
            f"power.{t} VALUES " + " ".join(f"('{_at(s)}', {v}, 1.5)" for s, v in vs)
            for t, vs in rows.items()
        )
    )


def _filter_stream(admin, sql: str) -> tuple[Stream, Drive]:  # type: ignore[no-untyped-def]
    for ddl in FILTER_TABLES:
        root_sql(ddl)
    root_sql(f"INSERT INTO power.t1 VALUES ('{_at(-60)}', 1, 1.5)")  # before the stream: never read
    stream = stream_create(user=admin, sql=sql)
    return stream, Drive(stream)


@pytest.mark.parametrize(("sql", "clause"), [(WHERE_SQL, "WHERE"), (PRE_FILTER_SQL, "PRE_FILTER")])
def test_rows_all_removed_by_the_filter_are_the_first_cause(power, admin, sql, clause) -> None:
    stream, drive = _filter_stream(admin, sql)
    rows = {"t1": [(s, s % 90) for s in range(0, 40)], "t2": [(s, 100) for s in range(5, 25)]}
    _filter_rows(drive, rows)
    failing = [(t, s, v) for t, vs in rows.items() for s, v in vs if not v > 100]
    n = sum(len(vs) for vs in rows.values())
    assert len(failing) == n  # every row fails v > 100
    d = api_client(admin).get(f"/api/v1/streams/{stream.pk}/diagnosis/").json()
    assert d["output_rows"] == 0 and d["dropped"]["filtered"] == 0  # the engine never saw them
    f = d["filter_check"]
    assert f["clause"] == clause and f["condition"].replace(" ", "") == "v>100"
    assert (f["examined"], f["failed"], f["complete"], f["columns"]) == (n, n, True, ["v"])
    first = d["causes"][0]
    assert first["option"] == clause, d["causes"]
    assert first["text"].startswith(f"{clause}: all {n} rows examined did not pass the filter (")
    # the sample: the latest failing rows, with their subtable and the column the filter reads
    latest = sorted(failing, key=lambda r: (-r[1], r[0]))[:5]
    assert len(f["sample"]) == 5
    assert {(s["tbname"], s["ts_ms"], s["values"]["v"]) for s in f["sample"]} <= {
        (t, _ms(s), v) for t, s, v in failing
    }
    assert [s["ts_ms"] for s in f["sample"]] == [_ms(s) for _, s, _ in latest]
    assert (
        f["sample"][0]["time"] == iso(_ms(latest[0][1])) and f"t1 at {iso(_ms(39))} (v=39)" in first["text"]
    )


def test_only_the_rows_failing_the_filter_are_counted(power, admin) -> None:
    stream, drive = _filter_stream(admin, WHERE_SQL)
    rows = {"t1": [(s, 50 + 10 * s) for s in range(0, 30)], "t2": [(s, 200 - 7 * s) for s in range(0, 30)]}
    _filter_rows(drive, rows)
    _filter_rows(drive, {"t2": [(100, 101), (101, 100)]})  # a second version: both are read
    every = [v for vs in rows.values() for _, v in vs] + [101, 100]
    failed = sum(1 for v in every if not v > 100)
    assert 0 < failed < len(every)
    d = stream_diagnosis(stream=stream, user=admin)
    f = d["filter_check"]
    assert f is not None and (f["examined"], f["failed"]) == (len(every), failed)
    assert all(s["values"]["v"] <= 100 for s in f["sample"]) and f["sample"][0]["ts_ms"] == _ms(101)
    where = [c for c in d["causes"] if c["option"] == "WHERE"]
    assert len(where) == 1 and where[0]["text"].startswith(f"WHERE: {failed} of {len(every)} rows examined")
    assert d["causes"][0]["option"] != "WHERE"  # not every row failed: not the first cause


def test_history_rows_are_examined_with_fill_history(power, admin) -> None:
    """FILL_HISTORY 1: the rows the source held at CREATE STREAM are read too."""
    for ddl in FILTER_TABLES:
        root_sql(ddl)
    before = [(s, s) for s in range(0, 12)]
    root_sql("INSERT INTO power.t1 VALUES " + " ".join(f"('{_at(s)}', {v}, 1.5)" for s, v in before))
    stream = stream_create(user=admin, sql=WHERE_SQL.replace("wf_s ", "wf_s FILL_HISTORY 1 "))
    assert stream.history_version is not None
    drive = Drive(stream)
    drive.runner.run()
    _filter_rows(drive, {"t2": [(50, 500), (51, 5)]})
    f = stream_diagnosis(stream=stream, user=admin)["filter_check"]
    assert f is not None and (f["examined"], f["failed"]) == (len(before) + 2, len(before) + 1)


def test_a_stream_without_a_filter_has_no_filter_cause(power, admin) -> None:
    stream, drive = _filter_stream(admin, WHERE_SQL.replace("WHERE v > 100 ", ""))
    _filter_rows(drive, {"t1": [(s, 1) for s in range(0, 20)]})
    d = stream_diagnosis(stream=stream, user=admin)
    assert d["filter_check"] is None and d["input_rows"] == 20
    assert not any(c["option"] in ("WHERE", "PRE_FILTER") for c in d["causes"])


def test_the_filter_check_is_read_with_the_users_privileges(power, admin, alice) -> None:
    """A privileged user who may not read the source table gets the rest of the diagnosis only."""
    from streams_app.models import Privilege

    stream, drive = _filter_stream(admin, WHERE_SQL)
    _filter_rows(drive, {"t1": [(s, 1) for s in range(0, 5)]})
    assert stream_diagnosis(stream=stream, user=admin)["filter_check"]["failed"] == 5
    alice.is_staff = True  # sees every stream (selectors.stream_get), yet reads power no more
    alice.save()
    Privilege.objects.filter(user=alice).delete()
    d = stream_diagnosis(stream=stream, user=alice)
    assert d["filter_check"] is None and not any(c["option"] == "WHERE" for c in d["causes"])


def test_the_filter_check_is_bounded_to_the_newest_rows(power, admin) -> None:
    from spark_workers.runtime.filtered import filter_check

    stream, drive = _filter_stream(admin, WHERE_SQL)
    _filter_rows(drive, {"t1": [(s, 1) for s in range(0, 30)]})
    _filter_rows(drive, {"t2": [(s, 500) for s in range(0, 8)]})  # the newest version: all pass
    c = stream_compiled(StreamSpec.from_json(stream.spec), stream.compiled, lake_get(), "UTC")
    f = filter_check(c, lake_get(), "UTC", start_version=stream.start_version, history_version=None, limit=8)
    assert f is not None and (f.examined, f.failed, f.complete) == (8, 0, False)
    f = filter_check(c, lake_get(), "UTC", start_version=stream.start_version, history_version=None)
    assert f is not None and (f.examined, f.failed, f.complete) == (38, 30, True)


def test_a_failed_filter_check_leaves_the_rest_of_the_diagnosis(power, admin, monkeypatch, caplog) -> None:
    from streams_app.services import diagnosis

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("the lake is unreachable")

    stream, drive = _filter_stream(admin, WHERE_SQL)
    _filter_rows(drive, {"t1": [(s, 1) for s in range(0, 5)]})
    monkeypatch.setattr(diagnosis, "filter_check", broken)
    r = api_client(admin).get(f"/api/v1/streams/{stream.pk}/diagnosis/")
    assert r.status_code == 200 and r.json()["filter_check"] is None and r.json()["batches"] == 1
    assert "the filtered rows could not be read" in caplog.text and "unreachable" not in r.content.decode()


def test_the_filter_check_over_a_nanosecond_database(power, admin) -> None:
    root_sql("CREATE DATABASE fns PRECISION 'ns'")
    root_sql("CREATE TABLE fns.t (ts TIMESTAMP, v INT)")
    stream = stream_create(
        user=admin,
        sql="CREATE STREAM ns_s INTO fns.o AS SELECT _wstart, count(*) FROM fns.t WHERE v > 100 "
        "INTERVAL(10s)",
    )
    rows = [(s, 90 + s) for s in range(0, 20)]  # v 90 .. 109
    Drive(stream).insert("INSERT INTO fns.t VALUES " + " ".join(f"('{_at(s)}', {v})" for s, v in rows))
    f = stream_diagnosis(stream=stream, user=admin)["filter_check"]
    failing = [(s, v) for s, v in rows if not v > 100]
    assert f is not None and (f["examined"], f["failed"]) == (len(rows), len(failing))
    assert [(s["tbname"], s["ts_ms"], s["values"]) for s in f["sample"][:2]] == [
        (None, _ms(s), {"v": v}) for s, v in failing[::-1][:2]
    ]
