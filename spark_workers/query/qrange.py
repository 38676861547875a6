"""``_qstart`` / ``_qend`` / ``_qduration``: the query's time range (TDengine SQL manual, "Data
Querying", Pseudo Columns: "_qstart and _qend represent the query time range input by the user,
i.e., the time range limited by the primary key timestamp condition in the WHERE clause. If there
is no valid primary key timestamp condition in the WHERE clause, the time range is [-2^63,
2^63-1]. _qstart and _qend cannot be used in the WHERE clause.").

The range is read from the WHERE condition's top-level AND terms on the primary timestamp
(``query.fill.where_range``: ``ts >= a``, ``ts < b``, ``ts BETWEEN a AND b``, ``ts = t``), in the
database precision; the pseudo columns become constants of the query before it is planned:
``_qstart`` / ``_qend`` TIMESTAMP (an unbounded side is the BIGINT -2^63 or 2^63-1, typed
TIMESTAMP in the result), ``_qduration`` BIGINT ``_qend - _qstart`` (clamped to 2^63-1).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from spark_workers.errors import Code, SqlError
from spark_workers.query.fill import where_range
from spark_workers.sql.ast import offset_of
from spark_workers.sql.dialect import DIALECT
from spark_workers.sql.scope import Scope

NAMES = frozenset({"_qstart", "_qend", "_qduration"})
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _pseudo(n: exp.Expr) -> str | None:
    if isinstance(n, exp.Column) and not n.table and n.name.lower() in NAMES:
        return n.name.lower()
    return None


def uses_query_range(sel: exp.Expr) -> bool:
    """Whether the query names ``_qstart``, ``_qend`` or ``_qduration``."""
    return any(_pseudo(n) for n in sel.find_all(exp.Column))


def fold_query_range(
    sel: exp.Select,
    ts_name: str,
    scope: Scope,
    sql: str,
    evaluate: Callable[[exp.Expr], int | None] | None = None,
) -> tuple[exp.Select, frozenset[int]]:
    """``sel`` with the three pseudo columns replaced by the range's constants, and the indexes
    of the select items that are ``_qstart`` / ``_qend`` themselves (typed TIMESTAMP).

    Raises:
        SqlError: ``0x0100`` a pseudo column in WHERE (TDengine refuses it there), positioned.
    """
    where = sel.args.get("where")
    if where is not None:
        for n in where.find_all(exp.Column):
            if _pseudo(n):
                raise SqlError(
                    f"{n.name} cannot be used in the WHERE clause (_qstart and _qend are the range it sets)",
                    sql=sql,
                    offset=offset_of(n),
                    code=Code.NOT_SUPPORTED,
                )
    lo, hi = where_range(where.this if where is not None else None, ts_name, scope, evaluate)
    start = INT64_MIN if lo is None else lo
    end = INT64_MAX if hi is None else hi

    def literal(v: int, bounded: bool) -> exp.Expr:
        if bounded:  # TDengine's CAST(epoch AS TIMESTAMP): an epoch in the database precision
            return exp.Cast(this=exp.Literal.number(v), to=exp.DataType.build("TIMESTAMP", dialect=DIALECT))
        return exp.Literal.number(v)

    values = {
        "_qstart": literal(start, lo is not None),
        "_qend": literal(end, hi is not None),
        "_qduration": exp.Cast(
            this=exp.Literal.number(min(end - start, INT64_MAX)), to=exp.DataType.build("BIGINT")
        ),
    }

    def visit(n: exp.Expr) -> exp.Expr:
        name = _pseudo(n)
        return values[name].copy() if name else n

    out = sel.copy()
    bare = frozenset(
        i
        for i, item in enumerate(out.expressions)
        if _pseudo(item.this if isinstance(item, exp.Alias) else item) in ("_qstart", "_qend")
    )
    items = []
    for item in out.expressions:
        new = item.transform(visit)
        if isinstance(item, exp.Column) and _pseudo(item):
            new = exp.alias_(new, item.name, quoted=True)
        items.append(new)
    out.set("expressions", items)
    for key in ("having", "order"):
        if out.args.get(key) is not None:
            out.set(key, out.args[key].transform(visit))
    return out, bare
