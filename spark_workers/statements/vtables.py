"""Virtual tables: CREATE VTABLE (virtual normal tables and virtual child tables), DROP VTABLE,
and the checks TDengine makes on them (TDengine SQL manual, "Virtual Tables"; virtual supertables
are ``CREATE STABLE ... VIRTUAL 1`` in ``ddl.create_table``).

Rules (the manual's "Usage Notes" and "Permissions"): the first column is the TIMESTAMP primary
key and takes no reference (``0x6202``); a child table needs a virtual supertable (``0x6203``);
a reference names a column of an existing normal table or subtable, never a supertable, a
virtual table or a tag (``0x268D``); the virtual column's type equals the referenced column's,
length included (``0x268F``); creating needs WRITE on the database and READ on every referenced
table (``0x2644``).
"""

from __future__ import annotations

import time

from spark_workers.access import READ, WRITE
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Column, ColumnRef, Table
from spark_workers.lake.names import check_name
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.statements import ddl
from spark_workers.statements.session import Session


def _off(d: ast.VColumnDef | ast.ColumnRefName | ast.TableName) -> int | None:
    return d.span.start if d.span else None


def resolve_ref(ex: Session, vt_db: str, col: Column, ref: ast.ColumnRefName, sql: str) -> ColumnRef:
    """Check one ``col FROM [db.]table.col`` and return it qualified.

    Raises:
        SqlError: TABLE_NOT_EXIST, ``0x268D`` (not a normal table / subtable, no such column, a
            tag, another precision), ``0x268F`` (type differs), PERMISSION_DENIED (no READ).
    """
    dbname = ex.db_name(ref.db)
    db = ex.catalog.require_database(dbname)
    src = ex.catalog.table(db.name, ref.table)
    if src is None:
        raise SqlError(
            f"table {db.name}.{ref.table} does not exist",
            code=Code.TABLE_NOT_EXIST,
            sql=sql,
            offset=_off(ref),
        )
    if src.virtual or src.kind == "super":
        what = "a virtual table" if src.virtual else "a supertable"
        raise SqlError(
            f"Invalid virtual table's ref column: {db.name}.{src.name} is {what}; a column must come "
            "from a normal table or a subtable",
            code=Code.INVALID_REF_COLUMN,
            sql=sql,
            offset=_off(ref),
        )
    ex.require_storage(READ, db, src, sql=sql, span=ref.span)
    scol = src.column(ref.column)
    if scol is None:
        tag = src.tag(ref.column) is not None
        raise SqlError(
            f"Invalid virtual table's ref column: {db.name}.{src.name}.{ref.column} "
            + ("is a tag, not a column" if tag else "does not exist"),
            code=Code.INVALID_REF_COLUMN,
            sql=sql,
            offset=_off(ref),
        )
    vdb = ex.catalog.require_database(vt_db)
    if db.precision != vdb.precision:
        raise SqlError(
            f"Invalid virtual table's ref column: database {db.name} has precision '{db.precision}', "
            f"the virtual table's database {vdb.name} '{vdb.precision}'",
            code=Code.INVALID_REF_COLUMN,
            sql=sql,
            offset=_off(ref),
        )
    if scol.type != col.type:
        raise SqlError(
            f"Invalid ref column type: {col.name} is {col.type.sql}, "
            f"{db.name}.{src.name}.{scol.name} is {scol.type.sql}",
            code=Code.INVALID_REF_COLUMN_TYPE,
            sql=sql,
            offset=_off(ref),
        )
    return ColumnRef(db.name, src.name, scol.name)


def _normal_columns(ex: Session, s: ast.CreateVTable, sql: str) -> tuple[Column, ...]:
    defs = []
    for d in s.columns:
        if d.name is None or d.type is None:
            raise SqlError(
                "syntax error: a virtual normal table's column is written name type [FROM table.column]",
                sql=sql,
                offset=_off(d),
            )
        defs.append(ast.ColumnDef(name=d.name, type=d.type, span=d.span))
    if len(defs) < 2 or len(defs) > ddl.MAX_COLUMNS:
        raise SqlError(
            f"a virtual table needs 2 to {ddl.MAX_COLUMNS} columns", sql=sql, code=Code.INVALID_COLUMN
        )
    return ddl.columns(ex, defs, sql)


