"""TDengine SQL text -> typed statements (:mod:`spark_workers.sql.ast`).

Statements are parsed by recursive descent over the TDengine dialect's tokens
(:mod:`spark_workers.sql.dialect`, :mod:`spark_workers.sql.lexer`), one family per module:
databases and tables (:mod:`.tables`), INSERT and DELETE (:mod:`.writes`), SHOW and DESCRIBE
(:mod:`.introspection`), queries with TDengine's clauses (:mod:`.queries`), streams (:mod:`.streams`),
users and privileges (:mod:`.users`), over the cursor, errors and ``sqlglot`` bridge of
:mod:`.base`. Expressions and the standard part of queries are handed to ``sqlglot``: the token
sub-list is parsed with the TDengine dialect, so the offsets of its errors are offsets in the
statement text.

Errors are :class:`spark_workers.errors.SqlError` whose ``sql`` is the text given to
:func:`parse` / :func:`parse_one` and whose ``offset`` is the offending token's character offset
in it. Names are kept as written (backticks removed, case kept).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast, lexer
from spark_workers.sql.dialect import DIALECT
from spark_workers.sql.parser.base import L_PAREN, ParserBase
from spark_workers.sql.parser.introspection import IntrospectionParser
from spark_workers.sql.parser.streams import StreamsParser
from spark_workers.sql.parser.unsupported import refuse_unsupported
from spark_workers.sql.parser.users import UsersParser
from spark_workers.sql.parser.writes import WritesParser

__all__ = ["parse", "parse_expression", "parse_located", "parse_one"]

# --------------------------------------------------------------------------- public API


def parse(sql: str) -> list[ast.Statement]:
    """Parse a text of one or more ``;``-separated TDengine statements.

    Args:
        sql: the user's text; empty statements (``;;``, comments only) are ignored.

    Returns:
        One :mod:`spark_workers.sql.ast` statement per statement, in order. Spans and ``text``
        fields are relative to each statement's own text (from its first to its last token).

    Raises:
        SqlError: the first problem found, with ``sql`` the whole text and ``offset`` the
            position of the offending token in it (code ``SYNTAX_ERROR``, ``INCOMPLETE_SQL`` when
            the text ends too early, ``NOT_SUPPORTED``, ``WRONG_VALUE_TYPE`` for bad durations
            and types).
    """
    return _parse_groups(sql, _split_statements(lexer.tokenize(sql, DIALECT.tokenizer())))


def parse_located(sql: str) -> list[tuple[ast.Statement, int, str]]:
    """Like :func:`parse`, with each statement's start offset in ``sql`` and its own text (the
    text its spans are relative to)."""
    groups = _split_statements(lexer.tokenize(sql, DIALECT.tokenizer()))
    stmts = _parse_groups(sql, groups)
    return [(s, g[0].start, sql[g[0].start : g[-1].end + 1]) for s, g in zip(stmts, groups, strict=True)]


def parse_one(sql: str) -> ast.Statement:
    """Parse exactly one statement (an optional trailing ``;`` is allowed).

    Raises:
        SqlError: as :func:`parse`; also when the text holds no statement or more than one
            (offset of the second statement).
    """
    groups = _split_statements(lexer.tokenize(sql, DIALECT.tokenizer()))
    if not groups:
        raise SqlError(
            "statement is incomplete: empty statement", sql=sql, offset=len(sql), code=Code.INCOMPLETE_SQL
        )
    if len(groups) > 1:
        raise SqlError(
            "syntax error: expected one statement, found several", sql=sql, offset=groups[1][0].start
        )
    return _parse_groups(sql, groups)[0]


def _parse_groups(sql: str, groups: list[list[Token]]) -> list[ast.Statement]:
    out: list[ast.Statement] = []
    for group in groups:
        start, end = group[0].start, group[-1].end + 1
        try:
            out.append(_StatementParser(sql[start:end], _rebase(group, start)).statement())
        except SqlError as e:
            raise _reanchor(e, sql, start) from None
    return out


def parse_expression(text: str) -> exp.Expr:
    """Parse one TDengine expression (conditions, PRE_FILTER, tag values...).

    Returns:
        The ``sqlglot`` tree in tdweb's TDengine form (durations as ``exp.Interval``, ``now`` as
        ``exp.CurrentTimestamp``, placeholders as ``__td_*`` identifiers).

    Raises:
        SqlError: with ``sql=text`` and the offset of the problem.
    """
    p = ParserBase(text)
    return p.sg(0, len(p.toks), exp.Condition, "an expression")


# --------------------------------------------------------------------------- helpers


def _split_statements(tokens: list[Token]) -> list[list[Token]]:
    groups: list[list[Token]] = [[]]
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            groups.append([])
        else:
            groups[-1].append(tok)
    return [g for g in groups if g]


def _rebase(tokens: list[Token], start: int) -> list[Token]:
    """Tokens with offsets relative to their statement's text (the first token at 0)."""
    if start == 0:
        return tokens
    return [
        Token(t.token_type, t.text, line=t.line, col=t.col, start=t.start - start, end=t.end - start,
              comments=t.comments)
        for t in tokens
    ]  # fmt: skip


