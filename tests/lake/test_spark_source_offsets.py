"""The ``tdlake`` source's ``latestOffset`` without Spark: an idle change feed is polled by one stat
of the next Delta log file, and the first version committed after it is still seen at once, also
after the table was dropped and created again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_workers.lake.spark_source import TdLakeStreamReader
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_700_000_000_000


@pytest.fixture
def lake_ex(tmp_path: Path) -> tuple[Lake, Executor]:
    """A lake with ``d.t`` holding one committed row, and its executor."""
    lake = Lake(tmp_path / "lake")
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute("create database d; create table t (ts timestamp, v int)")
    ex.execute(f"insert into t values ({T0}, 1)")
    return lake, ex


def _reader(lake: Lake) -> TdLakeStreamReader:
    opts = {"lake": str(lake.root), "catalog": "", "db": "d", "table": "t", "start_version": "0"}
    return TdLakeStreamReader(opts, None)  # type: ignore[arg-type]


def test_an_idle_feed_is_polled_by_the_next_log_file_and_new_versions_are_seen(
    lake_ex: tuple[Lake, Executor], monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, ex = lake_ex
    reader = _reader(lake)
    v = lake.version("d", "t")
    start = {"v": v, "h": -1}
    assert reader.latestOffset(start) == start  # a full poll: nothing new
    full: list[Any] = []
    version = Lake.version
    monkeypatch.setattr(Lake, "version", lambda self, *a: full.append(a) or version(self, *a))
    for _ in range(5):
        assert reader.latestOffset(start) == start
    assert full == []  # idle polls did not read the Delta log
    ex.execute(f"insert into t values ({T0 + 1}, 2)")
    assert reader.latestOffset(start) == {"v": v + 1, "h": -1}
    assert full  # the new version was found by a full poll
    assert reader.latestOffset({"v": v + 1, "h": -1}) == {"v": v + 1, "h": -1}


def test_a_recreated_table_past_the_offset_is_seen(lake_ex: tuple[Lake, Executor]) -> None:
    lake, ex = lake_ex
    reader = _reader(lake)
    start = {"v": 0, "h": -1}
    ex.execute(f"insert into t values ({T0 + 1}, 2)")
    end = reader.latestOffset(start)
    assert end["v"] > 0
    assert reader.latestOffset(end) == end  # idle at end["v"]
    ex.execute("drop table t; create table t (ts timestamp, v int)")
    for i in range(end["v"] + 2):
        ex.execute(f"insert into t values ({T0 + 10 + i}, {i})")
    assert reader.latestOffset(end)["v"] > end["v"]
