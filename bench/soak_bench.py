"""Memory soak of the worker (issue 17): its RSS over a long run at a steady load.

    .venv/bin/python bench/soak_bench.py [--minutes 30] [--rate 200] [--rows-per-insert 2000] [--devices 20]
        [--port-base 18660] [--redis redis://127.0.0.1:6379/14] [--keep] [--tracemalloc] [--samples]
        [--env KEY=VALUE ...]

A whole installation (``bench/stack.py``: web, one Celery worker, beat) with four streams over
``m (ts, v double, st int) tags (dev int)``, all PARTITION BY tbname: INTERVAL(1m) WINDOW_CLOSE,
STATE_WINDOW(st), SESSION(ts, 5s) and an INTERVAL(1m) stream that notifies root's inbox
(``NOTIFY ... ON ('WINDOW_CLOSE')``, delivered over the web's WebSocket intake). A writer inserts
``--rate`` rows/s through ``/rest/sql`` (one row per device per event second, each device silent
the last 10 event seconds of every minute so sessions close; event time runs faster than the
wall clock). Every minute the bench prints the RSS of the worker's process tree (the Celery worker
Python process, the Spark JVM, Spark's Python workers), the rows written, the micro-batches
committed and the streams' state bytes (the sink's report of the last micro-batch); at the end a
least-squares slope (MB/min) of each RSS over the second half of the run. ``--tracemalloc`` has
the worker write a tracemalloc snapshot every 2 minutes (``TDWEB_TRACEMALLOC_DIR``) and prints
the source lines whose allocations grew most between the second snapshot and the last.
``--samples`` has the worker sample its own memory every minute (``TDWEB_MEMORY_SAMPLES_DIR``,
``spark_workers/runtime/memory.py``: RSS, Arrow pool, glibc arenas, cached Delta snapshots and
their files, idle DuckDB databases, threads) and prints them every five minutes with the slope of
each over the second half, to see which grows with RSS.

``--rate``'s default, 200 rows/s in 2,000-row inserts (one lake commit every 10 s), is a load the
shared 2-core machine kept up with for four streams (docs/PERFORMANCE.md, "Worker memory soak":
each micro-batch costs seconds of CPU there, whatever its size, so the commits per second set
the load more than the rows).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stack import DEFAULT_REDIS, Stack, Writer, create_source, stop_on_sigterm, tree_rss, wait_for

DB = "sk"
BASE_MS = 1_767_225_600_000  # 2026-01-01 00:00 UTC
AGGS = "count(*) n, avg(v) a, max(v) mx"
STREAMS = {
    "k_interval": f"trigger window_close into k_interval_out tags (tb varchar(16)) as select _wstart, {AGGS} "
    "from m partition by tbname tb interval(1m)",
    "k_state": f"into k_state_out tags (tb varchar(16)) as select _wstart, {AGGS} "
    "from m partition by tbname tb state_window(st)",
    "k_session": f"into k_session_out tags (tb varchar(16)) as select _wstart, {AGGS} "
    "from m partition by tbname tb session(ts, 5s)",
    "k_notify": "trigger window_close into k_notify_out tags (tb varchar(16)) as select _wstart, "
    "avg(v) a from m partition by tbname tb interval(1m) notify ('{inbox}') on ('WINDOW_CLOSE') "
    "notify_history 0 on_failure drop",
}


def inbox_url(stack: Stack) -> str:
    """root's inbox (``/api/v1/me/``), as a WebSocket URL of this installation."""
    import requests

    me = requests.get(f"{stack.url}/api/v1/me/", auth=("root", "taosdata"), timeout=30).json()
    url: str = me["inboxes"][0]["url"]
    path = url.split("/ws/", 1)[1]
    return f"ws://127.0.0.1:{stack.port}/ws/{path}"


