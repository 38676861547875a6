"""SegmentEngine: SESSION, STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW and eKuiper's SESSIONWINDOW /
COUNTWINDOW, in streams and in batch.

Two kinds of checks:

- hand-checked scenarios mirroring the shared acceptance cases (td-002, td-008, td-009, td-011a,
  ek-011) and the rules of seed 000 (expiry, DELETE_MARK, deletes, NULLs, trigger modes);
- an invariant against an independent reference: in AT_ONCE mode with nothing expiring, the output
  table after every micro-batch equals the windows of the lake's current rows, computed by a
  plain loop written separately from the engine (``reference``), whatever the order of writes,
  updates and deletes.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.rows import DELETE, INSERT, UPDATE_POST, UPDATE_PRE, RowBatch
from spark_workers.engine.segments import (
    RETAIN_BOUNDS,
    RETAIN_CLOSED,
    SegmentEngine,
    SegmentSpec,
    SegmentState,
    segment_aggregate,
)
from spark_workers.engine.stream import StreamRules

COLS = ("a", "b", "c", "d", "id")
AGGS = [
    AggSpec("count", None, "cnt", "int"),
    AggSpec("count", "a", "ca", "int"),
    AggSpec("sum", "a", "sa", "int"),
    AggSpec("max", "a", "mxa", "int"),
    AggSpec("min", "d", "mnd", "float"),
    AggSpec("stddev", "a", "sda", "int"),
    AggSpec("last", "a", "la", "int"),
    AggSpec("first", "d", "fd", "float"),
    AggSpec("sum", "b", "sb", "int"),
    AggSpec("max", "c", "mxc", "int"),
    AggSpec("min", "c", "mnc", "int"),
    AggSpec("count", "d", "cd", "int"),
    AggSpec("max", "id", "mxid", "int"),
]
Row = dict[str, Any]
Extras = Callable[[Row], dict[str, Any]]


def no_extras(_row: Row) -> dict[str, Any]:
    return {}


def state_of(col: str) -> Extras:
    return lambda r: {"state": r.get(col)}


def event_on(start: Callable[[Row], bool | None], end: Callable[[Row], bool | None], cols=("a",)) -> Extras:
    def f(r: Row) -> dict[str, Any]:
        out: dict[str, Any] = {"start": start(r), "end": end(r)}
        for c in cols:
            out[f"cond.start.{c}"] = r.get(c)
            out[f"cond.end.{c}"] = r.get(c)
        return out

    return f


class Lake:
    """Rows keyed by (group, ts), with the change feed a Delta table would give."""

    def __init__(self, extras: Extras) -> None:
        self.rows: dict[tuple[str, int], Row] = {}
        self.extras = extras

    def write(self, ops: list[tuple]) -> list[tuple[str, int, Row, int]]:
        """ops: ("ins", g, ts, row) or ("del", g, ts). Returns change records."""
        changes = []
        for op in ops:
            if op[0] == "ins":
                _, g, ts, row = op
                old = self.rows.get((g, ts))
                if old is None:
                    changes.append((g, ts, row, INSERT))
                else:
                    changes += [(g, ts, old, UPDATE_PRE), (g, ts, row, UPDATE_POST)]
                self.rows[(g, ts)] = row
            else:
                _, g, ts = op
                old = self.rows.pop((g, ts), None)
                if old is not None:
                    changes.append((g, ts, old, DELETE))
        return changes

    def read(self, gkeys: list[str], ts_from: int) -> RowBatch:
        sel = sorted((g, ts, r) for (g, ts), r in self.rows.items() if g in gkeys and ts >= ts_from)
        return to_batch([(g, ts, r, INSERT) for g, ts, r in sel], self.extras)


def to_batch(changes: list[tuple[str, int, Row, int]], extras: Extras) -> RowBatch:
    n = len(changes)
    g = np.array([c[0] for c in changes], dtype=object)
    ts = np.array([c[1] for c in changes], np.int64)
    ch = np.array([c[3] for c in changes], np.int8)
    inputs = {}
    for col in COLS:
        vals = [c[2].get(col) for c in changes]
        dt = np.float64 if col == "d" else np.int64
        inputs[col] = (
            np.array([0 if v is None else v for v in vals], dt),
            np.array([v is not None for v in vals]),
        )
    extra: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    ex = [extras(c[2]) for c in changes]
    for k in ex[0] if ex else {}:
        vals = [e[k] for e in ex]
        arr = np.array([0 if v is None else v for v in vals])
        extra[k] = (arr, np.array([v is not None for v in vals]))
    extra["keep"] = (np.array([c[2].get("keep", True) for c in changes], bool), np.ones(n, bool))
    return RowBatch(g, ts, inputs, ch, np.zeros(n, bool), extra)


class Harness:
    """An engine, a lake, and the output table a sink would maintain."""

    def __init__(self, spec: SegmentSpec, rules: StreamRules, extras: Extras = no_extras, aggs=AGGS) -> None:
        self.engine = SegmentEngine(spec, aggs, rules)
        self.state = self.engine.new_state()
        self.lake = Lake(extras)
        self.extras = extras
        self.table: dict[tuple[str, int], Row] = {}
        self.events: list = []
        self.outputs: list = []

    def feed(self, ops: list[tuple], now: int | None = None, roundtrip: bool = False):
        changes = self.lake.write(ops)
        out = self.engine.step(self.state, to_batch(changes, self.extras), self.lake.read, now)
        self.apply(out)
        if roundtrip:
            self.state = SegmentState.from_bytes(self.engine.aggs, self.state.to_bytes())
        return out

    def tick(self, now: int):
        out = self.engine.step(self.state, to_batch([], self.extras), self.lake.read, now)
        self.apply(out)
        return out

    def apply(self, out) -> None:
        u = out.upserts
        for i in range(len(u)):
            vals = {k: (v[i].item() if ok[i] else None) for k, (v, ok) in u.values.items()}
            vals["_wend"] = int(u.wend[i])
            self.table[(u.gkey[i], int(u.wstart[i]))] = vals
        for k in out.removals:
            self.table.pop(k, None)
        self.events += out.events
        self.outputs.append(out)

    def rows(self, g: str = "[]", *cols: str) -> list:
        cols = cols or ("cnt",)
        return [(w, *(v[c] for c in cols)) for (gk, w), v in sorted(self.table.items()) if gk == g]


def ins(ts: int, g: str = "[]", **row: Any) -> tuple:
    return ("ins", g, ts, row)


def dele(ts: int, g: str = "[]") -> tuple:
    return ("del", g, ts)


def r(a=None, b=None, c=None, d=None, id=None, **more) -> Row:
    return {"a": a, "b": b, "c": c, "d": d, "id": id, **more}


# --------------------------------------------------------------------------- acceptance mirrors


def test_td002_count_window_at_once():
    h = Harness(SegmentSpec("count", count=3), StreamRules(mode="AT_ONCE", watermark=100_000))
    rows = [
        (1648791213000, r(0, 1, 1, 1.0)),
        (1648791213001, r(9, 2, 2, 1.1)),
        (1648791213009, r(0, 3, 3, 1.0)),
        (1648791223000, r(0, 1, 1, 1.0)),
        (1648791223001, r(9, 2, 2, 1.1)),
        (1648791223009, r(0, 3, 3, 1.0)),
    ]
    for ts, row in rows:  # one write per micro-batch, as the acceptance case does
        h.feed([ins(ts, **row)])
    assert h.rows("[]", "cnt", "sb", "mxc") == [(1648791213000, 3, 6, 3), (1648791223000, 3, 6, 3)]


def test_count_window_at_once_writes_partial_window_then_full():
    h = Harness(SegmentSpec("count", count=3), StreamRules(mode="AT_ONCE"))
    h.feed([ins(1, a=1), ins(2, a=2)])
    assert h.rows("[]", "cnt", "sa") == [(1, 2, 3)]
    h.feed([ins(3, a=3), ins(4, a=4)])
    assert h.rows("[]", "cnt", "sa") == [(1, 3, 6), (4, 1, 4)]


def test_count_window_with_sliding_and_trailing_windows_in_batch():
    # COUNT_WINDOW(4, 2) over 10 rows: windows start at rows 0, 2, 4, 6, 8 (seed 000: the last
    # windows hold fewer rows)
    rows = to_batch([("[]", t, r(a=t), INSERT) for t in range(10)], no_extras)
    res = segment_aggregate(SegmentSpec("count", count=4, sliding=2), AGGS, rows)
    assert res.wstart.tolist() == [0, 2, 4, 6, 8]
    assert res.values["cnt"][0].tolist() == [4, 4, 4, 4, 2]
    assert res.values["sa"][0].tolist() == [6, 14, 22, 30, 17]
    assert res.wend.tolist() == [3, 5, 7, 9, 9]


def test_td008_session_merges_out_of_order_rows_and_updates_overwrite():
    h = Harness(SegmentSpec("session", gap=10_000), StreamRules(mode="AT_ONCE"))
    h.feed([ins(1648791213000, **r(id=1))])
    h.feed([ins(1648791223001, **r(10, 2, 3, 1.1, 2))])
    h.feed([ins(1648791233002, **r(3, 2, 3, 2.1, 3))])
    h.feed([ins(1648791243003, **r(id=4))])
    assert len(h.rows()) == 4  # every gap is 10001 ms > 10 s
    h.feed([ins(1648791213002, **r(id=5)), ins(1648791233012, **r(id=6))])
    cols = ("cnt", "sa", "mxa", "mnd", "sda", "la", "fd", "mxid")
    got = sorted(h.rows("[]", *cols), key=lambda x: -x[-1])
    assert [x[1:] for x in got] == [(3, 3, 3, 2.1, 0.0, 3, 2.1, 6), (3, 10, 10, 1.1, 0.0, 10, 1.1, 5)]
    assert len(got) == 2  # the merged-away windows were removed from the output
    for ts, row in [
        (1648791213000, r(1, 2, 3, 1.0, 7)),
        (1648791223001, r(2, 2, 3, 1.1, 8)),
        (1648791233002, r(3, 2, 3, 2.1, 9)),
        (1648791243003, r(4, 2, 3, 3.1, 10)),
        (1648791213002, r(4, 2, 3, 4.1, 11)),
    ]:
        h.feed([ins(ts, **row)])
    h.feed([ins(1648791213002, **r(4, 2, 3, 4.1, 12)), ins(1648791223009, **r(4, 2, 3, 4.1, 13))])
    (only,) = h.rows("[]", *cols)
    assert only[1:6] == (7, 18, 4, 1.0, pytest.approx(1.154700538))
    assert only[6:] == (4, 1.0, 13)
    assert h.table[("[]", 1648791213000)]["_wend"] == 1648791243003 + 10_000  # last row + tol


def test_td009_state_window_updates_split_and_merge():
    h = Harness(SegmentSpec("state"), StreamRules(mode="AT_ONCE"), state_of("a"))
    cols = ("cnt", "cd", "sa", "mxa", "mnc", "mxid")

    def by_id(*ids):
        return [x[1:] for x in h.rows("[]", *cols) if x[-1] in ids]

    h.feed([ins(1648791213000, **r(1, 2, 3, 1.0, 1))])
    h.feed([ins(1648791213000, **r(1, 2, 3, 1.0, 2))])
    assert len(h.table) == 1
    h.feed([ins(1648791214000, **r(1, 2, 3, 1.0, 3))])
    assert len(h.table) == 1
    h.feed([ins(1648791213010, **r(2, 2, 3, 1.0, 4))])
    h.feed([ins(1648791213000, **r(1, 2, 3, 1.0, 5))])
    h.feed([ins(1648791214000, **r(1, 2, 3, 1.0, 6))])
    assert by_id(4, 5, 6) == [(1, 1, 1, 1, 3, 5), (1, 1, 2, 2, 3, 4), (1, 1, 1, 1, 3, 6)]
    assert len(h.table) == 3
    h.feed([ins(1648791213011, **r(1, 2, 3, 1.0, 7))])
    assert by_id(7) == [(2, 2, 2, 1, 3, 7)]  # 213011 a=1 merges with 214000 a=1
    h.feed([ins(1648791213011, **r(1, 2, 3, 1.0, 8))])
    assert by_id(8) == [(2, 2, 2, 1, 3, 8)]
    for ts, row in [
        (1648791213020, r(1, 2, 3, 1.0, 9)),
        (1648791213020, r(3, 2, 3, 1.0, 10)),
        (1648791214000, r(1, 2, 3, 1.0, 11)),
        (1648791213011, r(10, 20, 10, 10.0, 12)),
    ]:
        h.feed([ins(ts, **row)])
    assert by_id(5, 4, 10, 11, 12) == [
        (1, 1, 1, 1, 3, 5),
        (1, 1, 2, 2, 3, 4),
        (1, 1, 10, 10, 10, 12),
        (1, 1, 3, 3, 3, 10),
        (1, 1, 1, 1, 3, 11),
    ]
    h.feed([ins(1648791213030, **r(3, 12, 12, 12.0, 13))])
    h.feed([ins(1648791214040, **r(1, 13, 13, 13.0, 14))])
    h.feed([ins(1648791213030, **r(3, 14, 14, 14.0, 15)), ins(1648791214020, **r(15, 15, 15, 15.0, 16))])
    assert by_id(14, 15, 16) == [(2, 2, 6, 3, 3, 15), (1, 1, 15, 15, 15, 16), (1, 1, 1, 1, 13, 14)]
    # the derived window list of the acceptance notes, and nothing stale
    assert [(w, x[-1]) for w, *x in h.rows("[]", *cols)] == [
        (1648791213000, 5),
        (1648791213010, 4),
        (1648791213011, 12),
        (1648791213020, 15),
        (1648791214000, 11),
        (1648791214020, 16),
        (1648791214040, 14),
    ]


def test_td011a_event_windows_are_written_only_when_closed():
    spec = SegmentSpec("event", emit_open=False)
    h = Harness(
        spec,
        StreamRules(mode="AT_ONCE", ignore_expired=False, ignore_update=False),
        event_on(lambda x: x["a"] == 0, lambda x: x["a"] == 9),
    )
    h.feed([ins(1648791213000, **r(0, 1, 1, 1.0))])
    h.feed([ins(1648791223001, **r(9, 2, 2, 1.1))])
    h.feed([ins(1648791213009, **r(0, 3, 3, 1.0))])
    assert h.rows("[]", "cnt", "sb", "mxc") == [(1648791213000, 3, 6, 3)]
    h.feed([ins(1648791243006, **r(1, 1, 1, 1.1))])
    h.feed([ins(1648791253000, **r(2, 2, 2, 1.1))])
    h.feed([ins(1648791243000, **r(0, 3, 3, 1.1))])  # opens a window that has not ended
    assert len(h.table) == 1
    h.feed([ins(1648791253009, **r(9, 4, 4, 1.1))])
    assert h.rows("[]", "cnt", "sb", "mxc") == [(1648791213000, 3, 6, 3), (1648791243000, 4, 10, 4)]


def test_ek011_session_window_timeout_max_duration_and_lateness():
    # SESSIONWINDOW(ss, 2, 1): max duration 2 s, timeout 1 s; watermark 1 s; eKuiper lateness
    h = Harness(
        SegmentSpec("ek_session", gap=1_000, max_duration=2_000, emit_open=False),
        StreamRules(mode="WINDOW_CLOSE", watermark=1_000, late_by_watermark=True),
        aggs=[AggSpec("count", None, "cnt", "int"), AggSpec("sum", "d", "temp", "float")],
    )
    temps = [
        (1541152486013, 25.5), (1541152487932, 28.1), (1541152486823, 27.5), (1541152489252, 25.5),
        (1541152488442, 27.4), (1541152490062, 26.2), (1541152491682, 28.9), (1541152490872, 26.8),
        (1541152492492, 29.1), (1541152494112, 30.9), (1541152493202, 32.2), (1541152499202, 32.2),
    ]  # fmt: skip
    expired = 0
    for ts, t in temps:
        expired += h.feed([ins(ts, d=t)]).stats["rows_expired"]
    assert expired == 1  # 486823 arrives when the watermark is 486932
    got = h.rows("[]", "cnt", "temp", "_wend")
    assert [(c, round(s, 1)) for _, c, s, _ in got] == [(1, 25.5), (3, 81.0), (5, 143.2), (1, 30.9)]
    # window ends: timeout after the last row, or the max-duration check that cut the window
    assert [w for *_, w in got] == [1541152487013, 1541152490000, 1541152494000, 1541152495112]


# --------------------------------------------------------------------------- rules


def test_state_window_ignores_null_states_and_notifies_states():
    rules = StreamRules(mode="WINDOW_CLOSE", notify_open=True, notify_close=True)
    h = Harness(SegmentSpec("state"), rules, state_of("c"))
    h.feed([ins(1, c=1, a=1), ins(2, c=None, a=2), ins(3, c=1, a=3), ins(4, c=2, a=4), ins(5, c=None, a=5)])
    # the NULL-state rows join no window and do not split the first one
    assert h.rows("[]", "cnt", "sa") == [(1, 2, 4)]
    opens = [
        (e.wstart, e.info.get("prev_state"), e.info.get("state")) for e in h.events if e.kind == "WINDOW_OPEN"
    ]
    assert opens == [(1, None, 1), (4, 1, 2)]
    (close,) = [e for e in h.events if e.kind == "WINDOW_CLOSE"]
    assert (close.wstart, close.wend, close.info["state"], close.info["next_state"]) == (1, 3, 1, 2)


def test_event_window_null_conditions_and_a_row_that_opens_and_closes():
    ev = event_on(
        lambda x: x["a"] is not None and x["a"] > 5, lambda x: x["b"] is not None and x["b"] > 5, ("a", "b")
    )
    h = Harness(
        SegmentSpec("event", emit_open=False),
        StreamRules(mode="AT_ONCE", notify_close=True, notify_open=True),
        ev,
    )
    h.feed(
        [ins(1, a=None, b=None), ins(2, a=7, b=9), ins(3, a=6, b=1), ins(4, a=None, b=None), ins(5, a=1, b=8)]
    )
    # row 2 opens and closes its own window; row 3 opens the next one, row 5 ends it
    assert h.rows("[]", "cnt", "sa") == [(2, 1, 7), (3, 3, 7)]
    closes = [(e.wstart, e.info["close_values"]) for e in h.events if e.kind == "WINDOW_CLOSE"]
    assert closes == [(2, {"a": 7, "b": 9}), (3, {"a": 1, "b": 8})]
    opens = [(e.wstart, e.info["open_values"]) for e in h.events if e.kind == "WINDOW_OPEN"]
    assert opens == [(2, {"a": 7, "b": 9}), (3, {"a": 6, "b": 1})]


def test_count_window_counts_only_rows_with_a_value_in_its_columns():
    ex: Extras = lambda x: {"count_valid": x["a"] is not None}  # noqa: E731
    h = Harness(SegmentSpec("count", count=2), StreamRules(mode="AT_ONCE"), ex)
    h.feed([ins(1, a=1), ins(2, a=None), ins(3, a=3), ins(4, a=4)])
    assert h.rows("[]", "cnt", "sa") == [(1, 2, 4), (4, 1, 4)]


def test_window_close_session_waits_for_the_watermark_and_expired_rows_are_dropped():
    for ignore_expired, expect in ((True, [(0, 2)]), (False, [(0, 3)])):
        h = Harness(
            SegmentSpec("session", gap=10),
            StreamRules(mode="WINDOW_CLOSE", watermark=5, ignore_expired=ignore_expired),
        )
        h.feed([ins(0, a=1), ins(5, a=2)])
        h.feed([ins(18, a=3)])  # cuts the session (gap 13 > 10); T = 13 < close 15: not final
        assert h.rows() == []
        h.feed([ins(21, a=4)])  # T = 16 > 15: [0, 5] is final
        assert h.rows() == [(0, 2)]
        out = h.feed([ins(7, a=5)])  # falls into the final session
        assert h.rows()[:1] == expect
        assert out.stats["rows_expired"] == (1 if ignore_expired else 0)


def test_out_of_order_row_within_watermark_merges_sessions():
    h = Harness(SegmentSpec("session", gap=10), StreamRules(mode="WINDOW_CLOSE", watermark=100))
    h.feed([ins(0, a=1), ins(30, a=2)])
    h.feed([ins(15, a=3)])  # bridges 0 and 30 (gaps 15 > 10... no: 15 - 0 = 15): stays apart
    h.feed([ins(8, a=4), ins(22, a=5)])  # 0-8-15-22-30: one session
    h.feed([ins(200, a=6)])  # T = 100: the session is final
    assert h.rows("[]", "cnt", "sa") == [(0, 5, 15)]


def test_delete_splits_a_session_and_removes_an_emptied_window():
    h = Harness(SegmentSpec("session", gap=10), StreamRules(mode="AT_ONCE", notify_close=True))
    h.feed([ins(0, a=1), ins(8, a=2), ins(16, a=3), ins(50, a=4)])
    assert h.rows("[]", "cnt") == [(0, 3), (50, 1)]
    h.feed([dele(8)])  # 0 and 16 are now 16 apart
    assert h.rows("[]", "cnt") == [(0, 1), (16, 1), (50, 1)]
    h.feed([dele(50)])
    assert h.rows("[]", "cnt") == [(0, 1), (16, 1)]
    invalidated = [(e.wstart, e.wend) for e in h.events if e.kind == "WINDOW_INVALIDATION"]
    # seed 000 / 002: a written window recalculated ([0, 16] + gap, split by the delete) or
    # removed ([50, 50] + gap) is invalidated with its old bounds
    assert invalidated == [(0, 26), (50, 60)]


def test_at_once_late_row_beyond_delete_mark_is_dropped():
    h = Harness(SegmentSpec("session", gap=10), StreamRules(mode="AT_ONCE", delete_mark=100))
    h.feed([ins(0, a=1), ins(500, a=2)])
    out = h.feed([ins(5, a=3)])  # 500 - 100 = 400 > 5: beyond DELETE_MARK
    assert out.stats["rows_expired"] == 1
    assert h.rows("[]", "cnt") == [(0, 1), (500, 1)]
    h.feed([ins(450, a=4)])  # within DELETE_MARK: recalculated
    assert h.rows("[]", "cnt") == [(0, 1), (450, 1), (500, 1)]


def test_changes_older_than_every_known_window_are_dropped():
    h = Harness(SegmentSpec("count", count=2), StreamRules(mode="AT_ONCE"))
    h.feed([ins(t, a=1) for t in range(0, 2 * (RETAIN_CLOSED + RETAIN_BOUNDS + 10))])
    assert h.state.groups[0].evicted
    before = dict(h.table)
    out = h.feed([dele(0)])
    assert out.stats["rows_expired"] == 0 and out.stats["recalculated"] == 0
    assert h.table == before


def test_late_row_far_behind_the_retained_windows_uses_their_bounds():
    # STATE_WINDOW over 200 windows; a late row splits window 10 (long evicted from the full list)
    h = Harness(SegmentSpec("state"), StreamRules(mode="AT_ONCE"), state_of("c"))
    h.feed([ins(t * 10, a=1, c=(t // 3) % 2) for t in range(600)])
    grp = h.state.groups[0]
    assert len(grp.windows) <= RETAIN_CLOSED + 1 and grp.bounds.shape[0] > 150 and not grp.evicted
    h.feed([ins(301, a=5, c=7)])  # inside window [300, 320] (c = 0): splits it in two
    rows = [(t, row) for (_, t), row in h.lake.rows.items()]
    want = reference(SegmentSpec("state"), rows, state_of("c"))
    got = {w: {k: v[k] for k in ("cnt", "sa", "mxa")} for (_, w), v in h.table.items()}
    assert got == want and got[301] == {"cnt": 1, "sa": 5, "mxa": 5}


def test_where_filtered_rows_advance_time_but_join_no_window():
    h = Harness(SegmentSpec("session", gap=10), StreamRules(mode="WINDOW_CLOSE"))
    h.feed([ins(0, a=1), ins(5, a=2, keep=False), ins(30, a=3, keep=False)])
    assert h.rows("[]", "cnt", "sa") == [(0, 1, 1)]  # closed by a filtered row's time


def test_processing_time_sessions_close_by_the_clock():
    h = Harness(SegmentSpec("session", gap=10), StreamRules(mode="WINDOW_CLOSE", processing_time=True))
    h.feed([ins(100, a=1), ins(104, a=2)], now=105)
    assert h.rows() == []
    h.tick(now=114)  # 104 + 10 = 114 is not passed yet
    assert h.rows() == []
    h.tick(now=115)
    assert h.rows("[]", "cnt") == [(100, 2)]


def test_max_delay_writes_an_open_window_after_the_delay():
    h = Harness(SegmentSpec("session", gap=1_000), StreamRules(mode="MAX_DELAY", max_delay=5_000))
    h.feed([ins(0, a=1)], now=10_000)
    assert h.rows() == []
    h.tick(now=14_000)
    assert h.rows() == []
    h.tick(now=15_000)
    assert h.rows("[]", "cnt") == [(0, 1)]
    n = len(h.outputs)
    h.tick(now=30_000)  # nothing changed since: nothing written again
    assert len(h.outputs[n].upserts) == 0
    h.feed([ins(500, a=2)], now=31_000)
    h.feed([ins(5_000, a=3)], now=32_000)  # ends the session: final, written at once
    assert h.rows("[]", "cnt") == [(0, 2)]


def test_ek_count_window_fires_every_interval_rows_once_full():
    # COUNTWINDOW(5, 2): fires at rows 6, 8, 10 (1-based) with the latest 5 rows (seed 003)
    h = Harness(
        SegmentSpec("ek_count", count=5, sliding=2, first=(-5) % 2, emit_open=False),
        StreamRules(mode="AT_ONCE"),
    )
    for t in range(1, 11):
        h.feed([ins(t, a=t)])
    assert h.rows("[]", "cnt", "sa") == [(2, 5, 20), (4, 5, 30), (6, 5, 40)]


def test_state_round_trip_mid_stream():
    rows = [(t, (t // 3) % 2) for t in range(20)]
    a = Harness(SegmentSpec("state"), StreamRules(mode="AT_ONCE"), state_of("c"))
    b = Harness(SegmentSpec("state"), StreamRules(mode="AT_ONCE"), state_of("c"))
    for t, c in rows:
        a.feed([ins(t, a=t, c=c)])
        b.feed([ins(t, a=t, c=c)], roundtrip=True)
    assert a.table == b.table and len(a.table) == 7


def test_open_window_memory_does_not_grow_with_rows():
    h = Harness(SegmentSpec("session", gap=10), StreamRules(mode="WINDOW_CLOSE"))
    sizes = []
    for i in range(5):
        out = h.feed([ins(t, a=1) for t in range(i * 1000, (i + 1) * 1000)])
        sizes.append(out.stats["state_bytes"])
    assert len(h.state.partials) == 1
    assert max(sizes) == min(sizes)


# --------------------------------------------------------------------------- reference invariant


def reference(spec: SegmentSpec, rows: list[tuple[int, Row]], extras: Extras) -> dict[int, dict]:
    """Windows of one group's rows by plain loops (seed 000 / seed 003 definitions)."""
    rows = sorted(rows, key=lambda x: x[0])
    windows: list[list[tuple[int, Row]]] = []
    k = spec.kind
    if k == "session":
        for t, row in rows:
            if windows and t - windows[-1][-1][0] <= spec.gap:
                windows[-1].append((t, row))
            else:
                windows.append([(t, row)])
    elif k == "state":
        prev = object()
        for t, row in rows:
            s = extras(row)["state"]
            if s is None:
                continue
            if windows and s == prev:
                windows[-1].append((t, row))
            else:
                windows.append([(t, row)])
            prev = s
    elif k == "event":
        cur = None
        for t, row in rows:
            e = extras(row)
            if cur is None and e["start"]:
                cur = []
            if cur is not None:
                cur.append((t, row))
                if e["end"]:
                    windows.append(cur)
                    cur = None
    elif k in ("count", "ek_count"):
        valid = [(t, row) for t, row in rows if extras(row).get("count_valid", True)]
        step = spec.step
        start = spec.first
        while start < len(valid):
            w = valid[start : start + spec.count]
            if k == "count" or len(w) == spec.count:
                windows.append(w)
            start += step
    out = {}
    for w in windows:
        a = [row["a"] for _, row in w if row.get("a") is not None]
        out[w[0][0]] = {"cnt": len(w), "sa": sum(a) if a else None, "mxa": max(a) if a else None}
    return out