def _child_refs(stable: Table, s: ast.CreateVTable, sql: str) -> list[tuple[Column, ast.VColumnDef]]:
    """Pairs (virtual supertable column, definition): ``name FROM ref`` by name, a bare ``ref``
    by position after the timestamp."""
    out: list[tuple[Column, ast.VColumnDef]] = []
    seen: set[str] = set()
    for i, d in enumerate(s.columns):
        if d.type is not None:
            raise SqlError(
                "syntax error: a virtual child table's column is written [column FROM] table.column "
                f"(its types are {stable.name}'s)",
                sql=sql,
                offset=_off(d),
            )
        if d.name is not None:
            col = stable.column(d.name)
            if col is None:
                raise SqlError(
                    f"invalid column name {d.name}: {stable.name} has no such column",
                    code=Code.INVALID_COLUMN,
                    sql=sql,
                    offset=_off(d),
                )
        elif i + 1 < len(stable.columns):
            col = stable.columns[i + 1]
        else:
            raise SqlError(
                f"{len(s.columns)} column references for {len(stable.columns) - 1} columns of {stable.name}",
                code=Code.COLUMN_COUNT_MISMATCH,
                sql=sql,
                offset=_off(d),
            )
        if col.name.lower() in seen:
            raise SqlError(
                f"duplicate column name {col.name}",
                code=Code.INVALID_COLUMN,
                sql=sql,
                offset=_off(d),
            )
        seen.add(col.name.lower())
        out.append((col, d))
    return out


def create_vtable(ex: Session, s: ast.CreateVTable, sql: str) -> ResultSet:
    """``CREATE VTABLE`` (module docstring); returns 0 rows affected."""
    dbname = ex.db_name(s.table.db)
    db = ex.catalog.require_database(dbname)
    check_name(s.table.name, "table", sql=sql, offset=s.table.span.start if s.table.span else None)
    if s.using is not None:
        stable = ex.catalog.table(ex.db_name(s.using.db or s.table.db), s.using.name)
        if stable is None or stable.kind != "super":
            raise SqlError(
                f"supertable {s.using.name} does not exist",
                code=Code.STB_NOT_EXIST,
                sql=sql,
                offset=_off(s.using),
            )
        if not stable.virtual:
            raise SqlError(
                f"Create virtual child table must use virtual super table: {stable.name} is not "
                "virtual (CREATE STABLE ... VIRTUAL 1)",
                code=Code.VTABLE_NOT_VIRTUAL_STABLE,
                sql=sql,
                offset=_off(s.using),
            )
        ex.require(WRITE, db, stable.name, sql=sql, span=s.table.span)
        pairs = _child_refs(stable, s, sql)
        sub = ast.SubtableDef(
            table=s.table, using=s.using, tag_names=s.tag_names, tag_values=s.tag_values, span=s.span
        )
        columns, tags, values = stable.columns, stable.tags, ddl.tag_values(ex, stable, sub, sql)
        kind, stable_name = "sub", stable.name
    else:
        ex.require(WRITE, db, sql=sql, span=s.table.span)
        columns = _normal_columns(ex, s, sql)
        pairs = [(c, d) for c, d in zip(columns, s.columns, strict=True) if d.ref is not None]
        tags, values, kind, stable_name = (), {}, "normal", None
    refs: dict[str, ColumnRef] = {}
    for col, d in pairs:
        assert d.ref is not None
        if col.name.lower() == columns[0].name.lower():
            raise SqlError(
                f"Virtual table prim timestamp column should not has ref: {col.name} is the primary "
                "timestamp; its values are the union of the referenced tables' timestamps",
                code=Code.VTABLE_PRIMTS_HAS_REF,
                sql=sql,
                offset=_off(d),
            )
        refs[col.name.lower()] = resolve_ref(ex, db.name, col, d.ref, sql)
    table = Table(db.name, s.table.name, kind, columns, tags, stable_name, values, virtual=True, refs=refs)
    ex.catalog.create_table(table, if_not_exists=s.if_not_exists, now_ms=int(time.time() * 1000))
    return ResultSet.affected(0)


def refuse_write(t: Table, what: str, *, sql: str, span: ast.Span | None) -> None:
    """Raise TDengine's refusal of a write into a virtual table (manual: "Writing or deleting data
    in virtual tables is not supported"); ``what`` names the statement (``INSERT``)."""
    if t.virtual:
        raise SqlError(
            f"Virtual table not support in STMT query and STMT insert: {what} into virtual table "
            f"{t.db}.{t.name} is not allowed; virtual tables are read-only, write into the tables "
            "its columns reference",
            sql=sql,
            offset=span.start if span else None,
            code=Code.VTABLE_NOT_SUPPORT_STMT,
        )
