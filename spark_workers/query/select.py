"""Interactive SELECT on DuckDB over lake snapshots; window clauses through the engine.

Plain queries (filters, joins, GROUP BY, aggregates, ORDER BY, LIMIT) are translated to DuckDB.
``PARTITION BY`` without a window groups aggregates (or orders rows) by the partition values.
Window queries run the three stages of ``planner.WindowPlan``: DuckDB input -> engine windows
(the same functions streams use) -> DuckDB output projection.

Every query passes the front door's allow-list (:mod:`spark_workers.sql.sandbox`) before its
tables are bound, and runs within the statement limits (:mod:`spark_workers.limits`): one of
``TDWEB_SQL_CONCURRENCY`` slots, a deadline checked by DuckDB's interrupt and between the Python
stages, capped results and a capped window-engine input.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from spark_workers.access import READ
from spark_workers.engine.aggregates import AGGREGATES, ROWS, AggSpec, result_arrow_type, to_arrow
from spark_workers.engine.borders import interval_borders
from spark_workers.engine.rows import RowBatch, column_arrays, group_keys, kind_of
from spark_workers.engine.shape import WindowShape, batch_windows
from spark_workers.engine.stream import WindowResults
from spark_workers.errors import Code, SqlError, function_offset, para_type_error
from spark_workers.lake.catalog import Column, Table
from spark_workers.lake.keys import key_column
from spark_workers.limits import active_budget, statement_budget
from spark_workers.query.context import QueryContext, is_system
from spark_workers.query.duck import DuckSession, ResultCap, quote
from spark_workers.query.fill import (
    FillSpec,
    check_range,
    fill_column,
    fill_spec,
    fill_value,
    group_bounds,
    where_range,
)
from spark_workers.query.interp import interp_arrow, uses_interp
from spark_workers.query.joins import (
    SOURCE_META,
    check_nested,
    check_ts_equality,
    has_td_join,
    join_query,
    sides_of,
    window_join_rows,
)
from spark_workers.query.planner import (
    WINDOW_PSEUDO,
    Source,
    WindowPlan,
    aggregate_call,
    output_type,
    plan_window,
    resolve,
    window_join_refused,
)
from spark_workers.query.qrange import fold_query_range, uses_query_range
from spark_workers.query.results import ResultColumn, ResultSet, arrow_rows
from spark_workers.query.slimit import add_group_keys, check_slimit, slice_groups, slice_windows
from spark_workers.query.subquery import merge_subquery
from spark_workers.query.system_functions import fold_system_functions
from spark_workers.query.window_rows import (
    ROW_ID,
    WINDOW_COLUMNS,
    assignment_query,
    check_rows_query,
    needs_rows,
    over_windows,
    window_members,
)
from spark_workers.sql import ast, json_ops
from spark_workers.sql.aggregate_functions import expand_item, spec_of
from spark_workers.sql.ast import offset_of
from spark_workers.sql.functions import kind_of as value_kind
from spark_workers.sql.sandbox import check_select, visible_ctes
from spark_workers.sql.scope import PSEUDO_TS, Scope
from spark_workers.sql.translate import to_sql
from spark_workers.tdtypes import BIGINT, TIMESTAMP, TdType, from_arrow, varchar

GEOMETRY_RESULT = TdType("GEOMETRY", 16384)  # ST_GeomFromText / ST_MakePoint results

EPOCH_FN = {"ms": "epoch_ms", "us": "epoch_us", "ns": "epoch_ns"}


def _tables(sel: exp.Expr) -> list[exp.Table]:
    return [
        t for t in sel.find_all(exp.Table) if t.name and not isinstance(t.this, exp.Subquery | exp.Select)
    ]


def bind_sources(
    ex: QueryContext,
    duck: DuckSession,
    sel: exp.Expr,
    sql: str,
    version: int | None = None,
    *,
    skip: frozenset[str] = frozenset(),
) -> list[Source]:
    """Resolve every table of a query, check the context's READ privilege on it, register it in
    DuckDB and point the tree at the views (names in ``skip`` are left as they are).

    Raises:
        SqlError / CatalogError: a missing table (positioned), PERMISSION_DENIED.
    """
    sources = []
    used = used_columns(sel)
    for t in _tables(sel):
        if (not t.db and t.name.lower() in visible_ctes(t)) or t.name in skip:
            continue
        name = ast.TableName(t.name, t.db or None)
        meta = t.this.meta if isinstance(t.this, exp.Identifier) else {}
        if "start" in meta:
            name = ast.TableName(t.name, t.db or None, ast.Span(int(meta["start"]), int(meta["end"]) + 1))
        if is_system(name, ex.default_db):  # information_schema.ins_* (statements/sysinfo.py)
            src, data = ex.system_source(name, sql)
            view = duck.register_arrow(data)
        else:
            try:
                src = resolve(ex.catalog, name, ex.default_db, sql)
            except SqlError as e:
                if e.code != Code.TABLE_NOT_EXIST:
                    raise
                dbname = ex.catalog.require_database(name.db or ex.default_db).name
                raise ex.no_such_table(dbname, name.name, sql=sql, span=name.span) from None
            ex.require_storage(READ, src.db, src.table, sql=sql, span=name.span)
            view = duck.register_source(src, version, columns=used)
        sources.append(src)
        alias = t.alias or t.name
        bound = exp.Table(
            this=exp.to_identifier(view), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
        )
        bound.meta[SOURCE_META] = src  # the joins' rules read it (query/joins.py)
        if "start" in meta:
            bound.meta["start"] = meta["start"]  # errors about the table point at it
        t.replace(bound)
    return sources


def used_columns(sel: exp.Expr) -> frozenset[str] | None:
    """Lower-case names of the columns a query uses, or None when it uses all (``*``): a virtual
    table's rows depend on them (TDengine SQL manual, "Virtual Tables", alignment rule 3)."""
    if any(True for _ in sel.find_all(exp.Star)):
        return None
    return frozenset(c.name.lower() for c in sel.find_all(exp.Column) if c.name)


def query_scope(sources: list[Source], tz: str) -> Scope:
    """The names of a query over ``sources``: the first source's scope plus the columns of the
    others (a name two sources share keeps the first's type)."""
    if not sources:
        return Scope(tz=tz)
    scope = sources[0].scope(tz)
    for s in sources[1:]:
        for k, v in s.columns.items():
            scope.columns.setdefault(k, v[1])
    if len(sources) > 1:  # a join: first/last order by time and value only
        scope.key_column = None
    return scope


def _anchored(e: SqlError, sql: str) -> SqlError:
    """A session's error (no text) anchored in the statement; an error naming a function
    (:func:`~spark_workers.query.duck.duck_error`'s "Invalid parameter data type : f",
    "Invalid function name: f") points at that function's call."""
    if e.sql is not None:
        return e
    offset = e.offset
    if offset is None and (m := _NAMED_FUNCTION.match(e.message)):
        name = m.group(1).lower()
        offset = function_offset(sql, name)
        if offset is None and name in _SPELLINGS:  # DuckDB's spelling of the call the user wrote
            offset = function_offset(sql, _SPELLINGS[name])
    elif offset is None and e.code == Code.AGG_FUNC_NESTING and (m := _NESTED_AGG.search(sql)):
        offset = m.start()
    elif offset is None and e.code == Code.ILLEGAL_USE_AGG_FUNCTION and (w := _WHERE.search(sql)):
        offset = m.start() + w.end() if (m := _AGG_CALL.search(sql[w.end() :])) else w.start()
    elif offset is None and (k := _CLAUSE_OF.get(e.code)) and (m := k.search(sql)):
        offset = m.start()
    elif offset is None and e.code == Code.TABLE_NOT_EXIST and e.message.startswith("Table does not exist: "):
        name = re.escape(e.message.removeprefix("Table does not exist: "))
        m = re.search(rf"(?<![\w.`]){name}\s*\.", sql, re.IGNORECASE)
        offset = m.start() if m else None
    return SqlError(e.message, sql=sql, offset=offset, code=e.code)


