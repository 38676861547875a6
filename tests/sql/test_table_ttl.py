"""Table TTL (TDengine SQL manual, "Manage Tables": ``TTL value`` of a normal or child table, in
days, counted from the table's creation; 0 never expires; ``ALTER TABLE tb TTL value``; shown by
SHOW CREATE TABLE and ``information_schema.ins_tables.ttl``) on the SQLite and the PostgreSQL
catalog (``tests/sql/test_alter.py``'s fixtures: a PostgreSQL database of this run alone), and
the retention job dropping expired tables (``statements/ddl.drop_expired_tables``) but never a
table a stream reads or writes.
"""

from __future__ import annotations

from typing import Any

from spark_workers.access import Grant, Principal
from spark_workers.errors import Code
from spark_workers.lake.store import Lake
from spark_workers.statements.ddl import drop_expired_tables
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests.sql.test_alter import catalog_url, error, ex, lake, pg_database, rows  # noqa: F401

DAY_MS = 86_400_000


def _ttl_column(ex: Executor) -> dict[str, Any]:  # noqa: F811
    got = rows(ex, "select table_name, ttl from information_schema.ins_tables where db_name = 'd'")
    return {name: ttl for name, ttl in got}


def _setup(ex: Executor) -> None:  # noqa: F811
    ex.execute(
        "create database d; create stable st (ts timestamp, v int) tags (g int);"
        "create table d.n (ts timestamp, v int) comment 'x' ttl 10;"
        "create table d.n0 (ts timestamp, v int);"
        "create table d.c using d.st tags (1) ttl 5;"
        "create table a using st tags (2) ttl 1 b using st tags (3) comment 'bb' c0 using st tags (4)"
    )


def test_ttl_is_parsed_stored_and_shown(ex: Executor) -> None:  # noqa: F811
    _setup(ex)
    assert _ttl_column(ex) == {"n": 10, "n0": 0, "c": 5, "a": 1, "b": 0, "c0": 0}
    want_n = "CREATE TABLE `n` (`ts` TIMESTAMP, `v` INT) COMMENT 'x' TTL 10"
    assert rows(ex, "show create table d.n")[0][1] == want_n
    assert rows(ex, "show create table d.c")[0][1] == "CREATE TABLE `c` USING `st` TAGS (1) TTL 5"
    assert rows(ex, "show create table d.b")[0][1] == "CREATE TABLE `b` USING `st` TAGS (3) COMMENT 'bb'"
    assert rows(ex, "show create table d.n0")[0][1].endswith("`v` INT)")
    # INSERT ... USING ... TAGS (...) TTL n auto-creates the subtable with its TTL
    ex.execute_one("insert into d.auto using d.st tags (9) ttl 7 values (now, 1)")
    assert _ttl_column(ex)["auto"] == 7


def test_alter_table_ttl(ex: Executor) -> None:  # noqa: F811
    _setup(ex)
    ex.execute_one("alter table d.n0 ttl 3")
    ex.execute_one("alter table d.c ttl 0")
    ex.execute_one("alter table d.n comment 'y'")  # COMMENT alone keeps the TTL
    assert _ttl_column(ex) == {"n": 10, "n0": 3, "c": 0, "a": 1, "b": 0, "c0": 0}
    assert rows(ex, "show create table d.n")[0][1].endswith("COMMENT 'y' TTL 10")
    ex.execute_one(f"alter table d.n ttl {2**31 - 1}")
    assert _ttl_column(ex)["n"] == 2**31 - 1


def test_ttl_errors_are_tdengine_s(ex: Executor) -> None:  # noqa: F811
    _setup(ex)
    assert error(ex, "alter table d.n ttl 2147483648").code == Code.INVALID_TABLE_OPTION
    assert error(ex, "alter table d.n ttl -1").code == Code.SYNTAX_ERROR
    assert error(ex, "alter stable d.st ttl 3").code == Code.INVALID_ALTER_TABLE
    ex.execute_one("alter stable d.st ttl 0")  # the default: accepted, nothing changes
    ex.execute_one("create stable d.s0 (ts timestamp, v int) tags (g int) ttl 0")
    assert error(ex, "alter table d.n keep 3").code == Code.NOT_SUPPORTED
    sql = "create stable d.s2 (ts timestamp, v int) tags (g int) ttl 3"
    e = error(ex, sql)
    assert e.code == Code.INVALID_TABLE_OPTION and getattr(e, "offset", None) == sql.index("ttl")
    too_big = "create table d.x (ts timestamp, v int) ttl 2147483648"
    assert error(ex, too_big).code == Code.INVALID_TABLE_OPTION
    assert error(ex, "create table d.x (ts timestamp, v int) ttl 1.5").code == Code.SYNTAX_ERROR
    assert _ttl_column(ex)["n"] == 10  # nothing changed


