"""Per-event computation benchmark (no Spark): the 3.3.7 computation path of ``sql/compute.py``.

A micro-batch of trigger events (windows of 100 subtables) runs the stream's query with each event's
placeholders bound. Measured: events/s of ``Computation.run`` set-oriented (all events as one
relation joined with the rows they read, ``query/compute_set.py``, what the sink does), of the
per-event path (``SET_ORIENTED`` off: one ``UNION ALL`` of per-event sub-queries per ``CHUNK``),
of one DuckDB query per event, and of the per-event path without copying the trigger table's rows
into memory first, for a row-level query over ``%%tbname`` (td-038's shape), an aggregate over
another table and one over another database's table joined with the trigger subtable; and trigger
rows/s of ``%%trows`` computations with diff, csum and top (set-oriented against per-event).

    .venv/bin/python bench/compute_bench.py [--subtables 100] [--rows-per-table 2000] [--events 2000]
        [--trows-rows 100]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from spark_workers.lake.store import Lake
from spark_workers.query import compute
from spark_workers.query.compute import Computation, TriggerEvent
from spark_workers.query.duck import DuckSession
from spark_workers.query.planner import resolve
from spark_workers.sql import ast
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000
QUERIES = {
    "row-level over %%tbname": "select _c0 ts, v from %%tbname where ts >= _twstart and ts < _twend",
    "aggregate over another table": (
        "select _twstart ws, count(*) n, avg(v) m, _tgrpid g from b.ref where ts >= _twstart and ts < _twend"
    ),
    "join with another database's table": (
        "select a.ts, a.v, r.v rv from %%tbname a join o.ref r on a.ts = r.ts "
        "where a.ts >= _twstart and a.ts < _twend"
    ),
}
TROWS = {
    "%%trows diff": "select ts, diff(v) d from %%trows",
    "%%trows csum": "select ts, csum(v) c from %%trows",
    "%%trows top": "select top(v, 3) t from %%trows",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subtables", type=int, default=100)
    ap.add_argument("--rows-per-table", type=int, default=2000)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--trows-rows", type=int, default=100, help="rows of each %%trows event")
    a = ap.parse_args()
    lake, src, events = setup(a.subtables, a.rows_per_table, a.events)
    n = a.rows_per_table
    out: dict[str, dict[str, int]] = {}
    for label, q in QUERIES.items():
        out[label] = _measure(lake, src, q, events, a.events, label)
    width = a.trows_rows * 1000  # one row a second
    trows = []
    for ev in events:
        ws = min(ev.values["_twstart"] // 1000, T0 + (n - a.trows_rows) * 1000)
        trows.append(TriggerEvent(ev.values, ev.tbname, ([], ws, ws + width, False)))
    for label, q in TROWS.items():
        out[label] = _measure(lake, src, q, trows, a.events, label, rows_in=a.trows_rows * a.events)
    print(json.dumps(out))


def setup(subtables: int, rows_per_table: int, n_events: int) -> tuple[Lake, Any, list[TriggerEvent]]:
    """A lake with ``subtables`` subtables of ``rows_per_table`` rows (one a second) and a table
    in another database, and ``n_events`` 10-second window events over the subtables."""
    root = Path(tempfile.mkdtemp(prefix="tdweb-compute-bench-"))
    lake = Lake(root)
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="b")
    ex.execute("create database b; create stable st (ts timestamp, v double) tags (g int);")
    ex.execute("create table ref (ts timestamp, v double)")
    ex.execute("create database o; create table o.ref (ts timestamp, v double)")
    ex.execute(" ".join(f"create table c{i} using st tags ({i});" for i in range(subtables)))
    n = rows_per_table
    db = lake.catalog.require_database("b")
    st = lake.catalog.require_table("b", "st")
    ts = [T0 + k * 1000 for k in range(n)]
    lake.write(
        db,
        st,
        pa.table(
            {
                "tbname": [f"c{i}" for i in range(subtables) for _ in range(n)],
                "ts": ts * subtables,
                "v": [float(k % 97) for k in range(n)] * subtables,
            }
        ),
    )
    lake.write(
        db,
        lake.catalog.require_table("b", "ref"),
        pa.table({"tbname": ["ref"] * n, "ts": ts, "v": [1.0] * n}),
    )
    lake.write(
        lake.catalog.require_database("o"),
        lake.catalog.require_table("o", "ref"),
        pa.table({"tbname": ["ref"] * n, "ts": ts, "v": [2.0] * n}),
    )
    src = resolve(lake.catalog, ast.TableName("st", "b"), "b")
    events = []
    for e in range(n_events):
        tb = f"c{e % subtables}"
        ws = T0 + (e // subtables) * 10_000 % (n * 1000)
        events.append(
            TriggerEvent(
                {
                    "_twstart": ws * 1000,
                    "_twend": (ws + 10_000) * 1000,
                    "_tgrpid": e % subtables,
                    "tbname": tb,
                },
                tb,
            )
        )
    return lake, src, events


def _timed(
    comp: Computation, b: compute.Bound, events: list[TriggerEvent], repeat: int = 1
) -> tuple[pa.Table, float]:
    """The rows of ``comp.run`` and its best time (s) of ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        res = comp.run(b, events)
        best = min(best, time.perf_counter() - t)
    return res, best


def _measure(
    lake: Lake, src: object, q: str, events: list[TriggerEvent], n: int, label: str, rows_in: int = 0
) -> dict[str, int]:
    """events/s (and trigger rows/s when ``rows_in``) of each path; the paths' rows must agree."""
    comp = Computation(q, src, default_db="b", tz="UTC")  # type: ignore[arg-type]
    real = Computation._materialize
    with DuckSession(lake) as duck:
        b = comp.bind(lake, duck)
        comp.run(b, events[:10])  # warm-up
        res, fast = _timed(comp, b, events, repeat=3)  # best of 3: the machine is shared
        compute.SET_ORIENTED = False
        old = compute.CHUNK
        try:
            per, batched = _timed(comp, b, events)
            compute.CHUNK = 1  # one DuckDB query per event
            _, single = _timed(comp, b, events[: max(1, n // 10)])
            single *= len(events) / max(1, n // 10)
            compute.CHUNK = old
            Computation._materialize = lambda self, b, evs: b.trigger_view  # type: ignore[method-assign]
            _, files = _timed(comp, b, events[: max(1, n // 4)])
            files *= len(events) / max(1, n // 4)
        finally:
            compute.SET_ORIENTED, compute.CHUNK = True, old
            Computation._materialize = real  # type: ignore[method-assign]
    key = ["__td_ev", *res.column_names[1:]]
    assert sorted(map(str, res.rename_columns(key).to_pylist())) == sorted(
        map(str, per.rename_columns(key).to_pylist())
    )
    r = {
        "events": n,
        "rows_out": res.num_rows,
        "set_oriented_events_per_s": round(n / fast),
        "per_event_union_events_per_s": round(n / batched),
        "one_query_per_event_events_per_s": round(n / single),
        "per_event_over_files_events_per_s": round(n / files),
    }
    if rows_in:
        r["set_oriented_rows_per_s"] = round(rows_in / fast)
        r["per_event_rows_per_s"] = round(rows_in / batched)
    print(f"{label}: {json.dumps(r)}", flush=True)
    return r


if __name__ == "__main__":
    main()
