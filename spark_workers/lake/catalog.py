"""The lake's catalog: databases, supertables, subtables and normal tables, with tag values.

TDengine's model (seed 000/001): a database holds supertables (columns + tags), subtables (a
supertable's rows for one ``tbname``, carrying tag values) and normal tables; table names are
unique inside a database. The catalog lives in the lake folder (``<lake>/_catalog.sqlite``, the
embedded default: SQLite gives multi-process transactions on one machine, see docs/decisions.md,
"catalog") or, when a ``postgres://`` URL is given (``TDWEB_CATALOG_URL``), in PostgreSQL schema
``tdweb_catalog`` that every host reaches (docs/operations.md, "Shared catalog"). Both backends run
the same statements under the same transaction rule: every change serialises on the ``meta``
version row, so concurrent DDL from several hosts loses no table and creates none twice.

Names are case-insensitive (TDengine lower-cases unquoted identifiers); they are stored as
written and compared lower-cased.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute

from spark_workers.duration import Duration
from spark_workers.errors import CatalogError, Code
from spark_workers.tdtypes import BINARY_TYPES, TdType

_SAFE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
RESERVED_PHYSICAL = frozenset({"tbname", "_bucket", "_change_type", "_commit_version", "_commit_timestamp"})
DEFAULT_DURATION = "10d"

_TABLE_COLUMNS = (
    "db, key, name, kind, stable_key, columns, tags, tag_values, comment, created_ms, virtual, refs, ttl"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (k, v) VALUES ('version', 0);
CREATE TABLE IF NOT EXISTS databases (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, precision TEXT NOT NULL, options TEXT NOT NULL,
    created_ms INTEGER NOT NULL, owner TEXT);
CREATE TABLE IF NOT EXISTS tables (
    db TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('super', 'sub', 'normal')),
    stable_key TEXT, columns TEXT, tags TEXT, tag_values TEXT, comment TEXT,
    created_ms INTEGER NOT NULL, virtual INTEGER NOT NULL DEFAULT 0, refs TEXT,
    ttl INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (db, key));
CREATE INDEX IF NOT EXISTS tables_by_stable ON tables (db, stable_key);
"""
PG_SCHEMA_NAME = "tdweb_catalog"
_PG_LOCK_KEY = 0x7464_6362  # pg_advisory_xact_lock key serialising schema creation ("tdcb")
_PG_SCHEMA = f"""
CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA_NAME};
CREATE TABLE IF NOT EXISTS {PG_SCHEMA_NAME}.meta (k TEXT PRIMARY KEY, v BIGINT NOT NULL);
INSERT INTO {PG_SCHEMA_NAME}.meta (k, v) VALUES ('version', 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS {PG_SCHEMA_NAME}.databases (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, precision TEXT NOT NULL, options TEXT NOT NULL,
    created_ms BIGINT NOT NULL, owner TEXT);
CREATE TABLE IF NOT EXISTS {PG_SCHEMA_NAME}.tables (
    db TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('super', 'sub', 'normal')),
    stable_key TEXT, columns TEXT, tags TEXT, tag_values TEXT, comment TEXT,
    created_ms BIGINT NOT NULL, virtual INTEGER NOT NULL DEFAULT 0, refs TEXT,
    ttl INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (db, key));
CREATE INDEX IF NOT EXISTS tables_by_stable ON {PG_SCHEMA_NAME}.tables (db, stable_key)
"""


class _SqliteBackend:
    """The embedded catalog: ``<root>/_catalog.sqlite`` (WAL; writers take SQLite's write lock
    with ``BEGIN IMMEDIATE``)."""

    begin = "BEGIN IMMEDIATE"

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / "_catalog.sqlite"
        self.url = ""

    def connect(self) -> Any:
        con = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        return con

    @staticmethod
    def sql(text: str) -> str:
        return text

    def setup(self, con: Any) -> None:
        """Create the tables (idempotent) and bring an older tdweb's catalog up to date."""
        con.executescript(_SCHEMA)
        cols = {r[1] for r in con.execute("PRAGMA table_info(databases)").fetchall()}
        if "owner" not in cols:
            with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                con.execute("ALTER TABLE databases ADD COLUMN owner TEXT")
        tcols = {r[1] for r in con.execute("PRAGMA table_info(tables)").fetchall()}
        zero = "INTEGER NOT NULL DEFAULT 0"
        for name, decl in (("virtual", zero), ("refs", "TEXT"), ("ttl", zero)):
            if name not in tcols:  # virtual tables (TDengine 3.3.6+), table TTL
                with contextlib.suppress(sqlite3.OperationalError):
                    con.execute(f"ALTER TABLE tables ADD COLUMN {name} {decl}")


