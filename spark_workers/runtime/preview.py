"""Preview a stream design on real data with the batch engine, without deploying it.

``preview_stream`` runs a CREATE STREAM statement (legacy or TDengine 3.3.7 syntax) over the rows
of its trigger table whose first column is in ``[start, end)`` and answers what the stream would
produce: its windows (for a timeline chart), its output rows and the notification events it would
send. Nothing is written to the real lake and nothing is sent:

1. the statement is parsed and checked against the real catalog exactly as CREATE STREAM does
   (same errors, same positions), then refused if it cannot be previewed (PERIOD triggers,
   processing-time windows);
2. a scratch lake is made in a temporary folder, holding copies of the catalog entries (databases,
   supertable schemas, the subtables with rows in the range and their tag values) of the trigger
   table and of every table the computation reads, their rows in the range (read from one
   snapshot of each real table), and the output table's definition when it already exists;
3. the stream is compiled over the scratch lake with FILL_HISTORY forced (the copied rows are its
   history) and run to completion by ``LocalRunner`` — the same stage 1, kernel and output sink as
   the Spark query — with every window event requested from the engine (so streams without
   NOTIFY have windows too), history events notified (the preview shows what the rows would cause
   if they arrived live), a clock standing at the first row while the rows are processed and at
   the end of the range for one timer step afterwards (MAX_DELAY, FORCE_WINDOW_CLOSE) and a
   ``Sender`` that records messages instead of sending them;
4. the windows come from the engine's trigger events (the last event of each window: a window
   still open at the end of the range is reported with event ``WINDOW_OPEN``), the rows from the
   scratch output table, the notifications from the recorded messages; the scratch lake is then
   deleted.

Cost: a count over the real tables' timestamp column, one copy of the rows in the range (refused
above ``max_input_rows``), and the stream's own work over them (about the engine's rows/s).
"""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
from sqlglot import exp

from spark_workers.access import ROOT, Principal
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Database, Table
from spark_workers.lake.names import SYSTEM_DATABASES
from spark_workers.lake.store import Lake
from spark_workers.lake.virtual import members, origins
from spark_workers.lake.virtual import plan as virtual_plan
from spark_workers.notify.messages import window_id
from spark_workers.notify.sender import Sender
from spark_workers.query.planner import Source, resolve
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.sink import BatchReport, OutputSink
from spark_workers.sql import ast
from spark_workers.sql.lexer import TBNAME, TROWS
from spark_workers.sql.parser import parse_one
from spark_workers.streams.compile import CompiledStream, compile_stream, ensure_output_table
from spark_workers.streams.create import (
    check_stream_access,
    check_virtual_source,
    compile_statement,
    source_version,
    statement_spec,
)
from spark_workers.streams.spec import StreamSpec

PER_MS = {"ms": 1, "us": 1_000, "ns": 1_000_000}
DEFAULT_MAX_WINDOWS = 10_000


@dataclass
class _Copy:
    """One real storage table (supertable or normal table) to copy: all its subtables' rows, or
    only those of ``tbnames``."""

    db: Database
    storage: Table
    tbnames: set[str] | None = field(default_factory=set)  # None: every subtable

    @property
    def key(self) -> tuple[str, str]:
        return (self.db.name.lower(), self.storage.name.lower())