# the clause a session's error is about, where it names no token: ORDER BY position, UNION
# operands, a negative LIMIT
_CLAUSE_OF = {
    Code.WRONG_NUMBER_OF_SELECT: re.compile(r"\bORDER\s+BY\b", re.IGNORECASE),
    Code.INCORRECT_NUM_OF_COL: re.compile(r"\bUNION\b", re.IGNORECASE),
    Code.SYNTAX_ERROR: re.compile(r"\b(?:LIMIT|OFFSET)\s*-", re.IGNORECASE),
}


_AGG_NAMES = "|".join(AGGREGATES)
_AGG_CALL = re.compile(rf"(?<![\w.])(?:{_AGG_NAMES})\s*\(", re.IGNORECASE)
_NESTED_AGG = re.compile(rf"(?<![\w.])(?:{_AGG_NAMES})\s*\(\s*(?:{_AGG_NAMES})\s*\(", re.IGNORECASE)
_SPELLINGS = {"power": "pow", "pow": "power", "ceil": "ceiling", "substr": "substring"}
_WHERE = re.compile(r"\bWHERE\b", re.IGNORECASE)
_NAMED_FUNCTION = re.compile(
    r"(?:Invalid parameter data type|Invalid function name|Invalid number of parameters) ?: ?(\w+)"
)
# aggregates of the engine that take numbers only (TDengine's function reference: sum, avg and
# stddev take numeric columns; spread numeric and timestamp ones), by the input kinds they refuse
_AGG_REFUSED_KINDS = {
    "sum": ("str", "ts"),
    "avg": ("str", "ts"),
    "stddev": ("str", "ts"),
    "spread": ("str",),
    **{f: ("str", "ts") for f in ("var_pop", "twa", "irate", "leastsquares", "percentile", "apercentile")},
}


def _check_agg_types(aggs: list[AggSpec], sql: str) -> None:
    """Refuse an engine aggregate over an input kind it does not take, in TDengine's words
    (``0x2802`` "Invalid parameter data type : sum", at the call), before the engine sees it."""
    for a in aggs:
        if a.kind in _AGG_REFUSED_KINDS.get(a.func, ()):
            raise para_type_error(a.func, sql=sql, offset=function_offset(sql, a.func))


def _engine_input_error(plan: WindowPlan, schema: pa.Schema, sql: str) -> SqlError | None:
    """The refusal, by name, of window aggregates over values the engine cannot hold: DECIMAL
    (its exact digits would be lost to a float) and GEOMETRY / VARBINARY bytes (the engine holds
    text) (``0x0100``, at the call), or None. An ad-hoc query computes them over its rows instead
    (``query/window_rows.py``); a stream's window computation refuses them (``CAST(x AS DOUBLE)``
    is the way to aggregate a DECIMAL there, ``ST_AsText(g)`` / ``CAST(b AS VARCHAR)`` the way to
    select bytes)."""
    for a in plan.aggs:
        if a.input is None or a.input not in schema.names:
            continue
        t = schema.field(a.input).type
        binary = pa.types.is_binary(t) or pa.types.is_large_binary(t)
        if pa.types.is_decimal(t) or binary:
            what = "DECIMAL" if pa.types.is_decimal(t) else "VARBINARY / GEOMETRY"
            return SqlError(
                f"{a.func}() over {what} values is not supported in a stream's window computation "
                "(CAST the value to DOUBLE or VARCHAR first)",
                sql=sql,
                offset=function_offset(sql, a.func),
                code=Code.NOT_SUPPORTED,
            )
    return None


def run_select(ex: QueryContext, q: ast.SelectQuery, sql: str) -> ResultSet:
    """Execute a query for an executor (REST / shell); the system functions (``DATABASE()``...)
    are the session's constants (:mod:`spark_workers.query.system_functions`).

    Raises:
        SqlError: not TDengine SQL (the sandbox), unknown names, and the statement limits:
            ``0x012C`` timeout, ``0x073A`` memory, ``0x0711`` result too large.
    """
    q = fold_system_functions(q, database=ex.default_db, user=ex.principal.name, sql=sql)
    check_slimit(q, sql)
    if uses_interp(q):
        return _run_interp(ex, q, sql)
    check_select(q, sql)
    if q.fill is not None and q.window is None:
        raise SqlError(
            "FILL needs an INTERVAL window clause",
            sql=sql,
            offset=q.fill.span.start if q.fill.span else None,
            code=Code.INVALID_WINDOW,
        )
    with statement_budget(sql), DuckSession(ex.lake) as duck:
        if q.window is not None:
            return _run_window(ex, duck, q, q.select.copy(), sql)
        over_join = join_subquery(ex, duck, q, sql)  # FROM (a SEMI/ANTI/ASOF/WINDOW join)
        if over_join is not None:
            q, src, view = over_join
            return run_plain(ex, duck, q, sql, over=(src, frozenset({view})))
        return run_plain(ex, duck, q, sql)


def run_plain(
    ex: QueryContext,
    duck: DuckSession,
    q: ast.SelectQuery,
    sql: str,
    *,
    over: tuple[Source, frozenset[str]] | None = None,
) -> ResultSet:
    """A query without a window clause on ``duck``; with ``over`` its FROM reads an already
    registered view described by the Source (the names given are left unbound).

    Raises:
        SqlError: as :func:`run_select`.
    """
    sel = q.select.copy()
    if over is not None:
        bind_sources(ex, duck, sel, sql, skip=over[1])
        sources = [over[0]]
    else:
        sources = bind_sources(ex, duck, sel, sql)
    qbare: frozenset[int] = frozenset()
    if isinstance(sel, exp.Select) and sources and uses_query_range(sel):
        sel, qbare = _fold_query_range(sel, sources[0], duck, ex.tz, sql)
    if q.partition_by and isinstance(sel, exp.Select):
        parts = [p.expr.copy() for p in q.partition_by]
        if any(spec_of(n) or aggregate_call(n) for item in sel.expressions for n in item.walk()):
            group = exp.Group(
                expressions=[*parts, *(sel.args["group"].expressions if sel.args.get("group") else [])]
            )
            group.meta["td_partition"] = len(parts)  # row functions read these as PARTITION BY
            sel.set("group", group)
        elif not sel.args.get("order"):
            sel.set("order", exp.Order(expressions=[exp.Ordered(this=p) for p in parts]))
    joined = None
    if has_td_join(sel):
        check_nested(sel, sql)  # SEMI/ANTI/ASOF/WINDOW in the outermost query only
    if isinstance(sel, exp.Select) and sel.args.get("joins"):
        joined = join_query(sel, q, sql)  # query/joins.py: TDengine's join rules and types
        sel = joined.select
        names: list[str] | None = joined.names
    else:
        names = _expand_and_check(sel, q, sources, sql)
    _default_order(sel, sources)
    scope = query_scope(sources, ex.tz)
    n_keys, limit, offset = 0, None, None
    if q.slimit is not None and isinstance(sel, exp.Select):
        n_keys, limit, offset = add_group_keys(q, sel)
    try:
        text = joined.sql(scope) if joined is not None else to_sql(sel, "duckdb", scope)
        result = duck.query(text, ResultCap.result(duck.limits))
        if n_keys:
            result = slice_groups(duck, result, n_keys, q, limit, offset)
    except SqlError as e:
        raise _anchored(e, sql) from None
    columns = result_columns(result, names, sources)
    for i in qbare:  # _qstart / _qend (qrange.py)
        columns[i] = ResultColumn(columns[i].name, TIMESTAMP, columns[i].precision)
    return ResultSet(columns, arrow_rows(result, columns))


