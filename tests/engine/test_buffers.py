"""The value buffers of ``engine/buffers.py``: whatever the micro-batch splits, the arrival order,
the equal times and the checkpoints between batches, the incremental state lowers to what one
computation over all of a window's rows gives (numpy / pandas), and the vectorized lowering equals
the per-window one (seed 004, "Stateful incremental calculation")."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.engine import buffers
from spark_workers.engine.aggregates import AggSpec, Partials, combine, lift, lower
from spark_workers.engine.extended import twa_points, weighted_percentile
from spark_workers.engine.rows import RowBatch
from spark_workers.engine.stream import IntervalEngine, StreamRules
from spark_workers.engine.windows import IntervalAssigner

WINDOW = 10_000


def aggs(kind: str) -> list[AggSpec]:
    return [
        AggSpec("twa", "v", "twa"),
        AggSpec("leastsquares", "v", "ls", params=(0.0, 1.0)),
        AggSpec("apercentile", "v", "ap", params=(63.0,)),
        AggSpec("mode", "k", "mode", kind=kind),
        AggSpec("count_distinct", "k", "cd", kind=kind),
        AggSpec("hyperloglog", "k", "hll", kind=kind),
    ]


KEYS = {
    "int": st.integers(-3, 3),  # a small range: counted with np.bincount
    "wide": st.integers(-(2**60), 2**60),  # a wide range: sorted
    "float": st.sampled_from([-1.5, 0.0, 0.25, 2.0, 1e300]),
    "str": st.sampled_from(["", "a", "b", "zz"]),
    "bool": st.booleans(),
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, pd.DataFrame, list[np.ndarray]]:
    """Rows of 1-3 groups with repeated times (two subtables of one group at one instant), split
    into batches in a random arrival order."""
    kind = draw(st.sampled_from(list(KEYS)))
    n = draw(st.integers(1, 80))
    ts = draw(st.lists(st.integers(0, 30_000), min_size=n, max_size=n))
    vals = draw(st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=n, max_size=n))
    keys = draw(st.lists(st.one_of(st.none(), KEYS[kind]), min_size=n, max_size=n))
    df = pd.DataFrame(
        {
            "g": draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
            "ts": np.array(ts, np.int64),
            "v": pd.array([None if x is None else x / 8 for x in vals], dtype="Float64"),
            "k": pd.Series(keys, dtype=object),
        }
    )
    order = np.array(draw(st.permutations(list(range(n)))), np.int64)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=5))))
    return kind, df, [c for c in np.split(order, [c for c in cuts if c < n]) if len(c)]


def inputs(d: pd.DataFrame, kind: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    ok = d.k.notna().to_numpy()
    dtype = {"int": np.int64, "wide": np.int64, "float": np.float64, "bool": bool}.get(kind, object)
    if dtype is object:
        k = np.array(d.k.tolist(), dtype=object)
    else:
        k = np.array([x if good else False for x, good in zip(d.k, ok, strict=True)], dtype=dtype)
    return {"v": (d.v.fillna(0).to_numpy(float), d.v.notna().to_numpy()), "k": (k, ok)}


def engine_kind(kind: str) -> str:
    return {"wide": "int"}.get(kind, kind)


def partials(df: pd.DataFrame, idx: np.ndarray, a: list[AggSpec], kind: str) -> Partials:
    d = df.iloc[idx]
    ts = d.ts.to_numpy(np.int64)
    return combine(a, lift(a, d.g.to_numpy(np.int64), ts // WINDOW * WINDOW, ts, inputs(d, kind)))


def results(a: list[AggSpec], p: Partials) -> dict:
    out = lower(a, p)
    return {
        (int(g), int(w)): {name: (v[i], bool(ok[i])) for name, (v, ok) in out.items()}
        for i, (g, w) in enumerate(zip(p.gid, p.wkey, strict=True))
    }


def reference(w: pd.DataFrame) -> dict:
    """One window, computed from all its rows at once; points of one time ordered by value."""
    pts = w[w.v.notna()].assign(v=lambda f: f.v.astype(float)).sort_values(["ts", "v"])
    t, v = pts.ts.to_numpy(np.int64), pts.v.to_numpy(float)
    e: dict = {}
    if len(v) == 0:
        e["twa"] = e["ap"] = e["ls"] = (None, False)
    else:
        span = t[-1] - t[0]
        e["twa"] = (float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(t))) / span if span else v.mean(), True)
        e["ap"] = (float(np.percentile(v, 63.0)), True)
        e["ls"] = (
            (tuple(np.polyfit(np.arange(len(v), dtype=float), v, 1)), True) if len(v) > 1 else (None, False)
        )
    k = w.k.dropna()
    counts = k.value_counts()
    e["cd"] = e["hll"] = (len(counts), True)
    if len(counts):
        top = counts[counts == counts.max()].index
        e["mode"] = (sorted(top)[0], True)
    else:
        e["mode"] = (None, False)
    return e


def check(got: dict, want: dict) -> None:
    for name, (wv, wok) in want.items():
        gv, gok = got[name]
        assert gok == wok, name
        if not wok:
            continue
        if name == "ls":
            slope, icpt = (float(x.split(":")[1]) for x in gv.strip("{}").split(","))
            assert slope == pytest.approx(wv[0], abs=2e-6, rel=1e-6)
            assert icpt == pytest.approx(wv[1], abs=2e-6, rel=1e-6)
        elif isinstance(wv, str | bool | np.bool_) or name in ("cd", "hll"):
            assert gv == wv, name
        else:
            assert float(gv) == pytest.approx(float(wv), rel=1e-9, abs=1e-9), name


@settings(max_examples=150, deadline=None)
@given(cases())
def test_any_batches_any_order_equal_one_computation(
    case: tuple[str, pd.DataFrame, list[np.ndarray]],
) -> None:
    kind, df, chunks = case
    a = aggs(engine_kind(kind))
    parts = [partials(df, c, a, kind) for c in chunks]
    acc = parts[0]
    for p in parts[1:]:  # batch after batch, as the engine folds micro-batches into its state
        acc = combine(a, Partials.concat([acc, p]))
    got = results(a, acc)
    whole = results(a, partials(df, np.arange(len(df)), a, kind))
    windows = df.assign(w=df.ts // WINDOW * WINDOW).groupby(["g", "w"])
    assert set(got) == set(whole) == {(int(g), int(w)) for g, w in windows.groups}
    for (g, w), rows in windows:
        check(got[(int(g), int(w))], reference(rows))
        check(whole[(int(g), int(w))], reference(rows))


@settings(max_examples=40, deadline=None)
@given(cases())
def test_checkpoints_between_batches_change_nothing(case: tuple[str, pd.DataFrame, list[np.ndarray]]) -> None:
    """The stream engine serializes its state after every micro-batch (compact buffer bytes)."""
    kind, df, chunks = case
    a = aggs(engine_kind(kind))
    eng = IntervalEngine(IntervalAssigner(WINDOW, WINDOW), a, StreamRules(mode="AT_ONCE", watermark=10**9))
    state = eng.new_state()
    latest: dict = {}
    for c in chunks:
        d = df.iloc[c]
        gk = np.array([f'["g{g}"]' for g in d.g], dtype=object)
        out = eng.step(state, RowBatch(gk, d.ts.to_numpy(np.int64), inputs(d, kind)))
        state = type(state).from_bytes(a, state.to_bytes())
        up = out.upserts
        for i in range(len(up)):
            key = (up.gkey[i], int(up.wstart[i]))
            latest[key] = {x.name: (up.values[x.name][0][i], up.values[x.name][1][i]) for x in a}
    for (g, w), rows in df.assign(w=df.ts // WINDOW * WINDOW).groupby(["g", "w"]):
        got = {k: (v, bool(ok)) for k, (v, ok) in latest[(f'["g{g}"]', int(w))].items()}
        check(got, reference(rows))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(-9, 9), min_size=0, max_size=12), min_size=1, max_size=8),
    st.floats(0, 100),
)
def test_vectorized_lowering_equals_each_window_s(windows: list[list[int]], p: float) -> None:
    """twa, mode and apercentile of many windows laid end to end equal the per-window functions."""
    t_bufs, v_bufs, w_bufs = [], [], []
    for vals in windows:
        u, c = np.unique(np.array(vals, np.float64), return_counts=True)
        v_bufs.append((u, c.astype(np.float64)))
        w_bufs.append((u, c.astype(np.int64)))
        t_bufs.append((np.sort(np.array(vals, np.int64) * 1000), np.array(vals, np.float64) / 3))
    lens, v, w = buffers.flat(v_bufs, np.float64, np.float64)
    got, ok = buffers.percentile(lens, v, w, p)
    lens, t, x = buffers.flat(t_bufs, np.int64, np.float64)
    got_twa, _ = buffers.twa(lens, t, x)
    lens, mv, mw = buffers.flat(w_bufs, np.float64, np.int64)
    pick, _ = buffers.mode(lens, mv, mw)
    for i, vals in enumerate(windows):
        assert bool(ok[i]) == bool(vals)
        if vals:
            assert got[i] == pytest.approx(weighted_percentile(*v_bufs[i], p), rel=1e-12, abs=1e-12)
            assert got[i] == pytest.approx(np.percentile(vals, p), rel=1e-9, abs=1e-9)
            assert got_twa[i] == pytest.approx(twa_points(*t_bufs[i]), rel=1e-9, abs=1e-12)
            counts = pd.Series(vals).value_counts()
            assert mv[pick[i]] == min(counts[counts == counts.max()].index)


@pytest.mark.parametrize(
    "buf",
    [
        (np.array([3, 1], np.int64), np.array([0.5, -2.0])),
        (np.array([1.5, 2.5]), np.array([2, 7], np.int64)),
        (np.array([False, True]), np.array([1, 4], np.int64)),
        (np.empty(0, np.int64), np.empty(0)),
        (np.array(["a", "b"], dtype=object), np.array([1, 2], np.int64)),  # text: pickled
        (np.arange(16, dtype=np.uint8), None),  # hyperloglog registers: pickled
        None,
    ],
)
def test_buffer_bytes_round_trip_and_read_older_pickles(buf: tuple | None) -> None:
    for data in (buffers.encode(buf), pickle.dumps(buf, protocol=5)):
        back = buffers.decode(data)
        if buf is None:
            assert back is None
            continue
        assert back[0].dtype == buf[0].dtype and list(back[0]) == list(buf[0])
        assert (back[1] is None) == (buf[1] is None)
        if buf[1] is not None:
            assert back[1].dtype == buf[1].dtype and list(back[1]) == list(buf[1])
    col = np.empty(3, dtype=object)
    col[0], col[2] = buf, buf
    for enc in (buffers.encode_column, buffers.encode_lists):
        back_col = buffers.decode_column(pa.table({"b": enc(col)}).slice(1).column("b"))
        assert back_col[0] is None
        if buf is not None:
            assert [list(x) if x is not None else None for x in back_col[1]] == [
                list(x) if x is not None else None for x in buf
            ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.booleans()), min_size=1, max_size=30))
def test_irate_without_a_sort_equals_the_sorted_merge(rows: list[tuple[int, int, bool]]) -> None:
    """irate's merge of in-order partials (no sort) picks the two points the sorted merge picks,
    equal times included; other partials take the sorted merge."""
    from spark_workers.engine.extended import I64_MIN, _combine_irate, _combine_irate_sorted

    rows = sorted(rows)
    seg = np.array([r[0] for r in rows], np.int64)
    _, seg = np.unique(seg, return_inverse=True)
    t2 = np.array([r[1] for r in rows], np.int64) * 10 + 5
    t1 = np.where([r[2] for r in rows], t2 - 10, I64_MIN)  # may equal the previous t2
    get = {"t1": t1, "v1": t1 / 3.0, "t2": t2, "v2": t2 / 5.0}
    get["v1"][t1 == I64_MIN] = 0.0
    nseg = int(seg.max()) + 1
    fast, ref = _combine_irate(get, seg, nseg), _combine_irate_sorted(get, seg, nseg)
    for f in ("t1", "v1", "t2", "v2"):
        assert list(fast[f]) == list(ref[f]), f
