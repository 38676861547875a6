"""The columnar path of schemaless writing (``line_protocol.parse_columns`` and the columnar
writer of ``statements/schemaless.py``) against the line-by-line path, the reference
(``parse_lines``, ``schemaless._write_points``).

For generated plain bodies (several measurements, tag sets, every field suffix, booleans, missing
and 0 timestamps, blank and comment lines, invalid lines and values) both paths must give the same
points, and through an executor the same answer or the same error (code and message), the same
supertables (columns and tags in the same order), subtables and stored rows. The expected side is
the existing parser and writer, not a copy of the columnar code."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from spark_workers.errors import SqlError, TdError
from spark_workers.lake.store import Lake
from spark_workers.sql.line_protocol import PointColumns, parse_columns, parse_lines
from spark_workers.statements import schemaless
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

# the ms, s and ns timestamps of 2025-01-01 UTC: inside the default KEEP
BASE = {"ms": 1_735_689_600_000, "s": 1_735_689_600, "ns": 1_735_689_600_000_000_000, "h": 482_136}
NOW_NS = 1_764_000_000_000_000_000  # the server's time in both paths (2025-11-24)

MEASUREMENTS = ["m", "M", "cpu", "a.b", "a_b"]  # "a.b" and "a_b" are one supertable
TAG_KEYS = ["t1", "T1", "host", "loc", "v", "_ts"]  # "v" is also a field key, "_ts" the ts column
TAG_VALUES = ["a", "b", "1", "", "x=y", "é", "a.b"]
FIELD_KEYS = ["v", "V", "w", "x", "cur", "_TS"]
VALUES = [
    "1", "-2.5", "3i", "-4i64", "5u", "6u64", "7i8", "-128i8", "128i8", "255u8", "256u8", "-1u",
    "-32768i16", "32768i16", "2147483647i32", "-2147483649i32", "65535u16", "4294967295u32",
    "4294967296u32", "9223372036854775807i", "9223372036854775808i", "18446744073709551615u",
    "18446744073709551616u64", "1f32", "-3.4028234663852886e38f32", "3.5e38f32", "2f64", "1e308",
    "1e400", ".5", "7.", "+3", "+3i", "-0", "-0u", "-0.0", "00012", "1e5i", "1.5i", "0x10", "١٢",
    "t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE", "tRuE", "abc", "",
    "1=2", "nan", "inf",
]  # fmt: skip
SUFFIXES = ["", "i", "i8", "i16", "i32", "i64", "u", "u8", "u16", "u32", "u64", "f32", "f64"]


def _number() -> st.SearchStrategy[str]:
    """Numbers with a random suffix: many digits, exponents, both signs."""
    floats = st.floats(allow_nan=False, allow_infinity=False).map(repr)
    digits = st.from_regex(r"\A[+-]?[0-9]{1,25}(\.[0-9]{0,20})?([eE][+-]?[0-9]{1,3})?\Z", fullmatch=True)
    ints = st.integers(-(2**65), 2**65).map(str)
    return st.tuples(st.one_of(floats, digits, ints), st.sampled_from(SUFFIXES)).map("".join)


def _value() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(VALUES), _number())


KINDS_BOOL = ["t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE"]
# one kind per field key in "clean" bodies: value texts of that kind, in every spelling
KINDS = {
    "DOUBLE": st.one_of(st.floats(-1e300, 1e300).map(repr), st.integers(-999, 999).map(str)).flatmap(
        lambda t: st.sampled_from([t, t + "f64"])
    ),
    "FLOAT": st.floats(-3e38, 3e38).map(lambda f: repr(f) + "f32"),
    "BIGINT": st.integers(-(2**63), 2**63 - 1).flatmap(lambda i: st.sampled_from([f"{i}i", f"{i}i64"])),
    "BIGINT UNSIGNED": st.integers(0, 2**64 - 1).flatmap(lambda i: st.sampled_from([f"{i}u", f"{i}u64"])),
    "INT": st.integers(-(2**31), 2**31 - 1).map(lambda i: f"{i}i32"),
    "SMALLINT": st.integers(-(2**15), 2**15 - 1).map(lambda i: f"{i}i16"),
    "TINYINT": st.integers(-128, 127).map(lambda i: f"{i}i8"),
    "INT UNSIGNED": st.integers(0, 2**32 - 1).map(lambda i: f"{i}u32"),
    "SMALLINT UNSIGNED": st.integers(0, 2**16 - 1).map(lambda i: f"{i}u16"),
    "TINYINT UNSIGNED": st.integers(0, 255).map(lambda i: f"{i}u8"),
    "BOOL": st.sampled_from(KINDS_BOOL),
}


# texts just outside (and on) each kind's range, other spellings: for "extreme" examples
EDGES = {
    "DOUBLE": ["1e400", "-1e309", "1.7976931348623157e308", "١٢", "+1", "1i"],
    "FLOAT": ["3.5e38f32", "-3.4028236e38f32", "3.4028234663852886e38f32", "1e400f32"],
    "BIGINT": ["9223372036854775808i", "-9223372036854775809i64", "-9223372036854775808i", "+5i", "1.5i"],
    "BIGINT UNSIGNED": ["18446744073709551616u", "-1u", "-0u", "+5u", "18446744073709551615u64"],
    "INT": ["2147483648i32", "-2147483649i32", "-0i32"],
    "SMALLINT": ["32768i16", "-32769i16"],
    "TINYINT": ["128i8", "-129i8", "00127i8"],
    "INT UNSIGNED": ["4294967296u32", "-1u32", "-0u32"],
    "SMALLINT UNSIGNED": ["65536u16", "-1u16"],
    "TINYINT UNSIGNED": ["256u8", "-1u8", "-0u8"],
    "BOOL": ["tRuE", "yes", "1"],
}


def _of_kind(kind: str, edgy: str | None) -> st.SearchStrategy[str]:
    """Value texts of ``kind``; of kind ``edgy`` one in four an edge of :data:`EDGES`."""
    if kind != edgy:
        return KINDS[kind]
    return st.integers(0, 3).flatmap(lambda i: st.sampled_from(EDGES[kind]) if i == 0 else KINDS[kind])


def _ts(precision: str) -> st.SearchStrategy[str]:
    base = BASE[precision]
    return st.one_of(
        st.just(""),
        st.sampled_from(["0", "000", "-5", "12x", "+5", "-0", str(2**63), str(2**64), "1"]),
        st.integers(0, 50).map(lambda k: str(base + k)),
        st.integers(0, 2**63 - 1).map(str),
    )


def _line(
    precision: str, kinds: dict[str, str] | None, edgy: str | None, extreme: bool
) -> st.SearchStrategy[str]:
    """A line; with ``kinds`` (field key -> kind) a clean one: valid values of the key's kind
    ("v" and "V", one column, may differ: SML_NOT_SAME_TYPE), no key twice in a line, tags
    without '=' in values,
    timestamps missing, 0 or inside KEEP (``extreme``: also older than KEEP or above int64); values
    of kind ``edgy`` also on and beyond the edges of their kind."""
    if kinds is None:
        tags = st.lists(st.tuples(st.sampled_from(TAG_KEYS), st.sampled_from(TAG_VALUES)), max_size=3)
        fields = st.lists(st.tuples(st.sampled_from(FIELD_KEYS), _value()), min_size=1, max_size=4)
        ts = _ts(precision)
    else:
        tags = st.lists(
            st.tuples(
                st.sampled_from(["t1", "host", "loc"]), st.sampled_from(TAG_VALUES[:4] + TAG_VALUES[5:])
            ),
            max_size=3,
            unique_by=lambda kv: kv[0],
        )
        clean = kinds

        def pairs(keys: list[str]) -> st.SearchStrategy[list[tuple[str, str]]]:
            return st.tuples(*[st.tuples(st.just(k), _of_kind(clean[k], edgy)) for k in keys]).map(list)

        fields = st.lists(
            st.sampled_from(sorted(kinds)), min_size=1, max_size=4, unique_by=str.lower
        ).flatmap(pairs)
        ts = st.one_of(st.sampled_from(["", "0"]), st.integers(0, 50).map(lambda k: str(BASE[precision] + k)))
        if extreme:
            # older than KEEP; above int64 in ms; above int64; negative, signed, not a number
            ts = st.one_of(ts, st.sampled_from(["1", str(2**63 - 1), str(2**63), "-0", "-5", "+5", "5x"]))
    good = st.builds(
        lambda m, tags, fields, ts: (
            m
            + "".join(f",{k}={v}" for k, v in tags)
            + " "
            + ",".join(f"{k}={v}" for k, v in fields)
            + (f" {ts}" if ts else "")
        ),
        st.sampled_from(MEASUREMENTS),
        tags,
        fields,
        ts,
    )
    if kinds is not None:
        return good
    odd = st.sampled_from(
        ["", "# a comment", "#m v=1 5", "   ", "m", "m v=1 2 3", "m  v=1", "m v=1 ", " m v=1", "m, v=1",
         ",t=1 v=1", "m v=1,", "m =1", "m,t v=1", "m\r", "m v=1\r", "m v=1 5\r\r", "m\tx v=1",
         "m,t=a v=1i,w=t 1"]
    )  # fmt: skip
    return st.one_of(good, good, good, odd)


@st.composite
def bodies(draw: st.DrawFn) -> tuple[str, list[str]]:
    """``(precision, bodies)``: one or two bodies written one after the other, most lines
    repeating a few heads and field shapes, as collectors write. Half the examples are "clean"
    (one kind per field key, nothing refused: the columnar path's bodies), half anything."""
    precision = draw(st.sampled_from(["ms", "s", "ns", "h"]))
    kinds = None
    if draw(st.booleans()):
        kinds = draw(
            st.fixed_dictionaries({k: st.sampled_from(sorted(KINDS)) for k in ["v", "w", "x", "cur"]})
        )
        kinds["V"] = draw(st.sampled_from([kinds["v"], kinds["v"], kinds["v"], *sorted(KINDS)]))
    extreme = draw(st.integers(0, 3)) == 0
    edgy = None
    if kinds is not None and draw(st.booleans()):
        edgy = kinds["x"] = draw(st.sampled_from(sorted(EDGES)))
    pool = draw(st.lists(_line(precision, kinds, edgy, extreme), min_size=1, max_size=6))
    out = []
    for _ in range(draw(st.integers(1, 2))):
        lines = []
        for line in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=12)):
            head, space, rest = line.partition(" ")
            fields, _, ts = rest.partition(" ")
            if space and "=" in fields and draw(st.booleans()):  # the same shape, another value
                key = fields.rsplit(",", 1)[-1].split("=", 1)[0]
                value = draw(_of_kind(kinds[key], edgy) if kinds and key in kinds else _value())
                fields = fields.rsplit("=", 1)[0] + "=" + value
                line = f"{head} {fields}" + (f" {ts}" if ts else "")
            lines.append(line)
        out.append("\n".join(lines + [""] * draw(st.integers(0, 1))))
    return precision, out


