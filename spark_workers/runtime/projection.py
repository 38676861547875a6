"""The rows of a legacy stream without a window: which output rows a micro-batch writes and deletes.

A stream without a window clause (seed 001: "data filtering, scalar function computations";
seed 004: ``power_stream``) writes each source row passing WHERE, projected, into the output
subtable of its partition, keyed by its first output column (the output table's primary key).
Its trigger is real time (seed 000 "Trigger Modes": AT_ONCE). Changes follow the window streams'
rules (seed 000 "Stream computing strategies for handling modified data", ``engine/stream.py``):

- an insert writes its row; a row written again under the same key replaces it (TDengine's
  last-write-wins);
- a deleted source row deletes its output row;
- an update with IGNORE UPDATE 0 (checked) removes the old row's output and writes the new one
  (so an updated row that no longer passes WHERE leaves no output); with IGNORE UPDATE 1 (the
  default: "calculate all as incremental data") the new row is written like an insert and the
  old row's output stays unless the new one replaces it.

Within a micro-batch the last change of each output key wins (rows in arrival order ``_seq``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.engine.rows import DELETE, INSERT, UPDATE_POST, UPDATE_PRE, group_codes


def row_actions(
    staged: pa.Table,
    groups: list[str],
    keys: np.ndarray,
    valid: np.ndarray,
    passes: np.ndarray,
    *,
    ignore_update: bool,
    composite: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The output rows a micro-batch upserts and deletes.

    Args:
        staged: stage-1 rows (``_g*`` partition values, ``_ct`` change kind, ``_seq``), sorted
            by ``_seq``.
        groups: the partition value columns ``_g0..``.
        keys: per row, its output key (the first output column, int64 in the output's precision).
        valid: per row, whether the key is not NULL (rows with a NULL key are discarded).
        passes: per row, whether it passes WHERE (only those are written; a deleted row is
            removed whatever its values: an earlier version of it may have passed).
        ignore_update: IGNORE UPDATE 1.
        composite: per row, a code of its COMPOSITE KEY value when the output table has one (the
            output key is then the first column and that one, seed 002 "Outputs").

    Returns:
        ``(gkeys, upserts, deletes)``: per row its group key (JSON of the partition values, as the
        window kernel builds them), and the indices of the rows to write and of the rows whose
        output row to delete (each output key at most once, its last change).
    """
    n = staged.num_rows
    codes, uniq, _ = group_codes([staged.column(g) for g in groups], n)
    gkeys = uniq[codes] if n else np.empty(0, object)
    ct = staged.column("_ct").cast(pa.int8()).to_numpy(zero_copy_only=False) if n else np.empty(0, np.int8)
    write = ((ct == INSERT) | (ct == UPDATE_POST)) & passes
    remove = (ct == DELETE) | ((ct == UPDATE_PRE) & (not ignore_update))
    acting = np.flatnonzero((write | remove) & valid)
    if not len(acting):
        return gkeys, np.empty(0, np.int64), np.empty(0, np.int64)
    # the last change of each (group, key): scan from the end, keep first occurrences
    parts = [codes[acting], keys[acting]] + ([composite[acting]] if composite is not None else [])
    pair = np.stack(parts, axis=1)[::-1]
    _, first = np.unique(pair, axis=0, return_index=True)
    last = np.sort(acting[::-1][first])
    return gkeys, last[write[last]], last[remove[last]]


def runs_to_delete(existing: np.ndarray, doomed: np.ndarray) -> list[tuple[int, int]]:
    """Inclusive key ranges covering exactly the ``existing`` keys (sorted) that are in ``doomed``:
    consecutive doomed keys of the output subtable become one delete (a kept row between two
    doomed ones splits the range)."""
    if not len(existing) or not len(doomed):
        return []
    hit = np.isin(existing, doomed)
    runs: list[tuple[int, int]] = []
    start = None
    for i, h in enumerate(hit.tolist()):
        if h and start is None:
            start = i
        if not h and start is not None:
            runs.append((int(existing[start]), int(existing[i - 1])))
            start = None
    if start is not None:
        runs.append((int(existing[start]), int(existing[-1])))
    return runs


def sorted_by_arrival(staged: pa.Table) -> pa.Table:
    """``staged`` in arrival order (``_seq``)."""
    if staged.num_rows > 1 and "_seq" in staged.column_names:
        return staged.take(pc.sort_indices(staged, sort_keys=[("_seq", "ascending")]))
    return staged
