"""What a recalculation would change in its output table (issue 16, "recalculation shows a diff of
the output rows it will change before it commits").

A recalculation (``runtime/recalc.py``) upserts its rows under the output table's row key
(``tbname``, ts[, composite key]) and deletes nothing ("the results already written to the output
table are not deleted; instead, new results are written again", seed 002, "Manual
Recalculation"); so each written row is *added* (no stored row has its key), *changed* (one has,
with another value in a written column) or unchanged. Rows are *removed* only by a legacy
stream's write with a composite key (``replace_times``: the written row replaces every stored row
of its (tbname, ts), ``Lake.write``).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.lake.keys import row_key
from spark_workers.lake.store import Lake
from spark_workers.runtime.recalc import OutputWrite

#: at most this many rows are listed by default (the counts are always whole)
DIFF_LIMIT = 200


def _plain(v: Any) -> Any:
    """A JSON-safe form of an engine value (timestamps are int64 in the database precision)."""
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            return base64.b64encode(v).decode()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return v


def _rows(t: pa.Table, cols: list[str]) -> list[dict[str, Any]]:
    return [
        {k: _plain(r.get(k)) for k in cols}
        for r in t.select([c for c in cols if c in t.column_names]).to_pylist()
    ]


def _stored(lake: Lake, w: OutputWrite) -> pa.Table:
    """The stored rows of ``w``'s subtables within its time range (empty for a new table)."""
    ts = row_key(w.table)[0]
    if not w.data.num_rows or not lake.exists(w.db.name, w.table.storage):
        return pa.table({})
    names = sorted(set(w.data.column("tbname").to_pylist()))
    col = w.data.column(ts)
    lo, hi = pc.min_max(col).values()
    return lake.read(w.db, w.table, tbnames=names, ts_min=int(lo.as_py()), ts_max=int(hi.as_py()))


def _diff_one(lake: Lake, w: OutputWrite) -> Iterable[dict[str, Any]]:
    """The changes of one write: ``{change, table, key, old, new}`` per changed row."""
    keys = ["tbname", *row_key(w.table)]
    values = [c for c in w.data.column_names if c not in keys]
    old_t = _stored(lake, w)
    old = {tuple(r[k] for k in keys): r for r in _rows(old_t, keys + values)} if old_t.num_rows else {}
    new_rows = _rows(w.data, keys + values)
    new_keys = {tuple(r[k] for k in keys) for r in new_rows}
    for r in new_rows:
        k = tuple(r[c] for c in keys)
        before = old.get(k)
        key = dict(zip(keys[1:], k[1:], strict=True))
        if before is None:
            yield {"change": "added", "table": r["tbname"], "key": key, "old": None, "new": _vals(r, values)}
        elif any(before.get(c) != r[c] for c in values):
            yield {
                "change": "changed",
                "table": r["tbname"],
                "key": key,
                "old": _vals(before, values),
                "new": _vals(r, values),
            }
    if w.kwargs.get("replace_times") and len(keys) == 3:
        times = {(k[0], k[1]) for k in new_keys}
        for k, before in old.items():
            if (k[0], k[1]) in times and k not in new_keys:
                key = dict(zip(keys[1:], k[1:], strict=True))
                yield {
                    "change": "removed",
                    "table": k[0],
                    "key": key,
                    "old": _vals(before, values),
                    "new": None,
                }


def _vals(r: dict[str, Any], cols: list[str]) -> dict[str, Any]:
    return {c: r.get(c) for c in cols}


def recalc_diff(lake: Lake, writes: list[OutputWrite], *, limit: int = DIFF_LIMIT) -> dict[str, Any]:
    """The output rows a recalculation's ``writes`` (``Recalculation.writes`` of a dry run) would
    change, compared with the output table as stored now.

    Returns ``{added, changed, removed, unchanged: counts, rows: [{change, table, key: {ts column
    [, composite key]: value}, old: {column: value} | None, new: ... | None}] (the first
    ``limit``, in write order), truncated: bool}``; columns by their physical names, timestamps
    as int64 in the output database's precision.
    """
    counts = {"added": 0, "changed": 0, "removed": 0}
    rows: list[dict[str, Any]] = []
    written = 0
    for w in writes:
        written += w.data.num_rows
        for d in _diff_one(lake, w):
            counts[d["change"]] += 1
            if len(rows) < limit:
                rows.append(d)
    unchanged = written - counts["added"] - counts["changed"]
    total = sum(counts.values())
    return {**counts, "unchanged": unchanged, "rows": rows, "truncated": total > len(rows)}