def _points(cols: PointColumns) -> list[tuple[Any, ...]]:
    """The columns as the points ``parse_lines`` gives: ``(measurement, tags, fields, ts, line)``
    with each field ``(name, kind, repr(value))`` (repr: -0.0 and the value's type count)."""
    out: list[Any] = [None] * len(cols.lines)
    for shape in cols.shapes:
        values = [v.to_pylist() for v in shape.values]
        for r, p in enumerate(shape.points.tolist()):
            fields = tuple(
                (k, kind, repr(float(col[r]) if kind in ("DOUBLE", "FLOAT") else col[r]))
                for k, kind, col in zip(shape.keys, shape.kinds, values, strict=True)
            )
            m, tags = cols.heads[int(cols.head[p])]
            out[p] = (m, tags, fields, int(cols.ts[p]) or None, int(cols.lines[p]))
    return out


def _reference_points(text: str) -> list[tuple[Any, ...]] | tuple[int, str]:
    try:
        points = parse_lines(text)
    except SqlError as e:
        return e.code, e.message
    return [
        (p.measurement, p.tags, tuple((f.name, f.kind, repr(f.value)) for f in p.fields), p.ts, p.line)
        for p in points
    ]


@settings(max_examples=600, deadline=None)
@given(case=bodies())
def test_columns_are_the_points_of_parse_lines(case: tuple[str, list[str]]) -> None:
    """Whatever ``parse_columns`` accepts, ``parse_lines`` parses to the same points; a body
    ``parse_lines`` refuses, ``parse_columns`` leaves to it (None)."""
    for text in case[1]:
        expected = _reference_points(text)
        cols = parse_columns(text)
        event("columnar" if cols is not None else "line by line")
        if cols is None:
            continue
        assert not isinstance(expected, tuple), f"columns for a body parse_lines refuses: {expected}"
        assert _points(cols) == expected


