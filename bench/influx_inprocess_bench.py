"""Schemaless line-protocol writes in process, without HTTP (issue 17, "Ingest"): the CPU a
request costs the web process.

    PYTHONPATH=$PWD .venv/bin/python bench/influx_inprocess_bench.py [--requests 10] [--lines 10000]
        [--workload line|influx] [--profile]

Writes ``--requests`` bodies of ``--lines`` lines one after the other through
``schemaless.write_lines`` into a fresh lake (temporary directory) after one warm-up body that
creates the supertable and subtables. Workloads: ``line`` is ``rest_ingest_bench.line_body``
(``lines,groupid=..,location=..,sub=.. current=<f>,voltage=<n>i,phase=<f> <ms>``, 10 subtables,
precision ms), ``influx`` is ``influx_bench.body`` (``cpu,host=..,region=.. usage_user=<f>,
usage_system=<f>,busy=<n>i <ns>``, 100 hosts). Prints the median and best request time and rows/s,
and ``parse_lines`` alone; ``--profile`` prints cProfile of one request instead. Checks the row
count at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import influx_bench
import rest_ingest_bench

from spark_workers.lake.store import Lake
from spark_workers.sql.line_protocol import parse_lines
from spark_workers.statements.executor import Executor
from spark_workers.statements.schemaless import write_lines
from spark_workers.streams.registry import MemoryRegistry


def bodies(workload: str, n: int, lines: int) -> tuple[str, str, list[str]]:
    """``(supertable, precision, [warm-up body, n bodies])``; bodies never overlap in time."""
    if workload == "line":
        subs = list(range(rest_ingest_bench.TABLES_PER_STATEMENT))
        per = max(1, lines // len(subs))
        out = [rest_ingest_bench.line_body("lines", subs, 10**6, per)[0]]
        out += [rest_ingest_bench.line_body("lines", subs, i, per)[0] for i in range(n)]
        return "lines", "ms", out
    out = [influx_bench.body(0, 10**6, lines)] + [influx_bench.body(0, i, lines) for i in range(n)]
    return "cpu", "ns", out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--workload", choices=["line", "influx"], default="line")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    stable, precision, texts = bodies(a.workload, a.requests, a.lines)
    rows = texts[1].count("\n") + 1
    with tempfile.TemporaryDirectory(prefix="influx-inprocess-") as tmp:
        ex = Executor(Lake(Path(tmp) / "lake"), MemoryRegistry())
        ex.execute_one(f"CREATE DATABASE b PRECISION '{'ms' if precision == 'ms' else 'ns'}'")
        write_lines(ex, "b", texts[0], precision)
        if a.profile:
            pr = cProfile.Profile()
            pr.enable()
            write_lines(ex, "b", texts[1], precision)
            pr.disable()
            pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
            return
        t = time.perf_counter()
        for text in texts[1:4]:
            parse_lines(text)
        parse_s = (time.perf_counter() - t) / 3
        lat = []
        for text in texts[1:]:
            t = time.perf_counter()
            write_lines(ex, "b", text, precision)
            lat.append(time.perf_counter() - t)
        stored = ex.execute_one(f"SELECT COUNT(*) FROM b.{stable}").rows[0][0]
    med, best = statistics.median(lat), min(lat)
    print(
        f"{a.workload}: {a.requests} requests of {rows:,} lines: write_lines median {med * 1000:.1f} ms "
        f"({rows / med:,.0f} rows/s), best {best * 1000:.1f} ms ({rows / best:,.0f} rows/s); "
        f"parse_lines alone {parse_s * 1000:.1f} ms; stored {stored:,} rows "
        f"({'OK' if stored == rows * (a.requests + 1) else 'MISSING ROWS'})",
        flush=True,
    )


if __name__ == "__main__":
    main()
