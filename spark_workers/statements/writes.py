"""Writes: INSERT (multi-row, multi-table, ``USING ... TAGS`` auto-create) and DELETE by time range
(TDengine SQL manual "Insert", "Delete Data"). Every row is checked before anything is written; a
multi-table INSERT is one Delta commit per storage table.
"""

from __future__ import annotations

import decimal
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from spark_workers.access import WRITE
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Column, Database, Table
from spark_workers.lake.keys import key_column
from spark_workers.lake.names import check_name
from spark_workers.lake.retention import kept_from
from spark_workers.lake.store import engine_schema
from spark_workers.query.results import ResultColumn, ResultSet
from spark_workers.query.select import run_select
from spark_workers.sql import ast
from spark_workers.sql.ast import Span, offset_of
from spark_workers.sql.fast_insert import column_array, literal_constant
from spark_workers.sql.values import Now, coerce, constant
from spark_workers.statements.ddl import subtable
from spark_workers.statements.session import Session
from spark_workers.statements.vtables import refuse_write
from spark_workers.tdtypes import TIMESTAMP, TdType, varchar
from spark_workers.timestamps import render as render_ts


def insert(ex: Session, s: ast.Insert, sql: str) -> ResultSet:
    """Run an INSERT: every row of every target is checked, then the subtables it creates
    (``USING ... TAGS``, or a new ``tbname`` written through its supertable) are created and the
    rows written, one Delta commit per storage table.

    Forms (TDengine SQL manual, "Insert"): ``INSERT INTO tb [USING stb TAGS (...)] [(cols)] VALUES
    ...`` for several tables; ``INSERT INTO stb (tbname, [tags,] cols) VALUES ...`` (a subtable
    that does not exist is created with the listed tags, the others NULL; an existing one keeps
    its tags); ``INSERT INTO tb|stb [(cols)] subquery``: the query runs with the client's
    privileges (READ on its sources) and its rows, cast to the target's column types, are written
    in one commit. Differences: the query's rows are held in memory, so they are bounded by the
    statement limits (``TDWEB_SQL_MAX_ROWS``: a larger result is refused with RESULT_TOO_LARGE and
    nothing is written); ``tbname`` may stand anywhere in a supertable's column list, where
    TDengine wants it first for a subquery.

    Raises:
        SqlError: TABLE_NOT_EXIST, INVALID_OPERATION (a supertable without ``tbname`` in its
            column list), INVALID_COLUMN (column list), COLUMN_COUNT_MISMATCH (VALUES),
            INVALID_COLUMNS_NUM (a subquery's column count), a value that does not convert or a
            NULL timestamp, positioned where the statement has spans; PERMISSION_DENIED without
            WRITE on a storage table or READ on a subquery's source.
        CatalogError: a missing database.
    """
    now = Now()
    batches: dict[tuple[str, str], list[Mapping[str, pa.Array | list[Any]]]] = defaultdict(list)
    to_create: list[Table] = []
    storages: dict[tuple[str, str], Table] = {}
    total = 0
    for target in s.targets:
        dbname, db, table, storage = _insert_target(ex, target, sql, to_create)
        storages[(dbname, storage.name)] = storage
        layout = _Layout.of(table, target.columns, sql, target.table.span)
        kept = kept_from(db, int(time.time() * 1000))
        data: Mapping[str, pa.Array | list[Any]] | None
        if target.values is not None:
            columns = _plain_columns(target.values, table, layout, db.precision, ex.tz, sql)
            data, n = _plain_data(table, layout, columns, kept)
            if data is None:  # a rule broken: row by row, which raises the first error in row order
                cells = [list(r) for r in zip(*(_as_list(c) for c in columns), strict=True)]
                data = _rows_data(ex, table, layout, cells, [[None] * len(columns)] * n, sql, to_create, kept)
        else:
            if target.query is not None:
                cells, offsets = _select_cells(ex, target, table, layout, db.precision, sql)
            else:
                cells, offsets = _value_cells(ex, target, table, layout, db.precision, now, sql)
            data = _rows_data(ex, table, layout, cells, offsets, sql, to_create, kept)
            n = len(cells)
        total += n
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
        raise ex.no_such_table(
            dbname,
            target.table.name,
            sql=sql,
            span=target.table.span,
            message=f"Table does not exist: {dbname}.{target.table.name}",
        )
    refuse_write(table, "INSERT", sql=sql, span=target.table.span)
    if table.kind == "super" and not any(c.lower() == "tbname" for c in target.columns or []):
        raise SqlError(
            f"tbname must be specified in the column list when inserting into supertable {table.name}: "
            f"INSERT INTO {table.name} (tbname, ...) VALUES ..., or INSERT INTO t USING {table.name} "
            "TAGS (...) VALUES ...",
            sql=sql,
            offset=target.table.span.start if target.table.span else None,
            code=Code.INVALID_OPERATION,
        )
    db = ex.catalog.require_database(dbname)
    storage = (
        table
        if table.kind in ("normal", "super")
        else (ex.catalog.table(dbname, table.storage) or ex.catalog.require_table(dbname, table.storage))
    )
    ex.require(WRITE, db, storage.name, sql=sql, span=target.table.span)
    return dbname, db, table, storage


