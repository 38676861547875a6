"""The extended aggregates (``engine/extended.py``): lift / combine / lower over random rows split
into random batches, in random arrival order, equal a numpy / pandas computation of each whole
window, with NULLs and windows without rows (seed 004, "Stateful incremental calculation")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.engine.aggregates import (
    AggSpec,
    Partials,
    combine,
    empty_partials,
    lift,
    lower,
    result_arrow_type,
)
from spark_workers.engine.extended import APERCENTILE_BINS, compress_bins, weighted_percentile

PER_S = 1000.0  # ms precision


def specs() -> list[AggSpec]:
    return [
        AggSpec("var_pop", "v", "var_pop"),
        AggSpec("stddev", "v", "stddev"),
        AggSpec("elapsed", "t", "elapsed", kind="ts", params=(1000.0,)),
        AggSpec("irate", "v", "irate", params=(PER_S,)),
        AggSpec("twa", "v", "twa"),
        AggSpec("leastsquares", "v", "leastsquares", params=(1.0, 2.0)),
        AggSpec("percentile", "v", "percentile", params=(37.0,)),
        AggSpec("apercentile", "v", "apercentile", params=(37.0,)),
        AggSpec("mode", "i", "mode", kind="int"),
        AggSpec("count_distinct", "i", "count_distinct", kind="int"),
        AggSpec("hyperloglog", "s", "hyperloglog", kind="str"),
        AggSpec("mode", "s", "mode_s", kind="str"),
    ]


def frame(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(1, 60))
    ts = np.sort(
        np.array(draw(st.lists(st.integers(0, 100_000), min_size=n, max_size=n, unique=True)), np.int64)
    )
    vals = draw(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=n, max_size=n))
    return pd.DataFrame(
        {
            "g": np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int64),
            "ts": ts,
            "v": pd.array([None if x is None else float(x) / 4 for x in vals], dtype="Float64"),
            "i": pd.array([None if x is None else x % 7 for x in vals], dtype="Int64"),
            "s": [None if x is None else f"k{x % 5}" for x in vals],
        }
    )


def run_engine(df: pd.DataFrame, chunks: list[np.ndarray], aggs: list[AggSpec]) -> dict:
    """Lift each chunk of rows (in the chunk's order), combine per chunk, then combine all."""
    parts = []
    for idx in chunks:
        d = df.iloc[idx]
        inputs = {
            "v": (d.v.fillna(0).to_numpy(float), d.v.notna().to_numpy()),
            "t": (d.ts.to_numpy(np.int64), np.ones(len(d), bool)),
            "i": (d.i.fillna(0).to_numpy(np.int64), d.i.notna().to_numpy()),
            "s": (np.array(d.s.tolist(), dtype=object), d.s.notna().to_numpy()),
        }
        wkey = (d.ts.to_numpy(np.int64) // 10_000) * 10_000
        parts.append(combine(aggs, lift(aggs, d.g.to_numpy(np.int64), wkey, d.ts.to_numpy(np.int64), inputs)))
    p = combine(aggs, Partials.concat(parts))
    out = lower(aggs, p)
    return {
        (int(g), int(w)): {name: (v[i], ok[i]) for name, (v, ok) in out.items()}
        for i, (g, w) in enumerate(zip(p.gid, p.wkey, strict=True))
    }


def expected(w: pd.DataFrame) -> dict:
    """The reference results of one window's rows."""
    pts = w[w.v.notna()].sort_values("ts")
    t, v = pts.ts.to_numpy(np.int64), pts.v.to_numpy(float)
    e: dict = {"elapsed": ((w.ts.max() - w.ts.min()) / 1000.0, True)}
    e["var_pop"] = (float(np.var(v)), True) if len(v) else (None, False)
    e["stddev"] = (float(np.std(v)), True) if len(v) else (None, False)
    if len(v) == 0:
        e["irate"] = e["twa"] = e["percentile"] = e["leastsquares"] = (None, False)
    else:
        if len(v) == 1:
            e["irate"] = (0.0, True)
            e["twa"] = (v[0], True)
        else:
            d = v[-1] - v[-2] if v[-1] >= v[-2] else v[-1]
            e["irate"] = (d / ((t[-1] - t[-2]) / PER_S), True)
            e["twa"] = (float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(t))) / (t[-1] - t[0]), True)
        e["percentile"] = (float(np.percentile(v, 37)), True)
        if len(v) >= 2:
            slope, icpt = np.polyfit(1.0 + 2.0 * np.arange(len(v)), v, 1)
            e["leastsquares"] = ((slope, icpt), True)
        else:
            e["leastsquares"] = (None, False)
    e["apercentile"] = e["percentile"]
    iv = w.i.dropna().astype(int)
    e["count_distinct"] = (iv.nunique(), True)
    e["mode"] = (iv.value_counts().sort_index().idxmax() if len(iv) else None, len(iv) > 0)
    sv = w.s.dropna()
    e["hyperloglog"] = (sv.nunique(), True)
    e["mode_s"] = (sv.value_counts().sort_index().idxmax() if len(sv) else None, len(sv) > 0)
    return e


def check_window(got: dict, want: dict) -> None:
    for name, (wv, wok) in want.items():
        gv, gok = got[name]
        assert bool(gok) == wok, name
        if not wok:
            continue
        if name == "leastsquares":
            slope, icpt = (float(x.split(":")[1]) for x in gv.strip("{}").split(","))
            assert gv.startswith("{slop:") and ", intercept:" in gv
            assert slope == pytest.approx(wv[0], abs=2e-6, rel=1e-6)
            assert icpt == pytest.approx(wv[1], abs=2e-6, rel=1e-6)
        elif isinstance(wv, str):
            assert gv == wv, name
        else:
            assert float(gv) == pytest.approx(float(wv), rel=1e-9, abs=1e-9), name


