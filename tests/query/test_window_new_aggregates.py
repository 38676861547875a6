"""The extended aggregates (``engine/extended.py``) in window queries: every window type (INTERVAL
with SLIDING, STATE_WINDOW, SESSION, EVENT_WINDOW, COUNT_WINDOW) against pandas over a handmade
table and over a slice of the Beijing readings; TWA / ELAPSED at INTERVAL edges against TDengine's
own hand-checked values; the functions a window refuses, with TDengine's codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.query.planner import plan_window, resolve
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

DATA = Path(__file__).resolve().parents[2] / "data/beijing-air-quality"
T0 = 1_704_067_200_000  # 2024-01-01 UTC, ms
FUNCS = (
    "var_pop(v), stddev_pop(v), irate(v), leastsquares(v, 1, 2), percentile(v, 30), "
    "apercentile(v, 30), mode(k), count(distinct k), hyperloglog(k)"
)
NAMES = ["var_pop", "stddev_pop", "irate", "ls", "pct", "apct", "mode", "cd", "hll"]


def reference(w: pd.DataFrame) -> list[object]:
    """The functions of ``FUNCS`` over one window's rows (pandas / numpy, NULLs skipped)."""
    p = w[w.v.notna()].sort_values("ts")
    t, v = p.ts.to_numpy(np.int64), p.v.to_numpy(float)
    if len(v) == 0:
        out: list[object] = [None] * 6
    else:
        if len(v) == 1:
            irate = 0.0
        else:
            d = v[-1] - v[-2] if v[-1] >= v[-2] else v[-1]
            irate = d / ((t[-1] - t[-2]) / 1000.0)
        ls = None
        if len(v) > 1:
            slope, icpt = np.polyfit(1.0 + 2.0 * np.arange(len(v)), v, 1)
            ls = (slope, icpt)
        pct = float(np.percentile(v, 30))
        out = [float(np.var(v)), float(np.std(v)), irate, ls, pct, pct]
    k = w.k.dropna()
    counts = k.value_counts().sort_index()
    out += [counts.idxmax() if len(k) else None, k.nunique(), k.nunique()]
    return out


def compare(got: list[list[object]], want: list[list[object]]) -> None:
    assert want and len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for name, gv, wv in zip(["key", *NAMES], g, w, strict=True):
            if wv is None:
                assert gv is None, name
            elif name == "ls":
                assert isinstance(gv, str) and gv.startswith("{slop:")
                slope, icpt = (float(x.split(":")[1]) for x in gv.strip("{}").split(","))
                assert slope == pytest.approx(wv[0], abs=2e-6) and icpt == pytest.approx(wv[1], abs=2e-6)
            elif isinstance(wv, str):
                assert gv == wv, name
            else:
                assert float(gv) == pytest.approx(float(wv), rel=1e-9, abs=1e-9), name  # type: ignore[arg-type]


