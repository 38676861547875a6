"""TDengine 3.3.7 CREATE STREAM as seed 002 prints it ("Stream Creation Example"), its options and
its prohibitions, through the local pipeline (``streams/v337.py``, ``runtime/sink.py``,
``runtime/period.py``): every expected value is computed here from the rows written (by hand or
with pandas), and notifications are received by a real WebSocket server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.notify.sender import Sender
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.period import PeriodRunner
from spark_workers.runtime.sink import OutputSink
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import compile_stream
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC


class Receiver:
    """A WebSocket server on 127.0.0.1 collecting the notification messages it receives."""

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.messages: list[dict[str, Any]] = []

        def handler(ws) -> None:  # type: ignore[no-untyped-def]
            for msg in ws:
                self.messages.append(json.loads(msg))

        self.server = serve(handler, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}/notify"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self, n: int, settle: float = 0.1) -> list[dict[str, Any]]:
        """The events received once ``n`` have arrived (and nothing more within ``settle`` s)."""
        deadline = time.monotonic() + 10
        while sum(len(s["events"]) for m in list(self.messages) for s in m["streams"]) < n:
            assert time.monotonic() < deadline, f"{n} events expected, got {self.messages}"
            time.sleep(0.02)
        time.sleep(settle)
        return [e for m in self.messages for st in m["streams"] for e in st["events"]]


class Env:
    def __init__(self, root: Path) -> None:
        self.lake = Lake(root)
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC", default_db="d")
        self.ex.execute(
            "create database d; create table tb1 (ts timestamp, col1 int); "
            "create table tb2 (ts timestamp, col1 int); "
            "create stable stb1 (ts timestamp, col1 int) tags (g int); "
            "create table c1 using stb1 tags (1); create table c2 using stb1 tags (2)"
        )
        self.runners: list[LocalRunner] = []
        self.sender = Sender()

    def stream(self, sql: str) -> None:
        self.ex.execute(sql)
        name = sql.split()[2]
        if "period(" not in sql.lower():  # PERIOD streams run on a PeriodRunner (period_runner)
            self.runners.append(LocalRunner.for_registered(self.lake, self.reg, name, sender=self.sender))

    def write(self, *stmts: str) -> None:
        for q in stmts:
            self.ex.execute(q)
            for r in self.runners:
                r.run()

    def rows(self, sql: str) -> list[list[object]]:
        return [list(r) for r in self.ex.execute_one(sql).rows]

    def period_runner(self, name: str) -> PeriodRunner:
        info = self.reg.get(name, None)
        assert info is not None
        c = compile_stream(info.spec, self.lake, "UTC")
        key = self.reg.key(name, None)
        return PeriodRunner(
            c,
            self.lake,
            OutputSink(c, self.lake, stream_key=key, sender=self.sender),
            created_ms=0,
            start_version=self.reg.start_versions[key][0],
        )


@pytest.fixture
def env(tmp_path: Path):  # type: ignore[no-untyped-def]
    e = Env(tmp_path)
    yield e
    e.sender.close()


@pytest.fixture
def rec():  # type: ignore[no-untyped-def]
    r = Receiver()
    yield r
    r.server.shutdown()


def ins(table: str, rows: Sequence[tuple[int, int | None]]) -> str:
    """INSERT of ``(second after T0, col1)`` rows."""
    vals = " ".join(f"({T0 + s * 1000}, {'NULL' if v is None else v})" for s, v in rows)
    return f"insert into {table} values {vals}"


# --------------------------------------------------------------------------- seed statements


def test_count_window_1_computes_for_every_row_written(env: Env) -> None:
    """Seed 002 sm1: each row written into tb1 computes avg(col1) of tb2 over the 5 minutes up to
    the window's end (COUNT_WINDOW(1): "The minimum value is 1")."""
    tb2 = [(s, s * 10) for s in range(0, 900, 30)]  # every 30 s for 15 minutes
    env.write(ins("tb2", tb2))
    env.stream(
        "CREATE stream sm1 count_window(1) FROM tb1\nINTO tb3 AS\nSELECT _twstart, avg(col1) FROM tb2\n"
        "WHERE _c0 >= _twend - 5m AND _c0 <= _twend;"
    )
    written = [(400, 1), (600, 2), (601, 3), (850, 4)]
    env.write(ins("tb1", written))
    df = pd.DataFrame(tb2, columns=["s", "col1"])
    want: list[list[object]] = []
    for s, _v in written:  # a window of one row: _twstart = _twend = the row's time
        sel = df[(df.s >= s - 300) & (df.s <= s)]
        want.append([T0 + s * 1000, float(sel.col1.mean())])
    assert env.rows("select * from tb3") == want


