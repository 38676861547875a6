"""A whole tdweb installation per test module: Daphne, a Celery worker with Spark, beat.

Each installation has its own var folder (SQLite DB, lake, logs), port and Redis database, and
talks to the machine's Redis (``TDWEB_SYSTEM_REDIS_URL``, default database 14 of the local server).
Tests use it only from the outside, as users do: TDengine REST (``taosrest``) and HTTP.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams_app.launcher import Launcher, redis_alive

REDIS = os.environ.get("TDWEB_SYSTEM_REDIS_URL", "redis://127.0.0.1:6379/14")


def free_port() -> int:
    """A free local port: any, or one of ``TDWEB_SYSTEM_PORTS`` (``"lo-hi"``) when set, for machines
    where each test run owns a port range."""
    lo, _, hi = os.environ.get("TDWEB_SYSTEM_PORTS", "").partition("-")
    for port in range(int(lo), int(hi) + 1) if lo and hi else [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError(f"no free port in TDWEB_SYSTEM_PORTS={lo}-{hi}")


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


@dataclass
class System:
    launcher: Launcher
    url: str
    var: Path
    env: dict[str, str]

    def rest(self, db: str | None = None):  # type: ignore[no-untyped-def]
        from taosrest import RestClient

        return RestClient(self.url, user="root", password="taosdata", database=db, timezone="UTC", timeout=60)

    def log(self, name: str) -> str:
        p = self.var / "log" / f"{name}.log"
        return p.read_text(errors="replace")[-4000:] if p.exists() else ""


def system_env(var: Path, port: int) -> dict[str, str]:
    return {
        "TDWEB_VAR": str(var),
        "TDWEB_PORT": str(port),
        "TDWEB_HOST": "127.0.0.1",
        "TDWEB_LAKE": str(var / "lake"),
        "DATABASE_URL": f"sqlite:///{var / 'tdweb.sqlite3'}",
        "REDIS_URL": REDIS,
        "TDWEB_CHANNEL_PREFIX": f"tdweb-system-{port}",
        "TDWEB_RECONCILE_S": "3",
        "TDWEB_STALE_AFTER_S": "10",
        "TDWEB_HEARTBEAT_S": "1",
        "SPARK_MASTER": "local[2]",
        "DJANGO_SETTINGS_MODULE": "tdweb.settings",
    }


UNHANDLED = re.compile(r"Traceback \(most recent call last\)|Unhandled exception|Internal Server Error")


def web_tracebacks(system: System) -> list[str]:
    """Unhandled exceptions the web processes logged (``var/log/web*.log``): each hit's line and the
    four after it; [] when clean (issue 16: "no unhandled exception in the web log")."""
    hits = []
    for p in sorted((system.var / "log").glob("web*.log")):
        lines = p.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines):
            if UNHANDLED.search(line):
                hits.append(f"{p.name}:{n + 1}: " + " | ".join(lines[n : n + 5]))
    return hits


def _browser_module(request) -> bool:  # type: ignore[no-untyped-def]
    marks = getattr(request.module, "pytestmark", [])
    return any(getattr(m, "name", None) == "browser" for m in (marks if isinstance(marks, list) else [marks]))


@pytest.fixture(scope="module")
def system(tmp_path_factory, request) -> Iterator[System]:  # type: ignore[no-untyped-def]
    if not redis_alive(REDIS):
        pytest.fail(f"Redis is not reachable at {REDIS}: the system tests use a real Redis")
    flush_redis(REDIS)
    var = tmp_path_factory.mktemp("system")
    port = free_port()
    env = system_env(var, port)
    launcher = Launcher(
        host="127.0.0.1", port=port, redis_url=REDIS, slots=8, quiet=True, var=var, extra_env=env
    )
    try:
        launcher.start()
        installed = System(launcher, f"http://127.0.0.1:{port}", var, env)
        yield installed
        # browser modules: the web process logged no unhandled exception (checked before stopping,
        # whose cancellations are not the pages' doing)
        if _browser_module(request):
            hits = web_tracebacks(installed)
            assert not hits, f"unhandled exceptions in the web log: {hits}"
    finally:
        launcher.stop()
        flush_redis(REDIS)


def wait_for(fn, timeout: float, what: str, interval: float = 1.0):  # type: ignore[no-untyped-def]
    """Poll ``fn`` until it returns a truthy value; fail with the last value after ``timeout``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # tables may not exist yet
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")


SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("Chromium is not installed: `make test` installs Debian's chromium (make browser-deps)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def last_batch(page) -> int:  # type: ignore[no-untyped-def]
    text = page.locator(".fact", has_text="Last batch").locator(".fact-value").inner_text()
    m = re.search(r"#(\d+)", text)
    return int(m.group(1)) if m else -1


def sign_in(page, system: System) -> None:  # type: ignore[no-untyped-def]
    """Sign in as root through the login form; lands on the streams list."""
    page.goto(f"{system.url}/accounts/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "taosdata")
    page.click("button[type=submit]")
    page.wait_for_url(f"{system.url}/")
