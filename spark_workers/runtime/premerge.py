"""Pre-aggregation of INTERVAL streams where the rows are read: partial aggregates before the shuffle.

Spark's own ``window()`` aggregation combines rows into partial aggregates before its shuffle; the
stateful kernel would otherwise receive every row through ``applyInPandasWithState`` (a shuffle,
a sort and an Arrow -> pandas conversion per row). For INTERVAL windows (and eKuiper's tumbling /
hopping windows without FILTER/WHERE) the ``tdlake`` source runs stage 1 (DuckDB) and turns the
rows of each input partition into *items* as it reads them (``SourcePipeline``): for every group
whose incremental rows arrive in time order within the partition, one lifted and combined partial
per (group, window, FILL_HISTORY flag) with the earliest and latest time of its rows and the
arrival position of its first row; rows of groups that arrive out of order, and changed rows
(updates with IGNORE UPDATE 0, deletes), pass through one item each. The engine takes items as it
takes rows (``RowBatch.lifted``). Measured in docs/PERFORMANCE.md.

Why this is exact: the engine judges a row against the latest event time of its group's earlier
rows. Inside an in-order run no row is behind an earlier one, so every row of a (group, window)
item gets the verdict of the item's first row (expired iff the window's end is at or before the
group's latest time from previous micro-batches minus the watermark), and partial aggregates
combine associatively (seed 004). Windows that need recalculation are rebuilt from the lake anyway.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_workers.engine import buffers
from spark_workers.engine.aggregates import AggSpec, Partials, _field_dtype, combine, in_key_order, lift
from spark_workers.engine.rows import INSERT, UPDATE_POST, column_arrays, combination_codes
from spark_workers.lake.changes import conform
from spark_workers.runtime.kernel import KernelConfig


def eligible(cfg: KernelConfig) -> bool:
    """Can the stream's rows be pre-aggregated before the shuffle?"""
    keys = {k for k, _ in cfg.extras}
    return (
        cfg.shape.kind == "interval"
        and not keys & {"keep", "where"}
        and all(a.func != "rows" for a in cfg.aggs)
    )  # eKuiper's collected rows have no Arrow column type: they shuffle as rows


def field_name(i: int, f: str) -> str:
    return f"_p{i}_{f}"


def _arrow_type(a: AggSpec, f: str, input_types: dict[str, pa.DataType]) -> pa.DataType:
    dt = _field_dtype(a, f)
    if f == "b":  # value buffers (engine/extended.py), encoded by engine/buffers.py
        return pa.binary()
    if f == "pk":  # first/last's composite key: the key input's own type
        return input_types.get(a.columns[0], pa.string())
    if dt is object:
        return input_types.get(a.input or "", pa.string())
    return pa.from_numpy_dtype(np.dtype(dt))


def item_schema(cfg: KernelConfig, stage1: pa.Schema) -> pa.Schema:
    """Schema of the items: the stage-1 group columns, ``_bucket``, ``_ts`` (earliest time),
    ``_ct``, ``_seq``, ``_hist``, ``_bv``, then ``_wkey``, ``_tmax``, ``_pre``, ``_n`` (the rows it
    stands for, each row counted once: in its latest window) and one column per partial-aggregate
    field (``_p<agg>_<field>``)."""
    types = dict(cfg.input_types)
    fields = [stage1.field(g) for g in cfg.groups]
    fields += [pa.field("_bucket", pa.int32())] if "_bucket" in stage1.names else []
    fields += [
        pa.field("_ts", pa.int64()),
        pa.field("_ct", pa.int8()),
        pa.field("_seq", pa.int64()),
        pa.field("_hist", pa.bool_()),
        pa.field("_bv", pa.int64()),
        pa.field("_wkey", pa.int64()),
        pa.field("_tmax", pa.int64()),
        pa.field("_pre", pa.bool_()),
        pa.field("_n", pa.int64()),
    ]
    for i, a in enumerate(cfg.aggs):
        fields += [pa.field(field_name(i, f), _arrow_type(a, f, types)) for f in a.fields]
    return pa.schema(fields)


