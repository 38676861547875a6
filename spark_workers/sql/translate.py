"""One translator, two backends: TDengine expressions -> DuckDB SQL and Spark SQL.

Input expressions are sqlglot trees in tdweb's TDengine dialect (see ``ast.py``). The translator
rewrites what differs from standard SQL, then lets sqlglot generate the backend's text:

- pseudo columns ``_c0`` / ``_rowts`` -> the table's primary timestamp column;
- timestamp comparisons with integer literals (epoch in the database precision) or string literals
  (read in ``TDWEB_TIMEZONE``) -> exact UTC timestamp literals;
- TDengine functions with other names or semantics (``spread``, ``stddev`` (population),
  ``first``/``last``/``last_row`` (by timestamp)); single-row functions (math, string, conversion,
  time: ``timetruncate``, ``to_iso8601``, ``today``...) through the catalog in
  :mod:`spark_workers.sql.functions`.

Both backends see TIMESTAMP columns as UTC timestamps with microsecond resolution.

Nothing but TDengine's SQL is translated: :func:`to_sql` runs the front door's allow-list
(:func:`spark_workers.sql.sandbox.check_expression`) on every tree first, so an expression that
reached it some other way than a checked query (a stream's PRE_FILTER, SUBTABLE, a Spark stage-1
column) still cannot call DuckDB's or Spark's own functions (``read_text``, ``java_method``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

from sqlglot import exp

from spark_workers import timestamps
from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql import aggregate_functions as aggs
from spark_workers.sql import binary_ops, decimal_ops, functions, json_ops, row_functions
from spark_workers.sql.ast import join_spec, offset_of
from spark_workers.sql.sandbox import check_expression
from spark_workers.sql.scope import PSEUDO_TS, Scope, func_name

BACKENDS = ("duckdb", "spark")
_CMP = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def ts_literal(value_us: int) -> exp.Expr:
    """An exact UTC timestamp literal (``CAST('...+00:00' AS TIMESTAMPTZ)``) for epoch µs."""
    text = timestamps.render(value_us, "us", "UTC").replace("T", " ").replace("Z", "+00:00")
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("TIMESTAMPTZ"))


def literal_epoch(node: exp.Expr, scope: Scope) -> int | None:
    """Epoch (precision units) of an integer or timestamp-string literal, else None."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = literal_epoch(node.this, scope)
        return None if v is None else -v
    if isinstance(node, exp.Literal):
        if node.is_string:
            try:
                return timestamps.parse_literal(node.this, scope.precision, scope.tz)
            except SqlError:
                return None
        if node.is_int:
            return int(node.this)
    return None


