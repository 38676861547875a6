"""FILL on INTERVAL window results (TDengine "FILL Clause" and "Time Windows", seed 000:
"The definition of the window is exactly the same as in the time-series data characteristic
query").

A window query ``... INTERVAL(i) [SLIDING(s)] FILL(mode[, v...])`` outputs a row for every window
of the query's time range, also the windows without rows (``filled`` rows), and replaces the
missing values of its *fill columns* — the select items that read an aggregate; ``_wstart``,
``_wend``, ``_wduration``, constants and PARTITION BY values are computed for every window as
usual. Per mode, on the rows of one group in window order:

- ``NONE``: no filling (the plain query).
- ``NULL`` / ``NULL_F``: filled rows hold NULL.
- ``VALUE`` / ``VALUE_F``: filled rows, and NULL values of windows with rows, hold the fill value
  of their column (one value per fill column, converted to the column's type: ``1.23`` in an
  integer column is 1).
- ``PREV``: a NULL (filled row or NULL result) takes the latest non-NULL value of an earlier
  window with rows.
- ``NEXT``: a NULL takes the value of the next window with rows (NULL after the last one).
- ``LINEAR``: a filled row between two windows with rows takes the linear interpolation of their
  values at its ``_wstart`` (integers truncated toward zero); NULL before the first and after the
  last window with rows, when a neighbour is NULL, and for strings and booleans.

Which windows: every window that intersects ``[start, end]`` of the WHERE condition on the primary
timestamp — from the earliest window containing ``start`` to the latest window starting at or
before ``end``. An ad-hoc query must bound both ends, else ``0x263B`` "Start(end) time of query
range required or time range too large", also when the range spans 10,000,000 windows or more
(months counted as 30 days, years as 365) or has no length. Except for the ``_F`` modes nothing is
filled when the range has no rows at all (the result is empty); ``NULL_F`` / ``VALUE_F`` fill
every window of the range then (one group: without PARTITION BY). Rules from TDengine's FILL
clause and its ``tfill.c`` / ``filloperator.c`` / ``parTranslater.c`` (``checkFill``), decisions in
docs/decisions.md ("FILL").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast
from spark_workers.sql.scope import PSEUDO_TS, Scope
from spark_workers.sql.translate import literal_epoch

FORCED = frozenset({"NULL_F", "VALUE_F"})
VALUE_MODES = frozenset({"VALUE", "VALUE_F"})
MAX_FILL_WINDOWS = 10_000_000  # TDengine's MAX_INTERVAL_TIME_WINDOW
RANGE_MESSAGE = "Start(end) time of query range required or time range too large"
# checkFill's window lengths of calendar units (parTranslater.c)
CALENDAR_MS = {"n": 30 * 86_400_000, "y": 365 * 86_400_000}
PER_MS = {"ms": 1, "us": 1_000, "ns": 1_000_000}


@dataclass(frozen=True)
class FillSpec:
    """A FILL clause checked against its query.

    Attributes:
        mode: NULL, NULL_F, VALUE, VALUE_F, PREV, NEXT or LINEAR (NONE has no spec).
        columns: indexes of the fill columns among the select items.
        values: the VALUE / VALUE_F constants, one per fill column.
    """

    mode: str
    columns: tuple[int, ...]
    values: tuple[exp.Expr, ...] = ()

    @property
    def forced(self) -> bool:
        return self.mode in FORCED


def reads_aggregate(e: exp.Expr) -> bool:
    """A stage-3 expression reading an aggregate result ``_a<i>`` (a fill column)."""
    return any(isinstance(c, exp.Column) and c.name.startswith("_a") for c in e.find_all(exp.Column))


def fill_spec(
    fill: ast.Fill | None, window: ast.Window | None, items: list[exp.Expr], sql: str
) -> FillSpec | None:
    """The FillSpec of a query's FILL clause (None without one or with FILL(NONE)).

    Args:
        fill: the clause.
        window: the query's window clause.
        items: the stage-3 expressions of the select items.

    Raises:
        SqlError: FILL after another window than INTERVAL (INVALID_WINDOW); VALUE without a value
            per fill column or values with another mode (WRONG_VALUE_TYPE), positioned at FILL.
    """
    if fill is None:
        return None
    at = fill.span.start if fill.span else None
    if not isinstance(window, ast.IntervalWindow):
        raise SqlError(
            "FILL can only follow an INTERVAL window", sql=sql, offset=at, code=Code.INVALID_WINDOW
        )
    if fill.mode == "NEAR":
        raise SqlError(
            "FILL(NEAR) is only supported by INTERP, not by window queries",
            sql=sql,
            offset=at,
            code=Code.NOT_SUPPORTED,
        )
    if fill.mode == "NONE" and not fill.values:
        return None
    columns = tuple(i for i, e in enumerate(items) if reads_aggregate(e))
    if fill.mode in VALUE_MODES:
        if len(fill.values) != len(columns):
            raise SqlError(
                f"Fill values number mismatch: FILL({fill.mode}, ...) needs one value for each of the "
                f"{len(columns)} fill columns (select items reading an aggregate), got {len(fill.values)}",
                sql=sql,
                offset=at,
                code=Code.WRONG_VALUE_TYPE,
            )
    elif fill.values:
        raise SqlError(f"FILL({fill.mode}) takes no values", sql=sql, offset=at, code=Code.WRONG_VALUE_TYPE)
    return FillSpec(fill.mode, columns, fill.values)


# ---------------------------------------------------------------------- the query's time range


def _is_ts(node: exp.Expr, ts_name: str) -> bool:
    return isinstance(node, exp.Column) and (
        node.name.lower() == ts_name.lower() or node.name.lower() in PSEUDO_TS
    )


def _conjuncts(e: exp.Expr) -> list[exp.Expr]:
    if isinstance(e, exp.Paren):
        return _conjuncts(e.this)
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]


_FLIP = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE, exp.EQ: exp.EQ}


def where_range(
    where: exp.Expr | None,
    ts_name: str,
    scope: Scope,
    evaluate: Callable[[exp.Expr], int | None] | None = None,
) -> tuple[int | None, int | None]:
    """``(start, end)`` (inclusive, precision units) the WHERE condition bounds the primary
    timestamp to, from its top-level AND terms ``ts >|>=|<|<=|= constant`` and ``ts BETWEEN a AND
    b`` (either side); None for a side without a bound. Constants other than integer and
    timestamp-string literals go through ``evaluate`` (None: not a bound)."""
    lo: int | None = None
    hi: int | None = None

    def value(node: exp.Expr) -> int | None:
        v = literal_epoch(node, scope)
        if v is None and evaluate is not None and not any(node.find_all(exp.Column)):
            v = evaluate(node)
        return v

    def bound(kind: type, v: int) -> None:
        nonlocal lo, hi
        if kind in (exp.GT, exp.GTE, exp.EQ):
            b = v + 1 if kind is exp.GT else v
            lo = b if lo is None else max(lo, b)
        if kind in (exp.LT, exp.LTE, exp.EQ):
            b = v - 1 if kind is exp.LT else v
            hi = b if hi is None else min(hi, b)

    for term in _conjuncts(where) if where is not None else []:
        if isinstance(term, exp.Between) and _is_ts(term.this, ts_name):
            a, b = value(term.args["low"]), value(term.args["high"])
            if a is not None:
                bound(exp.GTE, a)
            if b is not None:
                bound(exp.LTE, b)
            continue
        kind = type(term)
        if kind not in _FLIP:
            continue
        left, right = term.this, term.expression
        if _is_ts(left, ts_name):
            v = value(right)
        elif _is_ts(right, ts_name):
            v, kind = value(left), _FLIP[kind]
        else:
            continue
        if v is not None:
            bound(kind, v)
    return lo, hi


def check_range(
    lo: int | None, hi: int | None, window: ast.IntervalWindow, precision: str, sql: str
) -> tuple[int, int]:
    """The query's range for FILL: both ends bounded, and fewer than 10,000,000 windows (TDengine's
    ``checkFill``: the range over the INTERVAL, months as 30 days and years as 365).

    Raises:
        SqlError: ``0x263B`` "Start(end) time of query range required or time range too large",
            positioned at FILL's window clause.
    """
    at = window.span.start if window.span else None
    if lo is None or hi is None:
        missing = "start" if lo is None else "end"
        raise SqlError(
            f"{RANGE_MESSAGE}: FILL needs the query's time range, and the WHERE condition has no "
            f"{missing} time on the primary timestamp (e.g. WHERE ts >= '...' AND ts <= '...')",
            sql=sql,
            offset=at,
            code=Code.INVALID_FILL_TIME_RANGE,
        )
    iv = window.interval
    length = (
        iv.value * CALENDAR_MS[iv.unit] * PER_MS[precision] if iv.is_calendar else iv.in_precision(precision)
    )
    span = abs(hi - lo)
    if span == 0 or span // max(length, 1) >= MAX_FILL_WINDOWS:
        raise SqlError(
            f"{RANGE_MESSAGE}: FILL would output {span // max(length, 1):,} windows per group "
            f"(at most {MAX_FILL_WINDOWS - 1:,}) or the range has no length",
            sql=sql,
            offset=at,
            code=Code.INVALID_FILL_TIME_RANGE,
        )
    return lo, hi


# ---------------------------------------------------------------------- filling columns


def group_bounds(gi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by group index ``gi``: per row, the first row of its group and one past the
    last."""
    n = gi.shape[0]
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, gi[1:] != gi[:-1]])
    ends = np.r_[starts[1:], n]
    run = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, n]))
    return starts[run], ends[run]


