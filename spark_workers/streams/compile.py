"""StreamSpec -> CompiledStream: what a worker runs (seed 000 "Creating Stream Computing", "Stream Computation
Partitioning", "Writing to an existing supertable", "Custom tag"; seed 001; seed 002 for 3.3.7).

- the stream's query has a window clause over one table; its first output column must be a TIMESTAMP
  (``_wstart`` is added in front when it is not); a 3.3.7 window trigger runs as its equivalent
  window query, a computation that is not fused into the engine as a per-event query
  (``spark_workers.query.compute``);
- the output supertable is created when missing, with one column per select item (named by its
  alias, else its text as written, e.g. ``min(k)``) and tags: ``groupId BIGINT UNSIGNED`` by
  default, or the TAGS clause, whose values come from PARTITION BY items of the same name (alias
  or column), else by position;
- an existing output supertable must have the same number of columns (or a ``(field, ...)``
  mapping) and convertible types;
- one subtable per partition, named ``t_<md5>`` or ``SUBTABLE(expr)`` + ``_<stb>_<groupId>``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from sqlglot import exp

from spark_workers import timestamps
from spark_workers.duration import Duration
from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.shape import WindowShape
from spark_workers.engine.stream import TEN_YEARS_MS, StreamRules
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Catalog, Column, Table, physical_names
from spark_workers.lake.keys import key_column
from spark_workers.lake.names import check_name
from spark_workers.query.compute import Computation
from spark_workers.query.duck import DuckSession
from spark_workers.query.fill import FillSpec, fill_spec
from spark_workers.query.notify_where import bind_notify_where
from spark_workers.query.planner import (
    Source,
    WindowPlan,
    is_tableless,
    output_type,
    plan_projection,
    plan_window,
    resolve,
    tableless_source,
)
from spark_workers.query.select import empty_stage_types
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.lexer import TROWS
from spark_workers.sql.parser import parse_expression, parse_one
from spark_workers.streams.spec import (
    V337,
    NotifySpec,
    StreamSpec,
)
from spark_workers.streams.v337 import engine_query, is_fused
from spark_workers.tdtypes import TIMESTAMP, TdType, from_arrow

GROUP_ID_TAG = "groupId"


DEFAULT_RECALCULATE = Duration(60, "m")  # CONTINUOUS_WINDOW_CLOSE without RECALCULATE (seed 000)


MAX_CONVERTIBLE_LENGTH = 4096


@dataclass
class OutputColumnPlan:
    """One output column: its name in the output table, type, and index in the stage-3 result
    (-1 for the ``_wstart`` column added in front); ``composite_key`` when the output column list
    declares it ``COMPOSITE KEY`` (seed 002 "Stream Processing Output": the second column, a key
    with the first)."""

    name: str
    type: TdType
    source: int
    composite_key: bool = False


@dataclass
class TagPlan:
    """One tag of the output supertable: the value of ``expr`` over the group (3.3.7 ``TAGS (name
    type AS expr)``, seed 002: any expression of the PARTITION BY columns, ``%%n``, ``%%tbname``),
    else group column ``group_index``, else the groupId (``group_index`` None), or NULL (``null``:
    a tag of an existing supertable the stream gives no value, seed 000 "Writing to an existing
    supertable" / "Custom tag")."""

    name: str
    type: TdType
    group_index: int | None
    null: bool = False
    expr: exp.Expr | None = None


@dataclass
class CompiledStream:
    """Everything a worker needs to run a stream (derived from StreamSpec + catalog)."""

    spec: StreamSpec
    source: Source
    plan: WindowPlan
    shape: WindowShape
    aggs: list[AggSpec]
    rules: StreamRules
    input_types: dict[str, pa.DataType]
    group_types: list[pa.DataType]
    stage3_schema: pa.Schema
    columns: list[OutputColumnPlan]
    tags: list[TagPlan]
    out_db: str
    out_table: str
    subtable_expr: exp.Expr | None = None
    notify: NotifySpec | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    normal_output: bool = False  # 3.3.7 without grouping: the output is a normal table
    exact_subtable: bool = False  # 3.3.7 OUTPUT_SUBTABLE names the subtable exactly
    # 3.3.7 computation run per trigger event (compute.py); None: the window query itself
    computation: Computation | None = None
    compute_open: bool = False  # EVENT_TYPE(WINDOW_OPEN): compute at window open too
    compute_close: bool = True  # EVENT_TYPE without WINDOW_CLOSE: not at window close
    has_output: bool = True  # False: a notify-only stream (no INTO)
    # 3.3.7 NOTIFY ... WHERE bound to the result columns (query/notify_where.py); None: all sent
    notify_where: exp.Expr | None = None
    # 3.3.7 FILL_HISTORY(start) / FILL_HISTORY_FIRST(start): history rows before it (epoch in the
    # source's precision) trigger nothing; None: the whole history
    history_from: int | None = None
    fill: FillSpec | None = None  # a legacy INTERVAL stream's FILL (runtime/stream_fill.py)

    @property
    def precision(self) -> str:
        return self.source.db.precision


def group_id(gkey: str) -> int:
    """Stable 63-bit group id of a group key (the ``groupId`` tag and notification field)."""
    return int.from_bytes(hashlib.md5(gkey.encode()).digest()[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


def default_subtable(out_table: str, gkey: str) -> str:
    """Output subtable name when no SUBTABLE clause: ``t_`` + md5 (seed 000, like schemaless)."""
    return "t_" + hashlib.md5(f"{out_table.lower()}:{gkey}".encode()).hexdigest()


def notification_window_kind(spec: StreamSpec) -> str:
    """The window type notifications name (seed 000 "windowType"; ARCHITECTURE triggerType)."""
    t = spec.trigger.get("type", "interval")
    if t != "ekuiper":
        return str(t)
    return {"session": "session", "count": "count"}.get(str(spec.trigger.get("function")), "interval")


def compile_stream(spec: StreamSpec, lake: Any, tz: str, *, notify_all: bool = False) -> CompiledStream:
    """Derive the runnable form of a stream: plan, engine settings, output mapping.

    ``notify_all``: produce every notification whatever the stream's NOTIFY clause names
    (WINDOW_OPEN, WINDOW_CLOSE, and for the history too): the designer's preview lists them all.

    Raises:
        SqlError / CatalogError: the source or query no longer fits the catalog.
    """
    catalog: Catalog = lake.catalog
    # no output: a 3.3.7 notify-only stream, or a legacy one without INTO (seed 000's NOTIFY example)
    if spec.source is None:  # a 3.3.7 PERIOD stream that reads no table
        src = tableless_source(catalog.require_database(str(spec.trigger["home_db"])))
    else:
        src = resolve(
            catalog, ast.TableName(spec.source.table, spec.source.db), spec.source.db, spec.query or ""
        )
    v337 = spec.syntax == V337
    sql, plan, fused, fill = _stream_plan(spec, src, tz)
    assert plan.shape is not None
    if v337 and plan.shape.kind == "session":  # _twend: the session's last row (td-046)
        plan = dataclasses.replace(plan, shape=dataclasses.replace(plan.shape, end_at_last_row=True))
    if v337 and spec.trigger.get("type") == "sliding":
        plan = dataclasses.replace(plan, shape=sliding_shape(spec.trigger, plan.shape, src.db.precision, tz))
    rules, plan = _rules_and_read_plan(spec, src, plan, notify_all)
    assert plan.shape is not None
    with DuckSession(lake) as duck:
        if is_tableless(src):
            view = duck.register_arrow(
                pa.table(
                    {"tbname": pa.array([], pa.string()), "ts": pa.array([], pa.timestamp("us", tz="UTC"))}
                )
            )
        else:
            view = duck.register_source(src)
        input_types, group_types, aggs, out_schema = empty_stage_types(plan, duck, view, tz)
    _refuse_unstreamed_types(src, input_types, plan.inputs)
    computation = None
    if plan.projection:
        columns = _projection_columns(plan, out_schema)
    elif fused:
        columns = _window_query_columns(plan, out_schema)
    elif spec.query is None:  # notify-only (seed 002): the trigger's events, nothing computed
        columns = []
    else:
        computation, columns = _computation_columns(spec, lake, src, group_types, tz)
    _name_output_columns(spec, columns, sql)
    normal_output = v337 and not spec.partition_by  # seed 002: no grouping -> a normal table
    existing = _existing_stable(catalog, spec)
    tags = [] if normal_output or spec.output is None else _tag_plan(spec, plan, sql, existing)
    if tags and existing is not None:
        tags = existing_tag_plan(spec, plan, tags, existing)
    o = spec.options
    return CompiledStream(
        spec,
        src,
        plan,
        plan.shape,
        aggs,
        rules,
        input_types,
        group_types,
        out_schema,
        columns,
        tags,
        spec.output.db if spec.output is not None else "",
        spec.output.table if spec.output is not None else "",
        _subtable_expr(spec),
        spec.notify,
        normal_output=normal_output,
        exact_subtable=v337,
        computation=computation,
        compute_open=computation is not None and "WINDOW_OPEN" in o.event_type and not plan.shape.true_for,
        compute_close=not o.event_type or "WINDOW_CLOSE" in o.event_type,
        has_output=spec.output is not None,
        notify_where=_notify_where(spec, columns),
        history_from=_history_from(spec, src.db.precision, tz),
        fill=fill,
    )


def _rules_and_read_plan(
    spec: StreamSpec, src: Source, plan: WindowPlan, notify_all: bool
) -> tuple[StreamRules, WindowPlan]:
    """The engine's rules (``_stream_rules``; every notification with ``notify_all``) and the plan
    without what no notification of them reads (``_unread_conditions_dropped``)."""
    assert plan.shape is not None
    rules = _stream_rules(spec, plan.shape, src.db.precision, key_ties=key_column(src.storage) is not None)
    if notify_all:
        rules = dataclasses.replace(rules, notify_open=True, notify_close=True, notify_history=True)
    return rules, _unread_conditions_dropped(plan, rules)


def _unread_conditions_dropped(plan: WindowPlan, rules: StreamRules) -> WindowPlan:
    """``plan`` without the EVENT_WINDOW condition values no notification reads.

    The planner carries the columns a START WITH / END WITH condition reads as extras
    (``cond.start.<column>`` / ``cond.end.<column>``) so a notification can name the values that
    opened or closed the window (seeds 000 and 002, "Fields for Event Windows": ``triggerCondition``,
    ``notify/messages.py``). A stream that sends no WINDOW_OPEN (``rules.notify_open``) needs no
    start values, one that sends no WINDOW_CLOSE no end values: dropped here, stage 1 neither
    computes nor ships them, and the engine keeps no values dict per window
    (``engine.segment_model.condition_columns``)."""
    unread = [
        k
        for k in plan.extras
        if (k.startswith("cond.start.") and not rules.notify_open)
        or (k.startswith("cond.end.") and not rules.notify_close)
    ]
    if not unread:
        return plan
    return dataclasses.replace(plan, extras={k: v for k, v in plan.extras.items() if k not in unread})


def _refuse_unstreamed_types(
    src: Source, input_types: dict[str, pa.DataType], exprs: dict[str, exp.Expr]
) -> None:
    """Refuse a stream whose window engine would read VARBINARY, GEOMETRY or DECIMAL values
    (NOT_SUPPORTED, naming the source's column): the engine (numpy) and the sink have no rules
    for them yet, and a stream must never compute them wrongly. Stage 1 runs on DuckDB, so
    expressions over them (``st_astext(g)``, ``j->'k'``, ``cast(d as double)``) stream as their
    results; JSON tags stream as their text. BIGINT UNSIGNED values are decimals of scale 0 too:
    those pass unless the source has a DECIMAL column of exactly that type."""
    for name, t in input_types.items():
        binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
        decimal = pa.types.is_decimal(t)
        if not (binary or decimal):
            continue
        e = exprs.get(name)
        read = {c.name.lower() for c in e.find_all(exp.Column)} if e is not None else set(src.columns)
        for key, (display, td) in src.columns.items():
            if key not in read:
                continue
            if (binary and td.name in ("VARBINARY", "GEOMETRY")) or (decimal and td.stores_as(t)):
                raise SqlError(
                    f"column {display} of type {td.sql} is not supported in stream computations yet "
                    "(convert it in the query, e.g. cast or st_astext)",
                    code=Code.NOT_SUPPORTED,
                )
        if binary or t.scale > 0:  # scale 0: integers (BIGINT UNSIGNED arithmetic)
            raise SqlError(
                "a VARBINARY, GEOMETRY or DECIMAL value is not supported in stream computations yet",
                code=Code.NOT_SUPPORTED,
            )


def _history_from(spec: StreamSpec, precision: str, tz: str) -> int | None:
    """FILL_HISTORY(start_time)'s start as an epoch in ``precision`` (an integer is taken as
    written, a string in the server time zone ``tz``), or None (seed 002).

    Raises:
        SqlError: WRONG_VALUE_TYPE for a string that is no timestamp.
    """
    text = spec.options.fill_history_start
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    return timestamps.parse_literal(text, precision, tz)


def _notify_where(spec: StreamSpec, columns: list[OutputColumnPlan]) -> exp.Expr | None:
    """The stream's NOTIFY ... WHERE bound to its result columns (seed 002), positioned in the
    statement as written.

    Raises:
        SqlError: INVALID_COLUMN for a reference to anything but a result column.
    """
    if spec.notify is None or not spec.notify.where:
        return None
    stmt = parse_one(spec.sql)
    where = stmt.notify.where if isinstance(stmt, ast.CreateStream337) and stmt.notify else None
    if where is None:  # a spec built without its statement: the condition as stored
        where = parse_expression(spec.notify.where)
    return bind_notify_where(where, [c.name for c in columns], spec.sql)


def sliding_shape(trigger: dict[str, Any], shape: WindowShape | None, precision: str, tz: str) -> WindowShape:
    """A 3.3.7 SLIDING trigger's windows (``trigger``: its ``trigger_json``; seed 002 "Sliding
    Trigger": PERIOD's rules on event time, so midnight is the server time zone's, as for PERIOD):
    a sliding below one day that does not divide it resets at every local midnight plus the offset
    (``DailyAssigner``); otherwise the grid from the epoch's local midnight plus the offset, which
    is the same trigger points. The zone's offset from UTC is taken now (exact for zones without
    daylight saving time)."""
    assert shape is not None
    day = Duration(1, "d").in_precision(precision)
    s = Duration.parse(str(trigger["sliding"])).in_precision(precision)
    off = trigger.get("sliding_offset")
    o = Duration.parse(str(off)).in_precision(precision) if off else 0
    utc = dt.datetime.now(timestamps.zone(tz)).utcoffset() or dt.timedelta(0)
    o -= int(utc.total_seconds()) * Duration(1, "s").in_precision(precision)
    if s < day and day % s:
        return dataclasses.replace(shape, offset=o % day, day=day)
    return dataclasses.replace(shape, offset=o % s)


def _stream_plan(spec: StreamSpec, src: Source, tz: str) -> tuple[str, WindowPlan, bool, FillSpec | None]:
    """``(engine query, its WindowPlan, fused, FILL)``: the stream's query, or for a 3.3.7 stream its
    trigger's equivalent window query (``v337.engine_query``; fused when the computation is that
    query). Errors in a 3.3.7 engine query are re-anchored in the statement as written."""
    sql = spec.query or ""
    v337 = spec.syntax == V337
    fused = True
    if v337:  # a 3.3.7 window trigger over %%trows runs as its equivalent window query
        stmt337 = parse_one(spec.sql)
        assert isinstance(stmt337, ast.CreateStream337)
        fused = is_fused(stmt337)
        sql = engine_query(spec, src.table.columns[0].name, stmt337)
    stmt = parse_one(sql)
    if not isinstance(stmt, ast.Select):
        raise SqlError("a stream's query must be a SELECT", sql=sql, code=Code.INVALID_STREAM_QUERY)
    q = stmt.query
    if not v337 and q.window is None:  # a legacy stream without a window (seed 001, seed 004)
        return sql, plan_projection(q, src, sql), True, None
    if not v337:
        check_stream_fill(q.fill, spec.options.trigger, sql)
    try:
        # a 3.3.7 COUNT_WINDOW trigger counts from 1 ("The minimum value is 1", seed 002)
        plan = plan_window(
            q, src, sql, streaming=True, tz=tz, min_count=1 if v337 else None, stream_functions=v337
        )
    except SqlError as e:
        if not v337:
            raise
        original = parse_one(spec.sql)
        assert isinstance(original, ast.CreateStream337)
        raise anchor_in_statement(e, sql, spec.sql, original) from None
    fill = fill_spec(q.fill, plan.window, [e for _, e in plan.items], sql) if not v337 else None
    return sql, plan, fused, fill


FORCE_WINDOW_CLOSE_FILL = ("PREV", "NULL", "NONE", "VALUE")


def check_stream_fill(fill: ast.Fill | None, trigger: str, sql: str) -> None:
    """FILL in a legacy stream's window query: seed 000 lets TRIGGER FORCE_WINDOW_CLOSE use only
    FILL(PREV | NULL | NONE | VALUE); the stream writes filled windows (``runtime/stream_fill.py``).

    Raises:
        SqlError: positioned at FILL.
    """
    if fill is None:
        return
    at = fill.span.start if fill.span else None
    if trigger == "FORCE_WINDOW_CLOSE" and fill.mode not in FORCE_WINDOW_CLOSE_FILL:
        raise SqlError(
            f"TRIGGER FORCE_WINDOW_CLOSE supports FILL only with PREV, NULL, NONE or VALUE (seed 000), "
            f"got FILL({fill.mode})",
            sql=sql,
            offset=at,
            code=Code.INVALID_STREAM_QUERY,
        )


def _window_query_columns(plan: WindowPlan, out_schema: pa.Schema) -> list[OutputColumnPlan]:
    """Output columns of a window query: one per select item, ``_wstart`` in front unless the
    first is a TIMESTAMP."""
    columns = [
        OutputColumnPlan(name, output_type(name, out_schema.field(i).type, plan), i)
        for i, (name, _e) in enumerate(plan.items)
    ]
    if not columns or columns[0].type.name != "TIMESTAMP":
        columns.insert(0, OutputColumnPlan("_wstart", TIMESTAMP, -1))
    return columns


def _projection_columns(plan: WindowPlan, out_schema: pa.Schema) -> list[OutputColumnPlan]:
    """Output columns of a stream without a window: one per select item (a column keeps its
    table's type), the row's timestamp in front (named like the table's timestamp column, source
    -1) unless the first item is a TIMESTAMP (seed 000: the output table's first column is its
    primary key; seed 004's ``power_stream`` selects no timestamp)."""
    columns = []
    for i, (name, _e) in enumerate(plan.items):
        src = plan.inputs[f"_i{i}"]
        col = (
            plan.source.columns.get(src.name.lower())
            if isinstance(src, exp.Column) and not src.table
            else None
        )
        typ = col[1] if col is not None else output_type(name, out_schema.field(i).type, plan)
        columns.append(OutputColumnPlan(name, typ, i))
    if not columns or columns[0].type.name != "TIMESTAMP":
        columns.insert(0, OutputColumnPlan(plan.source.table.columns[0].name, TIMESTAMP, -1))
    return columns


def _computation_columns(
    spec: StreamSpec, lake: Any, src: Source, group_types: list[pa.DataType], tz: str
) -> tuple[Computation, list[OutputColumnPlan]]:
    """The per-event computation of a 3.3.7 stream that is not fused, and its output columns.

    Raises:
        SqlError: INVALID_STREAM_QUERY when its first column is not a TIMESTAMP and the results
            are written to an output table (seed 002, "Stream Processing Computation Tasks").
    """
    assert spec.query is not None
    computation = Computation(
        spec.query,
        src if spec.trigger.get("from", True) else None,
        default_db=spec.db or (spec.source.db if spec.source is not None else spec.trigger.get("home_db")),
        tz=tz,
        pre_filter=spec.options.pre_filter,
        partition_types=[from_arrow(t) for t in group_types],
    )
    q = computation.q
    if (
        spec.trigger.get("type") == "period"
        and q.window is not None
        and any(t.name.lower() == TROWS for t in q.select.find_all(exp.Table))
    ):
        raise SqlError(
            "a window clause over %%trows of a PERIOD trigger (the rows written since the previous "
            "trigger, by commit time) is not implemented by tdweb: read the trigger table with a "
            "WHERE on its timestamp (_tprev_localtime / _tlocaltime) instead",
            sql=spec.sql,
            code=Code.NOT_SUPPORTED,
        )
    try:
        schema = computation.schema(lake)
    except SqlError as e:  # a name the computation uses: point at it in the statement as written
        original = parse_one(spec.sql)
        if e.sql != computation.sql or e.offset is None or not isinstance(original, ast.CreateStream337):
            raise
        raise anchor_in_statement(e, computation.sql, spec.sql, original) from None
    columns = [OutputColumnPlan(r.name, r.type, i) for i, r in enumerate(schema)]
    # the first column keys the output table: without one (no INTO, CALC_NOTIFY_ONLY) the results
    # are only notified and any first column will do (seed 002, count window example sm2)
    keyed = spec.output is not None and not spec.options.calc_notify_only
    if keyed and (not columns or columns[0].type.name != "TIMESTAMP"):
        raise SqlError(
            "the first column of a stream's computation must be a TIMESTAMP: it is the output "
            f"table's primary key (seed 002), got {columns[0].type.sql if columns else 'no column'}",
            sql=spec.sql,
            offset=None,
            code=Code.INVALID_STREAM_QUERY,
        )
    return computation, columns


def _name_output_columns(spec: StreamSpec, columns: list[OutputColumnPlan], sql: str) -> None:
    """Rename ``columns`` after the output column list ``INTO t(c, ...)`` when there is one; the
    names must then be distinct.

    Raises:
        SqlError: COLUMN_COUNT_MISMATCH, INVALID_COLUMN for a duplicate name.
    """
    if spec.output is not None and spec.output.columns:
        names = [c["name"] for c in spec.output.columns]
        if len(names) != len(columns):
            raise SqlError(
                f"the output column list names {len(names)} columns but the query produces {len(columns)}",
                sql=spec.sql or sql,
                code=Code.COLUMN_COUNT_MISMATCH,
            )
        for c, n, oc in zip(columns, names, spec.output.columns, strict=True):
            c.name = n
            c.composite_key = bool(oc.get("composite_key"))
    seen: set[str] = set()
    for c in columns:
        if c.name.lower() == "tbname" and spec.syntax != V337:
            raise SqlError(
                "an output column cannot be named tbname: every row of the output supertable has its "
                "subtable's name as tbname; give the item an alias (e.g. tbname AS src)",
                sql=spec.sql or sql,
                code=Code.INVALID_COLUMN,
            )
        if c.name.lower() in seen:
            raise SqlError(
                f"duplicate output column name {c.name}: give the select items distinct aliases",
                sql=spec.sql or sql,
                code=Code.INVALID_COLUMN,
            )
        seen.add(c.name.lower())


def _stream_rules(
    spec: StreamSpec, shape: WindowShape, precision: str, *, key_ties: bool = False
) -> StreamRules:
    """The engine's StreamRules from the stream's options (durations in ``precision`` units) and
    NOTIFY events (plus WINDOW_OPEN for a 3.3.7 EVENT_TYPE(WINDOW_OPEN)); 3.3.7 INTERVAL and
    SLIDING triggers fire empty windows without IGNORE_NODATA_TRIGGER, and EXPIRED_TIME applies
    per trigger group (seed 002); ``key_ties`` when the source has a composite key."""
    o = spec.options
    dur = lambda v, default: default if v is None else Duration.parse(v).in_precision(precision)  # noqa: E731
    ten_years = TEN_YEARS_MS * {"ms": 1, "us": 1000, "ns": 1_000_000}[precision]
    events = list(spec.notify.events) if spec.notify else []
    if spec.syntax == V337 and "WINDOW_OPEN" in o.event_type:  # EVENT_TYPE: open events drive the computation
        events.append("WINDOW_OPEN")
    return StreamRules(
        mode=o.trigger,
        watermark=dur(o.watermark, 0),
        ignore_expired=o.ignore_expired,
        ignore_update=o.ignore_update,
        delete_mark=dur(o.delete_mark, ten_years),
        notify_open="WINDOW_OPEN" in events,
        notify_close="WINDOW_CLOSE" in events,
        notify_history=bool(spec.notify.history) if spec.notify else False,
        max_delay=dur(o.max_delay, 0),
        processing_time=not o.event_time,
        late_by_watermark=shape.ekuiper,
        recalc_every=dur(o.recalculate, DEFAULT_RECALCULATE.in_precision(precision)),
        key_ties_late=key_ties,
        # seed 002: INTERVAL / SLIDING triggers fire for periods without rows unless
        # IGNORE_NODATA_TRIGGER; EXPIRED_TIME per trigger group ("Expired Data")
        fire_empty=spec.syntax == V337
        and spec.trigger.get("type") in ("interval", "sliding")
        and not o.ignore_nodata_trigger,
        expired_time=dur(o.expired_time, 0) if spec.syntax == V337 else 0,
    )


def _subtable_expr(spec: StreamSpec) -> exp.Expr | None:
    """The SUBTABLE / OUTPUT_SUBTABLE expression naming output subtables (None without one)."""
    if spec.output is None or not spec.output.subtable:
        return None
    sub = parse_one(f"SELECT {spec.output.subtable}")
    assert isinstance(sub, ast.Select) and isinstance(sub.query.select, exp.Select)
    return sub.query.select.expressions[0]


def anchor_in_statement(e: SqlError, engine_sql: str, sql: str, stmt: ast.CreateStream337) -> SqlError:
    """Re-anchor an error found in a 3.3.7 stream's engine query (``engine_query``, generated
    text) in the statement as written: the name at the error's offset is looked up among the
    columns and functions of the trigger, PARTITION BY, PRE_FILTER and the computation, and the
    first occurrence in the statement gets the error. Without a match the error keeps its message
    and loses its position (a generated text's offset would point at the wrong place)."""
    name = None
    if e.offset is not None and e.sql == engine_sql:
        m = re.match(r"[`\"]?([A-Za-z_][\w]*)", engine_sql[e.offset :])
        name = m.group(1).lower() if m else None
    trees: list[exp.Expr] = []
    trig = stmt.trigger
    for attr in ("start", "end", "expr"):
        node = getattr(trig, attr, None)
        if isinstance(node, exp.Expr):
            trees.append(node)
    trees += [p.expr for p in stmt.partition_by]
    if stmt.options.pre_filter is not None:
        trees.append(stmt.options.pre_filter)
    if stmt.query is not None:
        trees.append(stmt.query.select)
    best: int | None = None
    if name is not None:
        for tree in trees:
            for n in tree.walk():
                hit = (isinstance(n, exp.Column) and n.name.lower() == name) or (
                    isinstance(n, exp.Func) and not isinstance(n, exp.Column) and n.sql_name().lower() == name
                )
                off = offset_of(n) if hit else None
                if off is not None and (best is None or off < best):
                    best = off
    return SqlError(e.message, sql=sql, offset=best, code=e.code)


def _existing_stable(catalog: Catalog, spec: StreamSpec) -> Table | None:
    """The legacy stream's output supertable when it exists already (None otherwise, and for
    3.3.7 streams: seed 002 wants an existing table's schema to match exactly)."""
    if spec.syntax == V337 or spec.output is None or catalog.database(spec.output.db) is None:
        return None
    t = catalog.table(spec.output.db, spec.output.table)
    return t if t is not None and t.kind == "super" else None


def _tag_plan(spec: StreamSpec, plan: WindowPlan, sql: str, existing: Table | None = None) -> list[TagPlan]:
    """The tags the stream defines: ``groupId`` without a TAGS clause, else each TAGS item with
    the PARTITION BY item of its name (or position); a tag named without a type (``TAGS (ta)``)
    has the type of the existing supertable's tag of that name, else of its PARTITION BY column.

    Raises:
        SqlError: INVALID_COLUMN for a tag that matches no PARTITION BY item, or one without a type
            that can be known.
    """
    assert spec.output is not None
    if not spec.output.tags:
        return [TagPlan(GROUP_ID_TAG, TdType("BIGINT", unsigned=True), None)]
    out = []
    theirs = {t.name.lower(): t.type for t in existing.tags} if existing is not None else {}
    for i, t in enumerate(spec.output.tags):
        if t.expr is not None and spec.syntax == V337:  # TAGS (name type AS expr), seed 002
            sel = parse_one(f"SELECT {t.expr}")
            assert isinstance(sel, ast.Select) and isinstance(sel.query.select, exp.Select)
            out.append(TagPlan(t.name, _parse_type(t.type), None, expr=sel.query.select.expressions[0]))
            continue
        idx = next((j for j, g in enumerate(plan.groups) if g.display.lower() == t.name.lower()), None)
        if idx is None:
            if len(spec.output.tags) != len(plan.groups):
                raise SqlError(
                    f"tag {t.name} matches no PARTITION BY item: name a PARTITION BY item (or its "
                    "alias) like the tag, or list as many tags as PARTITION BY items",
                    sql=spec.sql or sql,
                    code=Code.INVALID_COLUMN,
                )
            idx = i
        ttype = _parse_type(t.type) if t.type else theirs.get(t.name.lower()) or plan.groups[idx].type
        if ttype is None:
            raise SqlError(
                f"tag {t.name} has no type: write TAGS ({t.name} type, ...), or name a tag of an "
                "existing output supertable or a PARTITION BY column",
                sql=spec.sql or sql,
                code=Code.INVALID_COLUMN,
            )
        out.append(TagPlan(t.name, ttype, idx))
    return out


def existing_tag_plan(
    spec: StreamSpec, plan: WindowPlan, mine: list[TagPlan], stable: Table
) -> list[TagPlan]:
    """The tags of a legacy stream writing into an EXISTING supertable ``stable``, one per tag of
    ``stable`` in its order (seed 000 "Writing to an existing supertable", "Custom tag"; seed 001
    "Customizing Tags for Target Tables"):

    - the tags the stream would create (``mine``) when ``stable`` has exactly those (a table the
      stream created before);
    - with a TAGS clause, each tag it names is the ``stable`` tag of that name (the explicit
      correspondence); tags it does not name are NULL;
    - without one, the PARTITION BY values by position when there are as many as ``stable`` has
      tags; a stream without PARTITION BY writes one subtable whose tags are all NULL.

    Raises:
        SqlError: INVALID_COLUMN for a TAGS name that is no tag of ``stable``; COLUMN_COUNT_MISMATCH
            when PARTITION BY gives another number of values than ``stable`` has tags (and no TAGS
            clause says which is which); WRONG_VALUE_TYPE for a tag type longer than 4096 bytes
            that cannot be converted.
    """
    assert spec.output is not None
    same = [(t.name.lower(), t.type.sql) for t in mine] == [(t.name.lower(), t.type.sql) for t in stable.tags]
    if same:
        return mine
    by_name = {t.name.lower(): t for t in mine}
    sql = spec.sql or ""
    if spec.output.tags:
        names = {t.name.lower() for t in stable.tags}
        for t in mine:
            if t.name.lower() not in names:
                raise SqlError(
                    f"tag {t.name} of the TAGS clause is not a tag of the existing supertable "
                    f"{stable.name} (its tags: {', '.join(x.name for x in stable.tags)}; seed 000 "
                    '"Custom tag": tags correspond by name)',
                    sql=sql,
                    code=Code.INVALID_COLUMN,
                )
        out = []
        for tag in stable.tags:
            m = by_name.get(tag.name.lower())
            if m is not None and not _convertible(m.type, tag.type):
                raise SqlError(
                    f"tag {m.name} {m.type.sql} cannot be written to tag {tag.name} {tag.type.sql} of "
                    f"{stable.name} (seed 000: a length above {MAX_CONVERTIBLE_LENGTH} bytes is refused)",
                    sql=sql,
                    code=Code.WRONG_VALUE_TYPE,
                )
            out.append(
                TagPlan(tag.name, tag.type, m.group_index, null=m.null)
                if m is not None
                else TagPlan(tag.name, tag.type, None, null=True)
            )
        return out
    if not plan.groups:  # one subtable, no partition values to give
        return [TagPlan(t.name, t.type, None, null=True) for t in stable.tags]
    if len(plan.groups) != len(stable.tags):
        raise SqlError(
            f"the existing supertable {stable.name} has {len(stable.tags)} tags but PARTITION BY gives "
            f"{len(plan.groups)} values: name the tags to fill with TAGS (tag type, ...) (seed 000 "
            '"Custom tag": with another number of tags the correspondence must be specified)',
            sql=sql,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    return [TagPlan(t.name, t.type, i) for i, t in enumerate(stable.tags)]


def _parse_type(text: str) -> TdType:
    t = text.strip().upper()
    unsigned = t.endswith(" UNSIGNED")
    if unsigned:
        t = t[: -len(" UNSIGNED")].strip()
    if "(" in t:
        name, _, rest = t.partition("(")
        return TdType.parse(name.strip(), int(rest.rstrip(")").strip()), unsigned)
    return TdType.parse(t, None, unsigned)


def _convertible(src: TdType, dst: TdType) -> bool:
    if src.name == "TIMESTAMP" or dst.name == "TIMESTAMP":
        return src.name == dst.name or (dst.is_integer and src.name == "TIMESTAMP")
    if dst.is_string:
        return dst.length <= MAX_CONVERTIBLE_LENGTH or src.is_string
    return True


def output_table_plan(c: CompiledStream) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """Columns and tags of the output supertable to create."""
    names = [col.name for col in c.columns]
    phys = physical_names(names)
    cols = tuple(
        Column(col.name, col.type, p, composite_key=col.composite_key)
        for col, p in zip(c.columns, phys, strict=True)
    )
    tags = tuple(
        Column(t.name, t.type, t.name.lower() if t.name.isidentifier() else f"_t{i}")
        for i, t in enumerate(c.tags)
    )
    return cols, tags


def output_targets(c: CompiledStream, table: Table) -> list[tuple[OutputColumnPlan, Column]]:
    """Each output column with the column of ``table`` it is written to: by name when the stream
    lists its target columns (``INTO stb(col, ...)``, seed 000 "Writing to an existing
    supertable": the list is the correspondence, the table's other columns get NULL), else by
    position (3.3.7: the list names the columns of a table whose schema matches, seed 002)."""
    if c.spec.output is not None and c.spec.output.columns and c.spec.syntax != V337:
        by_name = {col.name.lower(): col for col in table.columns}
        return [(p, by_name[p.name.lower()]) for p in c.columns if p.name.lower() in by_name]
    return list(zip(c.columns, table.columns, strict=False))


def _check_listed_columns(c: CompiledStream, existing: Table, sql: str) -> None:
    """``INTO stb(col, ...)`` into an existing supertable: every listed name is one of its
    columns, the first its primary timestamp, and each type can be converted (seed 000).

    Raises:
        SqlError: INVALID_COLUMN naming a column the table lacks or a first column that is not
            its timestamp; WRONG_VALUE_TYPE for a conversion the seed refuses.
    """
    by_name = {col.name.lower(): col for col in existing.columns}
    for i, p in enumerate(c.columns):
        theirs = by_name.get(p.name.lower())
        if theirs is None:
            raise SqlError(
                f"column {p.name} of the column list is not a column of the existing supertable "
                f"{existing.name} (its columns: {', '.join(x.name for x in existing.columns)})",
                sql=sql,
                code=Code.INVALID_COLUMN,
            )
        if i == 0 and theirs is not existing.columns[0]:
            raise SqlError(
                f"the first listed column must be the primary timestamp {existing.columns[0].name} of "
                f"{existing.name}: the stream's first column is the output's primary key",
                sql=sql,
                code=Code.INVALID_COLUMN,
            )
        if not _convertible(p.type, theirs.type):
            raise SqlError(
                f"output column {p.name} {p.type.sql} cannot be written to {theirs.name} {theirs.type.sql}",
                sql=sql,
                code=Code.WRONG_VALUE_TYPE,
            )


def ensure_output_table(c: CompiledStream, lake: Any, *, sql: str) -> bool:
    """Create the output supertable, or check an existing one (seed 000 "Writing to an existing
    supertable"); returns True when created.

    Raises:
        SqlError: the existing table is not a supertable, or its columns/tags do not fit.
    """
    catalog: Catalog = lake.catalog
    db = catalog.require_database(c.out_db)
    existing = catalog.table(db.name, c.out_table)
    cols, tags = output_table_plan(c)
    kind = "normal" if c.normal_output else "super"
    if existing is None:
        check_name(c.out_table, "table", sql=sql)
        lake.create_table(db, Table(db.name, c.out_table, kind, cols, tags), if_not_exists=True)
        return True
    if existing.kind != kind:
        raise SqlError(
            f"output table {c.out_table} exists and is not a "
            + ("normal table" if c.normal_output else "supertable"),
            sql=sql,
            code=Code.STREAM_OUTPUT_CONFLICT,
        )
    listed = c.spec.output is not None and bool(c.spec.output.columns) and c.spec.syntax != V337
    if listed:
        _check_listed_columns(c, existing, sql)
    elif len(existing.columns) != len(cols):
        raise SqlError(
            f"output supertable {c.out_table} has {len(existing.columns)} columns but the stream "
            f"produces {len(cols)}: list the target columns (INTO {c.out_table}(col, ...))",
            sql=sql,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    for mine, theirs in [] if listed else zip(cols, existing.columns, strict=True):
        if not _convertible(mine.type, theirs.type):
            raise SqlError(
                f"output column {mine.name} {mine.type.sql} cannot be written to {theirs.name} "
                f"{theirs.type.sql}",
                sql=sql,
                code=Code.WRONG_VALUE_TYPE,
            )
        if mine.composite_key and not theirs.composite_key:  # its rows would collapse per ts
            raise SqlError(
                f"output column {mine.name} is declared COMPOSITE KEY but column {theirs.name} of the "
                f"existing table {c.out_table} is not a composite key",
                sql=sql,
                code=Code.INVALID_COLUMN,
            )
    if len(existing.tags) != len(tags):  # a legacy stream's tags are matched by existing_tag_plan
        raise SqlError(
            f"output supertable {c.out_table} has {len(existing.tags)} tags but the stream "
            f"defines {len(tags)}",
            sql=sql,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    return False
