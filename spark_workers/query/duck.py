"""DuckDB over lake snapshots: the interactive backend (ARCHITECTURE "SQL front door").

Each table reference becomes a temporary view with the logical column names users write:
``tbname``, the columns, and the tags (joined from the catalog's tag table); a subtable is its
supertable filtered on ``tbname``. Scans read the Delta snapshot's Parquet files with DuckDB's
own Parquet reader (``_bucket`` hive partitions pruned, row groups skipped by statistics). Not
through a pyarrow dataset: delta-rs MERGE writes strings as ``string_view``, and pyarrow cannot
evaluate a pushed-down string filter on such files (docs/decisions.md).
The session time zone is UTC; the translator turns literals into exact UTC timestamps.

DuckDB itself is locked down (defence in depth behind the front door's allow-list,
:mod:`spark_workers.sql.sandbox`; docs/decisions.md, "SQL sandbox and limits"): external access
is off except for the lake's data folders (``allowed_directories``), extensions are never
installed or loaded automatically, Python objects are never scanned by name, nothing spills to
disk, memory is capped at the statement limit, and the configuration is locked before any query
runs. Opening such a database costs ~13 ms, so sessions borrow one from a per-process pool and
work on a cursor of it (a connection of its own: its temporary views and tables go with it).
"""

from __future__ import annotations

import logging
import os
import re
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import shapely
from duckdb import sqltypes

from spark_workers import limits as sql_limits
from spark_workers.errors import Code, SqlError, para_type_error
from spark_workers.lake.catalog import Database, Table
from spark_workers.lake.keys import key_column, row_key
from spark_workers.lake.retention import kept_from
from spark_workers.lake.store import Lake, storage_schema
from spark_workers.lake.virtual import Origin, members, origins, storages
from spark_workers.query.planner import Source, resolve
from spark_workers.sql import ast, typed_values
from spark_workers.tdtypes import TdType

log = logging.getLogger(__name__)

BATCH_ROWS = 65_536  # rows per Arrow record batch fetched from DuckDB
POOL_IDLE = 8  # idle databases kept (all configurations and lakes together)


def quote(name: str) -> str:
    """DuckDB identifier quoting."""
    return '"' + name.replace('"', '""') + '"'


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# ---------------------------------------------------------------------- locked-down databases


def data_directories(root: str | os.PathLike[str] | None) -> frozenset[str]:
    """The folders a session may read: the lake's database folders (``<root>/<db key>/``, as
    written and resolved), never its ``_`` entries (catalog, checkpoints) nor anything else."""
    if root is None:
        return frozenset()
    base = os.fspath(root)
    out: set[str] = set()
    try:
        entries = list(os.scandir(base))
    except FileNotFoundError:
        return frozenset()
    for e in entries:
        if e.name.startswith("_") or not e.is_dir(follow_symlinks=False):
            continue
        for path in (os.path.join(base, e.name), os.path.realpath(os.path.join(base, e.name))):
            out.add(path.rstrip(os.sep) + os.sep)
    return frozenset(out)


@dataclass
class _Database:
    """A locked-down in-memory DuckDB database and the folders it may read."""

    con: duckdb.DuckDBPyConnection
    key: tuple[object, ...]
    directories: frozenset[str]


