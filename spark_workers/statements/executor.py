"""Execute TDengine SQL statements against the lake: the one code path behind REST, the shell and
the designer.

Every statement is validated completely before anything is changed, so a bad statement changes
nothing (a multi-table INSERT is one Delta commit per storage table, after all rows are checked).
"""

from __future__ import annotations

import fnmatch
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlglot import exp

from spark_workers import access
from spark_workers.access import READ, WRITE, Grant, Principal, UserDirectory
from spark_workers.duration import PRECISIONS, Duration
from spark_workers.errors import CatalogError, Code, SqlError, TdError
from spark_workers.lake.catalog import Column, Database, Table, physical_names
from spark_workers.lake.names import check_name
from spark_workers.lake.store import Lake, engine_schema
from spark_workers.query.planner import offset_of
from spark_workers.query.results import ResultColumn, ResultSet
from spark_workers.query.select import run_select
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_located, parse_one
from spark_workers.sql.values import Now, coerce, constant
from spark_workers.streams.registry import StreamInfo, StreamRegistry
from spark_workers.tdtypes import INT, TIMESTAMP, TdType, varchar

MAX_COLUMNS = 4096
# TDengine's password rules (SQL manual "Names & Limits" and "Users"): 8 to 255 characters of
# [a-zA-Z0-9!?$%^&*()_–+={[}]:;@~#|<,>.?/], no quotes, backquote, backslash or space
PASSWORD_MIN, PASSWORD_MAX = 8, 255
_PASSWORD_FORBIDDEN = frozenset("'\"`\\ ")


def _name_ok(name: str, what: str, sql: str, span: ast.Span | None) -> None:
    """TDengine's naming rules for a ``what`` name (``lake/names.py``), positioned at ``span``."""
    check_name(name, what, sql=sql, offset=span.start if span else None)


def check_password(password: str) -> None:
    """TDengine's password rules (length 8 to 255, its legal characters).

    Raises:
        SqlError: 0x2610 (too long) or 0x0353 (TSDB_CODE_MND_INVALID_PASS_FORMAT).
    """
    if len(password) > PASSWORD_MAX:
        raise SqlError(
            f"Name or password too long: a password has at most {PASSWORD_MAX} characters",
            code=Code.NAME_OR_PASSWD_TOO_LONG,
        )
    if len(password) < PASSWORD_MIN:
        raise SqlError(
            f"Invalid password format: a password has at least {PASSWORD_MIN} characters",
            code=Code.INVALID_PASS_FORMAT,
        )
    if any(ch in _PASSWORD_FORBIDDEN or not ch.isprintable() for ch in password):
        raise SqlError(
            "Invalid password format: quotes, backquotes, backslashes, spaces and control "
            "characters are not allowed",
            code=Code.INVALID_PASS_FORMAT,
        )


