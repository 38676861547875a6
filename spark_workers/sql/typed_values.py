"""Values of TDengine's JSON, VARBINARY, GEOMETRY and DECIMAL types: parsing and rendering.

- JSON tags (TDengine SQL manual, "JSON Type"; TDengine's ``parseJsontoTagData``): a tag value is
  a string holding a JSON object; ``''``, blanks and ``'null'`` are a NULL tag; the first of
  duplicate keys wins and the empty key is dropped; a key is 1..256 printable ASCII characters; a
  value is a string, a finite number, a boolean or null (no arrays, no nested objects); the text is
  at most 4095 bytes. The stored form is canonical: keys sorted, no blanks, numbers as cJSON prints
  a double (``35``, ``1.232``), so an object with no keys left is a NULL tag.
- VARBINARY (manual, "Data Types"): a string literal; ``'\\x6162'`` (``\\x`` then an even number of
  hex digits) is those bytes, any other string its UTF-8 bytes; anything else is
  TSDB_CODE_PAR_INVALID_VARBINARY.
- GEOMETRY: Well-Known Text in, Well-Known Binary (little endian, 2D) stored; POINT, LINESTRING,
  POLYGON, MULTIPOINT, MULTILINESTRING, MULTIPOLYGON and GEOMETRYCOLLECTION (OGC Simple Features
  1.2.1, the WKT and WKB grammars); :func:`wkb_to_wkt` renders WKB back as TDengine's ST_AsText.
- DECIMAL(p, s) (3.3.6+): digits beyond the scale are rounded half away from zero, an integer part
  longer than ``p - s`` digits is TSDB_CODE_DECIMAL_OVERFLOW.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import struct
from typing import Any

from spark_workers.errors import Code, SqlError
from spark_workers.tdtypes import MAX_JSON_KEY_LENGTH, MAX_JSON_LENGTH

# ---------------------------------------------------------------------- JSON tags


def _json_number(v: float) -> str:
    """A number as cJSON prints a double: ``%d`` when it is an int32, else ``%1.15g`` or, when that
    does not read back, ``%1.17g``."""
    if v == int(v) and -(2**31) <= v <= 2**31 - 1:
        return str(int(v))
    text = f"{v:1.15g}"
    return text if float(text) == v else f"{v:1.17g}"


def _json_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return _json_number(float(v))
    return json.dumps(v, ensure_ascii=False)


def _first_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def json_tag(value: Any, what: str) -> str | None:
    """The stored (canonical) text of a JSON tag value, or None for a NULL tag.

    Args:
        value: the constant given (a Python string; None for NULL).
        what: the tag named in messages (``tag j JSON``).

    Raises:
        SqlError: INVALID_JSON_TYPE for a value that is not a string or holds an array or an
            object; INVALID_JSON for text that is not a JSON object or has a bad key;
            VALUE_OUT_OF_RANGE for text longer than 4095 bytes.
    """
    if value is None:
        return None
    if not isinstance(value, str) or isinstance(value, bool):
        raise SqlError(f"Invalid JSON data type: {what} takes a string holding a JSON object",
                       code=Code.INVALID_JSON_TYPE)  # fmt: skip
    text = value.strip()
    if text == "" or text.lower() == "null":
        return None
    if len(value.encode("utf-8")) > MAX_JSON_LENGTH:
        raise SqlError(
            f"JSON value of {what} is longer than {MAX_JSON_LENGTH} bytes", code=Code.VALUE_OUT_OF_RANGE
        )
    try:
        obj = json.loads(text, object_pairs_hook=_first_wins, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise SqlError(f"Invalid JSON format: {what} is not a JSON object", code=Code.INVALID_JSON) from None
    if not isinstance(obj, dict):
        raise SqlError(f"Invalid JSON format: {what} is not a JSON object", code=Code.INVALID_JSON)
    parts = []
    for key in sorted(obj, key=lambda k: k.encode("utf-8")):
        if key == "":
            continue
        if len(key) > MAX_JSON_KEY_LENGTH:
            raise SqlError(
                f"Invalid JSON format: key of {what} is longer than {MAX_JSON_KEY_LENGTH} characters",
                code=Code.INVALID_JSON,
            )
        if not all(32 <= ord(c) <= 126 for c in key):
            raise SqlError(
                f"Invalid JSON format: key {key!r} of {what} is not printable ASCII", code=Code.INVALID_JSON
            )
        v = obj[key]
        if isinstance(v, list | dict):
            raise SqlError(
                f"Invalid JSON data type: value of key {key!r} of {what} is an array or an object "
                "(a string, number, bool or null is expected)",
                code=Code.INVALID_JSON_TYPE,
            )
        if isinstance(v, float) and not math.isfinite(v):
            raise SqlError(
                f"Invalid JSON data type: value of key {key!r} of {what} is not a finite number",
                code=Code.INVALID_JSON_TYPE,
            )
        parts.append(json.dumps(key) + ":" + _json_scalar(v))
    return "{" + ",".join(parts) + "}" if parts else None


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN / Infinity are not JSON


# ---------------------------------------------------------------------- VARBINARY

_HEX_RE = re.compile(r"^(?:[0-9a-fA-F]{2})*$")


def varbinary(value: Any, raw: str | None, what: str) -> bytes | None:
    """Bytes of a VARBINARY value: ``raw`` is the literal as written between its quotes (None when
    the value is not a string literal); ``\\x`` + hex digits are bytes, other strings UTF-8.

    Raises:
        SqlError: INVALID_VARBINARY for a non-string value or a ``\\x`` literal whose digits are
            not pairs of hex digits.
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise SqlError(f"Invalid varbinary value: {value!r} for {what} (a string is expected)",
                       code=Code.INVALID_VARBINARY)  # fmt: skip
    text = raw if raw is not None else value
    if len(text) > 2 and text[0] == "\\" and text[1] in "xX":
        digits = text[2:]
        if not _HEX_RE.match(digits):
            raise SqlError(f"Invalid varbinary value: {text!r} for {what}", code=Code.INVALID_VARBINARY)
        return bytes.fromhex(digits)
    return value.encode("utf-8")


