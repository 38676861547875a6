"""IntervalEngine: trigger modes, watermark, expiry, updates, deletes, state round-trip.

Expectations are worked out by hand from seed 000's rules (comments give the reasoning).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.rows import DELETE, INSERT, UPDATE_POST, UPDATE_PRE, RowBatch
from spark_workers.engine.stream import IntervalEngine, StreamRules, StreamState, window_aggregate
from spark_workers.engine.windows import IntervalAssigner

AGGS = [
    AggSpec("count", None, "cnt", "int"),
    AggSpec("sum", "a", "s", "int"),
    AggSpec("min", "a", "mn", "int"),
    AggSpec("max", "a", "mx", "int"),
]


class FakeLake:
    """Rows keyed by (group, ts), as the lake would hold them after each batch."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, int], int | None] = {}

    def apply(self, rows: list[tuple]) -> None:
        for g, ts, a, ch in rows:
            if ch == DELETE:
                self.rows.pop((g, ts), None)
            elif ch != UPDATE_PRE:
                self.rows[(g, ts)] = a

    def read(self, gkeys: list[str], lo: int, hi: int) -> RowBatch:
        sel = sorted((g, ts, a) for (g, ts), a in self.rows.items() if g in gkeys and lo <= ts <= hi)
        return batch([(g, ts, a, INSERT) for g, ts, a in sel])


def batch(rows: list[tuple], history: bool = False) -> RowBatch:
    """rows: (gkey, ts, a, change)"""
    g = np.array([r[0] for r in rows], dtype=object)
    ts = np.array([r[1] for r in rows], np.int64)
    a = np.array([0 if r[2] is None else r[2] for r in rows], np.int64)
    valid = np.array([r[2] is not None for r in rows], bool)
    ch = np.array([r[3] for r in rows], np.int8)
    return RowBatch(g, ts, {"a": (a, valid)}, ch, np.full(len(rows), history))


class Harness:
    def __init__(self, assigner: IntervalAssigner, rules: StreamRules, aggs=AGGS) -> None:
        self.engine = IntervalEngine(assigner, aggs, rules)
        self.state = self.engine.new_state()
        self.lake = FakeLake()
        self.table: dict[tuple[str, int], dict] = {}  # the output table
        self.events: list = []

    def feed(self, rows: list[tuple], history: bool = False):
        self.lake.apply(rows)  # the lake commits before the stream sees the change
        out = self.engine.step(self.state, batch(rows, history), self.lake.read)
        for i in range(len(out.upserts)):
            key = (out.upserts.gkey[i], int(out.upserts.wstart[i]))
            self.table[key] = {
                k: (v[i].item() if valid[i] else None) for k, (v, valid) in out.upserts.values.items()
            }
        for k in out.removals:
            self.table.pop(k, None)
        self.events += out.events
        return out

    def rows(self, g: str = "[]"):
        return [(w, v) for (gk, w), v in sorted(self.table.items()) if gk == g]


def brute_force_windows(rows, size, step, offset):
    """Independent reference: loop over every window start that can hold each row."""
    out: dict = {}
    for g, ts, a, _ in rows:
        w = (ts - offset) // step * step + offset
        while w + size > ts:
            acc = out.setdefault((g, w), [])
            acc.append(a)
            w -= step
    return {k: {"cnt": len(v), "s": sum(v), "mn": min(v), "mx": max(v)} for k, v in out.items()}


def ins(ts, a, g="[]"):
    return (g, ts, a, INSERT)


def test_td001_at_once_reaggregates_open_window():
    # INTERVAL(10m), AT_ONCE: every write re-emits its window (seed 000, trigger modes)
    h = Harness(IntervalAssigner(600_000, 600_000), StreamRules(mode="AT_ONCE"))
    t0 = 1652001720000  # 2022-05-08 09:22:00 -> window 09:20
    h.feed([ins(t0, 234)])
    assert h.rows() == [(t0 - 120_000, {"cnt": 1, "s": 234, "mn": 234, "mx": 234})]
    h.feed([ins(t0 + 60_000, -111)])
    assert h.rows() == [(t0 - 120_000, {"cnt": 2, "s": 123, "mn": -111, "mx": 234})]
    h.feed([ins(t0 + 660_000, 789)])
    assert [v for _, v in h.rows()] == [
        {"cnt": 2, "s": 123, "mn": -111, "mx": 234},
        {"cnt": 1, "s": 789, "mn": 789, "mx": 789},
    ]