TBNAME_TYPE = varchar(192)  # a subtable name: TDengine's TSDB_TABLE_NAME_LEN - 1 bytes


@dataclass(frozen=True)
class _Layout:
    """What each position of an INSERT's column list writes: ``columns[i]`` is a data column,
    ``tags[i]`` a tag (supertable targets), ``tbname`` the position of ``tbname`` (or None).

    Attributes:
        types: the TDengine type of each position (``tbname`` is VARCHAR(192)).
        names: each position's name as the table spells it (for messages).
    """

    columns: dict[int, Column]
    tags: dict[int, Column]
    tbname: int | None
    types: list[TdType]
    names: list[str]

    @classmethod
    def of(cls, table: Table, names: list[str] | None, sql: str, span: Span | None) -> _Layout:
        """The layout of ``names`` (None: every data column, in order) for ``table``.

        Raises:
            SqlError: INVALID_COLUMN (unknown, listed twice, the timestamp missing; a tag or
                ``tbname`` outside a supertable target), PRIMARY_KEY_IS_NULL (composite key
                missing).
        """
        if names is None:
            cols = list(table.columns)
            return cls(dict(enumerate(cols)), {}, None, [c.type for c in cols], [c.name for c in cols])
        columns: dict[int, Column] = {}
        tags: dict[int, Column] = {}
        tbname: int | None = None
        types: list[TdType] = []
        out_names: list[str] = []
        seen: set[str] = set()
        for i, name in enumerate(names):
            low = name.lower()
            if low in seen:
                raise SqlError(f"Duplicated column names: {name}", sql=sql, code=Code.INVALID_COLUMN)
            seen.add(low)
            c = table.column(name)
            if c is not None:
                columns[i] = c
                types.append(c.type)
                out_names.append(c.name)
                continue
            if table.kind == "super" and low == "tbname":
                tbname = i
                types.append(TBNAME_TYPE)
                out_names.append("tbname")
                continue
            tag = table.tag(name) if table.kind == "super" else None
            if tag is None:
                raise SqlError(
                    f"Invalid column name: {name} is not a column of {table.name}"
                    + (" (tags are set through its supertable)" if table.tag(name) is not None else ""),
                    sql=sql,
                    offset=span.start if span else None,
                    code=Code.INVALID_COLUMN,
                )
            tags[i] = tag
            types.append(tag.type)
            out_names.append(tag.name)
        if table.columns[0] not in columns.values():
            raise SqlError(
                f"Primary timestamp column should not be null: the timestamp column "
                f"{table.columns[0].name} must be written",
                sql=sql,
                offset=span.start if span else None,
                code=Code.INVALID_COLUMN,
            )
        key = key_column(table)
        if key is not None and key not in columns.values():
            raise SqlError(
                f"Primary key column should not be null: the composite key column {key.name} must be "
                "written (it is part of the row key)",
                sql=sql,
                offset=span.start if span else None,
                code=Code.PRIMARY_KEY_IS_NULL,
            )
        return cls(columns, tags, tbname, types, out_names)


