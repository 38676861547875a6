"""Schemaless ingest over ``POST /influxdb/v1/write`` (TDengine taosAdapter's InfluxDB v1 endpoint,
issue 17 "Ingest"): 10,000-line requests, as Telegraf batches them, from 1, 4 and 16 concurrent
clients.

    .venv/bin/python bench/influx_bench.py [--url http://127.0.0.1:8000] [--requests 4]
        [--lines 10000] [--clients 1,4,16] [--port 18300] [--redis redis://127.0.0.1:6379/5]

Without ``--url`` it starts its own tdweb (Daphne, one process) on ``--port`` over a fresh lake and
SQLite metadata DB in a temporary directory (migrated, ``root`` / ``taosdata`` bootstrapped), and
stops it at the end. Workload: ``cpu,host=h<n>,region=r<n % 4> usage_user=<f>,usage_system=<f>,
busy=<n>i <ns>``: 100 hosts x 100 timestamps per request, each request's timestamps later than
the previous round's, every client its own hosts (clients write different subtables of one
supertable, as collectors do). One
warm-up request creates the supertable and the subtables before timing. Prints, per client count,
rows/s (rows acknowledged with 204 / wall time) and the p50 / p99 request latency; a request that
is not answered 204 is counted and printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
HOSTS = 100
T0 = 1_735_689_600_000_000_000  # 2025-01-01 UTC, ns


def body(client: int, block: int, lines: int) -> str:
    """``lines`` lines: HOSTS hosts of client ``client`` x (lines / HOSTS) timestamps of time block
    ``block`` (1 s apart; blocks never overlap, a larger block is later)."""
    per_host = max(1, lines // HOSTS)
    out = []
    for k in range(per_host):
        ts = T0 + (block * per_host + k) * 1_000_000_000
        for h in range(HOSTS):
            host = client * HOSTS + h
            out.append(
                f"cpu,host=h{host},region=r{host % 4} usage_user={(k * 7 + h) % 100}.5,"
                f"usage_system={(k + h) % 10}.25,busy={k * h}i {ts}"
            )
    return "\n".join(out)


def post(url: str, text: str) -> tuple[int, float]:
    t = time.perf_counter()
    r = requests.post(
        f"{url}/influxdb/v1/write",
        params={"db": "influx_bench", "precision": "ns", "u": "root", "p": "taosdata"},
        data=text.encode(),
        timeout=600,
    )
    return r.status_code, time.perf_counter() - t


def run(url: str, clients: int, n_requests: int, lines: int, base: int, epoch: int) -> None:
    """``clients`` threads, each posting ``n_requests`` prepared requests one after the other;
    request ``r`` of client ``c`` writes time block ``epoch + r * 1000 + c`` (rounds of requests
    move forward in time, as collectors' do)."""
    bodies = [
        [body(base + c, epoch + r * 1000 + c, lines) for r in range(n_requests)] for c in range(clients)
    ]
    rows_per = bodies[0][0].count("\n") + 1
    results: list[tuple[int, float]] = []
    lock = threading.Lock()

    def worker(c: int) -> None:
        for text in bodies[c]:
            res = post(url, text)
            with lock:
                results.append(res)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    ok = [d for s, d in results if s == 204]
    bad = len(results) - len(ok)
    lat = sorted(ok)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
    print(
        f"clients={clients:>2}  requests={len(results):>3}  rows={len(ok) * rows_per:>8,}  "
        f"wall={wall:6.2f} s  rows/s={len(ok) * rows_per / wall:>10,.0f}  "
        f"p50={statistics.median(lat) if lat else float('nan'):.3f} s  p99={p99:.3f} s  not-204={bad}",
        flush=True,
    )


def start_server(port: int, redis_url: str, var: Path) -> subprocess.Popen[bytes]:
    """A fresh tdweb (Daphne) on 127.0.0.1:``port`` with its state under ``var``."""
    env = {**os.environ, "TDWEB_VAR": str(var), "REDIS_URL": redis_url, "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    py = sys.executable
    for args in (["migrate", "-v", "0"], ["bootstrap"]):
        cmd = [py, str(ROOT / "manage.py"), *args]
        subprocess.run(cmd, env=env, check=True, cwd=ROOT, capture_output=True)
    proc = subprocess.Popen(
        [py, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "tdweb.asgi:application"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(var / "daphne.log", "wb"),  # noqa: SIM115
    )
    for _ in range(120):
        try:
            requests.get(f"http://127.0.0.1:{port}/favicon.ico", timeout=10)
            return proc
        except requests.RequestException:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("tdweb did not start; see " + str(var / "daphne.log"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="")
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--port", type=int, default=18300)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    a = ap.parse_args()
    proc = None
    with tempfile.TemporaryDirectory(prefix="influx-bench-") as tmp:
        url = a.url
        if not url:
            proc = start_server(a.port, a.redis, Path(tmp))
            url = f"http://127.0.0.1:{a.port}"
        try:
            r = requests.post(
                f"{url}/rest/sql",
                data=b"CREATE DATABASE IF NOT EXISTS influx_bench PRECISION 'ns'",
                auth=("root", "taosdata"),
                timeout=60,
            )
            assert r.json().get("code") == 0, r.text
            base = 0
            for i, n in enumerate(int(x) for x in a.clients.split(",")):
                epoch = (i + 1) * 100_000
                # warm-up: create the supertable and these clients' subtables (not timed; earlier)
                for c in range(n):
                    status, _ = post(url, body(base + c, epoch - 1000 + c, a.lines))
                    assert status == 204, status
                run(url, n, a.requests, a.lines, base, epoch)
                base += n
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)


if __name__ == "__main__":
    main()
