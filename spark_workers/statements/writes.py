"""Writes: INSERT (multi-row, multi-table, ``USING ... TAGS`` auto-create) and DELETE by time range
(TDengine SQL manual "Insert", "Delete Data"). Every row is checked before anything is written; a
multi-table INSERT is one Delta commit per storage table.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pyarrow as pa
from sqlglot import exp

from spark_workers.access import WRITE
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Column, Database, Table
from spark_workers.lake.keys import key_column
from spark_workers.lake.store import engine_schema
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.values import Now, constant
from spark_workers.statements.ddl import subtable
from spark_workers.statements.session import Session
from spark_workers.statements.vtables import refuse_write
from spark_workers.tdtypes import TIMESTAMP


def insert(ex: Session, s: ast.Insert, sql: str) -> ResultSet:
    """Run an INSERT: every row of every target is checked, then the ``USING ... TAGS`` subtables
    are created and the rows written, one Delta commit per storage table.

    Raises:
        SqlError: TABLE_NOT_EXIST, INVALID_OPERATION (a supertable target), INVALID_COLUMN (column
            list), COLUMN_COUNT_MISMATCH, a value that does not convert or a NULL timestamp,
            positioned where the statement has spans; PERMISSION_DENIED without WRITE on a storage
            table.
        CatalogError: a missing database.
    """
    now = Now()
    batches: dict[tuple[str, str], list[dict[str, list[Any]]]] = defaultdict(list)
    to_create: list[Table] = []
    storages: dict[tuple[str, str], Table] = {}
    total = 0
    for target in s.targets:
        dbname, db, table, storage = _insert_target(ex, target, sql, to_create)
        storages[(dbname, storage.name)] = storage
        cols = _insert_columns(table, target.columns, sql)
        data = _insert_rows(ex, target, table, cols, db.precision, now, sql)
        total += len(target.rows)
        batches[(dbname, storage.name)].append(data)
    if to_create:
        ex.catalog.create_subtables(to_create, now_ms=int(time.time() * 1000))
    for (dbname, sname), parts in batches.items():
        _write_storage(ex, dbname, storages[(dbname, sname)], parts)
    return ResultSet.affected(total)


def _insert_target(
    ex: Session, target: ast.InsertTarget, sql: str, to_create: list[Table]
) -> tuple[str, Database, Table, Table]:
    """``(database name, database, table, storage table)`` of an INSERT target the session may
    write; a missing subtable with ``USING ... TAGS`` is appended to ``to_create``."""
    dbname = ex.db_name(target.table.db or (target.using.using.db if target.using else None))
    table = ex.catalog.table(dbname, target.table.name)
    if table is None and target.using is not None:
        table = subtable(ex, target.using, sql)
        to_create.append(table)
    if table is None:
        raise SqlError(
            f"table {dbname}.{target.table.name} does not exist",
            sql=sql,
            offset=target.table.span.start if target.table.span else None,
            code=Code.TABLE_NOT_EXIST,
        )
    refuse_write(table, "INSERT", sql=sql, span=target.table.span)
    if table.kind == "super":
        raise SqlError(
            f"{table.name} is a supertable: insert into its subtables "
            f"(INSERT INTO t USING {table.name} TAGS (...) VALUES ...)",
            sql=sql,
            offset=target.table.span.start if target.table.span else None,
            code=Code.INVALID_OPERATION,
        )
    db = ex.catalog.require_database(dbname)
    storage = (
        table
        if table.kind == "normal"
        else (ex.catalog.table(dbname, table.storage) or ex.catalog.require_table(dbname, table.storage))
    )
    ex.require(WRITE, db, storage.name, sql=sql, span=target.table.span)
    return dbname, db, table, storage


def _insert_columns(table: Table, names: list[str] | None, sql: str) -> list[Column]:
    """The columns an INSERT writes: all of the table's, or those listed (known, each once, the
    timestamp column among them)."""
    if names is None:
        return list(table.columns)
    picked: list[Column] = []
    for name in names:
        c = table.column(name)
        if c is None:
            raise SqlError(f"invalid column name {name} in {table.name}", sql=sql, code=Code.INVALID_COLUMN)
        if c in picked:
            raise SqlError(f"column {name} is listed twice", sql=sql, code=Code.INVALID_COLUMN)
        picked.append(c)
    if table.columns[0] not in picked:
        raise SqlError(
            f"the timestamp column {table.columns[0].name} must be written",
            sql=sql,
            code=Code.INVALID_COLUMN,
        )
    key = key_column(table)
    if key is not None and key not in picked:
        raise SqlError(
            f"the composite key column {key.name} must be written (it is part of the row key)",
            sql=sql,
            code=Code.PRIMARY_KEY_IS_NULL,
        )
    return picked


def _insert_rows(
    ex: Session,
    target: ast.InsertTarget,
    table: Table,
    cols: list[Column],
    precision: str,
    now: Now,
    sql: str,
) -> dict[str, list[Any]]:
    """A target's rows as column lists keyed by physical name, plus ``tbname``: each value
    converted to its column's type, the timestamp never NULL (errors positioned at the value)."""
    data: dict[str, list[Any]] = {"tbname": []}
    key = key_column(table)
    for c in cols:
        data[c.physical] = []
    for r, row in enumerate(target.rows):
        spans = target.row_spans[r] if r < len(target.row_spans) else []
        if len(row) != len(cols):
            off = spans[0].start if spans else (target.span.start if target.span else None)
            raise SqlError(
                f"{len(row)} values for {len(cols)} columns of {table.name}",
                sql=sql,
                offset=off,
                code=Code.COLUMN_COUNT_MISMATCH,
            )
        for i, (c, node) in enumerate(zip(cols, row, strict=True)):
            v = ex.value(
                node,
                c.type,
                precision,
                now,
                f"column {c.name} {c.type.sql}",
                sql=sql,
                offset=spans[i].start if i < len(spans) else None,
            )
            if i == 0 and v is None:
                raise SqlError(
                    f"the timestamp column {c.name} cannot be NULL",
                    sql=sql,
                    offset=spans[i].start if i < len(spans) else None,
                    code=Code.WRONG_VALUE_TYPE,
                )
            if v is None and c == key:
                raise SqlError(
                    f"the composite key column {c.name} cannot be NULL",
                    sql=sql,
                    offset=spans[i].start if i < len(spans) else None,
                    code=Code.PRIMARY_KEY_IS_NULL,
                )
            data[c.physical].append(v)
        data["tbname"].append(table.name)
    return data


