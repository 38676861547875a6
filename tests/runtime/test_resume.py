"""PAUSE STREAM / RESUME STREAM [IGNORE UNTREATED] (seed 000): a stream resumed normally processes
what was written while it was paused; with IGNORE UNTREATED those writes never reach its output,
while what is written after the resume does."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_700_000_000_000


@pytest.mark.parametrize("ignore_untreated", [False, True])
def test_resume_after_pause(tmp_path: Path, ignore_untreated: bool) -> None:
    lake = Lake(tmp_path)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, v int) tags (site int);"
        "create table a using st tags (1);"
        "create stream s trigger at_once into o as select _wstart, count(*) n, sum(v) sv from st "
        "partition by tbname interval(10s)"
    )
    r = LocalRunner.for_registered(lake, reg, "s")
    ex.execute(f"insert into a values ({T0}, 1) ({T0 + 1_000}, 2)")
    r.run()
    # paused: the runner does not poll while rows arrive in a window already written and a new one
    ex.execute(f"insert into a values ({T0 + 2_000}, 10) ({T0 + 20_000}, 100)")
    if ignore_untreated:  # what RESUME ... IGNORE UNTREATED records: the source's version now
        r.ignore_until = lake.version("d", lake.catalog.require_table("d", "st").storage)
    ex.execute(f"insert into a values ({T0 + 40_000}, 1000)")
    r.run()
    rows = {row[0] - T0: tuple(row[1:3]) for row in ex.execute_one("select * from o").rows}
    if ignore_untreated:
        assert rows == {0: (2, 3), 40_000: (1, 1000)}
    else:
        assert rows == {0: (3, 13), 20_000: (1, 100), 40_000: (1, 1000)}