@st.composite
def cases(draw: st.DrawFn) -> tuple[pd.DataFrame, list[np.ndarray]]:
    df = frame(draw)
    n = len(df)
    order = np.array(draw(st.permutations(list(range(n)))), np.int64)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=4))))
    return df, [c for c in np.split(order, [c for c in cuts if c < n]) if len(c)]


@settings(max_examples=120, deadline=None)
@given(cases())
def test_batches_split_anywhere_equal_the_whole_window(case: tuple[pd.DataFrame, list[np.ndarray]]) -> None:
    df, chunks = case
    got = run_engine(df, chunks, specs())
    keys = df.assign(w=(df.ts // 10_000) * 10_000).groupby(["g", "w"])
    assert set(got) == {(int(g), int(w)) for g, w in keys.groups}
    for (g, w), rows in keys:
        check_window(got[(int(g), int(w))], expected(rows))


def test_windows_without_rows_lower_to_null_or_zero() -> None:
    aggs = specs()
    out = lower(aggs, empty_partials(aggs, np.zeros(2, np.int64), np.array([0, 10], np.int64)))
    for a in aggs:
        v, ok = out[a.name]
        if a.func in ("count_distinct", "hyperloglog"):
            assert ok.all() and (v == 0).all()
        else:
            assert not ok.any(), a.func


def test_apercentile_with_many_distinct_values_stays_within_the_histogram_error() -> None:
    """More than 1000 distinct values: at most 1000 bins, the answer within 1% of rank (TDengine's
    "default" histogram is an approximation too; exact below 1000 distinct values)."""
    rng = np.random.default_rng(7)
    x = rng.lognormal(0, 1.5, 200_000)
    a = AggSpec("apercentile", "v", "a", params=(90.0,))
    chunks = np.array_split(rng.permutation(x.shape[0]), 13)
    parts = [
        combine(
            [a],
            lift(
                [a],
                np.zeros(len(c), np.int64),
                np.zeros(len(c), np.int64),
                np.arange(len(c), dtype=np.int64),
                {"v": (x[c], np.ones(len(c), bool))},
            ),
        )
        for c in chunks
    ]
    p = combine([a], Partials.concat(parts))
    assert len(p.cols["a.b"][0][0]) <= APERCENTILE_BINS
    got = float(lower([a], p)["a"][0][0])
    lo, hi = np.percentile(x, [89.0, 91.0])
    assert lo <= got <= hi


def test_weighted_percentile_is_numpy_linear_over_repeated_values() -> None:
    rng = np.random.default_rng(3)
    v = np.unique(rng.integers(0, 50, 30)).astype(float)
    w = rng.integers(1, 6, v.shape[0]).astype(float)
    full = np.repeat(v, w.astype(int))
    for p in (0, 1, 25, 50, 77.7, 99, 100):
        assert weighted_percentile(v, w, p) == pytest.approx(np.percentile(full, p))
    c, cw = compress_bins(full, np.ones(full.shape[0]), 1000)
    assert (c == v).all() and (cw == w).all()


def test_result_types_are_tdengine_s() -> None:
    import pyarrow as pa

    want = {
        "var_pop": pa.float64(),
        "elapsed": pa.float64(),
        "irate": pa.float64(),
        "twa": pa.float64(),
        "leastsquares": pa.string(),
        "percentile": pa.float64(),
        "apercentile": pa.float64(),
        "count_distinct": pa.int64(),
        "hyperloglog": pa.int64(),
    }
    for a in specs():
        if a.func in want:
            assert result_arrow_type(a, pa.float64()) == want[a.func]
    assert result_arrow_type(AggSpec("mode", "s", "m", kind="str"), pa.string()) == pa.string()


def test_hyperloglog_switches_to_registers_and_stays_within_its_error() -> None:
    """Past ``EXACT_MAX`` distinct values a window keeps 2^14 registers (bounded state) and the
    estimate is within 3 % of the true count (TDengine: 0.81 % standard error), whatever the
    batches; below it the count is exact."""
    from spark_workers.engine import hll

    rng = np.random.default_rng(1)
    a = [AggSpec("hyperloglog", "v", "h", kind="int")]
    for truth in (3_000, 60_000):
        vals = rng.permutation(np.unique(rng.integers(0, 2**62, 2 * truth))[:truth])
        x = np.concatenate([vals, vals[: truth // 2]])  # repeats count once
        parts = []
        for c in np.array_split(rng.permutation(x.shape[0]), 7):
            z = np.zeros(len(c), np.int64)
            parts.append(combine(a, lift(a, z, z, z, {"v": (x[c], np.ones(len(c), bool))})))
        p = combine(a, Partials.concat(parts))
        got = int(lower(a, p)["h"][0][0])
        if truth <= hll.EXACT_MAX:
            assert got == truth
        else:
            assert p.cols["h.b"][0][1] is None and p.cols["h.b"][0][0].shape == (hll.M,)
            assert abs(got - truth) / truth < 0.03
    s = np.array([f"k{i}" for i in range(20_000)], dtype=object)
    assert abs(hll.estimate(hll.registers(s)) - 20_000) / 20_000 < 0.03
