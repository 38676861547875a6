"""Reading a trigger table as a stream: history snapshot, then the change data feed.

Offsets are ``{"v": version, "h": index}``: everything up to Delta ``version`` has been delivered,
except, while ``h >= 0``, the history snapshot's time buckets from index ``h`` on. A stream created
with FILL_HISTORY starts at ``{"v": H, "h": 0}`` (H = the version when CREATE STREAM returned) and
walks the snapshot bucket by bucket in time order; any other stream starts at ``{"v": S, "h": -1}``
and reads changes after S. Rows come out in the logical schema (column and tag names users write,
TIMESTAMP as ``timestamp[us, UTC]``) plus ``_ct`` change kind, ``_cv`` commit version, ``_seq``
arrival order, ``_hist``, ``_bv`` (the version the batch ends at) and ``_at``, the arrival time:
the commit time of the row's version in epoch milliseconds (processing-time streams window by it).
A table with a composite key delivers every row: two rows with the same timestamp and different
keys are two inserts (history in (ts, tbname, key) order; changes in commit order).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.engine.rows import CHANGE_CODES, INSERT
from spark_workers.lake.catalog import Database, Table
from spark_workers.lake.keys import row_key
from spark_workers.lake.store import Lake, engine_schema
from spark_workers.lake.virtual import TS, Snapshot, origin_key, plan, source_column, virtualize
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
    of rows; a virtual table is read by :class:`VirtualChangeReader` (the constructor picks it).

    Args:
        lake: the lake.
        db: database name; table: the table the stream reads (a subtable filters its supertable).
        members: a virtual table's members to read (fixed when the stream's task starts; None:
            all of them now).
        align: a virtual table's rows from several tables are aligned on the timestamp across
            micro-batches (updates); False: each arrives as incremental data (``virtualize``).
    """

    clock = False  # offsets are commit times (ms) instead of one table's versions

    def __new__(cls, lake: Lake, db: str, table: str, *args: object, **kwargs: object) -> ChangeReader:
        if cls is ChangeReader:
            d = lake.catalog.require_database(db)
            if lake.catalog.require_table(d.name, table).virtual:
                return super().__new__(VirtualChangeReader)
        return super().__new__(cls)

    def __init__(
        self, lake: Lake, db: str, table: str, members: list[str] | None = None, *, align: bool = True
    ) -> None:
        self.lake = lake
        self.db = lake.catalog.require_database(db)
        t = lake.catalog.require_table(self.db.name, table)
        self.table = t
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
        return self.lake.version(self.db.name, self.storage.name)

    def history_buckets(self, version: int) -> list[tuple[int, int]]:
        """``(bucket, rows)`` of the history snapshot, in time order."""
        return self.lake.buckets(self.db.name, self.storage.name, version)

    def read_history(self, version: int, b_lo: int, b_hi: int, seq_base: int = 0) -> pa.Table:
        """Snapshot ``version`` rows with ``b_lo <= _bucket <= b_hi`` as inserts (``_hist`` true)."""
        t = self.lake.read(
            self.db,
            self.storage,
            version=version,
            buckets=(b_lo, b_hi),
            tbnames=[self.tbname] if self.tbname else None,
        )
        if t.num_rows:  # time order; rows of one subtable at one time by their composite key
            keys = [(k, "ascending") for k in row_key(self.storage)]
            t = t.sort_by([keys[0], ("tbname", "ascending"), *keys[1:]])
        at = self.lake.commit_time_ms(self.db.name, self.storage.name, version) if t.num_rows else 0
        return self._logical(t, history_meta(t.num_rows, version, seq_base, at))

    def read_changes(self, start: int, end: int, *, ordered: bool = True) -> pa.Table:
        """Change feed rows of versions ``(start, end]``, in arrival order (``_arrival_order``)
        or, with ``ordered`` False, in the order they were read with ``_seq`` still numbering
        them in arrival order: for a caller that sorts by ``_seq`` itself (the source's
        pre-aggregation and packing), which saves a copy of every column."""
        t = self.lake.changes(self.db, self.storage, start, end, ordered=False)  # sorted below
        if self.tbname is not None and t.num_rows:
            t = t.filter(pc.equal(t.column("tbname"), self.tbname))
        return self._changes_out(t, start, end, ordered)

    def _changes_out(self, t: pa.Table, start: int, end: int, ordered: bool = True) -> pa.Table:
        """Engine-form change rows -> logical rows with their meta fields (module docstring);
        ``ordered``: as ``read_changes``."""
        n = t.num_rows
        ct = change_codes(t.column("_change_type")) if n else np.empty(0, np.int8)  # none: no column
        rank = np.arange(n, dtype=np.int64)  # each row's place in arrival order
        if n > 1:
            order = self._arrival_order(t, ct).to_numpy()
            if ordered:
                t, ct = t.take(order), ct[order]
            else:
                rank[order] = np.arange(n, dtype=np.int64)
        at = (
            t.column("_commit_timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
            if n and "_commit_timestamp" in t.column_names
            else np.zeros(n, np.int64)
        )
        if self.clock:  # commit times order the rows of several tables
            cv = at.copy()
            seq = ((start - CLOCK_EPOCH_MS) << 23) + rank
        else:
            cv = (
                t.column("_commit_version").cast(pa.int64()).to_numpy(zero_copy_only=False)
                if n
                else np.empty(0, np.int64)
            )
            seq = cv * SEQ_SHIFT + rank
        meta = {
            "_ct": ct,
            "_cv": cv,
            "_seq": seq,
            "_hist": np.zeros(n, bool),
            "_bv": np.full(n, end, np.int64),
            "_at": at,
        }
        drop = [c for c in t.column_names if c in ("_change_type", "_commit_version", "_commit_timestamp")]
        return self._logical(t.drop_columns(drop), meta)

    def _arrival_order(self, t: pa.Table, codes: np.ndarray) -> pa.Array:
        """Indices putting change rows in arrival order: by commit (version, or commit time when
        several tables are read), then, inside one commit, by time, subtable and composite key,
        an update's pre-image before its post-image.

        A commit's rows come back from the change feed file by file, and one write's files
        (one per ``_bucket``) come in no fixed order: without this, the rows of a later time bucket
        could reach the engine before the earlier ones of the same INSERT, and the windows of the
        earlier rows would be taken as expired (IGNORE EXPIRED, seed 000) and lost. Inside one
        write request TDengine orders a subtable's rows by timestamp, as this does."""
        keys = row_key(self.storage)
        clock = self.clock and "_commit_timestamp" in t.column_names
        by = "_commit_timestamp" if clock else "_commit_version"
        if len(keys) == 1 and t.num_rows:
            # the same order from integers: subtables by the rank of their name, the change code
            # beside it; one stable lexsort instead of Arrow's sort on a string key (about half
            # the time for a micro-batch of a thousand subtables)
            names = pc.dictionary_encode(t.column("tbname").cast(pa.string())).combine_chunks()
            rank = np.empty(len(names.dictionary), np.int64)
            rank[pc.sort_indices(names.dictionary).to_numpy()] = np.arange(len(names.dictionary))
            sub = rank[names.indices.to_numpy(zero_copy_only=False)] * 4 + codes.astype(np.int64)
            ts = t.column(keys[0]).cast(pa.int64()).to_numpy(zero_copy_only=False)
            commit = t.column(by).cast(pa.int64()).to_numpy(zero_copy_only=False)
            return pa.array(np.lexsort((sub, ts, commit)))
        sort = t.select([by, keys[0], "tbname", *keys[1:]]).append_column("_ct", pa.array(codes))
        return pc.sort_indices(sort, sort_keys=[(c, "ascending") for c in sort.column_names])

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
                if g.physical not in tags.column_names:  # dropped since this reader began: NULL
                    cols.append(pa.nulls(n, typ))
                    continue
                col = tags.column(g.physical).take(idx) if n else pa.array([], typ)
                if g.type.name == "TIMESTAMP" and self.db.precision != "ns":
                    col = col.cast(typ)
                cols.append(col.cast(typ))
        for f in META_FIELDS:
            cols.append(pa.array(meta[f.name], f.type))
        return pa.Table.from_arrays(cols, schema=schema)


def history_meta(n: int, version: int, seq_base: int, at: int) -> dict[str, np.ndarray]:
    """Meta fields of ``n`` history rows of snapshot ``version`` committed at ``at`` (ms)."""
    return {
        "_ct": np.full(n, INSERT, np.int8),
        "_cv": np.full(n, version, np.int64),
        "_seq": np.arange(n, dtype=np.int64) + seq_base,
        "_hist": np.ones(n, bool),
        "_bv": np.full(n, version, np.int64),
        "_at": np.full(n, at, np.int64),
    }


CLOCK_EPOCH_MS = 1_577_836_800_000  # 2020-01-01: arrival order of commit-time offsets
CLOCK_HOLD_MS = 1_000  # commit-time offsets stay this far behind the wall clock
_COMMITS: dict[tuple[str, str, str], list[tuple[int, int]]] = {}  # (lake, db, table) -> commits


class VirtualChangeReader(ChangeReader):
    """A virtual table read as a stream (``lake/virtual.py``): the change feeds of the storage
    tables its columns reference, turned into the virtual table's rows (``tbname`` the virtual
    child or normal table, its columns, its virtual supertable's tags).

    Offsets: with one storage table, that table's versions (as any table). With several
    (``clock``), commit times in epoch milliseconds: ``(t0, t1]`` holds each table's versions
    committed in that span, and the latest offset stays ``CLOCK_HOLD_MS`` behind the wall clock
    so a commit still being written is not skipped; the FILL_HISTORY snapshot at time ``T`` is
    each table's version as of ``T``, read as one slice.
    """

    def __init__(
        self, lake: Lake, db: str, table: str, members: list[str] | None = None, *, align: bool = True
    ) -> None:
        self.lake = lake
        self.align = align
        self.db = lake.catalog.require_database(db)
        self.table = lake.catalog.require_table(self.db.name, table)
        self.virtual = plan(lake.catalog, self.table, members)
        self.shape = self.virtual.shape
        self.tbname = None
        self.parts: list[tuple[Database, Table, list[str]]] = []
        for d, st, names in self.virtual.storages:
            sdb = lake.catalog.require_database(d)
            self.parts.append((sdb, lake.catalog.require_table(sdb.name, st), list(names)))
        self.clock = len(self.parts) > 1
        self.storage = self.parts[0][1]

    # ---------------------------------------------------------------- offsets
    def _commits(self, part: int) -> list[tuple[int, int]]:
        """``(version, commit ms)`` of a storage table, oldest first; kept between calls, only
        the commits since the last call are read from the Delta log."""
        sdb, st, _ = self.parts[part]
        dt = self.lake.delta(sdb.name, st.name)
        latest = int(dt.version())
        key = (self.lake.uri, sdb.name.lower(), st.name.lower())
        known = _COMMITS.get(key, [])
        have = known[-1][0] if known else -1
        if latest < have:  # the table was dropped and created again
            known, have = [], -1
        if latest > have:
            hist = dt.history(None if have < 0 else latest - have)
            new = sorted((int(h["version"]), int(h["timestamp"])) for h in hist if "version" in h)
            known = known + [c for c in new if c[0] > have]
            _COMMITS[key] = known
        return known

    def version_at(self, part: int, t_ms: int) -> int:
        """The storage table's last version committed at or before ``t_ms`` (-1: none)."""
        return max((v for v, ts in self._commits(part) if ts <= t_ms), default=-1)

    def latest_version(self) -> int:
        if not self.clock:
            return self.lake.version(self.parts[0][0].name, self.parts[0][1].name)
        newest = max(max((ts for _, ts in self._commits(i)), default=0) for i in range(len(self.parts)))
        return int(min(newest, time.time() * 1000 - CLOCK_HOLD_MS))

    def start_offset(self) -> int:
        """The offset a new stream starts from: everything committed so far is before it."""
        if not self.clock:
            return self.latest_version()
        return max(max((ts for _, ts in self._commits(i)), default=0) for i in range(len(self.parts)))

    def history_buckets(self, version: int) -> list[tuple[int, int]]:
        if not self.clock:
            return self.lake.buckets(self.parts[0][0].name, self.parts[0][1].name, version)
        rows = 0
        for i, (sdb, st, _) in enumerate(self.parts):
            v = self.version_at(i, version)
            rows += sum(n for _, n in self.lake.buckets(sdb.name, st.name, v)) if v >= 0 else 0
        return [(0, rows)] if rows else []

    # ---------------------------------------------------------------- rows
    def _part_rows(self, i: int, t: pa.Table) -> pa.Table:
        """Rows of storage table ``i`` in the plan's input form (``lake/virtual.py``): ``tbname``
        qualified, timestamp ``TS``, columns ``s<i>.<physical>``, change columns kept."""
        sdb, st, names = self.parts[i]
        if st.kind == "super" and t.num_rows:
            t = t.filter(pc.is_in(t.column("tbname").cast(pa.string()), pa.array(names, pa.string())))
        ts = st.columns[0].physical
        cols: dict[str, pa.ChunkedArray | pa.Array] = {}
        tb = t.column("tbname").cast(pa.string())
        cols["tbname"] = pc.binary_join_element_wise(origin_key(sdb.name, ""), tb, "")
        for name in t.column_names:
            if name == "tbname":
                continue
            if name == ts:
                cols[TS] = t.column(name)
            elif name.startswith("_"):
                cols[name] = t.column(name)
            else:
                cols[source_column(i, name)] = t.column(name)
        return pa.table(cols)

    def _rows(self, reads: list[pa.Table]) -> pa.Table:
        parts = [self._part_rows(i, t) for i, t in enumerate(reads)]
        raw = pa.concat_tables(parts, promote_options="default")
        if "_commit_timestamp" in raw.column_names and raw.num_rows and self.clock:
            raw = raw.sort_by([("_commit_timestamp", "ascending")])
        return raw.append_column("__row", pa.array(np.arange(raw.num_rows, dtype=np.int64)))

    def _snapshot(self, at_ms_or_version: int) -> Snapshot:
        """The storage rows of some physical tables and timestamps at an offset (plan form)."""

        def read(keys: list[str], lo: int, hi: int) -> pa.Table:
            reads = []
            for i, (sdb, st, names) in enumerate(self.parts):
                wanted = [n for n in names if origin_key(sdb.name, n) in keys]
                v = self.version_at(i, at_ms_or_version) if self.clock else at_ms_or_version
                if not wanted or v < 0:
                    reads.append(st_empty(self.lake, sdb, st))
                    continue
                reads.append(self.lake.read(sdb, st, version=v, tbnames=wanted, ts_min=lo, ts_max=hi))
            return self._rows(reads)

        return read

    def _virtual_rows(self, raw: pa.Table, span: tuple[int, int] | None) -> pa.Table:
        snaps = None
        if span is not None:
            snaps = (self._snapshot(span[1]), self._snapshot(span[0]) if span[0] > 0 else None)
        out = virtualize(self.virtual, self.db, raw, TS, snaps, align=self.align)
        if out.num_rows:
            out = out.sort_by([("__row", "ascending")])
        return out.drop_columns(["__row"]) if "__row" in out.column_names else out

    def read_history(self, version: int, b_lo: int, b_hi: int, seq_base: int = 0) -> pa.Table:
        reads = []
        for i, (sdb, st, names) in enumerate(self.parts):
            v = self.version_at(i, version) if self.clock else version
            if v < 0:
                reads.append(st_empty(self.lake, sdb, st))
                continue
            buckets = None if self.clock else (b_lo, b_hi)
            reads.append(
                self.lake.read(
                    sdb, st, version=v, buckets=buckets, tbnames=names if st.kind == "super" else None
                )
            )
        t = self._virtual_rows(self._rows(reads), None)
        if t.num_rows:
            t = t.sort_by([(self.shape.columns[0].physical, "ascending"), ("tbname", "ascending")])
        at = (
            version
            if self.clock
            else self.lake.commit_time_ms(self.parts[0][0].name, self.parts[0][1].name, version)
        )
        return self._logical(t, history_meta(t.num_rows, version, seq_base, at if t.num_rows else 0))

    def read_changes(self, start: int, end: int, *, ordered: bool = True) -> pa.Table:
        reads = []
        for i, (sdb, st, _) in enumerate(self.parts):
            v0, v1 = (self.version_at(i, start), self.version_at(i, end)) if self.clock else (start, end)
            reads.append(
                self.lake.changes(sdb, st, max(v0, 0), v1)
                if v1 > max(v0, 0)
                else changes_empty(self.lake, sdb, st)
            )
        t = self._virtual_rows(self._rows(reads), (start, end))
        return self._changes_out(t, start, end, ordered)


def change_codes(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The change feed's ``_change_type`` strings as ``CHANGE_CODES`` (int8 per row), in one
    pass over the column's distinct values.

    Raises:
        KeyError: a change type Delta's change data feed does not define.
    """
    if len(col) == 0:
        return np.empty(0, np.int8)
    enc = pc.dictionary_encode(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    lut = np.array([CHANGE_CODES[c] for c in enc.dictionary.to_pylist()], np.int8)
    return lut[enc.indices.to_numpy(zero_copy_only=False)]


def st_empty(lake: Lake, db: Database, table: Table) -> pa.Table:
    """No rows of a storage table (engine form)."""
    return engine_schema(db, table.columns).empty_table()


def changes_empty(lake: Lake, db: Database, table: Table) -> pa.Table:
    """No change rows of a storage table (engine form with the change columns)."""
    return lake.changes(db, table, 0, 0)


HISTORY_ROWS_PER_BATCH = 1_000_000


def next_offset(
    reader: ChangeReader,
    start: dict[str, int],
    *,
    max_rows: int = HISTORY_ROWS_PER_BATCH,
    max_versions: int = 1000,
    skip_history: bool = False,
) -> dict[str, int]:
    """The end offset of the next micro-batch from ``start`` (equal to ``start`` when there is no
    new data). History advances whole time buckets, in time order, up to about ``max_rows`` rows
    (at least one bucket) and never past its own snapshot; the change feed advances at most
    ``max_versions`` versions. ``skip_history`` (the FILL_HISTORY catch-up was cancelled,
    ``streams_app.services.stream_control.stream_history_cancel``): an offset inside the snapshot
    ends it at once, ``{"v": H, "h": -1}``, and ``read_range`` reads nothing for that step, so
    the stream goes on with the changes after the snapshot version H."""
    v, h = int(start["v"]), int(start["h"])
    if h >= 0 and skip_history:
        return {"v": v, "h": -1}
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
    if reader.clock:  # commit times: every commit up to the latest
        return {"v": latest, "h": -1}
    return {"v": min(latest, v + max_versions), "h": -1}


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` (a reader's logical rows) in ``schema``, the logical schema a running stream began
    with: its fields by name, a field ``rows`` lacks as NULLs, fields ``rows`` has beyond it
    left out, each cast to its type. A trigger table altered while the stream runs (columns or
    tags added, dropped, VARCHAR widened) is so "ignored; no additional handling" (seed 002,
    "Database and Table Operations"): the stream reads the rows it began with.

    Raises:
        pa.ArrowInvalid: a value that does not fit the type the stream began with.
    """
    if rows.schema.equals(schema):
        return rows
    n = rows.num_rows
    cols = [
        rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def read_range(
    reader: ChangeReader,
    start: dict[str, int],
    end: dict[str, int],
    *,
    ignore_until: int | None = None,
    skip_history: bool = False,
    ordered: bool = True,
) -> pa.Table:
    """Rows between two offsets (see module docstring); changes of versions ``<= ignore_until``
    are skipped (RESUME STREAM ... IGNORE UNTREATED, seed 000); with ``skip_history`` the
    snapshot's buckets from ``start`` to its end are not read (a cancelled catch-up,
    ``next_offset``). With ``ordered`` False, change rows come in the order they were read
    and only ``_seq`` gives their arrival order (``ChangeReader.read_changes``)."""
    v0, h0 = int(start["v"]), int(start["h"])
    v1, h1 = int(end["v"]), int(end["h"])
    if h0 >= 0 and h1 < 0 and skip_history:
        return reader.schema().empty_table()
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
    return reader.read_changes(v0, v1, ordered=ordered)


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