class _RecordingSender(Sender):
    """A Sender that records each message once (the same message goes to every URL) and sends
    nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[dict[str, Any]] = []
        self._seen: set[str] = set()

    def deliver(self, url: str, message: dict[str, Any], *, on_failure: str) -> bool:
        mid = str(message.get("messageId"))
        if mid not in self._seen:
            self._seen.add(mid)
            self.messages.append(message)
        return True


class _RecordingSink(OutputSink):
    """The stream's output sink, keeping the trigger events and results of every micro-batch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: list[pa.Table] = []
        self.results: list[pa.Table] = []

    def process(
        self,
        batch: pa.Table,
        batch_id: int,
        *,
        phase: str = "live",
        started: float | None = None,
        now: int | None = None,
        history_done: bool = False,
    ) -> BatchReport:
        if "_kind" not in batch.column_names:  # a stream without a window: rows, no windows
            return super().process(batch, batch_id, phase=phase, started=started, history_done=history_done)
        kind = batch.column("_kind")
        cols = ["_gkey", "_wstart", "_wend"]
        self.events.append(batch.filter(pc.equal(kind, "e")).select([*cols, "_event"]))
        self.results.append(batch.filter(pc.equal(kind, "r")).select(cols))
        return super().process(
            batch, batch_id, phase=phase, started=started, now=now, history_done=history_done
        )

    def groups_by_subtable(self) -> dict[str, str]:
        """Output subtable name -> the group key whose rows went there."""
        return {name: gkey for gkey, name in self._subtables.items()}


