"""Fast path for the INSERT statements bulk writers send (taosBenchmark, collectors; issue 17
"Ingest"): ``INSERT INTO [db.]t [USING [db.]stb [(tag, ...)] TAGS (v, ...)] [(col, ...)] VALUES
(v, ...)... [t2 ...]`` whose every value is a plain literal: a number (``-?digits[.digits][e±n]``),
a single-quoted string without backslash or quote inside, NULL, TRUE or FALSE.

Such a statement is read with a few regular expressions instead of the token-level parser (which
builds a ``sqlglot`` node per value and then folds each one): one expression checks all the rows
of a target, string methods (or one ``findall`` when there are quoted strings) split them into
values, and the values come out as their literal texts, column by column, in
:attr:`ast.InsertTarget.values`; :func:`literal_constant` is the Python constant
:func:`spark_workers.sql.values.constant` would give a literal's node (``int``, ``DecimalText``,
``str``, ``None``, ``bool``), and :func:`column_array` converts a whole column of texts for one
column type at once with Arrow where it can (the INSERT handler, ``statements/writes.py``).
Anything else (comments, quoted names, keywords used as names, ``now``, expressions, escapes,
``FILE``, a subquery, a row with another number of values than the first) returns None and the
statement goes through the full parser. The caller (``Executor.execute``) also sends every
statement the fast path refused with an SQL error through the full parser again, whose answer is
the positioned one. Cost: well under 1 µs per value (no Python step per row or value in the
common case), against about 150 µs per value through the full parser.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from spark_workers.sql import ast
from spark_workers.sql.dialect import TDengine
from spark_workers.sql.values import DecimalText
from spark_workers.tdtypes import TdType

_NAME = r"[A-Za-z_][A-Za-z0-9_]*\b"
_VALUE = r"(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])|'[^'\\\n]*'|(?:NULL|TRUE|FALSE)\b)"
_NAMES = rf"{_NAME}(?:\s*,\s*{_NAME})*"
_VALUES = rf"{_VALUE}(?:\s*,\s*{_VALUE})*"
_HEAD = re.compile(
    r"\s*INSERT\s+INTO\b",
    re.IGNORECASE,
)
_TARGET = re.compile(
    rf"\s*(?P<t1>{_NAME})(?:\.(?P<t2>{_NAME}))?"
    rf"(?:\s*USING\s+(?P<s1>{_NAME})(?:\.(?P<s2>{_NAME}))?"
    rf"\s*(?:\(\s*(?P<tagnames>{_NAMES})\s*\))?\s*TAGS\s*\(\s*(?P<tags>{_VALUES})\s*\))?"
    rf"\s*(?:\(\s*(?P<cols>{_NAMES})\s*\))?\s*VALUES\s*",
    re.IGNORECASE,
)
_ONE_VALUE = re.compile(rf"\s*({_VALUE})\s*(,|\))", re.IGNORECASE)
_END = re.compile(r"\s*;?\s*\Z")
_NAME_SPLIT = re.compile(r"\s*,\s*")
_KEYWORDS = frozenset(k.upper() for k in TDengine.Tokenizer.KEYWORDS) | {
    "USING", "TAGS", "VALUES", "FILE", "NOW", "TODAY", "NULL", "TRUE", "FALSE", "INSERT", "INTO",
}  # fmt: skip


def parse_plain_insert(sql: str) -> ast.Insert | None:
    """The INSERT of ``sql`` when it is one statement of plain literals (module docstring), with
    ``values`` set on each target; None for anything else (then nothing has been decided: the
    full parser reads the text). O(length of ``sql``)."""
    m = _HEAD.match(sql)
    if m is None:
        return None
    pos = m.end()
    targets: list[ast.InsertTarget] = []
    while True:
        t = _TARGET.match(sql, pos)
        if t is None:
            return None
        names = [t.group(g) for g in ("t1", "t2", "s1", "s2") if t.group(g)]
        names += _split(t.group("tagnames")) + _split(t.group("cols"))
        if any(n.upper() in _KEYWORDS for n in names):
            return None
        got = _rows(sql, t.end())
        if got is None:
            return None
        values, pos = got
        targets.append(_target(t, values))
        if _END.match(sql, pos):
            return ast.Insert(targets=targets)


def _split(names: str | None) -> list[str]:
    return _NAME_SPLIT.split(names.strip()) if names else []


def _table(first: str, second: str | None) -> ast.TableName:
    return ast.TableName(name=second, db=first) if second else ast.TableName(name=first)


def _target(t: re.Match[str], values: list[pa.StringArray]) -> ast.InsertTarget:
    """The target a ``_TARGET`` match and its values' texts (column by column) describe."""
    table = _table(t.group("t1"), t.group("t2"))
    using = None
    if t.group("s1"):
        tags = [_node(v) for v in _value_texts(t.group("tags"))]
        using = ast.SubtableDef(
            table=table,
            using=_table(t.group("s1"), t.group("s2")),
            tag_names=_split(t.group("tagnames")) or None,
            tag_values=tags,
        )
    cols = _split(t.group("cols")) or None
    return ast.InsertTarget(table=table, rows=[], columns=cols, using=using, values=values)


