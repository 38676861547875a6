"""A query over a subquery in FROM, merged into one query over the subquery's table.

Window queries and legacy streams run over one table (``planner.plan_window``,
``planner.plan_projection``); ``SELECT ... FROM (SELECT ... FROM t WHERE c) ... INTERVAL(...)``
is the same query over ``t`` with the subquery's projections substituted for the names the outer
query reads and its WHERE joined to the outer WHERE with AND (the subquery's rows are exactly the
rows of ``t`` passing ``c``, each projected). Nested subqueries merge from the inside out.

Nothing of the subquery is dropped: what cannot be merged exactly (GROUP BY, HAVING, aggregates,
DISTINCT, LIMIT/OFFSET, joins, set operations, window functions) is refused with an error that
names it. ORDER BY without LIMIT orders rows the window engine orders by timestamp anyway, so it
changes no result. PARTITION BY and window clauses inside a subquery are refused by the parser.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlglot import exp

from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.scope import func_name

# pseudo columns of the outer query itself (windows, the row timestamp): not the subquery's names
_PSEUDO = frozenset(
    {"_wstart", "_wend", "_wduration", "_rowts", "_c0", "_irowts", "_qstart", "_qend", "_qduration"}
)

_REFUSED = (
    ("group", "GROUP BY"),
    ("having", "HAVING"),
    ("limit", "LIMIT"),
    ("offset", "OFFSET"),
    ("distinct", "DISTINCT"),
    ("joins", "a JOIN"),
    ("qualify", "QUALIFY"),
    ("with_", "WITH"),
)


def _error(message: str, node: exp.Expr | None, sql: str) -> SqlError:
    return SqlError(
        message, sql=sql, offset=offset_of(node) if node is not None else None, code=Code.NOT_SUPPORTED
    )


def merge_subquery(q: ast.SelectQuery, sql: str, aggregate: object = None) -> ast.SelectQuery:
    """``q`` with a subquery in its FROM merged into it (``q`` itself when FROM is a table).

    Args:
        q: the parsed query (outer PARTITION BY and window clause included).
        sql: the statement text (errors are positioned in it).
        aggregate: a predicate telling aggregate calls (``planner.aggregate_call``), to refuse
            aggregates inside the subquery.

    Returns:
        A SelectQuery over the innermost table: select items, WHERE, PARTITION BY items and window
        expressions read the subquery's expressions in place of its output names.

    Raises:
        SqlError: NOT_SUPPORTED naming a subquery clause that cannot be merged exactly;
            INVALID_COLUMN for a name the subquery does not output.
    """
    sel = q.select
    if not isinstance(sel, exp.Select):
        return q
    frm = sel.args.get("from_")
    if frm is None or not isinstance(frm.this, exp.Subquery):
        return q
    outer = sel.copy()
    names, star = _inner_select(outer.args["from_"].this, sql, aggregate)
    inner = outer.args["from_"].this.this
    alias = outer.args["from_"].this.alias_or_name
    subst = _Substitution(names, star, alias, sql)
    texts = list(q.item_texts)
    items: list[exp.Expr] = []
    item_texts: list[str] = []
    for i, item in enumerate(outer.expressions):
        if isinstance(item, exp.Star) and not star:
            for name, e in names.items():
                items.append(exp.alias_(e.copy(), name, quoted=True))
                item_texts.append(name)
            continue
        items.append(subst.item(item))
        item_texts.append(texts[i] if i < len(texts) else item.sql())
    outer.set("expressions", items)
    where = outer.args.get("where")
    inner_where = inner.args.get("where")
    merged = [inner_where.this.copy()] if inner_where is not None else []
    if where is not None:
        merged.append(subst.expr(where.this))
    if merged:
        cond = merged[0] if len(merged) == 1 else exp.and_(exp.paren(merged[0]), exp.paren(merged[1]))
        outer.set("where", exp.Where(this=cond))
    outer.set("from_", inner.args["from_"].copy())
    for key in ("order",):
        if outer.args.get(key) is not None:
            outer.set(key, outer.args[key].transform(subst.visit))
    merged_q = dataclasses.replace(
        q,
        select=outer,
        partition_by=[dataclasses.replace(p, expr=subst.expr(p.expr)) for p in q.partition_by],
        window=_window(q.window, subst),
        item_texts=item_texts,
    )
    return merge_subquery(merged_q, sql, aggregate)


def _inner_select(sub: exp.Subquery, sql: str, aggregate: object) -> tuple[dict[str, exp.Expr], bool]:
    """The subquery's output names -> expressions, and whether it selects ``*`` (every column of
    its table under its own name)."""
    inner = sub.this
    if not isinstance(inner, exp.Select):
        raise _error(
            "a subquery in FROM must be a plain SELECT (no UNION) to be read by this query", sub, sql
        )
    if isinstance((inner.args.get("from_") or exp.From()).this, exp.Subquery):
        # the inner FROM is itself a subquery: merge from the inside out
        nested = merge_subquery(ast.SelectQuery(select=inner), sql, aggregate)
        assert isinstance(nested.select, exp.Select)
        sub.set("this", nested.select)
        inner = nested.select
    for key, what in _REFUSED:
        node = inner.args.get(key)
        if node:
            at = node[0] if isinstance(node, list) else node
            raise _error(
                f"{what} in a subquery cannot be merged into this query (its rows would change): "
                "write the query over the table",
                at if isinstance(at, exp.Expr) else sub,
                sql,
            )
    names: dict[str, exp.Expr] = {}
    star = False
    for item in inner.expressions:
        for n in item.walk():
            if (callable(aggregate) and aggregate(n)) or isinstance(n, exp.Window):
                raise _error(
                    f"the aggregate {func_name(n) or 'function'} in a subquery cannot be merged into "
                    "this query: write the aggregation in the outer query",
                    n,
                    sql,
                )
        if isinstance(item, exp.Star):
            star = True
        elif isinstance(item, exp.Alias):
            names[item.alias.lower()] = item.this
        elif isinstance(item, exp.Column):
            names[item.name.lower()] = item
        else:
            names[item.sql().lower()] = item
    return names, star


class _Substitution:
    """Replaces the subquery's output names in outer expressions by its expressions."""

    def __init__(self, names: dict[str, exp.Expr], star: bool, alias: str, sql: str) -> None:
        self.names = names
        self.star = star
        self.alias = alias.lower() if alias else ""
        self.sql = sql

    def visit(self, n: exp.Expr) -> exp.Expr:
        if not isinstance(n, exp.Column) or (n.table and n.table.lower() != self.alias):
            return n
        if not n.table and n.name.lower() in _PSEUDO and n.name.lower() not in self.names:
            return n
        e = self.names.get(n.name.lower())
        if e is not None:
            return exp.paren(e.copy()) if not isinstance(e, exp.Column | exp.Literal | exp.Func) else e.copy()
        if self.star:
            return exp.column(n.this.copy()) if n.table else n
        raise SqlError(
            f"invalid column name {n.name}: the subquery outputs {', '.join(self.names) or 'no such name'}",
            sql=self.sql,
            offset=offset_of(n),
            code=Code.INVALID_COLUMN,
        )

    def expr(self, e: exp.Expr) -> exp.Expr:
        return e.copy().transform(self.visit)

    def item(self, item: exp.Expr) -> exp.Expr:
        """A select item; a bare name keeps its name as the output name."""
        if isinstance(item, exp.Column):
            new = self.expr(item)
            same = isinstance(new, exp.Column) and new.name.lower() == item.name.lower()
            return new if same else exp.alias_(new, item.name, quoted=True)
        return self.expr(item)


def _window(w: ast.Window | None, subst: _Substitution) -> ast.Window | None:
    """The window clause with its expressions read through the subquery."""
    if w is None:
        return None
    changes: dict[str, Any] = {}
    for name in ("expr", "start", "end", "over_when", "filter"):
        v = getattr(w, name, None)
        if isinstance(v, exp.Expr):
            changes[name] = subst.expr(v)
    if isinstance(w, ast.SessionWindow):
        e = subst.names.get(w.ts_column.lower())
        if e is not None:
            if not isinstance(e, exp.Column):
                raise _error(
                    f"SESSION needs the primary timestamp column; {w.ts_column} is an expression",
                    e,
                    subst.sql,
                )
            changes["ts_column"] = e.name
    if isinstance(w, ast.CountWindow) and w.columns:
        cols = []
        for c in w.columns:
            e = subst.names.get(c.lower())
            if e is not None and not isinstance(e, exp.Column):
                raise _error(
                    f"COUNT_WINDOW needs columns; {c} is an expression in the subquery", e, subst.sql
                )
            cols.append(e.name if isinstance(e, exp.Column) else c)
        changes["columns"] = tuple(cols)
    return dataclasses.replace(w, **changes) if changes else w
