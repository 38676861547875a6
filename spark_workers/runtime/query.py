"""Build and start a stream's Structured Streaming query (ARCHITECTURE "The engine").

``tdlake`` source -> stage 1 in Spark SQL (WHERE, PARTITION BY values, ``_ts``, aggregate
inputs, window extras) -> ``_bucket = pmod(hash(group values), buckets)`` ->
``applyInPandasWithState`` keyed by bucket (the vectorized kernel, state = engine bytes per bucket
in RocksDB; streams with timers use a processing-time timeout, so Spark calls buckets without new
rows every ``TIMER_MS`` and micro-batches run without data) -> ``foreachBatch``
(the output sink: idempotent writes, notifications, progress). Checkpoints live under the lake's
stream folder, so a restarted query resumes where it stopped.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from spark_workers.runtime.kernel import Kernel, KernelConfig
from spark_workers.runtime.packing import OUTPUT_SCHEMA, PackingPipeline, decode_output, encode_output, unpack
from spark_workers.runtime.paths import StreamState
from spark_workers.runtime.plan import kernel_config, stage1_duckdb, stage1_spark
from spark_workers.runtime.premerge import SourcePipeline
from spark_workers.runtime.sink import OutputSink
from spark_workers.streams.compile import CompiledStream

DEFAULT_BUCKETS = 8
TRIGGER_INTERVAL = "500 milliseconds"
# LOW_LATENCY_CALC (seed 002): "Processing starts immediately": the next micro-batch starts as soon
# as the previous one ends and rows are waiting, instead of at the next 500 ms tick
LOW_LATENCY_TRIGGER_INTERVAL = "0 seconds"


def trigger_interval(c: CompiledStream) -> str:
    """The Spark processing-time trigger of a stream's query: ``TRIGGER_INTERVAL`` (micro-batches
    every 500 ms, rows arriving meanwhile computed together), or ``LOW_LATENCY_TRIGGER_INTERVAL``
    for a 3.3.7 stream with STREAM_OPTIONS(LOW_LATENCY_CALC) (seed 002: "low-latency computation
    or notification after each trigger ... at the cost of lower efficiency")."""
    return LOW_LATENCY_TRIGGER_INTERVAL if c.spec.options.low_latency_calc else TRIGGER_INTERVAL


TIMER_MS = 1000  # processing-time timeout of a bucket's state: how often timers are checked


_register_lock = threading.Lock()


def source_format(
    spark: SparkSession, stream_key: str, transform: Any = None, schema: pa.Schema | None = None
) -> str:
    """Register the ``tdlake`` data source under a name of this stream's own and return it.

    Two streaming queries must not share one registered Python data source: Spark mutates the
    registered function's environment map while it serializes tasks, and a query serializing its
    tasks meanwhile can ship a corrupt copy (``java.io.OptionalDataException`` on the executor;
    reproduced with two queries started together, see docs/decisions.md).
    """
    from spark_workers.lake.spark_source import TdLakeSource

    fmt = f"tdlake_{stream_key}"
    attrs = {"name": classmethod(lambda cls: fmt), "transform": transform, "transform_schema": schema}
    cls = type(f"TdLakeSource_{stream_key}", (TdLakeSource,), attrs)
    with _register_lock:
        spark.dataSource.register(cls)
    return fmt


def make_state_func(
    cfg: KernelConfig, stage1_schema: pa.Schema, unpacked: pa.Schema | None = None
) -> Callable[..., Iterator[pd.DataFrame]]:
    """The ``applyInPandasWithState`` function (runs in Python workers; ``cfg`` is pickled).

    Args:
        stage1_schema: the Arrow schema of the rows Spark hands over.
        unpacked: when they are packed rows (``runtime/packing.py``), the stage-1 schema they hold.
    """
    holder: dict[str, Kernel] = {}
    out_schema = cfg.output_schema()

    def func(key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        kernel = holder.get("k")
        if kernel is None:
            kernel = holder["k"] = Kernel(cfg)
        frames = [pa.Table.from_pandas(p, schema=stage1_schema, preserve_index=False) for p in pdfs]
        table = pa.concat_tables(frames) if frames else stage1_schema.empty_table()
        if unpacked is not None:
            table = unpack(table, unpacked)
        blob = state.get[0] if state.exists else None
        now = cfg.now() if cfg.timers else None  # a timed-out call has no rows: a timer step
        out, new_state = kernel.step(int(key[0]), blob, table, now)
        state.update((new_state,))
        if cfg.timers:
            state.setTimeoutDuration(TIMER_MS)
        if cfg.pack_output:  # the windows cross Spark as a few Arrow IPC values
            yield pd.DataFrame({"_out": encode_output(out.cast(out_schema))})
        else:
            yield out.cast(out_schema).to_pandas(integer_object_nulls=True, date_as_object=False)

    return func


def build_stream_frame(
    spark: SparkSession,
    c: CompiledStream,
    *,
    lake_root: str,
    tz: str,
    start_version: int,
    history_version: int | None,
    ignore_until: int | None = None,
    buckets: int = DEFAULT_BUCKETS,
    stream_key: str = "",
    catalog_url: str = "",
    skip_history: bool = False,
) -> tuple[DataFrame, KernelConfig | None]:
    """The streaming DataFrame of kernel output rows, and the kernel config (the source is
    registered under the stream's own name when ``stream_key`` is given). With
    ``cfg.pack_output`` its rows are ``packing.OUTPUT_SCHEMA`` values that ``decode_output``
    turns into the output rows. A stream without a window has no kernel (config None): its frame
    is stage 1, which the sink writes as it is."""
    if c.plan.projection:
        return _source_frame(
            spark,
            c,
            (lake_root, catalog_url),
            tz,
            (start_version, history_version, ignore_until, skip_history),
            stream_key,
        ), None
    cfg = kernel_config(c, lake_root, tz, catalog_url)
    pipeline = None
    items: pa.Schema | None = None
    from spark_workers.lake.changes import ChangeReader
    from spark_workers.lake.store import Lake

    # a virtual table's members are fixed when the task starts (seed 000: "sub-tables that are
    # added after the stream computing task starts will not participate")
    lake = Lake(lake_root, catalog_url or None)
    members = task_members(lake, c)
    if cfg.premerge or cfg.pack:
        # stage 1 where the rows are read, then partial aggregates (INTERVAL) or packed rows
        # (runtime/packing.py): the JVM sees one row per item or per group and input partition
        pipeline = (SourcePipeline if cfg.premerge else PackingPipeline)(cfg, stage1_duckdb(c, tz))
        reader = ChangeReader(
            lake, c.source.db.name, c.source.table.name, members, align=not c.rules.ignore_update
        )
        items = pipeline.schema(reader.schema())
    fmt = source_format(spark, stream_key or "default", pipeline, items)
    src = _read_source(
        spark,
        fmt,
        c,
        (lake_root, catalog_url),
        start_version,
        history_version,
        ignore_until,
        members,
        skip_history=skip_history,
    )
    if pipeline is None:
        cond, exprs = stage1_spark(c, tz)
        if cond is not None:
            src = src.where(cond)
        staged = src.selectExpr(*exprs)
    else:
        staged = src
    groups = [g.name for g in c.plan.groups]
    bucket = F.pmod(F.hash(*[F.col(f"`{g}`") for g in groups]), F.lit(buckets)) if groups else F.lit(0)
    staged = staged.withColumn("_bucket", bucket.cast("int"))
    stage1_schema = to_arrow_schema(staged.drop("_bucket").schema, timezone="UTC")
    out_schema = from_arrow_schema(OUTPUT_SCHEMA if cfg.pack_output else cfg.output_schema())
    state_schema = "blob binary"
    timeout = GroupStateTimeout.ProcessingTimeTimeout if cfg.timers else GroupStateTimeout.NoTimeout
    unpacked = pipeline.unpacked if isinstance(pipeline, PackingPipeline) else None
    frame = staged.groupBy("_bucket").applyInPandasWithState(
        make_state_func(cfg, stage1_schema, unpacked), out_schema, state_schema, "append", timeout
    )
    return frame, cfg


def _read_source(
    spark: SparkSession,
    fmt: str,
    c: CompiledStream,
    lake: tuple[str, str],
    start_version: int,
    history_version: int | None,
    ignore_until: int | None,
    members: list[str] | None = None,
    skip_history: bool = False,
) -> DataFrame:
    """The stream's rows from the ``tdlake`` source registered as ``fmt`` (``lake``: root and
    catalog URL; ``members``: the virtual child tables of a virtual supertable source,
    ``task_members``; ``skip_history``: the FILL_HISTORY catch-up was cancelled)."""
    return (
        spark.readStream.format(fmt)
        .option("lake", str(lake[0]))
        .option("catalog", lake[1])
        .option("db", c.source.db.name)
        .option("table", c.source.table.name)
        .option("members", "" if members is None else ",".join(members))
        .option("align", "0" if c.rules.ignore_update else "1")
        .option("start_version", str(start_version))
        .option("history_version", "" if history_version is None else str(history_version))
        .option("ignore_until", "" if ignore_until is None else str(ignore_until))
        .option("skip_history", "1" if skip_history else "0")
        .load()
    )


def _source_frame(
    spark: SparkSession,
    c: CompiledStream,
    lake: tuple[str, str],
    tz: str,
    offsets: tuple[int, int | None, int | None, bool],
    stream_key: str,
) -> DataFrame:
    """Stage 1 of a stream without a window in Spark SQL (WHERE, the select items ``_i<k>``, the
    partition values, ``_ts`` and the change-feed columns): what its sink writes. ``offsets``:
    start version, history version, ignore-until version and skip-history, as for
    ``build_stream_frame``."""
    fmt = source_format(spark, stream_key or "default")
    start_version, history_version, ignore_until, skip = offsets
    src = _read_source(spark, fmt, c, lake, start_version, history_version, ignore_until, skip_history=skip)
    cond, exprs = stage1_spark(c, tz)
    if cond is not None:
        src = src.where(cond)
    return src.selectExpr(*exprs)


def task_members(lake: Any, c: CompiledStream) -> list[str] | None:
    """The virtual child tables a stream over a virtual supertable reads for this run of its task
    (None: the source is not virtual; ``lake/virtual.py``)."""
    from spark_workers.lake.virtual import members

    if not c.source.table.virtual:
        return None
    return [m.name for m in members(lake.catalog, c.source.table)]


def start_query(
    spark: SparkSession,
    c: CompiledStream,
    sink: OutputSink,
    *,
    stream_key: str,
    lake_root: str,
    tz: str,
    start_version: int,
    history_version: int | None,
    ignore_until: int | None = None,
    buckets: int = DEFAULT_BUCKETS,
    trigger: str | None = None,
    catalog_url: str = "",
    checkpoints: str = "",
    skip_history: bool = False,
) -> StreamingQuery:
    """Start the query; ``sink.process`` runs for every micro-batch (idempotent on batch id);
    ``trigger`` is the processing-time trigger (default: :func:`trigger_interval`);
    ``catalog_url`` is the lake's catalog (``TDWEB_CATALOG_URL``, "" for SQLite in the lake);
    ``checkpoints`` the checkpoint root (``TDWEB_CHECKPOINTS``, "" for the lake's local folder;
    ``runtime/paths.py``); ``skip_history``: the FILL_HISTORY catch-up was cancelled, the query
    continues from its checkpoint but reads nothing more of the snapshot
    (``lake.changes.next_offset``)."""
    frame, cfg = build_stream_frame(
        spark,
        c,
        lake_root=lake_root,
        tz=tz,
        start_version=start_version,
        history_version=history_version,
        ignore_until=ignore_until,
        buckets=buckets,
        stream_key=stream_key,
        catalog_url=catalog_url,
        skip_history=skip_history,
    )

    def each_batch(df: DataFrame, batch_id: int) -> None:
        t0 = time.perf_counter()
        table = df.toArrow()  # runs the micro-batch: source read, stage 1, shuffle, kernel
        if cfg is not None and cfg.pack_output:
            table = decode_output(table, cfg.output_schema())
        phase = (
            ("history" if table.num_rows and all(table.column("_hist").to_pylist()) else "live")
            if c.plan.projection
            else "history"
            if table.num_rows
            and any(
                h
                for k, h in zip(
                    table.column("_kind").to_pylist(), table.column("_hist").to_pylist(), strict=True
                )
                if k == "s"
            )
            else "live"
        )
        sink.process(table, int(batch_id), phase=phase, started=t0)

    state = StreamState(lake_root, stream_key, checkpoints)
    state.make_parent()
    return (
        frame.writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", state.checkpoint)
        .queryName(f"tdweb_{stream_key}")
        .trigger(processingTime=trigger or trigger_interval(c))
        .start()
    )


def committed_version(query: object) -> int | None:
    """The source version the query has fully processed (its last committed end offset), or None
    while it is still in the FILL_HISTORY snapshot."""
    try:
        progress = query.lastProgress  # type: ignore[attr-defined]
        if not progress or not progress.get("sources"):
            return None
        end = progress["sources"][0].get("endOffset")
        off = json.loads(end) if isinstance(end, str) else end
        if off and int(off.get("h", -1)) < 0:
            return int(off["v"])
    except Exception:  # progress shapes vary between Spark versions; a missing value is harmless
        return None
    return None
