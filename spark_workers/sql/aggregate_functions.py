"""TDengine's aggregate, selection and time-series functions: the one registry, argument rules
and their DuckDB translation for queries that are not window queries.

Source: TDengine SQL manual, "Functions" (sections Aggregate Functions, Selection Functions,
Time-Series Specific Functions; 3.3.x), and TDengine's ``builtinsimpl.c`` / ``tpercentile.c``
for output formats the manual leaves out (``percentile`` with several ``p``, ``histogram``,
``leastsquares``). Window queries (INTERVAL, STATE_WINDOW...) compute the engine's subset
(:data:`ENGINE_FUNCTIONS`) in ``spark_workers.engine``; everything else runs on DuckDB.

:data:`FUNCTIONS` maps a lower-case name to a :class:`FunctionSpec`: its class

- ``aggregate``: one value per group (``percentile``, ``twa``, ``elapsed``...);
- ``selection``: one row of the group; plain columns next to it come from that row (``max``,
  ``first``...; :mod:`spark_workers.sql.row_functions` applies the rule);
- ``multi-row``: several rows per group (``top``, ``tail``, ``unique``, ``histogram``...);
- ``time-series``: one value per input row, in timestamp order per table or PARTITION BY group
  (``diff``, ``csum``, ``mavg``, ``statecount``...).

Known differences from TDengine (docs/sql.md): ``apercentile`` is computed exactly (both
algorithms; an exact value is within any approximation's bound), ``hyperloglog`` is the exact
distinct count, ``mode`` picks the smallest of equally frequent values (TDengine: one at random;
the window engine picks the smallest too), ``sample`` picks rows at random as TDengine does,
``twa`` and ``irate`` of a non-window query use the rows' own first and last timestamps (no
interpolation to a WHERE range), ``leastsquares`` of fewer than two rows is NULL, ``histogram``
of no rows gives its bins with count 0.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.engine.aggregates import AGGREGATES
from spark_workers.errors import Code, SqlError, para_type_error
from spark_workers.sql.ast import offset_of
from spark_workers.sql.scope import Scope, func_name


@dataclass(frozen=True)
class FunctionSpec:
    """One TDengine function of the registry.

    Attributes:
        name: lower-case TDengine name.
        kind: ``aggregate`` | ``selection`` | ``multi-row`` | ``time-series``.
        min_args / max_args: arity (``0x2801`` outside).
        result: TDengine result type as the manual states it (``DOUBLE``, ``BIGINT``,
            ``VARCHAR``, ``input`` = the argument's type).
        numeric: the first argument must be numeric (``0x2802`` for strings / timestamps).
        backend: how it runs outside window queries: ``duckdb`` (an expression),
            ``rows`` (a query rewrite, :mod:`spark_workers.sql.row_functions`).
    """

    name: str
    kind: str
    min_args: int
    max_args: int
    result: str
    numeric: bool = True
    backend: str = "duckdb"

    @property
    def engine(self) -> bool:
        """Also computed by the window engine (``spark_workers.engine.aggregates.AGGREGATES``)."""
        return self.name in AGGREGATES


def _spec(name: str, kind: str, lo: int, hi: int, result: str, **kw: object) -> FunctionSpec:
    return FunctionSpec(name, kind, lo, hi, result, **kw)  # type: ignore[arg-type]


FUNCTIONS: dict[str, FunctionSpec] = {
    s.name: s
    for s in (
        # aggregates
        _spec("count", "aggregate", 1, 1, "BIGINT", numeric=False),
        _spec("sum", "aggregate", 1, 1, "BIGINT|DOUBLE"),
        _spec("avg", "aggregate", 1, 1, "DOUBLE"),
        _spec("spread", "aggregate", 1, 1, "DOUBLE", numeric=False),
        _spec("stddev", "aggregate", 1, 1, "DOUBLE"),
        _spec("stddev_pop", "aggregate", 1, 1, "DOUBLE"),
        _spec("var_pop", "aggregate", 1, 1, "DOUBLE"),
        _spec("percentile", "aggregate", 2, 11, "DOUBLE|VARCHAR"),
        _spec("apercentile", "aggregate", 2, 3, "DOUBLE"),
        _spec("twa", "aggregate", 1, 1, "DOUBLE"),
        _spec("irate", "aggregate", 1, 1, "DOUBLE"),
        _spec("elapsed", "aggregate", 1, 2, "DOUBLE", numeric=False),
        _spec("hyperloglog", "aggregate", 1, 1, "BIGINT", numeric=False),
        _spec("leastsquares", "aggregate", 3, 3, "VARCHAR"),
        _spec("histogram", "multi-row", 4, 4, "VARCHAR", backend="rows"),
        # selection functions
        _spec("min", "selection", 1, 1, "input", numeric=False),
        _spec("max", "selection", 1, 1, "input", numeric=False),
        _spec("first", "selection", 1, 1, "input", numeric=False),
        _spec("last", "selection", 1, 1, "input", numeric=False),
        _spec("last_row", "selection", 1, 1, "input", numeric=False),
        _spec("mode", "selection", 1, 1, "input", numeric=False),
        _spec("cols", "selection", 2, 64, "input", numeric=False, backend="rows"),
        _spec("top", "multi-row", 2, 2, "input", backend="rows"),
        _spec("bottom", "multi-row", 2, 2, "input", backend="rows"),
        _spec("sample", "multi-row", 2, 2, "input", numeric=False, backend="rows"),
        _spec("tail", "multi-row", 2, 3, "input", numeric=False, backend="rows"),
        _spec("unique", "multi-row", 1, 1, "input", numeric=False, backend="rows"),
        # time-series functions
        _spec("diff", "time-series", 1, 2, "BIGINT|DOUBLE", numeric=False, backend="rows"),
        _spec("csum", "time-series", 1, 1, "BIGINT|DOUBLE", backend="rows"),
        _spec("derivative", "time-series", 3, 3, "DOUBLE", backend="rows"),
        _spec("mavg", "time-series", 2, 2, "DOUBLE", backend="rows"),
        _spec("statecount", "time-series", 3, 3, "BIGINT", backend="rows"),
        _spec("stateduration", "time-series", 3, 4, "BIGINT", backend="rows"),
    )
}
ENGINE_FUNCTIONS = frozenset(n for n, s in FUNCTIONS.items() if s.engine)
ROW_FUNCTIONS = frozenset(n for n, s in FUNCTIONS.items() if s.backend == "rows" and n != "cols")
# names sqlglot parses into typed nodes that are not TDengine 3.3.7's (``variance(x)``: sample
# variance); ``std`` is STDDEV's alias (3.3.8)
NOT_TDENGINE_SPELLINGS = frozenset({"variance", "var_samp", "stddev_samp"})
STATE_OPERATORS = {"lt": "<", "gt": ">", "le": "<=", "ge": ">=", "ne": "<>", "eq": "="}
TIME_UNITS = frozenset("buasmhdw")
_HISTOGRAM_TYPES = ("user_input", "linear_bin", "log_bin")


def spec_of(node: exp.Expr) -> FunctionSpec | None:
    """The registry entry of a call node (``stddev_pop(x)`` included), or None."""
    if isinstance(node, exp.VariancePop):
        return FUNCTIONS["var_pop"]
    name = func_name(node)
    return FUNCTIONS.get(name) if name else None


def call_args(node: exp.Expr) -> list[exp.Expr]:
    """The arguments of a call as written (``count(*)`` has the one ``Star``)."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    args = [node.this] if isinstance(node.args.get("this"), exp.Expr) else []
    return args + [e for e in node.args.get("expressions") or [] if isinstance(e, exp.Expr)]


def constant(node: exp.Expr) -> float | str | Duration | None:
    """The value of a constant argument: a number, a string, a duration literal, else None."""
    if isinstance(node, exp.Paren):
        return constant(node.this)
    if isinstance(node, exp.Neg):
        v = constant(node.this)
        return -v if isinstance(v, float) else None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        return float(node.this)
    if isinstance(node, exp.Boolean):
        return 1.0 if node.this else 0.0
    if isinstance(node, exp.Interval) and node.meta.get("td_duration"):
        return Duration.parse(str(node.meta["td_duration"]))
    return None


def _err(message: str, node: exp.Expr, sql: str | None, code: int) -> SqlError:
    """An error at ``node``, else at the nearest enclosing node with a position (a duration
    literal has none: its call's)."""
    at: exp.Expr | None = node
    while at is not None and offset_of(at) is None:
        at = at.parent
    return SqlError(message, sql=sql, offset=offset_of(at) if at is not None else None, code=code)


def check_call(node: exp.Expr, name: str, sql: str | None) -> None:
    """TDengine's argument rules of a registry call, before anything runs: arity (``0x2801``
    "Invalid number of parameters : f"), constant arguments of the wrong kind (``0x2802``
    "Invalid parameter data type : f") or outside their range (``0x2803`` "Invalid parameter
    value : f"), positioned at the call (or the argument).

    Rules: the manual's Parameter Range / Usage notes of each function."""
    spec = FUNCTIONS[name]
    args = call_args(node)
    if name == "count" and isinstance(node, exp.Count):
        return
    if not spec.min_args <= len(args) <= spec.max_args:
        raise _err(f"Invalid number of parameters : {name}", node, sql, Code.FUNC_PARA_NUM)
    rule = _ARG_RULES.get(name)
    if rule is not None:
        rule(name, args, sql)


def _value_error(name: str, node: exp.Expr, sql: str | None) -> SqlError:
    return _err(f"Invalid parameter value : {name}", node, sql, Code.FUNC_PARA_VALUE)


def _number(
    name: str, arg: exp.Expr, sql: str | None, lo: float, hi: float, *, integer: bool = True
) -> float:
    v = constant(arg)
    if not isinstance(v, float):
        raise _err(f"Invalid parameter data type : {name}", arg, sql, Code.FUNC_PARA_TYPE)
    if (integer and v != int(v)) or not lo <= v <= hi:
        raise _value_error(name, arg, sql)
    return v


def _duration(name: str, arg: exp.Expr, sql: str | None, *, min_ns: int = 1) -> Duration:
    v = constant(arg)
    if not isinstance(v, Duration):
        raise _err(f"Invalid parameter data type : {name}", arg, sql, Code.FUNC_PARA_TYPE)
    if v.unit not in TIME_UNITS or v.value <= 0 or v.ns < min_ns:
        raise _value_error(name, arg, sql)
    return v


def _rule_percentile(name: str, args: list[exp.Expr], sql: str | None) -> None:
    for a in args[1:]:
        _number(name, a, sql, 0, 100, integer=False)


def _rule_apercentile(name: str, args: list[exp.Expr], sql: str | None) -> None:
    _number(name, args[1], sql, 0, 100, integer=False)
    if len(args) == 3:
        algo = constant(args[2])
        if not isinstance(algo, str):
            raise _err(f"Invalid parameter data type : {name}", args[2], sql, Code.FUNC_PARA_TYPE)
        if algo.lower() not in ("default", "t-digest"):
            raise _value_error(name, args[2], sql)


def _rule_k(lo: int, hi: int) -> Callable[[str, list[exp.Expr], str | None], None]:
    def rule(name: str, args: list[exp.Expr], sql: str | None) -> None:
        _number(name, args[1], sql, lo, hi)
        if len(args) > 2:  # tail's offset
            _number(name, args[2], sql, 0, 100)

    return rule


def _rule_diff(name: str, args: list[exp.Expr], sql: str | None) -> None:
    if len(args) == 2:
        _number(name, args[1], sql, 0, 3)


def _rule_derivative(name: str, args: list[exp.Expr], sql: str | None) -> None:
    _duration(name, args[1], sql, min_ns=1_000_000_000)
    _number(name, args[2], sql, 0, 1)


def _rule_elapsed(name: str, args: list[exp.Expr], sql: str | None) -> None:
    if not isinstance(args[0], exp.Column):
        raise _err(f"Invalid parameter data type : {name}", args[0], sql, Code.FUNC_PARA_TYPE)
    if len(args) == 2:
        _duration(name, args[1], sql)


def _rule_state(name: str, args: list[exp.Expr], sql: str | None) -> None:
    oper = constant(args[1])
    if not isinstance(oper, str):
        raise _err(f"Invalid parameter data type : {name}", args[1], sql, Code.FUNC_PARA_TYPE)
    if oper.lower() not in STATE_OPERATORS:
        raise _value_error(name, args[1], sql)
    _number(name, args[2], sql, -math.inf, math.inf, integer=False)
    if len(args) == 4:
        _duration(name, args[3], sql)


def _rule_leastsquares(name: str, args: list[exp.Expr], sql: str | None) -> None:
    for a in args[1:]:
        _number(name, a, sql, -math.inf, math.inf, integer=False)


def _rule_histogram(name: str, args: list[exp.Expr], sql: str | None) -> None:
    histogram_bins(name, args, sql)


def _rule_cols(name: str, args: list[exp.Expr], sql: str | None) -> None:
    inner = spec_of(args[0])
    if inner is None or inner.kind != "selection" or inner.name in ("cols", "mode"):
        raise _err(
            "Invalid parameter value : cols: the first argument must be a single-row selection function "
            "(min, max, first, last, last_row)",
            args[0],
            sql,
            Code.FUNC_PARA_VALUE,
        )


_ARG_RULES: dict[str, Callable[[str, list[exp.Expr], str | None], None]] = {
    "percentile": _rule_percentile,
    "apercentile": _rule_apercentile,
    "top": _rule_k(1, 100),
    "bottom": _rule_k(1, 100),
    "sample": _rule_k(1, 1000),
    "tail": _rule_k(1, 100),
    "mavg": _rule_k(1, 1000),
    "diff": _rule_diff,
    "derivative": _rule_derivative,
    "elapsed": _rule_elapsed,
    "statecount": _rule_state,
    "stateduration": _rule_state,
    "leastsquares": _rule_leastsquares,
    "histogram": _rule_histogram,
    "cols": _rule_cols,
}


def histogram_bins(
    name: str, args: list[exp.Expr], sql: str | None
) -> tuple[list[tuple[float, float]], bool]:
    """The bins ``(lower, upper]`` of ``histogram(expr, bin_type, bin_description, normalized)``
    and whether counts are normalized, as TDengine's ``getHistogramBinDesc`` builds them:
    ``user_input`` a strictly increasing JSON array; ``linear_bin`` / ``log_bin`` a JSON object
    of exactly four keys (start, width|factor, count 1..1000, infinity) giving count+1 edges,
    with -inf / +inf added at the ends when ``infinity`` is true.

    Raises:
        SqlError: ``0x2802`` non-constant arguments, ``0x2803`` an invalid description.
    """
    kind, desc, norm = (constant(a) for a in args[1:4])
    for a, v in zip(args[1:3], (kind, desc), strict=True):
        if not isinstance(v, str):
            raise _err(f"Invalid parameter data type : {name}", a, sql, Code.FUNC_PARA_TYPE)
    assert isinstance(kind, str) and isinstance(desc, str)
    if kind.lower() not in _HISTOGRAM_TYPES:
        raise _value_error(name, args[1], sql)
    if norm not in (0.0, 1.0):
        raise _value_error(name, args[3], sql)
    edges = _histogram_edges(kind.lower(), desc)
    if edges is None or len(edges) < 2:
        raise _value_error(name, args[2], sql)
    bins = [(min(a, b), max(a, b)) for a, b in itertools.pairwise(edges)]
    return bins, norm == 1.0


def _histogram_edges(kind: str, desc: str) -> list[float] | None:
    try:
        d = json.loads(desc)
    except ValueError:
        return None
    if isinstance(d, list):
        if kind != "user_input" or not d or not all(isinstance(v, int | float) for v in d):
            return None
        edges = [float(v) for v in d]
        return edges if all(b > a for a, b in itertools.pairwise(edges)) else None
    if not isinstance(d, dict) or len(d) != 4 or kind == "user_input":
        return None
    start, count, inf = d.get("start"), d.get("count"), d.get("infinity")
    step = d.get("width") if kind == "linear_bin" else d.get("factor")
    if not isinstance(start, int | float) or not isinstance(count, int) or not isinstance(inf, bool):
        return None
    if not isinstance(step, int | float) or not 0 < count <= 1000:
        return None
    if kind == "linear_bin":
        if step == 0:
            return None
        edges = [start + i * step for i in range(count + 1)]
    else:
        if start == 0 or step <= 0 or step == 1:
            return None
        edges = [start * step**i for i in range(count + 1)]
    if any(math.isinf(e) for e in edges):
        return None
    if inf:
        lo, hi = -math.inf, math.inf
        if edges[0] > edges[-1]:
            lo, hi = hi, lo
        edges = [lo, *edges, hi]
    return edges


def expand_item(item: exp.Expr, columns: list[str]) -> list[tuple[exp.Expr, str]] | None:
    """The select items one item stands for, with their output names, or None for an ordinary
    item: ``first(*)`` / ``last(*)`` / ``last_row(*)`` is the function of every column in
    ``columns`` (a supertable's normal columns: TDengine's default
    ``multiResultFunctionStarReturnTags`` 0), named ``first(ts)``, ``first(c1)``...;
    ``cols(f(x), e1, e2)`` is ``cols(f(x), e1)``, ``cols(f(x), e2)`` named ``e1``, ``e2``
    (TDengine SQL manual, "FIRST", "COLS")."""
    spec = spec_of(item)
    if spec is None:
        return None
    args = call_args(item)
    if spec.name in ("first", "last", "last_row") and len(args) == 1 and isinstance(args[0], exp.Star):
        return [
            (exp.Anonymous(this=spec.name, expressions=[exp.column(c, quoted=True)]), f"{spec.name}({c})")
            for c in columns
        ]
    if spec.name == "cols" and len(args) >= 2:
        return [
            (exp.Anonymous(this="cols", expressions=[args[0].copy(), e.copy()]), e.sql(dialect="mysql"))
            for e in args[1:]
        ]
    return None


# ------------------------------------------------------------------ DuckDB translation


def arg_kind(node: exp.Expr, scope: Scope) -> str | None:
    """``num`` / ``unsigned`` / ``str`` / ``ts`` / ``bool`` of a column argument (by the scope's
    types), else None."""
    if not isinstance(node, exp.Column) or node.table:
        return None
    t = scope.columns.get(node.name.lower())
    if t is None:
        return "ts" if scope.is_timestamp(node) else None
    if t.name == "TIMESTAMP":
        return "ts"
    if t.name == "BOOL":
        return "bool"
    if t.unsigned:
        return "unsigned"
    return "str" if t.is_string else "num"


def check_types(node: exp.Expr, name: str, scope: Scope) -> None:
    """Refuse a numeric-only function over a string, timestamp or bool column: ``0x2802``
    "Invalid parameter data type : f" (TDengine's "Applicable Data Types: Numeric types");
    ``spread`` also takes timestamps, ``elapsed`` only the timestamp primary key, ``diff``
    numbers, timestamps and bools."""
    spec = FUNCTIONS[name]
    args = call_args(node)
    if not args:
        return
    kind = arg_kind(args[0], scope)
    refused: tuple[str, ...] = ()
    if spec.numeric:
        refused = ("str", "ts", "bool")
        kind = "num" if kind == "unsigned" else kind
    elif name == "spread":
        refused = ("str", "bool")
    elif name == "diff":  # TDengine's diff.py: unsigned columns are refused too
        refused = ("str", "unsigned")
    elif name == "elapsed":
        refused = ("str", "num", "bool", "unsigned")
    if kind in refused:
        raise para_type_error(name)


def _epoch_us(ts_sql: str) -> str:
    return f"epoch_us({ts_sql})"


def aggregate_sql(node: exp.Expr, name: str, sql_of: Callable[[exp.Expr], str], scope: Scope) -> str | None:
    """DuckDB text of an aggregate registry call whose argument texts ``sql_of`` gives, or None
    when the call is left to the translator (the engine's functions). Formulas:

    - ``percentile(x, p)``: ``quantile_cont`` (TDengine interpolates linearly between the two
      nearest ranks, ``tpercentile.c``); several ``p``: VARCHAR ``[v1, v2]`` with ``%.6lf``;
    - ``twa``: trapezoids between consecutive non-NULL points divided by the time covered (one
      point: its value);
    - ``irate``: (last - previous) / seconds between them, or last / seconds when the value
      dropped (a counter reset); fewer than two points: 0;
    - ``elapsed(ts, u)``: (last ts - first ts) / u, u defaults to the database precision;
    - ``leastsquares(x, a, b)``: least squares of y = x over x-axis a, a+b, ... in time order,
      as ``{slop:%.6lf, intercept:%.6lf}``.
    """
    args = call_args(node)
    if name in ("percentile", "apercentile"):
        x = sql_of(args[0])
        ps = [float(constant(a)) for a in (args[1:] if name == "percentile" else args[1:2])]  # type: ignore[arg-type]
        if len(ps) == 1:
            return f"CAST(quantile_cont({x}, {ps[0] / 100!r}) AS DOUBLE)"
        parts = ", ".join(f"printf('%.6f', CAST(quantile_cont({x}, {p / 100!r}) AS DOUBLE))" for p in ps)
        return f"('[' || array_to_string([{parts}], ', ') || ']')"
    if name == "hyperloglog":
        return f"count(DISTINCT {sql_of(args[0])})"
    if name == "var_pop":
        return f"var_pop({sql_of(args[0])})"
    if name == "mode":  # the smallest of equally frequent values, as the window engine picks
        h = f"histogram({sql_of(args[0])})"
        return f"map_keys({h})[list_position(map_values({h}), list_max(map_values({h})))]"
    if scope.ts_column is None:
        raise SqlError(f"{name}() needs a table with a timestamp column", code=Code.INVALID_FUNCTION)
    ts = f'"{scope.ts_column}"'
    if name == "elapsed":
        unit = constant(args[1]) if len(args) > 1 else None
        us = (
            unit.ns / 1000
            if isinstance(unit, Duration)
            else {"ms": 1000, "us": 1, "ns": 0.001}[scope.precision]
        )
        return f"CAST((epoch_us(max({ts})) - epoch_us(min({ts}))) / {us!r} AS DOUBLE)"
    return _ordered_sql(name, args, sql_of(args[0]), ts, scope)


def _ordered_sql(name: str, args: list[exp.Expr], x: str, ts: str, scope: Scope) -> str | None:
    """``twa`` / ``irate`` / ``leastsquares`` of ``x`` (DuckDB text) over the rows in time order."""
    point = f"{{'t': {_epoch_us(ts)}, 'v': CAST({x} AS DOUBLE)}}"
    key = f', "{scope.key_column}"' if scope.key_column else ""
    points = f"list({point} ORDER BY {ts}{key}) FILTER (WHERE {x} IS NOT NULL)"
    if key:  # a composite key: the smallest key of a timestamp only (manual, TWA / IRATE)
        points = f"list_filter({points}, lambda p, i: i = 1 OR ({points})[i - 1].t <> p.t)"
    if name == "twa":
        area = (
            f"list_sum(list_transform(range(1, len({points})), lambda i: "
            f"({points}[i].v + {points}[i + 1].v) * ({points}[i + 1].t - {points}[i].t) / 2.0))"
        )
        return (
            f"(CASE WHEN len({points}) = 1 THEN {points}[1].v "
            f"ELSE {area} / NULLIF({points}[-1].t - {points}[1].t, 0) END)"
        )
    if name == "irate" and key:
        a, b = f"({points})[-1]", f"({points})[-2]"
        return (
            f"(CASE WHEN len({points}) < 2 THEN 0.0 ELSE "
            f"(CASE WHEN {a}.v < {b}.v THEN {a}.v ELSE {a}.v - {b}.v END) "
            f"/ NULLIF(({a}.t - {b}.t) / 1e6, 0) END)"
        )
    if name == "irate":
        last2 = (
            f"arg_max({{'t': {_epoch_us(ts)}, 'v': CAST({x} AS DOUBLE)}}, {ts}, 2) "
            f"FILTER (WHERE {x} IS NOT NULL)"
        )
        a, b = f"{last2}[1]", f"{last2}[2]"
        return (
            f"(CASE WHEN len({last2}) < 2 THEN 0.0 ELSE "
            f"(CASE WHEN {a}.v < {b}.v THEN {a}.v ELSE {a}.v - {b}.v END) "
            f"/ NULLIF(({a}.t - {b}.t) / 1e6, 0) END)"
        )
    if name == "leastsquares":
        start, step = (float(constant(a)) for a in args[1:3])  # type: ignore[arg-type]
        ys = f"list(CAST({x} AS DOUBLE) ORDER BY {ts}) FILTER (WHERE {x} IS NOT NULL)"
        n = f"CAST(len({ys}) AS DOUBLE)"
        sy = f"list_sum({ys})"
        sxy = f"list_sum(list_transform({ys}, lambda y, i: y * ({start!r} + (i - 1) * {step!r})))"
        sx = f"({n} * {start!r} + {step!r} * {n} * ({n} - 1) / 2)"
        sxx = (
            f"({n} * {start!r} * {start!r} + 2 * {start!r} * {step!r} * {n} * ({n} - 1) / 2 "
            f"+ {step!r} * {step!r} * ({n} - 1) * {n} * (2 * {n} - 1) / 6)"
        )
        slope = f"(({n} * {sxy} - {sx} * {sy}) / NULLIF({n} * {sxx} - {sx} * {sx}, 0))"
        intercept = f"(({sy} - {slope} * {sx}) / {n})"
        return f"printf('{{slop:%.6f, intercept:%.6f}}', {slope}, {intercept})"
    return None


DUCKDB_AGGREGATES = frozenset(
    {
        "percentile",
        "apercentile",
        "hyperloglog",
        "var_pop",
        "mode",
        "elapsed",
        "twa",
        "irate",
        "leastsquares",
    }
)
