"""The new types in streams (TDengine SQL manual, "Data Types", "JSON Type"): a stream whose
window engine would read VARBINARY, GEOMETRY or DECIMAL values is refused with NOT_SUPPORTED
naming the column (never computed wrongly); JSON tags and expressions over the new types
(computed by stage 1 on DuckDB) are accepted."""

from __future__ import annotations

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def _ex(tmp_path):  # type: ignore[no-untyped-def]
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute(
        "create database db; create table t (ts timestamp, d decimal(10, 2), v varbinary(8), g geometry(64), "
        "a int, u bigint unsigned); create stable s (ts timestamp, a int) tags (j json)"
    )
    return ex


@pytest.mark.parametrize(
    ("query", "column"),
    [
        ("select _wstart, sum(d) from t interval(10s)", "d DECIMAL(10, 2)"),
        ("select ts, v from t", "v VARBINARY(8)"),
        ("select _wstart, last(g) from t interval(10s)", "g GEOMETRY(64)"),
    ],
)
def test_streams_reading_new_types_are_refused_by_name(tmp_path, query, column):
    ex = _ex(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute(f"create stream x into o as {query}")
    assert err.value.code == Code.NOT_SUPPORTED
    name, type_sql = column.split(" ", 1)
    assert f"column {name} of type {type_sql}" in err.value.message
    assert ex.execute_one("show streams").rows == []


@pytest.mark.parametrize(
    "query",
    [
        "select _wstart, count(a) from s partition by j interval(10s)",
        "select _wstart, count(a) from s where j->'k' = 1 interval(10s)",
        "select _wstart, count(a) from s where j contains 'k' partition by tbname interval(10s)",
        "select _wstart, sum(u) from t interval(10s)",
        "select _wstart, last(st_astext(g)) from t interval(10s)",
    ],
)
def test_streams_over_json_tags_and_converted_values_are_accepted(tmp_path, query):
    ex = _ex(tmp_path)
    ex.execute(f"create stream x into o as {query}")
    assert [r[0] for r in ex.execute_one("show streams").rows] == ["x"]