def prev_index(ok: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per row, the latest earlier row of its group where ``ok`` holds (-1 if none)."""
    n = ok.shape[0]
    idx = np.where(ok, np.arange(n), -1)
    run = np.maximum.accumulate(idx) if n else idx
    prev = np.r_[-1, run[:-1]] if n else run
    return np.where(prev >= first, prev, -1)


def next_index(ok: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row, the next later row of its group where ``ok`` holds (-1 if none)."""
    n = ok.shape[0]
    big = np.iinfo(np.int64).max
    idx = np.where(ok, np.arange(n), big)
    run = np.minimum.accumulate(idx[::-1])[::-1] if n else idx
    nxt = np.r_[run[1:], big] if n else run
    return np.where(nxt < end, nxt, -1)


def _take(col: pa.Array, src: np.ndarray) -> pa.Array:
    """``col[src]`` with NULL where ``src`` is -1."""
    idx = pa.array(np.where(src >= 0, src, 0), pa.int64())
    out = col.take(idx)
    return pc.if_else(pa.array(src >= 0), out, pa.nulls(len(col), col.type))


def _interpolate(col: pa.Array, t: np.ndarray, p: np.ndarray, q: np.ndarray) -> pa.Array:
    """LINEAR: the value at ``t`` on the line through rows ``p`` and ``q`` (NULL when either is -1
    or NULL); integer and timestamp columns truncated toward zero."""
    typ = col.type
    is_ts = pa.types.is_timestamp(typ)
    num = col.cast(pa.int64()) if is_ts else col
    vals = num.cast(pa.float64()).to_numpy(zero_copy_only=False)
    valid = ~np.asarray(num.is_null().to_numpy(zero_copy_only=False), bool)
    ok = (p >= 0) & (q >= 0)
    pi, qi = np.where(ok, p, 0), np.where(ok, q, 0)
    ok &= valid[pi] & valid[qi]
    tp, tq = t[pi].astype(np.float64), t[qi].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = vals[pi] + (vals[qi] - vals[pi]) * (t.astype(np.float64) - tp) / (tq - tp)
    v = np.where(ok, v, 0.0)
    if pa.types.is_integer(typ) or is_ts:
        out = pa.array(np.trunc(v).astype(np.int64), pa.int64(), mask=~ok)
        return out.cast(typ) if not is_ts else out.cast(pa.int64()).cast(typ)
    return pa.array(v, pa.float64(), mask=~ok).cast(typ)


def fill_column(
    col: pa.Array,
    mode: str,
    data: np.ndarray,
    t: np.ndarray,
    first: np.ndarray,
    end: np.ndarray,
    value: pa.Scalar | None = None,
) -> pa.Array:
    """One fill column filled per ``mode`` (module docstring).

    Args:
        col: the column's values, rows sorted by (group, window start).
        data: per row, the window has rows (False: a filled row).
        t: per row, the window start (precision units).
        first / end: per row, its group's first row and one past its last.
        value: VALUE / VALUE_F: the fill value, already of the column's type.
    """
    null = np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
    if mode in ("NULL", "NULL_F"):
        return pc.if_else(pa.array(data), col, pa.nulls(len(col), col.type))
    if mode in VALUE_MODES:
        assert value is not None
        need = ~data | null
        return pc.if_else(pa.array(need), pa.array([value.as_py()] * len(col), col.type), col)
    if mode == "PREV":
        src = prev_index(data & ~null, first)
        need = ~data | null
        return pc.if_else(pa.array(need), _take(col, src), col)
    if mode == "NEXT":
        src = next_index(data, end)
        need = ~data | null
        return pc.if_else(pa.array(need), _take(col, src), col)
    assert mode == "LINEAR"
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_boolean(col.type):
        return pc.if_else(pa.array(data), col, pa.nulls(len(col), col.type))
    p, q = prev_index(data, first), next_index(data, end)
    return pc.if_else(pa.array(data), col, _interpolate(col, t, p, q))


def fill_value(v: object, typ: pa.DataType, precision: str = "ms") -> pa.Scalar:
    """A VALUE constant converted to a fill column's type (TDengine: the column's type decides;
    ``1.23`` into an integer column is 1, a number into a timestamp column is an epoch in the
    database precision; what does not convert is NULL)."""
    if pa.types.is_timestamp(typ) and isinstance(v, int | float) and not isinstance(v, bool):
        unit = {"ms": 1_000, "us": 1, "ns": 1}[precision] if typ.unit == "us" else 1
        return pa.scalar(int(v) * unit, pa.int64()).cast(typ)
    arr = pa.array([v])
    if pa.types.is_integer(typ) and pa.types.is_floating(arr.type):
        arr = pa.array([None if v is None else int(np.trunc(float(v)))], pa.int64())  # type: ignore[arg-type]
    try:
        return arr.cast(typ, safe=False)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return pa.scalar(None, typ)