KIND_CASES = [
    ("session", SegmentSpec("session", gap=3), no_extras),
    ("state", SegmentSpec("state"), state_of("c")),
    ("event", SegmentSpec("event", emit_open=False), event_on(lambda x: x["c"] == 0, lambda x: x["c"] == 2)),
    ("count", SegmentSpec("count", count=3), no_extras),
    ("count_sliding", SegmentSpec("count", count=4, sliding=3), no_extras),
]


def random_ops(rng: random.Random, n: int, groups: int, disorder: bool) -> list[list[tuple]]:
    """Micro-batches of writes (with late rows, rewrites and deletes when ``disorder``)."""
    batches, t = [], 0
    written: list[tuple[str, int]] = []
    for _ in range(n):
        ops = []
        for _ in range(rng.randint(1, 6)):
            g = f'["g{rng.randrange(groups)}"]'
            roll = rng.random()
            if disorder and written and roll < 0.15:
                gg, tt = rng.choice(written)
                ops.append(dele(tt, gg))
            elif disorder and written and roll < 0.35:
                gg, tt = rng.choice(written)
                ops.append(ins(tt, gg, a=rng.randint(-5, 5), c=rng.choice([0, 1, 2, None])))
            else:
                t += rng.randint(1, 4)
                ts = t - rng.randint(0, 8) if disorder else t
                c = rng.choice([0, 1, 2, None])
                ops.append(ins(ts, g, a=rng.choice([None, *range(-5, 6)]), c=c))
                written.append((g, ts))
        batches.append(ops)
    return batches


