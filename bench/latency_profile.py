"""Where the time goes between a small INSERT and its WINDOW_CLOSE notification (issue 17), in
one process: the lake written through the statement executor, the stream's Spark query
(``runtime.query.start_query``, ``local[2]``), its sink sending to a WebSocket receiver here.

    PYTHONPATH=$PWD .venv/bin/python bench/latency_profile.py [--windows 30] [--trigger-ms 500]
        [--buckets 8] [--shuffle-partitions 2] [--syntax legacy|v337] [--low-latency] [--ui-port 18651]

One probe row every 0.5 s (``ts`` = wall clock) into ``probe``; a stream ``INTERVAL(1s)`` with
NOTIFY ON WINDOW_CLOSE. For each window closed by a probe row, the phases (ms) from the INSERT's
return to the WINDOW_CLOSE received, which add up to ``total``: ``wait`` (until the micro-batch
that reads it begins: the trigger tick, or the batches before it), ``plan`` (Spark's latestOffset
+ queryPlanning + walCommit of that batch), ``job`` (``df.toArrow()`` in foreachBatch: source read,
stage 1, shuffle, state step in the Python worker, collect; its start is taken as the end of
``plan``, so Spark's bookkeeping between them counts here), ``sink`` (``OutputSink.process``
until the close was sent: the output write, unless LOW_LATENCY_CALC sends first), ``recv``
(sent -> received). Besides: ``write`` (the output write alone) and ``commit`` (after
foreachBatch: state store and offsets commit, which delays the next batch), Spark's own
``durationMs`` of the batches with rows, and the stages of the Spark jobs (UI REST API).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BODY = {
    "legacy": "create stream p trigger window_close into o as select _wstart ws, count(*) n, max(v) mv "
    "from probe interval(1s) notify ('{url}') on ('WINDOW_CLOSE')",
    "v337": "create stream p interval(1s) sliding(1s) from probe {opts}notify('{url}') on (window_close) "
    "into o as select _twstart ws, count(*) n, max(v) mv from %%trows",
}


def parse() -> argparse.Namespace:
    """The command line (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--trigger-ms", type=int, default=-1, help="-1: the stream's own trigger_interval")
    p.add_argument("--buckets", type=int, default=8)
    p.add_argument("--syntax", choices=sorted(BODY), default="legacy")
    p.add_argument("--low-latency", action="store_true")
    p.add_argument("--shuffle-partitions", type=int, default=2, help="the session's (state partitions)")
    p.add_argument("--ui-port", type=int, default=18651)
    p.add_argument("--ws-port", type=int, default=18652)
    return p.parse_args()


def main() -> None:
    """Run the probe and print the phases."""
    from websockets.sync.server import serve

    from spark_workers.lake.store import Lake
    from spark_workers.notify.sender import Sender
    from spark_workers.runtime.query import start_query
    from spark_workers.runtime.session import spark_session
    from spark_workers.runtime.sink import OutputSink
    from spark_workers.statements.executor import Executor
    from spark_workers.streams.compile import compile_stream
    from spark_workers.streams.registry import MemoryRegistry

    args = parse()
    recv: dict[int, float] = {}

    def handler(ws: Any) -> None:
        for msg in ws:
            now = time.monotonic()
            for s in json.loads(msg)["streams"]:
                for e in s["events"]:
                    if e["eventType"] == "WINDOW_CLOSE":
                        recv.setdefault(int(e["windowStart"]), now)

    server = serve(handler, "127.0.0.1", args.ws_port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    spark = spark_session("local[2]", ui_port=args.ui_port, shuffle_partitions=args.shuffle_partitions)
    lake = Lake(Path(tempfile.mkdtemp(prefix="tdweb-latprof-")) / "lake")
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute("create database d; create table probe (ts timestamp, v int)")
    opts = "stream_options(low_latency_calc) " if args.low_latency else ""
    ex.execute(BODY[args.syntax].format(url=f"ws://127.0.0.1:{args.ws_port}/n", opts=opts))
    info = reg.get("p", None)
    assert info is not None
    c = compile_stream(info.spec, lake, "UTC")
    marks: dict[int, dict[str, float]] = {}
    sink = timed_sink(OutputSink(c, lake, stream_key="p", sender=Sender()), marks)
    sv, hv = reg.start_versions["p"]
    trigger = None if args.trigger_ms < 0 else f"{args.trigger_ms} milliseconds"
    q = start_query(
        spark,
        c,
        sink,
        stream_key="p",
        lake_root=str(lake.root),
        tz="UTC",
        start_version=sv,
        history_version=hv,
        buckets=args.buckets,
        trigger=trigger,
    )
    try:
        warm_up(ex, recv)
        inserts = probe(ex, args.windows, recv)
        settle(inserts, recv)
        print_phases(inserts, recv, marks, q.recentProgress)
        print_stages(args.ui_port)
    finally:
        q.stop()
        server.shutdown()


def timed_sink(sink: Any, marks: dict[int, dict[str, float]]) -> Any:
    """``sink`` with its micro-batches timed into ``marks[batch_id]``: ``job`` (foreachBatch began),
    ``sink`` (``process`` called, the Spark job done), ``write`` (output written), ``sent`` (last
    WINDOW_CLOSE sent), ``end``; ``marks[-window start]`` = the batch that sent its close."""
    process, send, write = sink.process, sink.send, sink.lake.write
    current: list[int] = [-1]

    def timed_process(batch: Any, batch_id: int, **kw: Any) -> Any:
        current[0] = batch_id
        m = marks.setdefault(batch_id, {})
        m["job"], m["sink"] = kw.get("started") or time.perf_counter(), time.perf_counter()
        out = process(batch, batch_id, **kw)
        m["end"] = time.perf_counter()
        return out

    def timed_write(*a: Any, **kw: Any) -> Any:
        marks[current[0]]["write_began"] = time.perf_counter()
        out = write(*a, **kw)
        marks[current[0]]["write"] = time.perf_counter()
        return out

    def timed_send(events: list[Any], batch_id: int, rep: Any, **kw: Any) -> Any:
        out = send(events, batch_id, rep, **kw)
        for e in events:
            if e.event_type == "WINDOW_CLOSE":
                marks[-e.window_start] = {"batch": batch_id}
        marks[batch_id]["sent"] = time.perf_counter()
        return out

    sink.process, sink.send = timed_process, timed_send
    sink.lake = _LakeProxy(sink.lake, timed_write)
    return sink


class _LakeProxy:
    """A lake whose ``write`` is timed (everything else passes through)."""

    def __init__(self, lake: Any, write: Any) -> None:
        self._lake, self.write = lake, write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lake, name)


def warm_up(ex: Any, recv: dict[int, float], timeout: float = 300.0) -> None:
    """Write rows until a first window's close was received (the query has planned and run its
    first micro-batches, the Python workers are up), then forget it."""
    deadline = time.monotonic() + timeout
    while not recv and time.monotonic() < deadline:
        ex.execute(f"insert into probe values ({int(time.time() * 1000)}, -1)")
        time.sleep(1.0)
    time.sleep(3.0)
    recv.clear()


def settle(inserts: list[tuple[int, float]], recv: dict[int, float], timeout: float = 60.0) -> None:
    """Wait (at most ``timeout`` s) for the closes of the windows the probe closed."""
    want = {ts // 1000 * 1000 for ts, _ in inserts[:-2]}
    deadline = time.monotonic() + timeout
    while not want <= set(recv) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)


def probe(ex: Any, windows: int, recv: dict[int, float]) -> list[tuple[int, float]]:
    """Two rows per second until ``windows`` windows closed: (ts ms, INSERT returned)."""
    out: list[tuple[int, float]] = []
    nxt = time.perf_counter()
    v = 0
    while len({ts // 1000 for ts, _ in out}) <= windows:
        nxt += 0.5
        ts = int(time.time() * 1000)
        ex.execute(f"insert into probe values ({ts}, {v})")
        out.append((ts, time.perf_counter()))
        v += 1
        time.sleep(max(0.0, nxt - time.perf_counter()))
    return out


def print_phases(
    inserts: list[tuple[int, float]],
    recv: dict[int, float],
    marks: dict[int, dict[str, float]],
    progress: Any,
) -> None:
    """Per closed window: the phases of the module docstring; then their medians and p90s."""
    shift = time.time() - time.perf_counter()
    prog = {int(p["batchId"]): p for p in progress}
    rows: list[dict[str, float]] = []
    for ws in sorted({ts // 1000 * 1000 for ts, _ in inserts}):
        closer = next((t for ts, t in inserts if ts >= ws + 1000), None)
        b = marks.get(-ws, {}).get("batch")
        if closer is None or b is None or ws not in recv or int(b) not in prog:
            continue
        m, p = marks[int(b)], prog[int(b)]
        d = p["durationMs"]
        began = _iso_s(p["timestamp"]) - shift
        plan = (d.get("latestOffset", 0) + d.get("queryPlanning", 0) + d.get("walCommit", 0)) / 1000
        rows.append(
            {
                "wait": (began - closer) * 1000,
                "plan": plan * 1000,
                "job": (m["sink"] - began - plan) * 1000,
                "sink": (m["sent"] - m["sink"]) * 1000,
                "recv": (recv[ws] - m["sent"]) * 1000,
                "write": (m["write"] - m.get("write_began", m["sink"])) * 1000 if "write" in m else 0.0,
                "commit": d.get("triggerExecution", 0) - (m["end"] - began) * 1000,
                "total": (recv[ws] - closer) * 1000,
            }
        )
    print(f"closed windows measured: {len(rows)}")
    for k in ("wait", "plan", "job", "sink", "recv", "total", "write", "commit"):
        vals = sorted(r[k] for r in rows)
        if vals:
            print(
                f"  {k:7s} median {vals[len(vals) // 2]:7.1f} ms   p90 {vals[int(len(vals) * 0.9)]:7.1f} ms"
            )
    keys = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets", "triggerExecution")
    live = [p["durationMs"] for p in progress if p.get("numInputRows")]
    for k in keys:
        vals = sorted(d.get(k, 0) for d in live)
        if vals:
            print(
                f"  spark {k:17s} median {vals[len(vals) // 2]:6d} ms  p90 {vals[int(len(vals) * 0.9)]:6d} ms"
            )


def print_stages(ui_port: int) -> None:
    """The Spark jobs' stages from the UI's REST API: per kind of stage (the last words of its
    name), how many ran, their median wall time (submission -> completion), median tasks and
    executor run time; a stage whose name ends the same is one kind."""
    import urllib.request

    base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    with urllib.request.urlopen(base, timeout=10) as r:
        app = json.load(r)[0]["id"]
    with urllib.request.urlopen(f"{base}/{app}/stages?status=complete", timeout=30) as r:
        stages = json.load(r)
    kinds: dict[str, list[tuple[float, int, int]]] = {}
    for st in stages:
        if "submissionTime" not in st or "completionTime" not in st:
            continue
        wall = (
            _iso_s(st["completionTime"].replace("GMT", "")) - _iso_s(st["submissionTime"].replace("GMT", ""))
        ) * 1000
        reads, writes = st.get("shuffleReadBytes", 0), st.get("shuffleWriteBytes", 0)
        name = "state step (shuffle read)" if reads else "source read (shuffle write)" if writes else "other"
        kinds.setdefault(name, []).append((wall, int(st["numTasks"]), int(st.get("executorRunTime", 0))))
    for name, vals in sorted(kinds.items()):
        walls = sorted(v[0] for v in vals)
        runs = sorted(v[2] for v in vals)
        print(
            f"  stage {name[:40]:40s} n={len(vals):4d} wall median {walls[len(walls) // 2]:6.0f} ms "
            f"tasks {vals[-1][1]} executor run median {runs[len(runs) // 2]} ms"
        )


def _iso_s(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    main()
