"""TDengine's aggregate, selection and time-series functions in plain (non-window) queries
(:mod:`spark_workers.sql.aggregate_functions`, :mod:`spark_workers.sql.row_functions`).

Every result is compared with an independent numpy / pandas computation of the TDengine SQL
manual's definition ("Functions"; output formats from TDengine's ``builtinsimpl.c``) on (a) a
small table with NULLs and duplicate values, (b) no rows, (c) two stations of the Beijing air
quality dataset, plain and with PARTITION BY tbname.
"""

from __future__ import annotations

import itertools
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
from tests import beijing

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
    # STD is STDDEV's alias (TDengine 3.3.8): the population standard deviation
    assert small.execute_one("select std(c2) from t").rows == [[pytest.approx(np.nanstd(c2))]]
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
    # ties: the smallest value (c1 = 1 and 7 once each before 3 is added)
    assert one(small, "select mode(c1) from t where c1 <> 3")[0] == d.c1[d.c1 != 3].dropna().min()
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
    d = beijing.readings(STATIONS, {"pm25": "PM2.5", "temp": "TEMP"})
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


# ------------------------------------------------------------------ time-series functions


def rows_of(ex: Executor, sql: str) -> list[list]:
    return [list(r) for r in ex.execute_one(sql).rows]


def pd_diff(d: pd.DataFrame, col: str, opt: int = 0) -> list[tuple[int, float | None]]:
    """(ms, diff) of every output row: each row after the first, against the previous non-NULL
    value; 1/3 negative -> NULL, 2/3 drop NULL results (manual, DIFF)."""
    out, prev = [], None
    for k, (ms, v) in enumerate(zip(d.ms, d[col], strict=True)):
        r = None if (pd.isna(v) or prev is None) else v - prev
        if not pd.isna(v):
            prev = v
        if k == 0:
            continue
        if r is not None and r < 0 and opt in (1, 3):
            r = None
        if r is None and opt in (2, 3):
            continue
        out.append((ms, r))
    return out


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_diff_ignore_options(small: Executor, opt: int) -> None:
    d = frame()
    got = rows_of(small, f"select ts, diff(c1, {opt}) from t")
    assert [(ts - T0, v) for ts, v in got] == pd_diff(d, "c1", opt)


def test_diff_as_tdengines_own_test(tmp_path: Path) -> None:
    """TDengine's tests/system-test/2-query/diff.py: three rows give two; option 1 turns the
    negative difference to NULL; unsigned and string columns are refused."""
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC")
    ex.execute(
        "create database db; use db; create table ntb (ts timestamp, c1 int, c2 double, u int unsigned)"
    )
    ex.execute("insert into ntb values (now, 1, 1.0, 1) (now + 1s, 10, -100.0, 2) (now + 10s, -1, 15.1, 3)")
    assert rows_of(ex, "select diff(c1, 0) from ntb") == [[9], [-11]]
    assert rows_of(ex, "select diff(c1, 1) from ntb") == [[9], [None]]
    assert rows_of(ex, "select diff(c2, 0) from ntb") == [[pytest.approx(-101.0)], [pytest.approx(115.1)]]
    assert rows_of(ex, "select diff(c2, 1) from ntb") == [[None], [pytest.approx(115.1)]]
    for bad in ("diff(u)", "diff(c1, 1.23)", "diff(c1, '123')", "diff(c1, -1)", "diff(c1, c1)"):
        with pytest.raises(SqlError) as e:
            ex.execute_one(f"select {bad} from ntb")
        assert e.value.code in (Code.FUNC_PARA_TYPE, Code.FUNC_PARA_VALUE), e.value