@pytest.mark.parametrize("disorder", [False, True], ids=["in-order", "late-updates-deletes"])
@pytest.mark.parametrize("name,spec,extras", KIND_CASES, ids=[c[0] for c in KIND_CASES])
def test_at_once_output_always_equals_the_windows_of_the_lake(name, spec, extras, disorder):
    for seed in range(12):
        rng = random.Random(seed)
        h = Harness(spec, StreamRules(mode="AT_ONCE", delete_mark=1 << 60), extras)
        for ops in random_ops(rng, 25, 3, disorder):
            h.feed(ops, roundtrip=rng.random() < 0.3)
            for g in {gk for gk, _ in h.lake.rows}:
                rows = [(t, row) for (gk, t), row in h.lake.rows.items() if gk == g]
                want = reference(spec, rows, extras)
                got = {
                    w: {k: v[k] for k in ("cnt", "sa", "mxa")} for (gk, w), v in h.table.items() if gk == g
                }
                assert got == want, f"seed {seed}, group {g}"


@pytest.mark.parametrize("name,spec,extras", KIND_CASES, ids=[c[0] for c in KIND_CASES])
def test_any_in_order_split_into_micro_batches_equals_the_batch_query(name, spec, extras):
    """The issue's property: rows fed in order, in any split, give the batch query's result."""
    rng = random.Random(7)
    rows = []
    t = 0
    for _ in range(120):
        t += rng.randint(1, 4)
        g = f'["g{rng.randrange(3)}"]'
        rows.append(ins(t, g, a=rng.choice([None, *range(-5, 6)]), c=rng.choice([0, 1, 2, None])))
    batch_spec = dataclasses.replace(spec)
    lake = Lake(extras)
    changes = lake.write(rows)
    expect = segment_aggregate(batch_spec, AGGS, to_batch(changes, extras))
    want = {
        (expect.gkey[i], int(expect.wstart[i])): int(expect.values["cnt"][0][i]) for i in range(len(expect))
    }
    for trial in range(20):
        cuts = sorted(rng.sample(range(1, len(rows)), rng.randint(0, 30)))
        h = Harness(spec, StreamRules(mode="AT_ONCE"), extras)
        for lo, hi in zip([0, *cuts], [*cuts, len(rows)], strict=True):
            h.feed(rows[lo:hi])
        got = {k: v["cnt"] for k, v in h.table.items()}
        assert got == want, f"trial {trial}"


