"""The InfluxDB line protocol parser of schemaless writing (TDengine manual, "Ingesting Data in
Schemaless Mode": escapes, type suffixes; InfluxDB line protocol reference for the grammar).

The round-trip property escapes arbitrary names and values with the manual's escape table (written
here, not taken from the parser) and checks the parser gives them back."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.errors import Code, SqlError
from spark_workers.sql.line_protocol import Field, parse_line, parse_lines
from spark_workers.statements.schemaless import child_table_name, sml_length


def esc(text: str, specials: str) -> str:
    """The manual's escaping: a backslash before each special character and before a backslash."""
    out = text.replace("\\", "\\\\")
    for c in specials:
        out = out.replace(c, "\\" + c)
    return out


def test_manual_example() -> None:
    p = parse_line('st,t1=3,t2=4,t3=t3 c1=3i64,c3="passit",c2=false,c4=4f64 1626006833639000000')
    assert p.measurement == "st"
    assert p.tags == (("t1", "3"), ("t2", "4"), ("t3", "t3"))
    assert p.fields == (
        Field("c1", "BIGINT", 3),
        Field("c3", "VARCHAR", "passit"),
        Field("c2", "BOOL", False),
        Field("c4", "DOUBLE", 4.0),
    )
    assert p.ts == 1626006833639000000


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("1", "DOUBLE", 1.0),
        ("-1.5e3", "DOUBLE", -1500.0),
        ("2f32", "FLOAT", 2.0),
        ("2f64", "DOUBLE", 2.0),
        ("127i8", "TINYINT", 127),
        ("-32768i16", "SMALLINT", -32768),
        ("7i32", "INT", 7),
        ("7i64", "BIGINT", 7),
        ("-7i", "BIGINT", -7),
        ("255u8", "TINYINT UNSIGNED", 255),
        ("65535u16", "SMALLINT UNSIGNED", 65535),
        ("7u32", "INT UNSIGNED", 7),
        ("18446744073709551615u64", "BIGINT UNSIGNED", 2**64 - 1),
        ("7u", "BIGINT UNSIGNED", 7),
        ('"x"', "VARCHAR", "x"),
        ('L"x"', "NCHAR", "x"),
        ('l"x"', "NCHAR", "x"),
        *[(t, "BOOL", True) for t in ("t", "T", "true", "True", "TRUE")],
        *[(f, "BOOL", False) for f in ("f", "F", "false", "False", "FALSE")],
    ],
)
def test_field_types_follow_the_manual_suffix_table(text: str, kind: str, value: object) -> None:
    (f,) = parse_line(f"m v={text} 1").fields
    assert (f.kind, f.value) == (kind, value)
    assert type(f.value) is type(value)


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("m v=128i8 1", Code.SML_INVALID_DATA),  # out of the suffix's range
        ("m v=-1u 1", Code.SML_INVALID_DATA),
        ("m v=1.5i 1", Code.SML_INVALID_DATA),
        ("m v=abc 1", Code.SML_INVALID_DATA),
        ("m v=tRuE 1", Code.SML_INVALID_DATA),  # not one of the manual's spellings
        ("m v=1I 1", Code.SML_INVALID_DATA),  # suffixes are lower case
        ('m v="open 1', Code.SML_INVALID_DATA),
        ("m 1", Code.SML_INVALID_DATA),
        ("m v=1 1 2", Code.SML_INVALID_DATA),
        ("m v=1 12x", Code.SML_INVALID_DATA),
        ("m v=1,v=2 1", Code.SML_INVALID_DATA),  # duplicated key
        ("m,t=1 t=2 1", Code.SML_INVALID_DATA),
        ("m,t=a=b v=1 1", Code.SML_INVALID_DATA),
        ("m, v=1 1", Code.SML_INVALID_DATA),
        ('m v=G"POINT(1 2)" 1', Code.NOT_SUPPORTED),
        ('m v=B"\\x98" 1', Code.NOT_SUPPORTED),
    ],
)
def test_malformed_lines_are_refused(line: str, code: int) -> None:
    with pytest.raises(SqlError) as e:
        parse_line(line, 7)
    assert e.value.code == code
    assert "line 7" in e.value.message


def test_missing_or_zero_timestamp_is_none_and_comments_are_skipped() -> None:
    pts = parse_lines("# a comment\n\nm v=1\r\nm v=2 0\n  m v=3 5\n")
    assert [(p.ts, p.line) for p in pts] == [(None, 3), (None, 4), (5, 5)]


