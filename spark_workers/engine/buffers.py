"""Value buffers of the buffered aggregates (``engine/extended.py``), merged and lowered for every
window of a micro-batch at once (seed 004, "Stateful incremental calculation").

A window's buffer is a pair of arrays: ``(times, values)`` sorted by time (twa, leastsquares,
percentile) or ``(distinct values, weights)`` sorted by value (mode, count(DISTINCT), hyperloglog
below ``hll.EXACT_MAX`` values, apercentile). This module works on the flat form of many windows:
a segment id per entry (ascending) with the entries of each segment in buffer order.

Cost per micro-batch of ``r`` new rows and ``e`` buffered entries:

- points: the buffered points of a window precede its new rows, so the two runs are merged by
  position (``np.searchsorted``, no sort); a sort, by (segment, time, value), runs only when a
  window's points are not strictly increasing in time (late rows, equal times);
- counts: integer values whose range times the segments is small are counted with one
  ``np.bincount`` (no sort); other values sort once by value, then by segment with a radix sort;
- lowering: twa, mode, apercentile, count(DISTINCT) of every window with ``reduceat`` /
  ``bincount`` / ``searchsorted`` over the flat arrays, no Python loop per window;
- serialization: one compact binary value per window (a tag, two dtype codes, the arrays' raw
  bytes; text values and registers-or-values pairs fall back to pickle).

Ties: points of one window at one time are ordered by value, so a window's twa and leastsquares
do not depend on how its rows were split into micro-batches or on their arrival order.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

import numpy as np
import pyarrow as pa

_TAG = 1  # first byte of an encoded buffer; pickle protocol 2+ starts with 0x80
_HEAD = struct.Struct("<BccQ")
_CODES = {
    np.dtype(np.int64): b"q",
    np.dtype(np.float64): b"d",
    np.dtype(np.bool_): b"?",
    np.dtype(np.uint8): b"B",
}
_DTYPES = {v: k for k, v in _CODES.items()}


def merge_positions(seg_a: np.ndarray, seg_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in the merged run of two segment-sorted runs, run ``a`` first within a segment."""
    pos_a = np.arange(seg_a.shape[0]) + np.searchsorted(seg_b, seg_a, "left")
    pos_b = np.arange(seg_b.shape[0]) + np.searchsorted(seg_a, seg_b, "right")
    return pos_a, pos_b


