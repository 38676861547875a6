"""Constant expressions in INSERT values, tag values and DELETE bounds.

A whitelisted evaluator over sqlglot nodes (STYLE.md rule 6: never ``eval``): literals, NULL,
TRUE/FALSE, unary minus, ``now`` / ``now()`` / ``today()``, ``+``/``-`` of a timestamp (``now``, a
timestamp string, ``cast(... as timestamp)``) and a duration, arithmetic ``+ - * / %`` on numbers,
and ``cast(x AS type)``: the constant folding TDengine does for INSERT values and DELETE bounds
(``DELETE ... WHERE ts = cast(1668073288214 as timestamp)``; TDengine SQL manual, "Operators",
"Functions: CAST"). Values are checked against the target column's TDengine type.
"""

from __future__ import annotations

import math
from typing import Any

from sqlglot import exp

from spark_workers import timestamps
from spark_workers.duration import NS_PER_PRECISION, Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql import typed_values
from spark_workers.tdtypes import TIMESTAMP, TdType

# sqlglot's type names -> TDengine's, for ``cast(x AS type)`` in constants.
_CAST_TYPES = {
    "TIMESTAMP": ("TIMESTAMP", False),
    "BOOLEAN": ("BOOL", False),
    "TINYINT": ("TINYINT", False),
    "SMALLINT": ("SMALLINT", False),
    "INT": ("INT", False),
    "BIGINT": ("BIGINT", False),
    "UTINYINT": ("TINYINT", True),
    "USMALLINT": ("SMALLINT", True),
    "UINT": ("INT", True),
    "UBIGINT": ("BIGINT", True),
    "FLOAT": ("FLOAT", False),
    "DOUBLE": ("DOUBLE", False),
    "VARCHAR": ("VARCHAR", False),
    "CHAR": ("VARCHAR", False),
    "BINARY": ("VARCHAR", False),
    "NCHAR": ("NCHAR", False),
    "TEXT": ("VARCHAR", False),
}


class HexText(str):
    """A string literal written ``'\\x...'``: its value as other types read it, and ``raw``, the
    text between the quotes as written, which VARBINARY reads as hex (TDengine SQL manual, "Data
    Types": VARBINARY)."""

    raw: str

    def __new__(cls, value: str, raw: str) -> HexText:
        out = super().__new__(cls, value)
        out.raw = raw
        return out


class DecimalText(float):
    """A number literal with a point or an exponent: a float for every type but DECIMAL, which
    reads ``text`` (the digits as written) so that no digit is lost to binary floating point."""

    text: str

    def __new__(cls, text: str) -> DecimalText:
        out = super().__new__(cls, text)
        out.text = text
        return out


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


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _cast_type(to: exp.DataType) -> TdType:
    """TDengine type of a ``cast`` target (VARCHAR/NCHAR keep their declared length)."""
    name = to.this.name if hasattr(to.this, "name") else str(to.this)
    mapped = _CAST_TYPES.get(name)
    if mapped is None:
        raise SqlError(f"Invalid cast to {to.sql()}", code=Code.WRONG_VALUE_TYPE)
    td, unsigned = mapped
    length = None
    if td in ("VARCHAR", "NCHAR"):
        params = to.expressions
        if params and isinstance(params[0].this, exp.Literal) and not params[0].this.is_string:
            length = int(params[0].this.this)
        else:
            length = 65517 if td == "VARCHAR" else 16382
    return TdType.parse(td, length, unsigned)


def _cast(node: exp.Cast, precision: str, tz: str, now: Now) -> Any:
    """``cast(x AS type)`` of a constant (TDengine SQL manual, "Functions: CAST")."""
    v = constant(node.this, precision, tz, now)
    if v is None:
        return None
    t = _cast_type(node.args["to"])
    what = f"cast to {t.sql}"
    if t.name == "TIMESTAMP":
        return ("ts", coerce(v, TIMESTAMP, precision, tz, what))
    if isinstance(v, tuple) and t.is_string:
        v = str(v[1])
    if t.is_integer and isinstance(v, float):
        v = math.trunc(v)
    return coerce(v, t, precision, tz, what)