def test_what_collectors_send_is_read_as_columns() -> None:
    """The common bodies take the columnar path (else the property above compares little)."""
    text = "\n".join(
        f"meters,location=loc{k % 3},groupid={k % 2} current={k}.5,voltage={200 + k}i32,phase=0.{k},"
        f"on={'t' if k % 2 else 'false'},n={k}u8 {BASE['ms'] + k}"
        for k in range(50)
    )
    text += "\n# telegraf\n\ncpu,host=a usage=1\ncpu,host=b usage=2,idle=3 0\r\ncpu,host=a usage=4"
    cols = parse_columns(text)
    assert cols is not None
    assert [h[0] for h in cols.heads] == ["meters"] * 6 + ["cpu", "cpu"]
    assert [s.keys for s in cols.shapes] == [
        ("current", "voltage", "phase", "on", "n"),
        ("usage",),
        ("usage", "idle"),
    ]
    assert cols.shapes[0].kinds == ("DOUBLE", "INT", "DOUBLE", "BOOL", "TINYINT UNSIGNED")
    assert cols.ts.tolist()[-3:] == [0, 0, 0]
    assert cols.lines.tolist()[-3:] == [53, 54, 55]


# --- through the executor --------------------------------------------------------------------


@pytest.fixture(scope="module")
def executors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Executor, Executor]]:
    """Two executors over two lakes: the columnar path writes into one, the reference into the
    other (the same database names in both)."""
    root: Path = tmp_path_factory.mktemp("lp-columns")
    yield (
        Executor(Lake(root / "fast"), MemoryRegistry()),
        Executor(Lake(root / "reference"), MemoryRegistry()),
    )