def preview_stream(
    lake: Lake,
    sql: str,
    *,
    start_ms: int | None,
    end_ms: int | None,
    limit: int = 1000,
    max_input_rows: int = 500_000,
    tz: str = "UTC",
    default_db: str | None = None,
    max_windows: int = DEFAULT_MAX_WINDOWS,
    principal: Principal = ROOT,
    default_span_ms: int | None = None,
) -> dict[str, Any]:
    """Run a CREATE STREAM statement over ``[start_ms, end_ms)`` of its trigger table (module
    docstring) and answer what it would produce, without writing to ``lake`` or sending anything.

    Args:
        lake: the real lake (only read).
        sql: one CREATE STREAM statement, legacy (seed 000) or TDengine 3.3.7 (seed 002) syntax.
        start_ms / end_ms: the range of the trigger table's first column, epoch milliseconds, start
            inclusive, end exclusive; None leaves that side open.
        limit: at most this many output rows and notification events are returned.
        max_input_rows: refuse ranges holding more rows than this (all tables copied together).
        tz: ``TDWEB_TIMEZONE`` (literals without a zone, time-zone aware functions).
        default_db: database of unqualified names.
        max_windows: at most this many windows are returned.
        principal: the user asking; the stream's tables are read with its privileges
            (``streams.check_stream_access``; the default superuser is for tools and tests).
        default_span_ms: no ``start_ms``: start this long before the trigger table's last row.

    Returns:
        JSON-able dict::

            {"windows": [{"group": str, "start": ms, "end": ms | None,
                          "event": "WINDOW_OPEN" | "WINDOW_CLOSE" | "WINDOW_INVALIDATION" | "ON_TIME",
                          "trigger_id": str}],       # one per window, its last event, by group, start
             "rows": {"columns": [{"name": str, "type": str}], "data": [[...]]},
             "notifications": [event dict of notify/messages.py],   # in sending order
             "input_rows": int, "output_rows": int, "window_count": int,
             "notification_count": int, "elapsed_ms": float, "truncated": bool,
             "range": {"start": ms | None, "end": ms | None},   # the range run
             "deploy": deploy_effect(...)}   # what deploying does with these rows

        ``group`` is the group's PARTITION BY values joined by ", " ("" without PARTITION BY);
        ``end`` is null for a window still open whose end is not known yet (INTERVAL windows
        carry their nominal end). ``rows`` holds a leading ``group`` column then the output
        table's columns, sorted by group then first column; timestamps (windows and rows) are epoch
        milliseconds. ``truncated`` is true when rows, windows or notifications were cut to their
        limits (``*_count`` / ``output_rows`` are the totals). Notifications are the events the
        stream's NOTIFY clause asks for, as if the rows arrived live (``deploy``: what a deploy
        sends). ``trigger_id`` equals the ``triggerId`` of the window's notification events.

    Raises:
        SqlError: bad SQL (the parser's error, with its position, unchanged); the checks of CREATE
            STREAM; NOT_SUPPORTED for PERIOD triggers and processing-time windows;
            INVALID_OPERATION for an empty range or more than ``max_input_rows`` rows in it.
        CatalogError: a database or table is missing.
    """
    t0 = time.perf_counter()
    _check_preview_arguments(start_ms, end_ms, limit, max_input_rows)
    spec = _spec(lake, sql, tz, default_db)
    assert spec.source is not None
    check_stream_access(principal, spec, lake.catalog, writes=False)
    trigger = resolve(lake.catalog, ast.TableName(spec.source.table, spec.source.db), spec.source.db)
    if start_ms is None and default_span_ms is not None:
        start_ms = _default_start(lake, trigger, end_ms, default_span_ms)
    lo, hi = (None if t is None else t * PER_MS[trigger.db.precision] for t in (start_ms, end_ms))
    copies = _copies(lake, spec, trigger.db, trigger.table, tz)
    versions = _check_input_size(lake, copies, lo, hi, max_input_rows)
    with tempfile.TemporaryDirectory(prefix="tdweb-preview-") as tmp:
        scratch = Lake(Path(tmp) / "lake")
        input_rows = _fill_scratch(lake, scratch, spec, trigger, copies, versions, lo, hi)
        compiled = _compile(lake, scratch, spec, sql, tz)
        answer = _run(scratch, compiled, tz, end=hi, limit=limit, max_windows=max_windows)
    answer.update(input_rows=input_rows, range={"start": start_ms, "end": end_ms})
    answer["deploy"] = deploy_effect(spec, answer["output_rows"], answer["notification_count"])
    answer["elapsed_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    return answer


def _default_start(lake: Lake, trigger: Source, end_ms: int | None, span_ms: int) -> int | None:
    """``span_ms`` before the trigger table's last row before ``end_ms`` (epoch ms; a subtable's
    own rows); None for a virtual or empty table (the range stays open)."""
    if trigger.table.virtual:
        return None
    per_ms = PER_MS[trigger.db.precision]
    ts_max = None if end_ms is None else end_ms * per_ms - 1
    names = [trigger.table.name] if trigger.table.kind == "sub" else None
    ts = trigger.storage.columns[0].physical
    rows = lake.read(trigger.db, trigger.storage, tbnames=names, ts_max=ts_max, columns=[ts])
    if not rows.num_rows:
        return None
    last = pc.max(rows.column(ts)).as_py()
    last_units = int(last.timestamp() * 1000) * per_ms if isinstance(last, dt.datetime) else int(last)
    return last_units // per_ms - span_ms


def deploy_effect(spec: StreamSpec, output_rows: int, notifications: int) -> dict[str, Any]:
    """What deploying the previewed statement does with the previewed (stored) rows: a new stream
    treats them as history, computed only with FILL_HISTORY (seed 000 "FILL_HISTORY", seed 002
    "Stream Processing Control Options": off by default) and notified only with NOTIFY_HISTORY
    (seed 000 / 002 "Notification Mechanism": "Default: not sent").

    Returns:
        ``{"fill_history", "notify_history", "output_rows", "notifications", "notes"}``: the
        output rows and notifications deploying produces for these rows, and sentences saying why
        they differ from the preview's (rows arriving live).
    """
    fill = bool(spec.options.fill_history)
    notify_history = bool(spec.notify is not None and spec.notify.history)
    notes = []
    if not fill:
        notes.append(
            "FILL_HISTORY is off: deployed, the stream computes only rows written after it starts; "
            f"these stored rows give none of the {output_rows:,} output rows and {notifications:,} "
            "notifications shown, which are what the same rows arriving live would give"
        )
    elif spec.notify is not None and not notify_history and notifications:
        notes.append(
            f"NOTIFY_HISTORY is off: deploying computes these rows (FILL_HISTORY) but sends none of "
            f"their {notifications:,} notifications; rows arriving live are notified as shown"
        )
    return {
        "fill_history": fill,
        "notify_history": notify_history,
        "output_rows": output_rows if fill else 0,
        "notifications": notifications if fill and notify_history else 0,
        "notes": notes,
    }


def _check_preview_arguments(
    start_ms: int | None, end_ms: int | None, limit: int, max_input_rows: int
) -> None:
    """A non-empty range and non-negative limits (INVALID_OPERATION otherwise)."""
    if start_ms is not None and end_ms is not None and start_ms >= end_ms:
        raise SqlError(
            f"the preview range is empty: start {start_ms} is not before end {end_ms}",
            code=Code.INVALID_OPERATION,
        )
    if limit < 0 or max_input_rows < 0:
        raise SqlError("limit and max_input_rows must not be negative", code=Code.INVALID_OPERATION)


# ---------------------------------------------------------------------- the statement
def _spec(lake: Lake, sql: str, tz: str, default_db: str | None) -> StreamSpec:
    """The StreamSpec of ``sql`` after CREATE STREAM's own checks against the real catalog."""
    stmt = parse_one(sql)  # a syntax error propagates unchanged, with its position
    if not isinstance(stmt, ast.CreateStreamLegacy | ast.CreateStream337):
        raise SqlError(
            "a preview runs a CREATE STREAM statement", sql=sql, offset=0, code=Code.INVALID_OPERATION
        )
    spec = statement_spec(stmt, sql, default_db, lake.catalog)
    if isinstance(stmt, ast.CreateStreamLegacy):  # compile errors, positioned, before copying rows
        compile_statement(stmt, spec, sql, lake, tz)
    if spec.source is not None:  # a virtual trigger table's rules (seed 000)
        src = lake.catalog.table(spec.source.db, spec.source.table)
        check_virtual_source(stmt, spec, src, sql, lake.catalog)
    if spec.trigger.get("type") == "period":
        raise SqlError(
            "preview of PERIOD triggers is not supported: they fire on system time over the rows "
            "written since the previous trigger, which a time range of stored rows does not have",
            sql=sql,
            offset=None,
            code=Code.NOT_SUPPORTED,
        )
    if not spec.options.event_time:
        raise SqlError(
            "preview of processing-time windows is not supported: they follow the rows' arrival "
            "times, which stored rows do not have",
            sql=sql,
            offset=None,
            code=Code.NOT_SUPPORTED,
        )
    return spec


def _referenced(lake: Lake, spec: StreamSpec, db: Database, table: Table) -> list[tuple[Database, Table]]:
    """The trigger table and every table the computation reads (``information_schema``
    excepted), as written: virtual tables included."""
    refs: list[tuple[Database, Table]] = [(db, table)]
    if spec.query:
        stmt = parse_one(spec.query)
        if isinstance(stmt, ast.Select):
            sel = stmt.query.select
            ctes = {c.alias.lower() for c in sel.find_all(exp.CTE)}
            home = spec.db or db.name
            for t in sel.find_all(exp.Table):
                name = t.name
                if not name or isinstance(t.this, exp.Subquery | exp.Select):
                    continue
                if name.lower() in (TROWS, TBNAME) or (name.lower() in ctes and not t.db):
                    continue
                if (t.db or home).lower() in SYSTEM_DATABASES:
                    continue
                src = resolve(lake.catalog, ast.TableName(name, t.db or None), home)
                refs.append((src.db, src.table))
    return refs


def _physical(lake: Lake, refs: list[tuple[Database, Table]]) -> list[tuple[Database, Table]]:
    """``refs`` with every virtual table replaced by the tables its columns reference
    (``lake/virtual.py``)."""
    out: list[tuple[Database, Table]] = []
    for d, ref in refs:
        if not ref.virtual:
            out.append((d, ref))
            continue
        for member in members(lake.catalog, ref):
            for o in origins(lake.catalog, member):
                out.append((lake.catalog.require_database(o.db), o.table))
    return out


def _copies(
    lake: Lake, spec: StreamSpec, db: Database, table: Table, tz: str
) -> dict[tuple[str, str], _Copy]:
    """The real storage tables to copy: the trigger table's, and those of every table the
    computation reads (``information_schema`` excepted; a virtual table's referenced tables),
    keyed by (db, storage) lower-cased."""
    refs = _physical(lake, _referenced(lake, spec, db, table))
    out: dict[tuple[str, str], _Copy] = {}
    for d, ref in refs:
        storage = lake.catalog.require_table(d.name, ref.storage) if ref.kind == "sub" else ref
        c = out.setdefault((d.name.lower(), storage.name.lower()), _Copy(d, storage))
        if ref.kind != "sub":
            c.tbnames = None
        elif c.tbnames is not None:
            c.tbnames.add(ref.name)
    return out


def _copy_virtual(real: Lake, scratch: Lake, refs: list[tuple[Database, Table]]) -> None:
    """The catalog entries of the virtual tables in ``refs`` (a virtual supertable with its
    virtual child tables) in the scratch lake, after the tables they reference were copied."""
    for d, ref in refs:
        if not ref.virtual:
            continue
        _copy_database(real, scratch, d.name)
        top = real.catalog.require_table(d.name, ref.storage) if ref.kind == "sub" else ref
        for t in [top, *([m for m in members(real.catalog, top)] if top.kind == "super" else [])]:
            if scratch.catalog.table(d.name, t.name) is None:
                scratch.catalog.create_table(t)


# ---------------------------------------------------------------------- copying
def _ts_filter(db: Database, c: _Copy, lo: int | None, hi: int | None) -> pads.Expression | None:
    """Dataset filter of ``lo <= ts < hi`` (precision units), with the ``_bucket`` pruning."""
    ts_name = c.storage.columns[0].physical
    bucket_len = db.duration.in_precision(db.precision)

    def scalar(v: int) -> pa.Scalar:
        if db.precision == "ns":
            return pa.scalar(v, pa.int64())
        return pa.scalar(v * (1000 if db.precision == "ms" else 1), pa.timestamp("us", tz="UTC"))

    flt = None
    if lo is not None:
        flt = (pads.field("_bucket") >= lo // bucket_len) & (pads.field(ts_name) >= scalar(lo))
    if hi is not None:
        f = (pads.field("_bucket") <= (hi - 1) // bucket_len) & (pads.field(ts_name) < scalar(hi))
        flt = f if flt is None else flt & f
    return flt


def _count(lake: Lake, c: _Copy, version: int, lo: int | None, hi: int | None) -> int:
    """Rows of ``c`` in the range at ``version`` (reads the timestamp column, and ``tbname`` when
    only some subtables are copied)."""
    _, ds = lake.dataset(c.db, c.storage, version)
    flt = _ts_filter(c.db, c, lo, hi)
    if c.tbnames is None:
        return int(ds.count_rows(filter=flt))
    names = ds.to_table(filter=flt, columns=["tbname"]).column("tbname").cast(pa.string())
    return int(pc.sum(pc.is_in(names, value_set=pa.array(sorted(c.tbnames), pa.string()))).as_py() or 0)


def _copy_database(real: Lake, scratch: Lake, name: str) -> Database:
    """The database ``name`` in the scratch lake, with the real one's precision and options."""
    db = real.catalog.require_database(name)
    if scratch.catalog.database(db.name) is None:
        scratch.catalog.create_database(db.name, precision=db.precision, options=dict(db.options))
    return db


def _copy_table_definition(scratch: Lake, db: Database, table: Table) -> None:
    """A supertable's or normal table's catalog entry and (empty) Delta table in the scratch lake."""
    if scratch.catalog.table(db.name, table.name) is None:
        scratch.catalog.create_table(
            Table(db.name, table.name, table.kind, table.columns, table.tags, None, {}, table.comment)
        )
        scratch.create_storage(db, table)


def _copy(real: Lake, scratch: Lake, c: _Copy, version: int, lo: int | None, hi: int | None) -> pa.Table:
    """Copy ``c``'s definition, the subtables with rows in the range (with their tag values) and
    those rows (one commit) into the scratch lake; returns the rows (engine form)."""
    db = _copy_database(real, scratch, c.db.name)
    _copy_table_definition(scratch, db, c.storage)
    rows = real.read(
        db,
        c.storage,
        version=version,
        tbnames=None if c.tbnames is None else sorted(c.tbnames),
        ts_min=lo,
        ts_max=None if hi is None else hi - 1,
    )
    if c.storage.kind == "super":
        names = set(pc.unique(rows.column("tbname")).to_pylist()) if rows.num_rows else set()
        names |= c.tbnames or set()
        subs = []
        for n in sorted(names):
            t = real.catalog.table(db.name, n)
            if t is not None and t.kind == "sub":
                subs.append(Table(db.name, t.name, "sub", (), (), c.storage.name, dict(t.tag_values)))
        scratch.catalog.create_subtables(subs)
    if rows.num_rows:
        scratch.write(db, scratch.catalog.require_table(db.name, c.storage.name), rows)
    return rows


def _check_input_size(
    lake: Lake, copies: dict[tuple[str, str], _Copy], lo: int | None, hi: int | None, max_input_rows: int
) -> dict[tuple[str, str], int]:
    """The version to copy of each table in ``copies`` (same keys), after checking that the range
    holds at most ``max_input_rows`` rows of them together (INVALID_OPERATION giving the count)."""
    versions = {k: lake.version(c.db.name, c.storage.name) for k, c in copies.items()}
    counted = {k: _count(lake, c, versions[k], lo, hi) for k, c in copies.items()}
    total = sum(counted.values())
    if total > max_input_rows:
        names = ", ".join(f"{c.db.name}.{c.storage.name}" for c in copies.values())
        raise SqlError(
            f"the preview range holds {total:,} rows of {names}; a preview reads at most "
            f"{max_input_rows:,}: narrow the time range",
            code=Code.INVALID_OPERATION,
        )
    return versions


def _fill_scratch(
    lake: Lake,
    scratch: Lake,
    spec: StreamSpec,
    trigger: Source,
    copies: dict[tuple[str, str], _Copy],
    versions: dict[tuple[str, str], int],
    lo: int | None,
    hi: int | None,
) -> int:
    """Copy the tables in ``copies`` (rows in the range) and the computation's and output's
    databases into the scratch lake; returns the trigger table's rows copied."""
    input_rows = 0
    vp = virtual_plan(lake.catalog, trigger.table) if trigger.table.virtual else None
    read = {(d.lower(), st.lower()): names for d, st, names in vp.storages} if vp else {}
    for k, c in copies.items():
        rows = _copy(lake, scratch, c, versions[k], lo, hi)
        if vp is not None:
            if k in read and rows.num_rows:
                keep = pc.is_in(rows.column("tbname"), pa.array(list(read[k]), pa.string()))
                input_rows += int(pc.sum(keep).as_py() or 0)
        elif k == (trigger.db.name.lower(), trigger.storage.name.lower()):
            input_rows = (
                rows.num_rows
                if trigger.table.kind != "sub"
                else int(pc.sum(pc.equal(rows.column("tbname"), trigger.table.name)).as_py() or 0)
            )
    _copy_virtual(lake, scratch, _referenced(lake, spec, trigger.db, trigger.table))
    if spec.db and lake.catalog.database(spec.db) is not None:  # the computation's default
        _copy_database(lake, scratch, spec.db)
    if spec.output is not None:
        _copy_database(lake, scratch, spec.output.db)
    return input_rows


# ---------------------------------------------------------------------- running
def _compile(real: Lake, scratch: Lake, spec: StreamSpec, sql: str, tz: str) -> CompiledStream:
    """The stream compiled over the scratch lake: FILL_HISTORY forced, its output table created
    (from the real one's definition when that exists, so the same checks apply), every window
    event requested from the engine and history events notified."""
    spec = copy.deepcopy(spec)
    spec.options.fill_history = True
    assert spec.source is not None
    if spec.output is not None:
        src = scratch.catalog.require_table(spec.source.db, spec.source.table)
        if spec.output.db.lower() == spec.source.db.lower() and spec.output.table.lower() in (
            src.name.lower(),
            src.storage.lower(),
        ):
            raise SqlError(
                "a stream cannot write into its own source table", sql=sql, code=Code.STREAM_OUTPUT_CONFLICT
            )
        existing = real.catalog.table(spec.output.db, spec.output.table)
        if existing is not None and existing.kind != "sub":
            db = _copy_database(real, scratch, spec.output.db)
            if scratch.catalog.table(db.name, existing.name) is None:
                scratch.catalog.create_table(
                    Table(db.name, existing.name, existing.kind, existing.columns, existing.tags)
                )
    compiled = compile_stream(spec, scratch, tz, notify_all=True)  # the preview lists every event
    if compiled.has_output:
        ensure_output_table(compiled, scratch, sql=sql)
        out = scratch.catalog.require_table(compiled.out_db, compiled.out_table)
        if not scratch.exists(compiled.out_db, out.name):
            scratch.create_storage(scratch.catalog.require_database(compiled.out_db), out)
    return compiled


def _run(
    scratch: Lake, c: CompiledStream, tz: str, *, end: int | None, limit: int, max_windows: int
) -> dict[str, Any]:
    """Run the compiled stream over the scratch lake's rows and collect its answer."""
    assert c.spec.source is not None
    src = c.source
    version = source_version(scratch, c)
    key = c.spec.name.lower()
    sender = _RecordingSender()
    if src.table.virtual:  # the rows are those of the tables it reads (lake/virtual.py)
        bounds = []
        for d, st, _names in virtual_plan(scratch.catalog, src.table).storages:
            sdb = scratch.catalog.require_database(d)
            bounds.append(_ts_bounds(scratch, sdb, scratch.catalog.require_table(sdb.name, st)))
        firsts = [b[0] for b in bounds if b[0] is not None]
        lasts = [b[1] for b in bounds if b[1] is not None]
        first_ts, last_ts = (min(firsts) if firsts else None), (max(lasts) if lasts else None)
    else:
        first_ts, last_ts = _ts_bounds(scratch, src.db, src.storage)
    # timers (MAX_DELAY, FORCE_WINDOW_CLOSE): the clock stands at the first row while the rows
    # arrive (none is late), then at the end of the range for one timer step
    clock = [first_ts if first_ts is not None else (end or 0)]
    runner = LocalRunner(
        c,
        scratch,
        stream_key=key,
        start_version=version,
        history_version=version,
        tz=tz,
        buckets=1,
        clock=lambda: clock[0],
    )
    sink = _RecordingSink(c, scratch, stream_key=key, tz=tz, sender=sender)
    runner.sink = sink
    runner.run()
    clock[0] = end if end is not None else (last_ts + 1 if last_ts is not None else clock[0])
    runner.tick()
    windows = _windows(sink, c, key)
    columns, data, total_rows = _rows(scratch, sink, c)
    events = [e for m in sender.messages for s in m.get("streams", []) for e in s.get("events", [])]
    return {
        "windows": windows[:max_windows],
        "rows": {"columns": columns, "data": data[:limit]},
        "notifications": [_jsonable(e) for e in events[:limit]],
        "output_rows": total_rows,
        "window_count": len(windows),
        "notification_count": len(events),
        "truncated": len(windows) > max_windows or total_rows > limit or len(events) > limit,
    }


def _ts_bounds(lake: Lake, db: Database, storage: Table) -> tuple[int | None, int | None]:
    """The first and last timestamp (precision units) of a table's rows; None when empty."""
    ts = storage.columns[0].physical
    rows = lake.read(db, storage, columns=[ts])
    if not rows.num_rows:
        return None, None
    mm = pc.min_max(rows.column(ts))
    return int(mm["min"].as_py()), int(mm["max"].as_py())


def group_text(gkey: str) -> str:
    """A group key (JSON list of PARTITION BY values) as text: the values joined by ", "."""
    try:
        values = json.loads(gkey)
    except (TypeError, ValueError):
        return str(gkey)
    if not isinstance(values, list):
        return str(values)
    return ", ".join("NULL" if v is None else str(v) for v in values)


def _windows(sink: _RecordingSink, c: CompiledStream, key: str) -> list[dict[str, Any]]:
    """One entry per (group, window start): its last trigger event; SLIDING triggers' periods are
    their results (``ON_TIME``)."""
    per = PER_MS[c.precision]
    last: dict[tuple[str, int], tuple[int | None, str]] = {}
    for t in sink.events:
        for g, w, we, ev in zip(
            t.column("_gkey").to_pylist(),
            t.column("_wstart").to_pylist(),
            t.column("_wend").to_pylist(),
            t.column("_event").to_pylist(),
            strict=True,
        ):
            last[(g, int(w))] = (None if we is None else int(we), str(ev))
    if c.spec.trigger.get("type") == "sliding":
        for t in sink.results:
            for g, w, we in zip(
                t.column("_gkey").to_pylist(),
                t.column("_wstart").to_pylist(),
                t.column("_wend").to_pylist(),
                strict=True,
            ):
                last[(g, int(w))] = (None if we is None else int(we), "ON_TIME")
    out = []
    for (g, w), (we, ev) in last.items():
        out.append(
            {
                "group": group_text(g),
                "start": w // per,
                "end": None if we is None else we // per,
                "event": ev,
                "trigger_id": window_id(key, g, w),
            }
        )
    out.sort(key=lambda d: (d["group"], d["start"]))
    return out


def _rows(
    scratch: Lake, sink: _RecordingSink, c: CompiledStream
) -> tuple[list[dict[str, str]], list[list[Any]], int]:
    """The output table's rows: (columns, data sorted by group then first column, total)."""
    if not sink.writes_output or not scratch.exists(c.out_db, c.out_table):
        return [{"name": "group", "type": "VARCHAR"}], [], 0
    db = scratch.catalog.require_database(c.out_db)
    table = scratch.catalog.require_table(c.out_db, c.out_table)
    columns = [{"name": "group", "type": "VARCHAR"}] + [
        {"name": col.name, "type": col.type.sql} for col in table.columns
    ]
    rows = scratch.read(db, table)
    per = PER_MS[db.precision]
    names = rows.column("tbname").to_pylist()
    groups: dict[str, str] = {}
    by_subtable = sink.groups_by_subtable()
    for n in dict.fromkeys(names):
        g = by_subtable.get(n)
        groups[n] = "" if c.normal_output else (group_text(g) if g is not None else n)
    values = []
    for col in table.columns:
        vals = rows.column(col.physical).to_pylist()
        if col.type.name == "TIMESTAMP":
            vals = [None if v is None else int(v) // per for v in vals]
        values.append(vals)
    data = [[groups[n], *row] for n, row in zip(names, zip(*values, strict=True), strict=True)]
    data.sort(key=lambda r: (r[0], r[1] is None, r[1] if r[1] is not None else 0))
    return columns, [[_jsonable(v) for v in r] for r in data], len(data)


def _jsonable(v: Any) -> Any:
    """A value JSON can carry: NaN/inf as null, bytes as hex, decimals and times as text/ms."""
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return int(v.timestamp() * 1000)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v
