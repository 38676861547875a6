"""taosBenchmark-style INSERTs in process, without HTTP (issue 17, "Ingest"): what one 10,000-row
statement costs the web process, parse and Delta commit included, as the table grows.

    PYTHONPATH=$PWD .venv/bin/python bench/insert_inprocess_bench.py [--statements 400]
        [--checkpoint-interval 20]

Writes ``--statements`` statements of ``rest_ingest_bench.big_statement`` (10 subtables x 1,000
rows, each statement later than the one before) one after the other through
``Executor.execute_one`` into a fresh lake (temporary directory), after one warm-up statement far
later in time (as ``rest_ingest_bench`` warms up: every timed write is then checked against the
stored keys). ``--checkpoint-interval`` sets ``delta.checkpointInterval`` of the table instead of
the lake's (``spark_workers.lake.store.CHECKPOINT_INTERVAL``). Prints the mean and median per
statement and the mean of every 100; checks the row count.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rest_ingest_bench

from spark_workers.lake import store
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--statements", type=int, default=400)
    ap.add_argument("--checkpoint-interval", type=int, default=0, help="0: the lake's")
    a = ap.parse_args()
    if a.checkpoint_interval:
        store.TABLE_CONFIG = {**store.CDF_CONFIG, "delta.checkpointInterval": str(a.checkpoint_interval)}
    subs = list(range(rest_ingest_bench.TABLES_PER_STATEMENT))
    with tempfile.TemporaryDirectory(prefix="insert-inprocess-") as tmp:
        ex = Executor(Lake(Path(tmp) / "lake"), MemoryRegistry())
        ex.execute_one("CREATE DATABASE b")
        ex.execute_one("USE b")
        ex.execute_one(
            "CREATE STABLE meters (ts TIMESTAMP, current FLOAT, voltage INT, phase FLOAT) "
            "TAGS (groupid INT, location BINARY(24))"
        )
        ex.execute_one(rest_ingest_bench.big_statement("meters", subs, 10**6, 1000)[0])
        lat = []
        for i in range(a.statements):
            sql = rest_ingest_bench.big_statement("meters", subs, i, 1000)[0]
            t = time.perf_counter()
            ex.execute_one(sql)
            lat.append(time.perf_counter() - t)
        stored = ex.execute_one("SELECT COUNT(*) FROM meters").rows[0][0]
    rows = len(subs) * 1000
    per100 = " ".join(f"{statistics.mean(lat[k : k + 100]) * 1000:.1f}" for k in range(0, len(lat), 100))
    print(
        f"checkpoint interval {a.checkpoint_interval or store.CHECKPOINT_INTERVAL}: "
        f"{a.statements} statements of {rows:,} rows: mean {statistics.mean(lat) * 1000:.1f} ms, median "
        f"{statistics.median(lat) * 1000:.1f} ms ({rows / statistics.mean(lat):,.0f} rows/s); mean per 100: "
        f"{per100} ms; stored {stored:,} ({'OK' if stored == rows * (a.statements + 1) else 'MISSING ROWS'})",
        flush=True,
    )


if __name__ == "__main__":
    main()
