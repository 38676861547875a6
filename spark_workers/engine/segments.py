"""Data-defined windows: SESSION, STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW (seed 000,
window_clause) and eKuiper's SESSIONWINDOW and COUNTWINDOW (seed 003).

Unlike INTERVAL, where the clock fixes a window, these windows are cut by the rows themselves: a
gap longer than the tolerance, a change of state, a start and an end condition, a number of rows.
One row can therefore merge, split or shift later windows, so:

- **in-order rows** (not before the group's latest segmented row) continue the group's open
  windows;
- **anything else** — a late row, an update, a delete — re-segments the group from an *anchor*,
  the start of the earliest retained window the change can touch: the group's rows from the anchor
  on are read again from the lake snapshot the micro-batch ends at, segmented from scratch, and
  replace every window that started at or after the anchor (those that vanish are removed from
  the output). For these windows an update can never be "incremental data" (it may change a state
  or a condition), so IGNORE UPDATE does not apply (docs/decisions.md).
- A late row that falls into a window already closed when it arrives is *expired* (seed 000,
  "Stream Computing's Strategy for Handling Expired Data"; a row before a closed window's start
  counts as falling into it, a row after every closed window does not: ``_is_final_at``): AT_ONCE
  re-segments it while it is within DELETE_MARK; the other modes drop it unless IGNORE EXPIRED
  is 0. With eKuiper's rule
  (``StreamRules.late_by_watermark``) every row older than the watermark is dropped, whatever its
  window. Final windows stay known for anchoring: the last ``RETAIN_CLOSED`` in full, older ones as
  bare bounds (start, last row, count-window index; up to ``RETAIN_BOUNDS`` per group and within
  DELETE_MARK, TDengine's "cached window states", seed 000). A change older than every known
  window cannot be anchored and is dropped (counted as expired).

Each window gets a *close time* once a later row ends it — session: last row + tolerance;
eKuiper session: the earlier of timeout after the last row and the max-duration check that cut it;
state: the row that changed the state; event: the row that met the end condition; count: its last
row — and becomes final when ``T = latest event time − watermark`` reaches it (session: passes it;
in processing-time mode ``T`` is the wall clock). Rows with a NULL state value and rows outside
event windows belong to no window; rows removed by WHERE (``keep`` false) still advance the latest
event time but join no window (ek-009).

Results: ``wstart`` = the first row's time; ``wend`` = session: last row + tolerance (seed 000),
eKuiper session: its close time, others: the last row's time. Per group, ``wid`` is an ordinal that
is never reused.

Cost per micro-batch: one Python pass per group with rows in the batch (numpy inside), one
``lift`` and one ``combine`` for the whole batch; a re-segmentation reads the group's rows from the
anchor on.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spark_workers.engine import segments_inorder as inorder
from spark_workers.engine.aggregates import I64_MIN, AggSpec, Partials, combine, lift, lower
from spark_workers.engine.rows import (
    DELETE,
    INSERT,
    UPDATE_POST,
    UPDATE_PRE,
    RowBatch,
    group_ids,
    register_groups,
)
from spark_workers.engine.segment_model import (
    KINDS,
    SegmentGroup,
    SegmentSpec,
    Win,
    condition_columns,
    condition_values,
    next_at,
    py_scalar,
    run_positions,
)
from spark_workers.engine.stream import StepOutput, StreamRules, WindowEvent, WindowResults, key_index

RETAIN_CLOSED = 16
RETAIN_BOUNDS = 1024
STATE_FORMAT = 2
RangeReader = Callable[[list[str], int], RowBatch]
"""``read(gkeys, ts_from)``: the lake's current rows of those groups with ``ts >= ts_from``
(stage-1 shape; ``extra`` as the engine needs, ``keep`` included)."""


@dataclass
class Segmented:
    """Segmentation of one group's rows: (row position, wid) pairs and the windows touched."""

    rows: np.ndarray
    wids: np.ndarray
    wins: list[Win]
    carry: dict[str, Any]
    next_wid: int
    opened_at: dict[int, int] = field(default_factory=dict)  # wid -> row position that opened it
    closed_at: dict[int, int] = field(default_factory=dict)  # wid -> row position that closed it


def segment_rows(
    spec: SegmentSpec,
    ts: np.ndarray,
    extra: dict[str, Any],
    carry: dict[str, Any],
    open_wins: list[Win],
    next_wid: int,
) -> Segmented:
    """Cut one group's rows (sorted by time, all after ``open_wins``' rows) into windows.

    Args:
        spec: the window shape.
        ts: int64 times, ascending.
        extra: ``state``: ``(values, valid)`` for STATE_WINDOW; ``start`` / ``end``: bool arrays
            for EVENT_WINDOW; ``count_valid``: bool array for COUNT_WINDOW with columns.
        carry: what the previous segmentation left (``seen`` rows for count windows).
        open_wins: the group's open windows, continued (mutated) by these rows.
        next_wid: first ordinal for new windows.

    Returns:
        Segmented: row positions into ``ts`` with the wid of each (a row may be in several count
        windows), every window touched (open ones first), the new carry and next ordinal.
    """
    k = spec.kind
    carry = dict(carry)
    cut = _Cut(ts, Segmented(np.empty(0, np.int64), np.empty(0, np.int64), list(open_wins), carry, next_wid))
    if ts.shape[0]:
        if k in ("session", "ek_session", "state"):
            _cut_runs(spec, cut, extra, carry, open_wins)
        elif k == "event":
            _cut_events(cut, extra, open_wins)
        elif k in ("count", "ek_count"):
            _cut_counts(spec, cut, extra, carry, open_wins)
    return cut.done()


