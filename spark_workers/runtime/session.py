"""The worker's SparkSession (one per Celery worker process, shared by all its streams)."""

from __future__ import annotations

import os
import sys
import threading

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