class _PostgresBackend:
    """The shared catalog: schema ``tdweb_catalog`` of the PostgreSQL database at ``url``
    (autocommit connections; a write transaction is READ COMMITTED and serialised by the row
    lock its first statement takes on ``meta``)."""

    begin = "BEGIN"

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = None

    def connect(self) -> Any:
        import psycopg  # only a deployment with a PostgreSQL catalog needs the driver

        return psycopg.connect(
            self.url, autocommit=True, connect_timeout=10, options=f"-c search_path={PG_SCHEMA_NAME}"
        )

    @staticmethod
    def sql(text: str) -> str:
        return text.replace("?", "%s")

    def setup(self, con: Any) -> None:
        """Create schema and tables once, even when several hosts start together (concurrent
        ``CREATE ... IF NOT EXISTS`` can collide in PostgreSQL's own catalog: an advisory lock
        serialises them)."""
        con.execute("BEGIN")
        try:
            con.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK_KEY,))
            for stmt in _PG_SCHEMA.split(";"):
                con.execute(stmt)
            has_ttl = con.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND table_name = 'tables' "
                "AND column_name = 'ttl'",
                (PG_SCHEMA_NAME,),
            ).fetchone()
            if not has_ttl:  # a catalog from before table TTL (an ALTER TABLE locks the table: only then)
                con.execute(f"ALTER TABLE {PG_SCHEMA_NAME}.tables ADD COLUMN ttl INTEGER NOT NULL DEFAULT 0")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


def _is_postgres_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in ("postgres", "postgresql")


class _Con:
    """One backend connection with ``?`` placeholders on both backends (PostgreSQL's are
    rewritten to ``%s``); ``pid`` is the process that opened it. A statement outside a
    transaction that fails because the link broke (PostgreSQL restarted, connection killed) is
    run once more on a new connection; inside a transaction the error propagates (nothing was
    committed) and the next call reconnects."""

    def __init__(self, connect: Any, sql: Any, pid: int) -> None:
        self._connect = connect
        self.raw = connect()
        self._sql = sql
        self.pid = pid
        self.in_tx = False

    @property
    def closed(self) -> bool:
        return bool(getattr(self.raw, "closed", False))

    def execute(self, text: str, args: Any = ()) -> Any:
        """Run one statement; returns the cursor (``fetchone`` / ``fetchall`` give tuples)."""
        try:
            return self._run(text, args)
        except Exception:
            if self.in_tx or not self.closed:
                raise
        self.raw = self._connect()
        return self._run(text, args)

    def _run(self, text: str, args: Any) -> Any:
        if not args:
            return self.raw.execute(text)
        return self.raw.execute(self._sql(text), args)

    def executemany(self, text: str, rows: list[tuple[Any, ...]]) -> None:
        """Run one statement for every parameter tuple of ``rows``."""
        self.raw.cursor().executemany(self._sql(text), rows)


@dataclass(frozen=True)
class Column:
    """A column or tag: logical ``name`` (as users write it), ``type``, and ``physical`` name in
    the Delta table (equal to ``name`` when that is a safe Parquet/Delta name, else ``_c<i>``)."""

    name: str
    type: TdType
    physical: str
    comment: str | None = None
    composite_key: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.to_json(),
            "physical": self.physical,
            "comment": self.comment,
            "composite_key": self.composite_key,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Column:
        return cls(
            d["name"],
            TdType.from_json(d["type"]),
            d["physical"],
            d.get("comment"),
            bool(d.get("composite_key", False)),
        )


def physical_names(names: list[str]) -> list[str]:
    """Physical (Delta) names for logical column names, in order; unique and Parquet-safe."""
    out: list[str] = []
    used: set[str] = set()
    for i, name in enumerate(names):
        cand = name.lower() if _SAFE_NAME.match(name) else f"_c{i}"
        if cand in RESERVED_PHYSICAL or cand in used:
            cand = f"_c{i}"
        while cand in used:
            cand = f"_{cand}"
        used.add(cand)
        out.append(cand)
    return out


@dataclass(frozen=True)
class ColumnRef:
    """Where a virtual table's column takes its values (TDengine SQL manual, "Virtual Tables":
    ``col FROM [db.]table.col``): a column of a normal table or subtable, names as written."""

    db: str
    table: str
    column: str

    def to_json(self) -> list[str]:
        return [self.db, self.table, self.column]

    @classmethod
    def from_json(cls, d: list[str]) -> ColumnRef:
        return cls(d[0], d[1], d[2])

    @property
    def text(self) -> str:
        """``db.table.column`` as SHOW CREATE VTABLE writes it."""
        return f"{self.db}.{self.table}.{self.column}"


