"""IntervalEngine's dropped-row counters for "why no output?" (``drop_stats``), against a plain
per-row replay of seed 000's rules: each row is judged against the latest event time of its
group's rows that came before it (``prev``); its window [k*10, k*10+10) is closed when
``end <= prev - WATERMARK`` ("Window Closure"), so with IGNORE EXPIRED 1 the row is dropped
("Expired Data"); beyond DELETE_MARK when ``end <= prev - DELETE_MARK``; out of order when
``ts < prev``; filtered rows (FILTER / WHERE) still advance the latest event time."""

from __future__ import annotations

import numpy as np
import pytest

from spark_workers.engine.rows import INSERT
from spark_workers.engine.stream import StreamRules
from spark_workers.engine.windows import IntervalAssigner
from tests.engine.test_interval_stream import Harness

SIZE = 10


def replay(
    batches: list[tuple[list[tuple], list[bool]]], watermark: int, delete_mark: int
) -> dict[str, object]:
    """The counters by hand, one row at a time in arrival order."""
    latest: dict[str, int] = {}
    n = {"expired": 0, "beyond": 0, "disordered": 0, "filtered": 0}
    expired_ts: list[int] = []
    for rows, keep in batches:
        for (g, ts, _a, _ch), kept in zip(rows, keep, strict=True):
            prev = latest.get(g)
            if not kept:
                n["filtered"] += 1
            elif prev is not None:
                end = ts // SIZE * SIZE + SIZE
                n["disordered"] += ts < prev
                if end <= prev - watermark:
                    n["expired"] += 1
                    expired_ts.append(ts)
                    n["beyond"] += end <= prev - delete_mark
            latest[g] = ts if prev is None else max(prev, ts)
    return {**n, "first": min(expired_ts, default=None), "last": max(expired_ts, default=None)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_drop_counters_match_a_row_by_row_replay(seed: int) -> None:
    rng = np.random.default_rng(seed)
    watermark, delete_mark = 15, 60
    h = Harness(
        IntervalAssigner(SIZE, SIZE),
        StreamRules(mode="WINDOW_CLOSE", watermark=watermark, ignore_expired=True, delete_mark=delete_mark),
    )
    batches = []
    for b in range(6):
        ts = rng.integers(b * 30, b * 30 + 120, size=25)  # drifting forward, often behind
        groups = rng.choice(["g1", "g2", "g3"], size=25)
        rows = [(str(g), int(t), int(t) % 7, INSERT) for g, t in zip(groups, ts, strict=True)]
        batches.append((rows, [bool(k) for k in rng.random(25) > 0.2]))
    got = {"expired": 0, "beyond": 0, "disordered": 0, "filtered": 0}
    first: list[int] = []
    last: list[int] = []
    for rows, keep in batches:
        s = h.feed(rows, keep=keep).stats
        got["expired"] += s["rows_expired"]
        got["beyond"] += s["rows_beyond_delete_mark"]
        got["disordered"] += s["rows_disordered"]
        got["filtered"] += s["rows_filtered"]
        first += [s["dropped_first"]] if s["dropped_first"] is not None else []
        last += [s["dropped_last"]] if s["dropped_last"] is not None else []
    want = replay(batches, watermark, delete_mark)
    assert got == {k: want[k] for k in got}
    assert want["expired"] and want["beyond"] and want["filtered"]  # the case exercises each counter
    assert min(first) == want["first"] and max(last) == want["last"]


def test_open_window_end_is_what_closes_the_earliest_open_window() -> None:
    h = Harness(IntervalAssigner(SIZE, SIZE), StreamRules(mode="WINDOW_CLOSE", watermark=5))
    s = h.feed([("g1", 12, 1, INSERT), ("g2", 47, 1, INSERT), ("g1", 33, 1, INSERT)]).stats
    # g1 at 33 with WATERMARK 5: [10, 20) closed (20 <= 28), [30, 40) open; g2: [40, 50) open
    assert s["open_windows"] == 2 and s["open_wend_min"] == 40
    s = h.feed([("g1", 45, 1, INSERT), ("g2", 55, 1, INSERT)]).stats
    # g1 at 45: [30, 40) closes (40 <= 40), [40, 50) opens; g2 at 55: [40, 50) closes (50 <= 50)
    assert s["open_windows"] == 2 and s["open_wend_min"] == 50