def _value_cells(
    ex: Session,
    target: ast.InsertTarget,
    table: Table,
    layout: _Layout,
    precision: str,
    now: Now,
    sql: str,
) -> tuple[list[list[Any]], list[list[int | None]]]:
    """The VALUES rows of a target, each value converted to its position's type (constants folded,
    ``sql/values.py``), with each value's offset in ``sql``."""
    rows: list[list[Any]] = []
    offsets: list[list[int | None]] = []
    n = len(layout.types)
    for r, row in enumerate(target.rows):
        spans = target.row_spans[r] if r < len(target.row_spans) else []
        offs: list[int | None] = [spans[i].start if i < len(spans) else None for i in range(len(row))]
        if len(row) != n:
            off = offs[0] if offs else (target.span.start if target.span else None)
            raise SqlError(
                f"Illegal number of columns: {len(row)} values for {n} columns of {table.name}",
                sql=sql,
                offset=off,
                code=Code.COLUMN_COUNT_MISMATCH,
            )
        out = []
        for i, node in enumerate(row):
            t = layout.types[i]
            what = f"{'tag' if i in layout.tags else 'column'} {layout.names[i]} {t.sql}"
            out.append(ex.value(node, t, precision, now, what, sql=sql, offset=offs[i]))
        rows.append(out)
        offsets.append(offs)
    return rows, offsets


def _plain_columns(
    values: list[pa.StringArray], table: Table, layout: _Layout, precision: str, tz: str, sql: str
) -> list[pa.Array | list[Any]]:
    """The values the fast path read (``sql/fast_insert.py``, literal texts column by column),
    each column converted to its position's type: by Arrow for the whole column
    (``column_array``), else value by value by ``coerce`` as ``Session.value`` converts a plain
    literal's node; errors are not positioned (the executor answers them through the full parser
    again).

    Raises:
        SqlError: COLUMN_COUNT_MISMATCH, the conversion errors of ``coerce``.
    """
    n = len(layout.types)
    if len(values) != n:
        raise SqlError(
            f"Illegal number of columns: {len(values)} values for {n} columns of {table.name}",
            sql=sql,
            code=Code.COLUMN_COUNT_MISMATCH,
        )
    cols: list[pa.Array | list[Any]] = []
    for i, t in enumerate(layout.types):
        texts = values[i]
        col = column_array(texts, t)
        if col is None:
            what = f"{'tag' if i in layout.tags else 'column'} {layout.names[i]} {t.sql}"
            cols.append([coerce(literal_constant(x), t, precision, tz, what) for x in texts.to_pylist()])
        else:
            cols.append(col)
    return cols


def _as_list(col: pa.Array | list[Any]) -> list[Any]:
    return col.to_pylist() if isinstance(col, pa.Array) else col


def _plain_data(
    table: Table, layout: _Layout, columns: list[pa.Array | list[Any]], kept: int | None
) -> tuple[dict[str, pa.Array | list[Any]] | None, int]:
    """``(data, rows)``: :func:`_rows_data`'s result for converted columns (``_plain_columns``)
    of a target without a ``tbname`` position when no row breaks a rule (no NULL timestamp or
    composite key, no timestamp older than ``kept``), the columns kept as they are (Arrow arrays
    or lists); ``data`` is None when a rule is broken or the target names ``tbname`` (then the
    caller goes row by row, which raises the first error in row order)."""
    n = len(columns[0]) if columns else 0
    if layout.tbname is not None:
        return None, n
    ts_col = table.columns[0]
    key = key_column(table)
    data: dict[str, pa.Array | list[Any]] = {"tbname": pa.repeat(pa.scalar(table.name, pa.string()), n)}
    for i, c in layout.columns.items():
        col = columns[i]
        if c in (ts_col, key):
            if isinstance(col, pa.Array):
                if col.null_count:
                    return None, n
                low = pc.min(col).as_py() if n else None
            else:
                if any(v is None for v in col):
                    return None, n
                low = min(col) if col else None
            if c == ts_col and kept is not None and low is not None and low < kept:
                return None, n
        data[c.physical] = col
    return data, n


