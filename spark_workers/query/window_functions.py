"""The functions of a window query beyond their first argument: constant parameters of the engine's
aggregates, and the functions a window query refuses.

Rules (TDengine SQL manual, "Functions"; ``parTranslater.c``):

- ``apercentile(x, p [, 'default' | 't-digest'])`` and ``percentile(x, p)``: ``0 <= p <= 100``;
  the engine computes one percentile per call (``percentile(x, p1, p2...)`` returns a JSON text in
  TDengine: ad-hoc queries compute it over their rows, ``query/window_rows.py``; the engine refuses
  it as NOT_SUPPORTED); ``t-digest`` is computed by the same 1000-bin histogram as
  ``default`` (both approximations, within TDengine's error);
- ``elapsed(ts [, unit])``: ``ts`` is the table's primary timestamp; ``unit`` one of 1b, 1u, 1a,
  1s, 1m, 1h, 1d, 1w, not finer than the database precision (default: the precision);
- ``leastsquares(x, start, step)``: numeric constants;
- indefinite-rows functions (diff, csum, derivative, mavg, statecount, stateduration, tail,
  unique) in a window query: TDengine's ``0x264F`` "%s function is not supported in window query
  or group query";
- multi-row functions TDengine allows in windows but the engine, which outputs one row per window,
  does not compute (top, bottom, sample, histogram): an ad-hoc query computes them over its rows
  (``query/window_rows.py``), a stream's window computation refuses them (NOT_SUPPORTED naming
  them); the same for ``percentile`` with several p.
"""

from __future__ import annotations

from sqlglot import exp

from spark_workers.duration import NS_PER_PRECISION, Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql.ast import offset_of
from spark_workers.sql.scope import func_name

INDEFINITE_ROWS = frozenset(
    {"diff", "csum", "derivative", "mavg", "statecount", "stateduration", "tail", "unique"}
)
MULTI_ROWS_NOT_SUPPORTED = frozenset({"top", "bottom", "sample", "histogram"})
_TIME_UNITS = ("b", "u", "a", "s", "m", "h", "d", "w")


def refuse_window_functions(sel: exp.Expr, sql: str, *, multi_rows: bool = True) -> None:
    """Refuse the functions a window query cannot hold (module docstring), at the call; with
    ``multi_rows`` False the multi-row functions pass (an ad-hoc query computes them per row,
    ``query/window_rows.py``).

    Raises:
        SqlError: NOT_ALLOWED_FUNC (0x264F) or NOT_SUPPORTED (0x0100).
    """
    for node in sel.walk():
        name = func_name(node)
        if isinstance(node, exp.Aliases) and isinstance(node.this, exp.Column):
            name = node.this.name.lower()  # sqlglot reads ``unique(v)`` as a column with aliases
        if name in INDEFINITE_ROWS:
            raise SqlError(
                f"{name} function is not supported in window query or group query",
                sql=sql,
                offset=offset_of(node),
                code=Code.NOT_ALLOWED_FUNC,
            )
        if multi_rows and name in MULTI_ROWS_NOT_SUPPORTED:
            raise SqlError(
                f"{name}() returns several rows per window: not supported in a stream's window computation",
                sql=sql,
                offset=offset_of(node),
                code=Code.NOT_SUPPORTED,
            )


def _error(node: exp.Expr, sql: str, message: str, code: int) -> SqlError:
    return SqlError(message, sql=sql, offset=offset_of(node), code=code)


def _number(e: exp.Expr) -> float | None:
    """A numeric constant (``5``, ``-0.5``) or None."""
    if isinstance(e, exp.Neg):
        v = _number(e.this)
        return -v if v is not None else None
    if isinstance(e, exp.Literal) and not e.is_string:
        try:
            return float(e.this)
        except ValueError:
            return None
    return None


