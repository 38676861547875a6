"""Several web processes on one listening socket (``Launcher.start_web``, ``TDWEB_WEB_PROCESSES``):
both serve, a killed one leaves the port answering while the launcher restarts it, and writers in
the two processes to one table lose and duplicate nothing (Delta's optimistic concurrency, with
the writers of one host queued on the table's advisory lock)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from streams_app.launcher import Launcher, redis_alive
from tests.security.test_launcher_restart import _answers, _free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

BASE = 1_700_000_000_000


def _pid(launcher: Launcher, name: str) -> int:
    return next(p.pid for n, p in launcher.procs if n == name and p.poll() is None)


def _cpu_ticks(pid: int) -> int:
    """utime + stime of a process (clock ticks), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@pytest.fixture
def launcher(tmp_path):  # type: ignore[no-untyped-def]
    redis_url = os.environ.get("TDWEB_LAUNCHER_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
    if not redis_alive(redis_url):
        pytest.fail(f"Redis is not reachable at {redis_url}: this test uses a real Redis")
    port = _free_port()
    extra = {
        "TDWEB_LAKE": str(tmp_path / "var" / "lake"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'var' / 'tdweb.sqlite3'}",
        "TDWEB_CHANNEL_PREFIX": f"tdweb-webprocs-{port}",
    }
    la = Launcher(
        host="127.0.0.1",
        port=port,
        redis_url=redis_url,
        quiet=True,
        var=tmp_path / "var",
        extra_env=extra,
        web_processes=2,
    )
    try:
        la.prepare()
        la.start_web()
        la.wait_web(timeout=120)
        yield la
    finally:
        la.stop()


def test_two_processes_share_the_socket_and_survive_one_kill(launcher: Launcher) -> None:
    from taosrest import RestClient

    url = f"http://{launcher.host}:{launcher.port}"
    assert [n for n, _ in launcher.procs] == ["web", "web2"]
    for _, p in launcher.procs:
        assert "--fd" in p.args and "-p" not in p.args  # type: ignore[operator]
    rest = RestClient(url, user="root", password="taosdata", timeout=30)
    rest.sql("CREATE DATABASE wp")
    rest.sql("CREATE TABLE wp.t (ts TIMESTAMP, v INT)")

    # both processes take connections: each new connection goes to one of them
    before = {n: _cpu_ticks(_pid(launcher, n)) for n in ("web", "web2")}
    for i in range(120):
        RestClient(url, user="root", password="taosdata", timeout=30).sql(f"SELECT {i}")
    after = {n: _cpu_ticks(_pid(launcher, n)) for n in ("web", "web2")}
    assert all(after[n] > before[n] for n in after), (before, after)

    # writers in both processes, one table: every acknowledged row once, none lost
    acked: list[int] = []
    lock = threading.Lock()
    failures: list[str] = []

    def write(c: int) -> None:
        client = RestClient(url, user="root", password="taosdata", timeout=60)
        for i in range(30):
            k = c * 1000 + i
            rows = ", ".join(f"({BASE + k * 10 + j}, {k})" for j in range(10))
            try:
                client.sql(f"INSERT INTO wp.t VALUES {rows}")
            except Exception as e:  # a failed write must not be counted, and is a failure here
                failures.append(str(e)[:200])
                continue
            with lock:
                acked.append(k)

    threads = [threading.Thread(target=write, args=(c,)) for c in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    got = rest.sql("SELECT v, COUNT(*) FROM wp.t GROUP BY v")["data"]
    assert {int(v): int(n) for v, n in got} == {k: 10 for k in acked}
    assert len(acked) == 180

    # kill -9 of one process: the other keeps answering on the same port at once
    os.killpg(_pid(launcher, "web"), signal.SIGKILL)
    assert _answers(url)
    rest.sql(f"INSERT INTO wp.t VALUES ({BASE - 1}, -1)")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        launcher.supervise()
        alive = any(n == "web" and p.poll() is None for n, p in launcher.procs)
        if launcher.children["web"].restarts and alive:
            break
        time.sleep(0.5)
    assert launcher.children["web"].restarts == 1
    assert _answers(url)
    assert rest.sql("SELECT COUNT(*) FROM wp.t")["data"][0][0] == 1801
