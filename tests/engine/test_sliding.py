"""SlidingEngine: eKuiper's SLIDINGWINDOW with delay, OVER (WHEN ...), lateness, collected rows;
batch and stream agree (seed 003; eKuiper's window_op ``scan`` bounds)."""

from __future__ import annotations

import random

import numpy as np

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.rows import DELETE, INSERT, RowBatch
from spark_workers.engine.sliding import SlidingEngine, SlidingSpec, SlidingState, sliding_aggregate
from spark_workers.engine.stream import StreamRules

AGGS = [AggSpec("count", None, "cnt", "int"), AggSpec("sum", "a", "s", "int")]


def batch(rows, trigger=None):
    """rows: (gkey, ts, a[, change])"""
    n = len(rows)
    e = np.array([x[0] for x in rows], dtype=object)
    ts = np.array([x[1] for x in rows], np.int64)
    a = np.array([x[2] for x in rows], np.int64)
    ch = np.array([x[3] if len(x) > 3 else INSERT for x in rows], np.int8)
    extra = {}
    if trigger is not None:
        extra["trigger"] = (np.array(trigger, bool), np.ones(n, bool))
    return RowBatch(e, ts, {"a": (a, np.ones(n, bool))}, ch, np.zeros(n, bool), extra)


def run(spec, rules, feeds, aggs=AGGS, roundtrip=False):
    eng = SlidingEngine(spec, aggs, rules)
    st = eng.new_state(["a"])
    table = {}
    for rows, trig, now in feeds:
        out = eng.step(st, batch(rows, trig), None, now)
        for i in range(len(out.upserts)):
            u = out.upserts
            table[(u.gkey[i], int(u.wstart[i]))] = (int(u.wend[i]), *(v[i] for v, _ in u.values.values()))
        if roundtrip:
            st = SlidingState.from_bytes(["a"], st.to_bytes())
    return table


def test_every_row_triggers_a_window_of_the_last_size_inclusive():
    feeds = [([("[]", t, t)], None, None) for t in (0, 4, 10, 11, 25)]
    got = run(SlidingSpec(size=10), StreamRules(mode="WINDOW_CLOSE"), feeds)
    # window for t: [t - 10, t] (both ends inclusive without a delay)
    assert got == {
        ("[]", -10): (0, 1, 0),
        ("[]", -6): (4, 2, 4),
        ("[]", 0): (10, 3, 14),
        ("[]", 1): (11, 3, 25),
        ("[]", 15): (25, 1, 25),
    }


def test_delay_waits_for_later_rows_and_excludes_the_right_bound():
    feeds = [([("[]", 10, 1)], None, None), ([("[]", 13, 2)], None, None), ([("[]", 15, 4)], None, None)]
    got = run(SlidingSpec(size=5, delay=5), StreamRules(mode="WINDOW_CLOSE"), feeds)
    # t=10 fires when T >= 15, holding [5, 15): rows 10 and 13, not 15
    assert got == {("[]", 5): (15, 2, 3)}


def test_over_when_selects_the_triggering_rows_and_watermark_drops_late_rows():
    rules = StreamRules(mode="WINDOW_CLOSE", watermark=2)
    feeds = [
        ([("[]", 1, 1), ("[]", 2, 2)], [False, True], None),  # t=2 waits for T >= 2 (latest 4)
        ([("[]", 6, 3)], [False], None),
        ([("[]", 3, 100)], [True], None),  # 3 < 6 - 2: late, dropped (and its trigger)
    ]
    got = run(SlidingSpec(size=5), rules, feeds)
    assert got == {("[]", -3): (2, 2, 3)}


def test_collected_rows_without_aggregates():
    aggs = [AggSpec("rows", None, "_rows", columns=("a",))]
    feeds = [([("[]", 1, 7), ("[]", 3, 8)], [False, True], None)]
    got = run(SlidingSpec(size=5), StreamRules(mode="WINDOW_CLOSE"), feeds, aggs)
    assert got == {("[]", -2): (3, [(1, 7), (3, 8)])}


def test_deleted_buffered_row_leaves_the_window():
    feeds = [
        ([("[]", 1, 1), ("[]", 2, 2)], [False, False], None),
        ([("[]", 2, 2, DELETE)], [False], None),
        ([("[]", 3, 3)], [True], None),
    ]
    assert run(SlidingSpec(size=5), StreamRules(mode="WINDOW_CLOSE"), feeds) == {("[]", -2): (3, 2, 4)}


def test_processing_time_fires_by_the_clock():
    feeds = [([("[]", 100, 1)], None, 100), ([], None, 104), ([], None, 105)]
    rules = StreamRules(mode="WINDOW_CLOSE", processing_time=True)
    assert run(SlidingSpec(size=10, delay=5), rules, feeds) == {("[]", 90): (105, 1, 1)}


def test_stream_in_any_split_equals_the_batch_query():
    rng = random.Random(3)
    rows, t = [], 0
    for _ in range(200):
        t += rng.randint(0, 3)
        rows.append((f'["g{rng.randrange(3)}"]', t, rng.randint(-9, 9)))
    rows = list({(x[0], x[1]): x for x in rows}.values())
    trig = [rng.random() < 0.5 for _ in rows]
    spec = SlidingSpec(size=7, delay=2)
    want = sliding_aggregate(spec, AGGS, batch(rows, trig))
    want_t = {
        (want.gkey[i], int(want.wstart[i])): (
            int(want.wend[i]),
            int(want.values["cnt"][0][i]),
            int(want.values["s"][0][i]),
        )
        for i in range(len(want))
    }
    for _ in range(10):
        cuts = sorted(rng.sample(range(1, len(rows)), 15))
        feeds = [
            (rows[lo:hi], trig[lo:hi], None) for lo, hi in zip([0, *cuts], [*cuts, len(rows)], strict=True)
        ]
        feeds.append(([(g, 10**6, 0) for g in ('["g0"]', '["g1"]', '["g2"]')], [False] * 3, None))
        got = run(spec, StreamRules(mode="WINDOW_CLOSE"), feeds, roundtrip=True)
        assert {k: (v[0], int(v[1]), int(v[2])) for k, v in got.items()} == want_t