def _reanchor(e: SqlError, sql: str, start: int) -> SqlError:
    offset = start + (e.offset or 0)
    err = type(e)(e.message, sql=sql, offset=offset, code=e.code)
    return err


class _StatementParser(WritesParser, IntrospectionParser, StreamsParser, UsersParser):
    """Recursive-descent parser of one statement: picks the family by the first words."""

    def statement(self) -> ast.Statement:
        refuse_unsupported(self)
        w = self.word()
        first = w[0] if w else ""
        if self.is_type(L_PAREN) or first in ("SELECT", "WITH"):
            stmt: ast.Statement = ast.Select(query=self.query(self.i, self.end))
            self.i = self.end
        elif first == "CREATE":
            stmt = self.create()
        elif first == "DROP":
            stmt = self.drop()
        elif first == "USE":
            stmt = self.use_database()
        elif first == "INSERT":
            stmt = self.insert()
        elif first == "DELETE":
            stmt = self.delete()
        elif first == "SHOW":
            stmt = self.show()
        elif first in ("DESCRIBE", "DESC"):
            stmt = self.describe()
        elif first in ("PAUSE", "RESUME", "START", "STOP"):
            stmt = self.stream_command()
        elif first == "RECALCULATE":
            stmt = self.recalculate()
        elif first == "ALTER" and self.at("ALTER", "USER"):
            stmt = self.alter_user()
        elif first == "ALTER":
            stmt = self.alter()
        elif first in ("GRANT", "REVOKE"):
            stmt = self.grant()
        else:
            t = self.toks[0]
            raise self.error(
                f"unexpected '{self.text_of(t)}': expected a statement such as SELECT, "
                "INSERT, CREATE, DROP, SHOW",
                t,
            )
        if not self.done():
            raise self.unexpected()
        return stmt

    def create(self) -> ast.Statement:
        self.expect("CREATE")
        if self.accept("DATABASE"):
            return self.create_database()
        if self.accept("STABLE"):
            return self.create_table(stable=True)
        if self.accept("TABLE"):
            return self.create_table(stable=False)
        if self.accept("VTABLE"):
            return self.create_vtable()
        if self.accept("STREAM"):
            return self.create_stream()
        if self.accept("USER"):
            return self.create_user()
        raise self.error(
            "syntax error: expected DATABASE, STABLE, TABLE, VTABLE, STREAM or USER after CREATE"
        )

    def alter(self) -> ast.Statement:
        """``ALTER DATABASE | STABLE | TABLE | VTABLE ...`` (ALTER USER is :meth:`alter_user`)."""
        self.expect("ALTER")
        if self.accept("DATABASE"):
            return self.alter_database()
        if self.accept("STABLE"):
            return self.alter_table(stable=True)
        if self.accept("TABLE"):
            return self.alter_table(stable=False)
        if self.accept("VTABLE"):
            return self.alter_table(stable=False, vtable=True)
        raise self.error("syntax error: expected DATABASE, STABLE, TABLE, VTABLE or USER after ALTER")

    def drop(self) -> ast.Statement:
        self.expect("DROP")
        if self.accept("DATABASE"):
            return self.drop_database()
        if self.accept("STABLE"):
            return self.drop_stable()
        if self.accept("TABLE"):
            return self.drop_table()
        if self.accept("VTABLE"):
            return self.drop_vtable()
        if self.accept("STREAM"):
            return self.drop_stream()
        if self.accept("USER"):
            return self.drop_user()
        raise self.error("syntax error: expected DATABASE, STABLE, TABLE, VTABLE, STREAM or USER after DROP")
