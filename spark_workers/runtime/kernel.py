"""The per-bucket kernel: one micro-batch of one bucket -> engine step -> output rows.

Runs inside ``applyInPandasWithState`` (Python workers) and in ``LocalRunner`` (tests), so it
depends on nothing from Spark. Its configuration is a small picklable ``KernelConfig``.

Input rows (stage-1 shape): ``_g0..`` group values, ``_ts`` (int64, precision units), ``_i0..``
aggregate inputs, ``_x0..`` window extras (state value, event conditions, eKuiper FILTER/WHERE/
OVER), ``_ct`` change kind (0 insert, 1 update pre-image, 2 update post-image, 3 delete), ``_seq``
arrival order, ``_hist`` FILL_HISTORY row, ``_bv`` lake version the batch ends at (recalculation
reads that snapshot).

Output rows (``OUTPUT_FIELDS`` + one column per aggregate): ``_kind`` ``r`` result, ``x`` removal,
``e`` event (``_info``: JSON of window-type details), ``s`` stats. Collected rows (eKuiper windows
without aggregates) travel as JSON text.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.engine import buffers
from spark_workers.engine.aggregates import ROWS, AggSpec, result_arrow_type, to_arrow
from spark_workers.engine.rows import DELETE, Lifted, RowBatch, column_arrays, group_codes
from spark_workers.engine.shape import Engine, WindowShape, load_state, make_engine
from spark_workers.engine.stream import StepOutput, StreamRules

TS_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: "no upper bound" for range reads
OUTPUT_FIELDS = [
    pa.field("_bucket", pa.int32()),
    pa.field("_kind", pa.string()),
    pa.field("_gkey", pa.string()),
    pa.field("_wstart", pa.int64()),
    pa.field("_wend", pa.int64()),
    pa.field("_event", pa.string()),
    pa.field("_hist", pa.bool_()),
    pa.field("_stats", pa.string()),
    pa.field("_info", pa.string()),
]


@dataclass(frozen=True)
class KernelConfig:
    """Picklable settings of a stream's kernel.

    Attributes:
        lake_root: the lake folder (recalculation reads snapshots from it).
        catalog_url: the lake's catalog (``TDWEB_CATALOG_URL``; "" for SQLite in the lake).
        db, table: the source storage table; ``tbname_filter`` when the source is a subtable.
        tz: server time zone for the stage-1 SQL.
        precision: the source database's precision (ms, us, ns).
        shape: the window in precision units.
        aggs: aggregate specs (with input kinds).
        rules: trigger mode and time rules.
        groups: stage-1 group column names; ``group_is_tbname`` when the only group is tbname.
        inputs: stage-1 aggregate input names.
        extras: ``(engine extra name, stage-1 column)`` of the window's extras.
        stage1_sql: DuckDB stage-1 query over the placeholder view ``__SOURCE__``.
        input_types: Arrow type per input (for result types).
        premerge: rows are pre-aggregated before the shuffle (``runtime/premerge.py``).
        pack: rows cross the shuffle packed per group (``runtime/packing.py``); never with
            ``premerge``.
        pack_output: the output rows cross Spark back to the sink as Arrow IPC values
            (``runtime/packing.py`` ``encode_output``), not one Spark row per window.
        ignore_delete: deletes change nothing (3.3.7 streams without DELETE_RECALC, seed 002
            "Data Deletions").
    """

    lake_root: str
    db: str
    table: str
    tbname_filter: str | None
    tz: str
    precision: str
    shape: WindowShape
    aggs: tuple[AggSpec, ...]
    rules: StreamRules
    groups: tuple[str, ...]
    group_is_tbname: bool
    inputs: tuple[str, ...]
    extras: tuple[tuple[str, str], ...]
    stage1_sql: str
    input_types: tuple[tuple[str, pa.DataType], ...]
    premerge: bool = False
    pack: bool = False
    pack_output: bool = False
    ignore_delete: bool = False
    catalog_url: str = ""

    def engine(self) -> Engine:
        return make_engine(self.shape, list(self.aggs), self.rules)

    @property
    def timers(self) -> bool:
        """Does the stream need steps without data (processing-time timers, seed 000 MAX_DELAY,
        FORCE_WINDOW_CLOSE, CONTINUOUS_WINDOW_CLOSE's period; eKuiper processing time)?"""
        r = self.rules
        return r.processing_time or r.mode in ("MAX_DELAY", "FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE")

    def now(self) -> int:
        """The wall clock in the stream's precision units."""
        per_ms = {"ms": 1, "us": 1_000, "ns": 1_000_000}[self.precision]
        return int(time.time() * 1000) * per_ms

    def output_schema(self) -> pa.Schema:
        types = dict(self.input_types)
        fields = list(OUTPUT_FIELDS)
        for a in self.aggs:
            typ = pa.string() if a.func == ROWS else result_arrow_type(a, types.get(a.input or ""))
            fields.append(pa.field(a.name, typ))
        return pa.schema(fields)


def rows_from_table(cfg: KernelConfig, t: pa.Table) -> RowBatch:
    """Stage-1 Arrow rows (or pre-aggregated items, ``runtime/premerge.py``) -> engine RowBatch,
    sorted into arrival order by ``_seq``."""
    if "_seq" in t.column_names and t.num_rows > 1:
        t = t.take(pa.array(np.argsort(t.column("_seq").to_numpy(zero_copy_only=False), kind="stable")))
    codes, keys, _ = group_codes([t.column(g) for g in cfg.groups], t.num_rows)
    ts = t.column("_ts").cast(pa.int64()).to_numpy(zero_copy_only=False)
    extra = {key: column_arrays(t.column(col)) for key, col in cfg.extras if col in t.column_names}
    change = (
        t.column("_ct").cast(pa.int8()).to_numpy(zero_copy_only=False) if "_ct" in t.column_names else None
    )
    hist = t.column("_hist").to_numpy(zero_copy_only=False) if "_hist" in t.column_names else None
    lifted = None
    inputs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if "_pre" in t.column_names:
        cols = {}
        for i, a in enumerate(cfg.aggs):
            for f in a.fields:
                col = t.column(f"_p{i}_{f}")
                cols[a.field(f)] = buffers.decode_column(col) if f == "b" else column_arrays(col)[0]
        lifted = Lifted(
            t.column("_wkey").to_numpy(zero_copy_only=False).astype(np.int64),
            t.column("_tmax").to_numpy(zero_copy_only=False).astype(np.int64),
            t.column("_pre").to_numpy(zero_copy_only=False).astype(bool),
            cols,
            t.column("_n").to_numpy(zero_copy_only=False).astype(np.int64),
        )
    else:
        inputs = {n: column_arrays(t.column(n)) for n in cfg.inputs}
    return RowBatch(keys[codes], ts, inputs, change, hist, extra, lifted, (codes, keys))


class Kernel:
    """Runs engine steps for one stream (any bucket)."""

    def __init__(self, cfg: KernelConfig) -> None:
        self.cfg = cfg
        self.engine = cfg.engine()
        self._lake: Any = None

    @property
    def lake(self) -> Any:
        if self._lake is None:
            from spark_workers.lake.store import Lake

            self._lake = Lake(self.cfg.lake_root, self.cfg.catalog_url or None)
        return self._lake

    def recalc_reader(self, version: int) -> Any:
        """A ``RecalcReader`` over the lake snapshot ``version`` using the stage-1 SQL."""
        cfg = self.cfg

        def read(gkeys: list[str], lo: int, hi: int | None = None) -> RowBatch:
            from spark_workers.query.duck import DuckSession
            from spark_workers.query.planner import resolve
            from spark_workers.sql import ast

            src = resolve(self.lake.catalog, ast.TableName(cfg.tbname_filter or cfg.table, cfg.db), cfg.db)
            tbnames = None
            if cfg.group_is_tbname:
                tbnames = [json.loads(k)[0] for k in gkeys]
            with DuckSession(self.lake) as duck:
                top = (
                    hi
                    if hi is not None
                    else TS_MAX_MS * {"ms": 1, "us": 1_000, "ns": 1_000_000}[cfg.precision]
                )
                view = duck.register_source(src, version, ts_range=(lo, top), tbnames=tbnames)
                t = duck.query(cfg.stage1_sql.replace("__SOURCE__", view))
            rows = rows_from_table(cfg, t)
            if len(rows):
                keep = np.isin(rows.gkey, np.array(gkeys, dtype=object))
                rows = rows.take(np.flatnonzero(keep))
            return rows

        return read

    def step(
        self, bucket: int, state_bytes: bytes | None, t: pa.Table, now: int | None = None
    ) -> tuple[pa.Table, bytes]:
        """One micro-batch of one bucket (``t`` may be empty: a timer step at ``now``, the wall
        clock in precision units): returns (output rows, new state)."""
        cfg = self.cfg
        state = load_state(cfg.shape, list(cfg.aggs), list(cfg.inputs), state_bytes)
        if cfg.ignore_delete and t.num_rows and "_ct" in t.column_names:
            t = t.filter(pc.not_equal(t.column("_ct").cast(pa.int8()), DELETE))
        rows = rows_from_table(cfg, t)
        # the micro-batch's end: its input partitions each know the end of their own range
        version = int(pc.max(t.column("_bv")).as_py()) if "_bv" in t.column_names and t.num_rows else None
        # arrival times are not in the lake: processing-time streams never recalculate
        recalc = (
            self.recalc_reader(version) if version is not None and not cfg.rules.processing_time else None
        )
        out = self.engine.step(state, rows, recalc, now)
        history = bool(len(rows)) and bool(rows.is_history.all())
        return self.to_table(bucket, out, history=history), state.to_bytes()

    def to_table(self, bucket: int, out: StepOutput, *, history: bool = False) -> pa.Table:
        """StepOutput -> rows of the kernel's output schema (the stats row carries ``history``)."""
        schema = self.cfg.output_schema()
        res = out.upserts
        n_r, n_x, n_e = len(res), len(out.removals), len(out.events)
        n = n_r + n_x + n_e + 1
        # the results' columns go to Arrow as arrays (a Python list of 20,000 numpy scalars costs
        # about 14 µs per window); removals, events and the stats row are few and stay lists
        tail_gkey = [k for k, _ in out.removals] + [e.gkey for e in out.events] + [None]
        tail_start = [w for _, w in out.removals] + [e.wstart for e in out.events] + [None]
        tail_end = (
            [self.cfg.shape.nominal_end(w) for _, w in out.removals] + [e.wend for e in out.events] + [None]
        )
        event = [None] * n_x + [e.kind for e in out.events] + [None]
        hist = [False] * n_x + [e.history for e in out.events] + [history]
        stats = [None] * (n - 1) + [json.dumps(out.stats)]
        info = (
            [None] * n_x + [json.dumps(e.info, default=str) if e.info else None for e in out.events] + [None]
        )
        kinds = pa.array(["x"] * n_x + ["e"] * n_e + ["s"], pa.string())
        cols: list[pa.Array] = [
            pa.array(np.full(n, bucket, np.int32)),
            pa.concat_arrays([pa.array(np.full(n_r, "r", object), pa.string()), kinds]),
            pa.concat_arrays([pa.array(res.gkey, pa.string()), pa.array(tail_gkey, pa.string())]),
            pa.concat_arrays([pa.array(res.wstart, pa.int64()), pa.array(tail_start, pa.int64())]),
            pa.concat_arrays([pa.array(res.wend, pa.int64()), pa.array(tail_end, pa.int64())]),
            pa.concat_arrays([pa.nulls(n_r, pa.string()), pa.array(event, pa.string())]),
            pa.concat_arrays([pa.array(np.zeros(n_r, bool)), pa.array(hist, pa.bool_())]),
            pa.array(stats, pa.string()),
            pa.concat_arrays([pa.nulls(n_r, pa.string()), pa.array(info, pa.string())]),
        ]
        for a in self.cfg.aggs:
            typ = schema.field(a.name).type
            vals, valid = res.values[a.name]
            if a.func == ROWS:
                head = pa.array([json.dumps(v) for v in vals], pa.string())
            else:
                head = to_arrow(vals, valid, typ)
            cols.append(pa.concat_arrays([head, pa.nulls(n - n_r, typ)]))
        return pa.Table.from_arrays(cols, schema=schema)
