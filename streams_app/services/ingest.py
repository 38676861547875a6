"""Ingestion of rows into a table from the REST API: JSON rows or a CSV file, as an ``ImportJob``.

Values go through the same conversion as SQL ``INSERT`` (``spark_workers.sql.values.coerce``:
the same type and range checks, the same messages) and the rows through the same write path
(``Lake.write``: upsert under the (tbname, ts) row key, one Delta commit per chunk). The whole
input is checked before anything is written, so a file with one bad value writes nothing.

Input shape (``columns`` + ``rows``, row numbers 1-based, the CSV header not counted):

- a normal table or subtable: its column names (any case); the first (timestamp) column is
  required, missing columns are NULL;
- a supertable: a ``tbname`` column naming each row's subtable, plus the columns, plus optionally
  tag columns: a subtable that does not exist yet is created with the tag values of its first row
  (as ``INSERT ... USING ... TAGS`` would); without tag columns it must exist.

Timestamps are ISO 8601 / ``YYYY-MM-DD HH:MM:SS[.fff][Z|+hh:mm]`` (no zone: ``TDWEB_TIMEZONE``) or
integer epoch milliseconds (converted to the database precision). Cost: one Python conversion per
value (about 1 s per 500k values) and one Delta commit per ``CHUNK_ROWS`` rows.
"""

from __future__ import annotations

import csv
import gzip
import io
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from django.conf import settings
from django.utils import timezone

from spark_workers import access
from spark_workers.access import WRITE
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, LakeError, SqlError, TdError
from spark_workers.lake.catalog import Column, Database, Table
from spark_workers.lake.keys import key_column
from spark_workers.lake.names import check_name
from spark_workers.lake.store import engine_schema
from spark_workers.sql.values import coerce
from spark_workers.tdtypes import TIMESTAMP
from streams_app.models import ImportJob
from streams_app.services.access import principal_for
from streams_app.services.lake import lake_get

log = logging.getLogger(__name__)

CHUNK_ROWS = 20_000
MAX_ROWS = 5_000_000
MAX_NAME = 192
DEFAULT_NULL_VALUES = ("NULL", "NA")


