"""Plans for TDengine queries: name resolution and the three stages of a window query.

A window query (``... [PARTITION BY ...] INTERVAL(...)``) runs in three stages, the same for an
interactive SELECT and for a stream:

1. **input** (DuckDB over a lake snapshot, or Spark SQL over a micro-batch): ``WHERE``, the
   PARTITION BY values ``_g0..``, the timestamp ``_ts`` and each aggregate's argument ``_i0..``;
2. **windows** (``spark_workers.engine``): window assignment and incremental aggregates;
3. **output** (DuckDB over the window results): the select list with aggregates replaced by their
   results ``_a0..``, ``_wstart`` / ``_wend`` / ``_wduration``, PARTITION BY values by name or alias,
   then HAVING, ORDER BY, LIMIT.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import pyarrow as pa
from sqlglot import exp

from spark_workers.duration import NS_PER_PRECISION, Duration
from spark_workers.engine.aggregates import AGGREGATES, ALIASES, ROWS, AggSpec
from spark_workers.engine.shape import WindowShape
from spark_workers.engine.windows import CalendarAssigner, DailyAssigner, IntervalAssigner, calendar_assigner
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Catalog, Column, Database, Table
from spark_workers.lake.keys import key_column
from spark_workers.query.subquery import merge_subquery
from spark_workers.query.window_functions import aggregate_params, refuse_window_functions
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.sandbox import STREAM_FORBIDDEN, check_select
from spark_workers.sql.scope import PSEUDO_TS, Scope, func_name
from spark_workers.tdtypes import BIGINT, TIMESTAMP, TdType, from_arrow, varchar

WINDOW_PSEUDO = frozenset({"_wstart", "_wend", "_wduration"})
# eKuiper's window_start() / window_end() (seed 003) are TDengine's _wstart / _wend
EKUIPER_PSEUDO = {"window_start": "_wstart", "window_end": "_wend"}
# eKuiper time units (seed 003 "Time-units") in nanoseconds
EKUIPER_UNIT_NS = {
    "DD": 86_400_000_000_000,
    "HH": 3_600_000_000_000,
    "MI": 60_000_000_000,
    "SS": 1_000_000_000,
    "MS": 1_000_000,
}
COUNT_WINDOW_MAX = 2_147_483_648
TBNAME_TYPE = varchar(192)


def positioned(message: str, node: exp.Expr, sql: str, code: int) -> SqlError:
    return SqlError(message, sql=sql, offset=offset_of(node), code=code)


@dataclass
class Source:
    """A resolved table reference.

    Attributes:
        db: its database.
        table: the catalog entry (supertable, subtable or normal table).
        storage: the table whose Delta store holds the rows.
        columns: lower-case name -> (display name, type) of everything queryable: ``tbname``,
            columns, tags.
    """

    db: Database
    table: Table
    storage: Table
    columns: dict[str, tuple[str, TdType]] = field(default_factory=dict)

    @property
    def tbname_filter(self) -> str | None:
        """The subtable name when the reference is a subtable (rows are filtered to it)."""
        return self.table.name if self.table.kind == "sub" else None

    def scope(self, tz: str) -> Scope:
        key = key_column(self.storage)
        return Scope(
            {k: v[1] for k, v in self.columns.items()},
            self.table.columns[0].name,
            self.db.precision,
            tz,
            key_column=key.name if key is not None else None,
        )


NO_TABLE = "__td_no_table"


def tableless_source(db: Database) -> Source:
    """The source of a stream that reads no table (a 3.3.7 PERIOD trigger without FROM whose
    computation reads none, or a notify-only one; seed 002 "Trigger Tables"): an empty normal
    table ``NO_TABLE`` of database ``db`` with a primary timestamp only, in no catalog. Its plan
    has no groups; nothing reads its rows."""
    ts = Column("ts", TIMESTAMP, "ts")
    table = Table(db.name, NO_TABLE, "normal", (ts,))
    return Source(db, table, table, {"tbname": ("tbname", TBNAME_TYPE), "ts": ("ts", TIMESTAMP)})


def is_tableless(source: Source) -> bool:
    """True for :func:`tableless_source`'s sources."""
    return source.table.name == NO_TABLE


def resolve(catalog: Catalog, name: ast.TableName, default_db: str | None, sql: str = "") -> Source:
    """Resolve ``[db.]table`` to a Source.

    Raises:
        CatalogError / SqlError: missing database (DB_NOT_EXIST, DB_NOT_SPECIFIED) or table
            (TABLE_NOT_EXIST, positioned at the name when its span is known).
    """
    db = catalog.require_database(name.db or default_db)
    table = catalog.table(db.name, name.name)
    if table is None:
        raise SqlError(
            f"table {db.name}.{name.name} does not exist",
            sql=sql or None,
            offset=name.span.start if name.span else None,
            code=Code.TABLE_NOT_EXIST,
        )
    storage = catalog.require_table(db.name, table.storage) if table.kind == "sub" else table
    cols: dict[str, tuple[str, TdType]] = {"tbname": ("tbname", TBNAME_TYPE)}
    for c in storage.columns:
        cols[c.name.lower()] = (c.name, c.type)
    for t in storage.tags:
        cols[t.name.lower()] = (t.name, t.type)
    return Source(db, table, storage, cols)


