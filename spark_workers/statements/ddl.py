"""Databases and tables: CREATE/DROP DATABASE, USE, CREATE STABLE/TABLE (and subtables), DROP
TABLE/STABLE (TDengine SQL manual "Databases", "Tables", "Supertables"; names follow
``lake/names.py``, privileges ``spark_workers.access``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from sqlglot import exp

from spark_workers import access
from spark_workers.access import WRITE
from spark_workers.duration import PRECISIONS, Duration
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake import retention
from spark_workers.lake.catalog import Catalog, Column, Database, Table, physical_names
from spark_workers.lake.keys import check_composite_key
from spark_workers.lake.names import SYSTEM_DATABASES, check_name
from spark_workers.lake.virtual import storages
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.parser import parse_one
from spark_workers.sql.values import Now
from spark_workers.statements.session import Session
from spark_workers.statements.stream_commands import drop_output_subtables

_log = logging.getLogger(__name__)

MAX_COLUMNS = 4096
CACHEMODELS = ("none", "last_row", "last_value", "both")


def check_cachemodel(value: object) -> None:
    """CACHEMODEL is one of 'none', 'last_row', 'last_value', 'both' (TDengine SQL manual,
    "Manage Databases"); stored and shown, it changes no result (tdweb has no last-row cache).

    Raises:
        SqlError: 0x2619 Invalid database option.
    """
    if str(value).strip("'\"").lower() not in CACHEMODELS:
        raise SqlError(
            f"Invalid database option: CACHEMODEL {value}: one of {', '.join(CACHEMODELS)}",
            code=Code.INVALID_DB_OPTION,
        )


def create_database(ex: Session, s: ast.CreateDatabase, sql: str) -> ResultSet:
    _name_ok(s.name, "database", sql, s.span)
    if not (ex.principal.super or ex.principal.createdb):
        raise CatalogError(
            f"Insufficient privilege for operation: user {ex.principal.name} may not create "
            "databases (CREATEDB 0; a superuser can ALTER USER ... CREATEDB 1)",
            code=Code.NO_RIGHTS,
        )
    opts = dict(s.options)
    precision = str(opts.get("PRECISION", "ms")).strip("'\"").lower()
    if precision not in PRECISIONS:
        raise SqlError(
            f"invalid PRECISION {precision!r}: use 'ms', 'us' or 'ns'",
            sql=sql,
            code=Code.INVALID_OPERATION,
        )
    opts["PRECISION"] = precision
    if "DURATION" in opts:
        text = str(opts["DURATION"]).strip("'\"")
        d = Duration.parse(text if not text.isdigit() else f"{text}m")
        if d.is_calendar or d.ns < 60 * 1_000_000_000:
            raise SqlError("DURATION must be at least 1m", sql=sql, code=Code.INVALID_OPERATION)
    retention.check_options(opts, Database(s.name, precision, opts))  # KEEP is enforced: lake/retention.py
    if "CACHEMODEL" in opts:
        check_cachemodel(opts["CACHEMODEL"])
    ex.catalog.create_database(
        s.name,
        precision=precision,
        options=opts,
        if_not_exists=s.if_not_exists,
        now_ms=int(time.time() * 1000),
        owner=ex.principal.name,
    )
    return ResultSet.affected(0)


def drop_database(ex: Session, s: ast.DropDatabase, sql: str) -> ResultSet:
    db = ex.catalog.database(s.name)
    if db is None:
        if s.if_exists:
            return ResultSet.affected(0)
        raise CatalogError(f"database {s.name} does not exist", code=Code.DB_NOT_EXIST)
    access.require_owner(ex.principal, db, "drop database")
    readers, owned = _stream_dependents(ex.registry.list(), db.name, ex.default_db, ex.catalog)
    if readers and not s.force:
        # seed 002 "Database and Table Operations": not allowed for a source database, or a
        # trigger table's database other than the stream's own, unless FORCE
        raise CatalogError(
            f"database {db.name} is read by stream(s) {', '.join(readers)}; "
            "drop them first or use DROP DATABASE ... FORCE",
            code=Code.INVALID_OPERATION,
        )
    for info in owned:  # a stream belongs to its database (seed 002): it goes with it
        ex.registry.drop(info.name, info.db)
    ex.catalog.drop_database(db.name)
    ex.lake.drop_database_storage(db.name)
    return ResultSet.affected(0)


def use_database(ex: Session, s: ast.UseDatabase, sql: str) -> ResultSet:
    if s.name.lower() in SYSTEM_DATABASES:  # TDengine: USE information_schema / performance_schema
        ex.default_db = s.name.lower()
        return ResultSet.affected(0)
    ex.default_db = ex.visible_database(s.name).name
    return ResultSet.affected(0)


def columns(ex: Session, defs: list[ast.ColumnDef], sql: str, *, tags: bool = False) -> tuple[Column, ...]:
    seen: set[str] = set()
    names = []
    for i, d in enumerate(defs):
        check_name(d.name, "tag" if tags else "column", sql=sql, offset=d.span.start if d.span else None)
        low = d.name.lower()
        if low in seen:
            raise SqlError(
                f"duplicate {'tag' if tags else 'column'} name {d.name}",
                sql=sql,
                offset=d.span.start if d.span else None,
                code=Code.INVALID_COLUMN,
            )
        if low == "tbname":
            raise SqlError(
                "tbname is reserved",
                sql=sql,
                offset=d.span.start if d.span else None,
                code=Code.INVALID_COLUMN,
            )
        seen.add(low)
        names.append(d.name)
        if not tags and i == 0 and d.type.name != "TIMESTAMP":
            raise SqlError(
                "the first column must be of type TIMESTAMP",
                sql=sql,
                offset=d.span.start if d.span else None,
                code=Code.INVALID_COLUMN,
            )
        if d.composite_key:
            check_composite_key(d.name, d.type, i, sql=sql, offset=d.span.start if d.span else None, tag=tags)
    phys = (
        physical_names(names)
        if not tags
        else [n.lower() if n.isidentifier() else f"_t{i}" for i, n in enumerate(names)]
    )
    return tuple(
        Column(d.name, d.type, p, d.comment, d.composite_key) for d, p in zip(defs, phys, strict=True)
    )


def create_table(ex: Session, s: ast.CreateTable, sql: str) -> ResultSet:
    dbname = ex.db_name(s.table.db)
    db = ex.catalog.require_database(dbname)
    ex.require(WRITE, db, sql=sql, span=s.table.span)
    _name_ok(s.table.name, "table", sql, s.table.span)
    if len(s.columns) < 1 or len(s.columns) + len(s.tags) > MAX_COLUMNS:
        raise SqlError(
            f"a table needs 1 to {MAX_COLUMNS} columns and tags", sql=sql, code=Code.INVALID_COLUMN
        )
    cols = columns(ex, s.columns, sql)
    tags = columns(ex, s.tags, sql, tags=True) if s.kind == "super" else ()
    if s.kind == "super" and not tags:
        raise SqlError("a supertable needs at least one tag", sql=sql, code=Code.INVALID_COLUMN)
    clash = {c.name.lower() for c in cols} & {t.name.lower() for t in tags}
    if clash:
        raise SqlError(
            f"tag and column names must differ: {', '.join(sorted(clash))}",
            sql=sql,
            code=Code.INVALID_COLUMN,
        )
    if s.virtual:  # a virtual supertable holds no rows: only its template is kept
        table = Table(dbname, s.table.name, s.kind, cols, tags, comment=s.comment, virtual=True)
        ex.catalog.create_table(table, if_not_exists=s.if_not_exists, now_ms=int(time.time() * 1000))
        return ResultSet.affected(0)
    table = Table(dbname, s.table.name, s.kind, cols, tags, comment=s.comment, ttl=s.ttl or 0)
    ex.lake.create_table(db, table, if_not_exists=s.if_not_exists)
    return ResultSet.affected(0)


def tag_values(ex: Session, stable: Table, d: ast.SubtableDef, sql: str) -> dict[str, Any]:
    db = ex.catalog.require_database(stable.db)
    names = d.tag_names or [t.name for t in stable.tags]
    if len(names) != len(d.tag_values):
        raise SqlError(
            f"{len(d.tag_values)} tag values for {len(names)} tags of {stable.name}",
            sql=sql,
            offset=d.span.start if d.span else None,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    values: dict[str, Any] = {t.name.lower(): None for t in stable.tags}
    now = Now()
    for name, node in zip(names, d.tag_values, strict=True):
        tag = stable.tag(name)
        if tag is None:
            raise SqlError(
                f"invalid tag name {name} for supertable {stable.name}", sql=sql, code=Code.INVALID_COLUMN
            )
        values[tag.name.lower()] = ex.value(
            node,
            tag.type,
            db.precision,
            now,
            f"tag {tag.name} {tag.type.sql}",
            sql=sql,
            offset=offset_of(node),
        )
    return values


def subtable(ex: Session, d: ast.SubtableDef, sql: str) -> Table:
    dbname = ex.db_name(d.table.db or d.using.db)
    stable = ex.catalog.table(dbname, d.using.name)
    if stable is None or stable.kind != "super":
        raise SqlError(
            f"supertable {d.using.name} does not exist",
            sql=sql,
            offset=d.using.span.start if d.using.span else None,
            code=Code.STB_NOT_EXIST,
        )
    if stable.virtual:
        raise SqlError(
            f"Create child table using virtual super table: {stable.name} is virtual; its child "
            "tables are created with CREATE VTABLE ... USING",
            sql=sql,
            offset=d.using.span.start if d.using.span else None,
            code=Code.CHILD_OF_VIRTUAL_STABLE,
        )
    _name_ok(d.table.name, "table", sql, d.table.span)
    db = ex.catalog.require_database(dbname)
    ex.require(WRITE, db, stable.name, sql=sql, span=d.table.span)
    return Table(
        dbname,
        d.table.name,
        "sub",
        stable.columns,
        stable.tags,
        stable.name,
        tag_values(ex, stable, d, sql),
        comment=d.comment,
        ttl=d.ttl or 0,
    )


def create_subtables(ex: Session, s: ast.CreateSubtables, sql: str) -> ResultSet:
    tables = [subtable(ex, d, sql) for d in s.items]
    for t, d in zip(tables, s.items, strict=True):
        ex.catalog.create_table(t, if_not_exists=d.if_not_exists, now_ms=int(time.time() * 1000))
    return ResultSet.affected(0)


def drop_table(ex: Session, s: ast.DropTable, sql: str) -> ResultSet:
    for name in s.tables:
        dbname = ex.db_name(name.db)
        t = ex.catalog.table(dbname, name.name)
        if t is None or (s.super_only and t.kind != "super") or (s.virtual and t.kind == "super"):
            if s.if_exists:
                continue
            raise SqlError(
                f"table {dbname}.{name.name} does not exist",
                sql=sql,
                offset=name.span.start if name.span else None,
                code=Code.STB_NOT_EXIST if s.super_only else Code.TABLE_NOT_EXIST,
            )
        if t.kind != "super" and t.virtual != s.virtual:
            raise SqlError(
                f"Invalid table type: {dbname}.{t.name} is "
                + ("a virtual table: drop it with DROP VTABLE" if t.virtual else "not a virtual table"),
                sql=sql,
                offset=name.span.start if name.span else None,
                code=Code.INVALID_TABLE_TYPE,
            )
        db = ex.catalog.require_database(dbname)
        ex.require(WRITE, db, t.storage if t.kind == "sub" else None, sql=sql, span=name.span)
        if t.virtual:  # no rows of its own (a virtual supertable goes with its child tables)
            ex.catalog.drop_table(dbname, t.name)
        elif t.kind == "sub":
            stable = ex.catalog.require_table(dbname, t.storage)
            ex.lake.delete(db, stable, ts_min=None, ts_max=None, tbnames=[t.name])
            ex.catalog.drop_table(dbname, t.name)
            drop_output_subtables(ex, dbname, t)  # streams with DELETE_OUTPUT_TABLE (seed 002)
        else:
            ex.catalog.drop_table(dbname, t.name)
            ex.lake.drop_storage(dbname, t.name)
    return ResultSet.affected(0)


def _name_ok(name: str, what: str, sql: str, span: ast.Span | None) -> None:
    """TDengine's naming rules for a ``what`` name (``lake/names.py``), positioned at ``span``."""
    check_name(name, what, sql=sql, offset=span.start if span else None)


