"""information_schema system tables (``statements/sysinfo.py``): the catalog and the stream registry as
tables any SELECT can query, as TDengine users and the shared acceptance cases do."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.statements.sysinfo import PERF_TABLES, TABLES
from spark_workers.streams.registry import MemoryRegistry


@pytest.fixture
def ex(tmp_path: Path) -> Executor:
    e = Executor(Lake(tmp_path), MemoryRegistry(), tz="UTC")
    e.execute(
        "create database d1; create database d2 precision 'us';"
        "create stable d1.st (ts timestamp, v int, w double) tags (site int, nm varchar(8));"
        "create table d1.res_a using d1.st tags (1, 'x'); create table d1.res_b using d1.st tags (2, null);"
        "create table d1.other using d1.st tags (3, 'z'); create table d2.n (ts timestamp, k double)"
    )
    return e


def rows(ex: Executor, sql: str) -> list[list[object]]:
    return [list(r) for r in ex.execute_one(sql).rows]


def test_ins_tables_lists_subtables_and_normal_tables_with_where_and_like(ex: Executor) -> None:
    got = rows(
        ex,
        "select table_name, stable_name, type, columns from information_schema.ins_tables "
        "where db_name = 'd1' and table_name like 'res_%' order by table_name",
    )
    assert got == [["res_a", "st", "CHILD_TABLE", 3], ["res_b", "st", "CHILD_TABLE", 3]]
    assert rows(ex, "select table_name, type from information_schema.ins_tables where db_name = 'd2'") == [
        ["n", "NORMAL_TABLE"]
    ]
    assert rows(ex, "select count(*) from information_schema.ins_tables") == [[4]]
    ex.execute("drop table d1.other")
    assert rows(ex, "select count(*) from information_schema.ins_tables where db_name = 'd1'") == [[2]]


def test_ins_stables_ins_tags_and_ins_databases(ex: Executor) -> None:
    assert rows(ex, "select stable_name, db_name, columns, tags from information_schema.ins_stables") == [
        ["st", "d1", 3, 2]
    ]
    tags = rows(
        ex,
        "select table_name, tag_type, tag_value from information_schema.ins_tags where tag_name = 'nm' "
        "order by table_name",
    )
    assert tags == [["other", "VARCHAR(8)", "z"], ["res_a", "VARCHAR(8)", "x"], ["res_b", "VARCHAR(8)", None]]
    dbs = {
        r[0]: r[1:] for r in rows(ex, "select name, precision, ntables from information_schema.ins_databases")
    }
    assert dbs == {
        "information_schema": ["ms", len(TABLES)],
        "performance_schema": ["ms", len(PERF_TABLES)],
        "d1": ["ms", 3],
        "d2": ["us", 1],
    }
    # SHOW DATABASES is the same table, as in TDengine
    assert sorted(r[0] for r in ex.execute_one("show databases").rows) == [
        "d1",
        "d2",
        "information_schema",
        "performance_schema",
    ]


def test_system_tables_join_and_use_as_current_database(tmp_path: Path, ex: Executor) -> None:
    got = rows(
        ex,
        "select t.table_name, g.tag_value from information_schema.ins_tables t "
        "join information_schema.ins_tags g on t.table_name = g.table_name "
        "where g.tag_name = 'site' order by t.table_name",
    )
    assert got == [["other", "3"], ["res_a", "1"], ["res_b", "2"]]
    local = Executor(ex.lake, ex.registry, tz="UTC", default_db="information_schema")
    assert [list(r) for r in local.execute_one("select stable_name from ins_stables").rows] == [["st"]]


def test_ins_streams_follows_the_registry(ex: Executor) -> None:
    assert rows(ex, "select * from information_schema.ins_streams") == []
    ex.execute(
        "create stream s1 trigger at_once watermark 5s into d1.out as "
        "select _wstart, count(*) n from d1.st partition by tbname interval(10s)"
    )
    got = rows(
        ex,
        "select stream_name, status, source_db, target_db, target_table, watermark, trigger "
        "from information_schema.ins_streams",
    )
    assert got == [["s1", "running", "d1", "d1", "out", "5s", "AT_ONCE"]]
    ex.execute("pause stream s1")
    assert rows(ex, "select status from information_schema.ins_streams where stream_name = 's1'") == [
        ["paused"]
    ]


def test_unknown_system_table_is_a_positioned_error(ex: Executor) -> None:
    sql = "select * from information_schema.ins_nothing"
    with pytest.raises(SqlError) as e:
        ex.execute_one(sql)
    assert "ins_nothing does not exist" in str(e.value) and "ins_tables" in str(e.value)
    assert e.value.offset == sql.index("ins_nothing")
