"""TDengine 3.3.7 PERIOD triggers (``runtime/period.py``) and notify-only streams: the seed's
trigger-time rules, ``%%trows`` = rows written since the previous trigger, the scheduler
placeholders, groups, ON_TIME notifications to a real WebSocket server, and the errors."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spark_workers.duration import Duration
from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.period import PeriodRunner, period_next
from spark_workers.runtime.sink import OutputSink
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import compile_stream
from spark_workers.streams.registry import MemoryRegistry

MIN = 60_000
# trigger times a day ahead: %%trows holds the rows committed before a trigger time, and the tests
# commit now
T0 = (int(time.time() * 1000) // MIN + 24 * 60) * MIN


def ms(text: str, tz: str = "UTC") -> int:
    from spark_workers.timestamps import zone

    return int(dt.datetime.fromisoformat(text).replace(tzinfo=zone(tz)).timestamp() * 1000)


def fires(
    after: str, n: int, period: str, offset: str | None = None, created: str | None = None
) -> list[str]:
    p, o = Duration.parse(period), Duration.parse(offset) if offset else None
    t = ms(after)
    c = ms(created or after)
    out = []
    for _ in range(n):
        t = period_next(t, c, p, o, "UTC")
        out.append(dt.datetime.fromtimestamp(t / 1000, dt.UTC).strftime("%m-%d %H:%M"))
    return out


def test_periods_below_a_day_reset_at_midnight_as_in_the_seed_examples() -> None:
    day = ["01-01 05:30", "01-01 11:00", "01-01 16:30", "01-01 22:00", "01-02 00:00", "01-02 05:30"]
    assert fires("2025-01-01 00:00:00", 6, "330m") == day
    assert fires("2025-01-01 00:00:00", 3, "330m", "1m") == ["01-01 00:01", "01-01 05:31", "01-01 11:01"]
    # created at 12:00: the day's remaining triggers, then the full list from the next day
    assert fires("2025-01-01 12:00:00", 3, "330m", "1m") == ["01-01 16:31", "01-01 22:01", "01-02 00:01"]
    assert fires("2025-01-01 00:00:30", 2, "1m") == ["01-01 00:01", "01-01 00:02"]


def test_periods_of_a_day_or_more_do_not_reset() -> None:
    # seed 002: 1 day 1 hour created 05-01 12:00 -> 05-02 01:00, 05-03 02:00, 05-04 03:00
    assert fires("2025-05-01 12:00:00", 3, "25h") == ["05-02 01:00", "05-03 02:00", "05-04 03:00"]


class Env:
    def __init__(self, root: Path) -> None:
        self.lake = Lake(root)
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC", default_db="d")
        self.ex.execute(
            "create database d; create stable st (ts timestamp, a int) tags (g int);"
            "create table c1 using st tags (1); create table c2 using st tags (2)"
        )

    def period(self, sql: str, sender: Any = None, created_ms: int = T0) -> PeriodRunner:
        self.ex.execute(sql)
        name = sql.split()[2]
        info = self.reg.get(name, None)
        assert info is not None
        c = compile_stream(info.spec, self.lake, "UTC")
        key = self.reg.key(name, None)
        sink = OutputSink(c, self.lake, stream_key=key, sender=sender)
        start, _ = self.reg.start_versions[key]
        return PeriodRunner(c, self.lake, sink, created_ms=created_ms, start_version=start)

    def rows(self, sql: str) -> list[list[object]]:
        return [list(r) for r in self.ex.execute_one(sql).rows]


def test_trows_of_a_period_are_the_rows_written_since_the_previous_trigger(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute(f"insert into c1 values ({T0 - 5000}, 1)")  # before the stream: not counted
    r = env.period(
        "create stream s period(1m) from st partition by tbname into res "
        "as select _tlocaltime t, _tprev_localtime prev, _tnext_localtime nxt, count(*) n, sum(a) total "
        "from %%trows"
    )
    env.ex.execute(f"insert into c1 values ({T0}, 1) ({T0 + 1}, 2)")
    env.ex.execute(f"insert into c2 values ({T0}, 10)")
    assert r.next_due(T0 + 30_000) == T0 + MIN
    r.fire(T0 + MIN)
    env.ex.execute(f"insert into c1 values ({T0 + 2}, 3)")
    r.fire(T0 + 2 * MIN)
    got = env.rows("select t, prev, nxt, n, total, tag_tbname from res order by tag_tbname, t")
    assert got == [
        [T0 + MIN, T0, T0 + 2 * MIN, 2, 3, "c1"],
        [T0 + 2 * MIN, T0 + MIN, T0 + 3 * MIN, 1, 3, "c1"],
        [T0 + MIN, T0, T0 + 2 * MIN, 1, 10, "c2"],
        [T0 + 2 * MIN, T0 + MIN, T0 + 3 * MIN, 0, None, "c2"],
    ]
    r.fire(T0 + 2 * MIN)  # the same trigger again (a restart): nothing is written twice
    assert env.rows("select count(*) from res") == [[4]]


def test_ignore_nodata_trigger_skips_groups_without_rows_and_no_from_has_one_group(tmp_path: Path) -> None:
    env = Env(tmp_path)
    r = env.period(
        "create stream s period(10s) from st partition by g stream_options(ignore_nodata_trigger) "
        "into res tags (grp int as %%1) as select _tlocaltime t, count(*) n from %%trows"
    )
    env.ex.execute(f"insert into c2 values ({T0}, 1)")
    r.fire(T0 + 10_000)
    assert env.rows("select t, n, grp from res") == [[T0 + 10_000, 1, 2]]
    r2 = env.period(
        "create stream s2 period(1m) into report as select _tlocaltime t, count(*) n, max(a) m from d.st"
    )
    r2.fire(T0 + MIN)
    assert env.rows("select t, n, m from report") == [[T0 + MIN, 1, 1]]
    assert env.rows("select type from information_schema.ins_tables where table_name = 'report'") == [
        ["NORMAL_TABLE"]
    ]


def _server() -> tuple[Any, int, list[dict[str, Any]]]:
    from websockets.sync.server import serve

    received: list[dict[str, Any]] = []

    def handler(ws) -> None:  # type: ignore[no-untyped-def]
        for msg in ws:
            received.append(json.loads(msg))

    server = serve(handler, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.socket.getsockname()[1], received


def test_on_time_notifications_and_calc_notify_only(tmp_path: Path) -> None:
    from spark_workers.notify.sender import Sender

    server, port, received = _server()
    sender = Sender()
    try:
        env = Env(tmp_path)
        r = env.period(
            f"create stream s period(1m) from c1 stream_options(calc_notify_only) "
            f"notify('ws://127.0.0.1:{port}/n') as select _tlocaltime t, count(*) n from %%trows",
            sender=sender,
        )
        env.ex.execute(f"insert into c1 values ({T0}, 1) ({T0 + 1}, 2)")
        rep = r.fire(T0 + MIN, now_ms=T0 + MIN + 5)
    finally:
        sender.close()
        server.shutdown()
    assert rep.notifications_sent == 1 and rep.output_rows == 0
    (msg,) = received
    (ev,) = msg["streams"][0]["events"]
    assert msg["streams"][0]["streamName"] == "s" and msg["timestamp"] == T0 + MIN + 5
    assert ev["eventType"] == "ON_TIME" and ev["triggerType"] == "Period"
    assert ev["triggerTime"] == T0 + MIN and ev["eventTime"] == T0 + MIN + 5
    assert ev["result"]["n"] == 2 and ev["result"]["t"] is not None
    assert {"tableName", "triggerId", "groupId"} <= set(ev)
    assert env.ex.catalog.table("d", "s") is None  # CALC_NOTIFY_ONLY: no output table


def test_a_notify_only_window_stream_sends_events_without_an_output_table(tmp_path: Path) -> None:
    from spark_workers.notify.sender import Sender

    server, port, received = _server()
    sender = Sender()
    try:
        env = Env(tmp_path)
        env.ex.execute(
            f"create stream s session(ts, 5s) from st partition by tbname "
            f"notify('ws://127.0.0.1:{port}/n') on (window_open|window_close)"
        )
        runner = LocalRunner.for_registered(env.lake, env.reg, "s", sender=sender)
        env.ex.execute(f"insert into c1 values ({T0}, 1) ({T0 + 1000}, 1) ({T0 + 60_000}, 1)")
        runner.run()
    finally:
        sender.close()
        server.shutdown()
    events = [e for m in received for st in m["streams"] for e in st["events"]]
    kinds = sorted((e["windowStart"] - T0, e["eventType"]) for e in events)
    assert kinds == [(0, "WINDOW_CLOSE"), (0, "WINDOW_OPEN"), (60_000, "WINDOW_OPEN")]
    closed = next(e for e in events if e["eventType"] == "WINDOW_CLOSE")
    # a 3.3.7 session ends at its last row (td-046)
    assert closed["windowEnd"] == T0 + 1000 and "result" not in closed and closed["triggerType"] == "Session"
    assert (
        env.ex.execute_one("show stables").rows == [("st",)]
        or len(env.ex.execute_one("show stables").rows) == 1
    )


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("create stream s period(5a) into r as select _tlocaltime, count(*) from d.st", "[10a, 3650d]"),
        ("create stream s period(3651d) into r as select _tlocaltime, count(*) from d.st", "[10a, 3650d]"),
        ("create stream s period(1h, 1d) into r as select _tlocaltime, count(*) from d.st", "below one day"),
        (
            "create stream s period(1m) from st stream_options(fill_history) into r as "
            "select _tlocaltime, count(*) from %%trows",
            "FILL_HISTORY is not supported with a PERIOD trigger",
        ),
        (
            "create stream s period(1m) into r as select _twstart, count(*) from d.st",
            "_twstart is not allowed here: it belongs to window triggers",
        ),
        (
            "create stream s period(1m) notify('ws://h:1/x') on (window_close) into r as "
            "select _tlocaltime, count(*) from d.st",
            "ON_TIME events, not WINDOW_CLOSE",
        ),
        ("create stream s period(1m) partition by tbname into r as select now, 1 from d.st", "one group"),
        ("create stream s session(ts, 1s) into r as select _twstart, count(*) from d.st", "trigger table"),
        ("create stream s period(1m) from st as select _tlocaltime, count(*) from %%trows", "INTO"),
        (
            "create stream s period(1m) from st stream_options(calc_notify_only) into r as "
            "select now, 1 from d.st",
            "add NOTIFY",
        ),
        ("create stream s session(ts, 1s) from st", "must notify"),
        ("create stream s period(1m) into r as select _tlocaltime, count(*) from %%trows", "trigger table"),
    ],
)
def test_period_and_output_errors_name_what_is_wrong(tmp_path: Path, sql: str, named: str) -> None:
    env = Env(tmp_path)
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(sql)
    assert named in str(e.value), str(e.value)
    assert env.reg.list() == [] and env.ex.catalog.table("d", "r") is None


def test_rows_committed_after_the_trigger_time_wait_for_the_next_trigger(tmp_path: Path) -> None:
    env = Env(tmp_path)
    now = int(time.time() * 1000)
    past = (now // MIN - 1) * MIN
    r = env.period(
        "create stream s period(1m) from c1 into res as select _tlocaltime t, count(*) n from %%trows",
        created_ms=past - MIN,
    )
    env.ex.execute(f"insert into c1 values ({now}, 1)")
    r.fire(past)  # a trigger that fires late: the row was committed after its time
    r.fire(T0 + MIN)
    assert env.rows("select t, n from res") == [[past, 0], [T0 + MIN, 1]]


def test_dropping_a_database_follows_the_seed_table_of_operations(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute(
        "create database e; create stream e.s session(ts, 1s) from d.c1 into e.r as "
        "select _twstart, count(*) from %%trows"
    )
    env.ex.execute(
        "create stream d.own session(ts, 1s) from d.c1 into d.r2 as select _twstart, count(*) from %%trows"
    )
    env.ex.execute(
        "create database f; create table f.ref (ts timestamp, v int);"
        "create stream e.s3 period(1m) into e.r3 as select _tlocaltime, count(*) from f.ref"
    )
    for db, reader in (("d", "s"), ("f", "s3")):  # a trigger or computation database of e's streams
        with pytest.raises(Exception, match=f"read by stream\\(s\\) {reader}"):
            env.ex.execute_one(f"drop database {db}")
    assert {i.name for i in env.reg.list()} == {"s", "own", "s3"}
    env.ex.execute_one("drop stream e.s")
    env.ex.execute_one("drop database d")  # d.own belongs to d: dropped with it
    assert {i.name for i in env.reg.list()} == {"s3"}
    env.ex.execute_one("drop database f force")
    assert env.ex.catalog.database("f") is None and {i.name for i in env.reg.list()} == {"s3"}


def test_a_late_start_fires_the_missed_triggers_in_order(tmp_path: Path) -> None:
    env = Env(tmp_path)
    created = T0 - 10 * MIN + 5_000
    r = env.period(
        "create stream s period(1m) from c1 into res as select _tlocaltime t, count(*) n from %%trows",
        created_ms=created,
    )
    assert r.next_due(T0) == T0 - 9 * MIN  # the first trigger after creation, although passed
    r.fire(T0 - 9 * MIN)
    assert r.next_due(T0) == T0 - 8 * MIN
    assert r.next_due(T0 + 5000 * MIN) == T0 + 5000 * MIN  # too far behind: the latest only
