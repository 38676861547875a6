"""lift / combine / lower against an independent pandas computation (seed 004)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spark_workers.engine.aggregates import AggSpec, Partials, combine, lift, lower

FUNCS = ["count", "sum", "avg", "min", "max", "spread", "stddev", "first", "last", "last_row"]


def reference(df: pd.DataFrame, func: str):
    """Per-key result of one function over rows sorted by ts (TDengine semantics)."""
    out = {}
    for key, g in df.sort_values("ts").groupby("key"):
        x = g["x"]
        nn = x.dropna()
        if func == "count":
            out[key] = len(nn)
        elif func == "sum":
            out[key] = nn.sum() if len(nn) else None
        elif func == "avg":
            out[key] = nn.mean() if len(nn) else None
        elif func == "min":
            out[key] = nn.min() if len(nn) else None
        elif func == "max":
            out[key] = nn.max() if len(nn) else None
        elif func == "spread":
            out[key] = nn.max() - nn.min() if len(nn) else None
        elif func == "stddev":
            out[key] = float(np.std(nn.to_numpy())) if len(nn) else None  # population stddev
        elif func == "first":
            out[key] = nn.iloc[0] if len(nn) else None
        elif func == "last":
            out[key] = nn.iloc[-1] if len(nn) else None
        elif func == "last_row":
            v = x.iloc[-1]
            out[key] = None if pd.isna(v) else v
    return out


def run(df: pd.DataFrame, func: str, splits: int):
    spec = AggSpec(func, "x", "r", "float")
    vals = df["x"].fillna(0.0).to_numpy()
    valid = df["x"].notna().to_numpy()
    parts = []
    for chunk in np.array_split(np.arange(len(df)), splits):
        p = lift(
            [spec],
            df["key"].to_numpy()[chunk],
            np.zeros(len(chunk), np.int64),
            df["ts"].to_numpy()[chunk],
            {"x": (vals[chunk], valid[chunk])},
        )
        parts.append(combine([spec], p))  # partial aggregation per chunk, then combine again
    total = combine([spec], Partials.concat(parts))
    v, ok = lower([spec], total)["r"]
    return {int(k): (v[i].item() if ok[i] else None) for i, k in enumerate(total.gid)}


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("splits", [1, 3, 17])
def test_matches_pandas_with_nulls_and_any_split(func, splits):
    rng = np.random.default_rng(7)
    n = 500
    x = rng.normal(1000.0, 3.0, n)  # large mean, small spread: stresses stddev's numerics
    x[rng.random(n) < 0.2] = np.nan
    df = pd.DataFrame({"key": rng.integers(0, 6, n), "ts": rng.permutation(n).astype(np.int64), "x": x})
    df.loc[df["key"] == 5, "x"] = np.nan  # one all-NULL group
    got = run(df, func, splits)
    want = reference(df, func)
    assert set(got) == set(want)
    for k, w in want.items():
        if w is None:
            assert got[k] is None, (func, k)
        else:
            assert got[k] == pytest.approx(w, rel=1e-9, abs=1e-9), (func, k)


def test_first_last_on_strings_and_count_star():
    specs = [
        AggSpec("first", "s", "f", "str"),
        AggSpec("last", "s", "l", "str"),
        AggSpec("count", None, "n", "int"),
        AggSpec("last_row", "s", "lr", "str"),
    ]
    s = np.array(["b", None, "c", "a"], dtype=object)
    valid = np.array([True, False, True, True])
    ts = np.array([20, 10, 30, 5], np.int64)
    p = combine(specs, lift(specs, np.zeros(4, np.int64), np.zeros(4, np.int64), ts, {"s": (s, valid)}))
    res = lower(specs, p)
    assert res["f"][0][0] == "a" and res["l"][0][0] == "c"
    assert res["n"][0][0] == 4
    assert res["lr"][0][0] == "c"  # the row at the latest ts


def test_ties_at_equal_timestamps_do_not_depend_on_input_order():
    """Two subtables of one group write at the same instant: first takes the smaller value,
    last / last_row the larger, last_row prefers a value to NULL (decisions.md)."""
    specs = [
        AggSpec("first", "x", "f", "float"),
        AggSpec("last", "x", "l", "float"),
        AggSpec("last_row", "x", "lr", "float"),
    ]
    x = np.array([4.0, 9.0, 1.0, 0.0])
    valid = np.array([True, True, True, False])
    ts = np.array([10, 10, 20, 20], np.int64)
    results = set()
    for perm in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]):
        idx = np.array(perm)
        p = lift(specs, np.zeros(4, np.int64), np.zeros(4, np.int64), ts[idx], {"x": (x[idx], valid[idx])})
        for split in (1, 2):  # combined at once, or in two partials
            parts = [
                combine(
                    specs,
                    Partials(p.gid[i::split], p.wkey[i::split], {k: v[i::split] for k, v in p.cols.items()}),
                )
                for i in range(split)
            ]
            res = lower(specs, combine(specs, Partials.concat(parts)))
            results.add(tuple(float(res[k][0][0]) for k in ("f", "l", "lr")))
    assert results == {(4.0, 1.0, 1.0)}
