"""InfluxDB line protocol as TDengine's schemaless writing reads it.

TDengine manual, "Ingesting Data in Schemaless Mode" (developer guide), "Schemaless Writing Line
Protocol": a line is ``measurement[,tag_key=tag_value...] field_key=field_value[,...] [timestamp]``.

- Escapes (the manual's table): in the measurement ``,`` and space; in tag keys, tag values and
  field keys ``,``, ``=`` and space; in a quoted field value ``"`` and ``\\``. A backslash before
  any other character is itself (``\\`` alone needs no escape); ``\\\\`` is one backslash.
- Tag values are NCHAR strings. Field values carry their type: ``"abc"`` VARCHAR, ``L"abc"``
  NCHAR; ``t T true True TRUE`` / ``f F false False FALSE`` BOOL; a number without suffix or with
  ``f64`` DOUBLE, ``f32`` FLOAT, ``i8 i16 i32`` TINYINT / SMALLINT / INT, ``i64`` or ``i`` BIGINT,
  ``u8 u16 u32 u64 u`` the UNSIGNED ones.
- A missing timestamp (or ``0``) is the server's time (TDengine's ``smlParseInfluxTime``): the
  point's ``ts`` is None; the writer uses one time per request.
- Blank lines and lines starting with ``#`` are skipped (InfluxDB's comments).

Differences: ``G"..."`` (GEOMETRY) and ``B"..."`` (VARBINARY) field values are refused with
NOT_SUPPORTED (tdweb's schemaless path maps neither), never stored as something else.

Every error is TDengine's ``TSDB_CODE_SML_INVALID_DATA`` (0x3002, "Invalid data format") naming the
line (1-based) and what is wrong.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from spark_workers.errors import Code, SqlError

_NUMBER = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(i8|i16|i32|i64|i|u8|u16|u32|u64|u|f32|f64)?$"
)
_INT_SUFFIX = {
    "i8": ("TINYINT", -(2**7), 2**7 - 1),
    "i16": ("SMALLINT", -(2**15), 2**15 - 1),
    "i32": ("INT", -(2**31), 2**31 - 1),
    "i64": ("BIGINT", -(2**63), 2**63 - 1),
    "i": ("BIGINT", -(2**63), 2**63 - 1),
    "u8": ("TINYINT UNSIGNED", 0, 2**8 - 1),
    "u16": ("SMALLINT UNSIGNED", 0, 2**16 - 1),
    "u32": ("INT UNSIGNED", 0, 2**32 - 1),
    "u64": ("BIGINT UNSIGNED", 0, 2**64 - 1),
    "u": ("BIGINT UNSIGNED", 0, 2**64 - 1),
}
_TRUE = frozenset({"t", "T", "true", "True", "TRUE"})
_FALSE = frozenset({"f", "F", "false", "False", "FALSE"})
_FLOAT_MAX = 3.4028234663852886e38


class Field(NamedTuple):
    """One field of a line: its TDengine type name (``DOUBLE``, ``BIGINT UNSIGNED``, ``VARCHAR``,
    ``NCHAR``...) and value (int, float, bool or str). A named tuple: built once per field of
    every line, it must be cheap."""

    name: str
    kind: str
    value: Any


class Point(NamedTuple):
    """One parsed line.

    Attributes:
        measurement: the supertable name, unescaped.
        tags: ``(key, value)`` pairs in the order written (values are NCHAR strings).
        fields: the fields in the order written.
        ts: the timestamp in the request's precision units, None for "the server's time".
        line: the 1-based line number in the request body.
    """

    measurement: str
    tags: tuple[tuple[str, str], ...]
    fields: tuple[Field, ...]
    ts: int | None
    line: int


def invalid(line: int, what: str, code: int = Code.SML_INVALID_DATA) -> SqlError:
    """TDengine's 0x3002 "Invalid data format" naming line ``line`` and ``what``."""
    return SqlError(f"Invalid data format: line {line}: {what}", code=code)


def parse_lines(text: str) -> list[Point]:
    """Every point of a line-protocol body, in order (blank and ``#`` lines skipped).

    A body without backslashes and double quotes (what collectors mostly send) takes a fast path
    that parses each distinct ``measurement,tags`` head once; its points share one tags tuple per
    head (callers may key caches by it).

    Raises:
        SqlError: SML_INVALID_DATA for the first malformed line; NOT_SUPPORTED for a GEOMETRY or
            VARBINARY field value.
    """
    plain = "\\" not in text and '"' not in text
    heads: dict[Any, tuple[str, tuple[tuple[str, str], ...]]] = {}
    points = []
    for n, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        points.append(_parse_plain(stripped, n, heads) if plain else parse_line(stripped, n))
    return points


