"""Bench of the SQL limits (docs/security.md "Limits", docs/decisions.md "SQL sandbox and limits").

Prints, for one process on this machine:

- the time of 300 x ``select 1`` in one request (27 s before the DuckDB pool, with the statement
  cap raised to 300);
- a runaway cross join (``200^5`` rows) under a 5 s timeout: when it is interrupted, and the
  latencies of small queries the same process answers meanwhile;
- a 1.6 x 10^9-row result under the 1,000,000-row cap: how soon it is refused;
- the process's memory growth under a 3-way ``DISTINCT`` self-join with memory limits of 128 MiB,
  256 MiB and 1 GiB (each in a fresh process: RSS does not shrink back).

    .venv/bin/python bench/sql_limits_bench.py
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.limits import MIB, Limits, configure_limits
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000


def world(root: Path, rows: int) -> Lake:
    """Database ``d``: supertable ``st``, subtable ``c1`` with ``rows`` rows, one a second."""
    lake = Lake(root)
    ex = Executor(lake, MemoryRegistry(), default_db="d")
    ex.execute("create database d; create stable st (ts timestamp, a int, b int) tags (g int);"
               "create table c1 using st tags (1)")  # fmt: skip
    ex.execute("insert into c1 values " + " ".join(f"({T0 + i * 1000}, {i}, {i % 7})" for i in range(rows)))
    return lake


def client(lake: Lake) -> Executor:
    return Executor(lake, MemoryRegistry(), default_db="d")


def timed(f) -> tuple[float, str]:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    try:
        f()
        outcome = "ok"
    except SqlError as e:
        outcome = f"0x{e.code:04X}"
    return time.perf_counter() - t, outcome


def memory_run(limit_mib: int) -> None:
    """Child process: the 3-way DISTINCT self-join under ``limit_mib``; prints JSON."""
    root = Path(tempfile.mkdtemp())
    lake = world(root / "lake", 400)
    configure_limits(Limits(memory_limit_bytes=limit_mib * MIB, timeout_s=120))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    took, outcome = timed(
        lambda: client(lake).execute(
            "select count(*) from (select distinct a.ts, b.ts t2, c.ts t3 from st a, st b, st c) q"
        )
    )
    growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(
        json.dumps(
            {"limit_mib": limit_mib, "growth_mib": round(growth), "s": round(took, 2), "answer": outcome}
        )
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--memory-child":
        memory_run(int(sys.argv[2]))
        return
    root = Path(tempfile.mkdtemp())
    lake = world(root / "lake", 200)

    configure_limits(Limits(max_statements=300))
    took, outcome = timed(lambda: client(lake).execute("select 1;" * 300))
    print(f"300 x select 1 in one request: {took:.2f} s ({outcome})")
    configure_limits(Limits())
    took, outcome = timed(lambda: client(lake).execute("select 1;" * 300))
    print(f"300 x select 1 under the default cap of 100: refused in {took * 1000:.1f} ms ({outcome})")

    configure_limits(Limits(timeout_s=5.0))
    result: dict[str, object] = {}

    def runaway() -> None:
        result["took"], result["answer"] = timed(
            lambda: client(lake).execute("select count(*) from st a, st b, st c, st d, st e")
        )

    thread = threading.Thread(target=runaway)
    thread.start()
    time.sleep(0.3)
    small = client(lake)
    latencies = []
    while thread.is_alive():
        t = time.perf_counter()
        small.execute_one("select count(*), max(a) from st")
        latencies.append(time.perf_counter() - t)
        time.sleep(0.05)
    thread.join()
    idle = [timed(lambda: small.execute_one("select count(*), max(a) from st"))[0] for _ in range(20)]
    print(
        f"runaway 5-way cross join (3.2e11 rows), 5 s timeout: answered {result['answer']} after "
        f"{result['took']:.2f} s; meanwhile {len(latencies)} small queries: median "
        f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
        f"(idle median {statistics.median(idle) * 1000:.0f} ms)"
    )

    configure_limits(Limits())
    took, outcome = timed(lambda: client(lake).execute("select a.ts from st a, st b, st c, st d"))
    print(f"1.6e9-row result under the 1,000,000-row cap: refused in {took:.2f} s ({outcome})")

    for limit in (128, 256, 1024):
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(limit)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"3-way DISTINCT self-join of 400 rows, memory limit {limit} MiB: process grew "
            f"{r['growth_mib']} MiB, answered {r['answer']} in {r['s']} s"
        )


if __name__ == "__main__":
    main()