class Executor:
    """Runs statements for one client, with that client's privileges (``spark_workers.access``).

    Args:
        lake: the lake.
        registry: where streams are created, listed and controlled.
        tz: ``TDWEB_TIMEZONE``: literals without a zone are read in it.
        default_db: database used for unqualified names (REST ``/rest/sql/{db}``, ``USE``).
        principal: the user every statement runs as. The default, the superuser ``root``, is
            for tools and tests that hold no user; every front door (REST, shell, web) passes the
            signed-in user's principal.
        users: where CREATE/ALTER/DROP USER and GRANT/REVOKE go; None refuses those statements.
        notify_secrets: gives back the real URL of a NOTIFY URL whose secrets were shown redacted
            (``access.redact_secrets``: ``...?key=******``) when the client may use it, else None;
            without it such URLs are refused.
    """

    def __init__(
        self,
        lake: Lake,
        registry: StreamRegistry,
        *,
        tz: str = "UTC",
        default_db: str | None = None,
        principal: Principal = access.ROOT,
        users: UserDirectory | None = None,
        notify_secrets: Callable[[str], str | None] | None = None,
    ) -> None:
        self.lake = lake
        self.catalog = lake.catalog
        self.registry = registry
        self.tz = tz
        self.default_db = default_db
        self.principal = principal
        self.users = users
        self.notify_secrets = notify_secrets

    # ------------------------------------------------------------------ entry points
    def execute(self, sql: str) -> list[ResultSet]:
        """Execute every statement of ``sql`` in order; stops at the first error (raised)."""
        results = []
        for stmt, start, text in parse_located(sql):
            try:
                results.append(self.run_statement(stmt, text))
            except SqlError as e:
                raise e.shifted(sql, start) from None
        return results

    def execute_one(self, sql: str) -> ResultSet:
        """Execute a text holding one statement (REST); the last result if there are several."""
        results = self.execute(sql)
        if not results:
            raise SqlError("empty statement", sql=sql, offset=0, code=Code.INCOMPLETE_SQL)
        return results[-1]

    def run_statement(self, stmt: ast.Statement, sql: str) -> ResultSet:
        """Execute one parsed statement of the text ``sql`` (errors are anchored in ``sql``)."""
        handler = getattr(self, f"_do_{type(stmt).__name__}", None)
        if handler is None:
            raise SqlError(f"{type(stmt).__name__} is not supported", sql=sql, code=Code.NOT_SUPPORTED)
        try:
            return handler(stmt, sql)
        except SqlError as e:
            raise e.at(sql, None)

    def _db(self, name: str | None) -> str:
        return self.catalog.require_database(name or self.default_db).name

    # ------------------------------------------------------------------ privileges
    def require(
        self,
        privilege: str,
        db: Database,
        table: str | None = None,
        *,
        sql: str | None = None,
        span: ast.Span | None = None,
    ) -> None:
        """Raise PERMISSION_DENIED unless the client may ``read``/``write`` ``db`` (``table``: a
        supertable or normal table; None: the database as a whole)."""
        access.require(self.principal, privilege, db, table, sql=sql, offset=span.start if span else None)

    def require_storage(
        self,
        privilege: str,
        db: Database,
        table: Table,
        *,
        sql: str | None = None,
        span: ast.Span | None = None,
    ) -> None:
        """As :meth:`require` for the table holding ``table``'s rows (a subtable's supertable)."""
        self.require(privilege, db, table.storage, sql=sql, span=span)

    def visible_database(self, name: str | None) -> Database:
        """The database, if the client holds any privilege in it (else PERMISSION_DENIED)."""
        db = self.catalog.require_database(name or self.default_db)
        if not self.principal.may_see(db):
            raise access.denied(f"database {db.name} for user {self.principal.name}")
        return db

    # ------------------------------------------------------------------ databases
    def _do_CreateDatabase(self, s: ast.CreateDatabase, sql: str) -> ResultSet:
        _name_ok(s.name, "database", sql, s.span)
        if not (self.principal.super or self.principal.createdb):
            raise CatalogError(
                f"Insufficient privilege for operation: user {self.principal.name} may not create "
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
        self.catalog.create_database(
            s.name,
            precision=precision,
            options=opts,
            if_not_exists=s.if_not_exists,
            now_ms=int(time.time() * 1000),
            owner=self.principal.name,
        )
        return ResultSet.affected(0)

    def _do_DropDatabase(self, s: ast.DropDatabase, sql: str) -> ResultSet:
        db = self.catalog.database(s.name)
        if db is None:
            if s.if_exists:
                return ResultSet.affected(0)
            raise CatalogError(f"database {s.name} does not exist", code=Code.DB_NOT_EXIST)
        access.require_owner(self.principal, db, "drop database")
        readers, owned = _stream_dependents(self.registry.list(), db.name, self.default_db)
        if readers and not s.force:
            # seed 002 "Database and Table Operations": not allowed for a source database, or a
            # trigger table's database other than the stream's own, unless FORCE
            raise CatalogError(
                f"database {db.name} is read by stream(s) {', '.join(readers)}; "
                "drop them first or use DROP DATABASE ... FORCE",
                code=Code.INVALID_OPERATION,
            )
        for info in owned:  # a stream belongs to its database (seed 002): it goes with it
            self.registry.drop(info.name, info.db)
        self.catalog.drop_database(db.name)
        self.lake.drop_database_storage(db.name)
        return ResultSet.affected(0)

    def _do_UseDatabase(self, s: ast.UseDatabase, sql: str) -> ResultSet:
        self.default_db = self.visible_database(s.name).name
        return ResultSet.affected(0)

    # ------------------------------------------------------------------ tables
    def _columns(self, defs: list[ast.ColumnDef], sql: str, *, tags: bool = False) -> tuple[Column, ...]:
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
            if not tags and i > 0 and d.type.name == "TIMESTAMP" and d.composite_key:
                raise SqlError(
                    "a composite key column cannot be a TIMESTAMP", sql=sql, code=Code.INVALID_COLUMN
                )
        phys = (
            physical_names(names)
            if not tags
            else [n.lower() if n.isidentifier() else f"_t{i}" for i, n in enumerate(names)]
        )
        return tuple(
            Column(d.name, d.type, p, d.comment, d.composite_key) for d, p in zip(defs, phys, strict=True)
        )

    def _do_CreateTable(self, s: ast.CreateTable, sql: str) -> ResultSet:
        dbname = self._db(s.table.db)
        db = self.catalog.require_database(dbname)
        self.require(WRITE, db, sql=sql, span=s.table.span)
        _name_ok(s.table.name, "table", sql, s.table.span)
        if len(s.columns) < 1 or len(s.columns) + len(s.tags) > MAX_COLUMNS:
            raise SqlError(
                f"a table needs 1 to {MAX_COLUMNS} columns and tags", sql=sql, code=Code.INVALID_COLUMN
            )
        cols = self._columns(s.columns, sql)
        tags = self._columns(s.tags, sql, tags=True) if s.kind == "super" else ()
        if s.kind == "super" and not tags:
            raise SqlError("a supertable needs at least one tag", sql=sql, code=Code.INVALID_COLUMN)
        clash = {c.name.lower() for c in cols} & {t.name.lower() for t in tags}
        if clash:
            raise SqlError(
                f"tag and column names must differ: {', '.join(sorted(clash))}",
                sql=sql,
                code=Code.INVALID_COLUMN,
            )
        table = Table(dbname, s.table.name, s.kind, cols, tags, comment=s.comment)
        self.lake.create_table(db, table, if_not_exists=s.if_not_exists)
        return ResultSet.affected(0)

    def _tag_values(self, stable: Table, d: ast.SubtableDef, sql: str) -> dict[str, Any]:
        db = self.catalog.require_database(stable.db)
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
            values[tag.name.lower()] = self._value(
                node,
                tag.type,
                db.precision,
                now,
                f"tag {tag.name} {tag.type.sql}",
                sql=sql,
                offset=offset_of(node),
            )
        return values

    def _value(
        self, node: exp.Expr, t: TdType, precision: str, now: Now, what: str, *, sql: str, offset: int | None
    ) -> Any:
        """A constant expression converted for a column or tag of type ``t`` (``what`` names it in
        errors, positioned at ``offset``)."""
        try:
            return coerce(constant(node, precision, self.tz, now), t, precision, self.tz, what)
        except SqlError as e:
            raise SqlError(e.message, sql=sql, offset=offset, code=e.code) from None

    def _subtable(self, d: ast.SubtableDef, sql: str) -> Table:
        dbname = self._db(d.table.db or d.using.db)
        stable = self.catalog.table(dbname, d.using.name)
        if stable is None or stable.kind != "super":
            raise SqlError(
                f"supertable {d.using.name} does not exist",
                sql=sql,
                offset=d.using.span.start if d.using.span else None,
                code=Code.STB_NOT_EXIST,
            )
        _name_ok(d.table.name, "table", sql, d.table.span)
        db = self.catalog.require_database(dbname)
        self.require(WRITE, db, stable.name, sql=sql, span=d.table.span)
        return Table(
            dbname,
            d.table.name,
            "sub",
            stable.columns,
            stable.tags,
            stable.name,
            self._tag_values(stable, d, sql),
        )

    def _do_CreateSubtables(self, s: ast.CreateSubtables, sql: str) -> ResultSet:
        tables = [self._subtable(d, sql) for d in s.items]
        for t, d in zip(tables, s.items, strict=True):
            self.catalog.create_table(t, if_not_exists=d.if_not_exists, now_ms=int(time.time() * 1000))
        return ResultSet.affected(0)

    def _do_DropTable(self, s: ast.DropTable, sql: str) -> ResultSet:
        for name in s.tables:
            dbname = self._db(name.db)
            t = self.catalog.table(dbname, name.name)
            if t is None or (s.super_only and t.kind != "super"):
                if s.if_exists:
                    continue
                raise SqlError(
                    f"table {dbname}.{name.name} does not exist",
                    sql=sql,
                    offset=name.span.start if name.span else None,
                    code=Code.STB_NOT_EXIST if s.super_only else Code.TABLE_NOT_EXIST,
                )
            db = self.catalog.require_database(dbname)
            self.require(WRITE, db, t.storage if t.kind == "sub" else None, sql=sql, span=name.span)
            if t.kind == "sub":
                stable = self.catalog.require_table(dbname, t.storage)
                self.lake.delete(db, stable, ts_min=None, ts_max=None, tbnames=[t.name])
                self.catalog.drop_table(dbname, t.name)
            else:
                self.catalog.drop_table(dbname, t.name)
                self.lake.drop_storage(dbname, t.name)
        return ResultSet.affected(0)

    # ------------------------------------------------------------------ writes
    def _do_Insert(self, s: ast.Insert, sql: str) -> ResultSet:
        now = Now()
        batches: dict[tuple[str, str], list[dict[str, list[Any]]]] = defaultdict(list)
        to_create: list[Table] = []
        storages: dict[tuple[str, str], Table] = {}
        total = 0
        for target in s.targets:
            dbname = self._db(target.table.db or (target.using.using.db if target.using else None))
            table = self.catalog.table(dbname, target.table.name)
            if table is None and target.using is not None:
                table = self._subtable(target.using, sql)
                to_create.append(table)
            if table is None:
                raise SqlError(
                    f"table {dbname}.{target.table.name} does not exist",
                    sql=sql,
                    offset=target.table.span.start if target.table.span else None,
                    code=Code.TABLE_NOT_EXIST,
                )
            if table.kind == "super":
                raise SqlError(
                    f"{table.name} is a supertable: insert into its subtables "
                    f"(INSERT INTO t USING {table.name} TAGS (...) VALUES ...)",
                    sql=sql,
                    offset=target.table.span.start if target.table.span else None,
                    code=Code.INVALID_OPERATION,
                )
            db = self.catalog.require_database(dbname)
            storage = (
                table
                if table.kind == "normal"
                else (
                    self.catalog.table(dbname, table.storage)
                    or self.catalog.require_table(dbname, table.storage)
                )
            )
            self.require(WRITE, db, storage.name, sql=sql, span=target.table.span)
            storages[(dbname, storage.name)] = storage
            cols = list(table.columns)
            if target.columns is not None:
                picked = []
                for i, name in enumerate(target.columns):
                    c = table.column(name)
                    if c is None:
                        raise SqlError(
                            f"invalid column name {name} in {table.name}", sql=sql, code=Code.INVALID_COLUMN
                        )
                    if c in picked:
                        raise SqlError(f"column {name} is listed twice", sql=sql, code=Code.INVALID_COLUMN)
                    picked.append(c)
                    del i
                if table.columns[0] not in picked:
                    raise SqlError(
                        f"the timestamp column {table.columns[0].name} must be written",
                        sql=sql,
                        code=Code.INVALID_COLUMN,
                    )
                cols = picked
            data: dict[str, list[Any]] = {"tbname": []}
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
                    v = self._value(
                        node,
                        c.type,
                        db.precision,
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
                    data[c.physical].append(v)
                data["tbname"].append(table.name)
            total += len(target.rows)
            batches[(dbname, storage.name)].append(data)
        if to_create:
            self.catalog.create_subtables(to_create, now_ms=int(time.time() * 1000))
        for (dbname, sname), parts in batches.items():
            db = self.catalog.require_database(dbname)
            storage = storages[(dbname, sname)]
            schema = engine_schema(db, storage.columns)
            tables = []
            for data in parts:
                arrays, names = [], []
                for f in schema:
                    if f.name in data:
                        arrays.append(pa.array(data[f.name], f.type))
                        names.append(f.name)
                tables.append(pa.Table.from_arrays(arrays, names=names))
            merged = pa.concat_tables(tables, promote_options="default")
            self.lake.write(db, storage, merged)
        return ResultSet.affected(total)

    def _do_Delete(self, s: ast.Delete, sql: str) -> ResultSet:
        dbname = self._db(s.table.db)
        db = self.catalog.require_database(dbname)
        table = self.catalog.table(dbname, s.table.name)
        if table is None:
            raise SqlError(
                f"table {dbname}.{s.table.name} does not exist",
                sql=sql,
                offset=s.table.span.start if s.table.span else None,
                code=Code.TABLE_NOT_EXIST,
            )
        storage = table if table.kind != "sub" else self.catalog.require_table(dbname, table.storage)
        self.require(WRITE, db, storage.name, sql=sql, span=s.table.span)
        lo, hi, tbnames = self._delete_bounds(s.where, table, db.precision, sql)
        if table.kind == "sub":
            tbnames = [table.name]
        res = self.lake.delete(db, storage, ts_min=lo, ts_max=hi, tbnames=tbnames)
        return ResultSet.affected(res.deleted)

    def _delete_bounds(
        self, where: exp.Expr | None, table: Table, precision: str, sql: str
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
            return int(self._value(node, TIMESTAMP, precision, now, what, sql=sql, offset=offset_of(node)))

        for c in conds:
            col = c.this if hasattr(c, "this") else None
            if (
                isinstance(c, exp.EQ | exp.In)
                and isinstance(col, exp.Column)
                and col.name.lower() == "tbname"
            ):
                items = [c.expression] if isinstance(c, exp.EQ) else list(c.expressions)
                tbnames = [str(constant(i, precision, self.tz, now)) for i in items]
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

    # ------------------------------------------------------------------ introspection
    def _do_Show(self, s: ast.Show, sql: str) -> ResultSet:
        w = s.what
        if w == "databases":  # TDengine lists information_schema too
            return self._system_rows("ins_databases", s.like)
        if w in ("stables", "tables"):
            db = self.visible_database(s.db)
            kinds = ("super",) if w == "stables" else ("sub", "normal")
            rows: list[list[Any]] = [
                [n]
                for n, _k, st, _c in self.catalog.tables(db.name, kinds=kinds)
                if self.principal.may_see_table(db, st or n)
            ]
            rows = self._like(rows, s.like)
            col = "stable_name" if w == "stables" else "table_name"
            return ResultSet([ResultColumn(col, varchar(192))], rows)
        if w == "streams":
            res = self._system_rows("ins_streams", None)
            if s.db:  # the streams of one database (their own, else their source's)
                keep = {
                    i.name
                    for i in self.registry.list()
                    if (i.db or (i.spec.source.db if i.spec.source else "")).lower() == s.db.lower()
                }
                res = ResultSet(res.columns, [r for r in res.rows if r[0] in keep])
            return res
        if w == "tags" and s.target is not None:
            dbname = self._db(s.target.db)
            t = self.catalog.require_table(dbname, s.target.name)
            self.require_storage(READ, self.catalog.require_database(dbname), t, sql=sql, span=s.target.span)
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
        if w in ("create_table", "create_stable") and s.target is not None:
            dbname = self._db(s.target.db)
            t = self.catalog.require_table(dbname, s.target.name)
            self.require_storage(READ, self.catalog.require_database(dbname), t, sql=sql, span=s.target.span)
            return ResultSet(
                [ResultColumn("Table", varchar(192)), ResultColumn("Create Table", varchar(4096))],
                [[t.name, self._create_sql(t)]],
            )
        if w == "create_database" and s.db:
            db = self.visible_database(s.db)
            opts = " ".join(f"{k} {v}" for k, v in db.options.items() if k != "PRECISION")
            return ResultSet(
                [ResultColumn("Database", varchar(64)), ResultColumn("Create Database", varchar(1024))],
                [[db.name, f"CREATE DATABASE `{db.name}` PRECISION '{db.precision}' {opts}".strip()]],
            )
        if w == "vgroups":
            access.require_sysinfo(self.principal, "SHOW VGROUPS")
            return ResultSet(
                [ResultColumn("vgroup_id", INT), ResultColumn("db_name", varchar(64))],
                [[1, self.visible_database(s.db).name]],
            )
        if w == "users":
            return self._system_rows("ins_users", None)
        if w == "user_privileges":
            return self._system_rows("ins_user_privileges", None)
        if w == "create_stream" and s.target is not None:
            info = self._own_stream(s.target.name, s.target.db, "show create stream")
            return ResultSet(
                [ResultColumn("Stream", varchar(192)), ResultColumn("Create Stream", varchar(4096))],
                [[info.name, access.redact_secrets(info.sql)]],
            )
        raise SqlError(f"SHOW {w.upper()} is not supported", sql=sql, code=Code.NOT_SUPPORTED)

    def _system_rows(self, table: str, like: str | None) -> ResultSet:
        """All rows of an ``information_schema`` table (``sysinfo.py``), filtered by LIKE on the
        first column."""
        from spark_workers.statements.sysinfo import TABLES

        st = TABLES[table]
        return ResultSet([ResultColumn(n, t) for n, t in st.columns], self._like(st.rows(self), like))

    @staticmethod
    def _like(rows: list[list[Any]], pattern: str | None) -> list[list[Any]]:
        if not pattern:
            return rows
        glob = pattern.replace("%", "*").replace("_", "?")
        return [r for r in rows if fnmatch.fnmatchcase(str(r[0]).lower(), glob.lower())]

    def _create_sql(self, t: Table) -> str:
        if t.kind == "sub":
            vals = ", ".join(
                "NULL" if t.tag_values.get(g.name.lower()) is None else repr(t.tag_values[g.name.lower()])
                for g in t.tags
            )
            return f"CREATE TABLE `{t.name}` USING `{t.stable}` TAGS ({vals})"
        cols = ", ".join(f"`{c.name}` {c.type.sql}" for c in t.columns)
        if t.kind == "super":
            tags = ", ".join(f"`{c.name}` {c.type.sql}" for c in t.tags)
            return f"CREATE STABLE `{t.name}` ({cols}) TAGS ({tags})"
        return f"CREATE TABLE `{t.name}` ({cols})"

    def _do_Describe(self, s: ast.Describe, sql: str) -> ResultSet:
        dbname = self._db(s.table.db)
        t = self.catalog.table(dbname, s.table.name)
        if t is None:
            raise SqlError(
                f"table {dbname}.{s.table.name} does not exist",
                sql=sql,
                offset=s.table.span.start if s.table.span else None,
                code=Code.TABLE_NOT_EXIST,
            )
        db = self.catalog.require_database(dbname)
        if not self.principal.may_see_table(db, t.storage):
            raise access.denied(
                f"table {dbname}.{t.name}", sql=sql, offset=s.table.span.start if s.table.span else None
            )
        rows: list[list[Any]] = [
            [c.name, c.type.meta_name, c.type.byte_length, "COMPOSITE KEY" if c.composite_key else ""]
            for c in t.columns
        ]
        rows += [[g.name, g.type.meta_name, g.type.byte_length, "TAG"] for g in t.tags]
        return ResultSet(
            [
                ResultColumn("field", varchar(64)),
                ResultColumn("type", varchar(32)),
                ResultColumn("length", INT),
                ResultColumn("note", varchar(16)),
            ],
            rows,
        )

    # ------------------------------------------------------------------ queries
    def _do_Select(self, s: ast.Select, sql: str) -> ResultSet:
        return run_select(self, s.query, sql)

    # ------------------------------------------------------------------ streams
    def _do_CreateStreamLegacy(self, s: ast.CreateStreamLegacy, sql: str) -> ResultSet:
        from spark_workers.streams.create import create_stream

        stmt, sql = self._unredacted(s, sql)
        assert isinstance(stmt, ast.CreateStreamLegacy)
        create_stream(self, stmt, sql)
        return ResultSet.affected(0)

    def _do_CreateStream337(self, s: ast.CreateStream337, sql: str) -> ResultSet:
        from spark_workers.streams.create import create_stream_337

        stmt, sql = self._unredacted(s, sql)
        assert isinstance(stmt, ast.CreateStream337)
        create_stream_337(self, stmt, sql)
        return ResultSet.affected(0)

    def _unredacted(
        self, s: ast.CreateStreamLegacy | ast.CreateStream337, sql: str
    ) -> tuple[ast.Statement, str]:
        """The statement with every NOTIFY URL shown redacted (copied from a stream page or
        ``SHOW CREATE STREAM``) replaced by the real URL the client may use.

        Raises:
            SqlError: INVALID_OPERATION naming the URL when its secret cannot be restored.
        """
        urls = [u for u in (s.notify.urls if s.notify else []) if access.REDACTED in u]
        if not urls:
            return s, sql
        for url in urls:
            real = self.notify_secrets(url) if self.notify_secrets is not None else None
            if real is None:
                raise SqlError(
                    f"NOTIFY URL {url} holds a redacted value ({access.REDACTED}): write the real "
                    "value (an inbox's key is on its page)",
                    sql=sql,
                    offset=sql.find(url) if url in sql else None,
                    code=Code.INVALID_OPERATION,
                )
            sql = sql.replace(url, real)
        return parse_one(sql), sql

    def _own_stream(self, name: str, db: str | None, action: str) -> StreamInfo:
        """The stream ``[db.]name`` if the client owns it or administers streams
        (``Principal.controls_stream``).

        Raises:
            CatalogError: STREAM_NOT_EXIST; PERMISSION_DENIED for another user's stream.
        """
        info = self.registry.get(name, db)
        if info is None:
            raise CatalogError(f"stream {name} does not exist", code=Code.STREAM_NOT_EXIST)
        if not self.principal.controls_stream(info.owner):
            raise access.denied(f"{action} {info.name}: only its owner or an administrator may")
        return info

    def _do_StreamCommand(self, s: ast.StreamCommand, sql: str) -> ResultSet:
        if s.if_exists and self.registry.get(s.name, s.db) is None:
            return ResultSet.affected(0)
        info = self._own_stream(s.name, s.db, f"{s.action} stream")
        if s.action == "drop":
            self.registry.drop(info.name, info.db)
        else:
            self.registry.command(info.name, info.db, s.action, ignore_untreated=s.ignore_untreated)
        return ResultSet.affected(0)

    def _do_RecalculateStream(self, s: ast.RecalculateStream, sql: str) -> ResultSet:
        """RECALCULATE STREAM (``runtime/recalc.py``); answers the number of windows rewritten."""
        from spark_workers.runtime.recalc import recalculate
        from spark_workers.streams.compile import compile_stream

        info = self._own_stream(s.name, s.db, "recalculate stream")
        compiled = compile_stream(info.spec, self.lake, self.tz)
        precision = compiled.source.db.precision
        now = Now()
        bounds = [
            None if e is None else self._value(e, TIMESTAMP, precision, now, what, sql=sql, offset=None)
            for e, what in ((s.start, "the start time"), (s.end, "the end time"))
        ]
        assert bounds[0] is not None
        try:
            done = recalculate(
                compiled, self.lake, stream_key=info.name, tz=self.tz, start=bounds[0], end=bounds[1]
            )
        except SqlError as e:
            raise SqlError(e.message, sql=sql, offset=0, code=e.code) from None
        return ResultSet.affected(done.windows)

    # ------------------------------------------------------------------ users and privileges
    def _directory(self, action: str) -> UserDirectory:
        if self.users is None:
            raise SqlError(f"{action} is not available here: no user directory", code=Code.NOT_SUPPORTED)
        return self.users

    def _do_CreateUser(self, s: ast.CreateUser, sql: str) -> ResultSet:
        """``CREATE USER`` (superusers only; TDengine SQL manual, "Users")."""
        access.require_super(self.principal, "CREATE USER")
        check_name(s.name, "user", sql=sql, offset=s.span.start if s.span else None)
        check_password(s.password)
        self._directory("CREATE USER").create_user(s.name, s.password, sysinfo=s.sysinfo, createdb=s.createdb)
        return ResultSet.affected(0)

    def _do_AlterUser(self, s: ast.AlterUser, sql: str) -> ResultSet:
        """``ALTER USER``: superusers change anything; a user with SYSINFO 1 may change their own
        password (TDengine SQL manual, "Permissions": SYSINFO 0 users cannot modify users,
        including their own password)."""
        own_password = (
            s.name.lower() == self.principal.name.lower()
            and s.password is not None
            and (s.sysinfo, s.createdb, s.enable) == (None, None, None)
            and (self.principal.sysinfo or self.principal.super)
        )
        if not own_password:
            access.require_super(self.principal, "ALTER USER")
        if s.name.lower() == self.principal.name.lower() and s.enable is False:
            raise CatalogError(
                "Invalid alter operation: a user cannot disable itself", code=Code.INVALID_ALTER_OPER
            )
        if s.password is not None:
            check_password(s.password)
        self._directory("ALTER USER").alter_user(
            s.name, password=s.password, sysinfo=s.sysinfo, createdb=s.createdb, enable=s.enable
        )
        return ResultSet.affected(0)

    def _do_DropUser(self, s: ast.DropUser, sql: str) -> ResultSet:
        """``DROP USER`` (superusers only; a user cannot drop itself)."""
        access.require_super(self.principal, "DROP USER")
        if s.name.lower() == self.principal.name.lower():
            raise CatalogError(
                "Invalid alter operation: a user cannot drop itself", code=Code.INVALID_ALTER_OPER
            )
        self._directory("DROP USER").drop_user(s.name)
        return ResultSet.affected(0)

    def _do_GrantStatement(self, s: ast.GrantStatement, sql: str) -> ResultSet:
        """``GRANT``/``REVOKE`` on ``db.*``, ``db.tbl`` or ``*.*`` (superusers only; TDengine SQL
        manual, "Permissions"). The database and table must exist; a table-level grant names a
        supertable or a normal table, not a subtable."""
        what = "REVOKE" if s.revoke else "GRANT"
        access.require_super(self.principal, what)
        db = "*"
        table = s.table
        if s.db != "*":
            db = self.catalog.require_database(s.db).name
            if table is not None:
                t = self.catalog.table(db, table)
                if t is None:
                    raise SqlError(
                        f"table {db}.{table} does not exist",
                        sql=sql,
                        offset=s.span.start if s.span else None,
                        code=Code.TABLE_NOT_EXIST,
                    )
                if t.kind == "sub":
                    raise SqlError(
                        f"{table} is a subtable: grant on its supertable {t.stable} (privileges of "
                        "subtables cannot be granted directly)",
                        sql=sql,
                        offset=s.span.start if s.span else None,
                        code=Code.INVALID_OPERATION,
                    )
                table = t.name
        grant = Grant(db, table, read=READ in s.privileges, write=WRITE in s.privileges)
        users = self._directory(what)
        if not any(u.name.lower() == s.user.lower() for u in users.users()):
            raise CatalogError(f"User not exist: {s.user}", code=Code.USER_NOT_EXIST)
        if s.revoke:
            users.revoke(s.user, grant)
        else:
            users.grant(s.user, grant)
        return ResultSet.affected(0)


def _stream_dependents(streams: list[Any], db: str, default_db: str | None) -> tuple[list[str], list[Any]]:
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
        if low in dbs:
            readers.append(info.name)
    return readers, owned


def error_answer(e: Exception) -> dict[str, Any]:
    """TDengine REST error JSON for an exception."""
    if isinstance(e, TdError):
        return {"code": e.code, "desc": e.desc}
    return {"code": Code.INTERNAL, "desc": f"internal error: {type(e).__name__}: {e}"}
