"""A whole tdweb installation per test module: Daphne, a Celery worker with Spark, beat.

Each installation has its own var folder (SQLite DB, lake, logs), port and Redis database, and
talks to the machine's Redis (``TDWEB_SYSTEM_REDIS_URL``, default database 14 of the local server).
Tests use it only from the outside, as users do: TDengine REST (``taosrest``) and HTTP.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tdweb.launcher import Launcher, redis_alive

REDIS = os.environ.get("TDWEB_SYSTEM_REDIS_URL", "redis://127.0.0.1:6379/14")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


@pytest.fixture(scope="module")
def system(tmp_path_factory) -> Iterator[System]:  # type: ignore[no-untyped-def]
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
        yield System(launcher, f"http://127.0.0.1:{port}", var, env)
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