def test_calc_notify_only_as_printed_notifies_results_without_an_output_table(
    env: Env, rec: Receiver
) -> None:
    """Seed 002 sm2 as printed (``CALC_ONTIFY_ONLY``, a double-quoted URL, no INTO, a first column
    that is no timestamp): windows of 10 rows with col1 > 0, sliding by 1, notified with
    avg(col1)."""
    env.stream(
        "CREATE stream sm2 count_window(10, 1, col1) FROM tb1\n"
        "STREAM_OPTIONS(CALC_ONTIFY_ONLY | PRE_FILTER(col1 > 0))\n"
        f'NOTIFY("{rec.url}") ON (WINDOW_CLOSE)\nAS\nSELECT avg(col1) FROM %%trows;'
    )
    values = [5, -1, 3, None, 7, 2, 8, 0, 1, 4, 6, 9, 10, 11]
    env.write(ins("tb1", list(enumerate(values))))
    kept = [v for v in values if v is not None and v > 0]
    want = [sum(kept[i : i + 10]) / 10 for i in range(len(kept) - 9)]  # windows that reached 10 rows
    events = rec.events(len(want))
    assert [e["eventType"] for e in events] == ["WINDOW_CLOSE"] * len(want)
    assert [e["result"]["avg(col1)"] for e in events] == pytest.approx(want)
    assert env.ex.catalog.table("d", "sm2") is None and env.rows("show tables like 'tb%'") == [
        ["tb1"],
        ["tb2"],
    ]


def test_true_for_a_bare_integer_is_milliseconds(env: Env) -> None:
    """``TRUE_FOR(2999)``: windows lasting less than 2999 ms are dropped (a bare integer is
    milliseconds, as TDengine's tests write it); ``TRUE_FOR('3001a')`` is the same, quoted."""
    env.stream(
        "create stream s1 state_window(col1) true_for(2999) from tb1 into r1 as "
        "select _twstart, _twend, count(*) from %%trows"
    )
    env.stream(
        "create stream s2 state_window(col1) true_for('3001a') from tb1 into r2 as "
        "select _twstart, _twend, count(*) from %%trows"
    )
    # state runs: 1 over [0 s, 2 s] (2 s), 2 over [3 s, 6 s] (3 s), 3 over [7 s, 10 s] (3 s), 4
    states = [1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4]
    env.write(ins("tb1", list(enumerate(states))))
    runs = [(0, 2, 3), (3, 6, 4), (7, 10, 4)]  # closed runs: (first s, last s, rows)
    assert env.rows("select * from r1") == [
        [T0 + a * 1000, T0 + b * 1000, n] for a, b, n in runs if (b - a) * 1000 >= 2999
    ]
    assert env.rows("select * from r2") == []  # no run lasts 3001 ms


