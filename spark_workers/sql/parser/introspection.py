"""Introspection: SHOW and DESCRIBE (TDengine SQL manual, "SHOW Commands")."""

from __future__ import annotations

from sqlglot.tokens import TokenType

from spark_workers.sql import ast
from spark_workers.sql.ast import TableName
from spark_workers.sql.parser.base import ParserBase

_SHOW_KINDS = {
    "DATABASES": "databases",
    "STABLES": "stables",
    "TABLES": "tables",
    "VTABLES": "vtables",
    "STREAMS": "streams",
    "VGROUPS": "vgroups",
}


# SHOW statements without arguments beyond their words (TDengine's sql.y)
_SHOW_FIXED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("DNODES",), "dnodes"),
    (("FUNCTIONS",), "functions"),
    (("CONNECTIONS",), "connections"),
    (("QUERIES",), "queries"),
    (("APPS",), "apps"),
    (("CONSUMERS",), "consumers"),
    (("TRANSACTIONS",), "transactions"),
    (("MNODES",), "mnodes"),
    (("QNODES",), "qnodes"),
    (("SNODES",), "snodes"),
    (("VNODES",), "vnodes"),
    (("TOPICS",), "topics"),
    (("SUBSCRIPTIONS",), "subscriptions"),
    (("VIEWS",), "views"),
    (("COMPACTS",), "compacts"),
)


class IntrospectionParser(ParserBase):
    """SHOW and DESCRIBE."""

    def describe(self) -> ast.Describe:
        """``DESCRIBE [db.]tb`` / ``DESC [db.]tb`` (at DESCRIBE)."""
        self.i += 1
        return ast.Describe(table=self.table_name())

    def show(self) -> ast.Show:
        self.expect("SHOW")
        if self.accept("DATABASES"):
            return ast.Show(what="databases")
        for kind in ("USER", "SYSTEM"):  # SHOW USER | SYSTEM DATABASES: only those databases
            if self.accept(kind, "DATABASES"):
                return ast.Show(what="databases", vkind=kind.lower())
        if self.accept("CLUSTER", "ALIVE"):
            return ast.Show(what="alive")
        if self.is_type(TokenType.DOT, 1) and self.at_index(self.i + 2, "ALIVE"):
            alive_db = self.name("a database name")[0]
            self.i += 2
            return ast.Show(what="alive", db=alive_db)
        if self.accept("USERS"):
            return ast.Show(what="users")
        if self.accept("USER", "PRIVILEGES"):
            return ast.Show(what="user_privileges")
        if self.accept("CREATE"):
            if self.accept("STREAM"):
                return ast.Show(what="create_stream", target=self.table_name("a stream name"))
            if self.accept("DATABASE"):
                return ast.Show(what="create_database", db=self.name("a database name")[0])
            if self.accept("STABLE"):
                return ast.Show(what="create_stable", target=self.table_name())
            if self.accept("TABLE"):
                return ast.Show(what="create_table", target=self.table_name())
            if self.accept("VTABLE"):
                return ast.Show(what="create_vtable", target=self.table_name())
            raise self.error("syntax error: expected TABLE, STABLE, VTABLE or DATABASE after SHOW CREATE")
        for words, what in _SHOW_FIXED:
            if self.accept(*words):
                return ast.Show(what=what)
        if self.accept("LOCAL", "VARIABLES"):
            return ast.Show(what="local_variables", like=self._like())
        if self.accept("CLUSTER", "VARIABLES") or self.accept("VARIABLES"):
            return ast.Show(what="variables", like=self._like())
        if self.accept("CLUSTER"):
            return ast.Show(what="cluster")
        if self.accept("INDEXES") or self.accept("INDEX"):  # SHOW INDEXES FROM [db.]tb [FROM db]
            self.expect("FROM", message="syntax error: expected FROM after SHOW INDEXES")
            target = self.table_name()
            if self.accept("FROM"):
                target = TableName(name=target.name, db=self.name("a database name")[0], span=target.span)
            return ast.Show(what="indexes", target=target, db=target.db)
        if self.accept("DNODE"):
            t = self.expect_type(TokenType.NUMBER, "syntax error: expected a dnode id after SHOW DNODE")
            self.expect("VARIABLES", message="syntax error: expected VARIABLES after SHOW DNODE <id>")
            return ast.Show(what="dnode_variables", dnode=int(t.text), like=self._like())
        if self.accept("TABLE", "TAGS"):
            return self._table_tags()
        if self.accept("TAGS"):
            self.expect("FROM", message="syntax error: expected FROM after SHOW TAGS")
            target = self.table_name()
            if self.accept("FROM"):
                target = TableName(name=target.name, db=self.name("a database name")[0], span=target.span)
            return ast.Show(what="tags", target=target, db=target.db)
        vkind = None
        if self.at("NORMAL") or self.at("CHILD"):
            vkind = self.toks[self.i].text.lower()
            self.i += 1
        db = None
        if self.is_type(TokenType.DOT, 1):
            db = self.name("a database name")[0]
            self.i += 1
        w = self.word()
        if not w or w[0] not in _SHOW_KINDS or len(w) != 1 or (vkind and w[0] != "VTABLES"):
            raise self.error(
                "syntax error: expected VTABLES after SHOW NORMAL / SHOW CHILD"
                if vkind
                else "syntax error: expected DATABASES, STABLES, TABLES, VTABLES, STREAMS, VGROUPS, TAGS, "
                "TABLE TAGS, CREATE ..., USERS, DNODES, MNODES, CLUSTER, FUNCTIONS, VARIABLES, "
                "LOCAL VARIABLES, CONNECTIONS, QUERIES, APPS, TOPICS, INDEXES or VIEWS after SHOW"
            )
        self.i += 1
        what = _SHOW_KINDS[w[0]]
        like = None
        if what in ("stables", "tables", "vtables") and self.accept("LIKE"):
            like = self.string("a LIKE pattern")
        return ast.Show(what=what, db=db, like=like, vkind=vkind)

    def _like(self) -> str | None:
        """An optional ``LIKE 'pattern'``."""
        return self.string("a LIKE pattern") if self.accept("LIKE") else None

    def _table_tags(self) -> ast.Show:
        """``SHOW TABLE TAGS [tag_item, ...] FROM [db.]tb [FROM db]`` (after TABLE TAGS); a
        tag item is TBNAME or a tag name, with an optional ``[AS] alias``."""
        items: list[tuple[str, str | None, int | None]] = []
        while not self.at("FROM"):
            name, tok = self.name("TBNAME or a tag name")
            alias = None
            if self.accept("AS") or not (self.done() or self.at("FROM") or self.is_type(TokenType.COMMA)):
                alias = self.name("an alias")[0]
            items.append((name, alias, tok.start))
            if not self.accept_type(TokenType.COMMA):
                break
        self.expect("FROM", message="syntax error: expected FROM after SHOW TABLE TAGS")
        target = self.table_name()
        if self.accept("FROM"):
            target = TableName(name=target.name, db=self.name("a database name")[0], span=target.span)
        return ast.Show(what="table_tags", target=target, db=target.db, items=items or None)