def _open_database(
    key: tuple[object, ...], threads: int, memory_bytes: int, dirs: frozenset[str]
) -> _Database:
    """A new database: resource limits, no spilling, no extensions, no Python replacement scans,
    file access limited to ``dirs``, UTC, configuration locked (DuckDB "Securing DuckDB")."""
    con = duckdb.connect(
        ":memory:",
        config={
            "threads": threads,
            "memory_limit": f"{memory_bytes}B",
            "temp_directory": "",  # in memory only: a statement over the limit fails, never spills
            "max_temp_directory_size": "0B",
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            "allow_unsigned_extensions": False,
            "python_enable_replacements": False,
        },
    )
    try:
        _register_geometry(con)
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        if dirs:
            con.execute(f"SET allowed_directories = [{', '.join(sql_string(d) for d in sorted(dirs))}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except Exception:
        con.close()
        raise
    return _Database(con, key, dirs)


def _st_astext(wkb: bytes) -> str:
    return typed_values.wkb_to_wkt(wkb)


def _st_geomfromtext(wkt: str) -> bytes:
    return typed_values.wkt_to_wkb(wkt)


def _st_makepoint(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _predicate(name: str) -> Callable[[bytes, bytes], bool]:
    """A GEOS predicate over two WKB values (``shapely``, GEOS as in TDengine)."""
    fn = getattr(shapely, name)

    def apply(a: bytes, b: bytes) -> bool:
        return bool(fn(shapely.from_wkb(a), shapely.from_wkb(b)))

    return apply


# TDengine's geometry conversions as session functions (sql/functions.py rewrites ST_AsText,
# ST_GeomFromText and ST_MakePoint into them; users cannot name them: the sandbox checks the
# TDengine tree first). NULL in, NULL out; a bad value fails the statement (InvalidInput ->
# WRONG_VALUE_TYPE in duck_error).
GEOMETRY_UDFS = (
    ("td_st_astext", _st_astext, [sqltypes.BLOB], sqltypes.VARCHAR),
    ("td_st_geomfromtext", _st_geomfromtext, [sqltypes.VARCHAR], sqltypes.BLOB),
    ("td_st_makepoint", _st_makepoint, [sqltypes.DOUBLE, sqltypes.DOUBLE], sqltypes.BLOB),
    *(
        (f"td_st_{n.replace('_', '')}", _predicate(n), [sqltypes.BLOB, sqltypes.BLOB], sqltypes.BOOLEAN)
        for n in ("intersects", "equals", "touches", "covers", "contains", "contains_properly")
    ),
)


def _register_geometry(con: duckdb.DuckDBPyConnection) -> None:
    for name, fn, args, out in GEOMETRY_UDFS:
        con.create_function(name, fn, args, out)  # type: ignore[arg-type,call-overload]


_pool_lock = threading.Lock()
_idle: list[_Database] = []  # least recently returned first


def _checkout(root: str | None, threads: int, memory_bytes: int) -> _Database:
    """An idle database for this configuration whose folders cover the lake's current ones
    (one opened before a database was created is closed), else a new database."""
    dirs = data_directories(root)
    key = (os.path.realpath(root) if root is not None else None, threads, memory_bytes)
    stale: list[_Database] = []
    found = None
    with _pool_lock:
        for i in range(len(_idle) - 1, -1, -1):
            db = _idle[i]
            if db.key != key:
                continue
            del _idle[i]
            if dirs <= db.directories:
                found = db
                break
            stale.append(db)
    for db in stale:
        db.con.close()
    return found or _open_database(key, threads, memory_bytes, dirs)


def _checkin(db: _Database) -> None:
    """Keep ``db`` for the next session; the least recently used idle database beyond
    ``POOL_IDLE`` is closed (~4 MB each)."""
    with _pool_lock:
        _idle.append(db)
        evicted = _idle[:-POOL_IDLE] if len(_idle) > POOL_IDLE else []
        del _idle[: len(evicted)]
    for old in evicted:
        old.con.close()


@dataclass(frozen=True)
class ResultCap:
    """Where a query's result must stop (:meth:`DuckSession.query`).

    Attributes:
        max_rows: most rows.
        max_bytes: most bytes, counted by ``answer_bytes`` (``answer``: as the REST answer writes
            the values) or by Arrow buffer sizes (``arrow``).
        measure: ``answer`` or ``arrow``.
        what: ``result`` (``0x0711`` Result set too large) or ``window input`` (``0x073A``).
    """

    max_rows: int
    max_bytes: int
    measure: str = "answer"
    what: str = "result"

    @classmethod
    def result(cls, limits: sql_limits.Limits) -> ResultCap:
        """The cap of a statement's result (``TDWEB_SQL_MAX_ROWS``, ``TDWEB_SQL_MAX_RESULT_BYTES``)."""
        return cls(limits.max_rows, limits.max_result_bytes)

    @classmethod
    def window_input(cls, limits: sql_limits.Limits) -> ResultCap:
        """The cap of the rows a window query feeds into the engine (``TDWEB_SQL_MAX_WINDOW_ROWS``,
        Arrow size at most the memory limit)."""
        return cls(limits.max_window_rows, limits.memory_limit_bytes, "arrow", "window input")

    def error(self, rows: bool) -> SqlError:
        if self.what == "result":
            limit = (
                f"{self.max_rows:,} rows (TDWEB_SQL_MAX_ROWS)"
                if rows
                else f"{sql_limits.format_size(self.max_bytes)} (TDWEB_SQL_MAX_RESULT_BYTES)"
            )
            return SqlError(
                f"Result set too large: more than {limit}; add a LIMIT or narrow the query",
                code=Code.RESULT_TOO_LARGE,
            )
        limit = (
            f"{self.max_rows:,} rows (TDWEB_SQL_MAX_WINDOW_ROWS)"
            if rows
            else f"{sql_limits.format_size(self.max_bytes)} (TDWEB_SQL_MEMORY_LIMIT)"
        )
        return SqlError(
            f"Query memory exhausted: the window query reads more than {limit}; narrow the time "
            "range or the tables",
            code=Code.QUERY_MEM_EXHAUSTED,
        )


def answer_bytes(batch: pa.RecordBatch) -> int:
    """Size of a batch as the REST answer writes it (an upper bound): strings and binaries their
    bytes plus quotes and separator, timestamps 32 characters (ISO 8601 text, nanoseconds), every
    other value 24 (an int64, a double). Cost: O(columns), from buffer sizes."""
    total = 0
    n = batch.num_rows
    for col in batch.columns:
        t = col.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
            buffers = col.buffers()
            total += (buffers[2].size if len(buffers) > 2 and buffers[2] is not None else 0) + 4 * n
        elif pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            total += col.nbytes + 4 * n
        elif pa.types.is_timestamp(t):
            total += 32 * n  # "2025-01-01T00:00:00.000000000Z", quoted
        else:
            total += 24 * n
    return total


# ---------------------------------------------------------------------- sessions


class DuckSession:
    """One DuckDB connection for one request or one micro-batch.

    Args:
        lake: the lake to read snapshots from (its data folders are the only files the session
            can read; None: no files at all).
        threads: DuckDB worker threads (keep small on 2 cores).

    The connection is a cursor of a pooled, locked-down database whose ``memory_limit`` is the
    statement limit (:func:`spark_workers.limits.current_limits`). Inside
    :func:`spark_workers.limits.statement_budget`, queries are interrupted at the
    statement's deadline.
    """

    def __init__(self, lake: Lake | None = None, threads: int = 2) -> None:
        self.lake = lake
        limits = sql_limits.current_limits()
        self._db: _Database | None = _checkout(
            str(lake.root) if lake is not None else None, threads, limits.memory_limit_bytes
        )
        self.limits = limits
        self.con = self._db.con.cursor()
        self._broken = False
        self._n = 0
        self.versions: dict[str, int] = {}

    def close(self) -> None:
        db, self._db = self._db, None
        if db is None:
            return
        try:
            self.con.close()
        finally:
            if self._broken:
                db.con.close()
            else:
                _checkin(db)

    def __enter__(self) -> DuckSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _name(self, prefix: str) -> str:
        self._n += 1
        return f"__{prefix}{self._n}"

    def register_arrow(self, data: pa.Table | object, name: str | None = None) -> str:
        """Register an Arrow table/dataset under a fresh (or given) name; returns the name."""
        name = name or self._name("a")
        self.con.register(name, data)
        return name

    def register_source(
        self,
        src: Source,
        version: int | None = None,
        *,
        ts_range: tuple[int, int] | None = None,
        tbnames: list[str] | None = None,
        columns: frozenset[str] | None = None,
    ) -> str:
        """A view of a table reference with logical names; returns the view name. A table with a
        composite key is ordered by (tbname, ts, key) (``lake/keys.py``).

        Args:
            src: the resolved table.
            version: Delta version to read (None = latest); recorded in ``self.versions``.
            ts_range: inclusive bounds on the timestamp column, in precision units.
            tbnames: only these subtables.
            columns: lower-case names the query uses (None: all); a virtual table's rows are the
                timestamps of the tables its used columns reference (:meth:`register_virtual`).
        """
        assert self.lake is not None
        if src.table.virtual or src.storage.virtual:
            return self.register_virtual(src, version, ts_range=ts_range, tbnames=tbnames, columns=columns)
        db, storage = src.db, src.storage
        ver, files = self.lake.snapshot_files(db, storage, version)
        self.versions[f"{db.name}.{storage.name}"] = ver
        if files and self.lake.remote:  # object storage: Arrow reads it, DuckDB scans the dataset
            data = self.register_arrow(self.lake.dataset(db, storage, ver)[1])
        elif files:
            data = self._name("p")
            listing = ", ".join(sql_string(f) for f in files)
            self.con.execute(
                f"CREATE TEMP VIEW {data} AS SELECT * FROM read_parquet([{listing}], "
                "hive_partitioning = true, union_by_name = true, hive_types = {'_bucket': BIGINT})"
            )
        else:
            data = self.register_arrow(storage_schema(db, storage.columns).empty_table())
        present = {r[0] for r in self.con.execute(f"DESCRIBE {data}").fetchall()}
        parts = ["d.tbname AS tbname"]
        for c in storage.columns:
            expr = f"d.{quote(c.physical)}"
            if c.physical not in present:  # added (ALTER ... ADD COLUMN) after every file: NULL
                expr = f"CAST(NULL AS {_storage_duck_type(c.type.arrow(db.precision))})"
            if c.type.name == "TIMESTAMP" and db.precision == "ns":
                expr = f"make_timestamp_ns({expr})"
            parts.append(f"{expr} AS {quote(c.name)}")
        join = ""
        if storage.kind == "super" and storage.tags:
            tags = self.register_arrow(self.lake.catalog.subtable_tags(db.name, storage.name))
            for t in storage.tags:
                parts.append(f"g.{quote(t.physical)} AS {quote(t.name)}")
            join = f" LEFT JOIN {tags} g ON d.tbname = g.tbname"
        conds = []
        if src.tbname_filter is not None:
            conds.append(f"d.tbname = {sql_string(src.tbname_filter)}")
        if tbnames is not None:
            conds.append(f"d.tbname IN ({', '.join(sql_string(t) for t in tbnames) or 'NULL'})")
        if ts_range is not None:
            ts = f"d.{quote(storage.columns[0].physical)}"
            lo, hi = (_ts_sql(v, db.precision) for v in ts_range)
            conds.append(f"{ts} >= {lo} AND {ts} <= {hi}")
            bucket = db.duration.in_precision(db.precision)
            conds.append(f"d._bucket >= {ts_range[0] // bucket} AND d._bucket <= {ts_range[1] // bucket}")
        conds += _keep_conds(db, f"d.{quote(storage.columns[0].physical)}")
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        # a table with a composite key is read in its row-key order (TDengine: (ts, key) per
        # table), so data-defined windows see rows of one timestamp in key order
        order = ""
        if key_column(storage) is not None:
            order = " ORDER BY d.tbname, " + ", ".join(f"d.{quote(k)}" for k in row_key(storage))
        view = self._name("v")
        self.con.execute(
            f"CREATE TEMP VIEW {view} AS SELECT {', '.join(parts)} FROM {data} d{join}{where}{order}"
        )
        return view

    def register_virtual(
        self,
        src: Source,
        version: int | None = None,
        *,
        ts_range: tuple[int, int] | None = None,
        tbnames: list[str] | None = None,
        columns: frozenset[str] | None = None,
    ) -> str:
        """A view of a virtual table: its referenced tables aligned on the timestamp.

        TDengine SQL manual, "Virtual Tables", "Data Alignment Rules": rows of the referenced
        tables are aligned by timestamp, columns with the same timestamp form one row and a
        missing value is NULL; the timestamps are the union of the timestamps of the tables the
        *used* columns reference (``columns``), so selecting fewer columns may give fewer rows.
        A virtual supertable is the union of its virtual child tables (``tbname`` the child's
        name, tags from the child). ``version`` is honoured when the table reads one storage
        table only (a stream's snapshot), else the latest snapshots are read.
        """
        assert self.lake is not None
        catalog = self.lake.catalog
        table, vstb = src.table, src.storage
        one_storage = len(storages(catalog, table)) == 1
        selects = []
        for m in members(catalog, table):
            if tbnames is not None and m.name not in tbnames:
                continue
            selects.append(
                self._virtual_member(
                    src, m, origins(catalog, m), version if one_storage else None, ts_range, columns
                )
            )
        if not selects:
            return self.register_virtual_empty(src)
        body = " UNION ALL ".join(selects)
        join, parts = "", ["u.*"]
        if vstb.kind == "super" and vstb.tags:
            tags = self.register_arrow(catalog.subtable_tags(src.db.name, vstb.name))
            parts += [f"g.{quote(t.physical)} AS {quote(t.name)}" for t in vstb.tags]
            join = f" LEFT JOIN {tags} g ON u.tbname = g.tbname"
        view = self._name("v")
        self.con.execute(f"CREATE TEMP VIEW {view} AS SELECT {', '.join(parts)} FROM ({body}) u{join}")
        return view

    def register_virtual_empty(self, src: Source) -> str:
        """An empty view with a virtual table's logical columns (no member, no reference)."""
        stand_in = Table(src.db.name, src.storage.name, "normal", src.storage.columns)
        data = self.register_arrow(storage_schema(src.db, stand_in.columns).empty_table())
        parts = ["CAST(NULL AS VARCHAR) AS tbname"]
        parts += [f"d.{quote(c.physical)} AS {quote(c.name)}" for c in src.storage.columns]
        parts += [f"CAST(NULL AS {_duck_type(t.type)}) AS {quote(t.name)}" for t in src.storage.tags]
        view = self._name("v")
        self.con.execute(f"CREATE TEMP VIEW {view} AS SELECT {', '.join(parts)} FROM {data} d")
        return view

    def _virtual_member(
        self,
        src: Source,
        member: Table,
        members_origins: list[Origin],
        version: int | None,
        ts_range: tuple[int, int] | None,
        columns: frozenset[str] | None,
    ) -> str:
        """The SELECT of one virtual normal or child table: ``tbname``, then its columns."""
        ts = member.columns[0]
        used = [
            o for o in members_origins if columns is None or any(c.lower() in columns for c in o.columns)
        ] or members_origins
        if not used:
            nulls = ", ".join(
                f"CAST(NULL AS {_duck_type(c.type)}) AS {quote(c.name)}" for c in member.columns
            )
            return f"SELECT CAST(NULL AS VARCHAR) AS tbname, {nulls} WHERE false"
        views = []
        for o in used:
            assert self.lake is not None
            osrc = resolve(self.lake.catalog, ast.TableName(o.table.name, o.db), o.db)
            views.append((self.register_source(osrc, version, ts_range=ts_range), osrc, o))
        keys = " UNION ".join(f"SELECT {quote(s.table.columns[0].name)} AS k FROM {v}" for v, s, _ in views)
        parts = [f"{sql_string(member.name)} AS tbname", f"k.k AS {quote(ts.name)}"]
        joins = []
        for i, (v, s, _) in enumerate(views):
            joins.append(f" LEFT JOIN {v} o{i} ON o{i}.{quote(s.table.columns[0].name)} = k.k")
        for c in member.columns[1:]:
            expr = f"CAST(NULL AS {_duck_type(c.type)})"
            for i, (_, _, o) in enumerate(views):
                if c.name in o.columns:
                    expr = f"o{i}.{quote(o.columns[c.name])}"
            parts.append(f"{expr} AS {quote(c.name)}")
        return f"SELECT {', '.join(parts)} FROM ({keys}) k{''.join(joins)}"

    def query(self, sql: str, cap: ResultCap | None = None) -> pa.Table:
        """Run a query; Arrow result (string views normalised to strings).

        The result is fetched in record batches of ``BATCH_ROWS`` rows and refused as soon as it
        passes ``cap``. Within a statement budget the query is interrupted at the deadline.

        Raises:
            SqlError: ``0x012C`` past the deadline, ``0x073A`` over the memory limit, ``cap``'s
                error, or DuckDB's failure in TDengine's words (:func:`duck_error`; no DuckDB text,
                class name or path). ``sql`` is not set: callers anchor it in the statement.
        """
        budget = sql_limits.active_budget()
        timer = None
        if budget is not None:
            remaining = budget.remaining_s()
            if remaining <= 0:
                raise sql_limits.timeout_error(budget.limits)
            timer = threading.Timer(remaining, self.con.interrupt)
            timer.daemon = True
            timer.start()
        try:
            reader = self.con.sql(sql).to_arrow_reader(BATCH_ROWS)
            batches: list[pa.RecordBatch] = []
            rows = size = 0
            for batch in reader:
                if cap is not None:
                    rows += batch.num_rows
                    size += answer_bytes(batch) if cap.measure == "answer" else batch.nbytes
                    if rows > cap.max_rows or size > cap.max_bytes:
                        raise cap.error(rows > cap.max_rows)
                batches.append(batch)
            t = pa.Table.from_batches(batches, schema=reader.schema)
        except duckdb.InterruptException:
            raise sql_limits.timeout_error(budget.limits if budget is not None else self.limits) from None
        except duckdb.Error as e:
            if isinstance(e, duckdb.FatalException):
                self._broken = True  # DuckDB invalidated the database: never reuse it
            raise duck_error(e, self.limits) from None
        finally:
            if timer is not None:
                timer.cancel()
        return normalise(t)


# ---------------------------------------------------------------------- DuckDB's failures

_COLUMN_NOT_FOUND = re.compile(r'Referenced column "([^"]+)" not found')
_GROUP_BY = re.compile(r'column "([^"]+)" must appear in the GROUP BY clause')
_AMBIGUOUS = re.compile(r'Ambiguous reference to column name "([^"]+)"')
_CONVERT = re.compile(r"Could not convert string '([^']{0,64})' to (\w+)")
_TABLE_NOT_FOUND = re.compile(r'Referenced table "([^"]{1,192})" not found')
_FUNCTION = re.compile(r"(?:Scalar|Aggregate|Table) Function with name (\w+) does not exist")
_NO_MATCH = re.compile(r"No function matches the given name and argument types '(\w+)\(")
# DuckDB's names of the functions tdweb renders TDengine calls into, back to TDengine's names
_TD_FUNCTION = {"stddev_pop": "stddev", "stddev_samp": "stddev", "ceiling": "ceil", "pow": "pow"}


def _td_function_names() -> frozenset[str]:
    """TDengine functions tdweb knows (scalar catalogue and engine aggregates): the names an
    error may quote back."""
    from spark_workers.engine.aggregates import AGGREGATES
    from spark_workers.sql.functions import FUNCTIONS

    return frozenset(FUNCTIONS) | frozenset(AGGREGATES)


_DUCK_TYPES = {
    "INT8": "TINYINT",
    "INT16": "SMALLINT",
    "INT32": "INT",
    "INT64": "BIGINT",
    "UINT8": "TINYINT UNSIGNED",
    "UINT16": "SMALLINT UNSIGNED",
    "UINT32": "INT UNSIGNED",
    "UINT64": "BIGINT UNSIGNED",
    "DOUBLE": "DOUBLE",
    "FLOAT": "FLOAT",
    "BOOL": "BOOL",
    "BOOLEAN": "BOOL",
    "DATE": "TIMESTAMP",
    "TIMESTAMP": "TIMESTAMP",
}


def _clause_error(text: str) -> SqlError | None:
    """DuckDB binder refusals about a clause, in TDengine's words: an unknown qualifier
    (``0x2603``), an ORDER BY position (``0x2609``), UNION operands (``0x2634``), a negative
    LIMIT (syntax error); None for anything else."""
    if m := _TABLE_NOT_FOUND.search(text):  # a qualifier naming no table of FROM (``x.a``)
        return SqlError(f"Table does not exist: {m.group(1)}", code=Code.TABLE_NOT_EXIST)
    if "ORDER term out of range" in text:
        return SqlError(
            "ORDER BY item must be the number of a SELECT-list expression", code=Code.WRONG_NUMBER_OF_SELECT
        )
    if "same number of result columns" in text:
        return SqlError("Query block has incorrect number of result columns", code=Code.INCORRECT_NUM_OF_COL)
    if "LIMIT/OFFSET cannot be negative" in text:
        return SqlError("syntax error: LIMIT and OFFSET take non-negative integers", code=Code.SYNTAX_ERROR)
    return None


def duck_error(e: Exception, limits: sql_limits.Limits | None = None) -> SqlError:
    """A DuckDB failure as a TDengine error, in tdweb's words: DuckDB's own text (its class
    names, internal function names, file paths) is logged, never returned.

    Mapping: out of memory -> ``0x073A``; interrupted -> ``0x012C``; permission -> ``0x2644``;
    conversion -> ``0x2605`` wrong value type; out of range -> ``0x0224``; binder errors about a
    column -> ``0x2602`` / ``0x2604``; unknown function -> ``0x264D``; a TDengine function given
    an argument type it does not take -> ``0x2802`` "Invalid parameter data type : f"; nested
    aggregates -> ``0x2627``; aggregates in WHERE -> ``0x2608``; anything else -> ``0x0200``
    invalid operation. Positions are added by the caller (``query.select._anchored``).
    """
    limits = limits or sql_limits.current_limits()
    text = str(e)
    log.info("DuckDB refused a statement: %s: %s", type(e).__name__, text.split("\n")[0][:300])
    if isinstance(e, duckdb.OutOfMemoryException):
        return sql_limits.memory_error(limits)
    if isinstance(e, duckdb.InterruptException):
        return sql_limits.timeout_error(limits)
    if isinstance(e, duckdb.PermissionException):
        return SqlError(
            "Permission denied: the statement reads outside the lake", code=Code.PERMISSION_DENIED
        )
    if m := _CONVERT.search(text):
        return SqlError(
            f"wrong value type: cannot convert '{m.group(1)}' to {_DUCK_TYPES.get(m.group(2), m.group(2))}",
            code=Code.WRONG_VALUE_TYPE,
        )
    if isinstance(e, duckdb.ConversionException | duckdb.InvalidInputException):
        return SqlError("wrong value type: a value cannot be converted", code=Code.WRONG_VALUE_TYPE)
    if isinstance(e, duckdb.OutOfRangeException):
        return SqlError("value out of range: a result does not fit its type", code=Code.VALUE_OUT_OF_RANGE)
    if m := _COLUMN_NOT_FOUND.search(text):
        return SqlError(f"invalid column name {m.group(1)}", code=Code.INVALID_COLUMN)
    if m := _GROUP_BY.search(text):
        return SqlError(
            f"column {m.group(1)} must be used in an aggregate function or listed in GROUP BY",
            code=Code.INVALID_COLUMN,
        )
    if m := _AMBIGUOUS.search(text):
        return SqlError(f"ambiguous column name {m.group(1)}", code=Code.AMBIGUOUS_COLUMN)
    if (clause := _clause_error(text)) is not None:
        return clause
    if "cannot be nested" in text:
        return SqlError("Aggregate functions do not support nesting", code=Code.AGG_FUNC_NESTING)
    if "WHERE clause cannot contain aggregates" in text:
        return SqlError(
            "There mustn't be aggregation: aggregate functions are not allowed in WHERE",
            code=Code.ILLEGAL_USE_AGG_FUNCTION,
        )
    if m := _FUNCTION.search(text):
        return SqlError(f"Invalid function name: {m.group(1)}", code=Code.INVALID_FUNCTION_NAME)
    if (m := _NO_MATCH.search(text)) and (
        name := _TD_FUNCTION.get(m.group(1).lower(), m.group(1).lower())
    ) in (_td_function_names()):
        return para_type_error(name)  # positioned at the call by the caller (query.select._anchored)
    if any(
        words in text
        for words in (
            "No function matches",
            "Cannot compare values",
            "Cannot mix values",
            "best candidate function",
        )
    ):
        return SqlError(
            "wrong value type: an operator or function got a value of a type it does not take",
            code=Code.WRONG_VALUE_TYPE,
        )
    return SqlError(
        "invalid operation: the statement cannot be executed as written", code=Code.INVALID_OPERATION
    )


def _duck_type(t: TdType) -> str:
    """DuckDB type of a NULL placeholder for a column of TDengine type ``t``."""
    return {
        "TIMESTAMP": "TIMESTAMPTZ",
        "BOOL": "BOOLEAN",
        "TINYINT": "UTINYINT" if t.unsigned else "TINYINT",
        "SMALLINT": "USMALLINT" if t.unsigned else "SMALLINT",
        "INT": "UINTEGER" if t.unsigned else "INTEGER",
        "BIGINT": "UBIGINT" if t.unsigned else "BIGINT",
        "FLOAT": "FLOAT",
        "DOUBLE": "DOUBLE",
        "VARBINARY": "BLOB",
        "GEOMETRY": "BLOB",
        "DECIMAL": f"DECIMAL({t.length}, {t.scale})",
    }.get(t.name, "VARCHAR")


def _storage_duck_type(t: pa.DataType) -> str:
    """DuckDB type of a NULL standing for a stored column of Arrow storage type ``t`` that no data
    file holds yet (``tdtypes`` storage table)."""
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    return {
        pa.bool_(): "BOOLEAN",
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INTEGER",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.binary(): "BLOB",
    }.get(t, "VARCHAR")


def _keep_conds(db: Database, ts: str) -> list[str]:
    """The conditions hiding the rows of ``db`` older than its KEEP (``lake/retention.py``;
    TDengine: "data older than KEEP is not returned"), on timestamp expression ``ts`` and the
    ``_bucket`` partition column (so whole expired partitions are pruned); none without KEEP."""
    kept = kept_from(db, int(time.time() * 1000))
    if kept is None:
        return []
    return [
        f"{ts} >= {_ts_sql(kept, db.precision)}",
        f"d._bucket >= {kept // db.duration.in_precision(db.precision)}",
    ]


def _ts_sql(value: int, precision: str) -> str:
    """SQL literal comparable with a stored timestamp column (int64 for ns databases)."""
    if precision == "ns":
        return str(value)
    us = value * (1000 if precision == "ms" else 1)
    return f"make_timestamp({us})::TIMESTAMPTZ"


def normalise(t: pa.Table) -> pa.Table:
    """Plain string columns instead of string views (what the rest of tdweb expects)."""
    if not any(pa.types.is_string_view(f.type) or pa.types.is_large_string(f.type) for f in t.schema):
        return t
    cols = [
        c.cast(pa.string()) if (pa.types.is_string_view(c.type) or pa.types.is_large_string(c.type)) else c
        for c in t.columns
    ]
    return pa.Table.from_arrays(cols, names=t.column_names)
