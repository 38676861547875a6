"""TDengine SQL text -> typed statements (:mod:`spark_workers.sql.ast`).

The statement level (CREATE DATABASE/STABLE/TABLE, INSERT, SHOW, both CREATE STREAM syntaxes,
stream commands) is parsed here by recursive descent over the TDengine dialect's tokens
(:mod:`spark_workers.sql.dialect`, :mod:`spark_workers.sql.lexer`). Expressions and the standard
part of queries are handed to ``sqlglot``: the token sub-list is parsed with the TDengine dialect,
so the offsets of its errors are offsets in the statement text.

TDengine's query clauses (PARTITION BY, INTERVAL/SESSION/STATE_WINDOW/EVENT_WINDOW/COUNT_WINDOW,
FILL; seed 000 "window_clause") and eKuiper window functions in GROUP BY (seed 003) are found at
parenthesis depth 0 of the query, cut out of the token list, and parsed here.

Errors are :class:`spark_workers.errors.SqlError` whose ``sql`` is the text given to
:func:`parse` / :func:`parse_one` and whose ``offset`` is the offending token's character offset
in it. Names are kept as written (backticks removed, case kept).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast, lexer
from spark_workers.sql.ast import Span, TableName
from spark_workers.sql.dialect import DIALECT
from spark_workers.tdtypes import TdType

_L = TokenType.L_PAREN
_R = TokenType.R_PAREN
_COMMA = TokenType.COMMA
_PIPE = TokenType.PIPE

_WINDOW_WORDS = frozenset({"INTERVAL", "SESSION", "STATE_WINDOW", "COUNT_WINDOW"})
_EKUIPER_FUNCTIONS = {
    "TUMBLINGWINDOW": "tumbling",
    "HOPPINGWINDOW": "hopping",
    "SLIDINGWINDOW": "sliding",
    "SESSIONWINDOW": "session",
    "COUNTWINDOW": "count",
}
# eKuiper window function -> allowed numbers of integer arguments after the unit (seed 003).
_EKUIPER_ARITY = {
    "tumbling": (1,),
    "hopping": (2,),
    "sliding": (1, 2),
    "session": (2,),
    "count": (1, 2),
}
_EKUIPER_UNITS = frozenset({"DD", "HH", "MI", "SS", "MS"})
# Depth-0 words that end a TDengine query clause (PARTITION BY list, EVENT_WINDOW end condition).
_QUERY_STOP = frozenset(
    {
        ("GROUP", "BY"),
        ("ORDER", "BY"),
        ("HAVING",),
        ("LIMIT",),
        ("SLIMIT",),
        ("SOFFSET",),
        ("UNION",),
        ("INTERSECT",),
        ("EXCEPT",),
        ("NOTIFY",),
        ("TRUE_FOR",),
        ("PARTITION", "BY"),
        ("FROM",),
        ("STREAM_OPTIONS",),
        ("INTO",),
        ("OUTPUT_SUBTABLE",),
    }
)
_FILL_MODES = frozenset({"NONE", "NULL", "PREV", "NEXT", "LINEAR", "VALUE", "NULL_F", "VALUE_F"})
_LEGACY_TRIGGERS = frozenset(
    {"AT_ONCE", "WINDOW_CLOSE", "MAX_DELAY", "FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE"}
)
_LEGACY_OPTION_WORDS = frozenset(
    {"TRIGGER", "WATERMARK", "IGNORE", "DELETE_MARK", "FILL_HISTORY", "EVENT_TIME", "INTO"}
)
_TRIGGER_WORDS = frozenset(
    {"PERIOD", "INTERVAL", "SLIDING", "SESSION", "STATE_WINDOW", "EVENT_WINDOW", "COUNT_WINDOW"}
)
_LEGACY_EVENTS = frozenset({"WINDOW_OPEN", "WINDOW_CLOSE"})
_NOTIFY_EVENTS = frozenset({"WINDOW_OPEN", "WINDOW_CLOSE", "ON_TIME"})
_STREAM_FLAGS = {
    "IGNORE_DISORDER": "ignore_disorder",
    "DELETE_RECALC": "delete_recalc",
    "DELETE_OUTPUT_TABLE": "delete_output_table",
    "CALC_NOTIFY_ONLY": "calc_notify_only",
    "LOW_LATENCY_CALC": "low_latency_calc",
    "FORCE_OUTPUT": "force_output",
    "IGNORE_NODATA_TRIGGER": "ignore_nodata_trigger",
}
_STREAM_DURATIONS = {"WATERMARK": "watermark", "EXPIRED_TIME": "expired_time", "MAX_DELAY": "max_delay"}
# Words after which a 3.3.7 clause list (PARTITION BY, NOTIFY ... WHERE) ends.
_STREAM_CLAUSES = frozenset(
    {
        ("STREAM_OPTIONS",),
        ("NOTIFY",),
        ("NOTIFY_OPTIONS",),
        ("INTO",),
        ("OUTPUT_SUBTABLE",),
        ("TAGS",),
        ("AS",),
    }
)
_SHOW_KINDS = {
    "DATABASES": "databases",
    "STABLES": "stables",
    "TABLES": "tables",
    "STREAMS": "streams",
    "VGROUPS": "vgroups",
}
_SQL_KEYWORDS = (
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "PARTITION",
    "INTERVAL",
    "SLIDING",
    "SESSION",
    "STATE_WINDOW",
    "EVENT_WINDOW",
    "COUNT_WINDOW",
    "FILL",
    "UNION",
    "JOIN",
    "DISTINCT",
)


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
    p = _StatementParser(text)
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


class _StatementParser:
    """Recursive-descent parser of one statement; ``self.end`` bounds the tokens in view."""

    def __init__(self, sql: str, tokens: list[Token] | None = None) -> None:
        self.sql = sql
        self.toks: list[Token] = tokens if tokens is not None else lexer.tokenize(sql, DIALECT.tokenizer())
        self.i = 0
        self.end = len(self.toks)
        self._index_of = {t.start: k for k, t in enumerate(self.toks)}

    # ------------------------------------------------------------------ cursor

    @contextmanager
    def bounded(self, end: int) -> Iterator[None]:
        saved = self.end
        self.end = end
        try:
            yield
        finally:
            self.end = saved

    def tok(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < self.end else None

    def is_type(self, tt: TokenType, k: int = 0) -> bool:
        t = self.tok(k)
        return t is not None and t.token_type == tt

    def word(self, k: int = 0) -> tuple[str, ...]:
        t = self.tok(k)
        return lexer.words(t) if t is not None else ()

    def _match(self, at: int, ws: tuple[str, ...]) -> int:
        j, k = at, 0
        while k < len(ws):
            if j >= self.end:
                return 0
            tw = lexer.words(self.toks[j])
            if not tw or tuple(ws[k : k + len(tw)]) != tw:
                return 0
            k += len(tw)
            j += 1
        return j - at

    def at(self, *ws: str) -> bool:
        return self._match(self.i, ws) > 0

    def at_index(self, j: int, *ws: str) -> bool:
        return self._match(j, ws) > 0

    def accept(self, *ws: str) -> Token | None:
        n = self._match(self.i, ws)
        if not n:
            return None
        first = self.toks[self.i]
        self.i += n
        return first

    def expect(self, *ws: str, message: str | None = None) -> Token:
        t = self.accept(*ws)
        if t is None:
            raise self.error(message or f"syntax error: expected {' '.join(ws)}")
        return t

    def accept_type(self, tt: TokenType) -> Token | None:
        t = self.tok()
        if t is not None and t.token_type == tt:
            self.i += 1
            return t
        return None

    def expect_type(self, tt: TokenType, message: str) -> Token:
        t = self.accept_type(tt)
        if t is None:
            raise self.error(message)
        return t

    @property
    def prev(self) -> Token:
        return self.toks[self.i - 1]

    def done(self) -> bool:
        return self.i >= self.end

    # ------------------------------------------------------------------ errors

    def text_of(self, tok: Token) -> str:
        return self.sql[tok.start : tok.end + 1]

    def error(self, message: str, tok: Token | None = None, code: int | None = None) -> SqlError:
        """Error at ``tok``, else at the current token, else at the bound, else incomplete."""
        if tok is None:
            tok = self.tok()
            if tok is None and self.end < len(self.toks):
                tok = self.toks[self.end]
        if tok is None:
            detail = message.removeprefix("syntax error: ")
            return SqlError(
                f"statement is incomplete: {detail}",
                sql=self.sql,
                offset=len(self.sql),
                code=Code.INCOMPLETE_SQL,
            )
        return SqlError(message, sql=self.sql, offset=tok.start, code=code)

    def err_at(self, message: str, j: int, code: int | None = None) -> SqlError:
        """Error at token index ``j`` (incomplete statement when ``j`` is past the end)."""
        if j < len(self.toks):
            return SqlError(message, sql=self.sql, offset=self.toks[j].start, code=code)
        detail = message.removeprefix("syntax error: ")
        return SqlError(
            f"statement is incomplete: {detail}", sql=self.sql, offset=len(self.sql), code=Code.INCOMPLETE_SQL
        )

    def unexpected(self) -> SqlError:
        t = self.tok()
        if t is None:
            return self.error("syntax error: unexpected end of statement")
        return self.error(f"unexpected '{self.text_of(t)}'", t)

    def span(self, a: int, b: int) -> Span:
        """Span of tokens ``a .. b-1``."""
        return Span(self.toks[a].start, self.toks[b - 1].end + 1)

    # ------------------------------------------------------------------ scanning

    def scan(self, lo: int, stop: Callable[[int], bool]) -> int:
        """First index from ``lo`` at nesting depth 0 where ``stop`` holds.

        Parentheses and CASE ... END nest. An unmatched ``)`` or the bound also end the scan.
        """
        depth = 0
        case = 0
        j = lo
        while j < self.end:
            tt = self.toks[j].token_type
            if depth == 0 and case == 0 and stop(j):
                return j
            if tt == _L:
                depth += 1
            elif tt == _R:
                if depth == 0:
                    return j
                depth -= 1
            elif tt == TokenType.CASE:
                case += 1
            elif tt == TokenType.END and case > 0:
                case -= 1
            j += 1
        return j

    def stop_words(self, stops: frozenset[tuple[str, ...]]) -> Callable[[int], bool]:
        def stop(j: int) -> bool:
            return any(self._match(j, s) for s in stops)

        return stop

    def paren_items(
        self,
        what: str,
        seps: tuple[TokenType, ...] = (_COMMA,),
        validate: Callable[[int, int], object] | None = None,
    ) -> tuple[list[tuple[int, int]], int, int]:
        """``( item sep item ... )`` at the cursor.

        Returns:
            ``(items, open_index, close_index)``: item token ranges ``[lo, hi)`` (no items for
            ``()``); the cursor ends after ``)``. ``validate`` is run on the items found when
            the ``)`` is missing, so a better error inside them wins.
        """
        if not self.is_type(_L):
            raise self.error(f"syntax error: expected '(' {what}")
        open_index = self.i
        lo = self.i + 1
        items: list[tuple[int, int]] = []
        while True:
            j = self.scan(lo, lambda k: self.toks[k].token_type in seps)
            items.append((lo, j))
            if j >= self.end:
                if validate is not None:
                    for a, b in items:
                        if a < b:
                            validate(a, b)
                raise self.err_at(f"syntax error: expected ')' {what}", j)
            if self.toks[j].token_type == _R:
                self.i = j + 1
                if len(items) == 1 and items[0][0] == items[0][1]:
                    items = []
                return items, open_index, j
            lo = j + 1

    # ------------------------------------------------------------------ sqlglot

    def sg(
        self,
        lo: int,
        hi: int,
        into: type[exp.Expr] | None,
        what: str,
        unexpected: str | None = None,
    ) -> exp.Expr:
        """Parse tokens ``[lo, hi)`` with ``sqlglot`` as ``into`` (None: a statement/query).

        ``unexpected`` formats the message for a leftover token (``{text}`` is its text).
        """
        if lo >= hi:
            raise self.err_at(f"syntax error: expected {what}", lo)
        parser = DIALECT.parser()
        try:
            if into is None:
                trees = parser.parse(self.toks[lo:hi], self.sql)
            else:
                trees = parser.parse_into(into, self.toks[lo:hi], self.sql)
        except ParseError as e:
            raise self.translate(e, lo, hi, unexpected) from None
        except RecursionError:  # the depth limit (limits.py) keeps this away; a last guard
            raise self.err_at("syntax error: the expression is nested too deeply", lo) from None
        tree = trees[0] if trees else None
        if tree is None:
            raise self.err_at(f"syntax error: expected {what}", lo)
        return tree

    def translate(self, e: ParseError, lo: int, hi: int, unexpected: str | None) -> SqlError:
        """A ``sqlglot`` error on tokens ``[lo, hi)`` as a ``SqlError`` at the same place."""
        info = e.errors[0] if e.errors else {}
        if "td_offset" not in info:
            return self.err_at(f"syntax error: {info.get('description') or e}", lo)
        if info.get("td_at_end"):
            if hi < len(self.toks):
                tok = self.toks[hi]
                return SqlError(
                    f"syntax error: incomplete expression before '{self.text_of(tok)}'",
                    sql=self.sql,
                    offset=tok.start,
                )
            return self.err_at("syntax error: the expression is not finished", len(self.toks))
        offset = int(info["td_offset"])
        text = self.sql[offset : int(info["td_end"])]
        desc = str(info.get("description") or "")
        if desc.startswith("Invalid expression / Unexpected token"):
            j = self._index_of.get(offset)
            k = self._misspelled_keyword(j, lo) if j is not None else None
            if k is not None:
                tok = self.toks[k]
                return SqlError(f"unexpected '{self.text_of(tok)}'", sql=self.sql, offset=tok.start)
            message = unexpected.format(text=text) if unexpected else f"unexpected '{text}'"
            return SqlError(message, sql=self.sql, offset=offset)
        if desc.startswith("Expecting "):
            return SqlError(
                f"syntax error: expected '{desc.removeprefix('Expecting ')}' near '{text}'",
                sql=self.sql,
                offset=offset,
            )
        m = re.search(r"provided arguments \((\d+)\) is greater than the maximum.* arguments \((\d+)\)", desc)
        if m is not None:
            return SqlError(
                f"Invalid number of arguments near '{text}': {m.group(1)} given, at most {m.group(2)}",
                sql=self.sql,
                offset=offset,
                code=Code.INVALID_FUNCTION,
            )
        # sqlglot's other descriptions name its classes and tokens: not for users
        return SqlError(f"syntax error near '{text}'", sql=self.sql, offset=offset)

    def _misspelled_keyword(self, j: int, lo: int) -> int | None:
        """``select * fromm t``: sqlglot takes ``fromm`` as an alias and fails at ``t``; point at
        the unquoted name before the failing token when it is spelled like a keyword."""
        k = j - 1
        if k < lo:
            return None
        prev = self.toks[k]
        if prev.token_type != TokenType.VAR:
            return None
        if k - 1 >= lo and lexer.words(self.toks[k - 1]) == ("AS",):
            return None
        if difflib.get_close_matches(prev.text.upper(), _SQL_KEYWORDS, n=1, cutoff=0.75):
            return k
        return None

    def constant(self, lo: int, hi: int, what: str = "a value", after: str = "value") -> exp.Expr:
        """A constant expression (literal, NULL, TRUE/FALSE, now, now + 1s, function of those).

        A negative number is ``exp.Neg(exp.Literal)``, as ``sqlglot`` builds it. Single-token
        values (and ``-number``) skip ``sqlglot`` (bulk INSERTs), building the same nodes.
        """
        simple = self.simple_constant(lo, hi)
        if simple is not None:
            return simple
        tree = self.sg(
            lo,
            hi,
            exp.Condition,
            what,
            unexpected=f"syntax error: expected ',' or ')' after {after}, got '{{text}}'",
        )
        bad = tree.find(exp.Column, exp.Star, exp.Query)
        if bad is not None:
            text = self.sql[self.toks[lo].start : self.toks[hi - 1].end + 1]
            raise self.err_at(f"syntax error: expected a constant value, got '{text}'", lo)
        return tree

    def simple_constant(self, lo: int, hi: int) -> exp.Expr | None:
        """``exp.Literal``/``exp.Null``/``exp.Boolean``/``-n`` for one-token values, else None."""
        neg = hi - lo == 2 and self.toks[lo].token_type == TokenType.DASH
        if hi - lo != 1 and not neg:
            return None
        t = self.toks[hi - 1]
        tt = t.token_type
        if tt == TokenType.NUMBER:
            lit = exp.Literal.number(t.text)
            return exp.Neg(this=lit) if neg else lit
        if neg:
            return None
        if tt == TokenType.STRING:
            return exp.Literal.string(t.text)
        if tt == TokenType.NULL:
            return exp.Null()
        if tt in (TokenType.TRUE, TokenType.FALSE):
            return exp.Boolean(this=tt == TokenType.TRUE)
        return None

    # ------------------------------------------------------------------ small pieces

    def name(self, what: str) -> tuple[str, Token]:
        """A name: an unquoted word or a backtick-quoted identifier (backticks removed)."""
        t = self.tok()
        if t is None:
            raise self.error(f"syntax error: expected {what}")
        if t.token_type == TokenType.IDENTIFIER or (lexer.is_word(t) and " " not in t.text):
            self.i += 1
            return t.text, t
        raise self.error(f"syntax error: expected {what}, got '{self.text_of(t)}'", t)

    def table_name(self, what: str = "a table name") -> TableName:
        """``[db.]name``."""
        first, t1 = self.name(what)
        if self.accept_type(TokenType.DOT):
            second, t2 = self.name(what)
            return TableName(name=second, db=first, span=Span(t1.start, t2.end + 1))
        return TableName(name=first, db=None, span=Span(t1.start, t1.end + 1))

    def string(self, what: str) -> str:
        t = self.tok()
        if t is None or t.token_type != TokenType.STRING:
            raise self.error(f"syntax error: expected {what} (a quoted string)")
        self.i += 1
        return t.text

    def if_not_exists(self) -> bool:
        return self.accept("IF", "NOT", "EXISTS") is not None

    def if_exists(self) -> bool:
        return self.accept("IF", "EXISTS") is not None

    def duration_range(self, lo: int, hi: int, what: str) -> Duration:
        """A duration literal written by tokens ``[lo, hi)`` (``10s``)."""
        if lo >= hi:
            raise self.err_at(f"syntax error: expected {what}", lo)
        text = self.sql[self.toks[lo].start : self.toks[hi - 1].end + 1]
        try:
            return Duration.parse(text)
        except SqlError as e:
            raise e.at(self.sql, self.toks[lo].start) from None

    def duration(self, what: str) -> Duration:
        """A duration literal at the cursor; adjacent tokens (``1.5s``) are read as one."""
        t = self.tok()
        if t is None:
            raise self.error(f"syntax error: expected {what}")
        lo = self.i
        j = lo + 1
        glue = (TokenType.VAR, TokenType.NUMBER, TokenType.DOT)
        while (
            j < self.end
            and self.toks[j].start == self.toks[j - 1].end + 1
            and self.toks[j].token_type in glue
            and (self.toks[j - 1].token_type in glue or self.toks[j - 1].token_type == TokenType.DASH)
        ):
            j += 1
        self.i = j
        return self.duration_range(lo, j, what)

    def flag01(self, option: str) -> int:
        t = self.tok()
        if t is None or t.token_type != TokenType.NUMBER or t.text not in ("0", "1"):
            raise self.error(f"syntax error: {option} expects 0 or 1")
        self.i += 1
        return int(t.text)

    def item_is_name(self, lo: int, hi: int) -> bool:
        t = self.toks[lo]
        return hi == lo + 1 and (
            t.token_type == TokenType.IDENTIFIER or (lexer.is_word(t) and " " not in t.text)
        )

    def integer_item(self, lo: int, hi: int) -> int | None:
        if hi != lo + 1:
            return None
        t = self.toks[lo]
        if t.token_type == TokenType.NUMBER and t.text.isdigit():
            return int(t.text)
        return None

    # ------------------------------------------------------------------ statements

    def statement(self) -> ast.Statement:
        w = self.word()
        first = w[0] if w else ""
        if self.is_type(_L) or first in ("SELECT", "WITH"):
            stmt: ast.Statement = ast.Select(query=self.query(self.i, self.end))
            self.i = self.end
        elif first == "CREATE":
            stmt = self.create()
        elif first == "DROP":
            stmt = self.drop()
        elif first == "USE":
            self.i += 1
            stmt = ast.UseDatabase(name=self.name("a database name")[0])
        elif first == "INSERT":
            stmt = self.insert()
        elif first == "DELETE":
            stmt = self.delete()
        elif first == "SHOW":
            stmt = self.show()
        elif first in ("DESCRIBE", "DESC"):
            self.i += 1
            stmt = ast.Describe(table=self.table_name())
        elif first in ("PAUSE", "RESUME", "START", "STOP"):
            stmt = self.stream_command()
        elif first == "RECALCULATE":
            stmt = self.recalculate()
        elif first == "ALTER" and self.at("ALTER", "USER"):
            stmt = self.alter_user()
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
        if self.accept("STREAM"):
            return self.create_stream()
        if self.accept("USER"):
            return self.create_user()
        raise self.error("syntax error: expected DATABASE, STABLE, TABLE, STREAM or USER after CREATE")

    def create_database(self) -> ast.CreateDatabase:
        ine = self.if_not_exists()
        name = self.name("a database name")[0]
        options: dict[str, object] = {}
        while not self.done():
            t = self.tok()
            assert t is not None
            if not lexer.is_word(t) or " " in t.text:
                raise self.error(f"syntax error: expected a database option name, got '{self.text_of(t)}'")
            key = t.text.upper()
            if key in options:
                raise self.error(f"duplicate database option {key}", t)
            self.i += 1
            values = [self.option_value(key)]
            while self.accept_type(_COMMA):
                values.append(self.option_value(key))
            options[key] = values[0] if len(values) == 1 else ",".join(str(v) for v in values)
        return ast.CreateDatabase(name=name, if_not_exists=ine, options=options, span=Span(0, len(self.sql)))

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
        comment = self.string("a table comment") if self.accept("COMMENT") else None
        kind = "super" if stable or tags else "normal"
        return ast.CreateTable(
            table=table, kind=kind, columns=columns, tags=tags, if_not_exists=ine, comment=comment
        )

    def column_defs(self, what: str) -> list[ast.ColumnDef]:
        self.expect_type(_L, f"syntax error: expected '(' {what.replace('after', 'before')}")
        out: list[ast.ColumnDef] = []
        while True:
            out.append(self.column_def())
            if self.accept_type(_COMMA):
                continue
            if self.accept_type(_R):
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

    def data_type(self) -> TdType:
        t = self.tok()
        if t is None or not lexer.is_word(t) or " " in t.text:
            raise self.error("syntax error: expected a data type")
        self.i += 1
        unsigned = bool(self.accept("UNSIGNED"))
        length: int | None = None
        if self.accept_type(_L):
            n = self.tok()
            if n is None or n.token_type != TokenType.NUMBER or not n.text.isdigit():
                raise self.error(f"syntax error: expected the length of {t.text}")
            length = int(n.text)
            self.i += 1
            self.expect_type(_R, f"syntax error: expected ')' after the length of {t.text}")
        try:
            return TdType.parse(t.text, length, unsigned)
        except SqlError as e:
            raise e.at(self.sql, t.start) from None

    def subtable_def(self) -> ast.SubtableDef:
        start = self.i
        ine = self.if_not_exists()
        table = self.table_name()
        if not self.at("USING"):
            raise self.error("syntax error: expected USING after the subtable name")
        return self.subtable_rest(table, ine, start)

    def subtable_rest(self, table: TableName, ine: bool, start: int) -> ast.SubtableDef:
        """``USING stb [(tag, ...)] TAGS (v, ...)`` after a subtable name."""
        self.expect("USING")
        using = self.table_name("a supertable name")
        tag_names: list[str] | None = None
        if self.is_type(_L):
            tag_names = self.name_list("tag name", "after tag names")
        self.expect("TAGS", message="syntax error: expected TAGS (...) after USING")
        values, _ = self.value_list("after tag values")
        return ast.SubtableDef(
            table=table,
            using=using,
            tag_names=tag_names,
            tag_values=values,
            if_not_exists=ine,
            span=self.span(start, self.i),
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

    def drop(self) -> ast.Statement:
        self.expect("DROP")
        if self.accept("DATABASE"):
            ie = self.if_exists()
            name = self.name("a database name")[0]
            force = bool(self.accept("FORCE"))
            return ast.DropDatabase(name=name, if_exists=ie, force=force)
        if self.accept("STABLE"):
            ie = self.if_exists()
            return ast.DropTable(tables=[self.table_name()], if_exists=ie, super_only=True)
        if self.accept("TABLE"):
            ie = self.if_exists()
            tables = [self.table_name()]
            while self.accept_type(_COMMA):
                ie = self.if_exists() or ie
                tables.append(self.table_name())
            return ast.DropTable(tables=tables, if_exists=ie)
        if self.accept("STREAM"):
            ie = self.if_exists()
            s = self.table_name("a stream name")
            return ast.StreamCommand(action="drop", name=s.name, db=s.db, if_exists=ie)
        if self.accept("USER"):
            start = self.i
            name = self.name("a user name")[0]
            return ast.DropUser(name=name, span=self.span(start, self.i))
        raise self.error("syntax error: expected DATABASE, STABLE, TABLE, STREAM or USER after DROP")

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
        columns = self.name_list("column name", "after column names") if self.is_type(_L) else None
        self.expect("VALUES", message="syntax error: expected VALUES")
        rows: list[list[exp.Expr]] = []
        row_spans: list[list[Span]] = []
        while True:
            values, spans = self.value_list("after values")
            rows.append(values)
            row_spans.append(spans)
            if self.is_type(_COMMA) and self.is_type(_L, 1):
                self.i += 1
            if not self.is_type(_L):
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

    def show(self) -> ast.Show:
        self.expect("SHOW")
        if self.accept("DATABASES"):
            return ast.Show(what="databases")
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
            raise self.error("syntax error: expected TABLE, STABLE or DATABASE after SHOW CREATE")
        if self.accept("TAGS"):
            self.expect("FROM", message="syntax error: expected FROM after SHOW TAGS")
            target = self.table_name()
            if self.accept("FROM"):
                target = TableName(name=target.name, db=self.name("a database name")[0], span=target.span)
            return ast.Show(what="tags", target=target, db=target.db)
        db = None
        if self.is_type(TokenType.DOT, 1):
            db = self.name("a database name")[0]
            self.i += 1
        w = self.word()
        if not w or w[0] not in _SHOW_KINDS or len(w) != 1:
            raise self.error(
                "syntax error: expected DATABASES, STABLES, TABLES, STREAMS or VGROUPS after SHOW"
            )
        self.i += 1
        what = _SHOW_KINDS[w[0]]
        like = None
        if what in ("stables", "tables") and self.accept("LIKE"):
            like = self.string("a LIKE pattern")
        return ast.Show(what=what, db=db, like=like)

    # ------------------------------------------------------------------ users and privileges

    def create_user(self) -> ast.CreateUser:
        """``CREATE USER name PASS 'pw' [SYSINFO {1|0}] [CREATEDB {1|0}]`` (after CREATE USER)."""
        start = self.i
        name = self.name("a user name")[0]
        self.expect("PASS", message="syntax error: expected PASS 'password' after the user name")
        password = self.string("a password")
        opts = self.user_options(("SYSINFO", "CREATEDB"))
        return ast.CreateUser(
            name=name,
            password=password,
            sysinfo=bool(opts.get("SYSINFO", 1)),
            createdb=bool(opts.get("CREATEDB", 0)),
            span=self.span(start, start + 1),
        )

    def alter_user(self) -> ast.AlterUser:
        """``ALTER USER name alter_user_clause ...`` (TDengine SQL manual, "Users")."""
        self.expect("ALTER", "USER")
        start = self.i
        name = self.name("a user name")[0]
        password = None
        if self.accept("PASS"):
            password = self.string("a password")
        opts = self.user_options(("SYSINFO", "CREATEDB", "ENABLE"))
        if password is None and not opts:
            raise self.error("syntax error: expected PASS, SYSINFO, CREATEDB or ENABLE after the user name")
        return ast.AlterUser(
            name=name,
            password=password,
            sysinfo=None if "SYSINFO" not in opts else bool(opts["SYSINFO"]),
            createdb=None if "CREATEDB" not in opts else bool(opts["CREATEDB"]),
            enable=None if "ENABLE" not in opts else bool(opts["ENABLE"]),
            span=self.span(start, start + 1),
        )

    def user_options(self, allowed: tuple[str, ...]) -> dict[str, int]:
        """``OPTION {0|1}`` pairs up to the end of the statement, each at most once."""
        opts: dict[str, int] = {}
        while not self.done():
            w = self.word()
            key = w[0] if len(w) == 1 else ""
            if key not in allowed:
                t = self.tok()
                assert t is not None
                raise self.error(
                    f"syntax error: unexpected '{self.text_of(t)}': expected one of {', '.join(allowed)}", t
                )
            if key in opts:
                raise self.error(f"syntax error: {key} given twice")
            self.i += 1
            opts[key] = self.flag01(key)
        return opts

    def grant(self) -> ast.GrantStatement:
        """``GRANT privileges ON priv_level TO user`` / ``REVOKE ... FROM user`` with
        ``privileges: ALL | {READ | WRITE} [, ...]`` and ``priv_level: db.* | db.tbl | *.*``
        (TDengine SQL manual, "Permissions")."""
        revoke = bool(self.accept("REVOKE"))
        if not revoke:
            self.expect("GRANT")
        privileges: set[str] = set()
        if self.accept("ALL"):
            self.accept("PRIVILEGES")
            privileges = {"read", "write"}
        else:
            while True:
                w = self.word()
                if not w or w[0] not in ("READ", "WRITE"):
                    raise self.error("syntax error: expected ALL, READ or WRITE")
                privileges.add(w[0].lower())
                self.i += 1
                if not self.accept_type(_COMMA):
                    break
        self.expect("ON", message="syntax error: expected ON priv_level (db.*, db.tbl or *.*)")
        start = self.i
        if self.accept_type(TokenType.STAR):
            db = "*"
        else:
            db = self.name("a database name")[0]
        self.expect_type(TokenType.DOT, "syntax error: expected '.' in priv_level (db.*, db.tbl or *.*)")
        table: str | None
        if self.accept_type(TokenType.STAR):
            table = None
        elif db == "*":
            raise self.error("syntax error: priv_level *.tbl is not allowed: use *.* or db.tbl")
        else:
            table = self.name("a table name")[0]
        span = self.span(start, self.i)
        if self.at("WITH"):
            raise self.error(
                "GRANT ... WITH tag_condition (tag-based authorization of subtables) is not "
                "supported by tdweb: grant on the supertable or the database",
                code=Code.NOT_SUPPORTED,
            )
        self.expect(
            "FROM" if revoke else "TO",
            message=f"syntax error: expected {'FROM' if revoke else 'TO'} user_name",
        )
        user = self.name("a user name")[0]
        return ast.GrantStatement(
            revoke=revoke,
            privileges=tuple(sorted(privileges)),
            db=db,
            table=table,
            user=user,
            span=span,
        )

    def stream_command(self) -> ast.StreamCommand:
        t = self.toks[self.i]
        action = lexer.words(t)[0].lower()
        self.i += 1
        self.expect("STREAM", message=f"syntax error: expected STREAM after {action.upper()}")
        ie = self.if_exists()
        ignore = False
        if action in ("resume", "start"):
            ignore = bool(self.accept("IGNORE", "UNTREATED"))
        s = self.table_name("a stream name")
        return ast.StreamCommand(action=action, name=s.name, db=s.db, if_exists=ie, ignore_untreated=ignore)

    def recalculate(self) -> ast.RecalculateStream:
        self.expect("RECALCULATE")
        self.expect("STREAM", message="syntax error: expected STREAM after RECALCULATE")
        s = self.table_name("a stream name")
        self.expect("FROM", message="syntax error: expected FROM start_time")
        lo = self.i
        hi = self.scan(lo, lambda j: self.at_index(j, "TO"))
        start = self.constant(lo, hi, "a start time", after="start time")
        self.i = hi
        end = None
        if self.accept("TO"):
            end = self.constant(self.i, self.end, "an end time", after="end time")
            self.i = self.end
        return ast.RecalculateStream(name=s.name, db=s.db, start=start, end=end)

    # ------------------------------------------------------------------ streams

    def create_stream(self) -> ast.Statement:
        ine = self.if_not_exists()
        s = self.table_name("a stream name")
        w = self.word()
        if w and w[0] in _LEGACY_OPTION_WORDS:
            return self.legacy_stream(s, ine)
        if w and w[0] in _TRIGGER_WORDS:
            return self.stream_337(s, ine)
        raise self.error(
            "syntax error: expected stream options, INTO or a trigger type "
            "(PERIOD, INTERVAL, SLIDING, SESSION, STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW) "
            "after the stream name"
        )

    def legacy_stream(self, s: TableName, ine: bool) -> ast.CreateStreamLegacy:
        """Legacy CREATE STREAM (seed 000, "Creating Stream Computing")."""
        opts = ast.LegacyStreamOptions()
        while True:
            start = self.i
            t = self.tok()
            if t is None:
                break
            w = lexer.words(t)
            if w == ("TRIGGER",):
                key, label = "trigger", "TRIGGER"
            elif w == ("WATERMARK",):
                key, label = "watermark", "WATERMARK"
            elif w == ("DELETE_MARK",):
                key, label = "delete_mark", "DELETE_MARK"
            elif w == ("FILL_HISTORY",):
                key, label = "fill_history", "FILL_HISTORY"
            elif w == ("EVENT_TIME",):
                key, label = "event_time", "EVENT_TIME"
            elif w == ("IGNORE",):
                nxt = self.word(1)
                if nxt == ("EXPIRED",):
                    key, label = "ignore_expired", "IGNORE EXPIRED"
                elif nxt == ("UPDATE",):
                    key, label = "ignore_update", "IGNORE UPDATE"
                else:
                    raise self.error(
                        "syntax error: expected EXPIRED or UPDATE after IGNORE", self.tok(1) or None
                    )
            else:
                break
            if key in opts.spans:
                raise self.error(f"duplicate stream option {label}", t)
            self.i += len(label.split())
            if key == "trigger":
                mode_tok = self.tok()
                mode = lexer.words(mode_tok) if mode_tok is not None else ()
                if len(mode) != 1 or mode[0] not in _LEGACY_TRIGGERS:
                    raise self.error(
                        "syntax error: expected AT_ONCE, WINDOW_CLOSE, MAX_DELAY time, "
                        "FORCE_WINDOW_CLOSE or CONTINUOUS_WINDOW_CLOSE after TRIGGER"
                    )
                self.i += 1
                opts.trigger = mode[0]
                if mode[0] == "MAX_DELAY":
                    d_start = self.i
                    opts.max_delay = self.duration("a MAX_DELAY time")
                    opts.spans["max_delay"] = self.span(d_start, self.i)
                elif mode[0] == "CONTINUOUS_WINDOW_CLOSE" and self.at("RECALCULATE"):
                    r_start = self.i
                    self.i += 1
                    opts.recalculate = self.duration("a RECALCULATE time")
                    opts.spans["recalculate"] = self.span(r_start, self.i)
            elif key == "watermark":
                opts.watermark = self.duration("a WATERMARK time")
            elif key == "delete_mark":
                opts.delete_mark = self.duration("a DELETE_MARK time")
            elif key == "fill_history":
                opts.fill_history = self.flag01("FILL_HISTORY")
                opts.fill_history_async = bool(self.accept("ASYNC"))
            elif key == "event_time":
                opts.event_time = self.flag01("EVENT_TIME")
            elif key == "ignore_expired":
                opts.ignore_expired = self.flag01("IGNORE EXPIRED")
            else:
                opts.ignore_update = self.flag01("IGNORE UPDATE")
            opts.spans[key] = self.span(start, self.i)
        if not self.accept("INTO"):
            t = self.tok()
            if t is not None and lexer.words(t) == ("AS",):
                raise self.error("syntax error: expected INTO stb_name before AS", t)
            if t is not None and lexer.is_word(t):
                raise self.error(f"unexpected '{self.text_of(t)}': expected a stream option or INTO", t)
            raise self.error("syntax error: expected INTO after the stream options")
        into = self.table_name("an output supertable name")
        columns = self.output_columns() if self.is_type(_L) else None
        tags = self.tag_defs(with_expr=False) if self.accept("TAGS") else None
        subtable = None
        if self.accept("SUBTABLE"):
            subtable = self.paren_expression("SUBTABLE")
        self.expect("AS", message="syntax error: expected AS subquery")
        q_lo = self.i
        q_hi = self.scan(q_lo, lambda j: self.at_index(j, "NOTIFY"))
        if q_hi < self.end and self.toks[q_hi].token_type == _R:
            raise self.err_at("syntax error: unmatched ')'", q_hi)
        query = self.query(q_lo, q_hi)
        self.i = q_hi
        notify = self.legacy_notify() if self.at("NOTIFY") else None
        return ast.CreateStreamLegacy(
            name=s.name,
            db=s.db,
            if_not_exists=ine,
            options=opts,
            into=into,
            columns=columns,
            tags=tags,
            subtable=subtable,
            query=query,
            notify=notify,
            text=self.sql,
            span=Span(0, len(self.sql)),
        )

    def paren_expression(self, clause: str) -> exp.Expr:
        items, _, close = self.paren_items(f"after {clause} expression")
        if len(items) != 1:
            raise self.err_at(f"syntax error: {clause} takes one expression", items[1][0] if items else close)
        lo, hi = items[0]
        return self.sg(lo, hi, exp.Condition, f"a {clause} expression")

    def output_columns(self) -> list[ast.OutputColumn]:
        items, _, close = self.paren_items("after output column names")
        if not items:
            raise self.err_at("syntax error: expected an output column name", close)
        out = []
        for lo, hi in items:
            with self.bounded(hi):
                self.i = lo
                name = self.name("an output column name")[0]
                composite = bool(self.accept("COMPOSITE", "KEY") or self.accept("PRIMARY", "KEY"))
                if not self.done():
                    raise self.error("syntax error: expected ',' or ')' after output column name")
            out.append(
                ast.OutputColumn(
                    name=name, composite_key=composite, span=self.span(lo, hi) if lo < hi else None
                )
            )
        self.i = close + 1
        return out

    def tag_defs(self, with_expr: bool) -> list[ast.OutputTagDef]:
        """Legacy ``TAGS (name type [COMMENT 's'])`` or 3.3.7 ``TAGS (name type [COMMENT 's'] AS expr)``."""
        items, _, close = self.paren_items("after tag definitions")
        if not items:
            raise self.err_at("syntax error: expected a tag definition", close)
        out = []
        for lo, hi in items:
            with self.bounded(hi):
                self.i = lo
                name = self.name("a tag name")[0]
                tdtype = self.data_type()
                comment = self.string("a tag comment") if self.accept("COMMENT") else None
                expr = None
                if with_expr:
                    self.expect("AS", message="syntax error: expected AS expr in the tag definition")
                    expr = self.sg(self.i, hi, exp.Condition, "a tag value expression")
                    self.i = hi
                if not self.done():
                    raise self.error("syntax error: expected ',' or ')' after tag definition")
            out.append(
                ast.OutputTagDef(name=name, type=tdtype, expr=expr, comment=comment, span=self.span(lo, hi))
            )
        self.i = close + 1
        return out

    def url_list(self) -> list[str]:
        items, _, close = self.paren_items("after notification URLs")
        if not items:
            raise self.err_at("syntax error: expected a notification URL", close)
        urls = []
        for lo, hi in items:
            t = self.toks[lo] if lo < hi else None
            if t is None or hi != lo + 1 or t.token_type != TokenType.STRING:
                raise self.err_at("syntax error: expected a quoted notification URL", lo)
            urls.append(t.text)
        return urls

    def event_list(self, allowed: frozenset[str], what: str) -> list[str]:
        """``(ev | ev)`` or ``('EV', 'EV')``: quoted or bare names separated by ``|`` or ``,``."""
        items, _, close = self.paren_items(f"after {what}", seps=(_COMMA, _PIPE))
        if not items:
            raise self.err_at(f"syntax error: expected {what}", close)
        out: list[str] = []
        for lo, hi in items:
            t = self.toks[lo] if lo < hi else None
            ok = t is not None and hi == lo + 1 and (t.token_type == TokenType.STRING or lexer.is_word(t))
            name = t.text.upper() if ok and t is not None else ""
            if not ok or name not in allowed:
                text = self.sql[self.toks[lo].start : self.toks[hi - 1].end + 1] if lo < hi else ""
                raise self.err_at(
                    f"syntax error: unknown event type {text}, expected one of {', '.join(sorted(allowed))}",
                    lo,
                )
            if name in out:
                raise self.err_at(f"duplicate event type {name}", lo)
            out.append(name)
        return out

    def legacy_notify(self) -> ast.NotifyDef:
        """``NOTIFY (url, ...) ON (event, ...) [NOTIFY_HISTORY 0|1] [ON_FAILURE DROP|PAUSE]`` (seed 000)."""
        start = self.i
        self.expect("NOTIFY")
        urls = self.url_list()
        self.expect("ON", message="syntax error: expected ON (event_type, ...) after the notification URLs")
        events = self.event_list(_LEGACY_EVENTS, "event types")
        notify = ast.NotifyDef(urls=urls, events=events)
        seen: set[str] = set()
        while not self.done():
            t = self.tok()
            assert t is not None
            w = lexer.words(t)
            if w == ("NOTIFY_HISTORY",):
                if "history" in seen:
                    raise self.error("duplicate notification option NOTIFY_HISTORY", t)
                seen.add("history")
                self.i += 1
                notify.history = bool(self.flag01("NOTIFY_HISTORY"))
            elif w == ("ON_FAILURE",):
                if "failure" in seen:
                    raise self.error("duplicate notification option ON_FAILURE", t)
                seen.add("failure")
                self.i += 1
                mode = self.word()
                if mode not in (("DROP",), ("PAUSE",)):
                    raise self.error("syntax error: expected DROP or PAUSE after ON_FAILURE")
                self.i += 1
                notify.on_failure = mode[0]
            else:
                raise self.unexpected()
        notify.span = self.span(start, self.i)
        return notify

    def stream_337(self, s: TableName, ine: bool) -> ast.CreateStream337:
        """TDengine 3.3.7 CREATE STREAM (seed 002, "Create a Stream")."""
        trigger = self.trigger_337()
        from_table = self.table_name("a trigger table name") if self.accept("FROM") else None
        partition_by: list[ast.PartitionItem] = []
        if self.accept("PARTITION", "BY"):
            partition_by = self.partition_items(self.stop_words(_STREAM_CLAUSES))
        options = self.stream_options() if self.at("STREAM_OPTIONS") else ast.StreamOptions337()
        notify = self.notify_337() if self.at("NOTIFY") else None
        into = self.table_name("an output table name") if self.accept("INTO") else None
        output_subtable = None
        if self.accept("OUTPUT_SUBTABLE"):
            output_subtable = self.paren_expression("OUTPUT_SUBTABLE")
        columns = self.output_columns() if self.is_type(_L) else None
        tags = self.tag_defs(with_expr=True) if self.accept("TAGS") else None
        query = None
        if self.accept("AS"):
            query = self.query(self.i, self.end)
            self.i = self.end
        if not self.done():
            raise self.unexpected()
        return ast.CreateStream337(
            name=s.name,
            db=s.db,
            if_not_exists=ine,
            trigger=trigger,
            from_table=from_table,
            partition_by=partition_by,
            options=options,
            notify=notify,
            into=into,
            output_subtable=output_subtable,
            columns=columns,
            tags=tags,
            query=query,
            text=self.sql,
            span=Span(0, len(self.sql)),
        )

    def trigger_337(self) -> ast.Trigger337:
        start = self.i
        if self.accept("PERIOD"):
            items, _, _ = self.paren_items("after PERIOD arguments")
            if len(items) not in (1, 2):
                raise self.err_at("syntax error: PERIOD expects (period_time[, offset_time])", start)
            period = self.duration_range(*items[0], "a period")
            offset = self.duration_range(*items[1], "an offset") if len(items) == 2 else None
            return ast.PeriodTrigger(period=period, offset=offset)
        if self.at("INTERVAL") or self.at("SLIDING"):
            interval = interval_offset = None
            if self.accept("INTERVAL"):
                interval, interval_offset = self.interval_args()
                if not self.at("SLIDING"):
                    raise self.error(
                        "syntax error: expected SLIDING(...) after INTERVAL(...) in a stream trigger"
                    )
            s_start = self.i
            self.expect("SLIDING")
            items, _, _ = self.paren_items("after SLIDING arguments")
            if len(items) not in (1, 2):
                raise self.err_at("syntax error: SLIDING expects (sliding_val[, offset_time])", s_start)
            sliding = self.duration_range(*items[0], "a sliding time")
            sliding_offset = self.duration_range(*items[1], "an offset") if len(items) == 2 else None
            return ast.SlidingTrigger(
                sliding=sliding,
                interval=interval,
                interval_offset=interval_offset,
                sliding_offset=sliding_offset,
            )
        window = self.window_clause(stream_trigger=True)
        assert not isinstance(window, ast.IntervalWindow | ast.EkuiperWindow)
        return window

    def stream_options(self) -> ast.StreamOptions337:
        """``STREAM_OPTIONS(opt | opt ...)`` (seed 002, "Stream Processing Control Options")."""
        self.expect("STREAM_OPTIONS")
        items, _, close = self.paren_items("after stream options", seps=(_PIPE,))
        if not items:
            raise self.err_at("syntax error: expected a stream option", close)
        opts = ast.StreamOptions337()
        for lo, hi in items:
            if lo >= hi:
                raise self.err_at("syntax error: expected a stream option", lo)
            t = self.toks[lo]
            w = lexer.words(t)
            key = w[0] if len(w) == 1 else self.text_of(t)
            attr = key.lower()
            if (
                key not in _STREAM_FLAGS
                and key not in _STREAM_DURATIONS
                and key not in ("FILL_HISTORY", "FILL_HISTORY_FIRST", "PRE_FILTER", "EVENT_TYPE")
            ):
                raise self.err_at(f"unknown stream option {key}", lo)
            if attr in opts.spans:
                raise self.err_at(f"duplicate stream option {key}", lo)
            with self.bounded(hi):
                self.i = lo + 1
                if key in _STREAM_FLAGS:
                    setattr(opts, _STREAM_FLAGS[key], True)
                elif key in _STREAM_DURATIONS:
                    args, _, _ = self.paren_items(f"after {key} argument")
                    if len(args) != 1:
                        raise self.err_at(f"syntax error: {key} expects one duration", lo)
                    setattr(opts, _STREAM_DURATIONS[key], self.duration_range(*args[0], "a duration"))
                elif key in ("FILL_HISTORY", "FILL_HISTORY_FIRST"):
                    setattr(opts, attr, True)
                    if self.is_type(_L):
                        args, _, _ = self.paren_items(f"after {key} start time")
                        if len(args) != 1:
                            raise self.err_at(f"syntax error: {key} expects one start time", lo)
                        opts.fill_history_start = self.constant(*args[0], "a start time", after="start time")
                elif key == "PRE_FILTER":
                    args, _, _ = self.paren_items("after PRE_FILTER condition")
                    if len(args) != 1:
                        raise self.err_at("syntax error: PRE_FILTER expects one condition", lo)
                    opts.pre_filter = self.sg(*args[0], exp.Condition, "a PRE_FILTER condition")
                else:
                    opts.event_type = self.event_list(_LEGACY_EVENTS, "EVENT_TYPE event types")
                if not self.done():
                    raise self.error(f"syntax error: expected '|' or ')' after stream option {key}")
            opts.spans[attr] = self.span(lo, hi)
        self.i = close + 1
        return opts

    def notify_337(self) -> ast.NotifyDef:
        """``NOTIFY(url, ...) [ON (ev|ev)] [WHERE cond] [NOTIFY_OPTIONS(opt|opt)]`` (seed 002)."""
        start = self.i
        self.expect("NOTIFY")
        notify = ast.NotifyDef(urls=self.url_list())
        if self.accept("ON"):
            notify.events = self.event_list(_NOTIFY_EVENTS, "event types")
        if self.accept("WHERE"):
            lo = self.i
            hi = self.scan(lo, self.stop_words(_STREAM_CLAUSES))
            notify.where = self.sg(lo, hi, exp.Condition, "a notification condition")
            self.i = hi
        if self.accept("NOTIFY_OPTIONS"):
            items, _, close = self.paren_items("after notification options", seps=(_PIPE,))
            if not items:
                raise self.err_at("syntax error: expected NOTIFY_HISTORY or ON_FAILURE_PAUSE", close)
            seen: set[str] = set()
            for lo, hi in items:
                w = lexer.words(self.toks[lo]) if lo < hi else ()
                if hi != lo + 1 or w not in (("NOTIFY_HISTORY",), ("ON_FAILURE_PAUSE",)):
                    raise self.err_at("syntax error: expected NOTIFY_HISTORY or ON_FAILURE_PAUSE", lo)
                if w[0] in seen:
                    raise self.err_at(f"duplicate notification option {w[0]}", lo)
                seen.add(w[0])
                if w[0] == "NOTIFY_HISTORY":
                    notify.history = True
                else:
                    notify.on_failure = "PAUSE"
        notify.span = self.span(start, self.i)
        return notify

    # ------------------------------------------------------------------ windows

    def interval_args(self) -> tuple[Duration, Duration | None]:
        start = self.i - 1
        items, _, _ = self.paren_items("after INTERVAL arguments")
        if len(items) not in (1, 2):
            raise self.err_at("syntax error: INTERVAL expects (interval_val[, interval_offset])", start)
        interval = self.duration_range(*items[0], "an interval")
        offset = self.duration_range(*items[1], "an interval offset") if len(items) == 2 else None
        return interval, offset

    def true_for(self) -> Duration | None:
        if not self.accept("TRUE_FOR"):
            return None
        items, _, _ = self.paren_items("after TRUE_FOR duration")
        if len(items) != 1:
            raise self.error("syntax error: TRUE_FOR expects one duration", self.prev)
        return self.duration_range(*items[0], "a TRUE_FOR duration")

    def window_clause(self, stream_trigger: bool = False) -> ast.Window:
        """A window clause at the cursor (seed 000 window_clause; seed 002 trigger_type)."""
        start = self.i
        if self.accept("INTERVAL"):
            interval, offset = self.interval_args()
            sliding = None
            if self.accept("SLIDING"):
                items, _, _ = self.paren_items("after SLIDING argument")
                if len(items) != 1:
                    raise self.err_at("syntax error: SLIDING expects one duration", self.i - 1)
                sliding = self.duration_range(*items[0], "a sliding time")
            return ast.IntervalWindow(
                interval=interval, offset=offset, sliding=sliding, span=self.span(start, self.i)
            )
        if self.accept("SESSION"):
            items, _, _ = self.paren_items("after SESSION arguments")
            if len(items) != 2 or not self.item_is_name(*items[0]):
                raise self.err_at("syntax error: SESSION expects (ts_column, gap)", start)
            gap = self.duration_range(*items[1], "a session gap")
            return ast.SessionWindow(
                ts_column=self.toks[items[0][0]].text, gap=gap, span=self.span(start, self.i)
            )
        if self.accept("STATE_WINDOW"):
            items, _, _ = self.paren_items("after STATE_WINDOW column")
            if len(items) != 1:
                raise self.err_at("syntax error: STATE_WINDOW expects one column", start)
            expr = self.sg(*items[0], exp.Condition, "a state column")
            true_for = self.true_for()
            return ast.StateWindow(expr=expr, true_for=true_for, span=self.span(start, self.i))
        if self.accept("EVENT_WINDOW"):
            if self.is_type(_L):
                items, _, close = self.paren_items("after EVENT_WINDOW conditions")
                if len(items) != 1:
                    raise self.err_at(
                        "syntax error: EVENT_WINDOW expects (START WITH cond END WITH cond)", start
                    )
                with self.bounded(close):
                    self.i = items[0][0]
                    cond_start, cond_end = self.event_conditions()
                    if not self.done():
                        raise self.unexpected()
                self.i = close + 1
            else:
                cond_start, cond_end = self.event_conditions()
            true_for = self.true_for()
            return ast.EventWindow(
                start=cond_start, end=cond_end, true_for=true_for, span=self.span(start, self.i)
            )
        if self.accept("COUNT_WINDOW"):
            items, _, close = self.paren_items("after COUNT_WINDOW arguments")
            if not items:
                raise self.err_at("COUNT_WINDOW expects an integer count", close)
            count = self.integer_item(*items[0])
            if count is None:
                raise self.err_at("COUNT_WINDOW expects an integer count", items[0][0])
            count_sliding: int | None = None
            rest = items[1:]
            if rest and self.integer_item(*rest[0]) is not None:
                count_sliding = self.integer_item(*rest[0])
                rest = rest[1:]
            columns = []
            for lo, hi in rest:
                if lo >= hi or not self.item_is_name(lo, hi):
                    raise self.err_at("syntax error: COUNT_WINDOW expects column names after the counts", lo)
                columns.append(self.toks[lo].text)
            return ast.CountWindow(
                count=count, sliding=count_sliding, columns=tuple(columns), span=self.span(start, self.i)
            )
        if stream_trigger:
            raise self.error("syntax error: expected a trigger type")
        raise self.error("syntax error: expected a window clause")

    def event_conditions(self) -> tuple[exp.Expr, exp.Expr]:
        """``START WITH cond END WITH cond`` (the end condition runs to the bound or a clause)."""
        self.expect("START", "WITH", message="syntax error: expected START WITH after EVENT_WINDOW")
        lo = self.i
        hi = self.scan(lo, lambda j: self.at_index(j, "END", "WITH"))
        if hi >= self.end or not self.at_index(hi, "END", "WITH"):
            raise self.err_at("syntax error: expected END WITH after the EVENT_WINDOW start condition", hi)
        start_cond = self.sg(lo, hi, exp.Condition, "a start condition")
        self.i = hi + self._match(hi, ("END", "WITH"))
        lo = self.i
        hi = self.scan(lo, self.window_end_stop)
        end_cond = self.sg(lo, hi, exp.Condition, "an end condition")
        self.i = hi
        return start_cond, end_cond

    def window_end_stop(self, j: int) -> bool:
        return any(self._match(j, s) for s in _QUERY_STOP) or (
            self.at_index(j, "FILL") and j + 1 < self.end and self.toks[j + 1].token_type == _L
        )

    def fill_clause(self) -> ast.Fill:
        start = self.i
        self.expect("FILL")
        items, _, close = self.paren_items("after FILL arguments")
        if not items or not items[0][0] < items[0][1]:
            raise self.err_at("syntax error: FILL expects a mode", close)
        lo, hi = items[0]
        mode = lexer.words(self.toks[lo])
        if hi != lo + 1 or len(mode) != 1 or mode[0] not in _FILL_MODES:
            raise self.err_at(
                f"syntax error: unknown FILL mode, expected one of {', '.join(sorted(_FILL_MODES))}", lo
            )
        values = tuple(self.constant(a, b, "a fill value", after="fill value") for a, b in items[1:])
        return ast.Fill(mode=mode[0], values=values, span=self.span(start, self.i))

    def ekuiper_window(self, lo: int, hi: int) -> ast.EkuiperWindow:
        """``TUMBLINGWINDOW(ss, 10) [FILTER (WHERE c)] [OVER (WHEN c)]`` spanning ``[lo, hi)`` (seed 003)."""
        t = self.toks[lo]
        fname = t.text.upper()
        function = _EKUIPER_FUNCTIONS[fname]
        with self.bounded(hi):
            self.i = lo + 1
            items, _, _ = self.paren_items(f"after {fname} arguments")
            unit = None
            numbers = items
            if function != "count":
                if not items or not self.item_is_name(*items[0]):
                    raise self.err_at(
                        f"syntax error: {fname} expects a time unit (DD, HH, MI, SS, MS) first", lo
                    )
                unit = self.toks[items[0][0]].text.upper()
                if unit not in _EKUIPER_UNITS:
                    raise self.err_at(
                        f"syntax error: unknown time unit '{self.toks[items[0][0]].text}', "
                        "expected DD, HH, MI, SS or MS",
                        items[0][0],
                    )
                numbers = items[1:]
            args = []
            for a, b in numbers:
                n = self.integer_item(a, b)
                if n is None:
                    raise self.err_at(f"syntax error: {fname} expects integer arguments", a)
                args.append(n)
            if len(args) not in _EKUIPER_ARITY[function]:
                raise self.err_at(f"syntax error: wrong number of arguments for {fname}", lo)
            over_when = filter_ = None
            while not self.done():
                c = self.tok()
                assert c is not None
                if self.accept("FILTER") and filter_ is None:
                    inner, _, _ = self.paren_items("after FILTER condition")
                    if len(inner) != 1 or not self.at_index(inner[0][0], "WHERE"):
                        raise self.error("syntax error: expected FILTER (WHERE condition)", c)
                    filter_ = self.sg(inner[0][0] + 1, inner[0][1], exp.Condition, "a FILTER condition")
                elif self.accept("OVER") and over_when is None:
                    if function != "sliding":
                        raise self.error(
                            "syntax error: OVER (WHEN ...) is only allowed after SLIDINGWINDOW", c
                        )
                    inner, _, _ = self.paren_items("after OVER condition")
                    if len(inner) != 1 or not self.at_index(inner[0][0], "WHEN"):
                        raise self.error("syntax error: expected OVER (WHEN condition)", c)
                    over_when = self.sg(inner[0][0] + 1, inner[0][1], exp.Condition, "an OVER condition")
                else:
                    raise self.error(f"unexpected '{self.text_of(c)}'", c)
        return ast.EkuiperWindow(
            function=function,
            unit=unit,
            args=tuple(args),
            over_when=over_when,
            filter=filter_,
            span=self.span(lo, hi),
        )

    # ------------------------------------------------------------------ queries

    def starts_window(self, j: int) -> bool:
        w = lexer.words(self.toks[j])
        nxt_paren = j + 1 < self.end and self.toks[j + 1].token_type == _L
        if len(w) != 1:
            return False
        return (w[0] in _WINDOW_WORDS and nxt_paren) or w[0] == "EVENT_WINDOW"

    def starts_td_clause(self, j: int) -> bool:
        w = lexer.words(self.toks[j])
        nxt_paren = j + 1 < self.end and self.toks[j + 1].token_type == _L
        return (
            self.starts_window(j)
            or self._match(j, ("PARTITION", "BY")) > 0
            or (w in (("FILL",), ("SLIDING",)) and nxt_paren)
            or (len(w) == 1 and w[0] in _EKUIPER_FUNCTIONS and nxt_paren)
        )

    def check_nested(self, lo: int, hi: int) -> None:
        """Window clauses and PARTITION BY only in the outermost query (NOT_SUPPORTED otherwise)."""
        stack: list[bool] = []
        with self.bounded(hi):
            for j in range(lo, hi):
                tt = self.toks[j].token_type
                if tt == _L:
                    nxt = lexer.words(self.toks[j + 1]) if j + 1 < hi else ()
                    stack.append(nxt in (("SELECT",), ("WITH",)))
                elif tt == _R:
                    if stack:
                        stack.pop()
                elif stack and stack[-1] and self.starts_td_clause(j):
                    raise self.err_at(
                        "window clauses are supported in the outermost query only", j, code=Code.NOT_SUPPORTED
                    )

    def partition_items(self, stop: Callable[[int], bool]) -> list[ast.PartitionItem]:
        """``expr [[AS] alias], ...`` after PARTITION BY, up to a depth-0 ``stop`` word."""
        lo = self.i
        hi = self.scan(lo, stop)
        items: list[ast.PartitionItem] = []
        a = lo
        while True:
            b = self.scan(a, lambda j: self.toks[j].token_type == _COMMA or stop(j))
            b = min(b, hi)
            if a >= b:
                raise self.err_at("syntax error: expected a PARTITION BY expression", a)
            tree = self.sg(a, b, exp.Expr, "a PARTITION BY expression")
            alias = None
            expr_end = b
            if isinstance(tree, exp.Alias):
                alias = tree.alias
                tree = tree.this
                expr_end = b - 1
                if expr_end - 1 > a and lexer.words(self.toks[expr_end - 1]) == ("AS",):
                    expr_end -= 1
            span = self.span(a, expr_end)
            items.append(
                ast.PartitionItem(expr=tree, alias=alias, text=self.sql[span.start : span.end], span=span)
            )
            if b < hi and self.toks[b].token_type == _COMMA:
                a = b + 1
                continue
            break
        self.i = hi
        return items

    def query(self, lo: int, hi: int) -> ast.SelectQuery:
        """A TDengine query in tokens ``[lo, hi)`` split into its standard part and TDengine clauses."""
        if lo >= hi:
            raise self.err_at("syntax error: expected a query", lo)
        self.check_nested(lo, hi)
        removed: list[tuple[int, int]] = []
        partition: list[ast.PartitionItem] = []
        window: ast.Window | None = None
        fill: ast.Fill | None = None
        first_clause: int | None = None
        set_op: int | None = None
        with self.bounded(hi):
            depth = 0
            j = lo
            while j < hi:
                tt = self.toks[j].token_type
                if tt == _L:
                    depth += 1
                elif tt == _R:
                    depth -= 1
                    if depth < 0:
                        raise self.err_at("syntax error: unmatched ')'", j)
                elif depth == 0:
                    w = lexer.words(self.toks[j])
                    if w in (("UNION",), ("INTERSECT",), ("EXCEPT",)):
                        set_op = j
                    if first_clause is not None and w in (("FROM",), ("WHERE",)):
                        raise self.err_at(
                            f"unexpected '{self.text_of(self.toks[j])}' after "
                            "a PARTITION BY or window clause",
                            j,
                        )
                    self.i = j
                    if self.accept("PARTITION", "BY"):
                        if partition:
                            raise self.err_at("syntax error: duplicate PARTITION BY", j)
                        if window is not None:
                            raise self.err_at(
                                "syntax error: PARTITION BY must come before the window clause", j
                            )
                        partition = self.partition_items(self.window_end_stop_or_window)
                    elif self.starts_window(j):
                        if window is not None:
                            raise self.err_at("syntax error: only one window clause is allowed", j)
                        window = self.window_clause()
                    elif self.at("SLIDING") and self.is_type(_L, 1):
                        raise self.err_at("syntax error: SLIDING needs a preceding INTERVAL(...)", j)
                    elif self.at("FILL") and self.is_type(_L, 1):
                        if fill is not None:
                            raise self.err_at("syntax error: duplicate FILL", j)
                        fill = self.fill_clause()
                    if self.i > j:
                        removed.append((j, self.i))
                        if first_clause is None:
                            first_clause = j
                        j = self.i
                        continue
                j += 1
        if removed and set_op is not None:
            raise self.err_at(
                "window clauses and PARTITION BY are not supported with UNION/INTERSECT/EXCEPT",
                removed[0][0],
                code=Code.NOT_SUPPORTED,
            )
        ek = self.ekuiper_in_group_by(lo, hi, removed)
        if ek is not None:
            if window is not None:
                raise self.err_at(
                    "syntax error: an eKuiper window function cannot be combined with a window clause",
                    ek[1][0][0],
                )
            window = ek[0]
            removed.extend(ek[1])
        gone: set[int] = set()
        for a, b in removed:
            gone.update(range(a, b))
        kept = [self.toks[k] for k in range(lo, hi) if k not in gone]
        tree = self.sg_query(kept, lo, hi)
        span = self.span(lo, hi)
        return ast.SelectQuery(
            select=tree,
            partition_by=partition,
            window=window,
            fill=fill,
            item_texts=self.item_texts(lo, hi, tree),
            text=self.sql[span.start : span.end],
            span=span,
        )

    def window_end_stop_or_window(self, j: int) -> bool:
        return self.window_end_stop(j) or self.starts_window(j)

    def sg_query(self, kept: list[Token], lo: int, hi: int) -> exp.Expr:
        parser = DIALECT.parser()
        try:
            trees = parser.parse(kept, self.sql)
        except ParseError as e:
            raise self.translate(e, lo, hi, None) from None
        tree = trees[0] if len(trees) == 1 else None
        if not isinstance(tree, exp.Query):
            raise self.err_at("syntax error: expected a query", lo)
        return tree

    def ekuiper_in_group_by(
        self, lo: int, hi: int, removed: list[tuple[int, int]]
    ) -> tuple[ast.EkuiperWindow, list[tuple[int, int]]] | None:
        """Find an eKuiper window function in the depth-0 GROUP BY list (seed 003).

        Returns the window and the token ranges to cut (the function, its FILTER/OVER, one
        comma, and GROUP BY itself when the function was its only element).
        """
        gone = {k for a, b in removed for k in range(a, b)}
        with self.bounded(hi):
            group = None
            depth = 0
            for j in range(lo, hi):
                tt = self.toks[j].token_type
                if tt == _L:
                    depth += 1
                elif tt == _R:
                    depth -= 1
                elif depth == 0 and j not in gone and self._match(j, ("GROUP", "BY")):
                    group = j
                    break
            if group is None:
                return None
            g_lo = group + self._match(group, ("GROUP", "BY"))
            stops = frozenset(
                {("HAVING",), ("ORDER", "BY"), ("LIMIT",), ("UNION",), ("INTERSECT",), ("EXCEPT",)}
            )
            g_hi = self.scan(g_lo, lambda k: k in gone or any(self._match(k, s) for s in stops))
            items: list[tuple[int, int]] = []
            a = g_lo
            while a <= g_hi:
                b = min(self.scan(a, lambda k: self.toks[k].token_type == _COMMA), g_hi)
                items.append((a, b))
                a = b + 1
            found = None
            for idx, (a, b) in enumerate(items):
                w = lexer.words(self.toks[a]) if a < b else ()
                if (
                    len(w) == 1
                    and w[0] in _EKUIPER_FUNCTIONS
                    and a + 1 < b
                    and self.toks[a + 1].token_type == _L
                ):
                    if found is not None:
                        raise self.err_at("syntax error: only one window function is allowed in GROUP BY", a)
                    found = idx
            if found is None:
                return None
            a, b = items[found]
            window = self.ekuiper_window(a, b)
            if len(items) == 1:
                cut = [(group, b)]
            elif found > 0:
                cut = [(items[found - 1][1], b)]  # the comma before it
            else:
                cut = [(a, items[1][0])]  # it and the comma after it
            return window, cut

    def item_texts(self, lo: int, hi: int, tree: exp.Expr) -> list[str]:
        """The select-list items as written, without aliases (legacy output column names)."""
        selects = tree.selects if isinstance(tree, exp.Query) else []
        with self.bounded(hi):
            j = lo
            if self.at_index(j, "WITH"):
                j = self.scan(j, lambda k: self.at_index(k, "SELECT"))
            if j >= hi or not self.at_index(j, "SELECT"):
                return [p.sql(dialect=DIALECT) for p in selects]
            j += 1
            while j < hi and lexer.words(self.toks[j]) in (("DISTINCT",), ("ALL",)):
                j += 1
            end_ = self.scan(
                j,
                lambda k: (
                    lexer.words(self.toks[k])
                    in (("FROM",), ("WHERE",), ("UNION",), ("ORDER", "BY"), ("GROUP", "BY"), ("LIMIT",))
                ),
            )
            ranges: list[tuple[int, int]] = []
            a = j
            while a < end_:
                b = min(self.scan(a, lambda k: self.toks[k].token_type == _COMMA), end_)
                ranges.append((a, b))
                a = b + 1
        if len(ranges) != len(selects):
            return [p.sql(dialect=DIALECT) for p in selects]
        out = []
        for (a, b), proj in zip(ranges, selects, strict=True):
            if isinstance(proj, exp.Alias) and b - a >= 2:
                b -= 1
                if b - a >= 2 and lexer.words(self.toks[b - 1]) == ("AS",):
                    b -= 1
            out.append(self.sql[self.toks[a].start : self.toks[b - 1].end + 1])
        return out