# --------------------------------------------------------------------------- TRUE_FOR (seed 002)


def test_true_for_discards_short_state_windows_and_removes_one_a_delete_shortens():
    rules = StreamRules(mode="WINDOW_CLOSE", ignore_expired=False, ignore_update=False, notify_close=True)
    h = Harness(SegmentSpec("state", true_for=3_000), rules, state_of("a"))
    # a=1 lasts 0..4 s (4 s), a=2 lasts 5..6 s (1 s: too short), a=3 lasts 7..10 s, a=4 closes it
    h.feed([ins(t * 1000, a=1) for t in range(5)] + [ins(5000, a=2), ins(6000, a=2)])
    h.feed([ins(t * 1000, a=3) for t in (7, 8, 10)] + [ins(11_000, a=4)])
    assert h.rows("[]", "cnt", "_wend") == [(0, 5, 4000), (7000, 3, 10_000)]
    closes = [e.wstart for e in h.events if e.kind == "WINDOW_CLOSE"]
    assert closes == [0, 7000]  # no trigger for the short window
    # deleting the last row of [7 s, 10 s] leaves [7 s, 8 s]: shorter than TRUE_FOR, so removed
    h.feed([dele(10_000)])
    assert h.rows("[]", "cnt", "_wend") == [(0, 5, 4000)]
    assert [e.wstart for e in h.events if e.kind == "WINDOW_INVALIDATION"] == [7000]