def _to_us(value: int, precision: str) -> int:
    return {"ms": value * 1000, "us": value, "ns": value // 1000}[precision]


def normalize(expr: exp.Expr, scope: Scope) -> exp.Expr:
    """Backend-neutral rewrite: pseudo columns and timestamp literals (returns a new tree)."""
    expr = expr.copy()

    def fix_ts(node: exp.Expr, other: exp.Expr) -> None:
        if scope.is_timestamp(other):
            v = literal_epoch(node, scope)
            if v is not None:
                node.replace(ts_literal(_to_us(v, scope.precision)))

    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in PSEUDO_TS:
            if scope.ts_column is None:
                raise SqlError(f"{node.name} needs a table with a timestamp column", code=Code.INVALID_COLUMN)
            return exp.column(scope.ts_column, quoted=True)
        return node

    expr = expr.transform(visit, copy=False)
    for node in list(expr.find_all(*_CMP)):
        left, right = node.this, node.expression
        fix_ts(right, left)
        fix_ts(left, right)
    for between in list(expr.find_all(exp.Between)):
        for bound in ("low", "high"):
            b = between.args.get(bound)
            if b is not None:
                fix_ts(b, between.this)
    for in_ in list(expr.find_all(exp.In)):
        for item in in_.expressions:
            fix_ts(item, in_.this)
    return expr


def _interval_check(node: exp.Interval) -> None:
    raw = node.meta.get("td_duration")
    if raw and Duration.parse(raw).unit == "b":
        raise SqlError(
            f"nanosecond durations ({raw}) are not supported in expressions", code=Code.NOT_SUPPORTED
        )


_POSIX_CLASSES = frozenset(
    {
        "alnum",
        "alpha",
        "blank",
        "cntrl",
        "digit",
        "graph",
        "lower",
        "print",
        "punct",
        "space",
        "upper",
        "xdigit",
    }
)


Recurse = Callable[[exp.Expr], exp.Expr]


def _epoch_us(node: exp.Expr, kind: str | None, backend: str, precision: str) -> exp.Expr:
    """Microseconds since the epoch of a timestamp, or of an integer epoch in ``precision``."""
    if kind == "ts":
        return functions.epoch_us(node, backend == "duckdb")
    return functions.epoch_to_us(exp.Cast(this=node, to=exp.DataType.build("BIGINT")), precision)


def timestamp_arithmetic(node: exp.Add | exp.Sub, backend: str, scope: Scope, recurse: Recurse) -> exp.Expr:
    """``+`` / ``-`` with a timestamp operand, as TDengine types it (``parTranslater.c``,
    ``translateArithmeticOperator``): a timestamp and an integer or boolean give a TIMESTAMP (the
    integer counts units of the database precision); two timestamps, or a timestamp and a float or
    string, are ``0x2605`` wrong value type. A duration (``ts + 1h``) is left to the backend.
    ``recurse`` rewrites the operands; a rewritten result is a new node the caller does not
    descend into.

    Raises:
        SqlError: WRONG_VALUE_TYPE, positioned at the operator's right operand.
    """
    left, right = node.this, node.expression
    if isinstance(left, exp.Interval) or isinstance(right, exp.Interval):
        return node
    lk, rk = functions.kind_of(left, scope), functions.kind_of(right, scope)
    if "ts" not in (lk, rk):
        return node
    other = rk if lk == "ts" else lk
    if other not in ("int", "bool"):
        verb = "added to" if isinstance(node, exp.Add) else "subtracted from"
        what = "a timestamp" if other == "ts" else f"a {other or 'non-integer'} value"
        raise SqlError(
            f"Invalid value type: {what} cannot be {verb} a timestamp",
            offset=offset_of(right),
            code=Code.WRONG_VALUE_TYPE,
        )
    op = exp.Add if isinstance(node, exp.Add) else exp.Sub
    if backend == "duckdb" and scope.precision == "ns":  # nanoseconds: exact, not through µs
        lns, rns = (_epoch_ns(recurse(e), k) for e, k in ((left, lk), (right, rk)))
        return exp.Anonymous(this="make_timestamp_ns", expressions=[op(this=lns, expression=rns)])
    lus = _epoch_us(recurse(left), lk, backend, scope.precision)
    rus = _epoch_us(recurse(right), rk, backend, scope.precision)
    return functions.ts_from_us(op(this=lus, expression=rus), backend == "duckdb")


def _epoch_ns(node: exp.Expr, kind: str | None) -> exp.Expr:
    """DuckDB: nanoseconds since the epoch of a timestamp, or an integer epoch of a ns database."""
    if kind == "ts":
        return exp.Anonymous(this="epoch_ns", expressions=[node])
    return exp.Cast(this=node, to=exp.DataType.build("BIGINT"))


def _epoch_operands(node: exp.Expr, backend: str, scope: Scope, recurse: Recurse) -> exp.Expr:
    """A comparison of a timestamp with an integer expression (``ts > 1668073288000 + 500``): the
    integer is an epoch in the database precision, as TDengine reads it (literals alone are made
    timestamp literals by :func:`normalize`). Returns ``node`` itself when no operand needs it."""
    left, right = node.this, node.expression
    lk, rk = functions.kind_of(left, scope), functions.kind_of(right, scope)
    if {lk, rk} != {"ts", "int"}:
        return node
    left, right = recurse(left), recurse(right)
    if rk == "int":
        right = _epoch_timestamp(right, backend, scope.precision)
    else:
        left = _epoch_timestamp(left, backend, scope.precision)
    return type(node)(this=left, expression=right)


def _epoch_timestamp(node: exp.Expr, backend: str, precision: str) -> exp.Expr:
    """The timestamp of integer epoch ``node`` counted in ``precision`` (exact in ns on DuckDB)."""
    if backend == "duckdb" and precision == "ns":
        return exp.Anonymous(this="make_timestamp_ns", expressions=[_epoch_ns(node, "int")])
    return functions.ts_from_us(_epoch_us(node, "int", backend, precision), backend == "duckdb")


def check_match(node: exp.RegexpLike, scope: Scope) -> None:
    """TDengine's rules of ``a MATCH 'p'`` / ``a NMATCH 'p'`` (scalar.c ``sclGetCompOperatorResType``):
    the left operand a string (VARCHAR / NCHAR / tbname), the right a string constant (or NULL)
    holding a valid POSIX extended regular expression; matching is a search (``regexec``), as
    DuckDB's ``regexp_matches`` and Spark's ``RLIKE`` do. Perl-only syntax (``(?...)``
    groups, back-references) is not POSIX ERE.

    Raises:
        SqlError: ``0x0200`` (TSDB_CODE_TSC_INVALID_OPERATION) for the operand types, ``0x2681``
            (TSDB_CODE_PAR_REGULAR_EXPRESSION_ERROR) for the pattern, positioned at it.
    """
    left, right = node.this, node.expression
    if isinstance(left, exp.Column) and not left.table:
        t = scope.columns.get(left.name.lower())
        if t is not None and not t.is_string:
            raise SqlError(
                f"Invalid operation: MATCH / NMATCH need a string operand, {left.name} is {t.name}",
                offset=offset_of(left),
                code=Code.INVALID_OPERATION,
            )
    if isinstance(right, exp.Null):
        return
    if not (isinstance(right, exp.Literal) and right.is_string):
        raise SqlError(
            "Invalid operation: the right operand of MATCH / NMATCH is a string constant",
            offset=offset_of(right) or offset_of(node),
            code=Code.INVALID_OPERATION,
        )
    pattern = right.this
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # POSIX classes ([[:upper:]]) are "possible nested sets"
            re.compile(pattern)
        bad = "(?" in pattern or re.search(r"\\[1-9]", pattern) is not None
        # what POSIX regcomp (and DuckDB's RE2) reject although Python compiles it
        bad = bad or any(n not in _POSIX_CLASSES for n in re.findall(r"\[:(\w*):\]", pattern))
        bad = bad or any(
            int(n) > 1000 for n in re.findall(r"\{(\d+)", pattern) + re.findall(r",(\d+)\}", pattern)
        )
    except re.error:
        bad = True
    if bad:
        raise SqlError(
            f"Syntax error in regular expression: {pattern!r}",
            offset=offset_of(right),
            code=Code.REGULAR_EXPRESSION_ERROR,
        )


def _backend_rewrite(expr: exp.Expr, backend: str, scope: Scope) -> exp.Expr:
    def recurse(arg: exp.Expr) -> exp.Expr:
        return arg.transform(visit, copy=False)

    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.RegexpLike):
            check_match(node, scope)
            return node
        if isinstance(node, exp.Interval):
            _interval_check(node)
            return node
        if json_ops.handles(node):  # JSON tags: ->, CONTAINS and what compares a -> value
            return json_ops.rewrite(node, backend, scope)
        decimal_ops.promote(node, scope)  # DECIMAL with a float or string operand is DOUBLE
        binary_ops.bind_constants(node, scope)  # '\x..' / WKT constants against VARBINARY, GEOMETRY
        if isinstance(node, exp.Add | exp.Sub) and not node.meta.get("td_ts_arith"):
            node.meta["td_ts_arith"] = True
            return timestamp_arithmetic(node, backend, scope, recurse)
        if isinstance(node, _CMP):
            return _epoch_operands(node, backend, scope, recurse)
        spec = aggs.spec_of(node)
        if spec is not None:
            aggs.check_types(node, spec.name, scope)
            if spec.name in aggs.DUCKDB_AGGREGATES:
                return _duckdb_aggregate(node, spec.name, backend, scope)
        if functions.lookup(node) is not None:  # single-row functions, ``%`` included (MOD)
            return functions.rewrite(node, backend, scope, lambda arg: arg.transform(visit, copy=False))
        if isinstance(node, exp.Div) and not node.meta.get("td_safe"):
            # division by zero is NULL on both backends (Spark's ANSI mode would fail a stream)
            node.meta["td_safe"] = True
            node.set("expression", exp.Nullif(this=node.expression, expression=exp.Literal.number(0)))
            return node
        name = func_name(node)
        if name is None:
            return node
        args = list(node.expressions) if isinstance(node, exp.Anonymous) else None
        if name == "spread" and args:
            return exp.Paren(
                this=exp.Sub(this=exp.Max(this=args[0]), expression=exp.Min(this=args[0].copy()))
            )
        if name in ("first", "last", "last_row"):
            arg = node.this if not isinstance(node, exp.Anonymous) else (args[0] if args else None)
            if arg is None or scope.ts_column is None:
                raise SqlError(f"{name}() needs one column argument", code=Code.INVALID_FUNCTION)
            ts = exp.column(scope.ts_column, quoted=True)
            fn = "arg_min" if name == "first" else "arg_max"
            if name == "last_row":
                fn = "arg_max_null"  # DuckDB's arg_max skips NULL values; last_row keeps them
            if backend == "spark":
                fn = "min_by" if name == "first" else "max_by"
            # order by (ts, value): rows at the same instant pick the smaller (first) or larger
            # (last, last_row; a value before NULL) value, as the engine does
            parts: list[exp.Expr] = [ts, arg.copy()]
            if name == "last_row":
                parts.insert(1, exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null())))
            if scope.key_column is not None:  # a composite key orders rows of one timestamp
                parts.insert(1, exp.column(scope.key_column, quoted=True))
            key = (
                exp.Anonymous(this="struct", expressions=parts)
                if backend == "spark"
                else exp.Tuple(expressions=parts)
            )
            call = exp.Anonymous(this=fn, expressions=[arg.copy(), key])
            if name == "last_row":
                return call
            return exp.Filter(
                this=call,
                expression=exp.Where(this=exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null()))),
            )
        return node

    return expr.transform(visit, copy=False)


