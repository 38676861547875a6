"""TDengine's aggregate, selection and time-series functions in plain (non-window) queries
(:mod:`spark_workers.sql.aggregate_functions`, :mod:`spark_workers.sql.row_functions`).

Every result is compared with an independent numpy / pandas computation of the TDengine SQL
manual's definition ("Functions"; output formats from TDengine's ``builtinsimpl.c``) on (a) a
small table with NULLs and duplicate values, (b) no rows, (c) two stations of the Beijing air
quality dataset, plain and with PARTITION BY tbname.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

DATA = Path(__file__).resolve().parents[2] / "data/beijing-air-quality"
STATIONS = {"aotizhongxin": "Aotizhongxin", "changping": "Changping"}
HOUR = 3_600_000
LO = 1_389_456_000_000  # 2014-01-11 16:00 UTC
HI = LO + 60 * 24 * HOUR

# the small table: ms offsets from T0, c1 (INT, NULLs and duplicates), c2 (DOUBLE), s (VARCHAR)
T0 = 1_640_995_200_000  # 2022-01-01 00:00:00 UTC
SMALL = [
    (0, 1, 1.5, "a"),
    (1000, 3, None, "b"),
    (3000, None, 2.5, "c"),
    (4000, 3, 0.5, "a"),
    (6000, 7, 4.0, None),
    (7000, 2, -1.0, "b"),
    (9000, 3, 2.0, "a"),
]


def _ts(ms: int) -> str:
    return pd.Timestamp(T0 + ms, unit="ms").strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    ex = Executor(Lake(tmp_path_factory.mktemp("lake")), MemoryRegistry(), tz="UTC")
    ex.execute("create database fdb")
    ex.default_db = "fdb"
    ex.execute("create table t (ts timestamp, c1 int, c2 double, s varchar(10))")
    ex.execute("create table e (ts timestamp, c1 int, c2 double, s varchar(10))")
    values = " ".join(
        "('{}', {}, {}, {})".format(
            _ts(ms), "NULL" if a is None else a, "NULL" if b is None else b, "NULL" if s is None else f"'{s}'"
        )
        for ms, a, b, s in SMALL
    )
    ex.execute(f"insert into t values {values}")
    return ex


def frame() -> pd.DataFrame:
    return pd.DataFrame(SMALL, columns=["ms", "c1", "c2", "s"]).astype({"c1": "float64", "c2": "float64"})


def one(ex: Executor, sql: str) -> list:
    rows = ex.execute_one(sql).rows
    assert len(rows) == 1, rows
    return list(rows[0])


# ------------------------------------------------------------------ independent definitions


def np_percentile(v: np.ndarray, p: float) -> float:
    """TDengine's exact percentile: linear between the ranks floor/ceil of (n-1)p/100."""
    v = np.sort(v[~np.isnan(v)])
    i = (len(v) - 1) * p / 100
    lo, hi = math.floor(i), math.ceil(i)
    return float(v[lo] + (v[hi] - v[lo]) * (i - lo))


def np_twa(t: np.ndarray, v: np.ndarray) -> float:
    ok = ~np.isnan(v)
    t, v = t[ok], v[ok]
    if len(v) == 1:
        return float(v[0])
    return float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(t)) / (t[-1] - t[0]))


def np_irate(t_ms: np.ndarray, v: np.ndarray) -> float:
    ok = ~np.isnan(v)
    t, v = t_ms[ok], v[ok]
    if len(v) < 2:
        return 0.0
    d = v[-1] if v[-1] < v[-2] else v[-1] - v[-2]
    return float(d / ((t[-1] - t[-2]) / 1000))


def np_leastsquares(v: np.ndarray, start: float, step: float) -> str:
    y = v[~np.isnan(v)]
    x = start + step * np.arange(len(y))
    slope, intercept = np.polyfit(x, y, 1)
    return f"{{slop:{slope:.6f}, intercept:{intercept:.6f}}}"


# ------------------------------------------------------------------ (a) the small table


