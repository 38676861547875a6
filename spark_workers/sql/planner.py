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

from dataclasses import dataclass, field

from sqlglot import exp

from spark_workers.engine.aggregates import AGGREGATES, AggSpec
from spark_workers.engine.windows import IntervalAssigner
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Catalog, Database, Table
from spark_workers.sql import ast
from spark_workers.sql.translate import PSEUDO_TS, Scope, func_name
from spark_workers.tdtypes import BIGINT, TIMESTAMP, TdType, varchar

WINDOW_PSEUDO = frozenset({"_wstart", "_wend", "_wduration"})
# seed 000, "Functions supported by stream computing": not allowed in streams
STREAM_FORBIDDEN = frozenset(
    {
        "leastsquares",
        "percentile",
        "top",
        "bottom",
        "elapsed",
        "interp",
        "derivative",
        "irate",
        "twa",
        "histogram",
        "diff",
        "statecount",
        "stateduration",
        "csum",
        "mavg",
        "sample",
        "tail",
        "unique",
        "mode",
    }
)
TBNAME_TYPE = varchar(192)


def offset_of(node: exp.Expr) -> int | None:
    """Character offset of a node in the statement, from sqlglot's token metadata."""
    for n in node.walk():
        meta = getattr(n, "meta", None) or {}
        if "start" in meta:
            return int(meta["start"])
        if isinstance(n, exp.Column) and n.this is not None:
            m = getattr(n.this, "meta", None) or {}
            if "start" in m:
                return int(m["start"])
    return None


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
        return Scope(
            {k: v[1] for k, v in self.columns.items()}, self.table.columns[0].name, self.db.precision, tz
        )


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
    ``count(*)``."""
    name = func_name(node)
    if name not in AGGREGATES:
        return None
    if isinstance(node, exp.Anonymous):
        args = list(node.expressions)
        arg = args[0] if args else None
    else:
        arg = node.this
    if name == "count" and (arg is None or isinstance(arg, exp.Star)):
        return ("count", None)
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
    window: ast.Window
    items: list[tuple[str, exp.Expr]]
    having: exp.Expr | None = None
    order: list[exp.Ordered] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    input_types: dict[str, TdType] = field(default_factory=dict)

    def assigner(self) -> IntervalAssigner:
        w = self.window
        if not isinstance(w, ast.IntervalWindow):
            raise SqlError(f"{w.kind} windows are not supported yet", code=Code.NOT_SUPPORTED)
        try:
            return IntervalAssigner.of(w.interval, w.offset, w.sliding, self.source.db.precision)
        except SqlError as e:
            if e.position is not None or w.span is None:
                raise
            raise SqlError(e.message, sql=self.sql, offset=w.span.start, code=e.code) from None

    def stage1(self) -> list[tuple[str, exp.Expr]]:
        """Stage-1 output columns (name, expression over the source)."""
        cols: list[tuple[str, exp.Expr]] = [(g.name, g.expr) for g in self.groups]
        cols.append(("_ts", exp.column(self.source.table.columns[0].name, quoted=True)))
        cols += list(self.inputs.items())
        return cols

    @property
    def output_names(self) -> list[str]:
        return [n for n, _ in self.items]


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


def plan_window(q: ast.SelectQuery, source: Source, sql: str, *, streaming: bool = False) -> WindowPlan:
    """Build the WindowPlan of a query with a window clause over one table.

    Raises:
        SqlError: unknown columns (INVALID_COLUMN, positioned), a non-aggregated column outside
            PARTITION BY, functions not allowed in streams (seed 000 list), nested aggregates,
            state/event/count windows over a supertable without PARTITION BY tbname (seed 000).
    """
    sel = q.select
    if not isinstance(sel, exp.Select):
        raise SqlError("a window clause needs a plain SELECT", sql=sql, code=Code.INVALID_WINDOW)
    if q.window is None:
        raise SqlError("query has no window clause", sql=sql, code=Code.INVALID_WINDOW)
    for j in sel.args.get("joins") or []:
        raise positioned("window queries over joins are not supported yet", j, sql, Code.NOT_SUPPORTED)
    if sel.args.get("group"):
        raise positioned(
            "GROUP BY cannot be combined with a window clause; use PARTITION BY",
            sel.args["group"],
            sql,
            Code.INVALID_WINDOW,
        )
    if (
        q.window.kind in ("state", "event", "count")
        and source.table.kind == "super"
        and not any(
            isinstance(p.expr, exp.Column) and p.expr.name.lower() == "tbname" for p in q.partition_by
        )
    ):
        raise SqlError(
            f"{q.window.kind} windows over a supertable need PARTITION BY tbname",
            sql=sql,
            offset=q.window.span.start if q.window.span else None,
            code=Code.INVALID_WINDOW,
        )
    where = sel.args.get("where")
    flt = where.this if where is not None else None
    if flt is not None:
        _check_columns(flt, source, sql)
        if any(aggregate_call(n) for n in flt.walk()):
            raise positioned("aggregate functions are not allowed in WHERE", flt, sql, Code.INVALID_FUNCTION)

    groups: list[GroupColumn] = []
    for i, p in enumerate(q.partition_by):
        _check_columns(p.expr, source, sql)
        display = p.alias or (p.expr.name if isinstance(p.expr, exp.Column) else p.text)
        gtype = source.columns[p.expr.name.lower()][1] if isinstance(p.expr, exp.Column) else None
        groups.append(GroupColumn(f"_g{i}", display, p.expr, gtype))

    inputs: dict[str, exp.Expr] = {}
    aggs: list[AggSpec] = []
    agg_by_key: dict[str, str] = {}

    def rewrite(node: exp.Expr) -> exp.Expr:
        """Stage-3 form of a select-list / HAVING / ORDER BY expression."""

        def visit(n: exp.Expr) -> exp.Expr:
            name = func_name(n)
            if streaming and name in STREAM_FORBIDDEN:
                raise positioned(
                    f"function {name} is not allowed in stream computing (seed 000 lists "
                    "the 19 aggregate/selection functions streams reject)",
                    n,
                    sql,
                    Code.INVALID_FUNCTION,
                )
            call = aggregate_call(n)
            if call is not None:
                fname, arg = call
                if arg is not None:
                    if any(aggregate_call(x) for x in arg.walk()):
                        raise positioned(
                            "aggregate functions cannot be nested", n, sql, Code.INVALID_FUNCTION
                        )
                    _check_columns(arg, source, sql)
                key = f"{fname}:{arg.sql() if arg is not None else '*'}"
                if key not in agg_by_key:
                    in_name = None
                    if arg is not None:
                        arg_sql = arg.sql()
                        in_name = next((k for k, v in inputs.items() if v.sql() == arg_sql), None)
                        if in_name is None:
                            in_name = f"_i{len(inputs)}"
                            inputs[in_name] = arg.copy()
                    a_name = f"_a{len(aggs)}"
                    aggs.append(AggSpec(fname, in_name, a_name))
                    agg_by_key[key] = a_name
                return exp.column(agg_by_key[key], quoted=True)
            if isinstance(n, exp.Column) and not n.table:
                low = n.name.lower()
                if low in WINDOW_PSEUDO:
                    return exp.column(low, quoted=True)
                for g in groups:
                    if g.display.lower() == low or (
                        isinstance(g.expr, exp.Column) and g.expr.name.lower() == low
                    ):
                        return exp.column(g.name, quoted=True)
                if low in source.columns or low in PSEUDO_TS:
                    raise positioned(
                        f"column {n.name} must be used in an aggregate function or listed in PARTITION BY",
                        n,
                        sql,
                        Code.INVALID_COLUMN,
                    )
                raise positioned(f"invalid column name {n.name}", n, sql, Code.INVALID_COLUMN)
            for g in groups:  # a PARTITION BY expression repeated in the select list
                if not isinstance(g.expr, exp.Column) and n.sql() == g.expr.sql():
                    return exp.column(g.name, quoted=True)
            return n

        return node.copy().transform(visit)

    items: list[tuple[str, exp.Expr]] = []
    texts = q.item_texts
    for i, item in enumerate(sel.expressions):
        if isinstance(item, exp.Star):
            raise positioned("SELECT * cannot be used with a window clause", item, sql, Code.INVALID_WINDOW)
        alias = item.alias if isinstance(item, exp.Alias) else None
        inner = item.this if isinstance(item, exp.Alias) else item
        if alias:
            name = alias
        elif isinstance(inner, exp.Column):
            name = inner.name
        else:
            name = texts[i] if i < len(texts) else inner.sql()
        items.append((name, rewrite(inner)))
    having = sel.args.get("having")
    order_clause = sel.args.get("order")
    order = [
        exp.Ordered(this=rewrite(o.this), desc=o.args.get("desc"))
        for o in (order_clause.expressions if order_clause is not None else [])
    ]
    limit, offset = _limit(sel)
    return WindowPlan(
        source,
        sql,
        flt,
        groups,
        inputs,
        aggs,
        q.window,
        items,
        rewrite(having.this) if having is not None else None,
        order,
        limit,
        offset,
    )


def _limit(sel: exp.Select) -> tuple[int | None, int]:
    limit = sel.args.get("limit")
    off = sel.args.get("offset")
    lv = int(limit.expression.this) if limit is not None and limit.expression is not None else None
    ov = int(off.expression.this) if off is not None and off.expression is not None else 0
    return lv, ov


def output_type(name: str, arrow_type: object, plan: WindowPlan) -> TdType:
    """TDengine type of a stage-3 output column from its Arrow type (strings keep the length of
    the column they come from when that is known)."""
    import pyarrow as pa

    from spark_workers.tdtypes import from_arrow

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
