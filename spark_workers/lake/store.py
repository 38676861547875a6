"""Time-series tables as Delta Lake tables (delta-rs), with TDengine's row key.

Layout: one Delta table per supertable (all its subtables' rows, with a ``tbname`` column) and per
normal table, at ``<lake>/<db>/<table>``; partitioned by ``_bucket = floor(ts / DURATION)`` (the
database's DURATION option, TDengine's "time span of one data file"), never by ``tbname``; rows
of each write sorted by the row key. The change data feed is on.

Row key (seed 000: "a later write of the same key overwrites"): ``(tbname, ts)``, or
``(tbname, ts, key)`` for a table whose second column is a composite key (``PRIMARY KEY`` /
``COMPOSITE KEY``, TDengine 3.3+, :func:`key_column`): two rows with the same timestamp and
different keys are two rows. A write whose rows are all later than every stored row of their
partitions is a plain append; otherwise it is a MERGE that updates rows whose values changed
(identical re-writes change nothing, so the change feed shows no update) and inserts the rest.
Deletes are by time range and optional tbnames: every key at a deleted timestamp goes (TDengine
deletes by time range only). Reads come sorted by the row key.

At this module's boundary, timestamps are int64 epoch values in the database precision ("engine
form"); in storage they are ``timestamp[us, UTC]`` (int64 ns for ns databases).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import posixpath
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError

from spark_workers.errors import Code, LakeError, TdError
from spark_workers.lake import location
from spark_workers.lake.catalog import Catalog, Column, Database, Table
from spark_workers.lake.keys import key_column, row_key
from spark_workers.lake.names import storage_key

log = logging.getLogger(__name__)

CDF_CONFIG = {"delta.enableChangeDataFeed": "true"}
CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_US_PER = {"ms": 1000, "us": 1}
_FIRST_COMMIT = "00000000000000000000.json"
_COMMIT_ATTEMPTS = 12
SNAPSHOT_REOPEN_VERSIONS = 20
"""A cached ``DeltaTable`` brought forward this many versions since it was opened is opened
afresh (:meth:`Lake.delta`) instead of updated once more: delta-rs's incremental update (1.6)
keeps native memory (its own jemalloc, unseen by tracemalloc and glibc's statistics) for every
commit it applies, checkpoints or not, until the table is compacted, while a fresh open starts
from the last checkpoint (measured in one process writing 1,000 small appends through one Lake:
+59 MB without this bound, +17 MB with it; docs/PERFORMANCE.md, "Worker memory soak", where the
20-minute soak did not show the worker's growth to come from this). So a handle keeps at most
about 20 commits' worth. Cost: one fresh open per 20 commits of a table, 10-15 ms on a local
lake (the last checkpoint and the commit files after it; delta-rs writes a checkpoint every 100
commits), under 1 ms per commit."""
CHECKPOINT_INTERVAL = SNAPSHOT_REOPEN_VERSIONS
"""``delta.checkpointInterval`` of the tables the lake creates (Delta's default is 100). A
commit through delta-rs (1.6) costs more the more commit files its handle holds since the last
checkpoint; with a checkpoint every 20 commits, as often as :meth:`Lake.delta` reopens a handle,
10,000-row appends cost 10.6 ms on average over 300 commits against 15.9 ms at 100, the
checkpoint itself included (docs/PERFORMANCE.md, "REST and line-protocol ingest"). Tables
created before keep the interval they were created with."""
TABLE_CONFIG = {**CDF_CONFIG, "delta.checkpointInterval": str(CHECKPOINT_INTERVAL)}
_T = TypeVar("_T")


def _lost_race(e: Exception) -> bool:
    """True when a delta-rs error says another writer committed the version first (its text:
    "version ... already exists" / "Transaction failed" / "concurrent")."""
    text = str(e).lower()
    return "already exists" in text or "concurrent" in text or "transaction failed" in text


@dataclass(frozen=True)
class WriteResult:
    """Outcome of a write: the Delta ``version`` it produced (None if nothing changed) and counts."""

    version: int | None
    rows: int
    mode: str  # "append", "merge", "delete", "noop"
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


def storage_schema(db: Database, columns: tuple[Column, ...]) -> pa.Schema:
    """Physical Arrow schema of a data table: ``tbname``, the columns, ``_bucket``."""
    fields = [pa.field("tbname", pa.string())]
    fields += [pa.field(c.physical, c.type.arrow(db.precision)) for c in columns]
    fields.append(pa.field("_bucket", pa.int64()))
    return pa.schema(fields)


def engine_schema(db: Database, columns: tuple[Column, ...]) -> pa.Schema:
    """Arrow schema of rows in engine form: timestamps as int64 in the database precision."""
    fields = [pa.field("tbname", pa.string())]
    for c in columns:
        t = pa.int64() if c.type.name == "TIMESTAMP" else c.type.arrow(db.precision)
        fields.append(pa.field(c.physical, t))
    return pa.schema(fields)


def to_storage(data: pa.Table, db: Database, columns: tuple[Column, ...]) -> pa.Table:
    """Engine form (int64 timestamps) -> storage form, with ``_bucket``; casts every column to its
    storage type (raises ``pa.ArrowInvalid`` on overflow)."""
    arrays = [data.column("tbname").cast(pa.string())]
    bucket_len = db.duration.in_precision(db.precision)
    ts_name = columns[0].physical
    ts64 = data.column(ts_name).cast(pa.int64())
    for c in columns:
        col = data.column(c.physical)
        if c.type.name == "TIMESTAMP":
            col = col.cast(pa.int64())
            if db.precision != "ns":
                col = pc.multiply(col, _US_PER[db.precision]).cast(pa.timestamp("us", tz="UTC"))
        else:
            col = col.cast(c.type.arrow(db.precision))
        arrays.append(col)
    ts_np = ts64.to_numpy(zero_copy_only=False)
    arrays.append(pa.array(np.floor_divide(ts_np, bucket_len), pa.int64()))
    return pa.Table.from_arrays(arrays, schema=storage_schema(db, columns))


def to_engine(data: pa.Table, db: Database, columns: tuple[Column, ...]) -> pa.Table:
    """Storage form -> engine form: timestamps to int64 precision units; drops ``_bucket``; keeps
    change-feed columns if present; string views become plain strings."""
    out_cols, names = [], []
    by_phys = {c.physical: c for c in columns}
    for name in data.column_names:
        if name == "_bucket":
            continue
        col = data.column(name)
        if name == "_commit_timestamp":  # arrival time of a change: epoch milliseconds
            out_cols.append(col.cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()))
            names.append(name)
            continue
        c = by_phys.get(name)
        if c is not None and c.type.name == "TIMESTAMP" and db.precision != "ns":
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
            if db.precision == "ms":  # stored values are whole milliseconds: exact division
                col = pc.divide(col, 1000)
        elif pa.types.is_string_view(col.type) or pa.types.is_large_string(col.type):
            col = col.cast(pa.string())
        out_cols.append(col)
        names.append(name)
    return pa.Table.from_arrays(out_cols, names=names)


def _delta_shaped(dt: DeltaTable, stored: pa.Table) -> pa.Table:
    """``stored`` in the field order of the Delta table's schema, with NULLs for the fields of
    columns dropped from the catalog (ALTER ... DROP COLUMN keeps them in the Delta schema:
    :meth:`Lake.delta_field_names`). Unchanged when the schemas hold the same names."""
    schema = pa.schema(dt.schema().to_arrow())
    if set(schema.names) == set(stored.column_names):
        return stored
    cols = [
        stored.column(f.name) if f.name in stored.column_names else pa.nulls(stored.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, names=schema.names)


def dedupe_last(data: pa.Table, ts_name: str, key_name: str | None = None) -> pa.Table:
    """Keep the last row of each (tbname, ts[, key]) in input order (a later write overwrites),
    sorted by (tbname, ts[, key]). ``key_name`` is the composite key column (no NULLs).
    O(n log n)."""
    n = data.num_rows
    if n <= 1:
        return data
    tb = pc.dictionary_encode(data.column("tbname")).combine_chunks()
    codes = tb.indices.to_numpy(zero_copy_only=False)
    # sort dictionary so code order == name order
    dict_sorted = np.argsort(np.asarray(tb.dictionary.to_pylist(), dtype=object))
    rank = np.empty_like(dict_sorted)
    rank[dict_sorted] = np.arange(len(dict_sorted))
    codes = rank[codes]
    ts = data.column(ts_name).cast(pa.int64()).to_numpy(zero_copy_only=False)
    idx = np.arange(n)
    if key_name is None:
        order = np.lexsort((idx, ts, codes))
        c_s, t_s = codes[order], ts[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = (c_s[1:] != c_s[:-1]) | (t_s[1:] != t_s[:-1])
        return data.take(pa.array(order[last]))
    # dense ranks keep the key's own order (integers numerically, strings by their bytes)
    krank = pc.rank(data.column(key_name).combine_chunks(), sort_keys="ascending", tiebreaker="dense")
    k = krank.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((idx, k, ts, codes))
    c_s, t_s, k_s = codes[order], ts[order], k[order]
    last = np.ones(n, dtype=bool)
    last[:-1] = (c_s[1:] != c_s[:-1]) | (t_s[1:] != t_s[:-1]) | (k_s[1:] != k_s[:-1])
    return data.take(pa.array(order[last]))


class _Pending:
    """One writer's checked batch waiting in a table's group commit: ``stored`` in storage form;
    ``outcome`` is set (under the group's condition) when the commit that holds it is over."""

    def __init__(self, db: Database, table: Table, stored: pa.Table) -> None:
        self.db = db
        self.table = table
        self.stored = stored
        self.done = False
        self.outcome: WriteResult | BaseException | None = None

    def result(self) -> WriteResult:
        """This batch's WriteResult (its own row count), or the group's error raised again (a
        fresh ``LakeError`` with the same code and message for a ``TdError``)."""
        out = self.outcome
        if isinstance(out, WriteResult):
            return WriteResult(
                out.version, self.stored.num_rows, out.mode, out.inserted, out.updated, out.deleted
            )
        if isinstance(out, TdError):
            raise LakeError(out.message, code=out.code) from out
        if isinstance(out, Exception):
            raise LakeError("write failed; nothing was written") from out
        assert out is not None
        raise out


class _Group:
    """Group-commit state of one table in one process: the writers waiting (``queue``, arrival
    order), whether a commit is in flight (``busy``), the commits made (``commits``); all guarded
    by ``cond``."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.queue: list[_Pending] = []
        self.busy = False
        self.commits = 0


class Lake:
    """The lake: catalog plus Delta tables under one root, a local folder or an object-store URL
    (:mod:`spark_workers.lake.location`).

    Args:
        root: ``TDWEB_LAKE``: a folder (created if missing) or ``s3://bucket/prefix`` etc.
        catalog_url: ``TDWEB_CATALOG_URL``: empty / None for the SQLite catalog in the lake's
            local folder, or a ``postgres://`` URL of the shared catalog (``Catalog``).
        local_dir: for a remote lake, the ``TDWEB_VAR`` folder under which its local folder
            (SQLite catalog, stream checkpoints) lives; default ``$TDWEB_VAR``.

    Attributes:
        uri: the lake's URI (absolute path for a local lake); tables are ``<uri>/<db>/<table>``.
        root: the local folder: the lake folder itself, or ``location.local_root`` when remote.

    Thread-safe; several processes on several hosts may write the same tables: a commit that
    lost the race to another writer is retried on the new snapshot (Delta optimistic
    concurrency, :meth:`_committing`). Correctness takes no lock; writers of one table in the
    processes of one host (several web processes) also queue on an advisory ``flock`` of a file
    in the lake's local folder (:meth:`_thread_lock`), because a lost race costs a written and
    abandoned Parquet file and a back-off. The catalog uses SQLite or PostgreSQL transactions.
    """

    def __init__(
        self, root: str | Path, catalog_url: str | None = None, *, local_dir: str | Path | None = None
    ) -> None:
        self.uri = location.normalize(root)
        self.remote = location.is_remote(self.uri)
        self.root = location.local_root(self.uri, local_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._locks = self.root / ".locks"  # the writers' advisory lock files (_thread_lock)
        self._locks.mkdir(exist_ok=True)
        self.storage_options = location.storage_options(self.uri)
        self.fs, self._fs_base = location.filesystem(self.uri)
        self.catalog = Catalog(self.root, catalog_url)
        # table uri -> (handle, identity of its first commit, version the handle was opened at)
        self._tables: dict[str, tuple[DeltaTable, tuple[int, int] | None, int]] = {}
        self._lock = threading.Lock()
        self._thread_locks: dict[str, threading.Lock] = {}
        self._groups: dict[str, _Group] = {}
        self.commit_retries = 0  # commits retried after losing to another writer (all tables)

    # ------------------------------------------------------------------ paths and handles
    def database_uri(self, db: str) -> str:
        """Location of a database's tables: ``<uri>/<storage key of db>``.

        Raises:
            LakeError: the location would not lie strictly under the lake root, or would be one
                of the lake's own ``_`` entries (catalog, stream checkpoints); nothing is touched.
        """
        return self._contained(self._keyed(self.uri, db))

    def table_uri(self, db: str, storage: str) -> str:
        """Location of the Delta table holding ``storage`` rows: ``<uri>/<db key>/<table key>``
        (keys from :func:`spark_workers.lake.names.storage_key`; checked as ``database_uri``)."""
        return self._contained(self._keyed(self.database_uri(db), storage))

    def database_path(self, db: str) -> Path:
        """:meth:`database_uri` as a Path (local lakes; used by tests and tools)."""
        return Path(self.database_uri(db))

    def table_path(self, db: str, storage: str) -> Path:
        """:meth:`table_uri` as a Path (local lakes; used by tests and tools)."""
        return Path(self.table_uri(db, storage))

    def _fs_path(self, uri: str) -> str:
        """A location under the lake -> its path in ``self.fs``."""
        return self._fs_base + uri[len(self.uri) :]

    def _is_dir(self, uri: str) -> bool:
        return bool(self.fs.get_file_info(self._fs_path(uri)).type == pafs.FileType.Directory)

    def _keyed(self, parent: str, name: str) -> str:
        """``parent/<storage key of name>``; a folder an older tdweb made under the lower-cased
        name itself is kept (no data is lost) when that name is a single, ordinary path component
        and no folder under the new key exists."""
        key = storage_key(name)
        path = location.join(parent, key)
        legacy = name.lower()
        if (
            key != legacy
            and legacy not in (".", "..")
            and "/" not in legacy
            and os.sep not in legacy
            and "\x00" not in legacy
            and not self._is_dir(path)
            and self._is_dir(location.join(parent, legacy))
        ):
            return location.join(parent, legacy)
        return path

    def _contained(self, path: str | Path) -> str:
        """``path`` if it lies strictly under the lake root and outside its ``_`` entries (local
        lakes: after resolving links)."""
        text = str(path)
        if self.remote:
            inside = text.startswith(self.uri + "/")
            rel = posixpath.normpath(text[len(self.uri) + 1 :]) if inside else ".."
            sep = "/"
        else:
            rel = os.path.relpath(os.path.realpath(text), os.path.realpath(self.uri))
            sep = os.sep
        if rel == "." or rel.startswith("..") or os.path.isabs(rel) or rel.split(sep)[0].startswith("_"):
            log.error("refused storage path %s: outside the lake's data folders", text)
            raise LakeError("the name does not map to a storage path inside the lake")
        return text

    def exists(self, db: str, storage: str) -> bool:
        return self._is_dir(location.join(self.table_uri(db, storage), "_delta_log"))

    def _identity(self, uri: str) -> tuple[int, int] | None:
        """Identity of a Delta table's first commit file (modification time in ns, size): changes
        when the table is re-created."""
        info = self.fs.get_file_info(self._fs_path(location.join(uri, "_delta_log", _FIRST_COMMIT)))
        if info.type == pafs.FileType.NotFound:
            return None
        return (int(info.mtime_ns or 0), int(info.size or 0))

    def _open(self, uri: str, version: int | None = None) -> DeltaTable:
        return DeltaTable(uri, version=version, storage_options=self.storage_options or None)

    def delta(self, db: str, storage: str, *, refresh: bool = True) -> DeltaTable:
        """Cached ``DeltaTable`` handle, brought up to the latest version when ``refresh``.

        A table dropped and created again under the same name (DROP DATABASE, then CREATE) is
        detected by the identity of its first commit file, and the handle is reloaded. A handle
        that has moved :data:`SNAPSHOT_REOPEN_VERSIONS` or more versions past the one it was
        opened at is replaced by a fresh one at the latest version instead of updated (the same
        snapshot; it bounds the native memory incremental updates keep).
        """
        uri = self.table_uri(db, storage)
        ident = self._identity(uri)
        with self._lock:
            cached = self._tables.get(uri)
        dt = None
        if cached is not None and cached[1] == ident:
            dt = cached[0]
            if refresh and int(dt.version()) - cached[2] >= SNAPSHOT_REOPEN_VERSIONS:
                dt = None
        if dt is None:
            if ident is None and not self.exists(db, storage):
                raise LakeError(f"table {db}.{storage} has no data store")
            dt = self._cache(uri, ident)
        elif refresh and self._log_has(uri, int(dt.version()) + 1):
            try:
                dt.update_incremental()
            except Exception:
                dt = self._cache(uri, ident)
        return dt

    def _cache(self, uri: str, ident: tuple[int, int] | None) -> DeltaTable:
        """A fresh handle of the latest version of ``uri``, cached for :meth:`delta`."""
        dt = self._open(uri)
        with self._lock:
            self._tables[uri] = (dt, ident, int(dt.version()))
        return dt

    def _log_has(self, uri: str, version: int) -> bool:
        """Is ``version``'s commit file in the Delta log of ``uri``? One stat (one HEAD on an
        object store): a handle at version ``v`` is the latest exactly when ``v + 1`` is not
        there (versions are consecutive), so :meth:`delta` skips delta-rs's
        ``update_incremental`` (a log listing, 1-9 ms and growing with the table) when nothing
        was committed since."""
        info = self.fs.get_file_info(self._fs_path(location.join(uri, "_delta_log", f"{version:020d}.json")))
        return info.type != pafs.FileType.NotFound

    def has_version(self, db: str, storage: str, version: int) -> bool:
        """True when Delta ``version`` of a data table is committed (its log file exists): one stat
        (one HEAD on an object store) instead of :meth:`version`'s log read. A missing table is
        False. Cost: about 10 us on a local disk."""
        return self._log_has(self.table_uri(db, storage), version)

    def version(self, db: str, storage: str) -> int:
        """Latest Delta version of a data table."""
        return int(self.delta(db, storage).version())

    @contextmanager
    def _thread_lock(self, db: str, storage: str) -> Iterator[None]:
        """Serialise this process's writers of one table, and queue them behind the writers of
        the same table in other processes of this host (an exclusive ``flock`` of
        ``<local folder>/.locks/<hash of the table's location>.lock``, released when the block ends or the
        process dies). Other hosts are kept apart by Delta's optimistic concurrency
        (:meth:`_committing`), which stays the guarantee: the lock only spares the losing
        writer's wasted attempt."""
        key = self.table_uri(db, storage)
        with self._lock:
            tl = self._thread_locks.setdefault(key, threading.Lock())
        with tl:
            name = hashlib.sha256(key.encode()).hexdigest()[:32]  # any table name, one flat file
            fd = os.open(self._locks / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the flock

    def _committing(self, what: str, attempt: Callable[[], _T]) -> _T:
        """Run ``attempt`` (read the latest snapshot, decide, commit exactly on top of it) until
        it commits; an attempt that lost the race to another writer's commit
        (``CommitFailedError``) is run again on the new snapshot, at most ``_COMMIT_ATTEMPTS``
        times, with a random back-off of up to 25 ms x 2^n.

        Raises:
            LakeError: every attempt lost (the table is written faster than it can commit).
        """
        for n in range(_COMMIT_ATTEMPTS):
            try:
                return attempt()
            except CommitFailedError as e:
                self.commit_retries += 1
                log.info("%s lost a commit race (attempt %d): %s", what, n + 1, e)
                time.sleep(random.uniform(0, 0.025 * (2 ** min(n, 6))))
        raise LakeError(f"{what} failed: {_COMMIT_ATTEMPTS} commits in a row lost to concurrent writers")

    # ------------------------------------------------------------------ DDL
    def create_table(self, db: Database, table: Table, *, if_not_exists: bool = False) -> bool:
        """Create a supertable or normal table: its catalog entry and its (empty) Delta table, all
        or nothing (when the storage cannot be created, the catalog entry is removed again).

        Returns:
            False when it existed and ``if_not_exists`` (nothing changed).

        Raises:
            CatalogError: the name is taken; LakeError: the storage path is not a lake path.
        """
        if not self.catalog.create_table(table, if_not_exists=if_not_exists, now_ms=int(time.time() * 1000)):
            return False
        try:
            self.create_storage(db, table)
        except BaseException:
            self.catalog.drop_table(db.name, table.name)
            raise
        return True

    def create_storage(self, db: Database, table: Table) -> None:
        """Create the (empty) Delta table for a supertable or normal table (a leftover table at
        its location is removed first)."""
        uri = self.table_uri(db.name, table.name)
        if self._is_dir(location.join(uri, "_delta_log")):
            self._remove(uri)
        if not self.remote:
            os.makedirs(os.path.dirname(uri), exist_ok=True)
        DeltaTable.create(
            uri,
            storage_schema(db, table.columns),
            partition_by=["_bucket"],
            configuration=TABLE_CONFIG,
            name=table.name,
            storage_options=self.storage_options or None,
        )

    def add_columns(self, db: Database, table: Table, columns: tuple[Column, ...]) -> int:
        """ALTER STABLE / TABLE ... ADD COLUMN: add nullable fields (physical names, storage
        types) to the Delta table of ``table`` with ``DeltaTable.alter.add_columns`` (Delta schema
        evolution: a metadata-only commit, no data file rewritten and no change-feed rows, so a
        stream over the table sees no change: seed 002 "Database and Table Operations"); rows
        written before read NULL in them. Returns the new Delta version.

        Raises:
            LakeError: the table has no data store, or delta-rs refused the change.
        """
        fields = DeltaSchema.from_arrow(
            pa.schema([pa.field(c.physical, c.type.arrow(db.precision)) for c in columns])
        ).fields

        def attempt() -> int:
            dt = self.delta(db.name, table.name)
            dt.alter.add_columns(fields, commit_properties=CommitProperties(max_commit_retries=0))
            return int(dt.version())

        with self._thread_lock(db.name, table.name):
            try:
                return self._committing(f"add columns to {db.name}.{table.name}", attempt)
            except LakeError:
                raise
            except Exception as e:  # delta-rs's own error types; the text stays in the log
                log.exception("add columns to %s.%s failed", db.name, table.name)
                raise LakeError(f"adding columns to {db.name}.{table.name} failed; nothing changed") from e

    def delta_field_names(self, db: str, storage: str) -> set[str]:
        """Every field name of the Delta table's schema: the physical names of its current
        columns and of columns dropped since (ALTER ... DROP COLUMN keeps the data files and only
        forgets the column in the catalog, so a physical name is never used twice)."""
        return set(pa.schema(self.delta(db, storage).schema().to_arrow()).names)

    def _remove(self, uri: str) -> None:
        """Delete everything at a location under the lake (missing is fine)."""
        with self._lock:
            for k in [k for k in self._tables if k == uri or k.startswith(uri + "/")]:
                self._tables.pop(k, None)
        with suppress(FileNotFoundError):
            self.fs.delete_dir(self._fs_path(uri))

    def drop_storage(self, db: str, storage: str) -> None:
        """Remove a data table's files (after the catalog entry is gone)."""
        self._remove(self.table_uri(db, storage))

    def drop_database_storage(self, db: str) -> None:
        """Remove a database's tables (after its catalog entry is gone)."""
        self._remove(self.database_uri(db))

    # ------------------------------------------------------------------ writes
    def write(
        self,
        db: Database,
        table: Table,
        data: pa.Table,
        *,
        txn: tuple[str, int] | None = None,
        replace_times: bool = False,
    ) -> WriteResult:
        """Upsert rows into a data table under its row key: (tbname, ts), or (tbname, ts, key)
        when the table has a composite key column (module docstring).

        Args:
            db: the database (precision, duration).
            table: the storage table (supertable or normal table).
            data: engine-form rows: ``tbname`` plus physical column names; missing columns are
                NULL; timestamps int64 in the database precision.
            txn: optional ``(app_id, version)`` recorded atomically with the commit (Delta
                ``txn`` action); a write whose app version is not newer than the recorded one is
                skipped (idempotent streaming writes).
            replace_times: with a composite key, the rows of ``data`` replace every stored row of
                their (tbname, ts), whatever its key, in the same commit (a legacy stream's
                updated window replaces its result row even when the key column changed).

        Returns:
            WriteResult with the new Delta version.

        Raises:
            LakeError: the write failed, or a row's composite key is NULL (TDengine: "Primary key
                column should not be null"); nothing was committed.
        """
        if data.num_rows == 0:
            return WriteResult(None, 0, "noop")
        data = self._complete(db, table, data)
        ts_name = table.columns[0].physical
        key = key_column(table)
        if key is not None and data.column(key.physical).null_count:
            raise LakeError(
                f"the composite key column {key.name} of {table.name} cannot be NULL",
                code=Code.PRIMARY_KEY_IS_NULL,
            )
        if txn is None and not replace_times:
            return self._group_write(db, table, to_storage(data, db, table.columns))
        data = dedupe_last(data, ts_name, key.physical if key is not None else None)
        stored = to_storage(data, db, table.columns)
        with self._thread_lock(db.name, table.name):
            return self._committing(
                f"write to {db.name}.{table.name}",
                lambda: self._write_once(db, table, data, stored, txn, replace_times),
            )

    def _group(self, db: str, storage: str) -> _Group:
        """The group-commit state of one table in this process (created on first use)."""
        key = self.table_uri(db, storage)
        with self._lock:
            return self._groups.setdefault(key, _Group())

    def _group_write(self, db: Database, table: Table, stored: pa.Table) -> WriteResult:
        """Group commit (docs/architecture.md, "Group commit"): queue ``stored`` (one writer's
        checked batch, storage form, not deduplicated) on the table's group; while a commit is in
        flight, later writers wait; the next leader takes every queued batch of the same table
        schema, in arrival order, and commits them as one Delta version (:meth:`_commit_group`:
        the later row of a key wins, as if the writes had run one after the other). Returns after
        the commit that holds the batch succeeded (durable acknowledgement).

        Returns:
            WriteResult: the group's version and mode, this batch's row count (``inserted`` /
            ``updated`` are the group's).

        Raises:
            LakeError: the group's commit failed: every member gets the same code and message;
            nothing of the group was written.
        """
        g = self._group(db.name, table.name)
        me = _Pending(db, table, stored)
        with g.cond:
            g.queue.append(me)
        while True:
            with g.cond:
                while g.busy and not me.done:
                    g.cond.wait()
                if me.done:
                    break
                g.busy = True
                first = g.queue[0]
                n = 1
                while n < len(g.queue) and g.queue[n].table.columns == first.table.columns:
                    n += 1
                members = g.queue[:n]
                del g.queue[:n]
            outcome: WriteResult | BaseException
            try:
                outcome = self._commit_group(members)
            except BaseException as e:  # every member of the group gets it
                outcome = e
            finally:
                with g.cond:
                    for m in members:
                        m.outcome = outcome
                        m.done = True
                    g.commits += 1
                    g.busy = False
                    g.cond.notify_all()
        return me.result()

    def _commit_group(self, members: list[_Pending]) -> WriteResult:
        """Commit the batches of ``members`` (same table, arrival order) as one Delta version:
        concatenated, the last row of each row key kept, then append or MERGE as one write."""
        first = members[0]
        db, table = first.db, first.table
        stored = (
            first.stored
            if len(members) == 1
            else pa.concat_tables([m.stored for m in members], promote_options="default")
        )
        key = key_column(table)
        stored = dedupe_last(stored, table.columns[0].physical, key.physical if key is not None else None)
        with self._thread_lock(db.name, table.name):
            return self._committing(
                f"write to {db.name}.{table.name}",
                lambda: self._write_once(db, table, None, stored, None, False),
            )

    def _write_once(
        self,
        db: Database,
        table: Table,
        data: pa.Table | None,
        stored: pa.Table,
        txn: tuple[str, int] | None,
        replace_times: bool,
    ) -> WriteResult:
        """One attempt of :meth:`write` on the latest snapshot ``v``: it commits version
        ``v + 1`` or raises ``CommitFailedError`` (no silent rebase: the append-or-merge choice,
        the stale keys and the ``txn`` check were made on ``v``)."""
        dt = self.delta(db.name, table.name)
        base = int(dt.version())
        commit = CommitProperties(max_commit_retries=0)
        if txn is not None:
            done = dt.transaction_version(txn[0])
            if done is not None and done >= txn[1]:
                return WriteResult(None, stored.num_rows, "noop")
            commit = CommitProperties(
                app_transactions=[Transaction(app_id=txn[0], version=txn[1])], max_commit_retries=0
            )
        ts_name = table.columns[0].physical
        stored = _delta_shaped(dt, stored)
        try:
            if self._append_safe(dt, stored, ts_name):
                write_deltalake(dt, stored, mode="append", partition_by=["_bucket"], commit_properties=commit)
                return WriteResult(base + 1, stored.num_rows, "append", inserted=stored.num_rows)
            stale = (
                self._stale_keys(db, table, data, version=base)
                if replace_times and data is not None
                else None
            )
            stale = _delta_shaped(dt, stale) if stale is not None else None
            metrics = self._merge(dt, stored, table, commit, stale)
        except (LakeError, CommitFailedError):
            raise
        except Exception as e:  # delta-rs raises its own error types; their text stays in the log
            if _lost_race(e):
                raise CommitFailedError(str(e)) from e
            log.exception("write to %s.%s failed", db.name, table.name)
            raise LakeError(f"write to {db.name}.{table.name} failed; nothing was written") from e
        ins = int(metrics.get("num_target_rows_inserted", 0))
        upd = int(metrics.get("num_target_rows_updated", 0))
        dele = int(metrics.get("num_target_rows_deleted", 0))
        if ins == 0 and upd == 0 and dele == 0 and txn is None:
            return WriteResult(None, stored.num_rows, "noop")
        return WriteResult(base + 1, stored.num_rows, "merge", inserted=ins, updated=upd, deleted=dele)

    def _merge(
        self,
        dt: DeltaTable,
        stored: pa.Table,
        table: Table,
        commit: CommitProperties | None,
        stale: pa.Table | None,
    ) -> dict[str, Any]:
        """MERGE storage-form rows under the row key: changed rows updated, new rows inserted;
        ``stale`` rows (storage form, same schema) are deleted in the same commit. Returns
        delta-rs's metrics."""
        changed = (
            " OR ".join(f'(t."{c.physical}" IS DISTINCT FROM s."{c.physical}")' for c in table.columns[1:])
            or "FALSE"
        )
        on = " AND ".join(f't."{k}" = s."{k}"' for k in row_key(table))
        source = stored
        if stale is not None and stale.num_rows:
            # tombstones travel in the source, marked, so the replacement is one commit
            source = pa.concat_tables([stored, stale]).append_column(
                "_del", pa.array([False] * stored.num_rows + [True] * stale.num_rows)
            )
        merger = dt.merge(
            source,
            predicate=f"t._bucket = s._bucket AND t.tbname = s.tbname AND {on}",
            source_alias="s",
            target_alias="t",
            commit_properties=commit,
        )
        if source is stored:
            merger = merger.when_matched_update_all(predicate=changed).when_not_matched_insert_all()
        else:
            merger = (
                merger.when_matched_delete(predicate="s._del")
                .when_matched_update_all(predicate=f"NOT s._del AND ({changed})", except_cols=["_del"])
                .when_not_matched_insert_all(predicate="NOT s._del", except_cols=["_del"])
            )
        return dict(merger.execute())

    def _stale_keys(
        self, db: Database, table: Table, data: pa.Table, *, version: int | None = None
    ) -> pa.Table | None:
        """Storage-form rows of ``table`` at a (tbname, ts) of ``data`` (engine form) whose
        composite key ``data`` does not hold: what a replacing write deletes. None without a
        composite key."""
        key = key_column(table)
        if key is None:
            return None
        ts_name = table.columns[0].physical
        ts = data.column(ts_name)
        tbnames = pc.unique(data.column("tbname")).to_pylist()
        current = self.read(
            db,
            table,
            version=version,
            tbnames=tbnames,
            ts_min=int(pc.min(ts).as_py()),
            ts_max=int(pc.max(ts).as_py()),
            columns=[ts_name, key.physical],
        )
        if current.num_rows == 0:
            return None
        written = data.select(["tbname", ts_name, key.physical])
        current = current.select(["tbname", ts_name, key.physical]).cast(written.schema)
        at_times = current.join(
            written.select(["tbname", ts_name]).group_by(["tbname", ts_name]).aggregate([]),
            keys=["tbname", ts_name],
            join_type="left semi",
        )
        stale = at_times.join(written, keys=["tbname", ts_name, key.physical], join_type="left anti")
        if stale.num_rows == 0:
            return None
        return to_storage(self._complete(db, table, stale), db, table.columns)

    def _complete(self, db: Database, table: Table, data: pa.Table) -> pa.Table:
        """Add missing columns as NULLs and order columns as stored."""
        schema = engine_schema(db, table.columns)
        cols = []
        for f in schema:
            if f.name in data.column_names:
                cols.append(data.column(f.name))
            else:
                cols.append(pa.nulls(data.num_rows, f.type))
        return pa.Table.from_arrays(cols, names=schema.names)

    def _append_safe(self, dt: DeltaTable, stored: pa.Table, ts_name: str) -> bool:
        """True when no new row can meet a stored row under the row key, so that an append leaves
        the table (and its change feed: inserts only) as the MERGE would. Judged from the Delta
        log's per-file statistics first: every new row is later than the stored rows of its
        partition, or, per (partition, subtable), later than every file whose tbname range can
        hold that subtable (``_files_to_check``: many subtables written at the same times, a
        fleet's usual pattern). Where the statistics cannot tell (a file's tbname range spans
        other subtables written later, as group commits of several clients write), the (tbname,
        time) columns of the files that could hold a meeting row are read and joined with the new
        rows (:meth:`_keys_met`), when they are at most ``EXACT_FILES_MAX`` files of at most
        ``EXACT_ROWS_MAX`` rows; otherwise False (the write merges)."""
        if dt.version() == 0 and not dt.file_uris():
            return True
        actions = pa.table(dt.get_add_actions(flatten=True))
        if actions.num_rows == 0:
            return True
        max_col = f"max.{ts_name}"
        if max_col not in actions.column_names or "partition._bucket" not in actions.column_names:
            return False
        if actions.column(max_col).null_count:
            return False
        file_bucket = actions.column("partition._bucket").to_numpy(zero_copy_only=False)
        file_max = actions.column(max_col).cast(pa.int64()).to_numpy(zero_copy_only=False)
        if pa.types.is_timestamp(actions.schema.field(max_col).type):
            # delta-rs writes timestamp statistics cut to the millisecond: a file's latest row may
            # be up to 999 us after its statistic (a database of PRECISION 'us')
            file_max = file_max + _STATS_TS_SLACK[actions.schema.field(max_col).type.unit]
        new_bucket = stored.column("_bucket").to_numpy(zero_copy_only=False)
        new_ts = stored.column(ts_name).cast(pa.int64()).to_numpy(zero_copy_only=False)
        for b in np.unique(new_bucket):
            in_files = file_max[file_bucket == b]
            if in_files.size and new_ts[new_bucket == b].min() <= in_files.max():
                check = _files_to_check(actions, file_bucket, file_max, stored, new_bucket, new_ts)
                if check is None:
                    return False
                return not check.any() or not self._keys_met(dt, actions, check, stored, ts_name)
        return True

    def _keys_met(
        self, dt: DeltaTable, actions: pa.Table, check: np.ndarray, stored: pa.Table, ts_name: str
    ) -> bool:
        """Does a new row share (tbname, time) with a stored row of the files ``check`` marks
        (a boolean mask over ``actions``, the snapshot's add actions)? Reads only those files'
        ``tbname`` and time columns. True (so: merge) when they are more than ``EXACT_FILES_MAX``
        files or ``EXACT_ROWS_MAX`` rows, when a file cannot be paired with its statistics, or
        when reading fails. (tbname, time) is the row key, or a prefix of it with a composite key:
        no shared pair means no shared key."""
        picked = np.flatnonzero(check)
        if len(picked) > EXACT_FILES_MAX:
            return True
        if "num_records" in actions.column_names:
            counts = actions.column("num_records").to_numpy(zero_copy_only=False)[picked]
            if counts.sum() > EXACT_ROWS_MAX:
                return True
        uris = dt.file_uris()
        paths = actions.column("path").to_pylist()
        if len(uris) != len(paths):
            return True
        files = []
        for i in picked:
            if not uris[i].endswith(unquote(paths[i])):
                return True  # the lists are not in one order: cannot tell which file is which
            files.append(location.file_path(uris[i]))
        try:
            old = pads.dataset(files, format="parquet", filesystem=self.fs).to_table(
                columns=["tbname", ts_name]
            )
        except (OSError, pa.ArrowException):  # a file gone (compacted, vacuumed): let the MERGE decide
            return True
        keys = ["tbname", "ts"]
        old_keys = pa.table(
            [old.column("tbname").cast(pa.string()), old.column(ts_name).cast(pa.int64())], keys
        )
        new_keys = pa.table(
            [stored.column("tbname").cast(pa.string()), stored.column(ts_name).cast(pa.int64())], keys
        )
        return new_keys.join(old_keys, keys=keys, join_type="left semi").num_rows > 0

    def delete(
        self,
        db: Database,
        table: Table,
        *,
        ts_min: int | None,
        ts_max: int | None,
        tbnames: list[str] | None = None,
    ) -> WriteResult:
        """Delete rows with ``ts_min <= ts <= ts_max`` (inclusive, precision units; None = open)
        of the given tbnames (None = all) from a data table; with a composite key, every key at
        those timestamps (TDengine deletes by time range only, never by key)."""
        ts_name = table.columns[0].physical
        conds = []
        bucket_len = db.duration.in_precision(db.precision)
        if ts_min is not None:
            conds.append(f'"{ts_name}" >= {self._ts_literal(db, ts_min)}')
            conds.append(f"_bucket >= {ts_min // bucket_len}")
        if ts_max is not None:
            conds.append(f'"{ts_name}" <= {self._ts_literal(db, ts_max)}')
            conds.append(f"_bucket <= {ts_max // bucket_len}")
        if tbnames is not None:
            if not tbnames:
                return WriteResult(None, 0, "noop")
            quoted = ", ".join("'" + t.replace("'", "''") + "'" for t in tbnames)
            conds.append(f"tbname IN ({quoted})")
        predicate = " AND ".join(conds) if conds else None
        with self._thread_lock(db.name, table.name):
            return self._committing(
                f"delete from {db.name}.{table.name}", lambda: self._delete_once(db, table, predicate)
            )

    def _delete_once(self, db: Database, table: Table, predicate: str | None) -> WriteResult:
        """One attempt of :meth:`delete` on the latest snapshot ``v``: commits ``v + 1`` or
        raises ``CommitFailedError``."""
        dt = self.delta(db.name, table.name)
        base = int(dt.version())
        try:
            metrics = dt.delete(predicate, commit_properties=CommitProperties(max_commit_retries=0))
        except CommitFailedError:
            raise
        except Exception as e:
            if _lost_race(e):
                raise CommitFailedError(str(e)) from e
            log.exception("delete from %s.%s failed", db.name, table.name)
            raise LakeError(f"delete from {db.name}.{table.name} failed; nothing was deleted") from e
        n = int(metrics.get("num_deleted_rows", 0))
        return WriteResult(base + 1 if n else None, n, "delete" if n else "noop", deleted=n)

    @staticmethod
    def _ts_literal(db: Database, value: int) -> str:
        if db.precision == "ns":
            return str(value)
        us = value * _US_PER[db.precision]
        sec, frac = divmod(us, 1_000_000)
        t = time.gmtime(sec)
        return f"'{time.strftime('%Y-%m-%dT%H:%M:%S', t)}.{frac:06d}Z'"

    def compact(self, db: str, storage: str) -> int:
        """Rewrite small files of a data table into bigger ones (OPTIMIZE; no change-feed rows).
        Returns the number of files before."""
        with self._thread_lock(db, storage):
            return self._committing(f"compaction of {db}.{storage}", lambda: self._compact_once(db, storage))

    def _compact_once(self, db: str, storage: str) -> int:
        dt = self.delta(db, storage)
        before = len(dt.file_uris())
        try:
            dt.optimize.compact()
        except CommitFailedError:
            raise
        except Exception as e:
            if _lost_race(e):
                raise CommitFailedError(str(e)) from e
            raise
        return before

    # ------------------------------------------------------------------ reads
    def dataset(self, db: Database, table: Table, version: int | None = None) -> tuple[int, pads.Dataset]:
        """``(version, pyarrow Dataset)`` of a snapshot in storage form (for DuckDB scans).

        Built from the snapshot's file list with the declared storage schema (delta-rs writes
        strings as ``string_view``; scans cast them back, so filter pushdown sees one type).
        """
        ver, files = self.snapshot_files(db, table, version)
        ds = pads.dataset(
            files,
            schema=storage_schema(db, table.columns),
            format="parquet",
            filesystem=self.fs,
            partitioning=pads.partitioning(pa.schema([("_bucket", pa.int64())]), flavor="hive"),
            partition_base_dir=self._fs_path(self.table_uri(db.name, table.name)),
        )
        return ver, ds

    def snapshot_files(self, db: Database, table: Table, version: int | None = None) -> tuple[int, list[str]]:
        """``(version, Parquet file paths in self.fs)`` of a snapshot (the latest for None); for a
        local lake, ordinary file paths."""
        dt = self.delta(db.name, table.name)
        if version is not None and version != dt.version():
            dt = self._open(self.table_uri(db.name, table.name), version)
        return int(dt.version()), [location.file_path(u) for u in dt.file_uris()]

    def read(
        self,
        db: Database,
        table: Table,
        *,
        version: int | None = None,
        tbnames: list[str] | None = None,
        ts_min: int | None = None,
        ts_max: int | None = None,
        columns: list[str] | None = None,
        buckets: tuple[int, int] | None = None,
    ) -> pa.Table:
        """Rows of a snapshot in engine form, filtered by tbnames, inclusive ts bounds and an
        inclusive ``_bucket`` range, sorted by (tbname, ts[, composite key])."""
        _, ds = self.dataset(db, table, version)
        ts_name = table.columns[0].physical
        flt = None

        def _and(a: Any, b: Any) -> Any:
            return b if a is None else a & b

        bucket_len = db.duration.in_precision(db.precision)
        ts_field = pads.field(ts_name)
        if ts_min is not None:
            flt = _and(flt, pads.field("_bucket") >= ts_min // bucket_len)
            flt = _and(flt, ts_field >= self._ts_scalar(db, ts_min))
        if ts_max is not None:
            flt = _and(flt, pads.field("_bucket") <= ts_max // bucket_len)
            flt = _and(flt, ts_field <= self._ts_scalar(db, ts_max))
        if buckets is not None:
            flt = _and(flt, (pads.field("_bucket") >= buckets[0]) & (pads.field("_bucket") <= buckets[1]))
        cols = None if columns is None else ["tbname", *[c for c in columns if c != "tbname"]]
        t = ds.to_table(filter=flt, columns=cols)
        if tbnames is not None:
            # after the scan: MERGE writes strings as string_view, which Arrow cannot compare
            # inside a scan (docs/decisions.md, "string_view files")
            t = t.filter(
                pc.is_in(t.column("tbname").cast(pa.string()), value_set=pa.array(tbnames, pa.string()))
            )
        t = to_engine(t, db, table.columns)
        if t.num_rows:
            keys = [k for k in row_key(table) if k in t.column_names]
            t = t.sort_by([("tbname", "ascending"), *[(k, "ascending") for k in keys]])
        return t

    @staticmethod
    def _ts_scalar(db: Database, value: int) -> pa.Scalar:
        if db.precision == "ns":
            return pa.scalar(value, pa.int64())
        return pa.scalar(value * _US_PER[db.precision], pa.timestamp("us", tz="UTC"))

    def changes(
        self,
        db: Database,
        table: Table,
        start_version: int,
        end_version: int,
        columns: list[str] | None = None,
        *,
        ordered: bool = True,
    ) -> pa.Table:
        """The change data feed for versions ``(start_version, end_version]`` in engine form, with
        ``_change_type`` (insert, update_preimage, update_postimage, delete) and
        ``_commit_version``, in commit order (row order inside a commit is kept); with
        ``ordered`` False in the order delta-rs reads them (for a caller that sorts the rows
        itself: the sort is a copy of every column)."""
        if end_version <= start_version:
            return engine_schema(db, table.columns).empty_table()
        dt = self.delta(db.name, table.name)
        cols = None
        if columns is not None:
            cols = ["tbname", *[c for c in columns if c != "tbname"], *CHANGE_COLUMNS]
        reader = dt.load_cdf(starting_version=start_version + 1, ending_version=end_version, columns=cols)
        t = pa.table(reader.read_all())
        t = to_engine(t, db, table.columns)
        known = {"tbname", *(c.physical for c in table.columns), *CHANGE_COLUMNS}
        t = t.select([n for n in t.column_names if n in known])  # dropped columns stay unseen
        if ordered and t.num_rows:
            t = t.sort_by([("_commit_version", "ascending")])
        return t

    def commit_time_ms(self, db: str, storage: str, version: int) -> int:
        """Commit time of a table version (epoch milliseconds), from the Delta log."""
        dt = self._open(self.table_uri(db, storage), version)
        hist = dt.history(1)
        return int(hist[0]["timestamp"]) if hist else 0

    def buckets(self, db: str, storage: str, version: int) -> list[tuple[int, int]]:
        """``(bucket, rows)`` of a snapshot's ``_bucket`` values (DURATION-long time slices),
        ascending; rows from the Delta log's per-file record counts."""
        dt = self._open(self.table_uri(db, storage), version)
        actions = pa.table(dt.get_add_actions(flatten=True))
        if actions.num_rows == 0:
            return []
        rows: dict[int, int] = {}
        counts = (
            actions.column("num_records").to_pylist()
            if "num_records" in actions.column_names
            else [0] * actions.num_rows
        )
        for b, n in zip(actions.column("partition._bucket").to_pylist(), counts, strict=True):
            rows[int(b)] = rows.get(int(b), 0) + int(n or 0)
        return sorted(rows.items())


TBNAME_STATS_EXACT = 32
"""Tbname statistics shorter than this are taken as exact bounds (writers may truncate longer
string statistics, which would no longer bound the values)."""
TBNAME_PAIRS_MAX = 256
"""Above this many new (partition, subtable) pairs the per-subtable check is not tried."""
_STATS_TS_SLACK = {"s": 0, "ms": 0, "us": 999, "ns": 999_999}
"""How far a timestamp column's true maximum can lie past its Delta statistic, in the column's
unit (delta-rs writes the statistics of timestamp columns with millisecond resolution)."""
EXACT_FILES_MAX = 16
"""At most this many files are read to decide an append the statistics cannot decide."""
EXACT_ROWS_MAX = 2_000_000
"""... holding at most this many rows in all."""


def _files_to_check(
    actions: pa.Table,
    file_bucket: np.ndarray,
    file_max: np.ndarray,
    stored: pa.Table,
    new_bucket: np.ndarray,
    new_ts: np.ndarray,
) -> np.ndarray | None:
    """``Lake._append_safe`` per (partition, subtable): a stored row can share a new row's key
    only in a file of the same partition whose tbname statistics range holds the new row's
    subtable and whose latest time is not before the subtable's earliest new time. Returns the
    mask of such files over ``actions`` (all False: the append is safe), or None when the
    statistics cannot be used (no tbname statistics, a NULL tbname, more than
    ``TBNAME_PAIRS_MAX`` new (partition, subtable) pairs). A file without exact tbname
    statistics (missing, NULL, or ``TBNAME_STATS_EXACT`` characters or longer) counts as holding
    every subtable."""
    if "tbname" not in stored.column_names or "min.tbname" not in actions.column_names:
        return None
    tb_min = actions.column("min.tbname").to_numpy(zero_copy_only=False)
    tb_max = actions.column("max.tbname").to_numpy(zero_copy_only=False)
    exact = np.array([_exact_bound(a) and _exact_bound(z) for a, z in zip(tb_min, tb_max, strict=True)], bool)
    pairs = (
        pa.table({"b": new_bucket, "tb": stored.column("tbname"), "ts": new_ts})
        .group_by(["b", "tb"])
        .aggregate([("ts", "min")])
    )
    if pairs.num_rows > TBNAME_PAIRS_MAX:
        return None
    lo_s = np.where(exact, tb_min, "")
    hi_s = np.where(exact, tb_max, "")
    check = np.zeros(len(file_max), bool)
    for b, tb, first in zip(*(pairs.column(i).to_pylist() for i in range(3)), strict=True):
        if tb is None:
            return None
        holds = (file_bucket == b) & (~exact | ((lo_s <= tb) & (hi_s >= tb)))
        check |= holds & (file_max >= first)
    return check


def _exact_bound(v: object) -> bool:
    """Is a tbname statistic an exact bound (a string shorter than ``TBNAME_STATS_EXACT``)?"""
    return isinstance(v, str) and len(v) < TBNAME_STATS_EXACT