def _stream_dependents(
    streams: list[Any], db: str, default_db: str | None, catalog: Catalog
) -> tuple[list[str], list[Any]]:
    """Streams that read database ``db`` (trigger table or computation) and belong to another
    database, and the streams that belong to ``db`` itself (3.3.7 ``CREATE STREAM db.name``)."""

    readers: list[str] = []
    owned: list[Any] = []
    low = db.lower()
    for info in streams:
        spec = info.spec
        own = (spec.db or "").lower()
        if own == low:
            owned.append(info)
            continue
        dbs = {spec.source.db.lower()} if spec.source else set()
        if spec.query:
            try:
                stmt = parse_one(spec.query)
                sel = getattr(getattr(stmt, "query", None), "select", None)
                if sel is not None:
                    home = (spec.source.db if spec.source else default_db) or ""
                    dbs |= {(t.db or home).lower() for t in sel.find_all(exp.Table) if t.name}
            except SqlError:
                pass
        if low in dbs or low in _virtual_dbs(catalog, dbs, spec):
            readers.append(info.name)
    return readers, owned


def _virtual_dbs(catalog: Catalog, dbs: set[str], spec: Any) -> set[str]:
    """Databases a stream's virtual trigger table reads (seed 002 "Database and Table
    Operations": dropping them is not allowed without FORCE)."""
    out: set[str] = set()
    src = spec.source
    t = catalog.table(src.db, src.table) if src and catalog.database(src.db) else None
    if t is not None and t.virtual:
        out |= {d.lower() for d, _ in storages(catalog, t)}
    return out


