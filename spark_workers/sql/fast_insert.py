"""Fast path for the INSERT statements bulk writers send (taosBenchmark, collectors; issue 17
"Ingest"): ``INSERT INTO [db.]t [USING [db.]stb [(tag, ...)] TAGS (v, ...)] [(col, ...)] VALUES
(v, ...)... [t2 ...]`` whose every value is a plain literal: a number (``-?digits[.digits][e±n]``),
a single-quoted string without backslash or quote inside, NULL, TRUE or FALSE.

Such a statement is read with a few regular expressions instead of the token-level parser (which
builds a ``sqlglot`` node per value and then folds each one): the values come out as their literal
texts in :attr:`ast.InsertTarget.values`; :func:`literal_constant` is the Python constant
:func:`spark_workers.sql.values.constant` would give a literal's node (``int``, ``DecimalText``,
``str``, ``None``, ``bool``), and :func:`column_values` converts a whole column of texts for one
column type at once where it can (the INSERT handler, ``statements/writes.py``). Anything else
(comments, quoted names, keywords used as names, ``now``, expressions, escapes, ``FILE``, a
subquery, a row with another number of values than the first) returns None and the statement
goes through the full parser. The caller (``Executor.execute``) also sends every statement the
fast path refused with an SQL error through the full parser again, whose answer is the positioned
one. Cost: about 1 µs per value, against about 150 µs per value through the full parser.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

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
_ROW_SEP = re.compile(r"\s*,?\s*(?=\()")
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


def _target(t: re.Match[str], values: list[tuple[str, ...]]) -> ast.InsertTarget:
    """The target a ``_TARGET`` match and its rows' constants describe."""
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
def _row_re(n: int) -> re.Pattern[str]:
    """A row of exactly ``n`` plain values, each captured."""
    inner = r"\s*,\s*".join([f"({_VALUE})"] * n)
    return re.compile(rf"\(\s*{inner}\s*\)", re.IGNORECASE)


def _rows(sql: str, pos: int) -> tuple[list[tuple[str, ...]], int] | None:
    """The rows from ``pos`` (just after VALUES) as literal texts, and the position after them."""
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
    row_re = _row_re(n)
    out: list[tuple[str, ...]] = []
    while True:
        m = row_re.match(sql, pos)
        if m is None:
            return None
        out.append(m.groups())
        pos = m.end()
        sep = _ROW_SEP.match(sql, pos)
        if sep is None:
            return out, pos
        pos = sep.end()


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


_NUMBER_START = frozenset("-0123456789")
_FLOAT_MAX = 3.4028234663852886e38


def column_values(texts: list[str], t: TdType) -> list[Any] | None:
    """``[coerce(literal_constant(x), t, ...) for x in texts]`` computed for the whole column at
    once, for the common cases: numbers into integer, TIMESTAMP, FLOAT and DOUBLE columns, quoted
    strings into VARCHAR and NCHAR columns. None when the column holds anything else (NULL, a
    string into a number column...) or a value ``coerce`` would refuse: the caller then converts
    value by value, which raises the error. O(len(texts)), about 0.1 µs per value."""
    if not texts:
        return []
    name = t.name
    if name in ("VARCHAR", "NCHAR"):
        if not all(x[0] == "'" for x in texts):
            return None
        out = [x[1:-1] for x in texts]
        longest = max(len(x.encode()) for x in out) if name == "VARCHAR" else max(map(len, out))
        return out if longest <= t.length else None
    if not all(x[0] in _NUMBER_START for x in texts):
        return None
    if name in ("FLOAT", "DOUBLE"):
        floats = list(map(float, texts))
        if name == "FLOAT" and any(_FLOAT_MAX < abs(f) < math.inf for f in floats):
            return None
        return floats
    if name != "TIMESTAMP" and not t.is_integer:
        return None
    try:
        ints = list(map(int, texts))
    except ValueError:  # a decimal point or an exponent: value by value
        return None
    if name == "TIMESTAMP":
        return ints
    lo, hi = t.value_range() or (0, 0)
    return ints if lo <= min(ints) and max(ints) <= hi else None
