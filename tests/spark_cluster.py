"""A Spark standalone cluster (one master, N workers) on 127.0.0.1 for the tests and benchmarks
that run tdweb's streams on a cluster instead of ``local[*]`` (docs/operations.md "Spark cluster").

The processes are started with pyspark's own ``bin/spark-class`` launcher (the same jars as the
driver, no separate Spark download), each in its own session (process group) so that ``stop()``
also ends the executors and Python workers the Worker forks. Every directory Spark writes to
(logs, pids, the Worker's work dir, scratch space) lives under ``workdir``, never inside the
virtualenv's pyspark folder.

    with SparkCluster(tmp_path, workers=2) as cluster:
        env = {**os.environ, **cluster.env()}   # SPARK_MASTER, SPARK_LOCAL_IP for the driver
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 the OS reports free (bind to port 0)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    """The installed pyspark package: its ``bin/spark-class`` and ``jars/`` run the cluster."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class SparkCluster:
    """A Spark standalone master and N workers started with pyspark's own spark-class launcher, on 127.0.0.1.

    Args:
        workdir: directory for the logs (``master.log``, ``worker-<i>.log``) and everything else
            Spark writes (created if missing).
        workers: number of Worker processes.
        cores: cores each Worker offers.
        memory: memory each Worker offers (Spark size string, ``"2g"``).
        default_cores: the master's ``spark.deploy.defaultCores``: cores an application gets when it
            does not set ``spark.cores.max``, so that two applications (two tdweb workers, each
            with its own SparkSession) share the cluster instead of the first taking every core.
            ``None`` keeps Spark's default (all cores).
        ports: returns the next port to listen on (master RPC and UI, each Worker's RPC and UI);
            default: a free port from the OS.
    """

    master_url: str
    web_url: str

    def __init__(
        self,
        workdir: Path,
        *,
        workers: int = 2,
        cores: int = 2,
        memory: str = "2g",
        default_cores: int | None = 2,
        ports: Callable[[], int] | None = None,
    ) -> None:
        if workers < 1 or cores < 1:
            raise ValueError("a cluster needs at least one worker with one core")
        self.workdir = Path(workdir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.default_cores = default_cores
        self._ports = ports or free_port
        # (process, its log); appended by the worker-starting threads together, so never out of step
        self._procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.master_url = ""
        self.web_url = ""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> None:
        """Start the master, then the workers in parallel, and wait until all of them are ALIVE
        in the master's ``/json/`` document.

        Raises:
            RuntimeError: a process exited or the workers were not all ALIVE within ``timeout``
                seconds (the message carries the tail of every log); the processes already
                started are stopped.
        """
        if self._procs:
            raise RuntimeError("cluster already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        try:
            port, web_port = self._ports(), self._ports()
            self.master_url = f"spark://{HOST}:{port}"
            self.web_url = f"http://{HOST}:{web_port}"
            master_opts = "-Dspark.master.rest.enabled=false"
            if self.default_cores is not None:
                master_opts += f" -Dspark.deploy.defaultCores={self.default_cores}"
            self._launch(
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    HOST,
                    "--port",
                    str(port),
                    "--webui-port",
                    str(web_port),
                ],
                {"SPARK_MASTER_OPTS": master_opts},
            )
            self._wait(deadline, lambda doc: doc.get("status") == "ALIVE", "the master")
            worker_ports = [(self._ports(), self._ports()) for _ in range(self.workers)]
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(self._start_worker, range(self.workers), worker_ports))
            self._wait(
                deadline,
                lambda doc: sum(w.get("state") == "ALIVE" for w in doc.get("workers", [])) >= self.workers,
                f"{self.workers} ALIVE workers",
            )
        except BaseException:
            self.stop()
            raise

    def _start_worker(self, i: int, ports: tuple[int, int]) -> None:
        work = self.workdir / f"worker-{i}"
        work.mkdir(exist_ok=True)
        self._launch(
            f"worker-{i}",
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                HOST,
                "--port",
                str(ports[0]),
                "--webui-port",
                str(ports[1]),
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(work),
                self.master_url,
            ],
            {"SPARK_WORKER_DIR": str(work), "SPARK_LOCAL_DIRS": str(work / "scratch")},
        )

    def _launch(self, name: str, args: list[str], extra_env: dict[str, str]) -> None:
        home = spark_home()
        for d in ("logs", "pids", "conf"):
            (self.workdir / d).mkdir(exist_ok=True)
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
            "SPARK_PID_DIR": str(self.workdir / "pids"),
            "SPARK_CONF_DIR": str(self.workdir / "conf"),  # empty: no stray spark-defaults.conf
            "SPARK_WORKER_DIR": str(self.workdir / "work"),
            "SPARK_LOCAL_DIRS": str(self.workdir / "scratch"),
            # exactly the ports asked for: Spark would otherwise move to the next port if one is
            # taken, and the web UI polled for readiness would be another process's
            "SPARK_DAEMON_JAVA_OPTS": (
                os.environ.get("SPARK_DAEMON_JAVA_OPTS", "") + " -Dspark.port.maxRetries=0"
            ).strip(),
            **extra_env,
        }
        env.pop("SPARK_MASTER", None)
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(home / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
            )
        self._procs.append((proc, log))

    def _wait(self, deadline: float, ready: Callable[[dict[str, Any]], bool], what: str) -> None:
        while True:
            for p, log in self._procs:
                if p.poll() is not None:
                    raise RuntimeError(
                        f"{log.stem} exited with {p.returncode} waiting for {what}\n{self._tail()}"
                    )
            try:
                if ready(self.status()):
                    return
            except OSError:
                pass  # the web UI is not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}\n{self._tail()}")
            time.sleep(0.25)

    def _tail(self, lines: int = 30) -> str:
        parts = []
        for _p, log in self._procs:
            text = log.read_text(errors="replace").splitlines() if log.exists() else []
            parts.append(f"--- {log} (last {lines} lines)\n" + "\n".join(text[-lines:]))
        return "\n".join(parts)

    def stop(self) -> None:
        """SIGTERM each process group (the master, each Worker with its executors and their Python
        workers), then SIGKILL what is left after 10 s. Idempotent."""
        procs, self._procs = [p for p, _log in self._procs], []
        for p in reversed(procs):  # workers first: they would otherwise try to reconnect
            _signal_group(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
        for p in procs:
            # the group outlives its leader if the Worker's executors did not exit
            _signal_group(p.pid, signal.SIGKILL)
            if p.poll() is None:
                p.wait(timeout=10)

    # -- queries -----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The master's ``/json/`` document: ``status``, ``workers`` (``id``, ``host``, ``cores``,
        ``coresused``, ``memory`` in MiB, ``state``), ``activeapps``, ``completedapps``.

        Raises:
            OSError: the master's web UI did not answer (not started, or stopped), or something
                else answered on its port (an HTML page: another Spark UI that took the port
                first; the master, whose ports are exact, then exits and ``_wait`` says so).
        """
        if not self.web_url:
            raise OSError("cluster not started")
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as r:
            body = r.read()
        try:
            doc: dict[str, Any] = json.loads(body)
        except ValueError as e:
            raise OSError(f"{self.web_url}/json/ did not answer JSON") from e
        return doc

    def env(self) -> dict[str, str]:
        """The environment a driver process needs: ``SPARK_MASTER`` (read by
        ``runtime/session.py``) and ``SPARK_LOCAL_IP`` (the driver listens on 127.0.0.1)."""
        return {"SPARK_MASTER": self.master_url, "SPARK_LOCAL_IP": HOST}

    def __enter__(self) -> SparkCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