def _duckdb_aggregate(node: exp.Expr, name: str, backend: str, scope: Scope) -> exp.Expr:
    """A registry aggregate computed by DuckDB (:func:`aggregate_functions.aggregate_sql`), as
    raw backend text; Spark computes none of them (windows run on the engine)."""
    if backend != "duckdb":
        raise SqlError(f"function {name} is not supported in this context", code=Code.NOT_SUPPORTED)

    def sql_of(arg: exp.Expr) -> str:
        return _backend_rewrite(arg.copy(), backend, scope).sql(dialect=backend, identify=True)

    text = aggs.aggregate_sql(node, name, sql_of, scope)
    return exp.Var(this=text) if text is not None else node


def to_sql(expr: exp.Expr, backend: str, scope: Scope) -> str:
    """Backend SQL text for a TDengine expression (or query, its tables bound to backend views).

    Raises:
        SqlError: what is not TDengine's SQL (:func:`spark_workers.sql.sandbox.check_expression`:
            ``0x264D`` unknown function, ``0x2644`` table function, ``0x2600`` other constructs;
            offsets point into the statement the tree was parsed from), or a function's own rule.
        ValueError: unknown backend.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend}")
    _refuse_td_joins(expr)
    check_expression(expr)
    if isinstance(expr, exp.Select) and row_functions.row_calls(expr):
        return row_functions.select_sql(expr, backend, scope, to_sql)
    expr = expr.copy()
    for sel in list(expr.find_all(exp.Select)):
        if sel is not expr and row_functions.row_calls(sel):  # a subquery's: its own text
            sel.replace(exp.Var(this=row_functions.select_sql(sel, backend, scope, to_sql)))
        else:
            row_functions.selection_rule(sel, scope)
    e = _backend_rewrite(normalize(expr, scope), backend, scope)
    return e.sql(dialect=backend, identify=True)


def _refuse_td_joins(expr: exp.Expr) -> None:
    """SEMI/ANTI/ASOF/WINDOW joins have no plain SQL form: only ``query/joins.py`` runs them (an
    interactive SELECT and a 3.3.7 stream's computation both plan them there, in their outermost
    query, TDengine "Nested Join and Multi-table Join Limitations"); one reaching the translator
    any other way is refused, never read as the LEFT/RIGHT JOIN ``sqlglot`` holds.

    Raises:
        SqlError: ``0x2664`` at the join."""
    for j in expr.find_all(exp.Join):
        spec = join_spec(j)
        if spec.kind:
            raise SqlError(
                f"Not supported join since '{spec.side} {spec.kind.upper()} JOIN is read in the "
                "outermost query only'",
                offset=spec.span.start if spec.span else None,
                code=Code.NOT_SUPPORT_JOIN,
            )


def to_tree(expr: exp.Expr, backend: str, scope: Scope, *, checked: bool = True) -> exp.Expr:
    """:func:`to_sql` as a tree, for a query tdweb composes around it (``query/joins.py``);
    ``checked=False`` skips the allow-list for trees tdweb built itself (their user parts passed
    it with the statement). Raises as :func:`to_sql`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend}")
    if checked:
        _refuse_td_joins(expr)
        check_expression(expr)
    return _backend_rewrite(normalize(expr, scope), backend, scope)