def _fold_query_range(
    sel: exp.Select, src: Source, duck: DuckSession, tz: str, sql: str
) -> tuple[exp.Select, frozenset[int]]:
    """``_qstart`` / ``_qend`` / ``_qduration`` folded to the WHERE range (``query/qrange.py``);
    bounds that are constant expressions (``now - 1d``) are evaluated by DuckDB."""
    scope = src.scope(tz)
    epoch = EPOCH_FN[src.db.precision]

    def evaluate(e: exp.Expr) -> int | None:
        try:
            t = duck.query(f"SELECT {epoch}(CAST(({to_sql(e, 'duckdb', scope)}) AS TIMESTAMPTZ)) AS v")
        except SqlError:  # not a timestamp constant: no bound
            return None
        v = t.column(0)[0].as_py() if t.num_rows else None
        return int(v) if v is not None else None

    return fold_query_range(sel, src.table.columns[0].name, scope, sql, evaluate)


def _run_interp(ex: QueryContext, q: ast.SelectQuery, sql: str) -> ResultSet:
    """An INTERP query (:mod:`spark_workers.query.interp`) over one table (or a subquery merged
    into it, ``query/subquery.py``)."""
    q = merge_subquery(q, sql, aggregate_call)
    with statement_budget(sql), DuckSession(ex.lake) as duck:
        sel = q.select.copy()
        tables = _tables(sel)
        if not isinstance(sel, exp.Select) or sel.args.get("joins") or len(tables) != 1:
            raise SqlError(
                "Invalid interp clause: an INTERP query reads exactly one table (no JOIN)",
                sql=sql,
                offset=offset_of(tables[1]) if len(tables) > 1 else None,
                code=Code.INVALID_INTERP_CLAUSE,
            )
        sources = bind_sources(ex, duck, sel, sql)
        view = sel.args["from_"].this.name
        try:
            out, names = interp_arrow(duck, dataclasses.replace(q, select=sel), sources[0], view, sql, ex.tz)
        except SqlError as e:
            raise _anchored(e, sql) from None
        columns = result_columns(out, names, sources)
        return ResultSet(columns, arrow_rows(out, columns))


def join_subquery(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, sql: str
) -> tuple[ast.SelectQuery, Source, str] | None:
    """A query over a subquery in FROM that holds a SEMI/ANTI/ASOF/WINDOW join (TDengine "Join
    Queries": ``SELECT ... FROM (SELECT ... LEFT WINDOW JOIN ...) PARTITION BY ... INTERVAL(...)``):
    the subquery runs first (its tables bound with their READ checks, ``query/joins.py``), its
    rows become a view, and the query reads the view. The view's primary key timeline is its first
    timestamp column (TDengine "Primary Key Timeline"). Returns the query over the view, the view's
    Source and name, or None when FROM holds no such subquery.

    Raises:
        SqlError: ``0x2664`` the subquery's rows have no timestamp column; the join's errors."""
    sel = q.select
    sub = sel.args["from_"].this if isinstance(sel, exp.Select) and sel.args.get("from_") else None
    if not isinstance(sub, exp.Subquery) or not isinstance(sub.this, exp.Select) or sel.args.get("joins"):
        return None
    inner = sub.this.copy()
    if not inner.args.get("joins") or not has_td_join(inner):
        return None
    inner_sources = bind_sources(ex, duck, inner, sql)
    joined = join_query(inner, ast.SelectQuery(select=inner), sql)
    try:
        rows = duck.query(joined.sql(query_scope(inner_sources, ex.tz)), ResultCap.window_input(duck.limits))
    except SqlError as e:
        raise _anchored(e, sql) from None
    names = joined.names if joined.names and len(joined.names) == rows.num_columns else rows.column_names
    rows = rows.rename_columns(names)
    cols = [
        Column(n, TIMESTAMP if pa.types.is_timestamp(f.type) else from_arrow(f.type), n)
        for n, f in zip(names, rows.schema, strict=True)
    ]
    ts = [c for c in cols if c.type == TIMESTAMP]
    if not ts:
        raise SqlError(
            "Not supported join since 'Join requires valid time series input: the subquery returns no "
            "timestamp column'",
            sql=sql,
            offset=offset_of(sub),
            code=Code.NOT_SUPPORT_JOIN,
        )
    view = duck.register_arrow(rows)
    db = inner_sources[0].db
    table = Table(db.name, view, "normal", (ts[0], *(c for c in cols if c is not ts[0])))
    src = Source(db, table, table, {c.name.lower(): (c.name, c.type) for c in cols})
    outer = sel.copy()
    alias = sub.alias_or_name or view
    outer.set(
        "from_",
        exp.From(
            this=exp.Table(
                this=exp.to_identifier(view), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
            )
        ),
    )
    return dataclasses.replace(q, select=outer), src, view


def _default_order(sel: exp.Expr, sources: list[Source]) -> None:
    """TDengine returns table scans in (tbname, timestamp[, composite key]) order; so do we when
    no ORDER BY."""
    if (
        not isinstance(sel, exp.Select)
        or sel.args.get("order")
        or sel.args.get("distinct")
        or sel.args.get("group")
        or len(sources) != 1
        or sel.args.get("joins")
    ):
        return
    if any(
        aggregate_call(n) or isinstance(n, exp.AggFunc) or spec_of(n)
        for item in sel.expressions
        for n in item.walk()
    ):
        return
    src = sources[0]
    keys = []
    if src.table.kind == "super":
        keys.append(exp.Ordered(this=exp.column("tbname", quoted=True)))
    keys.append(exp.Ordered(this=exp.column(src.table.columns[0].name, quoted=True)))
    key = key_column(src.storage)
    if key is not None:
        keys.append(exp.Ordered(this=exp.column(key.name, quoted=True)))
    sel.set("order", exp.Order(expressions=keys))