class _Cut:
    """A segmentation being made: new windows get the next ordinals, each window's rows are
    collected as (row position, wid) pairs."""

    __slots__ = ("rows_l", "seg", "sizes_l", "ts", "wids_l")

    def __init__(self, ts: np.ndarray, seg: Segmented) -> None:
        self.ts = ts
        self.seg = seg
        self.rows_l: list[np.ndarray] = []
        self.wids_l: list[int] = []  # one wid per ``rows_l`` entry, repeated by ``sizes_l`` at the end
        self.sizes_l: list[int] = []

    def new_win(self, t: int) -> Win:
        """Open a window at ``t`` (a Python int) with the next ordinal."""
        seg = self.seg
        w = Win(seg.next_wid, t, t)
        seg.next_wid += 1
        seg.wins.append(w)
        return w

    def take(self, w: Win, idx: np.ndarray, last: int | None = None) -> None:
        """Rows ``idx`` (positions into ``ts``, ascending) join window ``w``; ``last``: the time of
        the last of them when the caller knows it (saves a lookup per window)."""
        n = int(idx.size)
        self.rows_l.append(idx)
        self.wids_l.append(w.wid)
        self.sizes_l.append(n)
        w.nrows += n
        t = int(self.ts[idx[-1]]) if last is None else last
        if t > w.wlast:
            w.wlast = t

    def take_runs(self, wins: list[Win], los: list[int], his: list[int], t_hi: list[int]) -> None:
        """Rows ``los[k]..his[k]`` (inclusive, ascending, disjoint runs) join window ``wins[k]``;
        ``t_hi[k]`` is the time of row ``his[k]``."""
        lo = np.array(los, np.int64)
        sizes = np.array(his, np.int64) - lo + 1
        self.rows_l.append(run_positions(lo, sizes))
        sz = sizes.tolist()
        for w, k, t in zip(wins, sz, t_hi, strict=True):
            self.wids_l.append(w.wid)
            self.sizes_l.append(k)
            w.nrows += k
            if t > w.wlast:
                w.wlast = t

    def done(self) -> Segmented:
        seg = self.seg
        if self.rows_l:
            seg.rows = np.concatenate(self.rows_l)
            seg.wids = np.repeat(np.array(self.wids_l, np.int64), np.array(self.sizes_l, np.int64))
        return seg


def _cut_runs(
    spec: SegmentSpec, cut: _Cut, extra: dict[str, Any], carry: dict[str, Any], open_wins: list[Win]
) -> None:
    """SESSION, eKuiper SESSIONWINDOW, STATE_WINDOW: one window per run of rows, cut where the gap
    exceeds the tolerance (or eKuiper's max duration ends the window) or the state value changes;
    rows with a NULL state value join no window."""
    k = spec.kind
    ts = cut.ts
    v: np.ndarray | None = None
    if k == "state":
        vals, valid = extra["state"]
        idx = np.flatnonzero(valid)
    else:
        idx = np.arange(ts.shape[0])
    cur = open_wins[-1] if open_wins else None
    if not idx.size:
        return
    t = ts[idx]
    if k == "state":
        v = vals[idx]
        starts = np.flatnonzero(_state_cuts(v, cur))
    else:
        starts = np.flatnonzero(_gap_cuts(spec, t, cur))
    edges = np.append(starts, idx.size)
    lead = int(starts[0]) if starts.size else idx.size
    if lead:
        assert cur is not None
        cut.take(cur, idx[:lead])
    # per-window values as Python scalars at once (one conversion, not one per window)
    t_first = t[starts].tolist()
    t_last = t[edges[1:] - 1].tolist()
    v_first = v[starts].tolist() if v is not None else None
    for j, (s, e) in enumerate(itertools.pairwise(edges.tolist())):
        prev_state = cur.info.get("state") if cur is not None else carry.get("prev_state")
        if cur is not None:
            if v_first is not None:
                cur.close_time = t_first[j]
                cur.info["next_state"] = v_first[j]
            elif k == "session":
                cur.close_time = cur.wlast + spec.gap
            else:
                cur.close_time = _ek_close(cur, spec, t_first[j])
        cur = cut.new_win(t_first[j])
        if v_first is not None:
            cur.info["state"] = v_first[j]
            cur.info["prev_state"] = prev_state
        cut.take(cur, idx[s:e], t_last[j])
    if k == "state":
        carry["prev_state"] = cur.info.get("state") if cur is not None else carry.get("prev_state")


def _state_cuts(v: np.ndarray, cur: Win | None) -> np.ndarray:
    """Rows (with a state value) that start a state window: the value differs from the row
    before, or from the open window's."""
    cut = np.empty(v.size, bool)
    cut[0] = cur is None or py_scalar(v[0]) != cur.info.get("state")
    cut[1:] = v[1:] != v[:-1]
    return cut


def _gap_cuts(spec: SegmentSpec, t: np.ndarray, cur: Win | None) -> np.ndarray:
    """Rows that start a session: the gap to the row before (or to the open window's last row)
    exceeds the tolerance; eKuiper sessions also where a max-duration check ends the window."""
    gaps = np.empty(t.size, np.int64)
    gaps[0] = t[0] - cur.wlast if cur is not None else 0
    gaps[1:] = np.diff(t)
    cut = gaps > spec.gap
    if cur is None:
        cut[0] = True
    if spec.kind == "ek_session" and spec.max_duration > 0:
        last = cur.wlast if cur is not None else None
        cut = _max_duration_cuts(t, cut, cur.wstart if cur is not None else None, last, spec.max_duration)
    return cut


def _cut_events(cut: _Cut, extra: dict[str, Any], open_wins: list[Win]) -> None:
    """EVENT_WINDOW: a window opens at a row meeting the start condition (unless one is open) and
    closes at the next row meeting the end condition (the same row may do both); rows outside
    join no window. The windows are found by jumping between the next start and the next end row
    (one Python step per window, on ints) and their rows taken at once (``_Cut.take_runs``)."""
    ts, seg = cut.ts, cut.seg
    n = int(ts.shape[0])
    nxt_s = next_at(np.flatnonzero(extra["start"]), n)
    nxt_e = next_at(np.flatnonzero(extra["end"]), n)
    cur = open_wins[-1] if open_wins else None
    los: list[int] = []
    his: list[int] = []
    i = 0 if cur is not None else nxt_s[0]
    while i < n:
        stop = nxt_e[i]
        los.append(i)
        if stop >= n:  # still open at the end of the rows
            his.append(n - 1)
            break
        his.append(stop)
        i = nxt_s[stop + 1]
    if not los:
        return
    t_lo = ts[los].tolist()
    t_hi = ts[his].tolist()
    wins: list[Win] = []
    for k, lo in enumerate(los):
        if k == 0 and cur is not None:
            w = cur
        else:
            w = cut.new_win(t_lo[k])
            seg.opened_at[w.wid] = lo
        if nxt_e[lo] < n:  # its end row is among these rows
            w.close_time = t_hi[k]
            seg.closed_at[w.wid] = his[k]
        wins.append(w)
    cut.take_runs(wins, los, his, t_hi)