# ---------------------------------------------------------------------- GEOMETRY (WKT <-> WKB)

_WKB_TYPES = {
    "POINT": 1,
    "LINESTRING": 2,
    "POLYGON": 3,
    "MULTIPOINT": 4,
    "MULTILINESTRING": 5,
    "MULTIPOLYGON": 6,
    "GEOMETRYCOLLECTION": 7,
}
_WKT_NAMES = {v: k for k, v in _WKB_TYPES.items()}
_TOKEN_RE = re.compile(r"\s*([A-Za-z]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[(),])")


class _Wkt:
    """A recursive-descent reader of 2D WKT, writing WKB as it goes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if m is None:
                if text[pos:].strip() == "":
                    break
                raise self.bad()
            self.toks.append(m.group(1))
            pos = m.end()
        self.i = 0

    def bad(self) -> SqlError:
        return SqlError(f"Invalid WKT geometry: {self.text!r}", code=Code.SYNTAX_ERROR)

    def take(self) -> str:
        if self.i >= len(self.toks):
            raise self.bad()
        self.i += 1
        return self.toks[self.i - 1]

    def expect(self, tok: str) -> None:
        if self.take() != tok:
            raise self.bad()

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def coord(self) -> bytes:
        try:
            x, y = float(self.take()), float(self.take())
        except ValueError:
            raise self.bad() from None
        return struct.pack("<dd", x, y)

    def seq(self, item: Any) -> list[bytes]:
        self.expect("(")
        out = [item()]
        while self.peek() == ",":
            self.take()
            out.append(item())
        self.expect(")")
        return out

    def ring(self, closed: bool = False) -> bytes:
        """Points of a line (2 or more) or, ``closed``, of a polygon ring (4 or more, the last
        the first: GEOS refuses anything else, and TDengine with it)."""
        pts = self.seq(self.coord)
        if len(pts) < (4 if closed else 2) or (closed and pts[0] != pts[-1]):
            raise self.bad()
        return struct.pack("<I", len(pts)) + b"".join(pts)

    def polygon_body(self) -> bytes:
        rings = self.seq(lambda: self.ring(closed=True))
        return struct.pack("<I", len(rings)) + b"".join(rings)

    def geometry(self) -> bytes:
        name = self.take().upper()
        kind = _WKB_TYPES.get(name)
        if kind is None:
            raise self.bad()
        head = struct.pack("<BI", 1, kind)
        if self.peek() is not None and self.peek().upper() == "EMPTY":  # type: ignore[union-attr]
            self.take()
            if kind == 1:
                return head + struct.pack("<dd", math.nan, math.nan)
            return head + struct.pack("<I", 0)
        if kind == 1:
            self.expect("(")
            body = self.coord()
            self.expect(")")
            return head + body
        if kind == 2:
            return head + self.ring()
        if kind == 3:
            return head + self.polygon_body()
        if kind == 4:
            pts = self.seq(self._multipoint_item)
            return head + struct.pack("<I", len(pts)) + b"".join(pts)
        if kind == 5:
            parts = self.seq(lambda: struct.pack("<BI", 1, 2) + self.ring())
        elif kind == 6:
            parts = self.seq(lambda: struct.pack("<BI", 1, 3) + self.polygon_body())
        else:
            parts = self.seq(self.geometry)
        return head + struct.pack("<I", len(parts)) + b"".join(parts)

    def _multipoint_item(self) -> bytes:
        head = struct.pack("<BI", 1, 1)
        if self.peek() == "(":
            self.take()
            c = self.coord()
            self.expect(")")
            return head + c
        return head + self.coord()


def wkt_to_wkb(text: str, what: str = "a GEOMETRY value") -> bytes:
    """Well-Known Binary (little endian) of a 2D WKT text.

    Raises:
        SqlError: SYNTAX_ERROR naming the text when it is not WKT (TDengine: the GEOS reader's
            "Invalid WKT" as a syntax error message).
    """
    r = _Wkt(text)
    try:
        out = r.geometry()
    except (struct.error, OverflowError):
        raise r.bad() from None
    if r.i != len(r.toks):
        raise r.bad()
    return out


def _fmt(v: float) -> str:
    """A coordinate as TDengine's ST_AsText prints it: fixed point, six decimals (GEOS' WKT writer
    as TDengine sets it up; tests/system-test/2-query/geometry.py: ``POINT (1.000000 1.500000)``)."""
    if math.isnan(v):
        return "NaN"
    return f"{v:.6f}"


class _WkbReader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        out = struct.unpack_from(self.order + fmt, self.data, self.pos)
        self.pos += size
        return out

    order = "<"

    def coords(self, n: int) -> str:
        pts = []
        for _ in range(n):
            x, y = self.unpack("dd")
            pts.append(f"{_fmt(x)} {_fmt(y)}")
        return ", ".join(pts)

    def geometry(self) -> str:
        (bo,) = struct.unpack_from("B", self.data, self.pos)
        self.pos += 1
        self.order = "<" if bo == 1 else ">"
        (kind,) = self.unpack("I")
        name = _WKT_NAMES.get(kind)
        if name is None:
            raise ValueError(kind)
        if kind == 1:
            x, y = self.unpack("dd")
            return "POINT EMPTY" if math.isnan(x) else f"POINT ({_fmt(x)} {_fmt(y)})"
        (n,) = self.unpack("I")
        if n == 0:
            return f"{name} EMPTY"
        if kind == 2:
            return f"LINESTRING ({self.coords(n)})"
        if kind == 3:
            rings = []
            for _ in range(n):
                (m,) = self.unpack("I")
                rings.append(f"({self.coords(m)})")
            return f"POLYGON ({', '.join(rings)})"
        parts = [self.geometry() for _ in range(n)]
        if kind == 7:
            return f"GEOMETRYCOLLECTION ({', '.join(parts)})"
        inner = [p[p.index("(") :] for p in parts]
        return f"{name} ({', '.join(inner)})"


def wkb_to_wkt(data: bytes) -> str:
    """WKT of a WKB value (``POINT (1 2)``), as ST_AsText renders it.

    Raises:
        SqlError: FUNC_PARA_VALUE when the bytes are not WKB.
    """
    try:
        return _WkbReader(bytes(data)).geometry()
    except (struct.error, ValueError):
        raise SqlError("Invalid GEOMETRY value: the bytes are not WKB", code=Code.FUNC_PARA_VALUE) from None


def geometry(value: Any, what: str) -> bytes | None:
    """Stored WKB of a GEOMETRY value given as WKT (or already as WKB bytes)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        wkb_to_wkt(value)
        return value
    if not isinstance(value, str):
        raise SqlError(f"Invalid value {value!r} for {what}: a WKT string is expected",
                       code=Code.WRONG_VALUE_TYPE)  # fmt: skip
    return wkt_to_wkb(value, what)