def state_bytes(stack: Stack) -> int:
    """The sum over streams of the state bytes of each stream's last micro-batch."""
    with stack.db() as con:
        row = con.execute(
            "SELECT SUM(state_bytes) FROM streams_app_streamprogress WHERE id IN "
            "(SELECT MAX(id) FROM streams_app_streamprogress GROUP BY stream_id)"
        ).fetchone()
    return int(row[0] or 0)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(x, y)`` points (y per x); 0 with fewer than two."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def traced_growth(folder: Path, top: int = 15) -> list[str]:
    """The lines whose allocations grew most between the worker's second tracemalloc snapshot
    (the first is taken during start-up) and its last (``TDWEB_TRACEMALLOC_DIR``)."""
    import tracemalloc

    snaps = sorted(folder.glob("snapshot-*.pickle"), key=lambda p: int(p.stem.split("-")[1]))
    if len(snaps) < 3:
        return [f"{len(snaps)} snapshots in {folder}: too few to compare"]
    first, last = (tracemalloc.Snapshot.load(str(p)) for p in (snaps[1], snaps[-1]))
    stats = last.compare_to(first, "lineno")[:top]
    return [f"{s.size_diff / 2**20:+8.2f} MB {s.count_diff:+9,} blocks  {s.traceback}" for s in stats]


SAMPLED = {  # printed name -> path in a memory_sample line (spark_workers/runtime/memory.py)
    "rss MB": ("rss",),
    "anon MB": ("rss_anon",),
    "file MB": ("rss_file",),
    "arrow MB": ("arrow_allocated",),
    "arrow max MB": ("arrow_max",),
    "malloc arena MB": ("malloc", "arena"),
    "malloc mmap MB": ("malloc", "hblkhd"),
    "malloc used MB": ("malloc", "uordblks"),
    "malloc free MB": ("malloc", "fordblks"),
    "duck jemalloc MB": ("duck_jemalloc", "allocated"),
    "duck resident MB": ("duck_jemalloc", "resident"),
    "delta tables": ("delta", "tables"),
    "delta files": ("delta", "files"),
    "delta applied": ("delta", "applied"),
    "duck idle": ("duck_idle",),
    "threads": ("threads",),
    "maps": ("maps",),
    "py objects": ("py_objects",),
}


def sampled(folder: Path, t0: float, minutes: int) -> dict[str, object]:
    """The worker's memory samples (``samples-*.jsonl`` in ``folder``): the values of
    :data:`SAMPLED` every five minutes of the soak (``t0``: its start, epoch seconds; bytes in MB)
    and the least-squares slope of each per minute over the second half; printed as a table."""
    files = sorted(folder.glob("samples-*.jsonl"))
    lines = [json.loads(x) for p in files for x in p.read_text().splitlines()]
    rows: list[dict[str, float]] = []
    for s in lines:
        row = {"minute": (s["t"] - t0) / 60}
        for name, path in SAMPLED.items():
            v: object = s
            for k in path:
                v = v.get(k) if isinstance(v, dict) else None
            if v is not None:
                row[name] = float(v) / 2**20 if name.endswith("MB") else float(v)  # type: ignore[arg-type]
        rows.append(row)
    if not rows:
        print(f"no memory samples in {folder}")
        return {}
    half = [r for r in rows if r["minute"] >= minutes / 2]
    slopes = {n: slope([(r["minute"], r[n]) for r in half if n in r]) for n in SAMPLED}
    marks = [min(rows, key=lambda r, m=m: abs(r["minute"] - m)) for m in range(0, minutes + 1, 5)]
    print("worker memory samples (every five minutes; slope per minute over the second half):")
    print(f"{'':>16}" + "".join(f"{r['minute']:>10.1f}" for r in marks) + f"{'slope/min':>12}")
    for n in SAMPLED:
        cells = "".join(f"{r.get(n, float('nan')):>10,.1f}" for r in marks)
        print(f"{n:>16}{cells}{slopes[n]:>+12.3f}")
    return {"every_5_min": marks, "slopes_per_min": slopes}


