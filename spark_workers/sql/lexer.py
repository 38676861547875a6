"""Token-level pre-pass of the TDengine SQL parser.

TDengine writes a few things ``sqlglot`` does not know. They are handled here, once, on the
tokens of the TDengine dialect (:mod:`spark_workers.sql.dialect`) and on the trees ``sqlglot``
builds from them:

- 3.3.7 placeholders (seed 002, "Placeholders"): ``%%trows`` becomes the identifier
  ``__td_trows``, ``%%tbname`` becomes ``__td_tbname`` and ``%%1``, ``%%2``... become
  ``__td_p1``, ``__td_p2``...; the merged token keeps the character range of the original text so
  errors still point into the user's SQL;
- duration literals (``10s``, ``1h``, ``500a``; TDengine SQL manual, "time units") are tokenized by
  ``sqlglot`` as one identifier-like ``VAR`` token and end up as columns; :func:`normalize`
  turns them into ``exp.Interval`` nodes with ``meta["td_duration"]`` holding the literal;
- ``now`` / ``now()`` become ``exp.CurrentTimestamp``; ``today()`` is ``exp.Anonymous("today")``.

:func:`tokenize` also bounds what one text may ask of the parser (:mod:`spark_workers.limits`):
its length, its number of statements and the nesting depth of its expressions, so that 500 nested
parentheses are a positioned syntax error instead of a ``RecursionError`` in ``sqlglot``.

Tokens carry ``start``/``end`` character offsets (``end`` inclusive, as in ``sqlglot``) into the
text they were made from; the statement parser relies on that to report errors in the original
text.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from spark_workers.errors import Code, SqlError
from spark_workers.limits import current_limits

# TDengine duration unit letter -> sqlglot interval unit (and back).
UNIT_NAMES: dict[str, str] = {
    "b": "NANOSECOND",
    "u": "MICROSECOND",
    "a": "MILLISECOND",
    "s": "SECOND",
    "m": "MINUTE",
    "h": "HOUR",
    "d": "DAY",
    "w": "WEEK",
    "n": "MONTH",
    "y": "YEAR",
}
UNIT_LETTERS: dict[str, str] = {v: k for k, v in UNIT_NAMES.items()}

DURATION_RE = re.compile(r"^(\d+)([buasmhdwny])$", re.IGNORECASE)

# Identifiers the placeholders become (seed 002, "Placeholders").
TROWS = "__td_trows"
TBNAME = "__td_tbname"
PARTITION_PREFIX = "__td_p"
# TDengine's window clause keywords (docs: "Time-Series Extensions"), in the order they are listed
WINDOW_KEYWORDS = ("INTERVAL", "SLIDING", "SESSION", "STATE_WINDOW", "EVENT_WINDOW", "COUNT_WINDOW", "FILL")
_PLACEHOLDER_RE = re.compile(r"^__td_(trows|tbname|p(\d+))$")

# Token types whose text is not a bare word (a keyword or an unquoted name).
_NOT_WORDS = frozenset(
    {
        TokenType.STRING,
        TokenType.IDENTIFIER,
        TokenType.NUMBER,
        TokenType.BIT_STRING,
        TokenType.HEX_STRING,
        TokenType.BYTE_STRING,
        TokenType.NATIONAL_STRING,
        TokenType.RAW_STRING,
        TokenType.HEREDOC_STRING,
    }
)
_WORD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*( [A-Za-z_][A-Za-z0-9_]*)*$")


def is_word(tok: Token) -> bool:
    """True if ``tok`` is a bare word: a keyword or an unquoted name (``sqlglot`` may merge
    multi-word keywords such as ``PARTITION BY`` into one token)."""
    return tok.token_type not in _NOT_WORDS and bool(_WORD_RE.match(tok.text))


def words(tok: Token) -> tuple[str, ...]:
    """Upper-case words of a bare-word token (``("PARTITION", "BY")``), ``()`` for others."""
    if not is_word(tok):
        return ()
    return tuple(tok.text.upper().split())


def placeholder_name(text: str) -> str | None:
    """Identifier for a placeholder name written after ``%%``: ``trows``, ``tbname`` or a
    1-based partition column number; None if it is not a placeholder (seed 002)."""
    low = text.lower()
    if low in ("trows", "tbname"):
        return f"__td_{low}"
    if text.isdigit() and int(text) >= 1:
        return f"{PARTITION_PREFIX}{int(text)}"
    return None


def placeholder_text(identifier: str) -> str | None:
    """Inverse of :func:`placeholder_name`: ``__td_trows`` -> ``%%trows``; None for others."""
    m = _PLACEHOLDER_RE.match(identifier)
    if not m:
        return None
    return f"%%{m.group(2) or m.group(1)}"


def merge_placeholders(tokens: list[Token]) -> list[Token]:
    """Merge ``%`` ``%`` ``name`` token triples into one ``VAR`` token named after the placeholder.

    Args:
        tokens: tokens of the TDengine dialect tokenizer (``%`` is ``TokenType.MOD``).

    Returns:
        A new list; a merged token spans the whole ``%%name`` text (``start`` of the first ``%``,
        ``end`` of the name).

    Raises:
        SqlError: ``%%`` followed directly by something that is not ``trows``, ``tbname`` or a
            positive integer (``offset`` set, ``sql`` not: callers anchor it with ``.at``).
    """
    out: list[Token] = []
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if (
            tok.token_type == TokenType.MOD
            and i + 2 < n
            and tokens[i + 1].token_type == TokenType.MOD
            and tokens[i + 1].start == tok.end + 1
            and tokens[i + 2].start == tokens[i + 1].end + 1
        ):
            name_tok = tokens[i + 2]
            ident = placeholder_name(name_tok.text) if name_tok.token_type != TokenType.STRING else None
            if ident is None:
                raise SqlError(
                    f"unknown placeholder %%{name_tok.text}: expected %%trows, %%tbname or %%1, %%2...",
                    offset=tok.start,
                )
            out.append(
                Token(
                    TokenType.VAR,
                    ident,
                    line=name_tok.line,
                    col=name_tok.col,
                    start=tok.start,
                    end=name_tok.end,
                    comments=list(tok.comments) + list(name_tok.comments),
                )
            )
            i += 3
            continue
        out.append(tok)
        i += 1
    return out


# MATCH / NMATCH (TDengine SQL manual, "Data Querying", "Regular Expression Filtering"): after an
# operand and before a string, they are the regular-expression operators
_OPERAND_END = frozenset(
    {TokenType.VAR, TokenType.IDENTIFIER, TokenType.R_PAREN, TokenType.STRING, TokenType.NUMBER}
)


def regex_operators(tokens: list[Token]) -> list[Token]:
    """``a MATCH 'p'`` -> ``a RLIKE 'p'`` and ``a NMATCH 'p'`` -> ``a NOT RLIKE 'p'`` (the new tokens
    keep the operator's character range and text); the MySQL spellings ``REGEXP`` / ``RLIKE``,
    which are not TDengine's, become plain words (a syntax error where an operator is expected).
    ``sqlglot`` parses RLIKE into ``exp.RegexpLike``, which therefore only comes from MATCH."""
    out: list[Token] = []
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.RLIKE:
            out.append(Token(TokenType.VAR, tok.text, tok.line, tok.col, tok.start, tok.end, tok.comments))
            continue
        word = tok.text.upper() if tok.token_type == TokenType.VAR else ""
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if (
            word in ("MATCH", "NMATCH")
            and out
            and out[-1].token_type in _OPERAND_END
            and nxt is not None
            and nxt.token_type in (TokenType.STRING, TokenType.NULL, *_OPERAND_END - {TokenType.R_PAREN})
        ):
            if word == "NMATCH":
                out.append(Token(TokenType.NOT, tok.text, tok.line, tok.col, tok.start, tok.end))
            out.append(Token(TokenType.RLIKE, tok.text, tok.line, tok.col, tok.start, tok.end, tok.comments))
            continue
        out.append(tok)
    return out


def tokenize(sql: str, tokenizer: Tokenizer) -> list[Token]:
    """Tokenize TDengine SQL with the TDengine dialect (placeholders merged).

    Args:
        sql: the text.
        tokenizer: a TDengine dialect tokenizer (``DIALECT.tokenizer()``).

    Returns:
        ``sqlglot`` tokens whose ``start``/``end`` (inclusive) are offsets into ``sql``.

    Raises:
        SqlError: unterminated string or quoted name, unknown ``%%`` placeholder; ``offset`` is
            where the problem starts in ``sql``. Also the limits of :func:`check_tokens`.
    """
    limits = current_limits()
    if len(sql) > limits.max_sql_chars:
        raise SqlError(
            f"SQL statement too long: more than {limits.max_sql_chars:,} characters (TDWEB_SQL_MAX_LENGTH)",
            sql=sql,
            offset=limits.max_sql_chars,
            code=Code.EXCEED_SQL_LIMIT,
        )
    try:
        tokens = tokenizer.tokenize(sql)
    except TokenError as e:
        offset = _unterminated_offset(sql)
        raise SqlError(
            "syntax error: unterminated string or quoted name",
            sql=sql,
            offset=offset if offset is not None else (e.start or 0),
        ) from None
    except SqlError as e:
        raise e.at(sql, e.offset) from None
    check_tokens(tokens, sql)
    return tokens


_UNARY = frozenset({TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE})


def check_tokens(tokens: list[Token], sql: str) -> None:
    """Bound the work a text asks for before any parser recurses into it.

    Rules (limits of :func:`spark_workers.limits.current_limits`): at most ``max_statements``
    non-empty ``;``-separated statements; expressions nest at most ``max_depth`` levels, a level
    being an open parenthesis, an open ``CASE`` or one operator of a run of unary operators
    (``NOT``, ``-``, ``+``, ``~``). Cost: one pass over the tokens.

    Raises:
        SqlError: ``0x0219`` (SQL statement too long) at the first statement past the limit;
            ``0x2600`` (syntax error) at the token that nests too deep.
    """
    limits = current_limits()
    statements = 0
    in_statement = False
    stack: list[TokenType] = []  # open parentheses and CASEs
    run = 0
    for tok in tokens:
        tt = tok.token_type
        if tt == TokenType.SEMICOLON:
            in_statement = False
            stack.clear()
            run = 0
            continue
        if not in_statement:
            in_statement = True
            statements += 1
            if statements > limits.max_statements:
                raise SqlError(
                    f"SQL statement too long: more than {limits.max_statements} statements in one "
                    "request (TDWEB_SQL_MAX_STATEMENTS)",
                    sql=sql,
                    offset=tok.start,
                    code=Code.EXCEED_SQL_LIMIT,
                )
        if tt in _UNARY:
            run += 1
        else:
            run = 0
        if tt in (TokenType.L_PAREN, TokenType.CASE):
            stack.append(tt)
        elif tt == TokenType.R_PAREN:
            while stack and stack.pop() != TokenType.L_PAREN:
                pass  # a CASE left open inside the parentheses
        elif tt == TokenType.END and stack and stack[-1] == TokenType.CASE:
            stack.pop()  # END WITH of EVENT_WINDOW closes nothing
        if len(stack) + run > limits.max_depth:
            raise SqlError(
                f"syntax error: expression nested too deeply (more than {limits.max_depth} levels of "
                "parentheses, CASE and unary operators; TDWEB_SQL_MAX_DEPTH)",
                sql=sql,
                offset=tok.start,
                code=Code.SYNTAX_ERROR,
            )


def _unterminated_offset(sql: str) -> int | None:
    """Offset of the opening quote of an unterminated string/quoted name (MySQL quoting rules)."""
    i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            j = i + 1
            while j < n:
                if sql[j] == "\\" and c != "`":
                    j += 2
                    continue
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                return i
            i = j + 1
            continue
        if sql.startswith("--", i) or c == "#":
            nl = sql.find("\n", i)
            i = n if nl < 0 else nl + 1
            continue
        if sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        i += 1
    return None


def duration_interval(text: str) -> exp.Interval:
    """``exp.Interval`` for a duration literal: ``"10s"`` -> ``Interval('10', SECOND)`` with
    ``meta["td_duration"] == "10s"`` (unit lower-cased). Raises ``SqlError`` for other text."""
    m = DURATION_RE.match(text)
    if not m:
        raise SqlError(f"invalid duration {text!r}", code=Code.WRONG_VALUE_TYPE)
    value, unit = m.group(1), m.group(2).lower()
    node = exp.Interval(this=exp.Literal.string(value), unit=exp.Var(this=UNIT_NAMES[unit]))
    node.meta["td_duration"] = f"{value}{unit}"
    return node


def interval_literal(node: exp.Interval) -> str | None:
    """The TDengine literal of an ``exp.Interval`` (``1h``), or None if it has none.

    ``meta["td_duration"]`` wins; otherwise an integer amount with a unit TDengine knows
    (``INTERVAL 1 DAY`` -> ``1d``).
    """
    literal = node.meta_get("td_duration")
    if literal:
        return str(literal)
    this = node.this
    unit = node.args.get("unit")
    if not isinstance(this, exp.Literal) or unit is None:
        return None
    amount = this.name
    letter = UNIT_LETTERS.get(unit.name.upper())
    if letter is None or not amount.isdigit():
        return None
    return f"{int(amount)}{letter}"


def _fix_node(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier):
        if node.this.quoted:
            return node
        name = node.this.name
        if name.lower() == "now":
            return exp.CurrentTimestamp()
        if DURATION_RE.match(name):
            return duration_interval(name)
        return node
    if isinstance(node, exp.Anonymous):
        fname = str(node.this).lower()
        if fname == "now" and not node.expressions:
            return exp.CurrentTimestamp()
        if fname == "today":
            node.set("this", "today")
    return node


def normalize(tree: exp.Expr) -> exp.Expr:
    """Rewrite a freshly parsed tree in place into tdweb's TDengine form.

    Unquoted, unqualified columns spelled like durations become ``exp.Interval`` (with
    ``meta["td_duration"]``), ``now``/``now()`` becomes ``exp.CurrentTimestamp`` and ``today()``
    is named ``today``. Returns the (possibly replaced) root.
    """
    return tree.transform(_fix_node, copy=False)
