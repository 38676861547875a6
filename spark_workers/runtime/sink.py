"""What ``foreachBatch`` does with a micro-batch of kernel output.

For micro-batch ``batch_id`` of a stream:

1. stage 3 (DuckDB) turns window results into output rows: the select list, with ``_wstart``
   in front when the query's first column is not a timestamp;
2. output rows are upserted into the output supertable, one subtable per group (created with its
   tag values on first sight), under its row key ((ts) or (ts, composite key), rows with a NULL
   composite key discarded; a legacy stream's window row replaces the window's earlier row
   whatever its key), in one Delta commit that records ``(stream, batch_id)`` as a Delta
   ``txn``: a replayed batch is skipped, so a restart never duplicates a window;
3. windows left without rows are deleted from the output;
4. window events become notification messages (ids stable per batch) sent to every URL;
5. progress (rows, windows, state, notifications, watermark, duration) goes to ``progress``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import structlog
from sqlglot import exp

from spark_workers.duration import NS_PER_PRECISION
from spark_workers.engine.aggregates import result_arrow_type
from spark_workers.errors import LakeError
from spark_workers.lake.catalog import Table
from spark_workers.lake.keys import key_column
from spark_workers.lake.store import Lake
from spark_workers.notify.messages import Event, build_messages, window_fields
from spark_workers.notify.sender import Sender
from spark_workers.query.compute import Computation, TriggerEvent, group_context
from spark_workers.query.duck import DuckSession, quote
from spark_workers.query.notify_where import notify_mask
from spark_workers.query.planner import resolve
from spark_workers.query.select import EPOCH_FN, explode_rows, stage3_sql
from spark_workers.runtime.projection import row_actions, runs_to_delete, sorted_by_arrival
from spark_workers.runtime.stream_fill import StreamFill
from spark_workers.sql import ast
from spark_workers.sql.lexer import PARTITION_PREFIX, TBNAME
from spark_workers.sql.scope import Scope
from spark_workers.sql.translate import to_sql
from spark_workers.sql.values import coerce
from spark_workers.streams.compile import (
    CompiledStream,
    default_subtable,
    ensure_output_table,
    group_id,
    notification_window_kind,
    output_targets,
)
from spark_workers.streams.spec import V337


@dataclass
class BatchReport:
    """Progress of one micro-batch (published live and stored).

    ``phase`` is "history" for a micro-batch of the FILL_HISTORY snapshot, "live" for the change
    feed, "recalc" for a recalculation; ``history_done`` is True for the micro-batch that
    delivers the snapshot's last time bucket (the stream is then caught up, issue 16 item 2).
    """

    batch_id: int
    input_rows: int = 0
    output_rows: int = 0
    removed_windows: int = 0
    events: int = 0
    notifications_sent: int = 0
    notifications_failed: int = 0
    open_windows: int = 0
    state_bytes: int = 0
    expired_rows: int = 0
    recalculated: int = 0
    watermark_ms: int | None = None
    max_event_ms: int | None = None
    phase: str = "live"
    history_done: bool = False
    duration_ms: float = 0.0
    rows_per_s: float = 0.0
    # why rows made no window ("why no output?", engine/stream.py ``drop_stats``)
    rows_filtered: int = 0
    rows_disordered: int = 0
    rows_late: int = 0
    rows_beyond_delete_mark: int = 0
    dropped_sample_ms: list[int] = field(default_factory=list)
    open_wend_min_ms: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def drops(self) -> dict[str, Any]:
        """The micro-batch's dropped-row counters: ``{expired, filtered, disordered, late,
        beyond_delete_mark}`` (rows), ``sample_ms`` (event times of dropped rows, epoch ms, at most
        4) and ``open_wend_min_ms`` (the earliest end of an open window, epoch ms, or None)."""
        return {
            "expired": self.expired_rows,
            "filtered": self.rows_filtered,
            "disordered": self.rows_disordered,
            "late": self.rows_late,
            "beyond_delete_mark": self.rows_beyond_delete_mark,
            "sample_ms": self.dropped_sample_ms[:4],
            "open_wend_min_ms": self.open_wend_min_ms,
        }

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.update(d.pop("extra"))
        return d


def without_null_keys(data: pa.Table, table: Table) -> pa.Table:
    """Output rows without those whose composite key is NULL: like a NULL first column (seed 002
    "If a NULL value appears during execution, the corresponding computation result will be
    discarded"), a row without its key cannot be written (``lake/keys.py``)."""
    key = key_column(table)
    if key is None or key.physical not in data.column_names or not data.column(key.physical).null_count:
        return data
    return data.filter(pc.is_valid(data.column(key.physical)))


def group_expr_values(c: CompiledStream, gkey: str, exprs: list[exp.Expr], tz: str) -> list[Any]:
    """The values of expressions over one group (``gkey``: the engine's group key, a JSON list of
    the PARTITION BY values): they may name the PARTITION BY items and the 3.3.7 placeholders
    ``%%n`` and ``%%tbname`` (seed 002, "Stream Processing Output"). One DuckDB query."""
    values = json.loads(gkey)
    cols = {g.display: [values[i] if i < len(values) else None] for i, g in enumerate(c.plan.groups)}
    ph, _tb, _conds = group_context(c.plan.groups, values)
    cols.update({PARTITION_PREFIX + k[1:]: [v] for k, v in ph.items() if k.startswith("p")})
    if "tbname" in ph:
        cols[TBNAME] = [ph["tbname"]]
    with DuckSession(None) as duck:
        view = duck.register_arrow(pa.table(cols) if cols else pa.table({"_x": [0]}))
        scope = Scope({}, None, c.precision, tz)
        items = ", ".join(f"{to_sql(e, 'duckdb', scope)} AS v{i}" for i, e in enumerate(exprs))
        row = duck.query(f"SELECT {items} FROM {view}").to_pylist()[0]
    return [row[f"v{i}"] for i in range(len(exprs))]


def output_subtable_name(c: CompiledStream, gkey: str, tz: str) -> str:
    """The output subtable of a group (``gkey`` as ``group_expr_values``): the SUBTABLE /
    OUTPUT_SUBTABLE expression's value over the group (legacy: plus the table name and group id,
    seed 000; 3.3.7: the value itself, seed 002), else ``default_subtable``; at most 192
    characters."""
    if c.subtable_expr is None:
        return default_subtable(c.out_table, gkey)
    (v,) = group_expr_values(c, gkey, [c.subtable_expr], tz)
    base = "" if v is None else str(v)
    return (base if c.exact_subtable else f"{base}_{c.out_table}_{group_id(gkey)}")[:192]


class OutputSink:
    """Writes one stream's micro-batches (see module docstring).

    Args:
        compiled: the compiled stream.
        lake: the lake.
        stream_key: stable identifier of the stream (names the Delta txn app id and event ids).
        tz: server time zone.
        sender: notification sender (None: events are counted but not sent).
        progress: callback receiving each BatchReport.
    """

    def __init__(
        self,
        compiled: CompiledStream,
        lake: Lake,
        *,
        stream_key: str,
        tz: str = "UTC",
        sender: Sender | None = None,
        progress: Callable[[BatchReport], None] | None = None,
        log_fields: dict[str, Any] | None = None,
    ) -> None:
        self.c = compiled
        # structured logs of every micro-batch carry the stream (and what the caller adds, e.g.
        # the registry's stream_id) and the batch_id
        self.log = structlog.get_logger(__name__).bind(stream_key=stream_key, **(log_fields or {}))
        self.lake = lake
        self.key = stream_key
        self.tz = tz
        self.sender = sender
        self.progress = progress or (lambda r: None)
        self.bucket_stats: dict[int, dict[str, Any]] = {}
        self._subtables: dict[str, str] = {}
        self._verified: set[str] = set()  # groups whose subtable the catalog confirmed this batch
        self._checked_output: Table | None = None  # the output table as last found to fit
        self._forced: Computation | None = None  # FORCE_OUTPUT's query, built on first use
        self.precision = compiled.precision
        self._per_us = {"ms": 1000, "us": 1, "ns": None}[self.precision]
        self.filler = (
            self._stream_fill() if compiled.fill is not None and compiled.computation is None else None
        )

    @property
    def app_id(self) -> str:
        return f"tdweb-stream:{self.key}"

    # ------------------------------------------------------------------ main entry
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
        """Handle one micro-batch of kernel output rows (any bucket order); ``started`` is the
        ``time.perf_counter()`` at which the micro-batch began (for its duration); ``now`` the
        wall clock in precision units (default: the system clock) for FORCE_WINDOW_CLOSE's FILL;
        ``history_done``: this micro-batch ends the FILL_HISTORY snapshot (``BatchReport``)."""
        t0 = started if started is not None else time.perf_counter()
        rep = BatchReport(batch_id, phase=phase, history_done=history_done)
        self._verified.clear()  # a subtable dropped since the last batch is created again
        if self.c.plan.projection:  # no window: ``batch`` is stage-1 rows (runtime/projection.py)
            self._project(batch, batch_id, rep)
            return self._report(rep, t0)
        kind = batch.column("_kind")
        stats = batch.filter(pc.equal(kind, "s"))
        self._stats(stats, rep)
        results = batch.filter(pc.equal(kind, "r"))
        removals = batch.filter(pc.equal(kind, "x"))
        events = batch.filter(pc.equal(kind, "e"))
        out_rows: dict[tuple[str, int], dict[str, Any]] = {}
        table = self._output_table() if self.writes_output else None
        data: pa.Table | None = None
        if self.c.computation is not None:
            data, out_rows = self._compute(results, events)
        elif (results.num_rows or (self.filler is not None and self.filler.clock_driven)) and (
            table is not None or (events.num_rows and self.c.columns)
        ):
            # without an output table (a legacy stream without INTO) only the events' results
            data, out_rows = self._stage3(results, table, want_rows=events.num_rows > 0, now=now)
            if data is not None and table is not None:
                data = without_null_keys(data, table)
        early = self.notify_first and events.num_rows > 0
        if early:  # LOW_LATENCY_CALC: the events' results are known; the write can follow
            self._notify(events, out_rows, batch_id, rep)
        if data is not None and data.num_rows and table is not None:
            self._write_output(data, table, batch_id, rep)
        if self.c.spec.trigger.get("type") == "sliding" and results.num_rows:
            on_time = [
                Event(self.table_name(g), "ON_TIME", g, group_id(g), int(we), None, out_rows.get((g, int(w))))
                for g, w, we in zip(
                    results.column("_gkey").to_pylist(),
                    results.column("_wstart").to_pylist(),
                    results.column("_wend").to_pylist(),
                    strict=True,
                )
            ]
            rep.events += len(on_time)
            if self.c.notify is not None and "ON_TIME" in self.c.notify.events:
                self.send(on_time, batch_id, rep)
        if removals.num_rows and self.c.computation is None and table is not None:
            # a per-event computation's rows are keyed by its own first column: they stay until
            # overwritten (seed 002 "same key overwrites")
            rep.removed_windows = self._remove(removals, table)
        if events.num_rows and not early:
            self._notify(events, out_rows, batch_id, rep)
        return self._report(rep, t0)

    @property
    def notify_first(self) -> bool:
        """True for a 3.3.7 stream with STREAM_OPTIONS(LOW_LATENCY_CALC) (seed 002: "low-latency
        computation or notification after each trigger"): a micro-batch's window events are sent
        as soon as their results are computed, before the output write instead of after it. The
        micro-batch stays idempotent on its id: a batch that fails after sending is run again
        from Spark's checkpoint and sends the same events with the same ids (delivery is
        at-least-once either way, ``notify/sender.py``), and its output write is the same
        ``txn=(app id, batch id)`` write. What a receiver may not assume for such a stream: that
        the output row is readable when the WINDOW_CLOSE arrives (docs/decisions.md, "Latency")."""
        return bool(self.c.spec.options.low_latency_calc)

    def _write_output(self, data: pa.Table, table: Table, batch_id: int, rep: BatchReport) -> None:
        """Write a micro-batch's output rows, idempotently on ``(app id, batch id)``. Legacy
        streams: an updated window's row replaces the window's earlier row, whatever its composite
        key (TDengine's legacy engine; td-048a); a per-event computation's rows are keyed by their
        own first column (seed 002 "same key overwrites")."""
        db = self.lake.catalog.require_database(self.c.out_db)
        legacy = self.c.computation is None and self.c.spec.syntax != V337
        self.lake.write(db, table, data, txn=(self.app_id, batch_id), replace_times=legacy)
        rep.output_rows = data.num_rows

    def _report(self, rep: BatchReport, t0: float) -> BatchReport:
        """Finish a micro-batch's report: duration, throughput, the log line, ``progress``."""
        rep.duration_ms = (time.perf_counter() - t0) * 1000
        rep.rows_per_s = rep.input_rows / (rep.duration_ms / 1000.0) if rep.duration_ms > 0 else 0.0
        self.log.debug(
            "micro-batch",
            batch_id=rep.batch_id,
            phase=rep.phase,
            rows_in=rep.input_rows,
            rows_out=rep.output_rows,
            events=rep.events,
            notifications_sent=rep.notifications_sent,
            notifications_failed=rep.notifications_failed,
            duration_ms=round(rep.duration_ms, 1),
        )
        self.progress(rep)
        return rep

    # ------------------------------------------------------------------ pieces
    def _project(self, staged: pa.Table, batch_id: int, rep: BatchReport) -> None:
        """A stream without a window: write the micro-batch's rows (stage 1, ``_i<k>`` the select
        items) into the output subtables of their partitions and delete the output rows of
        deleted source rows (``runtime/projection.py``)."""
        staged = sorted_by_arrival(staged)
        n = staged.num_rows
        if n:
            ct = staged.column("_ct").cast(pa.int8())
            rep.input_rows = int(pc.sum(pc.is_in(ct, pa.array([0, 2], pa.int8()))).as_py() or 0)
            rep.extra["rows_deleted"] = int(pc.sum(pc.equal(ct, 3)).as_py() or 0)
            mx = int(pc.max(staged.column("_ts")).as_py())
            per = NS_PER_PRECISION[self.precision]
            rep.max_event_ms = rep.watermark_ms = mx * per // 1_000_000
        table = self._output_table() if self.writes_output and n else None
        if table is None:
            return
        arrays: dict[str, pa.Array] = {}
        for col_plan, phys in output_targets(self.c, table):
            arr = staged.column("_ts" if col_plan.source < 0 else f"_i{col_plan.source}").combine_chunks()
            arrays[phys.physical] = self._ts_ints(arr) if pa.types.is_timestamp(arr.type) else arr
        key_col = arrays[table.columns[0].physical]
        keys = key_col.fill_null(0).cast(pa.int64()).to_numpy(zero_copy_only=False)
        valid = key_col.is_valid().to_numpy(zero_copy_only=False)
        where = dict(self.c.plan.extra_columns).get("where")
        passes = (
            staged.column(where).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
            if where is not None
            else np.ones(n, bool)
        )
        second = table.columns[1] if len(table.columns) > 1 else None
        composite = (
            pc.dictionary_encode(arrays[second.physical], null_encoding="encode")
            .indices.to_numpy(zero_copy_only=False)
            .astype(np.int64)
            if second is not None and second.composite_key and second.physical in arrays
            else None
        )
        gkeys, upserts, deletes = row_actions(
            staged,
            [g.name for g in self.c.plan.groups],
            keys,
            valid,
            passes,
            ignore_update=self.c.rules.ignore_update,
            composite=composite,
        )
        db = self.lake.catalog.require_database(self.c.out_db)
        if len(upserts):
            take = pa.array(upserts)
            groups = gkeys[upserts].tolist()
            subtables = self._subtables_of(groups)
            names = [subtables[g] for g in groups]
            data = pa.table(
                {"tbname": pa.array(names, pa.string()), **{k: v.take(take) for k, v in arrays.items()}}
            )
            self.lake.write(db, table, data, txn=(self.app_id, batch_id))
            rep.output_rows = data.num_rows
        for gkey in dict.fromkeys(gkeys[deletes].tolist()):
            doomed = keys[deletes][gkeys[deletes] == gkey]
            rep.removed_windows += self._delete_keys(db, table, self._subtable(gkey), doomed)

    def _delete_keys(self, db: Any, table: Table, subtable: str, doomed: Any) -> int:
        """Delete the rows of output ``subtable`` whose primary key is in ``doomed``; returns how
        many were there (one Delta delete per run of consecutive doomed rows)."""
        lo, hi = int(doomed.min()), int(doomed.max())
        ts = table.columns[0].physical
        present = self.lake.read(db, table, tbnames=[subtable], ts_min=lo, ts_max=hi, columns=[ts])
        existing = present.column(ts).cast(pa.int64()).to_numpy(zero_copy_only=False)
        n = 0
        for a, b in runs_to_delete(existing, doomed):
            n += self.lake.delete(db, table, ts_min=a, ts_max=b, tbnames=[subtable]).deleted
        return n

    def _stats(self, stats: pa.Table, rep: BatchReport) -> None:
        for b, s in zip(stats.column("_bucket").to_pylist(), stats.column("_stats").to_pylist(), strict=True):
            d = json.loads(s)
            rep.input_rows += int(d.get("rows_in", 0))
            rep.expired_rows += int(d.get("rows_expired", 0))
            rep.recalculated += int(d.get("recalculated", 0))
            self._drop_stats(d, rep)
            self.bucket_stats[int(b)] = d
        rep.open_windows = sum(int(d.get("open_windows", 0)) for d in self.bucket_stats.values())
        rep.state_bytes = sum(int(d.get("state_bytes", 0)) for d in self.bucket_stats.values())
        ends = [int(e) for d in self.bucket_stats.values() if (e := d.get("open_wend_min")) is not None]
        if ends:  # the earliest end of an open window, all buckets
            rep.open_wend_min_ms = min(ends) * NS_PER_PRECISION[self.precision] // 1_000_000
        latest = [int(d["max_ts"]) for d in self.bucket_stats.values() if d.get("max_ts") is not None]
        if latest:
            per = NS_PER_PRECISION[self.precision]
            mx = max(latest)
            rep.max_event_ms = mx * per // 1_000_000
            rep.watermark_ms = (mx - self.c.rules.watermark) * per // 1_000_000

    def _drop_stats(self, d: dict[str, Any], rep: BatchReport) -> None:
        """Add one bucket's dropped-row counters (engine/stream.py ``drop_stats``) to ``rep``;
        times in precision units become epoch milliseconds."""
        per = NS_PER_PRECISION[self.precision]
        rep.rows_filtered += int(d.get("rows_filtered") or 0)
        rep.rows_disordered += int(d.get("rows_disordered") or 0)
        rep.rows_late += int(d.get("rows_late") or 0)
        rep.rows_beyond_delete_mark += int(d.get("rows_beyond_delete_mark") or 0)
        for key in ("dropped_first", "dropped_last"):
            t = d.get(key)
            if t is not None and len(rep.dropped_sample_ms) < 4:
                ms = int(t) * per // 1_000_000
                if ms not in rep.dropped_sample_ms:
                    rep.dropped_sample_ms.append(ms)

    def _output_table(self) -> Table:
        t = self.lake.catalog.table(self.c.out_db, self.c.out_table)
        if t is None or not self.lake.exists(self.c.out_db, self.c.out_table):
            # seed 002 "Database and Table Operations": a dropped output table is recreated
            ensure_output_table(self.c, self.lake, sql=self.c.spec.sql)
            t = self.lake.catalog.require_table(self.c.out_db, self.c.out_table)
        elif t != self._checked_output:
            # seed 002: an output table altered while the stream runs (ALTER TABLE / STABLE) is
            # checked again before it is written: "if a schema mismatch is detected at write
            # time, an error is raised" (SqlError; nothing of this batch is written)
            ensure_output_table(self.c, self.lake, sql=self.c.spec.sql)
        self._checked_output = t
        return t

    def _windows_table(self, rows: pa.Table) -> pa.Table:
        """Kernel rows -> stage-3 input (``_g*``, ``_wstart``, ``_wend``, ``_wduration``, ``_a*``)."""
        enc = pc.dictionary_encode(rows.column("_gkey").combine_chunks())
        uniq = [json.loads(k) for k in enc.dictionary.to_pylist()]  # once per group
        cols: dict[str, pa.Array] = {}
        for i, g in enumerate(self.c.plan.groups):
            gt = self.c.group_types[i]
            per_group = [v[i] if i < len(v) else None for v in uniq]
            if pa.types.is_timestamp(gt):
                values = pa.array(per_group, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
            else:
                values = pa.array(per_group, gt)
            cols[g.name] = values.take(enc.indices)  # per row, from the values per group
        ws = rows.column("_wstart").cast(pa.int64())
        we = rows.column("_wend").cast(pa.int64())
        if self._per_us:
            ts_t = pa.timestamp("us", tz="UTC")
            cols["_wstart"] = pc.multiply(ws, self._per_us).cast(ts_t)
            cols["_wend"] = pc.multiply(we, self._per_us).cast(ts_t)
        else:
            ts_t = pa.timestamp("ns", tz="UTC")
            cols["_wstart"] = ws.cast(ts_t)
            cols["_wend"] = we.cast(ts_t)
        cols["_wduration"] = pc.subtract(we, ws)
        cols["_gkey"] = rows.column("_gkey")
        cols["_ws"] = ws
        if self.c.plan.row_mode:  # eKuiper windows without aggregates: one row per collected row
            collected = [json.loads(x) if x else [] for x in rows.column("_rows").to_pylist()]
            return explode_rows(pa.table(cols), collected, self.c.plan, self.c.input_types)
        for a in self.c.aggs:
            cols[a.name] = rows.column(a.name)
        return pa.table(cols)

    def _stage3(
        self, results: pa.Table, table: Table | None, *, want_rows: bool = True, now: int | None = None
    ) -> tuple[pa.Table | None, dict[tuple[str, int], dict[str, Any]]]:
        """Output rows in engine form for ``table`` (None without an output table) and, when
        ``want_rows`` (the batch has notification events), per (gkey, wstart) the result dict used
        by WINDOW_CLOSE notifications; with FILL, the filled windows too (``runtime/stream_fill.py``)."""
        out: pa.Table | None = None
        if results.num_rows:
            with DuckSession(None) as duck:
                view = duck.register_arrow(self._windows_table(results))
                out = duck.query(
                    stage3_sql(self.c.plan, view, self.tz, passthrough=("_gkey", "_ws"), streaming=True)
                )
        if self.filler is not None:
            schema = out.schema if out is not None else self._fill_schema()
            clock = (
                now
                if now is not None
                else int(time.time() * 1000) * {"ms": 1, "us": 1_000, "ns": 1_000_000}[self.precision]
            )
            out = self.filler.apply(out, schema, clock)
        if out is None or not out.num_rows:
            return None, {}
        gkeys = out.column("_gkey").to_pylist()
        ws = out.column("_ws").to_pylist()
        cols: dict[str, Any] = {}
        if table is not None:
            subtables = self._subtables_of(gkeys)
            cols["tbname"] = pa.array([subtables[g] for g in gkeys], pa.string())
        by_name: dict[str, list[Any]] = {}
        targets = output_targets(self.c, table) if table is not None else [(p, None) for p in self.c.columns]
        for col_plan, phys in targets:
            if col_plan.source < 0:
                arr = pa.array(ws, pa.int64())
            else:
                arr = out.column(f"_o{col_plan.source}")
                if pa.types.is_timestamp(arr.type):
                    arr = self._ts_ints(arr)
            if phys is not None:
                cols[phys.physical] = arr
            if want_rows:
                by_name[col_plan.name] = arr.to_pylist()
        data = pa.table(cols) if table is not None else None
        out_rows: dict[tuple[str, int], dict[str, Any]] = {}
        for i, (g, w) in enumerate(zip(gkeys, ws, strict=True) if want_rows else ()):
            out_rows[(g, int(w))] = {n: v[i] for n, v in by_name.items()}
        if data is not None and data.num_columns > 1 and data.column(1).null_count:
            # a NULL key (e.g. first(_c0) of a window without rows) discards the row (seed 002)
            data = data.filter(pc.is_valid(data.column(1)))
        return data, out_rows

    # ------------------------------------------------------------------ FILL
    def _stream_fill(self) -> StreamFill:
        spec = self.c.fill
        assert spec is not None
        values: list[object] = []
        if spec.values:
            scope = Scope({}, None, self.precision, self.tz)
            with DuckSession(None) as duck:
                cols = ", ".join(f"{to_sql(v, 'duckdb', scope)} AS v{i}" for i, v in enumerate(spec.values))
                values = [c[0].as_py() for c in duck.query(f"SELECT {cols}").columns]
        return StreamFill(
            spec,
            self.c.shape,
            self._empty_windows,
            self._last_written,
            clock_driven=self.c.rules.mode == "FORCE_WINDOW_CLOSE",
            values=values,
            precision=self.precision,
        )

    def _fill_schema(self) -> pa.Schema:
        fields = [f for f in self.c.stage3_schema if f.name.startswith("_o")]
        return pa.schema([*fields, pa.field("_gkey", pa.string()), pa.field("_ws", pa.int64())])

    def _empty_windows(self, gkeys: list[str], wstarts: list[int]) -> pa.Table:
        """Stage-3 rows of windows without rows (NULL aggregates)."""
        ws = pa.array(wstarts, pa.int64())
        cols: dict[str, pa.Array] = {
            "_gkey": pa.array(gkeys, pa.string()),
            "_wstart": ws,
            "_wend": pa.array(self.c.shape.assigner().end(ws.to_numpy()), pa.int64()),
        }
        for a in self.c.aggs:
            typ = result_arrow_type(a, self.c.input_types.get(a.input) if a.input else None)
            cols[a.name] = pa.nulls(len(wstarts), typ)
        with DuckSession(None) as duck:
            view = duck.register_arrow(self._windows_table(pa.table(cols)))
            return duck.query(
                stage3_sql(self.c.plan, view, self.tz, passthrough=("_gkey", "_ws"), streaming=True)
            )

    def _last_written(self, gkey: str, before: int) -> tuple[int, dict[int, object]] | None:
        """The group's latest output row before ``before`` when the output's first column is the
        window start: ``(wstart, {fill item: value})``."""
        first = self.c.columns[0]
        if not (first.source < 0 or self.c.plan.items[first.source][1].sql().strip('"').lower() == "_wstart"):
            return None
        table = self._output_table()
        src = resolve(self.lake.catalog, ast.TableName(self.c.out_table, self.c.out_db), self.c.out_db)
        wanted = {
            col_plan.source: phys.name
            for col_plan, phys in zip(self.c.columns, table.columns, strict=False)
            if self.c.fill is not None and col_plan.source in self.c.fill.columns
        }
        ts = quote(table.columns[0].name)
        with DuckSession(self.lake) as duck:
            view = duck.register_source(src, tbnames=[self._subtable(gkey)])
            items = ", ".join(
                [
                    f"{EPOCH_FN[self.precision]}({ts}) AS _w",
                    *(f"{quote(n)} AS _v{i}" for i, n in wanted.items()),
                ]
            )
            where = f"{EPOCH_FN[self.precision]}({ts}) < {int(before)}"
            t = duck.query(f"SELECT {items} FROM {view} WHERE {where} ORDER BY {ts} DESC LIMIT 1")
        if not t.num_rows:
            return None
        row = t.to_pylist()[0]
        return int(row["_w"]), {i: row[f"_v{i}"] for i in wanted}

    def _compute(
        self, results: pa.Table, events: pa.Table
    ) -> tuple[pa.Table, dict[tuple[str, int], dict[str, Any]]]:
        """Run the computation for the batch's trigger events (closed windows, and opened ones with
        EVENT_TYPE(WINDOW_OPEN)); output rows in storage form, and per (gkey, wstart) the first
        result row for WINDOW_CLOSE notifications. Rows whose first column is NULL are discarded
        (seed 002)."""
        per_us = {"ms": 1000, "us": 1, "ns": 0}[self.precision]
        to_us = (lambda v: v * per_us) if per_us else (lambda v: v // 1000)
        groups = self.c.plan.groups
        interval = self.c.shape.kind == "interval"
        count_col = self.c.aggs[0].name if self.c.aggs else None
        now_us = int(time.time() * 1_000_000)
        evs: list[TriggerEvent] = []
        keys: list[tuple[str, int]] = []
        closing = zip(
            results.column("_gkey").to_pylist(),
            results.column("_wstart").to_pylist(),
            results.column("_wend").to_pylist(),
            results.column(count_col).to_pylist() if count_col else [None] * results.num_rows,
            strict=True,
        )
        items: list[tuple[str, int, int | None, int | None]] = (
            [(g, int(w), we, n) for g, w, we, n in closing] if self.c.compute_close else []
        )
        if self.c.compute_open and events.num_rows:
            for g, w, kind in zip(
                events.column("_gkey").to_pylist(),
                events.column("_wstart").to_pylist(),
                events.column("_event").to_pylist(),
                strict=True,
            ):
                if kind == "WINDOW_OPEN":
                    items.append((g, int(w), None, None))
        sliding = self.c.spec.trigger.get("type") == "sliding"
        for g, ws, we, n in items:
            values = json.loads(g)
            v: dict[str, Any] = {
                "_twstart": to_us(ws),
                "_twend": None if we is None else to_us(int(we)),
                "_twduration": None if we is None else int(we) - ws,
                "_twrownum": None if n is None else int(n),
                "_tgrpid": group_id(g),
                "_tlocaltime": now_us,
            }
            if sliding and we is not None:  # SLIDING: the trigger point ends the period [prev, current)
                v.update(
                    {
                        "_tprev_ts": to_us(ws),
                        "_tcurrent_ts": to_us(int(we)),
                        "_tnext_ts": to_us(self.c.shape.nominal_end(int(we))),
                    }
                )
            ph, tb, conds = group_context(groups, values)
            v.update(ph)
            rows = None if we is None else (conds, ws, int(we), not interval)
            evs.append(TriggerEvent(v, tb, rows))
            keys.append((g, ws))
        return self.run_events(evs, keys)

    def run_events(
        self, evs: list[TriggerEvent], keys: list[tuple[str, int]], *, duck: DuckSession | None = None
    ) -> tuple[pa.Table, dict[tuple[str, int], dict[str, Any]]]:
        """Run the computation for trigger events (``keys[i]`` = (gkey, trigger time) of
        ``evs[i]``): output rows in storage form for the output table, and per key the first
        result row (the notification's ``result``). Rows whose first column is NULL are discarded
        (seed 002)."""
        comp = self.c.computation
        assert comp is not None
        out_rows: dict[tuple[str, int], dict[str, Any]] = {}
        if not evs:
            return pa.table({"tbname": pa.array([], pa.string())}), out_rows
        own = duck is None
        session = duck or DuckSession(self.lake)
        try:
            bound = comp.bind(self.lake, session)
            res = comp.run(bound, evs)
            if self.c.spec.options.force_output:
                res = self._forced_rows(res, evs, session)
        finally:
            if own:
                session.close()
        if res.num_rows:
            res = res.filter(pc.is_valid(res.column(1)))  # a NULL key discards the row (seed 002)
        ev_idx = res.column("__td_ev").to_pylist()
        names_out = [c.name for c in self.c.columns]
        plain = res.drop_columns(["__td_ev"])
        plain = pa.table(  # timestamps as epoch values in the stream's precision, as in the seed
            [self._ts_ints(c) if pa.types.is_timestamp(c.type) else c for c in plain.columns],
            names=[f"c{i}" for i in range(plain.num_columns)],
        )
        rows_py = plain.to_pylist() if res.num_rows else []
        for i, row in zip(ev_idx, rows_py, strict=True):
            out_rows.setdefault(keys[i], dict(zip(names_out, row.values(), strict=False)))
        if not self.writes_output:
            return pa.table({"tbname": pa.array([], pa.string())}), out_rows
        table = self.output_table()
        subtables = self._subtables_of([keys[i][0] for i in ev_idx])
        cols: dict[str, Any] = {"tbname": pa.array([subtables[keys[i][0]] for i in ev_idx], pa.string())}
        for col_plan, phys in output_targets(self.c, table):
            arr = res.column(col_plan.source + 1)
            if pa.types.is_timestamp(arr.type):
                arr = self._ts_ints(arr)
            elif pa.types.is_null(arr.type):
                arr = pa.nulls(len(arr), phys.type.arrow(self.precision))
            cols[phys.physical] = arr
        return without_null_keys(pa.table(cols), table), out_rows

    def _forced_rows(self, res: pa.Table, evs: list[TriggerEvent], duck: DuckSession) -> pa.Table:
        """FORCE_OUTPUT (seed 002): ``res`` plus one row for each event whose query returned no
        row: its constants and placeholders, NULL elsewhere (``Computation.forced``)."""
        comp = self.c.computation
        assert comp is not None
        have = set(res.column("__td_ev").to_pylist()) if res.num_rows else set()
        missing = [i for i in range(len(evs)) if i not in have]
        if not missing:
            return res
        if self._forced is None:
            self._forced = comp.forced([c.type for c in self.c.columns])
        forced = self._forced.run(self._forced.bind(self.lake, duck), [evs[i] for i in missing])
        ev = pa.array([missing[i] for i in forced.column("__td_ev").to_pylist()], pa.int64())
        arrays = [ev]
        for j in range(1, res.num_columns):
            col = forced.column(j) if j < forced.num_columns else pa.nulls(forced.num_rows)
            want = res.schema.field(j).type
            arrays.append(col.cast(want) if not pa.types.is_null(want) else col)
        extra = pa.Table.from_arrays(arrays, names=res.column_names)
        return pa.concat_tables([res, extra], promote_options="permissive")

    @property
    def writes_output(self) -> bool:
        """False for notify-only streams and CALC_NOTIFY_ONLY (seed 002)."""
        return self.c.has_output and not self.c.spec.options.calc_notify_only

    def output_table(self) -> Table:
        """The output table (recreated when it was dropped)."""
        return self._output_table()

    def table_name(self, gkey: str) -> str:
        """The ``tableName`` of a group's events: its output subtable (or table)."""
        if not self.writes_output:
            return default_subtable(self.c.out_table or self.c.spec.name, gkey) if self.c.plan.groups else ""
        return self._subtable(gkey)

    def send(
        self, events: list[Event], batch_id: int, rep: BatchReport, *, now_ms: int | None = None
    ) -> None:
        """Send events to every notification URL (messages built per ``build_messages``), those
        whose result meets the stream's NOTIFY ... WHERE (``query/notify_where.py``) only."""
        notify = self.c.notify
        if notify is None or not events or self.sender is None:
            return
        if self.c.notify_where is not None:  # NOTIFY ... WHERE over each event's result (seed 002)
            cols = self.c.columns
            keep = notify_mask(
                self.c.notify_where,
                [e.result for e in events],
                [c.name for c in cols],
                [c.type for c in cols],
                self.precision,
                self.tz,
            )
            events = [e for e, k in zip(events, keep, strict=True) if k]
            if not events:
                return
        wkind = notification_window_kind(self.c.spec)
        for msg in build_messages(self.key, self.c.spec.name, wkind, events, batch_id, now_ms):
            n = len(msg["streams"][0]["events"])
            for url in notify.urls:
                if self.sender.deliver(url, msg, on_failure=notify.on_failure):
                    rep.notifications_sent += n
                else:
                    rep.notifications_failed += n

    def _ts_ints(self, arr: pa.ChunkedArray | pa.Array) -> pa.Array:
        """Timestamp column -> int64 in the stream's precision."""
        unit = arr.type.unit
        ints = arr.cast(pa.timestamp(unit)).cast(pa.int64())
        per_unit = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
        want = NS_PER_PRECISION[self.precision]
        if per_unit == want:
            return ints
        if per_unit > want:
            return pc.multiply(ints, per_unit // want)
        return pc.divide(ints, want // per_unit)

    def _subtable(self, gkey: str) -> str:
        """Output subtable of a group (see :meth:`_subtables_of`)."""
        return self._subtables_of([gkey])[gkey]

    def _subtables_of(self, gkeys: list[str]) -> dict[str, str]:
        """``{group key: output subtable}`` for the groups of ``gkeys`` (repeats allowed). The
        catalog is asked about the groups not yet confirmed in this micro-batch in one call
        (``Catalog.existing``: one version round trip, one query for names not cached), and the
        missing subtables are created with their tags in one transaction: a batch of N groups costs
        a few catalog round trips, not N (docs/operations.md, "Scaling out")."""
        if self.c.normal_output:  # 3.3.7 without grouping: rows go to the normal table itself
            return dict.fromkeys(gkeys, self.c.out_table)
        pending = [g for g in dict.fromkeys(gkeys) if g not in self._verified]
        if pending:
            for g in pending:
                if g not in self._subtables:
                    self._subtables[g] = output_subtable_name(self.c, g, self.tz)
            present = self.lake.catalog.existing(self.c.out_db, [self._subtables[g] for g in pending])
            missing = [g for g in pending if self._subtables[g].lower() not in present]
            if missing:
                db = self.lake.catalog.require_database(self.c.out_db)
                stable = self.lake.catalog.require_table(self.c.out_db, self.c.out_table)
                self.lake.catalog.create_subtables([self._new_subtable(g, db, stable) for g in missing])
            self._verified.update(pending)
        return {g: self._subtables[g] for g in gkeys}

    def _new_subtable(self, gkey: str, db: Any, stable: Table) -> Table:
        """The catalog entry of group ``gkey``'s output subtable with its tag values."""
        values = json.loads(gkey)
        gid = group_id(gkey)
        tags = {}
        exprs = [tp.expr for tp in self.c.tags if tp.expr is not None]
        computed = iter(group_expr_values(self.c, gkey, exprs, self.tz) if exprs else [])
        for tp, tag in zip(self.c.tags, stable.tags, strict=False):
            if tp.null:
                v = None
            elif tp.expr is not None:
                v = next(computed)
            elif tp.group_index is None:
                v = gid
            else:
                v = values[tp.group_index] if tp.group_index < len(values) else None
            if isinstance(v, int) and tag.type.name == "TIMESTAMP":
                v = v * 1000 // NS_PER_PRECISION[db.precision]  # group timestamps are in microseconds
            try:
                tags[tag.name.lower()] = coerce(v, tag.type, db.precision, self.tz, f"tag {tag.name}")
            except Exception:
                tags[tag.name.lower()] = None
        return Table(db.name, self._subtables[gkey], "sub", (), (), stable.name, tags)

    def _remove(self, removals: pa.Table, table: Table) -> int:
        """Delete the output rows of windows that lost all their rows."""
        db = self.lake.catalog.require_database(self.c.out_db)
        first = self.c.columns[0]
        if first.source < 0:
            keys = [
                (g, int(w), int(w))
                for g, w in zip(
                    removals.column("_gkey").to_pylist(), removals.column("_wstart").to_pylist(), strict=True
                )
            ]
        else:
            nulls = removals
            with DuckSession(None) as duck:
                view = duck.register_arrow(self._windows_table(nulls))
                out = duck.query(
                    stage3_sql(self.c.plan, view, self.tz, passthrough=("_gkey", "_ws"), streaming=True)
                )
            vals = self._ts_ints(out.column(f"_o{first.source}")).to_pylist()
            keys = [
                (g, int(w), v)
                for g, w, v in zip(
                    out.column("_gkey").to_pylist(), out.column("_ws").to_pylist(), vals, strict=True
                )
                if v is not None
            ]
        n = 0
        for gkey, _w, ts in keys:
            try:
                self.lake.delete(db, table, ts_min=ts, ts_max=ts, tbnames=[self._subtable(gkey)])
                n += 1
            except LakeError:
                raise
        return n

    def _notify(
        self,
        events: pa.Table,
        out_rows: dict[tuple[str, int], dict[str, Any]],
        batch_id: int,
        rep: BatchReport,
    ) -> None:
        notify = self.c.notify
        wkind = notification_window_kind(self.c.spec)
        evs: list[Event] = []
        for g, w, we, kind, info in zip(
            events.column("_gkey").to_pylist(),
            events.column("_wstart").to_pylist(),
            events.column("_wend").to_pylist(),
            events.column("_event").to_pylist(),
            events.column("_info").to_pylist(),
            strict=True,
        ):
            result = out_rows.get((g, int(w))) if kind == "WINDOW_CLOSE" else None
            evs.append(
                Event(
                    self.table_name(g),
                    kind,
                    g,
                    group_id(g),
                    int(w),
                    int(we) if we is not None else None,
                    result,
                    window_fields(wkind, kind, json.loads(info) if info else {}),
                )
            )
        rep.events = len(evs)
        if notify is not None:  # EVENT_TYPE may add events the notification does not ask for
            # WINDOW_INVALIDATION is no ON (...) choice: every window notification hears of the
            # windows it was told of that are removed or recalculated (seed 000 / 002)
            windows = {"WINDOW_OPEN", "WINDOW_CLOSE"} & set(notify.events)
            evs = [
                e
                for e in evs
                if e.event_type in notify.events or (e.event_type == "WINDOW_INVALIDATION" and windows)
            ]
        self.send(evs, batch_id, rep)