def test_escapes_of_the_manual() -> None:
    p = parse_line('my\\ st\\,x,t\\=k=v\\ 1\\,2 f\\ k="a \\"q\\" \\\\ b,c=d" 3')
    assert p.measurement == "my st,x"
    assert p.tags == (("t=k", "v 1,2"),)
    assert p.fields == (Field("f k", "VARCHAR", 'a "q" \\ b,c=d'),)
    # a backslash before an ordinary character is itself (the manual's backslash table, row 1)
    assert parse_line("m\\x,t=a\\b v=1 1").tags == (("t", "a\\b"),)
    assert parse_line("m\\x,t=a\\b v=1 1").measurement == "m\\x"


_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    measurement=_TEXT.filter(lambda s: not s.startswith("#") and not s.startswith(" ")),
    tags=st.dictionaries(_TEXT, _TEXT, max_size=3),
    fields=st.dictionaries(
        _TEXT, st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12), min_size=1, max_size=3
    ),
    ts=st.none() | st.integers(1, 2**62),
)
def test_escaping_round_trips(
    measurement: str, tags: dict[str, str], fields: dict[str, str], ts: int | None
) -> None:
    keys = [k.lower() for k in list(tags) + list(fields)]
    if len(set(keys)) != len(keys):
        return  # duplicated keys are refused (test_malformed_lines_are_refused)
    line = esc(measurement, ", ")
    line += "".join(f",{esc(k, ',= ')}={esc(v, ',= ')}" for k, v in tags.items())
    line += " " + ",".join(f'{esc(k, ",= ")}="{esc(v, chr(34))}"' for k, v in fields.items())
    if ts is not None:
        line += f" {ts}"
    p = parse_line(line)
    assert p.measurement == measurement
    assert dict(p.tags) == tags
    assert {f.name: f.value for f in p.fields} == fields
    assert all(f.kind == "VARCHAR" for f in p.fields)
    assert p.ts == ts


def test_child_table_name_is_tdengines_md5_rule() -> None:
    # the manual: md5 of "measurement,tag_key1=tag_value1,..." with the keys sorted, "t_" prefix
    expected = "t_" + hashlib.md5(b"st,t1=3,t2=4,t3=t3").hexdigest()
    assert child_table_name("st", [("t3", "t3"), ("t1", "3"), ("t2", "4")]) == expected
    # keys compare case-insensitively (buildChildTableName's strncasecmp)
    assert child_table_name("m", [("b", "1"), ("A", "2")]) == "t_" + hashlib.md5(b"m,A=2,b=1").hexdigest()
    assert child_table_name("m", []) == "t_" + hashlib.md5(b"m,_tag_null=").hexdigest()


@pytest.mark.parametrize(
    ("n", "length"), [(0, 1), (1, 2), (4, 8), (6, 8), (8, 16), (1023, 1024), (1024, 1024), (5000, 5000)]
)
def test_sml_length_is_the_next_power_of_two(n: int, length: int) -> None:
    assert sml_length(n) == length


_PLAIN = st.text(st.sampled_from("abcXYZ_09-:/."), min_size=1, max_size=8)
_VALUE = st.sampled_from(["1", "-2.5", "3i", "4u", "5i8", "6f32", "1e3", "t", "FALSE", ".5", "7."])


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            _PLAIN.filter(lambda s: s[0] != "#"),
            st.dictionaries(_PLAIN, _PLAIN, max_size=3),
            st.dictionaries(_PLAIN, _VALUE, min_size=1, max_size=3),
            st.none() | st.integers(1, 2**62),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_fast_path_agrees_with_the_general_parser(lines: list[tuple]) -> None:
    """A body without backslashes and quotes takes the fast path (shared heads, cached key
    checks); it must parse every line as the general parser does, errors included."""
    from spark_workers.sql.line_protocol import _parse_escaped

    texts = []
    for m, tags, fields, ts in lines:
        text = m + "".join(f",{k}={v}" for k, v in tags.items()) + " "
        text += ",".join(f"{k}={v}" for k, v in fields.items()) + ("" if ts is None else f" {ts}")
        texts.append(text)
    expected: list[object] = []
    for n, text in enumerate(texts, start=1):
        try:
            expected.append(_parse_escaped(text, n))
        except SqlError as e:
            expected.append((e.code, e.message))
            break
    try:
        got: list[object] = list(parse_lines("\n".join(texts)))
    except SqlError as e:
        got = [*expected[:-1], (e.code, e.message)]
        assert isinstance(expected[-1], tuple), e.message
    assert got == expected


def test_a_repeated_head_still_checks_each_line_shape() -> None:
    with pytest.raises(SqlError) as e:
        parse_lines("m,t=1 a=1 5\nm,t=1 a=2 6\nm,t=1 T=3 7")
    assert e.value.code == Code.SML_INVALID_DATA and "line 3" in e.value.message
