"""The engine's input: a batch of rows in arrival order, as numpy arrays.

Produced by the runtime from a micro-batch (stage 1 of a stream: filter, group key, aggregate
inputs) and by the batch query path from a lake snapshot. No Spark, no pandas required.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INSERT, UPDATE_PRE, UPDATE_POST, DELETE = 0, 1, 2, 3
CHANGE_CODES = {
    "insert": INSERT,
    "update_preimage": UPDATE_PRE,
    "update_postimage": UPDATE_POST,
    "delete": DELETE,
}


@dataclass
class Lifted:
    """Rows already lifted into partial aggregates (map-side pre-aggregation of INTERVAL streams,
    ``runtime/premerge.py``): per item its window start, latest row time, whether it carries
    partials (False: a changed row, only its time counts), the partial fields by
    ``"<agg>.<field>"`` and the rows it stands for. The batch's ``ts`` holds each item's earliest row time."""

    wkey: np.ndarray
    tmax: np.ndarray
    pre: np.ndarray
    cols: dict[str, np.ndarray]
    n: np.ndarray  # rows each item stands for (``rows_in``)

    def take(self, idx: np.ndarray) -> Lifted:
        cols = {k: v[idx] for k, v in self.cols.items()}
        return Lifted(self.wkey[idx], self.tmax[idx], self.pre[idx], cols, self.n[idx])


@dataclass
class RowBatch:
    """Rows in arrival order.

    Attributes:
        gkey: object array of group keys (JSON text of the PARTITION BY values; ``"[]"`` when the
            stream has no partition).
        ts: int64 event times in precision units.
        inputs: aggregate input name -> ``(values, valid)``.
        change: int8 change kind per row (INSERT, UPDATE_PRE, UPDATE_POST, DELETE).
        history: bool per row: the row comes from the FILL_HISTORY snapshot.
        extra: other columns the window type needs (state column, event conditions), by name.
        lifted: set when the rows are pre-aggregated items (``Lifted``).
        gcodes: optional ``(codes, keys)`` with ``gkey == keys[codes]`` (saves re-hashing the keys).
    """

    gkey: np.ndarray
    ts: np.ndarray
    inputs: dict[str, tuple[np.ndarray, np.ndarray]]
    change: np.ndarray | None = None
    history: np.ndarray | None = None
    extra: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    lifted: Lifted | None = None
    gcodes: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return int(self.ts.shape[0])

    @property
    def changes(self) -> np.ndarray:
        if self.change is None:
            return np.zeros(len(self), np.int8)
        return self.change

    @property
    def is_history(self) -> np.ndarray:
        if self.history is None:
            return np.zeros(len(self), bool)
        return self.history

    def take(self, idx: np.ndarray) -> RowBatch:
        return RowBatch(
            self.gkey[idx],
            self.ts[idx],
            {k: (v[idx], m[idx]) for k, (v, m) in self.inputs.items()},
            None if self.change is None else self.change[idx],
            None if self.history is None else self.history[idx],
            {k: (v[idx], m[idx]) for k, (v, m) in self.extra.items()},
            None if self.lifted is None else self.lifted.take(idx),
            None if self.gcodes is None else (self.gcodes[0][idx], self.gcodes[1]),
        )

    @staticmethod
    def concat(batches: list[RowBatch]) -> RowBatch:
        batches = [b for b in batches if len(b)] or batches[:1]
        if len(batches) == 1:
            return batches[0]
        first = batches[0]

        def cat(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
            return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])

        return RowBatch(
            np.concatenate([b.gkey for b in batches]),
            np.concatenate([b.ts for b in batches]),
            {k: cat([b.inputs[k] for b in batches]) for k in first.inputs},
            np.concatenate([b.changes for b in batches]),
            np.concatenate([b.is_history for b in batches]),
            {k: cat([b.extra[k] for b in batches]) for k in first.extra},
        )


def register_groups(keys: np.ndarray, gid_of: dict[str, int], gkeys: list[str]) -> tuple[np.ndarray, int]:
    """Per-row group ids of ``keys`` in an engine state's registry (``gid_of`` key -> id, ``gkeys``
    id -> key), giving unseen keys the next ids; returns ``(ids, number of groups added)`` so the
    state can grow its per-group arrays. Hashes each distinct key once."""
    uniq, inv = np.unique(keys.astype(object), return_inverse=True)
    ids = np.empty(len(uniq), np.int64)
    added = 0
    for i, k in enumerate(uniq):
        gid = gid_of.get(k)
        if gid is None:
            gid = gid_of[k] = len(gkeys)
            gkeys.append(k)
            added += 1
        ids[i] = gid
    return ids[inv], added


def group_ids(batch: RowBatch, gids: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Per-row group ids of a batch through a state's ``gids(keys)``: on the distinct keys only when
    the batch knows its codes (1,000 groups, not 100,000 rows, hashed)."""
    if batch.gcodes is not None:
        codes, keys = batch.gcodes
        return gids(keys)[codes]
    return gids(batch.gkey)


