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

Differences: a supertable with a composite key column is refused (TDengine: "Schemaless writing
does not support writing data for tables with a second composite primary key column");
``smlChildTableName`` / ``smlAutoChildTableNameDelimiter`` are client configuration tdweb does not
read (the subtable name is always the MD5 rule).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spark_workers.access import WRITE
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, SqlError, TdError
from spark_workers.lake.catalog import Database, Table
from spark_workers.lake.keys import key_column
from spark_workers.lake.retention import kept_from
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.line_protocol import Point, parse_lines
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
    points: list[Point] = field(default_factory=list)
    cols: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    tags: dict[str, tuple[str, int]] = field(default_factory=dict)
    _kinds: dict[str, str] = field(default_factory=dict)  # field name as written -> kind
    _heads: set[int] = field(default_factory=set)  # ids of the tags tuples taken

    def add(self, p: Point) -> None:
        """Take one line's fields and tags into the spec.

        Raises:
            SqlError: SML_NOT_SAME_TYPE (a field typed differently than an earlier line).
        """
        self.points.append(p)
        if id(p.tags) not in self._heads:  # parse_lines shares one tuple per distinct head
            self._heads.add(id(p.tags))
            for k, v in p.tags:
                low = k.lower()
                size = len(v.encode("utf-8"))
                old = self.tags.get(low)
                self.tags[low] = (old[0] if old else k, max(size, old[1] if old else 0))
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

    def check(self) -> None:
        """Refuse a key that is a field in one line and a tag in another, or a field or tag named
        like the timestamp column (SML_INVALID_DATA)."""
        clash = (set(self.cols) & set(self.tags)) | ({TS_COLUMN} & (set(self.cols) | set(self.tags)))
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
    line = spec.points[0].line
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
    line = spec.points[0].line
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
        SqlError / CatalogError: the type errors of :func:`_alter_sqls`; PERMISSION_DENIED
            without WRITE (on the database for a new supertable); NOT_SUPPORTED for a composite
            key; SML_INVALID_DATA for a measurement that is not a supertable or a timestamp out of
            range; TIMESTAMP_OUT_OF_RANGE (older than KEEP); TABLE_ALREADY_EXIST for a subtable
            name taken by another table.
    """
    t = ex.catalog.table(db.name, spec.name)
    if t is None:
        ex.require(WRITE, db)
        sqls = [_create_sql(db, spec)]
    else:
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
        sqls = _alter_sqls(db, spec, t)
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
    by_lower = {t.name.lower(): t.name.lower() for t in stable.tags}
    to_create: dict[str, Table] = {}
    for p, child in zip(plan.spec.points, plan.children, strict=True):
        low = child.lower()
        if low not in to_create and low not in plan.existing:
            values: dict[str, object] = dict.fromkeys(by_lower.values())
            for k, v in p.tags:
                values[by_lower[k.lower()]] = v
            to_create[low] = Table(db.name, child, "sub", stable.columns, stable.tags, stable.name, values)
    if to_create:
        ex.catalog.create_subtables(list(to_create.values()), now_ms=int(time.time() * 1000))
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


def write_lines(ex: Session, db_name: str, text: str, precision: str = "ns") -> ResultSet:
    """Write a line-protocol body into database ``db_name`` (module docstring for the rules).

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
    req_ns = PRECISION_NS.get(precision)
    if req_ns is None:
        raise SqlError(
            f"Invalid timestamp precision type: {precision[:16]} (use ns, u, ms, s, m or h)",
            code=Code.SML_INVALID_PRECISION_TYPE,
        )
    points = parse_lines(text)
    db = ex.visible_database(db_name)
    specs: dict[str, _Spec] = {}
    for p in points:
        name = p.measurement.replace(".", "_")
        specs.setdefault(name.lower(), _Spec(name)).add(p)
    for spec in specs.values():
        spec.check()
    now = time.time_ns() // NS_PER_PRECISION[db.precision]
    for attempt in range(3):
        plans = [_plan(ex, db, spec, req_ns, now) for spec in specs.values()]
        try:
            for plan in plans:
                for sql in plan.ddl:
                    _run_ddl(ex, sql)
            break
        except TdError as e:  # another request changed the same supertable first: check again
            if e.code not in _DDL_RACES or attempt == 2:
                raise
    for plan in plans:
        _write(ex, db, plan)
    return ResultSet.affected(len(points))
