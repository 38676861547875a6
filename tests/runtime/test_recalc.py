"""RECALCULATE STREAM (``runtime/recalc.py``, seed 002 "Manual Recalculation"): windows in the
range are rewritten from the lake's current rows, the others stay as the stream wrote them, and a
window the stream has not closed is not written early."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_700_000_000_000
STREAM = "create stream s into o as select _wstart, count(*) n, sum(v) sv from st partition by tbname "


def setup(root: Path, stream: str) -> tuple[Executor, LocalRunner, Lake]:
    lake = Lake(root)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, v int) tags (k int);"
        "create table a using st tags (1)"
    )
    ex.execute(stream)
    return ex, LocalRunner.for_registered(lake, reg, "s"), lake


def out(ex: Executor) -> dict[int, tuple[int, int]]:
    return {r[0] - T0: (r[1], r[2]) for r in ex.execute_one("select * from o").rows}


def test_recalculate_rewrites_the_closed_windows_of_the_range_only(tmp_path: Path) -> None:
    ex, r, lake = setup(
        tmp_path,
        STREAM + "interval(10s)",
    )
    ex.execute("insert into a values " + " ".join(f"({T0 + t * 1000}, 1)" for t in range(0, 40, 5)))
    r.run()
    assert out(ex) == {0: (2, 2), 10_000: (2, 2), 20_000: (2, 2)}  # [30 s, 40 s) is still open
    # rows the stream never sees (as after RESUME ... IGNORE UNTREATED)
    r.ignore_until = lake.version("d", "st") + 1
    ex.execute(f"insert into a values ({T0 + 1000}, 100) ({T0 + 11_000}, 100) ({T0 + 21_000}, 100)")
    r.run()
    assert out(ex)[10_000] == (2, 2)

    res = ex.execute_one(f"recalculate stream s from {T0 + 10_000} to {T0 + 30_000}")
    assert res.affected_rows == 2
    assert out(ex) == {0: (2, 2), 10_000: (3, 102), 20_000: (3, 102)}  # window 0 is outside the range

    res = ex.execute_one(f"recalculate stream s from {T0}")  # up to the stream's progress (35 s)
    assert res.affected_rows == 3
    assert out(ex) == {0: (3, 102), 10_000: (3, 102), 20_000: (3, 102)}  # the open window stays unwritten


def test_recalculate_keeps_data_defined_windows_aligned(tmp_path: Path) -> None:
    ex, r, lake = setup(
        tmp_path,
        STREAM + "count_window(3)",
    )
    ex.execute("insert into a values " + " ".join(f"({T0 + t * 1000}, {t})" for t in range(9)))
    r.run()
    assert out(ex) == {0: (3, 3), 3000: (3, 12), 6000: (3, 21)}
    r.ignore_until = lake.version("d", "st") + 1
    ex.execute(f"insert into a values ({T0 + 4000}, 40)")  # an update of row 4 s the stream never sees
    r.run()
    # windows are segmented over the whole history, so the range [3 s, 8 s] finds the stream's windows
    assert ex.execute_one(f"recalculate stream s from {T0 + 3000} to {T0 + 8000}").affected_rows == 2
    assert out(ex) == {0: (3, 3), 3000: (3, 48), 6000: (3, 21)}


def test_recalculate_errors(tmp_path: Path) -> None:
    ex, _r, _lake = setup(
        tmp_path,
        STREAM + "count_window(3)",
    )
    with pytest.raises(SqlError, match="needs both FROM and TO"):
        ex.execute_one(f"recalculate stream s from {T0}")
    with pytest.raises(SqlError, match="start time is after the end time"):
        ex.execute_one(f"recalculate stream s from {T0 + 1} to {T0}")
    with pytest.raises(Exception, match="stream nope does not exist"):
        ex.execute_one(f"recalculate stream nope from {T0}")
