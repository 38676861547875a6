"""Writes: INSERT INTO (several tables, ``USING stb TAGS (...)`` creating subtables, a supertable
with ``tbname`` and tags in its column list, ``INSERT ... subquery``) and DELETE (TDengine SQL
manual, "Insert", "Delete Data")."""

from __future__ import annotations

from sqlglot import exp

from spark_workers.errors import Code
from spark_workers.sql import ast
from spark_workers.sql.ast import Span
from spark_workers.sql.parser.base import COMMA, L_PAREN
from spark_workers.sql.parser.queries import QueriesParser
from spark_workers.sql.parser.tables import TablesParser


class WritesParser(TablesParser, QueriesParser):
    """INSERT and DELETE; an INSERT's ``USING`` clause is a subtable definition (:class:`TablesParser`),
    its subquery a query (:class:`QueriesParser`)."""

    def insert(self) -> ast.Insert:
        self.expect("INSERT")
        self.expect("INTO", message="syntax error: expected INTO after INSERT")
        targets = [self.insert_target()]
        while not self.done():
            targets.append(self.insert_target())
        return ast.Insert(targets=targets)

    def insert_target(self) -> ast.InsertTarget:
        start = self.i
        table = self.table_name()
        using = self.subtable_rest(table, False, start) if self.at("USING") else None
        columns = None
        if self.is_type(L_PAREN) and not self.starts_subquery():
            columns = self.name_list("column name", "after column names")
        if self.starts_subquery():
            # ``INSERT INTO tb_name [(field1_name, ...)] subquery``: the query runs to the end of
            # the statement, so it is the only target (TDengine grammar: query_or_subquery).
            if using is not None:
                raise self.error(
                    "syntax error: INSERT ... USING ... TAGS takes VALUES, not a subquery",
                    code=Code.SYNTAX_ERROR,
                )
            q_lo = self.i
            query = self.query(q_lo, self.end)
            self.i = self.end
            return ast.InsertTarget(
                table=table,
                rows=[],
                columns=columns,
                query=query,
                span=self.span(start, self.i),
            )
        if self.at("FILE"):  # TDengine's INSERT ... FILE 'csv' reads a file of the server
            raise self.error(
                "INSERT ... FILE is not supported: nothing a client sends reads the server's files; "
                "send the rows with VALUES or the REST ingest API",
                code=Code.NOT_SUPPORTED,
            )
        self.expect("VALUES", message="syntax error: expected VALUES or a subquery")
        rows: list[list[exp.Expr]] = []
        row_spans: list[list[Span]] = []
        while True:
            values, spans = self.value_list("after values")
            rows.append(values)
            row_spans.append(spans)
            if self.is_type(COMMA) and self.is_type(L_PAREN, 1):
                self.i += 1
            if not self.is_type(L_PAREN):
                break
        return ast.InsertTarget(
            table=table,
            rows=rows,
            columns=columns,
            using=using,
            row_spans=row_spans,
            span=self.span(start, self.i),
        )

    def starts_subquery(self) -> bool:
        """At ``SELECT``, ``WITH`` or ``(`` opening one: a subquery, not a column list."""
        j = self.i
        while j < self.end and self.toks[j].token_type == L_PAREN:
            j += 1
        return self.at_index(j, "SELECT") or self.at_index(j, "WITH")

    def delete(self) -> ast.Delete:
        self.expect("DELETE")
        self.expect("FROM", message="syntax error: expected FROM after DELETE")
        table = self.table_name()
        where = None
        if self.accept("WHERE"):
            where = self.sg(self.i, self.end, exp.Condition, "a condition")
            self.i = self.end
        return ast.Delete(table=table, where=where, span=Span(0, len(self.sql)))
