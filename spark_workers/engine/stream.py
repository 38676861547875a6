"""Streaming window state machine for time windows (INTERVAL), vectorized over all groups of a bucket.

Rules implemented (seed 000 "Window Closure", "Expired Data", "Modified Data", "DELETE_MARK";
seed 004 "Disordered processing"; decisions in docs/decisions.md):

- Each group (a PARTITION BY value) has its own timeline. ``T = latest event time - watermark``
  (per group); a window closes when its exclusive end ``_wend <= T``.
- Rows are judged in arrival order, each against the latest event time of the rows of its group
  that arrived *before* it, so results do not depend on how rows are split into micro-batches.
- A row for an already closed window is *expired*. Beyond DELETE_MARK it is dropped. Within it:
  AT_ONCE recalculates the window (closing only frees memory in AT_ONCE, seed 000), other modes
  drop it (IGNORE EXPIRED 1, the default) or recalculate it (IGNORE EXPIRED 0).
- Updates (IGNORE UPDATE 0) and deletes recalculate the windows they touch; with IGNORE UPDATE 1 an
  update's new image is processed as an ordinary row. Recalculation reads the lake snapshot of the
  micro-batch (``recalc`` callback) and replaces the window's state; a window left without rows is
  removed from the output.
- AT_ONCE emits every window touched by the batch; WINDOW_CLOSE emits windows when they close and
  windows recalculated after closing.

State per bucket: the group table (key, latest event time) and one partial per open window
(``aggregates.Partials``); closed windows are released.
"""

from __future__ import annotations

import io
import itertools
import pickle
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from spark_workers.engine import buffers
from spark_workers.engine.aggregates import I64_MIN, AggSpec, Partials, combine, empty_partials, lift, lower
from spark_workers.engine.rows import (
    DELETE,
    INSERT,
    UPDATE_POST,
    UPDATE_PRE,
    RowBatch,
    group_ids,
    register_groups,
)
from spark_workers.engine.windows import CalendarAssigner, DailyAssigner, IntervalAssigner
from spark_workers.errors import Code, SqlError

STATE_FORMAT = 2
TEN_YEARS_MS = 10 * 365 * 86_400_000
EMPTY_WINDOWS_MAX = 10_000_000
"""Windows without rows one step may fire (``StreamRules.fire_empty``): a row far ahead of its
group's time would otherwise make millions of windows at once."""

RecalcReader = Callable[[list[str], int, int], RowBatch]
"""``recalc(gkeys, ts_lo, ts_hi)`` returns the lake's current rows of those groups with
``ts_lo <= ts <= ts_hi`` (stage-1 shape: group key, ts, aggregate inputs)."""


@dataclass(frozen=True)
class StreamRules:
    """Trigger and time rules of a stream, in precision units.

    Attributes:
        mode: AT_ONCE, WINDOW_CLOSE, MAX_DELAY, FORCE_WINDOW_CLOSE or CONTINUOUS_WINDOW_CLOSE.
        watermark: WATERMARK (0 by default).
        ignore_expired: IGNORE EXPIRED (default True).
        ignore_update: IGNORE UPDATE (default True, ARCHITECTURE.md).
        delete_mark: DELETE_MARK (default 10 years).
        notify_open / notify_close: which window events are wanted.
        notify_history: send events caused by FILL_HISTORY rows.
        max_delay: MAX_DELAY's delay (processing time, precision units).
        processing_time: windows follow the arrival time and close by the wall clock (eKuiper's
            processing-time mode, seed 003 "Timestamp Management").
        late_by_watermark: eKuiper's lateness rule: a row older than ``latest - watermark`` when
            it arrives is dropped, whatever its window (ek-009, ek-011).
        recalc_every: CONTINUOUS_WINDOW_CLOSE's RECALCULATE period (processing time; 60 min by
            default, seed 000).
        key_ties_late: the source has a composite key (``lake/keys.py``): a row at the time of
            the group's latest segmented row may sort before it (a smaller key), so data-defined
            windows treat it as out of order and re-segment from the lake, in (ts, key) order.
        fire_empty: INTERVAL windows without rows fire too, from the group's first window on
            (3.3.7 INTERVAL / SLIDING triggers without IGNORE_NODATA_TRIGGER, seed 002 "Stream
            Processing Control Options").
        expired_time: EXPIRED_TIME (0: none): a real-time row older than its group's latest event
            time minus this is ignored: it joins no window and recalculates nothing (seed 002
            "Expired Data").
    """

    mode: str = "WINDOW_CLOSE"
    watermark: int = 0
    ignore_expired: bool = True
    ignore_update: bool = True
    delete_mark: int = TEN_YEARS_MS
    notify_open: bool = False
    notify_close: bool = False
    notify_history: bool = False
    max_delay: int = 0
    processing_time: bool = False
    late_by_watermark: bool = False
    recalc_every: int = 3_600_000
    key_ties_late: bool = False
    fire_empty: bool = False
    expired_time: int = 0

    @property
    def clock_driven(self) -> bool:
        """Windows close by the wall clock: processing time, FORCE_WINDOW_CLOSE (seed 000)."""
        return self.processing_time or self.mode == "FORCE_WINDOW_CLOSE"


