"""Seed 002's engine options on the INTERVAL engine: windows without rows fire by default
(``StreamRules.fire_empty``: INTERVAL / SLIDING triggers without IGNORE_NODATA_TRIGGER), EXPIRED_TIME
per trigger group, WINDOW_INVALIDATION of recalculated windows.

Expected values come from a brute-force loop over every window start (independent of the engine's
vectorized enumeration) or are worked out by hand in the comments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spark_workers.engine.rows import DELETE
from spark_workers.engine.segments import SegmentSpec
from spark_workers.engine.stream import StreamRules
from spark_workers.engine.windows import DailyAssigner, IntervalAssigner
from spark_workers.errors import SqlError
from tests.engine.test_interval_stream import Harness, brute_force_windows, ins
from tests.engine.test_segments import Harness as SegHarness
from tests.engine.test_segments import dele as seg_del
from tests.engine.test_segments import ins as seg_ins

EMPTY = {"cnt": 0, "s": None, "mn": None, "mx": None}


def expected_with_empty(rows, size, step, offset, latest, first, watermark=0):
    """Every window from the first one holding ``first`` whose end is at or before
    ``latest - watermark``, with its aggregates (empty windows: count 0, the rest NULL)."""
    full = brute_force_windows(rows, size, step, offset)
    w = (first - offset) // step * step + offset
    while w - step + size > first:  # the earliest window still holding the first row
        w -= step
    out = {}
    while w + size <= latest - watermark:
        out[w] = full.get(("[]", w), EMPTY)
        w += step
    return out


@pytest.mark.parametrize(
    ("size", "step", "offset", "watermark"),
    [(10, 10, 0, 0), (10, 10, 3, 0), (10, 4, 0, 0), (10, 4, 1, 5), (7, 7, 0, 2)],
)
def test_windows_without_rows_fire_from_the_first_window(size, step, offset, watermark):
    h = Harness(IntervalAssigner(size, step, offset), StreamRules(watermark=watermark, fire_empty=True))
    rows = [ins(12, 1), ins(13, 2), ins(47, 5), ins(49, 1), ins(95, 7)]
    for r in rows:  # one micro-batch per row: the gaps close in several steps
        h.feed([r])
    got = dict(h.rows())
    assert got == expected_with_empty(rows, size, step, offset, latest=95, first=12, watermark=watermark)
    assert any(v["cnt"] == 0 for v in got.values())  # the gap 13..47 leaves empty windows


def test_empty_windows_per_group_start_at_the_groups_first_row():
    h = Harness(IntervalAssigner(10, 10), StreamRules(fire_empty=True))
    h.feed([ins(5, 1, "a"), ins(41, 1, "b")])
    h.feed([ins(44, 1, "a"), ins(62, 1, "b")])
    # group a: [0,10) 1 row, [10,20) [20,30) [30,40) empty; [40,50) open (latest 44)
    assert [w for w, _ in h.rows("a")] == [0, 10, 20, 30]
    assert [v["cnt"] for _, v in h.rows("a")] == [1, 0, 0, 0]
    # group b: nothing before its first row at 41; [40,50) 1 row, [50,60) empty
    assert [(w, v["cnt"]) for w, v in h.rows("b")] == [(40, 1), (50, 0)]


def test_without_fire_empty_only_windows_with_rows_fire():
    h = Harness(IntervalAssigner(10, 10), StreamRules())
    h.feed([ins(5, 1), ins(41, 1)])
    assert [w for w, _ in h.rows()] == [0]


def test_empty_windows_notify_open_and_close():
    h = Harness(IntervalAssigner(10, 10), StreamRules(fire_empty=True, notify_open=True, notify_close=True))
    h.feed([ins(5, 1)])
    h.feed([ins(31, 1)])
    kinds = [(e.kind, e.wstart, e.wend) for e in h.events]
    assert kinds == [
        ("WINDOW_OPEN", 0, 10),
        ("WINDOW_OPEN", 30, 40),
        ("WINDOW_OPEN", 10, 20),
        ("WINDOW_OPEN", 20, 30),
        ("WINDOW_CLOSE", 0, 10),
        ("WINDOW_CLOSE", 10, 20),
        ("WINDOW_CLOSE", 20, 30),
    ]


def test_a_row_far_ahead_is_refused_rather_than_firing_millions_of_windows():
    h = Harness(IntervalAssigner(1, 1), StreamRules(fire_empty=True))
    h.feed([ins(0, 1)])
    with pytest.raises(SqlError, match="IGNORE_NODATA_TRIGGER"):
        h.feed([ins(20_000_000, 1)])


def test_expired_time_is_judged_per_group_against_its_latest_row():
    # EXPIRED_TIME(30) with recalculation of late rows (3.3.7 default): a row older than the
    # group's latest time minus 30 is ignored; a late row within it recalculates its window
    rules = StreamRules(ignore_expired=False, ignore_update=False, expired_time=30)
    h = Harness(IntervalAssigner(10, 10), rules)
    h.feed([ins(1, 1), ins(55, 1)])  # latest 55: threshold 25
    h.feed([ins(2, 100)])  # 2 < 25: expired, window [0,10) keeps 1 row
    h.feed([ins(33, 100)])  # 33 >= 25: late, [30,40) recalculated with it
    got = {w: (v["cnt"], v["s"]) for w, v in h.rows()}
    assert got == {0: (1, 1), 30: (1, 100)}  # [50,60) is still open
    # an expired delete recalculates nothing either
    h.feed([("[]", 1, None, DELETE)])
    assert {w: v["cnt"] for w, v in h.rows()}[0] == 1


def test_expired_time_without_partition_is_one_threshold_for_all_subtables():
    # the stage-1 group of a stream without PARTITION BY is one key for every subtable: a row of
    # subtable B is expired against subtable A's latest row (seed 002 "Expired Data": per group)
    rules = StreamRules(ignore_expired=False, ignore_update=False, expired_time=30)
    h = Harness(IntervalAssigner(10, 10), rules)
    frame = pd.DataFrame({"table": ["a", "a", "b", "b"], "ts": [0, 80, 20, 60], "a": [1, 1, 5, 7]})
    for _, r in frame.iterrows():
        h.feed([ins(int(r.ts), int(r.a))])
    latest_before = frame.ts.cummax().shift(1)
    kept = frame[(latest_before.isna()) | (frame.ts >= latest_before - 30)]
    want = kept.assign(w=kept.ts // 10 * 10).groupby("w").a.agg(["count", "sum"])
    want = want[want.index + 10 <= frame.ts.max()]
    got = {w: (v["cnt"], v["s"]) for w, v in h.rows()}
    assert got == {int(w): (int(r["count"]), int(r["sum"])) for w, r in want.iterrows()}
    assert 20 not in got  # subtable b's row at 20 came after a's 80: expired


def test_recalculated_closed_window_is_invalidated_then_closed_again():
    rules = StreamRules(ignore_expired=False, ignore_update=False, notify_close=True)
    h = Harness(IntervalAssigner(10, 10), rules)
    h.feed([ins(1, 1), ins(15, 1)])
    h.events.clear()
    h.feed([ins(3, 5)])  # late: [0,10) was closed and written
    assert [(e.kind, e.wstart, e.wend) for e in h.events] == [
        ("WINDOW_INVALIDATION", 0, 10),
        ("WINDOW_CLOSE", 0, 10),
    ]
    assert dict(h.rows())[0]["s"] == 6


H = 3_600_000
M = 60_000


@pytest.mark.parametrize("offset", [0, M])
def test_daily_sliding_points_follow_the_seeds_period_example(offset):
    # seed 002 "Scheduled Trigger": every 5h30m -> 00:00, 05:30, 11:00, 16:30, 22:00 each day;
    # with an offset of 1 minute 00:01, 05:31, 11:01, 16:31, 22:01
    a = DailyAssigner(5 * H + 30 * M, offset, 24 * H)
    day = 24 * H
    points = [0, 5 * H + 30 * M, 11 * H, 16 * H + 30 * M, 22 * H]
    points = [p + offset for p in points] + [day + p + offset for p in points] + [2 * day + offset]
    starts = a.starts_covering(offset, 2 * day + offset - 1)
    assert starts.tolist() == points[:-1]
    assert a.end(starts).tolist() == points[1:]
    rng = np.random.default_rng(7)
    ts = rng.integers(offset, 2 * day + offset, 500)
    got = a.last_start(ts)
    want = [max(p for p in points if p <= t) for t in ts.tolist()]
    assert got.tolist() == want


def test_daily_sliding_closing_windows_match_a_loop():
    a = DailyAssigner(7 * M, 0, 24 * H)
    floor = np.array([0, 23 * H + 55 * M], np.int64)
    horizon = np.array([H, 24 * H + 20 * M], np.int64)
    count, starts = a.closing_windows(floor, horizon, 10_000)
    want = []
    for f, hz in zip(floor.tolist(), horizon.tolist(), strict=True):
        w = int(a.last_start(np.array([f]))[0])
        run = []
        while int(a.end(np.array([w]))[0]) <= hz:
            run.append(w)
            w = int(a.end(np.array([w]))[0])
        want.append(run)
    assert count.tolist() == [len(r) for r in want]
    assert starts.tolist() == [w for r in want for w in r]
    assert 23 * H + 55 * M in starts.tolist()  # 1435 min = 205 * 7: the last, shorter window
    assert a.end(np.array([23 * H + 55 * M]))[0] == 24 * H  # ends at midnight, 5 min later


def test_expired_time_in_session_windows_ignores_old_rows_and_deletes():
    # SESSION(gap 10) recalculating late rows (3.3.7 default) with EXPIRED_TIME(30): a late row
    # within 30 of the group's latest re-segments; an older one, or an older delete, changes nothing
    rules = StreamRules(ignore_expired=False, ignore_update=False, expired_time=30)
    h = SegHarness(SegmentSpec("session", gap=10), rules)
    h.feed([seg_ins(0, a=1), seg_ins(5, a=1), seg_ins(40, a=1), seg_ins(60, a=1)])
    assert h.rows("[]", "cnt") == [(0, 2), (40, 1)]  # [60..] is open
    h.feed([seg_ins(12, a=1)])  # 12 < 60 - 30: expired, [0, 5] keeps 2 rows
    h.feed([seg_del(5)])  # expired delete: nothing recalculated
    h.feed([seg_ins(45, a=1)])  # 45 >= 30: late, [40, 45] recalculated
    assert h.rows("[]", "cnt") == [(0, 2), (40, 2)]
