"""In-order fast path of the data-defined windows: the groups of a micro-batch whose rows all come
after everything the group has segmented are cut at once, across groups, with array operations.

``SegmentEngine.step`` (engine/segments.py) handles a group row by row when a change, a late row
or an expiry rule can touch its retained windows; most micro-batches of a live stream hold none
of those, and there the per-group Python (some forty numpy calls on a few rows each) cost more
than the windows themselves: about 200 µs per group and micro-batch. Here the rows of every
eligible group are sorted by (group, time) once, the cut points (a state change, a gap beyond
the tolerance, a count boundary) are found for all of them in one vectorized pass, and one Python
loop over the resulting *segments* (runs of rows that join one window) updates the windows.

The result is the row-by-row path's, window for window: same ordinals, bounds, close times,
window information (``state`` / ``prev_state`` / ``next_state``, count index ``j``), carries and
rows lifted per window (``tests/engine/test_segments_inorder.py`` runs both on random streams).
Covered: SESSION, STATE_WINDOW, EVENT_WINDOW (seed 000, window_clause) and tumbling COUNT_WINDOW;
sliding COUNT_WINDOW and the eKuiper windows keep the row-by-row path, as do streams with
EXPIRED_TIME, eKuiper's lateness rule or WINDOW_OPEN notifications (whose event order follows the
groups).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_workers.engine.aggregates import I64_MAX
from spark_workers.engine.rows import INSERT, RowBatch
from spark_workers.engine.segment_model import (
    SegmentGroup,
    SegmentSpec,
    Win,
    condition_columns,
    condition_values,
    next_at,
    run_positions,
)
from spark_workers.engine.stream import StreamRules


def covers(spec: SegmentSpec, rules: StreamRules, notify_open: bool) -> bool:
    """Can the fast path take this stream's in-order groups at all (module docstring)?"""
    if rules.late_by_watermark or rules.expired_time or notify_open:
        return False
    if spec.kind in ("session", "state", "event"):
        return True
    return spec.kind == "count" and spec.step == spec.count


def in_order_slices(
    spec: SegmentSpec,
    rules: StreamRules,
    groups: list[SegmentGroup],
    batch: RowBatch,
    order: np.ndarray,
    starts: np.ndarray,
    slice_gids: list[int],
    keep: np.ndarray,
) -> np.ndarray:
    """Which group slices of a micro-batch the fast path can take.

    Args:
        groups: the bucket's groups, by gid.
        order: batch row positions sorted by gid (arrival order inside a group).
        starts: start of each group's slice in ``order`` (ascending; a slice ends where the next
            starts).
        slice_gids: the gid of each slice.
        keep: bool per batch row: the row passed WHERE / PRE_FILTER.

    Returns:
        bool per slice: every row is an INSERT and no kept row is late (before the group's latest
        segmented row, or at it with a composite key; for SESSION, not within a final session's
        reach: ``SegmentEngine._group_step``), so the row-by-row path would only continue the
        group's windows.
    """
    ch = batch.changes[order]
    ok = np.add.reduceat((ch != INSERT).astype(np.int64), starts) == 0
    tk = np.where(keep[order], batch.ts[order], I64_MAX)
    first_kept = np.minimum.reduceat(tk, starts).tolist()
    for k, g in enumerate(slice_gids):
        if not ok[k] or first_kept[k] == I64_MAX:
            continue
        grp = groups[g]
        floor, strict = grp.last_ts, rules.key_ties_late
        if spec.kind == "session":
            done = grp.last_final()
            if done is not None and done.close_time is not None and done.close_time >= floor:
                floor, strict = done.close_time, True
        t = first_kept[k]
        ok[k] = t > floor or (t == floor and not strict)
    return ok


@dataclass
class InOrderCut:
    """What ``cut_in_order`` did.

    Attributes:
        rows: batch row positions that joined a window.
        gids / wids: the group and window ordinal of each of ``rows``.
        touched: (gid, window) pairs the rows reached: each group's open windows before the
            batch and its new windows (the row-by-row path's ``Segmented.wins``).
        opened: number of new windows.
    """

    rows: np.ndarray
    gids: np.ndarray
    wids: np.ndarray
    touched: list[tuple[int, Win]]
    opened: int


