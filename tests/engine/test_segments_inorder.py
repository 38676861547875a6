"""The in-order fast path of the data-defined windows (engine/segments_inorder.py) against the
row-by-row path it stands in for.

Both engines are fed the same micro-batches (in-order rows, late rows, updates, deletes, rows
removed by WHERE, several groups, state round trips); after every step their outputs (upserts,
removals, events, counters) and their whole state (every group's windows with close times and
window information, carries, ordinals, latest times, the partials) must be the same. Where the
fast path does not apply (EVENT_WINDOW, sliding COUNT_WINDOW, eKuiper windows, EXPIRED_TIME), the
test still runs and checks the engine falls back unchanged.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.engine.segments import SegmentEngine, SegmentSpec, SegmentState
from spark_workers.engine.stream import StreamRules
from tests.engine.test_segments import AGGS, Harness, dele, event_on, ins, no_extras, state_of, to_batch

SPECS = {
    "session": (SegmentSpec("session", gap=3), no_extras),
    "session_last_row": (SegmentSpec("session", gap=2, end_at_last_row=True), no_extras),
    "state": (SegmentSpec("state"), state_of("c")),
    "state_true_for": (SegmentSpec("state", true_for=3), state_of("c")),
    "count": (SegmentSpec("count", count=3), no_extras),
    "count_valid": (SegmentSpec("count", count=2), lambda r: {"count_valid": r.get("a") is not None}),
    "count_sliding": (SegmentSpec("count", count=4, sliding=3), no_extras),
    "event": (
        SegmentSpec("event", emit_open=False),
        event_on(lambda x: x["c"] == 0, lambda x: x["c"] == 2),
    ),
    "ek_session": (SegmentSpec("ek_session", gap=4, max_duration=10, emit_open=False), no_extras),
}
RULES = {
    "window_close": StreamRules(mode="WINDOW_CLOSE", notify_close=True),
    "at_once": StreamRules(mode="AT_ONCE", delete_mark=1 << 60, notify_close=True),
    "watermark": StreamRules(mode="WINDOW_CLOSE", watermark=4, ignore_expired=False),
    "max_delay": StreamRules(mode="MAX_DELAY", max_delay=3, notify_close=True),
    "ties_late": StreamRules(mode="WINDOW_CLOSE", key_ties_late=True),
    "expired_time": StreamRules(mode="WINDOW_CLOSE", expired_time=5),
}

# one write: (group, time step, lateness, a, c, keep, kind) -- kind 0 insert, 1 rewrite, 2 delete
write = st.tuples(
    st.integers(0, 3),
    st.integers(0, 4),
    st.integers(0, 9),
    st.one_of(st.none(), st.integers(-5, 5)),
    st.one_of(st.none(), st.integers(0, 2)),
    st.booleans(),
    st.sampled_from([0, 0, 0, 0, 0, 0, 1, 2]),
)


def _ops(batches: list[list[tuple]], late: bool) -> list[list[tuple]]:
    """Micro-batches of lake operations from the drawn writes (time only grows unless ``late``)."""
    out, t, written = [], 100, []
    for b in batches:
        ops = []
        for g, dt, back, a, c, keep, kind in b:
            gk = f'["g{g}"]'
            if late and kind and written:
                gg, tt = written[(dt * 7 + back) % len(written)]
                ops.append(dele(tt, gg) if kind == 2 else ins(tt, gg, a=a, c=c, keep=keep))
                continue
            t += dt
            ts = t - back if late else t
            ops.append(ins(ts, gk, a=a, c=c, keep=keep or not late))
            written.append((gk, ts))
        out.append(ops)
    return out


def _state_view(s: SegmentState) -> list:
    groups = [
        (
            [dataclasses.astuple(w) for w in g.windows],
            g.next_wid,
            g.last_ts,
            g.max_ts,
            g.carry,
            g.evicted,
            g.bounds.tolist(),
        )
        for g in s.groups
    ]
    p = s.partials
    order = np.lexsort((p.wkey, p.gid))
    cols = {k: np.asarray(v)[order].tolist() for k, v in p.cols.items()}
    return [s.gkeys, groups, p.gid[order].tolist(), p.wkey[order].tolist(), cols]


def _out_view(out) -> list:
    u = out.upserts
    vals = {k: (np.round(v.astype(float), 9).tolist(), ok.tolist()) for k, (v, ok) in u.values.items()}
    events = [(e.kind, e.gkey, e.wstart, e.wend, e.history, e.info) for e in out.events]
    return [u.gkey.tolist(), u.wstart.tolist(), u.wend.tolist(), vals, out.removals, events, out.stats]


def _run(spec_name: str, rules_name: str, batches: list[list[tuple]], late: bool, roundtrip: int) -> int:
    """Feed both engines; returns how many steps compared."""
    spec, extras = SPECS[spec_name]
    rules = RULES[rules_name]
    fast, slow = Harness(spec, rules, extras), Harness(spec, rules, extras)
    slow.engine = SegmentEngine(spec, AGGS, rules, in_order=False)
    assert fast.engine.in_order
    now = 0
    for i, ops in enumerate(_ops(batches, late)):
        now += 2
        tick = now if rules.mode == "MAX_DELAY" else None
        trip = bool(roundtrip >> (i % 8) & 1)
        a = fast.feed(ops, now=tick, roundtrip=trip)
        b = slow.feed(ops, now=tick, roundtrip=trip)
        assert _out_view(a) == _out_view(b), f"step {i}"
        assert _state_view(fast.state) == _state_view(slow.state), f"state after step {i}"
    return len(batches)


batches_st = st.lists(st.lists(write, min_size=0, max_size=8), min_size=1, max_size=12)


@pytest.mark.parametrize("spec", sorted(SPECS))
@settings(max_examples=30, deadline=None)
@given(rules=st.sampled_from(sorted(RULES)), batches=batches_st, roundtrip=st.integers(0, 255))
def test_in_order_streams_give_the_row_by_row_result(spec, rules, batches, roundtrip):
    assert _run(spec, rules, batches, late=False, roundtrip=roundtrip) == len(batches)


@pytest.mark.parametrize("spec", sorted(SPECS))
@settings(max_examples=30, deadline=None)
@given(rules=st.sampled_from(sorted(RULES)), batches=batches_st, roundtrip=st.integers(0, 255))
def test_late_rows_updates_and_deletes_give_the_row_by_row_result(spec, rules, batches, roundtrip):
    assert _run(spec, rules, batches, late=True, roundtrip=roundtrip) == len(batches)


def test_the_fast_path_takes_in_order_groups_and_leaves_late_ones_to_the_row_by_row_path():
    """One batch with an in-order group and a late group: the late one is re-segmented (it shows
    in ``recalculated``), the in-order one continues its windows; both as the row-by-row path."""
    spec, extras = SPECS["state"]
    rules = StreamRules(mode="AT_ONCE", delete_mark=1 << 60)
    h = Harness(spec, rules, extras)
    h.feed(
        [
            ins(1, '["x"]', a=1, c=0),
            ins(2, '["x"]', a=1, c=1),
            ins(1, '["y"]', a=1, c=0),
            ins(5, '["y"]', c=0),
        ]
    )
    out = h.feed([ins(3, '["x"]', a=2, c=1), ins(4, '["x"]', a=3, c=2), ins(3, '["y"]', a=5, c=1)])
    assert out.stats["recalculated"] == 1
    assert h.rows('["x"]', "cnt", "sa") == [(1, 1, 1), (2, 2, 3), (4, 1, 3)]
    assert h.rows('["y"]', "cnt", "sa") == [(1, 1, 1), (3, 1, 5), (5, 1, None)]


def test_a_state_written_as_objects_still_loads():
    """Checkpoints written before state format 2 pickled the windows as objects (format 1)."""
    import pickle

    spec, extras = SPECS["session"]
    h = Harness(spec, RULES["window_close"], extras)
    h.feed([ins(1, a=1), ins(2, a=2), ins(9, a=3)])
    s = h.state
    legacy = pickle.dumps(
        {
            "v": 1,
            "gkeys": s.gkeys,
            "groups": [
                (g.windows, g.next_wid, g.last_ts, g.max_ts, g.carry, g.evicted, g.bounds) for g in s.groups
            ],
            "gid": s.partials.gid,
            "wkey": s.partials.wkey,
            "cols": s.partials.cols,
        },
        protocol=5,
    )
    back = SegmentState.from_bytes(AGGS, legacy)
    assert _state_view(back) == _state_view(s)
    assert _state_view(SegmentState.from_bytes(AGGS, s.to_bytes())) == _state_view(s)
    assert [w.wstart for w in back.groups[0].windows] == [1, 9]
    assert to_batch([], extras).ts.size == 0
