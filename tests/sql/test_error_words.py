"""Errors in TDengine's words (issue 15, "Errors"): an unknown function, a wrong argument type, a
misplaced clause each get the code and wording of TDengine's error table (``taoserror.h`` /
``terror.c``) with the position in the statement; no DuckDB, Arrow or Python text.

Each case below was found by ``tests/security/test_fuzz_rest.py`` or the issue's list.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from spark_workers.errors import Code, SqlError, function_offset, para_type_error
from spark_workers.lake.store import Lake
from spark_workers.query.duck import duck_error
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

INTERNAL = re.compile(
    r"Binder|Catalog Error|Conversion|duckdb|stddev_pop|VARCHAR\)|Arrow|ValueError|Traceback"
)


@pytest.fixture
def ex(tmp_path: Path) -> Executor:
    """Database ``p``: supertable ``meters`` with a VARCHAR column ``note``, subtable ``d1``
    (three rows), normal table ``t`` with an INT column."""
    e = Executor(Lake(tmp_path), MemoryRegistry(), tz="UTC")
    e.execute(
        "create database p;"
        "create stable p.meters (ts timestamp, current float, voltage int, note varchar(8)) tags (g int);"
        "create table p.t (ts timestamp, v int);"
        "insert into p.d1 using p.meters tags (1) values "
        "(1704067200000, 10.5, 220, 'a') (1704067201000, 11.0, 221, 'b') (1704067206000, 12.0, 222, null)"
    )
    return e


def refused(ex: Executor, sql: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        ex.execute_one(sql)
    e = info.value
    assert not INTERNAL.search(e.desc), e.desc
    return e


def at(e: SqlError, sql: str, token: str) -> None:
    """The error is positioned at the first ``token`` of ``sql`` (1-based line and column)."""
    assert e.position is not None, e.desc
    assert e.position.offset == sql.index(token), (e.desc, sql.index(token))
    assert f"column {sql.index(token) + 1}," in e.desc


# ---------------------------------------------------------------------- wrong argument type


@pytest.mark.parametrize(
    "sql, function",
    [
        ("SELECT _wstart, sum(note) FROM p.d1 INTERVAL(5s)", "sum"),  # the engine's window path
        ("SELECT _wstart, count(*), stddev(note) FROM p.d1 SESSION(ts, 3s)", "stddev"),
        ("SELECT spread(note) FROM p.d1 COUNT_WINDOW(2)", "spread"),
        ("SELECT avg(note) FROM p.d1 STATE_WINDOW(voltage)", "avg"),
        ("SELECT sum(note) FROM p.d1", "sum"),  # DuckDB's path
        ("SELECT stddev(note) FROM p.meters", "stddev"),  # DuckDB names it stddev_pop
        ("SELECT voltage, upper(voltage) FROM p.d1", "upper"),
        ("SELECT abs(note) FROM p.d1", "abs"),
    ],
)
def test_wrong_argument_type_is_invalid_parameter_data_type_at_the_call(
    ex: Executor, sql: str, function: str
) -> None:
    e = refused(ex, sql)
    assert e.code == Code.FUNC_PARA_TYPE == 0x2802
    assert e.message == f"Invalid parameter data type : {function}"
    at(e, sql, f"{function}(")


def test_pow_named_power_by_duckdb_still_points_at_the_call(ex: Executor) -> None:
    sql = "SELECT voltage, pow(note, note) FROM p.d1"
    e = refused(ex, sql)
    assert e.code == Code.FUNC_PARA_TYPE
    at(e, sql, "pow(")


def test_duck_error_translates_no_function_matches_and_keeps_operators_generic() -> None:
    with pytest.raises(duckdb.Error) as info:
        duckdb.sql("SELECT stddev_pop('x'::VARCHAR)").fetchall()
    e = duck_error(info.value)
    assert (e.code, e.message) == (Code.FUNC_PARA_TYPE, "Invalid parameter data type : stddev")
    with pytest.raises(duckdb.Error) as info:
        duckdb.sql("SELECT 1 + 'x'::VARCHAR").fetchall()
    op = duck_error(info.value)
    assert op.code == Code.WRONG_VALUE_TYPE and "VARCHAR" not in op.message


def test_para_type_error_and_function_offset() -> None:
    sql = "SELECT mysum(v), sum (v) FROM t"
    assert function_offset(sql, "sum") == sql.index("sum (")  # not inside mysum
    assert function_offset(sql, "avg") is None
    e = para_type_error("sum", sql=sql, offset=function_offset(sql, "sum"))
    assert e.desc.startswith("Invalid parameter data type : sum (line 1, column 18,")


# ---------------------------------------------------------------------- aggregates misplaced


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT voltage FROM p.d1 WHERE count(*) > 1",
        "SELECT _wstart, count(*) FROM p.d1 WHERE max(voltage) > 1 INTERVAL(5s)",
    ],
)
def test_aggregate_in_where_is_there_mustnt_be_aggregation(ex: Executor, sql: str) -> None:
    e = refused(ex, sql)
    assert e.code == Code.ILLEGAL_USE_AGG_FUNCTION == 0x2608
    assert e.message.startswith("There mustn't be aggregation")
    at(e, sql, re.search(r"(count|max)\(", sql.split("WHERE")[1]).group(0))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "sql", ["SELECT sum(avg(voltage)) FROM p.d1", "SELECT _wstart, sum(avg(voltage)) FROM p.d1 INTERVAL(5s)"]
)
def test_nested_aggregates_do_not_support_nesting(ex: Executor, sql: str) -> None:
    e = refused(ex, sql)
    assert e.code == Code.AGG_FUNC_NESTING == 0x2627
    assert e.message == "Aggregate functions do not support nesting"
    at(e, sql, "sum(avg")


# ---------------------------------------------------------------------- misplaced clauses, bad values


@pytest.mark.parametrize(
    "sql, token",
    [
        ("SELECT _wstart, count(*) FROM p.d1 INTERVAL(5s) WHERE voltage > 1", "WHERE"),
        ("SELECT count(*) FROM p.d1 WHERE ORDER BY ts", "ORDER BY"),
        ("SELECT count(*) FROM p.d1 LIMIT 3 WHERE voltage > 1", "WHERE"),  # sqlglot alone accepts it
        ("SELECT * FROM p.d1 LIMIT 3 ORDER BY ts", "ORDER BY"),
        ("SELECT * FROM p.d1 ORDER BY ts WHERE voltage > 1", "WHERE"),
        ("SELECT count(*) FROM p.meters HAVING count(*) > 1 PARTITION BY tbname", "PARTITION BY"),
        ("SELECT _wstart, count(*) FROM p.d1 INTERVAL(5s) LIMIT 'it''s'", "'it''s'"),
        ("SELECT _wstart, count(*) FROM p.d1 INTERVAL(5s) LIMIT 2 OFFSET 'a'", "'a'"),
    ],
)
def test_misplaced_clause_or_bad_limit_is_a_syntax_error_at_the_token(
    ex: Executor, sql: str, token: str
) -> None:
    e = refused(ex, sql)
    assert e.code == Code.SYNTAX_ERROR == 0x2600
    assert e.message.startswith("syntax error near") or "unexpected" in e.message
    at(e, sql, token)


def test_clauses_in_tdengine_order_still_run(ex: Executor) -> None:
    got = ex.execute_one(
        "SELECT _wstart, count(*) FROM p.meters WHERE ts >= 1704067200000 AND ts < 1704067210000 "
        "PARTITION BY tbname INTERVAL(5s) "
        "FILL(NULL) HAVING count(*) > 0 ORDER BY _wstart LIMIT 5 OFFSET 0"
    ).rows
    assert [list(r)[1] for r in got] == [2, 1]


def test_unknown_function_is_invalid_function_name_at_the_call(ex: Executor) -> None:
    sql = "SELECT voltage, nosuchfn(voltage) FROM p.d1"
    e = refused(ex, sql)
    assert e.code == Code.INVALID_FUNCTION_NAME == 0x264D
    assert e.message.startswith("Invalid function name")
    at(e, sql, "nosuchfn(")


def test_now_into_an_int_column_is_out_of_range_and_writes_nothing(ex: Executor, tmp_path: Path) -> None:
    before = ex.lake.version("p", "t")
    sql = "INSERT INTO p.t VALUES (1704067300000, now())"
    e = refused(ex, sql)
    assert e.code == Code.VALUE_OUT_OF_RANGE
    at(e, sql, "now()")
    assert ex.lake.version("p", "t") == before
    ex.execute("INSERT INTO p.t VALUES (1704067300000, 5)")  # the table still takes a good row
    assert [list(r) for r in ex.execute_one("SELECT v FROM p.t").rows] == [[5]]


# ---------------------------------------------------------------------- clauses DuckDB's binder refuses


@pytest.mark.parametrize(
    ("sql", "code", "words", "token"),
    [
        ("select v from p.t order by 5", Code.WRONG_NUMBER_OF_SELECT, "ORDER BY item", "order by"),
        (
            "select v from p.t union all select ts, v from p.t",
            Code.INCORRECT_NUM_OF_COL,
            "result columns",
            "union",
        ),
        ("select * from p.t limit -1", Code.SYNTAX_ERROR, "LIMIT", "limit"),
        ("select x.v from p.t", Code.TABLE_NOT_EXIST, "Table does not exist: x", "x.v"),
        ("select v + 'x' from p.t", Code.WRONG_VALUE_TYPE, "wrong value type", None),
    ],
)
def test_binder_refusals_in_tdengines_words(
    ex: Executor, sql: str, code: int, words: str, token: str | None
) -> None:
    e = refused(ex, sql)
    assert e.code == code and words in e.message, e.desc
    if token is not None:
        at(e, sql, token)
