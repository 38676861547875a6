"""What ``foreachBatch`` does with a micro-batch of kernel output.

For micro-batch ``batch_id`` of a stream:

1. stage 3 (DuckDB) turns window results into output rows: the select list, with ``_wstart``
   in front when the query's first column is not a timestamp;
2. output rows are upserted into the output supertable, one subtable per group (created with its
   tag values on first sight), in one Delta commit that records ``(stream, batch_id)`` as a Delta
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

import pyarrow as pa
import pyarrow.compute as pc
import structlog
from sqlglot import exp

from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import LakeError
from spark_workers.lake.catalog import Table
from spark_workers.lake.store import Lake
from spark_workers.notify.messages import Event, build_messages, window_fields
from spark_workers.notify.sender import Sender
from spark_workers.query.compute import TriggerEvent, group_context
from spark_workers.query.duck import DuckSession
from spark_workers.query.select import explode_rows, stage3_sql
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
)


@dataclass
class BatchReport:
    """Progress of one micro-batch (published live and stored)."""

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
    duration_ms: float = 0.0
    rows_per_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.update(d.pop("extra"))
        return d


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
        self.precision = compiled.precision
        self._per_us = {"ms": 1000, "us": 1, "ns": None}[self.precision]

    @property
    def app_id(self) -> str:
        return f"tdweb-stream:{self.key}"

    # ------------------------------------------------------------------ main entry
    def process(
        self, batch: pa.Table, batch_id: int, *, phase: str = "live", started: float | None = None
    ) -> BatchReport:
        """Handle one micro-batch of kernel output rows (any bucket order); ``started`` is the
        ``time.perf_counter()`` at which the micro-batch began (for its duration)."""
        t0 = started if started is not None else time.perf_counter()
        rep = BatchReport(batch_id, phase=phase)
        kind = batch.column("_kind")
        stats = batch.filter(pc.equal(kind, "s"))
        self._stats(stats, rep)
        results = batch.filter(pc.equal(kind, "r"))
        removals = batch.filter(pc.equal(kind, "x"))
        events = batch.filter(pc.equal(kind, "e"))
        out_rows: dict[tuple[str, int], dict[str, Any]] = {}
        table = self._output_table() if self.writes_output else None
        if self.c.computation is not None:
            data, out_rows = self._compute(results, events)
            if data.num_rows and table is not None:
                db = self.lake.catalog.require_database(self.c.out_db)
                self.lake.write(db, table, data, txn=(self.app_id, batch_id))
                rep.output_rows = data.num_rows
        elif results.num_rows and table is not None:
            data, out_rows = self._stage3(results, table, want_rows=events.num_rows > 0)
            if data is not None and data.num_rows:
                db = self.lake.catalog.require_database(self.c.out_db)
                self.lake.write(db, table, data, txn=(self.app_id, batch_id))
                rep.output_rows = data.num_rows
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
        if events.num_rows:
            self._notify(events, out_rows, batch_id, rep)
        rep.duration_ms = (time.perf_counter() - t0) * 1000
        rep.rows_per_s = rep.input_rows / (rep.duration_ms / 1000.0) if rep.duration_ms > 0 else 0.0
        self.log.debug(
            "micro-batch",
            batch_id=batch_id,
            phase=phase,
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
    def _stats(self, stats: pa.Table, rep: BatchReport) -> None:
        for b, s in zip(stats.column("_bucket").to_pylist(), stats.column("_stats").to_pylist(), strict=True):
            d = json.loads(s)
            rep.input_rows += int(d.get("rows_in", 0))
            rep.expired_rows += int(d.get("rows_expired", 0))
            rep.recalculated += int(d.get("recalculated", 0))
            self.bucket_stats[int(b)] = d
        rep.open_windows = sum(int(d.get("open_windows", 0)) for d in self.bucket_stats.values())
        rep.state_bytes = sum(int(d.get("state_bytes", 0)) for d in self.bucket_stats.values())
        latest = [int(d["max_ts"]) for d in self.bucket_stats.values() if d.get("max_ts") is not None]
        if latest:
            per = NS_PER_PRECISION[self.precision]
            mx = max(latest)
            rep.max_event_ms = mx * per // 1_000_000
            rep.watermark_ms = (mx - self.c.rules.watermark) * per // 1_000_000

    def _output_table(self) -> Table:
        t = self.lake.catalog.table(self.c.out_db, self.c.out_table)
        if t is None or not self.lake.exists(self.c.out_db, self.c.out_table):
            # seed 002 "Database and Table Operations": a dropped output table is recreated
            ensure_output_table(self.c, self.lake, sql=self.c.spec.sql)
            t = self.lake.catalog.require_table(self.c.out_db, self.c.out_table)
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
        self, results: pa.Table, table: Table, *, want_rows: bool = True
    ) -> tuple[pa.Table | None, dict[tuple[str, int], dict[str, Any]]]:
        """Output rows in engine form for ``table`` and, when ``want_rows`` (the batch has
        notification events), per (gkey, wstart) the result dict used by WINDOW_CLOSE
        notifications."""
        with DuckSession(None) as duck:
            view = duck.register_arrow(self._windows_table(results))
            out = duck.query(
                stage3_sql(self.c.plan, view, self.tz, passthrough=("_gkey", "_ws"), streaming=True)
            )
        gkeys = out.column("_gkey").to_pylist()
        ws = out.column("_ws").to_pylist()
        subtables = {g: self._subtable(g) for g in dict.fromkeys(gkeys)}  # once per group
        cols: dict[str, Any] = {"tbname": pa.array([subtables[g] for g in gkeys], pa.string())}
        by_name: dict[str, list[Any]] = {}
        for col_plan, phys in zip(self.c.columns, table.columns, strict=False):
            if col_plan.source < 0:
                arr = pa.array(ws, pa.int64())
            else:
                arr = out.column(f"_o{col_plan.source}")
                if pa.types.is_timestamp(arr.type):
                    arr = self._ts_ints(arr)
            cols[phys.physical] = arr
            if want_rows:
                by_name[col_plan.name] = arr.to_pylist()
        data = pa.table(cols)
        out_rows: dict[tuple[str, int], dict[str, Any]] = {}
        for i, (g, w) in enumerate(zip(gkeys, ws, strict=True) if want_rows else ()):
            out_rows[(g, int(w))] = {n: v[i] for n, v in by_name.items()}
        if data.num_columns > 1 and data.column(1).null_count:
            # a NULL key (e.g. first(_c0) of a window without rows) discards the row (seed 002)
            data = data.filter(pc.is_valid(data.column(1)))
        return data, out_rows

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
        subtables = {keys[i][0]: self._subtable(keys[i][0]) for i in dict.fromkeys(ev_idx)}
        cols: dict[str, Any] = {"tbname": pa.array([subtables[keys[i][0]] for i in ev_idx], pa.string())}
        for col_plan, phys in zip(self.c.columns, table.columns, strict=False):
            arr = res.column(col_plan.source + 1)
            if pa.types.is_timestamp(arr.type):
                arr = self._ts_ints(arr)
            elif pa.types.is_null(arr.type):
                arr = pa.nulls(len(arr), phys.type.arrow(self.precision))
            cols[phys.physical] = arr
        return pa.table(cols), out_rows

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
        """Send events to every notification URL (messages built per ``build_messages``)."""
        notify = self.c.notify
        if notify is None or not events or self.sender is None:
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
        """Output subtable of a group, created in the catalog with its tags on first use."""
        if self.c.normal_output:  # 3.3.7 without grouping: rows go to the normal table itself
            return self.c.out_table
        name = self._subtables.get(gkey)
        if name is not None and self.lake.catalog.table(self.c.out_db, name) is not None:
            return name
        values = json.loads(gkey)
        gid = group_id(gkey)
        name = output_subtable_name(self.c, gkey, self.tz)
        db = self.lake.catalog.require_database(self.c.out_db)
        stable = self.lake.catalog.require_table(self.c.out_db, self.c.out_table)
        tags = {}
        exprs = [tp.expr for tp in self.c.tags if tp.expr is not None]
        computed = iter(group_expr_values(self.c, gkey, exprs, self.tz) if exprs else [])
        for tp, tag in zip(self.c.tags, stable.tags, strict=False):
            if tp.expr is not None:
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
        self.lake.catalog.create_subtables([Table(db.name, name, "sub", (), (), stable.name, tags)])
        self._subtables[gkey] = name
        return name

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
