"""Calendar windows ``INTERVAL(Nn)`` / ``INTERVAL(Ny)`` (``engine/windows.py``,
``CalendarAssigner``): months and years of the session's time zone, with offsets, in queries, with
FILL, and in a legacy stream checked window by window; every expectation is a pandas grouping of
the real Beijing readings by their local (Asia/Shanghai) month or year."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.engine.windows import CalendarAssigner
from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests import beijing

STATIONS = {"aotizhongxin": "Aotizhongxin", "dongsi": "Dongsi"}
TZ = "Asia/Shanghai"


def readings() -> pd.DataFrame:
    """``tbname``, ``ts`` (epoch ms), ``local`` (the Beijing wall time), ``pm25``, from the CSVs."""
    frames = []
    for tb, name in STATIONS.items():
        df = beijing.station_csv(name)
        local = pd.to_datetime(df[["year", "month", "day", "hour"]])
        frames.append(
            pd.DataFrame({"tbname": tb, "ts": beijing.epoch_ms(df, TZ), "local": local, "pm25": df["PM2.5"]})
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Lake, MemoryRegistry, Executor, pd.DataFrame]:
    lake = Lake(tmp_path_factory.mktemp("lake"))
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz=TZ, default_db="air")
    ex.execute(
        "create database air precision 'ms'; create stable quality (ts timestamp, pm25 double) "
        "tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using quality tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    lake.write(
        lake.catalog.require_database("air"),
        lake.catalog.require_table("air", "quality"),
        pa.table(
            {"tbname": d.tbname.to_numpy(), "ts": d.ts.to_numpy(), "pm25": pa.array(d.pm25, from_pandas=True)}
        ),
    )
    return lake, reg, ex, d


def to_ms(v: object) -> int:
    """A TIMESTAMP of a result row as epoch ms."""
    return v if isinstance(v, int) else int(pd.Timestamp(v).timestamp() * 1000)  # type: ignore[arg-type]


def start_ms(local: pd.Series) -> np.ndarray:
    return (local.dt.tz_localize(TZ).dt.tz_convert("UTC").astype("int64") // 1_000_000).to_numpy()


def by_period(d: pd.DataFrame, key: pd.Series) -> pd.DataFrame:
    """avg / count per (station, local period start), the period start as epoch ms."""
    g = d.assign(k=key).groupby(["tbname", "k"]).agg(avg=("pm25", "mean"), n=("pm25", "size")).reset_index()
    g["wstart"] = start_ms(g.k)
    return g.sort_values(["tbname", "wstart"]).reset_index(drop=True)


def window_rows(ex: Executor, window: str, where: str = "") -> pd.DataFrame:
    rows = ex.execute_one(
        f"select _wstart, _wend, tbname, avg(pm25), count(*) from quality {where} "
        f"partition by tbname {window}"
    ).rows
    out = pd.DataFrame(rows, columns=["wstart", "wend", "tbname", "avg", "n"])
    for c in ("wstart", "wend"):
        out[c] = [to_ms(v) for v in out[c]]
    return out.sort_values(["tbname", "wstart"]).reset_index(drop=True)


def check(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.tbname) == list(want.tbname)
    assert (got.wstart.to_numpy() == want.wstart.to_numpy()).all()
    assert (got.n.to_numpy() == want.n.to_numpy()).all()
    np.testing.assert_allclose(got.avg.to_numpy(float), want.avg.to_numpy(float), rtol=1e-9)


def test_months_and_years_are_local_calendar_periods(air) -> None:  # type: ignore[no-untyped-def]
    _, _, ex, d = air
    month = by_period(d, d.local.dt.to_period("M").dt.start_time)
    got = window_rows(ex, "interval(1n)")
    assert len(got) == 2 * 48
    check(got, month)
    ends = start_ms(pd.Series(pd.to_datetime(month.k) + pd.offsets.MonthBegin(1)))
    assert (got.wend.to_numpy() == ends).all()  # 28 to 31 days
    check(window_rows(ex, "interval(1y)"), by_period(d, d.local.dt.to_period("Y").dt.start_time))


def test_multi_month_windows_and_offsets(air) -> None:  # type: ignore[no-untyped-def]
    _, _, ex, d = air
    # 2n: pairs of months counted from January 1900 (TDengine), i.e. Jan-Feb, Mar-Apr, ...
    pair = pd.to_datetime({"year": d.local.dt.year, "month": (d.local.dt.month - 1) // 2 * 2 + 1, "day": 1})
    check(window_rows(ex, "interval(2n)"), by_period(d, pair))
    # a fiscal year from April: 1y offset by 3 months
    fy = pd.to_datetime({"year": d.local.dt.year - (d.local.dt.month < 4), "month": 4, "day": 1})
    check(window_rows(ex, "interval(1y, 3n)"), by_period(d, fy))
    # months starting on the 2nd at midnight: offset 1d
    shifted = (d.local - pd.Timedelta(days=1)).dt.to_period("M").dt.start_time + pd.Timedelta(days=1)
    check(window_rows(ex, "interval(1n, 1d)"), by_period(d, shifted))


def test_fill_over_calendar_months(air) -> None:  # type: ignore[no-untyped-def]
    """FILL(PREV) over months with a range reaching past the data: the months without rows take
    the last month's values."""
    _, _, ex, d = air
    rows = ex.execute_one(
        "select _wstart, avg(pm25) from aotizhongxin where ts >= '2016-11-01' and ts < '2017-06-01' "
        "interval(1n) fill(prev)"
    ).rows
    a = d[(d.tbname == "aotizhongxin") & (d.local >= "2016-11-01")]
    means = a.groupby(a.local.dt.to_period("M")).pm25.mean()
    assert len(rows) == 7  # Nov .. May
    got = [r[1] for r in rows]
    np.testing.assert_allclose(got[:4], means.to_numpy(float), rtol=1e-9)
    assert got[4:] == [got[3]] * 3


