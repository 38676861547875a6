"""IntervalEngine: trigger modes, watermark, expiry, updates, deletes, state round-trip.

Expectations are worked out by hand from seed 000's rules (comments give the reasoning).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from spark_workers.engine.aggregates import I64_MIN, AggSpec
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
    if not rows:
        e = np.empty(0, np.int64)
        return RowBatch(
            np.empty(0, object), e, {"a": (e, np.empty(0, bool))}, e.astype(np.int8), np.empty(0, bool)
        )
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

    def feed(self, rows: list[tuple], history: bool = False, now: int | None = None, keep=None):
        self.lake.apply(rows)  # the lake commits before the stream sees the change
        b = batch(rows, history)
        if keep is not None:
            b.extra["keep"] = (np.asarray(keep, bool), np.ones(len(rows), bool))
        out = self.engine.step(self.state, b, self.lake.read, now)
        self.apply(out)
        return out

    def tick(self, now: int):
        return self.feed([], now=now)

    def apply(self, out):
        for i in range(len(out.upserts)):
            key = (out.upserts.gkey[i], int(out.upserts.wstart[i]))
            self.table[key] = {
                k: (v[i].item() if valid[i] else None) for k, (v, valid) in out.upserts.values.items()
            }
        for k in out.removals:
            self.table.pop(k, None)
        self.events += out.events

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


def test_max_delay_writes_open_windows_on_processing_time_and_closed_ones_at_once():
    # MAX_DELAY 5s (seed 000): a window closes -> written; an open window with changes is written
    # once 5 s of wall clock have passed since its first unwritten change
    h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="MAX_DELAY", max_delay=5_000))
    h.feed([ins(1_000, 1)], now=100_000)
    assert h.rows() == []
    h.tick(now=104_999)
    assert h.rows() == []
    h.tick(now=105_000)
    assert h.rows() == [(0, {"cnt": 1, "s": 1, "mn": 1, "mx": 1})]
    out = h.tick(now=200_000)  # no new change: nothing written again
    assert len(out.upserts) == 0
    h.feed([ins(2_000, 2)], now=201_000)
    h.feed([ins(12_000, 3)], now=202_000)  # closes [0, 10s): written at once, before the delay
    assert h.rows()[0] == (0, {"cnt": 2, "s": 3, "mn": 1, "mx": 2})


def test_force_window_close_closes_by_the_clock_and_drops_rows_of_closed_windows():
    h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="FORCE_WINDOW_CLOSE"))
    h.feed([ins(1_000, 1), ins(3_000, 2)], now=5_000)
    assert h.rows() == []
    h.tick(now=10_000)  # the clock reaches the end of [0, 10s): computed once
    assert h.rows() == [(0, {"cnt": 2, "s": 3, "mn": 1, "mx": 2})]
    out = h.feed([ins(4_000, 9)], now=11_000)  # too late: not recalculated
    assert out.stats["rows_expired"] == 1
    assert h.rows() == [(0, {"cnt": 2, "s": 3, "mn": 1, "mx": 2})]


def test_continuous_window_close_defers_recalculation_to_the_period():
    rules = StreamRules(mode="CONTINUOUS_WINDOW_CLOSE", ignore_update=False, recalc_every=60_000)
    h = Harness(IntervalAssigner(10_000, 10_000), rules)
    h.feed([ins(1_000, 1), ins(2_000, 2), ins(15_000, 3)], now=0)
    assert h.rows() == [(0, {"cnt": 2, "s": 3, "mn": 1, "mx": 2})]
    h.feed([("[]", 2_000, 2, DELETE)], now=30_000)  # not recalculated yet
    assert h.rows()[0][1]["cnt"] == 2
    back = StreamState.from_bytes(h.engine.aggs, h.state.to_bytes())  # pending survives restarts
    assert back.pending == {(0, 0)}
    h.state = back
    h.tick(now=60_000)
    assert h.rows()[0][1] == {"cnt": 1, "s": 1, "mn": 1, "mx": 1}


def test_ek009_tumbling_window_ekuiper_lateness_first_start_and_where():
    # TUMBLINGWINDOW(ss, 1), WHERE size > 2 (keep), watermark 1 s, eKuiper lateness (ek-009)
    h = Harness(
        IntervalAssigner(1_000, 1_000),
        StreamRules(mode="WINDOW_CLOSE", watermark=1_000, late_by_watermark=True),
    )
    h.engine.first_start_at_first_row = True
    rows = [(1541152486013, 3), (1541152487632, 2), (1541152489252, 1), (1541152486822, 6),
            (1541152488442, 4), (1541152492342, 4)]  # fmt: skip
    expired = 0
    for ts, size in rows:
        expired += h.feed([ins(ts, size)], keep=[size > 2]).stats["rows_expired"]
    assert expired == 1  # 486822 arrives at watermark 488252
    assert [(w, v["cnt"], v["s"]) for w, v in h.rows()] == [(1541152486013, 1, 3), (1541152488000, 1, 4)]


def test_processing_time_windows_close_by_the_clock():
    h = Harness(IntervalAssigner(10_000, 10_000), StreamRules(mode="WINDOW_CLOSE", processing_time=True))
    h.feed([ins(1_000, 1)], now=1_000)
    h.tick(now=9_999)
    assert h.rows() == []
    h.tick(now=10_000)
    assert h.rows() == [(0, {"cnt": 1, "s": 1, "mn": 1, "mx": 1})]


def test_reads_issue_2_checkpoints():
    import struct

    import pyarrow as pa

    from spark_workers.engine.stream import _ipc

    groups = pa.table({"gkey": pa.array(['["a"]'], pa.string()), "max_ts": np.array([5], np.int64)})
    st = StreamState(AGGS)
    cols = {"gid": st.open.gid, "wkey": st.open.wkey, **st.open.cols}
    parts = [_ipc(groups), _ipc(pa.table(cols))]
    blob = struct.pack("<III", 1, len(parts[0]), len(parts[1])) + parts[0] + parts[1]
    back = StreamState.from_bytes(AGGS, blob)
    assert back.gkeys == ['["a"]'] and back.max_ts.tolist() == [5] and back.first_ts.tolist() == [I64_MIN]
