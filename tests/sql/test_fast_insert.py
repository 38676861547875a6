"""The INSERT fast path (``sql/fast_insert.py``): for every statement it accepts, the same targets
and the same constants as the full parser, and through the executor the same rows, answers and
errors as the full path; everything else is left to the full parser."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.errors import SqlError, TdError
from spark_workers.lake.store import Lake
from spark_workers.sql import ast
from spark_workers.sql.fast_insert import column_array, literal_constant, parse_plain_insert
from spark_workers.sql.parser import parse
from spark_workers.sql.values import DecimalText, Now, coerce, constant
from spark_workers.statements import executor as executor_module
from spark_workers.statements import writes
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from spark_workers.tdtypes import TdType

PLAIN = [
    "1", "-1", "0", "-0", "007", "1.5", "-1.5", "1e3", "1.5E-2", "-2e+5", "'a'", "''", "'a b, (c)'",
    "NULL", "null", "TRUE", "false", "'2025-01-01 00:00:00.000'", "9223372036854775807",
    "99999999999999999999", "'ü€'", "'\"dq\"'",
]  # fmt: skip
OTHER = [
    "1.", ".5", "0x1F", "1s", "10a", "+3", "- 3", "'it''s'", "'\\n'", "'\\x41'", "\"dq\"", "now", "now()",
    "now + 1s", "1 + 2", "1.5.2", "abs(-1)", "cast(1 as int)", "1e", "--1",
]  # fmt: skip
PLAIN_NAMES = ["d0", "t_1", "Meters", "db1", "_x", "a"]
OTHER_NAMES = ["values", "select", "`q`", "tbname", "tags", "using", "1x", "table", "now"]


def mostly(plain: list[str], other: list[str]) -> st.SearchStrategy[str]:
    """Nine times in ten a plain item."""
    return st.integers(0, 9).flatmap(lambda i: st.sampled_from(other if i == 0 else plain))


VALUE = mostly(PLAIN, OTHER)
NAME = mostly(PLAIN_NAMES, OTHER_NAMES)
SPACE = st.sampled_from(["", " ", "  ", "\n", "\t"])


@st.composite
def statements(draw: st.DrawFn) -> str:
    """INSERT texts mixing plain literals with everything the fast path must refuse."""
    sp = draw(SPACE)
    out = ["INSERT", " ", draw(st.sampled_from(["INTO", "into"]))]
    for _ in range(draw(st.integers(1, 3))):
        name = draw(NAME)
        if draw(st.booleans()):
            name = draw(NAME) + "." + name
        out += [" ", name, sp]
        if draw(st.booleans()):
            out += [" USING ", draw(NAME), sp]
            if draw(st.booleans()):
                out += ["(", ",".join(draw(st.lists(NAME, min_size=1, max_size=3))), ")"]
            out += [
                " TAGS",
                sp,
                "(",
                ", ".join(draw(st.lists(VALUE, min_size=1, max_size=3))),
                ")",
            ]
        if draw(st.booleans()):
            out += [
                sp,
                "(",
                f",{sp}".join(draw(st.lists(NAME, min_size=1, max_size=3))),
                ")",
            ]
        out += [sp, draw(st.sampled_from(["VALUES", "values"])), sp]
        width = draw(st.integers(1, 4))
        for r in range(draw(st.integers(1, 3))):
            n = width if draw(st.integers(0, 9)) else draw(st.integers(0, 5))
            vals = draw(st.lists(VALUE, min_size=n, max_size=n))
            sep = draw(st.sampled_from([" ", "", ",", ", "])) if r else ""
            out += [sep, "(", f",{sp}".join(vals), ")"]
    out.append(draw(mostly(["", ";", " ;  "], [";;", " -- c", "; SELECT 1", " x"])))
    return "".join(out)


def key(v: Any) -> tuple:
    """A constant with its kind (1 and 1.0 and True are different constants)."""
    if isinstance(v, DecimalText):
        return ("decimal", v.text)
    return (type(v).__name__, v)


def consts(nodes: list) -> list[tuple]:
    return [key(constant(n, "ms", "UTC", Now())) for n in nodes]


@settings(max_examples=600, deadline=None)
@given(statements())
def test_what_the_fast_path_accepts_the_full_parser_reads_the_same(sql: str) -> None:
    fast = parse_plain_insert(sql)
    if fast is None:
        return
    try:
        full = parse(sql)
    except SqlError as e:
        raise AssertionError(f"the fast path accepted what the parser refuses: {e.message}") from None
    assert len(full) == 1 and isinstance(full[0], ast.Insert)
    assert len(fast.targets) == len(full[0].targets)
    for f, g in zip(fast.targets, full[0].targets, strict=True):
        assert (f.table.db, f.table.name, f.columns) == (g.table.db, g.table.name, g.columns)
        assert f.values is not None and g.query is None
        texts = [c.to_pylist() for c in f.values]
        assert len({len(c) for c in texts}) == 1  # one text per row in every column
        assert [[key(literal_constant(v)) for v in row] for row in zip(*texts, strict=True)] == [
            consts(row) for row in g.rows
        ]
        assert (f.using is None) == (g.using is None)
        if f.using is not None and g.using is not None:
            assert (str(f.using.using), f.using.tag_names) == (str(g.using.using), g.using.tag_names)
            assert consts(f.using.tag_values) == consts(g.using.tag_values)


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO d0 VALUES (1, 2)",
        "insert into db.d0 using db.m (g) tags (1) (ts, v) values (1, -2.5) (2, 'x'), (3, NULL)",
        "INSERT INTO d0 VALUES (1, 2) d1 USING m TAGS ('a', 2) VALUES (3, 4);",
    ],
)
def test_plain_inserts_take_the_fast_path(sql: str) -> None:
    assert parse_plain_insert(sql) is not None  # the property test above is not vacuous


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO d0 VALUES (now, 2)",
        "INSERT INTO d0 VALUES (1, 2) (1)",
        "INSERT INTO d0 VALUES (1, 'it''s')",
        "INSERT INTO d0 VALUES (1, 2) -- c",
        "INSERT INTO `d0` VALUES (1, 2)",
        "INSERT INTO values VALUES (1, 2)",
        "INSERT INTO d0 SELECT * FROM d1",
        "INSERT INTO d0 VALUES (1, 2); SELECT 1",
    ],
)
def test_everything_else_is_left_to_the_full_parser(sql: str) -> None:
    assert parse_plain_insert(sql) is None


def _executor(tmp_path: Path) -> Executor:
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry())
    ex.execute("CREATE DATABASE f")
    ex.execute(
        "CREATE STABLE f.m (ts TIMESTAMP, c FLOAT, v INT, s VARCHAR(4), b BOOL) TAGS (g INT, l VARCHAR(8))"
    )
    ex.execute("CREATE TABLE f.n (ts TIMESTAMP, c DOUBLE, v BIGINT UNSIGNED)")
    ex.execute("CREATE TABLE f.w (ts TIMESTAMP, s VARCHAR(16), h NCHAR(4), v INT)")
    return ex


def _answer(ex: Executor, sql: str) -> tuple:
    try:
        return ("ok", ex.execute_one(sql).affected_rows)
    except TdError as e:
        pos = e.position.offset if isinstance(e, SqlError) and e.position else None
        return ("error", e.code, e.desc, pos)


CASES = [
    "INSERT INTO f.d0 USING f.m TAGS (1, 'x') VALUES (1000, 1.5, -2, 'ab', true) (2000, 1e2, 3, NULL, 0)",
    "INSERT INTO f.d0 USING f.m TAGS (1, 'x') VALUES (1000, 1.5, -2, 'ab', true) f.n VALUES (5, -0.1, 7)",
    "INSERT INTO f.n (ts, v) VALUES (1, 3) (1, 4)",  # the later row of a key wins
    "INSERT INTO f.n VALUES ('2025-01-01 00:00:00.000', 1.25, 18446744073709551615)",
    "INSERT INTO f.d1 USING f.m TAGS (2, 'y') VALUES (1000, 1.5, 99999999999, 'ab', true)",  # INT range
    "INSERT INTO f.d1 USING f.m TAGS (2, 'y') VALUES (1000, 1.5, 1, 'abcdefg', true)",  # too long
    "INSERT INTO f.n VALUES (1, 2)",  # column count
    "INSERT INTO f.n VALUES (NULL, 2, 3)",  # NULL timestamp
    "INSERT INTO f.n VALUES (1, 'x', 3)",  # not a number
    "INSERT INTO f.n VALUES (1, 2, -1)",  # unsigned
    "INSERT INTO f.nope VALUES (1, 2, 3)",  # no such table
    "INSERT INTO f.m VALUES (1, 2, 3, 'a', true)",  # supertable without tbname
    "INSERT INTO f.d2 USING f.m TAGS ('x', 'y') VALUES (1000, 1.5, 1, 'a', true)",  # tag type
    # strings holding the rows' own separators, and every spacing between values and rows
    "INSERT INTO f.w VALUES (1, 'a)(b', 'ü€', 1) (2, ' ,x', '),(', 2),(3,'(','',3) , ( 4 ,'' , ')' , -4 )",
    "INSERT INTO f.w VALUES\n(1,'x','y',1)\n(2,'x','y',2)\t,\t(3,'x','y',3)",
    "INSERT INTO f.w VALUES (1, NULL, 'y', 1) (2, 'x', NULL, NULL)",  # NULLs: value by value
    "INSERT INTO f.w VALUES (1, 'x', 'abcde', 1)",  # NCHAR(4) too long
    "INSERT INTO f.w VALUES (1, 'x', 'ü€ü€', 2147483647) (2, 'x', 'y', -2147483648)",
    "INSERT INTO f.w VALUES (1, 'x', 'y', 2147483648)",  # INT range
    "INSERT INTO f.n VALUES (1, 1e999, 1) (2, -0, 2) (3, 007, 3) (4, 1.5E-2, 4)",
    "INSERT INTO f.d0 USING f.m TAGS (1, 'x') VALUES (1, 3.4028234e38, 1, 'a', false) (2, 1e-46, 2, 'b', 1)",
    "INSERT INTO f.d0 USING f.m TAGS (1, 'x') VALUES (1, 3.5e38, 1, 'a', false)",  # FLOAT range
]


@pytest.mark.parametrize("sql", CASES)
def test_the_executor_answers_and_writes_as_the_full_path_does(tmp_path: Path, monkeypatch, sql: str) -> None:
    fast_ex = _executor(tmp_path / "fast")
    full_ex = _executor(tmp_path / "full")
    assert parse_plain_insert(sql) is not None
    fast = _answer(fast_ex, sql)
    monkeypatch.setattr(executor_module, "parse_plain_insert", lambda sql: None)
    full = _answer(full_ex, sql)
    assert fast == full
    for t in ("f.m", "f.n", "f.w"):
        q = f"SELECT * FROM {t}" + (" ORDER BY tbname, ts" if t == "f.m" else "")
        assert fast_ex.execute_one(q).rows == full_ex.execute_one(q).rows
    assert fast_ex.execute_one("SHOW f.TABLES").rows == full_ex.execute_one("SHOW f.TABLES").rows


TYPES = [
    "TIMESTAMP", "INT", "TINYINT", "BIGINT", "SMALLINT UNSIGNED", "BIGINT UNSIGNED", "FLOAT", "DOUBLE",
    "VARCHAR(3)", "NCHAR(2)", "BOOL", "VARBINARY(4)",
]  # fmt: skip
MORE = ["127", "128", "-128", "255", "65535", "65536", "3.5e38", "1e39", "-3.4e38", "'abc'", "'abcd'", "'ü€'"]
TEXTS = [*PLAIN, *MORE]


def _type(typ: str) -> TdType:
    if typ.endswith(" UNSIGNED"):
        return TdType.parse(typ.split()[0], unsigned=True)
    if "(" in typ:
        name, length = typ.rstrip(")").split("(")
        return TdType.parse(name, int(length))
    return TdType.parse(typ)


def test_column_arrays_take_the_common_columns_at_once() -> None:
    def got(texts: list[str], typ: str) -> list | None:
        arr = column_array(pa.array(texts, pa.string()), _type(typ))
        return None if arr is None else arr.to_pylist()

    assert got(["1", "-2"], "INT") == [1, -2]
    assert got(["1", "1.5"], "DOUBLE") == [1.0, 1.5]
    assert got(["'ab'", "''"], "VARCHAR(3)") == ["ab", ""]
    assert got(["1", "NULL"], "INT") is None
    assert got(["'abcd'"], "VARCHAR(3)") is None  # too long: coerce says so
    assert got(["1", "1.5"], "INT") is None  # a decimal into an integer column: value by value
    assert got(["3.5e38"], "FLOAT") is None  # beyond FLOAT: coerce refuses it


def _coerced(texts: list[str], t: TdType) -> list | None:
    try:
        return [coerce(literal_constant(x), t, "ms", "UTC", "column c") for x in texts]
    except SqlError:
        return None


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(TEXTS), max_size=6), st.sampled_from(TYPES))
def test_column_arrays_are_what_coerce_gives_each_value(texts: list[str], typ: str) -> None:
    t = _type(typ)
    fast = column_array(pa.array(texts, pa.string()), t)
    if fast is None:
        return  # value by value
    want = _coerced(texts, t)
    assert want is not None, "column_array accepted a column coerce refuses"
    assert [(type(v), v) for v in fast.to_pylist()] == [(type(v), v) for v in want]


def _steady(x: object) -> object:
    """An answer's part without the clock reading a KEEP error shows."""
    return re.sub(r"now - KEEP = [^)]*", "now - KEEP = ...", x) if isinstance(x, str) else x