def aggregate_call(node: exp.Expr) -> tuple[str, exp.Expr | None] | None:
    """``(function, argument)`` if ``node`` is one of the engine's aggregates; argument is None for
    ``count(*)``; ``count(DISTINCT x)`` is ``("count_distinct", x)``."""
    name = func_name(node)
    name = ALIASES.get(name or "", name)
    if name not in AGGREGATES:
        return None
    if isinstance(node, exp.Anonymous):
        args = list(node.expressions)
        arg = args[0] if args else None
    else:
        arg = node.this
    if name == "count" and (arg is None or isinstance(arg, exp.Star)):
        return ("count", None)
    if name == "count" and isinstance(arg, exp.Distinct):
        if len(arg.expressions) != 1:
            raise SqlError("count(DISTINCT ...) takes one expression", code=Code.FUNC_PARA_NUM)
        return ("count_distinct", arg.expressions[0])
    if arg is None or isinstance(arg, exp.Star):
        raise SqlError(f"{name}() needs a column argument", code=Code.INVALID_FUNCTION)
    return (name, arg)


@dataclass
class GroupColumn:
    """A PARTITION BY value: stage-1 name ``_g<i>``, its display name (alias or text), expression."""

    name: str
    display: str
    expr: exp.Expr
    type: TdType | None = None


@dataclass
class WindowPlan:
    """The three stages of a window query (module docstring)."""

    source: Source
    sql: str
    filter: exp.Expr | None
    groups: list[GroupColumn]
    inputs: dict[str, exp.Expr]
    aggs: list[AggSpec]
    window: ast.Window | None  # None: a projection (``plan_projection``)
    items: list[tuple[str, exp.Expr]]
    having: exp.Expr | None = None
    order: list[exp.Ordered] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    input_types: dict[str, TdType] = field(default_factory=dict)
    extras: dict[str, exp.Expr] = field(default_factory=dict)
    row_mode: bool = False
    shape: WindowShape | None = None

    @property
    def extra_columns(self) -> list[tuple[str, str]]:
        """``(engine extra name, stage-1 column)`` of the extras: ``state``, ``start``, ``end``,
        ``cond.<start|end>.<column>``, ``count_valid``, ``keep``, ``where``, ``trigger``."""
        return [(k, f"_x{i}") for i, k in enumerate(self.extras)]

    @property
    def ekuiper(self) -> bool:
        return isinstance(self.window, ast.EkuiperWindow)

    @property
    def projection(self) -> bool:
        """A query without a window: each row (passing WHERE) is one output row (``plan_projection``)."""
        return self.window is None

    def assigner(self) -> IntervalAssigner | DailyAssigner | CalendarAssigner:
        """The INTERVAL assigner (INTERVAL and eKuiper TUMBLINGWINDOW / HOPPINGWINDOW)."""
        assert self.shape is not None
        return self.shape.assigner()

    @property
    def output_names(self) -> list[str]:
        return [n for n, _ in self.items]


def _error_at(sql: str, span: ast.Span | None, message: str, code: int = Code.INVALID_WINDOW) -> SqlError:
    return SqlError(message, sql=sql, offset=span.start if span else None, code=code)


def window_shape(
    window: ast.Window, source: Source, sql: str, tz: str, *, min_count: int = 1, emit_open: bool = True
) -> tuple[WindowShape, dict[str, exp.Expr]]:
    """The engine shape of a window clause and the stage-1 extras it needs.

    Rules: seed 000 window_clause (SESSION over the primary timestamp, positive tolerance,
    COUNT_WINDOW bounds ``min_count <= count_val < 2^31`` and ``sliding_val <= count_val``,
    INTERVAL's offset/sliding limits) and seed 003 (eKuiper units DD/HH/MI/SS/MS; hop <= size;
    COUNTWINDOW interval <= count). eKuiper day windows end at midnight in ``tz``.

    Raises:
        SqlError: positioned at the window clause.
    """
    precision = source.db.precision
    if isinstance(window, ast.IntervalWindow):
        return _interval_shape(window, precision, sql, emit_open, tz), {}
    if isinstance(window, ast.SessionWindow):
        return _session_shape(window, source, sql, emit_open), {}
    if isinstance(window, ast.StateWindow):
        return _state_shape(window, source, sql, emit_open)
    if isinstance(window, ast.EventWindow):
        return _event_shape(window, source, sql)
    if isinstance(window, ast.CountWindow):
        return _count_shape(window, source, sql, min_count, emit_open)
    assert isinstance(window, ast.EkuiperWindow)
    return _ekuiper_shape(window, precision, sql, tz)


