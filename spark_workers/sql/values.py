"""Constant expressions in INSERT values, tag values and DELETE bounds.

A whitelisted evaluator over sqlglot nodes (STYLE.md rule 6: never ``eval``): literals, NULL,
TRUE/FALSE, unary minus, ``now`` / ``today()``, and ``+``/``-`` of a timestamp and a duration.
Values are checked against the target column's TDengine type.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from spark_workers import timestamps
from spark_workers.duration import NS_PER_PRECISION, Duration
from spark_workers.errors import Code, SqlError
from spark_workers.tdtypes import TdType


class Now:
    """A fixed ``now`` for one statement (all rows of one INSERT see the same now)."""

    def __init__(self, ns: int | None = None) -> None:
        self.ns = ns if ns is not None else timestamps.now("ns")

    def at(self, precision: str) -> int:
        return self.ns // NS_PER_PRECISION[precision]


def _duration_of(node: exp.Expr) -> Duration | None:
    if isinstance(node, exp.Interval):
        raw = node.meta.get("td_duration")
        if raw:
            return Duration.parse(raw)
    return None


def constant(node: exp.Expr, precision: str, tz: str, now: Now) -> Any:
    """Python value of a constant expression; timestamps stay as ``("ts", epoch)`` tuples only when
    produced by ``now``/arithmetic, so the column type decides how plain literals are read."""
    if isinstance(node, exp.Paren):
        return constant(node.this, precision, tz, now)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(node, exp.Neg):
        v = constant(node.this, precision, tz, now)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return -v
        raise SqlError("minus applies to numbers only", code=Code.WRONG_VALUE_TYPE)
    if isinstance(node, exp.CurrentTimestamp):
        return ("ts", now.at(precision))
    if isinstance(node, exp.Anonymous) and str(node.name).lower() == "today":
        day = 86_400 * 1_000_000_000 // NS_PER_PRECISION[precision]
        return ("ts", now.at(precision) // day * day)
    if isinstance(node, exp.Add | exp.Sub):
        left = constant(node.this, precision, tz, now)
        dur = _duration_of(node.expression)
        if dur is None:
            right = constant(node.expression, precision, tz, now)
            if isinstance(left, int | float) and isinstance(right, int | float):
                return left + right if isinstance(node, exp.Add) else left - right
            raise SqlError(
                "only a timestamp plus or minus a duration is allowed here", code=Code.WRONG_VALUE_TYPE
            )
        base = left[1] if isinstance(left, tuple) else left
        if isinstance(base, str):
            base = timestamps.parse_literal(base, precision, tz)
        if not isinstance(base, int):
            raise SqlError("a duration can only be added to a timestamp", code=Code.WRONG_VALUE_TYPE)
        delta = dur.in_precision(precision)
        return ("ts", base + delta if isinstance(node, exp.Add) else base - delta)
    raise SqlError(f"not a constant: {node.sql()}", code=Code.WRONG_VALUE_TYPE)


def coerce(value: Any, t: TdType, precision: str, tz: str, what: str) -> Any:
    """Convert a constant to storage form for a column of type ``t``.

    Returns int epoch (precision units) for TIMESTAMP, int/float/bool/str otherwise, None for NULL.

    Raises:
        SqlError: WRONG_VALUE_TYPE / VALUE_OUT_OF_RANGE naming ``what`` (e.g. "column a INT").
    """
    if value is None:
        return None
    name = t.name
    if isinstance(value, tuple):  # ("ts", epoch) from now/arithmetic
        if name == "TIMESTAMP":
            return value[1]
        if not t.is_integer:
            raise SqlError(f"a timestamp does not fit {what}", code=Code.WRONG_VALUE_TYPE)
        value = value[1]  # an epoch into an integer column: range-checked below (now() into INT)
    if name == "TIMESTAMP":
        if isinstance(value, bool):
            raise SqlError(f"invalid timestamp {value!r} for {what}", code=Code.WRONG_VALUE_TYPE)
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if value != int(value):
                raise SqlError(f"invalid timestamp {value!r} for {what}", code=Code.WRONG_VALUE_TYPE)
            return int(value)
        return timestamps.parse_literal(str(value), precision, tz)
    if name == "BOOL":
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return value != 0
        low = str(value).strip().lower()
        if low in ("true", "false"):
            return low == "true"
        raise SqlError(f"invalid value {value!r} for {what}", code=Code.WRONG_VALUE_TYPE)
    if t.is_integer:
        v: Any = value
        if isinstance(v, bool):
            v = int(v)
        elif isinstance(v, str):
            try:
                v = int(v.strip()) if v.strip().lstrip("+-").isdigit() else float(v)
            except ValueError:
                raise SqlError(f"invalid value {value!r} for {what}", code=Code.WRONG_VALUE_TYPE) from None
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                raise SqlError(f"invalid value {value!r} for {what}", code=Code.WRONG_VALUE_TYPE)
            v = int(v)
        lo, hi = t.value_range() or (0, 0)
        if not lo <= v <= hi:
            raise SqlError(
                f"value {value!r} is out of range for {what} [{lo}, {hi}]", code=Code.VALUE_OUT_OF_RANGE
            )
        return v
    if name in ("FLOAT", "DOUBLE"):
        if isinstance(value, bool):
            return float(value)
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise SqlError(f"invalid value {value!r} for {what}", code=Code.WRONG_VALUE_TYPE) from None
        if name == "FLOAT" and abs(f) > 3.4028234663852886e38 and f == f and abs(f) != float("inf"):
            raise SqlError(f"value {value!r} is out of range for {what}", code=Code.VALUE_OUT_OF_RANGE)
        return f
    # VARCHAR / NCHAR
    s = value if isinstance(value, str) else (str(value).lower() if isinstance(value, bool) else str(value))
    size = len(s.encode("utf-8")) if name == "VARCHAR" else len(s)
    if size > t.length:
        raise SqlError(
            f"value of length {size} is too long for {what} (max {t.length})", code=Code.VALUE_OUT_OF_RANGE
        )
    return s