def handmade() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 60
    gaps = rng.choice([1, 1, 2, 3, 7], n)
    ts = T0 + np.cumsum(gaps) * 1000
    v = rng.integers(-20, 40, n).astype(float) / 2
    v[rng.random(n) < 0.15] = np.nan
    k = rng.integers(0, 4, n).astype(float)
    k[rng.random(n) < 0.1] = np.nan
    s = np.repeat(rng.integers(0, 3, n // 4), 4)[:n]
    return pd.DataFrame({"ts": ts, "v": v, "k": pd.array(k, dtype="Float64").astype("Int64"), "s": s})


@pytest.fixture(scope="module")
def hand(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, Lake, pd.DataFrame]:
    lake = Lake(tmp_path_factory.mktemp("lake"))
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute("create database d precision 'ms'; create table t (ts timestamp, v double, k int, s int)")
    d = handmade()
    db = lake.catalog.require_database("d")
    lake.write(
        db,
        lake.catalog.require_table("d", "t"),
        pa.table(
            {
                "tbname": np.full(len(d), "t", dtype=object),
                "ts": d.ts.to_numpy(),
                "v": pa.array(d.v, from_pandas=True),
                "k": pa.array(d.k.astype(object).where(d.k.notna(), None).tolist(), pa.int32()),
                "s": pa.array(d.s, pa.int32()),
            }
        ),
    )
    return ex, lake, d


def query(ex: Executor, window: str, key: str = "_wstart") -> list[list[object]]:
    rows = ex.execute_one(f"select {key}, {FUNCS} from t {window}").rows
    out = []
    for r in rows:
        r = list(r)
        r[0] = r[0] if isinstance(r[0], int) else int(pd.Timestamp(r[0]).timestamp() * 1000)
        out.append(r)
    return out


def windows_of(d: pd.DataFrame, labels: np.ndarray) -> list[list[object]]:
    """Reference rows of the windows given by a label per row (rows in time order); key: the
    window's first row time."""
    out = []
    for lab in pd.unique(labels):
        w = d[labels == lab]
        out.append([int(w.ts.min()), *reference(w)])
    return out


def test_interval_with_sliding(hand) -> None:  # type: ignore[no-untyped-def]
    ex, _, d = hand
    got = query(ex, "interval(10s) sliding(5s)")
    want = []
    first = (d.ts.min() - T0) // 5000 * 5000 + T0 - 5000
    for ws in range(int(first), int(d.ts.max()) + 1, 5000):
        w = d[(d.ts >= ws) & (d.ts < ws + 10_000)]
        if len(w):
            want.append([ws, *reference(w)])
    compare(got, want)


def test_state_window(hand) -> None:  # type: ignore[no-untyped-def]
    ex, _, d = hand
    labels = (d.s != d.s.shift()).cumsum().to_numpy()
    compare(query(ex, "state_window(s)", "first(ts)"), windows_of(d, labels))


def test_session_window(hand) -> None:  # type: ignore[no-untyped-def]
    ex, _, d = hand
    labels = (d.ts.diff() > 3000).cumsum().to_numpy()  # a gap above 3 s starts a session
    compare(query(ex, "session(ts, 3s)", "first(ts)"), windows_of(d, labels))


def test_count_window(hand) -> None:  # type: ignore[no-untyped-def]
    ex, _, d = hand
    labels = np.arange(len(d)) // 7
    compare(query(ex, "count_window(7)", "first(ts)"), windows_of(d, labels))


def test_event_window(hand) -> None:  # type: ignore[no-untyped-def]
    """EVENT_WINDOW START WITH v > 10 END WITH v < 0: a window opens at a row meeting the start
    condition and closes at the first row (itself included) meeting the end condition."""
    ex, _, d = hand
    labels = np.full(len(d), -1)
    cur = -1
    open_ = False
    for i, v in enumerate(d.v.tolist()):
        if not open_ and v == v and v > 10:
            open_, cur = True, cur + 1
        if open_:
            labels[i] = cur
            if v == v and v < 0:
                open_ = False
    closed = [lab for lab in range(cur + 1) if not (open_ and lab == cur)]
    keep = np.isin(labels, closed)
    got = query(ex, "event_window start with v > 10 end with v < 0", "first(ts)")
    compare(got, windows_of(d[keep], labels[keep]))


def test_twa_and_elapsed_at_interval_edges_match_tdengine() -> None:
    """TDengine's test_interval_function.py (tsim function.sim): six readings 6 minutes apart."""
    import tempfile

    lake = Lake(Path(tempfile.mkdtemp()))
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute("create database d precision 'ms'; create table t1 (ts timestamp, k float)")
    ex.execute(
        "insert into t1 values ('2015-08-18 00:00:00', 2.064) ('2015-08-18 00:06:00', 2.116) "
        "('2015-08-18 00:12:00', 2.028) ('2015-08-18 00:18:00', 2.126) ('2015-08-18 00:24:00', 2.041) "
        "('2015-08-18 00:30:00', 2.051)"
    )
    rows = ex.execute_one(
        "select twa(k), elapsed(ts, 1m) from t1 where ts>='2015-8-18 00:00:00' and ts<='2015-8-18 00:07:00' "
        "interval(1m)"
    ).rows
    assert [r[0] for r in rows] == pytest.approx([2.068333156, 2.115999937], abs=1e-8)
    rows = ex.execute_one(
        "select twa(k), elapsed(ts, 1m) from t1 where ts>='2015-8-18 00:00:00' and ts<='2015-8-18 00:27:00' "
        "interval(10m)"
    ).rows
    assert [r[0] for r in rows] == pytest.approx([2.088666666, 2.077099980, 2.069333235], abs=1e-8)
    # first window: from its first row; middle: the window length; last: to its last row (manual)
    assert [r[1] for r in rows] == [10.0, 10.0, 4.0]
    rows = ex.execute_one("select twa(k), elapsed(ts, 1s) from t1 count_window(2)").rows
    assert [r[0] for r in rows] == pytest.approx([2.09, 2.077, 2.046], abs=1e-6)  # no edges outside
    assert [r[1] for r in rows] == [360.0, 360.0, 360.0]


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("diff(v)", Code.NOT_ALLOWED_FUNC),
        ("csum(v)", Code.NOT_ALLOWED_FUNC),
        ("derivative(v, 1s, 0)", Code.NOT_ALLOWED_FUNC),
        ("mavg(v, 2)", Code.NOT_ALLOWED_FUNC),
        ("statecount(v, 'GT', 1)", Code.NOT_ALLOWED_FUNC),
        ("stateduration(v, 'GT', 1)", Code.NOT_ALLOWED_FUNC),
        ("unique(v)", Code.NOT_ALLOWED_FUNC),
        ("tail(v, 2)", Code.NOT_ALLOWED_FUNC),
        ("top(v, 2)", Code.NOT_SUPPORTED),
        ("bottom(v, 2)", Code.NOT_SUPPORTED),
        ("sample(v, 2)", Code.NOT_SUPPORTED),
        ("histogram(v, 'user_input', '[1, 3]', 0)", Code.NOT_SUPPORTED),
        ("percentile(v, 10, 90)", Code.NOT_SUPPORTED),
        ("apercentile(v, 101)", Code.FUNC_PARA_VALUE),
        ("apercentile(v, 50, 'exact')", Code.FUNC_PARA_VALUE),
        ("elapsed(v)", Code.FUNC_PARA_TYPE),
        ("elapsed(ts, 2s)", Code.FUNC_PARA_VALUE),
        ("leastsquares(v, 1)", Code.FUNC_PARA_NUM),
    ],
)
def test_refusals(hand, call: str, code: int) -> None:  # type: ignore[no-untyped-def]
    _, lake, _ = hand
    sql = f"select {call} from t interval(10s)"
    stmt = parse_one(sql)
    src = resolve(lake.catalog, ast.TableName("t"), "d", sql)
    with pytest.raises(SqlError) as e:
        plan_window(stmt.query, src, sql)  # type: ignore[attr-defined]
    assert e.value.code == code


