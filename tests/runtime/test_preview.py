"""Preview of a stream design over a time range of real tables (``runtime/preview.py``): windows,
output rows and notifications checked against independent computations in the tests; the range
filter; the real lake left untouched; the limits and the errors."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.preview import preview_stream
from spark_workers.sql.parser import parse_one
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC
HOUR = 3_600_000
HOURS = 240
TABLES = {"c1": 1, "c2": 1, "c3": 2}  # subtable -> tag g

EPISODES = (
    "CREATE STREAM s EVENT_WINDOW(START WITH pm25 > 150 END WITH pm25 <= 75) FROM d.st "
    "PARTITION BY tbname NOTIFY('{url}') ON (WINDOW_OPEN|WINDOW_CLOSE) INTO d.out AS "
    "SELECT _twstart AS wstart, _twend AS wend, _twrownum AS nrows, max(pm25) AS peak_pm25 FROM %%trows"
)
INTERVAL = (
    "CREATE STREAM s2 INTO d.o2 TAGS (g INT) AS "
    "SELECT _wstart AS ws, avg(pm25) AS a, count(*) AS n FROM d.st PARTITION BY g INTERVAL(6h)"
)


def _series(seed: int) -> list[float | None]:
    """An hourly PM2.5-like random walk crossing 150 and 75 several times, with gaps (NULL)."""
    rng = np.random.default_rng(seed)
    v, out = 100.0, []
    for _ in range(HOURS):
        v = float(np.clip(v + rng.normal(0, 30), 5, 400))
        out.append(None if rng.random() < 0.08 else round(v, 1))
    return out


@pytest.fixture
def env(tmp_path: Path) -> tuple[Lake, Executor, dict[str, list[tuple[int, float | None]]]]:
    lake = Lake(tmp_path / "lake")
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute("create database d; create stable st (ts timestamp, pm25 double) tags (g int)")
    rows: dict[str, list[tuple[int, float | None]]] = {}
    for i, (name, g) in enumerate(TABLES.items()):
        ex.execute(f"create table {name} using st tags ({g})")
        rows[name] = [(T0 + h * HOUR, v) for h, v in enumerate(_series(i))]
        for lo in range(0, HOURS, 100):  # several commits, as a real table has
            vals = " ".join(f"({ts}, {'NULL' if v is None else v})" for ts, v in rows[name][lo : lo + 100])
            ex.execute(f"insert into {name} values {vals}")
    return lake, ex, rows


def _episodes(rows: list[tuple[int, float | None]]) -> tuple[list[tuple[int, int, int, float]], int | None]:
    """EVENT_WINDOW(START WITH pm25 > 150 END WITH pm25 <= 75), computed row by row: the closed
    windows (start, end, rows, max) and the start of the window still open."""
    closed, cur = [], None
    for ts, v in rows:
        if cur is None:
            if v is not None and v > 150:
                cur = [ts, ts, 1, v]
            continue
        cur[1], cur[2] = ts, cur[2] + 1
        if v is not None:
            cur[3] = max(cur[3], v)
            if v <= 75:
                closed.append((cur[0], cur[1], cur[2], cur[3]))
                cur = None
    return closed, (None if cur is None else cur[0])


def _intervals(
    rows: dict[str, list[tuple[int, float | None]]], size: int
) -> tuple[dict[tuple[str, int], tuple[float | None, int]], set[tuple[str, int]]]:
    """INTERVAL(size) per tag g: closed windows -> (avg, count) and the open windows (the
    window holding the newest row of the group stays open under WINDOW_CLOSE)."""
    per: dict[tuple[str, int], list[float | None]] = {}
    newest: dict[str, int] = {}
    for name, rs in rows.items():
        g = str(TABLES[name])
        for ts, v in rs:
            per.setdefault((g, ts - ts % size), []).append(v)
            newest[g] = max(newest.get(g, ts), ts)
    closed, opened = {}, set()
    for (g, w), vs in per.items():
        if w + size <= newest[g]:
            nn = [v for v in vs if v is not None]
            closed[(g, w)] = (sum(nn) / len(nn) if nn else None, len(vs))
        else:
            opened.add((g, w))
    return closed, opened


def _listener() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    s.settimeout(0.3)
    return s


def test_event_window_preview_matches_a_row_by_row_computation(env: Any) -> None:
    lake, _ex, rows = env
    srv = _listener()
    url = f"ws://127.0.0.1:{srv.getsockname()[1]}/ws/notify/x"
    try:
        res = preview_stream(lake, EPISODES.format(url=url), start_ms=None, end_ms=None)
        with pytest.raises(TimeoutError):  # nothing was sent to the NOTIFY URL
            srv.accept()
    finally:
        srv.close()
    want_windows, want_rows, want_open = [], [], []
    for name, rs in rows.items():
        closed, open_start = _episodes(rs)
        assert closed, "the data must hold episodes"
        want_windows += [(name, s, e, "WINDOW_CLOSE") for s, e, _n, _p in closed]
        want_rows += [[name, s, e, n, p] for s, e, n, p in closed]
        if open_start is not None:
            want_open.append((name, open_start))
    got_closed = [
        (w["group"], w["start"], w["end"], w["event"]) for w in res["windows"] if w["event"] == "WINDOW_CLOSE"
    ]
    got_open = [(w["group"], w["start"]) for w in res["windows"] if w["event"] == "WINDOW_OPEN"]
    assert got_closed == sorted(want_windows)
    assert got_open == sorted(want_open)
    assert len(res["windows"]) == len(want_windows) + len(want_open) == res["window_count"]
    assert [c["name"] for c in res["rows"]["columns"]] == ["group", "wstart", "wend", "nrows", "peak_pm25"]
    assert res["rows"]["data"] == sorted(want_rows)
    assert res["input_rows"] == HOURS * len(TABLES) and res["output_rows"] == len(want_rows)
    assert not res["truncated"] and res["range"] == {"start": None, "end": None}

    ids = {(w["group"], w["start"]): w["trigger_id"] for w in res["windows"]}
    notes = res["notifications"]
    assert res["notification_count"] == len(notes) == 2 * len(want_windows) + len(want_open)
    by_table: dict[str, set[str]] = {}
    opens = sorted((n["windowStart"], n["triggerId"]) for n in notes if n["eventType"] == "WINDOW_OPEN")
    assert opens == sorted(
        (s, ids[(g, s)]) for g, s, _e, _k in want_windows + [(*o, 0, "") for o in want_open]
    )
    closes = [n for n in notes if n["eventType"] == "WINDOW_CLOSE"]
    want_results = {(r[1], r[2], r[3], r[4]) for r in want_rows}
    assert {
        (n["result"]["wstart"], n["result"]["wend"], n["result"]["nrows"], n["result"]["peak_pm25"])
        for n in closes
    } == want_results
    for n in closes:
        assert n["triggerType"] == "Event" and n["windowEnd"] == n["result"]["wend"]
        assert (
            n["triggerCondition"]["conditionIndex"] == 1 and n["triggerCondition"]["fieldValue"]["pm25"] <= 75
        )
    for n in notes:
        by_table.setdefault(n["tableName"], set()).add(n["groupId"])
    assert len(by_table) == len(TABLES) and all(len(g) == 1 for g in by_table.values())


def test_preview_lists_the_same_windows_with_or_without_notify(env: Any) -> None:
    """The designer lists every window event whatever NOTIFY names (``compile_stream(notify_all=
    True)``), although a running stream without NOTIFY computes no event it would not send;
    without NOTIFY there is no message to show."""
    lake, _ex, _rows = env
    srv = _listener()
    url = f"ws://127.0.0.1:{srv.getsockname()[1]}/ws/notify/x"
    try:
        with_notify = preview_stream(lake, EPISODES.format(url=url), start_ms=None, end_ms=None)
    finally:
        srv.close()
    sql = EPISODES.replace("NOTIFY('{url}') ON (WINDOW_OPEN|WINDOW_CLOSE) ", "")
    assert "NOTIFY" not in sql
    without = preview_stream(lake, sql, start_ms=None, end_ms=None)
    assert {w["event"] for w in without["windows"]} == {"WINDOW_OPEN", "WINDOW_CLOSE"}
    strip = lambda ws: [{k: v for k, v in w.items() if k != "trigger_id"} for w in ws]  # noqa: E731
    assert strip(without["windows"]) == strip(with_notify["windows"])
    assert without["rows"] == with_notify["rows"]
    assert without["notifications"] == [] and with_notify["notifications"]


def test_legacy_interval_with_partitions_by_tag(env: Any) -> None:
    lake, _ex, rows = env
    res = preview_stream(lake, INTERVAL, start_ms=None, end_ms=None, default_db="d")
    closed, opened = _intervals(rows, 6 * HOUR)
    assert {(w["group"], w["start"]) for w in res["windows"] if w["event"] == "WINDOW_CLOSE"} == set(closed)
    assert {(w["group"], w["start"], w["end"]) for w in res["windows"] if w["event"] == "WINDOW_OPEN"} == {
        (g, s, s + 6 * HOUR) for g, s in opened
    }
    data = res["rows"]["data"]
    assert [r[:2] for r in data] == sorted([g, w] for g, w in closed)  # sorted by group, then ws
    for g, ws, a, n in data:
        want_a, want_n = closed[(g, ws)]
        assert n == want_n and (a is None if want_a is None else a == pytest.approx(want_a))
    assert res["notifications"] == []  # no NOTIFY clause: windows, but nothing to send


def test_rows_outside_the_range_do_not_count(env: Any) -> None:
    lake, _ex, rows = env
    start, end = T0 + 5 * HOUR, T0 + 53 * HOUR  # rows exactly at start (in) and at end (out)
    res = preview_stream(lake, INTERVAL, start_ms=start, end_ms=end)
    inside = {n: [(ts, v) for ts, v in rs if start <= ts < end] for n, rs in rows.items()}
    closed, opened = _intervals(inside, 6 * HOUR)
    assert res["input_rows"] == sum(len(r) for r in inside.values()) == 48 * len(TABLES)
    assert res["range"] == {"start": start, "end": end}
    got = {(r[0], r[1]): (r[2], r[3]) for r in res["rows"]["data"]}
    assert set(got) == set(closed)
    assert got[("1", T0)][1] == 2 * 1  # [0h, 6h) holds the rows of 5h only, of c1 and c2
    for k, (a, n) in got.items():
        assert n == closed[k][1] and (a is None if closed[k][0] is None else a == pytest.approx(closed[k][0]))
    assert {(w["group"], w["start"]) for w in res["windows"] if w["event"] == "WINDOW_OPEN"} == opened


def _state(lake: Lake) -> dict[str, Any]:
    files = sorted(
        str(p.relative_to(lake.root))
        for p in lake.root.rglob("*")
        if p.is_file() and not p.name.startswith("_catalog.sqlite")
    )
    tables = {db.name: lake.catalog.tables(db.name) for db, _ in lake.catalog.databases()}
    return {
        "catalog": lake.catalog.version(),
        "tables": tables,
        "version": lake.version("d", "st"),
        "files": files,
    }


def test_the_real_lake_is_unchanged_and_the_output_table_not_created(env: Any) -> None:
    lake, ex, _rows = env
    before = _state(lake)
    preview_stream(lake, EPISODES.format(url="ws://127.0.0.1:9/x"), start_ms=T0, end_ms=T0 + 100 * HOUR)
    preview_stream(lake, INTERVAL, start_ms=None, end_ms=None)
    assert _state(lake) == before
    for t in ("out", "o2"):
        assert lake.catalog.table("d", t) is None and not lake.exists("d", t)
    assert ex.execute_one("show streams").rows == []
    # the same statements still create the streams for real afterwards (nothing half-registered)
    ex.execute(INTERVAL)
    assert [r[0] for r in ex.execute_one("show streams").rows] == ["s2"]


def test_an_existing_output_table_is_checked_like_create_stream(env: Any) -> None:
    lake, ex, _rows = env
    ex.execute("create stable o2 (ts timestamp, x double) tags (g int)")  # 2 columns, the stream has 3
    with pytest.raises(SqlError) as e:
        preview_stream(lake, INTERVAL, start_ms=None, end_ms=None)
    assert e.value.code == Code.COLUMN_COUNT_MISMATCH and "o2" in e.value.message


def test_row_cap_names_the_row_count(env: Any) -> None:
    lake, _ex, _rows = env
    with pytest.raises(SqlError) as e:
        preview_stream(lake, INTERVAL, start_ms=T0, end_ms=T0 + 10 * HOUR, max_input_rows=29)
    assert "30 rows" in e.value.message and "29" in e.value.message
    res = preview_stream(lake, INTERVAL, start_ms=T0, end_ms=T0 + 10 * HOUR, max_input_rows=30)
    assert res["input_rows"] == 30


def test_limit_truncates_rows_and_notifications(env: Any) -> None:
    lake, _ex, _rows = env
    res = preview_stream(lake, EPISODES.format(url="ws://127.0.0.1:9/x"), start_ms=None, end_ms=None, limit=2)
    assert len(res["rows"]["data"]) == 2 and len(res["notifications"]) == 2 and res["truncated"]
    assert res["output_rows"] > 2 and res["notification_count"] > 2


def test_bad_sql_raises_the_parser_error_unchanged(env: Any) -> None:
    lake, _ex, _rows = env
    bad = "CREATE STREAM s INTO d.o AS SELECT _wstart, count(* FROM d.st INTERVAL(1h)"
    with pytest.raises(SqlError) as want:
        parse_one(bad)
    with pytest.raises(SqlError) as got:
        preview_stream(lake, bad, start_ms=None, end_ms=None)
    assert (got.value.message, got.value.offset, got.value.code) == (
        want.value.message,
        want.value.offset,
        want.value.code,
    )
    assert got.value.offset is not None


def test_period_triggers_are_refused_clearly(env: Any) -> None:
    lake, _ex, _rows = env
    sql = (
        "CREATE STREAM p PERIOD(1m) FROM d.st INTO d.pout AS "
        "SELECT _tlocaltime AS ts, count(*) AS n FROM %%trows"
    )
    with pytest.raises(SqlError) as e:
        preview_stream(lake, sql, start_ms=None, end_ms=None)
    assert (
        e.value.code == Code.NOT_SUPPORTED
        and "preview of PERIOD triggers is not supported" in e.value.message
    )
    with pytest.raises(SqlError, match="empty"):
        preview_stream(lake, INTERVAL, start_ms=T0, end_ms=T0)


def test_force_window_close_closes_windows_by_the_end_of_the_range(env: Any) -> None:
    lake, _ex, _rows = env
    sql = (
        "create stream f trigger force_window_close into d.of "
        "as select _wstart, count(*) as n from d.st interval(6h)"
    )
    res = preview_stream(lake, sql, start_ms=T0 + 2 * HOUR, end_ms=T0 + 20 * HOUR)
    # the clock stands at the end of the range: windows ending by then closed, none of the rows late
    assert res["rows"]["data"] == [["", T0, 4 * 3], ["", T0 + 6 * HOUR, 6 * 3], ["", T0 + 12 * HOUR, 6 * 3]]
    assert [(w["start"], w["event"]) for w in res["windows"]][-1] == (T0 + 18 * HOUR, "WINDOW_OPEN")
