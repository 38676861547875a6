"""TDengine single-row (scalar) functions, rewritten for the two backends (DuckDB and Spark SQL).

Source: TDengine 3.x SQL manual, "Functions" -> "Single Row Functions" (mathematical, string,
conversion, time and date functions; docs.tdengine.com/tdengine-reference/sql-manual/functions) and,
where the manual is silent, TDengine's scalar implementation (``source/libs/scalar/src/sclfunc.c``).

:data:`FUNCTIONS` maps every TDengine name a user can call to a :class:`ScalarFunction`: its allowed
numbers of arguments and a rewrite into an equivalent backend expression built from ``sqlglot``
nodes (user text is never pasted into SQL). The translator (:mod:`spark_workers.sql.translate`) calls
:func:`rewrite` for every node :func:`lookup` recognises.

Conventions of both backends (the translator's contract):

- timestamps are UTC instants with microsecond resolution (DuckDB ``TIMESTAMPTZ`` in a UTC session,
  Spark ``TIMESTAMP`` in a UTC session);
- integer epochs, as inputs of time functions and as results of TO_UNIXTIMESTAMP, TIMEDIFF and
  CAST(ts AS BIGINT), are in the database precision (``Scope.precision``: ``ms``, ``us``, ``ns``);
- wall-clock work (TO_CHAR, TODAY, WEEK...) happens in ``Scope.tz`` (an IANA zone name).

Deliberate differences from TDengine, where matching it exactly would need a UDF:

- values that do not convert (CAST('abc' AS INT), TO_TIMESTAMP('x', 'yyyy'), an out-of-range
  integer) give NULL; TDengine gives 0, an error, or a wrapped-around integer;
- TRIM(LEADING r FROM s) removes every leading copy of ``r`` (the manual's rule); TDengine 3.3
  keeps the last copy when ``s`` is only copies of ``r``;
- TIMETRUNCATE floors timestamps before 1970 (TDengine's C division rounds them up);
- CAST(x AS BINARY(n)) keeps ``n`` characters, not ``n`` bytes;
- RAND(seed) and TO_JSON are rejected (NOT_SUPPORTED): a seeded sequence cannot match TDengine's,
  and tdweb has no JSON type.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from spark_workers import timestamps
from spark_workers.duration import NS_PER_PRECISION, NS_PER_UNIT, Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql.scope import Scope, func_name

Rewrite = Callable[["Call"], exp.Expr]

_DBL_MAX = "1.7976931348623157e308"
_UINT32 = 4294967295
_CRC32_POLY = 0xEDB88320
_WHITESPACE = r"[\t\n\x0B\f\r ]"
# a time of day followed by a zone: the string carries its own offset (else it is read in Scope.tz)
_HAS_OFFSET = r"\d:\d{2}(:\d{2}(\.\d+)?)?\s*(Z|z|[+-]\d{2}(:?\d{2})?)\s*$"
_TZ_ARG_RE = re.compile(r"^(?:([zZ])|([+-])(\d{2})(?::?(\d{2}))?)$")
_TIME_UNITS = "buasmhdw"
_DUCK_UNSIGNED = frozenset({"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"})


@dataclass(frozen=True)
class Call:
    """One call of a catalog function, being rewritten for one backend.

    Attributes:
        name: TDengine name of the function (lower case).
        args: the arguments, already rewritten for the backend.
        raw: the same arguments as written (TDengine trees); options such as time units, format
            strings and modes are read from these.
        kinds: value kind of each raw argument: ``ts``, ``int``, ``float``, ``str``, ``bool``, or
            None when it cannot be told from the expression.
        node: the call node as parsed (CAST's target type, TRIM's position).
        backend: ``duckdb`` or ``spark``.
        scope: names, database precision and time zone of the expression.
    """

    name: str
    args: list[exp.Expr]
    raw: list[exp.Expr]
    kinds: list[str | None]
    node: exp.Expr
    backend: str
    scope: Scope

    @property
    def duck(self) -> bool:
        """True when rewriting for DuckDB."""
        return self.backend == "duckdb"

    def error(self, message: str, code: int = Code.INVALID_FUNCTION) -> SqlError:
        """A ``SqlError`` about this call (``function <name> <message>``)."""
        return SqlError(f"function {self.name} {message}", code=code)

    def literal_int(self, i: int, what: str) -> int:
        """The integer literal written as argument ``i``; raises ``SqlError`` for anything else."""
        node = self.raw[i]
        negative = isinstance(node, exp.Neg)
        inner = node.this if negative else node
        if isinstance(inner, exp.Literal) and inner.is_int:
            return -int(inner.this) if negative else int(inner.this)
        raise self.error(f"expects an integer constant as {what}")

    def literal_str(self, i: int, what: str) -> str:
        """The string literal written as argument ``i``; raises ``SqlError`` for anything else."""
        node = self.raw[i]
        if isinstance(node, exp.Literal) and node.is_string:
            return str(node.this)
        raise self.error(f"expects a string constant as {what}")


@dataclass(frozen=True)
class ScalarFunction:
    """One TDengine scalar function of the catalog.

    Attributes:
        name: TDengine name (lower case).
        min_args: fewest arguments allowed.
        max_args: most arguments allowed; None for no limit.
        rewrite: builds the backend expression from a :class:`Call`; None when the function ``sqlglot``
            prints for each backend already behaves as TDengine's.
        returns: kind of the result (see :attr:`Call.kinds`); None when it is the first argument's.
    """

    name: str
    min_args: int
    max_args: int | None
    rewrite: Rewrite | None = None
    returns: str | None = None

    def check_arity(self, n: int) -> None:
        """Raise ``SqlError`` (``0x2801`` TSDB_CODE_FUNC_FUNTION_PARA_NUM, as TDengine's parser
        answers a wrong argument count) unless ``n`` arguments are allowed, e.g. ``Invalid number
        of parameters : substr (expects 2 or 3 arguments, got 1)``."""
        lo, hi = self.min_args, self.max_args
        if lo <= n and (hi is None or n <= hi):
            return
        if hi is None:
            expected = f"at least {_count(lo)}"
        elif lo == hi:
            expected = "no arguments" if lo == 0 else _count(lo)
        elif hi == lo + 1:
            expected = f"{lo} or {hi} arguments"
        else:
            expected = f"{lo} to {hi} arguments"
        raise SqlError(
            f"Invalid number of parameters : {self.name} (expects {expected}, got {n})",
            code=Code.FUNC_PARA_NUM,
        )


def _count(n: int) -> str:
    return f"{n} argument" if n == 1 else f"{n} arguments"


# --------------------------------------------------------------------------- node builders


def _fn(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _str(text: str) -> exp.Expr:
    return exp.Literal.string(text)


def _num(value: int | float | str) -> exp.Expr:
    return exp.Literal.number(value)


def _case(*whens: tuple[exp.Expr, exp.Expr], default: exp.Expr | None = None) -> exp.Expr:
    return exp.Case(ifs=[exp.If(this=cond, true=then) for cond, then in whens], default=default)


def _cast(node: exp.Expr, dtype: str, *, safe: bool = False) -> exp.Expr:
    """CAST (TRY_CAST when ``safe``) to ``dtype`` in ``sqlglot``'s spelling (``TEXT``, ``TIMESTAMP``
    (DuckDB's zone-less, Spark's session-zone type), ``TIMESTAMPTZ``) or DuckDB's unsigned names."""
    to = exp.DataType.build(dtype, dialect="duckdb" if dtype in _DUCK_UNSIGNED else None)
    if safe:
        return exp.TryCast(this=node, to=to, safe=True)
    return exp.Cast(this=node, to=to)


