"""The statement parser's machinery: a cursor over one statement's tokens, positioned errors,
depth-0 scanning and the bridge to ``sqlglot``.

:class:`ParserBase` holds what every statement family (:mod:`.tables`, :mod:`.writes`,
:mod:`.introspection`, :mod:`.queries`, :mod:`.streams`, :mod:`.users`) is written with: the
tokens of one statement (TDengine dialect, :mod:`spark_workers.sql.dialect`; offsets relative to
the statement's text), a cursor ``i`` and a bound ``end``; errors whose offset is the offending
token's (``INCOMPLETE_SQL`` when the tokens run out); token ranges ``[lo, hi)`` handed to
``sqlglot`` as expressions or queries, its errors translated into ``SqlError`` at the same place;
and the small pieces statements share (names, ``[db.]table``, strings, durations, constants,
data types).
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
from spark_workers.sql import lexer
from spark_workers.sql.ast import Span, TableName
from spark_workers.sql.dialect import DIALECT
from spark_workers.tdtypes import TdType

L_PAREN = TokenType.L_PAREN
R_PAREN = TokenType.R_PAREN
COMMA = TokenType.COMMA
PIPE = TokenType.PIPE

# Keywords a misspelled word is compared with (``select * fromm t``).
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
    *lexer.WINDOW_KEYWORDS,
    "UNION",
    "JOIN",
    "DISTINCT",
)


class ParserBase:
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
            if tt == L_PAREN:
                depth += 1
            elif tt == R_PAREN:
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
        seps: tuple[TokenType, ...] = (COMMA,),
        validate: Callable[[int, int], object] | None = None,
    ) -> tuple[list[tuple[int, int]], int, int]:
        """``( item sep item ... )`` at the cursor.

        Returns:
            ``(items, open_index, close_index)``: item token ranges ``[lo, hi)`` (no items for
            ``()``); the cursor ends after ``)``. ``validate`` is run on the items found when
            the ``)`` is missing, so a better error inside them wins.
        """
        if not self.is_type(L_PAREN):
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
            if self.toks[j].token_type == R_PAREN:
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
            lit.meta["start"] = self.toks[lo].start  # where a tag value's error points (offset_of)
            return exp.Neg(this=lit) if neg else lit
        if neg:
            return None
        if tt == TokenType.STRING:
            lit = exp.Literal.string(t.text)
            lit.meta["start"] = t.start
            lit.meta["td_raw"] = self.sql[t.start + 1 : t.end]  # as written: VARBINARY reads '\\x..' as hex
            return lit
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

    def type_scale(self, type_name: str) -> int | None:
        """The ``, s`` of ``DECIMAL(p, s)`` (None when absent; TDengine SQL manual "Data Types")."""
        if not self.accept_type(COMMA):
            return None
        n = self.tok()
        if n is None or n.token_type != TokenType.NUMBER or not n.text.isdigit():
            raise self.error(f"syntax error: expected the scale of {type_name}")
        self.i += 1
        return int(n.text)

    def data_type(self) -> TdType:
        t = self.tok()
        if t is None or not lexer.is_word(t) or " " in t.text:
            raise self.error("syntax error: expected a data type")
        self.i += 1
        unsigned = bool(self.accept("UNSIGNED"))
        length: int | None = None
        if self.accept_type(L_PAREN):
            n = self.tok()
            if n is None or n.token_type != TokenType.NUMBER or not n.text.isdigit():
                raise self.error(f"syntax error: expected the length of {t.text}")
            length = int(n.text)
            self.i += 1
            scale = self.type_scale(t.text)
            self.expect_type(R_PAREN, f"syntax error: expected ')' after the length of {t.text}")
        else:
            scale = None
        try:
            return TdType.parse(t.text, length, unsigned, scale)
        except SqlError as e:
            raise e.at(self.sql, t.start) from None
