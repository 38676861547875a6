"""FILL on INTERVAL window queries (``spark_workers/query/fill.py``), every mode against an
independent pandas computation over the real Beijing air-quality readings (two stations, January
2014, hourly windows over the readings that have a PM2.5 value: the hours without one are real
empty windows), plus TDengine's own rules: the range from WHERE, the forced modes, the errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests import beijing

STATIONS = {"aotizhongxin": "Aotizhongxin", "changping": "Changping"}
HOUR = 3_600_000
LO = 1_389_456_000_000  # 2014-01-11 16:00 UTC (2014-01-12 00:00 Beijing)
HI = LO + 20 * 24 * HOUR - 1


def readings() -> pd.DataFrame:
    """``tbname``, ``ts`` (epoch ms of the local Beijing hour), ``pm25`` (NaN for NA), read
    straight from the CSVs."""
    d = beijing.readings(STATIONS, {"pm25": "PM2.5"})
    return d[(d.ts >= LO - 48 * HOUR) & (d.ts <= HI + 48 * HOUR)].reset_index(drop=True)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, pd.DataFrame]:
    lake = Lake(tmp_path_factory.mktemp("lake"))
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="air")
    ex.execute(
        "create database air precision 'ms'; create stable quality (ts timestamp, pm25 double) "
        "tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using quality tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    db = lake.catalog.require_database("air")
    lake.write(
        db,
        lake.catalog.require_table("air", "quality"),
        pa.table(
            {"tbname": d.tbname.to_numpy(), "ts": d.ts.to_numpy(), "pm25": pa.array(d.pm25, from_pandas=True)}
        ),
    )
    return ex, d


def expected(d: pd.DataFrame, mode: str, interval: int = HOUR, lo: int = LO, hi: int = HI) -> pd.DataFrame:
    """pandas: per station, every window of [lo, hi] with avg / max / count of the readings that
    have a PM2.5 value, the windows without one filled per ``mode``."""
    grid = np.arange(lo - lo % interval, hi + 1, interval)
    out = []
    for tb in sorted(STATIONS):
        r = d[(d.tbname == tb) & (d.ts >= lo) & (d.ts <= hi) & d.pm25.notna()]
        g = r.groupby((r.ts // interval) * interval).pm25.agg(["mean", "max", "count"])
        if g.empty:
            continue
        g = g.reindex(grid)
        has = g["count"].notna()
        if mode == "PREV":
            g = g.ffill()
        elif mode == "NEXT":
            g = g.bfill()
        elif mode == "LINEAR":
            g = g.interpolate(method="index", limit_area="inside")
            g["count"] = np.trunc(g["count"])
        elif mode == "VALUE":
            g = g.fillna({"mean": -1.5, "max": -2.0, "count": 7})
        g.insert(0, "tbname", tb)
        g["data"] = has
        out.append(g.rename_axis("wstart").reset_index())
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def query(ex: Executor, fill: str, where: str = "") -> pd.DataFrame:
    rows = ex.execute_one(
        f"select _wstart, tbname, avg(pm25), max(pm25), count(*) from quality "
        f"where ts >= {LO} and ts <= {HI} and pm25 is not null {where} "
        f"partition by tbname interval(1h) fill({fill})"
    ).rows
    return pd.DataFrame(rows, columns=["wstart", "tbname", "mean", "max", "count"])


def as_ms(s: pd.Series) -> np.ndarray:
    return np.array([int(pd.Timestamp(v).timestamp() * 1000) if not isinstance(v, int) else v for v in s])


@pytest.mark.parametrize(
    ("fill", "mode"), [("null", "NULL"), ("prev", "PREV"), ("next", "NEXT"), ("linear", "LINEAR")]
)
def test_each_mode_matches_pandas(air: tuple[Executor, pd.DataFrame], fill: str, mode: str) -> None:
    ex, d = air
    want = expected(d, mode)
    got = query(ex, fill)
    assert (~want.data).sum() >= 10  # the month has real empty hours
    assert len(got) == len(want) == 2 * 20 * 24
    assert list(got.tbname) == list(want.tbname)
    assert (as_ms(got.wstart) == want.wstart.to_numpy()).all()
    for c in ("mean", "max", "count"):
        g = pd.to_numeric(got[c], errors="coerce").to_numpy(float)
        np.testing.assert_allclose(g, want[c].to_numpy(float), rtol=1e-9, equal_nan=True, err_msg=c)


def test_value_fills_each_column_with_its_value_converted(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    want = expected(d, "VALUE")
    got = query(ex, "value, -1.5, -2, 7.9")  # 7.9 into count's BIGINT is 7
    np.testing.assert_allclose(got["mean"].to_numpy(float), want["mean"].to_numpy(float))
    np.testing.assert_allclose(got["max"].to_numpy(float), want["max"].to_numpy(float))
    assert list(got["count"]) == [int(x) for x in want["count"]]


def test_none_is_the_plain_query(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    want = expected(d, "NONE")
    assert len(query(ex, "none")) == int(want.data.sum())


def test_forced_modes_fill_a_range_without_rows(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, _ = air
    lo = 1_000_000_000_000 // HOUR * HOUR  # 2001: no readings
    hi = lo + 5 * HOUR
    base = f"select _wstart, avg(pm25) from quality where ts >= {lo} and ts < {hi} interval(1h)"
    assert ex.execute_one(base + " fill(null)").rows == []
    assert ex.execute_one(base + " fill(value, 3)").rows == []
    forced = ex.execute_one(base + " fill(null_f)").rows
    assert [r[1] for r in forced] == [None] * 5
    assert [r[1] for r in ex.execute_one(base + " fill(value_f, 3)").rows] == [3.0] * 5


def test_prev_next_value_fill_null_results_of_windows_with_rows(air: tuple[Executor, pd.DataFrame]) -> None:
    """A window with rows whose avg is NULL (every reading NA) is filled too (TDengine's tfill.c):
    PREV with the latest non-NULL value, NEXT with the next window's value, VALUE with the value."""
    ex, d = air
    lo, hi = LO, LO + 20 * 24 * HOUR - 1
    sql = f"select _wstart, avg(pm25) from aotizhongxin where ts >= {lo} and ts <= {hi} interval(1h)"
    r = d[(d.tbname == "aotizhongxin") & (d.ts >= lo) & (d.ts <= hi)].set_index("ts").pm25
    assert r.isna().sum() >= 4 and len(r) == 20 * 24  # every hour has a row; some have no PM2.5
    prev = [row[1] for row in ex.execute_one(sql + " fill(prev)").rows]
    np.testing.assert_allclose(np.array(prev, float), r.ffill().to_numpy(float), equal_nan=True)
    nxt = [row[1] for row in ex.execute_one(sql + " fill(next)").rows]
    np.testing.assert_allclose(np.array(nxt, float), r.fillna(r.shift(-1)).to_numpy(float), equal_nan=True)
    val = [row[1] for row in ex.execute_one(sql + " fill(value, -9)").rows]
    np.testing.assert_allclose(np.array(val, float), r.fillna(-9).to_numpy(float))


def test_sliding_windows_start_with_the_first_window_containing_the_start(
    air: tuple[Executor, pd.DataFrame],
) -> None:
    """TDengine: the windows of ``[start, end]`` run from the earliest one containing ``start``."""
    ex, _ = air
    lo = LO + 30 * 60_000
    rows = ex.execute_one(
        f"select _wstart, count(*) from aotizhongxin where ts >= {lo} and ts <= {lo + 3 * HOUR} "
        "interval(2h) sliding(1h) fill(null)"
    ).rows
    assert [as_ms(pd.Series([r[0]]))[0] for r in rows] == [
        LO - HOUR,
        LO,
        LO + HOUR,
        LO + 2 * HOUR,
        LO + 3 * HOUR,
    ]


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("select avg(pm25) from quality interval(1h) fill(prev)", Code.INVALID_FILL_TIME_RANGE),
        (
            f"select avg(pm25) from quality where ts >= {LO} interval(1h) fill(null)",
            Code.INVALID_FILL_TIME_RANGE,
        ),
        (
            f"select avg(pm25) from quality where ts >= 0 and ts <= {HI} interval(1s) fill(null)",
            Code.INVALID_FILL_TIME_RANGE,
        ),
        (
            f"select avg(pm25) from quality where ts >= {LO} and ts <= {HI} interval(1h) fill(value, 1, 2)",
            Code.WRONG_VALUE_TYPE,
        ),
        (f"select avg(pm25) from quality where ts >= {LO} and ts <= {HI} fill(null)", Code.INVALID_WINDOW),
        (
            f"select count(*) from aotizhongxin where ts >= {LO} and ts <= {HI} session(ts, 1h) fill(prev)",
            Code.INVALID_WINDOW,
        ),
    ],
)
def test_tdengine_refusals(air: tuple[Executor, pd.DataFrame], sql: str, code: int) -> None:
    ex, _ = air
    with pytest.raises(SqlError) as e:
        ex.execute_one(sql)
    assert e.value.code == code


def test_fill_rows_are_capped_by_the_window_rows_limit(air: tuple[Executor, pd.DataFrame]) -> None:
    from spark_workers.limits import Limits, configure_limits

    ex, _ = air
    configure_limits(Limits(max_window_rows=100))
    try:
        lo = 1_000_000_000_000 // HOUR * HOUR
        with pytest.raises(SqlError) as e:  # no input row, 200 filled rows
            ex.execute_one(
                f"select avg(pm25) from quality where ts >= {lo} and ts < {lo + 200 * HOUR} "
                "interval(1h) fill(null_f)"
            )
        assert e.value.code == Code.TOO_MANY_TIMEWINDOW
    finally:
        configure_limits(Limits())
