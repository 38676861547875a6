"""FILL in streams (``streams/compile.py``, ``query/compute.py``): seed 000's restriction of
TRIGGER FORCE_WINDOW_CLOSE to FILL(PREV | NULL | NONE | VALUE), FILL(NONE) as the plain stream,
every other mode accepted (``runtime/stream_fill.py`` writes the filled windows), and 3.3.7
computations with a window clause and FILL (``query/compute.py``) checked at CREATE."""

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


def test_337_window_computation_with_fill_needs_a_time_range(ex: Executor) -> None:
    """TDengine refuses FILL without both ends of the time range: a 3.3.7 computation reading
    ``%%tbname`` without a WHERE on the timestamp is refused at CREATE; one over ``%%trows`` (the
    trigger window's rows) or bounded by ``_twstart`` / ``_twend`` is accepted."""
    e = refused(
        ex,
        "create stream s interval(1m) sliding(1m) from t stream_options(ignore_nodata_trigger) into o as "
        "select _wstart, avg(v) from t interval(10s) fill(prev)",
    )
    assert e.code == Code.INVALID_FILL_TIME_RANGE
    ex.execute_one(
        "create stream s1 interval(1m) sliding(1m) from t stream_options(ignore_nodata_trigger) into o1 as "
        "select _wstart, avg(v) from t where ts >= _twstart and ts < _twend interval(10s) fill(prev)"
    )
    ex.execute_one(
        "create stream s2 interval(1m) sliding(1m) from t stream_options(ignore_nodata_trigger) into o2 as "
        "select _wstart, avg(v) from %%trows interval(10s) fill(linear)"
    )
    assert sorted(r[0] for r in ex.execute_one("show streams").rows) == ["s1", "s2"]


def test_window_over_period_trows_is_refused_by_name(ex: Executor) -> None:
    e = refused(
        ex,
        "create stream s period(1h) from t into o as "
        "select _wstart, avg(v) from %%trows interval(10s) fill(prev)",
    )
    assert e.code == Code.NOT_SUPPORTED and "PERIOD" in e.message
