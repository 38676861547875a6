"""FILL in legacy INTERVAL streams: the windows without rows between the windows a stream writes.

TDengine's stream INTERVAL with FILL (its FILL clause: "Stream computing's INTERVAL clause: NULL_F
behaves the same as NULL ... VALUE_F the same as VALUE ... there are no forced modes in the
INTERVAL of stream computing"): when a stream writes a window of a group, the windows between the
group's previous written window and it are written too, filled per mode with the rules of window
queries (``query/fill.py``: PREV the previous window's value, NEXT the new window's, LINEAR the
interpolation, VALUE the constants, NULL), and NULL results of written windows are filled as in a
query. Nothing is written after a group's latest window, except with TRIGGER FORCE_WINDOW_CLOSE
(seed 000: FILL PREV, NULL, NONE or VALUE), where every window of a known group whose end the wall
clock has passed is written, with or without rows.

The previous written window of a group is kept in memory; after a restart it is read back from
the output table (when the output's first column is the window start), else the first gap of a
group after a restart is not filled. Decisions: docs/decisions.md ("FILL").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import structlog

from spark_workers.engine.shape import WindowShape
from spark_workers.query.fill import MAX_FILL_WINDOWS, FillSpec, fill_column, fill_value, group_bounds

log = structlog.get_logger(__name__)

Stage3 = Callable[[list[str], list[int]], pa.Table]
"""``stage3(gkeys, wstarts)``: the stage-3 rows (``_o*``, ``_gkey``, ``_ws``) of windows without
rows (NULL aggregates)."""
LastRow = Callable[[str, int], "tuple[int, dict[int, object]] | None"]
"""``last(gkey, before)``: the latest written window of a group starting before ``before``:
``(wstart, {fill item: value})``, or None."""


@dataclass
class Last:
    """A group's latest written window: its start and its fill columns' values."""

    wstart: int
    values: dict[int, object]


class StreamFill:
    """The FILL of one stream's output (module docstring).

    Args:
        spec: the FILL clause checked against the query (``query.fill.fill_spec``).
        shape: the stream's INTERVAL.
        stage3: computes the rows of windows without rows.
        last_row: reads a group's latest written window back (after a restart).
        clock_driven: TRIGGER FORCE_WINDOW_CLOSE: windows the wall clock closed are written too.
        values: the VALUE constants as Python values.
        precision: the table's precision.
    """

    def __init__(
        self,
        spec: FillSpec,
        shape: WindowShape,
        stage3: Stage3,
        last_row: LastRow,
        *,
        clock_driven: bool,
        values: list[object],
        precision: str,
    ) -> None:
        self.spec, self.assigner = spec, shape.assigner()
        self.stage3, self.last_row = stage3, last_row
        self.clock_driven, self.values, self.precision = clock_driven, values, precision
        self.last: dict[str, Last] = {}

    def _between(self, lo: int, hi: int) -> list[int]:
        """Window starts strictly between two window starts (at most 10,000,000)."""
        if hi - lo <= 1:
            return []
        s = self.assigner.starts_covering(lo + 1, hi - 1)
        s = s[(s > lo) & (s < hi)]
        if s.size >= MAX_FILL_WINDOWS:
            log.warning("fill gap capped", windows=int(s.size))
            s = s[-(MAX_FILL_WINDOWS - 1) :]
        return [int(x) for x in s]

    def _closed_after(self, lo: int, now: int) -> list[int]:
        """Windows after ``lo`` whose end the clock passed (FORCE_WINDOW_CLOSE)."""
        if now <= lo:
            return []
        s = self.assigner.starts_covering(lo + 1, now)
        s = s[(s > lo) & (self.assigner.end(s) <= now)]
        return [int(x) for x in s[-(MAX_FILL_WINDOWS - 1) :]]

    def apply(self, out: pa.Table | None, schema: pa.Schema, now: int | None) -> pa.Table | None:
        """The rows to write: ``out`` (stage-3 rows of the windows the engine wrote: ``_o*``,
        ``_gkey``, ``_ws``) with the windows between them and each group's previous window (and,
        clock-driven, the closed windows after them) added and every fill column filled."""
        gk = out.column("_gkey").to_pylist() if out is not None else []
        ws = [int(w) for w in out.column("_ws").to_pylist()] if out is not None else []
        new: dict[str, list[int]] = {}
        for g, w in zip(gk, ws, strict=True):
            new.setdefault(g, []).append(w)
        groups = list(dict.fromkeys([*new, *(self.last if self.clock_driven else [])]))
        prev: dict[str, Last] = {}
        add_g: list[str] = []
        add_w: list[int] = []
        for g in groups:
            mine = sorted(set(new.get(g, [])))
            p = self.last.get(g)
            if p is None and mine:
                found = self.last_row(g, mine[0])
                p = Last(*found) if found is not None else None
            points = ([p.wstart] if p is not None and (not mine or p.wstart < mine[0]) else []) + mine
            if p is not None and points and points[0] == p.wstart:
                prev[g] = p
            for a, b in itertools.pairwise(points):
                gap = self._between(a, b)
                add_g += [g] * len(gap)
                add_w += gap
            if self.clock_driven and now is not None and points:
                tail = self._closed_after(points[-1], now)
                add_g += [g] * len(tail)
                add_w += tail
        if not add_w and out is None:
            return None
        filled = self.stage3(add_g, add_w) if add_w else None
        return self._fill(out, filled, prev, schema)

    def _prev_rows(self, prev: dict[str, Last], schema: pa.Schema) -> pa.Table:
        cols: dict[str, pa.Array] = {}
        for f in schema:
            if f.name == "_gkey":
                cols[f.name] = pa.array(list(prev), f.type)
            elif f.name == "_ws":
                cols[f.name] = pa.array([p.wstart for p in prev.values()], pa.int64())
            else:
                i = int(f.name[2:]) if f.name.startswith("_o") else -1
                vals = [p.values.get(i) for p in prev.values()]
                try:
                    cols[f.name] = pa.array(vals, f.type)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    cols[f.name] = pa.nulls(len(prev), f.type)
        return pa.table(cols, schema=schema)

    def _fill(
        self, out: pa.Table | None, filled: pa.Table | None, prev: dict[str, Last], schema: pa.Schema
    ) -> pa.Table:
        """Prev rows (data) + written rows (data) + filled rows, sorted by (group, start), the fill
        columns filled; the prev rows dropped; ``last`` updated."""
        parts, kinds = [], []
        for k, t in ((0, self._prev_rows(prev, schema) if prev else None), (1, out), (2, filled)):
            if t is not None and t.num_rows:
                parts.append(t.select(schema.names).cast(schema))
                kinds.append(np.full(t.num_rows, k, np.int8))
        table = pa.concat_tables(parts)
        kinds_all = np.concatenate(kinds)
        order = pc.sort_indices(
            table.append_column("_k", pa.array(kinds_all)),
            [("_gkey", "ascending"), ("_ws", "ascending"), ("_k", "ascending")],
        )
        table, kind = table.take(order), kinds_all[order.to_numpy()]
        gi = np.unique(np.array(table.column("_gkey").to_pylist(), dtype=object), return_inverse=True)[1]
        first, end = group_bounds(gi.astype(np.int64))
        t = table.column("_ws").to_numpy().astype(np.int64)
        data = kind != 2
        for k, i in enumerate(self.spec.columns):
            name = f"_o{i}"
            col = table.column(name).combine_chunks()
            v = fill_value(self.values[k], col.type, self.precision) if self.values else None
            table = table.set_column(
                table.schema.get_field_index(name),
                name,
                fill_column(col, self.spec.mode, data, t, first, end, v),
            )
        table = table.filter(pa.array(kind != 0))
        self._remember(table)
        return table

    def _remember(self, table: pa.Table) -> None:
        gk = table.column("_gkey").to_pylist()
        ws = table.column("_ws").to_pylist()
        cols = {i: table.column(f"_o{i}").to_pylist() for i in self.spec.columns}
        for r, (g, w) in enumerate(zip(gk, ws, strict=True)):
            cur = self.last.get(g)
            if cur is None or int(w) >= cur.wstart:
                self.last[g] = Last(int(w), {i: c[r] for i, c in cols.items()})
