"""Rows a stream's stage-1 filter removed, computed on demand ("Why no output?", issue 16).

A legacy stream's WHERE clause and a 3.3.7 stream's ``PRE_FILTER(...)`` option (seed 002
"stream_options") are stage 1's ``c.plan.filter`` (``runtime/plan.py`` ``stage1_duckdb`` /
``stage1_spark``): the rows they remove never reach the engine, so its drop counters
(``engine/stream.py`` ``drop_stats``) never see them. Rather than count them on the streaming hot
path, :func:`filter_check` re-reads the newest rows the stream has read with its own reader
(``lake/changes.py`` ``ChangeReader``: the change feed after CREATE STREAM, then a FILL_HISTORY
snapshot) and evaluates the same condition, rendered as stage 1 renders it (``to_sql`` over the
source's scope), in DuckDB.

Bounds: at most ``limit`` rows (the newest first; the change feed is read newest versions first,
in growing version ranges, then the history snapshot's newest time buckets), reading stops after
``read_s`` seconds, and the query runs within a statement budget (``TDWEB_SQL_TIMEOUT_S``, the
DuckDB memory limit ``TDWEB_SQL_MEMORY_LIMIT``).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from spark_workers.duration import NS_PER_PRECISION
from spark_workers.engine.rows import INSERT, UPDATE_POST
from spark_workers.lake.changes import ChangeReader
from spark_workers.lake.store import Lake
from spark_workers.limits import statement_budget
from spark_workers.query.duck import DuckSession, quote
from spark_workers.query.select import EPOCH_FN
from spark_workers.sql.translate import to_sql
from spark_workers.streams.compile import CompiledStream
from spark_workers.streams.spec import V337

LIMIT_ROWS = 100_000
READ_S = 10.0  # reading more version ranges stops after this many seconds
SAMPLE_ROWS = 5
MAX_VERSION_STEP = 64


@dataclass
class FilterCheck:
    """What the stage-1 filter did to the rows examined.

    Attributes:
        clause: ``WHERE`` (a legacy stream) or ``PRE_FILTER`` (a 3.3.7 stream).
        condition: the condition's text.
        examined: rows examined (inserted / updated rows the stream read, newest first).
        failed: examined rows the condition did not keep (false or NULL, as a WHERE clause).
        complete: every row the stream read was examined (False: the newest ``limit`` only, or
            the reading stopped at its time bound).
        columns: the columns the condition reads (as the sample shows them).
        sample: up to ``SAMPLE_ROWS`` failing rows, the latest first: ``{ts_ms, tbname, values}``
            (``ts_ms`` epoch milliseconds, ``tbname`` None for a normal table, ``values`` the
            condition's columns, JSON values).
    """

    clause: str
    condition: str
    examined: int = 0
    failed: int = 0
    complete: bool = True
    columns: list[str] = field(default_factory=list)
    sample: list[dict[str, Any]] = field(default_factory=list)


def filter_clause(c: CompiledStream) -> tuple[str, str] | None:
    """``(clause, condition text)`` of the stream's stage-1 filter; None without one."""
    if c.plan.filter is None:
        return None
    if c.spec.syntax == V337:
        return "PRE_FILTER", c.spec.options.pre_filter or c.plan.filter.sql()
    return "WHERE", c.plan.filter.sql()


def filter_check(
    c: CompiledStream,
    lake: Lake,
    tz: str,
    *,
    start_version: int,
    history_version: int | None,
    ignore_until: int | None = None,
    limit: int = LIMIT_ROWS,
    read_s: float = READ_S,
) -> FilterCheck | None:
    """Evaluate the stream's stage-1 filter over the newest rows it has read (module docstring).

    Args:
        c: the compiled stream; lake: the lake; tz: ``TDWEB_TIMEZONE``.
        start_version / history_version / ignore_until: the stream's registered versions (the
            change feed after ``history_version`` or else ``start_version``; changes up to
            ``ignore_until`` were skipped by RESUME ... IGNORE UNTREATED, seed 000).
        limit: most rows examined; read_s: the reading's time bound in seconds.

    Returns:
        None for a stream without a filter or reading a virtual table (its change feed is
        offset by commit times) or no table.

    Raises:
        TdError: the source cannot be read (dropped, vacuumed) or the query failed or timed out;
        OSError and Arrow errors from the lake.
    """
    named = filter_clause(c)
    src, flt = c.source, c.plan.filter
    if named is None or flt is None or c.spec.source is None or src.table.virtual or src.storage.virtual:
        return None
    reader = ChangeReader(lake, src.db.name, src.table.name)
    rows, complete = _newest_rows(reader, start_version, history_version, ignore_until, limit, read_s)
    check = FilterCheck(*named, complete=complete)
    scope = src.scope(tz)
    cond = to_sql(flt, "duckdb", scope)
    names = {n.lower(): n for n in rows.column_names}
    check.columns = list(
        dict.fromkeys(
            names[col.name.lower()]
            for col in flt.find_all(exp.Column)
            if col.name.lower() in names and col.name.lower() != "tbname"
        )
    )
    ts = quote(src.table.columns[0].name)
    epoch = f"{EPOCH_FN[c.precision]}({ts})"
    keep = f'(NOT "_hist" OR {epoch} >= {int(c.history_from)})' if c.history_from is not None else "TRUE"
    with statement_budget(), DuckSession(None) as duck:
        view = duck.register_arrow(ns_timestamps(c, rows))
        base = f"SELECT * FROM {view} WHERE {keep}"
        counts = duck.query(
            f"SELECT count(*) AS n, count(*) FILTER (WHERE ({cond}) IS NOT TRUE) AS bad FROM ({base}) r"
        ).to_pylist()[0]
        check.examined, check.failed = int(counts["n"] or 0), int(counts["bad"] or 0)
        picked = ", ".join(quote(n) for n in check.columns)
        sample = duck.query(
            f'SELECT tbname, {epoch} AS "__t"{", " + picked if picked else ""} FROM ({base}) r '
            f'WHERE ({cond}) IS NOT TRUE ORDER BY "__t" DESC, "_seq" DESC LIMIT {SAMPLE_ROWS}'
        ).to_pylist()
    per = NS_PER_PRECISION[c.precision]
    check.sample = [
        {
            "ts_ms": int(r["__t"]) * per // 1_000_000,
            "tbname": r["tbname"] if src.storage.kind != "normal" else None,
            "values": {n: _json_value(r[n]) for n in check.columns},
        }
        for r in sample
    ]
    return check


def _newest_rows(
    reader: ChangeReader,
    start_version: int,
    history_version: int | None,
    ignore_until: int | None,
    limit: int,
    read_s: float,
) -> tuple[pa.Table, bool]:
    """``(rows, complete)``: inserted rows the stream read, the newest versions first (the
    change feed after the stream's start in version ranges of 1, 2, 4, ... 64 versions, then the
    FILL_HISTORY snapshot's newest time buckets), at most ``limit`` rows."""
    deadline = time.monotonic() + read_s
    base = history_version if history_version is not None else start_version
    lo_base = max(base, ignore_until) if ignore_until is not None else base
    parts: list[pa.Table] = []
    n, end, step = 0, reader.latest_version(), 1
    while end > lo_base and n < limit and time.monotonic() < deadline:
        lo = max(lo_base, end - step)
        t = reader.read_changes(lo, end)
        t = t.filter(pc.is_in(t.column("_ct"), value_set=pa.array([INSERT, UPDATE_POST], pa.int8())))
        parts.append(t)
        n, end, step = n + t.num_rows, lo, min(step * 2, MAX_VERSION_STEP)
    complete = end <= lo_base
    if history_version is not None and complete and n < limit:
        buckets = reader.history_buckets(history_version)
        i = len(buckets)
        while i > 0 and n < limit and time.monotonic() < deadline:
            j = max(0, i - 8)
            t = reader.read_history(history_version, buckets[j][0], buckets[i - 1][0])
            parts.append(t)
            n, i = n + t.num_rows, j
        complete = i == 0
    rows = pa.concat_tables(parts) if parts else reader.schema().empty_table()
    if rows.num_rows > limit:
        rows, complete = rows.slice(0, limit), False
    return rows, complete


def ns_timestamps(c: CompiledStream, rows: pa.Table) -> pa.Table:
    """Change rows with a nanosecond database's TIMESTAMP columns (int64 in the change feed) as
    timestamps, as stage 1 reads them from lake snapshots (``DuckSession``); the local runner
    and :func:`filter_check` feed stage 1 with them."""
    if c.precision != "ns":
        return rows
    storage = c.source.storage
    for col in (*storage.columns, *storage.tags):
        if col.type.name == "TIMESTAMP" and col.name in rows.column_names:
            i = rows.schema.get_field_index(col.name)
            if pa.types.is_integer(rows.schema.field(i).type):
                rows = rows.set_column(i, col.name, rows.column(i).cast(pa.timestamp("ns", tz="UTC")))
    return rows


def _json_value(v: Any) -> Any:
    """A sample value as JSON: numbers, text, booleans and None as they are, times as ISO 8601,
    bytes as text (invalid UTF-8 as hex), anything else as its text."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            return v.hex()
    return str(v)
