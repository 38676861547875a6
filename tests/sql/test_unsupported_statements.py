"""TDengine statements tdweb does not run are refused by name with the reason, ``0x0100``
(TSDB_CODE_OPS_NOT_SUPPORT) at the statement's first word: never a syntax error, never accepted
and ignored (``spark_workers/sql/parser/unsupported.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.sql.parser import parse
from spark_workers.sql.parser.unsupported import UNSUPPORTED
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


@pytest.mark.parametrize(("words", "reason"), UNSUPPORTED, ids=[" ".join(w) for w, _ in UNSUPPORTED])
def test_each_unsupported_statement_is_refused_by_name(words: tuple[str, ...], reason: str) -> None:
    sql = "  " + " ".join(w.lower() for w in words) + " x"
    with pytest.raises(SqlError) as err:
        parse(sql)
    e = err.value
    assert e.code == Code.NOT_SUPPORTED
    assert e.message == f"{' '.join(words)} is not supported: {reason}"
    assert e.position is not None and e.position.offset == 2


def test_a_refused_statement_in_a_batch_changes_nothing(tmp_path: Path) -> None:
    ex = Executor(Lake(tmp_path), MemoryRegistry())
    ex.execute("create database d; create table d.t (ts timestamp, v int)")
    with pytest.raises(SqlError) as err:
        ex.execute("insert into d.t values (1700000000000, 1); flush database d")
    assert err.value.code == Code.NOT_SUPPORTED
    assert ex.execute_one("select count(*) from d.t").rows == [[0]]


@pytest.mark.parametrize("sql", ["show d.disk_info", "show disk_info"])
def test_show_disk_info_is_refused(sql: str) -> None:
    with pytest.raises(SqlError) as err:
        parse(sql)
    assert err.value.code == Code.NOT_SUPPORTED and "DISK_INFO" in err.value.message


def test_statements_sharing_a_first_word_still_parse() -> None:
    for sql in ("create table d.t (ts timestamp, v int)", "show d.tables", "drop table if exists d.t"):
        assert parse(sql)


def test_insert_file_is_refused_without_touching_the_file_system() -> None:
    with pytest.raises(SqlError) as err:
        parse("insert into d.t file '/etc/passwd'")
    assert err.value.code == Code.NOT_SUPPORTED and "INSERT ... FILE" in err.value.message
    assert err.value.position is not None and err.value.position.offset == len("insert into d.t ")


def test_create_database_takes_tdengines_options_only() -> None:
    """TDengine's CREATE DATABASE options parse (``vgroups 1 buffer 8`` as TDengine's own tests send
    them); a word that is no option is a positioned syntax error, never stored and ignored."""
    assert parse("create database d vgroups 1 buffer 8 precision 'ms' keep 3650 wal_level 1")
    with pytest.raises(SqlError) as err:
        parse("create database d precision 'ms' colour 1")
    assert err.value.code == Code.SYNTAX_ERROR
    assert err.value.offset == len("create database d precision 'ms' ")