@dataclass(frozen=True)
class Database:
    """A database: ``precision`` is ``ms``, ``us`` or ``ns``; ``options`` as created; ``owner``
    is the name of the user who created it (TDengine: "own created DBs have all permissions"),
    None for databases created before owners were recorded (only superusers own those)."""

    name: str
    precision: str
    options: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None

    @property
    def duration(self) -> Duration:
        """TDengine's DURATION option: the time span of one data file (one Delta partition)."""
        raw = self.options.get("DURATION", DEFAULT_DURATION)
        text = str(raw)
        if text.isdigit():  # TDengine reads a bare number as minutes
            text = f"{text}m"
        return Duration.parse(text)


@dataclass(frozen=True)
class Table:
    """A supertable, subtable or normal table.

    For a subtable, ``columns`` and ``tags`` are the supertable's and ``tag_values`` maps tag name
    (lower case) to its value; ``stable`` names the supertable. ``storage`` names the Delta table
    holding its rows: the supertable for a subtable, itself otherwise.
    """

    db: str
    name: str
    kind: str
    columns: tuple[Column, ...]
    tags: tuple[Column, ...] = ()
    stable: str | None = None
    tag_values: dict[str, Any] = field(default_factory=dict)
    comment: str | None = None
    virtual: bool = False
    refs: dict[str, ColumnRef] = field(default_factory=dict)
    ttl: int = 0  # TTL in days of a normal or child table (0: never expires); "Manage Tables"

    @property
    def type_name(self) -> str:
        """TDengine's table type as ``information_schema.ins_tables.type`` reports it
        (``NORMAL_TABLE``, ``CHILD_TABLE``, ``VIRTUAL_NORMAL_TABLE``, ``VIRTUAL_CHILD_TABLE``;
        ``SUPER_TABLE`` for supertables, virtual or not)."""
        if self.kind == "super":
            return "SUPER_TABLE"
        base = "CHILD_TABLE" if self.kind == "sub" else "NORMAL_TABLE"
        return f"VIRTUAL_{base}" if self.virtual else base

    @property
    def storage(self) -> str:
        return self.stable if self.kind == "sub" and self.stable else self.name

    @property
    def ts_column(self) -> Column:
        """The primary timestamp column (always the first)."""
        return self.columns[0]

    def column(self, name: str) -> Column | None:
        """Column by case-insensitive name, or None."""
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None

    def tag(self, name: str) -> Column | None:
        """Tag by case-insensitive name, or None."""
        low = name.lower()
        for c in self.tags:
            if c.name.lower() == low:
                return c
        return None


