"""SLIMIT / SOFFSET: how many groups of PARTITION BY / GROUP BY a query outputs (TDengine SQL
manual, "Data Querying", SLIMIT: "SLIMIT 5 SOFFSET 2 can be abbreviated as SLIMIT 2, 5, both
indicating output from the 3rd to the 7th slice").

Groups are taken in the order of their values (PARTITION BY / GROUP BY values ascending, NULL
first); TDengine leaves the order of groups unspecified. LIMIT / OFFSET apply after SLIMIT. A query
without PARTITION BY or GROUP BY refuses SLIMIT with ``0x2638``
(TSDB_CODE_PAR_SLIMIT_LEAK_PARTITION_GROUP_BY).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from spark_workers.engine.stream import WindowResults
from spark_workers.errors import Code, SqlError
from spark_workers.query.duck import DuckSession, ResultCap, quote
from spark_workers.sql import ast

KEY_PREFIX = "_sk"


def check_slimit(q: ast.SelectQuery, sql: str) -> None:
    """Refuse SLIMIT without PARTITION BY / GROUP BY.

    Raises:
        SqlError: ``0x2638`` "slimit/soffset only available for PARTITION/GROUP BY query", at SLIMIT.
    """
    if q.slimit is None:
        return
    sel = q.select
    grouped = isinstance(sel, exp.Select) and sel.args.get("group") is not None
    if not q.partition_by and not grouped:
        raise SqlError(
            "slimit/soffset only available for PARTITION/GROUP BY query",
            sql=sql,
            offset=q.slimit_span.start if q.slimit_span else None,
            code=Code.SLIMIT_LEAK_PARTITION_GROUP_BY,
        )


def add_group_keys(q: ast.SelectQuery, sel: exp.Select) -> tuple[int, exp.Limit | None, exp.Expr | None]:
    """For a plain query with SLIMIT: append its group expressions (PARTITION BY items, else the
    GROUP BY list) as hidden items ``_sk<i>`` and take its LIMIT / OFFSET off (they apply after
    SLIMIT). Returns the number of keys and the LIMIT / OFFSET nodes taken."""
    keys = [p.expr for p in q.partition_by] or list(sel.args["group"].expressions)
    items = list(sel.expressions)
    for i, k in enumerate(keys):
        items.append(exp.alias_(k.copy(), f"{KEY_PREFIX}{i}", quoted=True))
    sel.set("expressions", items)
    limit, offset = sel.args.get("limit"), sel.args.get("offset")
    sel.set("limit", None)
    sel.set("offset", None)
    return len(keys), limit, offset


def _int(node: exp.Expr | None) -> int | None:
    if node is None:
        return None
    return int(node.this) if isinstance(node, exp.Literal) and node.is_int else None


def slice_groups(
    duck: DuckSession,
    result: pa.Table,
    n_keys: int,
    q: ast.SelectQuery,
    limit: exp.Limit | None,
    offset: exp.Expr | None,
) -> pa.Table:
    """The rows of the groups ``[soffset, soffset + slimit)`` (groups by value), in their order,
    then LIMIT / OFFSET; the hidden key columns dropped."""
    assert q.slimit is not None
    names = result.column_names[len(result.column_names) - n_keys :]
    keys = ", ".join(quote(n) for n in names)
    view = duck.register_arrow(result.append_column("_rn", pa.array(np.arange(result.num_rows), pa.int64())))
    on = " AND ".join(f"r.{quote(n)} IS NOT DISTINCT FROM g.{quote(n)}" for n in names)
    by = ", ".join(f"{quote(n)} NULLS FIRST" for n in names)
    groups = (
        f"SELECT {keys}, row_number() OVER (ORDER BY {by}) AS _grank "
        f"FROM (SELECT DISTINCT {keys} FROM {view}) ORDER BY {by} LIMIT {q.slimit} OFFSET {q.soffset or 0}"
    )
    ordered = isinstance(q.select, exp.Select) and q.select.args.get("order") is not None
    sql = (
        f"SELECT r.* FROM {view} r JOIN ({groups}) g ON {on} ORDER BY {'' if ordered else 'g._grank, '}r._rn"
    )
    if limit is not None:
        n, off = _int(limit.expression), _int(limit.args.get("offset"))
        sql += f" LIMIT {n}" if n is not None else ""
        sql += f" OFFSET {off}" if off else ""
    if offset is not None and _int(offset.expression):
        sql += f" OFFSET {_int(offset.expression)}"
    out = duck.query(sql, ResultCap.result(duck.limits))
    return out.select(list(range(result.num_columns - n_keys)))


def slice_windows(res: WindowResults, gvalues: dict[str, list[Any]], q: ast.SelectQuery) -> WindowResults:
    """Window results of the groups ``[soffset, soffset + slimit)`` (groups ordered by their
    PARTITION BY values, NULL first)."""
    if q.slimit is None:
        return res
    present = list(dict.fromkeys(res.gkey.tolist()))
    present.sort(key=lambda k: [(v is not None, v) for v in gvalues.get(k, [])])
    off = q.soffset or 0
    chosen = set(present[off : off + q.slimit])
    m = np.array([k in chosen for k in res.gkey.tolist()], bool)
    return dataclasses.replace(
        res,
        gkey=res.gkey[m],
        wstart=res.wstart[m],
        wend=res.wend[m],
        values={k: (v[m], ok[m]) for k, (v, ok) in res.values.items()},
    )
