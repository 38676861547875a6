"""The worker's SparkSession (one per Celery worker process, shared by all its streams)."""

from __future__ import annotations

import os
import sys
import threading
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

_lock = threading.Lock()
_session: SparkSession | None = None

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def executor_env(master: str) -> dict[str, str]:
    """The environment a cluster's executors get from the driver (``spark.executorEnv.*``): the
    object store's ``AWS_*`` variables the driver has (``lake/location.py``), so the ``tdlake``
    source and the kernel on another host open the same lake with the same credentials and commit
    protocol; ``PYSPARK_PYTHON`` travels with Spark itself. Empty for ``local[...]`` masters (the
    executors are the driver's own threads). docs/operations.md "Spark cluster"."""
    if master.startswith("local"):
        return {}
    from spark_workers.lake.location import executor_variables

    return executor_variables()


_WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]"}


def public_ui_url(spark_url: str | None, *, template: str = "", host: str = "127.0.0.1") -> str:
    """The Spark UI address a browser should open, built from configuration rather than the
    address Spark guessed (``sparkContext.uiWebUrl`` names the driver's host name, often a container
    name no browser resolves; issue 16 item 9).

    Only the port is taken from Spark's URL: it is the port the UI bound (``spark.ui.port``, 4040 by
    default, or the next free one when that is taken). ``template`` (``TDWEB_SPARK_UI_URL``) wins
    when set: ``{port}`` and ``{host}`` are replaced (``https://spark.example/{port}/`` behind a
    proxy; a template without placeholders is used as it is). Otherwise the URL is
    ``http://<host>:<port>/`` with ``host`` = ``TDWEB_HOST`` (a wildcard listen address such as
    ``0.0.0.0`` becomes ``127.0.0.1``; an IPv6 address gets brackets).

    Args:
        spark_url: ``sparkContext.uiWebUrl`` (None or "" when the UI is disabled).
        template: ``TDWEB_SPARK_UI_URL``, "" for the default.
        host: ``TDWEB_HOST``.

    Returns:
        The URL, or "" when Spark has no UI or its URL names no port.
    """
    if not spark_url:
        return ""
    try:
        port = urlsplit(spark_url).port
    except ValueError:
        return ""
    if port is None:
        return ""
    name = "127.0.0.1" if host.strip() in _WILDCARD_HOSTS else host.strip()
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    if template:
        return template.replace("{port}", str(port)).replace("{host}", name)
    return f"http://{name}:{port}/"


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "tdweb",
    ui_port: int | None = None,
    shuffle_partitions: int = 2,
    extra: dict[str, str] | None = None,
) -> SparkSession:
    """Create (once) and return the process's SparkSession.

    Settings follow ARCHITECTURE "pitfalls": the virtualenv's interpreter for Python workers,
    RocksDB state store, few shuffle partitions on 2 cores, UTC session time zone.

    Args:
        master: ``SPARK_MASTER`` (default ``local[*]``).
        ui_port: Spark UI port (default 4040; Spark picks the next free one).
    """
    global _session
    with _lock:
        if _session is not None:
            return _session
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = (
            SparkSession.builder.appName(app_name)
            .master(master or os.environ.get("SPARK_MASTER", "local[*]"))
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "2g"))
            # streams with timers (processing-time timeouts) need micro-batches without new data;
            # queries without a timeout never ask for one
            .config("spark.sql.streaming.noDataMicroBatches.enabled", "true")
            .config("spark.python.worker.reuse", "true")
            # workers fork from a daemon that imported pandas, pyarrow and the engine once
            .config("spark.python.daemon.module", "spark_workers.runtime.daemon")
            # rows reach the kernel in Arrow batches of this size; Spark's 10,000 made the Arrow ->
            # pandas conversion cost more than the engine (docs/PERFORMANCE.md)
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        )
        if ui_port is not None:
            builder = builder.config("spark.ui.port", str(ui_port))
        for k, v in executor_env(master or os.environ.get("SPARK_MASTER", "local[*]")).items():
            builder = builder.config(f"spark.executorEnv.{k}", v)
        for k, v in (extra or {}).items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
        from spark_workers.lake.spark_source import TdLakeSource

        spark.dataSource.register(TdLakeSource)
        _session = spark
        return spark
