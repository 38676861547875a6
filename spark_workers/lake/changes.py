"""Reading a trigger table as a stream: history snapshot, then the change data feed.

Offsets are ``{"v": version, "h": index}``: everything up to Delta ``version`` has been delivered,
except, while ``h >= 0``, the history snapshot's time buckets from index ``h`` on. A stream created
with FILL_HISTORY starts at ``{"v": H, "h": 0}`` (H = the version when CREATE STREAM returned) and
walks the snapshot bucket by bucket in time order; any other stream starts at ``{"v": S, "h": -1}``
and reads changes after S. Rows come out in the logical schema (column and tag names users write,
TIMESTAMP as ``timestamp[us, UTC]``) plus ``_ct`` change kind, ``_cv`` commit version, ``_seq``
arrival order, ``_hist``, ``_bv`` (the version the batch ends at) and ``_at``, the arrival time:
the commit time of the row's version in epoch milliseconds (processing-time streams window by it).
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.engine.rows import CHANGE_CODES, INSERT
from spark_workers.lake.catalog import Database
from spark_workers.lake.store import Lake
from spark_workers.lake.virtual import Snapshot, VirtualPlan, plan, virtualize
from spark_workers.tdtypes import TdType

META_FIELDS = [
    pa.field("_ct", pa.int8()),
    pa.field("_cv", pa.int64()),
    pa.field("_seq", pa.int64()),
    pa.field("_hist", pa.bool_()),
    pa.field("_bv", pa.int64()),
    pa.field("_at", pa.int64()),
]
SEQ_SHIFT = 1 << 32


def logical_type(db: Database, t: object) -> pa.DataType:
    assert isinstance(t, TdType)
    if t.name == "TIMESTAMP":
        return pa.int64() if db.precision == "ns" else pa.timestamp("us", tz="UTC")
    return t.arrow(db.precision)


class ChangeReader:
    """Reads one trigger table (supertable, subtable, normal table or virtual table) as a stream
    of rows.

    A virtual table is read from the change feed of the one storage table its columns reference
    (``lake/virtual.py``): versions and buckets are that table's, rows come out as the virtual
    table's (``tbname`` the virtual child or normal table, its columns and tags).

    Args:
        lake: the lake.
        db: database name; table: the table the stream reads (a subtable filters its supertable).
        members: a virtual table's members to read (fixed when the stream's task starts; None:
            all of them now).
        align: a virtual table's rows from several tables are aligned on the timestamp across
            micro-batches (updates); False: each arrives as incremental data (``virtualize``).
    """

    def __init__(
        self, lake: Lake, db: str, table: str, members: list[str] | None = None, *, align: bool = True
    ) -> None:
        self.lake = lake
        self.align = align
        self.db = lake.catalog.require_database(db)
        t = lake.catalog.require_table(self.db.name, table)
        self.table = t
        self.virtual: VirtualPlan | None = None
        self.sdb = self.db
        if t.virtual:
            self.virtual = plan(lake.catalog, t, members)
            self.sdb = lake.catalog.require_database(self.virtual.storage_db)
            self.storage = lake.catalog.require_table(self.sdb.name, self.virtual.storage)
            self.shape = self.virtual.shape
            self.tbname = None
        else:
            self.storage = t if t.kind != "sub" else lake.catalog.require_table(self.db.name, t.storage)
            self.shape = self.storage
            self.tbname = t.name if t.kind == "sub" else None

    def schema(self) -> pa.Schema:
        """Logical schema of the rows (columns, tags, meta fields)."""
        fields = [pa.field("tbname", pa.string())]
        fields += [pa.field(c.name, logical_type(self.db, c.type)) for c in self.shape.columns]
        fields += [pa.field(g.name, logical_type(self.db, g.type)) for g in self.shape.tags]
        return pa.schema(fields + META_FIELDS)

    def latest_version(self) -> int:
        return self.lake.version(self.sdb.name, self.storage.name)

    def history_buckets(self, version: int) -> list[tuple[int, int]]:
        """``(bucket, rows)`` of the history snapshot, in time order."""
        return self.lake.buckets(self.sdb.name, self.storage.name, version)

    def _tbnames(self) -> list[str] | None:
        if self.virtual is not None:
            return self.virtual.tbnames if self.storage.kind == "super" else None
        return [self.tbname] if self.tbname else None

    def _virtualize(self, t: pa.Table, span: tuple[int, int] | None) -> pa.Table:
        """Storage rows -> the virtual table's rows (``lake/virtual.py``); ``span``: the change
        feed's ``(start, end]`` versions, whose snapshots aligned rows are read from (None: a
        history slice, ``t`` holds them all)."""
        assert self.virtual is not None
        ts = self.storage.columns[0].physical

        def at(version: int) -> Snapshot:
            def read(tbnames: list[str], lo: int, hi: int) -> pa.Table:
                return self.lake.read(
                    self.sdb, self.storage, version=version, tbnames=tbnames, ts_min=lo, ts_max=hi
                )

            return read

        snaps = None if span is None else (at(span[1]), at(span[0]) if span[0] > 0 else None)
        out = virtualize(self.virtual, self.db, t, ts, snaps, align=self.align)
        if out.num_rows and "_commit_version" not in out.column_names:
            out = out.sort_by([(self.shape.columns[0].physical, "ascending"), ("tbname", "ascending")])
        return out

    def read_history(self, version: int, b_lo: int, b_hi: int, seq_base: int = 0) -> pa.Table:
        """Snapshot ``version`` rows with ``b_lo <= _bucket <= b_hi`` as inserts (``_hist`` true)."""
        t = self.lake.read(
            self.sdb,
            self.storage,
            version=version,
            buckets=(b_lo, b_hi),
            tbnames=self._tbnames(),
        )
        if self.virtual is not None:
            t = self._virtualize(t, None)
        elif t.num_rows:
            t = t.sort_by([(self.storage.columns[0].physical, "ascending"), ("tbname", "ascending")])
        n = t.num_rows
        at = self.lake.commit_time_ms(self.sdb.name, self.storage.name, version) if n else 0
        meta = {
            "_ct": np.full(n, INSERT, np.int8),
            "_cv": np.full(n, version, np.int64),
            "_seq": np.arange(n, dtype=np.int64) + seq_base,
            "_hist": np.ones(n, bool),
            "_bv": np.full(n, version, np.int64),
            "_at": np.full(n, at, np.int64),
        }
        return self._logical(t, meta)

    def read_changes(self, start: int, end: int) -> pa.Table:
        """Change feed rows of versions ``(start, end]`` in commit order."""
        t = self.lake.changes(self.sdb, self.storage, start, end)
        if self.tbname is not None and t.num_rows:
            t = t.filter(pc.equal(t.column("tbname"), self.tbname))
        if self.virtual is not None:
            t = self._virtualize(t, (start, end))
        n = t.num_rows
        ct = (
            np.array([CHANGE_CODES[c] for c in t.column("_change_type").to_pylist()], np.int8)
            if n
            else np.empty(0, np.int8)
        )
        cv = (
            t.column("_commit_version").cast(pa.int64()).to_numpy(zero_copy_only=False)
            if n
            else np.empty(0, np.int64)
        )
        seq = cv * SEQ_SHIFT + np.arange(n, dtype=np.int64)
        at = (
            t.column("_commit_timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
            if n and "_commit_timestamp" in t.column_names
            else np.zeros(n, np.int64)
        )
        meta = {
            "_ct": ct,
            "_cv": cv,
            "_seq": seq,
            "_hist": np.zeros(n, bool),
            "_bv": np.full(n, end, np.int64),
            "_at": at,
        }
        drop = [c for c in ("_change_type", "_commit_version", "_commit_timestamp") if c in t.column_names]
        return self._logical(t.drop_columns(drop), meta)

    def _logical(self, t: pa.Table, meta: dict[str, np.ndarray]) -> pa.Table:
        """Engine-form rows -> logical schema: names, timestamps, tags joined."""
        schema = self.schema()
        n = t.num_rows
        cols: list[pa.Array] = [t.column("tbname").cast(pa.string()) if n else pa.array([], pa.string())]
        for c in self.shape.columns:
            typ = schema.field(c.name).type
            col = t.column(c.physical) if c.physical in t.column_names else pa.nulls(n, pa.int64())
            if c.type.name == "TIMESTAMP" and self.db.precision != "ns":
                col = pc.multiply(col.cast(pa.int64()), {"ms": 1000, "us": 1}[self.db.precision]).cast(typ)
            else:
                col = col.cast(typ)
            cols.append(col)
        if self.shape.tags:
            tags = self.lake.catalog.subtable_tags(self.db.name, self.shape.name)
            idx = (
                pc.index_in(t.column("tbname").cast(pa.string()), value_set=tags.column("tbname"))
                if n
                else pa.array([], pa.int32())
            )
            for g in self.shape.tags:
                typ = schema.field(g.name).type
                col = tags.column(g.physical).take(idx) if n else pa.array([], typ)
                if g.type.name == "TIMESTAMP" and self.db.precision != "ns":
                    col = col.cast(typ)
                cols.append(col.cast(typ))
        for f in META_FIELDS:
            cols.append(pa.array(meta[f.name], f.type))
        return pa.Table.from_arrays(cols, schema=schema)


HISTORY_ROWS_PER_BATCH = 1_000_000


def next_offset(
    reader: ChangeReader,
    start: dict[str, int],
    *,
    max_rows: int = HISTORY_ROWS_PER_BATCH,
    max_versions: int = 1000,
) -> dict[str, int]:
    """The end offset of the next micro-batch from ``start`` (equal to ``start`` when there is no
    new data). History advances whole time buckets, in time order, up to about ``max_rows`` rows
    (at least one bucket) and never past its own snapshot; the change feed advances at most
    ``max_versions`` versions."""
    v, h = int(start["v"]), int(start["h"])
    if h >= 0:
        buckets = reader.history_buckets(v)
        nxt, rows = h, 0
        while nxt < len(buckets) and (nxt == h or rows + buckets[nxt][1] <= max_rows):
            rows += buckets[nxt][1]
            nxt += 1
        return {"v": v, "h": -1} if nxt >= len(buckets) else {"v": v, "h": nxt}
    latest = reader.latest_version()
    if latest <= v:
        return {"v": v, "h": -1}
    return {"v": min(latest, v + max_versions), "h": -1}


def read_range(
    reader: ChangeReader, start: dict[str, int], end: dict[str, int], *, ignore_until: int | None = None
) -> pa.Table:
    """Rows between two offsets (see module docstring); changes of versions ``<= ignore_until``
    are skipped (RESUME STREAM ... IGNORE UNTREATED, seed 000)."""
    v0, h0 = int(start["v"]), int(start["h"])
    v1, h1 = int(end["v"]), int(end["h"])
    if h0 >= 0:
        buckets = reader.history_buckets(v0)
        upto = len(buckets) if h1 < 0 else h1
        if h0 >= upto or not buckets:
            return reader.schema().empty_table()
        # arrival order across partitions of one history batch: bucket index, then row
        return reader.read_history(v0, buckets[h0][0], buckets[upto - 1][0], seq_base=h0 << 32)
    if ignore_until is not None:
        v0 = max(v0, ignore_until)
    if v1 <= v0:
        return reader.schema().empty_table()
    return reader.read_changes(v0, v1)


def initial_offset(start_version: int, history_version: int | None) -> dict[str, int]:
    """Where a new stream starts (module docstring)."""
    if history_version is not None:
        return {"v": int(history_version), "h": 0}
    return {"v": int(start_version), "h": -1}


def split_range(
    reader: ChangeReader, start: dict[str, int], end: dict[str, int], parts: int
) -> list[tuple[dict[str, int], dict[str, int]]]:
    """Split one micro-batch's offsets into up to ``parts`` consecutive ranges (whole Delta versions
    of the change feed, whole time buckets of the history) that ``read_range`` reads independently;
    together they hold exactly the rows of ``(start, end)``, each with its global arrival order."""
    v0, h0 = int(start["v"]), int(start["h"])
    v1, h1 = int(end["v"]), int(end["h"])
    if parts <= 1:
        return [(start, end)]
    if h0 >= 0:
        upto = len(reader.history_buckets(v0)) if h1 < 0 else h1
        cuts = sorted({h0 + (upto - h0) * k // parts for k in range(1, parts)} - {h0, upto})
        bounds = [{"v": v0, "h": h0}, *[{"v": v0, "h": c} for c in cuts], end]
    else:
        cuts = sorted({v0 + (v1 - v0) * k // parts for k in range(1, parts)} - {v0, v1})
        bounds = [start, *[{"v": c, "h": -1} for c in cuts], end]
    return list(itertools.pairwise(bounds))