def _arith(node: exp.Expr, left: Any, right: Any) -> Any:
    """``left op right`` for numbers and a timestamp with a number: ``+ - *`` keep integers exact
    (epoch values), ``/`` is a DOUBLE, ``%`` has C's sign (``fmod``), a zero divisor gives NULL
    (TDengine SQL manual, "Operators": arithmetic on constants)."""
    if left is None or right is None:
        return None
    lts, rts = isinstance(left, tuple), isinstance(right, tuple)
    a = left[1] if lts else left
    b = right[1] if rts else right
    for side in (a, b):
        if isinstance(side, str):
            try:
                float(side)
            except ValueError:
                raise SqlError(
                    f"invalid operand {side!r} for arithmetic", code=Code.WRONG_VALUE_TYPE
                ) from None
    a = _to_number(a)
    b = _to_number(b)
    if not (_number(a) and _number(b)):
        raise SqlError("arithmetic applies to numbers and timestamps only", code=Code.WRONG_VALUE_TYPE)
    if isinstance(node, exp.Add):
        out = a + b
    elif isinstance(node, exp.Sub):
        out = a - b
    elif isinstance(node, exp.Mul):
        out = a * b
    elif isinstance(node, exp.Div):
        return None if b == 0 else a / b
    else:  # exp.Mod
        return None if b == 0 else math.fmod(a, b)
    if isinstance(node, exp.Add | exp.Sub) and lts != rts and not (isinstance(node, exp.Sub) and rts):
        return ("ts", out)  # timestamp +/- number of precision units
    return out


def _to_number(v: Any) -> Any:
    if isinstance(v, str):
        f = float(v)
        return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
    if isinstance(v, bool):
        return int(v)
    return v