@dataclass
class WindowEvent:
    """A window event for notifications: ``kind`` is WINDOW_OPEN, WINDOW_CLOSE or
    WINDOW_INVALIDATION; ``history`` when caused by FILL_HISTORY rows."""

    kind: str
    gkey: str
    wstart: int
    wend: int
    history: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # window-type details (state values, conditions)


@dataclass
class WindowResults:
    """Lowered window results: one row per (group, window)."""

    gkey: np.ndarray
    wstart: np.ndarray
    wend: np.ndarray
    values: dict[str, tuple[np.ndarray, np.ndarray]]

    def __len__(self) -> int:
        return int(self.wstart.shape[0])


@dataclass
class StepOutput:
    """What one engine step produced.

    Attributes:
        upserts: window results to write (keyed by group and window start).
        removals: ``(gkey, wstart)`` of windows that no longer have rows.
        events: window events in the order they happened.
        stats: counters: rows_in, rows_expired, windows_opened, windows_closed, recalculated,
            open_windows, state_bytes.
    """

    upserts: WindowResults
    removals: list[tuple[str, int]] = field(default_factory=list)
    events: list[WindowEvent] = field(default_factory=list)
    stats: dict[str, int | None] = field(default_factory=dict)


class StreamState:
    """State of one bucket: groups and open windows."""

    def __init__(self, aggs: list[AggSpec]) -> None:
        self.aggs = aggs
        self.gkeys: list[str] = []
        self.gid_of: dict[str, int] = {}
        self.max_ts = np.empty(0, np.int64)
        self.first_ts = np.empty(0, np.int64)
        self.open = Partials.empty(aggs)
        # (gid, wstart) -> processing time: MAX_DELAY's unwritten changes of open windows
        self.dirty: dict[tuple[int, int], int] = {}
        # CONTINUOUS_WINDOW_CLOSE: windows waiting for the next periodic recalculation
        self.pending: set[tuple[int, int]] = set()
        self.last_recalc = I64_MIN

    def gids(self, gkeys: np.ndarray) -> np.ndarray:
        """Group ids for keys, registering new groups."""
        ids, added = register_groups(gkeys, self.gid_of, self.gkeys)
        if added:
            self.max_ts = np.concatenate([self.max_ts, np.full(added, I64_MIN, np.int64)])
            self.first_ts = np.concatenate([self.first_ts, np.full(added, I64_MIN, np.int64)])
        return ids

    def nbytes(self) -> int:
        return self.open.nbytes() + self.max_ts.nbytes + sum(len(k) + 8 for k in self.gkeys)

    # -------------------------------------------------------------- serialization (Arrow IPC)
    def to_bytes(self) -> bytes:
        """Compact versioned serialization: Arrow IPC of the group table and the open windows."""
        groups = pa.table(
            {"gkey": pa.array(self.gkeys, pa.string()), "max_ts": self.max_ts, "first_ts": self.first_ts}
        )
        cols: dict[str, Any] = {"gid": self.open.gid, "wkey": self.open.wkey}
        for k, v in self.open.cols.items():
            if k.endswith(".b"):  # value buffers (extended.py) as Arrow lists or bytes (buffers.py)
                cols[k] = buffers.encode_lists(v)
            elif k.endswith(".r"):  # collected rows (eKuiper)
                cols[k] = pa.array([pickle.dumps(x, protocol=5) for x in v], pa.binary())
            else:
                cols[k] = pa.array(v, from_pandas=True) if v.dtype == object else v
        windows = pa.table(cols)
        marks = [(g, w, t, 0) for (g, w), t in self.dirty.items()] + [(g, w, 0, 1) for g, w in self.pending]
        mt = pa.table(
            {
                "gid": pa.array([m[0] for m in marks], pa.int64()),
                "wkey": pa.array([m[1] for m in marks], pa.int64()),
                "t": pa.array([m[2] for m in marks], pa.int64()),
                "kind": pa.array([m[3] for m in marks], pa.int8()),
            }
        )
        parts = [_ipc(groups), _ipc(windows), _ipc(mt)]
        head = struct.pack("<IIIIq", STATE_FORMAT, *(len(p) for p in parts), self.last_recalc)
        return head + b"".join(parts)

    @classmethod
    def from_bytes(cls, aggs: list[AggSpec], data: bytes) -> StreamState:
        (fmt,) = struct.unpack_from("<I", data, 0)
        st = cls(aggs)
        if fmt == 1:  # issue-2 checkpoints: no first times, no marks
            _, n0, n1 = struct.unpack_from("<III", data, 0)
            off = struct.calcsize("<III")
            n2 = 0
        elif fmt == STATE_FORMAT:
            _, n0, n1, n2, st.last_recalc = struct.unpack_from("<IIIIq", data, 0)
            off = struct.calcsize("<IIIIq")
        else:
            raise ValueError(f"unsupported engine state format {fmt}")
        groups = pa.ipc.open_stream(io.BytesIO(data[off : off + n0])).read_all()
        windows = pa.ipc.open_stream(io.BytesIO(data[off + n0 : off + n0 + n1])).read_all()
        st.gkeys = groups.column("gkey").to_pylist()
        st.gid_of = {k: i for i, k in enumerate(st.gkeys)}
        st.max_ts = groups.column("max_ts").to_numpy(zero_copy_only=False).astype(np.int64)
        if "first_ts" in groups.column_names:
            st.first_ts = groups.column("first_ts").to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            st.first_ts = np.full(len(st.gkeys), I64_MIN, np.int64)
        if n2:
            mt = (
                pa.ipc.open_stream(io.BytesIO(data[off + n0 + n1 : off + n0 + n1 + n2]))
                .read_all()
                .to_pydict()
            )
            for g, w, t, kind in zip(mt["gid"], mt["wkey"], mt["t"], mt["kind"], strict=True):
                if kind == 0:
                    st.dirty[(g, w)] = t
                else:
                    st.pending.add((g, w))
        template = Partials.empty(aggs)
        cols = {}
        for k, empty in template.cols.items():
            col = windows.column(k)
            if k.endswith(".b"):
                cols[k] = buffers.decode_column(col)
            elif k.endswith(".r"):
                cols[k] = np.empty(len(col), dtype=object)
                for i, b in enumerate(col.to_pylist()):
                    cols[k][i] = pickle.loads(b)  # our own checkpointed state
            elif empty.dtype == object:
                cols[k] = np.asarray(col.to_pylist(), dtype=object)
            else:
                cols[k] = col.to_numpy(zero_copy_only=False).astype(empty.dtype)
        st.open = Partials(
            windows.column("gid").to_numpy(zero_copy_only=False).astype(np.int64),
            windows.column("wkey").to_numpy(zero_copy_only=False).astype(np.int64),
            cols,
        )
        return st


