"""FILL in streams (``streams/compile.py``, ``query/compute.py``): seed 000's restriction of
TRIGGER FORCE_WINDOW_CLOSE to FILL(PREV | NULL | NONE | VALUE), FILL(NONE) as the plain stream,
every other mode accepted (``runtime/stream_fill.py`` writes the filled windows), and a window
clause inside a 3.3.7 per-event computation refused by name instead of dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


@pytest.fixture
def ex(tmp_path: Path) -> Executor:
    e = Executor(Lake(tmp_path), MemoryRegistry(), tz="UTC", default_db="d")
    e.execute("create database d; create table t (ts timestamp, v int)")
    return e


def refused(ex: Executor, sql: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        ex.execute_one(sql)
    return info.value


@pytest.mark.parametrize("mode", ["next", "linear", "null_f", "value_f, 1"])
def test_force_window_close_allows_only_the_seed_modes(ex: Executor, mode: str) -> None:
    sql = (
        "create stream s trigger force_window_close into o as "
        f"select _wstart, avg(v) from t interval(10s) fill({mode})"
    )
    e = refused(ex, sql)
    assert "seed 000" in e.message and "FORCE_WINDOW_CLOSE" in e.message
    assert e.position is not None and sql[e.position.offset :].lower().startswith("fill")


def test_fill_none_is_the_plain_stream(ex: Executor) -> None:
    ex.execute_one("create stream s into o as select _wstart, avg(v) from t interval(10s) fill(none)")
    assert [r[0] for r in ex.execute_one("show streams").rows] == ["s"]


@pytest.mark.parametrize("fill", ["prev", "next", "linear", "null", "value, 0", "null_f", "value_f, 1"])
def test_every_mode_is_accepted_without_force_window_close(ex: Executor, fill: str) -> None:
    ex.execute_one(f"create stream s into o as select _wstart, avg(v) from t interval(10s) fill({fill})")
    assert [r[0] for r in ex.execute_one("show streams").rows] == ["s"]


def test_fill_needs_an_interval_window(ex: Executor) -> None:
    e = refused(ex, "create stream s into o as select _wstart, count(*) from t session(ts, 10s) fill(prev)")
    assert e.code == Code.INVALID_WINDOW


def test_window_clause_in_a_337_computation_is_refused_not_dropped(ex: Executor) -> None:
    e = refused(
        ex,
        "create stream s interval(1m) sliding(1m) from t stream_options(ignore_nodata_trigger) into o as "
        "select _wstart, avg(v) from t "
        "where ts >= _twstart and ts < _twend interval(10s) fill(prev)",
    )
    assert e.code == Code.NOT_SUPPORTED and "window clause" in e.message
