"""tdweb's TDengine dialect for ``sqlglot`` (expressions and the standard part of SELECT).

Based on MySQL, which TDengine's expression syntax follows: backtick-quoted names, both
``'single'`` and ``"double"`` quoted strings are string literals, ``LIMIT n, m``. On top of it:

- the tokenizer reads ``MATCH`` / ``NMATCH`` as the regular-expression operators
  (:func:`spark_workers.sql.lexer.regex_operators`; ``exp.RegexpLike``, printed back as MATCH);
- the tokenizer merges 3.3.7 placeholders (``%%trows``, ``%%tbname``, ``%%1``; seed 002) into
  identifiers (:func:`spark_workers.sql.lexer.merge_placeholders`) and keeps ``TIMESTAMP`` a plain
  timestamp type;
- the parser rewrites duration literals (``10s``) into ``exp.Interval`` nodes and ``now`` into
  ``exp.CurrentTimestamp`` (:func:`spark_workers.sql.lexer.normalize`); its errors carry the
  character offset of the offending token (``e.errors[0]["td_offset"]``) and whether the tokens
  ran out (``"td_at_end"``);
- the generator prints those nodes back as TDengine writes them (``1h``, ``now``, ``%%trows``) and
  keeps TDengine's type names in casts.

The statement level (CREATE/INSERT/streams...) is not parsed here but by
:mod:`spark_workers.sql.parser`, which hands expressions and queries to this dialect.
"""

from __future__ import annotations

import typing
from typing import Any

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ParseError
from sqlglot.generators.mysql import MySQLGenerator
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokens import Token, TokenType

from spark_workers.sql import lexer
from spark_workers.sql.ast import join_spec