@pytest.mark.parametrize(
    "window",
    [
        "interval(1n) sliding(1d)",
        "interval(2n) sliding(1n)",
        "interval(1n, 1y)",
        "interval(1n, 28d)",
        "interval(1d, 1n)",
    ],
)
def test_tdengine_refusals(air, window: str) -> None:  # type: ignore[no-untyped-def]
    _, _, ex, _ = air
    with pytest.raises(SqlError) as e:
        ex.execute_one(f"select count(*) from quality {window}")
    assert e.value.position is not None


def test_sliding_equal_to_a_calendar_interval_is_tumbling(air) -> None:  # type: ignore[no-untyped-def]
    _, _, ex, d = air
    check(window_rows(ex, "interval(1n) sliding(1n)"), by_period(d, d.local.dt.to_period("M").dt.start_time))


def test_dst_zone_months_start_at_local_midnight() -> None:
    a = CalendarAssigner(1, tz="Europe/Berlin")
    ts = np.array([pd.Timestamp("2021-03-31 23:30", tz="Europe/Berlin").value // 1_000_000], np.int64)
    (w,) = a.last_start(ts)
    assert pd.Timestamp(int(w), unit="ms", tz="UTC").tz_convert("Europe/Berlin") == pd.Timestamp(
        "2021-03-01", tz="Europe/Berlin"
    )
    (e,) = a.end(np.array([w]))
    assert pd.Timestamp(int(e), unit="ms", tz="UTC").tz_convert("Europe/Berlin") == pd.Timestamp(
        "2021-04-01", tz="Europe/Berlin"
    )  # the month of the DST change is 31 days minus one hour


def test_legacy_stream_with_month_windows(air) -> None:  # type: ignore[no-untyped-def]
    """A legacy INTERVAL(1n) stream over the history writes every closed local month of every
    station (the last month of each station stays open)."""
    lake, reg, ex, d = air
    ex.execute_one(
        "create stream monthly fill_history 1 into monthly as "
        "select _wstart, avg(pm25) a, count(*) n from quality partition by tbname interval(1n)"
    )
    LocalRunner.for_registered(lake, reg, "monthly", tz=TZ).run()
    rows = ex.execute_one("select _wstart, a, n, tbname from monthly").rows
    want = by_period(d, d.local.dt.to_period("M").dt.start_time)
    want = want[want.groupby("tbname").wstart.transform("max") != want.wstart]  # open last month
    got = pd.DataFrame(rows, columns=["wstart", "avg", "n", "tb"])
    got["wstart"] = [to_ms(v) for v in got.wstart]
    got = got.sort_values("wstart", kind="stable")
    assert len(got) == len(want) == 2 * 47
    assert sorted(got.wstart.tolist()) == sorted(want.wstart.tolist())
    assert sorted(got.n.tolist()) == sorted(want.n.tolist())
    np.testing.assert_allclose(sorted(got.avg.astype(float)), sorted(want.avg.astype(float)), rtol=1e-9)


def test_closing_windows_of_months_are_the_months_ending_in_the_range() -> None:
    """``closing_windows`` (empty-period firing of a 3.3.7 INTERVAL(1n) trigger, seed 002): per
    item, the calendar months that end after ``floor`` and at or before ``horizon``, from pandas'
    month starts in the zone (independent of the assigner's own arithmetic)."""
    tz = "Asia/Shanghai"
    a = CalendarAssigner(1, tz=tz)
    ms = lambda t: int(pd.Timestamp(t, tz=tz).timestamp() * 1000)  # noqa: E731
    floors = np.array([ms("2024-01-15"), ms("2024-05-01"), ms("2024-03-10")], np.int64)
    horizons = np.array([ms("2024-04-01"), ms("2024-05-20"), ms("2024-03-09")], np.int64)
    count, starts = a.closing_windows(floors, horizons, 1000)
    want: list[list[int]] = []
    for lo, hi in zip(floors.tolist(), horizons.tolist(), strict=True):
        months = pd.date_range("2023-12-01", "2024-07-01", freq="MS", tz=tz)
        want.append(
            [
                int(s.timestamp() * 1000)
                for s, e in itertools.pairwise(months)
                if lo < e.timestamp() * 1000 <= hi
            ]
        )
    assert count.tolist() == [len(w) for w in want] == [3, 0, 0]
    assert starts.tolist() == [s for w in want for s in w]
    # more windows than the limit: the counts only
    count, starts = a.closing_windows(floors[:1], horizons[:1], 2)
    assert count.tolist() == [3] and starts.size == 0