def _value_texts(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"\s*({_VALUE})\s*,?", text, re.IGNORECASE)]


@lru_cache(maxsize=64)
def _rows_re(n: int) -> re.Pattern[str]:
    """One or more rows of exactly ``n`` plain values each, separated as the full parser allows
    (nothing, spaces or one comma between rows); no capture groups."""
    row = r"\(\s*" + r"\s*,\s*".join([_VALUE] * n) + r"\s*\)"
    return re.compile(rf"{row}(?:\s*,?\s*{row})*", re.IGNORECASE)


_TOKEN = re.compile(r"'[^'\\\n]*'|[^\s,()']+")
_ROWS_END = re.compile(r"\)\s*(?![\s,(])")  # a row's ``)`` not followed by another row


@lru_cache(maxsize=64)
def _rows_re2(n: int) -> str:
    """:func:`_rows_re` for a whole text of rows without quotes, in RE2's syntax (Arrow's
    ``match_substring_regex``: linear time, about 5 times faster here). Anchored at both ends, so
    the lookaheads that end a value in ``_VALUE`` are implied by what must follow it; RE2's
    ``\\s`` and ``\\d`` are ASCII only, so a text with other spaces or digits is not matched and
    goes to :func:`_rows_re`."""
    value = r"(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|(?i:NULL|TRUE|FALSE))"
    row = r"\(\s*" + r"\s*,\s*".join([value] * n) + r"\s*\)"
    return rf"^{row}(?:\s*,?\s*{row})*$"


def _rows(sql: str, pos: int) -> tuple[list[pa.StringArray], int] | None:
    """The rows from ``pos`` (just after VALUES) as literal texts, column by column (``n`` Arrow
    string arrays of the same length), and the position after them.

    Rows without quotes (numbers, NULL, TRUE, FALSE: what bulk writers send) end at the first
    ``)`` that no further row follows; that text is checked by one RE2 expression and split into
    values by Arrow. Otherwise (quoted strings, which hold no quote, backslash or newline; spaces
    or digits beyond ASCII) one Python expression finds and checks the rows and one ``findall``
    splits them. No Python step per row or value either way."""
    n = 0
    p = pos
    if p >= len(sql) or sql[p] != "(":
        return None
    p += 1
    while True:  # count the first row's values
        m = _ONE_VALUE.match(sql, p)
        if m is None:
            return None
        n += 1
        p = m.end()
        if m.group(2) == ")":
            break
    e = _ROWS_END.search(sql, pos)
    if e is not None:
        section = sql[pos : e.start() + 1]
        if "'" not in section and _all_rows(section, n):
            # whitespace means nothing between these values; rows are ``(...)`` one after another
            packed = "".join(section.split()).replace("),(", ")(")
            flat = pc.list_flatten(pc.split_pattern(pa.array([packed[1:-1].replace(")(", ",")]), ","))
            return _columns(flat, n), e.start() + 1
    m = _rows_re(n).match(sql, pos)
    if m is None:
        return None
    return _columns(pa.array(_TOKEN.findall(m.group(0)), pa.string()), n), m.end()


