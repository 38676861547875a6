"""Schemaless writing of InfluxDB line protocol into the lake, as TDengine maps it.

TDengine manual, "Ingesting Data in Schemaless Mode": "Schema-less Write Handling Rules" and "Data
Mode Mapping Rules"; the defaults are those of TDengine's client (``tsSmlTsDefaultName = "_ts"``,
``tsSmlTagName = "_tag_null"``, ``tsSmlDot2Underline = true``):

- The measurement is a supertable, created when missing as ``(_ts TIMESTAMP, <fields>) TAGS
  (<tags> NCHAR)``; a line without tags gets the one tag ``_tag_null`` (NULL).
- A subtable is named ``t_`` + the lower-case hex MD5 of ``measurement,k1=v1,k2=v2...`` with the
  tags sorted by key (case-insensitively, TDengine's ``buildChildTableName``); ``.`` in the
  measurement and the subtable name become ``_``.
- A field or tag the supertable lacks is added (``ALTER STABLE ... ADD COLUMN / TAG``, the ALTER
  machinery of ``statements/alter.py``); a VARCHAR / NCHAR column or tag too short for a value is
  widened (``MODIFY``). New lengths are TDengine's ``smlFindNearestPowerOf2``: the smallest power
  of two above the value's byte length (the length itself from 1024 bytes on).
- A field written with two types in one request is refused with SML_NOT_SAME_TYPE (0x3004); a
  field or tag whose type differs from the supertable's with TSC_INVALID_VALUE (0x0203), as
  TDengine's ``smlGenerateSchemaAction`` does. Fields and tags a line omits are NULL.

Atomicity: every line is parsed, typed and checked (privileges, types, names, KEEP) before
anything changes; then the schema changes are made and each supertable's rows are written in one
Delta commit, through the path of the SQL INSERT (``writes``). A bad line therefore writes
nothing. (TDengine parses a whole request before writing too; it does not promise atomicity across
its vnodes. A failure between two supertables' commits here leaves the first written, like
TDengine's multi-table INSERT.)

Two paths, one result: a body of what collectors send (no backslash, no double quote) is read
into columns (``line_protocol.parse_columns``) and written without a Python object per line; any
body or request that path cannot show it handles exactly as the line-by-line path (a line that
is refused, a field typed twice, a timestamp out of range...) is written by the line-by-line path,
the reference, which raises the positioned errors.

Differences: a supertable with a composite key column is refused (TDengine: "Schemaless writing
does not support writing data for tables with a second composite primary key column");
``smlChildTableName`` / ``smlAutoChildTableNameDelimiter`` are client configuration tdweb does not
read (the subtable name is always the MD5 rule).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from spark_workers.access import WRITE
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, SqlError, TdError
from spark_workers.lake.catalog import Database, Table
from spark_workers.lake.keys import key_column
from spark_workers.lake.retention import kept_from
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.line_protocol import Point, PointColumns, parse_columns, parse_lines
from spark_workers.sql.parser import parse_located
from spark_workers.statements import alter, ddl
from spark_workers.statements.session import Session
from spark_workers.statements.writes import _write_storage
from spark_workers.tdtypes import TdType

TS_COLUMN = "_ts"
NULL_TAG = "_tag_null"
# a request's ``precision`` -> nanoseconds per unit (taosAdapter's names; InfluxDB v1's ``n``/``u``)
PRECISION_NS = {
    "ns": 1,
    "n": 1,
    "u": 1_000,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_INT64_MAX = 2**63 - 1
_DDL_RACES = frozenset(
    {Code.STB_ALREADY_EXIST, Code.TABLE_ALREADY_EXIST, Code.COLUMN_ALREADY_EXIST, Code.TAG_ALREADY_EXIST}
)


def child_table_name(measurement: str, tags: Iterable[tuple[str, str]]) -> str:
    """TDengine's subtable name of a line: ``t_`` + md5 hex of ``measurement,k1=v1,...`` (tags
    sorted by key, case-insensitively; no tags: ``,_tag_null=``), ``.`` replaced by ``_``."""
    pairs = sorted(tags, key=lambda kv: kv[0].lower().encode("utf-8")) or [(NULL_TAG, "")]
    text = measurement + "".join(f",{k}={v}" for k, v in pairs)
    return "t_" + hashlib.md5(text.encode("utf-8")).hexdigest()


def sml_length(n: int) -> int:
    """TDengine's ``smlFindNearestPowerOf2`` for a value of ``n`` bytes: the smallest power of two
    above ``n``, or ``n`` itself from 1024 on."""
    if n >= 1024:
        return n
    r = 1
    while r <= n:
        r <<= 1
    return r


def _kind(t: TdType) -> str:
    return f"{t.name} UNSIGNED" if t.unsigned else t.name


def _quote(name: str, line: int) -> str:
    if "`" in name:
        raise SqlError(f"Invalid data format: line {line}: name {name} holds '`'", code=Code.SML_INVALID_DATA)
    return f"`{name}`"


@dataclass
class _Spec:
    """What one request needs of a supertable: ``name -> (kind, bytes)`` for fields and tags
    (bytes: the longest VARCHAR / NCHAR value), keyed by lower-case name."""

    name: str
    points: list[Point] = field(default_factory=list)  # the line-by-line path's
    cols: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    tags: dict[str, tuple[str, int]] = field(default_factory=dict)
    line: int = 0  # the first line of the supertable (in errors)
    _kinds: dict[str, str] = field(default_factory=dict)  # field name as written -> kind
    _heads: set[int] = field(default_factory=set)  # ids of the tags tuples taken

    def add(self, p: Point) -> None:
        """Take one line's fields and tags into the spec.

        Raises:
            SqlError: SML_NOT_SAME_TYPE (a field typed differently than an earlier line).
        """
        if not self.points:
            self.line = p.line
        self.points.append(p)
        if id(p.tags) not in self._heads:  # parse_lines shares one tuple per distinct head
            self._heads.add(id(p.tags))
            self.add_tags(p.tags)
        kinds = self._kinds
        for f in p.fields:
            if kinds.get(f.name) == f.kind and not isinstance(f.value, str):
                continue
            low = f.name.lower()
            size = len(f.value.encode("utf-8")) if isinstance(f.value, str) else 0
            old_c = self.cols.get(low)
            if old_c is not None and old_c[1] != f.kind:
                raise SqlError(
                    f"Not the same type as before: line {p.line}: field {f.name} is {f.kind}, an "
                    f"earlier line wrote it as {old_c[1]}",
                    code=Code.SML_NOT_SAME_TYPE,
                )
            self.cols[low] = (old_c[0] if old_c else f.name, f.kind, max(size, old_c[2] if old_c else 0))
            kinds[f.name] = f.kind

    def add_tags(self, tags: tuple[tuple[str, str], ...]) -> None:
        """Take the tags of a head not seen before (each tag's longest value in bytes)."""
        for k, v in tags:
            low = k.lower()
            size = len(v.encode("utf-8"))
            old = self.tags.get(low)
            self.tags[low] = (old[0] if old else k, max(size, old[1] if old else 0))

    def clash(self) -> set[str]:
        """The lower-case keys that are a field and a tag, or named like the timestamp column."""
        return (set(self.cols) & set(self.tags)) | ({TS_COLUMN} & (set(self.cols) | set(self.tags)))

    def check(self) -> None:
        """Refuse a key that is a field in one line and a tag in another, or a field or tag named
        like the timestamp column (SML_INVALID_DATA)."""
        clash = self.clash()
        if clash:
            key = sorted(clash)[0]
            line = next(
                p.line
                for p in self.points
                if any(k.lower() == key for k, _ in p.tags) or any(f.name.lower() == key for f in p.fields)
            )
            raise SqlError(
                f"Invalid data format: line {line}: {key} is both a tag and a field "
                f"(or the timestamp column {TS_COLUMN})",
                code=Code.SML_INVALID_DATA,
            )


def _type_sql(kind: str, size: int) -> str:
    return f"{kind}({sml_length(size)})" if kind in ("VARCHAR", "NCHAR") else kind


def _create_sql(db: Database, spec: _Spec) -> str:
    line = spec.line
    cols = [f"{_quote(TS_COLUMN, line)} TIMESTAMP"] + [
        f"{_quote(n, line)} {_type_sql(k, s)}" for n, k, s in spec.cols.values()
    ]
    tags = [f"{_quote(n, line)} NCHAR({sml_length(s)})" for n, s in spec.tags.values()] or [
        f"`{NULL_TAG}` NCHAR(1)"
    ]
    return (
        f"CREATE STABLE {_quote(db.name, line)}.{_quote(spec.name, line)} "
        f"({', '.join(cols)}) TAGS ({', '.join(tags)})"
    )


def _mismatch(spec: _Spec, what: str, name: str, point_type: str, db_type: str) -> SqlError:
    return SqlError(
        f"Invalid value in client: point type and db type mismatch: {what} {name} of {spec.name} is "
        f"{db_type}, the request writes {point_type}",
        code=Code.TSC_INVALID_VALUE,
    )


def _alter_sqls(db: Database, spec: _Spec, t: Table) -> list[str]:
    """The ``ALTER STABLE`` statements that make ``t`` hold ``spec``.

    Raises:
        SqlError: TSC_INVALID_VALUE for a type that differs from the supertable's;
            SML_INVALID_DATA for a field named like the timestamp column or a tag.
    """
    line = spec.line
    target = f"{_quote(db.name, line)}.{_quote(t.name, line)}"
    out = []
    for name, kind, size in spec.cols.values():
        c = t.column(name)
        if c is None:
            if t.tag(name) is not None:
                raise _mismatch(spec, "tag", name, f"a field of {kind}", "a tag")
            out.append(f"ALTER STABLE {target} ADD COLUMN {_quote(name, line)} {_type_sql(kind, size)}")
            continue
        if c == t.columns[0]:
            raise SqlError(
                f"Invalid data format: field {name} is the timestamp column of {t.name}",
                code=Code.SML_INVALID_DATA,
            )
        if _kind(c.type) != kind:
            raise _mismatch(spec, "column", c.name, kind, c.type.sql)
        if kind in ("VARCHAR", "NCHAR") and c.type.length < size:
            out.append(f"ALTER STABLE {target} MODIFY COLUMN {_quote(c.name, line)} {_type_sql(kind, size)}")
    for name, size in spec.tags.values():
        g = t.tag(name)
        if g is None:
            if t.column(name) is not None:
                raise _mismatch(spec, "column", name, "a tag", "a column")
            out.append(f"ALTER STABLE {target} ADD TAG {_quote(name, line)} NCHAR({sml_length(size)})")
            continue
        if g.type.name != "NCHAR":
            raise _mismatch(spec, "tag", g.name, "NCHAR", g.type.sql)
        if g.type.length < size:
            out.append(f"ALTER STABLE {target} MODIFY TAG {_quote(g.name, line)} NCHAR({sml_length(size)})")
    return out


@dataclass
class _Plan:
    """One supertable's part of a request, checked: its DDL, its rows' timestamps (database
    precision) and subtable names."""

    spec: _Spec
    ddl: list[str]
    ts: list[int]
    children: list[str]
    existing: set[str]  # lower-case names of the subtables that exist already


def _plan(ex: Session, db: Database, spec: _Spec, req_ns: int, now: int) -> _Plan:
    """Check one supertable's lines against the catalog and the client's privileges.

    Raises:
        SqlError / CatalogError: those of :func:`_schema_ddl`; SML_INVALID_DATA for a timestamp
            out of range; TIMESTAMP_OUT_OF_RANGE (older than KEEP); TABLE_ALREADY_EXIST for a
            subtable name taken by another table.
    """
    sqls = _schema_ddl(ex, db, spec)
    db_ns = NS_PER_PRECISION[db.precision]
    kept = kept_from(db, int(time.time() * 1000))
    ts = []
    for p in spec.points:
        if p.ts is None:
            ts.append(now)
            continue
        v = p.ts * req_ns // db_ns
        if v > _INT64_MAX:
            raise SqlError(
                f"Invalid data format: line {p.line}: timestamp out of range", code=Code.SML_INVALID_DATA
            )
        if kept is not None and v < kept:
            raise SqlError(
                f"Timestamp data out of range: line {p.line} is older than the database's KEEP allows",
                code=Code.TIMESTAMP_OUT_OF_RANGE,
            )
        ts.append(v)
    names: dict[int, str] = {}
    children = []
    for p in spec.points:
        child = names.get(id(p.tags))
        if child is None:
            child = names[id(p.tags)] = child_table_name(spec.name, p.tags).replace(".", "_")
        children.append(child)
    existing = _check_children(ex, db, spec.name, set(names.values()))
    return _Plan(spec, sqls, ts, children, existing)


def _schema_ddl(ex: Session, db: Database, spec: _Spec) -> list[str]:
    """The DDL that makes the supertable of ``spec`` hold its fields and tags.

    Raises:
        SqlError / CatalogError: the type errors of :func:`_alter_sqls`; PERMISSION_DENIED
            without WRITE (on the database for a new supertable); NOT_SUPPORTED for a composite
            key; SML_INVALID_DATA for a measurement that is not a supertable.
    """
    t = ex.catalog.table(db.name, spec.name)
    if t is None:
        ex.require(WRITE, db)
        return [_create_sql(db, spec)]
    if t.kind != "super" or t.virtual:
        raise SqlError(
            f"Invalid data format: {spec.name} exists and is not a supertable", code=Code.SML_INVALID_DATA
        )
    ex.require(WRITE, db, t.name)
    if key_column(t) is not None:
        raise SqlError(
            f"schemaless writing does not support {t.name}: it has a composite key column",
            code=Code.NOT_SUPPORTED,
        )
    return _alter_sqls(db, spec, t)


def _check_children(ex: Session, db: Database, stable: str, names: set[str]) -> set[str]:
    """The lower-case ``names`` that exist (as subtables of ``stable``); refuses a name taken by
    another table (TABLE_ALREADY_EXIST)."""
    found = ex.catalog.existing(db.name, list(names))
    for low in found:
        other = ex.catalog.table(db.name, low)
        if other is not None and (other.kind != "sub" or (other.stable or "").lower() != stable.lower()):
            raise SqlError(
                f"Table already exists in other stables: {other.name} is not a subtable of {stable}",
                code=Code.TABLE_ALREADY_EXIST,
            )
    return found


def _run_ddl(ex: Session, sql: str) -> None:
    """Run one generated CREATE STABLE / ALTER STABLE through its SQL handler."""
    for stmt, _start, text in parse_located(sql):
        if isinstance(stmt, ast.CreateTable):
            ddl.create_table(ex, stmt, text)
        else:
            assert isinstance(stmt, ast.AlterTable)
            alter.alter_table(ex, stmt, text)


def _write(ex: Session, db: Database, plan: _Plan) -> None:
    """Create the missing subtables and write the rows of one supertable in one commit."""
    stable = ex.catalog.require_table(db.name, plan.spec.name)
    _create_children(
        ex, db, stable, zip(plan.children, (p.tags for p in plan.spec.points), strict=True), plan.existing
    )
    n = len(plan.spec.points)
    data: dict[str, list[Any]] = {"tbname": plan.children, stable.columns[0].physical: plan.ts}
    lists: dict[str, list[Any]] = {}  # a field's name as written -> its column's values
    for i, p in enumerate(plan.spec.points):
        for f in p.fields:
            values_of = lists.get(f.name)
            if values_of is None:
                c = stable.column(f.name)
                assert c is not None  # the DDL added every field
                values_of = lists[f.name] = data.setdefault(c.physical, [None] * n)
            values_of[i] = f.value
    _write_storage(ex, db.name, stable, [data])


def _create_children(
    ex: Session,
    db: Database,
    stable: Table,
    children: Iterable[tuple[str, tuple[tuple[str, str], ...]]],
    existing: set[str],
) -> None:
    """Create the subtables of ``children`` (``(name, tags)`` per row or per head, in row order)
    that do not exist, each with the tags of its first row."""
    by_lower = {t.name.lower(): t.name.lower() for t in stable.tags}
    to_create: dict[str, Table] = {}
    for child, tags in children:
        low = child.lower()
        if low not in to_create and low not in existing:
            values: dict[str, object] = dict.fromkeys(by_lower.values())
            for k, v in tags:
                values[by_lower[k.lower()]] = v
            to_create[low] = Table(db.name, child, "sub", stable.columns, stable.tags, stable.name, values)
    if to_create:
        ex.catalog.create_subtables(list(to_create.values()), now_ms=int(time.time() * 1000))


class _Fallback(Exception):
    """The columnar path cannot show it writes what the line-by-line path writes (a field typed
    twice, a key both a field and a tag, a timestamp out of range...): that path takes the body,
    and raises its error."""


@dataclass
class _ColumnSpec:
    """A supertable's part of a columnar body: the spec (fields, tags, first line; no points),
    its points (indices into the ``PointColumns``, ascending) and heads (indices into
    ``PointColumns.heads``, in the order of their first point)."""

    spec: _Spec
    points: np.ndarray
    heads: list[int] = field(default_factory=list)


@dataclass
class _ColumnPlan:
    """:class:`_Plan` of a :class:`_ColumnSpec`: ``ts`` int64 per point (database precision),
    ``children`` one name per head of ``part.heads``, ``child`` each point's index into it."""

    part: _ColumnSpec
    ddl: list[str]
    ts: np.ndarray
    children: list[str]
    child: np.ndarray
    existing: set[str]


def _column_specs(cols: PointColumns) -> list[_ColumnSpec]:
    """The supertables of a columnar body with what :meth:`_Spec.add` would make of its points:
    fields and tags in the order of their first point, first-written names, the first line.

    Raises:
        _Fallback: a field typed twice (SML_NOT_SAME_TYPE) or a key that :meth:`_Spec.check`
            refuses.
    """
    index: dict[str, int] = {}  # lower-case supertable name -> its index in ordered
    ordered: list[_ColumnSpec] = []
    part_of_head = np.empty(len(cols.heads), np.int64)
    for h, (measurement, tags) in enumerate(cols.heads):
        name = measurement.replace(".", "_")
        i = index.get(name.lower())
        if i is None:
            i = index[name.lower()] = len(ordered)
            ordered.append(_ColumnSpec(_Spec(name), cols.head[:0]))
        part_of_head[h] = i
        ordered[i].heads.append(h)
        ordered[i].spec.add_tags(tags)
    part_of_point = part_of_head[cols.head]
    n_shapes = len(cols.shapes)
    # shapes are numbered in the order of their first point: within a supertable, ascending
    # (supertable, shape) pairs take the fields in the order of their first point
    for pair in np.unique(part_of_point * n_shapes + cols.shape).tolist():
        spec = ordered[pair // n_shapes].spec
        shape = cols.shapes[pair % n_shapes]
        for key, kind in zip(shape.keys, shape.kinds, strict=True):
            low = key.lower()
            old = spec.cols.get(low)
            if old is None:
                spec.cols[low] = (key, kind, 0)
            elif old[1] != kind:
                raise _Fallback
    for i, part in enumerate(ordered):
        part.points = np.flatnonzero(part_of_point == i) if len(ordered) > 1 else np.arange(len(cols.head))
        part.spec.line = int(cols.lines[part.points[0]])
        if part.spec.clash():
            raise _Fallback
    return ordered


def _column_plan(
    ex: Session, db: Database, part: _ColumnSpec, cols: PointColumns, req_ns: int, now: int
) -> _ColumnPlan:
    """:func:`_plan` of a columnar supertable part.

    Raises:
        SqlError / CatalogError: those of :func:`_schema_ddl`; TABLE_ALREADY_EXIST.
        _Fallback: a timestamp above int64 or older than KEEP (the line-by-line path names it).
    """
    sqls = _schema_ddl(ex, db, part.spec)
    db_ns = NS_PER_PRECISION[db.precision]
    ts = cols.ts[part.points]
    server = ts == 0
    if req_ns % db_ns == 0:  # p.ts * req_ns // db_ns, exactly, without overflow
        factor = req_ns // db_ns
        if int(ts.max()) > _INT64_MAX // factor:
            raise _Fallback
        ts = ts * factor
    elif db_ns % req_ns == 0:
        ts = ts // (db_ns // req_ns)
    else:
        raise _Fallback
    kept = kept_from(db, int(time.time() * 1000))
    if kept is not None and bool(np.any(ts[~server] < kept)):
        raise _Fallback
    ts[server] = now
    children = [child_table_name(part.spec.name, cols.heads[h][1]).replace(".", "_") for h in part.heads]
    local = np.empty(len(cols.heads), np.int64)
    local[part.heads] = np.arange(len(part.heads))
    existing = _check_children(ex, db, part.spec.name, set(children))
    return _ColumnPlan(part, sqls, ts, children, local[cols.head[part.points]], existing)


def _column_write(ex: Session, db: Database, plan: _ColumnPlan, cols: PointColumns) -> None:
    """:func:`_write` of a columnar supertable part: Arrow columns, no Python object per row."""
    part = plan.part
    stable = ex.catalog.require_table(db.name, part.spec.name)
    _create_children(
        ex, db, stable, zip(plan.children, (cols.heads[h][1] for h in part.heads), strict=True), plan.existing
    )
    n = len(part.points)
    data: dict[str, Any] = {
        "tbname": pa.array(plan.children, pa.string()).take(plan.child),
        stable.columns[0].physical: pa.array(plan.ts, pa.int64()),
    }
    pieces: dict[str, list[tuple[np.ndarray, pa.Array]]] = {}  # physical column -> (rows, values)
    whole = n == len(cols.head)
    for shape in cols.shapes:
        if whole:
            rows, inside = shape.points, None
        else:
            at = np.minimum(np.searchsorted(part.points, shape.points), n - 1)
            inside = part.points[at] == shape.points
            if not inside.any():
                continue
            rows = at[inside]
        for key, values in zip(shape.keys, shape.values, strict=True):
            c = stable.column(key)
            assert c is not None  # the DDL added every field
            pieces.setdefault(c.physical, []).append(
                (rows, values if inside is None else values.filter(inside))
            )
    for physical, got in pieces.items():
        if len(got) == 1 and len(got[0][0]) == n:  # every row writes it (rows: ascending, distinct)
            data[physical] = got[0][1]
            continue
        where = np.full(n, -1, np.int64)
        where[np.concatenate([rows for rows, _ in got])] = np.arange(sum(len(rows) for rows, _ in got))
        data[physical] = pa.concat_arrays([values for _, values in got]).take(pa.array(where, mask=where < 0))
    _write_storage(ex, db.name, stable, [data])


class _HasDdl(Protocol):
    ddl: list[str]


def _apply(ex: Session, plan_all: Callable[[], Sequence[_HasDdl]]) -> Sequence[_HasDdl]:
    """Plan every supertable, then run the DDL of the plans; plan again (up to three times) when
    another request changed the same supertable first. Returns the plans the DDL ran for."""
    for attempt in range(3):
        plans = plan_all()
        try:
            for plan in plans:
                for sql in plan.ddl:
                    _run_ddl(ex, sql)
            return plans
        except TdError as e:
            if e.code not in _DDL_RACES or attempt == 2:
                raise
    raise AssertionError("unreachable")


def write_lines(ex: Session, db_name: str, text: str, precision: str = "ns") -> ResultSet:
    """Write a line-protocol body into database ``db_name`` (module docstring for the rules).

    A body ``line_protocol.parse_columns`` reads is written column by column; every other body,
    and one whose columns show a field typed twice, a key both a field and a tag, or a timestamp
    out of range, line by line (:func:`_write_points`, the reference): the same rows, the same
    tables, the same errors.

    Args:
        ex: the client's session (its privileges apply).
        db_name: the target database (it must exist).
        text: the body: lines of InfluxDB line protocol.
        precision: the timestamps' unit: ``ns`` (default) / ``n``, ``u`` / ``us``, ``ms``, ``s``,
            ``m``, ``h``.

    Returns:
        ``ResultSet.affected(rows written)``.

    Raises:
        SqlError: SML_INVALID_PRECISION_TYPE, SML_INVALID_DATA, SML_NOT_SAME_TYPE,
            TSC_INVALID_VALUE, NOT_SUPPORTED, TIMESTAMP_OUT_OF_RANGE, TABLE_ALREADY_EXIST.
        CatalogError: DB_NOT_EXIST, PERMISSION_DENIED.
    """
    req_ns = _precision_ns(precision)
    cols = parse_columns(text)
    if cols is not None:
        try:
            return _write_columns(ex, db_name, cols, req_ns)
        except _Fallback:
            pass
    return _write_points(ex, db_name, text, req_ns)


def _precision_ns(precision: str) -> int:
    req_ns = PRECISION_NS.get(precision)
    if req_ns is None:
        raise SqlError(
            f"Invalid timestamp precision type: {precision[:16]} (use ns, u, ms, s, m or h)",
            code=Code.SML_INVALID_PRECISION_TYPE,
        )
    return req_ns


def _write_columns(ex: Session, db_name: str, cols: PointColumns, req_ns: int) -> ResultSet:
    """:func:`write_lines` of a columnar body.

    Raises:
        _Fallback: before anything is changed (see :func:`_column_specs`, :func:`_column_plan`).
    """
    db = ex.visible_database(db_name)
    parts = _column_specs(cols)
    now = time.time_ns() // NS_PER_PRECISION[db.precision]
    plans = _apply(ex, lambda: [_column_plan(ex, db, part, cols, req_ns, now) for part in parts])
    for plan in plans:
        assert isinstance(plan, _ColumnPlan)
        _column_write(ex, db, plan, cols)
    return ResultSet.affected(len(cols.lines))


def _write_points(ex: Session, db_name: str, text: str, req_ns: int) -> ResultSet:
    """:func:`write_lines` line by line: a :class:`Point` per line (the reference path)."""
    points = parse_lines(text)
    db = ex.visible_database(db_name)
    specs: dict[str, _Spec] = {}
    for p in points:
        name = p.measurement.replace(".", "_")
        specs.setdefault(name.lower(), _Spec(name)).add(p)
    for spec in specs.values():
        spec.check()
    now = time.time_ns() // NS_PER_PRECISION[db.precision]
    plans = _apply(ex, lambda: [_plan(ex, db, spec, req_ns, now) for spec in specs.values()])
    for plan in plans:
        assert isinstance(plan, _Plan)
        _write(ex, db, plan)
    return ResultSet.affected(len(points))
