"""Databases and tables: CREATE/DROP DATABASE, CREATE/DROP STABLE and TABLE (subtables with
``USING ... TAGS``), USE (TDengine SQL manual, "Databases", "Supertables", "Tables")."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType

from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast, lexer
from spark_workers.sql.ast import Span, TableName
from spark_workers.sql.parser.base import COMMA, L_PAREN, R_PAREN, ParserBase
from spark_workers.tdtypes import check_placement, placement_code

INT32_MAX = 2**31 - 1  # TSDB_MAX_TABLE_TTL: a table's TTL lies in [0, INT32_MAX] days

# TDengine's db_options of CREATE DATABASE (3.3, sql.y ``db_options``; "Manage Databases"). tdweb
# honours PRECISION and DURATION (the lake's time buckets), KEEP and KEEP_TIME_OFFSET (retention,
# ``lake/retention.py``); the others tune vnodes, caches, the WAL and compaction, which a single
# node over Delta tables does not have: they are stored and shown by SHOW CREATE DATABASE /
# ins_databases and change no result; ALTER DATABASE refuses them, except CACHEMODEL (stored).
CREATE_DB_OPTIONS = frozenset(
    {
        "BUFFER", "CACHEMODEL", "CACHESIZE", "COMP", "DURATION", "WAL_FSYNC_PERIOD", "MAXROWS", "MINROWS",
        "KEEP", "PAGES", "PAGESIZE", "TSDB_PAGESIZE", "PRECISION", "REPLICA", "STRICT", "WAL_LEVEL",
        "VGROUPS", "SINGLE_STABLE", "RETENTIONS", "SCHEMALESS", "WAL_RETENTION_PERIOD",
        "WAL_RETENTION_SIZE", "WAL_ROLL_PERIOD", "WAL_SEGMENT_SIZE", "STT_TRIGGER", "TABLE_PREFIX",
        "TABLE_SUFFIX", "KEEP_TIME_OFFSET", "ENCRYPT_ALGORITHM", "S3_CHUNKPAGES", "S3_KEEPLOCAL",
        "S3_COMPACT", "SS_CHUNKSIZE", "SS_KEEPLOCAL", "SS_COMPACT", "DNODES", "COMPACT_INTERVAL",
        "COMPACT_TIME_RANGE", "COMPACT_TIME_OFFSET",
    }
)  # fmt: skip


class TablesParser(ParserBase):
    """Statements that create, drop and select databases and tables."""

    def use_database(self) -> ast.UseDatabase:
        """``USE db`` (at USE)."""
        self.i += 1
        return ast.UseDatabase(name=self.name("a database name")[0])

    def create_database(self) -> ast.CreateDatabase:
        ine = self.if_not_exists()
        name = self.name("a database name")[0]
        start = self.i
        options, _ = self.database_options()
        for j in range(start, self.i):  # an option name is a word followed by its value
            t = self.toks[j]
            if lexer.is_word(t) and t.text.upper() in options and t.text.upper() not in CREATE_DB_OPTIONS:
                raise self.error(f"syntax error: {t.text} is not a database option", t)
        return ast.CreateDatabase(name=name, if_not_exists=ine, options=options, span=Span(0, len(self.sql)))

    def database_options(self) -> tuple[dict[str, object], dict[str, Span]]:
        """``option value[,value] ...`` up to the end: upper-case names to values (a list of
        values joined by commas), and each option's span."""
        options: dict[str, object] = {}
        spans: dict[str, Span] = {}
        while not self.done():
            t = self.tok()
            assert t is not None
            if not lexer.is_word(t) or " " in t.text:
                raise self.error(f"syntax error: expected a database option name, got '{self.text_of(t)}'")
            key = t.text.upper()
            if key in options:
                raise self.error(f"duplicate database option {key}", t)
            start = self.i
            self.i += 1
            values = [self.option_value(key)]
            while self.accept_type(COMMA):
                values.append(self.option_value(key))
            options[key] = values[0] if len(values) == 1 else ",".join(str(v) for v in values)
            spans[key] = self.span(start, self.i)
        return options, spans

    def alter_database(self) -> ast.AlterDatabase:
        """``ALTER DATABASE db option value ...`` (after ALTER DATABASE; TDengine SQL manual,
        "Manage Databases")."""
        name = self.name("a database name")[0]
        if self.done():
            raise self.error("syntax error: expected a database option after ALTER DATABASE name")
        options, spans = self.database_options()
        return ast.AlterDatabase(name=name, options=options, spans=spans, span=Span(0, len(self.sql)))

    def alter_table(self, stable: bool, vtable: bool = False) -> ast.AlterTable:
        """``ALTER {STABLE | TABLE | VTABLE} [db.]t clause`` (after ALTER STABLE / TABLE / VTABLE;
        TDengine SQL manual, "Manage Supertables", "Manage Tables", "Virtual Tables"): one clause,
        see :class:`ast.AlterTable`."""
        table = self.table_name()
        start = self.i
        out = ast.AlterTable(table=table, stable=stable, action="", vtable=vtable)
        if vtable and self.accept("ALTER", "COLUMN"):
            out.action = "ALTER COLUMN"
            out.name_span = self.span(self.i, self.i + 1)
            out.name = self.name("a column name")[0]
            if not self.accept("SET"):
                raise self.error("syntax error: expected SET after ALTER COLUMN name")
            if not self.accept("NULL"):
                out.ref = self.column_ref()
            out.clause = self.span(start, self.i)
            return out
        for verb in ("ADD", "DROP", "MODIFY", "RENAME"):
            for what in ("COLUMN", "TAG"):
                if self.accept(verb, what):
                    out.action = f"{verb} {what}"
                    name_at = self.i
                    if verb in ("ADD", "MODIFY"):
                        out.column = self.column_def()
                        out.name = out.column.name
                        if vtable and verb == "ADD" and self.accept("FROM"):
                            out.ref = self.column_ref()
                    else:
                        out.name = self.name(f"a {what.lower()} name")[0]
                    out.name_span = self.span(name_at, name_at + 1)
                    if verb == "RENAME":
                        out.new_name = self.name(f"the new {what.lower()} name")[0]
                    out.clause = self.span(start, self.i)
                    return out
        if self.accept("SET", "TAG"):
            out.action = "SET TAG"
            out.tag_values = [self.set_tag_item()]
            while self.accept_type(COMMA):
                out.tag_values.append(self.set_tag_item())
        elif self.at("COMMENT") or self.at("TTL") or self.at("KEEP"):
            out.action = "OPTIONS"
            out.options, out.option_spans = self.database_options()
        else:
            raise self.error(
                "syntax error: expected ADD, DROP, MODIFY or RENAME COLUMN / TAG, SET TAG, COMMENT or TTL "
                "after the table name"
            )
        out.clause = self.span(start, self.i)
        return out

    def set_tag_item(self) -> tuple[str, exp.Expr, Span, Span]:
        """``tag = value`` of SET TAG: the tag, its constant value, the item's and the value's span."""
        start = self.i
        name = self.name("a tag name")[0]
        self.expect_type(TokenType.EQ, "syntax error: expected '=' after the tag name")
        lo = self.i
        while not self.done() and not self.is_type(COMMA):
            self.i += 1
        if lo == self.i:
            raise self.err_at("syntax error: expected a tag value", lo)
        return name, self.constant(lo, self.i, "a tag value"), self.span(start, self.i), self.span(lo, self.i)

    def option_value(self, key: str) -> int | float | str:
        t = self.tok()
        if t is None:
            raise self.error(f"syntax error: expected a value for database option {key}")
        negative = False
        if t.token_type == TokenType.DASH and self.is_type(TokenType.NUMBER, 1):
            negative = True
            self.i += 1
            t = self.toks[self.i]
        if t.token_type == TokenType.NUMBER:
            self.i += 1
            text = ("-" if negative else "") + t.text
            try:
                return int(text)
            except ValueError:
                return float(text)
        if t.token_type == TokenType.STRING:
            self.i += 1
            return t.text
        if t.token_type == TokenType.VAR or (lexer.is_word(t) and " " not in t.text):
            self.i += 1
            return t.text
        raise self.error(f"syntax error: expected a value for database option {key}", t)

    def create_table(self, stable: bool) -> ast.Statement:
        ine = self.if_not_exists()
        name_start = self.i
        table = self.table_name()
        if self.at("USING"):
            if stable:
                raise self.error("syntax error: CREATE STABLE takes a column list, not USING")
            first = self.subtable_rest(table, ine, name_start)
            items = [first]
            while not self.done():
                items.append(self.subtable_def())
            return ast.CreateSubtables(items=items)
        columns = self.column_defs("after column list")
        tags: list[ast.ColumnDef] = []
        if self.accept("TAGS"):
            tags = self.column_defs("after tag list")
        elif stable:
            raise self.error("syntax error: expected TAGS (...) after the column list of a supertable")
        comment, virtual, ttl, ttl_at = None, False, None, 0
        while not self.done():
            if self.accept("COMMENT"):
                comment = self.string("a table comment")
            elif self.accept("VIRTUAL"):
                virtual = bool(self.flag01("VIRTUAL"))
            elif self.at("TTL"):
                ttl_at, ttl = self.i, self.ttl_option()
            else:
                break
        kind = "super" if stable or tags else "normal"
        if ttl and kind == "super":  # TTL 0 is the default; another would be ignored: refused
            raise self.err_at(
                "Invalid table option: TTL applies to normal and child tables, not to a supertable "
                "(its child tables take their own TTL)",
                ttl_at,
                code=Code.INVALID_TABLE_OPTION,
            )
        self.check_type_placement(columns, tags)
        if virtual and kind != "super":
            raise self.error(
                "Invalid table option: VIRTUAL 1 creates a virtual supertable and needs TAGS (...); "
                "a virtual normal table is created with CREATE VTABLE",
                code=Code.INVALID_OPERATION,
            )
        return ast.CreateTable(
            table=table,
            kind=kind,
            columns=columns,
            tags=tags,
            if_not_exists=ine,
            comment=comment,
            virtual=virtual,
            ttl=ttl,
        )

    def ttl_option(self) -> int:
        """``TTL n`` of a table (TDengine SQL manual, "Manage Tables": days, 0 = never expires;
        the grammar takes an unsigned integer, the parser checks [0, INT32_MAX])."""
        self.expect("TTL")
        t = self.tok()
        if t is None or t.token_type != TokenType.NUMBER or not t.text.isdigit():
            raise self.error("syntax error: TTL takes a number of days (an integer >= 0)")
        self.i += 1
        if int(t.text) > INT32_MAX:
            raise self.err_at(
                f"Invalid table option: TTL {t.text} out of range [0, {INT32_MAX}]",
                self.i - 1,
                code=Code.INVALID_TABLE_OPTION,
            )
        return int(t.text)

    def check_type_placement(self, columns: list[ast.ColumnDef], tags: list[ast.ColumnDef]) -> None:
        """JSON only as the one tag, DECIMAL only as a column (``tdtypes.check_placement``); the
        error points at the offending definition."""
        for defs, tag in ((columns, False), (tags, True)):
            for d in defs:
                why = check_placement(d.type, tag=tag, tag_count=len(tags))
                if why is not None:
                    at = d.span.start if d.span is not None else None
                    raise SqlError(why, sql=self.sql, offset=at, code=placement_code(d.type, tag=tag))

    def create_vtable(self) -> ast.CreateVTable:
        """``CREATE VTABLE [IF NOT EXISTS] [db.]vt (defs) [USING vstb [(tags)] TAGS (values)]``
        (after CREATE VTABLE; TDengine SQL manual, "Virtual Tables")."""
        ine = self.if_not_exists()
        table = self.table_name("a virtual table name")
        self.expect_type(L_PAREN, "syntax error: expected '(' before the virtual table's columns")
        defs = [self.vcolumn_def()]
        while self.accept_type(COMMA):
            defs.append(self.vcolumn_def())
        self.expect_type(R_PAREN, "syntax error: expected ')' after the virtual table's columns")
        if not self.accept("USING"):
            return ast.CreateVTable(table=table, columns=defs, if_not_exists=ine, span=Span(0, len(self.sql)))
        using, tag_names, values = self.using_tags("a virtual supertable name")
        return ast.CreateVTable(
            table=table,
            columns=defs,
            using=using,
            tag_names=tag_names,
            tag_values=values,
            if_not_exists=ine,
            span=Span(0, len(self.sql)),
        )

    def vcolumn_def(self) -> ast.VColumnDef:
        """``name type [FROM ref]``, ``name FROM ref`` or a bare ``ref`` (positional)."""
        start = self.i
        if self.is_type(TokenType.DOT, 1):
            return ast.VColumnDef(name=None, type=None, ref=self.column_ref(), span=self.span(start, self.i))
        name = self.name("a column name")[0]
        tdtype = None if self.at("FROM") else self.data_type()
        src = self.column_ref() if self.accept("FROM") else None
        return ast.VColumnDef(name=name, type=tdtype, ref=src, span=self.span(start, self.i))

    def column_ref(self) -> ast.ColumnRefName:
        """``[db.]table.column``."""
        start = self.i
        parts = [self.name("a table name")[0]]
        while self.accept_type(TokenType.DOT):
            parts.append(self.name("a column name")[0])
        if len(parts) not in (2, 3):
            raise self.err_at(
                "syntax error: expected a column reference [db_name.]table_name.col_name", start
            )
        span = self.span(start, self.i)
        if len(parts) == 2:
            return ast.ColumnRefName(db=None, table=parts[0], column=parts[1], span=span)
        return ast.ColumnRefName(db=parts[0], table=parts[1], column=parts[2], span=span)

    def drop_vtable(self) -> ast.DropTable:
        """``DROP VTABLE [IF EXISTS] [db.]vt`` (after DROP VTABLE)."""
        ie = self.if_exists()
        return ast.DropTable(tables=[self.table_name()], if_exists=ie, virtual=True)

    def column_defs(self, what: str) -> list[ast.ColumnDef]:
        self.expect_type(L_PAREN, f"syntax error: expected '(' {what.replace('after', 'before')}")
        out: list[ast.ColumnDef] = []
        while True:
            out.append(self.column_def())
            if self.accept_type(COMMA):
                continue
            if self.accept_type(R_PAREN):
                return out
            raise self.error(f"syntax error: expected ')' {what}")

    def column_def(self) -> ast.ColumnDef:
        start = self.i
        name = self.name("a column name")[0]
        tdtype = self.data_type()
        comment = self.string("a column comment") if self.accept("COMMENT") else None
        composite = bool(self.accept("COMPOSITE", "KEY") or self.accept("PRIMARY", "KEY"))
        return ast.ColumnDef(
            name=name, type=tdtype, comment=comment, composite_key=composite, span=self.span(start, self.i)
        )

    def subtable_def(self) -> ast.SubtableDef:
        start = self.i
        ine = self.if_not_exists()
        table = self.table_name()
        if not self.at("USING"):
            raise self.error("syntax error: expected USING after the subtable name")
        return self.subtable_rest(table, ine, start)

    def using_tags(self, what: str) -> tuple[TableName, list[str] | None, list[exp.Expr]]:
        """``stb [(tag, ...)] TAGS (v, ...)`` after USING (a subtable's or a virtual child table's):
        the supertable, the tag names given (None: all, in order) and the tag values."""
        using = self.table_name(what)
        tag_names: list[str] | None = None
        if self.is_type(L_PAREN):
            tag_names = self.name_list("tag name", "after tag names")
        self.expect("TAGS", message="syntax error: expected TAGS (...) after USING")
        values, _ = self.value_list("after tag values")
        return using, tag_names, values

    def subtable_rest(self, table: TableName, ine: bool, start: int) -> ast.SubtableDef:
        """``USING stb [(tag, ...)] TAGS (v, ...)`` after a subtable name."""
        self.expect("USING")
        using, tag_names, values = self.using_tags("a supertable name")
        comment, ttl = None, None
        while not self.done():  # table_options after TAGS (grammar: create_subtable_clause)
            if self.accept("COMMENT"):
                comment = self.string("a table comment")
            elif self.at("TTL"):
                ttl = self.ttl_option()
            else:
                break
        return ast.SubtableDef(
            table=table,
            using=using,
            tag_names=tag_names,
            tag_values=values,
            if_not_exists=ine,
            span=self.span(start, self.i),
            comment=comment,
            ttl=ttl,
        )

    def name_list(self, what: str, after: str) -> list[str]:
        items, _, _ = self.paren_items(after)
        out = []
        for lo, hi in items:
            if not self.item_is_name(lo, hi):
                raise self.err_at(f"syntax error: expected a {what}", lo)
            out.append(self.toks[lo].text)
        if not items:
            raise self.error(f"syntax error: expected a {what}", self.prev)
        return out

    def value_list(self, after: str) -> tuple[list[exp.Expr], list[Span]]:
        """``(v, ...)`` of constants with the span of each value."""

        def check(lo: int, hi: int) -> None:
            self.constant(lo, hi)

        items, _, close = self.paren_items(after, validate=check)
        if not items:
            raise self.err_at("syntax error: expected a value", close)
        values, spans = [], []
        for lo, hi in items:
            if lo >= hi:
                raise self.err_at("syntax error: expected a value", lo)
            values.append(self.constant(lo, hi))
            spans.append(self.span(lo, hi))
        return values, spans

    def drop_database(self) -> ast.DropDatabase:
        """``DROP DATABASE [IF EXISTS] db [FORCE]`` (after DROP DATABASE)."""
        ie = self.if_exists()
        name = self.name("a database name")[0]
        force = bool(self.accept("FORCE"))
        return ast.DropDatabase(name=name, if_exists=ie, force=force)

    def drop_stable(self) -> ast.DropTable:
        """``DROP STABLE [IF EXISTS] [db.]stb`` (after DROP STABLE)."""
        ie = self.if_exists()
        return ast.DropTable(tables=[self.table_name()], if_exists=ie, super_only=True)

    def drop_table(self) -> ast.DropTable:
        """``DROP TABLE [IF EXISTS] [db.]tb [, [IF EXISTS] [db.]tb ...]`` (after DROP TABLE)."""
        ie = self.if_exists()
        tables = [self.table_name()]
        while self.accept_type(COMMA):
            ie = self.if_exists() or ie
            tables.append(self.table_name())
        return ast.DropTable(tables=tables, if_exists=ie)