def test_tlocaltime_is_nanoseconds_in_arithmetic_and_the_trigger_time_as_a_value(env: Env) -> None:
    """Seed 002 "Scheduled Trigger" example: ``cast(_tlocaltime/1000000 AS TIMESTAMP)`` is the
    trigger time in a millisecond database (``_tlocaltime`` has nanosecond precision); as a value
    it is the trigger time itself."""
    env.write(ins("tb1", [(0, 1), (1, 2), (2, 3)]))
    env.stream(
        "CREATE stream sm1 PERIOD(1h)\nINTO tb2p\nAS\n"
        "SELECT cast(_tlocaltime/1000000 AS TIMESTAMP), count(*) FROM tb1;"
    )
    env.stream(
        "create stream sm9 period(1h) into tb9 as select _tlocaltime t, _tlocaltime + 0 ns, "
        "cast(_tlocaltime as bigint) b, _tlocaltime - 1h earlier from tb1"
    )
    at = T0 + 5 * 3_600_000  # a trigger time (whole hour)
    for name in ("sm1", "sm9"):
        env.period_runner(name).fire(at, now_ms=at + 2)
    assert env.rows("select * from tb2p") == [[at, 3]]
    assert env.rows("select t, ns, b, earlier from tb9") == [
        [at, at * 1_000_000, at * 1_000_000, at - 3_600_000]
    ]
    types = {r[0]: r[1] for r in env.rows("desc tb9")}
    assert (types["t"], types["ns"], types["b"], types["earlier"]) == (
        "TIMESTAMP",
        "BIGINT",
        "BIGINT",
        "TIMESTAMP",
    )


# --------------------------------------------------------------------------- prohibitions

Q = "as select _twstart, count(*) from %%trows"
PROHIBITED = [
    # (statement, code, message part, text the error points at)
    (
        f"create stream s session(ts, 1s) from tb1 notify('http://h:1/x') on (window_close) into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "the http:// protocol is not supported",
        "'http://h:1/x'",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 notify('ws://h:1/x', 'ftp://h/x') on (window_close) "
        f"into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "the ftp:// protocol is not supported",
        "'ftp://h/x'",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 notify('localhost:8080') on (window_close) into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "needs the protocol",
        "'localhost:8080'",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 into o output_subtable(concat('a', 'b')) {Q}",
        Code.INVALID_STREAM_QUERY,
        "cannot be specified without PARTITION BY",
        "concat(",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 into o tags (a int as 1) {Q}",
        Code.INVALID_STREAM_QUERY,
        "can only be specified with PARTITION BY",
        "a int as 1",
    ),
    (
        f"create stream s session(ts, 1s) from stb1 partition by g, g into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "cannot have duplicate names",
        "g into",
    ),
    (
        f"create stream nodb.s session(ts, 1s) from d.tb1 into d.o {Q}",
        Code.DB_NOT_EXIST,
        "database nodb of the stream does not exist",
        "nodb.",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 into nodb.o {Q}",
        Code.DB_NOT_EXIST,
        "database nodb of the output table does not exist",
        "nodb.",
    ),
    (
        "create stream s session(ts, 1s) from tb1 into tb2 as select _twstart, count(*) from tb2",
        Code.STREAM_OUTPUT_CONFLICT,
        "cannot write into a table its computation reads (d.tb2)",
        "tb2 as",
    ),
    (
        "create stream s session(ts, 1s) from tb1 into stb1 as select _twstart, count(*) from c1",
        Code.STREAM_OUTPUT_CONFLICT,
        "cannot write into a table its computation reads (d.c1)",
        "stb1 as",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 into tb1 {Q}",
        Code.STREAM_OUTPUT_CONFLICT,
        "own source table",
        "tb1 as",
    ),
    (
        "create stream s session(ts, 1s) from tb1 stream_options(fill_history|fill_history_first) "
        f"into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "cannot be used together",
        "fill_history_first",
    ),
    (
        f"create stream s session(ts, 1s) from information_schema.ins_tables into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "is a system table",
        "information_schema.ins_tables",
    ),
    (
        f"create stream s state_window(cast(col1 as int)) from tb1 into o {Q}",
        Code.NOT_SUPPORTED,
        "seed 002 lists it among its Temporary Restrictions",
        "cast(",
    ),
    (
        "create stream s session(ts, 1s) from tb1 into o as select _twstart, interp(col1) from %%trows",
        Code.NOT_SUPPORTED,
        "function interp in a stream's computation: seed 002 lists it",
        "interp(",
    ),
    (
        f"create stream s session(ts, 1s) from stb1 partition by tbname into o tags (x int as col1) {Q}",
        Code.INVALID_COLUMN,
        "col1 is not a grouping column",
        "col1) as",
    ),
    (
        f"create stream s session(ts, 1s) from tb1 stream_options(event_type(window_open)) into o {Q}",
        Code.INVALID_STREAM_QUERY,
        "placeholder %%trows is not allowed here",
        "%%trows",
    ),
    (
        "create stream s session(ts, 1s) from tb1 into o as select _twstart, count(*), _qstart from tb2",
        Code.INVALID_STREAM_QUERY,
        "the pseudo-columns _qstart, _qend and _qduration are not supported",
        "_qstart",
    ),
]