def cut_in_order(
    spec: SegmentSpec, groups: list[SegmentGroup], batch: RowBatch, rows: np.ndarray, gid: np.ndarray
) -> InOrderCut:
    """Continue the windows of every group in ``rows`` (module docstring).

    Args:
        spec: SESSION, STATE_WINDOW, EVENT_WINDOW or tumbling COUNT_WINDOW (``covers``).
        groups: the bucket's groups, by gid; their windows, carries, ``next_wid`` and
            ``last_ts`` are updated in place (``max_ts`` is the caller's).
        batch: the micro-batch.
        rows: kept batch row positions of groups ``in_order_slices`` accepted, sorted by
            (gid, time), arrival order for equal times; not empty.
        gid: the gid of every batch row.

    Returns:
        InOrderCut.
    """
    g_r = gid[rows]
    heads = np.flatnonzero(_group_firsts(g_r))
    ends = np.append(heads[1:], rows.size)
    touched: list[tuple[int, Win]] = []
    for g, last in zip(g_r[ends - 1].tolist(), batch.ts[rows[ends - 1]].tolist(), strict=True):
        grp = groups[g]
        grp.last_ts = max(grp.last_ts, last)
        touched += [(g, w) for w in grp.open()]
    if spec.kind == "count":
        valid = batch.extra.get("count_valid")
        ok = np.ones(rows.size, bool) if valid is None else valid[0][rows].astype(bool) & valid[1][rows]
        counted = np.add.reduceat(ok.astype(np.int64), heads).tolist()
        seen: dict[int, int] = {}
        for g, k in zip(g_r[ends - 1].tolist(), counted, strict=True):
            carry = groups[g].carry
            seen[g] = int(carry.get("seen", 0))
            groups[g].carry = {**carry, "seen": seen[g] + k}
        return _cut_counts(spec, groups, batch, rows[ok], gid, seen, touched)
    if spec.kind == "event":
        return _cut_events(groups, batch, rows, gid, touched)
    sel = rows[batch.extra["state"][1][rows]] if spec.kind == "state" else rows
    return _cut_runs(spec, groups, batch, sel, gid, touched)


def _group_firsts(g: np.ndarray) -> np.ndarray:
    """Bool per row of rows sorted by group: the row is its group's first."""
    gf = np.ones(g.size, bool)
    gf[1:] = g[1:] != g[:-1]
    return gf


