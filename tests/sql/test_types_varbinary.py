"""VARBINARY columns and tags (TDengine SQL manual, "Data Types": ``'\\x..'`` hex literals, other
strings as their bytes; REST answers them as hex text, as taosAdapter writes them)."""

from __future__ import annotations

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def _ex(tmp_path):  # type: ignore[no-untyped-def]
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute("create database db; create table t (ts timestamp, v varbinary(6), n int)")
    return ex


def test_hex_and_plain_string_literals_round_trip_as_bytes(tmp_path):
    ex = _ex(tmp_path)
    ex.execute(
        r"insert into t values (1000, '\x6162ff00', 1) (2000, 'héj', 2) (3000, null, 3) (4000, '\X0A', 4)"
    )
    res = ex.execute_one("select ts, v from t order by ts")
    expected = [bytes([0x61, 0x62, 0xFF, 0x00]), "héj".encode(), None, b"\n"]
    assert [r[1] for r in res.rows] == expected
    col = res.columns[1]
    assert (col.type.sql, col.type.meta_name, col.type.byte_length) == ("VARBINARY(6)", "VARBINARY", 6)
    rest = res.to_rest("UTC")
    assert rest["column_meta"][1] == ["v", "VARBINARY", 6]
    assert [r[1] for r in rest["data"]] == [None if b is None else b.hex() for b in expected]


def test_describe_names_the_type_and_length(tmp_path):
    ex = _ex(tmp_path)
    rows = ex.execute_one("describe t").rows
    assert [r[:3] for r in rows if r[0] == "v"] == [["v", "VARBINARY", 6]]


@pytest.mark.parametrize(
    ("value", "code", "token"),
    [
        (r"'\x6'", Code.INVALID_VARBINARY, r"'\x6'"),  # odd number of hex digits
        (r"'\xzz'", Code.INVALID_VARBINARY, r"'\xzz'"),  # not hex
        ("5", Code.INVALID_VARBINARY, "5"),  # not a string
        (r"'\x01020304050607'", Code.VALUE_OUT_OF_RANGE, r"'\x01020304050607'"),  # 7 bytes > 6
        ("'abcdefg'", Code.VALUE_OUT_OF_RANGE, "'abcdefg'"),
    ],
)
def test_bad_value_is_refused_at_its_position_and_writes_nothing(tmp_path, value, code, token):
    ex = _ex(tmp_path)
    ex.execute(r"insert into t values (1000, '\x01', 1)")
    sql = f"insert into t values (2000, 'ok', 2) (3000, {value}, 3)"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == code
    assert err.value.offset == sql.index(token)
    assert ex.execute_one("select ts, v, n from t").rows == [[1000, b"\x01", 1]]


def test_varbinary_tag_round_trips_through_the_catalog(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create stable s (ts timestamp, a int) tags (vb varbinary(4))")
    ex.execute(r"insert into s1 using s tags ('\xdeadbeef') values (1000, 1)")
    ex.execute("insert into s2 using s tags (null) values (1000, 2)")
    res = ex.execute_one("select tbname, vb from s order by tbname")
    assert res.rows == [["s1", bytes.fromhex("deadbeef")], ["s2", None]]
    assert res.to_rest("UTC")["data"] == [["s1", "deadbeef"], ["s2", None]]
    assert ex.execute_one("select vb from s1").rows == [[bytes.fromhex("deadbeef")]]


def test_varbinary_length_limits(tmp_path):
    ex = _ex(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute("create table u (ts timestamp, v varbinary(65518))")
    assert err.value.code == Code.WRONG_VALUE_TYPE
    with pytest.raises(SqlError) as err:
        ex.execute("create table u (ts timestamp, v varbinary)")
    assert err.value.code == Code.WRONG_VALUE_TYPE


def test_where_compares_bytes_hex_and_plain_constants(tmp_path):
    ex = _ex(tmp_path)
    ex.execute(r"insert into t values (1000, '\x6162', 1) (2000, 'ab', 2) (3000, 'x6162', 3) (4000, null, 4)")
    stored = {1: bytes.fromhex("6162"), 2: b"ab", 3: b"x6162", 4: None}
    for where, value in [(r"v = '\x6162'", bytes.fromhex("6162")), ("v = 'x6162'", b"x6162")]:
        got = [r[0] for r in ex.execute_one(f"select n from t where {where} order by n").rows]
        assert got == [n for n, b in stored.items() if b == value]
    got = [r[0] for r in ex.execute_one(r"select n from t where v in ('\x78', 'x6162') order by n").rows]
    assert got == [n for n, b in stored.items() if b in (b"x", b"x6162")]
    sql = r"select n from t where v = '\x6'"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == Code.INVALID_VARBINARY
    assert err.value.offset == sql.index(r"'\x6'")


def test_a_hex_constant_keeps_its_backslash_in_a_varchar(tmp_path):
    # TDengine 3.1+ keeps "\x" in string constants (parser trimString); VARBINARY reads it as hex
    ex = _ex(tmp_path)
    ex.execute("create table s (ts timestamp, c varchar(10))")
    ex.execute(r"insert into s values (1000, '\x41')")
    assert ex.execute_one("select c from s").rows == [["\\x41"]]


def test_a_varbinary_tag_holds_at_most_16382_bytes(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create stable ok (ts timestamp, a int) tags (vb varbinary(16382))")
    sql = "create stable big (ts timestamp, a int) tags (vb varbinary(16383))"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == Code.WRONG_VALUE_TYPE
    assert err.value.offset == sql.index("vb varbinary")