def _take(
    inputs: dict[str, tuple[np.ndarray, np.ndarray]], idx: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {k: (v[idx], m[idx]) for k, (v, m) in inputs.items()}


def premerge(cfg: KernelConfig, t: pa.Table) -> pa.Table:
    """Items of one partition's stage-1 rows (module docstring); the schema is ``item_schema``."""
    schema = item_schema(cfg, t.schema)
    if t.num_rows == 0:
        return schema.empty_table()
    rows = _PartitionRows(cfg, t, schema)
    pieces: list[pa.Table] = []
    if rows.merged.size:
        pieces.append(rows.merged_items())
    if rows.single.size:
        pieces += rows.single_items()
    return pa.concat_tables(pieces)


class _PartitionRows:
    """One partition's stage-1 rows on their way to items (``premerge``).

    Made, the rows are split by arrival order (``_split``): ``merged`` holds the incremental rows
    of the groups whose times never go back, ``single`` the other incremental rows, then the
    changed rows. A group's FILL_HISTORY rows and live rows are apart (``code``).
    """

    def __init__(self, cfg: KernelConfig, t: pa.Table, schema: pa.Schema) -> None:
        self.cfg, self.t, self.schema = cfg, t, schema
        self.seq = t.column("_seq").to_numpy(zero_copy_only=False).astype(np.int64)
        self.ts = t.column("_ts").cast(pa.int64()).to_numpy(zero_copy_only=False)
        ct = t.column("_ct").cast(pa.int8()).to_numpy(zero_copy_only=False)
        hist = t.column("_hist").to_numpy(zero_copy_only=False).astype(bool)
        self.incr = (ct == INSERT) | ((ct == UPDATE_POST) & cfg.rules.ignore_update)
        # FILL_HISTORY rows never share an item with live rows
        self.code = combination_codes(t, cfg.groups) * 2 + hist
        self._split()
        self.assigner = cfg.shape.assigner()
        self.inputs = {name: column_arrays(t.column(name)) for name in cfg.inputs}
        self.aggs = list(cfg.aggs)

    def _split(self) -> None:
        """``merged`` and ``single`` (class docstring), each in arrival order per code."""
        code, incr = self.code, self.incr
        order = np.lexsort((self.seq, code))
        inc = order[incr[order]]
        # in-order groups: time never goes back along the arrival order
        c_inc, t_inc = code[inc], self.ts[inc]
        back = np.zeros(inc.size, bool)
        if inc.size > 1:
            back[1:] = (c_inc[1:] == c_inc[:-1]) & (t_inc[1:] < t_inc[:-1])
        bad_codes = np.unique(c_inc[back])
        in_order = ~np.isin(c_inc, bad_codes)
        self.merged = inc[in_order]
        self.single = np.concatenate([inc[~in_order], order[~incr[order]]])

    def merged_items(self) -> pa.Table:
        """One item per (code, window) of the ``merged`` rows: the combined partial, the earliest
        and latest time of its rows, its first row (arrival) and the rows it stands for."""
        merged, ts, seq, code, aggs = self.merged, self.ts, self.seq, self.code, self.aggs
        prow, pw = self.assigner.assign(ts[merged])
        rows = merged[prow]
        part = combine(
            aggs,
            lift(aggs, code[rows], pw, ts[rows], _take(self.inputs, rows)),
        )
        # per (code, window): earliest / latest time, first arrival, a representative row
        cr = code[rows]
        if in_key_order(cr, pw):
            key_order = np.arange(rows.size)  # tumbling windows of in-order rows: already grouped
        else:
            key_order = np.lexsort((seq[rows], pw, cr))
        kc, kw = code[rows][key_order], pw[key_order]
        brk = np.ones(kc.size, bool)
        brk[1:] = (kc[1:] != kc[:-1]) | (kw[1:] != kw[:-1])
        starts = np.flatnonzero(brk)
        r_sorted = rows[key_order]
        first_row = r_sorted[starts]
        tmin = np.minimum.reduceat(ts[r_sorted], starts)
        tmax = np.maximum.reduceat(ts[r_sorted], starts)
        primary = (np.arange(prow.size) < merged.size).astype(
            np.int64
        )  # ``assign`` lists latest windows first
        n = np.add.reduceat(primary[key_order], starts)
        return self.items(first_row, tmin, tmax, kw[starts], True, part, n)

    def single_items(self) -> list[pa.Table]:
        """Items of the ``single`` rows: changed rows pass as one item each (windows found again in
        the engine), incremental rows of out-of-order groups as one item per window they fall into."""
        single, ts, code, aggs = self.single, self.ts, self.code, self.aggs
        prow, pw = self.assigner.assign(ts[single])
        inc_mask = self.incr[single]
        rows_i = single[prow][inc_mask[prow]]
        w_i = pw[inc_mask[prow]]
        n_i = (np.arange(prow.size) < single.size)[inc_mask[prow]].astype(np.int64)
        part = lift(aggs, code[rows_i], w_i, ts[rows_i], _take(self.inputs, rows_i))
        pieces = [self.items(rows_i, ts[rows_i], ts[rows_i], w_i, True, part, n_i)]
        rows_c = single[~inc_mask]
        if rows_c.size:
            empty = lift(aggs, code[rows_c], ts[rows_c], ts[rows_c], _take(self.inputs, rows_c))
            ones = np.ones(rows_c.size, np.int64)
            pieces.append(self.items(rows_c, ts[rows_c], ts[rows_c], ts[rows_c], False, empty, ones))
        return pieces

    def items(
        self,
        rep: np.ndarray,
        tmin: np.ndarray,
        tmax: np.ndarray,
        wkey: np.ndarray,
        pre: bool,
        part: Partials,
        n: np.ndarray,
    ) -> pa.Table:
        """Item rows: columns of the representative stage-1 rows ``rep`` plus times and partials."""
        cfg, t, schema = self.cfg, self.t, self.schema
        idx = pa.array(rep)
        cols: dict[str, pa.Array] = {}
        for f in schema:
            name = f.name
            if name in cfg.groups or name in ("_bucket", "_ct", "_hist", "_bv"):
                cols[name] = t.column(name).take(idx).cast(f.type)
        cols["_ts"] = pa.array(tmin, pa.int64())
        cols["_seq"] = t.column("_seq").take(idx).cast(pa.int64())  # an item arrives with its first row
        cols["_wkey"] = pa.array(wkey, pa.int64())
        cols["_tmax"] = pa.array(tmax, pa.int64())
        cols["_pre"] = pa.array(np.full(rep.size, pre), pa.bool_())
        cols["_n"] = pa.array(n, pa.int64())
        for i, a in enumerate(self.aggs):
            for f in a.fields:
                v = part.cols[a.field(f)]
                typ = schema.field(field_name(i, f)).type
                if f == "b":
                    cols[field_name(i, f)] = buffers.encode_column(v)
                elif v.dtype == object:
                    cols[field_name(i, f)] = pa.array(v, typ, from_pandas=True)
                else:
                    cols[field_name(i, f)] = pa.array(v).cast(typ)
        return pa.table({f.name: cols[f.name] for f in schema}, schema=schema)


class SourcePipeline:
    """Stage 1 (DuckDB) and pre-aggregation where the source reads the rows: the ``tdlake``
    source's ``transform`` for eligible streams, so the JVM only ever sees items. A subclass
    changes what follows stage 1 through ``shape`` and ``finish`` (``runtime/packing.py``).

    Args:
        cfg: the stream's kernel settings.
        stage1: DuckDB stage-1 SQL over the placeholder view ``__SOURCE__`` that carries the
            change-feed meta columns along.
    """

    def __init__(self, cfg: KernelConfig, stage1: str) -> None:
        self.cfg = cfg
        self.stage1 = stage1
        self.source: pa.Schema | None = None  # the source rows' schema when the query began

    def staged(self, rows: pa.Table) -> pa.Table:
        from spark_workers.query.duck import DuckSession

        with DuckSession(None, threads=1) as duck:
            return duck.query(self.stage1.replace("__SOURCE__", duck.register_arrow(rows)))

    def schema(self, source: pa.Schema) -> pa.Schema:
        """The items' schema, from a dry run of stage 1 on an empty table of the source's schema
        (kept: the rows of every later call are conformed to it, so a trigger table altered while
        the query runs changes nothing, seed 002 "Database and Table Operations")."""
        self.source = source
        return self.shape(self.staged(source.empty_table()).schema)

    def shape(self, stage1: pa.Schema) -> pa.Schema:
        """The schema of what ``finish`` makes of stage-1 rows of schema ``stage1``."""
        return item_schema(self.cfg, stage1)

    def finish(self, staged: pa.Table) -> pa.Table:
        """Stage-1 rows -> what the JVM sees: items (``premerge``)."""
        return premerge(self.cfg, staged)

    def __call__(self, rows: pa.Table) -> pa.Table:
        if self.source is not None:
            rows = conform(rows, self.source)
        return self.finish(self.staged(rows))
