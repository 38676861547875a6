"""Legacy CREATE STREAM -> StreamSpec, and StreamSpec -> CompiledStream (what a worker runs).

Rules (seed 000 "Creating Stream Computing", "Stream Computation Partitioning", "Writing to an
existing supertable", "Custom tag"; seed 001):

- the subquery reads one table and has a window clause; its first output column must be a
  TIMESTAMP (``_wstart`` is added in front when it is not);
- the output supertable is created when missing, with one column per select item (named by its
  alias, else its text as written, e.g. ``min(k)``) and tags: ``groupId BIGINT UNSIGNED`` by
  default, or the TAGS clause, whose values come from PARTITION BY items of the same name (alias
  or column), else by position;
- an existing output supertable must have the same number of columns (or a ``(field, ...)``
  mapping) and convertible types; two streams may not write the same table;
- one subtable per partition, named ``t_<md5>`` or ``SUBTABLE(expr)`` + ``_<stb>_<groupId>``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from spark_workers import access
from spark_workers.access import READ, WRITE, Principal
from spark_workers.duration import Duration
from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.shape import WindowShape
from spark_workers.engine.stream import TEN_YEARS_MS, StreamRules
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake.catalog import Catalog, Column, Table, physical_names
from spark_workers.lake.names import check_name
from spark_workers.sql import ast
from spark_workers.sql.duck import DuckSession
from spark_workers.sql.parser import parse_one
from spark_workers.sql.planner import Source, WindowPlan, output_type, plan_window, resolve
from spark_workers.sql.render import expr_sql
from spark_workers.sql.sandbox import check_stream
from spark_workers.sql.spec import (
    LEGACY,
    V337,
    NotifySpec,
    OptionsSpec,
    OutputSpec,
    OutputTag,
    SourceSpec,
    StreamSpec,
)
from spark_workers.tdtypes import TIMESTAMP, TdType

if TYPE_CHECKING:
    from spark_workers.sql.compute import Computation
    from spark_workers.sql.executor import Executor

GROUP_ID_TAG = "groupId"
TRIGGERS = ("AT_ONCE", "WINDOW_CLOSE", "MAX_DELAY", "FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE")
MAX_DELAY_MIN = Duration(5, "s")  # legacy syntax (ARCHITECTURE.md decisions)
DEFAULT_RECALCULATE = Duration(60, "m")  # CONTINUOUS_WINDOW_CLOSE without RECALCULATE (seed 000)
FILL_HISTORY_MAX_WINDOWS = 20_000_000  # seed 000 "FILL_HISTORY"
MAX_CONVERTIBLE_LENGTH = 4096


@dataclass
class OutputColumnPlan:
    """One output column: its name in the output table, type, and index in the stage-3 result
    (-1 for the ``_wstart`` column added in front)."""

    name: str
    type: TdType
    source: int


@dataclass
class TagPlan:
    """One tag of the output supertable: value from group column ``group_index``, or the groupId
    (``group_index`` None)."""

    name: str
    type: TdType
    group_index: int | None


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

    @property
    def precision(self) -> str:
        return self.source.db.precision


def group_id(gkey: str) -> int:
    """Stable 63-bit group id of a group key (the ``groupId`` tag and notification field)."""
    return int.from_bytes(hashlib.md5(gkey.encode()).digest()[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


def default_subtable(out_table: str, gkey: str) -> str:
    """Output subtable name when no SUBTABLE clause: ``t_`` + md5 (seed 000, like schemaless)."""
    return "t_" + hashlib.md5(f"{out_table.lower()}:{gkey}".encode()).hexdigest()


def _dur(d: Duration | None) -> str | None:
    return None if d is None else str(d)


def _trigger_of(q: ast.SelectQuery) -> dict[str, Any]:
    """The window clause as StreamSpec JSON (durations and expressions as written)."""
    w = q.window
    if isinstance(w, ast.IntervalWindow):
        return {
            "type": "interval",
            "interval": str(w.interval),
            "offset": _dur(w.offset),
            "sliding": _dur(w.sliding),
        }
    if isinstance(w, ast.SessionWindow):
        return {"type": "session", "ts_column": w.ts_column, "tolerance": str(w.gap)}
    if isinstance(w, ast.StateWindow):
        return {"type": "state", "column": expr_sql(w.expr)}
    if isinstance(w, ast.EventWindow):
        return {"type": "event", "start": expr_sql(w.start), "end": expr_sql(w.end)}
    if isinstance(w, ast.CountWindow):
        return {"type": "count", "count": w.count, "sliding": w.sliding, "columns": list(w.columns)}
    if isinstance(w, ast.EkuiperWindow):
        return {
            "type": "ekuiper",
            "function": w.function,
            "unit": w.unit,
            "args": list(w.args),
            "filter": expr_sql(w.filter) if w.filter is not None else None,
            "over_when": expr_sql(w.over_when) if w.over_when is not None else None,
        }
    return {"type": "none"}


def notification_window_kind(spec: StreamSpec) -> str:
    """The window type notifications name (seed 000 "windowType"; ARCHITECTURE triggerType)."""
    t = spec.trigger.get("type", "interval")
    if t != "ekuiper":
        return str(t)
    return {"session": "session", "count": "count"}.get(str(spec.trigger.get("function")), "interval")


def legacy_spec(s: ast.CreateStreamLegacy, sql: str, default_db: str | None) -> StreamSpec:
    """StreamSpec of a parsed legacy CREATE STREAM (no catalog checks; see ``create_stream``)."""
    q = s.query
    o = s.options
    from_tables = list(q.select.find_all(exp.Table)) if isinstance(q.select, exp.Select) else []
    if len(from_tables) != 1:
        raise SqlError(
            "a stream's query reads exactly one table",
            sql=sql,
            offset=q.span.start if q.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    t = from_tables[0]
    src_db = t.db or default_db
    if not src_db:
        raise CatalogError("database not specified for the stream's source table", code=Code.DB_NOT_SPECIFIED)
    into_db = s.into.db or default_db or src_db
    where = q.select.args.get("where") if isinstance(q.select, exp.Select) else None
    options = OptionsSpec(
        trigger=(o.trigger or "WINDOW_CLOSE").upper(),
        max_delay=_dur(o.max_delay),
        recalculate=_dur(o.recalculate),
        watermark=_dur(o.watermark),
        ignore_expired=bool(1 if o.ignore_expired is None else o.ignore_expired),
        ignore_update=bool(1 if o.ignore_update is None else o.ignore_update),
        delete_mark=_dur(o.delete_mark),
        fill_history=bool(o.fill_history or 0),
        fill_history_async=o.fill_history_async,
        event_time=bool(1 if o.event_time is None else o.event_time),
    )
    notify = None
    if s.notify is not None:
        notify = NotifySpec(
            urls=list(s.notify.urls),
            events=[e.upper() for e in s.notify.events],
            history=bool(s.notify.history),
            on_failure=(s.notify.on_failure or "PAUSE").upper(),
            where=expr_sql(s.notify.where) if s.notify.where is not None else None,
        )
    output = OutputSpec(
        db=into_db,
        table=s.into.name,
        subtable=expr_sql(s.subtable) if s.subtable is not None else None,
        columns=[{"name": c.name, "composite_key": c.composite_key} for c in s.columns]
        if s.columns
        else None,
        tags=[
            OutputTag(t.name, t.type.sql, expr_sql(t.expr) if t.expr is not None else None, t.comment)
            for t in (s.tags or [])
        ],
    )
    return StreamSpec(
        name=s.name,
        db=s.db,
        syntax=LEGACY,
        source=SourceSpec(src_db, t.name),
        trigger=_trigger_of(q),
        partition_by=[{"sql": p.text, "alias": p.alias} for p in q.partition_by],
        filter=expr_sql(where.this) if where is not None else None,
        query=q.text,
        options=options,
        output=output,
        notify=notify,
        sql=sql,
    )


def _validate_options(spec: StreamSpec, sql: str, spans: dict[str, ast.Span] | None = None) -> None:
    """The trigger modes' constraints (seed 000 "Stream Computing Trigger Modes"): MAX_DELAY at
    least 5 s; FORCE_WINDOW_CLOSE only for INTERVAL without SLIDING, with FILL_HISTORY 0,
    IGNORE EXPIRED 1 and IGNORE UPDATE 1; CONTINUOUS_WINDOW_CLOSE only for INTERVAL."""
    o = spec.options
    spans = spans or {}

    def err(message: str, key: str | None = None, code: int = Code.INVALID_OPERATION) -> SqlError:
        sp = spans.get(key or "") or spans.get("trigger")
        return SqlError(message, sql=sql, offset=sp.start if sp else None, code=code)

    if o.trigger not in TRIGGERS:
        raise err(f"unknown TRIGGER {o.trigger}: use one of {', '.join(TRIGGERS)}", "trigger")
    kind = spec.trigger.get("type")
    legacy_interval = kind == "interval"
    if o.trigger == "MAX_DELAY":
        if o.max_delay is None:
            raise err("TRIGGER MAX_DELAY needs a time, e.g. MAX_DELAY 10s", "max_delay")
        d = Duration.parse(o.max_delay)
        if d.is_calendar or d.ns < MAX_DELAY_MIN.ns:
            raise err(f"MAX_DELAY must be at least {MAX_DELAY_MIN} (seed 000), got {d}", "max_delay")
    if o.trigger == "FORCE_WINDOW_CLOSE":
        sliding = spec.trigger.get("sliding")
        if not legacy_interval or (sliding is not None and sliding != spec.trigger.get("interval")):
            raise err("TRIGGER FORCE_WINDOW_CLOSE supports only INTERVAL windows without SLIDING (seed 000)")
        if o.fill_history:
            raise err("TRIGGER FORCE_WINDOW_CLOSE needs FILL_HISTORY 0 (seed 000)", "fill_history")
        if not o.ignore_expired:
            raise err("TRIGGER FORCE_WINDOW_CLOSE needs IGNORE EXPIRED 1 (seed 000)", "ignore_expired")
        if not o.ignore_update:
            raise err("TRIGGER FORCE_WINDOW_CLOSE needs IGNORE UPDATE 1 (seed 000)", "ignore_update")
    if o.trigger == "CONTINUOUS_WINDOW_CLOSE":
        if not legacy_interval:
            raise err("TRIGGER CONTINUOUS_WINDOW_CLOSE supports only INTERVAL windows (seed 000)")
        if o.recalculate is not None:
            r = Duration.parse(o.recalculate)
            if r.is_calendar or r.value <= 0:
                raise err("RECALCULATE must be a positive fixed duration", "recalculate")
    elif o.recalculate is not None:
        raise err("RECALCULATE belongs to TRIGGER CONTINUOUS_WINDOW_CLOSE", "recalculate")
    if kind in (None, "none"):
        raise err("a stream's query needs a window clause", code=Code.INVALID_STREAM_QUERY)
    for name in ("watermark", "delete_mark"):
        v = getattr(o, name)
        if v is not None and (Duration.parse(v).is_calendar or Duration.parse(v).value < 0):
            raise err(f"{name.upper()} must be a non-negative fixed duration", name)
    if spec.notify is not None:
        for url in spec.notify.urls:
            if not (url.startswith("ws://") or url.startswith("wss://")):
                raise SqlError(
                    f"notification URL {url!r} must start with ws:// or wss:// (seed 000: only "
                    "the WebSocket protocol is supported)",
                    sql=sql,
                    code=Code.INVALID_OPERATION,
                )
        for ev in spec.notify.events:
            if ev not in ("WINDOW_OPEN", "WINDOW_CLOSE"):
                raise SqlError(
                    f"unknown notification event {ev}: use WINDOW_OPEN or WINDOW_CLOSE",
                    sql=sql,
                    code=Code.INVALID_OPERATION,
                )
        if spec.notify.on_failure not in ("DROP", "PAUSE"):
            raise SqlError("ON_FAILURE must be DROP or PAUSE", sql=sql, code=Code.INVALID_OPERATION)


def compile_stream(spec: StreamSpec, lake: Any, tz: str) -> CompiledStream:
    """Derive the runnable form of a stream: plan, engine settings, output mapping.

    Raises:
        SqlError / CatalogError: the source or query no longer fits the catalog.
    """
    catalog: Catalog = lake.catalog
    assert spec.source is not None and (spec.output is not None or spec.syntax == V337)
    sql = spec.query or ""
    src = resolve(catalog, ast.TableName(spec.source.table, spec.source.db), spec.source.db, sql)
    v337 = spec.syntax == V337
    fused = True
    if v337:  # a 3.3.7 window trigger over %%trows runs as its equivalent window query
        from spark_workers.sql.streams337 import engine_query, is_fused

        stmt337 = parse_one(spec.sql)
        assert isinstance(stmt337, ast.CreateStream337)
        fused = is_fused(stmt337)
        sql = engine_query(spec, src.table.columns[0].name, stmt337)
    stmt = parse_one(sql)
    if not isinstance(stmt, ast.Select):
        raise SqlError("a stream's query must be a SELECT", sql=sql, code=Code.INVALID_STREAM_QUERY)
    q = stmt.query
    try:
        plan = plan_window(q, src, sql, streaming=True, tz=tz)
    except SqlError as e:
        if not v337:
            raise
        original = parse_one(spec.sql)
        assert isinstance(original, ast.CreateStream337)
        raise anchor_in_statement(e, sql, spec.sql, original) from None
    assert plan.shape is not None
    precision = src.db.precision
    with DuckSession(lake) as duck:
        from spark_workers.sql.select import empty_stage_types

        view = duck.register_source(src)
        input_types, group_types, aggs, out_schema = empty_stage_types(plan, duck, view, tz)
    computation = None
    if fused:
        columns = [
            OutputColumnPlan(name, output_type(name, out_schema.field(i).type, plan), i)
            for i, (name, _e) in enumerate(plan.items)
        ]
        if not columns or columns[0].type.name != "TIMESTAMP":
            columns.insert(0, OutputColumnPlan("_wstart", TIMESTAMP, -1))
    elif spec.query is None:  # notify-only (seed 002): the trigger's events, nothing computed
        columns = []
    else:
        from spark_workers.sql.compute import Computation
        from spark_workers.tdtypes import from_arrow

        computation = Computation(
            spec.query,
            src if spec.trigger.get("from", True) else None,
            default_db=spec.db or spec.source.db,
            tz=tz,
            pre_filter=spec.options.pre_filter,
            partition_types=[from_arrow(t) for t in group_types],
        )
        columns = [OutputColumnPlan(r.name, r.type, i) for i, r in enumerate(computation.schema(lake))]
        if not columns or columns[0].type.name != "TIMESTAMP":
            raise SqlError(
                "the first column of a stream's computation must be a TIMESTAMP: it is the output "
                f"table's primary key (seed 002), got {columns[0].type.sql if columns else 'no column'}",
                sql=spec.sql,
                offset=None,
                code=Code.INVALID_STREAM_QUERY,
            )
    if spec.output is not None and spec.output.columns:
        names = [c["name"] for c in spec.output.columns]
        if len(names) != len(columns):
            raise SqlError(
                f"the output column list names {len(names)} columns but the query produces {len(columns)}",
                sql=spec.sql or sql,
                code=Code.COLUMN_COUNT_MISMATCH,
            )
        for c, n in zip(columns, names, strict=True):
            c.name = n
    seen: set[str] = set()
    for c in columns:
        if c.name.lower() in seen:
            raise SqlError(
                f"duplicate output column name {c.name}: give the select items distinct aliases",
                sql=spec.sql or sql,
                code=Code.INVALID_COLUMN,
            )
        seen.add(c.name.lower())
    normal_output = v337 and not spec.partition_by  # seed 002: no grouping -> a normal table
    tags = [] if normal_output or spec.output is None else _tag_plan(spec, plan, sql)
    o = spec.options
    dur = lambda v, default: default if v is None else Duration.parse(v).in_precision(precision)  # noqa: E731
    ten_years = TEN_YEARS_MS * {"ms": 1, "us": 1000, "ns": 1_000_000}[precision]
    events = list(spec.notify.events) if spec.notify else []
    if v337 and "WINDOW_OPEN" in o.event_type:  # EVENT_TYPE: open events drive the computation
        events.append("WINDOW_OPEN")
    rules = StreamRules(
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
        late_by_watermark=plan.shape.ekuiper,
        recalc_every=dur(o.recalculate, DEFAULT_RECALCULATE.in_precision(precision)),
    )
    subtable_expr = None
    if spec.output is not None and spec.output.subtable:
        sub = parse_one(f"SELECT {spec.output.subtable}")
        assert isinstance(sub, ast.Select) and isinstance(sub.query.select, exp.Select)
        subtable_expr = sub.query.select.expressions[0]
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
        subtable_expr,
        spec.notify,
        normal_output=normal_output,
        exact_subtable=v337,
        computation=computation,
        compute_open=computation is not None and "WINDOW_OPEN" in o.event_type and not plan.shape.true_for,
        compute_close=not o.event_type or "WINDOW_CLOSE" in o.event_type,
        has_output=spec.output is not None,
    )


def anchor_in_statement(e: SqlError, engine_sql: str, sql: str, stmt: ast.CreateStream337) -> SqlError:
    """Re-anchor an error found in a 3.3.7 stream's engine query (``engine_query``, generated
    text) in the statement as written: the name at the error's offset is looked up among the
    columns and functions of the trigger, PARTITION BY, PRE_FILTER and the computation, and the
    first occurrence in the statement gets the error. Without a match the error keeps its message
    and loses its position (a generated text's offset would point at the wrong place)."""
    from spark_workers.sql.planner import offset_of

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


def _tag_plan(spec: StreamSpec, plan: WindowPlan, sql: str) -> list[TagPlan]:
    assert spec.output is not None
    if not spec.output.tags:
        return [TagPlan(GROUP_ID_TAG, TdType("BIGINT", unsigned=True), None)]
    out = []
    for i, t in enumerate(spec.output.tags):
        ttype = _parse_type(t.type)
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
        out.append(TagPlan(t.name, ttype, idx))
    return out


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
    cols = tuple(Column(col.name, col.type, p) for col, p in zip(c.columns, phys, strict=True))
    tags = tuple(
        Column(t.name, t.type, t.name.lower() if t.name.isidentifier() else f"_t{i}")
        for i, t in enumerate(c.tags)
    )
    return cols, tags


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
    if len(existing.columns) != len(cols):
        raise SqlError(
            f"output supertable {c.out_table} has {len(existing.columns)} columns but the stream "
            f"produces {len(cols)}: list the target columns (INTO {c.out_table}(col, ...))",
            sql=sql,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    for mine, theirs in zip(cols, existing.columns, strict=True):
        if not _convertible(mine.type, theirs.type):
            raise SqlError(
                f"output column {mine.name} {mine.type.sql} cannot be written to {theirs.name} "
                f"{theirs.type.sql}",
                sql=sql,
                code=Code.WRONG_VALUE_TYPE,
            )
    if len(existing.tags) != len(tags):
        raise SqlError(
            f"output supertable {c.out_table} has {len(existing.tags)} tags but the stream "
            f"defines {len(tags)}",
            sql=sql,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    return False


def validate_stream(
    s: ast.CreateStreamLegacy, sql: str, *, default_db: str | None, lake: Any, tz: str
) -> tuple[StreamSpec, CompiledStream]:
    """Check a legacy CREATE STREAM against the catalog without changing anything.

    Errors are positioned in ``sql`` (the statement's text), including those found while
    compiling the subquery.
    """
    check_stream(s, sql)  # the front door: TDengine's SQL only (sandbox.py)
    spec = legacy_spec(s, sql, default_db)
    _validate_options(spec, sql, s.options.spans)
    try:
        return spec, compile_stream(spec, lake, tz)
    except SqlError as e:
        if e.sql == spec.query and s.query.span is not None:  # positioned in the subquery text
            raise e.shifted(sql, s.query.span.start) from None
        raise


def create_stream(ex: Executor, s: ast.CreateStreamLegacy, sql: str) -> None:
    """Validate a legacy CREATE STREAM completely, create or check its output table, then register
    it with the source's current lake version as its start (rows written after CREATE STREAM
    returns are processed even if the Spark query is still starting; FILL_HISTORY 1 processes the
    snapshot at that version first)."""
    check_name(s.name, "stream", sql=sql)
    if ex.registry.get(s.name, s.db) is not None:
        if s.if_not_exists:
            return
        raise CatalogError(f"stream {s.name} already exists", code=Code.STREAM_ALREADY_EXIST)
    spec, compiled = validate_stream(s, sql, default_db=ex.default_db, lake=ex.lake, tz=ex.tz)
    _register(ex, spec, compiled, sql, s.options.spans.get("fill_history"))


def create_stream_337(ex: Executor, s: ast.CreateStream337, sql: str) -> None:
    """Validate a TDengine 3.3.7 CREATE STREAM (``streams337.py``: window triggers over
    ``%%trows``), create or check its output table, then register it as ``create_stream`` does."""
    from spark_workers.sql.streams337 import spec_337

    check_name(s.name, "stream", sql=sql)
    if ex.registry.get(s.name, s.db) is not None:
        if s.if_not_exists:
            return
        raise CatalogError(f"stream {s.name} already exists", code=Code.STREAM_ALREADY_EXIST)
    check_stream(s, sql)  # the front door: TDengine's SQL only (sandbox.py)
    spec = spec_337(s, sql, ex.default_db, ex.catalog)
    _register(ex, spec, compile_stream(spec, ex.lake, ex.tz), sql, s.options.spans.get("fill_history"))


def stream_tables(spec: StreamSpec) -> tuple[list[tuple[str, str]], tuple[str, str] | None]:
    """What a stream reads and writes: ``(db, table)`` of its trigger table and of every table its
    query or computation names (placeholder tables ``%%trows``/``%%tbname``, CTEs and
    ``information_schema`` excluded), and ``(db, table)`` of its output table (None for
    notify-only streams)."""
    reads: list[tuple[str, str]] = []
    if spec.source is not None:
        reads.append((spec.source.db, spec.source.table))
    home = spec.source.db if spec.source is not None else (spec.db or "")
    if spec.query:
        try:
            stmt = parse_one(spec.query)
        except SqlError:
            stmt = None
        sel = stmt.query.select if isinstance(stmt, ast.Select) else None
        if sel is not None:
            ctes = {c.alias.lower() for c in sel.find_all(exp.CTE)}
            for t in sel.find_all(exp.Table):
                name = t.name
                if not name or name.startswith("__td_") or (not t.db and name.lower() in ctes):
                    continue
                db = t.db or home
                if db.lower() == "information_schema":
                    continue
                if (db, name) not in reads:
                    reads.append((db, name))
    out = (spec.output.db, spec.output.table) if spec.output is not None else None
    return reads, out


def check_stream_access(
    principal: Principal, spec: StreamSpec, catalog: Catalog, *, writes: bool = True
) -> None:
    """A stream reads only what its owner may read and writes only where its owner may write
    (``spark_workers.access``): READ on every table of :func:`stream_tables`, WRITE on the output
    table (on its database when the table does not exist yet) and on the database a 3.3.7 stream
    belongs to. Run at CREATE STREAM and each time a worker starts the stream; a preview, which
    writes nothing, checks the reads only (``writes=False``).

    Raises:
        SqlError: PERMISSION_DENIED naming the table and the privilege missing.
    """
    reads, out = stream_tables(spec)
    for dbname, name in reads:
        db = catalog.database(dbname)
        if db is None:
            continue  # compiling the stream reports it
        t = catalog.table(db.name, name)
        access.require(principal, READ, db, t.storage if t is not None else name)
    if not writes:
        return
    if out is not None:
        db = catalog.database(out[0])
        if db is not None:
            t = catalog.table(db.name, out[1])
            access.require(principal, WRITE, db, t.storage if t is not None else None)
    if spec.db:
        db = catalog.database(spec.db)
        if db is not None:
            access.require(principal, WRITE, db)


def _register(
    ex: Executor, spec: StreamSpec, compiled: CompiledStream, sql: str, history_span: ast.Span | None
) -> None:
    """The checks shared by both syntaxes (privileges, output conflicts, the FILL_HISTORY cap),
    then the output table and the registration."""
    assert spec.source is not None
    check_stream_access(ex.principal, spec, ex.catalog)
    if (
        spec.output is not None
        and spec.output.db.lower() == spec.source.db.lower()
        and (
            spec.output.table.lower()
            in (compiled.source.table.name.lower(), compiled.source.storage.name.lower())
        )
    ):
        raise SqlError(
            "a stream cannot write into its own source table", sql=sql, code=Code.STREAM_OUTPUT_CONFLICT
        )
    for other in ex.registry.list():
        o = other.spec.output
        if (
            o is not None
            and spec.output is not None
            and o.db.lower() == spec.output.db.lower()
            and o.table.lower() == spec.output.table.lower()
        ):
            raise SqlError(
                f"stream {other.name} already writes to {o.db}.{o.table}; two streams cannot share "
                "an output table (seed 001)",
                sql=sql,
                code=Code.STREAM_OUTPUT_CONFLICT,
            )
    version = ex.lake.version(spec.source.db, compiled.source.storage.name)
    if spec.options.fill_history:
        _check_history_windows(compiled, ex.lake, version, sql, history_span)
    if compiled.has_output:
        ensure_output_table(compiled, ex.lake, sql=sql)
    ex.registry.create(
        spec,
        start_version=version,
        history_version=version if spec.options.fill_history else None,
        owner=ex.principal.name,
    )


def history_window_estimate(c: CompiledStream, lake: Any, version: int) -> int | None:
    """Upper bound of the windows FILL_HISTORY computes: INTERVAL windows spanning the history's
    time range (per partition), COUNT windows over its rows; None where no bound is known before
    computing (data-defined windows)."""
    db = c.source.db
    buckets = lake.buckets(db.name, c.source.storage.name, version)
    if not buckets:
        return 0
    rows = sum(n for _, n in buckets)
    span_unit = db.duration.in_precision(db.precision)
    lo, hi = buckets[0][0] * span_unit, (buckets[-1][0] + 1) * span_unit
    groups = 1
    if c.plan.groups and c.source.table.kind == "super":
        groups = max(1, len(lake.catalog.tables(db.name, kinds=("sub",), stable=c.source.storage.name)))
    sh = c.shape
    if sh.kind == "interval":
        step = sh.step or sh.size
        return groups * ((hi - lo) // step + -(-sh.size // step))
    if sh.kind in ("count", "ek_count"):
        return rows // (sh.step or sh.size) + groups
    return None


def _check_history_windows(
    c: CompiledStream, lake: Any, version: int, sql: str, span: ast.Span | None
) -> None:
    """Seed 000: "The maximum number of windows for processing historical data is 20 million,
    exceeding this limit will result in an error"."""
    n = history_window_estimate(c, lake, version)
    if n is not None and n > FILL_HISTORY_MAX_WINDOWS:
        raise SqlError(
            f"FILL_HISTORY would compute up to {n:,} windows; the limit is {FILL_HISTORY_MAX_WINDOWS:,} "
            "(seed 000): narrow the history with WHERE ts >= ... or use a larger window",
            sql=sql,
            offset=span.start if span else None,
            code=Code.INVALID_OPERATION,
        )