def _segments(g: np.ndarray, brk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segments of rows sorted by group: a segment starts at a group's first row or at a break.
    Returns (first row of each segment, its end (exclusive), whether it starts a group)."""
    gf = _group_firsts(g)
    b = np.flatnonzero(gf | brk)
    return b, np.append(b[1:], g.size), gf[b]


def _cut_runs(
    spec: SegmentSpec,
    groups: list[SegmentGroup],
    batch: RowBatch,
    sel: np.ndarray,
    gid: np.ndarray,
    touched: list[tuple[int, Win]],
) -> InOrderCut:
    """SESSION / STATE_WINDOW: a window per run of rows, cut where the gap exceeds the tolerance or
    the state value changes (``segments._cut_runs``, for all groups at once)."""
    state = spec.kind == "state"
    gap = spec.gap
    empty = np.empty(0, np.int64)
    if not sel.size:
        return InOrderCut(empty, empty, empty, touched, 0)
    g, t = gid[sel], batch.ts[sel]
    brk = np.zeros(sel.size, bool)
    v = batch.extra["state"][0][sel] if state else None
    if v is not None:
        brk[1:] = v[1:] != v[:-1]
    else:
        brk[1:] = np.diff(t) > spec.gap
    b, e, gstart = _segments(g, brk)
    bg, tf, tl, sz = g[b].tolist(), t[b].tolist(), t[e - 1].tolist(), (e - b).tolist()
    vf = v[b].tolist() if v is not None else None
    gstart = gstart.tolist()  # read once per segment: Python bools, not numpy scalars
    wids: list[int] = []
    new = 0
    grp: SegmentGroup | None = None
    cur: Win | None = None
    carry: dict = {}
    for k, gk in enumerate(bg):
        if gstart[k]:
            if grp is not None:
                _end_run_group(grp, cur, carry, state)
            grp = groups[gk]
            op = grp.open()
            cur = op[-1] if op else None
            carry = dict(grp.carry)
            if cur is None:
                starts = True
            elif vf is not None:
                starts = vf[k] != cur.info.get("state")
            else:
                starts = tf[k] - cur.wlast > spec.gap
        else:
            starts = True
        assert grp is not None
        if not starts:
            assert cur is not None
            cur.nrows += sz[k]
            if tl[k] > cur.wlast:
                cur.wlast = tl[k]
        else:  # the state change or the gap closes ``cur``; the run opens the next window
            if vf is not None:
                vk = vf[k]
                if cur is not None:
                    prev = cur.info.get("state")
                    cur.close_time = tf[k]
                    cur.info["next_state"] = vk
                else:
                    prev = carry.get("prev_state")
                cur = Win(grp.next_wid, tf[k], tl[k], sz[k], info={"state": vk, "prev_state": prev})
            else:
                if cur is not None:
                    cur.close_time = cur.wlast + gap
                cur = Win(grp.next_wid, tf[k], tl[k], sz[k])
            grp.next_wid += 1
            grp.windows.append(cur)
            touched.append((gk, cur))
            new += 1
        wids.append(cur.wid)
    if grp is not None:
        _end_run_group(grp, cur, carry, state)
    row_wids = np.repeat(np.array(wids, np.int64), e - b)
    return InOrderCut(sel, g, row_wids, touched, new)


def _end_run_group(grp: SegmentGroup, cur: Win | None, carry: dict, state: bool) -> None:
    if state:
        carry["prev_state"] = cur.info.get("state") if cur is not None else carry.get("prev_state")
    grp.carry = carry


def _cut_counts(
    spec: SegmentSpec,
    groups: list[SegmentGroup],
    batch: RowBatch,
    sel: np.ndarray,
    gid: np.ndarray,
    seen: dict[int, int],
    touched: list[tuple[int, Win]],
) -> InOrderCut:
    """Tumbling COUNT_WINDOW: counted row ``p`` of a group (``seen``: counted before) joins
    window ``(p - first) // count``; a window closes at its ``count``-th row
    (``segments._cut_counts``, for all groups at once)."""
    empty = np.empty(0, np.int64)
    if not sel.size:
        return InOrderCut(empty, empty, empty, touched, 0)
    g, t = gid[sel], batch.ts[sel]
    heads = np.flatnonzero(_group_firsts(g))
    sizes = np.diff(np.append(heads, sel.size))
    seen0 = [seen[gg] for gg in g[heads].tolist()]
    pos = np.repeat(np.array(seen0, np.int64) - heads, sizes) + np.arange(sel.size, dtype=np.int64)
    inw = pos >= spec.first
    sel, g, t = sel[inw], g[inw], t[inw]
    j = (pos[inw] - spec.first) // spec.step
    if not sel.size:
        return InOrderCut(empty, empty, empty, touched, 0)
    brk = np.zeros(sel.size, bool)
    brk[1:] = j[1:] != j[:-1]
    b, e, gstart = _segments(g, brk)
    bg, bj = g[b].tolist(), j[b].tolist()
    tf, tl, sz = t[b].tolist(), t[e - 1].tolist(), (e - b).tolist()
    gstart = gstart.tolist()
    wids: list[int] = []
    new = 0
    by_j: dict[int, Win] = {}
    for k, gk in enumerate(bg):
        grp = groups[gk]
        if gstart[k]:
            by_j = {w.info["j"]: w for w in grp.open() if "j" in w.info}
        w = by_j.get(bj[k])
        if w is None:
            w = Win(grp.next_wid, tf[k], tf[k], info={"j": bj[k]})
            grp.next_wid += 1
            grp.windows.append(w)
            by_j[bj[k]] = w
            touched.append((gk, w))
            new += 1
        w.nrows += sz[k]
        if tl[k] > w.wlast:
            w.wlast = tl[k]
        if w.nrows >= spec.count and w.close_time is None:
            w.close_time = w.wlast
        wids.append(w.wid)
    return InOrderCut(sel, g, np.repeat(np.array(wids, np.int64), e - b), touched, new)


def _cut_events(
    groups: list[SegmentGroup],
    batch: RowBatch,
    sel: np.ndarray,
    gid: np.ndarray,
    touched: list[tuple[int, Win]],
) -> InOrderCut:
    """EVENT_WINDOW: a window opens at a row meeting the start condition (unless one is open) and
    closes at the next row meeting the end condition, the same row may do both; rows outside join
    no window (``segments._cut_events``: the jumps between the next start and end row, with the
    next-row tables built once for all groups; a jump past a group's last row stops there)."""
    g, t = gid[sel], batch.ts[sel]
    sv, sok = batch.extra["start"]
    ev, eok = batch.extra["end"]
    m = sel.size
    nxt_s = next_at(np.flatnonzero(sv[sel].astype(bool) & sok[sel]), m)
    nxt_e = next_at(np.flatnonzero(ev[sel].astype(bool) & eok[sel]), m)
    heads = np.flatnonzero(_group_firsts(g))
    tl = t.tolist()
    on_start, on_end = condition_columns(batch, "start"), condition_columns(batch, "end")
    no_values = condition_values([], 0)  # the shared empty values: no notification reads them
    los: list[int] = []
    his: list[int] = []
    wids: list[int] = []
    new = 0
    for gk, h, end in zip(g[heads].tolist(), heads.tolist(), np.append(heads[1:], m).tolist(), strict=True):
        grp = groups[gk]
        op = grp.open()
        cur = op[-1] if op else None
        i = h if cur is not None else nxt_s[h]
        while i < end:
            stop = nxt_e[i]
            hi = stop if stop < end else end - 1
            if cur is None:
                cur = Win(
                    grp.next_wid,
                    tl[i],
                    tl[i],
                    info={"open_values": condition_values(on_start, int(sel[i])) if on_start else no_values},
                )
                grp.next_wid += 1
                grp.windows.append(cur)
                touched.append((gk, cur))
                new += 1
            cur.nrows += hi - i + 1
            if tl[hi] > cur.wlast:
                cur.wlast = tl[hi]
            los.append(i)
            his.append(hi)
            wids.append(cur.wid)
            if stop >= end:
                break
            cur.close_time = tl[stop]
            cur.info["close_values"] = condition_values(on_end, int(sel[stop])) if on_end else no_values
            cur = None
            i = nxt_s[stop + 1]
    lo = np.array(los, np.int64)
    sizes = np.array(his, np.int64) - lo + 1
    pos = run_positions(lo, sizes)
    return InOrderCut(sel[pos], g[pos], np.repeat(np.array(wids, np.int64), sizes), touched, new)
