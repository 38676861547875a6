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
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from spark_workers.engine.aggregates import I64_MIN, AggSpec, Partials, combine, lift, lower
from spark_workers.engine.rows import DELETE, INSERT, UPDATE_POST, UPDATE_PRE, RowBatch
from spark_workers.engine.windows import IntervalAssigner

STATE_FORMAT = 1
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
    """

    mode: str = "WINDOW_CLOSE"
    watermark: int = 0
    ignore_expired: bool = True
    ignore_update: bool = True
    delete_mark: int = TEN_YEARS_MS
    notify_open: bool = False
    notify_close: bool = False
    notify_history: bool = False


@dataclass
class WindowEvent:
    """A window event for notifications: ``kind`` is WINDOW_OPEN, WINDOW_CLOSE or
    WINDOW_INVALIDATION; ``history`` when caused by FILL_HISTORY rows."""

    kind: str
    gkey: str
    wstart: int
    wend: int
    history: bool = False


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
        self.open = Partials.empty(aggs)

    def gids(self, gkeys: np.ndarray) -> np.ndarray:
        """Group ids for keys, registering new groups."""
        uniq, inv = np.unique(gkeys.astype(object), return_inverse=True)
        ids = np.empty(len(uniq), np.int64)
        added = 0
        for i, k in enumerate(uniq):
            gid = self.gid_of.get(k)
            if gid is None:
                gid = len(self.gkeys)
                self.gid_of[k] = gid
                self.gkeys.append(k)
                added += 1
            ids[i] = gid
        if added:
            self.max_ts = np.concatenate([self.max_ts, np.full(added, I64_MIN, np.int64)])
        return ids[inv]

    def nbytes(self) -> int:
        return self.open.nbytes() + self.max_ts.nbytes + sum(len(k) + 8 for k in self.gkeys)

    # -------------------------------------------------------------- serialization (Arrow IPC)
    def to_bytes(self) -> bytes:
        """Compact versioned serialization: Arrow IPC of the group table and the open windows."""
        groups = pa.table({"gkey": pa.array(self.gkeys, pa.string()), "max_ts": self.max_ts})
        cols: dict[str, Any] = {"gid": self.open.gid, "wkey": self.open.wkey}
        for k, v in self.open.cols.items():
            cols[k] = pa.array(v, from_pandas=True) if v.dtype == object else v
        windows = pa.table(cols)
        parts = [_ipc(groups), _ipc(windows)]
        head = struct.pack("<III", STATE_FORMAT, len(parts[0]), len(parts[1]))
        return head + parts[0] + parts[1]

    @classmethod
    def from_bytes(cls, aggs: list[AggSpec], data: bytes) -> StreamState:
        fmt, n0, n1 = struct.unpack_from("<III", data, 0)
        if fmt != STATE_FORMAT:
            raise ValueError(f"unsupported engine state format {fmt}")
        off = struct.calcsize("<III")
        groups = pa.ipc.open_stream(io.BytesIO(data[off : off + n0])).read_all()
        windows = pa.ipc.open_stream(io.BytesIO(data[off + n0 : off + n0 + n1])).read_all()
        st = cls(aggs)
        st.gkeys = groups.column("gkey").to_pylist()
        st.gid_of = {k: i for i, k in enumerate(st.gkeys)}
        st.max_ts = groups.column("max_ts").to_numpy(zero_copy_only=False).astype(np.int64)
        template = Partials.empty(aggs)
        cols = {}
        for k, empty in template.cols.items():
            col = windows.column(k)
            if empty.dtype == object:
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


def _key_index(gid_a: np.ndarray, w_a: np.ndarray, gid_b: np.ndarray, w_b: np.ndarray) -> np.ndarray:
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
    """

    def __init__(self, assigner: IntervalAssigner, aggs: list[AggSpec], rules: StreamRules) -> None:
        self.assigner = assigner
        self.aggs = aggs
        self.rules = rules

    def new_state(self) -> StreamState:
        return StreamState(self.aggs)

    def _closed(self, wend: np.ndarray, latest: np.ndarray, horizon: int) -> np.ndarray:
        """``wend <= latest - horizon`` without overflow for groups with no time yet."""
        has = latest != I64_MIN
        return has & (wend <= np.where(has, latest, 0) - horizon)

    def step(self, state: StreamState, batch: RowBatch, recalc: RecalcReader | None = None) -> StepOutput:
        """Process one batch of rows (arrival order) and return what to write and notify.

        Args:
            state: the bucket's state; updated in place.
            batch: rows of this bucket in arrival order.
            recalc: reader of the lake snapshot for recalculation; without it, windows that need
                recalculation are left as they are (counted in ``stats['recalc_skipped']``).
        """
        r, a = self.rules, self.assigner
        n = len(batch)
        stats: dict[str, int | None] = {
            "rows_in": n,
            "rows_expired": 0,
            "windows_opened": 0,
            "windows_closed": 0,
            "recalculated": 0,
            "recalc_skipped": 0,
        }
        history = bool(n) and bool(batch.is_history.all())
        events: list[WindowEvent] = []
        removals: list[tuple[str, int]] = []
        gid = state.gids(batch.gkey) if n else np.empty(0, np.int64)
        ch = batch.changes
        incr = (ch == INSERT) | ((ch == UPDATE_POST) & r.ignore_update)
        changed = (ch == DELETE) | (((ch == UPDATE_PRE) | (ch == UPDATE_POST)) & (not r.ignore_update))

        # ---- incremental rows: window pairs, expiry against the running latest event time
        inc_idx = np.flatnonzero(incr)
        g_inc, t_inc = gid[inc_idx], batch.ts[inc_idx]
        prev = _prev_running_max(g_inc, t_inc, state.max_ts) if inc_idx.size else np.empty(0, np.int64)
        pair_row, pair_w = a.assign(t_inc)
        pair_g = g_inc[pair_row]
        pair_end = a.end(pair_w)
        pair_prev = prev[pair_row]
        closed_before = self._closed(pair_end, pair_prev, r.watermark)
        beyond_mark = self._closed(pair_end, pair_prev, r.delete_mark)
        if r.mode == "AT_ONCE" or not r.ignore_expired:
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
            keep = ~self._closed(a.end(cw), state.max_ts[cg], r.delete_mark)
            rc_g.append(cg[keep])
            rc_w.append(cw[keep])
        rc_gid = np.concatenate(rc_g)
        rc_wst = np.concatenate(rc_w)
        if rc_gid.size:
            uk = pd.MultiIndex.from_arrays([rc_gid, rc_wst]).unique()
            rc_gid = uk.get_level_values(0).to_numpy().astype(np.int64)
            rc_wst = uk.get_level_values(1).to_numpy().astype(np.int64)

        # ---- incremental combine into open windows (windows under recalculation excluded)
        use = ~closed_before
        if rc_gid.size and use.any():
            use &= _key_index(rc_gid, rc_wst, pair_g, pair_w) < 0
        touched_g: list[np.ndarray] = []
        touched_w: list[np.ndarray] = []
        if use.any():
            rows = inc_idx[pair_row[use]]
            inputs = {k: (v[rows], m[rows]) for k, (v, m) in batch.inputs.items()}
            part = combine(self.aggs, lift(self.aggs, pair_g[use], pair_w[use], batch.ts[rows], inputs))
            pos = _key_index(state.open.gid, state.open.wkey, part.gid, part.wkey)
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

        # ---- latest event time per group (all inserted rows, even expired ones)
        if inc_idx.size:
            np.maximum.at(state.max_ts, g_inc, t_inc)

        # ---- recalculation from the lake snapshot
        recalc_closed: Partials | None = None
        if rc_gid.size:
            if recalc is None:
                stats["recalc_skipped"] = int(rc_gid.size)
            else:
                fresh = self._recalculate(state, rc_gid, rc_wst, recalc)
                stats["recalculated"] = int(rc_gid.size)
                found = _key_index(fresh.gid, fresh.wkey, rc_gid, rc_wst)
                empty = found < 0
                still_open = ~self._closed(a.end(rc_wst), state.max_ts[rc_gid], r.watermark)
                # drop recalculated windows from the open set, then add back the open non-empty ones
                if len(state.open):
                    keep = _key_index(rc_gid, rc_wst, state.open.gid, state.open.wkey) < 0
                    state.open = state.open.take(np.flatnonzero(keep))
                reopen = fresh.take(found[~empty & still_open])
                if len(reopen):
                    state.open = combine(self.aggs, Partials.concat([state.open, reopen]))
                    touched_g.append(reopen.gid)
                    touched_w.append(reopen.wkey)
                recalc_closed = fresh.take(found[~empty & ~still_open])
                for g, w in zip(rc_gid[empty], rc_wst[empty], strict=True):
                    removals.append((state.gkeys[g], int(w)))
                    if r.notify_close and (r.notify_history or not history):
                        events.append(
                            WindowEvent(
                                "WINDOW_INVALIDATION", state.gkeys[g], int(w), int(w + a.interval), history
                            )
                        )

        # ---- close windows whose end passed the watermark
        closing = Partials.empty(self.aggs)
        if len(state.open):
            shut = self._closed(a.end(state.open.wkey), state.max_ts[state.open.gid], r.watermark)
            if shut.any():
                closing = state.open.take(np.flatnonzero(shut))
                state.open = state.open.take(np.flatnonzero(~shut))
                stats["windows_closed"] = len(closing)
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
            pos = _key_index(state.open.gid, state.open.wkey, tg, tw)
            emit.append(state.open.take(np.unique(pos[pos >= 0])))
        out = combine(self.aggs, Partials.concat(emit))
        stats["open_windows"] = len(state.open)
        stats["state_bytes"] = state.nbytes()
        seen = state.max_ts[state.max_ts != I64_MIN]
        stats["max_ts"] = int(seen.max()) if seen.size else None
        return StepOutput(self._results(state, out), removals, events, stats)

    def _recalculate(
        self, state: StreamState, gids: np.ndarray, wstarts: np.ndarray, recalc: RecalcReader
    ) -> Partials:
        """Partials of the given windows rebuilt from the lake (only non-empty windows)."""
        a = self.assigner
        keys = sorted({state.gkeys[g] for g in gids})
        rows = recalc(keys, int(wstarts.min()), int(a.end(wstarts).max()) - 1)
        if not len(rows):
            return Partials.empty(self.aggs)
        rg = np.array([state.gid_of.get(k, -1) for k in rows.gkey], np.int64)
        prow, pw = a.assign(rows.ts)
        pg = rg[prow]
        want = _key_index(gids, wstarts, pg, pw) >= 0
        if not want.any():
            return Partials.empty(self.aggs)
        sel = prow[want]
        inputs = {k: (v[sel], m[sel]) for k, (v, m) in rows.inputs.items()}
        return combine(self.aggs, lift(self.aggs, pg[want], pw[want], rows.ts[sel], inputs))

    def _results(self, state: StreamState, p: Partials) -> WindowResults:
        vals = lower(self.aggs, p)
        gk = np.array([state.gkeys[g] for g in p.gid], dtype=object)
        return WindowResults(gk, p.wkey.copy(), self.assigner.end(p.wkey), vals)


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
