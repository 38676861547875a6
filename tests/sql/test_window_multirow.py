"""Multi-row functions, several-p percentile and DECIMAL / VARBINARY / GEOMETRY aggregates in
ad-hoc window queries (:mod:`spark_workers.query.window_rows`).

Every result is compared with an independent pandas / numpy computation of the TDengine SQL
manual's definitions ("Functions": TOP / BOTTOM the k largest / smallest non-NULL values of each
window in timestamp order, SAMPLE k of its non-NULL rows, HISTOGRAM one row per bin,
PERCENTILE with several p a JSON array; "Data Types": DECIMAL aggregates stay exact) on two
stations of the Beijing air quality dataset (four days, hourly), with NULL values, a window whose
values are all NULL and a gap without rows, for INTERVAL and STATE_WINDOW / SESSION windows with
PARTITION BY; plus TDengine's refusals (``parTranslater.c`` ``translateMultiRowsFunc``).
"""

from __future__ import annotations

import itertools
import json
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

DATA = Path(__file__).resolve().parents[2] / "data/beijing-air-quality"
STATIONS = {"aotizhongxin": "Aotizhongxin", "changping": "Changping"}
HOUR = 3_600_000
WIN = 6 * HOUR
LO = 1_389_456_000_000  # 2014-01-11 16:00 UTC
HI = LO + 4 * 24 * HOUR
W0 = LO - LO % WIN + WIN  # the first whole 6 h window (INTERVAL windows start at multiples of 6 h)
NULL_WINDOW = ("changping", W0 + 2 * WIN)  # every pm25 / dpm / raw of this window is NULL
GAP = ("aotizhongxin", W0 + 5 * WIN)  # no rows in this window