def _stream_tables(ex: Session) -> set[tuple[str, str]]:
    """``(db, table)`` (lower case) of every table a stream of the registry reads or writes: its
    trigger table (a virtual one: the physical tables it reads too) and its output table."""
    used: set[tuple[str, str]] = set()
    for info in ex.registry.list():
        spec = info.spec
        for end in (spec.source, spec.output):
            if end is None:
                continue
            used.add((end.db.lower(), end.table.lower()))
            t = ex.catalog.table(end.db, end.table)
            if t is not None and t.virtual:
                used.update((d.lower(), s.lower()) for d, s in storages(ex.catalog, t))
    return used


def drop_expired_tables(ex: Session, *, now_ms: int) -> list[str]:
    """Drop every normal and child table whose TTL has run out at ``now_ms`` (epoch ms;
    ``Catalog.expired_tables``: created ``ttl`` days ago or more), through DROP TABLE's own code
    path (:func:`drop_table`: rows, catalog entry, DELETE_OUTPUT_TABLE). TDengine SQL manual,
    "Manage Tables": "TTL ... a table is deleted automatically after its TTL expires, counted
    from its creation". A table a stream reads or writes (:func:`_stream_tables`; a child table
    counts when its supertable is) is kept and logged, as TDengine keeps a stream's tables.
    Difference: TDengine deletes expired tables lazily in its vnodes; tdweb deletes them in the
    hourly retention job (``lake.retain``), so an expired table stays queryable until it runs.
    Returns the dropped tables as ``db.name``; a table that fails is logged and the rest go on."""
    used = _stream_tables(ex)
    dropped: list[str] = []
    for db, _created in ex.catalog.databases():
        for name in ex.catalog.expired_tables(db.name, now_ms):
            t = ex.catalog.table(db.name, name)
            if t is None:
                continue
            if {(db.name.lower(), name.lower()), (db.name.lower(), t.storage.lower())} & used:
                _log.info("TTL of %s.%s expired; kept: a stream reads or writes it", db.name, name)
                continue
            target = ast.TableName(name=name, db=db.name)
            try:
                drop_table(ex, ast.DropTable(tables=[target], if_exists=True, virtual=t.virtual), "")
            except Exception:
                _log.exception("dropping %s.%s (TTL expired) failed", db.name, name)
                continue
            dropped.append(f"{db.name}.{name}")
    if dropped:
        _log.info("TTL expired: dropped %s", ", ".join(dropped))
    return dropped