class Catalog:
    """Catalog store over SQLite (embedded) or PostgreSQL (shared); safe for several processes,
    threads and hosts, with the same API and semantics on both backends.

    Args:
        root: the lake folder; the SQLite catalog file is ``<root>/_catalog.sqlite``.
        url: ``TDWEB_CATALOG_URL``: empty / None for the SQLite file, or a
            ``postgres://user:password@host:port/dbname`` (``postgresql://``) URL; the schema
            ``tdweb_catalog`` is created there on first use.

    Raises:
        CatalogError: INVALID_OPERATION when ``url`` is neither empty nor a PostgreSQL URL.
    """

    def __init__(self, root: str | Path, url: str | None = None) -> None:
        self.root = Path(root)
        if url and not _is_postgres_url(url):
            raise CatalogError(
                "TDWEB_CATALOG_URL must be empty (SQLite in the lake) or a postgres:// URL",
                code=Code.INVALID_OPERATION,
            )
        self._backend: _SqliteBackend | _PostgresBackend = (
            _PostgresBackend(url) if url else _SqliteBackend(self.root)
        )
        self.path = self._backend.path
        self.url = self._backend.url
        self._local = threading.local()
        self._backend.setup(self._con().raw)
        self._cache_version = -1
        self._tables_cache: dict[tuple[str, str], Table | None] = {}
        self._db_cache: dict[str, Database | None] = {}
        self._tags_cache: dict[tuple[str, str], pa.Table] = {}
        self._cache_lock = threading.Lock()

    # ------------------------------------------------------------------ plumbing
    def _con(self) -> _Con:
        """This thread's connection (a new one after a fork or a broken PostgreSQL link)."""
        pid = os.getpid()
        con: _Con | None = getattr(self._local, "con", None)
        if con is None or con.pid != pid or con.closed:
            con = _Con(self._backend.connect, self._backend.sql, pid)
            self._local.con = con
        return con

    @contextmanager
    def _tx(self) -> Iterator[_Con]:
        """A write transaction. Its first statement bumps the version row, which locks it: every
        catalog change, from any process or host, runs after the previous one committed, so its
        existence checks see all committed tables (SQLite: ``BEGIN IMMEDIATE`` besides)."""
        con = self._con()
        con.execute(self._backend.begin)
        con.in_tx = True
        try:
            con.execute("UPDATE meta SET v = v + 1 WHERE k = 'version'")
            yield con
        except BaseException:
            with contextlib.suppress(Exception):  # a broken link has rolled back already
                con.execute("ROLLBACK")
            raise
        else:
            con.execute("COMMIT")
        finally:
            con.in_tx = False

    def version(self) -> int:
        """Monotonic counter bumped by every catalog change (for caches)."""
        return int(self._con().execute("SELECT v FROM meta WHERE k = 'version'").fetchone()[0])

    def _refresh(self) -> None:
        v = self.version()
        if v != self._cache_version:
            with self._cache_lock:
                self._tables_cache.clear()
                self._db_cache.clear()
                self._tags_cache.clear()
                self._cache_version = v

    # ------------------------------------------------------------------ databases
    def create_database(
        self,
        name: str,
        *,
        precision: str = "ms",
        options: dict[str, Any] | None = None,
        if_not_exists: bool = False,
        now_ms: int = 0,
        owner: str | None = None,
    ) -> bool:
        """Create a database owned by user ``owner``; returns False if it existed and
        ``if_not_exists``.

        Raises:
            CatalogError: DB_ALREADY_EXIST.
        """
        with self._tx() as con:
            row = con.execute("SELECT 1 FROM databases WHERE key = ?", (name.lower(),)).fetchone()
            if row:
                if if_not_exists:
                    return False
                raise CatalogError(f"database {name} already exists", code=Code.DB_ALREADY_EXIST)
            con.execute(
                "INSERT INTO databases (key, name, precision, options, created_ms, owner) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name.lower(), name, precision, json.dumps(options or {}), now_ms, owner),
            )
        return True

    def drop_database(self, name: str) -> list[Table]:
        """Remove a database and its tables from the catalog; returns the dropped storage tables
        (supertables and normal tables) so their files can be removed."""
        with self._tx() as con:
            rows = con.execute(
                f"SELECT {_TABLE_COLUMNS} FROM tables WHERE db = ? AND kind != 'sub' AND virtual = 0",
                (name.lower(),),
            ).fetchall()
            con.execute("DELETE FROM tables WHERE db = ?", (name.lower(),))
            con.execute("DELETE FROM databases WHERE key = ?", (name.lower(),))
        return [self._row_table(r) for r in rows]

    def database(self, name: str) -> Database | None:
        """The database, or None."""
        self._refresh()
        key = name.lower()
        if key in self._db_cache:
            return self._db_cache[key]
        row = (
            self._con()
            .execute("SELECT name, precision, options, owner FROM databases WHERE key = ?", (key,))
            .fetchone()
        )
        db = Database(row[0], row[1], json.loads(row[2]), row[3]) if row else None
        self._db_cache[key] = db
        return db

    def require_database(self, name: str | None) -> Database:
        """The database; raises ``CatalogError`` (DB_NOT_EXIST / DB_NOT_SPECIFIED)."""
        if not name:
            raise CatalogError(
                "database not specified: qualify the table (db.table) or use /rest/sql/{db}",
                code=Code.DB_NOT_SPECIFIED,
            )
        db = self.database(name)
        if db is None:
            raise CatalogError(f"database {name} does not exist", code=Code.DB_NOT_EXIST)
        return db

    def databases(self) -> list[tuple[Database, int]]:
        """All databases with their creation time (epoch ms), by name."""
        rows = (
            self._con()
            .execute("SELECT name, precision, options, created_ms, owner FROM databases ORDER BY key")
            .fetchall()
        )
        return [(Database(r[0], r[1], json.loads(r[2]), r[4]), r[3]) for r in rows]

    # ------------------------------------------------------------------ tables
    def create_table(self, table: Table, *, if_not_exists: bool = False, now_ms: int = 0) -> bool:
        """Add a supertable, subtable or normal table; returns False if it existed (and
        ``if_not_exists``).

        Raises:
            CatalogError: the database is missing, the name is taken (by any kind of table), or a
                subtable's supertable is missing.
        """
        with self._tx() as con:
            if not con.execute("SELECT 1 FROM databases WHERE key = ?", (table.db.lower(),)).fetchone():
                raise CatalogError(f"database {table.db} does not exist", code=Code.DB_NOT_EXIST)
            row = con.execute(
                "SELECT kind, stable_key FROM tables WHERE db = ? AND key = ?",
                (table.db.lower(), table.name.lower()),
            ).fetchone()
            if row:
                if if_not_exists:
                    if table.kind == "sub" and (row[0] != "sub" or row[1] != (table.stable or "").lower()):
                        raise CatalogError(
                            f"table {table.name} already exists and is not a subtable of {table.stable}",
                            code=Code.TABLE_ALREADY_EXIST,
                        )
                    return False
                code = Code.STB_ALREADY_EXIST if row[0] == "super" else Code.TABLE_ALREADY_EXIST
                raise CatalogError(f"table {table.name} already exists", code=code)
            if table.kind == "sub":
                srow = con.execute(
                    "SELECT kind FROM tables WHERE db = ? AND key = ?",
                    (table.db.lower(), (table.stable or "").lower()),
                ).fetchone()
                if not srow or srow[0] != "super":
                    raise CatalogError(f"supertable {table.stable} does not exist", code=Code.STB_NOT_EXIST)
            con.execute(
                f"INSERT INTO tables ({_TABLE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    table.db.lower(),
                    table.name.lower(),
                    table.name,
                    table.kind,
                    (table.stable or "").lower() or None,
                    None if table.kind == "sub" else json.dumps([c.to_json() for c in table.columns]),
                    None if table.kind == "sub" else json.dumps([c.to_json() for c in table.tags]),
                    json.dumps(table.tag_values, default=_tag_json) if table.kind == "sub" else None,
                    table.comment,
                    now_ms,
                    int(table.virtual),
                    json.dumps({k: r.to_json() for k, r in table.refs.items()}) if table.refs else None,
                    table.ttl,
                ),
            )
        return True

    def create_subtables(self, tables: list[Table], *, now_ms: int = 0) -> int:
        """Add many subtables in one transaction, skipping names that exist as subtables of the
        same supertable; returns how many were created. Used by ingestion with auto-create."""
        with self._tx() as con:
            known = self._kinds(con, [(t.db.lower(), t.name.lower()) for t in tables])
            fresh: list[tuple[Any, ...]] = []
            for t in tables:
                key, skey = (t.db.lower(), t.name.lower()), (t.stable or "").lower()
                row = known.get(key)
                if row is not None:
                    if row != ("sub", skey):
                        raise CatalogError(
                            f"table {t.name} already exists and is not a subtable of {t.stable}",
                            code=Code.TABLE_ALREADY_EXIST,
                        )
                    continue
                known[key] = ("sub", skey)
                tags = json.dumps(t.tag_values, default=_tag_json)
                fresh.append((*key, t.name, skey, tags, t.comment, now_ms, t.ttl))
            if fresh:  # one batch (psycopg pipelines it): two round trips for any number of tables
                con.executemany(
                    f"INSERT INTO tables ({_TABLE_COLUMNS}) "
                    "VALUES (?, ?, ?, 'sub', ?, NULL, NULL, ?, ?, ?, 0, NULL, ?)",
                    fresh,
                )
        return len(fresh)

    @staticmethod
    def _kinds(con: _Con, keys: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
        """``(kind, stable key)`` of the existing tables among ``(db, key)`` pairs, in chunks of
        500 names (inside the caller's transaction)."""
        out: dict[tuple[str, str], tuple[str, str]] = {}
        for db in {d for d, _ in keys}:
            names = sorted({k for d, k in keys if d == db})
            for i in range(0, len(names), 500):
                chunk = names[i : i + 500]
                rows = con.execute(
                    "SELECT key, kind, stable_key FROM tables WHERE db = ? AND key IN ({})".format(
                        ",".join("?" * len(chunk))
                    ),
                    [db, *chunk],
                ).fetchall()
                out.update({(db, r[0]): (r[1], r[2] or "") for r in rows})
        return out

    def drop_table(self, db: str, name: str) -> Table | None:
        """Remove a table (a supertable with its subtables); returns what was removed."""
        t = self.table(db, name)
        if t is None:
            return None
        with self._tx() as con:
            # a virtual table's columns may reference this table: they read NULL from now on
            # (TDengine SQL manual, "Virtual Tables"; seed 000 restriction 3 for streams)
            con.execute("DELETE FROM tables WHERE db = ? AND key = ?", (db.lower(), name.lower()))
            if t.kind == "super":
                con.execute("DELETE FROM tables WHERE db = ? AND stable_key = ?", (db.lower(), name.lower()))
        return t

    def _row_table(self, row: tuple[Any, ...], stable: Table | None = None) -> Table:
        (
            db,
            _key,
            name,
            kind,
            _stable_key,
            columns,
            tags,
            tag_values,
            comment,
            _created,
            virtual,
            refs,
            ttl,
        ) = row
        ref_map = {k: ColumnRef.from_json(v) for k, v in json.loads(refs or "{}").items()}
        if kind == "sub":
            assert stable is not None
            return Table(
                stable.db,
                name,
                "sub",
                stable.columns,
                stable.tags,
                stable.name,
                _tag_values_from_json(json.loads(tag_values or "{}"), stable.tags),
                comment,
                bool(virtual),
                ref_map,
                int(ttl or 0),
            )
        database = self.database(db)
        return Table(
            database.name if database else db,
            name,
            kind,
            tuple(Column.from_json(c) for c in json.loads(columns or "[]")),
            tuple(Column.from_json(c) for c in json.loads(tags or "[]")),
            None,
            {},
            comment,
            bool(virtual),
            ref_map,
            int(ttl or 0),
        )

    def table(self, db: str, name: str) -> Table | None:
        """Any table by name (case-insensitive), or None."""
        self._refresh()
        key = (db.lower(), name.lower())
        if key in self._tables_cache:
            return self._tables_cache[key]
        row = (
            self._con()
            .execute(f"SELECT {_TABLE_COLUMNS} FROM tables WHERE db = ? AND key = ?", key)
            .fetchone()
        )
        result: Table | None = None
        if row is not None:
            if row[3] == "sub":
                stable = self.table(db, row[4])
                result = self._row_table(row, stable) if stable else None
            else:
                result = self._row_table(row)
        with self._cache_lock:
            self._tables_cache[key] = result
        return result

    def existing(self, db: str, names: list[str]) -> set[str]:
        """The lower-cased names of ``names`` that are tables of database ``db``: one version
        round trip, then the per-process cache, and one query per 500 names it does not hold."""
        self._refresh()
        dbk = db.lower()
        keys = list(dict.fromkeys(n.lower() for n in names))
        with self._cache_lock:
            cached = {k: self._tables_cache[(dbk, k)] for k in keys if (dbk, k) in self._tables_cache}
        found = {k for k, t in cached.items() if t is not None}
        rest = [k for k in keys if k not in cached]
        for i in range(0, len(rest), 500):
            part = rest[i : i + 500]
            q = "SELECT key FROM tables WHERE db = ? AND key IN ({})".format(",".join("?" * len(part)))
            found.update(r[0] for r in self._con().execute(q, [dbk, *part]).fetchall())
        return found

    def require_table(self, db: str, name: str) -> Table:
        """The table; raises ``CatalogError`` TABLE_NOT_EXIST."""
        t = self.table(db, name)
        if t is None:
            raise CatalogError(f"table {db}.{name} does not exist", code=Code.TABLE_NOT_EXIST)
        return t

    def expired_tables(self, db: str, now_ms: int) -> list[str]:
        """Names of ``db``'s normal and child tables whose TTL has run out at ``now_ms`` (epoch
        ms): ``ttl > 0`` and ``created_ms + ttl days <= now_ms`` (TDengine SQL manual, "Manage
        Tables": TTL counts days from the table's creation; 0 never expires), by name."""
        rows = (
            self._con()
            .execute(
                "SELECT name, created_ms, ttl FROM tables WHERE db = ? AND kind != 'super' AND ttl > 0 "
                "ORDER BY key",
                (db.lower(),),
            )
            .fetchall()
        )
        return [name for name, created, ttl in rows if int(created) + int(ttl) * 86_400_000 <= now_ms]

    def tables(
        self,
        db: str,
        *,
        kinds: tuple[str, ...] = ("super", "sub", "normal"),
        stable: str | None = None,
        virtual: bool | None = None,
    ) -> list[tuple[str, str, str | None, int]]:
        """``(name, kind, stable name, created_ms)`` of a database's tables, by name; ``virtual``
        True / False keeps only virtual / physical tables (None: both)."""
        q = "SELECT name, kind, stable_key, created_ms FROM tables WHERE db = ? AND kind IN ({})".format(
            ",".join("?" * len(kinds))
        )
        args: list[Any] = [db.lower(), *kinds]
        if virtual is not None:
            q += " AND virtual = ?"
            args.append(int(virtual))
        if stable is not None:
            q += " AND stable_key = ?"
            args.append(stable.lower())
        rows = self._con().execute(q + " ORDER BY key", args).fetchall()
        names = {r[0].lower(): r[0] for r in rows if r[1] == "super"}
        out = []
        for name, kind, skey, created in rows:
            sname = None
            if skey:
                sname = names.get(skey)
                if sname is None:
                    st = self.table(db, skey)
                    sname = st.name if st else skey
            out.append((name, kind, sname, created))
        return out

    def subtable_tags(self, db: str, stable: str) -> pa.Table:
        """Tag values of every subtable of ``stable``: columns ``tbname`` then one per tag, typed
        as stored (Arrow); cached until the catalog changes."""
        self._refresh()
        key = (db.lower(), stable.lower())
        cached = self._tags_cache.get(key)
        if cached is not None:
            return cached
        st = self.require_table(db, stable)
        rows = (
            self._con()
            .execute(
                "SELECT name, tag_values FROM tables WHERE db = ? AND stable_key = ? AND kind = 'sub' "
                "ORDER BY key",
                (db.lower(), stable.lower()),
            )
            .fetchall()
        )
        cols: dict[str, list[Any]] = {"tbname": [r[0] for r in rows]}
        values = [json.loads(r[1] or "{}") for r in rows]
        db_obj = self.require_database(db)
        fields = [pa.field("tbname", pa.string())]
        arrays = [pa.array(cols["tbname"], pa.string())]
        for tag in st.tags:
            t = tag.type.arrow(db_obj.precision)
            raw = [v.get(tag.name.lower()) for v in values]
            if tag.type.name in BINARY_TYPES:  # kept as hex text in the catalog
                raw = [bytes.fromhex(x) if isinstance(x, str) else x for x in raw]
            if tag.type.name == "TIMESTAMP":
                arr = pa.array(raw, pa.int64())
                arr = (
                    arr
                    if db_obj.precision == "ns"
                    else pa.compute.multiply(arr, {"ms": 1000, "us": 1}[db_obj.precision]).cast(t)
                )
            else:
                arr = pa.array(raw, t)
            fields.append(pa.field(tag.physical, t))
            arrays.append(arr)
        out = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
        with self._cache_lock:
            self._tags_cache[key] = out
        return out

    def set_tag_value(self, db: str, name: str, tag: str, value: Any) -> None:
        """``ALTER TABLE t SET TAG tag = value`` on a subtable."""
        t = self.require_table(db, name)
        if t.kind != "sub":
            raise CatalogError(f"{name} is not a subtable", code=Code.INVALID_OPERATION)
        vals = dict(t.tag_values)
        vals[tag.lower()] = value
        with self._tx() as con:
            con.execute(
                "UPDATE tables SET tag_values = ? WHERE db = ? AND key = ?",
                (json.dumps(vals, default=_tag_json), db.lower(), name.lower()),
            )

    # ------------------------------------------------------------------ ALTER
    def alter_database(self, name: str, options: dict[str, Any]) -> None:
        """Replace a database's ``options`` (ALTER DATABASE, TDengine SQL manual "Manage
        Databases"); the precision never changes.

        Raises:
            CatalogError: DB_NOT_EXIST.
        """
        with self._tx() as con:
            if not con.execute("SELECT 1 FROM databases WHERE key = ?", (name.lower(),)).fetchone():
                raise CatalogError(f"database {name} does not exist", code=Code.DB_NOT_EXIST)
            con.execute("UPDATE databases SET options = ? WHERE key = ?", (json.dumps(options), name.lower()))

    def alter_table(
        self,
        table: Table,
        *,
        tag_renames: dict[str, str | None] | None = None,
        column_rename: tuple[str, str] | None = None,
        child_ref_drop: str | None = None,
    ) -> None:
        """Store the new definition of an existing table (ALTER STABLE / ALTER TABLE, TDengine SQL
        manual "Manage Supertables", "Manage Tables"): a supertable's or normal table's ``columns``,
        ``tags`` and ``comment``; a subtable's ``comment`` and ``tag_values``.

        ``tag_renames`` maps lower-case tag names to their new lower-case name (RENAME TAG) or None
        (DROP TAG): every subtable's stored value moves or goes in the same transaction, so a tag
        added later under a dropped name reads NULL, never the old values. ``column_rename``
        ``(old, new)`` (RENAME COLUMN of a normal table) moves the column references of every
        virtual table that reads it (``col FROM db.table.old``) to the new name, in the same
        transaction. A virtual table's ``refs`` are stored too (ALTER VTABLE); ``child_ref_drop``
        (a lower-case column name, DROP COLUMN of a virtual supertable) removes that column's
        reference from every child table of ``table`` in the same transaction, so a column added
        later under that name reads NULL, never the old source.

        Raises:
            CatalogError: TABLE_NOT_EXIST when the table is gone.
        """
        key = (table.db.lower(), table.name.lower())
        refs = json.dumps({k: r.to_json() for k, r in table.refs.items()}) if table.refs else None
        with self._tx() as con:
            if not con.execute("SELECT 1 FROM tables WHERE db = ? AND key = ?", key).fetchone():
                raise CatalogError(f"table {table.db}.{table.name} does not exist", code=Code.TABLE_NOT_EXIST)
            if table.virtual:
                con.execute("UPDATE tables SET refs = ? WHERE db = ? AND key = ?", (refs, *key))
            if child_ref_drop:
                self._drop_child_refs(con, key, child_ref_drop)
            con.execute("UPDATE tables SET ttl = ? WHERE db = ? AND key = ?", (table.ttl, *key))
            if table.kind == "sub":
                con.execute(
                    "UPDATE tables SET comment = ?, tag_values = ? WHERE db = ? AND key = ?",
                    (table.comment, json.dumps(table.tag_values, default=_tag_json), *key),
                )
                return
            con.execute(
                "UPDATE tables SET columns = ?, tags = ?, comment = ? WHERE db = ? AND key = ?",
                (
                    json.dumps([c.to_json() for c in table.columns]),
                    json.dumps([c.to_json() for c in table.tags]),
                    table.comment,
                    *key,
                ),
            )
            if tag_renames:
                self._move_tag_values(con, key, tag_renames)
            if column_rename:
                self._move_column_refs(con, key, column_rename)

    @staticmethod
    def _drop_child_refs(con: _Con, stable: tuple[str, str], column: str) -> None:
        """Remove the reference of ``column`` (lower case) from every child of virtual supertable
        ``stable`` (lower-case db, name)."""
        changed = []
        for ckey, raw in con.execute(
            "SELECT key, refs FROM tables WHERE db = ? AND stable_key = ? AND refs IS NOT NULL", stable
        ).fetchall():
            refs = json.loads(raw or "{}")
            if refs.pop(column, None) is not None:
                changed.append((json.dumps(refs) if refs else None, stable[0], ckey))
        if changed:
            con.executemany("UPDATE tables SET refs = ? WHERE db = ? AND key = ?", changed)

    @staticmethod
    def _move_column_refs(con: _Con, table: tuple[str, str], rename: tuple[str, str]) -> None:
        """Point the virtual tables' references to column ``rename[0]`` of ``table`` (lower-case
        db, name) at ``rename[1]``."""
        changed = []
        for vdb, vkey, raw in con.execute(
            "SELECT db, key, refs FROM tables WHERE refs IS NOT NULL"
        ).fetchall():
            refs = json.loads(raw or "{}")
            hit = False
            for ref in refs.values():  # [db, table, column] as written
                if (ref[0].lower(), ref[1].lower()) == table and ref[2].lower() == rename[0].lower():
                    ref[2], hit = rename[1], True
            if hit:
                changed.append((json.dumps(refs), vdb, vkey))
        if changed:
            con.executemany("UPDATE tables SET refs = ? WHERE db = ? AND key = ?", changed)

    @staticmethod
    def _move_tag_values(con: _Con, stable: tuple[str, str], renames: dict[str, str | None]) -> None:
        """Rename or remove tag keys in the stored values of every subtable of ``stable``."""
        rows = con.execute(
            "SELECT key, tag_values FROM tables WHERE db = ? AND stable_key = ? AND kind = 'sub'", stable
        ).fetchall()
        changed = []
        for sub_key, raw in rows:
            values = json.loads(raw or "{}")
            for old, new in renames.items():
                value = values.pop(old, None)
                if new is not None:
                    values[new] = value
            changed.append((json.dumps(values, default=_tag_json), stable[0], sub_key))
        if changed:
            con.executemany("UPDATE tables SET tag_values = ? WHERE db = ? AND key = ?", changed)


def _tag_json(v: Any) -> Any:
    """How the catalog keeps a tag value JSON has no form for: VARBINARY and GEOMETRY bytes as hex
    text (read back by :func:`_tag_values_from_json`), anything else as its text."""
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def _tag_values_from_json(values: dict[str, Any], tags: tuple[Column, ...]) -> dict[str, Any]:
    """Tag values as kept in the catalog -> Python values (hex text -> bytes for binary tags)."""
    out = dict(values)
    for tag in tags:
        key = tag.name.lower()
        if tag.type.name in BINARY_TYPES and isinstance(out.get(key), str):
            out[key] = bytes.fromhex(out[key])
    return out
