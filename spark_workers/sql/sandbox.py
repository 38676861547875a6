"""The SQL front door's allow-list: only TDengine's language reaches DuckDB or Spark.

Queries are parsed by ``sqlglot`` with a MySQL-based dialect, which also builds trees for what
DuckDB, Spark or MySQL accept and TDengine does not: table functions that read files
(``read_csv_auto('/etc/passwd')``, ``read_blob``, ``glob``), settings and environment functions
(``current_setting``, ``getenv``, ``duckdb_settings()``), ``query()``, lambdas, ``COLUMNS(...)``,
JSON operators, Spark's ``java_method`` / ``reflect``... Every tree is checked here before it is
translated for a backend (docs/decisions.md, "SQL sandbox and limits"):

- **node types**: an allow-list of the ``sqlglot`` expression types TDengine's SQL needs (the
  query clauses, operators, literals, CASE, CAST to TDengine types, subqueries, UNION, CTEs, joins;
  derived from what the test suites of the SQL layer, the REST endpoint and the runtime use);
  structural nodes may only carry the arguments TDengine's syntax gives them (no ``GROUP BY ALL``,
  ``DISTINCT ON``, ``WITH RECURSIVE``, ``UNION BY NAME``, ``TABLESAMPLE``, ``* EXCLUDE``...);
- **functions**: every call must be in tdweb's catalogue: the scalar functions of
  :data:`spark_workers.sql.functions.FUNCTIONS`, the aggregate, selection and time-series
  functions of :data:`spark_workers.sql.aggregate_functions.FUNCTIONS` (their argument rules
  checked here: ``0x2801`` / ``0x2802`` / ``0x2803``), ``now``, and eKuiper's ``window_start()`` /
  ``window_end()``; anything else is TDengine's ``0x264D`` "Invalid function name: read_csv_auto"
  (TDengine functions tdweb does not implement yet are ``NOT_SUPPORTED``);
- **tables**: a FROM item is a ``[db.]table`` name or a subquery; a table function or a string
  used as a table (DuckDB reads ``FROM '/etc/passwd'`` as a file) is ``0x2644`` "Permission
  denied"; three-part names are a syntax error.

Errors are positioned at the offending node (:func:`spark_workers.sql.ast.offset_of`).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from spark_workers.engine.aggregates import AGGREGATES, ALIASES
from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast
from spark_workers.sql.aggregate_functions import NOT_TDENGINE_SPELLINGS, check_call, spec_of
from spark_workers.sql.ast import offset_of
from spark_workers.sql.functions import CAST_TYPES, td_name
from spark_workers.sql.scope import func_name

# eKuiper's window_start() / window_end() (seed 003); the planner turns them into _wstart / _wend
EKUIPER_PSEUDO_FUNCTIONS = frozenset({"window_start", "window_end"})
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
# TDengine functions (SQL manual, "Functions") tdweb does not compute yet: NOT_SUPPORTED, not an
# invalid name (aggregate / selection / time-series ones: spark_workers.sql.aggregate_functions).
# Streams reject the seed-000 list with their own message (STREAM_FORBIDDEN). INTERP is computed
# by its own query form (query/interp.py), refused anywhere else.
TDENGINE_NOT_IMPLEMENTED = frozenset({"interp"})

# TDengine's system functions: a client's query replaces them by the session's constants before
# this check (spark_workers.query.system_functions); anywhere else (streams) they have no value
SESSION_FUNCTIONS = frozenset(
    {"database", "client_version", "server_version", "server_status", "current_user", "user"}
)

# Allowed node types -> the arguments they may carry (None: any; their child nodes are checked).
_STRUCTURE: dict[type[exp.Expr], frozenset[str] | None] = {
    exp.Select: frozenset(
        {"with_", "expressions", "distinct", "from_", "joins", "where", "group", "having", "order", "limit"}
        | {"offset"}
    ),
    exp.Union: frozenset({"with_", "this", "expression", "distinct", "order", "limit", "offset"}),
    exp.Subquery: frozenset({"this", "alias", "order", "limit", "offset"}),
    exp.From: frozenset({"this"}),
    exp.Join: frozenset({"this", "on", "side", "kind", "using"}),
    exp.Where: frozenset({"this"}),
    exp.Having: frozenset({"this"}),
    exp.Group: frozenset({"expressions"}),
    exp.Order: frozenset({"this", "expressions"}),
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"this", "expression", "offset"}),
    exp.Offset: frozenset({"this", "expression"}),
    exp.Distinct: frozenset({"expressions"}),
    exp.With: frozenset({"expressions"}),
    exp.CTE: frozenset({"this", "alias"}),
    exp.Table: frozenset({"this", "db", "alias"}),
    exp.TableAlias: frozenset({"this", "columns"}),
    exp.Alias: frozenset({"this", "alias"}),
    exp.Star: frozenset(),
    exp.Column: frozenset({"this", "table", "db"}),
    exp.Identifier: None,
    exp.Paren: frozenset({"this"}),
    exp.Literal: None,
    exp.Null: None,
    exp.Boolean: None,
    exp.Interval: frozenset({"this", "unit"}),
    exp.Var: None,  # only as an interval's unit (checked below)
    exp.CurrentTimestamp: frozenset(),
    exp.Exists: frozenset({"this"}),
    exp.Case: frozenset({"this", "ifs", "default"}),
    exp.If: frozenset({"this", "true", "false"}),  # only as a WHEN of CASE (checked below)
    exp.Cast: frozenset({"this", "to"}),
    exp.DataType: None,  # only as CAST's target (checked below)
    exp.DataTypeParam: None,
    # operators
    exp.Add: None,
    exp.Sub: None,
    exp.Mul: None,
    exp.Div: None,
    exp.Mod: None,
    exp.Neg: None,
    exp.Not: None,
    exp.And: None,
    exp.Or: None,
    exp.EQ: None,
    exp.NEQ: None,
    exp.GT: None,
    exp.GTE: None,
    exp.LT: None,
    exp.LTE: None,
    exp.Is: None,
    exp.In: frozenset({"this", "expressions", "query"}),
    exp.Between: frozenset({"this", "low", "high"}),
    exp.Like: None,
    exp.RegexpLike: frozenset({"this", "expression"}),  # MATCH / NMATCH (sql/lexer.py)
    exp.BitwiseAnd: None,
    exp.BitwiseOr: None,
    # JSON tags: tag->'key', tag CONTAINS 'key' (TDengine SQL manual, "JSON Type"; sql/json_ops.py)
    exp.JSONExtract: frozenset({"this", "expression"}),
    exp.JSONBContains: frozenset({"this", "expression"}),
}
_JOIN_KINDS = frozenset({"", "INNER", "OUTER", "CROSS"})
_JOIN_SIDES = frozenset({"", "LEFT", "RIGHT", "FULL"})
# words for the constructs users most likely try (error messages)
_CONSTRUCTS: dict[type[exp.Expr], str] = {
    exp.Lambda: "a lambda expression",
    exp.Window: "a window function (OVER); TDengine uses window clauses such as INTERVAL(...)",
    exp.Columns: "COLUMNS(...)",
    exp.Values: "VALUES as a table",
    exp.Lateral: "LATERAL",
    exp.Unnest: "UNNEST",
    exp.TableSample: "TABLESAMPLE",
    exp.Intersect: "INTERSECT",
    exp.Except: "EXCEPT",
    exp.Into: "SELECT ... INTO",
    exp.Array: "an array",
    exp.Struct: "a struct",
    exp.Bracket: "a subscript",
    exp.Placeholder: "a placeholder",
    exp.Parameter: "a variable",
    exp.SessionParameter: "a session variable",
    exp.Dot: "a name with more than three parts",
    exp.Collate: "COLLATE",
    exp.Tuple: "a tuple",
    exp.Qualify: "QUALIFY",
    exp.Lock: "FOR UPDATE",
    exp.Filter: "FILTER (WHERE ...) outside an eKuiper window",
    exp.JSONExtractScalar: "the JSON operator ->>",
    exp.BitwiseXor: "the operator ^",
    exp.BitwiseNot: "the operator ~",
    exp.BitwiseLeftShift: "the operator <<",
    exp.BitwiseRightShift: "the operator >>",
    exp.IntDiv: "DIV",
    exp.NullSafeEQ: "the operator <=>",
}
# arguments of allowed nodes that are not TDengine's, in the user's words
_ARGS: dict[tuple[type[exp.Expr], str], str] = {
    (exp.Group, "all"): "GROUP BY ALL",
    (exp.Group, "cube"): "GROUP BY CUBE",
    (exp.Group, "rollup"): "GROUP BY ROLLUP",
    (exp.Group, "grouping_sets"): "GROUPING SETS",
    (exp.With, "recursive"): "WITH RECURSIVE",
    (exp.Union, "by_name"): "UNION BY NAME",
    (exp.Star, "except_"): "* EXCLUDE",
    (exp.Star, "replace"): "* REPLACE",
    (exp.Star, "rename"): "* RENAME",
    (exp.Table, "sample"): "TABLESAMPLE",
    (exp.Select, "sample"): "TABLESAMPLE",
    (exp.Select, "qualify"): "QUALIFY",
    (exp.Select, "windows"): "WINDOW",
    (exp.Select, "into"): "SELECT ... INTO",
    (exp.Select, "locks"): "FOR UPDATE",
    (exp.Cast, "format"): "CAST ... FORMAT",
    (exp.Cast, "safe"): "TRY_CAST",
}


def check_query(
    tree: exp.Expr, sql: str | None, *, streaming: bool = False, also: Iterable[exp.Expr | None] = ()
) -> None:
    """Refuse a query (or expression) that is not TDengine's SQL.

    Args:
        tree: the query as parsed (``ast.SelectQuery.select``) or an expression, before its tables
            are bound to backend views.
        sql: the statement text its offsets point into (None: offsets are kept, text unknown).
        streaming: the query is a stream's: the seed-000 functions streams reject get the
            planner's message.
        also: more expressions of the statement (PARTITION BY items, window conditions).

    Raises:
        SqlError: positioned at the first offending node: ``0x264D`` unknown function,
            ``0x0100`` TDengine function not implemented, ``0x2644`` table function or string
            used as a table, ``0x2600`` construct that is not TDengine SQL.
    """
    for root in (tree, *also):
        if root is None:
            continue
        for node in root.walk(bfs=False):
            _check_node(node, sql, streaming)


def check_select(q: ast.SelectQuery, sql: str | None, *, streaming: bool = False) -> None:
    """:func:`check_query` of a whole TDengine query: its ``sqlglot`` tree, its PARTITION BY items
    and the expressions of its window clause (STATE_WINDOW, EVENT_WINDOW, eKuiper FILTER/OVER)."""
    also: list[exp.Expr | None] = [p.expr for p in q.partition_by]
    if q.window is not None:
        also += [getattr(q.window, name, None) for name in ("expr", "start", "end", "over_when", "filter")]
    check_query(q.select, sql, streaming=streaming, also=also)


def check_stream(stmt: ast.CreateStreamLegacy | ast.CreateStream337, sql: str) -> None:
    """:func:`check_query` of every user expression of a CREATE STREAM (both syntaxes), before it
    is compiled: its query, PARTITION BY items, trigger conditions, PRE_FILTER, FILL_HISTORY
    start, SUBTABLE / OUTPUT_SUBTABLE, tag expressions and NOTIFY WHERE, positioned in ``sql``
    (the statement's text).

    Raises:
        SqlError: as :func:`check_query`.
    """
    also: list[exp.Expr | None] = []
    if stmt.tags:
        also += [t.expr for t in stmt.tags]
    if stmt.notify is not None:
        also.append(stmt.notify.where)
    query: ast.SelectQuery | None = stmt.query
    streaming = isinstance(stmt, ast.CreateStreamLegacy)  # the seed-000 function list applies
    if isinstance(stmt, ast.CreateStreamLegacy):
        also.append(stmt.subtable)
    else:
        also += [p.expr for p in stmt.partition_by]
        also += [stmt.output_subtable, stmt.options.pre_filter, stmt.options.fill_history_start]
        also += [getattr(stmt.trigger, name, None) for name in ("expr", "start", "end")]
    if query is not None:
        _refuse_query_clauses(query, sql)
        check_select(query, sql, streaming=streaming)
    check_query(exp.Null(), sql, also=[e for e in also if isinstance(e, exp.Expr)])


def _refuse_query_clauses(q: ast.SelectQuery, sql: str) -> None:
    """INTERP's RANGE / EVERY and SLIMIT are ad-hoc query clauses: a stream's query refuses them
    (TDengine: "Stream Unsupported RANGE clause"; tdweb computes no INTERP in streams)."""
    if q.interp is not None:
        span = q.interp.range_span or q.interp.every_span
        raise SqlError(
            "Stream Unsupported RANGE clause: INTERP (RANGE, EVERY) is not supported in stream computing",
            sql=sql,
            offset=span.start if span else None,
            code=Code.NOT_SUPPORTED,
        )
    if q.slimit is not None:
        raise SqlError(
            "SLIMIT / SOFFSET are not supported in stream computing",
            sql=sql,
            offset=q.slimit_span.start if q.slimit_span else None,
            code=Code.NOT_SUPPORTED,
        )


def check_expression(tree: exp.Expr) -> None:
    """:func:`check_query` for a tree about to be translated (``translate.to_sql``): the same
    rules, without the statement text (offsets still point into it)."""
    check_query(tree, None)


def _error(message: str, node: exp.Expr, sql: str | None, code: int) -> SqlError:
    return SqlError(message, sql=sql, offset=offset_of(node), code=code)


def _syntax(message: str, node: exp.Expr, sql: str | None) -> SqlError:
    return _error(f"syntax error: {message}", node, sql, Code.SYNTAX_ERROR)


def written_name(node: exp.Expr, sql: str | None) -> str:
    """A call's function name as the user wrote it (from the token span when known)."""
    meta = node.meta if node.meta else {}
    if sql is not None and "start" in meta and "end" in meta:
        text = sql[int(meta["start"]) : int(meta["end"]) + 1]
        if text and "(" not in text:
            return text
    if isinstance(node, exp.Anonymous):
        return str(node.name)
    return node.sql_name().lower() if isinstance(node, exp.Func) else node.key


def _describe(node: exp.Expr) -> str:
    for cls, words in _CONSTRUCTS.items():
        if isinstance(node, cls):
            return words
    return f"'{node.key.upper()}'"


def _check_node(node: exp.Expr, sql: str | None, streaming: bool) -> None:
    cls = type(node)
    if cls in _STRUCTURE:
        _check_structure(node, sql)
        return
    if isinstance(node, exp.Func):
        _check_call(node, sql, streaming)
        return
    raise _error(f"syntax error: {_describe(node)} is not part of TDengine SQL", node, sql, Code.SYNTAX_ERROR)


def _check_structure(node: exp.Expr, sql: str | None) -> None:
    parent = node.parent
    if isinstance(node, exp.Table):
        _check_table(node, sql)
    elif isinstance(node, exp.Join):
        kind = str(node.args.get("kind") or "").upper()
        side = str(node.args.get("side") or "").upper()
        method = str(node.args.get("method") or "").upper()
        if method or kind not in _JOIN_KINDS or side not in _JOIN_SIDES:
            raise _error(
                f"syntax error: {method or kind or side} JOIN is not part of TDengine SQL",
                node,
                sql,
                Code.SYNTAX_ERROR,
            )
    allowed = _STRUCTURE[type(node)]
    if allowed is not None:
        for key, value in node.args.items():
            if value and key not in allowed:
                what = _ARGS.get((type(node), key)) or f"{key.rstrip('_').upper()} in {node.key.upper()}"
                raise _syntax(f"{what} is not part of TDengine SQL", node, sql)
    if isinstance(node, exp.Distinct) and node.args.get("on"):
        raise _error("syntax error: DISTINCT ON is not part of TDengine SQL", node, sql, Code.SYNTAX_ERROR)
    elif isinstance(node, exp.Var) and not isinstance(parent, exp.Interval):
        raise _error(f"syntax error near '{node.name}'", node, sql, Code.SYNTAX_ERROR)
    elif isinstance(node, exp.If) and not isinstance(parent, exp.Case):
        name = written_name(node, sql)
        raise _error(f"Invalid function name: {name}", node, sql, Code.INVALID_FUNCTION_NAME)
    elif isinstance(node, exp.DataTypeParam) and not isinstance(parent, exp.DataType):
        raise _error("syntax error: a data type is expected here", node, sql, Code.SYNTAX_ERROR)
    elif isinstance(node, exp.DataType) and (type(parent) is not exp.Cast or node.this not in CAST_TYPES):
        where = parent if parent is not None else node
        raise _syntax(f"{node.sql(dialect='mysql')} is not a TDengine data type", where, sql)


def _check_table(t: exp.Table, sql: str | None) -> None:
    """A FROM item: ``[db.]table`` (``information_schema.ins_*`` included) or a subquery."""
    this = t.this
    if isinstance(this, exp.Func):
        name = written_name(this, sql)
        raise _error(
            f"Permission denied: table function {name}() cannot be read; FROM takes [db.]table names "
            "and subqueries",
            this,
            sql,
            Code.PERMISSION_DENIED,
        )
    if not isinstance(this, exp.Identifier):
        raise _error("syntax error: FROM takes [db.]table names and subqueries", t, sql, Code.SYNTAX_ERROR)
    meta = this.meta if this.meta else {}
    if sql is not None and "start" in meta and sql[int(meta["start"]) : int(meta["start"]) + 1] in ("'", '"'):
        # the MySQL dialect reads FROM 'x' as a quoted name; DuckDB would read it as a file
        raise _error(
            f"Permission denied: FROM {sql[int(meta['start']) : int(meta['end']) + 1]} is a string, not a "
            "table name; files cannot be read",
            t,
            sql,
            Code.PERMISSION_DENIED,
        )
    db = t.args.get("db")
    if t.args.get("catalog") or (db is not None and not isinstance(db, exp.Identifier)):
        raise _error(
            "syntax error: a table name has at most two parts, [db.]table", t, sql, Code.SYNTAX_ERROR
        )


def _check_call(node: exp.Func, sql: str | None, streaming: bool) -> None:
    """A function call: in the catalogue, or refused by name."""
    if td_name(node) is not None:
        return
    name = func_name(node)
    spec = spec_of(node)
    if spec is not None and (isinstance(node, exp.Anonymous) or name in AGGREGATES or "start" in node.meta):
        _check_registry_call(node, spec.name, sql, streaming)
        return
    if (name in AGGREGATES or name in ALIASES) and not (streaming and name in STREAM_FORBIDDEN):
        return
    if isinstance(node, exp.Anonymous) and name in EKUIPER_PSEUDO_FUNCTIONS:
        return
    parent = node.parent
    if isinstance(node, exp.TsOrDsToDate) and set(node.args) <= {"this"} and parent and td_name(parent):
        return  # WEEK(x) & co. are parsed as WEEK(TS_OR_DS_TO_DATE(x))
    if not isinstance(node, exp.Anonymous) and not (node.meta and "start" in node.meta):
        # an operator or keyword form sqlglot parsed into a function (``a -> '$.x'``, ``DATE 'x'``)
        raise _syntax(f"{_describe(node)} is not part of TDengine SQL", node, sql)
    written = written_name(node, sql)
    low = written.lower()
    if streaming and low in STREAM_FORBIDDEN:
        raise _error(
            f"function {low} is not allowed in stream computing (seed 000 lists the 19 "
            "aggregate/selection functions streams reject)",
            node,
            sql,
            Code.INVALID_FUNCTION,
        )
    if low in SESSION_FUNCTIONS:  # queries fold them first (query/system_functions.py)
        raise _error(
            f"function {low} answers about a client's session: it is allowed in a query, not in a stream "
            "computation",
            node,
            sql,
            Code.NOT_SUPPORTED,
        )
    if low in TDENGINE_NOT_IMPLEMENTED or low in STREAM_FORBIDDEN:
        where = (
            "is only allowed in the select list of an INTERP query (RANGE, EVERY, FILL; query/interp.py)"
            if low == "interp"
            else "is not supported yet"
        )
        raise _error(f"function {low} {where}", node, sql, Code.NOT_SUPPORTED)
    raise _error(f"Invalid function name: {written}", node, sql, Code.INVALID_FUNCTION_NAME)


def _check_registry_call(node: exp.Func, name: str, sql: str | None, streaming: bool) -> None:
    """An aggregate / selection / time-series call (:mod:`spark_workers.sql.aggregate_functions`):
    spelled as TDengine spells it (``std(x)`` is sqlglot's, not TDengine's: ``0x264D``), allowed
    in a legacy stream (seed 000), with TDengine's argument rules."""
    written = written_name(node, sql)
    if written.lower() in NOT_TDENGINE_SPELLINGS:
        raise _error(f"Invalid function name: {written}", node, sql, Code.INVALID_FUNCTION_NAME)
    if streaming and name in STREAM_FORBIDDEN:
        raise _error(
            f"function {name} is not allowed in stream computing (seed 000 lists the 19 "
            "aggregate/selection functions streams reject)",
            node,
            sql,
            Code.INVALID_FUNCTION,
        )
    check_call(node, name, sql)


def visible_ctes(table: exp.Table) -> set[str]:
    """Lower-case names of the CTEs a table reference can mean, by SQL's scoping: the CTEs of
    every enclosing query, and inside a CTE's body only the CTEs defined before it. A name outside
    that scope is a real table (it is resolved in the catalog, never left for DuckDB to find one
    of its own system views or a file)."""
    names: set[str] = set()
    child: exp.Expr = table
    parent = table.parent
    owner_of_with: exp.Expr | None = None
    while parent is not None:
        if isinstance(parent, exp.With):
            for cte in parent.expressions:
                if cte is child:
                    break
                names.add(cte.alias_or_name.lower())
            owner_of_with = parent.parent
        elif isinstance(parent, exp.Query) and parent is not owner_of_with:
            w = parent.args.get("with_")
            if w is not None:
                names.update(c.alias_or_name.lower() for c in w.expressions)
        child = parent
        parent = parent.parent
    return names
