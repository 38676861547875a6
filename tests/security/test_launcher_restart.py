"""The launcher restarts children that die (streams_app.launcher): backoff rules as a unit, then a real
``manage.py up`` whose web process is killed with SIGKILL while a client writes over /rest/sql."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from streams_app.launcher import RESTART_MAX_S, STABLE_S, Launcher, redis_alive

ROOT = Path(__file__).resolve().parents[2]
EXIT_3 = [sys.executable, "-c", "import sys; sys.exit(3)"]


def _exited(launcher: Launcher, name: str) -> None:
    for n, p in launcher.procs:
        if n == name:
            p.wait(timeout=30)


def test_backoff_doubles_to_a_cap_and_resets_after_a_stable_run(tmp_path) -> None:
    launcher = Launcher(host="127.0.0.1", port=1, redis_url="redis://127.0.0.1:1/0", quiet=True, var=tmp_path)
    try:
        launcher._spawn("beat", EXIT_3)
        delays = []
        for _ in range(8):
            _exited(launcher, "beat")
            now = time.monotonic()
            launcher.supervise(now)  # notices the exit, schedules the restart
            child = launcher.children["beat"]
            assert child.restart_at is not None
            delays.append(round(child.restart_at - now))
            old = launcher.procs[0][1].pid
            launcher.supervise(child.restart_at - 0.01)
            assert launcher.procs[0][1].pid == old  # not before its time
            launcher.supervise(child.restart_at)
            assert launcher.procs[0][1].pid != old  # restarted with the same command
        assert delays == [1, 2, 4, 8, 16, 32, 60, 60] and RESTART_MAX_S == 60
        _exited(launcher, "beat")
        launcher.children["beat"].started_at = time.monotonic() - STABLE_S  # it had run a minute
        now = time.monotonic()
        launcher.supervise(now)
        assert round(launcher.children["beat"].restart_at - now) == 1
        log = (tmp_path / "log" / "launcher.log").read_text()
        assert (
            log.count("exited with code 3") == 9 and "restarted beat (restart 8, previous exit code 3)" in log
        )
    finally:
        launcher.stop()


# ---------------------------------------------------------------------- a real installation


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _web_pid(var: Path) -> int | None:
    pids = re.findall(r"started web \(pid (\d+)\)", (var / "log" / "launcher.log").read_text())
    return int(pids[-1]) if pids else None


def _kill_leftovers(var: Path) -> None:
    """SIGKILL to the process group of every child the launcher logged that is still alive and
    still ours (its environment names this test's TDWEB_VAR: a pid may have been reused)."""
    log = var / "log" / "launcher.log"
    for pid in re.findall(r"\(pid (\d+)\)", log.read_text() if log.exists() else ""):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"TDWEB_VAR={var}".encode() in environ.split(b"\0"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid), signal.SIGKILL)


def _flush(redis_url: str) -> None:
    import redis

    redis.Redis.from_url(redis_url).flushdb()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/accounts/login/", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _logs(var: Path) -> str:
    """The launcher's log and the tail of each child's log, for a failure message."""
    parts = []
    for f in sorted((var / "log").glob("*.log")):
        text = f.read_text(errors="replace")
        parts.append(f"--- {f.name}\n{text if f.name == 'launcher.log' else text[-3000:]}")
    return "\n".join(parts)


def _wait(fn, timeout: float, what: str, var: Path | None = None) -> float:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if fn():
            return time.monotonic() - t0
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{_logs(var) if var else ''}")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_killed_web_process_is_restarted_and_keeps_every_acknowledged_row(tmp_path) -> None:
    from taosrest import RestClient

    redis_url = os.environ.get("TDWEB_LAUNCHER_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
    if not redis_alive(redis_url):
        pytest.fail(f"Redis is not reachable at {redis_url}: this test uses a real Redis")
    _flush(redis_url)
    var, port = tmp_path / "var", _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("TDWEB_") and k != "DJANGO_SETTINGS_MODULE"
    }
    env.update(
        TDWEB_VAR=str(var),
        TDWEB_HOST="127.0.0.1",
        TDWEB_PORT=str(port),
        TDWEB_LAKE=str(var / "lake"),
        DATABASE_URL=f"sqlite:///{var / 'tdweb.sqlite3'}",
        REDIS_URL=redis_url,
        TDWEB_CHANNEL_PREFIX=f"tdweb-launcher-{port}",
        SPARK_MASTER="local[1]",
        TDWEB_STREAM_SLOTS="2",
        DJANGO_SETTINGS_MODULE="tdweb.settings",
    )
    out = open(tmp_path / "up.out", "wb")  # noqa: SIM115 - closed in finally
    up = subprocess.Popen(
        [sys.executable, "manage.py", "up"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    acked: list[int] = []
    try:
        _wait(lambda: _answers(url) or up.poll() is not None, 90, "manage.py up", var)
        assert up.poll() is None, (tmp_path / "up.out").read_text()
        rest = RestClient(url, user="root", password="taosdata", timeout=10)
        rest.sql("CREATE DATABASE k9web")
        rest.sql("CREATE TABLE k9web.t (ts TIMESTAMP, v INT)")

        stop = threading.Event()

        def write() -> None:  # one row per statement; a row counts once the answer says so
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    RestClient(url, user="root", password="taosdata", timeout=5).sql(
                        f"INSERT INTO k9web.t VALUES ({1_700_000_000_000 + i}, {i})"
                    )
                    acked.append(i)
                except Exception:
                    time.sleep(0.1)  # the web is down: try the next row

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        _wait(lambda: len(acked) >= 20, 60, "the first acknowledged rows", var)
        old = _web_pid(var)
        assert old is not None
        os.killpg(old, signal.SIGKILL)  # kill -9 of the web process (and its group)
        down_at = len(acked)
        # the launcher restarts it after RESTART_MIN_S; how long its start takes is the machine's (a
        # loaded CI machine took over 30 s once): the wait is generous, and a miss shows the logs
        _wait(lambda: _web_pid(var) != old and _answers(url), 90, "the restarted web process", var)
        _wait(lambda: len(acked) >= down_at + 20, 60, "rows acknowledged by the restarted web process", var)
        stop.set()
        writer.join(timeout=15)

        log = (var / "log" / "launcher.log").read_text()
        assert f"web (pid {old}) exited with code -9" in log and "restarted web (restart 1" in log, log
        got = {int(r[0]) for r in rest.sql("SELECT v FROM k9web.t")["data"]}
        assert set(acked) <= got, f"lost acknowledged rows: {sorted(set(acked) - got)[:10]}"
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGTERM)  # the launcher stops everything it started
            try:
                up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait()
        out.close()
        _kill_leftovers(var)
        _flush(redis_url)