def _select_cells(
    ex: Session, target: ast.InsertTarget, table: Table, layout: _Layout, precision: str, sql: str
) -> tuple[list[list[Any]], list[list[int | None]]]:
    """The rows of an ``INSERT ... subquery``: the query runs with the client's privileges, then
    each result column is cast to its position's type, as TDengine casts a projection whose type
    differs from the column's (a value that does not convert is an error, not a silent NULL).

    Raises:
        SqlError: INVALID_COLUMNS_NUM (``Illegal number of columns``) when the query's column
            count differs from the column list's; the query's own errors; WRONG_VALUE_TYPE /
            VALUE_OUT_OF_RANGE for a value that does not fit.
    """
    assert target.query is not None
    q_off = target.query.span.start if target.query.span else None
    result = run_select(ex, target.query, sql)
    n = len(layout.types)
    if len(result.columns) != n:
        raise SqlError(
            f"Illegal number of columns: the query returns {len(result.columns)} columns, "
            f"{table.name} is written {n}",
            sql=sql,
            offset=q_off,
            code=Code.INVALID_COLUMNS_NUM,
        )
    rows: list[list[Any]] = []
    for row in result.rows:
        out = []
        for i, (rc, v) in enumerate(zip(result.columns, row, strict=True)):
            t = layout.types[i]
            what = f"{'tag' if i in layout.tags else 'column'} {layout.names[i]} {t.sql}"
            try:
                out.append(_result_value(v, rc, t, precision, ex.tz, what))
            except SqlError as e:
                raise SqlError(e.message, sql=sql, offset=q_off, code=e.code) from None
        rows.append(out)
    return rows, [[q_off] * n for _ in rows]


