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
from spark_workers.engine.windows import IntervalAssigner

STATE_FORMAT = 2
TEN_YEARS_MS = 10 * 365 * 86_400_000

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
            if k.endswith(".r"):  # collected rows (eKuiper windows without aggregates)
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
            if k.endswith(".r"):
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
        assigner: IntervalAssigner,
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
        r, a = self.rules, self.assigner
        n = len(batch)
        stats: dict[str, int | None] = {
            "rows_in": int(batch.lifted.n.sum()) if batch.lifted is not None else n,
            "rows_expired": 0,
            "windows_opened": 0,
            "windows_closed": 0,
            "recalculated": 0,
            "recalc_skipped": 0,
        }
        history = bool(n) and bool(batch.is_history.all())
        events: list[WindowEvent] = []
        removals: list[tuple[str, int]] = []
        gid = group_ids(batch, state.gids) if n else np.empty(0, np.int64)
        ch = batch.changes
        keep = np.ones(n, bool)
        for key in ("keep", "where"):  # eKuiper FILTER and WHERE: both only keep rows out of windows
            if key in batch.extra:
                keep &= batch.extra[key][0].astype(bool) & batch.extra[key][1]
        advancing = (ch == INSERT) | ((ch == UPDATE_POST) & r.ignore_update)
        changed = (ch == DELETE) | (((ch == UPDATE_PRE) | (ch == UPDATE_POST)) & (not r.ignore_update))

        # ---- incremental rows: window pairs, expiry against the running latest event time
        lifted = batch.lifted  # pre-aggregated items: ``ts`` is their earliest, ``tmax`` latest time
        adv_idx = np.flatnonzero(advancing)
        t_latest = lifted.tmax if lifted is not None else batch.ts
        g_adv, t_adv = gid[adv_idx], t_latest[adv_idx]
        kept = keep[adv_idx]
        inc_idx = adv_idx[kept]
        g_inc, t_inc = g_adv[kept], batch.ts[inc_idx]
        if r.clock_driven and now is not None:
            prev = np.full(inc_idx.size, now, np.int64)
        elif adv_idx.size:
            # earliest times: an item's rows are in order, so its first row is the one judged
            prev = _prev_running_max(g_adv, batch.ts[adv_idx], state.max_ts)[kept]
        else:
            prev = np.empty(0, np.int64)
        if lifted is not None:
            pair_row, pair_w = np.arange(inc_idx.size, dtype=np.int64), lifted.wkey[inc_idx]
        else:
            pair_row, pair_w = a.assign(t_inc)
        pair_g = g_inc[pair_row]
        pair_end = a.end(pair_w)
        pair_prev = prev[pair_row]
        closed_before = self._closed(pair_end, pair_prev, r.watermark)
        if r.late_by_watermark and pair_row.size:
            late = (prev != I64_MIN) & (t_inc < prev - r.watermark)
            closed_before |= late[pair_row]
        beyond_mark = self._closed(pair_end, pair_prev, r.delete_mark)
        if (r.mode == "AT_ONCE" or not r.ignore_expired) and not r.late_by_watermark:
            late_recalc = closed_before & ~beyond_mark
        else:
            late_recalc = np.zeros_like(closed_before)
        dropped = closed_before & ~late_recalc
        stats["rows_expired"] = int(np.unique(pair_row[dropped]).size) if dropped.any() else 0

        # ---- windows to recalculate: late rows (per the rules) and changed rows
        rc_g = [pair_g[late_recalc]]
        rc_w = [pair_w[late_recalc]]
        chg_idx = np.flatnonzero(changed)
        if chg_idx.size:
            crow, cw = a.assign(batch.ts[chg_idx])
            cg = gid[chg_idx][crow]
            keep_c = ~self._closed(a.end(cw), state.max_ts[cg], r.delete_mark)
            rc_g.append(cg[keep_c])
            rc_w.append(cw[keep_c])
        rc_gid = np.concatenate(rc_g)
        rc_wst = np.concatenate(rc_w)
        if r.mode == "CONTINUOUS_WINDOW_CLOSE":
            # changes wait for the periodic recalculation (seed 000, CONTINUOUS_WINDOW_CLOSE)
            state.pending.update(zip(rc_gid.tolist(), rc_wst.tolist(), strict=True))
            rc_gid, rc_wst = np.empty(0, np.int64), np.empty(0, np.int64)
            if now is not None:
                if state.last_recalc == I64_MIN:
                    state.last_recalc = now
                elif now - state.last_recalc >= r.recalc_every and state.pending:
                    due = sorted(state.pending)
                    state.pending.clear()
                    state.last_recalc = now
                    rc_gid = np.array([d[0] for d in due], np.int64)
                    rc_wst = np.array([d[1] for d in due], np.int64)
        if rc_gid.size:
            uk = pd.MultiIndex.from_arrays([rc_gid, rc_wst]).unique()
            rc_gid = uk.get_level_values(0).to_numpy().astype(np.int64)
            rc_wst = uk.get_level_values(1).to_numpy().astype(np.int64)

        # ---- incremental combine into open windows (windows under recalculation excluded)
        use = ~closed_before
        if rc_gid.size and use.any():
            use &= key_index(rc_gid, rc_wst, pair_g, pair_w) < 0
        touched_g: list[np.ndarray] = []
        touched_w: list[np.ndarray] = []
        if use.any():
            rows = inc_idx[pair_row[use]]
            if lifted is not None:
                part = combine(
                    self.aggs,
                    Partials(pair_g[use], pair_w[use], {k: v[rows] for k, v in lifted.cols.items()}),
                )
            else:
                inputs = {k: (v[rows], m[rows]) for k, (v, m) in batch.inputs.items()}
                part = combine(self.aggs, lift(self.aggs, pair_g[use], pair_w[use], batch.ts[rows], inputs))
            pos = key_index(state.open.gid, state.open.wkey, part.gid, part.wkey)
            new = pos < 0
            stats["windows_opened"] = int(new.sum())
            if r.notify_open and new.any() and (r.notify_history or not history):
                events += [
                    WindowEvent("WINDOW_OPEN", state.gkeys[g], int(w), int(w + a.interval), history)
                    for g, w in zip(part.gid[new], part.wkey[new], strict=True)
                ]
            state.open = combine(self.aggs, Partials.concat([state.open, part]))
            touched_g.append(part.gid)
            touched_w.append(part.wkey)

        # ---- latest event time per group (every inserted row, even expired or filtered ones)
        if adv_idx.size:
            np.maximum.at(state.max_ts, g_adv, t_adv)
            ug, first = np.unique(g_adv, return_index=True)
            unset = state.first_ts[ug] == I64_MIN
            state.first_ts[ug[unset]] = batch.ts[adv_idx][first[unset]]

        # ---- recalculation from the lake snapshot
        recalc_closed: Partials | None = None
        if rc_gid.size:
            if recalc is None:
                stats["recalc_skipped"] = int(rc_gid.size)
            else:
                fresh = self._recalculate(state, rc_gid, rc_wst, recalc)
                stats["recalculated"] = int(rc_gid.size)
                found = key_index(fresh.gid, fresh.wkey, rc_gid, rc_wst)
                empty = found < 0
                still_open = ~self._closed(a.end(rc_wst), self._latest(state, rc_gid, now), r.watermark)
                # drop recalculated windows from the open set, then add back the open non-empty ones
                if len(state.open):
                    keep_open = key_index(rc_gid, rc_wst, state.open.gid, state.open.wkey) < 0
                    state.open = state.open.take(np.flatnonzero(keep_open))
                reopen = fresh.take(found[~empty & still_open])
                if len(reopen):
                    state.open = combine(self.aggs, Partials.concat([state.open, reopen]))
                    touched_g.append(reopen.gid)
                    touched_w.append(reopen.wkey)
                recalc_closed = fresh.take(found[~empty & ~still_open])
                for g, w in zip(rc_gid[empty], rc_wst[empty], strict=True):
                    removals.append((state.gkeys[g], self._out_start(state, int(g), int(w))))
                    state.dirty.pop((int(g), int(w)), None)
                    if r.notify_close and (r.notify_history or not history):
                        events.append(
                            WindowEvent(
                                "WINDOW_INVALIDATION", state.gkeys[g], int(w), int(w + a.interval), history
                            )
                        )

        # ---- close windows whose end passed the watermark (or the clock)
        closing = Partials.empty(self.aggs)
        if len(state.open):
            latest = self._latest(state, state.open.gid, now)
            shut = self._closed(a.end(state.open.wkey), latest, r.watermark)
            if shut.any():
                closing = state.open.take(np.flatnonzero(shut))
                state.open = state.open.take(np.flatnonzero(~shut))
                stats["windows_closed"] = len(closing)
                for g, w in zip(closing.gid.tolist(), closing.wkey.tolist(), strict=True):
                    state.dirty.pop((g, w), None)
        if r.notify_close and (r.notify_history or not history):
            for p in (recalc_closed, closing):
                if p is not None and len(p):
                    events += [
                        WindowEvent("WINDOW_CLOSE", state.gkeys[g], int(w), int(w + a.interval), history)
                        for g, w in zip(p.gid, p.wkey, strict=True)
                    ]

        # ---- what to write
        emit = [closing]
        if recalc_closed is not None:
            emit.append(recalc_closed)
        if r.mode == "AT_ONCE" and touched_g:
            tg, tw = np.concatenate(touched_g), np.concatenate(touched_w)
            pos = key_index(state.open.gid, state.open.wkey, tg, tw)
            emit.append(state.open.take(np.unique(pos[pos >= 0])))
        if r.mode == "MAX_DELAY" and now is not None:
            emit.append(self._max_delay_due(state, touched_g, touched_w, now))
        out = combine(self.aggs, Partials.concat(emit))
        stats["open_windows"] = len(state.open)
        stats["state_bytes"] = state.nbytes()
        seen = state.max_ts[state.max_ts != I64_MIN]
        stats["max_ts"] = int(seen.max()) if seen.size else None
        return StepOutput(self._results(state, out), removals, events, stats)

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


def window_aggregate(assigner: IntervalAssigner, aggs: list[AggSpec], rows: RowBatch) -> WindowResults:
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
