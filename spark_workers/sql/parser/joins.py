"""TDengine's join words: ``LEFT|RIGHT SEMI|ANTI|ASOF|WINDOW JOIN``, ``WINDOW_OFFSET(start, end)``
and ``JLIMIT n`` (TDengine SQL manual, "Join Queries").

Standard SQL has none of them, so they are cut out of a query's tokens before ``sqlglot`` reads the
rest (which then sees ``LEFT JOIN`` / ``RIGHT JOIN``) and put back on the ``exp.Join`` nodes as an
:class:`~spark_workers.sql.ast.JoinSpec` in ``meta["td_join"]``. The query layer
(``spark_workers/query/joins.py``) checks and runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.tokens import TokenType

from spark_workers.duration import Duration
from spark_workers.errors import Code
from spark_workers.sql import ast, lexer
from spark_workers.sql.parser.base import L_PAREN, R_PAREN, ParserBase

_SUBTYPES = frozenset({"SEMI", "ANTI", "ASOF", "WINDOW"})
_SIDES = frozenset({"LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "NATURAL"})


@dataclass
class _Join:
    """A JOIN keyword found in the tokens: its token index, the words before it, what follows."""

    at: int
    first: int  # index of the first join word (LEFT ...)
    kind: str = ""
    side: str = ""
    jlimit: int | None = None
    jlimit_at: tuple[int, int] | None = None
    offset: tuple[Duration, Duration] | None = None
    offset_at: tuple[int, int] | None = None


@dataclass
class JoinWords:
    """What :func:`join_words` found: the token ranges to cut and the joins by JOIN offset."""

    cut: list[tuple[int, int]] = field(default_factory=list)
    joins: list[_Join] = field(default_factory=list)


def join_words(p: ParserBase, lo: int, hi: int) -> JoinWords:
    """Find TDengine's join words in tokens ``[lo, hi)`` at every parenthesis depth.

    Raises:
        SqlError: a subtype without LEFT/RIGHT (``ASOF JOIN``, ``FULL SEMI JOIN``), WINDOW JOIN
            without WINDOW_OFFSET, WINDOW_OFFSET or JLIMIT after another join (syntax errors);
            JLIMIT on a join other than ASOF/WINDOW (``0x2664``).
    """
    found = JoinWords()
    levels: list[_Join | None] = [None]  # the last JOIN at each parenthesis depth
    with p.bounded(hi):
        j = lo
        while j < hi:
            tt = p.toks[j].token_type
            w = lexer.words(p.toks[j])
            if tt == L_PAREN:
                levels.append(None)
            elif tt == R_PAREN:
                if len(levels) > 1:
                    levels.pop()
            elif w == ("JOIN",):
                jn = _join_at(p, j, found)
                levels[-1] = jn
                found.joins.append(jn)
            elif w == ("WINDOW_OFFSET",) and _is_open(p, j + 1):
                j = _window_offset(p, j, levels[-1], found)
                continue
            elif w == ("JLIMIT",) and levels[-1] is not None and _is_count(p, j + 1):
                j = _jlimit(p, j, levels[-1], found)
                continue
            j += 1
    for jn in found.joins:
        if jn.kind == "window" and jn.offset is None:
            raise p.err_at(
                "syntax error: WINDOW JOIN needs WINDOW_OFFSET(start_offset, end_offset)", jn.first
            )
    return found


def _is_open(p: ParserBase, j: int) -> bool:
    return j < p.end and p.toks[j].token_type == L_PAREN


def _join_at(p: ParserBase, j: int, found: JoinWords) -> _Join:
    """The join whose JOIN keyword is token ``j``: its side and subtype word (cut)."""
    first = j
    words: list[tuple[int, str]] = []
    k = j - 1
    while k >= 0 and len(lexer.words(p.toks[k])) == 1 and lexer.words(p.toks[k])[0] in _SIDES | _SUBTYPES:
        words.insert(0, (k, lexer.words(p.toks[k])[0]))
        first = k
        k -= 1
    jn = _Join(at=j, first=first)
    names = [w for _, w in words]
    jn.side = next((w for w in names if w in ("LEFT", "RIGHT", "FULL")), "")
    subs = [(k, w) for k, w in words if w in _SUBTYPES]
    if subs:
        k, w = subs[0]
        if len(subs) > 1 or jn.side not in ("LEFT", "RIGHT") or names != [jn.side, w]:
            raise p.err_at(f"syntax error: {w} JOIN is written LEFT {w} JOIN or RIGHT {w} JOIN", first)
        jn.kind = w.lower()
        found.cut.append((k, k + 1))
    return jn


def _window_offset(p: ParserBase, j: int, jn: _Join | None, found: JoinWords) -> int:
    """``WINDOW_OFFSET(start, end)`` at token ``j``; returns the index after it."""
    if jn is None or jn.kind != "window":
        raise p.err_at("syntax error: WINDOW_OFFSET belongs to a LEFT/RIGHT WINDOW JOIN", j)
    if jn.offset is not None:
        raise p.err_at("syntax error: duplicate WINDOW_OFFSET", j)
    p.i = j + 1
    items, _, close = p.paren_items("after WINDOW_OFFSET arguments")
    if len(items) != 2:
        raise p.err_at("syntax error: WINDOW_OFFSET expects (start_offset, end_offset)", j)
    jn.offset = (_signed_duration(p, *items[0]), _signed_duration(p, *items[1]))
    jn.offset_at = (j, close + 1)
    found.cut.append((j, close + 1))
    return close + 1


def _signed_duration(p: ParserBase, lo: int, hi: int) -> Duration:
    sign = 1
    if lo < hi and p.toks[lo].token_type in (TokenType.DASH, TokenType.PLUS):
        sign = -1 if p.toks[lo].token_type == TokenType.DASH else 1
        lo += 1
    d = p.duration_range(lo, hi, "a window offset")
    return Duration(sign * d.value, d.unit)


def _is_count(p: ParserBase, j: int) -> bool:
    """An integer (or ``-`` and one) at token ``j``: ``JLIMIT`` is the clause only before one."""
    if j < p.end and p.toks[j].token_type == TokenType.DASH:
        j += 1
    return j < p.end and p.toks[j].token_type == TokenType.NUMBER


def _jlimit(p: ParserBase, j: int, jn: _Join, found: JoinWords) -> int:
    """``JLIMIT n`` at token ``j`` after join ``jn``; returns the index after it."""
    if jn.kind not in ("asof", "window"):
        raise p.err_at(
            "Not supported join since 'JLIMIT is only for ASOF and WINDOW joins'",
            j,
            code=Code.NOT_SUPPORT_JOIN,
        )
    if jn.jlimit is not None:
        raise p.err_at("syntax error: duplicate JLIMIT", j)
    k = j + 1
    sign = 1
    if k < p.end and p.toks[k].token_type == TokenType.DASH:
        sign, k = -1, k + 1
    t = p.toks[k] if k < p.end else None
    if t is None or t.token_type != TokenType.NUMBER or not t.text.isdigit():
        raise p.err_at("syntax error: JLIMIT expects an integer", k)
    jn.jlimit = sign * int(t.text)
    jn.jlimit_at = (j, k + 1)
    found.cut.append((j, k + 1))
    return k + 1


def attach_joins(p: ParserBase, tree: exp.Expr, found: JoinWords) -> None:
    """Put each join's :class:`~spark_workers.sql.ast.JoinSpec` on its ``exp.Join`` node (the join
    whose JOIN keyword is the last one before the node's right-hand table)."""
    specs = [(p.toks[jn.at].start, jn) for jn in found.joins]
    if not specs:
        return
    starts = sorted(p.toks[jn.at].start for jn in found.joins)
    by_start = dict(specs)
    for node in tree.find_all(exp.Join):
        off = ast.offset_of(node.this)
        if off is None:
            continue
        before = [s for s in starts if s < off]
        jn = by_start.get(before[-1]) if before else None
        if jn is None:
            continue
        node.meta[ast.TD_JOIN] = ast.join_meta(
            ast.JoinSpec(
                kind=jn.kind,
                side=jn.side,
                jlimit=jn.jlimit,
                window_offset=jn.offset,
                span=p.span(jn.first, jn.at + 1),
                jlimit_span=p.span(*jn.jlimit_at) if jn.jlimit_at else None,
                offset_span=p.span(*jn.offset_at) if jn.offset_at else None,
            )
        )
