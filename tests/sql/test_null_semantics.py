"""NULL rules that differ between TDengine and the backends' defaults, on the interactive path
(DuckDB) — the Spark side is exercised by the stream tests."""

from __future__ import annotations

from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def _ex(tmp_path):  # type: ignore[no-untyped-def]
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute("create database db; create table t (ts timestamp, a int, b int)")
    ex.execute("insert into t values (1000, 1, 0) (2000, null, 2) (3000, 6, 3)")
    return ex


def test_division_by_zero_is_null_not_an_error(tmp_path):
    assert _ex(tmp_path).execute_one("select a / b from t").rows == [[None], [None], [2.0]]


def test_last_row_keeps_a_null_value_last_does_not(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("insert into t values (4000, null, 1)")
    assert ex.execute_one("select last_row(a), last(a) from t").rows == [[None, 6]]
    assert ex.execute_one("select last_row(a), last(a) from t interval(10s)").rows == [[None, 6]]
