"""Queries: a SELECT's standard part for ``sqlglot`` and TDengine's own clauses, cut out of it.

TDengine's query clauses (PARTITION BY, INTERVAL/SESSION/STATE_WINDOW/EVENT_WINDOW/COUNT_WINDOW,
FILL; seed 000 "window_clause") and eKuiper window functions in GROUP BY (seed 003) are found at
parenthesis depth 0 of the query, cut out of the token list, and parsed here; the tokens left are
the standard query ``sqlglot`` parses. The window clauses double as 3.3.7 stream trigger types
(seed 002 "trigger_type").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast, lexer
from spark_workers.sql.dialect import DIALECT
from spark_workers.sql.parser.base import COMMA, L_PAREN, R_PAREN, ParserBase
from spark_workers.sql.parser.joins import attach_joins, join_words

_WINDOW_WORDS = frozenset({"INTERVAL", "SESSION", "STATE_WINDOW", "COUNT_WINDOW"})
# Seed 004 (the blog's second example, "With a sliding window, aggregating the streams of all
# sub-tables in the supertable": CREATE STREAM current_stream ... INTEVAL (5s) SLIDING (1s);) prints
# INTERVAL so. Accepted as written, as INTERVAL, only where a query's window clause keyword can be
# (a word followed by "(" after the query's FROM, at its depth; see ``starts_window``); never as a
# 3.3.7 stream trigger type, which seed 004 does not use.
_SEED_004_INTERVAL = "INTEVAL"
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
_FILL_MODES = frozenset({"NONE", "NULL", "PREV", "NEXT", "LINEAR", "VALUE", "NULL_F", "VALUE_F", "NEAR"})
# INTERP's clause keywords (TDengine SQL manual, "Data Querying", interp_clause)
_INTERP_WORDS = frozenset({"RANGE", "EVERY"})


# the order of a query's clauses in TDengine's SELECT grammar (sql.y: from, where, partition by,
# window and fill, group by, having, order by, slimit and limit); equal ranks may come in any order
_CLAUSE_RANK = {
    "FROM": 1,
    "WHERE": 2,
    "PARTITION": 3,
    "INTERVAL": 4,
    "SESSION": 4,
    "STATE_WINDOW": 4,
    "EVENT_WINDOW": 4,
    "COUNT_WINDOW": 4,
    "SLIDING": 4,
    "FILL": 4,
    "RANGE": 4,
    "EVERY": 4,
    "GROUP": 5,
    "HAVING": 6,
    "ORDER": 7,
    "SLIMIT": 8,
    "SOFFSET": 8,
    "LIMIT": 8,
    "OFFSET": 8,
}


@dataclass
class _Clauses:
    """TDengine clauses found at depth 0 of a query.

    Attributes:
        removed: token ranges ``[a, b)`` they cover, in order (cut before ``sqlglot`` sees the query).
        partition: PARTITION BY items.
        window: the window clause.
        fill: the FILL clause.
        set_op: index of the last depth-0 UNION/INTERSECT/EXCEPT.
    """

    removed: list[tuple[int, int]] = field(default_factory=list)
    partition: list[ast.PartitionItem] = field(default_factory=list)
    window: ast.Window | None = None
    fill: ast.Fill | None = None
    set_op: int | None = None
    range_: tuple[exp.Expr, exp.Expr | None, Duration | None, ast.Span] | None = None
    every: tuple[Duration, ast.Span] | None = None
    slimit: tuple[int | None, int | None, ast.Span] | None = None


class QueriesParser(ParserBase):
    """SELECT with TDengine's clauses; the window clauses are also stream trigger types."""

    def starts_window(self, j: int) -> bool:
        w = lexer.words(self.toks[j])
        nxt_paren = j + 1 < self.end and self.toks[j + 1].token_type == L_PAREN
        if len(w) != 1:
            return False
        if w[0] == _SEED_004_INTERVAL:  # seed 004's INTERVAL, only after FROM
            return nxt_paren and self.after_from(j)
        return (w[0] in _WINDOW_WORDS and nxt_paren) or w[0] == "EVENT_WINDOW"

    def after_from(self, j: int) -> bool:
        """Whether a FROM precedes token ``j`` at ``j``'s parenthesis depth, in the same
        parentheses and after the last SELECT there (the window clause position of a query;
        seed 004's ``INTEVAL``)."""
        depth = 0
        for k in range(j - 1, -1, -1):
            tt = self.toks[k].token_type
            if tt == R_PAREN:
                depth += 1
            elif tt == L_PAREN:
                if depth == 0:
                    return False
                depth -= 1
            elif depth == 0 and lexer.words(self.toks[k]) in (("FROM",), ("SELECT",)):
                return lexer.words(self.toks[k]) == ("FROM",)
        return False

    def starts_td_clause(self, j: int) -> bool:
        w = lexer.words(self.toks[j])
        nxt_paren = j + 1 < self.end and self.toks[j + 1].token_type == L_PAREN
        return (
            self.starts_window(j)
            or self._match(j, ("PARTITION", "BY")) > 0
            or (w in (("FILL",), ("SLIDING",)) and nxt_paren)
            or (len(w) == 1 and w[0] in _EKUIPER_FUNCTIONS and nxt_paren)
            or self.starts_interp(j)
        )

    def check_nested(self, lo: int, hi: int) -> None:
        """Window clauses and PARTITION BY only in the outermost query (NOT_SUPPORTED otherwise)."""
        stack: list[bool] = []
        with self.bounded(hi):
            for j in range(lo, hi):
                tt = self.toks[j].token_type
                if tt == L_PAREN:
                    nxt = lexer.words(self.toks[j + 1]) if j + 1 < hi else ()
                    stack.append(nxt in (("SELECT",), ("WITH",)))
                elif tt == R_PAREN:
                    if stack:
                        stack.pop()
                elif stack and stack[-1] and self.starts_td_clause(j):
                    what = "PARTITION BY" if self._match(j, ("PARTITION", "BY")) > 0 else "window clauses"
                    what = "RANGE / EVERY" if self.starts_interp(j) else what
                    raise self.err_at(
                        f"{what} in a subquery: PARTITION BY and window clauses are supported in the "
                        "outermost query only"
                        if not self.starts_interp(j)
                        else f"{what} in a subquery: INTERP is supported in the outermost query only",
                        j,
                        code=Code.NOT_SUPPORTED,
                    )

    def partition_items(self, stop: Callable[[int], bool]) -> list[ast.PartitionItem]:
        """``expr [[AS] alias], ...`` after PARTITION BY, up to a depth-0 ``stop`` word."""
        lo = self.i
        hi = self.scan(lo, stop)
        items: list[ast.PartitionItem] = []
        a = lo
        while True:
            b = self.scan(a, lambda j: self.toks[j].token_type == COMMA or stop(j))
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
            if b < hi and self.toks[b].token_type == COMMA:
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
        clauses = self.td_clauses(lo, hi)
        removed = clauses.removed
        if removed and clauses.set_op is not None:
            raise self.err_at(
                "window clauses and PARTITION BY are not supported with UNION/INTERSECT/EXCEPT",
                removed[0][0],
                code=Code.NOT_SUPPORTED,
            )
        window = clauses.window
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
        join_found = join_words(self, lo, hi)  # TDengine's join words (parser/joins.py)
        for a, b in [*removed, *join_found.cut]:
            gone.update(range(a, b))
        kept = [self.toks[k] for k in range(lo, hi) if k not in gone]
        tree = self.sg_query(kept, lo, hi)
        attach_joins(self, tree, join_found)
        span = self.span(lo, hi)
        slimit, soffset, slimit_span = clauses.slimit or (None, None, None)
        return ast.SelectQuery(
            select=tree,
            partition_by=clauses.partition,
            window=window,
            fill=clauses.fill,
            item_texts=self.item_texts(lo, hi, tree),
            text=self.sql[span.start : span.end],
            span=span,
            interp=self.interp_of(clauses),
            slimit=slimit,
            soffset=soffset,
            slimit_span=slimit_span,
        )

    def td_clauses(self, lo: int, hi: int) -> _Clauses:
        """The TDengine clauses at parenthesis depth 0 of the query in tokens ``[lo, hi)``
        (PARTITION BY, the window clause, FILL), parsed, with the token ranges they cover."""
        clauses = _Clauses()
        rank = 0  # of the last depth-0 clause keyword seen (_CLAUSE_RANK)
        with self.bounded(hi):
            depth = 0
            j = lo
            while j < hi:
                tt = self.toks[j].token_type
                if tt == L_PAREN:
                    depth += 1
                elif tt == R_PAREN:
                    depth -= 1
                    if depth < 0:
                        raise self.err_at("syntax error: unmatched ')'", j)
                elif depth == 0:
                    rank = self.clause_order(j, rank, clauses)
                    self.i = j
                    self.td_clause_at(j, clauses)
                    if self.i > j:
                        clauses.removed.append((j, self.i))
                        j = self.i
                        continue
                j += 1
        return clauses

    def clause_order(self, j: int, rank: int, clauses: _Clauses) -> int:
        """The clause rank after depth-0 token ``j``; a clause keyword written after one that
        must follow it (``LIMIT 3 WHERE ...``, ``ORDER BY ts PARTITION BY ...``) is TDengine's
        syntax error at the keyword (TDengine's SELECT grammar orders FROM, WHERE, PARTITION BY,
        the window clause and FILL, GROUP BY, HAVING, ORDER BY, SLIMIT/LIMIT)."""
        w = lexer.words(self.toks[j])
        if not w:
            return rank
        if w[0] in ("UNION", "INTERSECT", "EXCEPT"):
            return 0
        r = _CLAUSE_RANK.get(w[0])
        if r is None or (w[0] in _INTERP_WORDS and not self.starts_interp(j)):
            return rank
        if r < rank and not (clauses.removed and w[0] in ("FROM", "WHERE")):  # td_clause_at says it
            raise self.err_at(
                f"syntax error near '{self.text_of(self.toks[j])}': the clause is out of place", j
            )
        return max(rank, r)

    def td_clause_at(self, j: int, clauses: _Clauses) -> None:
        """Parse the TDengine clause starting at depth-0 token ``j`` (the cursor) into ``clauses``;
        the cursor stays at ``j`` when no TDengine clause starts there."""
        w = lexer.words(self.toks[j])
        if w in (("UNION",), ("INTERSECT",), ("EXCEPT",)):
            clauses.set_op = j
        if clauses.removed and w in (("FROM",), ("WHERE",)):
            raise self.err_at(
                f"unexpected '{self.text_of(self.toks[j])}' after a PARTITION BY or window clause",
                j,
            )
        if self.accept("PARTITION", "BY"):
            if clauses.partition:
                raise self.err_at("syntax error: duplicate PARTITION BY", j)
            if clauses.window is not None:
                raise self.err_at("syntax error: PARTITION BY must come before the window clause", j)
            clauses.partition = self.partition_items(self.window_end_stop_or_window)
        elif self.starts_window(j):
            if clauses.window is not None:
                raise self.err_at("syntax error: only one window clause is allowed", j)
            clauses.window = self.window_clause()
        elif self.at("SLIDING") and self.is_type(L_PAREN, 1):
            raise self.err_at("syntax error: SLIDING needs a preceding INTERVAL(...)", j)
        elif self.at("FILL") and self.is_type(L_PAREN, 1):
            if clauses.fill is not None:
                raise self.err_at("syntax error: duplicate FILL", j)
            clauses.fill = self.fill_clause()
        else:
            self.interp_or_slimit_at(j, clauses)

    def window_end_stop_or_window(self, j: int) -> bool:
        return self.window_end_stop(j) or self.starts_window(j) or self.starts_interp(j)

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
                if tt == L_PAREN:
                    depth += 1
                elif tt == R_PAREN:
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
                b = min(self.scan(a, lambda k: self.toks[k].token_type == COMMA), g_hi)
                items.append((a, b))
                a = b + 1
            found = None
            for idx, (a, b) in enumerate(items):
                w = lexer.words(self.toks[a]) if a < b else ()
                if (
                    len(w) == 1
                    and w[0] in _EKUIPER_FUNCTIONS
                    and a + 1 < b
                    and self.toks[a + 1].token_type == L_PAREN
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
                b = min(self.scan(a, lambda k: self.toks[k].token_type == COMMA), end_)
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
        lo, hi = items[0]
        t = self.toks[lo] if lo < hi else None
        if t is not None and hi == lo + 1 and t.token_type == TokenType.NUMBER and t.text.isdigit():
            # TRUE_FOR(2999): a bare integer is milliseconds (TDengine's own tests write it so)
            return Duration(int(t.text), "a")
        if t is not None and hi == lo + 1 and t.token_type == TokenType.STRING:
            try:  # TRUE_FOR('3001a'): the duration quoted
                return Duration.parse(t.text)
            except SqlError as e:
                raise e.at(self.sql, t.start) from None
        return self.duration_range(lo, hi, "a TRUE_FOR duration")

    def window_clause(self, stream_trigger: bool = False) -> ast.Window:
        """A window clause at the cursor (seed 000 window_clause; seed 002 trigger_type)."""
        start = self.i
        if self.accept("INTERVAL") or (not stream_trigger and self.accept(_SEED_004_INTERVAL)):
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
            if self.is_type(L_PAREN):
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
            self.at_index(j, "FILL") and j + 1 < self.end and self.toks[j + 1].token_type == L_PAREN
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

    # ------------------------------------------------------------------ INTERP clause, SLIMIT

    def starts_interp(self, j: int) -> bool:
        """``RANGE(`` / ``EVERY(`` after the query's FROM, at its depth (INTERP's clause)."""
        w = lexer.words(self.toks[j])
        return (
            len(w) == 1
            and w[0] in _INTERP_WORDS
            and j + 1 < self.end
            and self.toks[j + 1].token_type == L_PAREN
            and self.after_from(j)
        )

    def interp_or_slimit_at(self, j: int, clauses: _Clauses) -> None:
        """Parse ``RANGE(...)``, ``EVERY(...)`` or ``SLIMIT n [SOFFSET m]`` / ``SLIMIT m, n``
        at depth-0 token ``j`` into ``clauses`` (the cursor stays at ``j`` for anything else).
        TDengine SQL manual, "Data Querying": interp_clause, SLIMIT."""
        if self.starts_interp(j):
            if self.at("RANGE"):
                if clauses.range_ is not None:
                    raise self.err_at("syntax error: duplicate RANGE", j)
                clauses.range_ = self.range_clause()
            else:
                if clauses.every is not None:
                    raise self.err_at("syntax error: duplicate EVERY", j)
                self.i += 1
                items, _, close = self.paren_items("after EVERY duration")
                if len(items) != 1:
                    raise self.err_at("syntax error: EVERY expects one duration", close if not items else j)
                clauses.every = (self.duration_range(*items[0], "an EVERY duration"), self.span(j, self.i))
        elif self.at("SLIMIT") or self.at("SOFFSET"):
            if clauses.slimit is not None or self.at("SOFFSET"):
                raise self.err_at(f"syntax error near '{self.text_of(self.toks[j])}'", j)
            clauses.slimit = self.slimit_clause(j)

    def range_clause(self) -> tuple[exp.Expr, exp.Expr | None, Duration | None, ast.Span]:
        """``RANGE(ts)``, ``RANGE(start, end)``, ``RANGE(ts, surrounding)`` or ``RANGE(start, end,
        surrounding)``: timestamps are constant expressions, the surrounding time a duration
        literal (TDengine 3.3.4.9+; a quoted or bare number there is "Invalid range interval")."""
        start = self.i
        self.expect("RANGE")
        items, _, close = self.paren_items("after RANGE times")
        if not items or len(items) > 3:
            raise self.err_at("syntax error: RANGE expects (start[, end][, surrounding_time])", start)
        exprs = [self.sg(a, b, exp.Expr, "a RANGE time") if a < b else None for a, b in items]
        for (a, _b), e in zip(items, exprs, strict=True):
            if e is None:
                raise self.err_at("syntax error: expected a RANGE time", a)
        surround: Duration | None = None
        last = exprs[-1]
        if len(items) == 3 or (len(items) == 2 and isinstance(last, exp.Interval)):
            a, b = items[-1]
            if not isinstance(last, exp.Interval):
                raise self.err_at(
                    "Invalid range interval: the surrounding time is a duration literal such as 10s",
                    a,
                    code=Code.INVALID_INTERP_CLAUSE,
                )
            surround = self.duration_range(a, b, "a surrounding time")
            exprs = exprs[:-1]
        for (a, _b), e in zip(items, exprs, strict=False):
            if isinstance(e, exp.Interval):
                raise self.err_at("Invalid range interval: a RANGE time is expected here", a)
        end = exprs[1] if len(exprs) == 2 else None
        assert exprs[0] is not None
        return exprs[0], end, surround, self.span(start, close + 1)

    def slimit_clause(self, j: int) -> tuple[int | None, int | None, ast.Span]:
        """``SLIMIT n [SOFFSET m]`` or ``SLIMIT m, n`` (offset, count) at the cursor."""
        self.expect("SLIMIT")

        def number(what: str) -> int:
            t = self.tok()
            if t is None or t.token_type != TokenType.NUMBER or not t.text.isdigit():
                raise self.error(f"syntax error: SLIMIT expects {what}")
            self.i += 1
            return int(t.text)

        limit = number("a non-negative integer")
        offset: int | None = None
        if self.accept_type(COMMA):
            offset, limit = limit, number("a non-negative integer after the comma")
        elif self.accept("SOFFSET"):
            offset = number("a non-negative integer after SOFFSET")
        return limit, offset, self.span(j, self.i)

    def interp_of(self, clauses: _Clauses) -> ast.InterpClause | None:
        """The INTERP clause of a query's RANGE / EVERY (None without either)."""
        if clauses.range_ is None and clauses.every is None:
            return None
        every, every_span = clauses.every or (None, None)
        if clauses.range_ is None:
            assert every_span is not None
            raise SqlError(
                "Missing RANGE clause, EVERY clause or FILL clause",
                sql=self.sql,
                offset=every_span.start,
                code=Code.INVALID_INTERP_CLAUSE,
            )
        start, end, surround, range_span = clauses.range_
        return ast.InterpClause(start, end, surround, every, range_span, every_span)