def parse_line(line: str, n: int = 1) -> Point:
    """One line (no newline) as a :class:`Point`; ``n`` is its line number for errors.

    Raises:
        SqlError: SML_INVALID_DATA / NOT_SUPPORTED (see :func:`parse_lines`).
    """
    if "\\" not in line and '"' not in line:
        return _parse_plain(line, n, {})
    return _parse_escaped(line, n)


def _parse_plain(line: str, n: int, heads: dict[Any, tuple[str, tuple[tuple[str, str], ...]]]) -> Point:
    """A line without backslashes and double quotes; ``heads`` caches parsed heads (and, keyed by
    ``(head, field keys...)``, the line shapes whose keys were checked)."""
    parts = line.split(" ")
    if len(parts) != 2 and len(parts) != 3:
        parts = [p for p in parts if p]
        if len(parts) not in (2, 3):
            raise invalid(n, "expected 'measurement[,tags] fields [timestamp]'")
    head = parts[0]
    cached = heads.get(head)
    if cached is None:
        name, _, tag_text = head.partition(",")
        if "," in head and not tag_text:
            raise invalid(n, "an empty tag set after ','")
        tags = tuple(_plain_pair(p, n, "tag") for p in tag_text.split(",")) if tag_text else ()
        if not name:
            raise invalid(n, "the measurement is empty")
        cached = heads[head] = (name, tags)
    fields = []
    keys = [head]
    for part in parts[1].split(","):
        key, eq, value = part.partition("=")
        if not eq or not key or not value:
            raise invalid(n, f"field '{part}' is not key=value")
        fields.append(Field(key, *field_value(value, n, key)))
        keys.append(key)
    shape = tuple(keys)  # the head and the field keys: their duplicate check is done once
    checked = shape in heads
    point = _point(cached[0], cached[1], fields, parts[2] if len(parts) == 3 else "", n, checked)
    if not checked:
        heads[shape] = cached
    return point