def test_window_close_emits_only_closed_windows_with_watermark():
    # WINDOW_CLOSE, WATERMARK 5s, 10s windows: T = latest - 5s; [0,10s) closes when latest >= 15s
    h = Harness(
        IntervalAssigner(10_000, 10_000),
        StreamRules(mode="WINDOW_CLOSE", watermark=5_000, notify_close=True, notify_open=True),
    )
    h.feed([ins(1_000, 1), ins(9_000, 2)])
    assert h.rows() == []
    h.feed([ins(14_000, 3)])  # T = 9s: nothing closes
    assert h.rows() == []
    h.feed([ins(8_000, 4)])  # out of order within the watermark: absorbed by the open window
    h.feed([ins(15_000, 5)])  # T = 10s >= end of [0,10s): closes
    assert h.rows() == [(0, {"cnt": 3, "s": 7, "mn": 1, "mx": 4})]
    kinds = [(e.kind, e.wstart) for e in h.events]
    assert kinds == [("WINDOW_OPEN", 0), ("WINDOW_OPEN", 10_000), ("WINDOW_CLOSE", 0)]


def test_expired_row_is_dropped_by_default_and_recalculated_with_ignore_expired_0():
    for ignore, expect in ((True, 1), (False, 2)):
        h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="WINDOW_CLOSE", ignore_expired=ignore))
        h.feed([ins(1_000, 1)])
        h.feed([ins(25_000, 2)])  # closes [0,10s) and [10,20s) (empty)
        out = h.feed([ins(2_000, 5)])  # expired: its window closed before it arrived
        assert h.rows()[0][1]["cnt"] == expect
        assert out.stats["rows_expired"] == (1 if ignore else 0)


def test_at_once_late_row_recalculates_closed_window_td017():
    # td-017: INTERVAL(10s, 5s) AT_ONCE; the late 213004 row is counted in [205,215)
    h = Harness(IntervalAssigner(10_000, 10_000, 5_000), StreamRules(mode="AT_ONCE"))
    for ts, a in [
        (1648791213000, 1),
        (1648791223001, 2),
        (1648791233002, 3),
        (1648791243003, 4),
        (1648791213004, 4),
    ]:
        h.feed([ins(ts, a)])
    assert [(w, v["cnt"], v["s"]) for w, v in h.rows()] == [
        (1648791205000, 2, 5),
        (1648791215000, 1, 2),
        (1648791225000, 1, 3),
        (1648791235000, 1, 4),
    ]
    assert len(h.state.open) == 1  # only the newest window is held in memory


def test_sliding_windows_td016_and_identical_rewrite():
    # INTERVAL(10s) SLIDING(5s): a row belongs to two windows
    h = Harness(IntervalAssigner(10_000, 5_000), StreamRules(mode="AT_ONCE"))
    for ts, a in [(1648791210000, 1), (1648791216000, 2), (1648791220000, 3)]:
        h.feed([ins(ts, a)])
    assert [(w, v["cnt"], v["s"]) for w, v in h.rows()] == [
        (1648791205000, 1, 1),
        (1648791210000, 2, 3),
        (1648791215000, 2, 5),
        (1648791220000, 1, 3),
    ]


def test_update_recalculates_with_ignore_update_0_and_double_counts_with_1():
    base = [ins(1_000, 1), ins(2_000, 2)]
    update = [("[]", 2_000, 2, UPDATE_PRE), ("[]", 2_000, 7, UPDATE_POST)]
    h0 = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="AT_ONCE", ignore_update=False))
    h0.feed(base)
    h0.feed(update)
    assert h0.rows()[0][1] == {"cnt": 2, "s": 8, "mn": 1, "mx": 7}
    h1 = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="AT_ONCE", ignore_update=True))
    h1.feed(base)
    h1.feed(update)  # seed 000: IGNORE UPDATE 1 computes every write as incremental data
    assert h1.rows()[0][1] == {"cnt": 3, "s": 10, "mn": 1, "mx": 7}