def _int_div(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    """Integer division truncating toward zero (DuckDB ``//``, Spark ``DIV``), as C does."""
    return exp.IntDiv(this=exp.paren(a, copy=False), expression=exp.paren(b, copy=False))


def _pmod(a: exp.Expr, n: int) -> exp.Expr:
    """``a`` modulo ``n`` in ``[0, n)`` also for negative ``a``."""
    return ((a % _num(n)) + _num(n)) % _num(n)


def _finite(node: exp.Expr) -> exp.Expr:
    """NULL for NaN and infinities, as TDengine's math functions return (``sclfunc.c``)."""
    return _case((node.between(_num("-" + _DBL_MAX), _num(_DBL_MAX)), node))


def _concat(parts: Sequence[exp.Expr], c: Call) -> exp.Expr:
    """NULL-propagating concatenation (DuckDB ``||``; DuckDB's CONCAT skips NULLs)."""
    if len(parts) == 1:
        return parts[0]
    if c.duck:
        out = parts[0]
        for p in parts[1:]:
            out = exp.DPipe(this=out, expression=p, safe=False)
        return out
    return _fn("concat", *parts)


def _any_null(args: Sequence[exp.Expr]) -> exp.Expr:
    return exp.or_(*(a.copy().is_(exp.null()) for a in args))


def _empty_like(s: exp.Expr) -> exp.Expr:
    """``''`` for a non-NULL string, NULL for NULL."""
    return exp.Substring(this=s.copy(), start=_num(1), length=_num(0))


# --------------------------------------------------------------------------- time helpers


def _is_utc(tz: str) -> bool:
    return tz.upper() in ("UTC", "Z", "ETC/UTC")


def epoch_us(ts: exp.Expr, duck: bool) -> exp.Expr:
    """Microseconds since the epoch (BIGINT) of timestamp ``ts``, on DuckDB or Spark."""
    return _fn("epoch_us" if duck else "unix_micros", ts)


def ts_from_us(us: exp.Expr, duck: bool) -> exp.Expr:
    """The UTC timestamp ``us`` microseconds after the epoch, on DuckDB or Spark."""
    if duck:
        return _fn("timezone", _str("UTC"), _fn("make_timestamp", _cast(us, "BIGINT")))
    return _fn("timestamp_micros", us)


def _epoch_us(ts: exp.Expr, c: Call) -> exp.Expr:
    return epoch_us(ts, c.duck)


def _ts_from_us(us: exp.Expr, c: Call) -> exp.Expr:
    return ts_from_us(us, c.duck)


def _to_local(ts: exp.Expr, c: Call) -> exp.Expr:
    """The wall-clock time (a zone-less timestamp) of a UTC instant in ``Scope.tz``."""
    if c.duck:
        return _fn("timezone", _str(c.scope.tz), ts)
    return ts if _is_utc(c.scope.tz) else _fn("from_utc_timestamp", ts, _str(c.scope.tz))


def _from_local(wall: exp.Expr, c: Call) -> exp.Expr:
    """The UTC instant of a wall-clock time in ``Scope.tz``."""
    if c.duck:
        return _fn("timezone", _str(c.scope.tz), wall)
    return wall if _is_utc(c.scope.tz) else _fn("to_utc_timestamp", wall, _str(c.scope.tz))


def epoch_to_us(epoch: exp.Expr, precision: str) -> exp.Expr:
    """Microseconds since the epoch of an integer epoch counted in ``precision`` (ms/us/ns; ns
    truncates toward zero)."""
    if precision == "ms":
        return epoch * _num(1000)
    if precision == "ns":
        return _int_div(epoch, _num(1000))
    return epoch


def _us_to_epoch(us: exp.Expr, precision: str) -> exp.Expr:
    if precision == "ms":
        return _int_div(us, _num(1000))
    if precision == "ns":
        return us * _num(1000)
    return us


def _epoch(ts: exp.Expr, c: Call) -> exp.Expr:
    """Epoch of a timestamp in the database precision (BIGINT)."""
    p = c.scope.precision
    if p == "ms":
        return _fn("epoch_ms" if c.duck else "unix_millis", ts)
    if p == "ns" and c.duck:
        return _fn("epoch_ns", ts)
    return _us_to_epoch(_epoch_us(ts, c), p)


def _parse_ts(s: exp.Expr, c: Call) -> exp.Expr:
    """A date-time string (ISO 8601 / RFC 3339; without a zone it is read in ``Scope.tz``) as a UTC
    timestamp; NULL when it is not one (TDengine's ``convertStringToTimestamp``)."""
    with_zone = _cast(s, "TIMESTAMPTZ" if c.duck else "TIMESTAMP", safe=True)
    if _is_utc(c.scope.tz):
        return with_zone
    local = _from_local(_cast(s.copy(), "TIMESTAMP", safe=True), c)
    return _case((exp.RegexpLike(this=s.copy(), expression=_str(_HAS_OFFSET)), with_zone), default=local)


def _as_ts(c: Call, i: int) -> exp.Expr:
    """Argument ``i`` of a time function as a UTC timestamp: TIMESTAMP as is, an integer as an epoch
    in the database precision, a string as a date-time (manual: "BIGINT, TIMESTAMP types
    representing timestamps, or VARCHAR, NCHAR types in ISO8601/RFC3339 format")."""
    kind, arg = c.kinds[i], c.args[i]
    if kind in ("ts", None):
        return arg
    if kind == "int":
        return _ts_from_us(epoch_to_us(arg, c.scope.precision), c)
    if kind == "str":
        return _parse_ts(arg, c)
    raise c.error("expects a timestamp, an integer epoch or a date-time string", Code.WRONG_VALUE_TYPE)


def _local_date(c: Call, i: int) -> exp.Expr:
    return _cast(_to_local(_as_ts(c, i), c), "DATE")


def _time_unit(c: Call, i: int) -> Duration | None:
    """The time unit written as argument ``i`` (``1b`` ... ``1w``), None for NULL.

    Raises:
        SqlError: not a duration literal, not one of 1b, 1u, 1a, 1s, 1m, 1h, 1d, 1w, or finer than
            the database precision (TDengine: "time unit too small").
    """
    node = c.raw[i]
    if isinstance(node, exp.Null):
        return None
    raw = node.meta.get("td_duration") if isinstance(node, exp.Interval) else None
    if raw is None:
        raise c.error("expects a time unit such as 1s or 1h as its time unit argument")
    unit = Duration.parse(raw)
    if unit.value != 1 or unit.unit not in _TIME_UNITS:
        raise c.error(f"does not accept time unit {raw}: use 1b, 1u, 1a, 1s, 1m, 1h, 1d or 1w")
    precision = c.scope.precision
    if NS_PER_UNIT[unit.unit] < NS_PER_PRECISION[precision]:
        raise c.error(f"time unit {raw} is finer than the database precision {precision}")
    return unit


def _zone_offset_s(tz: str) -> int:
    """Current UTC offset of a zone in seconds (TDengine reads it once, when the statement is parsed)."""
    offset = dt.datetime.now(timestamps.zone(tz)).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def _offset_text(seconds: int) -> str:
    """``+0800`` (strftime ``%z``) for an offset in seconds."""
    sign = "-" if seconds < 0 else "+"
    minutes = abs(seconds) // 60
    return f"{sign}{minutes // 60:02d}{minutes % 60:02d}"


# --------------------------------------------------------------------------- value kinds

_TYPE_KINDS = {
    "TIMESTAMP": "ts",
    "BOOL": "bool",
    "FLOAT": "float",
    "DOUBLE": "float",
    "VARCHAR": "str",
    "NCHAR": "str",
    "GEOMETRY": "geo",
}
_DTYPE_KINDS: dict[exp.DType, str] = {
    **dict.fromkeys(
        (
            exp.DType.TINYINT,
            exp.DType.UTINYINT,
            exp.DType.SMALLINT,
            exp.DType.USMALLINT,
            exp.DType.INT,
            exp.DType.UINT,
            exp.DType.BIGINT,
            exp.DType.UBIGINT,
        ),
        "int",
    ),
    exp.DType.FLOAT: "float",
    exp.DType.DOUBLE: "float",
    exp.DType.BOOLEAN: "bool",
    exp.DType.TIMESTAMP: "ts",
    exp.DType.TIMESTAMPTZ: "ts",
    exp.DType.VARCHAR: "str",
    exp.DType.BINARY: "str",
    exp.DType.NCHAR: "str",
    exp.DType.CHAR: "str",
    exp.DType.TEXT: "str",
}


def _numeric(a: str | None, b: str | None) -> str | None:
    if a is None or b is None or "str" in (a, b) or "ts" in (a, b):
        return None
    return "int" if a in ("int", "bool") and b in ("int", "bool") else "float"


# aggregate and selection functions whose value is one of their first argument's values
# (TDengine's function reference: FIRST, LAST, LAST_ROW, MAX, MIN, MODE, TOP, BOTTOM, SAMPLE,
# TAIL, UNIQUE keep the argument's type)
_SELECTION_KIND = frozenset(
    {"first", "last", "last_row", "max", "min", "mode", "top", "bottom", "sample", "tail", "unique"}
)


def kind_of(node: exp.Expr, scope: Scope) -> str | None:
    """Value kind of a TDengine expression: ``ts``, ``int``, ``float``, ``str``, ``bool``, or None.

    Columns take their TDengine type from ``scope``; literals, arithmetic, casts and catalog
    functions are followed. Used to pick conversions (an integer given to TIMETRUNCATE is an epoch,
    a string is a date-time) and never rejects anything by itself.
    """
    if isinstance(node, exp.Paren | exp.Neg):
        return kind_of(node.this, scope)
    if isinstance(node, exp.Column):
        if scope.is_timestamp(node):
            return "ts"
        t = scope.columns.get(node.name.lower()) if not node.table else None
        if t is None:
            return None
        return "int" if t.is_integer else _TYPE_KINDS.get(t.name)
    if isinstance(node, exp.Literal):
        return "str" if node.is_string else ("int" if node.is_int else "float")
    if isinstance(node, exp.Boolean | exp.Predicate | exp.Connector | exp.Not):
        return "bool"
    if isinstance(node, exp.CurrentTimestamp):
        return "ts"
    if isinstance(node, exp.Add | exp.Sub):
        if isinstance(node.this, exp.Interval) or isinstance(node.expression, exp.Interval):
            return "ts"
        left, right = kind_of(node.this, scope), kind_of(node.expression, scope)
        if left == right == "ts":
            return "int" if isinstance(node, exp.Sub) else None
        if "ts" in (left, right):
            return "ts"
        return _numeric(left, right)
    if isinstance(node, exp.Div):
        return "float"
    if isinstance(node, exp.Mul):
        return _numeric(kind_of(node.this, scope), kind_of(node.expression, scope))
    if func_name(node) in _SELECTION_KIND and (args := call_args(node)):
        return kind_of(args[0], scope)  # last(ts) is a timestamp, max(v) an integer of v's kind
    fn = lookup(node)
    if fn is not None:
        if fn.name == "cast":
            return _DTYPE_KINDS.get(node.args["to"].this)
        if fn.name == "to_unixtimestamp":
            args = call_args(node)
            one = len(args) == 2 and isinstance(args[1], exp.Literal) and args[1].this == "1"
            return "ts" if one else "int"
        if fn.returns is not None:
            return fn.returns
        args = call_args(node)
        return kind_of(args[0], scope) if args else None
    return None


# --------------------------------------------------------------------------- math


def _native(cls: type[exp.Func], finite: bool = False) -> Rewrite:
    def build(c: Call) -> exp.Expr:
        node = cls(this=c.args[0])
        return _finite(node) if finite else node

    return build


def _log(c: Call) -> exp.Expr:
    if len(c.args) == 1:
        return _finite(exp.Ln(this=c.args[0]))
    value, base = c.args
    return _finite(_fn("log", base, value))  # both backends: LOG(base, value)


def _pow(c: Call) -> exp.Expr:
    return _finite(exp.Pow(this=c.args[0], expression=c.args[1]))


def _digits(c: Call) -> int:
    return c.literal_int(1, "digits") if len(c.args) > 1 else 0


def _as_double(c: Call) -> exp.Expr:
    """The first argument; a FLOAT/DOUBLE one as DOUBLE (both backends read ``1.005`` as DECIMAL,
    TDengine as DOUBLE)."""
    return _cast(c.args[0], "DOUBLE") if c.kinds[0] == "float" else c.args[0]


def _round(c: Call) -> exp.Expr:
    """ROUND(x[, digits]): half away from zero; ``x * 10^digits`` rounded in double arithmetic in both
    backends (Spark's own ROUND with digits rounds the decimal text instead: 1.005 -> 1.01)."""
    x, d = _as_double(c), _digits(c)
    if d == 0:
        return exp.Round(this=x)
    scale = _num(float(10 ** abs(d)))
    out: exp.Expr
    if d > 0:
        out = exp.Round(this=x * scale) / scale.copy()
    else:
        out = exp.Round(this=x / scale) * scale.copy()
    return _cast(out, "BIGINT") if c.kinds[0] in ("int", "bool") else out


def _trunc0(y: exp.Expr, c: Call) -> exp.Expr:
    """Drop the fraction of a DOUBLE (toward zero)."""
    if c.duck:
        return _fn("trunc", y)
    # beyond 2^52 a double has no fraction; below, BIGINT truncation is exact
    return _case(
        (exp.Abs(this=y.copy()) >= _num(4503599627370496), y.copy()),
        default=_cast(_cast(y, "BIGINT"), "DOUBLE"),
    )


def _truncate(c: Call) -> exp.Expr:
    """TRUNCATE(x, digits): cut (not round) to ``digits`` decimals, left of the point if negative;
    ``x * 10^digits`` cut in double arithmetic in both backends (0.29 -> 0.28, as C computes it)."""
    x, d = _as_double(c), _digits(c)
    if c.kinds[0] in ("int", "bool"):
        if d >= 0:
            return x
        p = _num(10**-d)
        return _int_div(x, p) * p.copy()
    scale = _num(float(10 ** abs(d)))
    if d >= 0:
        return _trunc0(x * scale, c) / scale.copy()
    return _trunc0(x / scale, c) * scale.copy()


def _mod(c: Call) -> exp.Expr:
    """MOD(a, b) / ``a % b``: NULL when ``b`` is 0 (both backends raise a division error instead)."""
    return exp.Mod(
        this=exp.paren(c.args[0], copy=False), expression=exp.Nullif(this=c.args[1], expression=_num(0))
    )


def _rand(c: Call) -> exp.Expr:
    if c.args:
        raise c.error(
            "with a seed is not supported: the seeded sequence cannot match TDengine's; use rand()",
            Code.NOT_SUPPORTED,
        )
    return exp.Rand()


def _crc32(c: Call) -> exp.Expr:
    """CRC32 of the value's text: strings as UTF-8 bytes, numbers as printed, BOOL as ``1``/``0``,
    timestamps as ``yyyy-mm-dd hh24:mi:ss`` in ``Scope.tz`` (``sclfunc.c`` crc32Function)."""
    x, kind = c.args[0], c.kinds[0]
    if kind == "bool":
        text = _case((x, _str("1")), default=_case((exp.Not(this=x.copy()), _str("0"))))
    elif kind == "ts":
        text = _to_char_pieces(_format_tokens("yyyy-mm-dd hh24:mi:ss"), _to_local(x, c), c)
    elif kind == "str":
        text = x
    else:
        text = _cast(x, "TEXT")
    if not c.duck:
        return _fn("crc32", _fn("encode", text, _str("UTF-8")))
    # DuckDB has no CRC32: the bitwise algorithm over the UTF-8 bytes (hex pairs) with lambdas
    i, acc, byte, r, k = (exp.to_identifier(n, quoted=True) for n in ("__i", "__crc", "__b", "__r", "__k"))
    hex_text = _fn("hex", text)
    pair = _fn("substr", hex_text, exp.column(i.copy()) * _num(2) + _num(1), _num(2))
    bytes_ = _fn(
        "list_transform",
        _fn("range", _num(0), _fn("strlen", text.copy())),
        exp.Lambda(
            this=_cast(exp.DPipe(this=_str("0x"), expression=pair, safe=False), "INTEGER"), expressions=[i]
        ),
    )
    rc = exp.column(r.copy())
    step = _fn(
        "xor",
        exp.BitwiseRightShift(this=rc, expression=_num(1)),
        exp.BitwiseAnd(
            this=_num(_CRC32_POLY),
            expression=exp.Neg(this=exp.paren(exp.BitwiseAnd(this=rc.copy(), expression=_num(1)))),
        ),
    )
    per_byte = _fn(
        "list_reduce",
        _fn("range", _num(8)),
        exp.Lambda(this=step, expressions=[r, k]),
        _fn("xor", exp.column(acc.copy()), exp.column(byte.copy())),
    )
    crc = _fn("list_reduce", bytes_, exp.Lambda(this=per_byte, expressions=[acc, byte]), _num(_UINT32))
    return _fn("xor", crc, _num(_UINT32))


# --------------------------------------------------------------------------- strings


def _ascii(c: Call) -> exp.Expr:
    """ASCII(s): the first *byte* of the UTF-8 text (manual: "only the ASCII code of the first byte"
    of a multi-byte character); both backends' ASCII give the code point, mapped here to its byte."""
    cp = exp.Ascii(this=c.args[0])
    return _case(
        (cp < _num(128), cp.copy()),
        (cp.copy() < _num(2048), _num(192) + _int_div(cp.copy(), _num(64))),
        (cp.copy() < _num(65536), _num(224) + _int_div(cp.copy(), _num(4096))),
        default=_num(240) + _int_div(cp.copy(), _num(262144)),
    )


def _char(c: Call) -> exp.Expr:
    """CHAR(n, ...): each integer's bytes, most significant first without leading zero bytes
    (CHAR(256) = CHAR(1, 0)); NULLs are skipped; strings are read as integers. Byte sequences that
    are not UTF-8 give NULL (both backends keep strings UTF-8)."""
    parts = []
    for arg, kind in zip(c.args, c.kinds, strict=True):
        n = _cast(arg, "BIGINT", safe=kind not in ("int", "bool"))
        raw = _fn("unhex", _fn("hex", exp.BitwiseAnd(this=n, expression=_num(_UINT32))))
        text = _fn("try", _fn("decode", raw)) if c.duck else _fn("try_validate_utf8", _cast(raw, "TEXT"))
        parts.append(exp.Coalesce(this=text, expressions=[_str("")]))
    return _concat(parts, c)


def _length(c: Call) -> exp.Expr:
    """LENGTH(s): bytes. VARCHAR is UTF-8; NCHAR columns are stored by TDengine as UCS-4, 4 bytes a
    character (``sclfunc.c`` tlength)."""
    raw = c.raw[0]
    if isinstance(raw, exp.Column) and not raw.table:
        t = c.scope.columns.get(raw.name.lower())
        if t is not None and t.name == "NCHAR":
            return exp.Length(this=c.args[0]) * _num(4)
    return _fn("strlen" if c.duck else "octet_length", c.args[0])


def _char_length(c: Call) -> exp.Expr:
    """CHAR_LENGTH(s): characters (both backends' LENGTH)."""
    return exp.Length(this=c.args[0])


def _concat_fn(c: Call) -> exp.Expr:
    return _concat(c.args, c)


def _concat_ws(c: Call) -> exp.Expr:
    """CONCAT_WS(sep, s1, s2, ...): NULL if any argument is NULL (the backends skip NULLs)."""
    joined = _fn("concat_ws", *c.args)
    return _case((_any_null(c.args), exp.null()), default=joined)


def _trim(c: Call) -> exp.Expr:
    """TRIM/LTRIM/RTRIM. Without ``remstr`` white space (C ``isspace``) goes; with a constant
    ``remstr`` every leading/trailing copy of the whole string goes (``trim('ab' from 'abacd')`` is
    ``acd``), which the backends' TRIM (a character set) does not do."""
    s = c.args[0]
    position = str(c.node.args.get("position") or "BOTH").upper()
    if len(c.args) == 1:
        piece = _WHITESPACE + "+"
    else:
        rem = c.literal_str(1, "the string to remove")
        if not rem:
            return s
        piece = (
            "(?:"
            + "".join(ch if ch.isascii() and ch.isalnum() else f"\\x{{{ord(ch):X}}}" for ch in rem)
            + ")+"
        )
    patterns = {"LEADING": [f"\\A{piece}"], "TRAILING": [f"{piece}\\z"]}
    pattern = "|".join(patterns.get(position, [f"\\A{piece}", f"{piece}\\z"]))
    return exp.RegexpReplace(this=s, expression=_str(pattern), replacement=_str(""))


def _substr(c: Call) -> exp.Expr:
    """SUBSTR(s, pos[, len]): 1-based; a negative ``pos`` counts from the end (clamped to the first
    character); ``pos`` 0 or ``len`` < 1 give ``''`` (manual, SUBSTRING/SUBSTR; ``sclfunc.c``)."""
    s, pos = c.args[0], c.args[1]
    length = c.args[2] if len(c.args) == 3 else None
    pos_lit = c.literal_int(1, "position") if _is_int_literal(c.raw[1]) else None
    if pos_lit is not None and pos_lit > 0:
        start: exp.Expr = pos
    else:
        from_end = exp.Greatest(this=exp.Length(this=s.copy()) + pos.copy(), expressions=[_num(0)]) + _num(1)
        start = from_end if pos_lit is not None else _case((pos > _num(0), pos.copy()), default=from_end)
    body = exp.Substring(this=s, start=start, length=length)
    empty_when: list[exp.Expr] = [pos.copy().eq(_num(0))] if pos_lit is None or pos_lit == 0 else []
    if length is not None:
        empty_when.append(length.copy() < _num(1))
    if not empty_when:
        return body
    return _case((exp.or_(*empty_when), _empty_like(s)), default=body)


def _is_int_literal(node: exp.Expr) -> bool:
    inner = node.this if isinstance(node, exp.Neg) else node
    return isinstance(inner, exp.Literal) and inner.is_int


def _position(c: Call) -> exp.Expr:
    return exp.StrPosition(this=c.args[1], substr=c.args[0])


def _substring_index(c: Call) -> exp.Expr:
    """SUBSTRING_INDEX(s, delim, count): Spark has it; DuckDB splits and joins."""
    s, delim, count = c.args
    if not c.duck:
        return _fn("substring_index", s, delim, count)
    parts = _fn("string_split", s, delim)
    head = _fn("array_to_string", _fn("list_slice", parts, _num(1), count), delim.copy())
    tail = _fn("array_to_string", _fn("list_slice", parts.copy(), count.copy(), _num(-1)), delim.copy())
    return _case(
        (count.copy() > _num(0), head),
        (count.copy() < _num(0), tail),
        (count.copy().eq(_num(0)), _empty_like(s)),
    )


def _to_base64(c: Call) -> exp.Expr:
    if c.duck:
        return _fn("to_base64", _fn("encode", c.args[0]))
    return _fn("base64", _fn("encode", c.args[0], _str("UTF-8")))


def _extreme(cls: type[exp.Func]) -> Rewrite:
    """GREATEST/LEAST: NULL if any argument is NULL (the backends skip NULLs); strings mixed with
    numbers compare as strings (TDengine's default ``compareAsStrInGreatest`` 1)."""

    def build(c: Call) -> exp.Expr:
        args = c.args
        if "str" in c.kinds and any(k in ("int", "float", "bool") for k in c.kinds):
            args = [_cast(a, "TEXT") for a in args]
        node = cls(this=args[0], expressions=args[1:])
        return _case((_any_null(c.args), exp.null()), default=node)

    return build


# --------------------------------------------------------------------------- conversion

_INT_TYPES: dict[exp.DType, tuple[str, str, int | None]] = {
    # TDengine type -> (DuckDB type, Spark type, upper bound checked on Spark for unsigned types)
    exp.DType.TINYINT: ("TINYINT", "TINYINT", None),
    exp.DType.SMALLINT: ("SMALLINT", "SMALLINT", None),
    exp.DType.INT: ("INT", "INT", None),
    exp.DType.BIGINT: ("BIGINT", "BIGINT", None),
    exp.DType.UTINYINT: ("UTINYINT", "SMALLINT", 2**8 - 1),
    exp.DType.USMALLINT: ("USMALLINT", "INT", 2**16 - 1),
    exp.DType.UINT: ("UINTEGER", "BIGINT", 2**32 - 1),
    exp.DType.UBIGINT: ("UBIGINT", "DECIMAL(20, 0)", 2**64 - 1),
}
_STRING_TYPES = frozenset({exp.DType.VARCHAR, exp.DType.BINARY, exp.DType.NCHAR, exp.DType.CHAR})
CAST_TYPES = frozenset(
    {*_INT_TYPES, *_STRING_TYPES, exp.DType.FLOAT, exp.DType.DOUBLE, exp.DType.BOOLEAN, exp.DType.TIMESTAMP}
)


def _cast_fn(c: Call) -> exp.Expr:
    """CAST(x AS type) with TDengine's types and conversions (``sclfunc.c`` castFunction):
    timestamps convert as their epoch in the database precision, integers to TIMESTAMP as an epoch,
    strings to TIMESTAMP as a date-time in ``Scope.tz``, FLOAT/DOUBLE to integers toward zero,
    strings to VARCHAR(n)/NCHAR(n) cut to ``n`` characters. Unconvertible values give NULL."""
    x, kind = c.args[0], c.kinds[0]
    to = c.node.args["to"]
    target = to.this
    if target in _STRING_TYPES:
        text = _cast(_epoch(x, c) if kind == "ts" else x, "TEXT")
        size = to.expressions[0].this if to.expressions else None
        if isinstance(size, exp.Literal) and size.is_int:
            return _fn("left", text, _num(int(size.this)))
        return text
    if target == exp.DType.TIMESTAMP:
        if kind == "ts":
            return x
        if kind in ("int", "bool"):
            return _ts_from_us(epoch_to_us(_cast(x, "BIGINT"), c.scope.precision), c)
        if kind == "float":
            whole = _fn("trunc", x) if c.duck else x
            return _ts_from_us(epoch_to_us(_cast(whole, "BIGINT"), c.scope.precision), c)
        if kind == "str":
            return _parse_ts(x, c)
        return _cast(x, "TIMESTAMPTZ", safe=True)
    number = _epoch(x, c) if kind == "ts" else x
    number_kind = "int" if kind == "ts" else kind
    if target == exp.DType.BOOLEAN:
        if number_kind == "str":
            return _cast(number, "DOUBLE", safe=True).neq(_num(0))
        return number.neq(_num(0)) if kind == "ts" else _cast(number, "BOOLEAN", safe=True)
    if target in (exp.DType.FLOAT, exp.DType.DOUBLE):
        return _cast(number, target.value, safe=True)
    duck_type, spark_type, upper = _INT_TYPES[target]
    if number_kind not in ("int", "bool"):  # through DOUBLE, toward zero ('12.7' -> 12, 2.7 -> 2)
        number = _cast(number, "DOUBLE", safe=True)
        if c.duck:
            number = _fn("trunc", number)
    if c.duck:
        return _cast(number, duck_type, safe=True)
    value = _cast(number, spark_type, safe=True)
    if upper is None:
        return value
    return _case((value.between(_num(0), _num(upper)), value.copy()))


def _to_iso8601(c: Call) -> exp.Expr:
    """TO_ISO8601(ts[, tz]): ``yyyy-mm-ddThh:mm:ss.fff`` (3/6/9 fraction digits by precision) in
    the given offset followed by the ``tz`` text as written, or in ``Scope.tz``'s current offset
    followed by it as ``+hhmm`` (``sclfunc.c`` toISO8601Function)."""
    if c.kinds[0] not in ("ts", "int", None):
        raise c.error("expects a timestamp or an integer epoch", Code.WRONG_VALUE_TYPE)
    if len(c.args) == 2:
        tz_text = c.literal_str(1, "the time zone")
        m = _TZ_ARG_RE.match(tz_text)
        if not m or (m.group(3) and (int(m.group(3)) > 14 or int(m.group(4) or 0) > 59)):
            raise c.error(f"got an invalid time zone {tz_text!r}: use z, +hh, +hhmm or +hh:mm")
        offset_s = (
            0
            if m.group(1)
            else (1 if m.group(2) == "+" else -1) * (int(m.group(3)) * 3600 + int(m.group(4) or 0) * 60)
        )
    else:
        offset_s = _zone_offset_s(c.scope.tz)
        tz_text = _offset_text(offset_s)
    shifted_us = _epoch_us(_as_ts(c, 0), c) + _num(offset_s * 1_000_000)
    fraction = {"ms": ("%g", "SSS"), "us": ("%f", "SSSSSS"), "ns": ("%n", "SSSSSSSSS")}[c.scope.precision]
    if c.duck:
        text = _fn("strftime", _fn("make_timestamp", shifted_us), _str(f"%Y-%m-%dT%H:%M:%S.{fraction[0]}"))
    else:
        text = _fn(
            "date_format", _fn("timestamp_micros", shifted_us), _str(f"yyyy-MM-dd'T'HH:mm:ss.{fraction[1]}")
        )
    return _concat([text, _str(tz_text)], c)


def _to_json(c: Call) -> exp.Expr:
    raise c.error("is not supported: tdweb has no JSON type", Code.NOT_SUPPORTED)


def _to_unixtimestamp(c: Call) -> exp.Expr:
    """TO_UNIXTIMESTAMP(s[, 1]): epoch of a date-time string in the database precision (BIGINT), or a
    TIMESTAMP when the second argument is 1; NULL when ``s`` is not a date-time."""
    if c.kinds[0] not in ("str", None):
        raise c.error("expects a date-time string", Code.WRONG_VALUE_TYPE)
    as_timestamp = c.literal_int(1, "return_timestamp (0 or 1)") if len(c.args) == 2 else 0
    if as_timestamp not in (0, 1):
        raise c.error("expects 0 or 1 as return_timestamp")
    ts = _parse_ts(c.args[0], c)
    return ts if as_timestamp else _epoch(ts, c)


# --------------------------------------------------------------------------- TO_CHAR / TO_TIMESTAMP

# TDengine's format keywords in matching order (``ttime.c``; manual, TO_CHAR "Supported Formats"),
# each with its canonical spelling: numbers match either case, names keep the case they print in.
_FORMAT_WORDS: tuple[tuple[str, str], ...] = (
    ("A.M.", "A.M."), ("AM", "AM"), ("DAY", "DAY"), ("Day", "Day"), ("DDD", "DDD"), ("DD", "DD"),
    ("DY", "DY"), ("Dy", "Dy"), ("D", "D"), ("HH24", "HH24"), ("HH12", "HH12"), ("HH", "HH12"),
    ("MI", "MI"), ("MM", "MM"), ("MONTH", "MONTH"), ("Month", "Month"), ("MON", "MON"), ("Mon", "Mon"),
    ("MS", "MS"), ("NS", "NS"), ("P.M.", "A.M."), ("PM", "AM"), ("SS", "SS"), ("TZH", "TZH"),
    ("US", "US"), ("YYYY", "YYYY"), ("YYY", "YYY"), ("YY", "YY"), ("Y", "Y"),
    ("a.m.", "a.m."), ("am", "am"), ("day", "day"), ("ddd", "DDD"), ("dd", "DD"), ("dy", "dy"),
    ("d", "D"), ("hh24", "HH24"), ("hh12", "HH12"), ("hh", "HH12"), ("mi", "MI"), ("mm", "MM"),
    ("month", "month"), ("mon", "mon"), ("ms", "MS"), ("ns", "NS"), ("p.m.", "a.m."), ("pm", "am"),
    ("ss", "SS"), ("tzh", "TZH"), ("us", "US"), ("yyyy", "YYYY"), ("yyy", "YYY"), ("yy", "YY"), ("y", "Y"),
)  # fmt: skip
# canonical keyword -> (strftime, Java pattern) for fields both backends print as is
_PRINT = {
    "YYYY": ("%Y", "yyyy"), "YY": ("%y", "yy"), "MM": ("%m", "MM"), "DD": ("%d", "dd"),
    "DDD": ("%j", "DDD"), "HH24": ("%H", "HH"), "HH12": ("%I", "hh"), "MI": ("%M", "mm"),
    "SS": ("%S", "ss"), "MS": ("%g", "SSS"), "US": ("%f", "SSSSSS"), "NS": ("%n", "SSSSSSSSS"),
}  # fmt: skip
# names: canonical -> (strftime, Java pattern, case, padded to 9 characters)
_NAMES = {
    "MONTH": ("%B", "MMMM", "upper", True), "Month": ("%B", "MMMM", "", True),
    "month": ("%B", "MMMM", "lower", True), "MON": ("%b", "MMM", "upper", False),
    "Mon": ("%b", "MMM", "", False), "mon": ("%b", "MMM", "lower", False),
    "DAY": ("%A", "EEEE", "upper", True), "Day": ("%A", "EEEE", "", True),
    "day": ("%A", "EEEE", "lower", True), "DY": ("%a", "EEE", "upper", False),
    "Dy": ("%a", "EEE", "", False), "dy": ("%a", "EEE", "lower", False),
}  # fmt: skip
# canonical keyword -> (strptime, Java pattern) when parsing
_PARSE = {
    "YYYY": ("%Y", "yyyy"), "YY": ("%y", "yy"), "MM": ("%m", "M"), "DD": ("%d", "d"),
    "DDD": ("%j", "D"), "HH24": ("%H", "H"), "HH12": ("%I", "h"), "MI": ("%M", "m"), "SS": ("%S", "s"),
    "MS": ("%g", "SSS"), "US": ("%f", "SSSSSS"), "NS": ("%n", "SSSSSSSSS"), "AM": ("%p", "a"),
    "am": ("%p", "a"), "TZH": ("%z", "X"), "MONTH": ("%B", "MMMM"), "Month": ("%B", "MMMM"),
    "month": ("%B", "MMMM"), "MON": ("%b", "MMM"), "Mon": ("%b", "MMM"), "mon": ("%b", "MMM"),
    "DAY": ("%A", "EEEE"), "Day": ("%A", "EEEE"), "day": ("%A", "EEEE"), "DY": ("%a", "EEE"),
    "Dy": ("%a", "EEE"), "dy": ("%a", "EEE"),
}  # fmt: skip


def _format_tokens(fmt: str) -> list[tuple[bool, str]]:
    """Split a TO_CHAR/TO_TIMESTAMP format into ``(True, keyword)`` and ``(False, text)`` pieces.

    Keywords are matched case-sensitively in TDengine's order; ``"..."`` is literal text and ``\\"``
    a literal quote; anything else is printed as is (manual, TO_CHAR usage notes).
    """
    out: list[tuple[bool, str]] = []
    text: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt.startswith('\\"', i):
            text.append('"')
            i += 2
            continue
        if fmt[i] == '"':
            end = fmt.find('"', i + 1)
            end = len(fmt) if end < 0 else end
            text.append(fmt[i + 1 : end])
            i = end + 1
            continue
        word = next((w for w in _FORMAT_WORDS if fmt.startswith(w[0], i)), None)
        if word is None:
            text.append(fmt[i])
            i += 1
            continue
        if text:
            out.append((False, "".join(text)))
            text = []
        out.append((True, word[1]))
        i += len(word[0])
    if text:
        out.append((False, "".join(text)))
    return out


def _escape_pattern(text: str, duck: bool) -> str:
    if duck:
        return text.replace("%", "%%")
    return "'" + text.replace("'", "''") + "'" if text else ""


def _to_char_pieces(tokens: list[tuple[bool, str]], wall: exp.Expr, c: Call) -> exp.Expr:
    """Concatenation printing ``tokens`` for the wall-clock timestamp ``wall`` (runs of plain fields
    and text become one strftime / date_format call)."""
    formatter = "strftime" if c.duck else "date_format"
    parts: list[exp.Expr] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            parts.append(_fn(formatter, wall.copy(), _str("".join(run))))
            run.clear()

    for is_word, value in tokens:
        if not is_word:
            run.append(_escape_pattern(value, c.duck))
        elif value in _PRINT:
            run.append(_PRINT[value][0 if c.duck else 1])
        else:
            flush()
            parts.append(_format_word(value, wall, c))
    flush()
    return _concat(parts, c) if parts else _str("")


def _format_word(word: str, wall: exp.Expr, c: Call) -> exp.Expr:
    formatter = "strftime" if c.duck else "date_format"

    def field(duck_code: str, java: str) -> exp.Expr:
        return _fn(formatter, wall.copy(), _str(duck_code if c.duck else java))

    if word in _NAMES:
        duck_code, java, case, pad = _NAMES[word]
        out = field(duck_code, java)
        if pad:
            out = _fn("rpad", out, _num(9), _str(" "))
        return {"upper": exp.Upper, "lower": exp.Lower}[case](this=out) if case else out
    if word in ("YYY", "Y"):
        return _fn("right", field("%Y", "yyyy"), _num(len(word)))
    if word == "D":  # day of the week, Sunday = 1
        dow = _fn("dayofweek", wall.copy())
        return _cast(dow + _num(1) if c.duck else dow, "TEXT")
    if word in ("AM", "am", "A.M.", "a.m."):
        am, pm = (word, word.replace("A", "P").replace("a", "p"))
        return _case((exp.Hour(this=wall.copy()) < _num(12), _str(am)), default=_str(pm))
    # TZH: hours of the zone's offset at that instant, +08
    offset_h = _int_div(
        _epoch_us(wall.copy(), c) - _epoch_us(_from_local(wall.copy(), c), c), _num(3_600_000_000)
    )
    sign = _case((offset_h < _num(0), _str("-")), default=_str("+"))
    return _concat([sign, _fn("lpad", _cast(exp.Abs(this=offset_h.copy()), "TEXT"), _num(2), _str("0"))], c)


def _to_char(c: Call) -> exp.Expr:
    """TO_CHAR(ts, format): ``ts`` printed in ``Scope.tz`` with TDengine's format keywords."""
    if c.kinds[0] not in ("ts", "int", None):
        raise c.error("expects a timestamp", Code.WRONG_VALUE_TYPE)
    tokens = _format_tokens(c.literal_str(1, "the format"))
    return _to_char_pieces(tokens, _to_local(_as_ts(c, 0), c), c)


def _to_timestamp(c: Call) -> exp.Expr:
    """TO_TIMESTAMP(s, format): parse with TDengine's format keywords; without TZH the text is a
    wall-clock time in ``Scope.tz``. Text that does not match gives NULL.

    Raises:
        SqlError: a non-constant format, or a keyword that cannot be parsed (YYY, Y, D, A.M.).
    """
    if c.kinds[0] not in ("str", None):
        raise c.error("expects a string to parse", Code.WRONG_VALUE_TYPE)
    pattern: list[str] = []
    zoned = False
    for is_word, value in _format_tokens(c.literal_str(1, "the format")):
        if not is_word:
            pattern.append(_escape_pattern(value, c.duck))
            continue
        if value not in _PARSE:
            raise c.error(f"cannot parse format keyword {value}", Code.NOT_SUPPORTED)
        zoned = zoned or value == "TZH"
        pattern.append(_PARSE[value][0 if c.duck else 1])
    parsed = _fn("try_strptime" if c.duck else "try_to_timestamp", c.args[0], _str("".join(pattern)))
    return parsed if zoned else _from_local(parsed, c)


# --------------------------------------------------------------------------- time and date


def _now(c: Call) -> exp.Expr:
    return exp.CurrentTimestamp()


def _today(c: Call) -> exp.Expr:
    """TODAY(): midnight of the current day in ``Scope.tz``, as a UTC timestamp."""
    day = _cast(_cast(_to_local(exp.CurrentTimestamp(), c), "DATE"), "TIMESTAMP")
    return _from_local(day, c)


def _timezone(c: Call) -> exp.Expr:
    return _str(c.scope.tz)


def _timediff(c: Call) -> exp.Expr:
    """TIMEDIFF(a, b[, unit]): ``a - b`` in ``unit`` (default: the database precision), truncated
    toward zero; may be negative (TDengine >= 3.3.3)."""
    unit = _time_unit(c, 2) if len(c.args) == 3 else None
    diff = _epoch_us(_as_ts(c, 0), c) - _epoch_us(_as_ts(c, 1), c)
    if unit is None:
        return _us_to_epoch(exp.paren(diff, copy=False), c.scope.precision)
    if unit.unit == "b":
        return exp.paren(diff, copy=False) * _num(1000)
    size_us = unit.ns // 1000
    return diff if size_us == 1 else _int_div(diff, _num(size_us))


def _timetruncate(c: Call) -> exp.Expr:
    """TIMETRUNCATE(ts, unit[, use_current_timezone]): floor to ``unit``. 1d and 1w count from local
    midnight of ``Scope.tz`` (its current offset, as TDengine) unless the third argument is 0; 1w
    floors to Thursdays, the weekday of 1970-01-01."""
    unit = _time_unit(c, 1)
    if unit is None:
        raise c.error("expects a time unit such as 1h as its second argument")
    local = c.literal_int(2, "use_current_timezone (0 or 1)") if len(c.args) == 3 else 1
    if local not in (0, 1):
        raise c.error("expects 0 or 1 as use_current_timezone")
    ts = _as_ts(c, 0)
    size_us = unit.ns // 1000
    if size_us <= 1:
        return ts
    us = _epoch_us(ts, c)
    offset_us = _zone_offset_s(c.scope.tz) * 1_000_000 if local and unit.unit in "dw" else 0
    shifted = us + _num(offset_us) if offset_us else us
    return _ts_from_us(us.copy() - _pmod(exp.paren(shifted, copy=False), size_us), c)


def _dayno(date: exp.Expr, c: Call) -> exp.Expr:
    """Days since 1970-01-01 of a DATE."""
    if c.duck:
        return _fn("datediff", _str("day"), _cast(_str("1970-01-01"), "DATE"), date)
    return _fn("unix_date", date)


def _week(c: Call) -> exp.Expr:
    """WEEK(ts[, mode]): the week number by MySQL's eight modes (manual, WEEK mode table).

    ``mode`` bit 0: weeks start on Monday; bit 1: range 1-53 (days before week 1 belong to the
    previous year's last week); bit 2 (flipped for Sunday modes): week 1 is the first week with the
    first weekday, else the first with 4 days. Mode 3 is ISO 8601 (the backends' WEEKOFYEAR).
    """
    mode = c.literal_int(1, "mode") if len(c.args) == 2 else 0
    if not 0 <= mode <= 7:
        raise c.error(f"expects a mode between 0 and 7, got {mode}")
    date = _local_date(c, 0)
    if mode == 3:
        return _fn("weekofyear", date)
    flags = mode if mode & 1 else mode ^ 4
    monday_first, week_year, first_weekday = bool(flags & 1), bool(flags & 2), bool(flags & 4)
    day = _dayno(date, c)

    def week1_start(year_delta: int) -> exp.Expr:
        year = _fn("year", date.copy())
        if year_delta:
            year = year + _num(year_delta)
        jan1 = _dayno(_fn("make_date", year, _num(1), _num(1)), c)
        weekday = _pmod(jan1 + _num(3 if monday_first else 4), 7)  # 1970-01-01 was a Thursday
        if first_weekday:
            return jan1.copy() + (_num(7) - weekday) % _num(7)
        return _case(
            (weekday >= _num(4), jan1.copy() + _num(7) - weekday.copy()), default=jan1.copy() - weekday.copy()
        )

    def number(start: exp.Expr) -> exp.Expr:
        return _int_div(day.copy() - start, _num(7)) + _num(1)

    before = number(week1_start(-1)) if week_year else _num(0)
    whens: list[tuple[exp.Expr, exp.Expr]] = [(day.copy() < week1_start(0), before)]
    if week_year:
        whens.append((day.copy() >= week1_start(1), _num(1)))
    return _case(*whens, default=number(week1_start(0)))


def _weekofyear(c: Call) -> exp.Expr:
    return _fn("weekofyear", _local_date(c, 0))


def _weekday(c: Call) -> exp.Expr:
    """WEEKDAY(ts): 0 = Monday ... 6 = Sunday."""
    date = _local_date(c, 0)
    return _fn("isodow", date) - _num(1) if c.duck else _fn("weekday", date)


def _dayofweek(c: Call) -> exp.Expr:
    """DAYOFWEEK(ts): 1 = Sunday ... 7 = Saturday."""
    date = _local_date(c, 0)
    return _fn("dayofweek", date) + _num(1) if c.duck else _fn("dayofweek", date)


# --------------------------------------------------------------------------- geometry

# TDengine SQL manual, "Geometry Functions": the conversions run as DuckDB functions of the
# session (``query.duck.GEOMETRY_UDFS``: WKT <-> WKB, sql/typed_values.py); the predicates
# (ST_Intersects, ST_Equals, ST_Touches, ST_Covers, ST_Contains, ST_ContainsProperly) run GEOS
# through ``shapely``, as TDengine runs GEOS.


def _geometry(udf: str, kinds: tuple[tuple[str, ...], ...]) -> Rewrite:
    """A rewrite into the session function ``udf``; argument ``i`` must be of a kind in
    ``kinds[i]`` (or unknown: NULL, an expression): else "Invalid parameter data type"."""

    def rewrite(c: Call) -> exp.Expr:
        if not c.duck:
            raise c.error("is not supported in streams", code=Code.NOT_SUPPORTED)
        for kind, allowed in zip(c.kinds, kinds, strict=True):
            if kind is not None and kind not in allowed:
                raise SqlError(f"Invalid parameter data type : {c.name}", code=Code.FUNC_PARA_TYPE)
        return _fn(udf, *c.args)

    return rewrite


# --------------------------------------------------------------------------- the catalog


def _catalog() -> dict[str, ScalarFunction]:
    specs = [
        # math
        ScalarFunction("abs", 1, 1),
        ScalarFunction("acos", 1, 1, _native(exp.Acos, finite=True), "float"),
        ScalarFunction("asin", 1, 1, _native(exp.Asin, finite=True), "float"),
        ScalarFunction("atan", 1, 1, None, "float"),
        ScalarFunction("ceil", 1, 1),
        ScalarFunction("cos", 1, 1, None, "float"),
        ScalarFunction("floor", 1, 1),
        ScalarFunction("log", 1, 2, _log, "float"),
        ScalarFunction("pow", 2, 2, _pow, "float"),
        ScalarFunction("round", 1, 2, _round),
        ScalarFunction("sin", 1, 1, None, "float"),
        ScalarFunction("sqrt", 1, 1, _native(exp.Sqrt, finite=True), "float"),
        ScalarFunction("tan", 1, 1, None, "float"),
        ScalarFunction("pi", 0, 0, None, "float"),
        ScalarFunction("truncate", 2, 2, _truncate),
        ScalarFunction("exp", 1, 1, _native(exp.Exp, finite=True), "float"),
        ScalarFunction("ln", 1, 1, _native(exp.Ln, finite=True), "float"),
        ScalarFunction("mod", 2, 2, _mod),
        ScalarFunction("rand", 0, 1, _rand, "float"),
        ScalarFunction("sign", 1, 1),
        ScalarFunction("degrees", 1, 1, None, "float"),
        ScalarFunction("radians", 1, 1, None, "float"),
        ScalarFunction("crc32", 1, 1, _crc32, "int"),
        # strings
        ScalarFunction("ascii", 1, 1, _ascii, "int"),
        ScalarFunction("char", 1, None, _char, "str"),
        ScalarFunction("char_length", 1, 1, _char_length, "int"),
        ScalarFunction("concat", 2, 8, _concat_fn, "str"),
        ScalarFunction("concat_ws", 3, 9, _concat_ws, "str"),
        ScalarFunction("length", 1, 1, _length, "int"),
        ScalarFunction("lower", 1, 1, None, "str"),
        ScalarFunction("upper", 1, 1, None, "str"),
        ScalarFunction("trim", 1, 2, _trim, "str"),
        ScalarFunction("substr", 2, 3, _substr, "str"),
        ScalarFunction("position", 2, 2, _position, "int"),
        ScalarFunction("replace", 3, 3, None, "str"),
        ScalarFunction("repeat", 2, 2, None, "str"),
        ScalarFunction("substring_index", 3, 3, _substring_index, "str"),
        ScalarFunction("to_base64", 1, 1, _to_base64, "str"),
        ScalarFunction("greatest", 2, None, _extreme(exp.Greatest)),
        ScalarFunction("least", 2, None, _extreme(exp.Least)),
        # conversion
        ScalarFunction("cast", 1, 1, _cast_fn),
        ScalarFunction("to_iso8601", 1, 2, _to_iso8601, "str"),
        ScalarFunction("to_json", 1, 1, _to_json),
        ScalarFunction("to_unixtimestamp", 1, 2, _to_unixtimestamp, "int"),
        ScalarFunction("to_timestamp", 2, 2, _to_timestamp, "ts"),
        ScalarFunction("to_char", 2, 2, _to_char, "str"),
        # time and date
        ScalarFunction("now", 0, 0, _now, "ts"),
        ScalarFunction("today", 0, 0, _today, "ts"),
        ScalarFunction("timezone", 0, 0, _timezone, "str"),
        ScalarFunction("timediff", 2, 3, _timediff, "int"),
        ScalarFunction("timetruncate", 2, 3, _timetruncate, "ts"),
        ScalarFunction("week", 1, 2, _week, "int"),
        ScalarFunction("weekday", 1, 1, _weekday, "int"),
        ScalarFunction("dayofweek", 1, 1, _dayofweek, "int"),
        ScalarFunction("weekofyear", 1, 1, _weekofyear, "int"),
        # geometry
        ScalarFunction("st_geomfromtext", 1, 1, _geometry("td_st_geomfromtext", (("str",),)), "geo"),
        ScalarFunction("st_astext", 1, 1, _geometry("td_st_astext", (("geo",),)), "str"),
        ScalarFunction("st_makepoint", 2, 2, _geometry("td_st_makepoint", (("int", "float"),) * 2), "geo"),
        *(
            ScalarFunction(f"st_{n}", 2, 2, _geometry(f"td_st_{n}", (("geo",),) * 2), "bool")
            for n in ("intersects", "equals", "touches", "covers", "contains", "containsproperly")
        ),
    ]
    catalog = {f.name: f for f in specs}
    for alias, name in (("substring", "substr"), ("ltrim", "trim"), ("rtrim", "trim"), ("power", "pow")):
        catalog[alias] = catalog[name]
    return catalog


FUNCTIONS: dict[str, ScalarFunction] = _catalog()
"""TDengine function name (lower case, aliases included) -> its catalog entry."""

# sqlglot parses most of TDengine's (MySQL-like) calls into typed nodes
_TYPED: dict[type[exp.Expr], str] = {
    exp.Abs: "abs", exp.Acos: "acos", exp.Asin: "asin", exp.Atan: "atan", exp.Ceil: "ceil",
    exp.Cos: "cos", exp.Floor: "floor", exp.Ln: "ln", exp.Log: "log", exp.Pow: "pow",
    exp.Round: "round", exp.Sin: "sin", exp.Sqrt: "sqrt", exp.Tan: "tan", exp.Exp: "exp",
    exp.Mod: "mod", exp.Sign: "sign", exp.Degrees: "degrees", exp.Radians: "radians",
    exp.Trunc: "truncate", exp.Pi: "pi", exp.Rand: "rand", exp.Ascii: "ascii", exp.Chr: "char",
    exp.Concat: "concat", exp.ConcatWs: "concat_ws", exp.Lower: "lower", exp.Upper: "upper",
    exp.Trim: "trim", exp.Substring: "substr", exp.StrPosition: "position", exp.Replace: "replace",
    exp.Repeat: "repeat", exp.SubstringIndex: "substring_index", exp.ToBase64: "to_base64",
    exp.Greatest: "greatest", exp.Least: "least", exp.ToChar: "to_char", exp.Week: "week",
    exp.DayOfWeek: "dayofweek", exp.WeekOfYear: "weekofyear", exp.StPoint: "st_makepoint",
}  # fmt: skip


def td_name(node: exp.Expr) -> str | None:
    """TDengine name of a catalog function call (``exp.Anonymous`` or the typed node ``sqlglot``
    parsed it into), or None for anything else.

    ``CAST`` counts only with a TDengine target type, so the translator's own casts (to
    ``TIMESTAMPTZ``) pass untouched; ``LENGTH`` is parsed as ``exp.Length(binary=True)`` and
    ``CHAR_LENGTH`` as ``exp.Length``.
    """
    if isinstance(node, exp.Anonymous):
        name = str(node.name).lower()
        return name if name in FUNCTIONS else None
    if type(node) is exp.Cast:
        return "cast" if node.args["to"].this in CAST_TYPES else None
    if isinstance(node, exp.Length):
        return "length" if node.args.get("binary") is True else "char_length"
    return _TYPED.get(type(node))


def lookup(node: exp.Expr) -> ScalarFunction | None:
    """The catalog entry of a call node (see :func:`td_name`), or None."""
    name = td_name(node)
    return FUNCTIONS[name] if name is not None else None


# argument order where it is not sqlglot's (CHAR_LENGTH(s, x) has ``x`` as ``binary``)
_ARG_KEYS: dict[type[exp.Expr], tuple[str, ...]] = {
    exp.StrPosition: ("substr", "this", "position", "occurrence"),
    exp.Trim: ("this", "expression"),
    exp.Length: ("this", "binary"),
}


def call_args(node: exp.Expr) -> list[exp.Expr]:
    """Arguments of a catalog call in TDengine's order (``POSITION(a IN b)`` is ``[a, b]``;
    ``TRIM(BOTH r FROM s)`` is ``[s, r]``; CAST's target type is not an argument)."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    if isinstance(node, exp.Cast):
        return [node.this]
    keys = _ARG_KEYS.get(type(node), tuple(node.arg_types))
    out: list[exp.Expr] = []
    for key in keys:
        value = node.args.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.TsOrDsToDate) and set(item.args) <= {"this"}:
                item = item.this  # WEEK(x) & co. are parsed as WEEK(TS_OR_DS_TO_DATE(x))
            if isinstance(item, exp.Expr):
                out.append(item)
    return out


def rewrite(node: exp.Expr, backend: str, scope: Scope, recurse: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """Backend expression for a catalog function call.

    Args:
        node: a call :func:`lookup` recognises (TDengine tree, after the translator's normalisation).
        backend: ``duckdb`` or ``spark``.
        scope: column types, database precision and time zone.
        recurse: rewrites an argument subtree for the backend (the translator's own pass).

    Returns:
        A new tree; ``node`` itself (its arguments still to be visited) when the backends' function
        of that name already behaves as TDengine's.

    Raises:
        SqlError: INVALID_FUNCTION for a wrong number of arguments or a bad option (``function substr
            expects 2 or 3 arguments, got 1``), WRONG_VALUE_TYPE for an argument of the wrong kind,
            NOT_SUPPORTED for TO_JSON and RAND(seed).
    """
    fn = lookup(node)
    if fn is None:
        raise ValueError(f"not a catalog function call: {node.sql()}")
    raw = call_args(node)
    fn.check_arity(len(raw))
    if fn.rewrite is None:
        return node
    call = Call(
        name=fn.name,
        # a bare duration is a time-unit option (1b included), read from ``raw``, never SQL
        args=[a.copy() if isinstance(a, exp.Interval) else recurse(a.copy()) for a in raw],
        raw=raw,
        kinds=[kind_of(a, scope) for a in raw],
        node=node,
        backend=backend,
        scope=scope,
    )
    return fn.rewrite(call)
