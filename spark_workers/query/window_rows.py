"""Window queries the window engine cannot answer with one row per window, computed where the
rows are: each row joined to the windows the engine puts it in, then the query run over those
rows grouped by (PARTITION BY values, window) on DuckDB like a plain query
(:mod:`spark_workers.sql.row_functions`, :mod:`spark_workers.sql.aggregate_functions`).

What takes this way (ad-hoc window queries only, ``query/select.py``; streams keep refusing):

- the multi-row functions ``top``, ``bottom``, ``sample`` (k rows per window, with the selected
  rows' other columns) and ``histogram`` (one row per bin) (TDengine SQL manual, "Functions",
  Selection Functions / HISTOGRAM: they apply to "the data within each window" of a window query);
- ``percentile(x, p1, p2, ...)`` with several p (a JSON array text, ``percentileFinalize``);
- aggregates over DECIMAL, VARBINARY or GEOMETRY values, whose exact values the engine (numbers
  and text) would not keep (TDengine SQL manual, "Data Types": DECIMAL aggregates keep DECIMAL).

TDengine's rules (``parTranslater.c``, ``translateMultiRowsFunc``; ``builtins.c``: top, bottom,
sample and histogram are ``FUNC_MGT_MULTI_ROWS_FUNC`` and ``FUNC_MGT_FORBID_FILL_FUNC``): a
multi-row function shares its SELECT with no other aggregate, selection or multi-row function
(``0x264F`` TSDB_CODE_PAR_NOT_ALLOWED_FUNC) and takes no FILL. Window rows are assigned by the
engine itself (a ``rows`` aggregate collecting each window's row ids), so every window kind
(INTERVAL [SLIDING], SESSION, STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW) groups rows exactly as
its one-row-per-window aggregates do; a window without rows outputs nothing, as without FILL.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
from sqlglot import exp

from spark_workers.engine.stream import WindowResults
from spark_workers.errors import Code, SqlError
from spark_workers.query.planner import aggregate_call
from spark_workers.query.window_functions import MULTI_ROWS_NOT_SUPPORTED, refuse_window_functions
from spark_workers.sql import ast
from spark_workers.sql.aggregate_functions import call_args, spec_of
from spark_workers.sql.ast import offset_of
from spark_workers.tdtypes import TdType

MULTI_ROWS = MULTI_ROWS_NOT_SUPPORTED  # top, bottom, sample, histogram
EXACT_TYPES = frozenset({"DECIMAL", "VARBINARY", "GEOMETRY"})
ROW_ID = "__td_rid"
WINDOW_COLUMNS = ("_wstart", "_wend", "_wduration")
BORDER_FUNCTIONS = frozenset({"twa", "elapsed"})  # INTERVAL edges interpolated (engine/borders.py)

_NOT_ALLOWED = (
    "Some functions are allowed only in the SELECT list of a query. "
    "And, cannot be mixed with other non scalar functions or columns."
)


def _calls(sel: exp.Expr) -> list[tuple[str, exp.Expr]]:
    """``(name, node)`` of every function call of the query's items, HAVING and ORDER BY (not
    of subqueries)."""
    out = []
    for n in sel.walk():
        if isinstance(n, exp.Subquery) or n.find_ancestor(exp.Subquery) is not None:
            continue
        spec = spec_of(n)
        if spec is not None:
            out.append((spec.name, n))
        elif (call := aggregate_call(n)) is not None:
            out.append((call[0], n))
    return out


def needs_rows(sel: exp.Expr, columns: dict[str, tuple[str, TdType]]) -> bool:
    """True when a window query over a table of ``columns`` (lower-case name -> (name, type))
    holds a multi-row function, a several-p ``percentile`` or an aggregate whose argument reads a
    DECIMAL, VARBINARY or GEOMETRY column."""
    for name, node in _calls(sel):
        if name in MULTI_ROWS:
            return True
        if name == "percentile" and len(call_args(node)) > 2:
            return True
        for col in node.find_all(exp.Column):
            t = columns.get(col.name.lower())
            if t is not None and t[1].name in EXACT_TYPES:
                return True
    return False


def check_rows_query(q: ast.SelectQuery, sql: str) -> None:
    """TDengine's refusals for a window query computed over its rows (module docstring).

    Raises:
        SqlError: ``0x264F`` an indefinite-rows function (``diff``...), a multi-row function with
            another aggregate / selection / multi-row function or outside the select list, or with
            FILL; ``0x0100`` FILL, SLIMIT, HAVING with a multi-row function, ``twa`` / ``elapsed``
            of INTERVAL windows (interpolated at the window edges by ``engine/borders.py``).
    """
    refuse_window_functions(q.select, sql, multi_rows=False)
    sel = q.select
    items = [n for item in sel.expressions for _name, n in _calls(item)]
    multi = [n for n in items if spec_of(n) is not None and spec_of(n).name in MULTI_ROWS]  # type: ignore[union-attr]
    for clause in ("having", "order", "where"):
        part = sel.args.get(clause)
        extra = [n for name, n in _calls(part) if name in MULTI_ROWS] if part is not None else []
        if extra:
            raise SqlError(_NOT_ALLOWED, sql=sql, offset=offset_of(extra[0]), code=Code.NOT_ALLOWED_FUNC)
    if multi and len(items) > 1:
        other = next(n for n in items if n is not multi[0])
        later = max((multi[0], other), key=lambda n: offset_of(n) or 0)  # TDengine stops at the later
        raise SqlError(_NOT_ALLOWED, sql=sql, offset=offset_of(later), code=Code.NOT_ALLOWED_FUNC)
    if multi and q.fill is not None:
        name = spec_of(multi[0]).name  # type: ignore[union-attr]
        raise SqlError(
            f"{name} function is not supported in fill query",
            sql=sql,
            offset=offset_of(multi[0]),
            code=Code.NOT_ALLOWED_FUNC,
        )
    edges = [(name, n) for name, n in _calls(sel) if name in BORDER_FUNCTIONS]
    if edges and isinstance(q.window, ast.IntervalWindow):
        raise SqlError(
            f"{edges[0][0]}() is not supported yet in an "
            "INTERVAL query computed per row (multi-row functions, several-p percentile, DECIMAL / "
            "VARBINARY / GEOMETRY aggregates): its window-edge interpolation needs the engine",
            sql=sql,
            offset=offset_of(edges[0][1]),
            code=Code.NOT_SUPPORTED,
        )
    having = sel.args.get("having")
    refused = [
        ("FILL", q.fill is not None, q.fill.span.start if q.fill and q.fill.span else None),
        ("SLIMIT", q.slimit is not None, q.slimit_span.start if q.slimit_span else None),
        ("HAVING", bool(multi) and having is not None, offset_of(having) if having is not None else None),
    ]
    for clause, present, at in refused:
        if present:
            raise SqlError(
                f"{clause} is not supported yet in a window query computed per row (multi-row "
                "functions, several-p percentile, DECIMAL / VARBINARY / GEOMETRY aggregates)",
                sql=sql,
                offset=at,
                code=Code.NOT_SUPPORTED,
            )


def assignment_query(q: ast.SelectQuery) -> ast.SelectQuery:
    """The query that finds the windows: the same FROM, WHERE, PARTITION BY and window clause,
    selecting ``_wstart`` only (its plan's aggregates are replaced by the row collector)."""
    sel = q.select.copy()
    assert isinstance(sel, exp.Select)
    for key in ("having", "order", "limit", "offset", "distinct"):
        sel.set(key, None)
    sel.set("expressions", [exp.column("_wstart")])
    return dataclasses.replace(q, select=sel, fill=None, slimit=None, soffset=None, item_texts=["_wstart"])


def window_members(res: WindowResults, ts_type: pa.DataType, precision: str) -> pa.Table:
    """One row per (row, window) from a ``rows`` aggregate ``_rows`` whose rows carry the row id:
    ``__td_rid`` (BIGINT), ``_wstart`` / ``_wend`` (``ts_type``), ``_wduration`` (BIGINT,
    precision units, as the window engine's)."""
    rows = res.values["_rows"][0]
    counts = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    idx = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    rid = np.fromiter((int(row[1]) for r in rows for row in r), np.int64, int(counts.sum()))
    ws = np.asarray(res.wstart, np.int64)[idx]
    we = np.asarray(res.wend, np.int64)[idx]
    unit = pa.timestamp(precision, tz="UTC")

    def stamp(v: np.ndarray) -> pa.Array:
        return pa.array(v, pa.int64()).cast(unit).cast(ts_type)

    return pa.table(
        {ROW_ID: rid, "_wstart": stamp(ws), "_wend": stamp(we), "_wduration": pa.array(we - ws, pa.int64())}
    )


def over_windows(q: ast.SelectQuery, view: str) -> ast.SelectQuery:
    """``q`` as a plain query over ``view`` (its rows with their windows' columns): PARTITION BY
    its own items then the window; without ORDER BY and without a multi-row function, ordered by
    (PARTITION BY values, ``_wstart``), TDengine's window order (a multi-row function's rows
    follow the same order, then timestamp or bin, ``row_functions``)."""
    sel = q.select.copy()
    assert isinstance(sel, exp.Select)
    frm = sel.args["from_"].this
    alias = frm.alias or frm.name
    sel.set(
        "from_",
        exp.From(
            this=exp.Table(
                this=exp.to_identifier(view), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
            )
        ),
    )
    _inline_partition_aliases(sel, q.partition_by)
    win = [ast.PartitionItem(exp.column(n), None, n) for n in WINDOW_COLUMNS]  # as written
    multi = any(name in MULTI_ROWS for name, _ in _calls(sel))
    if not multi and sel.args.get("order") is None:
        keys = [p.expr.copy() for p in [*q.partition_by, win[0]]]
        sel.set("order", exp.Order(expressions=[exp.Ordered(this=k) for k in keys]))
    return dataclasses.replace(q, select=sel, partition_by=[*q.partition_by, *win], window=None, fill=None)


def _inline_partition_aliases(sel: exp.Select, parts: list[ast.PartitionItem]) -> None:
    """A PARTITION BY alias in the select items (``PARTITION BY tbname AS tb`` ... ``SELECT tb``)
    replaced by its expression, in place; a bare one keeps its name as the column's alias."""
    aliases = {p.alias.lower(): p.expr for p in parts if p.alias}
    if not aliases:
        return

    def swap(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in aliases:
            return aliases[n.name.lower()].copy()
        return n

    items = []
    for item in sel.expressions:
        if isinstance(item, exp.Column) and not item.table and item.name.lower() in aliases:
            items.append(exp.alias_(aliases[item.name.lower()].copy(), item.name, quoted=True))
        else:
            items.append(item.transform(swap))
    sel.set("expressions", items)