# ------------------------------------------------------------------- Beijing readings (a slice)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, pd.DataFrame]:
    frames = []
    for tb, name in {"dongsi": "Dongsi", "tiantan": "Tiantan"}.items():
        df = pd.read_csv(DATA / f"PRSA_Data_{name}_20130301-20170228.csv.gz", na_values=["NA"], nrows=24 * 20)
        ts = pd.to_datetime(df[["year", "month", "day", "hour"]]).astype("int64") // 1_000_000
        frames.append(
            pd.DataFrame(
                {"tbname": tb, "ts": ts, "v": df["PM2.5"], "k": df["wd"], "hot": (df["TEMP"] > 5).astype(int)}
            )
        )
    d = pd.concat(frames, ignore_index=True)
    lake = Lake(tmp_path_factory.mktemp("air"))
    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="air")
    ex.execute(
        "create database air precision 'ms'; create stable q (ts timestamp, v double, k varchar(8), hot int) "
        "tags (station varchar(16)); create table dongsi using q tags ('dongsi'); "
        "create table tiantan using q tags ('tiantan')"
    )
    lake.write(
        lake.catalog.require_database("air"),
        lake.catalog.require_table("air", "q"),
        pa.table(
            {
                "tbname": d.tbname.to_numpy(),
                "ts": d.ts.to_numpy(),
                "v": pa.array(d.v, from_pandas=True),
                "k": pa.array(d.k, pa.string(), from_pandas=True),
                "hot": pa.array(d.hot, pa.int32()),
            }
        ),
    )
    return ex, d


def air_rows(ex: Executor, window: str, key: str) -> list[list[object]]:
    rows = ex.execute_one(f"select tbname, {key}, {FUNCS} from q partition by tbname {window}").rows
    out = []
    for r in sorted((list(x) for x in rows), key=lambda x: (x[0], str(x[1]))):
        r[1] = r[1] if isinstance(r[1], int) else int(pd.Timestamp(r[1]).timestamp() * 1000)
        out.append(r[1:])
    return out


def test_beijing_interval_sliding(air) -> None:  # type: ignore[no-untyped-def]
    ex, d = air
    got = air_rows(ex, "interval(1d) sliding(12h)", "_wstart")
    want = []
    half = 43_200_000
    for tb in ("dongsi", "tiantan"):
        s = d[d.tbname == tb]
        for ws in range(int(s.ts.min()) // half * half - half, int(s.ts.max()) + 1, half):
            w = s[(s.ts >= ws) & (s.ts < ws + 2 * half)]
            if len(w):
                want.append([ws, *reference(w)])
    compare(got, want)


def test_beijing_state_and_count_windows(air) -> None:  # type: ignore[no-untyped-def]
    ex, d = air
    for window, labeler in (
        ("state_window(hot)", lambda s: (s.hot != s.hot.shift()).cumsum().to_numpy()),
        ("count_window(30)", lambda s: np.arange(len(s)) // 30),
    ):
        want = []
        for tb in ("dongsi", "tiantan"):
            s = d[d.tbname == tb].sort_values("ts").reset_index(drop=True)
            want += windows_of(s, labeler(s))
        compare(air_rows(ex, window, "first(ts)"), want)