def readings() -> pd.DataFrame:
    """The rows: station, ts (ms), pm25 (NaN = NULL), dpm (pm25 + a tenth, as DECIMAL text),
    raw (bytes), lvl (the state: 1 from 00:00 to 11:59 UTC, else 0)."""
    frames = []
    for tb, name in STATIONS.items():
        df = pd.read_csv(
            DATA / f"PRSA_Data_{name}_20130301-20170228.csv.gz", na_values=["NA"], low_memory=False
        )
        local = pd.to_datetime(df[["year", "month", "day", "hour"]]).dt.tz_localize("Asia/Shanghai")
        ts = local.dt.tz_convert("UTC").astype("int64") // 1_000_000
        frames.append(pd.DataFrame({"tbname": tb, "ts": ts, "pm25": df["PM2.5"]}))
    d = pd.concat(frames, ignore_index=True)
    d = d[(d.ts >= LO) & (d.ts < HI)].sort_values(["tbname", "ts"]).reset_index(drop=True)
    d["wstart"] = d.ts - d.ts % WIN
    for tb, ws in (NULL_WINDOW,):
        d.loc[(d.tbname == tb) & (d.wstart == ws), "pm25"] = np.nan
    d = d[~((d.tbname == GAP[0]) & (d.wstart == GAP[1]))].reset_index(drop=True)
    tenth = (d.ts // HOUR) % 10
    d["dpm"] = [
        None if math.isnan(p) else Decimal(f"{p:.0f}.{k}") for p, k in zip(d.pm25, tenth, strict=True)
    ]
    d["raw"] = [
        None if math.isnan(p) else bytes([int(p) % 256, k]) for p, k in zip(d.pm25, tenth, strict=True)
    ]
    d["lvl"] = ((d.ts // HOUR) % 24 < 12).astype(int)
    return d


def _value(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "NULL"
    if isinstance(v, bytes):
        return "'\\x" + v.hex() + "'"
    return str(v)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, pd.DataFrame]:
    ex = Executor(Lake(tmp_path_factory.mktemp("lake")), MemoryRegistry(), tz="UTC", default_db="w")
    ex.execute(
        "create database w precision 'ms'; create stable aq (ts timestamp, pm25 double, dpm decimal(10, 1), "
        "raw varbinary(8), lvl int) tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using aq tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    for tb in STATIONS:
        g = d[d.tbname == tb]
        values = " ".join(
            f"({r.ts}, {_value(r.pm25)}, {_value(r.dpm)}, {_value(r.raw)}, {r.lvl})" for r in g.itertuples()
        )
        ex.execute(f"insert into {tb} values {values}")
    return ex, d


def rows_of(ex: Executor, sql: str) -> list[list]:
    return [list(r) for r in ex.execute_one(sql).rows]


def states(d: pd.DataFrame) -> pd.DataFrame:
    """The STATE_WINDOW(lvl) windows per station: each row's window start ``sstart``."""
    d = d.copy()
    run = (d.lvl != d.groupby("tbname").lvl.shift()).groupby(d.tbname).cumsum()
    d["sstart"] = d.groupby([d.tbname, run]).ts.transform("min")
    return d


def np_percentile(v: np.ndarray, p: float) -> float:
    v = np.sort(v[~np.isnan(v)])
    i = (len(v) - 1) * p / 100
    lo, hi = math.floor(i), math.ceil(i)
    return float(v[lo] + (v[hi] - v[lo]) * (i - lo))


# ------------------------------------------------------------------ multi-row functions


@pytest.mark.parametrize("fn", ["top", "bottom"])
def test_top_bottom_per_interval_window(air: tuple[Executor, pd.DataFrame], fn: str) -> None:
    ex, d = air
    got = rows_of(ex, f"select tbname, _wstart, ts, {fn}(pm25, 3) from aq partition by tbname interval(6h)")
    want = []
    for (tb, ws), g in d[d.pm25.notna()].groupby(["tbname", "wstart"]):
        best = g.sort_values(["pm25", "ts"], ascending=[fn == "bottom", True]).head(3).sort_values("ts")
        want += [[tb, ws, t, v] for t, v in zip(best.ts, best.pm25, strict=True)]
    assert got == want
    windows = {(r[0], r[1]) for r in got}
    assert NULL_WINDOW not in windows and GAP not in windows  # all-NULL window and gap: no rows
    assert len(windows) == d[d.pm25.notna()].groupby(["tbname", "wstart"]).ngroups == 2 * 17 - 2


def test_top_per_state_window_and_column_name(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    res = ex.execute_one("select _wstart, top(pm25, 2), tbname from aq partition by tbname state_window(lvl)")
    assert [c.name for c in res.columns] == ["_wstart", "top(pm25, 2)", "tbname"]
    s = states(d)
    want = []
    for (tb, ws), g in s[s.pm25.notna()].groupby(["tbname", "sstart"]):
        best = g.sort_values(["pm25", "ts"], ascending=[False, True]).head(2).sort_values("ts")
        want += [[ws, v, tb] for v in best.pm25]
    assert sorted(map(list, res.rows), key=lambda r: (r[2], r[0])) == sorted(want, key=lambda r: (r[2], r[0]))
    assert [r[2] for r in res.rows] == sorted(r[2] for r in res.rows)  # PARTITION BY group order


def test_sample_draws_rows_of_its_window(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    got = rows_of(ex, "select tbname, _wstart, ts, sample(pm25, 2) from aq partition by tbname interval(6h)")
    rows = {(r.tbname, r.ts): r.pm25 for r in d[d.pm25.notna()].itertuples()}
    for tb, ws, ts, v in got:
        assert ws <= ts < ws + WIN and rows[(tb, ts)] == v
    counts = pd.Series([(r[0], r[1]) for r in got]).value_counts().to_dict()
    want = d[d.pm25.notna()].groupby(["tbname", "wstart"]).size().clip(upper=2).to_dict()
    assert counts == want


@pytest.mark.parametrize("normalized", [0, 1])
def test_histogram_per_interval_window(air: tuple[Executor, pd.DataFrame], normalized: int) -> None:
    ex, d = air
    edges = [0, 50, 100, 1000]
    got = rows_of(
        ex,
        f"select tbname, _wstart, histogram(pm25, 'user_input', '[0, 50, 100, 1000]', {normalized}) "
        "from aq partition by tbname interval(6h)",
    )
    want = []
    for (tb, ws), g in d.groupby(["tbname", "wstart"]):
        v = g.pm25.to_numpy()
        v = v[~np.isnan(v)]
        counts = [int(np.sum((v > lo) & (v <= hi))) for lo, hi in itertools.pairwise(edges)]
        total = sum(counts)
        for (lo, hi), n in zip(itertools.pairwise(edges), counts, strict=True):
            c = f"{(n / total if total else 0):f}" if normalized else str(n)
            want.append([tb, ws, '{"lower_bin":%g, "upper_bin":%g, "count":%s}' % (lo, hi, c)])  # noqa: UP031
    assert got == want  # the all-NULL window: its bins count 0; the gap: no rows
    null_bins = [r[2] for r in got if (r[0], r[1]) == NULL_WINDOW]
    assert len(null_bins) == 3 and all(json.loads(b)["count"] == 0 for b in null_bins)
    assert not any((r[0], r[1]) == GAP for r in got)


def test_several_percentiles_per_session_and_state_window(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    got = rows_of(
        ex, "select tbname, _wstart, percentile(pm25, 10, 50, 90) from aq partition by tbname session(ts, 2h)"
    )
    sess = d.copy()
    gap = sess.groupby("tbname").ts.diff().fillna(0) > 2 * HOUR
    sess["sid"] = gap.groupby(sess.tbname).cumsum()
    want = sess.groupby(["tbname", "sid"]).agg(ws=("ts", "min")).reset_index()
    assert [(r[0], r[1]) for r in got] == list(zip(want.tbname, want.ws, strict=True))
    assert len(got) == 3  # the gap splits aotizhongxin's session
    for r in got:
        g = sess[(sess.tbname == r[0]) & (sess.ts >= r[1])]
        g = g[g.sid == g.sid.iloc[0]]
        assert json.loads(r[2]) == pytest.approx([np_percentile(g.pm25.to_numpy(), p) for p in (10, 50, 90)])
    s = states(d)
    got = rows_of(
        ex, "select tbname, _wstart, percentile(pm25, 25, 75) from aq partition by tbname state_window(lvl)"
    )
    for tb, ws, text in got:
        v = s[(s.tbname == tb) & (s.sstart == ws)].pm25.to_numpy()
        if np.isnan(v).all():
            assert text is None
        else:
            assert json.loads(text) == pytest.approx([np_percentile(v, 25), np_percentile(v, 75)])
    assert len(got) == s.groupby(["tbname", "sstart"]).ngroups


# ------------------------------------------------------------------ DECIMAL / VARBINARY / GEOMETRY


def test_decimal_aggregates_per_window_are_exact(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    res = ex.execute_one(
        "select tbname, _wstart, sum(dpm), min(dpm), max(dpm), first(dpm), last(dpm), count(dpm), avg(dpm) "
        "from aq partition by tbname interval(6h)"
    )
    types = [(c.type.name, c.type.scale) for c in res.columns[2:]]
    assert types[:5] == [("DECIMAL", 1)] * 5 and types[5][0] == "BIGINT"
    want = []
    for (tb, ws), g in d.groupby(["tbname", "wstart"]):
        v = [x for x in g.dpm if x is not None]
        if not v:
            want.append([tb, ws, None, None, None, None, None, 0, None])
            continue
        avg = float(sum(v, Decimal(0)) / len(v))
        want.append([tb, ws, sum(v, Decimal(0)), min(v), max(v), v[0], v[-1], len(v), pytest.approx(avg)])
    assert [list(r) for r in res.rows] == want
    assert all(isinstance(r[2], Decimal) for r in res.rows if r[2] is not None)
    null_row = next(r for r in res.rows if (r[0], r[1]) == NULL_WINDOW)
    assert list(null_row[2:]) == [None] * 5 + [0, None]


def test_varbinary_selection_per_state_window(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, d = air
    got = rows_of(
        ex,
        "select tb, _wstart, first(raw), last(raw), last_row(raw), count(raw) from aq "
        "partition by tbname as tb state_window(lvl)",
    )
    s = states(d)
    want = []
    for (tb, ws), g in s.groupby(["tbname", "sstart"]):
        v = [x for x in g.raw if x is not None]
        want.append([tb, ws, v[0] if v else None, v[-1] if v else None, g.raw.iloc[-1], len(v)])
    assert got == want


def test_geometry_first_last_count_per_interval(tmp_path: Path) -> None:
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="g")
    ex.execute("create database g; create table p (ts timestamp, g geometry(64))")
    ex.execute(
        "insert into p values (1000, 'POINT(1 1)') (2000, NULL) (3000, 'POINT(2 3)') (12000, 'POINT(5 5)') "
        "(14000, NULL)"
    )
    stored = dict(rows_of(ex, "select ts, g from p"))
    got = rows_of(
        ex, "select _wstart, first(g), last(g), last_row(g), count(g), count(*) from p interval(10s)"
    )
    assert got == [
        [0, stored[1000], stored[3000], stored[3000], 2, 3],
        [10000, stored[12000], stored[12000], None, 1, 2],
    ]
    res = ex.execute_one("select _wstart, last(g), first(g) from p interval(10s)")  # translateOutFirstIn
    assert [(c.type.name, c.type.length) for c in res.columns[1:]] == [("GEOMETRY", 64)] * 2


def test_no_rows_no_windows(air: tuple[Executor, pd.DataFrame]) -> None:
    ex, _d = air
    for sql in [
        "select _wstart, top(pm25, 2) from aq where pm25 > 100000 interval(6h)",
        "select _wstart, sum(dpm) from aq where pm25 > 100000 partition by tbname interval(6h)",
        "select _wstart, percentile(pm25, 1, 2) from aq where pm25 > 100000 session(ts, 1h)",
    ]:
        assert rows_of(ex, sql) == []


# ------------------------------------------------------------------ TDengine's refusals


@pytest.mark.parametrize(
    ("sql", "at"),
    [
        ("select _wstart, top(pm25, 2), max(pm25) from aq interval(6h)", "max("),
        ("select _wstart, count(*), bottom(pm25, 2) from aq interval(6h)", "bottom("),
        ("select _wstart, top(pm25, 2), sample(pm25, 2) from aq interval(6h)", "sample("),
        (
            "select _wstart, histogram(pm25, 'user_input', '[1, 2]', 0), sum(pm25) from aq interval(6h)",
            "sum(",
        ),
        ("select _wstart, count(*) from aq interval(6h) having top(pm25, 1) > 0", "top("),
    ],
)
def test_multi_row_function_mixed_is_refused(air: tuple[Executor, pd.DataFrame], sql: str, at: str) -> None:
    ex, _d = air
    with pytest.raises(SqlError) as err:
        ex.execute_one(sql)
    assert err.value.code == Code.NOT_ALLOWED_FUNC
    assert "cannot be mixed with other non scalar functions" in err.value.message
    assert err.value.offset == sql.index(at)


@pytest.mark.parametrize(
    ("sql", "code", "word"),
    [
        (
            "select _wstart, top(pm25, 2) from aq where ts >= 1389456000000 and ts < 1389500000000 "
            "interval(6h) fill(null)",
            Code.NOT_ALLOWED_FUNC,
            "top function is not supported in fill query",
        ),
        (
            "select _wstart, diff(pm25) from aq partition by tbname interval(6h)",
            Code.NOT_ALLOWED_FUNC,
            "diff",
        ),
        (
            "select _wstart, top(pm25, 2) from aq partition by tbname interval(6h) slimit 1",
            Code.NOT_SUPPORTED,
            "SLIMIT",
        ),
        (
            "select _wstart, top(pm25, 2) from aq interval(6h) having _wstart > 0",
            Code.NOT_SUPPORTED,
            "HAVING",
        ),
        (
            "select _wstart, twa(pm25), sum(dpm) from aq partition by tbname interval(6h)",
            Code.NOT_SUPPORTED,
            "twa",
        ),
    ],
)
def test_clauses_refused_by_name(air: tuple[Executor, pd.DataFrame], sql: str, code: int, word: str) -> None:
    ex, _d = air
    with pytest.raises(SqlError) as err:
        ex.execute_one(sql)
    assert err.value.code == code and word in err.value.message


def test_streams_keep_refusing_multi_row_functions(air: tuple[Executor, pd.DataFrame]) -> None:
    """Seed 000, "Functions supported by stream computing": top, bottom, sample, histogram and
    percentile are not allowed in (legacy) streams."""
    ex, _d = air
    for fn in ["top(pm25, 2)", "bottom(pm25, 2)", "sample(pm25, 2)", "percentile(pm25, 10, 20)"]:
        with pytest.raises(SqlError) as err:
            ex.execute(f"create stream s1 into o1 as select _wstart, {fn} from aq interval(6h)")
        assert err.value.code == Code.INVALID_FUNCTION and fn.split("(")[0] in err.value.message