@pytest.mark.parametrize(("sql", "code", "message", "where"), PROHIBITED, ids=[p[2] for p in PROHIBITED])
def test_what_seed_002_forbids_is_refused_at_create_stream(
    env: Env, sql: str, code: int, message: str, where: str
) -> None:
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(sql)
    assert e.value.code == code and message in e.value.message, e.value.message
    assert e.value.offset == sql.index(where), (e.value.offset, sql.index(where))
    assert env.reg.list() == [] and env.ex.catalog.table("d", "o") is None  # nothing created


def test_recalculate_of_a_count_window_without_an_end_is_ignored(env: Env) -> None:
    env.stream(
        "create stream sc count_window(2) from tb1 into o as select _twstart ws, count(*) n from %%trows"
    )
    env.write(ins("tb1", [(0, 1), (1, 1), (2, 1), (3, 1)]))
    env.ex.execute(f"delete from o where ws = {T0}")
    assert env.ex.execute_one("recalculate stream sc from 0").affected_rows == 0  # ignored (seed 002)
    assert env.rows("select ws, n from o") == [[T0 + 2000, 2]]
    env.ex.execute_one(f"recalculate stream sc from {T0} to {T0 + 3000}")
    assert env.rows("select ws, n from o") == [[T0, 2], [T0 + 2000, 2]]


def test_recalculate_is_refused_for_a_period_stream(env: Env) -> None:
    env.stream("create stream sp period(1m) from tb1 into o as select _tlocaltime t, count(*) n from %%trows")
    with pytest.raises(SqlError) as e:
        env.ex.execute_one("recalculate stream sp from 0")
    assert e.value.code == Code.NOT_SUPPORTED and "not supported for scheduled triggers" in e.value.message
    assert env.rows("select * from o") == []  # nothing written


# --------------------------------------------------------------------------- NOTIFY ... WHERE


def test_notify_where_sends_only_events_whose_result_meets_the_condition(env: Env, rec: Receiver) -> None:
    env.stream(
        f"create stream s state_window(col1) from tb1 notify('{rec.url}') on (window_open|window_close) "
        "where n > 2 and ws >= '2025-01-01 00:00:00' into r as select _twstart ws, count(*) n from %%trows"
    )
    states = [1, 1, 1, 2, 2, 3, 3, 3, 3, 4]
    env.write(ins("tb1", list(enumerate(states))))
    # closed state runs (first second, rows): the run of 4 is still open
    runs = pd.Series(states[:-1]).groupby((pd.Series(states[:-1]).diff() != 0).cumsum())
    closed = [(int(g.index[0]), len(g)) for _, g in runs]
    want = [(T0 + s * 1000, n) for s, n in closed if n > 2]
    events = rec.events(len(want), settle=0.3)
    assert sorted((e["eventType"], e["windowStart"], e["result"]["n"]) for e in events) == [
        ("WINDOW_CLOSE", ws, n) for ws, n in want
    ]  # no WINDOW_OPEN: an opening has no result, so n > 2 is not met
    assert env.rows("select ws, n from r") == [[T0 + s * 1000, n] for s, n in closed]  # all written


