"""Legacy INTERVAL streams with FILL (``runtime/stream_fill.py``) through the local pipeline,
window by window: over the real Beijing readings the stream's output equals the independent pandas
FILL of the windows between each station's first window and its last closed one, whatever the
micro-batches; TRIGGER FORCE_WINDOW_CLOSE with FILL(PREV | NULL | VALUE) writes every window the
clock closes, with or without rows (seed 000)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests.query.test_fill import HI, LO, STATIONS, expected, readings


def ms(v: object) -> int:
    return v if isinstance(v, int) else int(pd.Timestamp(v).timestamp() * 1000)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fill", "mode"),
    [
        ("prev", "PREV"),
        ("next", "NEXT"),
        ("linear", "LINEAR"),
        ("null", "NULL"),
        ("value, -1.5, -2, 7", "VALUE"),
    ],
)
def test_stream_fill_matches_pandas_window_by_window(tmp_path: Path, fill: str, mode: str) -> None:
    lake = Lake(tmp_path)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="air")
    ex.execute(
        "create database air precision 'ms' duration 1000d; "
        "create stable quality (ts timestamp, pm25 double) "
        "tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using quality tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    d = d[(d.ts >= LO) & (d.ts <= HI)].sort_values("ts")
    table = lake.catalog.require_table("air", "quality")
    db = lake.catalog.require_database("air")
    ex.execute_one(
        f"create stream s into o as select _wstart, avg(pm25) mean, max(pm25) mx, count(*) n, tbname st "
        f"from quality where pm25 is not null partition by tbname interval(1h) fill({fill})"
    )
    runner = LocalRunner.for_registered(lake, reg, "s")
    cut = np.linspace(0, len(d), 5).astype(int)
    for part in (d.iloc[a:b] for a, b in itertools.pairwise(cut)):  # four micro-batches
        lake.write(
            db,
            table,
            pa.table(
                {
                    "tbname": part.tbname.to_numpy(),
                    "ts": part.ts.to_numpy(),
                    "pm25": pa.array(part.pm25, from_pandas=True),
                }
            ),
        )
        runner.run()
    got = pd.DataFrame(
        ex.execute_one("select _wstart, mean, mx, n, st from o").rows,
        columns=["wstart", "mean", "max", "count", "sub"],
    )
    got["wstart"] = [ms(v) for v in got.wstart]
    want = expected(d, mode)
    for tb in STATIONS:
        w = want[want.tbname == tb]
        data = w[w.data]
        # the windows from the station's first window to its last closed one (the last stays open)
        w = w[(w.wstart >= data.wstart.min()) & (w.wstart < data.wstart.max())]
        g = got[got["sub"] == tb].sort_values("wstart")
        assert g.wstart.tolist() == w.wstart.tolist(), tb
        assert (~w.data).sum() >= 5
        for c in ("mean", "max", "count"):
            np.testing.assert_allclose(
                pd.to_numeric(g[c]).to_numpy(float),
                w[c].to_numpy(float),
                rtol=1e-9,
                equal_nan=True,
                err_msg=f"{tb} {c}",
            )


T0 = 1_700_000_000_000  # aligned to 10 s


@pytest.mark.parametrize(("fill", "filled"), [("prev", 1.0), ("null", None), ("value, 0", 0.0)])
def test_force_window_close_writes_every_closed_window(
    tmp_path: Path, fill: str, filled: float | None
) -> None:
    lake = Lake(tmp_path)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute("create database d; create table t (ts timestamp, v int)")
    ex.execute_one(
        "create stream s trigger force_window_close into o as "
        f"select _wstart, avg(v) a from t interval(10s) fill({fill})"
    )
    clock = [T0 + 5_000]
    runner = LocalRunner.for_registered(lake, reg, "s", clock=lambda: clock[0])
    ex.execute_one(f"insert into t values ({T0 + 2_000}, 1)")
    runner.run()
    clock[0] = T0 + 12_000
    runner.tick()
    clock[0] = T0 + 45_000
    runner.tick()  # windows 10 s, 20 s, 30 s closed without rows
    ex.execute_one(f"insert into t values ({T0 + 47_000}, 5)")
    clock[0] = T0 + 48_000
    runner.run()  # before the window's end: the row counts
    clock[0] = T0 + 52_000
    runner.tick()
    rows = [(ms(r[0]) - T0, r[1]) for r in ex.execute_one("select _wstart, a from o order by _wstart").rows]
    assert rows == [(0, 1.0), (10_000, filled), (20_000, filled), (30_000, filled), (40_000, 5.0)]


def test_337_computation_with_interval_and_fill(tmp_path: Path) -> None:
    """A 3.3.7 stream whose computation is a window query with FILL: each daily trigger window
    runs ``... FROM %%tbname WHERE ts >= _twstart AND ts < _twend INTERVAL(1h) FILL(LINEAR)``, i.e.
    the hourly windows of that day interpolated inside the day (pandas: the query FILL of each
    day)."""
    lake = Lake(tmp_path)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="air")
    ex.execute(
        "create database air precision 'ms' duration 1000d; "
        "create stable quality (ts timestamp, pm25 double) tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using quality tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    d = d[(d.ts >= LO) & (d.ts <= HI)].sort_values(["tbname", "ts"])
    lake.write(
        lake.catalog.require_database("air"),
        lake.catalog.require_table("air", "quality"),
        pa.table(
            {"tbname": d.tbname.to_numpy(), "ts": d.ts.to_numpy(), "pm25": pa.array(d.pm25, from_pandas=True)}
        ),
    )
    ex.execute_one(
        "create stream s interval(1d) sliding(1d) from quality partition by tbname "
        "stream_options(fill_history | ignore_nodata_trigger) into o as "
        "select _wstart, avg(pm25) mean, max(pm25) mx, count(*) n from %%tbname "
        "where ts >= _twstart and ts < _twend and pm25 is not null interval(1h) fill(linear)"
    )
    LocalRunner.for_registered(lake, reg, "s").run()
    got = pd.DataFrame(
        ex.execute_one("select _wstart, mean, mx, n, tag_tbname from o").rows,
        columns=["wstart", "mean", "max", "count", "tb"],
    )
    got["wstart"] = [ms(v) for v in got.wstart]
    day = 86_400_000
    for tb in STATIONS:
        mine = d[d.tbname == tb]
        days = range(int(mine.ts.min()) // day * day, int(mine.ts.max()) // day * day, day)  # last day open
        want = pd.concat([expected(mine, "LINEAR", lo=dd, hi=dd + day - 1) for dd in days], ignore_index=True)
        g = got[got.tb == tb].sort_values("wstart")
        assert g.wstart.tolist() == want.wstart.tolist()
        assert (~want.data).sum() >= 5
        for c in ("mean", "max", "count"):
            np.testing.assert_allclose(
                pd.to_numeric(g[c]).to_numpy(float),
                want[c].to_numpy(float),
                rtol=1e-9,
                equal_nan=True,
                err_msg=c,
            )
