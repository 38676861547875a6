"""Per-event computation benchmark (no Spark): the 3.3.7 computation path of ``sql/compute.py``.

A micro-batch of trigger events (windows of 100 subtables) runs the stream's query once per event
with its placeholders bound. Measured: events/s of ``Computation.run`` batching the events into one
DuckDB query per ``CHUNK`` (what the sink does), against one DuckDB query per event, and against
batching without copying the trigger table's rows into memory first, for a
row-level query over ``%%tbname`` (td-038's shape) and an aggregate over another table.

    .venv/bin/python bench/compute_bench.py [--subtables 100] [--rows-per-table 2000] [--events 2000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

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
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subtables", type=int, default=100)
    ap.add_argument("--rows-per-table", type=int, default=2000)
    ap.add_argument("--events", type=int, default=2000)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tdweb-compute-bench-"))
    lake = Lake(root)
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="b")
    ex.execute("create database b; create stable st (ts timestamp, v double) tags (g int);")
    ex.execute("create table ref (ts timestamp, v double)")
    ex.execute(" ".join(f"create table c{i} using st tags ({i});" for i in range(a.subtables)))
    n = a.rows_per_table
    db = lake.catalog.require_database("b")
    st = lake.catalog.require_table("b", "st")
    ts = [T0 + k * 1000 for k in range(n)]
    lake.write(
        db,
        st,
        pa.table(
            {
                "tbname": [f"c{i}" for i in range(a.subtables) for _ in range(n)],
                "ts": ts * a.subtables,
                "v": [float(k % 97) for k in range(n)] * a.subtables,
            }
        ),
    )
    lake.write(
        db,
        lake.catalog.require_table("b", "ref"),
        pa.table({"tbname": ["ref"] * n, "ts": ts, "v": [1.0] * n}),
    )
    src = resolve(lake.catalog, ast.TableName("st", "b"), "b")
    events = []
    for e in range(a.events):
        tb = f"c{e % a.subtables}"
        ws = T0 + (e // a.subtables) * 10_000 % (n * 1000)
        events.append(
            TriggerEvent(
                {
                    "_twstart": ws * 1000,
                    "_twend": (ws + 10_000) * 1000,
                    "_tgrpid": e % a.subtables,
                    "tbname": tb,
                },
                tb,
            )
        )
    out = {}
    for label, q in QUERIES.items():
        comp = Computation(q, src, default_db="b", tz="UTC")
        with DuckSession(lake) as duck:
            t = time.perf_counter()
            b = comp.bind(lake, duck)
            rows = comp.run(b, events).num_rows
            batched = time.perf_counter() - t
            t = time.perf_counter()
            single_rows = 0
            old = compute.CHUNK
            compute.CHUNK = 1  # one DuckDB query per event
            try:
                single_rows = comp.run(b, events).num_rows
            finally:
                compute.CHUNK = old
            single = time.perf_counter() - t
            t = time.perf_counter()
            real = Computation._materialize
            Computation._materialize = lambda self, b, evs: b.trigger_view  # type: ignore[method-assign]
            try:
                files_rows = comp.run(b, events).num_rows
            finally:
                Computation._materialize = real  # type: ignore[method-assign]
            files = time.perf_counter() - t
        assert rows == single_rows == files_rows
        out[label] = {
            "events": a.events,
            "rows_out": rows,
            "batched_events_per_s": round(a.events / batched),
            "one_query_per_event_events_per_s": round(a.events / single),
            "batched_over_files_events_per_s": round(a.events / files),
        }
        print(
            f"{label}: {a.events:,} events -> {rows:,} rows; batched {a.events / batched:,.0f} events/s, "
            f"one query per event {a.events / single:,.0f} events/s, batched without the trigger rows "
            f"copied once {a.events / files:,.0f} events/s"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