def test_notify_where_on_an_unaliased_result_and_a_period_trigger(env: Env, rec: Receiver) -> None:
    env.stream(
        f"create stream sp period(1h) from tb1 notify('{rec.url}') where avg(col1) > 5.5 into o "
        "as select _tlocaltime t, avg(col1) from %%trows"
    )
    runner = env.period_runner("sp")
    env.ex.execute(ins("tb1", [(0, 5), (1, 7)]))
    at = (int(time.time() * 1000) // 3_600_000 + 1) * 3_600_000  # the next trigger: rows are before it
    runner.fire(at, now_ms=at + 1)  # rows 5 and 7: avg 6 > 5.5, sent
    env.ex.execute(ins("tb1", [(3600, 1), (3601, 2)]))
    runner.fire(at + 3_600_000, now_ms=at + 3_600_001)  # avg 1.5: not sent
    (e,) = rec.events(1, settle=0.3)
    assert e["eventType"] == "ON_TIME" and e["result"]["avg(col1)"] == pytest.approx(6.0)
    assert env.rows("select count(*) from o") == [[2]]


def test_notify_where_references_only_result_columns(env: Env) -> None:
    sql = (
        "create stream s state_window(col1) from tb1 notify('ws://127.0.0.1:1/x') on (window_close) "
        "where col1 > 1 into r as select _twstart ws, count(*) n from %%trows"
    )
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(sql)
    assert (
        e.value.code == Code.INVALID_COLUMN and "col1 is not one (result columns: ws, n)" in e.value.message
    )
    assert e.value.offset == sql.index("col1 > 1")
    sql = "create stream s period(1h) from tb1 notify('ws://127.0.0.1:1/x') where x = 1"
    with pytest.raises(SqlError, match="the stream computes nothing"):
        env.ex.execute_one(sql)
    assert env.reg.list() == []


# --------------------------------------------------------------------------- FORCE_OUTPUT


@pytest.mark.parametrize("force", [False, True])
def test_force_output_writes_a_row_for_triggers_without_a_result(env: Env, force: bool) -> None:
    """FORCE_OUTPUT: a trigger whose computation returns no row still outputs one, its constants
    and placeholders kept and every other column NULL (seed 002)."""
    opt = " stream_options(force_output)" if force else ""
    env.stream(
        f"create stream s count_window(1) from tb1{opt} into r as "
        "select _twstart ws, col1, 'k' label, _twrownum + 1 n1, upper(concat('a', 'b')) ab "
        "from tb2 where ts >= _twstart - 1s and ts <= _twend"
    )
    tb2 = [(4, 40), (11, 110), (30, 300)]  # one row at most per trigger: a key keeps one row
    env.write(ins("tb2", tb2))
    trig = [5, 11, 20, 25, 30]
    env.write(ins("tb1", [(t, 1) for t in trig]))
    want = []
    for t in trig:  # the rows of tb2 within [t - 1 s, t]
        hits = [v for s, v in tb2 if t - 1 <= s <= t]
        want += [[T0 + t * 1000, v, "k", 2, "AB"] for v in hits]
        if not hits and force:
            want.append([T0 + t * 1000, None, "k", 2, "AB"])
    assert env.rows("select ws, col1, label, n1, ab from r order by ws, col1") == want


def test_force_output_with_aggregates_and_a_period_trigger(env: Env) -> None:
    """An aggregate over no row already returns a row (count 0); a grouped query returns none, and
    FORCE_OUTPUT writes its constants with NULL aggregates."""
    env.stream(
        "create stream sp period(1h) from tb1 stream_options(force_output) into o as "
        "select cast(_tlocaltime/1000000 as timestamp) t, col1, count(*) n from %%trows group by col1"
    )
    runner = env.period_runner("sp")
    at = (int(time.time() * 1000) // 3_600_000 + 1) * 3_600_000
    env.ex.execute(ins("tb1", [(0, 5), (1, 5)]))
    runner.fire(at, now_ms=at)  # one group: col1 = 5, 2 rows
    runner.fire(at + 3_600_000, now_ms=at + 3_600_000)  # no row written since: forced
    assert env.rows("select t, col1, n from o") == [[at, 5, 2], [at + 3_600_000, None, None]]


def test_calc_notify_only_with_into_writes_nothing(env: Env, rec: Receiver) -> None:
    env.stream(
        f"create stream s count_window(2) from tb1 stream_options(calc_notify_only) notify('{rec.url}') "
        "on (window_close) into r as select _twstart ws, sum(col1) total from %%trows"
    )
    env.write(ins("tb1", [(0, 1), (1, 2), (2, 3), (3, 4)]))
    events = rec.events(2)
    assert [int(e["result"]["total"]) for e in events] == [3, 7]
    assert env.rows("select count(*) from r") == [[0]]


# --------------------------------------------------------------------------- FILL_HISTORY


@pytest.mark.parametrize(
    ("option", "first_s"),
    [
        ("", None),  # no history
        ("stream_options(fill_history)", 0),
        ("stream_options(fill_history('2025-01-01 00:00:04'))", 4),
        (f"stream_options(fill_history_first({T0 + 4000}))", 4),
        ("stream_options(fill_history_first)", 0),
        ("stream_options(fill_history_first('2025-01-01 00:00:05.000') | pre_filter(col1 >= 0))", 5),
        ("stream_options(fill_history(now - 1d))", 10**9),  # the history is older than a day
    ],
)
def test_fill_history_computes_the_history_from_its_start(env: Env, option: str, first_s: int | None) -> None:
    """FILL_HISTORY[(start_time)] / FILL_HISTORY_FIRST[(start_time)]: the rows written before
    CREATE STREAM trigger from start_time (event time) on, before the rows written after."""
    history = [(s, s) for s in range(10)]
    env.write(ins("tb1", history))
    env.stream(
        f"create stream s count_window(2) from tb1 {option} into r as "
        "select _twstart ws, count(*) n, sum(col1) total from %%trows"
    )
    env.write(ins("tb1", [(10, 10), (11, 11), (12, 12)]))
    rows = [
        (s, v)
        for s, v in [*history, (10, 10), (11, 11), (12, 12)]
        if (first_s is not None and s >= first_s) or s >= 10
    ]
    windows = [rows[i : i + 2] for i in range(0, len(rows) - 1, 2)]  # closed windows of 2 rows
    want = [[T0 + w[0][0] * 1000, 2, sum(v for _s, v in w)] for w in windows]
    assert env.rows("select ws, n, total from r") == want
    spec = env.reg.get("s", None).spec
    assert spec.options.fill_history == (first_s is not None)
    assert spec.options.fill_history_first == ("fill_history_first" in option)


def test_fill_history_start_must_be_a_time(env: Env) -> None:
    sql = "create stream s count_window(2) from tb1 stream_options(fill_history(1 + 1)) into r " + Q
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(sql)
    assert e.value.code == Code.INVALID_STREAM_QUERY and "expected an epoch integer" in e.value.message
    assert e.value.offset == sql.index("fill_history(")
    sql = (
        "create stream s period(1h) stream_options(fill_history_first) into r "
        "as select now(), count(*) from tb1"
    )
    with pytest.raises(SqlError, match="FILL_HISTORY_FIRST is not supported with a PERIOD trigger"):
        env.ex.execute_one(sql)


# --------------------------------------------------------------------------- PERIOD without a table


def test_period_without_from_notifies_every_period(env: Env, rec: Receiver) -> None:
    """Seed 002's last example as printed: a PERIOD stream without a trigger table, a computation
    or an output table sends an ON_TIME notification at each trigger time."""
    env.stream(f'CREATE stream sm1 PERIOD(1h)\nNOTIFY("{rec.url}");')
    info = env.reg.get("sm1", None)
    assert info is not None and info.spec.source is None and info.spec.output is None
    runner = env.period_runner("sm1")
    at = T0 + 7 * 3_600_000
    runner.fire(at, now_ms=at + 5)
    runner.fire(at + 3_600_000, now_ms=at + 3_600_005)
    events = rec.events(2)
    assert [(e["eventType"], e["triggerType"], e["triggerTime"], e["eventTime"]) for e in events] == [
        ("ON_TIME", "Period", at, at + 5),
        ("ON_TIME", "Period", at + 3_600_000, at + 3_600_005),
    ]
    assert "result" not in events[0] or events[0]["result"] is None


def test_period_computation_of_constants_reads_no_table(env: Env) -> None:
    env.stream(
        "create stream sc period(1h) into o as select cast(_tlocaltime/1000000 as timestamp) t, 42 answer"
    )
    at = T0 + 3_600_000
    env.period_runner("sc").fire(at, now_ms=at)
    assert env.rows("select t, answer from o") == [[at, 42]]