def _args(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    return [a for a in [node.this, *node.args.get("expressions", [])] if isinstance(a, exp.Expr)]


def aggregate_params(
    fname: str, node: exp.Expr, *, ts_column: str, precision: str, sql: str
) -> tuple[float, ...]:
    """The constant parameters (``AggSpec.params``) of aggregate call ``node`` of ``fname``.

    Raises:
        SqlError: FUNC_PARA_NUM (argument count), FUNC_PARA_VALUE (a p outside 0..100, an unknown
            algorithm or time unit), FUNC_PARA_TYPE (elapsed over another column), NOT_SUPPORTED
            (several percentiles in one call).
    """
    args = _args(node)
    if fname in ("percentile", "apercentile"):
        return (_percentile_p(fname, node, args, sql),)
    if fname == "leastsquares":
        if len(args) != 3:
            raise _error(node, sql, "Invalid number of parameters : leastsquares", Code.FUNC_PARA_NUM)
        vals = [_number(a) for a in args[1:]]
        if any(v is None for v in vals):
            raise _error(node, sql, "Invalid parameter data type : leastsquares", Code.FUNC_PARA_TYPE)
        return (float(vals[0] or 0.0), float(vals[1] or 0.0))
    if fname == "elapsed":
        return (float(_elapsed_unit(node, args, ts_column, precision, sql)),)
    if fname == "irate":
        return (float(1_000_000_000 // NS_PER_PRECISION[precision]),)
    if len(args) > 1 and fname not in ("count", "count_distinct"):
        raise _error(node, sql, f"Invalid number of parameters : {fname}", Code.FUNC_PARA_NUM)
    return ()


def _percentile_p(fname: str, node: exp.Expr, args: list[exp.Expr], sql: str) -> float:
    if len(args) < 2:
        raise _error(node, sql, f"Invalid number of parameters : {fname}", Code.FUNC_PARA_NUM)
    if fname == "percentile" and len(args) > 2:
        raise _error(
            node,
            sql,
            "percentile() with several p is not supported in a stream's window computation",
            Code.NOT_SUPPORTED,
        )
    if fname == "apercentile" and len(args) > 3:
        raise _error(node, sql, "Invalid number of parameters : apercentile", Code.FUNC_PARA_NUM)
    if fname == "apercentile" and len(args) == 3:
        algo = args[2]
        if not (
            isinstance(algo, exp.Literal) and algo.is_string and algo.this.lower() in ("default", "t-digest")
        ):
            raise _error(node, sql, "Invalid parameter value : apercentile", Code.FUNC_PARA_VALUE)
    p = _number(args[1])
    if p is None:
        raise _error(node, sql, f"Invalid parameter data type : {fname}", Code.FUNC_PARA_TYPE)
    if not 0 <= p <= 100:
        raise _error(node, sql, f"Invalid parameter value : {fname}", Code.FUNC_PARA_VALUE)
    return p


def _elapsed_unit(node: exp.Expr, args: list[exp.Expr], ts_column: str, precision: str, sql: str) -> int:
    """The unit of elapsed() in precision units."""
    if not 1 <= len(args) <= 2:
        raise _error(node, sql, "Invalid number of parameters : elapsed", Code.FUNC_PARA_NUM)
    col = args[0]
    if not (isinstance(col, exp.Column) and col.name.lower() in (ts_column.lower(), "_c0", "_rowts")):
        raise _error(
            node,
            sql,
            "The first parameter of the ELAPSED function can only be the timestamp primary key",
            Code.FUNC_PARA_TYPE,
        )
    if len(args) == 1:
        return 1
    raw = args[1].meta.get("td_duration") if isinstance(args[1], exp.Interval) else None
    unit = Duration.parse(raw) if raw and Duration.is_literal(raw) else None
    if unit is None or unit.value != 1 or unit.unit not in _TIME_UNITS:
        raise _error(
            node,
            sql,
            "ELAPSED function time unit parameter should be one of the following: "
            "[1b, 1u, 1a, 1s, 1m, 1h, 1d, 1w]",
            Code.FUNC_PARA_VALUE,
        )
    if unit.ns < NS_PER_PRECISION[precision]:
        raise _error(
            node,
            sql,
            f"time unit {raw} is finer than the database precision {precision}",
            Code.FUNC_PARA_VALUE,
        )
    return unit.ns // NS_PER_PRECISION[precision]
