"""A whole tdweb installation for the process benches (``recovery_bench.py``, ``soak_bench.py``):
Daphne, one Celery worker with its SparkSession, beat, over a temporary var folder (SQLite
metadata DB, lake, logs), started by ``streams_app.launcher.Launcher`` as ``manage.py up`` does.

The benches use it from the outside as users do (TDengine REST ``/rest/sql`` through ``taosrest``)
and read the stream's progress from the metadata DB (``streams_app_streamprogress``: one row per
committed micro-batch). ``Writer`` inserts rows continuously; ``tree_rss`` measures a process and
its descendants from ``/proc`` (Linux).

Ports: ``port_base`` (web), ``port_base + 10`` (Spark UI, Spark tries the next 9 on a clash).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streams_app.launcher import Launcher, redis_alive  # noqa: E402 (after the root is on the path)

DEFAULT_REDIS = "redis://127.0.0.1:6379/14"


def stack_env(var: Path, port: int, redis_url: str, *, heartbeat_s: float, stale_s: float) -> dict[str, str]:
    """The environment of the installation's processes (settings of ``tdweb/settings.py``)."""
    return {
        "TDWEB_VAR": str(var),
        "TDWEB_PORT": str(port),
        "TDWEB_HOST": "127.0.0.1",
        "TDWEB_LAKE": str(var / "lake"),
        "DATABASE_URL": f"sqlite:///{var / 'tdweb.sqlite3'}",
        "REDIS_URL": redis_url,
        "TDWEB_CHANNEL_PREFIX": f"tdweb-bench-{port}",
        "TDWEB_HEARTBEAT_S": str(heartbeat_s),
        "TDWEB_STALE_AFTER_S": str(stale_s),
        "SPARK_MASTER": "local[2]",
        "PYSPARK_SUBMIT_ARGS": (
            f"--conf spark.ui.port={port + 10} --conf spark.port.maxRetries=9 pyspark-shell"
        ),
        "DJANGO_SETTINGS_MODULE": "tdweb.settings",
    }


@dataclass
class Stack:
    """One running installation (``start`` / ``stop``)."""

    port: int
    redis_url: str = DEFAULT_REDIS
    heartbeat_s: float = 3.0
    stale_s: float = 15.0
    slots: int = 32
    var: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tdweb-bench-")))
    launcher: Launcher | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # more settings for every process

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Flush the bench's Redis database and start web, worker and beat (waits for the web)."""
        import redis

        if not redis_alive(self.redis_url):
            raise SystemExit(f"Redis is not reachable at {self.redis_url}")
        redis.Redis.from_url(self.redis_url).flushdb()
        env = stack_env(
            self.var, self.port, self.redis_url, heartbeat_s=self.heartbeat_s, stale_s=self.stale_s
        )
        env.update(self.extra_env)
        self.launcher = Launcher(
            host="127.0.0.1",
            port=self.port,
            redis_url=self.redis_url,
            slots=self.slots,
            quiet=True,
            var=self.var,
            extra_env=env,
        )
        self.launcher.start()

    def stop(self, keep: bool = False) -> None:
        """Stop every process; remove the var folder unless ``keep``."""
        import redis

        if self.launcher is not None:
            self.launcher.stop()
        redis.Redis.from_url(self.redis_url).flushdb()
        if keep:
            print(f"var folder kept: {self.var}")
        else:
            shutil.rmtree(self.var, ignore_errors=True)

    def worker_pid(self) -> int:
        """The pid of the running Celery worker (the leader of its process group)."""
        assert self.launcher is not None
        pids = [p.pid for n, p in self.launcher.procs if n == "worker" and p.poll() is None]
        if not pids:
            raise RuntimeError("no worker is running")
        return pids[-1]

    def rest(self, db: str | None = None) -> Any:
        """A TDengine REST client (``taosrest``) as root."""
        from taosrest import RestClient

        return RestClient(
            self.url, user="root", password="taosdata", database=db, timezone="UTC", timeout=120
        )

    def db(self) -> sqlite3.Connection:
        """A read connection to the metadata DB."""
        con = sqlite3.connect(self.var / "tdweb.sqlite3", timeout=30)
        return con

    def streams(self) -> dict[str, int]:
        """Stream name -> id."""
        with self.db() as con:
            return dict(con.execute("SELECT name, id FROM streams_app_stream").fetchall())

    def first_batch_after(self, at: datetime) -> dict[int, datetime]:
        """Stream id -> the commit time of its first micro-batch recorded after ``at`` (UTC)."""
        with self.db() as con:
            rows = con.execute(
                "SELECT stream_id, MIN(created_at) FROM streams_app_streamprogress WHERE created_at > ? "
                "GROUP BY stream_id",
                (at.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" "),),
            ).fetchall()
        return {sid: parse_ts(ts) for sid, ts in rows}

    def batches(self) -> dict[int, int]:
        """Stream id -> micro-batches recorded so far."""
        with self.db() as con:
            return dict(
                con.execute("SELECT stream_id, COUNT(*) FROM streams_app_streamprogress GROUP BY stream_id")
            )

    def log(self, name: str) -> str:
        p = self.var / "log" / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""


