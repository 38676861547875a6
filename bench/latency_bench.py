"""Latency of small writes as a user sees it (issue 17, "Latency"): INSERT returned over taosrest ->
WINDOW_CLOSE notification received on a WebSocket, and -> the output row readable over /rest/sql.

    PYTHONPATH=$PWD .venv/bin/python bench/latency_bench.py [--seconds 60] [--bg-rate 10000]
        [--port-base 18640] [--redis redis://127.0.0.1:6379/13] [--streams wc,ao,n,nll]

The bench starts a whole installation (``streams_app.launcher.Launcher``: Daphne, one Celery worker
with its SparkSession ``local[2]``, beat; a temporary var folder with the lake and SQLite; Redis at
``--redis``, flushed before and after) on ``--port-base`` (web), +1 (the bench's WebSocket
receiver), +10 (Spark UI). Over taosrest it creates a trigger table ``lat.probe (ts, v)`` and
the streams of ``--streams``, all over ``probe``, each with NOTIFY to the receiver:

- ``wc``: legacy ``TRIGGER WINDOW_CLOSE ... INTERVAL(1s)``;
- ``ao``: legacy ``TRIGGER AT_ONCE ... INTERVAL(1s)``;
- ``n``: 3.3.7 ``INTERVAL(1s) SLIDING(1s) FROM probe ... FROM %%trows``;
- ``nll``: the same with ``STREAM_OPTIONS(LOW_LATENCY_CALC)``.

Then, for ``--seconds``: a background writer inserts ``--bg-rate`` rows/s over taosrest into other
tables (``bg.m``, 10 subtables; the rate reached is printed), and the probe writer inserts one row
(``ts`` = the wall clock, ``v`` = its number) into ``probe`` every ``--every`` s, recording when
each INSERT returned. A window ``[ws, we)`` closes with the first probe row at ``ts >= we``:

- *notification* latency: that INSERT's return -> the WINDOW_CLOSE event of ``[ws, we)`` received;
- *readable* latency: for WINDOW_CLOSE and 3.3.7 streams, that INSERT's return -> the window's
  output row first seen by a REST poller (one thread per stream, a query every ``--poll`` s); for
  AT_ONCE, every probe row's INSERT return -> its window's row first seen with ``max(v)`` >= it.

Printed per stream: p50/p90/p99/max (ms) of both, and the windows whose notification never came.
Latencies are measured in this process on one monotonic clock; the poller's period bounds the
readable figure's resolution. Speed targets are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STREAMS = {
    "wc": "create stream lat_wc trigger window_close into o_wc as select _wstart ws, count(*) n, "
    "max(v) mv from probe interval(1s) notify ('{url}') on ('WINDOW_CLOSE')",
    "ao": "create stream lat_ao trigger at_once into o_ao as select _wstart ws, count(*) n, "
    "max(v) mv from probe interval(1s) notify ('{url}') on ('WINDOW_CLOSE')",
    "n": "create stream lat_n interval(1s) sliding(1s) from probe notify('{url}') on (window_close) "
    "into o_n as select _twstart ws, count(*) n, max(v) mv from %%trows",
    "nll": "create stream lat_nll interval(1s) sliding(1s) from probe stream_options(low_latency_calc) "
    "notify('{url}') on (window_close) into o_nll as select _twstart ws, count(*) n, max(v) mv "
    "from %%trows",
}
MAX_ROWS_PER_INSERT = 5_000  # about 110 KB of SQL, under TDengine's 1 MB maxSQLLength
TARGETS_MS = {"notify p50": 100, "notify p99": 250, "readable p99": 500}


class Receiver:
    """The WebSocket server NOTIFY sends to: ``closes[(stream, window start ms)]`` = monotonic
    time of the first WINDOW_CLOSE event received for it."""

    def __init__(self, port: int) -> None:
        from websockets.sync.server import serve

        self.closes: dict[tuple[str, int], float] = {}
        self.messages = 0
        self._lock = threading.Lock()
        self.server = serve(self._handler, "127.0.0.1", port, max_size=None)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self, ws: Any) -> None:
        for msg in ws:
            now = time.monotonic()
            body = json.loads(msg)
            with self._lock:
                self.messages += 1
                for s in body["streams"]:
                    for e in s["events"]:
                        if e["eventType"] == "WINDOW_CLOSE":
                            self.closes.setdefault((s["streamName"], int(e["windowStart"])), now)

    def stop(self) -> None:
        self.server.shutdown()


def rest_client(url: str, db: str | None = None) -> Any:
    """A taosrest client of the installation (root, UTC)."""
    from taosrest import RestClient

    return RestClient(url, user="root", password="taosdata", database=db, timezone="UTC", timeout=60)


def background_writer(url: str, rate: int, stop: threading.Event, counter: list[int]) -> None:
    """Insert ``rate`` rows/s into ``bg.m``'s 10 subtables over taosrest until ``stop``: every
    round sends the rows due since the last one (at least 100 ms apart), spread over the subtables;
    ``counter[0]`` counts the rows acknowledged."""
    rest = rest_client(url, "bg")
    t_start = last = time.monotonic()
    ts = int(time.time() * 1_000_000)  # a microsecond database: rows 1 us apart in each subtable
    sent = 0
    while not stop.is_set():
        now = time.monotonic()
        due = int((now - t_start) * rate) - sent
        if due < 100 or now - last < 0.1:
            time.sleep(0.02)
            continue
        last = now
        due = min(due, MAX_ROWS_PER_INSERT)  # a writer falling behind catches up over rounds
        per = [due // 10 + (1 if i < due % 10 else 0) for i in range(10)]
        parts = []
        for d, n in enumerate(per):
            vals = " ".join(f"({ts + k}, {k % 97})" for k in range(n))
            parts.append(f"b{d} values {vals}")
        ts += max(per) + 1
        sent += due
        try:
            rest.sql("insert into " + " ".join(parts))
        except Exception as e:  # counted as not written; the run goes on
            print(f"background insert failed: {e}", file=sys.stderr, flush=True)
            continue
        counter[0] += due


def setup(url: str, names: list[str], hook: str) -> None:
    """Databases, tables and streams over taosrest."""
    rest = rest_client(url)
    rest.sql("create database if not exists lat precision 'ms'")
    rest.sql("create database if not exists bg precision 'us'")
    lat, bg = rest_client(url, "lat"), rest_client(url, "bg")
    lat.sql("create table probe (ts timestamp, v int)")
    bg.sql("create stable m (ts timestamp, v int) tags (dev int)")
    bg.sql("create table " + " ".join(f"b{i} using m tags ({i})" for i in range(10)))
    for name in names:
        lat.sql(STREAMS[name].format(url=hook))


def wait_running(url: str, names: list[str], timeout: float = 240.0) -> None:
    """Wait until every stream has produced output for a warm-up row (its query runs)."""
    lat = rest_client(url, "lat")
    deadline = time.monotonic() + timeout
    pending = set(names)
    t0 = int(time.time() * 1000)
    lat.sql(f"insert into probe values ({t0 - 5000}, -1)")
    while pending and time.monotonic() < deadline:
        lat.sql(f"insert into probe values ({int(time.time() * 1000)}, -1)")
        for n in list(pending):
            try:
                if lat.sql(f"select count(*) from o_{n}")["data"][0][0] > 0:
                    pending.discard(n)
            except Exception:  # the output table does not exist yet
                pass
        time.sleep(1.0)
    if pending:
        raise RuntimeError(f"streams not running after {timeout:.0f}s: {sorted(pending)}")


def probe_writer(
    url: str, every: float, stop: threading.Event, inserts: list[tuple[int, int, float]]
) -> None:
    """One row into ``lat.probe`` every ``every`` s until ``stop``: ``inserts`` gets (v, ts ms,
    monotonic time the INSERT returned)."""
    lat = rest_client(url, "lat")
    v = 0
    nxt = time.monotonic()
    while not stop.is_set():
        nxt += every
        ts = int(time.time() * 1000)
        lat.sql(f"insert into probe values ({ts}, {v})")
        inserts.append((v, ts, time.monotonic()))
        v += 1
        time.sleep(max(0.0, nxt - time.monotonic()))


def poller(
    url: str, name: str, period: float, stop: threading.Event, seen: dict[int, tuple[int, float]]
) -> None:
    """Poll stream ``name``'s output over /rest/sql every ``period`` s until ``stop``:
    ``seen[window start ms]`` = (highest ``max(v)`` seen, monotonic time it was first seen)."""
    lat = rest_client(url, "lat")
    while not stop.is_set():
        try:
            rows = lat.sql(f"select ws, mv from o_{name} order by ws desc limit 50")["data"]
        except Exception:  # a poll failing under load is retried
            rows = []
        now = time.monotonic()
        for ws, mv in rows:
            key = int(ws.timestamp() * 1000) if hasattr(ws, "timestamp") else int(ws)
            if mv is not None and (key not in seen or seen[key][0] < mv):
                seen[key] = (int(mv), now)
        time.sleep(period)


def drain(
    names: list[str], inserts: list[tuple[int, int, float]], receiver: Receiver, timeout: float
) -> None:
    """After the writers stopped: wait (at most ``timeout`` s) until every window closed by a
    probe row has its notification from every stream (a lagging stream's latencies are then
    measured rather than counted missing), then 2 s more for the pollers."""
    wanted = {(f"lat_{n}", ws) for n in names for ws in closing_inserts(inserts)}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not wanted <= set(receiver.closes):
        time.sleep(0.2)
    time.sleep(2.0)


def pct(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))]


def closing_inserts(inserts: list[tuple[int, int, float]]) -> dict[int, float]:
    """Window start (ms, 1 s windows) -> return time of the INSERT that closed it: the first probe
    row at ``ts >= ws + 1000``, for windows that held probe rows and were closed by a later one."""
    out: dict[int, float] = {}
    windows = sorted({ts // 1000 * 1000 for _v, ts, _t in inserts})
    for ws in windows:
        closer = next((t for _v, ts, t in inserts if ts >= ws + 1000), None)
        if closer is not None:
            out[ws] = closer
    return out


def measure(
    name: str,
    inserts: list[tuple[int, int, float]],
    closes: dict[tuple[str, int], float],
    seen: dict[int, tuple[int, float]],
) -> dict[str, Any]:
    """Latencies (ms) of one stream: notification and readable, and the missing notifications."""
    closers = closing_inserts(inserts)
    stream = f"lat_{name}"
    notify = [(closes[(stream, ws)] - t) * 1000 for ws, t in closers.items() if (stream, ws) in closes]
    missing = sorted(ws for ws in closers if (stream, ws) not in closes)
    readable: list[float] = []
    if name == "ao":  # every row: its window's row showing it
        for v, ts, t in inserts:
            s = seen.get(ts // 1000 * 1000)
            if s is not None and s[0] >= v:
                readable.append((s[1] - t) * 1000)
    else:
        readable = [(seen[ws][1] - t) * 1000 for ws, t in closers.items() if ws in seen]
    return {
        "stream": name,
        "notify": notify,
        "readable": readable,
        "missing": missing,
        "windows": len(closers),
    }


def summary(values: list[float]) -> str:
    """``n=.. p50 .. p90 .. p99 .. max .. ms`` of latencies in ms ("n=0" when empty)."""
    if not values:
        return "n=0"
    return (
        f"n={len(values)} p50 {pct(values, 0.5):.0f} p90 {pct(values, 0.9):.0f} "
        f"p99 {pct(values, 0.99):.0f} max {max(values):.0f} ms"
    )


def report(results: list[dict[str, Any]], bg_rows: int, seconds: float) -> None:
    """Print per stream the percentiles, the missing notifications and the targets (never asserted)."""
    print(f"background load reached: {bg_rows / seconds:,.0f} rows/s over taosrest", flush=True)
    for r in results:
        print(f"[{r['stream']}] windows closed by a probe row: {r['windows']}")
        print(f"  INSERT returned -> WINDOW_CLOSE received: {summary(r['notify'])}")
        print(f"  INSERT returned -> output row readable over REST: {summary(r['readable'])}")
        print(f"  missing notifications (after --drain): {len(r['missing'])} {r['missing'][:5]}")
        if r["notify"]:
            ok = (
                pct(r["notify"], 0.5) <= TARGETS_MS["notify p50"]
                and pct(r["notify"], 0.99) <= TARGETS_MS["notify p99"]
            )
            print(f"  target notify p50 <= 100 ms, p99 <= 250 ms: {'met' if ok else 'NOT met'}")
        if r["readable"]:
            ok = pct(r["readable"], 0.99) <= TARGETS_MS["readable p99"]
            print(f"  target readable p99 <= 500 ms: {'met' if ok else 'NOT met'}")
    print(f"load average: {os.getloadavg()}", flush=True)


def parse() -> argparse.Namespace:
    """The command line (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--bg-rate", type=int, default=10_000)
    p.add_argument("--every", type=float, default=0.5)
    p.add_argument("--poll", type=float, default=0.1)
    p.add_argument("--drain", type=float, default=60.0, help="max seconds to wait for late notifications")
    p.add_argument("--port-base", type=int, default=18640)
    p.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    p.add_argument("--streams", default="wc,ao,n,nll")
    p.add_argument("--keep", action="store_true", help="keep the var folder (logs) and print its path")
    return p.parse_args()


def main() -> None:
    """Start the installation, create the streams, measure, report; stop everything it started."""
    from streams_app.launcher import Launcher, redis_alive

    args = parse()
    names = [n for n in args.streams.split(",") if n]
    if not redis_alive(args.redis):
        sys.exit(f"Redis does not answer at {args.redis}")
    import redis

    redis.Redis.from_url(args.redis).flushdb()
    var = Path(tempfile.mkdtemp(prefix="tdweb-latency-"))
    port = args.port_base
    env = {
        "TDWEB_VAR": str(var),
        "TDWEB_LAKE": str(var / "lake"),
        "DATABASE_URL": f"sqlite:///{var / 'tdweb.sqlite3'}",
        "TDWEB_CHANNEL_PREFIX": f"tdweb-latency-{port}",
        "SPARK_MASTER": "local[2]",
        "PYSPARK_SUBMIT_ARGS": f"--conf spark.ui.port={port + 10} pyspark-shell",
    }
    launcher = Launcher(
        host="127.0.0.1", port=port, redis_url=args.redis, slots=8, quiet=True, var=var, extra_env=env
    )
    receiver = Receiver(port + 1)
    url = f"http://127.0.0.1:{port}"
    try:
        launcher.start()
        setup(url, names, f"ws://127.0.0.1:{port + 1}/notify")
        wait_running(url, names)
        print(f"streams running: {names}; measuring {args.seconds:.0f} s", flush=True)
        results = run(args, url, names, receiver)
        report(results[0], results[1], args.seconds)
    finally:
        receiver.stop()
        launcher.stop()
        redis.Redis.from_url(args.redis).flushdb()
        if args.keep:
            print(f"var folder kept: {var}")
        else:
            shutil.rmtree(var, ignore_errors=True)


def run(
    args: argparse.Namespace, url: str, names: list[str], receiver: Receiver
) -> tuple[list[dict[str, Any]], int]:
    """The measured part: background writer, probe writer, pollers; then 3 s for the last
    results; returns the per-stream measurements and the background rows written."""
    stop, stop_poll = threading.Event(), threading.Event()
    counter = [0]
    inserts: list[tuple[int, int, float]] = []
    seen: dict[str, dict[int, tuple[int, float]]] = {n: {} for n in names}
    threads = [
        threading.Thread(target=background_writer, args=(url, args.bg_rate, stop, counter), daemon=True)
    ]
    threads.append(threading.Thread(target=probe_writer, args=(url, args.every, stop, inserts), daemon=True))
    pollers = [
        threading.Thread(target=poller, args=(url, n, args.poll, stop_poll, seen[n]), daemon=True)
        for n in names
    ]
    for t in threads + pollers:
        t.start()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    drain(names, inserts, receiver, args.drain)
    stop_poll.set()
    for t in pollers:
        t.join(timeout=10)
    return [measure(n, inserts, receiver.closes, seen[n]) for n in names], counter[0]


if __name__ == "__main__":
    main()
