"""INSERT and DELETE forms (TDengine SQL manual, "Insert", "Delete Data"): a supertable with
``tbname`` and tags in its column list, ``INSERT ... subquery`` (privileges, casts, all or
nothing), constants TDengine folds in VALUES and DELETE bounds, and DELETE's refusals.

Expected rows are computed independently in Python (pandas-free: plain lists and epoch
arithmetic), never read from the code under test."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from spark_workers.access import Grant, Principal
from spark_workers.errors import Code, TdError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

BASE_MS = 1_668_073_288_000  # 2022-11-10 09:41:28 UTC


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


@pytest.fixture
def ex(lake: Lake) -> Executor:
    e = Executor(lake, MemoryRegistry())
    for sql in [
        "create database w precision 'ms'",
        "create database wus precision 'us'",
        "create table w.meters (ts timestamp, current float, voltage int) "
        "tags (location varchar(32), groupid int)",
        "create table w.t (ts timestamp, a int, b double, s varchar(16))",
        "create table w.copy (ts timestamp, a int, b double, s varchar(16))",
        "create table wus.copy (ts timestamp, a bigint)",
        "create table w.secret (ts timestamp, a int)",
    ]:
        e.execute_one(sql)
    rows = " ".join(f"({BASE_MS + i * 1000}, {i}, {i * 1.5}, 'r{i}')" for i in range(10))
    e.execute_one(f"insert into w.t values {rows}")
    e.execute_one(f"insert into w.secret values ({BASE_MS}, 42)")
    return e


def rows(ex: Executor, sql: str) -> list[list[object]]:
    return ex.execute_one(sql).rows


def error(ex: Executor, sql: str) -> TdError:
    with pytest.raises(TdError) as info:
        ex.execute_one(sql)
    return info.value


def user(lake: Lake, *grants: Grant) -> Executor:
    return Executor(lake, MemoryRegistry(), principal=Principal("alice", super=False, grants=grants))


# ----------------------------------------------------------------- supertable with tbname


def test_insert_into_supertable_with_tbname_creates_subtables_with_listed_tags(ex: Executor) -> None:
    res = ex.execute_one(
        "insert into w.meters (tbname, location, groupid, ts, current, voltage) values "
        f"('d31001', 'SF', 2, {BASE_MS}, 10.2, 219) "
        f"('d31001', 'SF', 2, {BASE_MS + 1000}, 10.15, 217) "
        f"('d31002', NULL, 3, {BASE_MS}, 10.5, 220)"
    )
    assert res.affected_rows == 3
    got = rows(ex, "select tbname, ts, voltage, location, groupid from w.meters order by tbname, ts")
    assert got == [
        ["d31001", BASE_MS, 219, "SF", 2],
        ["d31001", BASE_MS + 1000, 217, "SF", 2],
        ["d31002", BASE_MS, 220, None, 3],
    ]
    # unlisted tags are NULL; an existing subtable keeps its tags (the manual: no modification)
    ex.execute_one(f"insert into w.meters (tbname, ts, voltage) values ('d31003', {BASE_MS}, 1)")
    ex.execute_one(
        f"insert into w.meters (tbname, groupid, ts, voltage) values ('d31001', 99, {BASE_MS + 2000}, 5)"
    )
    tags = rows(ex, "select distinct tbname, location, groupid from w.meters order by tbname")
    assert tags == [["d31001", "SF", 2], ["d31002", None, 3], ["d31003", None, None]]


def test_insert_into_supertable_without_tbname_is_refused(ex: Executor) -> None:
    sql = f"insert into w.meters (ts, voltage) values ({BASE_MS}, 1)"
    e = error(ex, sql)
    assert e.code == Code.INVALID_OPERATION and "tbname" in e.message
    assert e.position is not None and e.position.offset == sql.index("w.meters")
    assert rows(ex, "select count(*) from w.meters") == [[0]]


def test_insert_into_supertable_with_a_bad_row_creates_no_subtable(ex: Executor) -> None:
    e = error(
        ex,
        "insert into w.meters (tbname, groupid, ts, voltage) values "
        f"('n1', 1, {BASE_MS}, 1) ('n2', 'not a number', {BASE_MS}, 2)",
    )
    assert e.code == Code.WRONG_VALUE_TYPE
    assert ex.catalog.table("w", "n1") is None and ex.catalog.table("w", "n2") is None
    assert rows(ex, "select count(*) from w.meters") == [[0]]


# ----------------------------------------------------------------------- INSERT ... SELECT


def test_insert_select_copies_rows_with_a_cast(ex: Executor) -> None:
    res = ex.execute_one("insert into w.copy (ts, a, b, s) select ts, a * 2, b, s from w.t where a >= 5")
    src = [[BASE_MS + i * 1000, i * 2, i * 1.5, f"r{i}"] for i in range(5, 10)]
    assert res.affected_rows == len(src)
    assert rows(ex, "select ts, a, b, s from w.copy") == src


def test_insert_select_moves_timestamps_between_precisions(ex: Executor) -> None:
    ex.execute_one("insert into wus.copy select ts, a from w.t where a < 3")
    assert rows(ex, "select ts, a from wus.copy") == [[(BASE_MS + i * 1000) * 1000, i] for i in range(3)]


def test_insert_select_into_a_supertable_by_tbname(ex: Executor) -> None:
    ex.execute_one(
        "insert into w.meters (tbname, groupid, ts, voltage) "
        "select case when a % 2 = 0 then 'even' else 'odd' end, a % 2, ts, a from w.t"
    )
    got = rows(
        ex, "select tbname, groupid, count(*), sum(voltage) from w.meters partition by tbname, groupid"
    )
    want = sorted(
        [
            ["even", 0, 5, sum(i for i in range(10) if i % 2 == 0)],
            ["odd", 1, 5, sum(i for i in range(10) if i % 2)],
        ]
    )
    assert sorted(got) == want


def test_insert_select_column_count_mismatch(ex: Executor) -> None:
    sql = "insert into w.copy (ts, a) select ts, a, b from w.t"
    e = error(ex, sql)
    assert e.code == Code.INVALID_COLUMNS_NUM and "Illegal number of columns" in e.message
    assert e.position is not None and e.position.offset == sql.index("select")
    assert rows(ex, "select count(*) from w.copy") == [[0]]


def test_failing_insert_select_stores_nothing(ex: Executor) -> None:
    # s holds 'r0'..'r9': none converts to INT, the first row fails, nothing is written
    e = error(ex, "insert into w.copy (ts, a) select ts, s from w.t")
    assert e.code == Code.WRONG_VALUE_TYPE
    # a NULL timestamp in the last row only: still nothing
    e = error(ex, "insert into w.copy (ts, a) select case when a = 9 then null else ts end, a from w.t")
    assert e.code == Code.WRONG_VALUE_TYPE and "timestamp" in e.message.lower()
    assert rows(ex, "select count(*) from w.copy") == [[0]]


def test_insert_select_needs_read_on_the_source_and_write_on_the_target(lake: Lake, ex: Executor) -> None:
    # may write w.copy and read w.t, not w.secret
    alice = user(lake, Grant("w", "copy", write=True), Grant("w", "t", read=True))
    e = error(alice, "insert into w.copy (ts, a) select ts, a from w.secret")
    assert e.code == Code.PERMISSION_DENIED
    # may read everything in w, write nothing
    bob = user(lake, Grant("w", None, read=True))
    e = error(bob, "insert into w.copy (ts, a) select ts, a from w.t")
    assert e.code == Code.PERMISSION_DENIED
    assert rows(ex, "select count(*) from w.copy") == [[0]]
    # with both, it works
    assert alice.execute_one("insert into w.copy (ts, a) select ts, a from w.t").affected_rows == 10


# ------------------------------------------------------------------ constants TDengine folds


def test_insert_values_fold_constants(ex: Executor) -> None:
    ex.execute_one(
        "insert into w.copy values "
        "(cast(1668073288214 as timestamp), 2 * 3 + 1, 7 / 2, cast(12 as varchar(8))) "
        "('2022-11-10 09:41:28.000' + 1s, -5 % 3, 1.5 * 2, 'x') "
        f"({BASE_MS} + 2500, cast('41' as int) + 1, cast(3 as double), null)"
    )
    assert rows(ex, "select ts, a, b, s from w.copy") == [
        [BASE_MS + 214, 7, 3.5, "12"],
        [BASE_MS + 1000, -2, 3.0, "x"],  # C's fmod: -5 % 3 = -2
        [BASE_MS + 2500, 42, 3.0, None],
    ]


def test_insert_values_fold_scalar_functions_of_constants(ex: Executor) -> None:
    ex.execute_one(
        "insert into w.copy values "
        f"({BASE_MS}, abs(-3), round(-2.5), concat('a', upper('b'))) "
        f"({BASE_MS + 1}, ceil(1) + floor(2.7), sqrt(-1), lower('XY')) "
        f"({BASE_MS + 2}, round(2.5), pow(2, 10), concat('a', null))"
    )
    # TDengine: ROUND rounds halves away from zero, SQRT(-1) and CONCAT with NULL are NULL
    assert rows(ex, "select a, b, s from w.copy") == [[3, -3.0, "aB"], [3, None, "xy"], [3, 1024.0, None]]
    e = error(ex, f"insert into w.copy values ({BASE_MS + 3}, abs('x'), 1, 'y')")
    assert e.code == Code.WRONG_VALUE_TYPE and "abs" in e.message
    assert rows(ex, "select count(*) from w.copy") == [[3]]


def test_insert_values_fold_system_functions(ex: Executor) -> None:
    """TDengine folds DATABASE() / SERVER_VERSION() / CURRENT_USER() to the session's constants in
    VALUES as it does in SELECT."""
    import socket

    ex.execute_one("use w")
    ex.execute_one(
        f"insert into w.copy values ({BASE_MS}, 1, 1, database()) ({BASE_MS + 1}, server_status(), 2, user())"
    )
    assert rows(ex, "select a, s from w.copy") == [[1, "w"], [1, f"root@{socket.gethostname()}"]]
    e = error(ex, f"insert into w.copy values ({BASE_MS + 2}, 1, 1, database(1))")
    assert e.code == Code.INVALID_FUNCTION and "database" in e.message
    assert rows(ex, "select count(*) from w.copy") == [[2]]


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("where", "lo", "hi"),
    [
        ("ts = cast(1668073288000 + 3000 as timestamp)", BASE_MS + 3000, BASE_MS + 3000),
        (
            "ts = cast('2022-11-10 09:41:32' as timestamp)",
            _ms("2022-11-10 09:41:32"),
            _ms("2022-11-10 09:41:32"),
        ),
        (
            "ts >= '2022-11-10 09:41:28' + 2s and ts < 1668073288000 + 2 * 2500",
            BASE_MS + 2000,
            BASE_MS + 4999,
        ),
        ("ts between cast(1668073288000 as timestamp) + 7s and 1668073288000 + 100000", BASE_MS + 7000, None),
        ("ts > now() - 3650d and ts <= cast(1668073289000 as timestamp)", None, BASE_MS + 1000),
    ],
)
def test_delete_with_folded_bounds_deletes_exactly_those_rows(
    ex: Executor, where: str, lo: int | None, hi: int | None
) -> None:
    all_ts = [BASE_MS + i * 1000 for i in range(10)]
    doomed = [t for t in all_ts if (lo is None or t >= lo) and (hi is None or t <= hi)]
    assert doomed  # the case deletes something
    ex.execute_one(f"delete from w.t where {where}")
    assert [r[0] for r in rows(ex, "select ts from w.t")] == [t for t in all_ts if t not in doomed]


def test_delete_by_tag_on_a_supertable(ex: Executor) -> None:
    ex.execute_one(
        "insert into w.meters (tbname, groupid, ts, voltage) values "
        f"('g1', 1, {BASE_MS}, 1) ('g1', 1, {BASE_MS + 1000}, 2) "
        f"('g2', 2, {BASE_MS}, 3) ('g2', 2, {BASE_MS + 1000}, 4)"
    )
    ex.execute_one(f"delete from w.meters where ts > {BASE_MS} and groupid = 2")
    assert rows(ex, "select tbname, voltage from w.meters order by tbname, ts") == [
        ["g1", 1],
        ["g1", 2],
        ["g2", 3],
    ]


@pytest.mark.parametrize(
    ("where", "at"),
    [
        ("a > 3", "a > 3"),
        ("ts > 0 or ts < 5", "ts > 0 or ts < 5"),
        ("ts <> 5", "ts <> 5"),
        ("ts = 1/0", "ts = 1/0"),
    ],
)
def test_delete_not_bounding_the_timestamp_is_refused(ex: Executor, where: str, at: str) -> None:
    sql = f"delete from w.t where {where}"
    e = error(ex, sql)
    assert e.code == Code.INVALID_DELETE_WHERE
    assert "The DELETE statement must have a definite time window range" in e.message
    assert e.position is not None and e.position.offset == sql.index(at)
    assert rows(ex, "select count(*) from w.t") == [[10]]