def _write_storage(ex: Session, dbname: str, storage: Table, parts: list[dict[str, list[Any]]]) -> None:
    """Write the rows of ``parts`` (``_insert_rows`` results) to ``storage`` in one Delta commit."""
    db = ex.catalog.require_database(dbname)
    schema = engine_schema(db, storage.columns)
    tables = []
    for data in parts:
        arrays, names = [], []
        for f in schema:
            if f.name in data:
                try:
                    arrays.append(pa.array(data[f.name], f.type))
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                    # a value the checks let through that its column cannot hold: TDengine's
                    # "value out of range", never Arrow's words (nothing has been written yet)
                    raise SqlError(
                        f"value out of range for column {f.name}", code=Code.VALUE_OUT_OF_RANGE
                    ) from None
                names.append(f.name)
        tables.append(pa.Table.from_arrays(arrays, names=names))
    merged = pa.concat_tables(tables, promote_options="default")
    ex.lake.write(db, storage, merged)


def delete(ex: Session, s: ast.Delete, sql: str) -> ResultSet:
    dbname = ex.db_name(s.table.db)
    db = ex.catalog.require_database(dbname)
    table = ex.catalog.table(dbname, s.table.name)
    if table is None:
        raise SqlError(
            f"table {dbname}.{s.table.name} does not exist",
            sql=sql,
            offset=s.table.span.start if s.table.span else None,
            code=Code.TABLE_NOT_EXIST,
        )
    refuse_write(table, "DELETE", sql=sql, span=s.table.span)
    storage = table if table.kind != "sub" else ex.catalog.require_table(dbname, table.storage)
    ex.require(WRITE, db, storage.name, sql=sql, span=s.table.span)
    lo, hi, tbnames = delete_bounds(ex, s.where, table, db.precision, sql)
    if table.kind == "sub":
        tbnames = [table.name]
    res = ex.lake.delete(db, storage, ts_min=lo, ts_max=hi, tbnames=tbnames)
    return ResultSet.affected(res.deleted)


def delete_bounds(
    ex: Session, where: exp.Expr | None, table: Table, precision: str, sql: str
) -> tuple[int | None, int | None, list[str] | None]:
    """Inclusive [lo, hi] on the timestamp column from a DELETE's WHERE (TDengine allows
    conditions on the primary timestamp, joined by AND), plus ``tbname = 'x'`` / IN."""
    lo: int | None = None
    hi: int | None = None
    tbnames: list[str] | None = None
    if where is None:
        return lo, hi, tbnames
    ts_name = table.columns[0].name.lower()
    now = Now()
    conds: list[exp.Expr] = []

    def flatten(e: exp.Expr) -> None:
        if isinstance(e, exp.And):
            flatten(e.this)
            flatten(e.expression)
        elif isinstance(e, exp.Paren):
            flatten(e.this)
        else:
            conds.append(e)

    flatten(where)

    def value(node: exp.Expr) -> int:
        what = f"column {table.columns[0].name} TIMESTAMP"
        return int(ex.value(node, TIMESTAMP, precision, now, what, sql=sql, offset=offset_of(node)))

    for c in conds:
        col = c.this if hasattr(c, "this") else None
        if isinstance(c, exp.EQ | exp.In) and isinstance(col, exp.Column) and col.name.lower() == "tbname":
            items = [c.expression] if isinstance(c, exp.EQ) else list(c.expressions)
            tbnames = [str(constant(i, precision, ex.tz, now)) for i in items]
            continue
        if not (isinstance(col, exp.Column) and col.name.lower() in (ts_name, "_c0", "_rowts")):
            raise SqlError(
                "DELETE only accepts conditions on the primary timestamp column "
                f"{table.columns[0].name} (and tbname)",
                sql=sql,
                offset=offset_of(c),
                code=Code.INVALID_OPERATION,
            )
        if isinstance(c, exp.Between):
            a, b = value(c.args["low"]), value(c.args["high"])
            lo, hi = max(lo, a) if lo is not None else a, min(hi, b) if hi is not None else b
        elif isinstance(c, exp.EQ):
            v = value(c.expression)
            lo, hi = max(lo, v) if lo is not None else v, min(hi, v) if hi is not None else v
        elif isinstance(c, exp.GTE | exp.GT):
            v = value(c.expression) + (1 if isinstance(c, exp.GT) else 0)
            lo = max(lo, v) if lo is not None else v
        elif isinstance(c, exp.LTE | exp.LT):
            v = value(c.expression) - (1 if isinstance(c, exp.LT) else 0)
            hi = min(hi, v) if hi is not None else v
        else:
            raise SqlError(
                "unsupported DELETE condition: use =, <, <=, >, >=, BETWEEN on the timestamp",
                sql=sql,
                offset=offset_of(c),
                code=Code.INVALID_OPERATION,
            )
    return lo, hi, tbnames