def _interval_shape(
    window: ast.IntervalWindow, precision: str, sql: str, emit_open: bool, tz: str = "UTC"
) -> WindowShape:
    """INTERVAL(interval[, offset]) [SLIDING(sliding)]: the assigner's limits, positioned at the
    clause; a calendar INTERVAL (``n`` months, ``y`` years) has windows of months in ``tz``."""
    span = window.span
    try:
        if window.interval.is_calendar:
            c = calendar_assigner(window.interval, window.offset, window.sliding, precision, tz)
            nominal = c.months * 28 * 86_400 * 1_000_000_000 // NS_PER_PRECISION[precision]
            return WindowShape(
                "interval",
                nominal,
                0,
                c.offset,
                emit_open=emit_open,
                months=c.months,
                offset_months=c.offset_months,
                tz=tz,
                precision=precision,
            )
        a = IntervalAssigner.of(window.interval, window.offset, window.sliding, precision)
    except SqlError as e:
        if e.position is not None or span is None:
            raise
        raise SqlError(e.message, sql=sql, offset=span.start, code=e.code) from None
    return WindowShape("interval", a.interval, a.sliding, a.offset, emit_open=emit_open)


def _session_shape(window: ast.SessionWindow, source: Source, sql: str, emit_open: bool) -> WindowShape:
    """SESSION(ts_col, tol_val): over the primary timestamp, with a positive fixed tolerance."""
    span = window.span
    ts_name = source.table.columns[0].name.lower()
    if window.ts_column.lower() not in (ts_name, "_c0", "_rowts"):
        raise _error_at(
            sql,
            span,
            f"SESSION needs the primary timestamp column {source.table.columns[0].name}, "
            f"not {window.ts_column}",
        )
    gap = _fixed(window.gap, source.db.precision, sql, span, "SESSION tolerance")
    if gap <= 0:
        raise _error_at(sql, span, "SESSION tolerance must be positive")
    return WindowShape("session", gap, emit_open=emit_open)


def _true_for(window: ast.StateWindow | ast.EventWindow, precision: str, sql: str) -> int:
    """TRUE_FOR of a STATE_WINDOW / EVENT_WINDOW in precision units (0 without it)."""
    if window.true_for is None:
        return 0
    true_for = _fixed(window.true_for, precision, sql, window.span, "TRUE_FOR duration")
    if true_for < 0:
        raise _error_at(sql, window.span, "TRUE_FOR duration must not be negative")
    return true_for


def _state_shape(
    window: ast.StateWindow, source: Source, sql: str, emit_open: bool
) -> tuple[WindowShape, dict[str, exp.Expr]]:
    """STATE_WINDOW(expr) [TRUE_FOR(d)]: the ``state`` extra."""
    true_for = _true_for(window, source.db.precision, sql)
    _check_state_type(window.expr, source, sql)
    return WindowShape("state", emit_open=emit_open, true_for=true_for), {"state": window.expr}


def _event_shape(
    window: ast.EventWindow, source: Source, sql: str
) -> tuple[WindowShape, dict[str, exp.Expr]]:
    """EVENT_WINDOW START WITH ... END WITH ... [TRUE_FOR(d)]: the ``start`` / ``end`` extras and
    ``cond.<start|end>.<column>`` for each column a condition reads."""
    true_for = _true_for(window, source.db.precision, sql)
    extras: dict[str, exp.Expr] = {"start": window.start, "end": window.end}
    for which, condition in (("start", window.start), ("end", window.end)):
        for col in sorted({c.name for c in condition.find_all(exp.Column)}, key=str.lower):
            if col.lower() in source.columns:
                extras[f"cond.{which}.{source.columns[col.lower()][0]}"] = exp.column(col)
    # legacy event windows exist in results only once they end (td-011a)
    return WindowShape("event", emit_open=False, true_for=true_for), extras


def _count_shape(
    window: ast.CountWindow, source: Source, sql: str, min_count: int, emit_open: bool
) -> tuple[WindowShape, dict[str, exp.Expr]]:
    """COUNT_WINDOW(count_val[, sliding_val[, col, ...]]): the bounds, and the ``count_valid``
    extra (a row counts when one of the columns is not NULL)."""
    span = window.span
    extras: dict[str, exp.Expr] = {}
    if not min_count <= window.count < COUNT_WINDOW_MAX:
        raise _error_at(
            sql, span, f"COUNT_WINDOW count_val must be between {min_count} and {COUNT_WINDOW_MAX - 1}"
        )
    slide = window.sliding or 0
    if window.sliding is not None and not 0 < slide <= window.count:
        raise _error_at(sql, span, "COUNT_WINDOW sliding_val must be positive and at most count_val")
    if window.columns:
        cond: exp.Expr | None = None
        for c in window.columns:
            if c.lower() not in source.columns:
                raise _error_at(sql, span, f"invalid column name {c} in COUNT_WINDOW", Code.INVALID_COLUMN)
            part = exp.Not(this=exp.Is(this=exp.column(c), expression=exp.Null()))
            cond = part if cond is None else exp.Or(this=cond, expression=part)
        assert cond is not None
        extras["count_valid"] = cond
    return WindowShape("count", window.count, slide, emit_open=emit_open), extras