def _ipc(t: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue()


def key_index(gid_a: np.ndarray, w_a: np.ndarray, gid_b: np.ndarray, w_b: np.ndarray) -> np.ndarray:
    """Position of each (gid_b, w_b) key in the (gid_a, w_a) keys, -1 if absent."""
    if gid_a.shape[0] == 0:
        return np.full(gid_b.shape[0], -1, np.int64)
    idx = pd.MultiIndex.from_arrays([gid_a, w_a])
    return idx.get_indexer(pd.MultiIndex.from_arrays([gid_b, w_b])).astype(np.int64)


def _prev_running_max(gid: np.ndarray, ts: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For rows in arrival order: the latest event time of the same group before each row
    (``base[gid]`` from earlier batches, I64_MIN if none)."""
    order = np.argsort(gid, kind="stable")  # groups together, arrival order kept inside a group
    gs, ts_s = gid[order], ts[order].astype(np.int64)
    starts = np.empty(gs.shape[0], bool)
    starts[0] = True
    starts[1:] = gs[1:] != gs[:-1]
    cm = ts_s.copy()
    bounds = np.append(np.flatnonzero(starts), gs.shape[0])
    in_order = bool(np.all(starts[1:] | (ts_s[1:] >= ts_s[:-1])))
    if not in_order:  # the common in-order case needs no per-group pass
        for lo, hi in itertools.pairwise(bounds):
            if hi - lo > 1:
                np.maximum.accumulate(cm[lo:hi], out=cm[lo:hi])
    prev_s = np.full(gs.shape[0], I64_MIN, np.int64)
    prev_s[1:] = np.where(starts[1:], I64_MIN, cm[:-1])
    prev = np.empty_like(prev_s)
    prev[order] = prev_s
    return np.maximum(prev, base[gid])


class IntervalEngine:
    """INTERVAL windows over a stream, for all groups of one bucket at once.

    Args:
        assigner: the window assigner.
        aggs: aggregate calls whose partials the state keeps.
        rules: trigger mode and time rules.
        first_start_at_first_row: eKuiper's TUMBLINGWINDOW reports the first window's
            ``window_start()`` as the first event's time, not the aligned start (ek-009).
    """

    def __init__(
        self,
        assigner: IntervalAssigner | DailyAssigner | CalendarAssigner,
        aggs: list[AggSpec],
        rules: StreamRules,
        *,
        first_start_at_first_row: bool = False,
    ) -> None:
        self.assigner = assigner
        self.aggs = aggs
        self.rules = rules
        self.first_start_at_first_row = first_start_at_first_row

    def new_state(self) -> StreamState:
        return StreamState(self.aggs)

    def _closed(self, wend: np.ndarray, latest: np.ndarray, horizon: int) -> np.ndarray:
        """``wend <= latest - horizon`` without overflow for groups with no time yet."""
        has = latest != I64_MIN
        return has & (wend <= np.where(has, latest, 0) - horizon)

    def _latest(self, state: StreamState, gids: np.ndarray, now: int | None) -> np.ndarray:
        """The time windows of these groups are judged against: their latest event time, or the
        wall clock in clock-driven modes (FORCE_WINDOW_CLOSE, processing time)."""
        if self.rules.clock_driven and now is not None:
            return np.full(gids.shape[0], now, np.int64)
        return state.max_ts[gids]

    def step(
        self, state: StreamState, batch: RowBatch, recalc: RecalcReader | None = None, now: int | None = None
    ) -> StepOutput:
        """Process one batch of rows (arrival order) and return what to write and notify.

        The phases are the methods of ``_IntervalStep``, in the order its ``run`` calls them.

        Args:
            state: the bucket's state; updated in place.
            batch: rows of this bucket in arrival order (empty for a timer step). ``keep`` /
                ``where`` extras (eKuiper FILTER / WHERE) mark rows that advance time but join no
                window.
            recalc: reader of the lake snapshot for recalculation; without it, windows that need
                recalculation are left as they are (counted in ``stats['recalc_skipped']``).
            now: the wall clock in precision units: closes windows in clock-driven modes, drives
                MAX_DELAY and CONTINUOUS_WINDOW_CLOSE's periodic recalculation (seed 000).
        """
        return _IntervalStep(self, state, batch, recalc, now).run()

    def _max_delay_due(
        self, state: StreamState, touched_g: list[np.ndarray], touched_w: list[np.ndarray], now: int
    ) -> Partials:
        """MAX_DELAY (seed 000): an open window with unwritten changes is written once
        ``max_delay`` of processing time has passed since its first unwritten change."""
        if touched_g:
            for g, w in zip(
                np.concatenate(touched_g).tolist(), np.concatenate(touched_w).tolist(), strict=True
            ):
                state.dirty.setdefault((g, w), now)
        due = [k for k, t in state.dirty.items() if now - t >= self.rules.max_delay]
        if not due or not len(state.open):
            return Partials.empty(self.aggs)
        for k in due:
            del state.dirty[k]
        dg = np.array([k[0] for k in due], np.int64)
        dw = np.array([k[1] for k in due], np.int64)
        pos = key_index(state.open.gid, state.open.wkey, dg, dw)
        return state.open.take(np.unique(pos[pos >= 0]))

    def _out_start(self, state: StreamState, g: int, w: int) -> int:
        if self.first_start_at_first_row and state.first_ts[g] != I64_MIN:
            return max(w, int(state.first_ts[g]))
        return w

    def _recalculate(
        self, state: StreamState, gids: np.ndarray, wstarts: np.ndarray, recalc: RecalcReader
    ) -> Partials:
        """Partials of the given windows rebuilt from the lake (only non-empty windows)."""
        a = self.assigner
        keys = sorted({state.gkeys[g] for g in gids})
        rows = recalc(keys, int(wstarts.min()), int(a.end(wstarts).max()) - 1)
        if not len(rows):
            return Partials.empty(self.aggs)
        use = np.ones(len(rows), bool)
        for key in ("keep", "where"):
            if key in rows.extra:
                use &= rows.extra[key][0].astype(bool) & rows.extra[key][1]
        if not use.all():
            rows = rows.take(np.flatnonzero(use))
        rg = np.array([state.gid_of.get(k, -1) for k in rows.gkey], np.int64)
        prow, pw = a.assign(rows.ts)
        pg = rg[prow]
        want = key_index(gids, wstarts, pg, pw) >= 0
        if not want.any():
            return Partials.empty(self.aggs)
        sel = prow[want]
        inputs = {k: (v[sel], m[sel]) for k, (v, m) in rows.inputs.items()}
        return combine(self.aggs, lift(self.aggs, pg[want], pw[want], rows.ts[sel], inputs))

    def _results(self, state: StreamState, p: Partials) -> WindowResults:
        vals = lower(self.aggs, p)
        gk = np.array([state.gkeys[g] for g in p.gid], dtype=object)
        start = p.wkey.copy()
        if self.first_start_at_first_row and len(p):
            first = state.first_ts[p.gid]
            start = np.where(first != I64_MIN, np.maximum(start, first), start)
        return WindowResults(gk, start, self.assigner.end(p.wkey), vals)


class _IntervalStep:
    """One ``IntervalEngine.step``, phase by phase (``run`` lists them in order).

    Every array a phase computes is an attribute, alive until the step ends, as the locals were
    when the step was one function: with phase-local temporaries freed between phases, glibc
    trimmed the heap and faulted it back in (about twice the page faults), and
    bench/engine_bench.py ran 12-15 % slower (docs/PERFORMANCE.md, engine alone). Keep new
    large arrays as attributes too.
    """

    def __init__(
        self,
        eng: IntervalEngine,
        state: StreamState,
        batch: RowBatch,
        recalc: RecalcReader | None,
        now: int | None,
    ) -> None:
        self.eng, self.r, self.a = eng, eng.rules, eng.assigner
        self.state, self.batch, self.recalc, self.now = state, batch, recalc, now
        n = len(batch)
        self.stats: dict[str, int | None] = {
            "rows_in": int(batch.lifted.n.sum()) if batch.lifted is not None else n,
            "rows_expired": 0,
            "windows_opened": 0,
            "windows_closed": 0,
            "recalculated": 0,
            "recalc_skipped": 0,
        }
        self.history = bool(n) and bool(batch.is_history.all())
        self.events: list[WindowEvent] = []
        self.removals: list[tuple[str, int]] = []
        self.touched_g: list[np.ndarray] = []
        self.touched_w: list[np.ndarray] = []
        self.recalc_closed: Partials | None = None
        self.ug: np.ndarray | None = None  # groups whose latest time advanced, and their old latest
        self.old_max = np.empty(0, np.int64)
        self.rc_was_closed = np.empty(0, bool)
        self.gid = group_ids(batch, state.gids) if n else np.empty(0, np.int64)
        self.ch = ch = batch.changes
        self.keep = np.ones(n, bool)
        for key in ("keep", "where"):  # eKuiper FILTER and WHERE: both only keep rows out of windows
            if key in batch.extra:
                self.keep &= batch.extra[key][0].astype(bool) & batch.extra[key][1]
        r = self.r
        self.advancing = (ch == INSERT) | ((ch == UPDATE_POST) & r.ignore_update)
        self.changed = (ch == DELETE) | (((ch == UPDATE_PRE) | (ch == UPDATE_POST)) & (not r.ignore_update))

    def run(self) -> StepOutput:
        """The phases in order; returns the step's output."""
        self.judge_incremental()
        self.collect_recalc()
        self.combine_incremental()
        self.advance_latest()
        if self.rc_gid.size:
            self.apply_recalc()
        self.close_due()
        out = self.to_write()
        state, stats = self.state, self.stats
        stats["open_windows"] = len(state.open)
        # the earliest exclusive end of an open window (precision units): what closes it
        stats["open_wend_min"] = int(self.a.end(state.open.wkey).min()) if len(state.open) else None
        stats["state_bytes"] = state.nbytes()
        seen = state.max_ts[state.max_ts != I64_MIN]
        stats["max_ts"] = int(seen.max()) if seen.size else None
        return StepOutput(self.eng._results(state, out), self.removals, self.events, stats)

    def _notify(self, wanted: bool) -> bool:
        return wanted and (self.r.notify_history or not self.history)

    def _events(self, kind: str, gids: np.ndarray, wkeys: np.ndarray) -> list[WindowEvent]:
        gkeys, history = self.state.gkeys, self.history
        ends = self.a.end(np.asarray(wkeys, np.int64))
        return [
            WindowEvent(kind, gkeys[g], int(w), int(e), history)
            for g, w, e in zip(gids, wkeys, ends, strict=True)
        ]

    def judge_incremental(self) -> None:
        """Incremental rows as (row, window) pairs, each judged against the latest event time of
        its group's rows that arrived before it (or the wall clock): closed before it came, and
        then recalculated or dropped per the rules (seed 000 "Expired Data")."""
        r, a, eng, batch = self.r, self.a, self.eng, self.batch
        self.lifted = lifted = batch.lifted  # pre-aggregated items: ``ts`` earliest, ``tmax`` latest time
        self.adv_idx = adv_idx = np.flatnonzero(self.advancing)
        t_latest = lifted.tmax if lifted is not None else batch.ts
        self.g_adv, self.t_adv = self.gid[adv_idx], t_latest[adv_idx]
        g_adv = self.g_adv
        self.kept = kept = self.keep[adv_idx]
        self.inc_idx = inc_idx = adv_idx[kept]
        self.g_inc, self.t_inc = g_adv[kept], batch.ts[inc_idx]
        if r.clock_driven and self.now is not None:
            self.prev = np.full(inc_idx.size, self.now, np.int64)
        elif adv_idx.size:
            # earliest times: an item's rows are in order, so its first row is the one judged
            self.prev = _prev_running_max(g_adv, batch.ts[adv_idx], self.state.max_ts)[kept]
        else:
            self.prev = np.empty(0, np.int64)
        if lifted is not None:
            self.pair_row, self.pair_w = np.arange(inc_idx.size, dtype=np.int64), lifted.wkey[inc_idx]
        else:
            self.pair_row, self.pair_w = a.assign(self.t_inc)
        pair_row = self.pair_row
        self.pair_g = self.g_inc[pair_row]
        self.pair_end = a.end(self.pair_w)
        self.pair_prev = self.prev[pair_row]
        self.closed_before = eng._closed(self.pair_end, self.pair_prev, r.watermark)
        if r.late_by_watermark and pair_row.size:
            self.late = (self.prev != I64_MIN) & (self.t_inc < self.prev - r.watermark)
            self.closed_before |= self.late[pair_row]
        self.beyond_mark = eng._closed(self.pair_end, self.pair_prev, r.delete_mark)
        if (r.mode == "AT_ONCE" or not r.ignore_expired) and not r.late_by_watermark:
            self.late_recalc = self.closed_before & ~self.beyond_mark
        else:
            self.late_recalc = np.zeros_like(self.closed_before)
        if r.expired_time and pair_row.size:
            # EXPIRED_TIME (seed 002 "Expired Data"): older than the group's latest time minus the
            # expiry when it came: no window, no recalculation; FILL_HISTORY rows never expire
            hist = batch.is_history[inc_idx]
            gone = (self.prev != I64_MIN) & ~hist & (self.t_inc < self.prev - r.expired_time)
            self.closed_before |= gone[pair_row]
            self.late_recalc &= ~gone[pair_row]
        self.dropped = dropped = self.closed_before & ~self.late_recalc
        self.stats["rows_expired"] = int(np.unique(pair_row[dropped]).size) if dropped.any() else 0
        self.drop_stats()

    def drop_stats(self) -> None:
        """Why rows made no window, for "why no output?" (``streams_app/services/diagnosis.py``):
        ``rows_filtered`` kept out by FILTER / WHERE in the engine, ``rows_disordered`` older than
        their group's latest event time when they came (seed 004 "Disordered processing"), of the
        dropped (expired) rows those beyond DELETE_MARK (``rows_beyond_delete_mark``) and those
        late by the watermark (``rows_late``, eKuiper), and the event times (precision units) of
        the earliest and latest dropped row (``dropped_first`` / ``dropped_last``, None without)."""
        stats, prev, dropped, lifted = self.stats, self.prev, self.dropped, self.lifted
        # pre-aggregated items (runtime/premerge.py) stand for ``lifted.n`` rows each
        n = lifted.n[self.inc_idx].astype(np.int64) if lifted is not None else np.ones(prev.size, np.int64)
        adv = int(lifted.n[self.adv_idx].sum()) if lifted is not None else int(self.adv_idx.size)
        stats["rows_filtered"] = adv - int(n.sum())
        known = prev != I64_MIN
        disordered = known & (self.t_inc < prev) if not self.r.clock_driven else np.zeros(0, bool)
        stats["rows_disordered"] = int(n[disordered].sum())
        rows = np.unique(self.pair_row[dropped]) if dropped.any() else np.empty(0, np.int64)
        stats["rows_expired"] = int(n[rows].sum())
        beyond = np.unique(self.pair_row[dropped & self.beyond_mark]) if rows.size else rows
        stats["rows_beyond_delete_mark"] = int(n[beyond].sum())
        late_rule = self.r.late_by_watermark and self.pair_row.size
        stats["rows_late"] = int(n[self.late].sum()) if late_rule else 0
        first = self.t_inc[rows]  # an item's earliest and latest row times
        last = lifted.tmax[self.inc_idx][rows] if lifted is not None else first
        stats["dropped_first"] = int(first.min()) if rows.size else None
        stats["dropped_last"] = int(last.max()) if rows.size else None

    def collect_recalc(self) -> None:
        """``rc_gid`` / ``rc_wst``: the windows to recalculate now, unique: windows of late rows
        the rules recalculate and windows of changed rows within DELETE_MARK (against the latest
        event times before this batch); CONTINUOUS_WINDOW_CLOSE queues them (``continuous_due``)."""
        r, a = self.r, self.a
        rc_g = [self.pair_g[self.late_recalc]]
        rc_w = [self.pair_w[self.late_recalc]]
        self.chg_idx = chg_idx = np.flatnonzero(self.changed)
        if chg_idx.size:
            crow, cw = a.assign(self.batch.ts[chg_idx])
            cg = self.gid[chg_idx][crow]
            keep_c = ~self.eng._closed(a.end(cw), self.state.max_ts[cg], r.delete_mark)
            if r.expired_time:  # an expired update or delete recalculates nothing (seed 002)
                cts = self.batch.ts[chg_idx][crow]
                latest = self.state.max_ts[cg]
                keep_c &= (latest == I64_MIN) | (cts >= latest - r.expired_time)
            rc_g.append(cg[keep_c])
            rc_w.append(cw[keep_c])
        self.rc_gid = np.concatenate(rc_g)
        self.rc_wst = np.concatenate(rc_w)
        if r.mode == "CONTINUOUS_WINDOW_CLOSE":
            self.continuous_due()
        if self.rc_gid.size:
            uk = pd.MultiIndex.from_arrays([self.rc_gid, self.rc_wst]).unique()
            self.rc_gid = uk.get_level_values(0).to_numpy().astype(np.int64)
            self.rc_wst = uk.get_level_values(1).to_numpy().astype(np.int64)
            # closed (written and notified) before this batch: their recalculation invalidates them
            latest = self.eng._latest(self.state, self.rc_gid, self.now)
            self.rc_was_closed = self.eng._closed(a.end(self.rc_wst), latest, r.watermark)

    def continuous_due(self) -> None:
        """CONTINUOUS_WINDOW_CLOSE (seed 000): changes wait for the periodic recalculation; every
        queued window is due once ``recalc_every`` of processing time has passed."""
        state, now = self.state, self.now
        state.pending.update(zip(self.rc_gid.tolist(), self.rc_wst.tolist(), strict=True))
        self.rc_gid, self.rc_wst = np.empty(0, np.int64), np.empty(0, np.int64)
        if now is not None:
            if state.last_recalc == I64_MIN:
                state.last_recalc = now
            elif now - state.last_recalc >= self.r.recalc_every and state.pending:
                due = sorted(state.pending)
                state.pending.clear()
                state.last_recalc = now
                self.rc_gid = np.array([d[0] for d in due], np.int64)
                self.rc_wst = np.array([d[1] for d in due], np.int64)

    def combine_incremental(self) -> None:
        """Combine the incremental pairs into the open windows (not windows closed before the row
        came, nor windows under recalculation); counts ``windows_opened``, notifies WINDOW_OPEN."""
        aggs, state, batch = self.eng.aggs, self.state, self.batch
        self.use = use = ~self.closed_before
        if self.rc_gid.size and use.any():
            use &= key_index(self.rc_gid, self.rc_wst, self.pair_g, self.pair_w) < 0
        if not use.any():
            return
        self.rows = rows = self.inc_idx[self.pair_row[use]]
        if self.lifted is not None:
            self.part = part = combine(
                aggs,
                Partials(
                    self.pair_g[use], self.pair_w[use], {k: v[rows] for k, v in self.lifted.cols.items()}
                ),
            )
        else:
            self.inputs = inputs = {k: (v[rows], m[rows]) for k, (v, m) in batch.inputs.items()}
            self.part = part = combine(
                aggs, lift(aggs, self.pair_g[use], self.pair_w[use], batch.ts[rows], inputs)
            )
        self.pos = pos = key_index(state.open.gid, state.open.wkey, part.gid, part.wkey)
        self.new = new = pos < 0
        self.stats["windows_opened"] = int(new.sum())
        if new.any() and self._notify(self.r.notify_open):
            self.events += self._events("WINDOW_OPEN", part.gid[new], part.wkey[new])
        state.open = combine(aggs, Partials.concat([state.open, part]))
        self.touched_g.append(part.gid)
        self.touched_w.append(part.wkey)

    def advance_latest(self) -> None:
        """Latest (and first) event time per group: every advancing row counts, even expired or
        filtered ones."""
        if self.adv_idx.size:
            state = self.state
            self.ug, self.first = ug, first = np.unique(self.g_adv, return_index=True)
            self.old_max = state.max_ts[ug].copy()
            np.maximum.at(state.max_ts, self.g_adv, self.t_adv)
            self.unset = unset = state.first_ts[ug] == I64_MIN
            state.first_ts[ug[unset]] = self.batch.ts[self.adv_idx][first[unset]]

    def apply_recalc(self) -> None:
        """Replace the windows ``rc_gid`` / ``rc_wst`` by their partials rebuilt from the lake: open
        non-empty ones go back into the open set, closed ones are written (``recalc_closed``),
        empty ones are removed from the output (WINDOW_INVALIDATION). Without a reader they stay
        as they are (``recalc_skipped``)."""
        r, a, eng, state = self.r, self.a, self.eng, self.state
        rc_gid, rc_wst = self.rc_gid, self.rc_wst
        if self.recalc is None:
            self.stats["recalc_skipped"] = int(rc_gid.size)
            return
        fresh = eng._recalculate(state, rc_gid, rc_wst, self.recalc)
        self.stats["recalculated"] = int(rc_gid.size)
        found = key_index(fresh.gid, fresh.wkey, rc_gid, rc_wst)
        empty = found < 0
        still_open = ~eng._closed(a.end(rc_wst), eng._latest(state, rc_gid, self.now), r.watermark)
        # drop recalculated windows from the open set, then add back the open non-empty ones
        if len(state.open):
            keep_open = key_index(rc_gid, rc_wst, state.open.gid, state.open.wkey) < 0
            state.open = state.open.take(np.flatnonzero(keep_open))
        reopen = fresh.take(found[~empty & still_open])
        if len(reopen):
            state.open = combine(eng.aggs, Partials.concat([state.open, reopen]))
            self.touched_g.append(reopen.gid)
            self.touched_w.append(reopen.wkey)
        self.recalc_closed = fresh.take(found[~empty & ~still_open])
        for g, w in zip(rc_gid[empty], rc_wst[empty], strict=True):
            self.removals.append((state.gkeys[g], eng._out_start(state, int(g), int(w))))
            state.dirty.pop((int(g), int(w)), None)
        # WINDOW_INVALIDATION (seed 000 / 002 "Fields for Window Invalidation"): a window already
        # generated that is removed or recalculated; its new WINDOW_CLOSE (if any) follows
        gone = empty | (self.rc_was_closed if self.rc_was_closed.size == rc_gid.size else False)
        if self._notify(r.notify_open or r.notify_close) and np.any(gone):
            self.events += self._events("WINDOW_INVALIDATION", rc_gid[gone], rc_wst[gone])

    def close_due(self) -> None:
        """Take the windows whose end passed the watermark (or the clock) out of the open set
        (``closing``); counts ``windows_closed``, notifies WINDOW_CLOSE (recalculated closed
        windows first)."""
        eng, state = self.eng, self.state
        self.closing = Partials.empty(eng.aggs)
        if len(state.open):
            latest = eng._latest(state, state.open.gid, self.now)
            shut = eng._closed(self.a.end(state.open.wkey), latest, self.r.watermark)
            if shut.any():
                self.closing = state.open.take(np.flatnonzero(shut))
                state.open = state.open.take(np.flatnonzero(~shut))
                self.stats["windows_closed"] = len(self.closing)
                for g, w in zip(self.closing.gid.tolist(), self.closing.wkey.tolist(), strict=True):
                    state.dirty.pop((g, w), None)
        if self.r.fire_empty and self.ug is not None:
            self.close_empty()
        if self._notify(self.r.notify_close):
            for p in (self.recalc_closed, self.closing):
                if p is not None and len(p):
                    self.events += self._events("WINDOW_CLOSE", p.gid, p.wkey)

    def close_empty(self) -> None:
        """Windows without rows that closed in this step (``StreamRules.fire_empty``, seed 002:
        "Default: If not specified, triggers will occur even when no input data is present"):
        for each group whose latest time advanced, the windows ending after its previous horizon
        (latest time minus the watermark) and at or before the new one, from the first window
        holding the group's first row on, that have no rows; they join ``closing`` (count 0,
        other aggregates NULL), opened and closed at once.

        Raises:
            SqlError: INVALID_OPERATION when more than ``EMPTY_WINDOWS_MAX`` would fire at once.
        """
        a, r, state = self.a, self.r, self.state
        ug, old = self.ug, self.old_max
        assert ug is not None
        new = state.max_ts[ug]
        moved = (new > old) & (state.first_ts[ug] != I64_MIN)
        if not moved.any():
            return
        ug, old, new = ug[moved], old[moved], new[moved]
        first = state.first_ts[ug]
        # window starts s (= offset + k * sliding): s + interval > max(old horizon, first row)
        # and s + interval <= new horizon
        floor = np.where(old == I64_MIN, first, np.maximum(old - r.watermark, first))
        count, wkeys = a.closing_windows(floor, new - r.watermark, EMPTY_WINDOWS_MAX)
        total = int(count.sum())
        if total == 0:
            return
        if total > EMPTY_WINDOWS_MAX:
            raise SqlError(
                f"the trigger would fire {total} windows at once (more than {EMPTY_WINDOWS_MAX}): "
                "a row far ahead of its group's time; add STREAM_OPTIONS(IGNORE_NODATA_TRIGGER) to "
                "fire only windows with rows (seed 002)",
                code=Code.INVALID_OPERATION,
            )
        gids = np.repeat(ug, count)
        have = [self.closing] + ([self.recalc_closed] if self.recalc_closed is not None else [])
        for p in have:
            if len(p) and gids.size:
                keep = key_index(p.gid, p.wkey, gids, wkeys) < 0
                gids, wkeys = gids[keep], wkeys[keep]
        if not gids.size:
            return
        if self._notify(r.notify_open):
            self.events += self._events("WINDOW_OPEN", gids, wkeys)
        self.stats["windows_opened"] = int(self.stats["windows_opened"] or 0) + int(gids.size)
        self.stats["windows_closed"] = int(self.stats["windows_closed"] or 0) + int(gids.size)
        empty = empty_partials(self.eng.aggs, gids, wkeys)
        self.closing = combine(self.eng.aggs, Partials.concat([self.closing, empty]))

    def to_write(self) -> Partials:
        """Partials to write: closed windows, recalculated closed ones, and per the trigger mode
        the open windows this step touched (AT_ONCE) or that waited MAX_DELAY."""
        r, state = self.r, self.state
        emit = [self.closing]
        if self.recalc_closed is not None:
            emit.append(self.recalc_closed)
        if r.mode == "AT_ONCE" and self.touched_g:
            tg, tw = np.concatenate(self.touched_g), np.concatenate(self.touched_w)
            pos = key_index(state.open.gid, state.open.wkey, tg, tw)
            emit.append(state.open.take(np.unique(pos[pos >= 0])))
        if r.mode == "MAX_DELAY" and self.now is not None:
            emit.append(self.eng._max_delay_due(state, self.touched_g, self.touched_w, self.now))
        return combine(self.eng.aggs, Partials.concat(emit))


def window_aggregate(
    assigner: IntervalAssigner | DailyAssigner | CalendarAssigner, aggs: list[AggSpec], rows: RowBatch
) -> WindowResults:
    """Batch window aggregation (interactive SELECT): every window of every group at once, with
    the same lift/combine/lower as streams. Output sorted by (group key, window start)."""
    if not len(rows):
        empty = Partials.empty(aggs)
        return WindowResults(
            np.empty(0, object), np.empty(0, np.int64), np.empty(0, np.int64), lower(aggs, empty)
        )
    uniq, gid = np.unique(rows.gkey.astype(object), return_inverse=True)
    prow, pw = assigner.assign(rows.ts)
    inputs = {k: (v[prow], m[prow]) for k, (v, m) in rows.inputs.items()}
    p = combine(aggs, lift(aggs, gid[prow].astype(np.int64), pw, rows.ts[prow], inputs))
    return WindowResults(uniq[p.gid].astype(object), p.wkey, assigner.end(p.wkey), lower(aggs, p))