_DBS = itertools.count()


def _answer(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call().affected_rows
    except TdError as e:
        return "error", (e.code, e.message)


def _state(ex: Executor, db: str) -> list[Any]:
    """What a client can read back: the supertables, their columns and tags in order, the
    subtables, every row with its tags (repr: -0.0 and FLOAT rounding count)."""
    out: list[Any] = []
    for (stable,) in sorted(ex.execute_one(f"SHOW {db}.STABLES").rows):
        out.append(("describe", stable, [tuple(r) for r in ex.execute_one(f"DESCRIBE {db}.`{stable}`").rows]))
        rows = ex.execute_one(f"SELECT tbname, * FROM {db}.`{stable}`").rows
        out.append(("rows", stable, sorted(repr(tuple(r)) for r in rows)))
    out.append(("tables", sorted(tuple(r) for r in ex.execute_one(f"SHOW {db}.TABLES").rows)))
    return out


@settings(max_examples=150, deadline=None)
@given(case=bodies(), precreate=st.booleans())
def test_columnar_writes_what_the_line_by_line_path_writes(
    executors: tuple[Executor, Executor], case: tuple[str, list[str]], precreate: bool
) -> None:
    """The same answers or errors, supertables, subtables and rows, request after request; a body
    the columnar path reads and the reference writes is written without falling back."""
    fast, reference = executors
    precision, texts = case
    db = f"d{next(_DBS)}"
    for ex in (fast, reference):
        ex.execute_one(f"CREATE DATABASE {db} PRECISION 'ms' KEEP 3650")
        if precreate:  # a supertable made by SQL: its own types (FLOAT, TINYINT) and tag
            ex.execute_one(f"CREATE STABLE {db}.m (ts TIMESTAMP, v FLOAT, x TINYINT) TAGS (t1 NCHAR(4))")
    with mock.patch.object(schemaless.time, "time_ns", return_value=NOW_NS):
        for text in texts:
            with mock.patch.object(schemaless, "_write_points", wraps=schemaless._write_points) as slow:
                got = _answer(lambda ex=fast, text=text: schemaless.write_lines(ex, db, text, precision))
            expected = _answer(
                lambda text=text, ns=schemaless.PRECISION_NS[precision]: schemaless._write_points(
                    reference, db, text, ns
                )
            )
            assert got == expected
            columnar = parse_columns(text) is not None
            if columnar and expected[0] == "ok":
                assert not slow.called, "the columnar path fell back on a body it reads and can write"
            event("columnar write" if columnar and not slow.called else "line by line")
            event(f"answer: {expected[0]}" + (f" {expected[1][0]:#06x}" if expected[0] == "error" else ""))
            assert _state(fast, db) == _state(reference, db)


def test_every_spelling_of_a_kind_is_read_as_columns() -> None:
    """Both spellings of a kind in one column (``1``/``1f64``, ``1i``/``1i64``, ``1u``/``1u64``),
    every suffix at its range's ends, every boolean: columns, with parse_lines' values."""
    rows = [
        "d=1.5,e=-1e3f64,i=-9223372036854775808i,j=18446744073709551615u,a=-128i8,b=32767i16,"
        "c=-2147483648i32,f=255u8,g=65535u16,h=4294967295u32,k=3.4028234663852886e38f32,t=t",
        "d=7f64,e=.5,i=9223372036854775807i64,j=0u64,a=127i8,b=-32768i16,c=2147483647i32,f=0u8,"
        "g=0u16,h=0u32,k=-1f32,t=FALSE",
        *[f"d=1,e=2,i=3i,j=4u,a=5i8,b=6i16,c=7i32,f=8u8,g=9u16,h=10u32,k=11f32,t={b}" for b in KINDS_BOOL],
    ]
    text = "\n".join(f"m {r} {k + 1}" for k, r in enumerate(rows))
    cols = parse_columns(text)
    assert cols is not None
    assert _points(cols) == _reference_points(text)


def test_bodies_arrow_cannot_hold_are_left_to_parse_lines() -> None:
    """A lone surrogate (the web view never passes one: it decodes with errors="replace") is
    not UTF-8: the columnar path declines instead of raising."""
    assert parse_columns("m,t=\ud800 v=1 1") is None
    assert parse_lines("m,t=\ud800 v=1 1")[0].tags == (("t", "\ud800"),)


def test_float_columns_round_as_python_does() -> None:
    """Arrow's string -> float64 cast gives Python's ``float`` (both correctly rounded) on the
    texts that stress it: long mantissas, halfway cases, subnormals, the FLOAT limit."""
    texts = [
        "0.1", "2.2250738585072011e-308", "4.9e-324", "1.7976931348623157e308", "9007199254740993",
        "0.30000000000000004441", "123456789012345678901234567890", "3.4028234663852886e38",
        "1.00000000000000011102230246251565404236316680908203125",
    ]  # fmt: skip
    body = "\n".join(f"m v={t} 1" for t in texts)
    cols = parse_columns(body)
    assert cols is not None
    assert [repr(v) for v in cols.shapes[0].values[0].to_pylist()] == [repr(float(t)) for t in texts]
    assert all(math.isfinite(float(t)) for t in texts)