ROW_RULES = [
    *CASES,
    "INSERT INTO f.k VALUES (1, 1, 2) (2, NULL, 3)",  # NULL composite key
    "INSERT INTO f.k VALUES (1, 1, 2) (1, 2, 3) (1, 1, 4)",
    "INSERT INTO f.n VALUES (1, 1, 2) (0, 1, 3)",  # older than KEEP (1970)
    "INSERT INTO f.n VALUES (1700000000000, 1, 2) (NULL, 1, 3) (0, 1, 3)",  # the first error in row order
]


@pytest.mark.parametrize("sql", ROW_RULES)
def test_column_by_column_rows_are_the_row_by_row_rows(tmp_path: Path, monkeypatch, sql: str) -> None:
    """``writes._plain_data`` and ``writes._column_data`` (whole columns) give the rows, answers and
    errors of the row loop."""
    wide = _executor(tmp_path / "wide")
    narrow = _executor(tmp_path / "narrow")
    for ex in (wide, narrow):
        ex.execute("CREATE TABLE f.k (ts TIMESTAMP, id INT PRIMARY KEY, v INT)")
        ex.execute("ALTER DATABASE f KEEP 3650")
    got = _answer(wide, sql)
    monkeypatch.setattr(writes, "_column_data", lambda *a: None)
    monkeypatch.setattr(writes, "_plain_data", lambda table, layout, cols, kept: (None, len(cols[0])))
    want = _answer(narrow, sql)
    assert [_steady(x) for x in got] == [_steady(x) for x in want]
    for t in ("f.m", "f.n", "f.k", "f.w"):
        q = f"SELECT * FROM {t}" + (" ORDER BY tbname, ts" if t == "f.m" else "")
        assert wide.execute_one(q).rows == narrow.execute_one(q).rows


def test_wide_rows_are_read_as_the_full_parser_reads_them() -> None:
    """A thousand values a row: the RE2 check of rows without quotes takes them (or the Python
    expression does), and the values come out in their columns."""
    vals = [str(i) if i % 3 else f"-{i}.5e2" for i in range(1000)]
    sql = "INSERT INTO d0 VALUES " + f"({', '.join(vals)}) " + f"({','.join(reversed(vals))})"
    fast = parse_plain_insert(sql)
    assert fast is not None and fast.targets[0].values is not None
    texts = [c.to_pylist() for c in fast.targets[0].values]
    assert [row for row in zip(*texts, strict=True)] == [tuple(vals), tuple(reversed(vals))]
    full = parse(sql)[0]
    assert isinstance(full, ast.Insert)
    assert [[key(literal_constant(v)) for v in row] for row in zip(*texts, strict=True)] == [
        consts(row) for row in full.targets[0].rows
    ]