def _result_value(v: Any, rc: ResultColumn, t: TdType, precision: str, tz: str, what: str) -> Any:
    """One query result cell converted for a column of type ``t`` in a database of
    ``precision``: a TIMESTAMP cell is moved from its source's precision; DECIMAL results (DuckDB
    sums) become numbers first."""
    if v is None:
        return None
    if isinstance(v, decimal.Decimal):
        v = int(v) if v == v.to_integral_value() else float(v)
    if rc.type.name == "TIMESTAMP" and isinstance(v, int):
        v = ("ts", v * NS_PER_PRECISION[rc.precision] // NS_PER_PRECISION[precision])
    return coerce(v, t, precision, tz, what)


def _rows_data(
    ex: Session,
    table: Table,
    layout: _Layout,
    cells: list[list[Any]],
    offsets: list[list[int | None]],
    sql: str,
    to_create: list[Table],
    kept: int | None = None,
) -> dict[str, list[Any]]:
    """A target's converted rows as column lists keyed by physical name, plus ``tbname``: the
    timestamp (and composite key) never NULL nor older than ``kept`` (the database's
    ``now - KEEP`` in precision units, ``lake/retention.py``: TDengine's 0x060B); for a supertable
    target, each row's ``tbname`` names an existing subtable of it or one to create with that row's
    tags (appended to ``to_create``)."""
    if layout.tbname is None:
        whole = _column_data(table, layout, cells, kept)
        if whole is not None:
            return whole
    data: dict[str, list[Any]] = {"tbname": []}
    key = key_column(table)
    for c in layout.columns.values():
        data[c.physical] = []
    ts_col = table.columns[0]
    names: dict[str, str] = {}  # lower-case tbname -> the name rows are stored under
    for row, offs in zip(cells, offsets, strict=True):
        for i, c in layout.columns.items():
            v = row[i]
            if v is None and c == ts_col:
                raise SqlError(
                    "Primary timestamp column should not be null: "
                    f"the timestamp column {c.name} cannot be NULL",
                    sql=sql,
                    offset=offs[i],
                    code=Code.WRONG_VALUE_TYPE,
                )
            if c == ts_col and kept is not None and v < kept:
                precision = ex.catalog.require_database(table.db).precision
                raise SqlError(
                    f"Timestamp data out of range: {c.name} {render_ts(v, precision, ex.tz)} is older "
                    f"than the database's KEEP allows (now - KEEP = {render_ts(kept, precision, ex.tz)})",
                    sql=sql,
                    offset=offs[i],
                    code=Code.TIMESTAMP_OUT_OF_RANGE,
                )
            if v is None and c == key:
                raise SqlError(
                    "Primary key column should not be null: "
                    f"the composite key column {c.name} cannot be NULL",
                    sql=sql,
                    offset=offs[i],
                    code=Code.PRIMARY_KEY_IS_NULL,
                )
            data[c.physical].append(v)
        if layout.tbname is None:
            data["tbname"].append(table.name)
            continue
        name = row[layout.tbname]
        off = offs[layout.tbname]
        if name is None or not str(name):
            raise SqlError("tbname should not be null", sql=sql, offset=off, code=Code.INVALID_OPERATION)
        name = str(name)
        stored = names.get(name.lower())
        if stored is None:
            stored = _stb_subtable(ex, table, name, layout, row, sql, off, to_create)
            names[name.lower()] = stored
        data["tbname"].append(stored)
    return data


def _column_data(
    table: Table, layout: _Layout, cells: list[list[Any]], kept: int | None
) -> dict[str, pa.Array | list[Any]] | None:
    """:func:`_rows_data` column by column for a target without a ``tbname`` position, when no
    row breaks a rule; None when one does (then ``_rows_data`` goes row by row and raises the
    first error in row order). The rules are :func:`_plain_data`'s, on the rows' columns."""
    return _plain_data(table, layout, [[row[i] for row in cells] for i in range(len(layout.types))], kept)[0]


def _stb_subtable(
    ex: Session,
    stable: Table,
    name: str,
    layout: _Layout,
    row: list[Any],
    sql: str,
    offset: int | None,
    to_create: list[Table],
) -> str:
    """The name rows for subtable ``name`` of ``stable`` are stored under: an existing subtable
    keeps its tags (TDengine: "specifying tag values will not trigger a modification"); a new one
    is created with ``row``'s tags, unlisted tags NULL."""
    existing = ex.catalog.table(stable.db, name)
    if existing is not None:
        if existing.kind != "sub" or (existing.stable or "").lower() != stable.name.lower():
            raise SqlError(
                f"Table already exists in other stables: {name} is not a subtable of {stable.name}",
                sql=sql,
                offset=offset,
                code=Code.TABLE_ALREADY_EXIST,
            )
        return existing.name
    for t in to_create:
        if t.name.lower() == name.lower() and t.db.lower() == stable.db.lower():
            if (t.stable or "").lower() != stable.name.lower():
                raise SqlError(
                    f"Table already exists in other stables: {name} is created under {t.stable}",
                    sql=sql,
                    offset=offset,
                    code=Code.TABLE_ALREADY_EXIST,
                )
            return t.name
    check_name(name, "table", sql=sql, offset=offset)
    tag_values: dict[str, Any] = {tag.name.lower(): None for tag in stable.tags}
    for i, tag in layout.tags.items():
        tag_values[tag.name.lower()] = row[i]
    to_create.append(Table(stable.db, name, "sub", stable.columns, stable.tags, stable.name, tag_values))
    return name


def _write_storage(
    ex: Session, dbname: str, storage: Table, parts: list[Mapping[str, pa.Array | list[Any]]]
) -> None:
    """Write the rows of ``parts`` (``_rows_data`` results: column -> values, a list or an Arrow
    array cast to the column's engine type) to ``storage`` in one Delta commit."""
    db = ex.catalog.require_database(dbname)
    schema = engine_schema(db, storage.columns)
    tables = []
    for data in parts:
        arrays, names = [], []
        for f in schema:
            if f.name in data:
                col = data[f.name]
                try:
                    arrays.append(col.cast(f.type) if isinstance(col, pa.Array) else pa.array(col, f.type))
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
    """``DELETE FROM [db.]tb [WHERE condition]``: delete the rows of a normal table, subtable or
    supertable in the time range the WHERE gives (TDengine SQL manual, "Delete Data").

    Raises:
        SqlError: TABLE_NOT_EXIST; INVALID_DELETE_WHERE for a condition that does not bound the
            primary timestamp (see :func:`delete_bounds`); PERMISSION_DENIED without WRITE.
    """
    dbname = ex.db_name(s.table.db)
    db = ex.catalog.require_database(dbname)
    table = ex.catalog.table(dbname, s.table.name)
    if table is None:
        raise ex.no_such_table(
            dbname,
            s.table.name,
            sql=sql,
            span=s.table.span,
            message=f"Table does not exist: {dbname}.{s.table.name}",
        )
    refuse_write(table, "DELETE", sql=sql, span=s.table.span)
    storage = table if table.kind != "sub" else ex.catalog.require_table(dbname, table.storage)
    ex.require(WRITE, db, storage.name, sql=sql, span=s.table.span)
    lo, hi, tbnames = delete_bounds(ex, s.where, table, db.precision, sql)
    if table.kind == "sub":
        tbnames = (
            [table.name] if tbnames is None or table.name.lower() in {t.lower() for t in tbnames} else []
        )
    res = ex.lake.delete(db, storage, ts_min=lo, ts_max=hi, tbnames=tbnames)
    return ResultSet.affected(res.deleted)


_DELETE_WHERE = "The DELETE statement must have a definite time window range"


def delete_bounds(
    ex: Session, where: exp.Expr | None, table: Table, precision: str, sql: str
) -> tuple[int | None, int | None, list[str] | None]:
    """Inclusive ``[lo, hi]`` on the timestamp column from a DELETE's WHERE, and the subtables it
    names, None for all.

    TDengine accepts conditions on the primary timestamp (``= < <= > >= BETWEEN``) joined by AND,
    and on a supertable also ``tbname`` / tag conditions (``=``, ``IN``) that pick subtables
    (TDengine's parser tests: ``DELETE FROM st1 WHERE ts > now - 2d and ts < now - 1d AND tag1 =
    10``). Bounds are constants TDengine folds (``sql/values.py``): ``cast(1668073288214 as
    timestamp)``, ``now - 1h``, ``'2022-01-01' + 1d``, arithmetic.

    Raises:
        SqlError: INVALID_DELETE_WHERE ("The DELETE statement must have a definite time window
            range") for OR, NOT, ``<>``, a condition on a data column, a NULL bound; WRONG_VALUE_TYPE
            for a bound that is not a constant; positioned at the condition.
    """
    lo: int | None = None
    hi: int | None = None
    tbnames: list[str] | None = None
    if where is None:
        return lo, hi, tbnames
    ts_name = table.columns[0].name.lower()
    now = Now()
    conds = _and_terms(where)

    def refuse(c: exp.Expr, why: str) -> SqlError:
        return SqlError(
            f"{_DELETE_WHERE}: {why}", sql=sql, offset=offset_of(c), code=Code.INVALID_DELETE_WHERE
        )

    def value(node: exp.Expr, c: exp.Expr) -> int:
        what = f"column {table.columns[0].name} TIMESTAMP"
        off = offset_of(node)
        v = ex.value(
            node, TIMESTAMP, precision, now, what, sql=sql, offset=off if off is not None else offset_of(c)
        )
        if v is None:
            raise refuse(c, "a bound of the timestamp is NULL")
        return int(v)

    def pick(names: list[str]) -> None:
        nonlocal tbnames
        low = {n.lower() for n in names}
        tbnames = names if tbnames is None else [t for t in tbnames if t.lower() in low]

    for c in conds:
        col = c.this if isinstance(c, exp.Binary | exp.In | exp.Between) else None
        cname = col.name.lower() if isinstance(col, exp.Column) else None
        if isinstance(c, exp.EQ | exp.In) and cname == "tbname":
            items = [c.expression] if isinstance(c, exp.EQ) else list(c.expressions)
            pick([str(constant(i, precision, ex.tz, now)) for i in items])
            continue
        tag = table.tag(cname) if cname is not None and table.kind == "super" else None
        if tag is not None:
            if not isinstance(c, exp.EQ | exp.In):
                raise refuse(c, f"a tag condition on {tag.name} must be = or IN")
            items = [c.expression] if isinstance(c, exp.EQ) else list(c.expressions)
            pick(_subtables_with_tag(ex, table, tag, items, precision, now, sql))
            continue
        if cname not in (ts_name, "_c0", "_rowts"):
            raise refuse(
                c,
                f"only conditions on the primary timestamp {table.columns[0].name}"
                + (", tbname and tags" if table.kind == "super" else "")
                + ", joined by AND, are allowed",
            )
        if not isinstance(c, exp.Between | exp.EQ | exp.GTE | exp.GT | exp.LTE | exp.LT):
            raise refuse(c, "use =, <, <=, >, >= or BETWEEN on the timestamp")
        lo, hi = _narrow(lo, hi, c, value)
    return lo, hi, tbnames


def _and_terms(where: exp.Expr) -> list[exp.Expr]:
    """The conditions of a WHERE joined by AND (parentheses dropped), in order."""
    if isinstance(where, exp.And):
        return [*_and_terms(where.this), *_and_terms(where.expression)]
    if isinstance(where, exp.Paren):
        return _and_terms(where.this)
    return [where]


def _narrow(
    lo: int | None, hi: int | None, c: exp.Expr, value: Callable[[exp.Expr, exp.Expr], int]
) -> tuple[int | None, int | None]:
    """``[lo, hi]`` (inclusive, None = open) narrowed by timestamp condition ``c`` (``BETWEEN``,
    ``=``, ``>=``, ``>``, ``<=``, ``<``); ``value(node, c)`` folds a bound."""
    a: int | None = None
    b: int | None = None
    if isinstance(c, exp.Between):
        a, b = value(c.args["low"], c), value(c.args["high"], c)
    elif isinstance(c, exp.EQ):
        a = b = value(c.expression, c)
    elif isinstance(c, exp.GTE | exp.GT):
        a = value(c.expression, c) + (1 if isinstance(c, exp.GT) else 0)
    else:  # <= or <
        b = value(c.expression, c) - (1 if isinstance(c, exp.LT) else 0)
    if a is not None:
        lo = max(lo, a) if lo is not None else a
    if b is not None:
        hi = min(hi, b) if hi is not None else b
    return lo, hi


def _subtables_with_tag(
    ex: Session, stable: Table, tag: Column, items: list[exp.Expr], precision: str, now: Now, sql: str
) -> list[str]:
    """Names of the subtables of ``stable`` whose ``tag`` equals one of the constants ``items``."""
    wanted = []
    for node in items:
        v = ex.value(node, tag.type, precision, now, f"tag {tag.name} {tag.type.sql}", sql=sql,
                     offset=offset_of(node))  # fmt: skip
        if v is not None:  # tag = NULL is never true
            wanted.append(v)
    out = []
    for name, _kind, _st, _created in ex.catalog.tables(stable.db, kinds=("sub",), stable=stable.name):
        sub = ex.catalog.table(stable.db, name)
        if sub is not None and sub.tag_values.get(tag.name.lower()) in wanted:
            out.append(sub.name)
    return out