def test_true_for_in_the_batch_query_and_on_event_windows():
    rows = [(t * 1000, r(a=a)) for t, a in enumerate([0, 5, 6, 0, 5, 0, 0, 7, 8, 9, 0])]
    ex = event_on(lambda x: x["a"] >= 5, lambda x: x["a"] == 0)
    batch = to_batch([("[]", ts, row, INSERT) for ts, row in rows], ex)
    plain = segment_aggregate(SegmentSpec("event", emit_open=False), AGGS, batch)
    held = segment_aggregate(SegmentSpec("event", emit_open=False, true_for=2_000), AGGS, batch)
    # windows [1 s, 3 s], [4 s, 5 s], [7 s, 10 s]; the 1 s one is shorter than 2 s
    assert list(plain.wstart) == [1000, 4000, 7000]
    assert list(held.wstart) == [1000, 7000] and list(held.wend) == [3000, 10_000]


# --------------------------------------------------------------------------- expiry of late rows
# Seed 000, "Stream Computing's Strategy for Handling Expired Data": "For windows that have closed,
# data that falls into these windows again is marked as expired data" -- and only that data. A late
# row in no closed window (after the last one, or in a gap) is segmented like any other row.


def _closed_windows(h: Harness, spec: SegmentSpec, extras: Extras, kept: list[int], closed: list[int]):
    """The expected output: the windows (computed by ``reference`` over the kept rows of the lake)
    that start at the hand-checked ``closed`` starts."""
    rows = [(t, row) for (_, t), row in h.lake.rows.items() if t in kept]
    want = reference(spec, rows, extras)
    assert set(closed) <= set(want), (closed, want)
    return [(w, want[w]["cnt"], want[w]["sa"]) for w in sorted(closed)]