def _ekuiper_shape(
    w: ast.EkuiperWindow, precision: str, sql: str, tz: str
) -> tuple[WindowShape, dict[str, exp.Expr]]:
    """eKuiper TUMBLING / HOPPING / SLIDING / SESSION / COUNT windows (seed 003): the ``keep``
    (FILTER) and ``trigger`` (OVER WHEN) extras."""
    ns = {"ms": 1_000_000, "us": 1_000, "ns": 1}[precision]
    span = w.span
    extras: dict[str, exp.Expr] = {}
    unit_ns = EKUIPER_UNIT_NS[w.unit] if w.unit else 0
    if unit_ns and unit_ns < ns:
        raise _error_at(sql, span, f"time unit {w.unit} is finer than the table's precision {precision}")
    per = unit_ns // ns if unit_ns else 0
    if any(x <= 0 for x in w.args[:1]) or any(x < 0 for x in w.args[1:]):
        raise _error_at(sql, span, f"{w.function.upper()}WINDOW arguments must be positive")
    if w.filter is not None:
        extras["keep"] = w.filter
    if w.over_when is not None:
        extras["trigger"] = w.over_when
    f = w.function
    if f in ("tumbling", "hopping"):
        size = w.args[0] * per
        hop = w.args[1] * per if f == "hopping" else size
        if not 0 < hop <= size:
            raise _error_at(sql, span, "HOPPINGWINDOW hop must be positive and at most the window size")
        offset = _local_midnight_offset(tz, ns, size) if w.unit == "DD" else 0
        shape = WindowShape(
            "interval",
            size,
            hop,
            offset,
            emit_open=False,
            first_start_at_first_row=f == "tumbling",
            ekuiper=True,
        )
        return shape, extras
    if f == "sliding":
        delay = w.args[1] * per if len(w.args) > 1 else 0
        return WindowShape("sliding", w.args[0] * per, delay=delay, emit_open=False, ekuiper=True), extras
    if f == "session":
        # SESSIONWINDOW(unit, max_duration, timeout): eKuiper's Length, then Interval (ek-011)
        max_d, timeout = w.args[0] * per, w.args[1] * per
        if timeout <= 0:
            raise _error_at(sql, span, "SESSIONWINDOW timeout must be positive")
        return WindowShape("ek_session", timeout, max_duration=max_d, emit_open=False, ekuiper=True), extras
    count = w.args[0]
    interval = w.args[1] if len(w.args) > 1 else count
    if not 0 < interval <= count:
        raise _error_at(sql, span, "COUNTWINDOW interval must be positive and not larger than the count")
    return WindowShape(
        "ek_count", count, interval, (-count) % interval, emit_open=False, ekuiper=True
    ), extras


def _fixed(d: Duration, precision: str, sql: str, span: ast.Span | None, what: str) -> int:
    if d.is_calendar:
        raise _error_at(sql, span, f"{what} cannot be a calendar duration ({d})")
    return d.in_precision(precision)


