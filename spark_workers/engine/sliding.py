"""eKuiper's SLIDINGWINDOW(unit, size[, delay]) [OVER (WHEN cond)] (seed 003).

Every row that meets the trigger condition (all rows without ``OVER (WHEN ...)``) at time ``t``
produces one window. Without a delay the window holds the group's rows with
``t - size <= ts <= t`` and fires once ``T`` (latest event time − watermark, or the wall clock in
processing-time mode) reaches ``t``; with a delay it holds ``t - size <= ts < t + delay`` and fires
once ``T`` reaches ``t + delay``. ``window_start() = t - size``, ``window_end() = t + delay``
(eKuiper's ``scan``: left bound inclusive, right bound exclusive only when delayed).

Windows overlap arbitrarily, so partial aggregates per window cannot be shared: the state keeps
the group's rows of the last ``size + delay`` (plus rows pending triggers need) and aggregates each
window when it fires, vectorized over all windows of the batch (one ``lift`` of (row, window)
pairs, one ``combine``). Memory is proportional to the rows inside ``size + delay``, as in eKuiper.

Rows older than the watermark when they arrive are dropped (eKuiper's lateness). Updates and
deletes change the buffered rows of windows that have not fired; fired windows are final.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
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
from spark_workers.engine.stream import StepOutput, StreamRules, WindowEvent, WindowResults, _ipc, key_index

STATE_FORMAT = 1


@dataclass(frozen=True)
class SlidingSpec:
    """SLIDINGWINDOW in precision units: ``size`` (lookback) and ``delay`` (lookahead)."""

    size: int
    delay: int = 0


class SlidingState:
    """One bucket: groups, the buffered rows (sorted by group, time) and the pending triggers."""

    def __init__(self, input_names: list[str]) -> None:
        self.input_names = input_names
        self.gkeys: list[str] = []
        self.gid_of: dict[str, int] = {}
        self.max_ts = np.empty(0, np.int64)
        self.buf_gid = np.empty(0, np.int64)
        self.buf_ts = np.empty(0, np.int64)
        self.buf_inputs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.trig_gid = np.empty(0, np.int64)
        self.trig_t = np.empty(0, np.int64)

    def gids(self, gkeys: np.ndarray) -> np.ndarray:
        """Group ids for keys, registering new groups."""
        ids, added = register_groups(gkeys, self.gid_of, self.gkeys)
        if added:
            self.max_ts = np.concatenate([self.max_ts, np.full(added, I64_MIN, np.int64)])
        return ids

    def nbytes(self) -> int:
        inputs = sum(v.nbytes + m.nbytes for v, m in self.buf_inputs.values())
        return int(self.buf_gid.nbytes * 2 + inputs + self.trig_gid.nbytes * 2 + self.max_ts.nbytes)

    def _select(self, idx: np.ndarray) -> None:
        self.buf_gid, self.buf_ts = self.buf_gid[idx], self.buf_ts[idx]
        self.buf_inputs = {k: (v[idx], m[idx]) for k, (v, m) in self.buf_inputs.items()}

    def add_rows(
        self, gid: np.ndarray, ts: np.ndarray, inputs: dict[str, tuple[np.ndarray, np.ndarray]]
    ) -> None:
        """Buffer rows; a row with the (group, ts) of a buffered one replaces it."""
        if not self.buf_inputs:
            self.buf_inputs = {k: (v[:0], m[:0]) for k, (v, m) in inputs.items()}
        self.remove(gid, ts)
        self.buf_gid = np.concatenate([self.buf_gid, gid])
        self.buf_ts = np.concatenate([self.buf_ts, ts])
        self.buf_inputs = {
            k: (np.concatenate([v, inputs[k][0]]), np.concatenate([m, inputs[k][1]]))
            for k, (v, m) in self.buf_inputs.items()
        }
        self._select(np.lexsort((self.buf_ts, self.buf_gid)))

    def remove(self, gid: np.ndarray, ts: np.ndarray) -> None:
        if not gid.size or not self.buf_gid.size:
            return
        hit = key_index(gid, ts, self.buf_gid, self.buf_ts) >= 0
        if hit.any():
            self._select(np.flatnonzero(~hit))

    def to_bytes(self) -> bytes:
        """Versioned serialization (Arrow IPC)."""
        groups = pa.table({"gkey": pa.array(self.gkeys, pa.string()), "max_ts": self.max_ts})
        cols: dict[str, Any] = {"gid": self.buf_gid, "ts": self.buf_ts}
        for k, (v, m) in self.buf_inputs.items():
            cols[f"v.{k}"] = pa.array(v, from_pandas=True) if v.dtype == object else v
            cols[f"m.{k}"] = m
        trig = pa.table({"gid": self.trig_gid, "t": self.trig_t})
        parts = [_ipc(groups), _ipc(pa.table(cols)), _ipc(trig)]
        return struct.pack("<IIII", STATE_FORMAT, *(len(p) for p in parts)) + b"".join(parts)

    @classmethod
    def from_bytes(cls, input_names: list[str], data: bytes) -> SlidingState:
        """Inverse of ``to_bytes``.

        Raises:
            ValueError: unknown state format.
        """
        fmt, n0, n1, n2 = struct.unpack_from("<IIII", data, 0)
        if fmt != STATE_FORMAT:
            raise ValueError(f"unsupported sliding state format {fmt}")
        off = struct.calcsize("<IIII")
        tables = []
        for n in (n0, n1, n2):
            tables.append(pa.ipc.open_stream(io.BytesIO(data[off : off + n])).read_all())
            off += n
        groups, buf, trig = tables
        st = cls(input_names)
        st.gkeys = groups.column("gkey").to_pylist()
        st.gid_of = {k: i for i, k in enumerate(st.gkeys)}
        st.max_ts = groups.column("max_ts").to_numpy(zero_copy_only=False).astype(np.int64)
        st.buf_gid = buf.column("gid").to_numpy(zero_copy_only=False).astype(np.int64)
        st.buf_ts = buf.column("ts").to_numpy(zero_copy_only=False).astype(np.int64)
        for name in buf.column_names:
            if name.startswith("v."):
                k = name[2:]
                col = buf.column(name)
                t = col.type
                if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
                    v = np.asarray(col.to_pylist(), dtype=object)
                else:
                    v = col.to_numpy(zero_copy_only=False)
                st.buf_inputs[k] = (v, buf.column(f"m.{k}").to_numpy(zero_copy_only=False).astype(bool))
        st.trig_gid = trig.column("gid").to_numpy(zero_copy_only=False).astype(np.int64)
        st.trig_t = trig.column("t").to_numpy(zero_copy_only=False).astype(np.int64)
        return st


class SlidingEngine:
    """SLIDINGWINDOW over a stream for all groups of one bucket (module docstring).

    Args:
        spec: size and delay.
        aggs: aggregate calls (``rows`` for queries without aggregates).
        rules: time rules (watermark, processing time); eKuiper's lateness always applies.
    """

    def __init__(self, spec: SlidingSpec, aggs: list[AggSpec], rules: StreamRules) -> None:
        if spec.size <= 0 or spec.delay < 0:
            raise ValueError("SLIDINGWINDOW size must be positive and delay non-negative")
        self.spec = spec
        self.aggs = aggs
        self.rules = rules

    def new_state(self, input_names: list[str] | None = None) -> SlidingState:
        return SlidingState(input_names or [])

    def step(
        self, state: SlidingState, batch: RowBatch, recalc: object = None, now: int | None = None
    ) -> StepOutput:
        """Process one micro-batch (rows in arrival order; a ``trigger`` extra marks the rows that
        meet ``OVER (WHEN ...)``, a ``keep`` extra the rows WHERE keeps).

        Returns:
            StepOutput: the windows that fired (keyed by group and ``t - size``).
        """
        r, sp = self.rules, self.spec
        n = len(batch)
        stats: dict[str, int | None] = {
            "rows_in": n,
            "rows_expired": 0,
            "windows_opened": 0,
            "windows_closed": 0,
        }
        history = bool(n) and bool(batch.is_history.all())
        if n:
            gid = group_ids(batch, state.gids)
            ch = batch.changes
            keep = batch.extra["keep"][0].astype(bool) if "keep" in batch.extra else np.ones(n, bool)
            trig = (
                batch.extra["trigger"][0].astype(bool) & batch.extra["trigger"][1]
                if "trigger" in batch.extra
                else np.ones(n, bool)
            )
            adv = (ch == INSERT) | (ch == UPDATE_POST)
            order = np.argsort(gid, kind="stable")
            prev = np.full(n, I64_MIN, np.int64)
            gs, ts_s = gid[order], np.where(adv[order], batch.ts[order], I64_MIN)
            bounds = np.append(np.flatnonzero(np.diff(gs)) + 1, n)
            lo = 0
            for hi in bounds.tolist():
                g = int(gs[lo])
                run = np.maximum.accumulate(ts_s[lo:hi])
                p = np.empty(hi - lo, np.int64)
                p[0] = state.max_ts[g]
                p[1:] = np.maximum(run[:-1], state.max_ts[g])
                prev[order[lo:hi]] = p
                lo = hi
            late = (prev != I64_MIN) & (batch.ts < prev - r.watermark)
            new = (ch == INSERT) & keep & ~late
            stats["rows_expired"] = int(((ch == INSERT) & late).sum())
            gone = (ch == DELETE) | (ch == UPDATE_PRE)
            if gone.any():
                state.remove(gid[gone], batch.ts[gone])
            add = new | ((ch == UPDATE_POST) & keep & ~late)
            if "where" in batch.extra:  # eKuiper: WHERE filters a window's rows after windowing
                wv, wok = batch.extra["where"]
                add &= wv.astype(bool) & wok
            if add.any():
                idx = np.flatnonzero(add)
                state.add_rows(
                    gid[idx], batch.ts[idx], {k: (v[idx], m[idx]) for k, (v, m) in batch.inputs.items()}
                )
            fire = new & trig
            if fire.any():
                state.trig_gid = np.concatenate([state.trig_gid, gid[fire]])
                state.trig_t = np.concatenate([state.trig_t, batch.ts[fire]])
                stats["windows_opened"] = int(fire.sum())
            if adv.any():
                np.maximum.at(state.max_ts, gid[adv], batch.ts[adv])
        # ---- fire the windows whose time has come
        horizon = self._horizon(state, state.trig_gid, now)
        due = (state.trig_t + sp.delay) <= horizon
        results, events = self._fire(state, np.flatnonzero(due), history)
        stats["windows_closed"] = int(due.sum())
        state.trig_gid, state.trig_t = state.trig_gid[~due], state.trig_t[~due]
        self._evict(state, now)
        stats["open_windows"] = int(state.trig_gid.size)
        stats["state_bytes"] = state.nbytes()
        seen = state.max_ts[state.max_ts != I64_MIN]
        stats["max_ts"] = int(seen.max()) if seen.size else None
        return StepOutput(results, [], events, stats)

    def _horizon(self, state: SlidingState, gids: np.ndarray, now: int | None) -> np.ndarray:
        if self.rules.processing_time and now is not None:
            return np.full(gids.shape[0], now - self.rules.watermark, np.int64)
        latest = state.max_ts[gids]
        return np.where(latest == I64_MIN, I64_MIN, latest - self.rules.watermark)

    def _fire(
        self, state: SlidingState, k: np.ndarray, history: bool
    ) -> tuple[WindowResults, list[WindowEvent]]:
        sp = self.spec
        tg, tt = state.trig_gid[k], state.trig_t[k]
        if k.size:  # one window per (group, t): two triggers at one instant are one window
            _, first = np.unique(np.stack([tg, tt]), axis=1, return_index=True)
            tg, tt = tg[np.sort(first)], tt[np.sort(first)]
        lo_t = tt - sp.size
        # rows of each window: binary search inside the group's slice of the sorted buffer
        g_lo = np.searchsorted(state.buf_gid, tg, side="left")
        g_hi = np.searchsorted(state.buf_gid, tg, side="right")
        lo = np.empty(tg.size, np.int64)
        hi = np.empty(tg.size, np.int64)
        right_side: Literal["left", "right"] = "left" if sp.delay > 0 else "right"
        for i in range(tg.size):
            seg = state.buf_ts[g_lo[i] : g_hi[i]]
            lo[i] = g_lo[i] + np.searchsorted(seg, lo_t[i], side="left")
            hi[i] = g_lo[i] + np.searchsorted(seg, tt[i] + sp.delay, side=right_side)
        counts = np.maximum(hi - lo, 0)
        win = np.repeat(np.arange(tg.size, dtype=np.int64), counts)
        offs = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = np.repeat(lo, counts) + offs
        inputs = {name: (v[rows], m[rows]) for name, (v, m) in state.buf_inputs.items()}
        part = (
            combine(self.aggs, lift(self.aggs, tg[win], win, state.buf_ts[rows], inputs))
            if rows.size
            else Partials.empty(self.aggs)
        )
        # windows with no rows cannot happen (the trigger row is inside) unless it was deleted
        gk = (
            np.array([state.gkeys[g] for g in tg[part.wkey]], dtype=object)
            if len(part)
            else np.empty(0, object)
        )
        res = WindowResults(gk, lo_t[part.wkey], tt[part.wkey] + sp.delay, lower(self.aggs, part))
        events: list[WindowEvent] = []
        r = self.rules
        if (r.notify_open or r.notify_close) and (r.notify_history or not history):
            for i in range(len(res)):
                if r.notify_open:
                    events.append(
                        WindowEvent("WINDOW_OPEN", res.gkey[i], int(res.wstart[i]), int(res.wend[i]), history)
                    )
                if r.notify_close:
                    events.append(
                        WindowEvent(
                            "WINDOW_CLOSE", res.gkey[i], int(res.wstart[i]), int(res.wend[i]), history
                        )
                    )
        return res, events

    def _evict(self, state: SlidingState, now: int | None) -> None:
        """Drop buffered rows no future window can hold."""
        if not state.buf_gid.size:
            return
        sp = self.spec
        ng = len(state.gkeys)
        horizon = self._horizon(state, np.arange(ng, dtype=np.int64), now)
        floor = np.where(horizon == I64_MIN, I64_MIN, horizon - sp.size)
        if state.trig_gid.size:
            pend = np.full(ng, np.iinfo(np.int64).max, np.int64)
            np.minimum.at(pend, state.trig_gid, state.trig_t - sp.size)
            floor = np.minimum(floor, pend)
        keep = state.buf_ts >= floor[state.buf_gid]
        if not keep.all():
            state._select(np.flatnonzero(keep))


def sliding_aggregate(spec: SlidingSpec, aggs: list[AggSpec], rows: RowBatch) -> WindowResults:
    """Batch form (interactive SELECT): one window per triggering row, the rows of its group in
    its range, with the streams' aggregates. Sorted by (group key, window start)."""
    eng = SlidingEngine(spec, aggs, StreamRules(mode="WINDOW_CLOSE"))
    st = eng.new_state(list(rows.inputs))
    if len(rows):
        rows = rows.take(np.lexsort((rows.ts, rows.gkey.astype(str))))
        gid = st.gids(rows.gkey)
        keep = rows.extra["keep"][0].astype(bool) if "keep" in rows.extra else np.ones(len(rows), bool)
        trig = (
            rows.extra["trigger"][0].astype(bool) & rows.extra["trigger"][1]
            if "trigger" in rows.extra
            else np.ones(len(rows), bool)
        )
        where = (
            rows.extra["where"][0].astype(bool) & rows.extra["where"][1] if "where" in rows.extra else True
        )
        idx = np.flatnonzero(keep & where)
        st.add_rows(gid[idx], rows.ts[idx], {k: (v[idx], m[idx]) for k, (v, m) in rows.inputs.items()})
        fire = np.flatnonzero(keep & trig)
        st.trig_gid, st.trig_t = gid[fire], rows.ts[fire]
    res, _ = eng._fire(st, np.arange(st.trig_gid.size), False)
    o = np.lexsort((res.wstart, res.gkey.astype(str)))
    return WindowResults(
        res.gkey[o], res.wstart[o], res.wend[o], {k: (v[o], m[o]) for k, (v, m) in res.values.items()}
    )