def test_aggregates_match_numpy(small: Executor) -> None:
    d = frame()
    t = d.ms.to_numpy(float)
    c1 = d.c1.to_numpy()
    got = one(
        small,
        "select percentile(c1, 50), percentile(c2, 0, 37.5, 100), apercentile(c1, 50), "
        "apercentile(c2, 90, 't-digest'), twa(c1), irate(c1), elapsed(ts), elapsed(ts, 1s), "
        "hyperloglog(s), leastsquares(c1, 1, 2), var_pop(c2), stddev_pop(c2), count(distinct c1) from t",
    )
    c2 = d.c2.to_numpy()
    multi = "[" + ", ".join(f"{np_percentile(c2, p):.6f}" for p in (0, 37.5, 100)) + "]"
    assert got[0] == pytest.approx(np_percentile(c1, 50))
    assert got[1] == multi
    assert got[2] == pytest.approx(np_percentile(c1, 50))  # exact is within the approximation
    assert got[3] == pytest.approx(np_percentile(c2, 90))
    assert got[4] == pytest.approx(np_twa(t, c1))
    assert got[5] == pytest.approx(np_irate(t, c1))
    assert got[6] == pytest.approx(t[-1] - t[0])  # database precision: ms
    assert got[7] == pytest.approx((t[-1] - t[0]) / 1000)
    assert got[8] == d.s.dropna().nunique()
    assert got[9] == np_leastsquares(c1, 1, 2)
    assert got[10] == pytest.approx(np.nanvar(c2))
    assert got[11] == pytest.approx(np.nanstd(c2))
    assert got[12] == d.c1.dropna().nunique()


def test_result_names_and_types(small: Executor) -> None:
    r = small.execute_one(
        "select percentile(c1, 50), percentile(c1, 10, 90), hyperloglog(c1), leastsquares(c1, 1, 1) from t"
    )
    assert [c.name for c in r.columns] == [
        "percentile(c1, 50)",
        "percentile(c1, 10, 90)",
        "hyperloglog(c1)",
        "leastsquares(c1, 1, 1)",
    ]
    assert [c.type.name for c in r.columns] == ["DOUBLE", "VARCHAR", "BIGINT", "VARCHAR"]


def test_mode_is_the_most_frequent_value(small: Executor) -> None:
    d = frame()
    assert one(small, "select mode(c1) from t")[0] == d.c1.mode().iloc[0]
    assert one(small, "select mode(s) from t")[0] == d.s.mode().iloc[0]


def test_stddev_pop_equals_the_manual_example(tmp_path: Path) -> None:
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC")
    ex.execute("create database d; use d; create table test_var (ts timestamp, id int)")
    ex.execute("insert into test_var values (now, 3) (now + 1s, 1) (now + 2s, 2) (now + 3s, 4) (now + 4s, 5)")
    assert one(ex, "select stddev_pop(id), var_pop(id) from test_var") == pytest.approx(
        [1.414213562373095, 2.0]
    )


# ------------------------------------------------------------------ (b) no rows


def test_aggregates_of_no_rows_are_null_like_avg(small: Executor) -> None:
    base = small.execute_one("select avg(c1) from e").rows
    rows = small.execute_one(
        "select percentile(c1, 50), twa(c1), irate(c1), elapsed(ts), leastsquares(c1, 1, 1), mode(c1) from e"
    ).rows
    assert len(rows) == len(base)
    assert all(v is None for r in rows for v in r)
    assert small.execute_one("select hyperloglog(c1) from e").rows == [[0]] * len(base)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("sql", "code", "at"),
    [
        ("select percentile(c1) from t", Code.FUNC_PARA_NUM, "percentile"),
        ("select percentile(c1, 101) from t", Code.FUNC_PARA_VALUE, "101"),
        ("select percentile(c1, c2) from t", Code.FUNC_PARA_TYPE, "c2)"),
        ("select apercentile(c1, 50, 'exact') from t", Code.FUNC_PARA_VALUE, "'exact'"),
        ("select twa(s) from t", Code.FUNC_PARA_TYPE, "twa"),
        ("select avg(ts) from t", Code.FUNC_PARA_TYPE, "avg"),
        ("select leastsquares(c1, 1) from t", Code.FUNC_PARA_NUM, "leastsquares"),
        ("select elapsed(ts, 1y) from t", Code.FUNC_PARA_VALUE, "elapsed"),
        ("select std(c1) from t", Code.INVALID_FUNCTION_NAME, "std"),
        ("select variance(c1) from t", Code.INVALID_FUNCTION_NAME, "variance"),
        ("select histogram(c1, 'user_input', '[3, 1]', 0) from t", Code.FUNC_PARA_VALUE, "'[3, 1]'"),
        ("select histogram(c1, 'bins', '[1, 3]', 0) from t", Code.FUNC_PARA_VALUE, "'bins'"),
        ("select histogram(c1, 'user_input', '[1, 3]', 2) from t", Code.FUNC_PARA_VALUE, "2)"),
    ],
)
def test_tdengine_argument_errors(small: Executor, sql: str, code: int, at: str) -> None:
    with pytest.raises(SqlError) as e:
        small.execute_one(sql)
    assert e.value.code == code, e.value
    assert e.value.offset == sql.index(at), (e.value.offset, e.value)
    for word in ("duckdb", "Binder", "Catalog Error", "quantile"):
        assert word not in e.value.message