def _all_rows(section: str, n: int) -> bool:
    """Is ``section`` (no quote in it) rows of ``n`` plain values and nothing else? False also
    when RE2 will not take the expression (a table of thousands of columns: then the Python
    expression decides)."""
    try:
        return bool(pc.all(pc.match_substring_regex(pa.array([section], pa.string()), _rows_re2(n))).as_py())
    except pa.ArrowInvalid:
        return False


def _columns(flat: pa.StringArray, n: int) -> list[pa.StringArray]:
    """Row-major values (``n`` per row) as ``n`` columns."""
    if len(flat) % n:  # cannot happen after the checks; never guess
        raise AssertionError(f"{len(flat)} values in rows of {n}")
    return [flat.take(pa.array(np.arange(i, len(flat), n))) for i in range(n)]


def literal_constant(text: str) -> Any:
    """What :func:`spark_workers.sql.values.constant` gives the node of a plain literal."""
    c = text[0]
    if c == "'":
        return text[1:-1]
    if c.isdigit() or c == "-":
        try:
            return int(text)
        except ValueError:
            return DecimalText(text)
    low = text.lower()
    return None if low == "null" else low == "true"


def _node(text: str) -> exp.Expr:
    """The ``sqlglot`` node the full parser makes of a plain literal (for tag values, which go
    through the full constant folding)."""
    v = literal_constant(text)
    if v is None:
        return exp.Null()
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, str):
        return exp.Literal.string(v)
    digits = text.lstrip("-")
    node: exp.Expr = exp.Literal.number(digits)
    return exp.Neg(this=node) if text.startswith("-") else node


_FLOAT_MAX = 3.4028234663852886e38


def column_array(arr: pa.StringArray, t: TdType) -> pa.Array | None:
    """``pa.array([coerce(literal_constant(x), t, ...) for x in arr.to_pylist()])`` computed by
    Arrow for the whole column at once, for the common cases: numbers into integer, TIMESTAMP (int64 in the
    database's precision), FLOAT and DOUBLE columns (float64, as ``coerce`` gives them; the
    storage cast narrows FLOAT as it narrows a Python float), quoted strings into VARCHAR and
    NCHAR columns. None when the column holds anything else (NULL, TRUE, a string into a number
    column, a decimal point or exponent into an integer column...) or a value ``coerce`` would
    refuse (out of the type's range, a FLOAT beyond 3.4e38, a string longer than the column):
    the caller then converts value by value, which raises the error. The texts are those
    :func:`parse_plain_insert` read (plain literals only): a number is ``-?digits[.digits][e±n]``,
    which Arrow's cast from string reads as Python's ``int`` / ``float`` do (correctly rounded;
    ``1e999`` is infinity in both). O(len(texts)), about 0.1 µs per value."""
    if not len(arr):
        return arr
    name = t.name
    if name in ("VARCHAR", "NCHAR"):
        if not pc.all(pc.starts_with(arr, "'")).as_py():
            return None
        inner = pc.utf8_slice_codeunits(arr, 1, -1)
        sizes = pc.binary_length(inner) if name == "VARCHAR" else pc.utf8_length(inner)
        return inner if pc.max(sizes).as_py() <= t.length else None
    if name in ("FLOAT", "DOUBLE"):
        try:
            floats = arr.cast(pa.float64())
        except pa.ArrowInvalid:  # not a number
            return None
        if name == "FLOAT":
            size = pc.abs(floats)
            if pc.any(pc.and_(pc.greater(size, _FLOAT_MAX), pc.less(size, math.inf))).as_py():
                return None
        return floats
    if name != "TIMESTAMP" and not t.is_integer:
        return None
    try:
        ints = arr.cast(pa.int64())
    except pa.ArrowInvalid:  # a decimal point or an exponent, beyond int64, not a number
        return None
    if name == "TIMESTAMP":
        return ints
    lo, hi = t.value_range() or (0, 0)
    bounds = pc.min_max(ints)
    return ints if lo <= bounds["min"].as_py() and bounds["max"].as_py() <= hi else None