def _expand_and_check(sel: exp.Expr, q: ast.SelectQuery, sources: list[Source], sql: str) -> list[str] | None:
    """For a single-table SELECT: expand ``*`` to the table's columns and tags (TDengine does not
    return ``tbname`` for ``*``), reject unknown column names with their position, and return the
    output column names (alias, else the item's text as written)."""
    if not isinstance(sel, exp.Select):
        return None
    items: list[exp.Expr] = []
    names: list[str] = []
    single = len(sources) == 1 and not sel.args.get("joins")
    for i, item in enumerate(sel.expressions):
        if isinstance(item, exp.Star) and single:
            src = sources[0]
            for c in (*src.storage.columns, *src.storage.tags):
                items.append(exp.column(c.name, quoted=True))
                names.append(c.name)
            continue
        if single and (expanded := expand_item(item, [c.name for c in sources[0].storage.columns])):
            items += [e for e, _ in expanded]
            names += [n for _, n in expanded]
            continue
        items.append(item)
        if isinstance(item, exp.Alias):
            names.append(item.alias)
        elif isinstance(item, exp.Column):
            names.append(item.name)
        elif i < len(q.item_texts) and not isinstance(item, exp.Star):
            names.append(q.item_texts[i])
        else:
            names.append(item.sql())
    sel.set("expressions", items)
    if single:
        aliases = {i.alias.lower() for i in items if isinstance(i, exp.Alias)}
        known = set(sources[0].columns) | PSEUDO_TS | aliases
        for col in sel.find_all(exp.Column):
            if col.table or col.find_ancestor(exp.Subquery) is not None:
                continue
            if col.name.lower() not in known:
                raise SqlError(
                    f"invalid column name {col.name}: no such column or tag in {sources[0].table.name}",
                    sql=sql,
                    offset=offset_of(col),
                    code=Code.INVALID_COLUMN,
                )
    return names if not any(isinstance(i, exp.Star) for i in items) else None


def result_columns(result: pa.Table, names: list[str] | None, sources: list[Source]) -> list[ResultColumn]:
    """TDengine result columns of a DuckDB result: ``names`` (when given, one per column) or the
    result's own, typed from the sources' columns where a name matches, else from Arrow."""
    precision = sources[0].db.precision if sources else "ms"
    out_names = list(result.column_names)
    if names is not None and len(names) == len(out_names):
        out_names = names
    known: dict[str, TdType] = {}
    for s in sources:
        for k, (_disp, t) in s.columns.items():
            known.setdefault(k, t)
    out = []
    for name, field in zip(out_names, result.schema, strict=True):
        t = field.type
        base = known.get(name.lower())
        if pa.types.is_timestamp(t):
            td = TIMESTAMP
        elif base is not None and (
            base.name == from_arrow(t).name or (base.is_string and pa.types.is_string(t)) or base.stores_as(t)
        ):
            td = base
        elif pa.types.is_string(t):
            td = json_ops.result_type(name, known) or varchar(256)
        elif pa.types.is_binary(t) and name.lower().startswith(("st_geomfromtext(", "st_makepoint(")):
            td = GEOMETRY_RESULT  # TDengine types the geometry functions' results GEOMETRY
        elif pa.types.is_binary(t) and (m := _SELECTED_COLUMN.match(name)) and m.group(1).lower() in known:
            td = known[m.group(1).lower()]  # a selection function's result has its input's type
        else:
            td = from_arrow(t)
        out.append(ResultColumn(name, td, precision))
    return out