def stop_on_sigterm() -> None:
    """Make SIGTERM raise ``SystemExit`` in the main thread, so a bench stopped with ``kill`` stops
    its installation (a background job ignores SIGINT)."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def parse_ts(text: str) -> datetime:
    """A DateTimeField value as SQLite stores it (naive UTC text) -> an aware datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class Writer(threading.Thread):
    """Inserts rows into ``<db>.d<i>`` (subtables of ``m (ts, v double, st int) tags (dev int)``)
    through ``/rest/sql`` at ``rate`` rows/s (wall clock), ``rows_per_insert`` rows per statement.

    Each device gets one row per event second, starting at ``base_ms``; ``v`` is uniform
    [-50, 50] with one decimal, ``st`` changes every 7 event seconds. ``last_ms`` is the event time
    of the last row written; ``rows`` the rows written; ``errors`` the failed statements. With
    ``pause_s``, every device writes nothing in the last ``pause_s`` event seconds of each minute
    (SESSION windows close).
    """

    def __init__(
        self,
        stack: Stack,
        db: str,
        devices: int,
        rate: float,
        base_ms: int,
        rows_per_insert: int,
        pause_s: int = 0,
    ):
        super().__init__(name="writer", daemon=True)
        self.rest = stack.rest(db)
        self.devices, self.rate, self.base_ms, self.pause_s = devices, rate, base_ms, pause_s
        self.per_device = max(1, rows_per_insert // devices)
        self.halt = threading.Event()
        self.next_s = 0  # next event second to write
        self.rows = 0
        self.errors: list[str] = []
        self.rng = random.Random(7)

    @property
    def last_ms(self) -> int:
        return self.base_ms + (self.next_s - 1) * 1000

    def insert(self, first_s: int, count: int) -> None:
        """Rows for every device at event seconds ``first_s .. first_s + count - 1``."""
        seconds = [s for s in range(first_s, first_s + count) if s % 60 < 60 - self.pause_s]
        if not seconds:
            return
        parts = []
        for d in range(self.devices):
            vals = " ".join(
                f"({self.base_ms + s * 1000}, {self.rng.randint(-500, 500) / 10}, {(s // 7 + d) % 3})"
                for s in seconds
            )
            parts.append(f"d{d} values {vals}")
        self.rest.sql("insert into " + " ".join(parts))
        self.rows += self.devices * len(seconds)

    def run(self) -> None:
        interval = self.devices * self.per_device / self.rate
        due = time.monotonic()
        while not self.halt.is_set():
            try:
                self.insert(self.next_s, self.per_device)
                self.next_s += self.per_device
            except Exception as e:  # noted and retried: the statement may have been refused under load
                self.errors.append(str(e)[:200])
                time.sleep(1)
            due += interval
            time.sleep(max(0.0, due - time.monotonic()))


def create_source(stack: Stack, db: str, devices: int) -> None:
    """The database ``db``, supertable ``m (ts, v double, st int) tags (dev int)`` and its
    subtables ``d0 .. d<devices-1>``."""
    rest = stack.rest()
    rest.sql(f"create database if not exists {db}")
    rest = stack.rest(db)
    rest.sql("create stable m (ts timestamp, v double, st int) tags (dev int)")
    rest.sql("create table " + " ".join(f"d{i} using m tags ({i})" for i in range(devices)))


def wait_for(fn: Any, timeout: float, what: str, interval: float = 1.0) -> Any:
    """Poll ``fn`` until it returns a truthy value; ``TimeoutError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:
            last = e
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (``/proc/<pid>/task/*/children``)."""
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.append(p)
            todo += _children(p)
    return seen


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (``VmRSS``), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def tree_rss(pid: int) -> dict[str, int]:
    """RSS in bytes of a worker's process tree by kind: ``python`` (the Celery worker),
    ``jvm`` (the Spark driver), ``pyworkers`` (Spark's Python workers), ``total``."""
    out = {"python": 0, "jvm": 0, "pyworkers": 0}
    for p in process_tree(pid):
        cmd = cmdline(p)
        kind = "python" if p == pid else "jvm" if "java" in cmd.split(" ", 1)[0] else "pyworkers"
        out[kind] += rss_bytes(p)
    out["total"] = sum(out.values())
    return out


def process_group(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    out.append(int(name))
            except (OSError, IndexError, ValueError):
                continue
    return out
