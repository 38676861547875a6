"""The set-oriented run of a 3.3.7 computation (``query/compute_set.py``, issue 17) gives the
per-event run's rows (``compute.SET_ORIENTED`` off: each event's placeholders substituted, seed
002 "Placeholders"), row for row: on compute_bench's workloads, on the shared acceptance cases with
3.3.7 computations, on the demo's data (Beijing PM2.5, real gaps and NULLs) and on random events
over random rows (Hypothesis); diff and csum also against pandas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_workers.lake.store import Lake
from spark_workers.query import compute
from spark_workers.query.compute import Computation, TriggerEvent
from spark_workers.query.duck import DuckSession
from spark_workers.query.planner import resolve
from spark_workers.sql import ast
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests.runtime import test_local_acceptance as acceptance

T0 = 1_735_689_600_000
T0_DEMO = 1_477_958_400_000  # 2016-11-01T00:00:00Z
BENCH = {  # bench/compute_bench.py's workloads
    "row": "select _c0 ts, v from %%tbname where ts >= _twstart and ts < _twend",
    "other table": (
        "select _twstart ws, count(*) n, avg(v) m, _tgrpid g from b.ref where ts >= _twstart and ts < _twend"
    ),
    "diff": "select ts, diff(v) d from %%trows",
    "csum": "select ts, csum(v) c from %%trows",
    "top": "select top(v, 3) t from %%trows",
}
MORE = {
    "derivative": "select _twstart, derivative(v, 1s, 0) from %%trows",
    "mavg": "select ts, mavg(v, 2) from %%trows",
    "statecount": "select ts, statecount(v, 'GT', 3) from %%trows",
    "bottom": "select bottom(v, 2), ts from %%trows",
    "aggregates": "select _twstart, first(v), last(v), spread(v), twa(v), count(*) from %%trows",
    "tbname": "select %%tbname, _twend, count(v), max(v) from %%tbname where ts >= _twstart and ts < _twend",
    "order": "select ts, v * 2 w from %%trows where v > 1 order by w desc, ts",
    "grouped": "select v, count(*) from %%trows group by v having count(*) > 0",
    "positional order": "select v, ts from %%trows where v is not null order by 1 desc, 2",
    "distinct": "select distinct v from %%trows",
    "scalars": "select timetruncate(ts, 1m), cast(v as int), abs(v), round(v), pow(v, 2) from %%trows",
    "strings": (
        "select concat(%%tbname, '-x'), to_char(ts, 'yyyy-mm-dd hh24:mi:ss'), "
        "timediff(ts, _twstart, 1s) from %%trows"
    ),
    "statistics": "select stddev(v), percentile(v, 50), mode(v), hyperloglog(v), elapsed(ts) from %%trows",
    "unique": "select unique(v) from %%trows",
    "tail": "select tail(v, 2) from %%trows",
    "irate": "select irate(v) from %%trows",
    "stateduration": "select ts, stateduration(v, 'GT', 2, 1s) from %%trows",
    "system time": "select cast(_tlocaltime/1000000 as timestamp), count(*) from %%trows",
    "grouped expression": "select avg(v) from %%trows group by cast(v as int) % 2",
    "join": (
        "select a.ts, a.v, r.v rv from %%tbname a join b.ref r on a.ts = r.ts "
        "where a.ts >= _twstart and a.ts < _twend"
    ),
    "left join": "select a.ts, a.v, r.v rv from %%trows a left join b.ref r on a.ts = r.ts",
    "join aggregate": "select _twstart, count(*), sum(r.v) from %%trows a join b.ref r on a.ts = r.ts",
}
PER_EVENT = {  # shapes the rewrite leaves to the per-event path
    "asof join": "select a.ts, a.v, r.v rv from %%trows a left asof join b.ref r on a.ts >= r.ts",
    "right join": "select r.ts, a.v from b.ref r right join %%trows a on a.ts = r.ts",
    "limit": "select ts, v from %%trows order by ts limit 2",
}


def _lake(root: Path, series: dict[str, list[tuple[int, float | None]]]) -> tuple[Lake, Any]:
    lake = Lake(root)
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="b")
    ex.execute("create database b; create stable st (ts timestamp, v double) tags (g int);")
    ex.execute("create table ref (ts timestamp, v double)")
    ex.execute(" ".join(f"create table {tb} using st tags ({i});" for i, tb in enumerate(series)))
    rows = [(tb, ts, v) for tb, pts in series.items() for ts, v in pts]
    lake.write(
        lake.catalog.require_database("b"),
        lake.catalog.require_table("b", "st"),
        pa.table({"tbname": [r[0] for r in rows], "ts": [r[1] for r in rows], "v": [r[2] for r in rows]}),
    )
    ref = [(T0 + k * 1500, float(k)) for k in range(40)]
    lake.write(
        lake.catalog.require_database("b"),
        lake.catalog.require_table("b", "ref"),
        pa.table({"tbname": ["ref"] * len(ref), "ts": [r[0] for r in ref], "v": [r[1] for r in ref]}),
    )
    return lake, resolve(lake.catalog, ast.TableName("st", "b"), "b")


def _event(i: int, tb: str, ws: int, width: int, trows: bool) -> TriggerEvent:
    values = {"_twstart": ws * 1000, "_twend": (ws + width) * 1000, "_tgrpid": i % 7, "tbname": tb}
    return TriggerEvent(values, tb, ([], ws, ws + width, False) if trows else None)


def _both(
    lake: Lake,
    src: Any,
    query: str,
    events: list[TriggerEvent],
    pre_filter: str | None = None,
    ran: list[bool] | None = None,
) -> tuple[pa.Table, pa.Table, bool]:
    """The computation's rows set-oriented and per event, and whether every shape ran as one
    set-oriented query (``ran``, when given, receives each shape's outcome)."""
    comp = Computation(query, src, default_db="b", tz="UTC", pre_filter=pre_filter)
    ran = [] if ran is None else ran
    real_set = comp._set_query

    def spy(*args: Any) -> pa.Table | None:
        out = real_set(*args)
        ran.append(out is not None)
        return out

    comp._set_query = spy  # type: ignore[method-assign]
    with DuckSession(lake) as duck:
        b = comp.bind(lake, duck)
        fast = comp.run(b, events)
        used = bool(ran) and all(ran)
        compute.SET_ORIENTED = False
        try:
            slow = comp.run(b, events)
        finally:
            compute.SET_ORIENTED = True
    return fast, slow, used


def _rows(t: pa.Table, ordered: bool) -> list[list[Any]]:
    """Rows by position; an event's rows sorted unless the query orders them."""
    rows = [list(r.values()) for r in t.rename_columns([f"c{i}" for i in range(t.num_columns)]).to_pylist()]
    return rows if ordered else sorted(rows, key=lambda r: (r[0], repr(r[1:])))


def _same(fast: pa.Table, slow: pa.Table, ordered: bool = False) -> None:
    assert fast.num_columns == slow.num_columns
    assert [f.type for f in fast.schema][1:] == [f.type for f in slow.schema][1:] or not slow.num_rows
    assert _rows(fast, ordered) == _rows(slow, ordered)


def _series(n_tables: int, n: int) -> dict[str, list[tuple[int, float | None]]]:
    return {
        f"c{i}": [(T0 + k * 1000, None if (k + i) % 11 == 5 else float((k * 7 + i) % 13)) for k in range(n)]
        for i in range(n_tables)
    }


@pytest.mark.parametrize("label", [*BENCH, *MORE])
def test_bench_workloads_set_equals_per_event(label: str, tmp_path: Path) -> None:
    lake, src = _lake(tmp_path, _series(5, 60))
    q = {**BENCH, **MORE}[label]
    trows = "%%trows" in q
    events = [_event(i, f"c{i % 5}", T0 + (i // 5) * 10_000 - 3000, 10_000, trows) for i in range(40)]
    fast, slow, used = _both(lake, src, q, events)
    assert used, "the shape is rewritten and its query ran, not the per-event path"
    assert slow.num_rows > 0
    _same(fast, slow, ordered="order by" in q)


def test_diff_and_csum_against_pandas(tmp_path: Path) -> None:
    series = _series(3, 50)
    lake, src = _lake(tmp_path, series)
    events = [_event(i, f"c{i % 3}", T0 + (i // 3) * 10_000, 10_000, True) for i in range(15)]
    for query, func in (
        ("select ts, diff(v) d from %%trows", "diff"),
        ("select ts, csum(v) c from %%trows", "csum"),
    ):
        fast, _slow, _ = _both(lake, src, query, events)
        got = {
            (r["__td_ev"], int(r["ts"].timestamp() * 1000)): r[fast.column_names[2]] for r in fast.to_pylist()
        }
        want: dict[tuple[int, int], float] = {}
        for i, ev in enumerate(events):
            assert ev.rows is not None
            df = pd.DataFrame(series[str(ev.tbname)], columns=["ts", "v"])
            df = df[(df.ts >= ev.rows[1]) & (df.ts < ev.rows[2])]
            if func == "diff":  # each row after the first: its value minus the last non-NULL before it
                vals = (df.v - df.v.ffill().shift(1)).iloc[1:]
            else:  # running sum over the non-NULL values
                vals = df.v.dropna().cumsum()
            want.update(
                {
                    (i, int(t)): None if pd.isna(v) else float(v)
                    for t, v in zip(df.ts.loc[vals.index], vals, strict=True)
                }
            )
        assert got == want


def test_other_table_events_without_rows_run_per_event(tmp_path: Path) -> None:
    """A scalar aggregate over an event matching no row still gives count 0 (per event)."""
    lake, src = _lake(tmp_path, _series(2, 10))
    events = [_event(i, "c0", T0 + i * 50_000, 10_000, False) for i in range(4)]  # ref ends at +58.5 s
    fast, slow, _ = _both(lake, src, BENCH["other table"], events)
    _same(fast, slow)
    ref = [1500 * k for k in range(40)]  # ref's rows, ms after T0
    assert [r["n"] for r in fast.to_pylist()] == [
        sum(i * 50_000 <= t < i * 50_000 + 10_000 for t in ref) for i in range(4)
    ]


@pytest.mark.parametrize("label", list(PER_EVENT))
def test_shapes_left_to_the_per_event_path(label: str, tmp_path: Path) -> None:
    lake, src = _lake(tmp_path, _series(2, 30))
    events = [_event(i, f"c{i % 2}", T0 + i * 5000, 10_000, True) for i in range(6)]
    fast, slow, used = _both(lake, src, PER_EVENT[label], events)
    assert not used
    assert slow.num_rows
    _same(fast, slow, ordered=label == "limit")
    if label == "limit":
        assert fast.num_rows == 2 * len(events)


_values = st.one_of(st.none(), st.integers(-5, 5).map(float))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=st.lists(st.lists(_values, min_size=0, max_size=25), min_size=1, max_size=3),
    windows=st.lists(
        st.tuples(st.integers(0, 2), st.integers(-3, 25), st.integers(1, 12)), min_size=1, max_size=12
    ),
    query=st.sampled_from(sorted({**BENCH, **MORE}.values())),
)
def test_random_events_set_equals_per_event(
    data: list[list[float | None]], windows: list[tuple[int, int, int]], query: str, tmp_path_factory: Any
) -> None:
    series = {f"c{i}": [(T0 + k * 1000, v) for k, v in enumerate(vals)] for i, vals in enumerate(data)}
    lake, src = _lake(tmp_path_factory.mktemp("lake"), series)
    events = [
        _event(i, f"c{t % len(data)}", T0 + s * 1000, w * 1000, "%%trows" in query)
        for i, (t, s, w) in enumerate(windows)
    ]
    fast, slow, _ = _both(lake, src, query, events)
    _same(fast, slow, ordered="order by" in query)


# the cases whose computation runs per trigger event (the others are fused into the engine)
ACCEPTANCE_337 = ("td-038", "td-043", "td-046")


@pytest.mark.skipif(not acceptance.ACCEPTANCE.is_dir(), reason="../shared/acceptance is not on this machine")
@pytest.mark.parametrize("case_id", ACCEPTANCE_337)
def test_acceptance_cases_set_equals_per_event(case_id: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Every ``Computation.run`` of the case runs both ways and must agree; the case's own checks
    then hold with the set-oriented rows."""
    calls: list[int] = []
    real = Computation.run

    def both(self: Computation, b: Any, events: list[TriggerEvent]) -> pa.Table:
        fast = real(self, b, events)
        monkeypatch.setattr(compute, "SET_ORIENTED", False)
        try:
            slow = real(self, b, events)
        finally:
            monkeypatch.setattr(compute, "SET_ORIENTED", True)
        _same(fast, slow, ordered=self.q.select.args.get("order") is not None)
        calls.append(len(events))
        return fast

    sets: list[bool] = []
    real_set = Computation._set_query

    def spy(self: Computation, *args: Any) -> pa.Table | None:
        out = real_set(self, *args)
        sets.append(out is not None)
        return out

    monkeypatch.setattr(Computation, "run", both)
    monkeypatch.setattr(Computation, "_set_query", spy)
    case = json.loads((acceptance.ACCEPTANCE / "cases" / f"{case_id}.json").read_text())
    assert case
    acceptance._run_case(case_id, acceptance.Pipeline(tmp_path / "lake"))
    assert calls
    assert any(sets), "the set-oriented query ran"


DEMO_SHAPES = ("row", "diff", "csum", "top", "join aggregate", "order", "statistics")


@pytest.mark.parametrize("label", DEMO_SHAPES)
def test_demo_data_set_equals_per_event(label: str, tmp_path: Path) -> None:
    """The demo's data (two Beijing stations' hourly PM2.5 of November 2016, with its real gaps
    and NULL readings), 6-hour windows of each station as trigger events: both paths agree."""
    from tests.beijing import readings

    df = readings({"c0": "Aotizhongxin", "c1": "Dongsi"}, {"v": "PM2.5"}, tz=None)
    lo, hi = T0_DEMO, T0_DEMO + 30 * 86_400_000
    df = df[(df["ts"] >= lo) & (df["ts"] < hi)]
    series = {
        tb: [(int(t), None if pd.isna(v) else float(v)) for t, v in zip(g["ts"], g["v"], strict=True)]
        for tb, g in df.groupby("tbname")
    }
    lake, src = _lake(tmp_path, series)
    q = {**BENCH, **MORE}[label]
    six_h = 6 * 3_600_000
    events = [
        _event(i, tb, ws, six_h, "%%trows" in q)
        for i, (tb, ws) in enumerate((tb, ws) for ws in range(lo, hi, six_h) for tb in series)
    ]
    fast, slow, used = _both(lake, src, q, events)
    assert used and slow.num_rows
    _same(fast, slow, ordered="order by" in q)


def test_many_events_and_columns_named_alike(tmp_path: Path) -> None:
    """More events than a per-event chunk, an unaliased placeholder (its per-event column is named
    by its literal) and two items DuckDB names alike: both paths keep the columns by position."""
    lake, src = _lake(tmp_path, _series(3, 40))
    events = [_event(i, f"c{i % 3}", T0 + (i % 30) * 1000, 5000, True) for i in range(compute.CHUNK + 40)]
    q = "select _twstart, percentile(v, 50), apercentile(v, 50), count(*) from %%trows"
    fast, slow, used = _both(lake, src, q, events)
    assert used
    assert fast.num_columns == slow.num_columns == 5
    _same(fast, slow)
    want = {
        i: sum(1 for k in range(40) if ev.rows and ev.rows[1] <= T0 + k * 1000 < ev.rows[2])
        for i, ev in enumerate(events)
    }
    assert {r[0]: r[4] for r in _rows(fast, True)} == want


@pytest.mark.parametrize(
    "query", [BENCH["diff"], BENCH["top"], "select _twstart, count(*), avg(v) from %%trows"]
)
def test_trows_by_group_values_with_pre_filter(query: str, tmp_path: Path) -> None:
    """``%%trows`` of groups by a tag (no subtable; NULL is a group too) with PRE_FILTER: the
    join's conditions are the per-event ones."""
    lake, src = _lake(tmp_path, _series(4, 40))
    events = []
    for i in range(12):
        ws = T0 + (i % 4) * 7000
        g = None if i % 5 == 4 else i % 4
        values = {"_twstart": ws * 1000, "_twend": (ws + 15_000) * 1000, "p1": g}
        events.append(TriggerEvent(values, None, ([("g", g)], ws, ws + 15_000, i % 2 == 0)))
    ran: list[bool] = []
    fast, slow, _ = _both(lake, src, query, events, pre_filter="v > 2", ran=ran)
    assert ran == [True, True]  # two shapes (inclusive and exclusive highest time), both joined
    assert slow.num_rows
    _same(fast, slow)
