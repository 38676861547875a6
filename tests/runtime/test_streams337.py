"""TDengine 3.3.7 window triggers over %%trows (``streams/v337.py``) through the local pipeline:
the translation to the engine's window query, outputs (normal table without grouping, exact
OUTPUT_SUBTABLE names, ``tag_tbname``), the options matrix of seed 002 (PRE_FILTER, deletes ignored
unless DELETE_RECALC) and the errors for what is not run yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from spark_workers.streams.v337 import engine_query

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC


class Env:
    def __init__(self, root: Path) -> None:
        self.lake = Lake(root)
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC", default_db="d")
        self.ex.execute(
            "create database d; create stable st (ts timestamp, a int, b int) tags (g int);"
            "create table c1 using st tags (1); create table c2 using st tags (2)"
        )
        self.runners: list[LocalRunner] = []

    def stream(self, sql: str) -> None:
        self.ex.execute(sql)
        name = sql.split()[2]
        self.runners.append(LocalRunner.for_registered(self.lake, self.reg, name))

    def write(self, *stmts: str) -> None:
        for q in stmts:
            self.ex.execute(q)
            for r in self.runners:
                r.run()

    def rows(self, sql: str) -> list[list[object]]:
        return [list(r) for r in self.ex.execute_one(sql).rows]


def ins(table: str, *rows: tuple[int, int | None, int | None]) -> str:
    vals = " ".join(
        f"({T0 + s * 1000}, {'NULL' if a is None else a}, {'NULL' if b is None else b})" for s, a, b in rows
    )
    return f"insert into {table} values {vals}"


def test_engine_query_is_the_equivalent_window_select(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s state_window(a) from st partition by tbname, g "
        "stream_options(pre_filter(b > 0) | watermark(5s)) into out "
        "as select _twstart, _twend, _twrownum, first(_c0), sum(a) from %%trows"
    )
    spec = env.reg.get("s", None).spec
    assert (
        spec.syntax == "3.3.7" and spec.options.trigger == "WINDOW_CLOSE" and spec.options.watermark == "5s"
    )
    q = engine_query(spec, "ts").lower()
    assert "from `d`.`st`" in q and "where b > 0" in q and "count(*)" in q and "first(`ts`)" in q
    assert q.endswith("partition by tbname, g state_window(a)") and "_wstart" in q and "_wend" in q


def test_state_window_over_trows_without_grouping_writes_a_normal_table(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s state_window(a) from c1 into res (firstts, lastts, n, total) "
        "as select first(_c0), last_row(_c0), _twrownum, sum(a) from %%trows"
    )
    env.write(ins("c1", (0, 1, 1), (1, 1, 1), (2, 2, 1), (3, 2, 1), (4, 3, 1)))
    assert env.rows("select firstts, lastts, n, total from res") == [
        [T0, T0 + 1000, 2, 2],
        [T0 + 2000, T0 + 3000, 2, 4],
    ]
    assert [r[3] for r in env.ex.execute_one("desc res").rows] == ["", "", "", ""]  # no tags: a normal table
    assert env.rows("select type from information_schema.ins_tables where table_name = 'res'") == [
        ["NORMAL_TABLE"]
    ]


def test_output_subtable_is_exact_and_grouping_by_tbname_tags_tag_tbname(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s count_window(2) from st partition by tbname into res "
        "output_subtable(concat('r_', tbname)) (ts0, n) as select first(_c0), count(*) from %%trows"
    )
    env.write(ins("c1", (0, 1, 1), (1, 1, 1), (2, 5, 5)), ins("c2", (0, 1, 1), (1, 2, 2)))
    assert env.rows(
        "select table_name from information_schema.ins_tables where stable_name = 'res' order by 1"
    ) == [
        ["r_c1"],
        ["r_c2"],
    ]
    assert env.rows(
        "select tag_name, tag_value from information_schema.ins_tags where table_name = 'r_c2'"
    ) == [["tag_tbname", "c2"]]
    assert env.rows("select ts0, n from r_c1") == [[T0, 2]]


def test_true_for_drops_short_event_windows(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s event_window(start with a >= 5 end with a < 5) true_for(2s) from c1 "
        "into res (ts0, ts1, n) as select _twstart, _twend, _twrownum from %%trows"
    )
    env.write(ins("c1", *[(t, a, 0) for t, a in enumerate([6, 7, 1, 8, 2, 9, 9, 9, 0])]))
    # windows [0 s, 2 s], [3 s, 4 s] (1 s: dropped), [5 s, 8 s]
    assert env.rows("select ts0, ts1, n from res") == [[T0, T0 + 2000, 3], [T0 + 5000, T0 + 8000, 4]]


@pytest.mark.parametrize("delete_recalc", [False, True])
def test_deletes_are_ignored_unless_delete_recalc(tmp_path: Path, delete_recalc: bool) -> None:
    env = Env(tmp_path)
    opt = " stream_options(delete_recalc)" if delete_recalc else ""
    env.stream(
        f"create stream s session(ts, 5s) from c1{opt} into res (ts0, n, total) "
        "as select _twstart, count(*), sum(a) from %%trows"
    )
    env.write(ins("c1", (0, 1, 1), (1, 2, 1), (2, 3, 1), (20, 9, 9)))
    assert env.rows("select ts0, n, total from res") == [[T0, 3, 6]]
    env.write(f"delete from c1 where ts = {T0 + 1000}")
    want = [[T0, 2, 4]] if delete_recalc else [[T0, 3, 6]]
    assert env.rows("select ts0, n, total from res") == want


def test_placeholders_outside_window_triggers_and_trows_filters_are_errors(tmp_path: Path) -> None:
    env = Env(tmp_path)
    with pytest.raises(SqlError, match="_tcurrent_ts is not allowed"):
        env.ex.execute_one(
            "create stream s state_window(a) from c1 into r as select _tcurrent_ts, count(*) from %%trows"
        )
    with pytest.raises(SqlError, match="PRE_FILTER"):
        env.ex.execute_one(
            "create stream s state_window(a) from c1 into r as "
            "select _twstart, count(*) from %%trows where a > 1"
        )
    with pytest.raises(SqlError, match="groups by tbname or tags only"):
        env.ex.execute_one(
            "create stream s session(ts, 1s) from st partition by a into r as "
            "select _twstart, count(*) from %%trows"
        )


def test_a_computation_over_other_tables_runs_per_window_with_its_placeholders(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute("create table ref (ts timestamp, v double)")
    env.write(f"insert into ref values ({T0}, 1.5) ({T0 + 1000}, 2.5) ({T0 + 2000}, 10) ({T0 + 9000}, 7)")
    env.stream(
        "create stream s session(ts, 2s) from st partition by tbname, g into res "
        "as select _twstart ws, _twend we, _twrownum n, _tgrpid gid, %%1 tb, %%2 + 0 grp, "
        "(select count(*) from d.ref r2 where r2.ts >= _twstart and r2.ts <= _twend) nref, sum(v) total "
        "from d.ref where ts >= _twstart and ts <= _twend"
    )
    env.write(ins("c1", (0, 1, 1), (1, 1, 1), (2, 1, 1), (9, 1, 1)), ins("c2", (1, 1, 1), (20, 1, 1)))
    got = env.rows("select ws, we, n, tb, grp, nref, total from res order by tb, ws")
    # c1: session [0 s, 2 s] closed by the row at 9 s (gap 7 s > 2 s); c2: [1 s, 1 s] closed at
    # 20 s; a 3.3.7 session's _twend is its last row (td-046: TDengine's own tests)
    assert got == [
        [T0, T0 + 2000, 3, "c1", 1, 3, 14.0],
        [T0 + 1000, T0 + 1000, 1, "c2", 2, 1, 2.5],
    ]
    gids = env.rows("select gid, tag_tbname from res order by tag_tbname")
    assert gids[0][0] != gids[1][0] and all(isinstance(g, int) for g, _ in gids)
    assert env.rows("select count(*) from information_schema.ins_tables where stable_name = 'res'") == [[2]]


def test_a_row_level_computation_over_tbname_keys_rows_by_its_first_column(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s count_window(3) from st partition by tbname into res "
        "output_subtable(concat('o_', tbname)) "
        "as select case when a = 0 then null else _c0 end t, a, %%tbname name from %%tbname "
        "where ts >= _twstart and ts <= _twend"
    )
    env.write(ins("c1", (0, 1, 1), (1, 0, 1), (2, 3, 1), (3, 4, 1)))
    # the window holds rows 0-2 s; the row with a = 0 has a NULL key and is discarded (seed 002)
    assert env.rows("select t, a, name from o_c1") == [[T0, 1, "c1"], [T0 + 2000, 3, "c1"]]
    env.write(ins("c1", (4, 5, 1), (5, 6, 1)))
    assert env.rows("select t, a from o_c1") == [
        [T0, 1],
        [T0 + 2000, 3],
        [T0 + 3000, 4],
        [T0 + 4000, 5],
        [T0 + 5000, 6],
    ]


def test_event_type_window_open_computes_when_the_window_opens(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s state_window(a) from st partition by tbname stream_options(event_type(window_open)) "
        "into res as select _twstart ws, _twend we, _twrownum n from %%tbname where ts >= _twstart limit 1"
    )
    env.write(ins("c1", (0, 1, 1)))
    assert env.rows("select ws, we, n from res") == [[T0, None, None]]  # open: _twend is NULL
    env.write(ins("c1", (1, 1, 1), (2, 2, 1)))
    assert env.rows("select ws, we, n from res") == [[T0, None, None], [T0 + 2000, None, None]]


def test_computation_errors_name_the_placeholder_or_column(tmp_path: Path) -> None:
    env = Env(tmp_path)
    cases = [
        (
            "create stream s session(ts, 1s) from st partition by tbname into r as "
            "select _twstart, %%2 from %%tbname",
            "%%2 is not allowed",
        ),
        (
            "create stream s session(ts, 1s) from st partition by g into r as "
            "select _twstart, count(*) from %%tbname",
            "%%tbname is not allowed",
        ),
        (
            "create stream s session(ts, 1s) from c1 into r as select _tprev_localtime, count(*) from d.st",
            "_tprev_localtime is not allowed here: it belongs to PERIOD triggers",
        ),
        (
            "create stream s session(ts, 1s) from c1 into r as select _tnext_ts, count(*) from d.st",
            "_tnext_ts is not allowed here: it belongs to SLIDING triggers",
        ),
        (
            "create stream s session(ts, 1s) from c1 into r as select count(*), _twstart from d.st",
            "first column of a stream's computation must be a TIMESTAMP",
        ),
        (
            "create stream s session(ts, 1s) from c1 into r as select _twstart, nosuch from d.st",
            "nosuch",
        ),
    ]
    for sql, named in cases:
        with pytest.raises(SqlError) as e:
            env.ex.execute_one(sql)
        assert named in str(e.value), (sql, str(e.value))
    assert env.reg.list() == [] and env.ex.catalog.table("d", "r") is None


@pytest.mark.parametrize("general", [False, True])
def test_max_delay_computes_open_windows_every_delay(tmp_path: Path, general: bool) -> None:
    env = Env(tmp_path)
    now = [T0]
    query = (
        "select _twstart ws, count(*) n from %%trows"
        if not general
        else "select _twstart ws, count(*) n from %%tbname where ts >= _twstart"
    )
    env.ex.execute(
        "create stream s session(ts, 100s) from st partition by tbname stream_options(max_delay(3s)) "
        f"into res as {query}"
    )
    runner = LocalRunner.for_registered(env.lake, env.reg, "s", clock=lambda: now[0])
    env.ex.execute(ins("c1", (0, 1, 1), (1, 1, 1)))
    runner.run()
    assert env.rows("select ws, n from res") == []  # open, and the delay has not passed
    now[0] += 4000
    runner.tick()
    assert env.rows("select ws, n from res") == [[T0, 2]]  # the open window, computed
    with pytest.raises(SqlError, match="at least 3s"):
        env.ex.execute_one(
            "create stream s2 session(ts, 1s) from c1 stream_options(max_delay(2s)) into r2 as "
            "select _twstart, count(*) from %%trows"
        )


def test_true_for_in_an_interactive_select(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.write(ins("c1", *[(t, a, 0) for t, a in enumerate([1, 1, 1, 2, 3, 3, 3, 3])]))
    q = "select _wstart, _wend, count(*) from c1 state_window(a)"
    assert len(env.rows(q)) == 3
    assert env.rows(q + " true_for(2s)") == [[T0, T0 + 2000, 3], [T0 + 4000, T0 + 7000, 4]]


def test_notifications_of_a_state_trigger_reach_a_websocket_server(tmp_path: Path) -> None:
    import json
    import threading

    from websockets.sync.server import serve

    from spark_workers.notify.sender import Sender

    received: list[dict] = []

    def handler(ws) -> None:  # type: ignore[no-untyped-def]
        for msg in ws:
            received.append(json.loads(msg))

    server = serve(handler, "127.0.0.1", 0)
    port = server.socket.getsockname()[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sender = Sender()
    try:
        env = Env(tmp_path)
        env.ex.execute(
            f"create stream s state_window(a) from st partition by tbname "
            f"notify('ws://127.0.0.1:{port}/x') on (window_open|window_close) "
            "into res output_subtable(concat('r_', tbname)) (ts0, n, total) "
            "as select _twstart, _twrownum, sum(b) from %%trows"
        )
        runner = LocalRunner.for_registered(env.lake, env.reg, "s", sender=sender)
        env.ex.execute(ins("c1", (0, 1, 10), (1, 1, 20), (2, 2, 30), (3, 3, 40)))
        runner.run()
    finally:
        sender.close()
        server.shutdown()
    events = [e for m in received for st in m["streams"] for e in st["events"]]
    assert all(m["messageId"] and m["streams"][0]["streamName"] == "s" for m in received)
    first = [e for e in events if e["windowStart"] == T0]
    opened = next(e for e in first if e["eventType"] == "WINDOW_OPEN")
    closed = next(e for e in first if e["eventType"] == "WINDOW_CLOSE")
    assert (
        opened["triggerId"] == closed["triggerId"]
        and opened["triggerType"] == closed["triggerType"] == "State"
    )
    assert opened["tableName"] == closed["tableName"] == "r_c1" and opened["groupId"] == closed["groupId"]
    assert (opened["prevState"], opened["curState"]) == (None, 1)
    assert (closed["windowEnd"], closed["curState"], closed["nextState"]) == (T0 + 1000, 1, 2)
    assert closed["result"]["n"] == 2 and closed["result"]["total"] == 30
    assert isinstance(closed["eventTime"], int) and "result" not in opened
    # the window [2 s] closed by the row at 3 s; [3 s] is still open: opened, not closed
    kinds = sorted((e["windowStart"] - T0, e["eventType"]) for e in events)
    assert kinds == [
        (0, "WINDOW_CLOSE"),
        (0, "WINDOW_OPEN"),
        (2000, "WINDOW_CLOSE"),
        (2000, "WINDOW_OPEN"),
        (3000, "WINDOW_OPEN"),
    ]
