"""Incremental aggregates as lift / combine / lower (seed 004, "Stateful incremental calculation").

A *partial* is a fixed-size state vector per (group, window) key: ``lift`` maps input rows into
partials (one per row), ``combine`` merges partials that share a key, ``lower`` turns a partial
into the result value. Memory is proportional to the number of open windows, never to the rows
they hold. Everything is vectorized: a ``Partials`` holds one numpy array per state field.

Functions (TDengine SQL manual, "Aggregate functions" / "Selection functions"):

| function      | state fields                | result type           |
| ------------- | --------------------------- | --------------------- |
| count(*)      | n                           | BIGINT                |
| count(x)      | n (non-NULL)                | BIGINT                |
| sum(x)        | s, n                        | BIGINT for integers, DOUBLE otherwise; NULL if n=0 |
| avg(x)        | s (float), n                | DOUBLE                |
| min/max(x)    | v, n                        | type of x             |
| spread(x)     | lo, hi, n                   | DOUBLE (hi - lo)      |
| stddev(x)     | n, k, s1, s2 (shifted sums) | DOUBLE (population)   |
| first/last(x) | t, v (first/last non-NULL)  | type of x             |
| last_row(x)   | t, v, isnull (row at max ts)| type of x             |
| rows          | r: list of (ts, values...)  | the window's rows (eKuiper windows without aggregates) |

var_pop, elapsed, irate, twa, leastsquares, percentile, apercentile, mode, count(DISTINCT) and
hyperloglog are in ``spark_workers.engine.extended`` (their table, rules and memory there).

``rows`` is the one exception to constant-size state: eKuiper queries that select plain columns
(``SELECT temp FROM s GROUP BY SESSIONWINDOW(...)``) output every row of a window when it fires
(seed 003), so the window must hold them.

Cost: ``combine`` sorts the partials by key: O(p log p) for p partials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from spark_workers.engine import extended
from spark_workers.engine.extended import EXTENDED
from spark_workers.errors import Code, SqlError

BASIC = ("count", "sum", "avg", "min", "max", "spread", "stddev", "first", "last", "last_row")
# every aggregate a window computes; ``count_distinct`` is count(DISTINCT x) (query/planner.py)
AGGREGATES = (*BASIC, *EXTENDED)
# sqlglot's names of TDengine aggregates (``VAR_POP`` parses as VariancePop)
ALIASES = {"variance_pop": "var_pop"}
ROWS = "rows"
I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min


@dataclass(frozen=True)
class AggSpec:
    """One aggregate call of a query.

    Attributes:
        func: lower-case name from ``AGGREGATES``.
        input: name of the input column in the row batch (None for ``count(*)``).
        name: name of the state/result prefix (unique per query, e.g. ``_a0``).
        kind: storage kind of the input: ``int``, ``float``, ``bool``, ``str`` or ``ts``.
        columns: for ``rows``: the input columns each collected row carries, in order; for
            ``first`` / ``last`` / ``last_row`` over a table with a composite key: the input
            holding the key, which orders rows of one timestamp (``lake/keys.py``; partial
            field ``pk``).
        params: the constant arguments: ``elapsed``: the time unit in precision units;
            ``irate``: precision units per second; ``percentile`` / ``apercentile``: p (0..100);
            ``leastsquares``: start and step.
    """

    func: str
    input: str | None
    name: str
    kind: str = "float"
    columns: tuple[str, ...] = ()
    params: tuple[float, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        f = self.func
        if f == "count":
            return ("n",)
        if f in ("sum", "avg"):
            return ("s", "n")
        if f in ("min", "max"):
            return ("v", "n")
        if f == "spread":
            return ("lo", "hi", "n")
        if f == "stddev":
            return ("n", "k", "s1", "s2")
        if f in ("first", "last"):
            return ("t", "v", "pk") if self.columns else ("t", "v")
        if f == "last_row":
            return ("t", "v", "isnull", "pk") if self.columns else ("t", "v", "isnull")
        if f == ROWS:
            return ("r",)
        more = extended.fields(f)
        if more is not None:
            return more
        raise SqlError(f"aggregate {f} is not supported", code=Code.INVALID_FUNCTION)

    def field(self, f: str) -> str:
        return f"{self.name}.{f}"


def _value_dtype(kind: str) -> Any:
    return {"int": np.int64, "float": np.float64, "bool": np.bool_, "ts": np.int64}.get(kind, object)


class Partials:
    """Struct-of-arrays of partial states keyed by ``(gid, wkey)``.

    ``gid`` is the group id and ``wkey`` the window key (window start for time windows); both int64.
    ``cols`` maps ``"<agg name>.<field>"`` to an array of the same length.
    """

    __slots__ = ("cols", "gid", "wkey")

    def __init__(self, gid: np.ndarray, wkey: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        self.gid = gid
        self.wkey = wkey
        self.cols = cols

    def __len__(self) -> int:
        return int(self.gid.shape[0])

    @classmethod
    def empty(cls, aggs: list[AggSpec]) -> Partials:
        cols: dict[str, np.ndarray] = {}
        for a in aggs:
            for f in a.fields:
                cols[a.field(f)] = np.empty(0, dtype=_field_dtype(a, f))
        return cls(np.empty(0, np.int64), np.empty(0, np.int64), cols)

    def take(self, idx: np.ndarray) -> Partials:
        return Partials(self.gid[idx], self.wkey[idx], {k: v[idx] for k, v in self.cols.items()})

    @staticmethod
    def concat(parts: list[Partials]) -> Partials:
        parts = [p for p in parts if len(p)] or parts[:1]
        if len(parts) == 1:
            return parts[0]
        keys = parts[0].cols.keys()
        return Partials(
            np.concatenate([p.gid for p in parts]),
            np.concatenate([p.wkey for p in parts]),
            {k: np.concatenate([p.cols[k] for p in parts]) for k in keys},
        )

    def nbytes(self) -> int:
        """Approximate memory of the arrays (object arrays count 8 bytes per slot)."""
        return int(self.gid.nbytes + self.wkey.nbytes + sum(v.nbytes for v in self.cols.values()))


def _field_dtype(a: AggSpec, f: str) -> Any:
    if a.func in EXTENDED:
        return extended.field_dtype(a, f, _value_dtype(a.kind))
    if f in ("r", "pk"):
        return object
    if f in ("n", "isnull"):
        return np.int64 if f == "n" else np.bool_
    if f == "t":
        return np.int64
    if f in ("s", "s1", "s2", "k", "lo", "hi"):
        if a.func == "sum" and a.kind in ("int", "bool"):
            return np.int64
        return np.float64
    return _value_dtype(a.kind)


def lift(
    aggs: list[AggSpec],
    gid: np.ndarray,
    wkey: np.ndarray,
    ts: np.ndarray,
    inputs: dict[str, tuple[np.ndarray, np.ndarray]],
) -> Partials:
    """One partial per row.

    Args:
        aggs: the aggregate calls.
        gid, wkey, ts: int64 arrays of length r.
        inputs: input column name -> ``(values, valid)``; values of a numpy dtype matching the
            agg's kind (object for strings), ``valid`` bool (False = NULL).

    Returns:
        Partials of length r (not yet combined).
    """
    r = gid.shape[0]
    cols: dict[str, np.ndarray] = {}
    ones = np.ones(r, np.int64)
    for a in aggs:
        if a.input is None:  # count(*): every row counts, no values
            vals, valid = np.zeros(r, np.int64), np.ones(r, bool)
        else:
            vals, valid = inputs[a.input]
        vi = valid.astype(np.int64)
        f = a.func
        if f == "count":
            cols[a.field("n")] = ones if a.input is None else vi
        elif f in ("sum", "avg"):
            dt = _field_dtype(a, "s")
            cols[a.field("s")] = np.where(valid, vals, 0).astype(dt)
            cols[a.field("n")] = vi
        elif f in ("min", "max"):
            dt = _value_dtype(a.kind)
            if dt is object:
                raise SqlError(f"{f}() does not apply to strings", code=Code.INVALID_FUNCTION)
            v = vals.astype(dt, copy=False)
            if dt == np.float64:
                fill = np.inf if f == "min" else -np.inf
            elif dt == np.bool_:
                v = v.astype(np.int64)
                fill = I64_MAX if f == "min" else I64_MIN
            else:
                fill = I64_MAX if f == "min" else I64_MIN
            cols[a.field("v")] = np.where(valid, v, fill)
            cols[a.field("n")] = vi
        elif f == "spread":
            cols[a.field("lo")] = np.where(valid, vals.astype(np.float64), np.inf)
            cols[a.field("hi")] = np.where(valid, vals.astype(np.float64), -np.inf)
            cols[a.field("n")] = vi
        elif f == "stddev":
            v = vals.astype(np.float64)
            cols[a.field("n")] = vi
            cols[a.field("k")] = np.where(valid, v, 0.0)  # shift = the row's own value
            cols[a.field("s1")] = np.zeros(r)
            cols[a.field("s2")] = np.zeros(r)
        elif f in ("first", "last"):
            cols[a.field("t")] = np.where(valid, ts, I64_MAX if f == "first" else I64_MIN)
            cols[a.field("v")] = _as_values(a, vals, valid)
        elif f == "last_row":
            cols[a.field("t")] = ts.astype(np.int64, copy=True)
            cols[a.field("v")] = _as_values(a, vals, valid)
            cols[a.field("isnull")] = ~valid
        elif f in EXTENDED:
            for fld, arr in extended.lift_one(a, ts, vals, valid, _value_dtype(a.kind)).items():
                cols[a.field(fld)] = arr
        elif f == ROWS:
            per_col = [_as_values_list(*inputs[c]) for c in a.columns]
            r_col = np.empty(r, dtype=object)
            for i, row in enumerate(zip(ts.tolist(), *per_col, strict=True)):
                r_col[i] = [row]
            cols[a.field("r")] = r_col
        else:
            raise SqlError(f"aggregate {f} is not supported", code=Code.INVALID_FUNCTION)
        if f in ("first", "last", "last_row") and a.columns:  # the composite key of each row
            cols[a.field("pk")] = np.asarray(inputs[a.columns[0]][0], dtype=object)
    return Partials(gid.astype(np.int64, copy=False), wkey.astype(np.int64, copy=False), cols)


def empty_partials(aggs: list[AggSpec], gid: np.ndarray, wkey: np.ndarray) -> Partials:
    """Partials of windows without rows, keyed by ``(gid, wkey)`` (int64 arrays of one length):
    ``lower`` turns them into count 0 and NULL for every other aggregate, as an aggregate query
    over no rows answers (seed 002: INTERVAL / SLIDING triggers fire for periods without rows).
    """
    r = gid.shape[0]
    cols: dict[str, np.ndarray] = {}
    for a in aggs:
        for f in a.fields:
            dt = _field_dtype(a, f)
            if a.func in EXTENDED:
                col = extended.empty_field(a, f, r, _value_dtype(a.kind))
            elif f == "r":
                col = np.empty(r, dtype=object)
                for i in range(r):
                    col[i] = []
            elif f == "isnull":
                col = np.ones(r, bool)
            elif f == "t":
                col = np.full(r, I64_MAX if a.func == "first" else I64_MIN, np.int64)
            elif f == "lo":
                col = np.full(r, np.inf)
            elif f == "hi":
                col = np.full(r, -np.inf)
            elif dt is object:
                col = np.full(r, None, dtype=object)
            else:
                col = np.zeros(r, dtype=dt)
            cols[a.field(f)] = col
    return Partials(gid.astype(np.int64, copy=False), wkey.astype(np.int64, copy=False), cols)


def _as_values_list(vals: np.ndarray, valid: np.ndarray) -> list[Any]:
    return [v if ok else None for v, ok in zip(vals.tolist(), valid.tolist(), strict=True)]


def _as_values(a: AggSpec, vals: np.ndarray, valid: np.ndarray) -> np.ndarray:
    dt = _value_dtype(a.kind)
    if dt is object:
        out = np.asarray(vals, dtype=object).copy()
        out[~valid] = None
        return out
    return np.where(valid, vals, 0).astype(dt)


def in_key_order(gid: np.ndarray, wkey: np.ndarray) -> bool:
    """Are the ``(gid, wkey)`` pairs ascending (ties allowed)? Then grouping them needs no sort."""
    return bool(np.all((gid[1:] > gid[:-1]) | ((gid[1:] == gid[:-1]) & (wkey[1:] >= wkey[:-1]))))


def combine(aggs: list[AggSpec], p: Partials) -> Partials:
    """Merge partials sharing a ``(gid, wkey)``; the result is sorted by (gid, wkey)."""
    n = len(p)
    if n == 0:
        return p
    if n > 1 and in_key_order(p.gid, p.wkey):
        order = np.arange(n)  # already in key order (in-order rows): no sort
    else:
        order = np.lexsort((p.wkey, p.gid))
    g, w = p.gid[order], p.wkey[order]
    brk = np.empty(n, bool)
    brk[0] = True
    brk[1:] = (g[1:] != g[:-1]) | (w[1:] != w[:-1])
    starts = np.flatnonzero(brk)
    if starts.shape[0] == n:  # already one partial per key
        return p.take(order)
    seg = np.cumsum(brk) - 1  # segment id of each sorted element
    cols: dict[str, np.ndarray] = {}
    for a in aggs:
        f = a.func
        get = {fld: p.cols[a.field(fld)][order] for fld in a.fields}
        if f == "count":
            cols[a.field("n")] = np.add.reduceat(get["n"], starts)
        elif f in ("sum", "avg"):
            cols[a.field("s")] = np.add.reduceat(get["s"], starts)
            cols[a.field("n")] = np.add.reduceat(get["n"], starts)
        elif f in ("min", "max"):
            op = np.minimum if f == "min" else np.maximum
            cols[a.field("v")] = op.reduceat(get["v"], starts)
            cols[a.field("n")] = np.add.reduceat(get["n"], starts)
        elif f == "spread":
            cols[a.field("lo")] = np.minimum.reduceat(get["lo"], starts)
            cols[a.field("hi")] = np.maximum.reduceat(get["hi"], starts)
            cols[a.field("n")] = np.add.reduceat(get["n"], starts)
        elif f == ROWS:
            rr = get["r"]
            merged = np.empty(starts.shape[0], dtype=object)
            bounds = [*starts.tolist(), n]
            for j in range(starts.shape[0]):
                acc: list[Any] = []
                for x in rr[bounds[j] : bounds[j + 1]]:
                    acc.extend(x)
                merged[j] = acc
            cols[a.field("r")] = merged
        elif f in EXTENDED and f != "var_pop":
            for fld, arr in extended.combine_one(a, get, starts, seg).items():
                cols[a.field(fld)] = arr
        elif f in ("stddev", "var_pop"):
            nn, k, s1, s2 = get["n"], get["k"], get["s1"], get["s2"]
            # shift of each segment: k of its first non-empty partial (0 if none)
            idx = np.arange(n)
            first_valid = np.minimum.reduceat(np.where(nn > 0, idx, n), starts)
            seg_k = np.where(first_valid < n, k[np.minimum(first_valid, n - 1)], 0.0)
            d = k - seg_k[seg]
            cols[a.field("n")] = np.add.reduceat(nn, starts)
            cols[a.field("k")] = seg_k
            cols[a.field("s1")] = np.add.reduceat(s1 + nn * d, starts)
            cols[a.field("s2")] = np.add.reduceat(s2 + 2.0 * d * s1 + nn * d * d, starts)
        else:  # first / last / last_row: pick one partial per segment by (t, value)
            keys = [_value_rank(get["v"])]
            if f == "last_row":
                keys.insert(0, ~get["isnull"])  # at equal times a value wins over NULL, then the larger
            if "pk" in get:  # a composite key orders the rows of one timestamp (TDengine)
                keys.insert(0, _key_rank(get["pk"]))
            pick = _arg_reduce(seg, get["t"], keys, smallest=(f == "first"))
            for fld in a.fields:
                cols[a.field(fld)] = get[fld][pick]
    return Partials(g[starts], w[starts], cols)


def _value_rank(v: np.ndarray) -> np.ndarray:
    """An int64 sort key with the order of the values (strings compared as text)."""
    if v.dtype == object:
        _, inv = np.unique(
            np.array(["" if x is None else str(x) for x in v], dtype=object), return_inverse=True
        )
        return inv.astype(np.int64)
    return v.astype(np.float64) if v.dtype.kind == "f" else v.astype(np.int64)


def _key_rank(k: np.ndarray) -> np.ndarray:
    """An int64 sort key with the order of composite key values (integers or strings, never
    NULL; one kind per column)."""
    _, inv = np.unique(k, return_inverse=True)
    return inv.astype(np.int64)


def _arg_reduce(seg: np.ndarray, t: np.ndarray, ties: list[np.ndarray], *, smallest: bool) -> np.ndarray:
    """Index (into the sorted arrays) of the min (``smallest``) or max ``t`` of each segment.

    Rows with equal ``t`` (two subtables of one group at the same instant) are ordered by the
    ``ties`` keys (most significant first), so the pick never depends on arrival order:
    ``first`` takes the smallest value, ``last``/``last_row`` the largest (decisions.md,
    "first/last ties").
    """
    n = t.shape[0]
    order = np.lexsort((*reversed(ties), t, seg))
    ss = seg[order]
    edge = np.ones(n, bool)
    if smallest:
        edge[1:] = ss[1:] != ss[:-1]
    else:
        edge[:-1] = ss[1:] != ss[:-1]
    return order[edge]


def lower(aggs: list[AggSpec], p: Partials) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Results per aggregate name: ``(values, valid)`` arrays of length ``len(p)``."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for a in aggs:
        f = a.func
        c = {fld: p.cols[a.field(fld)] for fld in a.fields}
        if f == "count":
            out[a.name] = (c["n"], np.ones(len(p), bool))
        elif f == "sum":
            out[a.name] = (c["s"], c["n"] > 0)
        elif f == "avg":
            n = c["n"]
            with np.errstate(divide="ignore", invalid="ignore"):
                out[a.name] = (np.where(n > 0, c["s"] / np.maximum(n, 1), 0.0), n > 0)
        elif f in ("min", "max"):
            v = c["v"]
            if a.kind == "bool":
                v = v.astype(bool)
            out[a.name] = (v, c["n"] > 0)
        elif f == "spread":
            n = c["n"]
            out[a.name] = (np.where(n > 0, c["hi"] - c["lo"], 0.0), n > 0)
        elif f in ("stddev", "var_pop"):
            n = c["n"].astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                var = np.maximum((c["s2"] - c["s1"] * c["s1"] / np.maximum(n, 1)) / np.maximum(n, 1), 0.0)
            out[a.name] = (np.sqrt(var) if f == "stddev" else var, n > 0)
        elif f in EXTENDED:
            out[a.name] = extended.lower_one(a, c)
        elif f == "first":
            out[a.name] = (c["v"], c["t"] != I64_MAX)
        elif f == "last":
            out[a.name] = (c["v"], c["t"] != I64_MIN)
        elif f == "last_row":
            out[a.name] = (c["v"], ~c["isnull"])
        elif f == ROWS:
            ordered = np.empty(len(p), dtype=object)
            for i, rows in enumerate(c["r"]):
                ordered[i] = sorted(rows, key=lambda x: x[0])
            out[a.name] = (ordered, np.ones(len(p), bool))
    return out


def result_arrow_type(a: AggSpec, input_type: pa.DataType | None) -> pa.DataType:
    """Arrow type of an aggregate's result (see the module table)."""
    f = a.func
    if f == "count":
        return pa.int64()
    if f == "sum":
        return pa.int64() if a.kind in ("int", "bool") else pa.float64()
    if f in ("avg", "spread", "stddev"):
        return pa.float64()
    if f in EXTENDED:
        return extended.result_type(a, input_type)
    assert input_type is not None
    return input_type


def to_arrow(values: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
    """Arrow array from lowered ``(values, valid)``."""
    mask = ~valid
    if pa.types.is_timestamp(typ):
        return pa.array(values.astype(np.int64), pa.int64(), mask=mask).cast(typ)
    if values.dtype == object:
        vals = values.copy()
        vals[mask] = None
        return pa.array(vals, typ, from_pandas=True)
    return pa.array(values, mask=mask).cast(typ)