def test_composite_key_example_of_tdengines_own_test(tmp_path: Path) -> None:
    """TDengine's pk_func_group test: with a composite key, diff / derivative / irate / twa use the
    smallest key of each timestamp, first(*) / last(*) the smallest / largest, unique every row."""
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC")
    ex.execute(
        "create database d1; use d1; create table st (ts timestamp, pk int primary key, f int) tags (t int)"
    )
    ex.execute("create table ct1 using st tags (1); create table ct2 using st tags (2)")
    data = {
        "ct1": [(0, 1), (0, 2), (1, 1), (1, 4), (2, 6), (2, 5)],
        "ct2": [(0, 3), (0, 4), (1, 3), (1, 2), (2, 8), (2, 7)],
    }
    for tb, rows in data.items():
        ex.execute(
            f"insert into {tb} values " + " ".join(f"('2021-04-19 00:00:0{s}', {v}, {v})" for s, v in rows)
        )
    t0 = int(pd.Timestamp("2021-04-19").timestamp() * 1000)
    got = rows_of(ex, "select first(*) from st partition by tbname order by tbname")
    assert got == [[t0, 1, 1], [t0, 3, 3]]
    got = rows_of(ex, "select last(*) from st partition by tbname order by tbname")
    assert got == [[t0 + 2000, 6, 6], [t0 + 2000, 8, 8]]
    got = rows_of(ex, "select ts, diff(f) from st partition by tbname order by tbname")
    assert got == [[t0 + 1000, 0], [t0 + 2000, 4], [t0 + 1000, -1], [t0 + 2000, 5]]
    got = rows_of(ex, "select ts, derivative(f, 1s, 0) from st partition by tbname order by tbname")
    assert got == [[t0 + 1000, 0.0], [t0 + 2000, 4.0], [t0 + 1000, -1.0], [t0 + 2000, 5.0]]
    assert rows_of(ex, "select irate(f) from st partition by tbname order by tbname") == [[4.0], [5.0]]
    assert rows_of(ex, "select twa(f) from st partition by tbname order by tbname") == [[2.0], [3.5]]
    got = rows_of(ex, "select ts, pk, unique(f) from st partition by tbname order by tbname, ts, pk")
    want = [(0, 1), (0, 2), (1, 4), (2, 5), (2, 6), (0, 3), (0, 4), (1, 2), (2, 7), (2, 8)]
    assert got == [[t0 + s * 1000, v, v] for s, v in want]


def test_csum_mavg_derivative_skip_nulls(small: Executor) -> None:
    d = frame()
    nn = d[d.c1.notna()]
    assert [(ts - T0, v) for ts, v in rows_of(small, "select ts, csum(c1) from t")] == list(
        zip(nn.ms, nn.c1.cumsum().astype(int), strict=True)
    )
    m = nn.c1.rolling(3).mean()
    got = rows_of(small, "select ts, mavg(c1, 3) from t")
    assert [(ts - T0) for ts, _ in got] == list(nn.ms[m.notna()])
    assert [v for _, v in got] == pytest.approx(list(m.dropna()))
    der = (nn.c1.diff() / (nn.ms.diff() / 1000)).iloc[1:]
    got = rows_of(small, "select ts, derivative(c1, 1s, 0) from t")
    assert [v for _, v in got] == pytest.approx(list(der))
    got = rows_of(small, "select ts, derivative(c1, 1s, 1) from t")
    assert [v for _, v in got] == pytest.approx(list(der[der >= 0]))
    t = small.execute_one("select csum(c1), csum(c2), mavg(c1, 2), derivative(c2, 1m, 0) from t")
    assert [c.type.name for c in t.columns] == ["BIGINT", "DOUBLE", "DOUBLE", "DOUBLE"]


