"""Writes: INSERT INTO (several tables, ``USING stb TAGS (...)`` creating subtables) and DELETE
(TDengine SQL manual, "Insert", "Delete Data")."""

from __future__ import annotations

from sqlglot import exp

from spark_workers.sql import ast
from spark_workers.sql.ast import Span
from spark_workers.sql.parser.base import COMMA, L_PAREN
from spark_workers.sql.parser.tables import TablesParser


class WritesParser(TablesParser):
    """INSERT and DELETE; an INSERT's ``USING`` clause is a subtable definition (:class:`TablesParser`)."""

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
        columns = self.name_list("column name", "after column names") if self.is_type(L_PAREN) else None
        self.expect("VALUES", message="syntax error: expected VALUES")
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

    def delete(self) -> ast.Delete:
        self.expect("DELETE")
        self.expect("FROM", message="syntax error: expected FROM after DELETE")
        table = self.table_name()
        where = None
        if self.accept("WHERE"):
            where = self.sg(self.i, self.end, exp.Condition, "a condition")
            self.i = self.end
        return ast.Delete(table=table, where=where, span=Span(0, len(self.sql)))