def test_delete_recalculates_and_removes_empty_window():
    h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="AT_ONCE"))
    h.feed([ins(1_000, 1), ins(2_000, 2), ins(12_000, 5)])
    h.feed([("[]", 2_000, 2, DELETE)])
    assert h.rows() == [
        (0, {"cnt": 1, "s": 1, "mn": 1, "mx": 1}),
        (10_000, {"cnt": 1, "s": 5, "mn": 5, "mx": 5}),
    ]
    h.feed([("[]", 12_000, 5, DELETE)])
    assert h.rows() == [(0, {"cnt": 1, "s": 1, "mn": 1, "mx": 1})]


def test_groups_have_independent_timelines():
    h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="WINDOW_CLOSE"))
    h.feed([ins(1_000, 1, '["a"]'), ins(1_000, 10, '["b"]')])
    h.feed([ins(11_000, 2, '["a"]')])  # closes a's first window only
    assert h.rows('["a"]') == [(0, {"cnt": 1, "s": 1, "mn": 1, "mx": 1})]
    assert h.rows('["b"]') == []


def test_nulls_are_skipped_by_aggregates_but_counted_by_count_star():
    h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="AT_ONCE"))
    h.feed([ins(1_000, None)])
    assert h.rows() == [(0, {"cnt": 1, "s": None, "mn": None, "mx": None})]
    h.feed([ins(2_000, 3)])
    assert h.rows() == [(0, {"cnt": 2, "s": 3, "mn": 3, "mx": 3})]


@pytest.mark.parametrize("seed", range(5))
def test_any_split_into_batches_gives_the_batch_result(seed):
    rng = np.random.default_rng(seed)
    n = 400
    ts = np.sort(rng.integers(0, 200_000, n))
    g = rng.choice(['["x"]', '["y"]', '["z"]'], n)
    a = rng.integers(-50, 50, n)
    rows = [(g[i], int(ts[i]), int(a[i]), INSERT) for i in range(n)]
    # the same key written twice would be an update in the lake: keep keys unique
    rows = list({(r[0], r[1]): r for r in rows}.values())
    rows.sort(key=lambda r: r[1])
    assigner = IntervalAssigner(7_000, 3_000, 1_000)
    want = brute_force_windows(rows, size=7_000, step=3_000, offset=1_000)
    got = window_aggregate(assigner, AGGS, batch(rows))
    assert {
        (got.gkey[i], int(got.wstart[i])): {k: v[i].item() for k, (v, _) in got.values.items()}
        for i in range(len(got))
    } == want
    h = Harness(assigner, StreamRules(mode="AT_ONCE"))
    cuts = sorted(rng.choice(np.arange(1, len(rows)), 12, replace=False))
    for lo, hi in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        h.feed(rows[lo:hi])
    assert h.table == want


def test_state_round_trip_and_size_per_window_is_constant():
    eng = IntervalEngine(
        IntervalAssigner(60_000, 60_000),
        [*AGGS, AggSpec("first", "a", "f", "int")],
        StreamRules(mode="WINDOW_CLOSE"),
    )
    st = eng.new_state()
    eng.step(st, batch([ins(i * 10, i % 7, json.dumps([i % 3])) for i in range(100)]))
    small = st.open.nbytes()
    eng.step(st, batch([ins(1_000 + i, i % 5, json.dumps([i % 3])) for i in range(5_000)]))
    assert len(st.open) == 3 and st.open.nbytes() == small  # more rows, same windows, same bytes
    back = StreamState.from_bytes(eng.aggs, st.to_bytes())
    assert back.gkeys == st.gkeys
    assert np.array_equal(back.max_ts, st.max_ts)
    for k in st.open.cols:
        assert np.array_equal(back.open.cols[k], st.open.cols[k])
