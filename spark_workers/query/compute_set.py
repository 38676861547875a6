"""Set-oriented run of a 3.3.7 computation: every trigger event of a micro-batch in one DuckDB
query, the events as a relation joined with the rows they read (issue 17; seed 002 "Stream
Processing Computation Tasks", "Placeholders": a placeholder is the event's constant).

The per-event path (``compute.Computation.run`` with ``SET_ORIENTED`` off) substitutes each
event's placeholder values into the bound DuckDB text and unions one sub-query per event. Here the
bound text is rewritten once:

- the events become a relation ``__td_ev`` (event index) + one column per placeholder marker
  (``__td_ph__twstart``...), typed as the per-event literals are (TIMESTAMPTZ, BIGINT, VARCHAR,
  BOOLEAN, DOUBLE), plus the trigger rows' conditions (``__td_tb``, ``__td_g<i>``, ``__td_lo``,
  ``__td_hi``) for ``%%tbname`` / ``%%trows``;
- the query's only table becomes that relation joined with the table: the trigger table on the
  event's subtable, group values and time range (and PRE_FILTER), another table as a cross product
  that the query's own ``WHERE ts >= _twstart AND ts < _twend`` turns into a range join;
- every SELECT on the way up keeps ``__td_ev`` (the outermost as its last column) and the marker
  columns, every aggregate is grouped
  by ``__td_ev`` (and the markers, which depend on it only), every window function (diff, csum,
  derivative, mavg, top, bottom, statecount... as the translator writes them) is partitioned by
  ``__td_ev``, every ORDER BY starts with it.

A scalar aggregate returns a row over no rows (``count(*)`` = 0); an event that matched no row is
absent from the join, so such events are run again through the per-event path.

Joins: the main (FROM) table carries the events; tables joined to it are read as they are, which
gives each event's rows when every join is per row of its left side (inner, left outer, cross,
semi, anti, ASOF inner / left).

Shapes not rewritten (``plan`` returns None, the caller runs the events per event): UNION,
subqueries in expressions or as a join side (window joins), CTEs, RIGHT / FULL joins, the trigger
table (``%%tbname`` / ``%%trows``) on a join's right side, no table, LIMIT / OFFSET /
FETCH anywhere (per-event limits), ``SELECT *`` in the outermost SELECT, DISTINCT ON, a query
sqlglot cannot read back from the translator's DuckDB text; events whose ``%%trows`` are a PERIOD
view (``rows_view``), and marker values that are all NULL or of mixed Python types. A rewritten
query that DuckDB refuses also falls back. Row order within an event is unspecified unless the
query has ORDER BY, as in the per-event path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

if TYPE_CHECKING:
    from spark_workers.query.duck import DuckSession

EV = "__td_ev"
EV_ALIAS = "__td_e"
T_ALIAS = "__td_t"
_AGG_NAMES: frozenset[str] | None = None
# windows and clauses whose meaning is per query, not per row: never rewritten
_REFUSED = (exp.Union, exp.Intersect, exp.Except, exp.With, exp.Lateral, exp.Limit)
_REFUSED_ARGS = ("limit", "offset", "fetch", "laterals", "with")
# joins that keep, drop or extend each row of their left side on its own (a row's result does not
# depend on the other rows of its side): the left side may hold every event's rows at once
_PER_ROW_SIDES = frozenset({"", "LEFT"})
_PER_ROW_KINDS = frozenset({"", "INNER", "OUTER", "CROSS", "SEMI", "ANTI"})
_PER_ROW_METHODS = frozenset({"", "ASOF"})


@dataclass
class SetPlan:
    """A rewritten computation.

    Attributes:
        tree: the DuckDB query with the table replaced by a ``__td_src`` placeholder table.
        table: the replaced table's DuckDB name (the trigger marker or a view).
        alias: the name the query reads the table by.
        scalar: a SELECT aggregates without GROUP BY: events matching no row run per event.
    """

    tree: exp.Expr
    table: str
    alias: str
    scalar: bool

    def sql(self, source: str) -> str:
        """The query text, the table read as ``source`` (a parenthesized SELECT)."""
        tree = self.tree.copy()
        for t in tree.find_all(exp.Table):
            if t.name == "__td_src":
                sub = sqlglot.parse_one(source, read="duckdb")
                t.replace(
                    exp.Subquery(
                        this=sub, alias=exp.TableAlias(this=exp.to_identifier(self.alias, quoted=True))
                    )
                )
                break
        return tree.sql("duckdb")


def aggregate_names(duck: DuckSession) -> frozenset[str]:
    """DuckDB's aggregate function names (lower case), asked once per process."""
    global _AGG_NAMES
    if _AGG_NAMES is None:
        rows = duck.con.execute(
            "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type = 'aggregate'"
        ).fetchall()
        _AGG_NAMES = frozenset(r[0] for r in rows)
    return _AGG_NAMES


