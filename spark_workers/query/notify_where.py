"""``NOTIFY(...) ... WHERE condition`` of TDengine 3.3.7 streams (seed 002, "Notification
Mechanism"): "a condition that must be met for a notification to be sent. The condition may
reference only columns from the computation result and/or constants."

The condition is bound once, at CREATE STREAM, to the stream's result columns (the names a
notification's ``result`` carries: the select items' aliases or texts as written, or the output
column list's names): each reference becomes the column ``__td_r<i>``. It is then evaluated per
micro-batch on DuckDB over the events' result rows, through the same translator as every
TDengine expression (no ``eval``). An event is sent when the condition is TRUE; an event without a
result (a window opening, a window that computed no row) has every result column NULL, so a
condition on a column is not met by it, as SQL's WHERE treats NULL.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

from spark_workers.errors import Code, SqlError
from spark_workers.query.duck import DuckSession
from spark_workers.sql.ast import offset_of
from spark_workers.sql.render import expr_sql
from spark_workers.sql.scope import Scope
from spark_workers.sql.translate import to_sql
from spark_workers.tdtypes import TdType

PREFIX = "__td_r"


def bind_notify_where(cond: exp.Expr, names: list[str], sql: str) -> exp.Expr:
    """``cond`` with its references to result columns replaced by ``__td_r<i>`` (``i`` the column's
    index in ``names``): a column named like a result column (case-insensitive), or an expression
    written like one (``avg(col1)`` for the unaliased item ``avg(col1)``).

    Raises:
        SqlError: INVALID_COLUMN at the first column that is no result column (the condition "may
            reference only columns from the computation result and/or constants", seed 002);
            positioned in ``sql`` when the tree came from it.
    """
    by_name = {n.lower(): i for i, n in enumerate(names)}

    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column | exp.Func) and not isinstance(node, exp.Cast):
            text = node.name if isinstance(node, exp.Column) and not node.table else expr_sql(node)
            i = by_name.get(text.lower())
            if i is not None:
                return exp.column(f"{PREFIX}{i}")
        return node

    bound = cond.copy().transform(visit)
    for col in bound.find_all(exp.Column):
        if not col.name.startswith(PREFIX) or col.table:
            have = ", ".join(names) if names else "none: the stream computes nothing"
            raise SqlError(
                f"NOTIFY ... WHERE may reference only columns of the computation result and "
                f"constants (seed 002): {col.sql()} is not one (result columns: {have})",
                sql=sql,
                offset=_offset(cond, col),
                code=Code.INVALID_COLUMN,
            )
    return bound


def _offset(original: exp.Expr, col: exp.Column) -> int | None:
    """Offset of ``col``'s name in the statement, from the unbound tree's node of the same name."""
    for node in original.find_all(exp.Column):
        if node.name == col.name and node.table == col.table:
            return offset_of(node)
    return None


def notify_mask(
    cond: exp.Expr,
    results: list[dict[str, Any] | None],
    names: list[str],
    types: list[TdType],
    precision: str,
    tz: str,
) -> list[bool]:
    """Whether each event is sent: ``cond`` (bound by :func:`bind_notify_where`) over each
    event's result (a dict by result column name, values as notifications carry them: timestamps
    as epoch integers in ``precision``; None for an event without a result). One DuckDB query for
    all events."""
    if not results:
        return []
    cols: dict[str, pa.Array] = {}
    scope_cols: dict[str, TdType] = {}
    for i, (n, t) in enumerate(zip(names, types, strict=True)):
        values = [None if r is None else r.get(n) for r in results]
        cols[f"{PREFIX}{i}"] = _column(values, t, precision)
        scope_cols[f"{PREFIX}{i}"] = t
    cols["__td_i"] = pa.array(range(len(results)), pa.int64())
    scope = Scope(scope_cols, None, precision, tz)
    text = to_sql(cond, "duckdb", scope)
    with DuckSession(None) as duck:
        view = duck.register_arrow(pa.table(cols))
        out = duck.query(f"SELECT __td_i, COALESCE(({text}), FALSE) AS ok FROM {view} ORDER BY __td_i")
    return [bool(v) for v in out.column("ok").to_pylist()]


def _column(values: list[Any], t: TdType, precision: str) -> pa.Array:
    """Arrow column of result values of TDengine type ``t`` (timestamps: epoch in ``precision``
    -> UTC microseconds)."""
    if t.name == "TIMESTAMP":
        div = {"ms": None, "us": None, "ns": 1000}[precision]
        mul = {"ms": 1000, "us": 1, "ns": 1}[precision]
        us = [None if v is None else (int(v) // div if div else int(v) * mul) for v in values]
        return pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    try:
        return pa.array(values, t.arrow(precision))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(values)
