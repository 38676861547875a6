"""ALTER DATABASE, ALTER STABLE, ALTER TABLE and ALTER VTABLE (TDengine SQL manual "Manage
Databases", "Manage Supertables", "Manage Tables", "Virtual Tables"), with the schema evolution of
the Delta tables behind them. ALTER DATABASE KEEP / KEEP_TIME_OFFSET apply retention
(``lake/retention.py``: hidden from queries, refused by INSERT, deleted from the Delta tables).

What each clause does to stored rows (rows are never rewritten):

- ADD COLUMN: ``Lake.add_columns`` adds a nullable field to the Delta schema
  (``DeltaTable.alter.add_columns``, a metadata-only commit without change-feed rows); rows written
  before read NULL in it.
- DROP COLUMN: the column leaves the catalog; its field stays in the Delta schema and data files
  (like Delta's column mapping, the catalog's logical -> physical names are the mapping), unseen
  by every read; a column added later never reuses its physical name, so it reads NULL, not the
  dropped values. No file is rewritten: the change feed shows nothing.
- MODIFY COLUMN / TAG: only VARCHAR / NCHAR lengths grow (TDengine: "the length can only be
  increased"); both are Arrow strings in storage, so stored values are kept as they are.
- RENAME COLUMN (normal tables) / RENAME TAG: the logical name changes, the physical name stays.
- ADD / DROP / RENAME TAG, SET TAG: tags live in the catalog (``Catalog.alter_table`` moves every
  subtable's stored value in the same transaction); a new tag reads NULL.

Virtual tables (TDengine SQL manual, "Virtual Tables"): ALTER VTABLE and ALTER STABLE of a virtual
supertable change the catalog only (:func:`_alter_vcolumn`).

Streams (seed 002, "Database and Table Operations"): changing the tag value of a subtable of a
stream's trigger supertable is refused when the stream groups by that tag (PARTITION BY); so is a
column change of a virtual table a stream reads (seed 000, "Support for Virtual Tables in Stream
Computing"); every other ALTER is "ignored; no additional handling" by streams (a running stream
keeps its compiled form).

Privileges (``spark_workers.access``): ALTER DATABASE is for the database's owner and superusers;
ALTER STABLE / TABLE needs WRITE on the database (a subtable's SET TAG / COMMENT: WRITE on its
supertable).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from sqlglot import exp

from spark_workers import access
from spark_workers.access import WRITE
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake import retention
from spark_workers.lake.catalog import RESERVED_PHYSICAL, Column, Database, Table
from spark_workers.lake.names import check_name
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.ast import Span, offset_of
from spark_workers.sql.parser import parse_expression
from spark_workers.sql.parser.tables import INT32_MAX
from spark_workers.sql.values import Now
from spark_workers.statements import vtables
from spark_workers.statements.ddl import check_cachemodel
from spark_workers.statements.session import Session
from spark_workers.tdtypes import VAR_TYPES

MAX_COLUMNS = 4096
MAX_TAGS = 128  # TDengine SQL manual, "Manage Supertables": ADD TAG
MAX_COMMENT_BYTES = 1024  # TDengine SQL manual, "Manage Tables": COMMENT

# TDengine's alter_database_option list ("Manage Databases", 3.3): the options ALTER DATABASE takes.
ALTERABLE_DB_OPTIONS = frozenset(
    {
        "CACHEMODEL", "CACHESIZE", "BUFFER", "PAGES", "REPLICA", "STT_TRIGGER", "WAL_LEVEL",
        "WAL_FSYNC_PERIOD", "KEEP", "KEEP_TIME_OFFSET", "WAL_RETENTION_PERIOD", "WAL_RETENTION_SIZE",
        "MINROWS", "SS_KEEPLOCAL", "SS_COMPACT", "COMPACT_INTERVAL", "COMPACT_TIME_RANGE",
        "COMPACT_TIME_OFFSET",
    }
)  # fmt: skip
# The alterable options tdweb applies, stored by ``Catalog.alter_database`` and shown by SHOW CREATE
# DATABASE / ins_databases: KEEP and KEEP_TIME_OFFSET (``lake/retention.py``) and CACHEMODEL
# (TDengine's last-row cache only makes LAST / LAST_ROW faster; tdweb has no such cache and the
# results are the same whatever its value: stored and shown, no effect on any result).
HONOURED_DB_OPTIONS = frozenset({"KEEP", "KEEP_TIME_OFFSET", "CACHEMODEL"})
# What each refused option would need in tdweb (it has no vnodes, cache, WAL or compaction policy).
_NO_MEANING = {
    "CACHESIZE": "vnode last-row cache",
    "BUFFER": "vnode write buffers",
    "PAGES": "vnode metadata pages",
    "STT_TRIGGER": "TDengine's file-merge trigger",
    "WAL_LEVEL": "write-ahead log (Delta commits are atomic)",
    "WAL_FSYNC_PERIOD": "write-ahead log",
    "WAL_RETENTION_PERIOD": "write-ahead log",
    "WAL_RETENTION_SIZE": "write-ahead log",
    "MINROWS": "TDengine's data blocks",
    "SS_KEEPLOCAL": "shared storage tiers",
    "SS_COMPACT": "shared storage tiers",
    "COMPACT_INTERVAL": "TDengine's automatic compaction (the lake.compact job compacts files hourly)",
    "COMPACT_TIME_RANGE": "TDengine's automatic compaction",
    "COMPACT_TIME_OFFSET": "TDengine's automatic compaction",
}
STABLE_ACTIONS = frozenset({"ADD COLUMN", "DROP COLUMN", "MODIFY COLUMN", "ADD TAG", "DROP TAG",
                            "MODIFY TAG", "RENAME TAG", "OPTIONS"})  # fmt: skip
NORMAL_ACTIONS = frozenset({"ADD COLUMN", "DROP COLUMN", "MODIFY COLUMN", "RENAME COLUMN", "OPTIONS"})
SUB_ACTIONS = frozenset({"SET TAG", "OPTIONS"})
# ALTER VTABLE (TDengine SQL manual, "Virtual Tables"): a virtual normal table's columns and their
# sources; a virtual child table's sources and tags (its columns are its supertable's).
VNORMAL_ACTIONS = frozenset({"ADD COLUMN", "DROP COLUMN", "MODIFY COLUMN", "RENAME COLUMN", "ALTER COLUMN"})
VCHILD_ACTIONS = frozenset({"ALTER COLUMN", "SET TAG"})


def _err(message: str, sql: str, span: Span | None, code: int) -> SqlError:
    return SqlError(message, sql=sql, offset=span.start if span else None, code=code)


# --------------------------------------------------------------------------- ALTER DATABASE


def _check_columns_left(t: Table, cols: list[Any], sql: str, span: Span | None) -> None:
    """DROP COLUMN keeps the timestamp and at least one column (TDengine's
    ``TSDB_CODE_PAR_INVALID_DROP_COL``), the error at the dropped name."""
    if len(cols) <= 2:
        raise _err(
            f"No columns can be dropped: {t.name} keeps its timestamp and at least one column",
            sql,
            span,
            Code.INVALID_DROP_COL,
        )


def alter_database(ex: Session, s: ast.AlterDatabase, sql: str) -> ResultSet:
    """``ALTER DATABASE db option value ...`` (TDengine SQL manual, "Manage Databases").

    KEEP and KEEP_TIME_OFFSET are applied (``lake/retention.py``): once stored, queries stop
    returning rows older than ``now - KEEP`` and the retention job runs at once, deleting them
    from the Delta tables. CACHEMODEL is stored and shown (no effect on results: tdweb has no
    last-row cache). tdweb is one node over a Delta lake: ``REPLICA 1`` is the only replica count
    (an unchanged value, TDengine's 0x038A); the other options TDengine lets ALTER change
    configure vnode caches, buffers, the WAL or compaction, which tdweb does not have, and are
    refused naming them (NOT_SUPPORTED), never stored and ignored; options ALTER cannot change
    (PRECISION, DURATION, VGROUPS, ...) are syntax errors as in TDengine.

    Raises:
        CatalogError: DB_NOT_EXIST; PERMISSION_DENIED unless owner or superuser.
        SqlError: SYNTAX_ERROR, NOT_SUPPORTED, INVALID_OPERATION (REPLICA other than 1),
            INVALID_DB_OPTION (a KEEP, KEEP_TIME_OFFSET or CACHEMODEL value TDengine refuses),
            DB_OPTION_UNCHANGED, each positioned at its option.
    """
    db = ex.catalog.require_database(s.name)
    access.require_owner(ex.principal, db, "alter database")
    changed = _changed_options(db, s, sql)
    for key, value in changed.items():
        span = s.spans.get(key)
        if key in HONOURED_DB_OPTIONS:
            _check_honoured(key, value, {**db.options, **changed}, db, sql, span)
            continue
        if key == "REPLICA":
            raise _err(
                f"Invalid option REPLICA {value}: tdweb runs as a single node, REPLICA is 1",
                sql,
                span,
                Code.INVALID_OPERATION,
            )
        raise _err(
            f"ALTER DATABASE {key} is not supported: tdweb has no {_NO_MEANING[key]}",
            sql,
            span,
            Code.NOT_SUPPORTED,
        )
    ex.catalog.alter_database(db.name, {**db.options, **changed})
    if "KEEP" in changed or "KEEP_TIME_OFFSET" in changed:
        retention.expire(ex.lake, ex.catalog.require_database(db.name), now_ms=int(time.time() * 1000))
    return ResultSet.affected(0)


def _changed_options(db: Database, s: ast.AlterDatabase, sql: str) -> dict[str, Any]:
    """The options of ``s`` whose value differs from the stored one (TDengine's 0x038A when none)."""
    changed: dict[str, Any] = {}
    for key, value in s.options.items():
        if key not in ALTERABLE_DB_OPTIONS:
            raise _err(
                f"syntax error: database option {key} cannot be altered",
                sql,
                s.spans.get(key),
                Code.SYNTAX_ERROR,
            )
        current = db.options.get(key, 1 if key == "REPLICA" else None)
        if current is not None and _same_value(key, current, value):
            continue
        changed[key] = value
    if not changed:
        raise CatalogError(
            f"Database options not changed: {', '.join(s.options)} already hold these values",
            code=Code.DB_OPTION_UNCHANGED,
        )
    return changed


def _same_value(key: str, current: object, value: object) -> bool:
    """An option's new value equals its stored one: as written (case and quotes aside), or, for
    KEEP, as the same three retentions (``30`` is ``30d`` is ``720h,30d,30d``)."""
    if key == "KEEP":
        try:
            return retention.parse_keep(current) == retention.parse_keep(value)
        except SqlError:
            return False
    return str(current).strip("'\"").lower() == str(value).strip("'\"").lower()


def _check_honoured(
    key: str, value: object, merged: dict[str, Any], db: Database, sql: str, span: Span | None
) -> None:
    """Check an applied option's new value (``merged``: the options after the ALTER)."""
    try:
        if key == "CACHEMODEL":
            check_cachemodel(value)
        else:
            retention.check_options({key: merged[key]}, db)
    except SqlError as e:
        raise _err(e.message, sql, span, e.code) from None


# --------------------------------------------------------------------------- ALTER STABLE / TABLE


def alter_table(ex: Session, s: ast.AlterTable, sql: str) -> ResultSet:
    """``ALTER STABLE`` / ``ALTER TABLE`` with one clause (:class:`ast.AlterTable`; module
    docstring for what each does to stored rows).

    ALTER TABLE on a supertable is ALTER STABLE (TDengine rewrites it so); ALTER STABLE needs a
    supertable. A normal table takes ADD / DROP / MODIFY / RENAME COLUMN and COMMENT; a subtable
    SET TAG and COMMENT (its columns and tags are its supertable's); a supertable ADD / DROP /
    MODIFY COLUMN, ADD / DROP / MODIFY / RENAME TAG and COMMENT. ALTER VTABLE takes a virtual
    normal table's ADD / DROP / MODIFY / RENAME COLUMN and ``ALTER COLUMN ... SET``, a virtual
    child table's ``ALTER COLUMN ... SET`` and SET TAG (:func:`_alter_vcolumn`). ``TTL n`` sets a
    normal or child table's time to live (:func:`_alter_options`); table KEEP is refused (a
    database's KEEP is the retention tdweb applies, ``lake/retention.py``).

    Raises:
        SqlError: TABLE_NOT_EXIST / STB_NOT_EXIST, INVALID_ALTER_TABLE (a clause the table kind
            does not take), COLUMN_ / TAG_ ALREADY_EXIST / NOT_EXIST, CANNOT_DROP_PRIMARY_KEY,
            INVALID_DROP_COL, INVALID_MODIFY_COL, NOT_SUPPORTED (KEEP), INVALID_TABLE_TYPE
            (ALTER TABLE of a virtual table, ALTER VTABLE of a physical one), the virtual
            references' INVALID_REF_COLUMN / _TYPE and VTABLE_PRIMTS_HAS_REF,
            INVALID_OPERATION (SET TAG of a stream's grouping tag, seed 002), each positioned.
        CatalogError: PERMISSION_DENIED without WRITE.
    """
    db, t = _target(ex, s, sql)
    if s.action == "OPTIONS":
        return _alter_options(ex, s, sql, t)
    if s.action == "SET TAG":
        return _set_tags(ex, s, sql, db, t)
    if s.action.endswith("TAG"):
        return _alter_tag(ex, s, sql, t)
    if t.virtual:
        return _alter_vcolumn(ex, s, sql, db, t)
    return _alter_column(ex, s, sql, db, t)


def _target(ex: Session, s: ast.AlterTable, sql: str) -> tuple[Database, Table]:
    """The database and table altered, after the kind and privilege checks."""
    dbname = ex.db_name(s.table.db)
    db = ex.catalog.require_database(dbname)
    t = ex.catalog.table(dbname, s.table.name)
    if t is None:
        raise _err(
            f"table {dbname}.{s.table.name} does not exist",
            sql,
            s.table.span,
            Code.STB_NOT_EXIST if s.stable else Code.TABLE_NOT_EXIST,
        )
    ex.require(WRITE, db, t.storage if t.kind == "sub" else None, sql=sql, span=s.table.span)
    if s.stable and t.kind != "super":
        raise _err(
            f"Invalid alter table statement: ALTER STABLE needs a supertable; {t.name} is a "
            f"{'subtable' if t.kind == 'sub' else 'normal table'} (use ALTER TABLE)",
            sql,
            s.table.span,
            Code.INVALID_ALTER_TABLE,
        )
    _check_virtual_kind(s, t, sql)
    if t.virtual and t.kind != "super":
        allowed = VNORMAL_ACTIONS if t.kind == "normal" else VCHILD_ACTIONS
    else:
        allowed = {"super": STABLE_ACTIONS, "normal": NORMAL_ACTIONS, "sub": SUB_ACTIONS}[t.kind]
    if s.action not in allowed:
        what = {"super": "a supertable", "normal": "a normal table", "sub": "a subtable"}[t.kind]
        what = what.replace("a ", "a virtual ", 1) if t.virtual else what
        raise _err(
            f"Invalid alter table statement: {s.action} does not apply to {what} ({t.name}); "
            f"{what} takes {', '.join(sorted(allowed - {'OPTIONS'}))} or COMMENT",
            sql,
            s.clause,
            Code.INVALID_ALTER_TABLE,
        )
    return db, t


def _check_virtual_kind(s: ast.AlterTable, t: Table, sql: str) -> None:
    """ALTER VTABLE takes a virtual normal or child table; ALTER TABLE does not (TDengine SQL
    manual, "Virtual Tables"); a virtual supertable is altered with ALTER STABLE."""
    if s.vtable and not t.virtual:
        raise _err(
            f"Invalid table type: ALTER VTABLE needs a virtual table; {t.name} is not virtual "
            "(use ALTER TABLE or ALTER STABLE)",
            sql,
            s.table.span,
            Code.INVALID_TABLE_TYPE,
        )
    if s.vtable and t.kind == "super":
        raise _err(
            f"Invalid alter table statement: {t.name} is a virtual supertable (use ALTER STABLE)",
            sql,
            s.table.span,
            Code.INVALID_ALTER_TABLE,
        )
    if not s.vtable and t.virtual and t.kind != "super":
        raise _err(
            f"Invalid table type: {t.name} is a virtual table (use ALTER VTABLE)",
            sql,
            s.table.span,
            Code.INVALID_TABLE_TYPE,
        )


def _alter_options(ex: Session, s: ast.AlterTable, sql: str, t: Table) -> ResultSet:
    """``COMMENT 'text'`` (at most 1,024 bytes; stored, shown by SHOW CREATE TABLE and
    ins_tables / ins_stables) and ``TTL n`` of a normal or child table (days in [0, INT32_MAX],
    0 = never expires; TDengine SQL manual, "Manage Tables"; counted from the table's creation,
    the retention job drops it once expired, ``statements/ddl.drop_expired_tables``). A
    supertable takes TTL 0 only (INVALID_ALTER_TABLE otherwise: TDengine's mnode stores a
    supertable's TTL but no table expires by it; tdweb refuses rather than ignore it); table KEEP
    is refused: retention is the database's KEEP, not a table's."""
    ttl = t.ttl
    for key, value in s.options.items():
        span = s.option_spans.get(key, s.clause)
        if key == "COMMENT":
            if not isinstance(value, str):
                raise _err("syntax error: COMMENT takes a quoted string", sql, span, Code.SYNTAX_ERROR)
            if len(value.encode()) > MAX_COMMENT_BYTES:
                raise _err(
                    f"Comment too long: at most {MAX_COMMENT_BYTES} bytes", sql, span, Code.COMMENT_TOO_LONG
                )
        elif key == "TTL":
            ttl = _ttl_value(value, sql, span, t)
        elif key == "KEEP":
            raise _err(
                f"ALTER TABLE KEEP {value} is not supported: tdweb keeps rows by the database's KEEP "
                "only (ALTER DATABASE ... KEEP)",
                sql,
                span,
                Code.NOT_SUPPORTED,
            )
        else:
            raise _err(f"syntax error: {key} is not a table option", sql, span, Code.SYNTAX_ERROR)
    comment = str(s.options["COMMENT"]) if "COMMENT" in s.options else t.comment
    if comment != t.comment or ttl != t.ttl:
        ex.catalog.alter_table(replace(t, comment=comment, ttl=ttl))
    return ResultSet.affected(0)


def _ttl_value(value: object, sql: str, span: Span | None, t: Table) -> int:
    """The days of ``ALTER TABLE ... TTL value``: an integer in [0, INT32_MAX] for a normal or
    child table (TDengine grammar ``TTL NK_INTEGER``; range: TSDB_MIN/MAX_TABLE_TTL).

    Raises:
        SqlError: INVALID_ALTER_TABLE (a supertable's TTL other than 0), SYNTAX_ERROR (not an
            unsigned integer), INVALID_TABLE_OPTION (above INT32_MAX).
    """
    if t.kind == "super" and value != 0:  # TTL 0 is the default: nothing to change
        raise _err(
            f"Invalid alter table statement: TTL applies to normal and child tables; {t.name} is a "
            "supertable (its child tables take their own TTL)",
            sql,
            span,
            Code.INVALID_ALTER_TABLE,
        )
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _err("syntax error: TTL takes a number of days (an integer >= 0)", sql, span, Code.SYNTAX_ERROR)
    if value > INT32_MAX:
        raise _err(
            f"Invalid table option: TTL {value} out of range [0, {INT32_MAX}]",
            sql,
            span,
            Code.INVALID_TABLE_OPTION,
        )
    return value


def _fresh_physical(name: str, used: set[str]) -> str:
    """A physical (Delta / Arrow) name for a new column or tag: its lower-case name when safe and
    never used by this table (current and dropped columns), else ``_c<n>``."""
    cand = name.lower()
    if not cand.isidentifier() or not cand.isascii() or cand in RESERVED_PHYSICAL or cand in used:
        n = len(used)
        while f"_c{n}" in used:
            n += 1
        cand = f"_c{n}"
    return cand


def _check_new_name(d: ast.ColumnDef | str, t: Table, what: str, sql: str, span: Span | None) -> None:
    """A new column / tag name: valid, not ``tbname``, not an existing column or tag."""
    name = d if isinstance(d, str) else d.name
    check_name(name, what, sql=sql, offset=span.start if span else None)
    if name.lower() == "tbname":
        raise _err("tbname is reserved", sql, span, Code.INVALID_COLUMN)
    if t.column(name) is not None:
        raise _err(f"Column already exists: {name}", sql, span, Code.COLUMN_ALREADY_EXIST)
    if t.tag(name) is not None:
        raise _err(f"Tag already exists: {name}", sql, span, Code.TAG_ALREADY_EXIST)
    if len(t.columns) + len(t.tags) + 1 > MAX_COLUMNS:
        raise _err(
            f"Too many columns: a table has at most {MAX_COLUMNS} columns and tags",
            sql,
            span,
            Code.TOO_MANY_COLUMNS,
        )
    if what == "tag" and len(t.tags) + 1 > MAX_TAGS:
        raise _err(f"Too many tags: a supertable has at most {MAX_TAGS} tags", sql, span, Code.TOO_MANY_TAGS)


def _widened(old: Column, d: ast.ColumnDef, what: str, sql: str, span: Span | None) -> Column:
    """MODIFY COLUMN / TAG: the same VARCHAR / NCHAR type with a larger length."""
    new = d.type
    if old.type.name not in VAR_TYPES or new.name != old.type.name or new.length <= old.type.length:
        raise _err(
            f"Only varbinary/binary/nchar/geometry column length could be modified, and the length can "
            f"only be increased, not decreased: {what} {old.name} is {old.type.sql}, not {new.sql}",
            sql,
            span,
            Code.INVALID_MODIFY_COL,
        )
    return replace(old, type=new)


def _alter_column(ex: Session, s: ast.AlterTable, sql: str, db: Database, t: Table) -> ResultSet:
    """ADD / DROP / MODIFY / RENAME COLUMN of a supertable or normal table."""
    assert s.name is not None
    cols = list(t.columns)
    if s.action == "ADD COLUMN":
        assert s.column is not None
        _check_new_name(s.column, t, "column", sql, s.name_span)
        if s.column.composite_key:
            raise _err(
                "Invalid alter table statement: a composite key column is the second column, given "
                "at CREATE; it cannot be added",
                sql,
                s.column.span,
                Code.INVALID_ALTER_TABLE,
            )
        used = ex.lake.delta_field_names(db.name, t.name) | {c.physical for c in t.columns}
        col = Column(s.column.name, s.column.type, _fresh_physical(s.column.name, used), s.column.comment)
        ex.lake.add_columns(db, t, (col,))  # storage first: a failed catalog update leaves a spare field
        ex.catalog.alter_table(replace(t, columns=(*cols, col)))
        return ResultSet.affected(0)
    old = t.column(s.name)
    if old is None:
        raise _err(f"Column does not exist: {s.name}", sql, s.name_span, Code.COLUMN_NOT_EXIST)
    i = cols.index(old)
    if s.action == "DROP COLUMN":
        if i == 0 or old.composite_key:
            raise _err(
                f"Primary timestamp column cannot be dropped: {old.name} is the table's "
                + ("timestamp" if i == 0 else "composite key"),
                sql,
                s.name_span,
                Code.CANNOT_DROP_PRIMARY_KEY,
            )
        _check_columns_left(t, cols, sql, s.name_span)
        del cols[i]
    elif s.action == "MODIFY COLUMN":
        assert s.column is not None
        cols[i] = _widened(old, s.column, "column", sql, s.column.span)
    else:  # RENAME COLUMN (normal tables)
        assert s.new_name is not None
        _check_new_name(s.new_name, t, "column", sql, s.clause)
        cols[i] = replace(old, name=s.new_name)
        # virtual tables reading it follow the new name; one dropped reads NULL (lake/virtual.py)
        ex.catalog.alter_table(replace(t, columns=tuple(cols)), column_rename=(old.name, s.new_name))
        return ResultSet.affected(0)
    ex.catalog.alter_table(replace(t, columns=tuple(cols)))
    return ResultSet.affected(0)


def _alter_vcolumn(ex: Session, s: ast.AlterTable, sql: str, db: Database, t: Table) -> ResultSet:
    """The column clauses of a virtual table (TDengine SQL manual, "Virtual Tables"): its columns
    and their sources live in the catalog only (a virtual table has no Delta table). ADD COLUMN
    ``[FROM ref]`` (a column without a source reads NULL), DROP COLUMN, MODIFY COLUMN (VARCHAR /
    NCHAR longer; a source must then have the same type), RENAME COLUMN (the source follows),
    ``ALTER COLUMN c SET {ref | NULL}`` (a new source, checked as CREATE VTABLE checks it, or
    none); a virtual supertable takes ADD / DROP / MODIFY COLUMN (DROP also forgets its children's
    sources of that column). Seed 000, "Support for Virtual Tables in Stream Computing",
    restrictions 1 and 2: not while a stream reads the table.
    """
    assert s.name is not None
    _refuse_vtable_in_use(ex, db, t, sql, s.table.span)
    cols, refs = list(t.columns), dict(t.refs)
    if s.action == "ADD COLUMN":
        assert s.column is not None
        _check_new_name(s.column, t, "column", sql, s.name_span)
        col = Column(s.column.name, s.column.type, _fresh_physical(s.column.name, {c.physical for c in cols}))
        cols.append(col)
        if s.ref is not None:
            refs[col.name.lower()] = vtables.resolve_ref(ex, db.name, col, s.ref, sql)
        ex.catalog.alter_table(replace(t, columns=tuple(cols), refs=refs))
        return ResultSet.affected(0)
    old = t.column(s.name)
    if old is None:
        raise _err(f"Column does not exist: {s.name}", sql, s.name_span, Code.COLUMN_NOT_EXIST)
    i, key = cols.index(old), old.name.lower()
    if i == 0 and s.action in ("ALTER COLUMN", "DROP COLUMN"):
        alter = s.action == "ALTER COLUMN"
        head = (
            "Virtual table prim timestamp column should not has ref"
            if alter
            else "Primary timestamp column cannot be dropped"
        )
        raise _err(
            f"{head}: {old.name} is the primary timestamp, the union of its sources' timestamps",
            sql,
            s.name_span,
            Code.VTABLE_PRIMTS_HAS_REF if alter else Code.CANNOT_DROP_PRIMARY_KEY,
        )
    if s.action == "ALTER COLUMN":
        refs.pop(key, None)
        if s.ref is not None:
            refs[key] = vtables.resolve_ref(ex, db.name, old, s.ref, sql)
        ex.catalog.alter_table(replace(t, refs=refs))
        return ResultSet.affected(0)
    if s.action == "DROP COLUMN":
        _check_columns_left(t, cols, sql, s.name_span)
        del cols[i]
        refs.pop(key, None)
        drop = key if t.kind == "super" else None
        ex.catalog.alter_table(replace(t, columns=tuple(cols), refs=refs), child_ref_drop=drop)
        return ResultSet.affected(0)
    if s.action == "MODIFY COLUMN":
        assert s.column is not None
        cols[i] = _widened(old, s.column, "column", sql, s.column.span)
        if key in refs:  # the source must keep the column's type (0x268F)
            r = refs[key]
            vtables.resolve_ref(
                ex, db.name, cols[i], ast.ColumnRefName(r.db, r.table, r.column, s.column.span), sql
            )
    else:  # RENAME COLUMN
        assert s.new_name is not None
        _check_new_name(s.new_name, t, "column", sql, s.clause)
        cols[i] = replace(old, name=s.new_name)
        if key in refs:
            refs[s.new_name.lower()] = refs.pop(key)
    ex.catalog.alter_table(replace(t, columns=tuple(cols), refs=refs))
    return ResultSet.affected(0)


def _refuse_vtable_in_use(ex: Session, db: Database, t: Table, sql: str, span: Span | None) -> None:
    """Seed 000, "Support for Virtual Tables in Stream Computing": the schema and column sources of
    a virtual table a stream reads cannot change. A stream reads it when it is the stream's
    trigger table (a child through its supertable too) or its query names it."""
    names = {t.name.lower()} | ({t.stable.lower()} if t.stable else set())
    users = []
    for info in ex.registry.list():
        src, query = info.spec.source, info.spec.query or ""
        hit = src is not None and src.db.lower() == db.name.lower() and src.table.lower() in names
        hit = hit or any(
            re.search(rf"(?<![\w`]){re.escape(n)}(?![\w`])", query, re.IGNORECASE) for n in names
        )
        if hit:
            users.append(f"{info.db}.{info.name}" if info.db else info.name)
    if users:
        raise _err(
            f"virtual table {t.name} is read by stream(s) {', '.join(sorted(users))}: its columns "
            "and their sources cannot change while they exist (drop them first)",
            sql,
            span,
            Code.INVALID_OPERATION,
        )


def _alter_tag(ex: Session, s: ast.AlterTable, sql: str, t: Table) -> ResultSet:
    """ADD / DROP / MODIFY / RENAME TAG of a supertable (tags live in the catalog)."""
    assert s.name is not None
    tags = list(t.tags)
    renames: dict[str, str | None] = {}
    if s.action == "ADD TAG":
        assert s.column is not None
        _check_new_name(s.column, t, "tag", sql, s.name_span)
        used = {c.physical for c in t.tags}
        tags.append(
            Column(s.column.name, s.column.type, _fresh_physical(s.column.name, used), s.column.comment)
        )
        renames[s.column.name.lower()] = None  # no stale value may show under the new tag
    else:
        old = t.tag(s.name)
        if old is None:
            raise _err(f"Tag does not exist: {s.name}", sql, s.name_span, Code.TAG_NOT_EXIST)
        i = tags.index(old)
        if s.action == "DROP TAG":
            if len(tags) == 1:
                raise _err(
                    f"Invalid alter table statement: {t.name} keeps at least one tag",
                    sql,
                    s.name_span,
                    Code.INVALID_ALTER_TABLE,
                )
            del tags[i]
            renames[old.name.lower()] = None
        elif s.action == "MODIFY TAG":
            assert s.column is not None
            tags[i] = _widened(old, s.column, "tag", sql, s.column.span)
        else:  # RENAME TAG
            assert s.new_name is not None
            _check_new_name(s.new_name, t, "tag", sql, s.clause)
            tags[i] = replace(old, name=s.new_name)
            renames[old.name.lower()] = s.new_name.lower()
    ex.catalog.alter_table(replace(t, tags=tuple(tags)), tag_renames=renames)
    return ResultSet.affected(0)


def _set_tags(ex: Session, s: ast.AlterTable, sql: str, db: Database, t: Table) -> ResultSet:
    """``SET TAG tag = value [, tag = value ...]`` of a subtable (TDengine 3.3 takes several)."""
    stable = ex.catalog.require_table(db.name, t.storage)
    values = dict(t.tag_values)
    now = Now()
    seen: set[str] = set()
    for name, node, span, value_span in s.tag_values:
        tag = stable.tag(name)
        if tag is None:
            raise _err(f"Tag does not exist: {name}", sql, span, Code.TAG_NOT_EXIST)
        if tag.name.lower() in seen:
            raise _err(f"duplicate tag {tag.name} in SET TAG", sql, span, Code.INVALID_ALTER_TABLE)
        seen.add(tag.name.lower())
        value = ex.value(
            node,
            tag.type,
            db.precision,
            now,
            f"tag {tag.name} {tag.type.sql}",
            sql=sql,
            offset=offset_of(node) or value_span.start,
        )
        if value != values.get(tag.name.lower()):
            _refuse_grouping_tag(ex, db, stable, tag, sql, span)
        values[tag.name.lower()] = value
    ex.catalog.alter_table(replace(t, tag_values=values))
    return ResultSet.affected(0)


def _refuse_grouping_tag(ex: Session, db: Database, stable: Table, tag: Column, sql: str, span: Span) -> None:
    """Seed 002, "Database and Table Operations": modifying the tag value of a subtable of a
    stream's trigger supertable is not allowed when the stream groups by that tag."""
    names = []
    for info in ex.registry.list():
        src = info.spec.source
        if src is None or src.db.lower() != db.name.lower() or src.table.lower() != stable.name.lower():
            continue
        if any(tag.name.lower() in _names_in(p.get("sql", "")) for p in info.spec.partition_by):
            names.append(f"{info.db}.{info.name}" if info.db else info.name)
    if names:
        raise _err(
            f"tag {tag.name} of {stable.name} is a grouping key (PARTITION BY) of stream(s) "
            f"{', '.join(sorted(names))}: its value cannot be modified while they exist",
            sql,
            span,
            Code.INVALID_OPERATION,
        )


def _names_in(text: str) -> set[str]:
    """Lower-case column / tag names an expression's text refers to (empty when unparsable)."""
    try:
        tree = parse_expression(text)
    except SqlError:
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column)}