def merge_points(
    old: tuple[np.ndarray, np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(segment, time, value)`` of buffered points ``old`` and new rows ``new`` (each sorted by
    segment) -> one run sorted by (segment, time, value)."""
    pos_o, pos_n = merge_positions(old[0], new[0])
    n = pos_o.shape[0] + pos_n.shape[0]
    out = []
    for a_old, a_new in zip(old, new, strict=True):
        arr = np.empty(n, np.result_type(a_old.dtype, a_new.dtype))
        arr[pos_o] = a_old
        arr[pos_n] = a_new
        out.append(arr)
    s, t, x = out
    if n > 1 and bool(np.any((s[1:] == s[:-1]) & (t[1:] <= t[:-1]))):
        order = np.lexsort((x, t, s))
        s, t, x = s[order], t[order], x[order]
    return s, t, x


def count_values(vseg: np.ndarray, v: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(segment, value, weight)`` entries -> one entry per distinct (segment, value), weights
    summed, sorted by segment then value."""
    n = v.shape[0]
    if n == 0:
        return vseg, v, w
    if v.dtype.kind in "iub":
        k = v.astype(np.int64)
        lo, hi, nseg = int(k.min()), int(k.max()), int(vseg.max()) + 1
        span = hi - lo + 1
        if span * nseg <= max(4 * n, 1 << 16):
            packed = vseg.astype(np.int64) * span + (k - lo)
            tot = np.bincount(packed, weights=w, minlength=span * nseg)
            cnt = np.bincount(packed, minlength=span * nseg)
            idx = np.flatnonzero(cnt)
            return idx // span, (idx % span + lo).astype(v.dtype), tot[idx].astype(w.dtype)
        key = k
    elif v.dtype == object:
        key = np.unique(v, return_inverse=True)[1].ravel()
    else:
        key = v
    order = segment_value_order(vseg, key)
    vseg, key, v, w = vseg[order], key[order], v[order], w[order]
    brk = np.ones(n, bool)
    brk[1:] = (vseg[1:] != vseg[:-1]) | (key[1:] != key[:-1])
    first = np.flatnonzero(brk)
    return vseg[first], v[first], np.add.reduceat(w, first)


def segment_value_order(vseg: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The order sorting entries by (segment, key) (numeric keys, NaN last).

    Segments of similar length (the windows of one micro-batch) sort as the rows of one padded
    2-D array, each row small enough for the cache; otherwise the keys sort once, then a stable
    sort by segment (a radix sort when the ids fit 16 bits) keeps their order within a segment."""
    small = int(vseg.max()) < 1 << 16
    by_seg = np.argsort(vseg.astype(np.uint16) if small else vseg, kind="stable")
    counts = np.bincount(vseg)
    width = int(counts.max())
    n = key.shape[0]
    if counts.shape[0] * width > 4 * n + 1024:
        o1 = np.argsort(key)
        s = vseg[o1]
        return o1[np.argsort(s.astype(np.uint16) if small else s, kind="stable")]
    s_sorted = vseg[by_seg]
    col = np.arange(n) - (np.cumsum(counts) - counts)[s_sorted]
    fill = np.inf if key.dtype.kind == "f" else np.iinfo(np.int64).max
    pad = np.full((counts.shape[0], width), fill, np.float64 if key.dtype.kind == "f" else np.int64)
    pad[s_sorted, col] = key[by_seg]
    ent = np.full((counts.shape[0], width), -1, np.int64)
    ent[s_sorted, col] = by_seg
    out = np.take_along_axis(ent, np.argsort(pad, axis=1), axis=1).ravel()
    return out[out >= 0]


def cut(seg: np.ndarray, a0: np.ndarray, a1: np.ndarray, nseg: int) -> np.ndarray:
    """One ``(a0, a1)`` buffer per segment ``0 .. nseg - 1`` of the segment-sorted entries: views
    of the flat arrays, never copied (``runtime/kernel.py`` checkpoints the state after every
    micro-batch, so a view does not keep a batch's arrays alive past it)."""
    ends = np.cumsum(np.bincount(seg, minlength=nseg)).tolist()
    out = np.empty(nseg, dtype=object)
    s = 0
    for j, e in enumerate(ends):
        out[j] = (a0[s:e], a1[s:e])
        s = e
    return out


def flat(
    bufs: list[tuple[np.ndarray, np.ndarray]], dt0: Any, dt1: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lengths, a0, a1)`` of windows' buffers laid end to end (``dt0`` / ``dt1``: the dtypes
    when there are none)."""
    lens = np.array([b[0].shape[0] for b in bufs], np.int64)
    if not bufs:
        return lens, np.empty(0, dt0), np.empty(0, dt1)
    return lens, np.concatenate([b[0] for b in bufs]), np.concatenate([b[1] for b in bufs])


def _bounds(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, end and non-emptiness of each window's entries in the flat arrays."""
    ends = np.cumsum(lens)
    return ends - lens, ends, lens > 0


def twa(lens: np.ndarray, t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted average of each window (``extended.twa_points``): trapezoids between
    consecutive points over the time span, the mean when all points share one time."""
    r = lens.shape[0]
    sid = np.repeat(np.arange(r), lens)
    if t.shape[0] > 1 and bool(np.any((sid[1:] == sid[:-1]) & (t[1:] < t[:-1]))):
        order = np.lexsort((x, t, sid))  # state written before buffers were kept in time order
        t, x = t[order], x[order]
    starts, ends, ok = _bounds(lens)
    x = x.astype(np.float64)
    span = np.zeros(r)
    span[ok] = (t[ends[ok] - 1] - t[starts[ok]]).astype(np.float64)
    pair = sid[1:] == sid[:-1]
    trap = (x[1:] + x[:-1]) * 0.5 * np.diff(t).astype(np.float64)
    area = np.bincount(sid[1:][pair], weights=trap[pair], minlength=r)
    mean = np.bincount(sid, weights=x, minlength=r) / np.maximum(lens, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, area / np.where(span > 0, span, 1.0), mean), ok


def mode(lens: np.ndarray, v: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index into ``v`` of each window's most frequent value (the smallest of equally frequent
    ones: values are sorted), and which windows have one."""
    r = lens.shape[0]
    starts, _, ok = _bounds(lens)
    pick = np.zeros(r, np.int64)
    if not ok.any():
        return pick, ok
    top = np.maximum.reduceat(w, starts[ok])
    sid = np.repeat(np.arange(r), lens)
    best = np.flatnonzero(w == np.repeat(top, lens[ok]))
    first = np.ones(best.shape[0], bool)
    first[1:] = sid[best[1:]] != sid[best[:-1]]
    pick[sid[best[first]]] = best[first]
    return pick, ok


def percentile(lens: np.ndarray, v: np.ndarray, w: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``extended.weighted_percentile`` of each window's sorted values ``v`` with weights ``w``
    (integer-valued: counts or sums of counts), by one ``searchsorted`` over the running weight."""
    starts, ends, ok = _bounds(lens)
    out = np.zeros(lens.shape[0])
    if not ok.any():
        return out, ok
    cum = np.cumsum(w.astype(np.float64))
    s, e = starts[ok], ends[ok]
    base = cum[s] - w[s]
    rank = p / 100.0 * (cum[e - 1] - base - 1)
    lo = np.floor(rank)
    i_lo = np.minimum(np.searchsorted(cum, base + lo, "right"), e - 1)
    i_hi = np.minimum(np.searchsorted(cum, base + np.ceil(rank), "right"), e - 1)
    vf = v.astype(np.float64)
    out[ok] = vf[i_lo] + (rank - lo) * (vf[i_hi] - vf[i_lo])
    return out, ok


def encode(buf: Any) -> bytes:
    """A window's buffer (None, or a pair of arrays) as bytes for the checkpointed state."""
    if buf is not None and buf[1] is not None:
        a0, a1 = buf
        c0, c1 = _CODES.get(a0.dtype), _CODES.get(a1.dtype)
        if c0 is not None and c1 is not None:
            head = _HEAD.pack(_TAG, c0, c1, a0.shape[0])
            return b"".join((head, np.ascontiguousarray(a0).data, np.ascontiguousarray(a1).data))
    return pickle.dumps(buf, protocol=5)


def decode(data: bytes) -> Any:
    """Inverse of ``encode`` (read-only arrays over ``data``); also reads pickled buffers."""
    if data[0] != _TAG:
        return pickle.loads(data)  # our own checkpointed state, never user input
    _, c0, c1, n = _HEAD.unpack_from(data, 0)
    d0, d1 = _DTYPES[c0], _DTYPES[c1]
    a0 = np.frombuffer(data, d0, n, _HEAD.size)
    return a0, np.frombuffer(data, d1, n, _HEAD.size + n * d0.itemsize)


def encode_column(col: np.ndarray) -> pa.Array:
    """An object column of buffers (None: a raw row's partial) -> Arrow binary, None as NULL."""
    return pa.array([None if b is None else encode(b) for b in col], pa.binary())


def encode_lists(col: np.ndarray) -> pa.Array:
    """An object column of buffers -> a struct of two Arrow lists (``a0``, ``a1``; None as NULL),
    built from the concatenated arrays without a Python step per array; columns whose buffers
    are not all pairs of one numeric dtype pair (text, hyperloglog registers) -> ``encode_column``."""
    kinds = {(b[0].dtype, None if b[1] is None else b[1].dtype) for b in col if b is not None}
    if len(kinds) != 1:
        return encode_column(col)
    d0, d1 = next(iter(kinds))
    if d0 not in _CODES or d1 not in _CODES:
        return encode_column(col)
    none = np.array([b is None for b in col], bool)
    bufs = [b for b in col if b is not None]
    lens = np.zeros(col.shape[0], np.int64)
    lens[~none] = [b[0].shape[0] for b in bufs]
    offsets = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
    mask = pa.array(none)
    lists = [
        pa.LargeListArray.from_arrays(offsets, pa.array(np.concatenate([b[k] for b in bufs])), mask=mask)
        for k in (0, 1)
    ]
    return pa.StructArray.from_arrays(lists, names=["a0", "a1"], mask=mask)


def decode_column(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Inverse of ``encode_column`` and ``encode_lists`` (and of the per-window pickles of older
    checkpoints)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    out = np.empty(len(col), dtype=object)
    if pa.types.is_struct(col.type):
        valid = col.is_valid().to_numpy(zero_copy_only=False).tolist()
        l0, l1 = col.flatten()
        o0, o1 = l0.offsets.to_numpy().tolist(), l1.offsets.to_numpy().tolist()
        v0 = l0.values.to_numpy(zero_copy_only=False)
        v1 = l1.values.to_numpy(zero_copy_only=False)
        for i, ok in enumerate(valid):
            out[i] = (v0[o0[i] : o0[i + 1]], v1[o1[i] : o1[i + 1]]) if ok else None
        return out
    for i, b in enumerate(col.to_pylist()):
        out[i] = None if b is None else decode(b)
    return out