def pd_state(d: pd.DataFrame, col: str, op: str, val: float) -> tuple[list, list]:
    """statecount / stateduration (s) per row: NULL for NULL values (skipped), -1 when false."""
    f = {"GT": np.greater, "LT": np.less, "GE": np.greater_equal, "LE": np.less_equal, "EQ": np.equal}[op]
    counts, durations, n, start = [], [], 0, None
    for ms, v in zip(d.ms, d[col], strict=True):
        if pd.isna(v):
            counts.append(None)
            durations.append(None)
        elif f(v, val):
            n, start = n + 1, start if n else ms
            counts.append(n)
            durations.append((ms - start) // 1000)
        else:
            n = 0
            counts.append(-1)
            durations.append(-1)
    return counts, durations


STATE_EXAMPLES = {  # TDengine's tests/system-test/2-query/stateduration.py, values 1..10, 1 s apart
    "LT": [0, 1000, 2000, 3000, -1, -1, -1, -1, -1, -1],
    "gt": [-1, -1, -1, -1, -1, 0, 1000, 2000, 3000, 4000],
    "Le": [0, 1000, 2000, 3000, 4000, -1, -1, -1, -1, -1],
    "gE": [-1, -1, -1, -1, 0, 1000, 2000, 3000, 4000, 5000],
    "NE": [0, 1000, 2000, 3000, -1, 0, 1000, 2000, 3000, 4000],
    "EQ": [-1, -1, -1, -1, 0, -1, -1, -1, -1, -1],
}


@pytest.mark.parametrize("op", list(STATE_EXAMPLES))
def test_stateduration_as_tdengines_own_test(tmp_path: Path, op: str) -> None:
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC")
    ex.execute("create database db; use db; create table test1 (ts timestamp, col1 tinyint, col5 float)")
    ex.execute(
        "insert into test1 values "
        + " ".join(f"({1537146000000 + i * 1000}, {i + 1}, {i + 0.1})" for i in range(10))
    )
    assert [r[0] for r in rows_of(ex, f"select stateduration(col1, '{op}', 5) from test1")] == STATE_EXAMPLES[
        op
    ]
    minutes = [v // 1000 // 60 if v > 0 else v for v in STATE_EXAMPLES[op]]
    assert [r[0] for r in rows_of(ex, f"select stateduration(col1, '{op}', 5, 1m) from test1")] == minutes
    for bad in ("stateduration(ts, 'GT', 5)", "stateduration(col1, 'a', 5)", "stateduration(col1, 1, 5)"):
        with pytest.raises(SqlError):
            ex.execute_one(f"select {bad} from test1")


@pytest.mark.parametrize(("op", "val"), [("GT", 2), ("LE", 3), ("EQ", 3)])
def test_statecount_and_stateduration(small: Executor, op: str, val: float) -> None:
    counts, durations = pd_state(frame(), "c1", op, val)
    got = rows_of(
        small, f"select statecount(c1, '{op}', {val}), stateduration(c1, '{op.lower()}', {val}, 1s) from t"
    )
    assert [r[0] for r in got] == counts
    assert [r[1] for r in got] == durations
    t = small.execute_one(f"select statecount(c1, '{op}', {val}) from t")
    assert t.columns[0].type.name == "BIGINT"


# ------------------------------------------------------------------ selection and multi-row functions


def test_top_bottom_return_their_rows_in_time_order(small: Executor) -> None:
    d = frame().dropna(subset=["c1"])
    for fn, asc in (("top", False), ("bottom", True)):
        got = rows_of(small, f"select ts, {fn}(c1, 3), s from t")
        want = d.sort_values(["c1", "ms"], ascending=[asc, True]).head(3).sort_values("ms")
        assert [ts - T0 for ts, _, _ in got] == list(want.ms)
        assert [v for _, v, _ in got] == list(want.c1.astype(int))
        assert [s for _, _, s in got] == [None if pd.isna(s) else s for s in want.s]


def test_tail_unique_sample(small: Executor) -> None:
    d = frame()
    got = rows_of(small, "select ts, tail(c2, 3, 1) from t")
    want = d.iloc[-4:-1]
    assert [ts - T0 for ts, _ in got] == list(want.ms)
    assert [v for _, v in got] == [None if pd.isna(v) else v for v in want.c2]
    got = rows_of(small, "select ts, unique(c1) from t")
    first = d.groupby(d.c1.fillna(-999), sort=False).head(1)
    assert [ts - T0 for ts, _ in got] == list(first.ms)
    got = rows_of(small, "select ts, sample(c1, 3) from t")
    pairs = {(ms, int(v)) for ms, v in zip(d.ms, d.c1, strict=True) if not pd.isna(v)}
    assert len(got) == 3 and {(ts - T0, v) for ts, v in got} <= pairs
    assert [ts for ts, _ in got] == sorted(ts for ts, _ in got)


def test_selection_rule_gives_the_selected_rows_columns(small: Executor) -> None:
    d = frame()
    nn = d.dropna(subset=["c1"])
    row = nn.loc[nn.c1.idxmax()]
    assert one(small, "select max(c1), c2, ts from t") == [7, row.c2, T0 + row.ms]
    row = nn.loc[nn.c1.idxmin()]
    assert one(small, "select min(c1), s, _rowts from t") == [1, row.s, T0 + row.ms]
    # ties: the earliest row (c1 = 3 at 1 s, 4 s and 9 s; s = 'a' at 0 s, 4 s and 9 s)
    assert one(small, "select max(c1), ts from t where c1 < 7") == [3, T0 + 1000]
    assert one(small, "select min(s), ts from t") == ["a", T0]
    got = small.execute_one("select cols(max(c1), ts) from t")
    assert got.columns[0].name == "ts" and list(got.rows[0]) == [T0 + 6000]
    nn2 = d.dropna(subset=["c2"])
    assert one(small, "select last(c2), s from t") == [nn2.c2.iloc[-1], nn2.s.iloc[-1]]
    assert one(small, "select first(c2), c1 from t") == [nn2.c2.iloc[0], nn2.c1.iloc[0]]
    assert one(small, "select last_row(s), c1 from t") == [d.s.iloc[-1], d.c1.iloc[-1]]
    assert one(small, "select last_row(c2), s from t where ts <= '2022-01-01 00:00:06'") == [4.0, None]
    got = small.execute_one("select cols(max(c2), ts, s), cols(min(c2), ts) as tmin from t")
    assert [c.name for c in got.columns] == ["ts", "s", "tmin"]
    hi, lo = nn2.loc[nn2.c2.idxmax()], nn2.loc[nn2.c2.idxmin()]
    assert list(got.rows[0]) == [T0 + hi.ms, hi.s, T0 + lo.ms]


def test_first_last_star_expand_to_every_column(small: Executor) -> None:
    d = frame()
    got = small.execute_one("select first(*) from t")
    assert [c.name for c in got.columns] == ["first(ts)", "first(c1)", "first(c2)", "first(s)"]
    assert list(got.rows[0]) == [T0, d.c1.dropna().iloc[0], d.c2.dropna().iloc[0], d.s.dropna().iloc[0]]
    got = small.execute_one("select last_row(*) from t")
    assert [c.name for c in got.columns] == ["last_row(ts)", "last_row(c1)", "last_row(c2)", "last_row(s)"]
    assert list(got.rows[0]) == [T0 + d.ms.iloc[-1], d.c1.iloc[-1], d.c2.iloc[-1], d.s.iloc[-1]]


def np_histogram(v: np.ndarray, edges: list[float], normalized: bool) -> list[str]:
    v = v[~np.isnan(v)]
    counts = [int(np.sum((v > lo) & (v <= hi))) for lo, hi in itertools.pairwise(edges)]
    total = sum(counts)
    out = []
    for (lo, hi), n in zip(itertools.pairwise(edges), counts, strict=True):
        c = f"{(n / total if total else 0):f}" if normalized else str(n)
        out.append('{"lower_bin":%g, "upper_bin":%g, "count":%s}' % (lo, hi, c))  # noqa: UP031
    return out


@pytest.mark.parametrize(
    ("kind", "desc", "edges"),
    [
        ("user_input", "[1, 3, 5, 7]", [1, 3, 5, 7]),
        (
            "linear_bin",
            '{"start": 0.0, "width": 2.0, "count": 3, "infinity": true}',
            [-math.inf, 0, 2, 4, 6, math.inf],
        ),
        ("log_bin", '{"start": 1.0, "factor": 2.0, "count": 3, "infinity": false}', [1, 2, 4, 8]),
    ],
)
@pytest.mark.parametrize("normalized", [0, 1])
def test_histogram_bins_as_tdengine_prints_them(
    small: Executor, kind: str, desc: str, edges: list, normalized: int
) -> None:
    got = rows_of(small, f"select histogram(c1, '{kind}', '{desc}', {normalized}) from t")
    assert [r[0] for r in got] == np_histogram(frame().c1.to_numpy(), edges, bool(normalized))
    assert all(json.loads(r[0].replace("inf", "1e999")) for r in got)


def test_first_last_of_only_nulls_give_no_row(small: Executor) -> None:
    """Manual, FIRST / LAST: "If all columns in the result set are NULL, no results are returned"."""
    assert small.execute_one("select first(*) from e").rows == []
    assert small.execute_one("select first(c1), last(c2) from t where c1 is null and c2 is null").rows == []
    assert small.execute_one("select last_row(c1) from e").rows == []
    assert small.execute_one("select last_row(c1) from t where c1 is null").rows == [[None]]
    assert small.execute_one("select first(c1), last(c2) from t where c1 is null").rows == [[None, 2.5]]


def test_row_functions_of_no_rows_give_no_rows(small: Executor) -> None:
    for sql in (
        "diff(c1)",
        "csum(c1)",
        "mavg(c1, 2)",
        "top(c1, 2)",
        "tail(c1, 2)",
        "unique(c1)",
        "statecount(c1, 'GT', 1)",
    ):
        assert small.execute_one(f"select {sql} from e").rows == []


@pytest.mark.parametrize(
    ("sql", "code", "at"),
    [
        ("select top(c1, 0) from t", Code.FUNC_PARA_VALUE, "0)"),
        ("select top(c1, 101) from t", Code.FUNC_PARA_VALUE, "101"),
        ("select top(s, 2) from t", Code.FUNC_PARA_TYPE, "top"),
        ("select sample(c1, 1001) from t", Code.FUNC_PARA_VALUE, "1001"),
        ("select tail(c1, 2, 101) from t", Code.FUNC_PARA_VALUE, "101"),
        ("select diff(c1, 4) from t", Code.FUNC_PARA_VALUE, "4)"),
        ("select diff(s) from t", Code.FUNC_PARA_TYPE, "diff"),
        ("select mavg(c1) from t", Code.FUNC_PARA_NUM, "mavg"),
        ("select statecount(c1, 'XX', 1) from t", Code.FUNC_PARA_VALUE, "'XX'"),
        ("select derivative(c1, 10a, 0) from t", Code.FUNC_PARA_VALUE, "derivative"),
        ("select cols(avg(c1), ts) from t", Code.FUNC_PARA_VALUE, "avg"),
        ("select csum(c1), avg(c1) from t", Code.INVALID_FUNCTION, "csum"),
        ("select top(c1, 2), bottom(c1, 2) from t", Code.INVALID_FUNCTION, "top"),
        ("select diff(c1) from t group by c2", Code.INVALID_FUNCTION, "c2"),
    ],
)
def test_row_function_errors(small: Executor, sql: str, code: int, at: str) -> None:
    with pytest.raises(SqlError) as e:
        small.execute_one(sql)
    assert e.value.code == code, e.value
    assert e.value.offset == sql.index(at), (e.value.offset, e.value)


# ------------------------------------------------------------------ Beijing, per station


def test_beijing_time_series_per_station(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    for tb in STATIONS:
        g = d[d.tbname == tb].rename(columns={"ts": "ms"})
        got = rows_of(ex, f"select ts, diff(pm25) from quality where tbname = '{tb}'")
        want = pd_diff(g, "pm25")
        assert [r[0] for r in got] == [w[0] for w in want]
        assert [r[1] for r in got] == pytest.approx([w[1] for w in want], nan_ok=True)
    got = rows_of(
        ex, "select tbname, ts, csum(temp), statecount(pm25, 'GT', 75) from quality partition by tbname"
    )
    for tb in STATIONS:
        g = d[d.tbname == tb].rename(columns={"ts": "ms"})
        mine = [r for r in got if r[0] == tb]
        nn = g[g.temp.notna()]
        # csum keeps only rows with a temperature; statecount every row: rows of both, merged
        assert {r[1] for r in mine} == set(g.ms)
        cs = {r[1]: r[2] for r in mine if r[2] is not None}
        assert list(cs) == list(nn.ms)
        assert list(cs.values()) == pytest.approx(list(nn.temp.cumsum()))
        counts, _ = pd_state(g, "pm25", "GT", 75)
        assert [r[3] for r in mine] == counts


def test_beijing_top_and_mavg_per_station(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    got = rows_of(ex, "select tbname, ts, top(pm25, 5) from quality partition by tbname")
    for tb in STATIONS:
        g = d[(d.tbname == tb) & d.pm25.notna()]
        want = g.sort_values(["pm25", "ts"], ascending=[False, True]).head(5).sort_values("ts")
        assert [(r[1], r[2]) for r in got if r[0] == tb] == list(zip(want.ts, want.pm25, strict=True))
    got = rows_of(ex, "select tbname, mavg(temp, 24) from quality partition by tbname")
    for tb in STATIONS:
        g = d[(d.tbname == tb) & d.temp.notna()]
        assert [r[1] for r in got if r[0] == tb] == pytest.approx(list(g.temp.rolling(24).mean().dropna()))


def test_beijing_histogram_and_selection_per_station(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    got = rows_of(
        ex,
        'select tbname, histogram(pm25, \'log_bin\', \'{"start": 1, "factor": 4, "count": 4, '
        '"infinity": true}\', 0) from quality partition by tbname',
    )
    edges = [-math.inf, 1, 4, 16, 64, 256, math.inf]
    for tb in STATIONS:
        g = d[d.tbname == tb]
        assert [r[1] for r in got if r[0] == tb] == np_histogram(g.pm25.to_numpy(), edges, False)
    got = rows_of(ex, "select tbname, max(pm25), ts, temp from quality partition by tbname")
    for r in got:
        g = d[(d.tbname == r[0]) & d.pm25.notna()]
        top = g[g.pm25 == g.pm25.max()]
        assert r[1] == g.pm25.max() and r[2] in set(top.ts)
        assert r[3] == pytest.approx(top[top.ts == r[2]].temp.iloc[0], nan_ok=True)