def _cut_counts(
    spec: SegmentSpec, cut: _Cut, extra: dict[str, Any], carry: dict[str, Any], open_wins: list[Win]
) -> None:
    """COUNT_WINDOW / eKuiper COUNTWINDOW: window ``j`` holds the counted rows ``first + j * step``
    to ``+ size`` of the group (``carry['seen']`` rows were counted before); a window closes at
    its ``size``-th row."""
    ts = cut.ts
    valid = extra.get("count_valid")
    idx = np.arange(ts.shape[0]) if valid is None else np.flatnonzero(valid)
    seen = int(carry.get("seen", 0))
    size, step, r0 = spec.count, spec.step, spec.first
    pos = seen + np.arange(idx.size, dtype=np.int64)
    by_j = {w.info["j"]: w for w in open_wins if "j" in w.info}
    for off in range(-(-size // step)):
        j = np.floor_divide(pos - r0, step) - off
        ok = (pos >= r0) & (j >= 0) & (pos < r0 + j * step + size)
        if not ok.any():
            continue
        jo = j[ok]
        sel_all = idx[ok]
        brk = np.flatnonzero(np.diff(jo)) + 1
        for lo, hi in itertools.pairwise([0, *brk.tolist(), jo.size]):
            jj = int(jo[lo])
            w = by_j.get(jj)
            if w is None:
                w = cut.new_win(int(ts[sel_all[lo]]))
                w.info["j"] = jj
                by_j[jj] = w
            cut.take(w, sel_all[lo:hi])
    for w in by_j.values():
        if w.nrows >= size and w.close_time is None:
            w.close_time = w.wlast
    carry["seen"] = seen + int(idx.size)
    cut.seg.wins.sort(key=lambda w: w.info.get("j", -1))


def _max_duration_cuts(
    t: np.ndarray, cut: np.ndarray, open_start: int | None, open_last: int | None, max_d: int
) -> np.ndarray:
    """Add eKuiper's max-duration cuts (seed 003; ek-011): checks happen at the multiples ``c`` of
    the max duration; at the first check ``c`` with ``c - start > max_d`` after the previous row,
    the window closes and the row at or after ``c`` starts a new one."""
    out = cut.copy()
    start = open_start
    prev = open_last
    for i in range(t.shape[0]):
        ti = int(t[i])
        if out[i] or start is None or prev is None:
            out[i] = True
        else:
            c = (prev // max_d + 1) * max_d
            while c <= ti:
                if c - start > max_d:
                    out[i] = True
                    break
                c += max_d
        if out[i]:
            start = ti
        prev = ti
    return out


def _ek_close(w: Win, spec: SegmentSpec, next_ts: int) -> int:
    """eKuiper session close time: the first max-duration check ``c`` after the last row with
    ``c - wstart > max`` if it comes before the next row, else the timeout after the last row."""
    t = w.wlast + spec.gap
    if spec.max_duration > 0:
        md = spec.max_duration
        c = (w.wlast // md + 1) * md
        while c <= next_ts:
            if c - w.wstart > md:
                return min(t, c)
            c += md
    return t


def _ek_pending_close(w: Win, spec: SegmentSpec) -> int:
    """Close time of an eKuiper session that no row has ended yet (timeout or max duration)."""
    return _ek_close(w, spec, w.wlast + spec.gap)


class SegmentState:
    """All groups of one bucket and the partial aggregates of their unfinished windows."""

    def __init__(self, aggs: list[AggSpec]) -> None:
        self.aggs = aggs
        self.gkeys: list[str] = []
        self.gid_of: dict[str, int] = {}
        self.groups: list[SegmentGroup] = []
        self.partials = Partials.empty(aggs)  # keyed (gid, wid)

    def gids(self, gkeys: np.ndarray) -> np.ndarray:
        """Group ids for keys, registering new groups."""
        ids, added = register_groups(gkeys, self.gid_of, self.gkeys)
        self.groups.extend(SegmentGroup() for _ in range(added))
        return ids

    def drop(self, keys: list[tuple[int, int]]) -> None:
        """Forget the partials of these (gid, wid) windows."""
        if keys and len(self.partials):
            g = np.array([k[0] for k in keys], np.int64)
            w = np.array([k[1] for k in keys], np.int64)
            pos = key_index(g, w, self.partials.gid, self.partials.wkey)
            self.partials = self.partials.take(np.flatnonzero(pos < 0))

    def trim(self, g: int, delete_mark: int) -> None:
        """Keep RETAIN_CLOSED final windows of group ``g`` in full and older ones as bounds
        (at most RETAIN_BOUNDS, none older than DELETE_MARK)."""
        grp = self.groups[g]
        nfinal = len(grp.windows) - len(grp.unfinished())
        if nfinal > RETAIN_CLOSED:
            old = grp.windows[: nfinal - RETAIN_CLOSED]
            grp.windows = grp.windows[nfinal - RETAIN_CLOSED :]
            rows = np.array([(w.wstart, w.wlast, w.info.get("j", -1)) for w in old], np.int64).reshape(-1, 3)
            grp.bounds = np.concatenate([grp.bounds, rows])
        if grp.bounds.shape[0]:
            floor = grp.max_ts - delete_mark if grp.max_ts != I64_MIN else I64_MIN
            keep = grp.bounds[:, 1] >= floor
            keep[: max(0, grp.bounds.shape[0] - RETAIN_BOUNDS)] = False
            if not keep.all():
                grp.bounds = grp.bounds[keep]
                grp.evicted = True

    def nbytes(self) -> int:
        """Approximate memory: partials, ~120 bytes per retained window, the group keys."""
        wins = sum(len(g.windows) for g in self.groups)
        bounds = sum(g.bounds.nbytes for g in self.groups)
        return self.partials.nbytes() + 120 * wins + bounds + sum(len(k) + 120 for k in self.gkeys)

    def to_bytes(self) -> bytes:
        """Versioned serialization of tdweb's own state (pickle protocol 5, numpy buffers; each
        window as a plain tuple, ``_WIN_FIELDS``: a third of the cost of pickling the objects)."""
        groups = [
            (
                list(map(_win_tuple, g.windows)),
                g.next_wid,
                g.last_ts,
                g.max_ts,
                g.carry,
                g.evicted,
                g.bounds,
            )
            for g in self.groups
        ]
        payload = {
            "v": STATE_FORMAT,
            "gkeys": self.gkeys,
            "groups": groups,
            "gid": self.partials.gid,
            "wkey": self.partials.wkey,
            "cols": self.partials.cols,
        }
        return pickle.dumps(payload, protocol=5)

    @classmethod
    def from_bytes(cls, aggs: list[AggSpec], data: bytes) -> SegmentState:
        """Inverse of ``to_bytes``; also reads format 1 (windows pickled as objects), which
        checkpoints written before the tuples hold.

        Raises:
            ValueError: the bytes were written by an unknown state format.
        """
        payload = pickle.loads(data)  # our own checkpointed state, never user input
        version = payload.get("v")
        if version not in (1, STATE_FORMAT):
            raise ValueError(f"unsupported segment state format {version}")
        st = cls(aggs)
        st.gkeys = payload["gkeys"]
        st.gid_of = {k: i for i, k in enumerate(st.gkeys)}
        for wins, nxt, last, mx, carry, evicted, bounds in payload["groups"]:
            grp = SegmentGroup()
            grp.bounds = bounds
            grp.windows = wins if version == 1 else [Win(*t) for t in wins]
            grp.next_wid, grp.last_ts, grp.max_ts = nxt, last, mx
            grp.carry, grp.evicted = carry, evicted
            st.groups.append(grp)
        st.partials = Partials(payload["gid"], payload["wkey"], payload["cols"])
        return st


_WIN_FIELDS = ("wid", "wstart", "wlast", "nrows", "close_time", "final", "written", "info")
"""``Win``'s fields in constructor order: a window's serialized tuple (state format 2)."""
_win_tuple = operator.attrgetter(*_WIN_FIELDS)


def _running_max_before(ts: np.ndarray, adv: np.ndarray, base: int) -> np.ndarray:
    """For rows in arrival order: the latest time of the advancing rows before each row."""
    t = np.where(adv, ts, I64_MIN)
    cm = np.maximum.accumulate(t) if t.size else t
    prev = np.empty_like(cm)
    if prev.size:
        prev[0] = I64_MIN
        prev[1:] = cm[:-1]
    return np.maximum(prev, base)


class SegmentEngine:
    """Data-defined windows over a stream, for all groups of one bucket (module docstring).

    Args:
        spec: the window shape.
        aggs: aggregate calls whose partials the state keeps.
        rules: trigger mode and time rules.
        in_order: take the groups whose rows only continue their windows all at once
            (``segments_inorder``); False runs every group row by row (the reference the fast
            path is tested against).

    Raises:
        ValueError: unknown window kind.
    """

    def __init__(
        self, spec: SegmentSpec, aggs: list[AggSpec], rules: StreamRules, *, in_order: bool = True
    ) -> None:
        if spec.kind not in KINDS:
            raise ValueError(f"unknown window kind {spec.kind}")
        self.spec = spec
        self.aggs = aggs
        self.rules = rules
        self.in_order = in_order

    def new_state(self) -> SegmentState:
        return SegmentState(self.aggs)

    def wend(self, w: Win) -> int:
        """The window's ``_wend``."""
        k = self.spec.kind
        if k == "session":
            return w.wlast if self.spec.end_at_last_row else w.wlast + self.spec.gap
        if k == "ek_session":
            return w.close_time if w.close_time is not None else _ek_pending_close(w, self.spec)
        return w.wlast

    def visible(self, w: Win) -> bool:
        """Can the window be in the output table (an open legacy event window cannot, nor one
        shorter than TRUE_FOR)?"""
        return (w.close_time is not None or self.spec.emit_open) and not self.too_short(w)

    def too_short(self, w: Win) -> bool:
        """Is the window shorter than TRUE_FOR (seed 002)?"""
        return bool(self.spec.true_for) and self.wend(w) - w.wstart < self.spec.true_for

    def _extras(self, batch: RowBatch, idx: np.ndarray) -> dict[str, Any]:
        k = self.spec.kind
        if k == "state":
            v, ok = batch.extra["state"]
            return {"state": (v[idx], ok[idx])}
        if k == "event":
            sv, sok = batch.extra["start"]
            ev, eok = batch.extra["end"]
            return {"start": sv[idx].astype(bool) & sok[idx], "end": ev[idx].astype(bool) & eok[idx]}
        if "count_valid" in batch.extra:
            v, ok = batch.extra["count_valid"]
            return {"count_valid": v[idx].astype(bool) & ok[idx]}
        return {}

    def horizon(self, grp: SegmentGroup, now: int | None) -> int:
        """``T`` of a group: latest event time minus the watermark, or the wall clock ``now`` in
        processing-time mode."""
        if self.rules.processing_time and now is not None:
            return now - self.rules.watermark
        if grp.max_ts == I64_MIN:
            return I64_MIN
        return grp.max_ts - self.rules.watermark

    def step(
        self, state: SegmentState, batch: RowBatch, recalc: RangeReader | None = None, now: int | None = None
    ) -> StepOutput:
        """Process one micro-batch.

        Args:
            state: the bucket's state; updated in place.
            batch: rows of this bucket in arrival order (may be empty: a timer step).
            recalc: reader of the lake snapshot the batch ends at; without it windows that need
                re-segmentation are left as they are (``stats['recalc_skipped']``).
            now: the wall clock in precision units (processing-time mode; timers).

        Returns:
            StepOutput: windows to write (keyed by group and start), removals, events, counters.
        """
        n = len(batch)
        history = bool(n) and bool(batch.is_history.all())
        out = _Output(self, state, history)
        stats: dict[str, int | None] = {
            "rows_in": n,
            "rows_expired": 0,
            "windows_opened": 0,
            "windows_closed": 0,
            "recalculated": 0,
            "recalc_skipped": 0,
        }
        touched: list[int] = []
        if n:
            gid = group_ids(batch, state.gids)
            order = np.argsort(gid, kind="stable")  # group slices, arrival order inside
            gs = gid[order]
            edges = np.append(np.flatnonzero(np.diff(gs)) + 1, n)
            keep = batch.extra["keep"][0].astype(bool) if "keep" in batch.extra else np.ones(n, bool)
            starts = np.concatenate(([0], edges[:-1]))
            slice_g = gs[starts].tolist()
            fast = np.zeros(len(slice_g), bool)
            if self.in_order and inorder.covers(self.spec, self.rules, out._want("WINDOW_OPEN")):
                fast = inorder.in_order_slices(
                    self.spec, self.rules, state.groups, batch, order, starts, slice_g, keep
                )
                if fast.any():
                    slices = (starts, edges, slice_g)
                    self._step_in_order(state, batch, gid, order, slices, fast, keep, out, stats)
            for k, g in enumerate(slice_g):
                if not fast[k]:
                    self._group_step(state, g, batch, order[starts[k] : edges[k]], keep, recalc, out, stats)
                touched.append(g)
        if out.lift_rows:
            rows = np.concatenate(out.lift_rows)
            inputs = {k: (v[rows], m[rows]) for k, (v, m) in batch.inputs.items()}
            out.parts.append(
                lift(
                    self.aggs,
                    np.concatenate(out.lift_gid),
                    np.concatenate(out.lift_wid),
                    batch.ts[rows],
                    inputs,
                )
            )
        if out.parts:
            state.partials = combine(self.aggs, Partials.concat([state.partials, *out.parts]))
        check = touched
        if now is not None and (self.rules.processing_time or self.rules.mode == "MAX_DELAY"):
            check = list(range(len(state.groups)))
        for g in check:
            self._finalize(g, state.groups[g], out, stats, now)
        res = out.finish()
        for g in touched:
            state.trim(g, self.rules.delete_mark)
        stats["open_windows"] = len(state.partials)
        stats["state_bytes"] = state.nbytes()
        seen = [grp.max_ts for grp in state.groups if grp.max_ts != I64_MIN]
        stats["max_ts"] = max(seen) if seen else None
        return StepOutput(res.upserts, res.removals, res.events, stats)

    def _step_in_order(
        self,
        state: SegmentState,
        batch: RowBatch,
        gid: np.ndarray,
        order: np.ndarray,
        slices: tuple[np.ndarray, np.ndarray, list[int]],
        fast: np.ndarray,
        keep: np.ndarray,
        out: _Output,
        stats: dict[str, int | None],
    ) -> None:
        """The groups whose rows only continue their windows, all at once
        (``segments_inorder``): what ``_group_step`` does for them, without a pass per group.
        ``slices``: each group's slice of ``order`` as (starts, ends, gid); ``fast``: per slice."""
        starts, ends, slice_g = slices
        pos = order[np.repeat(fast, ends - starts)]
        latest = np.maximum.reduceat(batch.ts[order], starts).tolist()
        for g, t, take in zip(slice_g, latest, fast.tolist(), strict=True):
            if take:
                grp = state.groups[g]
                grp.max_ts = max(grp.max_ts, t)
        kept = pos[keep[pos]]
        if not kept.size:
            return
        t, g = batch.ts[kept], gid[kept]
        if not (np.diff(t)[g[1:] == g[:-1]] >= 0).all():  # rows came out of time order
            kept = kept[np.argsort(t, kind="stable")]
            kept = kept[np.argsort(gid[kept], kind="stable")]
        cut = inorder.cut_in_order(self.spec, state.groups, batch, kept, gid)
        stats["windows_opened"] = int(stats["windows_opened"] or 0) + cut.opened
        if cut.rows.size:
            out.lift_rows.append(cut.rows)
            out.lift_gid.append(cut.gids)
            out.lift_wid.append(cut.wids)
        if self.rules.mode in ("AT_ONCE", "MAX_DELAY"):
            for g, w in cut.touched:
                out.touched(g, w)

    def _group_step(
        self,
        state: SegmentState,
        g: int,
        batch: RowBatch,
        idx: np.ndarray,
        keep_all: np.ndarray,
        recalc: RangeReader | None,
        out: _Output,
        stats: dict[str, int | None],
    ) -> None:
        r = self.rules
        grp = state.groups[g]
        ts = batch.ts[idx]
        ch = batch.changes[idx]
        kp = keep_all[idx]
        ins = ch == INSERT
        adv = ins | (ch == UPDATE_POST)
        prev = _running_max_before(ts, adv, grp.max_ts)
        if adv.any():
            grp.max_ts = max(grp.max_ts, int(ts[adv].max()))
        mark_floor = grp.max_ts - r.delete_mark if grp.max_ts != I64_MIN else I64_MIN
        new = ins & kp
        changed = (ch == DELETE) | (ch == UPDATE_PRE) | (ch == UPDATE_POST)
        expired = np.zeros(idx.size, bool)
        if r.late_by_watermark:
            # eKuiper: a row older than the watermark when it arrives is dropped (ek-009, ek-011)
            expired = new & (prev != I64_MIN) & (ts < prev - r.watermark)
        late = new & ~expired & ((ts < grp.last_ts) | (r.key_ties_late & (ts == grp.last_ts)))
        if self.spec.kind == "session":
            done = grp.last_final()
            if done is not None and done.close_time is not None:
                late |= new & ~expired & (ts <= done.close_time)  # would extend a final session
        beyond = (late | changed) & (ts < mark_floor)  # older than DELETE_MARK: dropped
        if r.expired_time:
            # EXPIRED_TIME (seed 002 "Expired Data"): older than the group's latest time minus the
            # expiry when it came: no window, no recalculation; FILL_HISTORY rows never expire
            hist = batch.is_history[idx]
            expired |= (new | changed) & ~hist & (prev != I64_MIN) & (ts < prev - r.expired_time)
        if late.any() and r.mode != "AT_ONCE" and r.ignore_expired and not r.late_by_watermark:
            pos = np.flatnonzero(late & ~beyond)
            final = [self._is_final_at(grp, int(ts[i]), int(prev[i])) for i in pos]
            expired[pos[np.asarray(final, bool)]] = True
        beyond |= expired
        stats["rows_expired"] = int(stats["rows_expired"] or 0) + int(((late & beyond) | expired).sum())
        touching = (late | changed) & ~beyond
        fresh = new & ~late & ~expired
        if touching.any():
            lowest = int(ts[touching | fresh].min())
            anchor = self._anchor(grp, lowest)
            if (
                anchor is not None
                and r.ignore_expired
                and r.mode != "AT_ONCE"
                and not (changed & touching).any()
            ):
                # late inserts, none expired: closed windows keep their rows
                first = int(np.argmin(np.where(touching | fresh, ts, np.iinfo(np.int64).max)))
                floor = self._insert_floor(grp, lowest, int(prev[first]) - r.watermark)
                anchor = anchor if floor is None else max(anchor, floor)
            if anchor is not None and recalc is not None:
                out.changed[g] = (int(ts[touching].min()), int(ts[touching].max()))
                self._recompute(state, g, grp, anchor, recalc, out, stats)
                stats["recalculated"] = int(stats["recalculated"] or 0) + 1
                return
            if anchor is None:
                stats["rows_expired"] = int(stats["rows_expired"] or 0) + int((late & touching).sum())
            else:
                stats["recalc_skipped"] = int(stats["recalc_skipped"] or 0) + 1
        if fresh.any():
            sel = idx[fresh]
            sel = sel[np.argsort(batch.ts[sel], kind="stable")]
            seg = segment_rows(
                self.spec, batch.ts[sel], self._extras(batch, sel), grp.carry, grp.open(), grp.next_wid
            )
            self._absorb(g, grp, batch, sel, seg, out, stats, lift_now=False)

    def _is_final_at(self, grp: SegmentGroup, ts: int, prev_max: int) -> bool:
        """Is a late row at ``ts`` expired: does it fall into a window that was closed when it
        arrived (``T`` = ``prev_max`` − watermark)?

        Seed 000, "Stream Computing's Strategy for Handling Expired Data": "For windows that have
        closed, data that falls into these windows again is marked as expired data". A row falls
        into the closed window before it when it lies in its span or joins it -- session: within
        ``[wstart, wlast + tolerance]``; state: before the row that changed the state (seed 000:
        "When the value of col changes, the current window ends"; a row there either joins the
        window or splits the closed sequence); event: within ``[wstart, end row]``; count: before
        the last row of a closed window (it would shift its rows). A late row after every closed
        window (the rows of s000-2 in ``test_seed_statements.py``) is not expired: it is
        segmented with its neighbours. A late row before the start of a closed window is expired
        too: re-segmenting from it would change that window (a row joining or reaching it, or the
        expired rows the lake still holds in it)."""
        t_now = prev_max - self.rules.watermark
        known = grp.known()
        if any(w.wstart > ts and self._closed_at(w, t_now) for w in known):
            return True
        before = [w for w in known if w.wstart <= ts]
        if self.spec.kind in ("count", "ek_count"):
            return any(w.wlast >= ts and self._closed_at(w, t_now) for w in before)
        if self.spec.kind == "state":  # a state window lasts until the row that changed the state
            return bool(before) and self._closed_at(before[-1], t_now)
        return bool(before) and self._closed_at(before[-1], t_now) and self._falls_into(before[-1], ts)

    def _closed_at(self, w: Win, t_now: int) -> bool:
        """Was window ``w`` closed at ``T = t_now`` (final, or its close time reached: seed 000
        "Window Closure"; a session closes once ``T`` passes its last row + tolerance)?"""
        if w.final:
            return True
        ct = w.close_time
        if self.spec.kind == "session":
            return (w.wlast + self.spec.gap if ct is None else ct) < t_now
        return ct is not None and ct <= t_now

    def _falls_into(self, w: Win, ts: int) -> bool:
        """Does a row at ``ts`` (not before ``w`` starts, before the next window) fall into or
        join session or event window ``w``?"""
        kind = self.spec.kind
        if ts <= w.wlast:
            return True
        if kind in ("session", "ek_session"):
            return ts <= w.wlast + self.spec.gap
        return w.close_time is None  # event: an open window takes every later row

    def _insert_floor(self, grp: SegmentGroup, ts: int, t_now: int) -> int | None:
        """The earliest start a re-segmentation for late inserts from ``ts`` (none expired, at
        ``T = t_now``) may have: the first window starting at or before ``ts`` that is not closed,
        else ``ts`` when every such window ends before it. Closed windows keep their rows (the
        lake still holds the expired ones in them); None: no bound."""
        before = [w for w in grp.known() if w.wstart <= ts]
        unclosed = [w.wstart for w in before if not self._closed_at(w, t_now)]
        if unclosed:
            return unclosed[0]
        if before and all(w.wlast < ts for w in before):
            return ts
        return None

    def _anchor(self, grp: SegmentGroup, ts: int) -> int | None:
        """Start of the earliest retained window a change at ``ts`` can touch; ``ts`` when no window
        starts at or before it and none was forgotten; None when it cannot be anchored."""
        known = grp.known()
        before = [w for w in known if w.wstart <= ts]
        if not before:
            return None if grp.evicted else ts
        covering = [w.wstart for w in before if w.wlast >= ts]
        if not covering:
            last = before[-1]
            k = self.spec.kind
            # past the reach of the window before it: the change starts its own re-segmentation
            if (k in ("session", "ek_session") and ts > last.wlast + self.spec.gap) or (
                k == "event" and last.close_time is not None
            ):
                return ts
        anchor = min([before[-1].wstart, *covering])
        if self.spec.kind == "state":
            # emptying a window can merge its neighbours (same state on both sides)
            starts = [w.wstart for w in known]
            i = starts.index(anchor)
            if i > 0:
                return starts[i - 1]
            return None if grp.evicted else anchor
        return anchor

    def _absorb(
        self,
        g: int,
        grp: SegmentGroup,
        batch: RowBatch,
        sel: np.ndarray,
        seg: Segmented,
        out: _Output,
        stats: dict[str, int | None],
        *,
        lift_now: bool,
        known_starts: frozenset[int] = frozenset(),
    ) -> None:
        """Take a segmentation of ``batch`` rows ``sel`` (sorted by time) into the group;
        ``known_starts``: starts of the windows a re-segmentation replaces (already opened: their
        WINDOW_OPEN is not sent again)."""
        known = {w.wid for w in grp.windows}
        fresh = [w for w in seg.wins if w.wid not in known]
        grp.windows.extend(fresh)
        if fresh and len(grp.windows) > len(fresh) and grp.windows[-len(fresh) - 1].wstart > fresh[0].wstart:
            grp.windows.sort(key=lambda w: (w.wstart, w.wid))
        grp.next_wid = seg.next_wid
        grp.carry = seg.carry
        if sel.size:
            grp.last_ts = max(grp.last_ts, int(batch.ts[sel[-1]]))
        stats["windows_opened"] = int(stats["windows_opened"] or 0) + len(fresh)
        if seg.rows.size:
            rows, wids = sel[seg.rows], seg.wids
            if "where" in batch.extra:  # eKuiper: WHERE filters a window's rows after windowing
                wv, wok = batch.extra["where"]
                agg = wv[rows].astype(bool) & wok[rows]
                rows, wids = rows[agg], wids[agg]
        if seg.rows.size and rows.size:
            if lift_now:
                inputs = {k: (v[rows], m[rows]) for k, (v, m) in batch.inputs.items()}
                gids = np.full(rows.size, g, np.int64)
                out.parts.append(lift(self.aggs, gids, wids, batch.ts[rows], inputs))
            else:
                out.lift_rows.append(rows)
                out.lift_gid.append(np.full(rows.size, g, np.int64))
                out.lift_wid.append(wids)
        by_wid = {w.wid: w for w in seg.wins}
        on_start, on_end = condition_columns(batch, "start"), condition_columns(batch, "end")
        for wid, i in seg.opened_at.items():
            by_wid[wid].info["open_values"] = condition_values(on_start, int(sel[i]))
        for wid, i in seg.closed_at.items():
            by_wid[wid].info["close_values"] = condition_values(on_end, int(sel[i]))
        for w in fresh:
            if w.wstart not in known_starts:
                out.opened(g, w)
        for w in seg.wins:
            out.touched(g, w)

    def _recompute(
        self,
        state: SegmentState,
        g: int,
        grp: SegmentGroup,
        anchor: int,
        recalc: RangeReader,
        out: _Output,
        stats: dict[str, int | None],
    ) -> None:
        """Re-segment the group from ``anchor`` with the lake's current rows."""
        gkey = state.gkeys[g]
        rows = recalc([gkey], anchor)
        sel = np.empty(0, np.int64)
        if len(rows):
            mask = (rows.gkey == gkey) & (rows.ts >= anchor)
            if "keep" in rows.extra:
                mask &= rows.extra["keep"][0].astype(bool) & rows.extra["keep"][1]
            sel = np.flatnonzero(mask)
            sel = sel[np.argsort(rows.ts[sel], kind="stable")]
        old = [w for w in grp.known() if w.wstart >= anchor]
        grp.windows = [w for w in grp.windows if w.wstart < anchor]
        grp.bounds = grp.bounds[grp.bounds[:, 0] < anchor]
        state.drop([(g, w.wid) for w in old if w.wid >= 0])
        out.replaced(g, old)
        remaining = grp.known()
        carry: dict[str, Any] = {}
        if self.spec.kind in ("count", "ek_count"):
            js = [w.info["j"] for w in remaining if "j" in w.info]
            carry["seen"] = self.spec.first + (max(js) + 1) * self.spec.step if js else 0
        elif self.spec.kind == "state":
            carry["prev_state"] = grp.windows[-1].info.get("state") if grp.windows else None
        grp.carry = carry
        grp.last_ts = max([I64_MIN, *[w.wlast for w in remaining[-RETAIN_CLOSED - 1 :]]])
        if sel.size:
            seg = segment_rows(self.spec, rows.ts[sel], self._extras(rows, sel), carry, [], grp.next_wid)
            starts = frozenset(w.wstart for w in old)
            self._absorb(g, grp, rows, sel, seg, out, stats, lift_now=True, known_starts=starts)
            # a window already in the output is rewritten at once, whatever the trigger mode
            written = {w.wstart for w in old if w.written}
            for w in seg.wins:
                if w.wstart in written and self.visible(w):
                    out.emit[(g, w.wid)] = w

    def _finalize(
        self, g: int, grp: SegmentGroup, out: _Output, stats: dict[str, int | None], now: int | None
    ) -> None:
        t = self.horizon(grp, now)
        if t == I64_MIN:
            return
        k = self.spec.kind
        for w in grp.unfinished():
            ct = w.close_time
            strict = k == "session"
            if ct is None and k in ("session", "ek_session"):
                # no later row yet: a session also ends once T passes its timeout (any row that
                # could still extend it would be late)
                ct = w.wlast + self.spec.gap if k == "session" else _ek_pending_close(w, self.spec)
                strict = True
            if ct is None:
                if self.rules.mode == "MAX_DELAY" and now is not None:
                    out.max_delay(g, w, now)
                continue
            if (ct < t) if strict else (ct <= t):
                w.close_time = ct
                w.final = True
                stats["windows_closed"] = int(stats["windows_closed"] or 0) + 1
                out.closed(g, w)
            elif self.rules.mode == "MAX_DELAY" and now is not None:
                out.max_delay(g, w, now)


@dataclass
class _Finished:
    upserts: WindowResults
    removals: list[tuple[str, int]]
    events: list[WindowEvent]


class _Output:
    """What one step writes and notifies."""

    def __init__(self, eng: SegmentEngine, state: SegmentState, history: bool) -> None:
        self.eng = eng
        self.state = state
        self.history = history
        self.parts: list[Partials] = []
        self.lift_rows: list[np.ndarray] = []
        self.lift_gid: list[np.ndarray] = []
        self.lift_wid: list[np.ndarray] = []
        self.emit: dict[tuple[int, int], Win] = {}
        self.events: list[WindowEvent] = []
        self.removed: list[tuple[int, Win]] = []
        self.changed: dict[int, tuple[int, int]] = {}  # group -> time range of its changed rows
        self._close_events = self._want("WINDOW_CLOSE")  # asked once per step, not per window

    def _want(self, kind: str) -> bool:
        r = self.eng.rules
        if kind == "WINDOW_INVALIDATION":  # any window notification hears of invalidated windows
            wanted = r.notify_open or r.notify_close
        else:
            wanted = r.notify_open if kind == "WINDOW_OPEN" else r.notify_close
        return wanted and (r.notify_history or not self.history)

    def _event(self, kind: str, g: int, w: Win) -> None:
        info = {k: v for k, v in w.info.items() if k not in ("j", "dirty_since")}
        wend = self.eng.wend(w)
        self.events.append(WindowEvent(kind, self.state.gkeys[g], w.wstart, wend, self.history, info))

    def opened(self, g: int, w: Win) -> None:
        if self._want("WINDOW_OPEN"):
            self._event("WINDOW_OPEN", g, w)

    def touched(self, g: int, w: Win) -> None:
        mode = self.eng.rules.mode
        if mode == "AT_ONCE" and (w.close_time is not None or self.eng.spec.emit_open):
            self.emit[(g, w.wid)] = w
        elif mode == "MAX_DELAY":
            w.info.setdefault("dirty_since", None)

    def max_delay(self, g: int, w: Win, now: int) -> None:
        """MAX_DELAY (seed 000): an unfinished window with unwritten changes is written once it
        has waited ``max_delay`` (processing time) since its first unwritten change."""
        if "dirty_since" not in w.info:
            return
        since = w.info["dirty_since"]
        if since is None:
            w.info["dirty_since"] = now
        elif now - since >= self.eng.rules.max_delay:
            self.emit[(g, w.wid)] = w

    def closed(self, g: int, w: Win) -> None:
        self.emit[(g, w.wid)] = w
        if self._close_events and not self.eng.too_short(w):
            self._event("WINDOW_CLOSE", g, w)

    def replaced(self, g: int, old: list[Win]) -> None:
        for w in old:
            self.emit.pop((g, w.wid), None)
            self.removed.append((g, w))

    def _invalidated(self, g: int, w: Win, ends: dict[tuple[int, int], int]) -> bool:
        """WINDOW_INVALIDATION (seed 000 / 002 "Fields for Window Invalidation"): a written window
        replaced by a re-segmentation is invalidated when it is gone, its bounds changed, or a
        changed row falls in it (its result is recalculated); windows after the change that come
        back with the same bounds hold the same rows and are not. (An unwritten window whose
        WINDOW_OPEN was sent is invalidated only when it is gone: ``finish``.)"""
        wend = self.eng.wend(w)
        if ends.get((g, w.wstart)) != wend:
            return True
        lo, hi = self.changed.get(g, (w.wstart, wend))
        return w.wstart <= hi and wend >= lo

    def finish(self) -> _Finished:
        eng, st = self.eng, self.state
        # (group, window start) order, by one lexsort over all windows to write
        keys = list(self.emit)
        if len(keys) > 1:
            order = np.lexsort(
                (
                    np.fromiter((w.wstart for w in self.emit.values()), np.int64, len(keys)),
                    np.fromiter((k[0] for k in keys), np.int64, len(keys)),
                )
            )
            keys = [keys[i] for i in order.tolist()]
        part = st.partials
        sel_idx = np.empty(0, np.int64)
        if keys and len(part):
            gk = np.array([k[0] for k in keys], np.int64)
            wk = np.array([k[1] for k in keys], np.int64)
            idx = key_index(part.gid, part.wkey, gk, wk)
            keys = [k for k, i in zip(keys, idx, strict=True) if i >= 0]
            sel_idx = idx[idx >= 0]
        else:
            keys = []
        short: list[tuple[int, Win]] = []
        if eng.spec.true_for and keys:  # TRUE_FOR: short windows are discarded (seed 002)
            long_enough = np.array([not eng.too_short(self.emit[k]) for k in keys], bool)
            short = [(k[0], self.emit[k]) for k, ok in zip(keys, long_enough, strict=True) if not ok]
            keys = [k for k, ok in zip(keys, long_enough, strict=True) if ok]
            sel_idx = sel_idx[long_enough]
        sel = part.take(sel_idx) if sel_idx.size else Partials.empty(eng.aggs)
        wins = [self.emit[k] for k in keys]
        for w in wins:
            w.written = True
            w.info.pop("dirty_since", None)
        res = WindowResults(
            np.array([st.gkeys[g] for g, _ in keys], dtype=object),
            np.array([w.wstart for w in wins], np.int64),
            np.array([eng.wend(w) for w in wins], np.int64),
            lower(eng.aggs, sel),
        )
        removals: list[tuple[str, int]] = []
        closes = self.events
        self.events = []  # invalidations first: they happened when the change came
        for g, w in short:
            if w.written:  # a recalculation made a written window too short
                removals.append((st.gkeys[g], w.wstart))
                w.written = False
                if self._want("WINDOW_INVALIDATION"):
                    self._event("WINDOW_INVALIDATION", g, w)
        if self.removed:
            alive = {(g, w.wstart) for (g, _), w in zip(keys, wins, strict=True)}
            groups = {g for g, _ in self.removed}
            alive |= {(g, w.wstart) for g in groups for w in st.groups[g].windows if eng.visible(w)}
            ends = {(g, w.wstart): eng.wend(w) for (g, _), w in zip(keys, wins, strict=True)}
            for g in groups:
                for w in st.groups[g].windows:
                    ends.setdefault((g, w.wstart), eng.wend(w))
            for g, w in self.removed:
                if w.written and (g, w.wstart) not in alive:
                    removals.append((st.gkeys[g], w.wstart))
                if not self._want("WINDOW_INVALIDATION"):
                    continue
                # a written window, or an opened one (WINDOW_OPEN was sent) that is gone
                opened = eng.rules.notify_open and (g, w.wstart) not in ends
                if (w.written and self._invalidated(g, w, ends)) or (not w.written and opened):
                    self._event("WINDOW_INVALIDATION", g, w)
        # partials of final windows are no longer needed once written
        done = [(g, w.wid) for (g, _), w in zip(keys, wins, strict=True) if w.final]
        done += [(g, w.wid) for g, w in short if w.final]
        st.drop(done)
        self.events += closes
        return _Finished(res, removals, self.events)


def segment_aggregate(spec: SegmentSpec, aggs: list[AggSpec], rows: RowBatch) -> WindowResults:
    """Batch form (interactive SELECT): every window of every group with the streams'
    segmentation and aggregates.

    Open windows are included (a trailing session, state or count window), except event windows
    whose end condition never came and eKuiper windows, which only exist once complete. Sorted by
    (group key, window start).
    """
    if not len(rows):
        empty = Partials.empty(aggs)
        return WindowResults(
            np.empty(0, object), np.empty(0, np.int64), np.empty(0, np.int64), lower(aggs, empty)
        )
    batch_spec = dataclasses.replace(spec, emit_open=spec.kind not in ("event", "ek_count"))
    eng = SegmentEngine(batch_spec, aggs, StreamRules(mode="AT_ONCE", delete_mark=1 << 62))
    st = eng.new_state()
    rows = rows.take(np.lexsort((rows.ts, rows.gkey.astype(str))))
    res = eng.step(st, RowBatch(rows.gkey, rows.ts, rows.inputs, None, None, rows.extra)).upserts
    o = np.lexsort((res.wstart, res.gkey.astype(str)))
    vals = {k: (v[o], m[o]) for k, (v, m) in res.values.items()}
    return WindowResults(res.gkey[o], res.wstart[o], res.wend[o], vals)
