"""Recovery after ``kill -9`` of the worker (issue 17): the gap until every stream processes again,
and no lost or duplicated output window.

    .venv/bin/python bench/recovery_bench.py [--devices 20] [--rate 1000] [--warm-s 30]
        [--port-base 18660] [--redis redis://127.0.0.1:6379/14] [--keep]

A whole installation (``bench/stack.py``: web, one Celery worker, beat; TDWEB_HEARTBEAT_S 3,
TDWEB_STALE_AFTER_S 15, the defaults) with ten legacy streams over ``m (ts, v double, st int) tags
(dev int)`` (``STREAMS``: INTERVAL of 10 s to 1 min, half PARTITION BY tbname, WINDOW_CLOSE and
AT_ONCE). A writer inserts ``--rate`` rows/s through ``/rest/sql`` (one row per device per event
second, event time running faster than the wall clock) the whole time. Once every stream has
committed micro-batches for ``--warm-s`` seconds, the worker's process group (the Celery worker,
the Spark JVM, Spark's Python workers) is killed with SIGKILL and a new worker is started at once
(the same worker name, as ``manage.py up``'s supervisor restarts it). Per stream the bench prints
the gap from the new worker's start to the stream's first micro-batch committed by it (a row of
``streams_app_streamprogress``), and the maximum; then where the time went (the worker's log).

Then it runs ``--after-s`` more seconds, stops the writer, writes one closing row per device 10
minutes of event time later, waits until the streams have caught up and compares each output
table with the batch query of the stream's own SELECT over the source, on every window before
the closing rows: lost (in the batch result, not in the output), duplicated (more than one output
row for a window) and differing values (beyond 1e-9 relative or absolute: sums of opposite
values come out as 1e-15 in one order and 4e-15 in another) windows are printed. The closing
rows pass every stream's WHERE (``v > 0``, ``st = 1``): a row a stream filters out closes none of
its windows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stack import (
    DEFAULT_REDIS,
    Stack,
    Writer,
    create_source,
    process_group,
    process_tree,
    rss_bytes,
    stop_on_sigterm,
    wait_for,
)

DB = "rb"
BASE_MS = 1_767_225_600_000  # 2026-01-01 00:00 UTC
AGGS = "count(*) n, sum(v) s, min(v) mn, max(v) mx"
# name -> (trigger, PARTITION BY tbname, the SELECT after "select _wstart, "); ``--streams N`` takes
# the first N, which mix the four kinds
KINDS = ("lost", "duplicated", "differ", "extra")
STREAMS: dict[str, tuple[str, bool, str]] = {
    "r0": ("window_close", True, f"{AGGS} from m partition by tbname tb interval(10s)"),
    "r5": ("window_close", False, f"{AGGS} from m interval(10s)"),
    "r2": ("at_once", True, f"{AGGS} from m partition by tbname tb interval(1m)"),
    "r7": ("at_once", False, f"{AGGS} from m interval(1m)"),
    "r1": ("window_close", True, "count(*) n, avg(v) a from m partition by tbname tb interval(30s)"),
    "r6": ("window_close", False, "count(*) n, avg(v) a, max(st) ms from m interval(30s)"),
    "r3": ("window_close", True, f"{AGGS} from m where v > 0 partition by tbname tb interval(20s)"),
    "r8": ("window_close", False, f"{AGGS} from m where st = 1 interval(20s)"),
    "r4": ("at_once", True, "count(*) n, last(v) lv from m partition by tbname tb interval(30s)"),
    "r9": ("at_once", False, "count(*) n, sum(v) s from m interval(10s)"),
}


def create_streams(stack: Stack, count: int) -> None:
    """The first ``count`` of ``STREAMS`` (and only those are compared)."""
    for name in list(STREAMS)[count:]:
        del STREAMS[name]
    rest = stack.rest(DB)
    for name, (trigger, by_tb, rest_sql) in STREAMS.items():
        tags = " tags (tb varchar(16))" if by_tb else ""
        rest.sql(
            f"create stream {name} trigger {trigger} into {name}_out{tags} as select _wstart, {rest_sql}"
        )


def columns(select: str) -> list[str]:
    """The output column names of ``select _wstart, <aggs> from ...`` (the aliases)."""
    aggs = select.split(" from ", 1)[0]
    return [part.strip().rsplit(" ", 1)[1] for part in aggs.split(",")]


def rows_of(rest: object, sql: str) -> list[tuple]:
    return [tuple(r) for r in rest.sql(sql)["data"]]  # type: ignore[attr-defined]


def compare(stack: Stack, cutoff_ms: int) -> dict[str, dict[str, int]]:
    """Per stream: windows expected (the batch query, windows starting at or before ``cutoff_ms``),
    lost, duplicated and with different values in its output table."""
    rest = stack.rest(DB)
    out: dict[str, dict[str, int]] = {}
    cut = datetime.fromtimestamp(cutoff_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    for name, (_trigger, by_tb, select) in STREAMS.items():
        cols = columns(select)
        key = "tb, _wstart" if by_tb else "_wstart"
        batch = rows_of(rest, f"select {key}, {select}")
        got = rows_of(rest, f"select {key}, {', '.join(cols)} from {name}_out where _wstart <= '{cut}'")
        nkey = 2 if by_tb else 1
        want = {r[:nkey]: r[nkey:] for r in batch if _ms(r[nkey - 1]) <= cutoff_ms}
        seen: dict[tuple, list[tuple]] = {}
        for r in got:
            seen.setdefault(r[:nkey], []).append(r[nkey:])
        lost = [k for k in want if k not in seen]
        dup = [k for k, v in seen.items() if len(v) > 1]
        differ = [k for k, v in seen.items() if k in want and not _same(v[0], want[k])]
        extra = [k for k in seen if k not in want]
        out[name] = {
            "windows": len(want),
            "lost": len(lost),
            "duplicated": len(dup),
            "differ": len(differ),
            "extra": len(extra),
        }
        if lost or dup or differ or extra:
            print(f"  {name}: lost {lost[:3]} duplicated {dup[:3]} differ {differ[:3]} extra {extra[:3]}")
            for k in differ[:2]:
                print(f"    {k}: output {seen[k]} batch {want[k]}")
    return out


def _ms(v: object) -> int:
    if isinstance(v, datetime):
        return int(v.replace(tzinfo=v.tzinfo or UTC).timestamp() * 1000)
    return int(datetime.fromisoformat(str(v)).replace(tzinfo=UTC).timestamp() * 1000)


def _same(a: tuple, b: tuple) -> bool:
    def close(x: object, y: object) -> bool:
        floats = isinstance(x, float) and isinstance(y, float)
        return floats and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)  # type: ignore[arg-type]

    return len(a) == len(b) and all(x == y or close(x, y) for x, y in zip(a, b, strict=True))


def log_marks(text: str, start: datetime) -> dict[str, float]:
    """Seconds from ``start`` to the new worker's first log lines of each kind (Celery's local
    times are UTC on the bench machine): Celery ready, streams taken back, each query started."""
    marks: dict[str, float] = {}
    pats = {
        "celery ready": r"\bready\.",
        "streams taken back (worker_recover)": r"takes back streams",
        "spark session ready": r"SparkSession ready",
        "first query started": r"stream query started",
    }
    stamp = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.,]\d+)")
    last_query = None
    for line in text.splitlines():
        m = stamp.search(line)
        if not m:
            continue
        at = datetime.fromisoformat(m.group(1).replace(",", ".")).replace(tzinfo=UTC)
        if at < start:
            continue
        dt = (at - start).total_seconds()
        for label, pat in pats.items():
            if label not in marks and re.search(pat, line):
                marks[label] = dt
        if "stream query started" in line:
            last_query = dt
    if last_query is not None:
        marks["last query started"] = last_query
    return marks


def run(args: argparse.Namespace) -> dict[str, object]:
    stack = Stack(port=args.port_base, redis_url=args.redis)
    t0 = time.monotonic()
    stack.start()
    print(f"stack up in {time.monotonic() - t0:.1f}s (var {stack.var})", flush=True)
    writer = None
    try:
        create_source(stack, DB, args.devices)
        create_streams(stack, args.streams)
        ids = stack.streams()
        writer = Writer(stack, DB, args.devices, args.rate, BASE_MS, args.rows_per_insert)
        writer.start()
        wait_for(lambda: len(stack.batches()) == len(STREAMS), 600, "every stream's first micro-batch", 2)
        print(f"all {len(STREAMS)} streams committed micro-batches; warming {args.warm_s}s", flush=True)
        time.sleep(args.warm_s)
        before = stack.batches()
        pid = stack.worker_pid()
        group, tree = process_group(pid), process_tree(pid)
        assert stack.launcher is not None
        stack.launcher.kill("worker")  # SIGKILL to the process group: the worker and the Spark JVM
        for p in tree:  # Spark's Python daemons, which make process groups of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        time.sleep(1)  # SIGKILL is delivered, the processes are gone in a moment
        left = [p for p in tree if rss_bytes(p)]
        print(
            f"kill -9 of the worker {pid}: its process group ({len(group)} processes) and its other "
            f"descendants ({len(set(tree) - set(group))}); left alive: {left}",
            flush=True,
        )
        start = datetime.now(UTC)
        stack.launcher.start_worker()
        firsts = wait_for(
            lambda: (f := stack.first_batch_after(start)) and len(f) == len(STREAMS) and f,
            600,
            "every stream's first micro-batch after the restart",
            0.2,
        )
        gaps = {name: (firsts[sid] - start).total_seconds() for name, sid in ids.items()}
        print("gap from the new worker's start to the stream's next committed micro-batch:")
        for name, g in gaps.items():
            print(
                f"  {name:<4} {STREAMS[name][0]:<13} "
                f"{'by tbname' if STREAMS[name][1] else 'whole':<10} {g:6.1f} s"
            )
        gap_max = max(gaps.values())
        print(f"max gap {gap_max:.1f} s (target <= 10 s)", flush=True)
        marks = log_marks(stack.log("worker"), start)
        for label, dt in marks.items():
            print(f"  worker log: {label:<38} +{dt:5.1f} s")
        time.sleep(args.after_s)
        writer.halt.set()
        writer.join()
        last_ms = writer.last_ms
        writer.rest.sql(
            "insert into "
            + " ".join(f"d{d} values ({last_ms + 600_000}, 1.0, 1)" for d in range(args.devices))
        )
        print(
            f"writer stopped: {writer.rows:,} rows, {len(writer.errors)} failed inserts; catching up",
            flush=True,
        )
        version_rows = _caught_up(stack)
        result = compare(stack, last_ms)
        for name, r in result.items():
            print(f"  {name}: {r['windows']:>6} windows, " + ", ".join(f"{k} {r[k]}" for k in KINDS))
        totals = {k: sum(r[k] for r in result.values()) for k in ("windows", *KINDS)}
        print(f"all streams: {totals}")
        return {
            "gaps_s": gaps,
            "gap_max_s": gap_max,
            "log_marks_s": marks,
            "batches_before_kill": sum(before.values()),
            "rows": writer.rows,
            "writer_errors": len(writer.errors),
            "compare": totals,
            "caught_up": version_rows,
        }
    finally:
        if writer is not None:
            writer.halt.set()
        stack.stop(keep=args.keep)


def _caught_up(stack: Stack) -> bool:
    """Wait until every stream's processed lake version stops moving for 15 s (caught up)."""

    def versions() -> tuple:
        with stack.db() as con:
            return tuple(
                con.execute("SELECT id, processed_version, last_batch_id FROM streams_app_stream ORDER BY id")
            )

    last, since = versions(), time.monotonic()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(3)
        now = versions()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 15:
            return True
    return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--streams", type=int, default=10, help="the first N of STREAMS")
    p.add_argument("--devices", type=int, default=20)
    p.add_argument("--rate", type=float, default=1000.0, help="rows/s written")
    p.add_argument("--rows-per-insert", type=int, default=500)
    p.add_argument("--warm-s", type=float, default=30.0)
    p.add_argument("--after-s", type=float, default=30.0)
    p.add_argument("--port-base", type=int, default=18660)
    p.add_argument("--redis", default=DEFAULT_REDIS)
    p.add_argument("--keep", action="store_true", help="keep the var folder (logs, lake)")
    args = p.parse_args()
    stop_on_sigterm()
    print(f"started {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC", flush=True)
    result = run(args)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
