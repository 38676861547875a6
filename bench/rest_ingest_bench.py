"""REST and line-protocol ingest through the real web server (issue 17, "Ingest" targets).

    .venv/bin/python bench/rest_ingest_bench.py [--seconds 20] [--rows 10000] [--clients 1,4,16]
        [--small-clients 20] [--small-rows 10] [--port 18620] [--redis redis://127.0.0.1:6379/12]
        [--only big,line,small] [--web-processes 1] [--prebuild 640]

Starts its own tdweb (``--web-processes`` Daphne processes on one listening socket, as ``manage.py
up`` starts them: ``Launcher.start_web``) on 127.0.0.1:``--port`` over a fresh lake and SQLite
metadata DB in a temporary directory, then drives it with ``taosrest`` clients (the REST protocol
TDengine's clients use), each client a thread of this process:

(big)   taosBenchmark-style statements of ``--rows`` rows: ``INSERT INTO d<n> USING meters TAGS
        (<group>, '<location>') VALUES (...)... d<n+1> USING ... VALUES ...``, 10 subtables x
        ``--rows / 10`` rows, every client its own subtables, each statement later than the
        client's previous one; for each client count of ``--clients`` (1, 4, 16).
(line)  the same rows as InfluxDB line protocol through ``POST /influxdb/v1/write`` (``meters,
        groupid=<g>,location=<l> current=<f>,voltage=<n>i,phase=<f> <ms>``, precision ms).
(small) ``--small-clients`` clients sending ``--small-rows``-row INSERTs to their own subtable.

Each workload runs ``--seconds`` (a client finishes the request it has started) into its own
supertable. The big statements and line bodies are built before the clock starts (``--prebuild`` in
all, shared among the clients; a client that runs out builds the rest as it goes, and the bench
says how many), since taosBenchmark builds its SQL in C: the figures are the server's, with only
the HTTP client of this process on the same cores. Prints rows/s (acknowledged rows / wall time)
and p50 / p99 acknowledgement latency; then checks that every acknowledged row is in the table
(``SELECT COUNT(*)`` equals the acknowledged rows, and a sampled acknowledged row reads back with
its values) and prints it. A request that fails is counted and printed (its rows are not expected).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests
import taosrest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from streams_app.launcher import Launcher

T0 = 1_735_689_600_000  # 2025-01-01 UTC, ms
DB = "ingest_bench"
TABLES_PER_STATEMENT = 10


@dataclass
class Tally:
    """What the clients of one workload got: latencies (s) of acknowledged requests, acknowledged
    rows, failed requests, and one sampled acknowledged row ``(table, ts, current)`` per request."""

    lat: list[float] = field(default_factory=list)
    rows: int = 0
    failed: int = 0
    samples: list[tuple[str, int, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def current(sub: int, k: int) -> float:
    """The ``current`` value of row ``k`` of subtable ``sub`` (exact in FLOAT: quarters)."""
    return ((sub * 7 + k) % 400) / 4


def big_statement(stable: str, subs: list[int], block: int, per: int) -> tuple[str, int]:
    """One taosBenchmark-style INSERT: ``per`` rows for each subtable of ``subs`` at time block
    ``block`` (1 ms apart, blocks never overlap). Returns (SQL, first ts)."""
    base = T0 + block * per
    parts = ["INSERT INTO"]
    for s in subs:
        vals = "".join(f"({base + k},{current(s, k)},{200 + k % 40},{(k % 10) / 8})" for k in range(per))
        parts.append(f"{stable}_d{s} USING {stable} TAGS ({s % 10}, 'loc{s % 7}') VALUES {vals}")
    return " ".join(parts), base


def line_body(stable: str, subs: list[int], block: int, per: int) -> tuple[str, int]:
    """The rows of :func:`big_statement` as line protocol (ms)."""
    base = T0 + block * per
    out = []
    for s in subs:
        for k in range(per):
            out.append(
                f"{stable},groupid={s % 10},location=loc{s % 7},sub=s{s} current={current(s, k)},"
                f"voltage={200 + k % 40}i,phase={(k % 10) / 8} {base + k}"
            )
    return "\n".join(out), base


def drive(n: int, seconds: float, request: Callable[[int, int], tuple[int, tuple[str, int, float]]]) -> tuple:
    """``n`` client threads calling ``request(client, i)`` (i = 0, 1, ...) until ``seconds`` are
    over; ``request`` returns (rows acknowledged, one sampled row) or raises. Returns (Tally,
    wall seconds)."""
    tally = Tally()
    stop = time.perf_counter() + seconds

    def client(c: int) -> None:
        i = 0
        while time.perf_counter() < stop:
            t = time.perf_counter()
            try:
                rows, sample = request(c, i)
            except Exception as e:
                with tally.lock:
                    tally.failed += 1
                    if tally.failed <= 3:
                        print(f"  request failed: {str(e)[:200]}", flush=True)
            else:
                d = time.perf_counter() - t
                with tally.lock:
                    tally.lat.append(d)
                    tally.rows += rows
                    tally.samples.append(sample)
            i += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(n)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return tally, time.perf_counter() - t0


def report(what: str, n: int, tally: Tally, wall: float) -> None:
    lat = sorted(tally.lat)

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(len(lat) * p))] * 1000 if lat else float("nan")

    print(
        f"{what:<6} clients={n:>2}  requests={len(lat):>5}  rows={tally.rows:>9,}  wall={wall:6.1f} s  "
        f"rows/s={tally.rows / wall:>9,.0f}  p50={q(0.5):7.1f} ms  p99={q(0.99):7.1f} ms  "
        f"failed={tally.failed}",
        flush=True,
    )


def verify(conn: taosrest.TaosRestConnection, stable: str, tally: Tally, by_tag: bool = False) -> None:
    """Every acknowledged row is stored: COUNT(*) of the supertable equals the acknowledged rows
    (no statement overlaps another's keys), and up to 20 sampled acknowledged rows read back."""
    got = conn.query(f"SELECT COUNT(*) FROM {stable}").data[0][0]
    bad = 0
    for table, ts, cur in random.sample(tally.samples, min(20, len(tally.samples))):
        # schemaless tables name their timestamp _ts (TDengine's schemaless rules)
        where = f"{stable} WHERE sub = 's{table}' AND _ts" if by_tag else f"{stable}_d{table} WHERE ts"
        r = conn.query(f"SELECT current FROM {where} = {ts}").data
        bad += not (len(r) == 1 and abs(r[0][0] - cur) < 1e-6)
    ok = got == tally.rows and bad == 0
    print(f"  check {stable}: stored={got:,} acknowledged={tally.rows:,} spot-check mismatches={bad} -> "
          f"{'OK' if ok else 'MISSING ROWS'}", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="per workload and client count")
    ap.add_argument("--rows", type=int, default=10_000, help="rows per big statement / line request")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--small-clients", type=int, default=20)
    ap.add_argument("--small-rows", type=int, default=10)
    ap.add_argument("--only", default="big,line,small")
    ap.add_argument("--port", type=int, default=18620)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    ap.add_argument("--web-processes", type=int, default=1, help="TDWEB_WEB_PROCESSES")
    ap.add_argument("--prebuild", type=int, default=640, help="requests built before timing")
    a = ap.parse_args()
    only = set(a.only.split(","))
    per = max(1, a.rows // TABLES_PER_STATEMENT)
    PREBUILD[0] = a.prebuild
    with tempfile.TemporaryDirectory(prefix="rest-ingest-bench-") as tmp:
        proc = start_web(a.port, a.redis, Path(tmp), a.web_processes)
        url = f"http://127.0.0.1:{a.port}"
        try:
            admin = taosrest.connect(url=url, user="root", password="taosdata", timeout=600)
            admin.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
            conn = taosrest.connect(url=url, user="root", password="taosdata", database=DB, timeout=600)
            for n in [int(x) for x in a.clients.split(",")]:
                if "big" in only:
                    run_big(conn, url, n, a.seconds, per)
                if "line" in only:
                    run_line(conn, url, n, a.seconds, per)
            if "small" in only:
                run_small(conn, url, a.small_clients, a.seconds, a.small_rows)
        finally:
            proc.stop()


PREBUILD = [640]


def start_web(port: int, redis_url: str, var: Path, processes: int) -> Launcher:
    """A fresh tdweb web tier (migrations, ``root``, ``processes`` Daphne processes) on
    127.0.0.1:``port`` with its state under ``var``; only the web, no worker."""
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("ASGI_THREADS", "32")  # as the launcher and the image set it
    launcher = Launcher(
        host="127.0.0.1", port=port, redis_url=redis_url, quiet=True, var=var, web_processes=processes
    )
    launcher.prepare()
    launcher.start_web()
    launcher.wait_web(timeout=120)
    return launcher


def prebuilt(n: int, build: Callable[[int, int], tuple[str, int]]) -> Callable[[int, int], tuple[str, int]]:
    """``build(client, i)`` for ``n`` clients, the first ``PREBUILD / n`` of each client built now;
    the returned function pops them (then builds the rest and counts them in ``prebuilt.late``)."""
    each = max(1, PREBUILD[0] // n)
    ready = {(c, i): build(c, i) for c in range(n) for i in range(each)}
    late = [0]

    def get(c: int, i: int) -> tuple[str, int]:
        got = ready.pop((c, i), None)
        if got is None:
            late[0] += 1
            return build(c, i)
        return got

    get.late = late  # type: ignore[attr-defined]
    return get


def say_late(get: Callable[[int, int], tuple[str, int]]) -> None:
    late = get.late[0]  # type: ignore[attr-defined]
    if late:
        print(f"  ({late} requests were built during the run: raise --prebuild)", flush=True)


def run_big(conn: taosrest.TaosRestConnection, url: str, n: int, seconds: float, per: int) -> None:
    stable = f"meters_c{n}"
    conn.execute(
        f"CREATE STABLE {stable} (ts TIMESTAMP, current FLOAT, voltage INT, phase FLOAT) "
        "TAGS (groupid INT, location BINARY(24))"
    )
    clients = [
        taosrest.connect(url=url, user="root", password="taosdata", database=DB, timeout=600)
        for _ in range(n)
    ]

    def subs_of(c: int) -> list[int]:
        return [c * TABLES_PER_STATEMENT + j for j in range(TABLES_PER_STATEMENT)]

    get = prebuilt(n, lambda c, i: big_statement(stable, subs_of(c), i, per))

    def request(c: int, i: int) -> tuple[int, tuple[str, int, float]]:
        subs = subs_of(c)
        sql, base = get(c, i) if i < 10**6 else big_statement(stable, subs, i, per)
        rows = clients[c].execute(sql)
        k = random.randrange(per)
        return int(rows or 0), (str(subs[-1]), base + k, current(subs[-1], k))

    request(0, 10**6)  # warm-up: the subtables of client 0 (its rows are far later; counted below)
    warm = Tally(rows=TABLES_PER_STATEMENT * per)
    tally, wall = drive(n, seconds, request)
    report("big", n, tally, wall)
    say_late(get)
    tally.rows += warm.rows
    verify(conn, stable, tally)


def run_line(conn: taosrest.TaosRestConnection, url: str, n: int, seconds: float, per: int) -> None:
    stable = f"lines_c{n}"
    session = [requests.Session() for _ in range(n)]

    def subs_of(c: int) -> list[int]:
        return [c * TABLES_PER_STATEMENT + j for j in range(TABLES_PER_STATEMENT)]

    get = prebuilt(n, lambda c, i: line_body(stable, subs_of(c), i, per))

    def request(c: int, i: int) -> tuple[int, tuple[str, int, float]]:
        subs = subs_of(c)
        body, base = get(c, i) if i < 10**6 else line_body(stable, subs, i, per)
        r = session[c].post(
            f"{url}/influxdb/v1/write",
            params={"db": DB, "precision": "ms", "u": "root", "p": "taosdata"},
            data=body.encode(),
            timeout=600,
        )
        if r.status_code != 204:
            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
        k = random.randrange(per)
        return len(subs) * per, (str(subs[-1]), base + k, current(subs[-1], k))

    request(0, 10**6)
    tally, wall = drive(n, seconds, request)
    report("line", n, tally, wall)
    say_late(get)
    tally.rows += TABLES_PER_STATEMENT * per
    verify(conn, stable, tally, by_tag=True)


def run_small(conn: taosrest.TaosRestConnection, url: str, n: int, seconds: float, rows: int) -> None:
    stable = "small"
    conn.execute(
        f"CREATE STABLE {stable} (ts TIMESTAMP, current FLOAT, voltage INT, phase FLOAT) TAGS (c INT)"
    )
    clients = [
        taosrest.connect(url=url, user="root", password="taosdata", database=DB, timeout=600)
        for _ in range(n)
    ]
    for c in range(n):  # the subtables exist before timing, as a fleet's do
        conn.execute(f"CREATE TABLE {stable}_d{c} USING {stable} TAGS ({c})")

    def request(c: int, i: int) -> tuple[int, tuple[str, int, float]]:
        base = T0 + i * rows
        vals = "".join(f"({base + k},{current(c, k)},{200 + k},{k / 8})" for k in range(rows))
        got = clients[c].execute(f"INSERT INTO {stable}_d{c} VALUES {vals}")
        k = random.randrange(rows)
        return int(got or 0), (str(c), base + k, current(c, k))

    tally, wall = drive(n, seconds, request)
    report("small", n, tally, wall)
    verify(conn, stable, tally)


if __name__ == "__main__":
    main()