def test_a_user_without_write_cannot_alter_ttl(lake: Lake, ex: Executor) -> None:  # noqa: F811
    _setup(ex)
    reader = Principal("alice", grants=(Grant("d", None, read=True),))
    alice = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d", principal=reader)
    assert error(alice, "alter table d.n ttl 1").code == Code.PERMISSION_DENIED
    assert error(alice, "alter table d.c ttl 1").code == Code.PERMISSION_DENIED
    assert _ttl_column(ex)["n"] == 10


def test_the_job_drops_expired_tables_and_keeps_the_others(lake: Lake, ex: Executor) -> None:  # noqa: F811
    _setup(ex)
    ex.execute_one("insert into d.c values (now, 1) d.a values (now, 2) d.b values (now, 3)")
    ex.execute_one("insert into d.n values (now, 4)")
    created = {name: ms for name, _k, _s, ms in lake.catalog.tables("d")}
    ttl = _ttl_column(ex)
    now_ms = created["c"] + 5 * DAY_MS  # c (5 days) has just expired; n (10 days) has not
    want = sorted(n for n, t in ttl.items() if t > 0 and created[n] + t * DAY_MS <= now_ms)
    assert want == ["a", "c"]  # the hand-worked rule picks these two
    assert sorted(drop_expired_tables(ex, now_ms=now_ms)) == [f"d.{n}" for n in want]
    assert set(_ttl_column(ex)) == set(ttl) - set(want)
    # the dropped subtables' rows went with them (DROP TABLE's path); the others' stay
    assert sorted(rows(ex, "select tbname, v from d.st")) == [["b", 3]]
    assert rows(ex, "select v from d.n") == [[4]]
    assert drop_expired_tables(ex, now_ms=created["n"] + 10 * DAY_MS - 1) == []
    assert drop_expired_tables(ex, now_ms=created["n"] + 10 * DAY_MS) == ["d.n"]


def test_the_job_keeps_a_table_a_stream_uses(ex: Executor) -> None:  # noqa: F811
    _setup(ex)
    ex.execute_one(
        "create stream s trigger at_once into d.out as select _wstart, count(*) c from d.n interval(10s)"
    )
    ex.execute_one(
        "create stream s2 trigger at_once into d.out2 as select _wstart, count(*) c from d.st interval(10s)"
    )
    far = 2**62
    dropped = drop_expired_tables(ex, now_ms=far)
    assert dropped == []  # n is read by s; c and a are children of st, which s2 reads
    ex.execute_one("drop stream s2")
    assert sorted(drop_expired_tables(ex, now_ms=far)) == ["d.a", "d.c"]
    assert "n" in _ttl_column(ex)


def test_a_catalog_from_before_ttl_gets_the_column(lake: Lake, ex: Executor, catalog_url: str) -> None:  # noqa: F811
    _setup(ex)
    drop = "ALTER TABLE {}tables DROP COLUMN ttl"
    if catalog_url:
        import psycopg

        with psycopg.connect(catalog_url, autocommit=True) as con:
            con.execute(drop.format("tdweb_catalog."))
    else:
        import sqlite3

        con = sqlite3.connect(lake.root / "_catalog.sqlite")
        con.execute(drop.format(""))
        con.commit()
        con.close()
    again = Executor(Lake(lake.root, catalog_url), MemoryRegistry(), tz="UTC", default_db="d")
    assert _ttl_column(again) == {"n": 0, "n0": 0, "c": 0, "a": 0, "b": 0, "c0": 0}
    again.execute_one("alter table d.n ttl 4")
    assert _ttl_column(again)["n"] == 4