class TDengine(MySQL):
    """The TDengine SQL dialect (registered in ``sqlglot`` as ``"tdengine"``)."""

    # TDengine keeps the backslash of ``\x`` in a string constant (parser ``trimString``, 3.1+):
    # ``'\x6162'`` is the text ``\x6162``, which VARBINARY reads as hex bytes
    UNESCAPED_SEQUENCES = {**MySQL.UNESCAPED_SEQUENCES, "\\x": "\\x"}

    class Tokenizer(MySQL.Tokenizer):
        # CONTAINS (JSON tags) takes the token type of PostgreSQL's range operator -|-, which
        # TDengine does not have (its parser entry is replaced below)
        KEYWORDS = {
            **{k: v for k, v in MySQL.Tokenizer.KEYWORDS.items() if v != TokenType.ADJACENT},
            "TIMESTAMP": TokenType.TIMESTAMP,
            "CONTAINS": TokenType.ADJACENT,
        }
        # Never swallow the rest of a statement into one COMMAND token (SHOW, REPLACE...).
        COMMANDS: typing.ClassVar[set[TokenType]] = set()

        def tokenize(self, sql: str) -> list[Token]:
            """Tokens of ``sql`` with ``%%`` placeholders merged (see :mod:`.lexer`)."""
            return lexer.regex_operators(lexer.merge_placeholders(super().tokenize(sql)))

    class Parser(MySQLParser):
        # JSON tags (TDengine SQL manual, "JSON Type"): ``tag->'key'`` keeps its key as the string
        # written (no JSON path: a key may hold '.' or '$'); ``tag CONTAINS 'key'``
        COLUMN_OPERATORS = {
            **MySQLParser.COLUMN_OPERATORS,
            TokenType.ARROW: lambda self, this, key: self.expression(
                exp.JSONExtract(this=this, expression=key)
            ),
        }
        # TDengine has no lambdas: ``f(tag->'key')`` is a JSON value given to ``f``
        LAMBDAS: typing.ClassVar[dict] = {}
        RANGE_PARSERS = {
            **MySQLParser.RANGE_PARSERS,
            TokenType.ADJACENT: lambda self, this: self.expression(
                exp.JSONBContains(this=this, expression=self._parse_bitwise())
            ),
        }
        # ``unique(x)`` is TDengine's selection function, not a constraint keyword
        FUNC_TOKENS: typing.ClassVar[set[TokenType]] = {*MySQLParser.FUNC_TOKENS, TokenType.UNIQUE}

        def raise_error(self, message: str, token: Token | None = None) -> None:
            """Raise (or record) a ``ParseError`` that also carries the token's offset."""
            at_end = not token and not self._curr
            where = token or self._curr or self._prev
            n_before = len(self.errors)
            try:
                if token:
                    super().raise_error(message, token)
                else:
                    super().raise_error(message)
            except ParseError as e:
                _annotate(e.errors[0], where, at_end)
                raise
            if len(self.errors) > n_before:
                _annotate(self.errors[-1].errors[0], where, at_end)

        def parse(self, raw_tokens: list[Token], sql: str) -> list[exp.Expr | None]:
            return [
                lexer.normalize(tree) if tree is not None else None for tree in super().parse(raw_tokens, sql)
            ]

        def parse_into(
            self,
            expression_types: Any,
            raw_tokens: list[Token],
            sql: str | None = None,
        ) -> list[exp.Expr | None]:
            return [
                lexer.normalize(tree) if tree is not None else None
                for tree in super().parse_into(expression_types, raw_tokens, sql)
            ]

    class Generator(MySQLGenerator):
        TRANSFORMS = {
            **MySQLGenerator.TRANSFORMS,
            exp.CurrentTimestamp: lambda self, e: "now",
            exp.JSONExtract: lambda self, e: f"{self.sql(e, 'this')}->{self.sql(e, 'expression')}",
            exp.JSONBContains: lambda self, e: f"{self.sql(e, 'this')} contains {self.sql(e, 'expression')}",
            exp.RegexpLike: lambda self, e: self.binary(e, "MATCH"),
        }
        TYPE_MAPPING = {
            **MySQLGenerator.TYPE_MAPPING,
            exp.DType.TIMESTAMP: "TIMESTAMP",
            exp.DType.TIMESTAMPTZ: "TIMESTAMP",
            exp.DType.NCHAR: "NCHAR",
        }
        # TDengine casts take its own type names (MySQL would print SIGNED/CHAR).
        CAST_MAPPING: typing.ClassVar[dict] = {}
        TIMESTAMP_FUNC_TYPES: typing.ClassVar[set] = set()
        VARCHAR_REQUIRES_SIZE = False

        def interval_sql(self, expression: exp.Interval) -> str:
            literal = lexer.interval_literal(expression)
            return literal if literal is not None else super().interval_sql(expression)

        def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
            """TDengine's join words kept by the parser (``ast.JoinSpec``) written back:
            ``LEFT ASOF JOIN t ON ... JLIMIT 2``, ``... WINDOW_OFFSET(-1s, 1s)``."""
            spec = join_spec(expression)
            if not spec.kind and spec.jlimit is None and spec.window_offset is None:
                return super().join_sql(expression, join_op)
            text = super().join_sql(
                expression, f"{spec.side} {spec.kind.upper()} JOIN" if spec.kind else join_op
            )
            if spec.window_offset is not None:
                text += f" WINDOW_OFFSET({spec.window_offset[0]}, {spec.window_offset[1]})"
            if spec.jlimit is not None:
                text += f" JLIMIT {spec.jlimit}"
            return text

        def identifier_sql(self, expression: exp.Identifier) -> str:
            if not expression.quoted:
                placeholder = lexer.placeholder_text(expression.name)
                if placeholder is not None:
                    return placeholder
            return super().identifier_sql(expression)


def _annotate(info: dict[str, Any], token: Token | None, at_end: bool) -> None:
    info["td_offset"] = token.start if token else 0
    info["td_end"] = token.end + 1 if token else 0
    info["td_text"] = token.text if token else ""
    info["td_at_end"] = at_end


DIALECT = TDengine()