def run(args: argparse.Namespace) -> dict[str, object]:
    stack = Stack(port=args.port_base, redis_url=args.redis)
    traces = stack.var / "tracemalloc"
    stack.extra_env = dict(kv.split("=", 1) for kv in args.env)
    if args.tracemalloc:
        stack.extra_env |= {"TDWEB_TRACEMALLOC_DIR": str(traces), "TDWEB_TRACEMALLOC_EVERY_S": "120"}
    samples_dir = stack.var / "memory-samples"
    if args.samples:
        stack.extra_env |= {
            "TDWEB_MEMORY_SAMPLES_DIR": str(samples_dir),
            "TDWEB_MEMORY_SAMPLES_EVERY_S": "60",
        }
    stack.start()
    writer = None
    try:
        create_source(stack, DB, args.devices)
        inbox = inbox_url(stack)
        rest = stack.rest(DB)
        for name, sql in STREAMS.items():
            rest.sql(f"create stream {name} {sql.replace('{inbox}', inbox)}")
        writer = Writer(stack, DB, args.devices, args.rate, BASE_MS, args.rows_per_insert, pause_s=10)
        writer.start()
        wait_for(lambda: len(stack.batches()) == len(STREAMS), 900, "every stream's first micro-batch", 2)
        pid = stack.worker_pid()
        print(f"all {len(STREAMS)} streams committed micro-batches; soaking {args.minutes} min", flush=True)
        print("minute  python MB  jvm MB  pyworkers MB  total MB   rows written  micro-batches  state bytes")
        samples: list[dict[str, float]] = []
        t0 = time.monotonic()
        wall0 = time.time()
        for minute in range(args.minutes + 1):
            time.sleep(max(0.0, t0 + minute * 60 - time.monotonic()))
            rss = {k: v / 2**20 for k, v in tree_rss(pid).items()}
            batches = sum(stack.batches().values())
            sb = state_bytes(stack)
            samples.append({"minute": minute, **rss, "rows": writer.rows, "batches": batches, "state": sb})
            print(
                f"{minute:>6} {rss['python']:>10.0f} {rss['jvm']:>7.0f} {rss['pyworkers']:>13.0f} "
                f"{rss['total']:>9.0f} {writer.rows:>14,} {batches:>14,} {sb:>12,}",
                flush=True,
            )
        half = [s for s in samples if s["minute"] >= args.minutes / 2]
        slopes = {
            k: slope([(s["minute"], s[k]) for s in half]) for k in ("python", "jvm", "pyworkers", "total")
        }
        print(
            "RSS slope over the second half (MB/min): "
            + ", ".join(f"{k} {v:+.2f}" for k, v in slopes.items()),
            flush=True,
        )
        if args.tracemalloc:
            print("worker allocations that grew most (tracemalloc, second snapshot -> last):")
            for line in traced_growth(traces):
                print("  " + line)
        memory = sampled(samples_dir, wall0, args.minutes) if args.samples else {}
        elapsed = time.monotonic() - t0
        print(f"writer: {writer.rows / elapsed:,.0f} rows/s on average, {len(writer.errors)} failed inserts")
        return {
            "samples": samples,
            "slopes_mb_per_min": slopes,
            "writer_errors": len(writer.errors),
            "memory": memory,
        }
    finally:
        if writer is not None:
            writer.halt.set()
        stack.stop(keep=args.keep)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=int, default=30)
    p.add_argument("--rate", type=float, default=200.0, help="rows/s written")
    p.add_argument("--devices", type=int, default=20)
    p.add_argument("--rows-per-insert", type=int, default=2000)
    p.add_argument("--port-base", type=int, default=18660)
    p.add_argument("--redis", default=DEFAULT_REDIS)
    p.add_argument("--keep", action="store_true", help="keep the var folder (logs, lake)")
    p.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="more environment for every process"
    )
    p.add_argument(
        "--tracemalloc", action="store_true", help="trace the worker's allocations (snapshots every 2 min)"
    )
    p.add_argument(
        "--samples",
        action="store_true",
        help="the worker samples its memory every minute (printed every 5 min)",
    )
    args = p.parse_args()
    stop_on_sigterm()
    print(f"started {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC", flush=True)
    result = run(args)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
