"""The engine's aggregates beyond the basic ones: the variance family, ELAPSED, IRATE and the
value-buffer aggregates, as lift / combine / lower (seed 004, "Stateful incremental calculation").

``spark_workers.engine.aggregates`` dispatches the functions of ``EXTENDED`` here; the contract
is the same: ``lift`` makes one partial per row, ``combine`` merges the partials of one
``(group, window)`` key, ``lower`` gives ``(values, valid)``.

Functions (TDengine SQL manual, "Functions": Aggregate / Selection / Time-Series Specific):

| function                  | state fields          | size      | result |
| ------------------------- | --------------------- | --------- | ------ |
| var_pop(x)                | n, k, s1, s2          | constant  | DOUBLE, population variance |
| elapsed(ts[, unit])       | tmin, tmax            | constant  | DOUBLE, (last - first ts) / unit |
| irate(x)                  | t1, v1, t2, v2        | constant  | DOUBLE, last two points per second |
| apercentile(x, p)         | t, x, n, m, b         | <= 1000 bins | DOUBLE |
| twa(x)                    | t, x, n, m, b         | the window's points | DOUBLE |
| leastsquares(x, a, d)     | t, x, n, m, b         | the window's points | VARCHAR (below) |
| percentile(x, p)          | t, x, n, m, b         | the window's values | DOUBLE |
| mode(x)                   | t, x, n, m, b         | one count per distinct value | type of x |
| count(DISTINCT x)         | t, x, n, m, b         | one count per distinct value | BIGINT |
| hyperloglog(x)            | t, x, n, m, b         | <= 4096 values or 16 KiB | BIGINT |

``stddev_pop`` is ``stddev`` (TDengine: "STDDEV_POP equals STDDEV", 3.3.3.0); TDengine has no
``std``.

Buffered aggregates: a lifted row keeps its time ``t``, value ``x`` and ``n`` (1 = a non-NULL
value); a combined partial has ``m`` = 1 and its buffer ``b``: ``(times, values)`` sorted by time
(points of one time by value) for twa / leastsquares / percentile, ``(distinct values, counts)``
sorted by value for mode / count(DISTINCT) / hyperloglog and ``(bin centres, weights)`` for
apercentile. ``combine`` merges the buffers of a window with its new rows, ``lower`` computes the
function; both run over every window of a micro-batch at once (``engine/buffers.py``: a merge by
position instead of a sort for in-order points, one ``bincount`` for integer values, vectorized
twa / mode / apercentile / count, compact bytes in checkpoints). Memory: twa, leastsquares and
percentile hold every non-NULL value of an open window (16 bytes each), mode / count(DISTINCT) /
hyperloglog one entry per distinct value, apercentile at most ``APERCENTILE_BINS`` bins (TDengine's
"default" algorithm is a 1000-bin histogram, tHistogram: exact while a window has at most 1000
distinct values, within 1/1000 of the rank otherwise).

twa keeps its points rather than TDengine's constant-size running integral (first point, last
point, area): the integral is exact only while rows arrive in time order, and TDengine rebuilds a
window from storage when they do not; the engine folds a late row into the window's points
instead, so the result is exact whatever the arrival order. hyperloglog counts exactly up to
``hll.EXACT_MAX`` distinct values (TDengine keeps 2^14 one-byte registers from the first row,
``HLL_BUCKETS`` in ``builtinsimpl.c``; an exact count is within any error it allows, and 4096
values or fewer cost less to keep and checkpoint than 16 KiB per window).

Rules (TDengine 3.3, function reference and ``builtinsimpl.c``):

- irate: the last two non-NULL points ``(t1, v1) < (t2, v2)``; ``(v2 - v1)`` per second, or
  ``v2`` per second when ``v2 < v1`` (a counter reset); 0.0 with one point; NULL without any.
- twa: trapezoids between consecutive non-NULL points divided by their time span; the value itself
  for one point. A window query with INTERVAL also interpolates at the window's edges from the
  neighbouring rows (``spark_workers.engine.borders``); %%trows (3.3.7 streams) and the other
  windows hold only their own rows.
- leastsquares: x runs ``a, a + d, ...`` over the non-NULL values in time order (values of one
  time in ascending order); NULL when the
  slope is undefined (one point); the text is ``{slop:%.6f, intercept:%.6f}`` (TDengine's spelling).
- percentile: linear interpolation between the closest ranks (``(n - 1) * p / 100``).
- mode: the most frequent non-NULL value; TDengine picks one of several equally frequent values
  at random, the engine the smallest.
- hyperloglog: TDengine's estimate has a standard error of 0.81%; the engine counts exactly up to
  ``hll.EXACT_MAX`` distinct values per window, then keeps 2^14 HLL registers (16 KiB: the state
  stays bounded) and estimates (``engine/hll.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from spark_workers.engine import buffers, hll


class AggSpec(Protocol):
    """What these functions read of ``spark_workers.engine.aggregates.AggSpec``."""

    @property
    def func(self) -> str: ...

    @property
    def params(self) -> tuple[float, ...]: ...


I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
APERCENTILE_BINS = 1000
POINTS = ("twa", "leastsquares", "percentile")
COUNTS = ("mode", "count_distinct", "hyperloglog", "apercentile")
BUFFERED = POINTS + COUNTS
EXTENDED = ("var_pop", "elapsed", "irate", *BUFFERED)
BUFFER_FIELDS = ("t", "x", "n", "m", "b")


def fields(func: str) -> tuple[str, ...] | None:
    """State fields of an extended function (None: not one of ``EXTENDED``)."""
    if func == "var_pop":
        return ("n", "k", "s1", "s2")
    if func == "elapsed":
        return ("tmin", "tmax")
    if func == "irate":
        return ("t1", "v1", "t2", "v2")
    if func in BUFFERED:
        return BUFFER_FIELDS
    return None


def field_dtype(a: AggSpec, f: str, value_dtype: Any) -> Any:
    """numpy dtype of a state field (``value_dtype``: the dtype of the agg's input kind)."""
    if f in ("tmin", "tmax", "t1", "t2", "t", "n", "m"):
        return np.int64
    if f in ("v1", "v2", "k", "s1", "s2"):
        return np.float64
    if f == "x":
        return np.float64 if a.func in POINTS or a.func == "apercentile" else value_dtype
    return object


def empty_field(a: AggSpec, f: str, r: int, value_dtype: Any) -> np.ndarray:
    """The field of ``r`` windows without rows."""
    if f == "tmin":
        return np.full(r, I64_MAX, np.int64)
    if f in ("tmax", "t1", "t2"):
        return np.full(r, I64_MIN, np.int64)
    dt = field_dtype(a, f, value_dtype)
    if dt is object:
        return np.full(r, None, dtype=object)
    return np.zeros(r, dtype=dt)


def lift_one(
    a: AggSpec, ts: np.ndarray, vals: np.ndarray, valid: np.ndarray, value_dtype: Any
) -> dict[str, np.ndarray]:
    """One partial per row of an extended function (field name -> array of length r)."""
    r = ts.shape[0]
    f = a.func
    vi = valid.astype(np.int64)
    if f == "var_pop":
        v = vals.astype(np.float64)
        return {"n": vi, "k": np.where(valid, v, 0.0), "s1": np.zeros(r), "s2": np.zeros(r)}
    if f == "elapsed":  # its argument is the primary timestamp: the row's time, in precision units
        return {"tmin": np.where(valid, ts, I64_MAX), "tmax": np.where(valid, ts, I64_MIN)}
    if f == "irate":
        v = np.where(valid, vals, 0).astype(np.float64)
        return {
            "t1": np.full(r, I64_MIN, np.int64),
            "v1": np.zeros(r),
            "t2": np.where(valid, ts, I64_MIN).astype(np.int64),
            "v2": v,
        }
    xdt = field_dtype(a, "x", value_dtype)
    if xdt is object:
        x = np.asarray(vals, dtype=object).copy()
        x[~valid] = None
    else:
        x = np.where(valid, vals, 0).astype(xdt)
    return {
        "t": ts.astype(np.int64, copy=True),
        "x": x,
        "n": vi,
        "m": np.zeros(r, np.int64),
        "b": np.full(r, None, dtype=object),
    }


def combine_one(
    a: AggSpec, get: dict[str, np.ndarray], starts: np.ndarray, seg: np.ndarray
) -> dict[str, np.ndarray]:
    """Merge the key-sorted partials ``get`` (field -> array) of one extended function into one
    per segment (``starts``: first index of each segment, ``seg``: segment id of each index)."""
    f = a.func
    if f == "elapsed":
        return {
            "tmin": np.minimum.reduceat(get["tmin"], starts),
            "tmax": np.maximum.reduceat(get["tmax"], starts),
        }
    if f == "irate":
        return _combine_irate(get, seg, starts.shape[0])
    return _combine_buffers(a, get, starts, seg)


def _combine_irate(get: dict[str, np.ndarray], seg: np.ndarray, nseg: int) -> dict[str, np.ndarray]:
    """The last two points of each segment among every partial's two points: without a sort when
    each segment's partials hold a point and follow each other in time (rows in time order), else
    ``_combine_irate_sorted``."""
    t1, t2 = get["t1"], get["t2"]
    same = seg[1:] == seg[:-1]
    if (
        t2.shape[0] == 0
        or bool(np.any(t2 == I64_MIN))
        or bool(np.any(t1 >= t2))
        or bool(np.any(same & (t2[1:] <= t2[:-1])))
    ):
        return _combine_irate_sorted(get, seg, nseg)
    last = np.flatnonzero(np.append(~same, True))  # one per segment: segments are never empty
    p = np.maximum(last - 1, 0)
    has_prev = (last > 0) & (seg[p] == seg[last])
    # the point before the last: the previous partial's last one, unless this partial's first is
    # later (equal times: the previous partial's, as the sort orders second points after first ones)
    use_prev = has_prev & (t2[p] >= t1[last])
    t1_out = np.where(use_prev, t2[p], t1[last])
    v1_out = np.where(use_prev, get["v2"][p], np.where(t1[last] == I64_MIN, 0.0, get["v1"][last]))
    return {"t1": t1_out, "v1": v1_out, "t2": t2[last].copy(), "v2": get["v2"][last].copy()}


def _combine_irate_sorted(get: dict[str, np.ndarray], seg: np.ndarray, nseg: int) -> dict[str, np.ndarray]:
    """The last two points of each segment among every partial's two points, in any order."""
    t = np.concatenate([get["t1"], get["t2"]])
    v = np.concatenate([get["v1"], get["v2"]])
    s = np.concatenate([seg, seg])
    keep = t != I64_MIN
    t, v, s = t[keep], v[keep], s[keep]
    order = np.lexsort((t, s))
    t, v, s = t[order], v[order], s[order]
    out = {
        "t1": np.full(nseg, I64_MIN, np.int64),
        "v1": np.zeros(nseg),
        "t2": np.full(nseg, I64_MIN, np.int64),
        "v2": np.zeros(nseg),
    }
    if t.shape[0] == 0:
        return out
    last = np.flatnonzero(np.append(s[1:] != s[:-1], True))
    out["t2"][s[last]] = t[last]
    out["v2"][s[last]] = v[last]
    prev = last - 1
    ok = (prev >= 0) & (s[np.maximum(prev, 0)] == s[last])
    out["t1"][s[last[ok]]] = t[prev[ok]]
    out["v1"][s[last[ok]]] = v[prev[ok]]
    return out


def _combine_buffers(
    a: AggSpec, get: dict[str, np.ndarray], starts: np.ndarray, seg: np.ndarray
) -> dict[str, np.ndarray]:
    """One buffer per segment from its raw rows and its partials' buffers (module docstring),
    vectorized over the segments (``engine/buffers.py``): points merge by position, counts are
    counted per (segment, value), then the flat entries are cut into one buffer per segment."""
    nseg = starts.shape[0]
    x, n, m, b = get["x"], get["n"], get["m"], get["b"]
    raw, bi = np.flatnonzero(n), np.flatnonzero(m)
    dense: dict[int, np.ndarray] = {}  # hyperloglog: segment -> registers (engine/hll.py)
    if a.func == "hyperloglog":
        bi, dense = _dense_registers(b, bi, seg)
    parts = [b[i] for i in bi.tolist()]
    pseg = np.repeat(seg[bi], np.array([p[0].shape[0] for p in parts], np.int64))
    a1_parts = [p[1] for p in parts]
    if a.func in POINTS:
        old = (pseg, _cat([p[0] for p in parts], np.int64), _cat(a1_parts, np.float64))
        vseg, a0, a1 = buffers.merge_points(old, (seg[raw], get["t"][raw], x[raw]))
    else:
        wdt = np.float64 if a.func == "apercentile" else np.int64
        a0 = np.concatenate([x[raw], *[p[0] for p in parts]])
        a1 = np.concatenate([np.ones(raw.shape[0], wdt), *a1_parts])
        vseg, a0, a1 = buffers.count_values(np.concatenate([seg[raw], pseg]), a0, a1)
    merged = buffers.cut(vseg, a0, a1, nseg)
    if a.func == "apercentile":
        for j in np.flatnonzero(np.bincount(vseg, minlength=nseg) > APERCENTILE_BINS).tolist():
            merged[j] = compress_bins(merged[j][0], merged[j][1], APERCENTILE_BINS)
    elif a.func == "hyperloglog":
        many = np.flatnonzero(np.bincount(vseg, minlength=nseg) > hll.EXACT_MAX).tolist()
        for j in sorted({*dense, *many}):
            u = merged[j][0]
            reg = hll.registers(u) if u.shape[0] else np.zeros(hll.M, np.uint8)
            merged[j] = (np.maximum(reg, dense[j]) if j in dense else reg, None)
    return {
        "t": np.zeros(nseg, np.int64),
        "x": np.zeros(nseg, x.dtype) if x.dtype != object else np.full(nseg, None, object),
        "n": np.zeros(nseg, np.int64),
        "m": np.ones(nseg, np.int64),
        "b": merged,
    }


def _cat(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0, dtype)


def _dense_registers(
    b: np.ndarray, bi: np.ndarray, seg: np.ndarray
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Split hyperloglog buffers into exact ones (indices returned) and registers merged per
    segment (a buffer ``(registers, None)``)."""
    keep: list[int] = []
    dense: dict[int, np.ndarray] = {}
    for i in bi.tolist():
        if b[i][1] is None:
            j = int(seg[i])
            dense[j] = b[i][0] if j not in dense else np.maximum(dense[j], b[i][0])
        else:
            keep.append(i)
    return np.array(keep, np.int64), dense


def _merge(a: AggSpec, t: np.ndarray, x: np.ndarray, parts: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """A window's buffer from raw ``(t, x)`` rows and buffers ``parts``."""
    if a.func in POINTS:
        if not parts:
            return (t, x)
        return (np.concatenate([t, *[p[0] for p in parts]]), np.concatenate([x, *[p[1] for p in parts]]))
    vals = [x, *[p[0] for p in parts]]
    weights = [np.ones(x.shape[0], np.int64), *[p[1] for p in parts]]
    v = np.concatenate(vals) if len(vals) > 1 else x
    w = np.concatenate(weights) if len(weights) > 1 else weights[0]
    if v.shape[0] == 0:
        return (v, w)
    if a.func == "apercentile":
        return compress_bins(v.astype(np.float64), w.astype(np.float64), APERCENTILE_BINS)
    uniq, inv = np.unique(v, return_inverse=True)
    return (uniq, np.bincount(inv.ravel(), weights=w, minlength=uniq.shape[0]).astype(np.int64))


def compress_bins(v: np.ndarray, w: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Weighted values -> at most ``bins`` ``(centre, weight)`` bins of about equal weight, sorted
    (exact, only deduplicated, while there are at most ``bins`` distinct values)."""
    uniq, inv = np.unique(v, return_inverse=True)
    uw = np.bincount(inv.ravel(), weights=w, minlength=uniq.shape[0])
    if uniq.shape[0] <= bins:
        return (uniq, uw)
    before = np.cumsum(uw) - uw
    k = np.minimum((before / uw.sum() * bins).astype(np.int64), bins - 1)
    bw = np.bincount(k, weights=uw, minlength=bins)
    centre = np.bincount(k, weights=uw * uniq, minlength=bins)
    used = bw > 0
    return (centre[used] / bw[used], bw[used])


def weighted_percentile(v: np.ndarray, w: np.ndarray, p: float) -> float:
    """Percentile ``p`` (0..100) of sorted values ``v`` with weights ``w``, interpolating linearly
    between the closest ranks (numpy's "linear" over the values repeated by their weights)."""
    cum = np.cumsum(w)
    rank = p / 100.0 * (cum[-1] - 1)
    lo = np.floor(rank)
    i_lo = min(int(np.searchsorted(cum, lo, side="right")), v.shape[0] - 1)
    i_hi = min(int(np.searchsorted(cum, np.ceil(rank), side="right")), v.shape[0] - 1)
    return float(v[i_lo] + (rank - lo) * (v[i_hi] - v[i_lo]))


def lower_one(a: AggSpec, c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, valid)`` of an extended function from combined partials ``c``."""
    f = a.func
    if f == "elapsed":
        ok = c["tmin"] != I64_MAX
        unit = float(a.params[0]) if a.params else 1.0
        return (np.where(ok, (c["tmax"] - np.where(ok, c["tmin"], c["tmax"])) / unit, 0.0), ok)
    if f == "irate":
        return _lower_irate(a, c)
    if f in ("twa", "mode", "count_distinct", "hyperloglog", "apercentile"):
        return _lower_flat(a, c)
    r = c["n"].shape[0]
    vals: list[Any] = []
    valid = np.zeros(r, bool)
    for i in range(r):
        t, x = _buffer_of(a, c, i)
        value = lower_buffer(a, t, x)
        valid[i] = value is not None
        vals.append(value)
    if f == "leastsquares":
        return (np.array(vals, dtype=object), valid)
    return (np.array([0 if v is None else v for v in vals], dtype=np.float64), valid)


def _lower_flat(a: AggSpec, c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """twa, mode, count(DISTINCT), hyperloglog and apercentile of every window at once over the
    windows' buffers laid end to end (``engine/buffers.py``)."""
    f, r = a.func, c["n"].shape[0]
    dt0 = np.int64 if f == "twa" else c["x"].dtype
    dt1 = np.float64 if f in ("twa", "apercentile") else np.int64
    none = (np.empty(0, dt0), np.empty(0, dt1))
    m, n = c["m"].tolist(), c["n"].tolist()
    bufs = [_buffer_of(a, c, i) if m[i] or n[i] else none for i in range(r)]
    dense = {i: bf[0] for i, bf in enumerate(bufs) if bf[1] is None}  # hyperloglog registers
    for i in dense:
        bufs[i] = none
    lens, a0, a1 = buffers.flat(bufs, dt0, dt1)
    if f in ("count_distinct", "hyperloglog"):
        for i, reg in dense.items():
            lens[i] = hll.estimate(reg)
        return (lens, np.ones(r, bool))
    if f == "twa":
        return buffers.twa(lens, a0, a1)
    if f == "apercentile":
        return buffers.percentile(lens, a0, a1, float(a.params[0]))
    pick, ok = buffers.mode(lens, a0, a1)
    if a0.dtype == object:
        vals = np.full(r, None, dtype=object)
        vals[ok] = a0[pick[ok]]
        return (vals, ok)
    vals = np.zeros(r, c["x"].dtype)
    vals[ok] = a0[pick[ok]]
    return (vals, ok)


def _buffer_of(a: AggSpec, c: dict[str, np.ndarray], i: int) -> tuple[np.ndarray, np.ndarray]:
    """The buffer of partial ``i``, whether lowered straight after lift (a raw row) or combined."""
    if c["m"][i]:
        buf = c["b"][i]
        return buf[0], buf[1]
    if not c["n"][i]:
        return np.empty(0, np.int64), np.empty(0, c["x"].dtype)
    merged = _merge(a, c["t"][i : i + 1], c["x"][i : i + 1], [])
    return merged[0], merged[1]


def lower_buffer(a: AggSpec, first: np.ndarray, second: np.ndarray | None) -> Any:
    """The function's value from one window's buffer (None = NULL)."""
    f = a.func
    if f == "hyperloglog" and second is None:
        return hll.estimate(first)
    if first.shape[0] == 0 or second is None:
        return 0 if f in ("count_distinct", "hyperloglog") else None
    if f in ("count_distinct", "hyperloglog"):
        return int(first.shape[0])
    if f == "mode":
        return first[int(np.argmax(second))]
    if f == "apercentile":
        return weighted_percentile(first, second, float(a.params[0]))
    order = np.argsort(first, kind="stable")
    t, x = first[order], second[order].astype(np.float64)
    if f == "percentile":
        return float(np.percentile(x, float(a.params[0])))
    if f == "twa":
        return twa_points(t, x)
    return leastsquares_text(x, float(a.params[0]), float(a.params[1]))


def twa_points(t: np.ndarray, x: np.ndarray) -> float:
    """Time-weighted average of points sorted by time: trapezoid area / time span (the mean when
    every point has one time)."""
    span = float(t[-1] - t[0])
    if span <= 0:
        return float(x.mean())
    area = float(np.sum((x[1:] + x[:-1]) * 0.5 * np.diff(t).astype(np.float64)))
    return area / span


def leastsquares_text(y: np.ndarray, start: float, step: float) -> str | None:
    """TDengine's ``{slop:%.6f, intercept:%.6f}`` of y over x = start, start + step, ...; None when
    the slope is undefined."""
    nrow = y.shape[0]
    x = start + step * np.arange(nrow, dtype=np.float64)
    sx, sy = float(x.sum()), float(y.sum())
    sxx, sxy = float((x * x).sum()), float((x * y).sum())
    d = sxx - sx * (sx / nrow)
    if d == 0:
        return None
    slope = (sxy - sy * (sx / nrow)) / d
    intercept = (sy - sx * slope) / nrow
    return f"{{slop:{slope:.6f}, intercept:{intercept:.6f}}}"


def _lower_irate(a: AggSpec, c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ok = c["t2"] != I64_MIN
    has2 = ok & (c["t1"] != I64_MIN)
    v1, v2 = c["v1"], c["v2"]
    diff = np.where(v2 >= v1, v2 - v1, v2)
    dur = (c["t2"] - np.where(has2, c["t1"], c["t2"])).astype(np.float64)
    per_s = float(a.params[0]) if a.params else 1000.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(has2 & (dur > 0), diff / (dur / per_s), 0.0)
    return (rate, ok)


def result_type(a: AggSpec, input_type: pa.DataType | None) -> pa.DataType:
    """Arrow type of an extended function's result (module table)."""
    f = a.func
    if f in ("count_distinct", "hyperloglog"):
        return pa.int64()
    if f == "leastsquares":
        return pa.string()
    if f == "mode":
        assert input_type is not None
        return input_type
    return pa.float64()