def test_late_event_rows_outside_closed_windows_are_not_expired():
    # s000-2's shape: start a < 0, end a > 9; the window [10, 20] closes, then rows at 50 and 70
    # arrive after the row at 100: they fall in no closed window and make the window [50, 70]
    spec = SegmentSpec("event", emit_open=False)
    extras = event_on(lambda x: x["a"] < 0, lambda x: x["a"] > 9)
    h = Harness(spec, StreamRules(mode="WINDOW_CLOSE"), extras)
    expired = 0
    for t, a in [(10, -5), (20, 12), (100, 6), (50, -1), (70, 12), (300, 1)]:
        expired += h.feed([ins(t, a=a)]).stats["rows_expired"]
    assert expired == 0
    assert h.rows("[]", "cnt", "sa") == _closed_windows(h, spec, extras, [10, 20, 100, 50, 70, 300], [10, 50])
    assert h.rows("[]", "cnt", "sa") == [(10, 2, 7), (50, 2, 11)]  # by hand
    # a row inside the closed window [10, 20] is expired; so is one before the closed window
    # [50, 70] (re-segmenting from it would change that window)
    assert h.feed([ins(15, a=3)]).stats["rows_expired"] == 1
    assert h.feed([ins(40, a=-2)]).stats["rows_expired"] == 1
    assert h.rows("[]", "cnt", "sa") == [(10, 2, 7), (50, 2, 11)]
    # after every closed window: a late start row and its end make a window
    assert h.feed([ins(200, a=-3)]).stats["rows_expired"] == 0
    assert h.feed([ins(250, a=20)]).stats["rows_expired"] == 0
    assert h.rows("[]", "cnt", "sa") == [(10, 2, 7), (50, 2, 11), (200, 2, 17)]