def constant(node: exp.Expr, precision: str, tz: str, now: Now) -> Any:
    """Python value of a constant expression; timestamps stay as ``("ts", epoch)`` tuples only when
    produced by ``now``/``cast``/arithmetic, so the column type decides how plain literals are read.

    Raises:
        SqlError: WRONG_VALUE_TYPE for an expression that is not a constant TDengine folds
            (a column, a duration alone, a function other than ``now``/``today``/``cast``).
    """
    if isinstance(node, exp.Paren):
        return constant(node.this, precision, tz, now)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            raw = node.meta.get("td_raw")
            if isinstance(raw, str) and raw[:2] in ("\\x", "\\X"):
                return HexText(node.this, raw)
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return DecimalText(text)
    if isinstance(node, exp.Neg):
        v = constant(node.this, precision, tz, now)
        if isinstance(v, DecimalText):
            return DecimalText(v.text[1:] if v.text.startswith("-") else "-" + v.text)
        if _number(v):
            return -v
        raise SqlError("minus applies to numbers only", code=Code.WRONG_VALUE_TYPE)
    if isinstance(node, exp.CurrentTimestamp) or (
        isinstance(node, exp.Anonymous) and str(node.name).lower() == "now" and not node.expressions
    ):
        return ("ts", now.at(precision))
    if isinstance(node, exp.Anonymous) and str(node.name).lower() == "today" and not node.expressions:
        day = 86_400 * 1_000_000_000 // NS_PER_PRECISION[precision]
        return ("ts", now.at(precision) // day * day)
    if isinstance(node, exp.Cast):
        return _cast(node, precision, tz, now)
    if isinstance(node, _FOLDED_FUNCS):
        return _function(node, precision, tz, now)
    if isinstance(node, exp.Add | exp.Sub):
        dur = _duration_of(node.expression)
        if dur is None and isinstance(node, exp.Add):
            dur_left = _duration_of(node.this)
            if dur_left is not None:  # 1d + now
                node = exp.Add(this=node.expression, expression=node.this)
                dur = dur_left
        left = constant(node.this, precision, tz, now)
        if dur is None:
            right = constant(node.expression, precision, tz, now)
            return _arith(node, left, right)
        if left is None:
            return None
        base = left[1] if isinstance(left, tuple) else left
        if isinstance(base, str):
            base = timestamps.parse_literal(base, precision, tz)
        if not isinstance(base, int) or isinstance(base, bool):
            raise SqlError("a duration can only be added to a timestamp", code=Code.WRONG_VALUE_TYPE)
        delta = dur.in_precision(precision)
        return ("ts", base + delta if isinstance(node, exp.Add) else base - delta)
    if isinstance(node, exp.Mul | exp.Div | exp.Mod):
        if _duration_of(node.this) is not None or _duration_of(node.expression) is not None:
            raise SqlError("a duration can only be added to or subtracted from a timestamp",
                           code=Code.WRONG_VALUE_TYPE)  # fmt: skip
        left = constant(node.this, precision, tz, now)
        right = constant(node.expression, precision, tz, now)
        return _arith(node, left, right)
    raise SqlError(f"not a constant: {_describe(node)}", code=Code.WRONG_VALUE_TYPE)


_FOLDED_FUNCS = (
    exp.Abs,
    exp.Ceil,
    exp.Floor,
    exp.Round,
    exp.Sqrt,
    exp.Pow,
    exp.Lower,
    exp.Upper,
    exp.Concat,
)


def _function(node: exp.Func, precision: str, tz: str, now: Now) -> Any:
    """A scalar function of constants, folded as TDengine folds it (TDengine SQL manual,
    "Functions": ABS keeps its argument's type; CEIL/FLOOR/ROUND keep integers and round halves
    away from zero; SQRT/POW are DOUBLE, SQRT of a negative number is NULL; LOWER/UPPER/CONCAT
    on strings; any NULL argument gives NULL)."""
    args = [node.this, *([node.expression] if node.args.get("expression") is not None else [])]
    if isinstance(node, exp.Concat):
        args = list(node.expressions)
    vals = [constant(a, precision, tz, now) for a in args]
    if any(v is None for v in vals):
        return None
    name = node.sql_name().lower()
    if isinstance(node, exp.Lower | exp.Upper | exp.Concat):
        if not all(isinstance(v, str) for v in vals):
            raise SqlError(f"Invalid parameter data type : {name}", code=Code.WRONG_VALUE_TYPE)
        if isinstance(node, exp.Concat):
            return "".join(vals)
        return vals[0].lower() if isinstance(node, exp.Lower) else vals[0].upper()
    if not all(_number(v) for v in vals):
        raise SqlError(f"Invalid parameter data type : {name}", code=Code.WRONG_VALUE_TYPE)
    x = vals[0]
    if isinstance(node, exp.Abs):
        return abs(x)
    if isinstance(node, exp.Ceil | exp.Floor | exp.Round):
        if isinstance(x, int):
            return x
        if isinstance(node, exp.Ceil):
            return float(math.ceil(x))
        if isinstance(node, exp.Floor):
            return float(math.floor(x))
        return float(math.copysign(math.floor(abs(x) + 0.5), x))
    if isinstance(node, exp.Sqrt):
        return None if x < 0 else math.sqrt(x)
    try:
        return float(math.pow(x, vals[1]))
    except (ValueError, OverflowError):
        return None


# sqlglot's node names that are not TDengine's for the same call
_SQLGLOT_NAMES: dict[type, str] = {exp.CurrentSchema: "database", exp.CurrentUser: "current_user"}


def _describe(node: exp.Expr) -> str:
    """What a non-constant is, in the user's terms (never ``sqlglot``'s rendering)."""
    if isinstance(node, exp.Column):
        return f"column {node.name} (a value must be a constant)"
    if _duration_of(node) is not None:
        return "a duration can only be added to or subtracted from a timestamp"
    if isinstance(node, exp.Func):
        name = (
            node.name if isinstance(node, exp.Anonymous) else _SQLGLOT_NAMES.get(type(node), node.sql_name())
        )
        return f"function {name.lower()}() is not folded to a constant here"
    return "the expression is not a constant (literals, now, cast(), arithmetic and durations are)"


def coerce(value: Any, t: TdType, precision: str, tz: str, what: str) -> Any:
    """Convert a constant to storage form for a column of type ``t``.

    Returns int epoch (precision units) for TIMESTAMP, bytes for VARBINARY and GEOMETRY (WKB),
    ``decimal.Decimal`` for DECIMAL, the canonical text (or None) for JSON, int/float/bool/str
    otherwise, None for NULL.

    Raises:
        SqlError: WRONG_VALUE_TYPE / VALUE_OUT_OF_RANGE naming ``what`` (e.g. "column a INT").
    """
    if value is None:
        return None
    name = t.name
    if name in _EXTENDED:
        return _coerce_extended(value, t, what)
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


_EXTENDED = frozenset({"JSON", "VARBINARY", "GEOMETRY", "DECIMAL"})


def _coerce_extended(value: Any, t: TdType, what: str) -> Any:
    """JSON, VARBINARY, GEOMETRY and DECIMAL values (:mod:`spark_workers.sql.typed_values`)."""
    if isinstance(value, tuple):
        if t.name == "VARBINARY":
            raise SqlError(f"Invalid varbinary value: a timestamp for {what}", code=Code.INVALID_VARBINARY)
        raise SqlError(f"a timestamp does not fit {what}", code=Code.WRONG_VALUE_TYPE)
    if t.name == "JSON":
        return typed_values.json_tag(value, what)
    if t.name == "DECIMAL":
        exact = value.text if isinstance(value, DecimalText) else value
        return typed_values.decimal_value(exact, t.length, t.scale, what)
    if t.name == "VARBINARY":
        out = typed_values.varbinary(value, value.raw if isinstance(value, HexText) else None, what)
    else:
        out = typed_values.geometry(value, what)
    if out is not None and len(out) > t.length:
        raise SqlError(
            f"value of length {len(out)} is too long for {what} (max {t.length})",
            code=Code.VALUE_OUT_OF_RANGE,
        )
    return out