def _plain_pair(text: str, n: int, what: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key or (not value and what == "field"):
        raise invalid(n, f"{what} '{text}' is not key=value")
    if "=" in value and what == "tag":
        raise invalid(n, f"tag value of {key} holds an unescaped '='")
    return key, value


def _point(
    name: str,
    tags: tuple[tuple[str, str], ...],
    fields: list[Field],
    ts_text: str,
    n: int,
    checked: bool = False,
) -> Point:
    """Check the parts of a line and build its point (``checked``: its keys are known unique)."""
    if not name:
        raise invalid(n, "the measurement is empty")
    if not fields:
        raise invalid(n, "a line needs at least one field")
    if not checked and len({k.lower() for k, _ in tags} | {f.name.lower() for f in fields}) != len(
        tags
    ) + len(fields):
        seen: set[str] = set()
        for key in [k for k, _ in tags] + [f.name for f in fields]:
            if key.lower() in seen:
                raise invalid(n, f"duplicated key {key}")
            seen.add(key.lower())
    ts: int | None = None
    if ts_text:
        if not (ts_text.isascii() and ts_text.isdigit()):
            if ts_text[0] == "-" and ts_text[1:].isascii() and ts_text[1:].isdigit():
                raise invalid(n, f"invalid timestamp {ts_text[:32]}: negative")
            raise invalid(n, f"invalid timestamp {ts_text[:32]}")
        ts = int(ts_text) or None  # TDengine: 0 is the server's time
    return Point(name, tags, tuple(fields), ts, n)


def field_value(text: str, n: int, key: str) -> tuple[str, Any]:
    """``(kind, value)`` of a field value as written (quotes still on, escapes resolved).

    Raises:
        SqlError: SML_INVALID_DATA for a value of no type (or out of its suffix's range),
            NOT_SUPPORTED for ``G"..."`` / ``B"..."``.
    """
    if not text:
        raise invalid(n, f"field {key} has no value")
    last = text[-1]
    if (
        last == "i" and len(text) < 19 and text.isascii() and text[:-1].isdigit()
    ):  # most integer fields: fast path
        return "BIGINT", int(text[:-1])
    if last.isdigit() and text.isascii() and text.replace(".", "", 1).isdigit():  # a plain decimal: DOUBLE
        return "DOUBLE", float(text)
    first = text[0]
    if first == '"':
        if len(text) < 2 or text[-1] != '"':
            raise invalid(n, f"field {key}: unterminated string")
        return "VARCHAR", text[1:-1]
    if first in "lLgGbB" and len(text) > 1 and text[1] == '"':
        if len(text) < 3 or text[-1] != '"':
            raise invalid(n, f"field {key}: unterminated string")
        if first in "lL":
            return "NCHAR", text[2:-1]
        what = "GEOMETRY" if first in "gG" else "VARBINARY"
        raise invalid(n, f'field {key}: {what} values ({first}"...") are not supported', Code.NOT_SUPPORTED)
    if text in _TRUE:
        return "BOOL", True
    if text in _FALSE:
        return "BOOL", False
    m = _NUMBER.match(text)
    if m is None:
        raise invalid(n, f"field {key}: '{text[:32]}' is neither a number, a bool nor a quoted string")
    number, suffix = m.group(1), m.group(2) or "f64"
    if suffix in ("f64", "f32"):
        v = float(number)
        if math.isinf(v) or (suffix == "f32" and abs(v) > _FLOAT_MAX):
            raise invalid(n, f"field {key}: {text[:32]} is out of range")
        return ("DOUBLE" if suffix == "f64" else "FLOAT"), v
    kind, lo, hi = _INT_SUFFIX[suffix]
    if not re.fullmatch(r"[+-]?\d+", number):
        raise invalid(n, f"field {key}: {text[:32]} is not an integer")
    iv = int(number)
    if not lo <= iv <= hi:
        raise invalid(n, f"field {key}: {text[:32]} is out of range [{lo}, {hi}]")
    return kind, iv


_KEY_ESCAPES = frozenset(",= \\")
_MEASUREMENT_ESCAPES = frozenset(", \\")


def _parse_escaped(line: str, n: int) -> Point:
    """The general parser: a line holding backslashes or double quotes."""
    name, i = _token(line, 0, _MEASUREMENT_ESCAPES, ", ", n)
    tags: list[tuple[str, str]] = []
    if i < len(line) and line[i] == ",":
        while True:
            key, i = _token(line, i + 1, _KEY_ESCAPES, "=, ", n)
            if i >= len(line) or line[i] != "=" or not key:
                raise invalid(n, f"tag '{key}' is not key=value")
            value, i = _token(line, i + 1, _KEY_ESCAPES, "=, ", n)
            tags.append((key, value))
            if i < len(line) and line[i] == "=":
                raise invalid(n, f"tag value of {key} holds an unescaped '='")
            if i >= len(line) or line[i] != ",":
                break
    fields: list[Field] = []
    i = _skip_spaces(line, i)
    while True:
        key, i = _token(line, i, _KEY_ESCAPES, "=, ", n)
        if i >= len(line) or line[i] != "=" or not key:
            raise invalid(n, f"field '{key}' is not key=value")
        kind, value, i = _field(line, i + 1, n, key)
        fields.append(Field(key, kind, value))
        if i < len(line) and line[i] == ",":
            i += 1
            continue
        break
    i = _skip_spaces(line, i)
    ts_text = line[i:].rstrip(" \t")
    if " " in ts_text or "\t" in ts_text:
        raise invalid(n, "unexpected text after the timestamp")
    return _point(name, tuple(tags), fields, ts_text, n)


def _skip_spaces(line: str, i: int) -> int:
    while i < len(line) and line[i] == " ":
        i += 1
    return i


def _token(line: str, i: int, escapes: frozenset[str], stops: str, n: int) -> tuple[str, int]:
    """The unescaped text from ``i`` to the first unescaped character of ``stops``, and its end."""
    out = []
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] in escapes:
            out.append(line[i + 1])
            i += 2
            continue
        if c in stops:
            break
        out.append(c)
        i += 1
    return "".join(out), i


def _field(line: str, i: int, n: int, key: str) -> tuple[str, Any, int]:
    """A field value starting at ``i``: ``(kind, value, end)``; quoted strings may hold any
    character, with ``\\"`` and ``\\\\`` unescaped."""
    start = i
    if line[i : i + 1] == '"' or (line[i : i + 1] in tuple("lLgGbB") and line[i + 1 : i + 2] == '"'):
        prefix = "" if line[i] == '"' else line[i]
        i += len(prefix) + 1
        out = []
        while i < len(line):
            c = line[i]
            if c == "\\" and i + 1 < len(line) and line[i + 1] in '"\\':
                out.append(line[i + 1])
                i += 2
                continue
            if c == '"':
                kind, _ = field_value(prefix + '""', n, key)
                return kind, "".join(out), i + 1
            out.append(c)
            i += 1
        raise invalid(n, f"field {key}: unterminated string")
    while i < len(line) and line[i] not in ", ":
        i += 1
    kind, value = field_value(line[start:i], n, key)
    return kind, value, i