def plan(text: str, markers: list[str], agg_names: frozenset[str], trigger: str) -> SetPlan | None:
    """The set-oriented form of a bound computation's DuckDB ``text`` whose placeholder markers are
    ``markers`` (their column names) and whose trigger table is named ``trigger``, or None for a
    shape it does not prove equivalent (module docstring)."""
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.Select) or any(tree.find(k) for k in _REFUSED):
        return None
    mains = [t for t in tree.find_all(exp.Table) if isinstance(t.parent, exp.From)]
    if len(mains) != 1:
        return None
    chain = _chain(mains[0], tree)
    if (
        chain is None
        or len(chain) != len(list(tree.find_all(exp.Select)))
        or not _joins_per_row(tree, chain[0], trigger)
    ):
        return None
    if any(sel.args.get(a) for sel in chain for a in _REFUSED_ARGS):
        return None
    if any(isinstance(d := sel.args.get("distinct"), exp.Distinct) and d.args.get("on") for sel in chain):
        return None
    if any(isinstance(i, exp.Star) or (i.find(exp.Star) and not _in_agg(i)) for i in tree.expressions):
        return None
    table = mains[0]
    name, alias = table.name, table.alias_or_name
    table.replace(exp.Table(this=exp.to_identifier("__td_src")))
    scalar = False
    for sel in chain:
        scalar |= _per_event(sel, markers, agg_names, root=sel is tree)
    for w in tree.find_all(exp.Window):
        w.set("partition_by", [exp.column(EV), *(w.args.get("partition_by") or [])])
    return SetPlan(tree, name, alias, scalar)


def _joins_per_row(tree: exp.Expr, inner: exp.Select, trigger: str) -> bool:
    """Every join is in the SELECT reading the main table, joins a plain table, and is one of
    ``_PER_ROW_*`` (inner, left outer, cross, semi, anti, ASOF inner / left): the events' rows
    side by side on the left give each event's result. RIGHT / FULL joins (unmatched right rows
    once per event), window joins (sub-queries) and a joined ``trigger`` table are not."""
    joins = list(tree.find_all(exp.Join))
    tables = list(tree.find_all(exp.Table))
    if len(tables) != 1 + len(joins):
        return False
    for j in joins:
        if j.parent is not inner or not isinstance(j.this, exp.Table) or j.this.name == trigger:
            return False
        side, kind, method = ((j.args.get(k) or "").upper() for k in ("side", "kind", "method"))
        if side not in _PER_ROW_SIDES or kind not in _PER_ROW_KINDS or method not in _PER_ROW_METHODS:
            return False
    return True


def _in_agg(item: exp.Expr) -> bool:
    """``count(*)``: a star inside a function, not a column list."""
    star = item.find(exp.Star)
    return star is not None and isinstance(star.parent, exp.Func)


def _chain(table: exp.Table, root: exp.Select) -> list[exp.Select] | None:
    """The SELECTs from the one reading ``table`` up to ``root``, each in its parent's FROM only."""
    frm = table.parent
    if not isinstance(frm, exp.From) or not isinstance(frm.parent, exp.Select):
        return None
    sel = frm.parent
    chain = [sel]
    while sel is not root:
        sub = sel.parent
        if not isinstance(sub, exp.Subquery) or not isinstance(sub.parent, exp.From):
            return None
        nxt = sub.parent.parent
        if not isinstance(nxt, exp.Select):
            return None
        sel = nxt
        chain.append(sel)
    return chain


def _is_aggregate(node: exp.Expr, agg_names: frozenset[str]) -> bool:
    """An aggregate call (not a window function's, ``f(...) [IGNORE NULLS] OVER (...)``)."""
    outer = node
    while isinstance(outer.parent, exp.IgnoreNulls | exp.RespectNulls):
        outer = outer.parent
    if isinstance(outer.parent, exp.Window) and outer.parent.this is outer:
        return False
    if isinstance(node, exp.AggFunc):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in agg_names
    return isinstance(node, exp.Func) and node.sql_name().lower() in agg_names


def _aggregates(sel: exp.Select, agg_names: frozenset[str]) -> bool:
    parts = [*sel.expressions, sel.args.get("having")]
    return any(
        _is_aggregate(n, agg_names)
        for p in parts
        if p is not None
        for n in p.walk()
        if isinstance(n, exp.Func)
    )


def _per_event(sel: exp.Select, markers: list[str], agg_names: frozenset[str], *, root: bool) -> bool:
    """Make one SELECT of the chain per event (module docstring); True when it is a scalar
    aggregate (no GROUP BY)."""
    group = sel.args.get("group")
    scalar = group is None and _aggregates(sel, agg_names)
    keys = [EV, *markers]
    if group is not None or scalar:
        old = list(group.expressions) if group is not None else []
        sel.set("group", exp.Group(expressions=[*old, *(exp.column(k, quoted=True) for k in keys)]))
    if root:  # last: positional GROUP BY / ORDER BY keep their meaning (the caller moves it first)
        sel.set("expressions", [*sel.expressions, exp.column(EV, quoted=True)])
    elif not any(isinstance(i, exp.Star) for i in sel.expressions):
        sel.set("expressions", [*sel.expressions, *(exp.column(k, quoted=True) for k in keys)])
    order = sel.args.get("order")
    if order is not None:
        order.set("expressions", [exp.Ordered(this=exp.column(EV, quoted=True)), *order.expressions])
    elif root:
        sel.set("order", exp.Order(expressions=[exp.Ordered(this=exp.column(EV, quoted=True))]))
    return scalar


def arrow_column(values: list[Any]) -> pa.Array | None:
    """A marker's or a group condition's per-event values as one Arrow column typed as the
    per-event literal is (``compute._literal``: bool BOOLEAN, int BIGINT, float DOUBLE, str
    VARCHAR), or None when the values are all NULL or of different kinds."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    types = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}
    if kind not in types:
        return None
    return pa.array(values, types[kind])


def timestamp_column(us: Sequence[int | None]) -> pa.Array:
    """Epoch microseconds (UTC) as TIMESTAMPTZ values."""
    return pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
