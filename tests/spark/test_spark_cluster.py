"""tests/spark_cluster.py: a 1-master/2-worker standalone cluster starts, runs a job submitted by a
driver in another process, and leaves no process behind when stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark_cluster import SparkCluster

pytestmark = pytest.mark.spark

# the driver: a tiny job on the cluster, its result on stdout
DRIVER = """
import os, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.appName(sys.argv[1]).master(os.environ["SPARK_MASTER"])
         .config("spark.cores.max", "2").config("spark.executor.memory", "512m")
         .config("spark.ui.enabled", "false").getOrCreate())
print("RESULT", spark.range(0, 1000, 1, 4).selectExpr("sum(id) s").first()["s"], flush=True)
spark.stop()
"""


def _processes_under(workdir: Path) -> list[int]:
    """Pids of live processes whose command line or working directory is inside ``workdir``
    (the master and workers name it in their arguments, executors run in the Worker's work dir)."""
    found = []
    mark = str(workdir.resolve())
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(d / "cwd")
        except OSError:
            continue
        if mark in cmd or cwd.startswith(mark):
            found.append(int(d.name))
    return found


def test_cluster_runs_a_job_and_stops_clean(tmp_path: Path) -> None:
    cluster = SparkCluster(tmp_path / "cluster", workers=2, cores=2, memory="1g")
    try:
        cluster.start()
        doc = cluster.status()
        alive = [w for w in doc["workers"] if w["state"] == "ALIVE"]
        assert len(alive) == 2
        assert [w["cores"] for w in alive] == [2, 2]
        assert {w["host"] for w in alive} == {"127.0.0.1"}
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        assert cluster.env()["SPARK_MASTER"] == cluster.master_url

        out = subprocess.run(
            [sys.executable, "-c", DRIVER, "tdweb-cluster-test"],
            env={**os.environ, **cluster.env(), "PYSPARK_PYTHON": sys.executable},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        assert "RESULT 499500" in out.stdout
        completed = [a["name"] for a in cluster.status()["completedapps"]]
        assert completed == ["tdweb-cluster-test"]
        assert _processes_under(tmp_path / "cluster"), "the cluster's processes should be found while it runs"
    finally:
        cluster.stop()
    assert _processes_under(tmp_path / "cluster") == []
    cluster.stop()  # idempotent