# ---------------------------------------------------------------------- DECIMAL


def decimal_value(value: Any, precision: int, scale: int, what: str) -> decimal.Decimal | None:
    """A DECIMAL(precision, scale) value rounded to ``scale`` digits (half away from zero).

    Raises:
        SqlError: WRONG_VALUE_TYPE for text that is not a number; DECIMAL_OVERFLOW when the
            integer part has more than ``precision - scale`` digits (after rounding).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        value = int(value)
    try:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise decimal.InvalidOperation
            d = decimal.Decimal(repr(value))
        else:
            d = decimal.Decimal(str(value).strip() if isinstance(value, str) else value)
        if not d.is_finite():
            raise decimal.InvalidOperation
        ctx = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)
        q = d.quantize(decimal.Decimal(1).scaleb(-scale), context=ctx)
    except (decimal.InvalidOperation, ValueError, TypeError):
        raise SqlError(f"invalid value {value!r} for {what}", code=Code.WRONG_VALUE_TYPE) from None
    if abs(q) >= decimal.Decimal(10) ** (precision - scale):
        raise SqlError(
            f"Decimal value overflow: {value!r} does not fit {what} "
            f"(at most {precision - scale} digits before the point)",
            code=Code.DECIMAL_OVERFLOW,
        )
    return q


def decimal_text(v: decimal.Decimal, scale: int) -> str:
    """A DECIMAL as TDengine prints it: fixed point with exactly ``scale`` digits (``1.50``)."""
    return f"{v:.{scale}f}"
