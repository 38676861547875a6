"""Starts and stops tdweb's processes (``make up``, ``make demo``).

Order: Redis (the one at ``REDIS_URL`` if it answers; otherwise the machine's ``redis-server``
binary on a free port; otherwise fakeredis's TCP server), database migrations and the ``root``
account, then Daphne (web: ``TDWEB_WEB_PROCESSES`` processes accepting on one listening socket
the launcher binds and keeps, so a restarted web process finds the port bound), one Celery worker
(queues ``streams`` and ``default``, thread pool, one SparkSession) and Celery beat. Every
process it started is stopped on exit (Ctrl-C, SIGTERM or the end of ``--once``). Logs go to
``var/log/<process>.log``.

While it waits in the foreground (``wait_forever``: ``make up``, ``make demo`` without ``ONCE``), a
child that exits (web, worker, beat, or the Redis it started) is started again with the same
command, after an exponential backoff: 1 s, doubling to at most 60 s while it keeps dying within a
minute of its start, back to 1 s once it has run that long. Every exit and restart is logged with
the exit code to stdout and ``var/log/launcher.log``. A restarted web process loses no
acknowledged row: ``/rest/sql`` answers only after the rows are committed to the lake.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

BASE_DIR = Path(__file__).resolve().parent.parent
RESTART_MIN_S = 1.0
RESTART_MAX_S = 60.0
STABLE_S = 60.0  # a child that ran this long is healthy again: its backoff restarts at RESTART_MIN_S
WEB_THREADS = "32"  # ASGI_THREADS of the web process unless the environment sets it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_alive(url: str, timeout: float = 1.0) -> bool:
    """True if a Redis server answers PING at ``url``."""
    u = urlparse(url)
    try:
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=timeout) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Child:
    """How a child was started and its restart state (monotonic seconds)."""

    args: list[str]
    env: dict[str, str] | None
    started_at: float
    backoff_s: float = RESTART_MIN_S
    restart_at: float | None = None
    restarts: int = 0
    pass_fds: tuple[int, ...] = ()


class Launcher:
    """The set of processes of one tdweb installation on this machine.

    Args:
        host, port: where the web process listens.
        slots: concurrent streams per worker (thread pool size).
        proxy_headers: start Daphne with ``--proxy-headers`` (client addresses from
            ``X-Forwarded-For``; ``TDWEB_PROXY_HEADERS``, docs/security.md).
        web_processes: Daphne processes (``TDWEB_WEB_PROCESSES``, >= 1). They accept connections
            on one socket the launcher binds to ``host:port`` (the kernel hands each new
            connection to one of them): a request is CPU-bound Python under one GIL per process
            (a 10,000-row INSERT, a line-protocol body), so one process uses one core whatever
            its thread pool. The processes share nothing in memory: writers in different
            processes commit separately (Delta's optimistic concurrency, ``Lake``), WebSocket
            groups go through the Redis channel layer.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        redis_url: str,
        slots: int = 32,
        quiet: bool = False,
        var: Path | None = None,
        extra_env: dict[str, str] | None = None,
        proxy_headers: bool = False,
        web_processes: int = 1,
    ) -> None:
        self.host = host
        self.port = port
        self.redis_url = redis_url
        self.slots = slots
        self.quiet = quiet
        self.var = Path(var or os.environ.get("TDWEB_VAR") or BASE_DIR / "var")
        self.extra_env = dict(extra_env or {})
        self.proxy_headers = proxy_headers
        self.web_processes = max(1, int(web_processes))
        self._web_socket: socket.socket | None = None
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.children: dict[str, Child] = {}
        self.logs = self.var / "log"
        self.logs.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_settings(cls) -> Launcher:
        """The launcher of this installation's Django settings (``up`` and ``demo``)."""
        from django.conf import settings

        return cls(
            host=settings.TDWEB_HOST,
            port=settings.TDWEB_PORT,
            redis_url=settings.REDIS_URL,
            slots=settings.TDWEB_STREAM_SLOTS,
            proxy_headers=getattr(settings, "TDWEB_PROXY_HEADERS", False),
            web_processes=getattr(settings, "TDWEB_WEB_PROCESSES", 1),
        )

    def say(self, msg: str) -> None:
        if not self.quiet:
            print(msg, flush=True)

    def event(self, msg: str) -> None:
        """A supervision event: to stdout (unless quiet) and, time-stamped, to ``log/launcher.log``."""
        self.say(f"launcher: {msg}")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(self.logs / "launcher.log", "a") as f:
            f.write(f"{stamp} {msg}\n")

    # ------------------------------------------------------------------ processes
    def _spawn(
        self, name: str, args: list[str], env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()
    ) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{name}.log", "ab") as log:  # the child keeps its own descriptor
            p = subprocess.Popen(
                args,
                cwd=BASE_DIR,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env or self.env(),
                start_new_session=True,
                pass_fds=pass_fds,
            )
        self.procs.append((name, p))
        child = self.children.get(name)
        if child is None:
            started = time.monotonic()
            self.children[name] = Child(args=list(args), env=env, started_at=started, pass_fds=pass_fds)
        else:
            child.args, child.env, child.started_at = list(args), env, time.monotonic()
            child.pass_fds = pass_fds
        self.event(f"started {name} (pid {p.pid})")
        return p

    def env(self) -> dict[str, str]:
        e = dict(os.environ)
        # Daphne's thread pool for sync work (REST and line-protocol writes run there): its default
        # (CPUs + 4) lets too few writers meet in a group commit (docs/architecture.md)
        e.setdefault("ASGI_THREADS", WEB_THREADS)
        e.update(self.extra_env)
        e["TDWEB_VAR"] = str(self.var)
        e["REDIS_URL"] = self.redis_url
        e["TDWEB_HOST"] = self.host
        e["TDWEB_PORT"] = str(self.port)
        e.setdefault("PYSPARK_PYTHON", sys.executable)
        e.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        e["DJANGO_SETTINGS_MODULE"] = "tdweb.settings"
        return e

    def ensure_redis(self) -> str:
        """Use the configured Redis, or start one (see module docstring); returns its URL."""
        if redis_alive(self.redis_url):
            self.say(f"redis: using {self.redis_url}")
            return self.redis_url
        port = _free_port()
        binary = shutil.which("redis-server")
        if binary:
            data = self.var / "redis"
            data.mkdir(parents=True, exist_ok=True)
            self._spawn(
                "redis",
                [
                    binary,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(data),
                ],
            )
            kind = "redis-server"
        else:
            self._spawn("redis", [sys.executable, "-m", "streams_app.fakeredis_server", "--port", str(port)])
            kind = "fakeredis"
        url = f"redis://127.0.0.1:{port}/0"
        for _ in range(100):
            if redis_alive(url):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"could not start {kind} on port {port}; see {self.logs / 'redis.log'}")
        self.redis_url = url
        self.say(f"redis: {self.redis_url} not reachable; started {kind} at {url}")
        return url

    def prepare(self) -> None:
        """Migrate the metadata DB and create the admin account (first run)."""
        for args in (["migrate", "--noinput", "-v", "0"], ["bootstrap"]):
            r = subprocess.run(
                [sys.executable, "manage.py", *args],
                cwd=BASE_DIR,
                env=self.env(),
                capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")

    def start(self) -> None:
        """Start Redis (if needed), web, worker and beat; wait until the web answers."""
        self.ensure_redis()
        self.prepare()
        py = sys.executable
        self.start_web()
        self.start_worker()
        beat = [py, "-m", "celery", "-A", "tdweb", "beat", "--loglevel", "INFO"]
        self._spawn("beat", [*beat, "--schedule", str(self.var / "celerybeat-schedule")])
        self.wait_web()

    def web_names(self) -> list[str]:
        """The web processes' names: ``web``, then ``web2``, ``web3``... (their logs' names)."""
        return ["web"] + [f"web{i}" for i in range(2, self.web_processes + 1)]

    def start_web(self) -> None:
        """Start the web processes: Daphne on a listening socket bound here (``web_processes``
        of them accept on it); an IPv6 host binds in Daphne itself, one process.

        Raises:
            RuntimeError: ``host:port`` cannot be bound (in use, not an address of this host).
        """
        tail = ["--proxy-headers"] if self.proxy_headers else []
        tail += ["tdweb.asgi:application"]
        daphne = [sys.executable, "-m", "daphne"]
        if ":" in self.host:  # Twisted adopts an inherited socket as IPv4 only
            self._spawn("web", [*daphne, "-b", self.host, "-p", str(self.port), *tail])
            return
        if self._web_socket is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, self.port))
            except OSError as e:
                sock.close()
                where = f"{self.host}:{self.port}"
                raise RuntimeError(f"the web cannot listen on {where}: {e.strerror}") from None
            sock.listen(1024)
            sock.set_inheritable(True)
            self._web_socket = sock
        fd = self._web_socket.fileno()
        for name in self.web_names():
            self._spawn(name, [*daphne, "--fd", str(fd), *tail], pass_fds=(fd,))

    def start_worker(self) -> subprocess.Popen[bytes]:
        """Start the Celery worker: queues ``streams`` and ``default``, a thread per stream, one
        SparkSession."""
        args = [sys.executable, "-m", "celery", "-A", "tdweb", "worker", "-Q", "streams,default"]
        args += ["--pool", "threads", "--concurrency", str(self.slots), "-n", "tdweb@%h"]
        args += ["--loglevel", "INFO", "--without-gossip", "--without-mingle"]
        return self._spawn("worker", args)

    def kill(self, name: str) -> None:
        """``kill -9`` a process we started, with its children (its process group)."""
        for n, p in self.procs:
            if n == name and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = [(n, p) for n, p in self.procs if not (n == name and p.poll() is not None)]

    def wait_web(self, timeout: float = 60.0) -> None:
        url = f"http://{self.host}:{self.port}/accounts/login/"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
            time.sleep(0.3)
        raise RuntimeError(f"web did not answer at {url} within {timeout:.0f}s; see {self.logs / 'web.log'}")

    def check_alive(self) -> None:
        """Raise if a process we started has exited."""
        for name, p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with code {p.returncode}; see {self.logs / (name + '.log')}"
                )

    def stop(self) -> None:
        """Stop every process this launcher started: SIGTERM to each (the worker's warm shutdown
        stops its streams at a micro-batch boundary, then its SparkSession), then SIGKILL of the
        process group for any still alive after 30 s; children left in a group are killed too."""
        for _name, p in reversed(self.procs):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.terminate()
        deadline = time.monotonic() + 30
        for _name, p in reversed(self.procs):
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)  # the process, if it hung, and its leftovers (JVM)
            p.wait()
        self.procs.clear()
        if self._web_socket is not None:
            self._web_socket.close()
            self._web_socket = None

    def supervise(self, now: float | None = None) -> None:
        """Restart the children that have exited, with backoff (module docstring). Called every
        second by ``wait_forever``; ``now`` is ``time.monotonic()`` (a parameter for tests)."""
        now = time.monotonic() if now is None else now
        for name, p in list(self.procs):
            child = self.children.get(name)
            if child is None:
                continue
            if p.poll() is None:
                if now - child.started_at >= STABLE_S:
                    child.backoff_s = RESTART_MIN_S
                continue
            if child.restart_at is None:
                uptime = now - child.started_at
                if uptime >= STABLE_S:
                    child.backoff_s = RESTART_MIN_S
                delay = child.backoff_s
                child.backoff_s = min(child.backoff_s * 2, RESTART_MAX_S)
                child.restart_at = now + delay
                self.event(
                    f"{name} (pid {p.pid}) exited with code {p.returncode} after {uptime:.0f}s; "
                    f"restarting in {delay:.0f}s; see {self.logs / (name + '.log')}"
                )
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, signal.SIGKILL)  # what it left in its group (the worker's JVM)
            elif now >= child.restart_at:
                child.restart_at = None
                child.restarts += 1
                self.procs.remove((name, p))
                self._spawn(name, child.args, child.env, child.pass_fds)
                self.event(f"restarted {name} (restart {child.restarts}, previous exit code {p.returncode})")

    def wait_forever(self) -> None:
        """Block until Ctrl-C / SIGTERM, restarting children that exit (``supervise``)."""
        stop = {"flag": False}

        def handler(signum: int, frame: object) -> None:
            stop["flag"] = True

        signal.signal(signal.SIGTERM, handler)
        # also when started in the background, where a shell leaves SIGINT ignored
        signal.signal(signal.SIGINT, handler)
        try:
            while not stop["flag"]:
                self.supervise()
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
