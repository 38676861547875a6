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

Two readers: :func:`parse_lines` (a :class:`Point` per line, the reference, which raises the
positioned errors) and :func:`parse_columns`, the columnar fast path for what collectors send
(no backslash, no double quote): Arrow string kernels split the whole body and convert a field
column at a time. It accepts a body only when it can show, column by column, that
:func:`parse_lines` parses every line without error and gives the same values; otherwise it
returns None and the caller uses :func:`parse_lines`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
        cached = heads[head] = _plain_head(head, n)
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


def _plain_head(head: str, n: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(measurement, tags)`` of the head ``measurement[,k=v...]`` of a plain line ``n``."""
    name, _, tag_text = head.partition(",")
    if "," in head and not tag_text:
        raise invalid(n, "an empty tag set after ','")
    tags = tuple(_plain_pair(p, n, "tag") for p in tag_text.split(",")) if tag_text else ()
    if not name:
        raise invalid(n, "the measurement is empty")
    return name, tags


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


# --- the columnar fast path -------------------------------------------------------------------

_NUM = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"  # _NUMBER's number, ASCII digits
_INT = r"[+-]?[0-9]+"
# a field kind -> (its number's pattern, its suffixes (the longer first), Arrow type of the number)
_COLUMN_TEXT: dict[str, tuple[str, tuple[str, ...], pa.DataType]] = {
    "DOUBLE": (_NUM, ("f64", ""), pa.float64()),
    "FLOAT": (_NUM, ("f32",), pa.float64()),
    "TINYINT": (_INT, ("i8",), pa.int64()),
    "SMALLINT": (_INT, ("i16",), pa.int64()),
    "INT": (_INT, ("i32",), pa.int64()),
    "BIGINT": (_INT, ("i64", "i"), pa.int64()),
    "TINYINT UNSIGNED": (_INT, ("u8",), pa.int64()),
    "SMALLINT UNSIGNED": (_INT, ("u16",), pa.int64()),
    "INT UNSIGNED": (_INT, ("u32",), pa.int64()),
    "BIGINT UNSIGNED": (_INT, ("u64", "u"), pa.uint64()),
}
_RANGE = {kind: (lo, hi) for kind, lo, hi in _INT_SUFFIX.values()}
_BOOLS = pa.array(sorted(_TRUE | _FALSE))
_TRUES = pa.array(sorted(_TRUE))


@dataclass(frozen=True)
class Shape:
    """The points of a body that write the same measurement and field keys in the same order.

    Attributes:
        keys: the field keys as written.
        kinds: their TDengine type names (``DOUBLE``, ``INT UNSIGNED``, ``BOOL``...): one per key.
        points: int64 array, the indices (into :class:`PointColumns`) of these points, ascending.
        values: one Arrow array per key, aligned with ``points``, no nulls: float64 for DOUBLE
            and FLOAT (FLOAT values within its range), int64 for the signed integers and the
            unsigned ones up to 32 bits (within the suffix's range), uint64 for BIGINT UNSIGNED,
            bool for BOOL.
    """

    keys: tuple[str, ...]
    kinds: tuple[str, ...]
    points: np.ndarray
    values: tuple[pa.Array, ...]


@dataclass(frozen=True)
class PointColumns:
    """The points of a body as columns: what :func:`parse_lines` gives, point for point.

    Attributes:
        lines: int64 array, the 1-based line number of each point (blank and ``#`` lines have
            none).
        heads: the distinct heads ``(measurement, tags)`` (as :attr:`Point.measurement` and
            :attr:`Point.tags`), in the order of their first point.
        head: int64 array, each point's index into ``heads``.
        ts: int64 array, each point's timestamp in the request's precision units; 0 for "the
            server's time" (:attr:`Point.ts` None: missing or written as 0).
        shapes: the distinct (measurement, field-key sequence) pairs' points, in the order of
            their first point.
        shape: int64 array, each point's index into ``shapes``.
    """

    lines: np.ndarray
    heads: list[tuple[str, tuple[tuple[str, str], ...]]]
    head: np.ndarray
    ts: np.ndarray
    shapes: list[Shape]
    shape: np.ndarray


def parse_columns(text: str) -> PointColumns | None:
    """The points of a plain line-protocol body as columns, or None where :func:`parse_lines`
    must read it.

    None for a body with a backslash, a double quote, a tab, a carriage return not ending a line
    or a lone surrogate (the reference path's rules for those are not repeated here), and
    whenever a column check cannot show that :func:`parse_lines` accepts every line with these
    values: a line other than ``head fields [digits]`` with single spaces, a head
    :func:`parse_lines` refuses, an empty key, a field key written twice in a line
    (case-insensitively, with the tags), a field column whose texts are not all of one kind
    (its first text's; Unicode digits included), a number out of its type's range or a timestamp
    above int64. It never raises.

    Cost: a few Arrow string kernels over the whole body (split, dictionary encode, regular
    expression per field column, cast) and Python per distinct head and per distinct field-key
    sequence, never per line: about 1 µs per line of ``m,t1=a,t2=b,t3=c f1=1.5,f2=3i,f3=0.25 <ts>``.
    """
    if "\\" in text or '"' in text or "\t" in text or len(text) >= 2**30 or not text:
        return None
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")  # parse_lines strips the \r ending a line
    try:
        return _columns(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, SqlError, UnicodeEncodeError):
        return None  # UnicodeEncodeError: a lone surrogate, which Arrow's UTF-8 cannot hold


def _columns(text: str) -> PointColumns | None:
    """:func:`parse_columns` of a body without ``\\r``; Arrow raises ArrowInvalid on a cast it
    cannot make (a number of no Arrow syntax, an int64 overflow), :func:`_plain_head` SqlError."""
    rows = pc.split_pattern(pa.array([text], pa.string()), "\n").flatten()
    keep = pc.and_(pc.not_equal(rows, ""), pc.invert(pc.starts_with(rows, "#")))
    keep_np = keep.to_numpy(zero_copy_only=False)
    lines = np.flatnonzero(keep_np) + 1
    n = len(lines)
    if n == 0:
        return None
    parts = pc.split_pattern(rows.filter(keep), " ")
    sizes = pc.list_value_length(parts).to_numpy()
    if not np.all((sizes == 2) | (sizes == 3)):
        return None
    flat = parts.flatten()
    if pc.any(pc.equal(flat, "")).as_py():  # parse_lines reads "a  b" and "a b " its own way
        return None
    starts = parts.offsets.to_numpy()[:-1].astype(np.int64) - int(parts.offsets[0].as_py())
    # timestamps: ASCII digits only (no sign: parse_lines refuses "-0"), int64
    ts = np.zeros(n, np.int64)
    with_ts = np.flatnonzero(sizes == 3)
    if len(with_ts):
        ts_text = flat.take(starts[with_ts] + 2)
        if not pc.all(pc.ascii_is_decimal(ts_text)).as_py():
            return None
        ts[with_ts] = pc.cast(ts_text, pa.int64()).to_numpy()
    heads, head = _heads(flat.take(starts), lines)
    fields = pc.split_pattern(flat.take(starts + 1), ",")
    counts = pc.list_value_length(fields).to_numpy()
    pairs = pc.split_pattern(fields.flatten(), "=", max_splits=1)
    if pc.min(pc.list_value_length(pairs)).as_py() != 2:  # a field without '='
        return None
    keys = pc.list_element(pairs, 0).dictionary_encode()
    key_names = keys.dictionary.to_pylist()
    if "" in key_names:
        return None
    values = pc.list_element(pairs, 1)
    field_starts = fields.offsets.to_numpy()[:-1].astype(np.int64) - int(fields.offsets[0].as_py())
    names: dict[str, int] = {}
    measurement = np.array([names.setdefault(m, len(names)) for m, _ in heads], np.int64)[head]
    shapes, shape = _shapes(
        measurement, keys.indices.to_numpy(), key_names, counts, field_starts, values, lines
    )
    if shapes is None:
        return None
    # a key written twice in a line (tags and fields, case-insensitively): once per (head, shape)
    for combo in np.unique(head * len(shapes) + shape).tolist():
        tags = heads[combo // len(shapes)][1]
        written = [k for k, _ in tags] + list(shapes[combo % len(shapes)].keys)
        if len({k.lower() for k in written}) != len(written):
            return None
    return PointColumns(lines, heads, head, ts, shapes, shape)


def _first_order(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes renumbered 0.. in the order of their first occurrence, first index of each)``."""
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse.reshape(-1)], first[order]


def _heads(
    head_text: pa.Array, lines: np.ndarray
) -> tuple[list[tuple[str, tuple[tuple[str, str], ...]]], np.ndarray]:
    """The distinct heads (parsed as :func:`parse_lines` does: SqlError for one it refuses) and
    each point's index into them."""
    encoded = head_text.dictionary_encode()
    head, first = _first_order(encoded.indices.to_numpy().astype(np.int64))
    texts = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy()[first]
    heads = []
    for code, at in zip(codes.tolist(), first.tolist(), strict=True):
        heads.append(_plain_head(texts[code], int(lines[at])))
    return heads, head


def _shapes(
    measurement: np.ndarray,
    key_ids: np.ndarray,
    key_names: list[str],
    counts: np.ndarray,
    starts: np.ndarray,
    values: pa.Array,
    lines: np.ndarray,
) -> tuple[list[Shape] | None, np.ndarray]:
    """Group the points by measurement (an id per point) and field keys (``key_ids`` per field,
    ``counts`` fields per point starting at ``starts`` in ``key_ids`` / ``values``) and convert
    each key's values. (Points of two measurements are two shapes: they may type a key two ways.)"""
    n = len(counts)
    found: list[tuple[int, tuple[int, ...], np.ndarray]] = []  # (first point, key ids, points)
    for k in np.unique(counts).tolist():
        points = np.flatnonzero(counts == k)
        grid = np.column_stack([measurement[points], key_ids[starts[points][:, None] + np.arange(k)]])
        if np.all(grid == grid[0]):
            found.append((int(points[0]), tuple(grid[0, 1:].tolist()), points))
            continue
        uniq, inverse = np.unique(grid, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for u in range(len(uniq)):
            members = points[inverse == u]
            found.append((int(members[0]), tuple(uniq[u, 1:].tolist()), members))
    found.sort(key=lambda f: f[0])
    shape = np.empty(n, np.int64)
    shapes = []
    for i, (_, ids, points) in enumerate(found):
        shape[points] = i
        at = starts[points]
        cols, kinds = [], []
        for j, key_id in enumerate(ids):
            converted = _field_column(values.take(at + j), key_names[key_id], int(lines[points[0]]))
            if converted is None:
                return None, shape
            kinds.append(converted[0])
            cols.append(converted[1])
        shapes.append(Shape(tuple(key_names[k] for k in ids), tuple(kinds), points, tuple(cols)))
    return shapes, shape


def _field_column(texts: pa.Array, key: str, line: int) -> tuple[str, pa.Array] | None:
    """``(kind, values)`` of one field's value texts when all are of the kind of the first (as
    :func:`field_value` types them) and in its range; None otherwise."""
    kind, _ = field_value(texts[0].as_py(), line, key)  # SqlError: the caller's None
    if kind == "BOOL":
        if not pc.all(pc.is_in(texts, value_set=_BOOLS)).as_py():
            return None
        return kind, pc.is_in(texts, value_set=_TRUES)
    if kind not in _COLUMN_TEXT:  # quoted kinds: not in a plain body
        return None
    number, suffixes, arrow_type = _COLUMN_TEXT[kind]
    alternatives = "|".join(suffixes)
    if not pc.all(pc.match_substring_regex(texts, f"^{number}(?:{alternatives})$")).as_py():
        return None
    if len(suffixes) == 1 or not pc.any(pc.ends_with(texts, suffixes[0])).as_py():
        cut = len(suffixes[-1])  # every text has the one (or the shorter) suffix
        digits = pc.utf8_slice_codeunits(texts, 0, -cut) if cut else texts  # ASCII: matched above
    else:  # both spellings: cut what the pattern leaves
        digits = pc.extract_regex(texts, f"^(?P<n>{number})(?:{alternatives})$").field("n")
    numbers = pc.cast(digits, arrow_type)  # ArrowInvalid: the caller's None
    if kind in ("DOUBLE", "FLOAT"):
        v = numbers.to_numpy()
        limit = _FLOAT_MAX if kind == "FLOAT" else math.inf
        if not np.all(np.abs(v) <= limit) or np.isinf(v).any():
            return None
    elif kind in _RANGE and kind != "BIGINT UNSIGNED":
        lo, hi = _RANGE[kind]
        bounds = pc.min_max(numbers)
        if bounds["min"].as_py() < lo or bounds["max"].as_py() > hi:
            return None
    return kind, numbers
