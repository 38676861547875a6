"""DECIMAL(p, s) columns (TDengine 3.3.6+, SQL manual "Data Types"): precision 1..38, scale
0..p; digits past the scale rounded half away from zero; an integer part longer than ``p - s``
digits is TSDB_CODE_DECIMAL_OVERFLOW; DECIMAL is not a tag type. Expected values are computed
with Python's ``decimal`` module."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

INPUTS = ["12.345", "-3.1", "0.005", "-0.005", "999999.994", "7"]


def _q(text: str, scale: int) -> Decimal:
    return Decimal(text).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _ex(tmp_path):  # type: ignore[no-untyped-def]
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute("create database db; create table t (ts timestamp, d decimal(8, 2), w decimal(30, 10))")
    return ex


def test_values_are_rounded_to_the_scale_and_round_trip(tmp_path):
    ex = _ex(tmp_path)
    values = " ".join(f"({1000 * (i + 1)}, {v}, '{v}')" for i, v in enumerate(INPUTS))
    ex.execute(f"insert into t values {values} ({1000 * 99}, null, null)")
    res = ex.execute_one("select d, w from t order by ts")
    assert [r[0] for r in res.rows] == [_q(v, 2) for v in INPUTS] + [None]
    assert [r[1] for r in res.rows] == [_q(v, 10) for v in INPUTS] + [None]
    d, w = res.columns
    assert (d.type.sql, d.type.byte_length, w.type.sql, w.type.byte_length) == (
        "DECIMAL(8, 2)",
        8,
        "DECIMAL(30, 10)",
        16,
    )
    rest = res.to_rest("UTC")
    assert rest["column_meta"] == [["d", "DECIMAL", 8], ["w", "DECIMAL", 16]]
    assert [r[0] for r in rest["data"]] == [f"{_q(v, 2):.2f}" for v in INPUTS] + [None]


def test_sum_and_max_keep_the_exact_decimal(tmp_path):
    ex = _ex(tmp_path)
    values = " ".join(f"({1000 * (i + 1)}, {v}, {v})" for i, v in enumerate(INPUTS))
    ex.execute(f"insert into t values {values}")
    row = ex.execute_one("select sum(d), max(d), min(w) from t").rows[0]
    assert row[0] == sum(_q(v, 2) for v in INPUTS)
    assert row[1] == max(_q(v, 2) for v in INPUTS)
    assert row[2] == min(_q(v, 10) for v in INPUTS)


def test_where_compares_decimals_exactly(tmp_path):
    ex = _ex(tmp_path)
    values = " ".join(f"({1000 * (i + 1)}, {v}, {v})" for i, v in enumerate(INPUTS))
    ex.execute(f"insert into t values {values}")
    got = ex.execute_one("select d from t where d > 0.01 order by d").rows
    assert [r[0] for r in got] == sorted(q for q in (_q(v, 2) for v in INPUTS) if q > Decimal("0.01"))


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("1000000", Code.DECIMAL_OVERFLOW),  # 7 integer digits > 8 - 2
        ("999999.995", Code.DECIMAL_OVERFLOW),  # rounding carries into a 7th digit
        ("'abc'", Code.WRONG_VALUE_TYPE),
    ],
)
def test_bad_value_is_refused_at_its_position_and_writes_nothing(tmp_path, value, code):
    ex = _ex(tmp_path)
    ex.execute("insert into t values (1000, 1.5, 2.5)")
    sql = f"insert into t values (2000, 1, 1) (3000, {value}, 1)"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == code
    assert err.value.offset == sql.index(value)
    assert ex.execute_one("select d, w from t").rows == [[Decimal("1.50"), Decimal("2.5000000000")]]


@pytest.mark.parametrize(
    ("ddl", "token"),
    [
        ("create table u (ts timestamp, d decimal(39, 2))", "decimal(39"),
        ("create table u (ts timestamp, d decimal(5, 6))", "decimal(5"),
        ("create table u (ts timestamp, d decimal)", "decimal)"),
        ("create stable u (ts timestamp, a int) tags (d decimal(5, 2))", "d decimal"),
    ],
)
def test_bad_declarations_are_refused(tmp_path, ddl, token):
    ex = _ex(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute(ddl)
    assert err.value.code == Code.WRONG_VALUE_TYPE
    assert err.value.offset == ddl.index(token)


def test_default_scale_is_zero(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create table u (ts timestamp, d decimal(20))")
    ex.execute("insert into u values (1000, 12345678901234567890.5)")
    res = ex.execute_one("select d from u")
    assert res.columns[0].type.sql == "DECIMAL(20, 0)"
    assert res.rows == [[_q("12345678901234567890.5", 0)]]


def test_arithmetic_follows_the_type_rules(tmp_path):
    # manual: integers are converted to DECIMAL; with DOUBLE/FLOAT/VARCHAR the DECIMAL is
    # converted to DOUBLE (a float constant is a DOUBLE)
    ex = _ex(tmp_path)
    ex.execute("create table u (ts timestamp, d decimal(10, 2), f double, i int)")
    ex.execute("insert into u values (1000, 12.345, 0.25, 3)")
    d = _q("12.345", 2)
    res = ex.execute_one("select d + 1.5, d * 2, d + f, d - i from u")
    assert [c.type.name for c in res.columns] == ["DOUBLE", "DECIMAL", "DOUBLE", "DECIMAL"]
    assert res.rows == [[float(d) + 1.5, d * 2, float(d) + 0.25, d - 3]]


def test_window_aggregates_over_decimal_or_bytes_keep_their_values(tmp_path):
    """The window engine holds numbers as floats and values as text: an ad-hoc window query over
    a DECIMAL or VARBINARY / GEOMETRY input is computed over its rows (``query/window_rows.py``),
    exact and byte for byte (tests/sql/test_window_multirow.py checks them at length)."""
    ex = _ex(tmp_path)
    ex.execute("create table b (ts timestamp, g geometry(64), v varbinary(8))")
    ex.execute("insert into t values (1000, 1.25, 2.5) (2000, 2.75, 3.5)")
    ex.execute("insert into b values (1000, 'POINT(1 1)', '\\xf0ff')")
    res = ex.execute_one("select _wstart, sum(d) from t interval(1d)")
    assert res.rows == [[0, Decimal("1.25") + Decimal("2.75")]] and res.columns[1].type.name == "DECIMAL"
    point = ex.execute_one("select g from b").rows[0][0]
    assert ex.execute_one("select _wstart, first(g) from b interval(1d)").rows == [[0, point]]
    assert ex.execute_one("select _wstart, count(*), last(v) from b interval(1d)").rows == [
        [0, 1, b"\xf0\xff"]
    ]
    assert ex.execute_one("select _wstart, avg(cast(d as double)) from t interval(1d)").rows == [[0, 2.0]]