def test_late_session_rows_outside_closed_sessions_are_not_expired():
    spec = SegmentSpec("session", gap=10)
    h = Harness(spec, StreamRules(mode="WINDOW_CLOSE"))
    h.feed([ins(0, a=1), ins(5, a=2)])
    h.feed([ins(100, a=3)])  # T = 100: [0, 5] (end 15) is closed
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 3)]
    out = h.feed([ins(50, a=4)])  # in no closed session, does not reach 100: its own session
    assert out.stats["rows_expired"] == 0
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 3), (50, 1, 4)]  # [50, 60] closed at once (T = 100)
    assert h.feed([ins(12, a=5)]).stats["rows_expired"] == 1  # within [0, 5 + 10]: expired
    assert h.feed([ins(42, a=6)]).stats["rows_expired"] == 1  # would extend the closed [50] back
    assert h.feed([ins(95, a=7)]).stats["rows_expired"] == 0  # joins the open [100]
    h.feed([ins(300, a=8)])
    kept = [0, 5, 100, 50, 95, 300]
    assert h.rows("[]", "cnt", "sa") == _closed_windows(h, spec, no_extras, kept, [0, 50, 95])
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 3), (50, 1, 4), (95, 2, 10)]  # by hand


def test_late_state_rows_before_the_state_change_are_expired():
    # a state window lasts until the row that changes the state (seed 000): a late row before that
    # row falls into the closed window, whatever its state; a late row in the open window is not
    spec = SegmentSpec("state")
    extras = state_of("c")
    h = Harness(spec, StreamRules(mode="WINDOW_CLOSE"), extras)
    h.feed([ins(0, a=1, c=1), ins(10, a=2, c=1), ins(20, a=3, c=2), ins(30, a=4, c=3), ins(40, a=5, c=3)])
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 3), (20, 1, 3)]  # closed by the state changes
    assert h.feed([ins(15, a=6, c=1)]).stats["rows_expired"] == 1  # would extend the closed c=1 window
    assert h.feed([ins(25, a=7, c=5)]).stats["rows_expired"] == 1  # before the change at 30
    assert h.feed([ins(5, a=8, c=9)]).stats["rows_expired"] == 1  # inside the closed [0, 10]
    assert h.feed([ins(35, a=9, c=3)]).stats["rows_expired"] == 0  # joins the open c=3 window
    assert h.feed([ins(38, a=10, c=6)]).stats["rows_expired"] == 0  # splits the open c=3 window
    h.feed([ins(50, a=11, c=4)])  # closes the last c=3 window
    kept = [0, 10, 20, 30, 40, 35, 38, 50]
    assert h.rows("[]", "cnt", "sa") == _closed_windows(h, spec, extras, kept, [0, 20, 30, 38, 40])
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 3), (20, 1, 3), (30, 2, 13), (38, 1, 10), (40, 1, 5)]


