"""Introspection: SHOW (databases, tables, streams, tags, users, privileges, CREATE ...), DESCRIBE;
the rows of ``information_schema`` come from ``statements/sysinfo.py`` and are filtered to what
the client may see.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from spark_workers import access
from spark_workers.access import READ
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Column, Table
from spark_workers.query.results import ResultColumn, ResultSet
from spark_workers.sql import ast
from spark_workers.statements.session import Session
from spark_workers.statements.sysinfo import PERF_TABLES, SYSTEM_TABLES, TABLES, SystemTable, variables
from spark_workers.tdtypes import INT, varchar


def show(ex: Session, s: ast.Show, sql: str) -> ResultSet:
    w = s.what
    if w == "databases":  # TDengine lists information_schema and performance_schema too
        res = system_rows(ex, "ins_databases", s.like)
        if s.vkind is not None:  # SHOW USER | SYSTEM DATABASES
            system = s.vkind == "system"
            res = ResultSet(res.columns, [r for r in res.rows if (r[0] in SYSTEM_TABLES) == system])
        return res
    if w == "alive":  # SHOW CLUSTER ALIVE / SHOW db.ALIVE: 1 = available (this server answers)
        if s.db is not None:
            ex.visible_database(s.db)
        return ResultSet([ResultColumn("status", INT)], [[1]])
    if w in ("stables", "tables", "vtables"):
        return table_names(ex, s)
    if w == "streams":
        res = system_rows(ex, "ins_streams", None)
        if s.db:  # the streams of one database (their own, else their source's)
            keep = {
                i.name
                for i in ex.registry.list()
                if (i.db or (i.spec.source.db if i.spec.source else "")).lower() == s.db.lower()
            }
            res = ResultSet(res.columns, [r for r in res.rows if r[0] in keep])
        return res
    if w == "tags" and s.target is not None:
        return subtable_tags(ex, s.target, sql)
    if w in ("create_table", "create_stable", "create_vtable") and s.target is not None:
        return show_create_table(ex, s.target, sql, virtual=w == "create_vtable")
    if w == "create_database" and s.db:
        db = ex.visible_database(s.db)
        opts = " ".join(
            f"{k} '{str(v).strip(chr(39) + chr(34))}'" if k == "CACHEMODEL" else f"{k} {v}"
            for k, v in db.options.items()
            if k != "PRECISION"
        )
        return ResultSet(
            [ResultColumn("Database", varchar(64)), ResultColumn("Create Database", varchar(1024))],
            [[db.name, f"CREATE DATABASE `{db.name}` PRECISION '{db.precision}' {opts}".strip()]],
        )
    if w == "vgroups":  # SHOW [db.]VGROUPS: ins_vgroups of the (current) database
        db = ex.visible_database(s.db)
        res = system_rows(ex, "ins_vgroups", None)
        return ResultSet(res.columns, [r for r in res.rows if r[1] == db.name])
    if w in _SYSTEM_SHOWS:
        return system_rows(ex, _SYSTEM_SHOWS[w], s.like)
    if w == "local_variables":
        return local_variables(ex, s.like)
    if w == "dnode_variables":  # TDengine: ins_dnode_variables WHERE dnode_id = n [AND name LIKE p]
        res = system_rows(ex, "ins_dnode_variables", None)
        names = {r[0] for r in like([r[1:] for r in res.rows], s.like)}
        return ResultSet(res.columns, [r for r in res.rows if r[0] == s.dnode and r[1] in names])
    if w in _PERF_SHOWS:
        st = PERF_TABLES[_PERF_SHOWS[w]]
        return ResultSet([ResultColumn(n, t) for n, t in st.columns], st.rows(ex))
    if w == "table_tags" and s.target is not None:
        return table_tags(ex, s, sql)
    if w == "indexes" and s.target is not None:  # tdweb has no indexes: the table's list is empty
        dbname = ex.db_name(s.target.db)
        t = _known_table(ex, dbname, s.target, sql)
        ex.require_storage(READ, ex.catalog.require_database(dbname), t, sql=sql, span=s.target.span)
        return system_rows(ex, "ins_indexes", None)
    if w == "users":
        return system_rows(ex, "ins_users", None)
    if w == "user_privileges":
        return system_rows(ex, "ins_user_privileges", None)
    if w == "create_stream" and s.target is not None:
        info = ex.own_stream(s.target.name, s.target.db, "show create stream")
        return ResultSet(
            [ResultColumn("Stream", varchar(192)), ResultColumn("Create Stream", varchar(4096))],
            [[info.name, access.redact_secrets(info.sql)]],
        )
    raise SqlError(f"SHOW {w.upper()} is not supported", sql=sql, code=Code.NOT_SUPPORTED)


def _known_table(ex: Session, dbname: str, target: ast.TableName, sql: str) -> Table:
    """Table ``target`` of ``dbname``; a missing one is ``TABLE_NOT_EXIST`` only for users who may
    see the whole database, else ``0x2644`` (:meth:`QueryContext.no_such_table`)."""
    t = ex.catalog.table(dbname, target.name)
    if t is None:
        raise ex.no_such_table(dbname, target.name, sql=sql, span=target.span)
    return t


def subtable_tags(ex: Session, target: ast.TableName, sql: str) -> ResultSet:
    """SHOW TAGS FROM subtable: one row per tag (``table_name, db_name, stable_name, tag_name,
    tag_type, tag_value``); READ on the table is required; a table that is not a subtable is
    refused (INVALID_OPERATION)."""
    dbname = ex.db_name(target.db)
    t = _known_table(ex, dbname, target, sql)
    ex.require_storage(READ, ex.catalog.require_database(dbname), t, sql=sql, span=target.span)
    if t.kind != "sub":
        raise SqlError(f"{t.name} is not a subtable", sql=sql, code=Code.INVALID_OPERATION)
    rows = [
        [t.name, dbname, t.stable, tag.name, tag.type.sql, t.tag_values.get(tag.name.lower())]
        for tag in t.tags
    ]
    return ResultSet(
        [
            ResultColumn("table_name", varchar(192)),
            ResultColumn("db_name", varchar(64)),
            ResultColumn("stable_name", varchar(192)),
            ResultColumn("tag_name", varchar(64)),
            ResultColumn("tag_type", varchar(64)),
            ResultColumn("tag_value", varchar(256)),
        ],
        [[*r[:5], None if r[5] is None else str(r[5])] for r in rows],
    )


def show_create_table(ex: Session, target: ast.TableName, sql: str, *, virtual: bool) -> ResultSet:
    """SHOW CREATE TABLE / STABLE / VTABLE: ``(Table, Create Table)``; READ on the table is
    required; SHOW CREATE VTABLE of a table that is not a virtual normal or child table is refused
    (INVALID_TABLE_TYPE)."""
    dbname = ex.db_name(target.db)
    t = _known_table(ex, dbname, target, sql)
    if virtual and (not t.virtual or t.kind == "super"):
        raise SqlError(
            f"Invalid table type: {dbname}.{t.name} is not a virtual normal or child table",
            sql=sql,
            offset=target.span.start if target.span else None,
            code=Code.INVALID_TABLE_TYPE,
        )
    ex.require_storage(READ, ex.catalog.require_database(dbname), t, sql=sql, span=target.span)
    return ResultSet(
        [ResultColumn("Table", varchar(192)), ResultColumn("Create Table", varchar(4096))],
        [[t.name, create_sql(t)]],
    )


def local_variables(ex: Session, pattern: str | None) -> ResultSet:
    """SHOW LOCAL VARIABLES [LIKE p]: ``name, value, scope, category, info`` of this server's
    client-facing settings (``sysinfo.variables``)."""
    return ResultSet(
        [
            ResultColumn("name", varchar(64)),
            ResultColumn("value", varchar(4096)),
            ResultColumn("scope", varchar(8)),
            ResultColumn("category", varchar(8)),
            ResultColumn("info", varchar(64)),
        ],
        like([[n, v, scope, "local", info] for n, v, scope, info in variables(ex)], pattern),
    )


# SHOW statements answered by an ``information_schema`` table, filtered by LIKE on its first column
_SYSTEM_SHOWS = {
    "dnodes": "ins_dnodes",
    "functions": "ins_functions",
    "variables": "ins_configs",
    "cluster": "ins_cluster",
    "mnodes": "ins_mnodes",
    "qnodes": "ins_qnodes",
    "snodes": "ins_snodes",
    "vnodes": "ins_vnodes",
    "topics": "ins_topics",
    "subscriptions": "ins_subscriptions",
    "views": "ins_views",
    "compacts": "ins_compacts",
}
# SHOW statements answered by a ``performance_schema`` table
_PERF_SHOWS = {
    "connections": "perf_connections",
    "queries": "perf_queries",
    "apps": "perf_apps",
    "consumers": "perf_consumers",
    "transactions": "perf_trans",
}


def table_tags(ex: Session, s: ast.Show, sql: str) -> ResultSet:
    """``SHOW TABLE TAGS [items] FROM [db.]tb``: one row per subtable of supertable ``tb`` (the
    subtable itself when ``tb`` is one), ``tbname`` and every tag, or the items written (TBNAME or
    tag names, with their aliases), by subtable name.

    Raises:
        SqlError / CatalogError: TABLE_NOT_EXIST, PERMISSION_DENIED without READ on the
            supertable, INVALID_COLUMN (positioned at it) for an item that is no tag,
            INVALID_OPERATION for a normal table (it has no tags).
    """
    assert s.target is not None
    dbname = ex.db_name(s.target.db)
    db = ex.catalog.require_database(dbname)
    t = _known_table(ex, dbname, s.target, sql)
    ex.require_storage(READ, db, t, sql=sql, span=s.target.span)
    if t.kind == "normal":
        raise SqlError(f"{t.name} is a normal table: it has no tags", sql=sql, code=Code.INVALID_OPERATION)
    tags = {g.name.lower(): g for g in t.tags}
    items = s.items or [("tbname", None, None), *((g.name, None, None) for g in t.tags)]
    columns: list[ResultColumn] = []
    keys: list[str | None] = []  # lower-case tag name; None: tbname
    for name, alias, offset in items:
        low = name.lower()
        if low == "tbname":
            columns.append(ResultColumn(alias or "tbname", varchar(192)))
            keys.append(None)
        elif low in tags:
            columns.append(ResultColumn(alias or tags[low].name, tags[low].type))
            keys.append(low)
        else:  # TDengine reads the items as a SELECT list of the supertable
            raise SqlError(
                f"Invalid column name: {name} is not a tag of {t.name}",
                sql=sql,
                offset=offset,
                code=Code.INVALID_COLUMN,
            )
    if t.kind == "sub":
        subs = [t]
    else:
        names = ex.catalog.tables(dbname, kinds=("sub",), stable=t.name)
        subs = [ex.catalog.require_table(dbname, n) for n, *_ in names]
    rows = [[c.name if k is None else c.tag_values.get(k) for k in keys] for c in subs]
    return ResultSet(columns, rows)


def table_names(ex: Session, s: ast.Show) -> ResultSet:
    """SHOW [db.]STABLES / TABLES / [NORMAL | CHILD] VTABLES [LIKE 'pattern']: one name a row."""
    w = s.what
    system = SYSTEM_TABLES.get((s.db or ex.default_db or "").lower())
    if system is not None:
        return _system_table_names(ex, s, system)
    # SHOW TABLES lists no virtual table, SHOW VTABLES only them, SHOW STABLES virtual
    # supertables too (TDengine SQL manual, "Virtual Tables": SHOW [NORMAL | CHILD] VTABLES)
    db = ex.visible_database(s.db)
    kinds = (
        ("super",)
        if w == "stables"
        else {"normal": ("normal",), "child": ("sub",)}.get(s.vkind or "", ("sub", "normal"))
    )
    virtual = None if w == "stables" else w == "vtables"
    rows: list[list[Any]] = [
        [n]
        for n, _k, st, _c in ex.catalog.tables(db.name, kinds=kinds, virtual=virtual)
        if ex.principal.may_see_table(db, st or n)
    ]
    rows = like(rows, s.like)
    col = "stable_name" if w == "stables" else "table_name"
    return ResultSet([ResultColumn(col, varchar(192))], rows)


def _system_table_names(ex: Session, s: ast.Show, tables: dict[str, SystemTable]) -> ResultSet:
    """SHOW TABLES of a system database: its tables (those for SYSINFO 1 only to such users, as
    TDengine's ``getVisibleInfosTablesNum``); it has no supertable and no virtual table."""
    sees_all = ex.principal.super or ex.principal.sysinfo
    rows: list[list[Any]] = []
    if s.what == "tables" and s.vkind != "child":
        rows = like([[n] for n, st in sorted(tables.items()) if sees_all or not st.sysinfo], s.like)
    col = "stable_name" if s.what == "stables" else "table_name"
    return ResultSet([ResultColumn(col, varchar(192))], rows)


def system_rows(ex: Session, table: str, pattern: str | None) -> ResultSet:
    """All rows of an ``information_schema`` table (``sysinfo.py``), filtered by LIKE on the
    first column."""
    st = TABLES[table]
    return ResultSet([ResultColumn(n, t) for n, t in st.columns], like(st.rows(ex), pattern))


def like(rows: list[list[Any]], pattern: str | None) -> list[list[Any]]:
    if not pattern:
        return rows
    glob = pattern.replace("%", "*").replace("_", "?")
    return [r for r in rows if fnmatch.fnmatchcase(str(r[0]).lower(), glob.lower())]


def create_sql(t: Table) -> str:
    """The statement that creates ``t`` as SHOW CREATE TABLE / STABLE / VTABLE writes it."""
    if t.virtual:
        return _create_virtual_sql(t)
    if t.kind == "sub":
        vals = ", ".join(
            "NULL" if t.tag_values.get(g.name.lower()) is None else repr(t.tag_values[g.name.lower()])
            for g in t.tags
        )
        return f"CREATE TABLE `{t.name}` USING `{t.stable}` TAGS ({vals}){_comment_sql(t)}{_ttl_sql(t)}"
    cols = ", ".join(f"`{c.name}` {c.type.sql}" for c in t.columns)
    if t.kind == "super":
        tags = ", ".join(f"`{c.name}` {c.type.sql}" for c in t.tags)
        return f"CREATE STABLE `{t.name}` ({cols}) TAGS ({tags}){_comment_sql(t)}"
    return f"CREATE TABLE `{t.name}` ({cols}){_comment_sql(t)}{_ttl_sql(t)}"


def _ttl_sql(t: Table) -> str:
    """`` TTL n`` of a normal or child table with a TTL (CREATE / ALTER TABLE ... TTL; TDengine's
    SHOW CREATE TABLE appends it after the comment when it is not 0)."""
    return f" TTL {t.ttl}" if t.ttl else ""


def _comment_sql(t: Table) -> str:
    """`` COMMENT '...'`` of a table with a comment (CREATE ... COMMENT, ALTER TABLE ... COMMENT),
    as TDengine's SHOW CREATE TABLE appends it."""
    if not t.comment:
        return ""
    return " COMMENT '" + t.comment.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _create_virtual_sql(t: Table) -> str:
    """``CREATE STABLE ... VIRTUAL 1`` or ``CREATE VTABLE ...`` with every column reference."""
    if t.kind == "super":
        cols = ", ".join(f"`{c.name}` {c.type.sql}" for c in t.columns)
        tags = ", ".join(f"`{c.name}` {c.type.sql}" for c in t.tags)
        return f"CREATE STABLE `{t.name}` ({cols}) TAGS ({tags}) VIRTUAL 1"

    def ref(c: Column) -> str:
        r = t.refs.get(c.name.lower())
        return f" FROM `{r.db}`.`{r.table}`.`{r.column}`" if r else ""

    if t.kind == "sub":
        refs = ", ".join(f"`{c.name}`{ref(c)}" for c in t.columns[1:] if c.name.lower() in t.refs)
        vals = ", ".join(
            "NULL" if t.tag_values.get(g.name.lower()) is None else repr(t.tag_values[g.name.lower()])
            for g in t.tags
        )
        return f"CREATE VTABLE `{t.name}` ({refs}) USING `{t.stable}` TAGS ({vals})"
    cols = ", ".join(f"`{c.name}` {c.type.sql}{ref(c)}" for c in t.columns)
    return f"CREATE VTABLE `{t.name}` ({cols})"


_DESCRIBE_COLUMNS = [
    ResultColumn("field", varchar(64)),
    ResultColumn("type", varchar(32)),
    ResultColumn("length", INT),
    ResultColumn("note", varchar(16)),
]


def describe(ex: Session, s: ast.Describe, sql: str) -> ResultSet:
    """DESCRIBE [db.]t: one row per column and tag (``field``, ``type``, ``length``, ``note``),
    plus ``ref`` for virtual tables; the tables of the system databases describe their columns.

    Raises:
        SqlError / CatalogError: TABLE_NOT_EXIST (positioned), PERMISSION_DENIED.
    """
    system = SYSTEM_TABLES.get((s.table.db or ex.default_db or "").lower())
    if system is not None:
        st = system.get(s.table.name.lower())
        if st is None:
            raise SqlError(
                f"table {s.table.db or ex.default_db}.{s.table.name} does not exist",
                sql=sql,
                offset=s.table.span.start if s.table.span else None,
                code=Code.TABLE_NOT_EXIST,
            )
        return ResultSet(_DESCRIBE_COLUMNS, [[n, t.meta_name, t.byte_length, ""] for n, t in st.columns])
    dbname = ex.db_name(s.table.db)
    t = _known_table(ex, dbname, s.table, sql)
    db = ex.catalog.require_database(dbname)
    if not ex.principal.may_see_table(db, t.storage):
        raise access.denied(
            f"table {dbname}.{t.name}", sql=sql, offset=s.table.span.start if s.table.span else None
        )
    rows: list[list[Any]] = [
        [c.name, c.type.meta_name, c.type.byte_length, "COMPOSITE KEY" if c.composite_key else ""]
        for c in t.columns
    ]
    rows += [[g.name, g.type.meta_name, g.type.byte_length, "TAG"] for g in t.tags]
    columns = list(_DESCRIBE_COLUMNS)
    if t.virtual and t.kind != "super":  # where each column takes its values
        columns.append(ResultColumn("ref", varchar(576)))
        for r in rows:
            ref = t.refs.get(str(r[0]).lower()) if r[3] != "TAG" else None
            r.append(ref.text if ref else None)
    return ResultSet(columns, rows)