# ------------------------------------------------------------------ (c) the Beijing dataset


def readings() -> pd.DataFrame:
    frames = []
    for tb, name in STATIONS.items():
        df = pd.read_csv(
            DATA / f"PRSA_Data_{name}_20130301-20170228.csv.gz", na_values=["NA"], low_memory=False
        )
        local = pd.to_datetime(df[["year", "month", "day", "hour"]]).dt.tz_localize("Asia/Shanghai")
        ts = local.dt.tz_convert("UTC").astype("int64") // 1_000_000
        frames.append(pd.DataFrame({"tbname": tb, "ts": ts, "pm25": df["PM2.5"], "temp": df["TEMP"]}))
    d = pd.concat(frames, ignore_index=True)
    return d[(d.ts >= LO) & (d.ts < HI)].sort_values(["tbname", "ts"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, pd.DataFrame]:
    lake = Lake(tmp_path_factory.mktemp("lake"))
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="air")
    ex.execute(
        "create database air precision 'ms'; create stable quality (ts timestamp, pm25 double, temp double) "
        "tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using quality tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    lake.write(
        lake.catalog.require_database("air"),
        lake.catalog.require_table("air", "quality"),
        pa.table(
            {
                "tbname": d.tbname.to_numpy(),
                "ts": d.ts.to_numpy(),
                "pm25": pa.array(d.pm25, from_pandas=True),
                "temp": pa.array(d.temp, from_pandas=True),
            }
        ),
    )
    return ex, d


def test_beijing_aggregates_per_station(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    rows = ex.execute_one(
        "select tbname, percentile(pm25, 95), apercentile(pm25, 50), twa(temp), irate(temp), "
        "elapsed(ts, 1h), hyperloglog(pm25), leastsquares(temp, 0, 1), var_pop(pm25) "
        "from quality partition by tbname"
    ).rows
    assert sorted(r[0] for r in rows) == sorted(STATIONS)
    for r in rows:
        g = d[d.tbname == r[0]]
        t = g.ts.to_numpy(float)
        assert r[1] == pytest.approx(np_percentile(g.pm25.to_numpy(), 95))
        assert r[2] == pytest.approx(np_percentile(g.pm25.to_numpy(), 50), rel=0.02)
        assert r[3] == pytest.approx(np_twa(t, g.temp.to_numpy()))
        assert r[4] == pytest.approx(np_irate(t, g.temp.to_numpy()))
        assert r[5] == pytest.approx((t[-1] - t[0]) / HOUR)
        assert r[6] == g.pm25.dropna().nunique()
        assert r[7] == np_leastsquares(g.temp.to_numpy(), 0, 1)
        assert r[8] == pytest.approx(np.nanvar(g.pm25.to_numpy()))


def test_beijing_whole_supertable(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    got = one(ex, "select percentile(pm25, 25, 75), hyperloglog(temp) from quality")
    assert got[0] == "[" + ", ".join(f"{np_percentile(d.pm25.to_numpy(), p):.6f}" for p in (25, 75)) + "]"
    assert got[1] == d.temp.dropna().nunique()
    assert json  # histogram tests below use json
