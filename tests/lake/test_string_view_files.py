"""Regression: delta-rs MERGE (an update of existing keys) writes strings as ``string_view``;
afterwards every read that filters on a string (a subtable, ``tbname IN``, a VARCHAR column) must
still work, in DuckDB queries and in ``Lake.read`` (docs/decisions.md, "string_view files")."""

from __future__ import annotations

import glob

import pyarrow.parquet as pq

from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def test_string_filters_after_a_merge(tmp_path):
    lake = Lake(tmp_path / "lake")
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d1")
    ex.execute(
        "create database d1; create stable st (ts timestamp, v int, c varchar(8)) tags (site varchar(8));"
        "create table a1 using st tags ('n'); create table b1 using st tags ('s')"
    )
    for i in range(3):
        ex.execute(
            f"insert into a1 values ({1_700_000_000_000 + i}, {i}, 'x') "
            f"b1 values ({1_700_000_000_000 + i}, 9, 'y')"
        )
    ex.execute("insert into a1 values (1700000000000, 100, 'z')")  # rewrite of an existing key: MERGE
    kinds = {
        str(pq.read_schema(f).field("tbname").type)
        for f in glob.glob(str(tmp_path / "lake/d1/st/**/*.parquet"), recursive=True)
    }
    assert "string_view" in kinds  # the situation this test is about
    assert ex.execute_one("select count(*), sum(v) from a1").rows == [[3, 103]]
    assert ex.execute_one("select count(*) from st where c = 'y'").rows == [[3]]
    assert ex.execute_one("select count(*) from st where tbname in ('a1', 'b1') and site = 'n'").rows == [[3]]
    db = lake.catalog.require_database("d1")
    t = lake.read(db, lake.catalog.require_table("d1", "st"), tbnames=["b1"])
    assert t.num_rows == 3 and set(t.column("tbname").to_pylist()) == {"b1"}