def column_arrays(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Arrow column -> ``(values, valid)``; NULLs get a harmless fill value.

    Integers become int64, floats float64, booleans bool, timestamps int64, strings object.
    """
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    valid = np.ones(len(col), bool) if col.null_count == 0 else col.is_valid().to_numpy(zero_copy_only=False)
    t = col.type
    if pa.types.is_timestamp(t):
        col = col.cast(pa.int64())
        t = col.type
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        vals = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    elif pa.types.is_floating(t):
        vals = col.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    elif pa.types.is_boolean(t):
        vals = col.fill_null(False).to_numpy(zero_copy_only=False)
    else:
        vals = np.asarray(col.cast(pa.string()).to_pylist(), dtype=object)
    return vals, valid


def kind_of(t: pa.DataType) -> str:
    """Aggregate input kind of an Arrow type: int, float, bool, ts or str."""
    if pa.types.is_timestamp(t):
        return "ts"
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    return "str"


def combination_codes(t: pa.Table, names: tuple[str, ...] | list[str]) -> np.ndarray:
    """One int64 code per row for the combination of the columns ``names`` (NULL is a value):
    equal codes, equal values. Codes are local to ``t``."""
    code = np.zeros(t.num_rows, np.int64)
    for n in names:
        enc = pc.dictionary_encode(t.column(n).combine_chunks(), null_encoding="encode")
        code = code * len(enc.dictionary) + enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return code


def group_codes(
    columns: list[pa.Array | pa.ChunkedArray], n: int
) -> tuple[np.ndarray, np.ndarray, dict[str, list]]:
    """Like ``group_keys`` but also returns per-row codes into the distinct keys:
    ``(codes, keys, values)`` with ``keys[codes]`` the per-row keys."""
    if not columns:
        return np.zeros(n, np.int64), np.array(["[]"], dtype=object), {"[]": []}
    _per_row, values, codes, keys = _group_keys(columns, n)
    return codes, keys, values


def group_keys(columns: list[pa.Array | pa.ChunkedArray], n: int) -> tuple[np.ndarray, dict[str, list]]:
    """Canonical group keys (compact JSON arrays of the PARTITION BY values) for n rows.

    Timestamps become int64 microseconds, everything else its Python value (NULL -> null); the
    same values always give the same key, in streams and in batch queries alike. Cost: one
    dictionary encoding per column plus one JSON dump per distinct group.

    Returns:
        ``(gkeys, values)``: object array of keys per row, and key -> list of values.
    """
    if not columns:
        return np.full(n, "[]", dtype=object), {"[]": []}
    per_row, values, _codes, _keys = _group_keys(columns, n)
    return per_row, values


def _group_keys(
    columns: list[pa.Array | pa.ChunkedArray], n: int
) -> tuple[np.ndarray, dict[str, list], np.ndarray, np.ndarray]:
    combined = np.zeros(n, np.int64)
    dictionaries = []
    for col in columns:
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        enc = pc.dictionary_encode(col, null_encoding="encode")
        dictionary = enc.dictionary.to_pylist()
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        combined = combined * len(dictionary) + idx
        dictionaries.append(dictionary)
    uniq, inv = np.unique(combined, return_inverse=True)
    keys, values = [], {}
    for code in uniq:
        vals = []
        rest = int(code)
        for dictionary in reversed(dictionaries):
            rest, i = divmod(rest, len(dictionary))
            vals.append(dictionary[i])
        vals.reverse()
        k = json.dumps(vals, separators=(",", ":"), ensure_ascii=False, default=str)
        keys.append(k)
        values[k] = vals
    karr = np.array(keys, dtype=object)
    return karr[inv], values, inv.astype(np.int64), karr