def _local_midnight_offset(tz: str, ns_per_unit: int, size: int) -> int:
    """Offset that aligns day windows to midnight in ``tz`` (its current UTC offset)."""
    off = dt.datetime.now(ZoneInfo(tz)).utcoffset() or dt.timedelta(0)
    return int(-off.total_seconds() * 1_000_000_000 // ns_per_unit) % size


def _check_state_type(expr: exp.Expr, source: Source, sql: str) -> None:
    if isinstance(expr, exp.Column) and expr.name.lower() in source.columns:
        t = source.columns[expr.name.lower()][1]
        if t.name in ("FLOAT", "DOUBLE", "TIMESTAMP"):
            raise positioned(
                f"STATE_WINDOW needs an integer, bool or string column; {expr.name} is {t.sql}",
                expr,
                sql,
                Code.INVALID_WINDOW,
            )


def _check_columns(node: exp.Expr, source: Source, sql: str, allow: frozenset[str] = frozenset()) -> None:
    for col in node.find_all(exp.Column):
        name = col.name.lower()
        if col.table and col.table.lower() not in (source.table.name.lower(),):
            continue  # qualified by an alias; checked by the backend
        if name in source.columns or name in PSEUDO_TS or name in allow:
            continue
        raise positioned(
            f"invalid column name {col.name}: no such column or tag in {source.table.name}",
            col,
            sql,
            Code.INVALID_COLUMN,
        )


def plan_window(
    q: ast.SelectQuery,
    source: Source,
    sql: str,
    *,
    streaming: bool = False,
    tz: str = "UTC",
    min_count: int | None = None,
    stream_functions: bool = False,
) -> WindowPlan:
    """Build the WindowPlan of a query with a window clause over one table.

    ``stream_functions``: a stream whose syntax allows the functions seed 000 forbids (a 3.3.7
    stream's computation, seed 002 only refuses interp, percentile and forecast).

    eKuiper window functions (seed 003) come with their own rules: the other GROUP BY items
    partition like PARTITION BY, ``window_start()`` / ``window_end()`` are ``_wstart`` / ``_wend``,
    WHERE filters a window's rows after windowing (the ``where`` extra; filtered rows still
    advance time), ``FILTER (WHERE ...)`` before it (``keep``), and a select list without
    aggregates outputs the rows of each window (``row_mode``).

    Raises:
        SqlError: what is not TDengine's SQL (:func:`spark_workers.sql.sandbox.check_select`),
            unknown columns (INVALID_COLUMN, positioned), a non-aggregated column outside
            PARTITION BY, functions not allowed in streams (seed 000 list), nested aggregates,
            state/event/count windows over a supertable without PARTITION BY tbname (seed 000),
            invalid window arguments.
    """
    q = merge_subquery(q, sql, aggregate_call)
    legacy = streaming and not stream_functions  # the seed-000 list applies
    sel, window = _window_select(q, sql, streaming, legacy=legacy)
    ekuiper = isinstance(window, ast.EkuiperWindow)
    partition = _partition_items(q, sel, window, source, sql)
    flt = _where_filter(sel, source, sql)
    if min_count is None:  # legacy streams: count_val "must be at least 2" (seed 000)
        min_count = 2 if streaming else 1
    shape, extras = window_shape(window, source, sql, tz, min_count=min_count)
    _check_extras(extras, source, sql)
    if ekuiper and flt is not None:
        extras["where"] = flt  # eKuiper: WHERE runs after windowing (seed 003, "Filter Window Inputs")
        flt = None
    groups = _group_columns(partition, source, sql)
    having = sel.args.get("having")
    order_clause = sel.args.get("order")
    row_mode = ekuiper and not any(
        aggregate_call(n)
        for part in [*sel.expressions, *([having] if having is not None else [])]
        for n in part.walk()
    )
    stage3 = _Stage3(source, sql, groups, streaming=legacy, ekuiper=ekuiper, row_mode=row_mode)
    items = _output_items(q, sel, stage3)
    order = [
        exp.Ordered(this=stage3.rewrite(o.this), desc=o.args.get("desc"))
        for o in (order_clause.expressions if order_clause is not None else [])
    ]
    if row_mode:
        stage3.aggs = [AggSpec(ROWS, None, "_rows", columns=tuple(stage3.inputs))]
    limit, offset = _limit(sel, sql)
    return WindowPlan(
        source,
        sql,
        flt,
        groups,
        stage3.inputs,
        stage3.aggs,
        window,
        items,
        stage3.rewrite(having.this) if having is not None else None,
        order,
        limit,
        offset,
        extras=extras,
        row_mode=row_mode,
        shape=shape,
    )


def plan_projection(q: ast.SelectQuery, source: Source, sql: str) -> WindowPlan:
    """The plan of a legacy stream without a window clause (seed 001 ``[window_clause]``: "data
    filtering, scalar function computations"; seed 004 ``power_stream``): every row of the source
    passing WHERE is one output row.

    The WindowPlan has no window and no aggregates: stage 1 computes the select items as
    ``inputs`` ``_i0..`` (one per item, in order; ``items`` name them), the PARTITION BY values
    ``_g0..``, ``_ts``, WHERE as the ``where`` extra (``filter`` is None) and the change-feed
    columns; the output sink writes them (no stage 3).
    ``*`` is every column and tag of the table (as an interactive SELECT).

    Raises:
        SqlError: what is not TDengine's SQL; unknown columns (INVALID_COLUMN); aggregate functions,
            GROUP BY, HAVING, ORDER BY, LIMIT and window pseudo columns, which need a window in a
            stream (INVALID_STREAM_QUERY); the functions seed 000 forbids in streams.
    """
    q = merge_subquery(q, sql, aggregate_call)
    check_select(q, sql, streaming=True)
    sel = q.select
    if not isinstance(sel, exp.Select):
        raise SqlError("a stream's query must be a plain SELECT", sql=sql, code=Code.INVALID_STREAM_QUERY)
    for j in sel.args.get("joins") or []:
        raise join_refused(j, sql)
    for key, what in (("group", "GROUP BY"), ("having", "HAVING"), ("order", "ORDER BY"), ("limit", "LIMIT")):
        node = sel.args.get(key)
        if node is not None:
            raise positioned(
                f"{what} needs a window clause in a stream: a stream without a window writes each row "
                "as it arrives (seed 000/001: window_clause)",
                node,
                sql,
                Code.INVALID_STREAM_QUERY,
            )
    flt = _where_filter(sel, source, sql)
    groups = _group_columns([(p.expr, p.alias, p.text) for p in q.partition_by], source, sql)
    inputs: dict[str, exp.Expr] = {}
    items: list[tuple[str, exp.Expr]] = []
    texts = q.item_texts
    for i, item in enumerate(sel.expressions):
        if isinstance(item, exp.Star):
            named = [
                (c.name, exp.column(c.name, quoted=True))
                for c in (*source.storage.columns, *source.storage.tags)
            ]
        else:
            inner = item.this if isinstance(item, exp.Alias) else item
            name = (
                item.alias
                if isinstance(item, exp.Alias)
                else inner.name
                if isinstance(inner, exp.Column)
                else (texts[i] if i < len(texts) else inner.sql())
            )
            named = [(name, inner)]
        for name, e in named:
            _check_projection_item(e, source, sql)
            key = f"_i{len(inputs)}"
            inputs[key] = e.copy()
            items.append((name, exp.column(key, quoted=True)))
    # WHERE is a stage-1 column, not a filter: a deleted row that fails it may still have an
    # output row written by an earlier version of it (runtime/projection.py)
    extras = {"where": flt} if flt is not None else {}
    return WindowPlan(
        source, sql, None, groups, inputs, [], None, items, extras=extras, shape=WindowShape("rows")
    )


def _check_projection_item(e: exp.Expr, source: Source, sql: str) -> None:
    """A select item of a projection: known columns, no aggregate, no window pseudo column, no
    function seed 000 forbids in streams."""
    for n in e.walk():
        name = func_name(n)
        if name in STREAM_FORBIDDEN:
            raise positioned(
                f"function {name} is not allowed in stream computing (seed 000 lists the 19 "
                "aggregate/selection functions streams reject)",
                n,
                sql,
                Code.INVALID_FUNCTION,
            )
        if aggregate_call(n) is not None:
            raise positioned(
                f"the aggregate {name} needs a window clause in a stream (seed 000: window_clause; "
                "a stream without a window computes each row)",
                n,
                sql,
                Code.INVALID_STREAM_QUERY,
            )
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in WINDOW_PSEUDO:
            raise positioned(
                f"{n.name} needs a window clause: a stream without a window has no windows",
                n,
                sql,
                Code.INVALID_STREAM_QUERY,
            )
    _check_columns(e, source, sql)


def join_refused(j: exp.Expr, sql: str) -> SqlError:
    """The error of a JOIN in a legacy stream's query (seed 001: a stream's source is one
    supertable, subtable or basic table)."""
    return positioned(
        'a legacy stream reads one source table (seed 001: "It can use supertables, subtables, and '
        "basic tables as source tables\"; seed 000: the stream's rows come from the table after FROM): "
        "a JOIN is not a source table; a TDengine 3.3.7 stream's computation may join (seed 002)",
        j,
        sql,
        Code.INVALID_STREAM_QUERY,
    )


def window_join_refused(j: exp.Expr, sql: str) -> SqlError:
    """The error of a window clause over a JOIN without a primary key timeline (TDengine "Join
    Queries", "Primary Key Timeline": a FULL JOIN has none; a RIGHT JOIN's timeline is its right
    table, and only Inner Join nests with other joins)."""
    return positioned(
        "a window clause needs the join's primary key timeline: a FULL JOIN has none (TDengine: "
        '"Full Join cannot produce any valid primary key sequence ... time-related operations '
        'cannot be performed"), and a RIGHT JOIN drives it only as the one join of the query',
        j,
        sql,
        Code.INVALID_WINDOW,
    )


def _window_select(
    q: ast.SelectQuery, sql: str, streaming: bool, *, legacy: bool
) -> tuple[exp.Select, ast.Window]:
    """The query's SELECT and window clause after the front door's checks: TDengine's SQL (with
    seed 000's stream function list when ``legacy``), a plain SELECT without joins, GROUP BY only
    with an eKuiper window, PARTITION BY only without one."""
    refuse_window_functions(q.select, sql)  # before the sandbox: TDengine's own code for them
    check_select(q, sql, streaming=legacy)  # the front door: TDengine's SQL only
    sel = q.select
    if not isinstance(sel, exp.Select):
        raise SqlError("a window clause needs a plain SELECT", sql=sql, code=Code.INVALID_WINDOW)
    if q.window is None:
        raise SqlError("query has no window clause", sql=sql, code=Code.INVALID_WINDOW)
    ekuiper = isinstance(q.window, ast.EkuiperWindow)
    for j in sel.args.get("joins") or []:
        raise join_refused(j, sql) if streaming else window_join_refused(j, sql)
    group_clause = sel.args.get("group")
    if group_clause and not ekuiper:
        raise positioned(
            "GROUP BY cannot be combined with a window clause; use PARTITION BY",
            group_clause,
            sql,
            Code.INVALID_WINDOW,
        )
    if ekuiper and q.partition_by:
        raise SqlError(
            "an eKuiper window partitions by its other GROUP BY items, not PARTITION BY",
            sql=sql,
            offset=q.partition_by[0].span.start if q.partition_by[0].span else None,
            code=Code.INVALID_WINDOW,
        )
    return sel, q.window


def _partition_items(
    q: ast.SelectQuery, sel: exp.Select, window: ast.Window, source: Source, sql: str
) -> list[tuple[exp.Expr, str | None, str]]:
    """``(expression, alias, text)`` of each PARTITION BY item (an eKuiper window's GROUP BY
    items); state/event/count windows over a supertable need ``tbname`` among them (seed 000)."""
    partition: list[tuple[exp.Expr, str | None, str]] = [(p.expr, p.alias, p.text) for p in q.partition_by]
    group_clause = sel.args.get("group")
    if isinstance(window, ast.EkuiperWindow) and group_clause:
        partition = [(e, None, e.sql()) for e in group_clause.expressions]
    if (
        window.kind in ("state", "event", "count")
        and source.table.kind == "super"
        and not any(isinstance(e, exp.Column) and e.name.lower() == "tbname" for e, _, _ in partition)
    ):
        raise SqlError(
            f"{window.kind} windows over a supertable need PARTITION BY tbname",
            sql=sql,
            offset=window.span.start if window.span else None,
            code=Code.INVALID_WINDOW,
        )
    return partition


def _where_filter(sel: exp.Select, source: Source, sql: str) -> exp.Expr | None:
    """The WHERE condition (None without WHERE): known columns, no aggregates."""
    where = sel.args.get("where")
    flt = where.this if where is not None else None
    if flt is not None:
        _check_columns(flt, source, sql)
        if any(aggregate_call(n) for n in flt.walk()):
            raise positioned(
                "There mustn't be aggregation: aggregate functions are not allowed in WHERE",
                next((n for n in flt.walk() if aggregate_call(n)), flt),
                sql,
                Code.ILLEGAL_USE_AGG_FUNCTION,
            )
    return flt


def _check_extras(extras: dict[str, exp.Expr], source: Source, sql: str) -> None:
    """A window's conditions (the stage-1 extras) read known columns and no aggregates."""
    for e in extras.values():
        _check_columns(e, source, sql)
        if any(aggregate_call(n) for n in e.walk()):
            raise positioned(
                "There mustn't be aggregation: aggregate functions are not allowed in a window condition",
                e,
                sql,
                Code.ILLEGAL_USE_AGG_FUNCTION,
            )


def _group_columns(
    partition: list[tuple[exp.Expr, str | None, str]], source: Source, sql: str
) -> list[GroupColumn]:
    """The GroupColumns ``_g0..`` of the PARTITION BY items: display name alias, column name or
    text; type known for plain columns."""
    groups: list[GroupColumn] = []
    for i, (gexpr, alias, text) in enumerate(partition):
        _check_columns(gexpr, source, sql)
        display = alias or (gexpr.name if isinstance(gexpr, exp.Column) else text)
        gtype = source.columns[gexpr.name.lower()][1] if isinstance(gexpr, exp.Column) else None
        groups.append(GroupColumn(f"_g{i}", display, gexpr, gtype))
    return groups


class _Stage3:
    """Rewrites select-list / HAVING / ORDER BY expressions to their stage-3 form, collecting the
    aggregates ``_a0..`` (``aggs``) and their stage-1 arguments ``_i0..`` (``inputs``)."""

    def __init__(
        self,
        source: Source,
        sql: str,
        groups: list[GroupColumn],
        *,
        streaming: bool,
        ekuiper: bool,
        row_mode: bool,
    ) -> None:
        self.source = source
        self.sql = sql
        self.groups = groups
        self.streaming = streaming
        self.ekuiper = ekuiper
        self.row_mode = row_mode
        self.inputs: dict[str, exp.Expr] = {}
        self.aggs: list[AggSpec] = []
        self._agg_by_key: dict[str, str] = {}

    def input_for(self, e: exp.Expr) -> str:
        """The stage-1 input column computing ``e`` (added when new)."""
        e_sql = e.sql()
        name = next((k for k, v in self.inputs.items() if v.sql() == e_sql), None)
        if name is None:
            name = f"_i{len(self.inputs)}"
            self.inputs[name] = e.copy()
        return name

    def rewrite(self, node: exp.Expr) -> exp.Expr:
        """Stage-3 form of a select-list / HAVING / ORDER BY expression."""
        return node.copy().transform(self._visit)

    def _visit(self, n: exp.Expr) -> exp.Expr:
        name = func_name(n)
        if self.streaming and name in STREAM_FORBIDDEN:
            raise positioned(
                f"function {name} is not allowed in stream computing (seed 000 lists "
                "the 19 aggregate/selection functions streams reject)",
                n,
                self.sql,
                Code.INVALID_FUNCTION,
            )
        if name in EKUIPER_PSEUDO and not (isinstance(n, exp.Anonymous) and n.expressions):
            if not self.ekuiper:
                raise positioned(
                    f"{name}() belongs to eKuiper windows; use {EKUIPER_PSEUDO[name]}",
                    n,
                    self.sql,
                    Code.INVALID_FUNCTION,
                )
            return exp.column(EKUIPER_PSEUDO[name], quoted=True)
        call = aggregate_call(n)
        if call is not None:
            return self._aggregate(n, *call)
        if isinstance(n, exp.Column) and not n.table:
            return self._column(n)
        for g in self.groups:  # a PARTITION BY expression repeated in the select list
            if not isinstance(g.expr, exp.Column) and n.sql() == g.expr.sql():
                return exp.column(g.name, quoted=True)
        return n

    def _aggregate(self, n: exp.Expr, fname: str, arg: exp.Expr | None) -> exp.Expr:
        """An aggregate call -> its result column ``_a<i>`` (one per distinct call)."""
        if arg is not None:
            if any(aggregate_call(x) for x in arg.walk()):
                raise positioned(
                    "Aggregate functions do not support nesting", n, self.sql, Code.AGG_FUNC_NESTING
                )
            _check_columns(arg, self.source, self.sql)
        params = aggregate_params(
            fname,
            n,
            ts_column=self.source.table.columns[0].name,
            precision=self.source.db.precision,
            sql=self.sql,
        )
        key = f"{fname}:{arg.sql() if arg is not None else '*'}:{params}"
        if key not in self._agg_by_key:
            in_name = self.input_for(arg) if arg is not None else None
            a_name = f"_a{len(self.aggs)}"
            tie: tuple[str, ...] = ()
            pk = key_column(self.source.storage)
            if fname in ("first", "last", "last_row") and pk is not None:
                # rows of one timestamp are ordered by the composite key (lake/keys.py)
                tie = (self.input_for(exp.column(pk.name, quoted=True)),)
            self.aggs.append(AggSpec(fname, in_name, a_name, columns=tie, params=params))
            self._agg_by_key[key] = a_name
        return exp.column(self._agg_by_key[key], quoted=True)

    def _column(self, n: exp.Column) -> exp.Expr:
        """An unqualified column -> a window pseudo column, a group column ``_g<i>`` or (row mode)
        an input ``_i<i>``; any other column of the table is an error outside an aggregate."""
        low = n.name.lower()
        if low in WINDOW_PSEUDO:
            return exp.column(low, quoted=True)
        for g in self.groups:
            if g.display.lower() == low or (isinstance(g.expr, exp.Column) and g.expr.name.lower() == low):
                return exp.column(g.name, quoted=True)
        if self.row_mode and (low in self.source.columns or low in PSEUDO_TS):
            return exp.column(self.input_for(n), quoted=True)
        if low in self.source.columns or low in PSEUDO_TS:
            raise positioned(
                f"column {n.name} must be used in an aggregate function or listed in "
                + ("GROUP BY" if self.ekuiper else "PARTITION BY"),
                n,
                self.sql,
                Code.INVALID_COLUMN,
            )
        raise positioned(f"invalid column name {n.name}", n, self.sql, Code.INVALID_COLUMN)


def _output_items(q: ast.SelectQuery, sel: exp.Select, stage3: _Stage3) -> list[tuple[str, exp.Expr]]:
    """``(output name, stage-3 expression)`` of each select item: alias, column name or text as
    written; ``*`` (row mode only) is every column of the table."""
    items: list[tuple[str, exp.Expr]] = []
    texts = q.item_texts
    for i, item in enumerate(sel.expressions):
        if isinstance(item, exp.Star):
            if not stage3.row_mode:
                raise positioned(
                    "SELECT * cannot be used with a window clause", item, stage3.sql, Code.INVALID_WINDOW
                )
            for c in stage3.source.storage.columns:
                items.append((c.name, stage3.rewrite(exp.column(c.name))))
            continue
        alias = item.alias if isinstance(item, exp.Alias) else None
        inner = item.this if isinstance(item, exp.Alias) else item
        if alias:
            name = alias
        elif isinstance(inner, exp.Column):
            name = inner.name
        else:
            name = texts[i] if i < len(texts) else inner.sql()
        items.append((name, stage3.rewrite(inner)))
    return items


def _limit(sel: exp.Select, sql: str = "") -> tuple[int | None, int]:
    """``(LIMIT, OFFSET)`` of a window query; a value that is not a non-negative integer is
    TDengine's syntax error at the value (``LIMIT 'a'``, ``LIMIT -1``)."""

    def value(clause: exp.Expr | None) -> int | None:
        if clause is None or clause.expression is None:
            return None
        node = clause.expression
        if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
            return int(node.this)
        raise SqlError(
            f"syntax error near '{node.sql()}': LIMIT and OFFSET take a non-negative integer",
            sql=sql or None,
            offset=offset_of(node) if sql else None,
            code=Code.SYNTAX_ERROR,
        )

    lv = value(sel.args.get("limit"))
    ov = value(sel.args.get("offset"))
    return lv, ov or 0


def output_type(name: str, arrow_type: object, plan: WindowPlan) -> TdType:
    """TDengine type of a stage-3 output column from its Arrow type (strings keep the length of
    the column they come from when that is known)."""
    t = arrow_type
    assert isinstance(t, pa.DataType)
    if pa.types.is_timestamp(t):
        return TIMESTAMP
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        for g in plan.groups:
            if g.display == name and g.type is not None:
                return g.type
        col = plan.source.columns.get(name.lower())
        return col[1] if col and col[1].is_string else varchar(256)
    if pa.types.is_decimal(t):
        return BIGINT
    return from_arrow(t)