def test_late_count_rows_after_the_closed_windows_are_not_expired():
    spec = SegmentSpec("count", count=2)
    h = Harness(spec, StreamRules(mode="WINDOW_CLOSE"))
    h.feed([ins(t, a=t // 10) for t in (0, 10, 20, 30, 40)])
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 1), (20, 2, 5)]
    assert h.feed([ins(25, a=9)]).stats["rows_expired"] == 1  # would shift the closed [20, 30]
    assert h.feed([ins(35, a=7)]).stats["rows_expired"] == 0  # after every closed window
    kept = [0, 10, 20, 30, 40, 35]
    assert h.rows("[]", "cnt", "sa") == _closed_windows(h, spec, no_extras, kept, [0, 20, 35])
    assert h.rows("[]", "cnt", "sa") == [(0, 2, 1), (20, 2, 5), (35, 2, 11)]  # by hand


def _windows_with_rows(spec: SegmentSpec, rows: list[tuple[int, Row]], extras: Extras) -> list[list[int]]:
    """The windows of ``rows`` as lists of row times, from ``reference``'s definitions (re-cut
    here by the same plain loops: a window is identified by its rows)."""
    starts = reference(spec, rows, extras)
    times = sorted(t for t, _ in rows)
    out = []
    for w0 in sorted(starts):
        n = starts[w0]["cnt"]
        if spec.kind == "state":
            st = extras(dict(rows)[w0])["state"]
            mine = [t for t in times if t >= w0]
            run = []
            for t in mine:
                if extras(dict(rows)[t])["state"] != st:
                    break
                run.append(t)
            out.append(run)
        elif spec.kind == "event":
            mine = [t for t in times if t >= w0][:n]
            out.append(mine)
        else:
            out.append([t for t in times if t >= w0][:n])
    return out


def _closed(spec: SegmentSpec, wins: list[list[int]], rows: dict[int, Row], extras: Extras, t: int):
    """Windows (row-time lists) closed at ``T = t`` by seed 000's rule: session once ``T`` passes
    last row + tolerance; state once the next window's first row is at or before ``T``; event once
    its end row is; count once full and its last row is."""
    out = []
    for i, w in enumerate(wins):
        if spec.kind == "session":
            ok = w[-1] + spec.gap < t
        elif spec.kind == "state":
            ok = i + 1 < len(wins) and wins[i + 1][0] <= t
        elif spec.kind == "event":
            ok = bool(extras(rows[w[-1]])["end"]) and w[-1] <= t
        else:
            ok = len(w) == spec.count and w[-1] <= t
        if ok:
            out.append(w)
    return out


@pytest.mark.parametrize(("name", "spec", "extras"), KIND_CASES, ids=[c[0] for c in KIND_CASES])
def test_window_close_expires_exactly_the_rows_that_would_change_a_closed_window(name, spec, extras):
    """WINDOW_CLOSE, IGNORE EXPIRED 1, rows arriving one at a time out of order: a row is expired
    when, at its arrival, adding it would change a closed window (seed 000: it falls into one) or it
    lies before a closed window's start; every other row is segmented. The output is the closed
    windows of the rows kept, computed by plain loops."""
    rng = random.Random(f"expiry-{name}")
    for _ in range(15):
        h = Harness(spec, StreamRules(mode="WINDOW_CLOSE"), extras)
        times = rng.sample(range(0, 400, 2), 40)
        times.sort()
        for i in range(len(times) - 1):  # local disorder
            if rng.random() < 0.35:
                times[i], times[i + 1] = times[i + 1], times[i]
        if rng.random() < 0.5:
            times.insert(rng.randrange(5, 40), rng.randrange(0, 400, 2) + 1)  # a row far behind
        kept: dict[int, Row] = {}
        latest = None
        for t in times:
            row = r(a=rng.randint(-5, 5), c=rng.choice([0, 1, 2]))
            expected_expired = False
            if latest is not None and t < latest:
                closed = _closed(
                    spec, _windows_with_rows(spec, list(kept.items()), extras), kept, extras, latest
                )
                with_row = _windows_with_rows(spec, [*kept.items(), (t, row)], extras)
                expected_expired = any(w not in with_row for w in closed) or any(w[0] > t for w in closed)
                if spec.kind == "state":  # a state window lasts until the next window's first row
                    wins = _windows_with_rows(spec, list(kept.items()), extras)
                    pairs = itertools.pairwise(wins)
                    expected_expired |= any(w[0] <= t < n[0] for w, n in pairs if w in closed)
            out = h.feed([ins(t, **row)])
            assert out.stats["rows_expired"] == int(expected_expired), (name, times, t)
            if not expected_expired:
                kept[t] = row
            latest = t if latest is None else max(latest, t)
        final = _closed(spec, _windows_with_rows(spec, list(kept.items()), extras), kept, extras, latest)
        assert {w: v["cnt"] for (_, w), v in h.table.items()} == {w[0]: len(w) for w in final}, (name, times)