# ``first(g)``, ``last_row(v)``, ``top(x, 2)``...: TDengine's selection functions return their
# input's type (``builtins.c`` ``translateOutFirstIn``)
_SELECTED_COLUMN = re.compile(
    r"^\s*(?:first|last|last_row|min|max|mode|sample|top|bottom|tail|unique)\s*\(\s*`?(\w+)`?\s*"
    r"(?:,[^()]*)?\)\s*$",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------- window queries


AT_FACTOR = {"ms": 1, "us": 1_000, "ns": 1_000_000}  # ``_at`` (epoch ms) -> precision units


def stage1_sql(
    plan: WindowPlan,
    view: str,
    backend: str,
    tz: str,
    passthrough: tuple[str, ...] = (),
    *,
    processing_time: bool = False,
) -> str:
    """SQL of stage 1 over ``view`` (DuckDB), carrying ``passthrough`` columns along; with
    ``processing_time`` the window time ``_ts`` is the arrival time ``_at`` (change rows only)."""
    scope = plan.source.scope(tz)
    ts_col = quote(plan.source.table.columns[0].name)
    cols = []
    for g in plan.groups:
        cols.append(f"{to_sql(g.expr, backend, scope)} AS {quote(g.name)}")
    if processing_time:
        cols.append(f'CAST("_at" * {AT_FACTOR[plan.source.db.precision]} AS BIGINT) AS "_ts"')
    else:
        cols.append(f'{EPOCH_FN[plan.source.db.precision]}({ts_col}) AS "_ts"')
    for name, e in plan.inputs.items():
        cols.append(f"{to_sql(e, backend, scope)} AS {quote(name)}")
    for key, col in plan.extra_columns:
        cols.append(f"{to_sql(plan.extras[key], backend, scope)} AS {quote(col)}")
    cols += [quote(p) for p in passthrough]
    where = f" WHERE {to_sql(plan.filter, backend, scope)}" if plan.filter is not None else ""
    return f"SELECT {', '.join(cols)} FROM {view}{where}"


def rows_from_stage1(plan: WindowPlan, t: pa.Table) -> tuple[RowBatch, dict[str, list], list[AggSpec]]:
    """Engine input from stage-1 output; also the group values by key and the aggregate specs
    with their input kinds."""
    gcols = [t.column(g.name) for g in plan.groups]
    gkeys, gvalues = group_keys(gcols, t.num_rows)
    ts = t.column("_ts").cast(pa.int64()).to_numpy(zero_copy_only=False)
    inputs = {name: column_arrays(t.column(name)) for name in plan.inputs}
    extra = {key: column_arrays(t.column(col)) for key, col in plan.extra_columns}
    aggs = [
        dataclasses.replace(a, kind=kind_of(t.schema.field(a.input).type) if a.input else "int")
        for a in plan.aggs
    ]
    return RowBatch(gkeys, ts, inputs, extra=extra), gvalues, aggs


def results_table(
    plan: WindowPlan,
    res: WindowResults,
    gvalues: dict[str, list],
    aggs: list[AggSpec],
    input_types: dict[str, pa.DataType],
    group_types: list[pa.DataType],
) -> pa.Table:
    """Window results as an Arrow table for stage 3: ``_g*``, ``_wstart``, ``_wend``,
    ``_wduration``, ``_a*``."""
    precision = plan.source.db.precision
    to_us = {"ms": 1000, "us": 1, "ns": None}[precision]
    cols: dict[str, pa.Array] = {}
    for i, g in enumerate(plan.groups):
        vals = [gvalues[k][i] for k in res.gkey]
        gt = group_types[i]
        if pa.types.is_timestamp(gt):
            cols[g.name] = pa.array(vals, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        else:
            cols[g.name] = pa.array(vals, gt)
    ts_type = pa.timestamp("us", tz="UTC") if to_us else pa.timestamp("ns", tz="UTC")
    mult = to_us or 1
    cols["_wstart"] = pa.array(res.wstart * mult, pa.int64()).cast(ts_type)
    cols["_wend"] = pa.array(res.wend * mult, pa.int64()).cast(ts_type)
    cols["_wduration"] = pa.array(res.wend - res.wstart, pa.int64())
    if plan.row_mode:
        return explode_rows(pa.table(cols), list(res.values["_rows"][0]), plan, input_types)
    for a in aggs:
        in_t = input_types.get(a.input) if a.input else None
        typ = result_arrow_type(a, in_t)
        values, valid = res.values[a.name]
        cols[a.name] = to_arrow(values, valid, typ)
    return pa.table(cols)


def explode_rows(
    windows: pa.Table, rows: list[list[Any]], plan: WindowPlan, input_types: dict[str, pa.DataType]
) -> pa.Table:
    """Row mode (eKuiper windows without aggregates, seed 003): one stage-3 row per collected row
    of each window: the window's columns repeated, the row's inputs ``_i*``, and ``_rn`` (order
    inside the window).

    Args:
        windows: one row per window (group columns, ``_wstart``, ``_wend``, ``_wduration``, ...).
        rows: per window, its rows as ``(ts, input values...)`` in input order.
    """
    counts = [len(r) for r in rows]
    take = pa.array(np.repeat(np.arange(len(rows), dtype=np.int64), counts))
    out = windows.take(take)
    flat = [row for r in rows for row in r]
    for j, name in enumerate(plan.inputs):
        out = out.append_column(name, pa.array([row[j + 1] for row in flat], input_types[name]))
    rn = [k for c in counts for k in range(c)]
    return out.append_column("_rn", pa.array(rn, pa.int64()))


# engine aggregates returning one of their input's values (a timestamp input gives a timestamp)
_TS_VALUED = frozenset({"first", "last", "last_row", "min", "max", "mode"})


def stage3_sql(
    plan: WindowPlan, view: str, tz: str, *, passthrough: tuple[str, ...] = (), streaming: bool = False
) -> str:
    """Stage-3 SQL over the window results registered as ``view``; ``passthrough`` columns are
    carried along; a stream's stage 3 has no ORDER BY / LIMIT."""
    # window bounds and the aggregates whose value is a timestamp (first/last/min/max... of one)
    source = plan.source.scope(tz)
    stamps = {"_wstart", "_wend"} | {
        a.name
        for a in plan.aggs
        if a.func in _TS_VALUED
        and a.input in plan.inputs
        and value_kind(plan.inputs[a.input], source) == "ts"
    }
    scope = Scope({}, None, plan.source.db.precision, tz, frozenset(stamps))
    items = [f"{to_sql(e, 'duckdb', scope)} AS {quote(f'_o{i}')}" for i, (_n, e) in enumerate(plan.items)]
    items += [quote(p) for p in passthrough]
    sql = f"SELECT {', '.join(items)} FROM {view}"
    if plan.having is not None:
        sql += f" WHERE {to_sql(plan.having, 'duckdb', scope)}"
    if streaming:
        return sql
    order = [f"{to_sql(o.this, 'duckdb', scope)}{' DESC' if o.args.get('desc') else ''}" for o in plan.order]
    if not order:
        order = [quote(g.name) for g in plan.groups] + ['"_wstart"']
        if plan.row_mode:
            order.append('"_rn"')
    sql += " ORDER BY " + ", ".join(order)
    if plan.limit is not None:
        sql += f" LIMIT {plan.limit}"
    if plan.offset:
        sql += f" OFFSET {plan.offset}"
    return sql


WindowOut = tuple[pa.Table, WindowPlan] | ResultSet
"""A window query's stage-3 result and plan, or (ad-hoc, computed per row) its result set."""


def _run_window(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, sel: exp.Expr, sql: str
) -> ResultSet:
    got = _window_any(ex, duck, q, sel, sql, adhoc=True)
    if isinstance(got, ResultSet):
        return got
    out, plan = got
    columns = [
        ResultColumn(name, output_type(name, out.schema.field(i).type, plan), plan.source.db.precision)
        for i, name in enumerate(plan.output_names)
    ]
    return ResultSet(columns, arrow_rows(out, columns))


def window_arrow(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, sel: exp.Expr, sql: str
) -> tuple[pa.Table, WindowPlan]:
    """A window query's result (``_o<i>`` per select item) and its plan: the three stages, with
    FILL (``query/fill.py``) when the query has one.

    Raises:
        SqlError: as :func:`run_select`.
    """
    got = _window_any(ex, duck, q, sel, sql, adhoc=False)
    assert not isinstance(got, ResultSet)
    return got


def _window_any(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, sel: exp.Expr, sql: str, *, adhoc: bool
) -> WindowOut:
    """:func:`window_arrow`; with ``adhoc`` a query the engine cannot answer one row per window
    is computed over its rows (``query/window_rows.py``) and answers its result set."""
    over_join = join_subquery(ex, duck, q, sql)  # FROM (a SEMI/ANTI/ASOF/WINDOW join)
    if over_join is not None:
        return _window_result(ex, duck, *over_join, sql, adhoc=adhoc)
    try:
        q = merge_subquery(
            q, sql, aggregate_call
        )  # a subquery in FROM: its clauses merged (query/subquery.py)
    except SqlError as e:
        if e.code != Code.NOT_SUPPORTED:
            raise
        return _run_window_over_subquery(ex, duck, q, sql, adhoc=adhoc)  # what cannot be merged: its rows
    sel = q.select
    if not isinstance(sel, exp.Select):
        raise SqlError("window clauses need a plain SELECT", sql=sql, code=Code.INVALID_WINDOW)
    if sel.args.get("joins"):
        return _run_window_over_join(ex, duck, q, sel, sql, adhoc=adhoc)
    tables = _tables(sel)
    if len(tables) != 1:
        raise SqlError(
            "a window query reads exactly one table",
            sql=sql,
            offset=offset_of(tables[1]) if len(tables) > 1 else None,
            code=Code.INVALID_WINDOW,
        )
    sources = bind_sources(ex, duck, sel, sql)
    src = sources[0]
    view = sel.args["from_"].this.name if sel.args.get("from_") else None
    if view is None:
        raise SqlError("a window query needs FROM", sql=sql, code=Code.INVALID_WINDOW)
    if uses_query_range(sel):
        q = dataclasses.replace(q, select=_fold_query_range(sel, src, duck, ex.tz, sql)[0])
    return _window_result(ex, duck, q, src, view, sql, adhoc=adhoc)


def _window_result(
    ex: QueryContext,
    duck: DuckSession,
    q: ast.SelectQuery,
    src: Source,
    view: str,
    sql: str,
    *,
    adhoc: bool = False,
) -> WindowOut:
    """The three stages of a window query over the rows of ``view`` (``src`` names them), with
    FILL when the query has one: the result (``_o<i>`` per select item) and its plan; with
    ``adhoc`` a query needing its rows (``query/window_rows.py``) answers its result set."""
    if adhoc and needs_rows(q.select, src.columns):
        return _window_rows(ex, duck, q, src, view, sql)
    plan = plan_window(q, src, sql, tz=ex.tz)
    assert plan.shape is not None
    spec = fill_spec(q.fill, plan.window, [e for _, e in plan.items], sql)
    fill_range = _fill_range(plan, duck, ex.tz, sql) if spec is not None else None
    budget = active_budget()
    try:
        t1 = duck.query(stage1_sql(plan, view, "duckdb", ex.tz), ResultCap.window_input(duck.limits))
    except SqlError as e:
        raise _anchored(e, sql) from None
    if budget is not None:
        budget.check(sql)
    _check_window_work(plan.shape, t1.num_rows, duck.limits.max_window_rows, sql)
    if (err := _engine_input_error(plan, t1.schema, sql)) is not None:
        if adhoc:  # an expression of these types the syntax did not show (CAST(i AS DECIMAL(9, 2)))
            return _window_rows(ex, duck, q, src, view, sql)
        raise err
    rows, gvalues, aggs = rows_from_stage1(plan, t1)
    _check_agg_types(aggs, sql)
    res = batch_windows(plan.shape, aggs, rows)
    if isinstance(plan.window, ast.IntervalWindow):  # twa / elapsed at the window edges
        res = interval_borders(aggs, rows, res)
    res = slice_windows(res, gvalues, q)
    if budget is not None:
        budget.check(sql)
    input_types = {n: t1.schema.field(n).type for n in plan.inputs}
    group_types = [t1.schema.field(g.name).type for g in plan.groups]
    data: np.ndarray | None = None
    if spec is not None and fill_range is not None:
        res, data = fill_grid(plan, res, gvalues, spec, *fill_range, max_rows=duck.limits.max_window_rows)
    table = results_table(plan, res, gvalues, aggs, input_types, group_types)
    if budget is not None:
        budget.check(sql)
    try:
        if spec is not None and data is not None:
            out = _run_filled(plan, duck, table, res, data, spec, ex.tz)
        else:
            out = duck.query(
                stage3_sql(plan, duck.register_arrow(table), ex.tz), ResultCap.result(duck.limits)
            )
    except SqlError as e:
        raise _anchored(e, sql) from None
    return out, plan


def _window_rows(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, src: Source, view: str, sql: str
) -> ResultSet:
    """An ad-hoc window query computed over its rows (``query/window_rows.py``): the rows of
    ``view`` numbered, the engine's windows of the query collecting those numbers (a ``rows``
    aggregate), every row joined to each of its windows (``_wstart``, ``_wend``, ``_wduration``),
    and the query run as a plain one over them, partitioned by its PARTITION BY and the window.

    Raises:
        SqlError: :func:`~spark_workers.query.window_rows.check_rows_query`'s refusals, the
            window clause's and the plain query's errors, the statement limits.
    """
    check_rows_query(q, sql)
    cap = ResultCap.window_input(duck.limits)
    rid = quote(ROW_ID)
    try:
        t0 = duck.query(f"SELECT *, CAST(row_number() OVER () AS BIGINT) AS {rid} FROM {view}", cap)
    except SqlError as e:
        raise _anchored(e, sql) from None
    numbered = duck.register_arrow(t0)
    plan = plan_window(assignment_query(q), src, sql, tz=ex.tz)
    shape = plan.shape
    assert shape is not None
    plan = dataclasses.replace(
        plan,
        inputs={**plan.inputs, "_rid": exp.column(ROW_ID, quoted=True)},
        aggs=[AggSpec(ROWS, None, "_rows", columns=("_rid",))],
    )
    try:
        t1 = duck.query(stage1_sql(plan, numbered, "duckdb", ex.tz), cap)
    except SqlError as e:
        raise _anchored(e, sql) from None
    _check_window_work(shape, t1.num_rows, duck.limits.max_window_rows, sql)
    rows, _gvalues, aggs = rows_from_stage1(plan, t1)
    res = batch_windows(shape, aggs, rows)
    ts_name = src.table.columns[0].name
    ts_type = t0.schema.field(ts_name).type if ts_name in t0.schema.names else pa.timestamp("us", tz="UTC")
    members = duck.register_arrow(window_members(res, ts_type, src.db.precision))
    window_cols = ", ".join(f"w.{quote(c)}" for c in WINDOW_COLUMNS)
    joined = duck.query(
        f"SELECT v.* EXCLUDE ({rid}), {window_cols} FROM {numbered} v JOIN {members} w ON v.{rid} = w.{rid}",
        cap,
    )
    over = duck.register_arrow(joined)
    columns = {
        **src.columns,
        "_wstart": ("_wstart", TIMESTAMP),
        "_wend": ("_wend", TIMESTAMP),
        "_wduration": ("_wduration", BIGINT),
    }
    for p in q.partition_by:  # PARTITION BY tbname AS tb: tb is typed as tbname
        if p.alias and isinstance(p.expr, exp.Column) and p.expr.name.lower() in src.columns:
            columns.setdefault(p.alias.lower(), src.columns[p.expr.name.lower()])
    bound = Source(src.db, src.table, src.storage, columns)
    skip = frozenset({over, *(t.name for t in _tables(q.select))})
    return run_plain(ex, duck, over_windows(q, over), sql, over=(bound, skip))


def _fill_range(plan: WindowPlan, duck: DuckSession, tz: str, sql: str) -> tuple[int, int]:
    """The query's time range for FILL (:func:`spark_workers.query.fill.check_range`); bounds that
    are constant expressions other than literals (``now - 1d``) are evaluated by DuckDB."""
    scope = plan.source.scope(tz)
    epoch = EPOCH_FN[plan.source.db.precision]

    def evaluate(e: exp.Expr) -> int | None:
        try:
            t = duck.query(f"SELECT {epoch}(CAST(({to_sql(e, 'duckdb', scope)}) AS TIMESTAMPTZ)) AS v")
        except Exception:  # not a timestamp constant: no bound
            return None
        v = t.column(0)[0].as_py() if t.num_rows else None
        return int(v) if v is not None else None

    lo, hi = where_range(plan.filter, plan.source.table.columns[0].name, scope, evaluate)
    assert isinstance(plan.window, ast.IntervalWindow)
    return check_range(lo, hi, plan.window, plan.source.db.precision, sql)


def fill_grid(
    plan: WindowPlan,
    res: WindowResults,
    gvalues: dict[str, list],
    spec: FillSpec,
    lo: int,
    hi: int,
    *,
    max_rows: int | None = None,
) -> tuple[WindowResults, np.ndarray]:
    """Every window of ``[lo, hi]`` for every group with rows in it (for NULL_F / VALUE_F without
    rows and without PARTITION BY: the one group), in (group, window start) order; the windows
    without rows hold NULL aggregates. Returns the results and, per window, whether it has rows.

    Rules: TDengine's FILL (``spark_workers.query.fill``): windows from the earliest one
    containing ``lo`` to the latest one starting at or before ``hi``.

    Raises:
        SqlError: ``0x070A`` when the rows would pass ``max_rows``."""
    starts = plan.assigner().starts_covering(lo, hi)
    keys = list(dict.fromkeys(res.gkey.tolist()))
    if not keys and spec.forced and not plan.groups:
        keys = ["[]"]
        gvalues.setdefault("[]", [])
    n, per = len(keys) * starts.size, starts.size
    if max_rows is not None and n > max_rows:
        raise SqlError(
            f"Too many time windows in query: FILL would output {n:,} rows ({len(keys):,} groups x "
            f"{per:,} windows), at most {max_rows:,} (TDWEB_SQL_MAX_WINDOW_ROWS); narrow the time range",
            sql=plan.sql,
            code=Code.TOO_MANY_TIMEWINDOW,
        )
    gk = np.repeat(np.array(keys, dtype=object), per)
    ws = np.tile(starts, len(keys))
    gpos = {k: i for i, k in enumerate(keys)}
    pos = np.array([gpos[k] for k in res.gkey.tolist()], np.int64) * per + np.searchsorted(starts, res.wstart)
    data = np.zeros(n, bool)
    data[pos] = True
    values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, (v, ok) in res.values.items():
        full = np.zeros(n, v.dtype) if v.dtype != object else np.full(n, None, object)
        valid = np.zeros(n, bool)
        full[pos], valid[pos] = v, ok
        values[name] = (full, valid)
    return WindowResults(gk, ws, plan.assigner().end(ws), values), data


def _run_filled(
    plan: WindowPlan,
    duck: DuckSession,
    table: pa.Table,
    res: WindowResults,
    data: np.ndarray,
    spec: FillSpec,
    tz: str,
) -> pa.Table:
    """Stage 3 of a FILL query: the select items of every window, the fill columns filled
    (:func:`spark_workers.query.fill.fill_column`), then HAVING, ORDER BY and LIMIT over the
    filled rows (an ORDER BY / HAVING term equal to a select item reads its filled value)."""
    gi = np.unique(res.gkey.astype(object), return_inverse=True)[1] if len(res) else np.empty(0, np.int64)
    table = table.append_column("_gi", pa.array(gi, pa.int64())).append_column("_data", pa.array(data))
    table = table.append_column("_wsi", pa.array(res.wstart, pa.int64()))
    keep = ("_gi", "_data", "_wsi", *(g.name for g in plan.groups), "_wstart", "_wend", "_wduration")
    keep += tuple(a.name for a in plan.aggs)
    bare = dataclasses.replace(plan, having=None)
    view = duck.register_arrow(table)
    out = duck.query(stage3_sql(bare, view, tz, passthrough=keep, streaming=True) + ' ORDER BY "_gi", "_wsi"')
    dmask = np.asarray(out.column("_data").to_numpy(zero_copy_only=False), bool)
    t = out.column("_wsi").to_numpy(zero_copy_only=False).astype(np.int64)
    first, end = group_bounds(out.column("_gi").to_numpy(zero_copy_only=False).astype(np.int64))
    values = _fill_values(spec, duck, plan, tz)
    for k, i in enumerate(spec.columns):
        col = out.column(f"_o{i}").combine_chunks()
        v = fill_value(values[k], col.type, plan.source.db.precision) if values else None
        out = out.set_column(i, f"_o{i}", fill_column(col, spec.mode, dmask, t, first, end, v))
    return duck.query(_final_sql(plan, duck.register_arrow(out), tz), ResultCap.result(duck.limits))


def _fill_values(spec: FillSpec, duck: DuckSession, plan: WindowPlan, tz: str) -> list[object]:
    """The VALUE / VALUE_F constants as Python values (evaluated by DuckDB)."""
    if not spec.values:
        return []
    scope = Scope({}, None, plan.source.db.precision, tz)
    cols = ", ".join(f"{to_sql(v, 'duckdb', scope)} AS {quote(f'v{i}')}" for i, v in enumerate(spec.values))
    return [c[0].as_py() for c in duck.query(f"SELECT {cols}").columns]


def _final_sql(plan: WindowPlan, view: str, tz: str) -> str:
    """HAVING, ORDER BY and LIMIT of a FILL query over its filled stage-3 rows ``_o*``."""
    scope = Scope({}, None, plan.source.db.precision, tz, frozenset({"_wstart", "_wend"}))
    by_sql = {e.sql(): exp.column(f"_o{i}", quoted=True) for i, (_n, e) in enumerate(plan.items)}

    def filled(e: exp.Expr) -> str:
        e = e.copy().transform(lambda n: by_sql[n.sql()].copy() if n.sql() in by_sql else n)
        return to_sql(e, "duckdb", scope)

    sql = f"SELECT {', '.join(quote(f'_o{i}') for i in range(len(plan.items)))} FROM {view}"
    if plan.having is not None:
        sql += f" WHERE {filled(plan.having)}"
    order = [f"{filled(o.this)}{' DESC' if o.args.get('desc') else ''}" for o in plan.order]
    sql += " ORDER BY " + ", ".join(order or ['"_gi"', '"_wsi"'])
    if plan.limit is not None:
        sql += f" LIMIT {plan.limit}"
    if plan.offset:
        sql += f" OFFSET {plan.offset}"
    return sql


def _run_window_over_join(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, sel: exp.Select, sql: str, *, adhoc: bool
) -> WindowOut:
    """A window clause over a JOIN (TDengine "Join Queries", "Primary Key Timeline"): the join's
    rows are computed first (ON and WHERE), then windowed on the primary key of the driving table
    (the right table of a RIGHT JOIN, else the first table). Every column of table ``a`` is
    available as ``a.col`` (and unqualified when no other table has that name).

    Raises:
        SqlError: a FULL JOIN (it has no primary key timeline), a RIGHT JOIN among several joins,
            an ambiguous unqualified name (AMBIGUOUS_COLUMN).
    """
    joins = sel.args.get("joins") or []
    for j in joins:
        if (j.args.get("side") or "").upper() == "FULL":
            raise window_join_refused(j, sql)
    right = [j for j in joins if (j.args.get("side") or "").upper() == "RIGHT"]
    if right and len(joins) > 1:
        raise window_join_refused(right[0], sql)
    aliases = [t.alias or t.name for t in _tables(sel)]
    sources = bind_sources(ex, duck, sel, sql)
    check_nested(sel, sql)  # TDengine's join rules (query/joins.py)
    check_ts_equality(sel, sides_of(sel, sql), sql)
    drive = len(sources) - 1 if right else 0
    ts_name = sources[drive].table.columns[0].name
    items: list[exp.Expr] = [
        exp.alias_(exp.column(ts_name, table=aliases[drive], quoted=True), ts_name, quoted=True)
    ]
    columns: dict[str, tuple[str, TdType]] = {ts_name.lower(): (ts_name, TIMESTAMP)}
    owners: dict[str, list[str]] = {}
    for alias, src in zip(aliases, sources, strict=True):
        for low, (name, typ) in src.columns.items():
            flat = f"{alias}.{name}"
            items.append(exp.alias_(exp.column(name, table=alias, quoted=True), flat, quoted=True))
            columns[flat.lower()] = (flat, typ)
            owners.setdefault(low, []).append(flat)
    inner = sel.copy()
    for key in ("group", "having", "order", "limit", "offset"):
        inner.set(key, None)
    inner.set("expressions", items)
    scope = query_scope(sources, ex.tz)
    try:  # SEMI/ANTI/ASOF: the join's rows first (query/joins.py)
        text = (
            window_join_rows(sel, sql, ts_name, scope) if has_td_join(sel) else to_sql(inner, "duckdb", scope)
        )
        rows = duck.query(text, ResultCap.window_input(duck.limits))
    except SqlError as e:
        raise _anchored(e, sql) from None
    view = duck.register_arrow(rows)
    d = sources[drive]
    table = Table(d.db.name, view, "normal", (Column(ts_name, TIMESTAMP, ts_name),))
    src = Source(d.db, table, table, {"tbname": columns.get("tbname", ("tbname", varchar(192))), **columns})
    over = _over_join_rows(q, view, ts_name, owners, sql)
    return _window_result(ex, duck, over, src, view, sql, adhoc=adhoc)


def _run_window_over_subquery(
    ex: QueryContext, duck: DuckSession, q: ast.SelectQuery, sql: str, *, adhoc: bool
) -> WindowOut:
    """A window clause over a subquery that cannot be merged into it (``query/subquery.py``: GROUP
    BY, aggregates, DISTINCT, LIMIT, UNION, joins inside it): the subquery's rows are computed
    first (DuckDB, capped as a window query's input), then windowed on its first TIMESTAMP output
    column, the timeline TDengine's nested queries keep (SQL manual, "Nested Queries": functions
    depending on timestamps need the inner query to provide them).

    Raises:
        SqlError: ``0x2650`` when the subquery outputs no TIMESTAMP column (positioned at it).
    """
    sel = q.select
    assert isinstance(sel, exp.Select)
    sub = sel.args["from_"].this
    inner = sub.this
    sources = bind_sources(ex, duck, inner, sql)
    try:
        rows = duck.query(
            to_sql(inner, "duckdb", query_scope(sources, ex.tz)), ResultCap.window_input(duck.limits)
        )
    except SqlError as e:
        raise _anchored(e, sql) from None
    names = rows.column_names
    ts_at = next((i for i, f in enumerate(rows.schema) if pa.types.is_timestamp(f.type)), None)
    if ts_at is None or not sources:
        raise SqlError(
            "Window query not supported: the subquery outputs no TIMESTAMP column to window on "
            "(select its primary timestamp, e.g. SELECT ts, ... FROM t)",
            sql=sql,
            offset=offset_of(sub),
            code=Code.INVALID_WINDOW,
        )
    if len(set(n.lower() for n in names)) != len(names):
        raise SqlError(
            "the subquery outputs two columns of one name: give them aliases",
            sql=sql,
            offset=offset_of(sub),
            code=Code.AMBIGUOUS_COLUMN,
        )
    view = duck.register_arrow(rows)
    ts_name = names[ts_at]
    columns = {
        n.lower(): (n, TIMESTAMP if i == ts_at else result_columns(rows.select([i]), None, sources)[0].type)
        for i, n in enumerate(names)
    }
    d = sources[0]
    table = Table(d.db.name, view, "normal", (Column(ts_name, TIMESTAMP, ts_name),))
    src = Source(d.db, table, table, {"tbname": columns.get("tbname", ("tbname", varchar(192))), **columns})
    outer = sel.copy()
    outer.set("from_", exp.From(this=exp.to_table(view)))
    return _window_result(ex, duck, dataclasses.replace(q, select=outer), src, view, sql, adhoc=adhoc)


def _over_join_rows(
    q: ast.SelectQuery, view: str, ts_name: str, owners: dict[str, list[str]], sql: str
) -> ast.SelectQuery:
    """``q`` read over the join's rows: ``a.col`` is the column ``"a.col"``, an unqualified name
    the one table column of that name; FROM is the rows' view; WHERE was applied by the join."""

    def visit(n: exp.Expr) -> exp.Expr:
        if not isinstance(n, exp.Column):
            return n
        if n.table:
            return exp.column(f"{n.table}.{n.name}", quoted=True)
        low = n.name.lower()
        if low == ts_name.lower() or low in WINDOW_PSEUDO or low not in owners:
            return n
        if len(owners[low]) > 1:
            raise SqlError(
                f"ambiguous column name {n.name}: qualify it ({', '.join(owners[low])})",
                sql=sql,
                offset=offset_of(n),
                code=Code.AMBIGUOUS_COLUMN,
            )
        return exp.column(owners[low][0], quoted=True)

    outer = q.select.copy()
    assert isinstance(outer, exp.Select)
    outer.set("joins", None)
    outer.set("where", None)
    outer.set("from_", exp.From(this=exp.to_table(view)))
    items = []
    for item in outer.expressions:
        new = item.transform(visit)
        items.append(
            exp.alias_(new, item.name, quoted=True) if isinstance(item, exp.Column) and item.table else new
        )
    outer.set("expressions", items)
    for key in ("having", "order"):
        if outer.args.get(key) is not None:
            outer.set(key, outer.args[key].transform(visit))
    w = q.window
    if w is not None:
        changes = {
            k: getattr(w, k).transform(visit)
            for k in ("expr", "start", "end")
            if isinstance(getattr(w, k, None), exp.Expr)
        }
        w = dataclasses.replace(w, **changes) if changes else w
    return dataclasses.replace(
        q,
        select=outer,
        partition_by=[dataclasses.replace(p, expr=p.expr.transform(visit)) for p in q.partition_by],
        window=w,
    )


MAX_WINDOWS_PER_ROW = 100_000  # INTERVAL(1d) SLIDING(1s) is 86,400


def _check_window_work(shape: WindowShape, rows: int, max_pairs: int, sql: str) -> None:
    """Refuse a window query whose rows would be copied into too many windows: the engine lifts
    each row into every window it belongs to (INTERVAL with SLIDING, COUNT_WINDOW with a slide),
    so its memory and time grow with rows x windows per row (``TDWEB_SQL_MAX_WINDOW_ROWS``).

    Raises:
        SqlError: ``0x070A`` (TSDB_CODE_QRY_TOO_MANY_TIMEWINDOW, "Too many time window in query").
    """
    per_row = 1
    if shape.kind in ("interval", "count", "ek_count") and shape.step:
        per_row = -(-shape.size // shape.step)
    if per_row > MAX_WINDOWS_PER_ROW or per_row * rows > max_pairs:
        raise SqlError(
            f"Too many time windows in query: each row falls in {per_row:,} windows and {rows:,} rows "
            f"are read (at most {max_pairs:,} row-windows, TDWEB_SQL_MAX_WINDOW_ROWS, and "
            f"{MAX_WINDOWS_PER_ROW:,} windows per row); use a larger SLIDING or a narrower time range",
            sql=sql,
            code=Code.TOO_MANY_TIMEWINDOW,
        )


def empty_stage_types(
    plan: WindowPlan, duck: DuckSession, view: str, tz: str
) -> tuple[dict[str, pa.DataType], list[pa.DataType], list[AggSpec], pa.Schema]:
    """Types of stage-1 inputs and group values, aggregate specs and the stage-3 output schema,
    from a dry run on the empty table (used to create a stream's output table)."""
    t1 = duck.query(stage1_sql(plan, view, "duckdb", tz) + " LIMIT 0")
    _, gvalues, aggs = rows_from_stage1(plan, t1)
    input_types = {n: t1.schema.field(n).type for n in plan.inputs}
    group_types = [t1.schema.field(g.name).type for g in plan.groups]
    if plan.projection:  # no window: the select items are the stage-1 inputs, in order
        return input_types, group_types, [], pa.schema([t1.schema.field(n) for n in plan.inputs])
    empty = WindowResults(
        np.empty(0, object),
        np.empty(0, np.int64),
        np.empty(0, np.int64),
        {a.name: (np.empty(0, _np_dtype(a, input_types)), np.empty(0, bool)) for a in aggs},
    )
    if plan.row_mode:
        empty.values["_rows"] = (np.empty(0, object), np.empty(0, bool))
    table = results_table(plan, empty, gvalues, aggs, input_types, group_types)
    out = duck.query(stage3_sql(plan, duck.register_arrow(table), tz))
    return input_types, group_types, aggs, out.schema


_FLOAT_RESULTS = (
    "avg",
    "spread",
    "stddev",
    "var_pop",
    "elapsed",
    "twa",
    "irate",
    "percentile",
    "apercentile",
)


def _np_dtype(a: AggSpec, input_types: dict[str, pa.DataType]) -> Any:
    if a.func == "rows":
        return object
    if a.func in ("count", "count_distinct", "hyperloglog"):
        return np.int64
    if a.func == "leastsquares":
        return object
    if a.func in _FLOAT_RESULTS:
        return np.float64
    t = input_types.get(a.input or "")
    if t is None:
        return np.float64
    k = kind_of(t)
    return {"int": np.int64, "float": np.float64, "bool": np.bool_, "ts": np.int64}.get(k, object)
