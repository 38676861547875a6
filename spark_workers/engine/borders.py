"""TWA and ELAPSED at the edges of INTERVAL windows in a window query (TDengine's window border
interpolation).

TDengine computes ``twa`` and ``elapsed`` of an INTERVAL window over the window's span as far as
the data reaches it: when the group has a row before the window, the window's curve starts at its
start, the value there interpolated linearly between that row and the window's first row; when it
has a row after the window, the curve ends at the window's last instant (``_wend`` minus one
precision unit), interpolated the same way. Hence the manual's "except for the first and last time
windows, the timestamp differences for the middle windows are all the length of the window"
(ELAPSED), and the hand-checked TWA values of TDengine's ``test_interval_function.py``
(``interval(10m)`` over 6-minute readings: 2.088666666, 2.077099980).

Only a query has every row of a group at hand: a stream's window holds its own rows (a legacy
stream refuses both functions, seed 000; a 3.3.7 computation over ``%%trows`` reads the window's
rows only), so ``engine/extended.py`` computes them over the window's own points and this module
recomputes them for a window query (``query/select.py``). Cost: one sort of the rows, a binary
search per window.
"""

from __future__ import annotations

import numpy as np

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.extended import twa_points
from spark_workers.engine.rows import RowBatch
from spark_workers.engine.stream import WindowResults


def interval_borders(aggs: list[AggSpec], rows: RowBatch, res: WindowResults) -> WindowResults:
    """``res`` (INTERVAL windows of ``rows``, ``wend`` exclusive) with ``twa`` / ``elapsed``
    recomputed over each window's interpolated span (module docstring); other results unchanged."""
    targets = [a for a in aggs if a.func in ("twa", "elapsed")]
    if not targets or len(res.wstart) == 0 or len(rows) == 0:
        return res
    keys = rows.gkey.astype(str)
    order = np.lexsort((rows.ts, keys))
    skeys, sts = keys[order], rows.ts[order]
    uniq, first = np.unique(skeys, return_index=True)
    bounds = {k: (int(s), int(e)) for k, s, e in zip(uniq, first, [*first[1:], skeys.shape[0]], strict=True)}
    values = dict(res.values)
    for a in targets:
        out = np.zeros(len(res.wstart), np.float64)
        ok = np.zeros(len(res.wstart), bool)
        if a.func == "twa":
            assert a.input is not None
            vals, valid = rows.inputs[a.input]
            sv, sok = vals[order].astype(np.float64), valid[order]
        for i, (g, ws, we) in enumerate(
            zip(res.gkey.tolist(), res.wstart.tolist(), res.wend.tolist(), strict=True)
        ):
            lo, hi = bounds.get(str(g), (0, 0))
            if a.func == "elapsed":
                ok[i], out[i] = _elapsed(sts[lo:hi], ws, we, float(a.params[0]) if a.params else 1.0)
            else:
                pts = np.flatnonzero(sok[lo:hi]) + lo
                ok[i], out[i] = _twa(sts[pts], sv[pts], ws, we)
        values[a.name] = (out, ok)
    return WindowResults(res.gkey, res.wstart, res.wend, values)


def _elapsed(ts: np.ndarray, ws: int, we: int, unit: float) -> tuple[bool, float]:
    """ELAPSED of window ``[ws, we)`` over a group's sorted times ``ts``."""
    lo, hi = np.searchsorted(ts, ws, "left"), np.searchsorted(ts, we, "left")
    if hi <= lo:
        return False, 0.0
    start = ws if lo > 0 else int(ts[lo])
    end = we if hi < ts.shape[0] else int(ts[hi - 1])
    return True, (end - start) / unit


def _twa(t: np.ndarray, v: np.ndarray, ws: int, we: int) -> tuple[bool, float]:
    """TWA of window ``[ws, we)`` over a group's non-NULL points ``(t, v)`` sorted by time."""
    lo, hi = int(np.searchsorted(t, ws, "left")), int(np.searchsorted(t, we, "left"))
    if hi <= lo:
        return False, 0.0
    pt, pv = t[lo:hi].astype(np.int64), v[lo:hi]
    if lo > 0 and pt[0] > ws:
        pt = np.concatenate([[ws], pt])
        pv = np.concatenate([[_at(t[lo - 1], v[lo - 1], t[lo], v[lo], ws)], pv])
    last = we - 1
    if hi < t.shape[0] and pt[-1] < last:
        pt = np.concatenate([pt, [last]])
        pv = np.concatenate([pv, [_at(t[hi - 1], v[hi - 1], t[hi], v[hi], last)]])
    return True, twa_points(pt, pv)


def _at(t0: int, v0: float, t1: int, v1: float, t: int) -> float:
    """The value at ``t`` on the line through ``(t0, v0)`` and ``(t1, v1)``."""
    return float(v0 + (v1 - v0) * (t - t0) / (t1 - t0)) if t1 != t0 else float(v1)