class IngestError(TdError):
    """Input that cannot be written; ``row`` (1-based) and ``column`` locate the first problem.

    ``import_id`` is the failed ``ImportJob`` when one was recorded."""

    def __init__(
        self,
        message: str,
        *,
        code: int = Code.WRONG_VALUE_TYPE,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.row = row
        self.column = column
        self.import_id: int | None = None


@dataclass
class _Target:
    db: Database
    table: Table
    storage: Table


def _resolve(db: str, name: str) -> _Target:
    """The table and its storage table; raises ``CatalogError`` (unknown database or table)."""
    lake = lake_get()
    database = lake.catalog.require_database(db)
    table = lake.catalog.require_table(database.name, name)
    storage = table if table.kind != "sub" else lake.catalog.require_table(database.name, table.storage)
    return _Target(database, table, storage)


# ---------------------------------------------------------------------- parsing the input


def rows_from_json(body: Any) -> tuple[list[str], list[Sequence[Any]]]:
    """``{"rows": [{col: value}, ...]}`` or ``{"columns": [...], "data": [[...], ...]}`` ->
    ``(columns, rows)``; a key missing from a row object is NULL.

    Raises:
        IngestError: neither shape, or a row that is not an object / list of the right length.
    """
    if not isinstance(body, dict):
        raise IngestError('expected {"rows": [...]} or {"columns": [...], "data": [...]}')
    if "rows" in body:
        objs = body["rows"]
        if not isinstance(objs, list):
            raise IngestError('"rows" must be a list of objects')
        columns: list[str] = []
        seen: set[str] = set()
        for i, o in enumerate(objs, 1):
            if not isinstance(o, dict):
                raise IngestError(f"row {i}: expected an object {{column: value}}", row=i)
            for k in o:
                if k not in seen:
                    seen.add(k)
                    columns.append(str(k))
        return columns, [[o.get(c) for c in columns] for o in objs]
    if "columns" in body and "data" in body:
        cols, data = body["columns"], body["data"]
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
            raise IngestError('"columns" must be a list of column names')
        if not isinstance(data, list):
            raise IngestError('"data" must be a list of rows (lists of values)')
        for i, r in enumerate(data, 1):
            if not isinstance(r, list):
                raise IngestError(f"row {i}: expected a list of {len(cols)} values", row=i)
            if len(r) != len(cols):
                raise IngestError(
                    f"row {i}: {len(r)} values for {len(cols)} columns",
                    row=i,
                    code=Code.COLUMN_COUNT_MISMATCH,
                )
        return list(cols), data
    raise IngestError('expected {"rows": [...]} or {"columns": [...], "data": [...]}')


def rows_from_csv(
    raw: bytes, *, filename: str = "", null_values: Iterable[str] = DEFAULT_NULL_VALUES
) -> tuple[list[str], list[Sequence[Any]]]:
    """A CSV file (UTF-8, optionally gzip-compressed; first line = column names) ->
    ``(columns, rows)``; an empty cell or one of ``null_values`` (any case) is NULL.

    Raises:
        IngestError: not UTF-8 / gzip, no header, or a row with the wrong number of cells.
    """
    if raw[:2] == b"\x1f\x8b" or filename.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except OSError as e:
            raise IngestError(f"{filename or 'the file'} is not a valid gzip file: {e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise IngestError(f"the file is not UTF-8 text (byte {e.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise IngestError("the file is empty: its first line must name the columns")
    columns = [h.strip() for h in header]
    nulls = {v.strip().lower() for v in null_values} | {""}
    rows: list[Sequence[Any]] = []
    for r in reader:
        if not r:  # a blank line
            continue
        if len(r) != len(columns):
            raise IngestError(
                f"row {len(rows) + 1} (line {reader.line_num}): {len(r)} values for {len(columns)} columns",
                row=len(rows) + 1,
                code=Code.COLUMN_COUNT_MISMATCH,
            )
        rows.append([None if v.strip().lower() in nulls else v for v in r])
    return columns, rows


# ---------------------------------------------------------------------- checking


def _ts_value(v: Any, precision: str, tz: str, what: str) -> int | None:
    """A timestamp: integer epoch milliseconds (number or digits) or a timestamp string."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise SqlError(f"invalid timestamp {v!r} for {what}", code=Code.WRONG_VALUE_TYPE)
    if isinstance(v, float) and v == v and v == int(v):
        v = int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v.strip())
    if isinstance(v, int):
        return v * (1_000_000 // NS_PER_PRECISION[precision])
    return int(coerce(v, TIMESTAMP, precision, tz, what))


def _message(e: SqlError, value: Any, col: Column, row: int) -> str:
    where = f"row {row}, column {col.name}"
    if e.code == Code.WRONG_VALUE_TYPE:
        return f"{where}: {value!r} is not a {col.type.sql}"
    return f"{where}: {e.message}"


def _convert(values: list[Any], col: Column, precision: str, tz: str) -> tuple[list[Any], IngestError | None]:
    """Convert one column's values; stops at its first bad value."""
    out: list[Any] = []
    what = f"column {col.name} {col.type.sql}"
    is_ts = col.type.name == "TIMESTAMP"
    for i, v in enumerate(values):
        try:
            out.append(
                _ts_value(v, precision, tz, what) if is_ts else coerce(v, col.type, precision, tz, what)
            )
        except SqlError as e:
            return out, IngestError(_message(e, v, col, i + 1), code=e.code, row=i + 1, column=col.name)
    return out, None


def _first(errors: list[IngestError]) -> IngestError | None:
    return min(errors, key=lambda e: e.row or 0) if errors else None


@dataclass
class _Checked:
    """Converted columns (engine form: physical name -> values) plus subtables to create."""

    data: dict[str, list[Any]]
    to_create: list[Table]
    rows: int


@dataclass(frozen=True)
class _Mapping:
    """Where each given column goes: (position in the rows, table column), the same for tags,
    and the position of ``tbname`` (None when the rows are for one table)."""

    picked: list[tuple[int, Column]]
    tag_cols: list[tuple[int, Column]]
    tbname_idx: int | None


def _map_columns(t: _Target, columns: list[str]) -> _Mapping:
    """Map the import's column names onto ``t``'s columns and tags; raises ``IngestError`` for a
    repeated, unknown or misplaced column, a missing timestamp, or a supertable without tbname."""
    table, db = t.table, t.db
    picked: list[tuple[int, Column]] = []
    tag_cols: list[tuple[int, Column]] = []
    tbname_idx: int | None = None
    seen: set[str] = set()
    for i, name in enumerate(columns):
        low = name.lower()
        if low in seen:
            raise IngestError(f"column {name} is given twice", code=Code.INVALID_COLUMN, column=name)
        seen.add(low)
        if low == "tbname":
            if table.kind != "super":
                raise IngestError(
                    f"column tbname is only for a supertable; {table.name} is a {table.kind} table",
                    code=Code.INVALID_COLUMN,
                    column=name,
                )
            tbname_idx = i
            continue
        c = table.column(name)
        if c is not None:
            picked.append((i, c))
            continue
        g = table.tag(name) if table.kind == "super" else None
        if g is not None:
            tag_cols.append((i, g))
            continue
        allowed = [c.name for c in table.columns] + (
            ["tbname", *(g.name for g in table.tags)] if table.kind == "super" else []
        )
        raise IngestError(
            f"unknown column {name} in {db.name}.{table.name} (columns: {', '.join(allowed)})",
            code=Code.INVALID_COLUMN,
            column=name,
        )
    ts = table.columns[0]
    if not any(c is ts for _, c in picked):
        raise IngestError(
            f"the timestamp column {ts.name} must be given", code=Code.INVALID_COLUMN, column=ts.name
        )
    key = key_column(table)
    if key is not None and not any(c is key for _, c in picked):
        raise IngestError(
            f"the composite key column {key.name} must be given",
            code=Code.PRIMARY_KEY_IS_NULL,
            column=key.name,
        )
    if table.kind == "super" and tbname_idx is None:
        raise IngestError(
            f"{table.name} is a supertable: give each row's subtable in a tbname column "
            f"(and tag columns {', '.join(g.name for g in table.tags)} to create new subtables), "
            "or import into a subtable",
            code=Code.INVALID_OPERATION,
            column="tbname",
        )
    return _Mapping(picked, tag_cols, tbname_idx)


def _check(t: _Target, columns: list[str], rows: Sequence[Sequence[Any]]) -> _Checked:
    """Validate and convert everything (see module docstring); raises ``IngestError``."""
    table, db = t.table, t.db
    if len(rows) > MAX_ROWS:
        raise IngestError(
            f"{len(rows):,} rows: at most {MAX_ROWS:,} per import", code=Code.VALUE_OUT_OF_RANGE
        )
    m = _map_columns(t, columns)
    ts = table.columns[0]
    data: dict[str, list[Any]] = {}
    errors: list[IngestError] = []
    for i, c in m.picked:
        values, err = _convert([r[i] for r in rows], c, db.precision, settings.TDWEB_TIMEZONE)
        if err is not None:
            errors.append(err)
        data[c.physical] = values
    key = key_column(table)
    if not errors:
        for c in (ts, key) if key is not None else (ts,):
            r = next((r for r, v in enumerate(data[c.physical], 1) if v is None), None)
            if r is not None:
                what = "the timestamp" if c is ts else "the composite key"
                code = Code.WRONG_VALUE_TYPE if c is ts else Code.PRIMARY_KEY_IS_NULL
                errors.append(
                    IngestError(
                        f"row {r}, column {c.name}: {what} cannot be NULL", code=code, row=r, column=c.name
                    )
                )
                break
    to_create: list[Table] = []
    if m.tbname_idx is None:
        data["tbname"] = [table.name] * len(rows)
    else:
        names, create_err = _subtables(t, rows, m.tbname_idx, m.tag_cols, to_create)
        if create_err is not None:
            errors.append(create_err)
        data["tbname"] = names
    err = _first(errors)
    if err is not None:
        raise err
    return _Checked(data, to_create, len(rows))


def _subtables(
    t: _Target,
    rows: Sequence[Sequence[Any]],
    tbname_idx: int,
    tag_cols: list[tuple[int, Column]],
    to_create: list[Table],
) -> tuple[list[str], IngestError | None]:
    """Each row's subtable name (as the catalog spells it); new ones are appended to
    ``to_create`` with the tag values of their first row."""
    catalog = lake_get().catalog
    stable, db = t.table, t.db
    tz = settings.TDWEB_TIMEZONE
    known: dict[str, str] = {}
    names: list[str] = []
    for r, row in enumerate(rows, 1):
        raw = row[tbname_idx]
        name = "" if raw is None else str(raw).strip()
        key = name.lower()
        if key in known:
            names.append(known[key])
            continue
        if not name or len(name) > MAX_NAME:
            return names, IngestError(
                f"row {r}, column tbname: {raw!r} is not a table name (1 to {MAX_NAME} characters)",
                code=Code.INVALID_OPERATION,
                row=r,
                column="tbname",
            )
        existing = catalog.table(db.name, name)
        if existing is not None:
            if existing.kind != "sub" or (existing.stable or "").lower() != stable.name.lower():
                return names, IngestError(
                    f"row {r}, column tbname: {name} exists and is not a subtable of {stable.name}",
                    code=Code.INVALID_OPERATION,
                    row=r,
                    column="tbname",
                )
            known[key] = existing.name
            names.append(existing.name)
            continue
        if not tag_cols:
            return names, IngestError(
                f"row {r}, column tbname: subtable {name} does not exist; add tag columns "
                f"({', '.join(g.name for g in stable.tags)}) to create it",
                code=Code.TABLE_NOT_EXIST,
                row=r,
                column="tbname",
            )
        values: dict[str, Any] = {g.name.lower(): None for g in stable.tags}
        for i, g in tag_cols:
            try:
                values[g.name.lower()] = coerce(
                    row[i], g.type, db.precision, tz, f"tag {g.name} {g.type.sql}"
                )
            except SqlError as e:
                return names, IngestError(_message(e, row[i], g, r), code=e.code, row=r, column=g.name)
        try:
            check_name(name, "table")
        except SqlError as e:
            return names, IngestError(
                f"row {r}, column tbname: {e.message}", code=e.code, row=r, column="tbname"
            )
        to_create.append(Table(db.name, name, "sub", stable.columns, stable.tags, stable.name, values))
        known[key] = name
        names.append(name)
    return names, None


# ---------------------------------------------------------------------- the job


def import_rows(
    *, user: Any, db: str, table: str, columns: list[str], rows: Sequence[Sequence[Any]], filename: str = ""
) -> ImportJob:
    """Check ``rows`` completely, then write them in chunks of ``CHUNK_ROWS``, recording an
    ``ImportJob`` (``rows_total``, ``rows_done`` after every chunk, ``state``).

    Args:
        user: the job's owner.
        db, table: the target table (see module docstring for supertables).
        columns: column names of ``rows``; rows: one sequence of values per row.
        filename: the uploaded file's name ("" for JSON).

    Returns:
        The finished job (state ``done``).

    Raises:
        CatalogError: unknown database or table (no job is recorded).
        IngestError: bad input (``row``, ``column``, ``import_id`` of the failed job); nothing
            was written.
        TdError: the lake refused a write; the job is failed with the rows written so far.
    """
    target = _resolve(db, table)
    # written with the user's privileges (TDengine: WRITE on the table or its database)
    access.require(principal_for(user), WRITE, target.db, target.storage.name)
    job = ImportJob.objects.create(
        owner=user,
        db=target.db.name,
        table=target.table.name,
        filename=filename[:256],
        rows_total=len(rows),
    )
    try:
        checked = _check(target, columns, rows)
    except IngestError as e:
        _fail(job, e.message)
        e.import_id = job.pk
        raise
    lake = lake_get()
    try:
        if checked.to_create:
            lake.catalog.create_subtables(checked.to_create, now_ms=int(time.time() * 1000))
        schema = engine_schema(target.db, target.storage.columns)
        fields = [f for f in schema if f.name in checked.data]
        for lo in range(0, checked.rows, CHUNK_ROWS):
            hi = min(lo + CHUNK_ROWS, checked.rows)
            chunk = pa.Table.from_arrays(
                [pa.array(checked.data[f.name][lo:hi], f.type) for f in fields],
                names=[f.name for f in fields],
            )
            lake.write(target.db, target.storage, chunk)
            ImportJob.objects.filter(pk=job.pk).update(rows_done=hi, updated_at=timezone.now())
    except Exception as e:
        job.refresh_from_db()
        # a TdError's message is for users; any other failure is logged, never shown
        detail = e.message if isinstance(e, TdError) and not isinstance(e, LakeError) else "internal error"
        log.exception("import %s into %s.%s failed", job.pk, target.db.name, target.table.name)
        _fail(job, f"write failed after {job.rows_done:,} rows: {detail}")
        raise TdError(f"write failed after {job.rows_done:,} rows: {detail}") from e
    ImportJob.objects.filter(pk=job.pk).update(state=ImportJob.State.DONE, updated_at=timezone.now())
    job.refresh_from_db()
    return job


def _fail(job: ImportJob, message: str) -> None:
    ImportJob.objects.filter(pk=job.pk).update(
        state=ImportJob.State.FAILED, error=message[:4000], updated_at=timezone.now()
    )
