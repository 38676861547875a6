"""INTERP: the value of columns at the time slices of ``RANGE`` / ``EVERY`` (TDengine SQL manual,
"Functions" INTERP and "Data Querying" interp_clause; TDengine's tests
``tests/system-test/2-query/interp.py``).

``SELECT [_irowts,] [_isfilled,] [_irowts_origin,] INTERP(expr[, ignore_null_values]), ... FROM t
[WHERE c] [PARTITION BY ...] RANGE(start[, end][, surrounding]) [EVERY(every)] FILL(mode[, v...])``

The time slices are ``start, start + every, ...`` up to ``end`` (one slice for ``RANGE(ts)``,
where EVERY may be left out). Per group of PARTITION BY (without it, the whole table as one
timeline ordered by the primary timestamp), for each slice ``t`` and each ``INTERP(expr)``:

- a row at exactly ``t`` gives its value, even NULL (``_isfilled`` false); with
  ``ignore_null_values`` 1 a row whose value is NULL counts as no row;
- otherwise FILL decides: ``NONE`` outputs no row; ``NULL`` NULL; ``VALUE`` the value given for
  that INTERP (converted to its type); ``PREV`` / ``NEXT`` the nearest earlier / later non-NULL
  value; ``NEAR`` the nearer of the two (the earlier one when both are as near); ``LINEAR`` the
  line through the nearest earlier and later non-NULL values at ``t`` (integers truncated toward
  zero). A slice PREV / NEXT / NEAR / LINEAR has no neighbour for is not output (a row needs every
  INTERP of it).
- ``RANGE(ts[, end], surrounding)`` (3.3.4.9+) looks for PREV / NEXT / NEAR neighbours only within
  ``surrounding`` of the slice, and uses FILL's value (one per INTERP) when there is none.

Pseudo columns: ``_irowts`` the slice, ``_isfilled`` whether a FILL made the value,
``_irowts_origin`` (FILL PREV / NEXT / NEAR only) the timestamp of the row the first INTERP's
value comes from (NULL for a FILL value). Result column names are TDengine's (``interp(c0)``,
``_irowts``), the types those of the expressions.

Work is bounded: the slices of all groups count against ``TDWEB_SQL_MAX_WINDOW_ROWS`` (``0x070A``
before anything is generated), the rows read against the window-input cap, the result against
the result cap; the whole runs inside the statement's budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from spark_workers.errors import Code, SqlError, para_type_error
from spark_workers.limits import active_budget
from spark_workers.query.duck import DuckSession, ResultCap, quote
from spark_workers.query.fill import fill_value
from spark_workers.query.planner import Source, aggregate_call
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.sandbox import check_query
from spark_workers.sql.scope import Scope, func_name
from spark_workers.sql.translate import to_sql

EPOCH_FN = {"ms": "epoch_ms", "us": "epoch_us", "ns": "epoch_ns"}
PSEUDO = frozenset({"_irowts", "_isfilled", "_irowts_origin"})
NEIGHBOUR_MODES = frozenset({"PREV", "NEXT", "NEAR", "LINEAR"})
_MISSING = "Missing RANGE clause, EVERY clause or FILL clause"


def uses_interp(q: ast.SelectQuery) -> bool:
    """Whether a query is an INTERP query: it has RANGE / EVERY or calls INTERP (at its top)."""
    if q.interp is not None:
        return True
    sel = q.select
    return isinstance(sel, exp.Select) and any(
        func_name(n) == "interp" for item in sel.expressions for n in item.walk()
    )


@dataclass(frozen=True)
class _Call:
    """One ``INTERP(expr[, ignore_null_values])`` of the select list."""

    node: exp.Expr
    arg: exp.Expr
    ignore_null: bool


def _error(message: str, at: int | None, sql: str, code: int = Code.INVALID_INTERP_CLAUSE) -> SqlError:
    return SqlError(message, sql=sql, offset=at, code=code)


def _calls(sel: exp.Select, sql: str) -> list[_Call]:
    """The INTERP calls of the select list, checked: one or two arguments, the second 0 or 1."""
    calls: list[_Call] = []
    for item in sel.expressions:
        for n in item.walk():
            if func_name(n) != "interp":
                if aggregate_call(n):
                    raise _error(
                        f"Invalid interp clause: {func_name(n)} cannot be used with INTERP; an INTERP "
                        "query selects INTERP, its pseudo columns and PARTITION BY values",
                        offset_of(n),
                        sql,
                    )
                continue
            args = list(n.expressions) if isinstance(n, exp.Anonymous) else [n.this]
            if not args or len(args) > 2:
                raise SqlError(
                    "Invalid number of parameters : interp",
                    sql=sql,
                    offset=offset_of(n),
                    code=Code.FUNC_PARA_NUM,
                )
            ignore = False
            if len(args) == 2:
                a = args[1]
                if not (isinstance(a, exp.Literal) and not a.is_string and a.this in ("0", "1")):
                    raise SqlError(
                        "Invalid parameter value : interp (ignore_null_values is 0 or 1)",
                        sql=sql,
                        offset=offset_of(a) or offset_of(n),
                        code=Code.FUNC_PARA_VALUE,
                    )
                ignore = a.this == "1"
            if any(func_name(m) == "interp" for m in args[0].walk()):
                raise SqlError(
                    "Aggregate functions do not support nesting",
                    sql=sql,
                    offset=offset_of(n),
                    code=Code.AGG_FUNC_NESTING,
                )
            calls.append(_Call(n, args[0], ignore))
    return calls


def check_clauses(q: ast.SelectQuery, calls: list[_Call], sql: str) -> ast.InterpClause:
    """TDengine's rules of the INTERP clause (parTranslater.c ``translateInterp``).

    Raises:
        SqlError: ``0x265D`` for a missing RANGE / EVERY / FILL, a window clause or GROUP BY with
            INTERP, RANGE / EVERY without INTERP, a surrounding time with another FILL than
            PREV / NEXT / NEAR or without a positive fixed length; ``0x2605`` "Filled values number
            mismatch"; ``0x2602`` ``_irowts_origin`` with another FILL.
    """
    it = q.interp
    at = it.range_span.start if it is not None and it.range_span else None
    if not calls:
        sel = q.select
        for c in sel.find_all(exp.Column) if isinstance(sel, exp.Select) else ():
            if not c.table and c.name.lower() in PSEUDO:
                raise _error(f"Invalid column name: {c.name}", offset_of(c), sql, Code.INVALID_COLUMN)
        raise _error(
            "Invalid interp clause: RANGE and EVERY need the INTERP function in the select list", at, sql
        )
    call_at = offset_of(calls[0].node)
    if it is None or q.fill is None or (it.every is None and it.end is not None):
        raise _error(_MISSING, at if at is not None else call_at, sql)
    sel = q.select
    if q.window is not None or (isinstance(sel, exp.Select) and sel.args.get("group")):
        where = q.window.span.start if q.window is not None and q.window.span else call_at
        raise _error(
            "Invalid interp clause: INTERP cannot be used with a window clause or GROUP BY", where, sql
        )
    fill_at = q.fill.span.start if q.fill.span else at
    mode = q.fill.mode
    for d, what in ((it.every, "EVERY"), (it.surrounding, "RANGE")):
        if d is not None and (d.is_calendar or d.value <= 0):
            raise _error(
                f"Unsupported time unit in {what} clause: a positive duration of b, u, a, s, m, h, d or w"
                if d.is_calendar
                else f"{what} interval must be greater than 0",
                it.every_span.start if what == "EVERY" and it.every_span else at,
                sql,
            )
    if it.surrounding is not None:
        if mode not in ("PREV", "NEXT", "NEAR"):
            raise _error("Range with interval can only used with fill PREV/NEXT/NEAR", fill_at, sql)
        need_values = True
    else:
        need_values = mode in ("VALUE", "VALUE_F")
        if q.fill.values and not need_values:
            raise _error(f"FILL({mode}) takes no values", fill_at, sql, Code.WRONG_VALUE_TYPE)
    if need_values and len(q.fill.values) != len(calls):
        raise _error(
            f"Filled values number mismatch: {len(calls)} INTERP call(s), {len(q.fill.values)} value(s)",
            fill_at,
            sql,
            Code.WRONG_VALUE_TYPE,
        )
    if mode not in ("PREV", "NEXT", "NEAR") and isinstance(sel, exp.Select):
        for c in sel.find_all(exp.Column):
            if not c.table and c.name.lower() == "_irowts_origin":
                raise _error(
                    "Invalid column name: _irowts_origin (only with FILL PREV, NEXT or NEAR)",
                    offset_of(c),
                    sql,
                    Code.INVALID_COLUMN,
                )
    return it


@dataclass
class _Slices:
    """Per output candidate (group x slice) of one INTERP: whether it is output, where its value
    comes from (``src`` a row index, -1 none), whether it is a FILL value or NULL, and for LINEAR
    the two rows it lies between."""

    keep: np.ndarray
    src: np.ndarray
    filled: np.ndarray
    use_value: np.ndarray
    lin_p: np.ndarray
    lin_q: np.ndarray


def slice_values(
    ts: np.ndarray, valid: np.ndarray, points: np.ndarray, mode: str, ignore_null: bool, surround: int | None
) -> _Slices:
    """One group's INTERP at ``points`` (module docstring), vectorized.

    Args:
        ts: the group's row timestamps, ascending (precision units).
        valid: per row, its value is not NULL.
        points: the slices, ascending.
        mode: the FILL mode.
        ignore_null: ``ignore_null_values`` 1.
        surround: the RANGE surrounding time in precision units, or None.
    """
    n, m = ts.shape[0], points.shape[0]
    rows = np.flatnonzero(valid) if ignore_null else np.arange(n)
    hts = ts[rows]
    k = np.searchsorted(hts, points, "left")
    kc = np.minimum(k, max(hts.shape[0] - 1, 0))
    hit = (k < hts.shape[0]) & (hts[kc] == points) if hts.shape[0] else np.zeros(m, bool)
    src = np.where(hit, rows[kc] if rows.shape[0] else 0, -1)
    posn = np.flatnonzero(valid)
    tsn = ts[posn]
    jp = np.searchsorted(tsn, points, "left") - 1
    jn = np.searchsorted(tsn, points, "right")
    has_p = jp >= 0
    has_n = jn < tsn.shape[0]
    prev = np.where(has_p, posn[np.clip(jp, 0, None)] if posn.shape[0] else 0, -1)
    nxt = np.where(has_n, posn[np.minimum(jn, max(posn.shape[0] - 1, 0))] if posn.shape[0] else 0, -1)
    tsx = ts if n else np.zeros(1, np.int64)  # indexable when the group has no rows here
    if surround is not None:
        has_p &= points - tsx[np.maximum(prev, 0)] <= surround
        has_n &= tsx[np.maximum(nxt, 0)] - points <= surround
        prev, nxt = np.where(has_p, prev, -1), np.where(has_n, nxt, -1)
    miss = ~hit
    keep = np.ones(m, bool)
    use_value = np.zeros(m, bool)
    lin_p = np.full(m, -1)
    lin_q = np.full(m, -1)
    fill_src = np.full(m, -1)
    if mode == "NONE":
        keep = hit
    elif mode in ("VALUE", "VALUE_F"):
        use_value = miss
    elif mode in ("PREV", "NEXT", "NEAR"):
        if mode == "PREV":
            fill_src = prev
        elif mode == "NEXT":
            fill_src = nxt
        else:
            dp = np.where(prev >= 0, points - tsx[np.maximum(prev, 0)], np.iinfo(np.int64).max)
            dn = np.where(nxt >= 0, tsx[np.maximum(nxt, 0)] - points, np.iinfo(np.int64).max)
            fill_src = np.where(dp <= dn, prev, nxt)
        if surround is not None:
            use_value = miss & (fill_src < 0)
        else:
            keep = hit | (fill_src >= 0)
    elif mode == "LINEAR":
        both = (prev >= 0) & (nxt >= 0)
        keep = hit | both
        lin_p, lin_q = np.where(miss & both, prev, -1), np.where(miss & both, nxt, -1)
    src = np.where(hit, src, fill_src)
    return _Slices(keep, src, miss, use_value, lin_p, lin_q)


def _without_interp(sel: exp.Select) -> exp.Select:
    """The query with each INTERP call replaced by its argument and the pseudo columns by NULL (what
    the front door's allow-list checks)."""

    def visit(n: exp.Expr) -> exp.Expr:
        if func_name(n) == "interp":
            args = list(n.expressions) if isinstance(n, exp.Anonymous) else [n.this]
            return args[0].copy()
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in PSEUDO:
            return exp.Null()
        return n

    out = sel.copy().transform(visit)
    assert isinstance(out, exp.Select)
    return out


def _bounds(duck: DuckSession, it: ast.InterpClause, scope: Scope, sql: str) -> tuple[int, int]:
    """RANGE's start and end in precision units, evaluated by DuckDB (constant expressions)."""
    epoch = EPOCH_FN[scope.precision]
    at = it.range_span.start if it.range_span else None
    out = []
    for e in (it.start, it.end) if it.end is not None else (it.start,):
        if any(e.find_all(exp.Column)):
            raise _error("Invalid interp clause: RANGE takes constant timestamps", offset_of(e) or at, sql)
        lit = e
        if isinstance(e, exp.Literal) and e.is_string:
            lit = exp.Cast(this=e, to=exp.DataType.build("TIMESTAMP"))
        try:
            t = duck.query(f"SELECT {epoch}(CAST(({to_sql(lit, 'duckdb', scope)}) AS TIMESTAMPTZ)) AS v")
            v = t.column(0)[0].as_py() if t.num_rows else None
        except SqlError:
            v = None
        if v is None and isinstance(e, exp.Literal) and e.is_int:
            v = int(e.this)
        if v is None:
            raise _error("Invalid interp clause: a RANGE time is not a timestamp", offset_of(e) or at, sql)
        out.append(int(v))
    if len(out) == 1:  # RANGE(ts): one slice (``now`` evaluated once)
        return out[0], out[0]
    if out[0] > out[1]:
        raise _error("Invalid interp clause: the RANGE start is after its end", at, sql)
    return out[0], out[1]


def _stage1_sql(
    q: ast.SelectQuery,
    calls: list[_Call],
    src: Source,
    view: str,
    scope: Scope,
    lo: int,
    hi: int,
    outer: bool,
) -> str:
    """Rows of ``[lo, hi]`` (``_g*`` PARTITION BY values, ``_ts``, ``_i*`` INTERP arguments,
    ``_gi`` the group's rank) and, with ``outer``, per group and INTERP the nearest non-NULL row
    before ``lo`` and after ``hi``; ordered by group and time."""
    sel = q.select
    assert isinstance(sel, exp.Select)
    ts = quote(src.table.columns[0].name)
    cols = [f"{to_sql(p.expr, 'duckdb', scope)} AS {quote(f'_g{i}')}" for i, p in enumerate(q.partition_by)]
    cols.append(f"{EPOCH_FN[scope.precision]}({ts}) AS _ts")
    cols += [f"{to_sql(c.arg, 'duckdb', scope)} AS {quote(f'_i{k}')}" for k, c in enumerate(calls)]
    where = sel.args.get("where")
    cond = f" WHERE {to_sql(where.this, 'duckdb', scope)}" if where is not None else ""
    base = f"SELECT {', '.join(cols)} FROM {view}{cond}"
    gs = [quote(f"_g{i}") for i in range(len(q.partition_by))]
    ins = [quote(f"_i{k}") for k in range(len(calls))]
    parts = [f"SELECT {', '.join([*gs, '_ts', *ins])} FROM base WHERE _ts BETWEEN {lo} AND {hi}"]
    for k in range(len(calls) if outer else 0):
        for agg, fn, cmp, bound in (("max", "arg_max", "<", lo), ("min", "arg_min", ">", hi)):
            vals = [f"{fn}({c}, _ts)" if j == k else f"NULL AS {c}" for j, c in enumerate(ins)]
            group = f" GROUP BY {', '.join(gs)}" if gs else ""
            parts.append(
                f"SELECT {', '.join([*gs, f'{agg}(_ts) AS _ts', *vals])} FROM base "
                f"WHERE _ts {cmp} {bound} AND {ins[k]} IS NOT NULL{group} HAVING count(*) > 0"
            )
    group = f" GROUP BY {', '.join(gs)}" if gs else ""
    nulls = [f"NULL AS {c}" for c in ins]
    parts.append(f"SELECT {', '.join([*gs, 'NULL AS _ts', *nulls])} FROM base{group} HAVING count(*) > 0")
    rank = f"dense_rank() OVER (ORDER BY {', '.join(f'{g} NULLS FIRST' for g in gs)})" if gs else "1"
    union = " UNION ALL ".join(f"({p})" for p in parts)
    return f"WITH base AS ({base}) SELECT *, {rank} AS _gi FROM ({union}) ORDER BY _gi, _ts NULLS FIRST"


def interp_arrow(
    duck: DuckSession, q: ast.SelectQuery, src: Source, view: str, sql: str, tz: str
) -> tuple[pa.Table, list[str]]:
    """An INTERP query over the rows of ``view`` (``src`` names them): the result and its column
    names (alias, else the item as written: ``interp(c0)``, ``_irowts``).

    Raises:
        SqlError: :func:`check_clauses`; ``0x2802`` INTERP of a string or timestamp; ``0x070A``
            more slices than ``TDWEB_SQL_MAX_WINDOW_ROWS``; the statement limits.
    """
    sel = q.select
    assert isinstance(sel, exp.Select)
    calls = _calls(sel, sql)
    it = check_clauses(q, calls, sql)
    assert q.fill is not None
    also = [p.expr for p in q.partition_by] + [it.start, it.end]
    check_query(_without_interp(sel), sql, also=[e for e in also if e is not None])
    scope = src.scope(tz)
    precision = scope.precision
    lo, hi = _bounds(duck, it, scope, sql)
    every = it.every.in_precision(precision) if it.every is not None else 1
    surround = it.surrounding.in_precision(precision) if it.surrounding is not None else None
    points = np.arange(lo, hi + 1, every, dtype=np.int64) if _n_points(lo, hi, every, duck, sql) else None
    assert points is not None
    mode = q.fill.mode
    r_lo, r_hi = (lo - surround, hi + surround) if surround is not None else (lo, hi)
    outer = mode in NEIGHBOUR_MODES and surround is None
    t1 = duck.query(
        _stage1_sql(q, calls, src, view, scope, r_lo, r_hi, outer), ResultCap.window_input(duck.limits)
    )
    for k, c in enumerate(calls):
        typ = t1.schema.field(f"_i{k}").type
        if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)):
            raise para_type_error("interp", sql=sql, offset=offset_of(c.node))
    budget = active_budget()  # the statement's deadline, between the stages
    if budget is not None:
        budget.check(sql)
    table = _slices_table(t1, calls, points, mode, surround, q, duck, sql, precision, tz)
    if budget is not None:
        budget.check(sql)
    out = duck.query(
        _stage3_sql(q, calls, duck.register_arrow(table), sql, precision, tz), ResultCap.result(duck.limits)
    )
    names = []
    for i, item in enumerate(sel.expressions):
        if isinstance(item, exp.Alias):
            names.append(item.alias)
        elif isinstance(item, exp.Column):
            names.append(item.name)
        else:
            names.append(q.item_texts[i] if i < len(q.item_texts) else item.sql())
    return out, names


def _n_points(lo: int, hi: int, every: int, duck: DuckSession, sql: str) -> int:
    n = (hi - lo) // every + 1
    if n > duck.limits.max_window_rows:
        raise SqlError(
            f"Too many time windows in query: INTERP would output {n:,} slices, at most "
            f"{duck.limits.max_window_rows:,} (TDWEB_SQL_MAX_WINDOW_ROWS); narrow RANGE or widen EVERY",
            sql=sql,
            code=Code.TOO_MANY_TIMEWINDOW,
        )
    return n


def _ts_array(v: np.ndarray, precision: str, mask: np.ndarray | None = None) -> pa.Array:
    mult = {"ms": 1000, "us": 1, "ns": 1}[precision]
    unit = "ns" if precision == "ns" else "us"
    return pa.array(v * mult, pa.int64(), mask=mask).cast(pa.timestamp(unit, tz="UTC"))


def _slices_table(
    t1: pa.Table,
    calls: list[_Call],
    points: np.ndarray,
    mode: str,
    surround: int | None,
    q: ast.SelectQuery,
    duck: DuckSession,
    sql: str,
    precision: str,
    tz: str,
) -> pa.Table:
    """The output rows: per group (``_gi`` order) and slice, ``_g*``, ``_gi``, ``_irowts``,
    ``_isfilled``, ``_irowts_origin`` and ``_a<k>`` per INTERP."""
    marker = t1.column("_ts").is_null()
    markers = t1.filter(marker)  # one row per group, in ``_gi`` order: its PARTITION BY values
    groups = markers.column("_gi").to_numpy(zero_copy_only=False).astype(np.int64)
    t1 = t1.filter(pc.invert(marker))
    gi = t1.column("_gi").to_numpy(zero_copy_only=False).astype(np.int64)
    ts = t1.column("_ts").to_numpy(zero_copy_only=False).astype(np.int64)
    starts = np.searchsorted(gi, groups, "left")
    bounds = list(zip(starts.tolist(), np.searchsorted(gi, groups, "right").tolist(), strict=True))
    if len(bounds) * points.size > duck.limits.max_window_rows:
        raise SqlError(
            f"Too many time windows in query: INTERP would output {len(bounds) * points.size:,} rows "
            f"({len(bounds):,} groups x {points.size:,} slices), at most {duck.limits.max_window_rows:,} "
            "(TDWEB_SQL_MAX_WINDOW_ROWS)",
            sql=sql,
            code=Code.TOO_MANY_TIMEWINDOW,
        )
    valid = [
        ~np.asarray(t1.column(f"_i{k}").is_null().to_numpy(zero_copy_only=False), bool)
        for k in range(len(calls))
    ]
    per: list[list[_Slices]] = []
    keep_all: list[np.ndarray] = []
    for a, b in bounds:
        got = []
        for k, c in enumerate(calls):
            s = slice_values(ts[a:b], valid[k][a:b], points, mode, c.ignore_null, surround)
            for arr in (s.src, s.lin_p, s.lin_q):
                arr[arr >= 0] += a
            got.append(s)
        per.append(got)
        keep_all.append(np.logical_and.reduce([s.keep for s in got]))
    keep = np.concatenate(keep_all) if keep_all else np.empty(0, bool)
    first = np.repeat(np.arange(len(bounds), dtype=np.int64), points.size)[keep]
    cols: dict[str, pa.Array] = {}
    for i in range(len(q.partition_by)):
        cols[f"_g{i}"] = markers.column(f"_g{i}").take(pa.array(first, pa.int64()))
    cols["_gi"] = pa.array(groups[first], pa.int64())
    cols["_irowts"] = _ts_array(np.tile(points, len(bounds))[keep], precision)

    joined = [_joined([g[k] for g in per], keep) for k in range(len(calls))]
    filled = np.logical_or.reduce([j.filled for j in joined]) if calls else keep
    cols["_isfilled"] = pa.array(filled, pa.bool_())
    origin = joined[0].src if calls else np.empty(0, np.int64)
    cols["_irowts_origin"] = _ts_array(
        np.where(origin >= 0, ts[np.maximum(origin, 0)] if ts.size else 0, 0), precision, origin < 0
    )
    values = _fill_values(q, duck, precision, tz)
    t = np.tile(points, len(bounds))[keep]
    for k, j in enumerate(joined):
        col = t1.column(f"_i{k}").combine_chunks()
        v = fill_value(values[k], col.type, precision) if values else None
        cols[f"_a{k}"] = _value_column(col, j, ts, t, v)
    return pa.table(cols)


def _joined(parts: list[_Slices], keep: np.ndarray) -> _Slices:
    """One INTERP's slices of every group, concatenated and kept where the output has a row."""
    if not parts:
        e = np.empty(0, np.int64)
        return _Slices(e.astype(bool), e, e.astype(bool), e.astype(bool), e, e)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])[keep]

    return _Slices(keep[keep], cat("src"), cat("filled"), cat("use_value"), cat("lin_p"), cat("lin_q"))


def _value_column(
    col: pa.Array, s: _Slices, ts: np.ndarray, t: np.ndarray, value: pa.Scalar | None
) -> pa.Array:
    """One INTERP's output column: the source rows' values, LINEAR's lines, FILL's value, NULL."""
    n = s.src.shape[0]
    if len(col):
        out = col.take(pa.array(np.maximum(s.src, 0), pa.int64()))
        out = pc.if_else(pa.array(s.src >= 0), out, pa.nulls(n, col.type))
    else:
        out = pa.nulls(n, col.type)
    out = _linear(out, col, s.lin_p, s.lin_q, ts, t)
    if value is not None and s.use_value.any():
        out = pc.if_else(pa.array(s.use_value), value, out)
    return out


def _linear(
    out: pa.Array, col: pa.Array, p: np.ndarray, q: np.ndarray, ts: np.ndarray, t: np.ndarray
) -> pa.Array:
    """``out`` with the LINEAR slices (``p``, ``q`` >= 0) set to the line through rows ``p`` and
    ``q`` of ``col`` at ``t`` (integers truncated toward zero; booleans are not interpolated)."""
    on = p >= 0
    if not on.any() or pa.types.is_boolean(col.type):
        return out
    vals = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    pi, qi = np.maximum(p, 0), np.maximum(q, 0)
    # offsets as integers first: nanosecond epochs (~1.6e18) lose digits as float64
    dt = (t - ts[pi]).astype(np.float64)
    span = (ts[qi] - ts[pi]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = vals[pi] + (vals[qi] - vals[pi]) * dt / span
    if pa.types.is_integer(col.type):
        lin = pa.array(np.trunc(np.where(on, v, 0)).astype(np.int64), pa.int64()).cast(col.type, safe=False)
    else:
        lin = pa.array(np.where(on, v, 0.0), pa.float64()).cast(col.type)
    return pc.if_else(pa.array(on), lin, out)


def _fill_values(q: ast.SelectQuery, duck: DuckSession, precision: str, tz: str) -> list[object]:
    """FILL's constants as Python values (evaluated by DuckDB)."""
    if q.fill is None or not q.fill.values:
        return []
    scope = Scope({}, None, precision, tz)
    items = ", ".join(
        f"{to_sql(v, 'duckdb', scope)} AS {quote(f'v{i}')}" for i, v in enumerate(q.fill.values)
    )
    return [c[0].as_py() for c in duck.query(f"SELECT {items}").columns]


def _stage3_sql(q: ast.SelectQuery, calls: list[_Call], view: str, sql: str, precision: str, tz: str) -> str:
    """The select items, ORDER BY, SLIMIT and LIMIT over the slices' rows."""
    sel = q.select
    assert isinstance(sel, exp.Select)
    by_call = {c.node.sql(): k for k, c in enumerate(calls)}
    by_part = {p.expr.sql().lower(): i for i, p in enumerate(q.partition_by)}
    by_part.update({p.alias.lower(): i for i, p in enumerate(q.partition_by) if p.alias})

    def visit(n: exp.Expr) -> exp.Expr:
        if n.sql() in by_call and func_name(n) == "interp":
            return exp.column(f"_a{by_call[n.sql()]}", quoted=True)
        key = n.sql().lower()
        if key in by_part and not isinstance(n, exp.Literal):
            return exp.column(f"_g{by_part[key]}", quoted=True)
        if isinstance(n, exp.Column) and not (not n.table and n.name.lower() in PSEUDO):
            raise SqlError(
                f"invalid column name {n.name}: an INTERP query selects INTERP, _irowts, _isfilled, "
                "_irowts_origin and PARTITION BY values",
                sql=sql,
                offset=offset_of(n),
                code=Code.INVALID_COLUMN,
            )
        return n

    scope = Scope({}, None, precision, tz, frozenset({"_irowts", "_irowts_origin"}))
    items = []
    for i, item in enumerate(sel.expressions):
        e = item.this if isinstance(item, exp.Alias) else item
        items.append(f"{to_sql(e.copy().transform(visit), 'duckdb', scope)} AS {quote(f'_o{i}')}")
    out = f"SELECT {', '.join(items)} FROM {view}"
    if q.slimit is not None:
        off = q.soffset or 0
        out += f" WHERE _gi > {off} AND _gi <= {off + q.slimit}"
    order = sel.args.get("order")
    keys = []
    aliases = {it.alias.lower(): it.this for it in sel.expressions if isinstance(it, exp.Alias)}
    for o in order.expressions if order is not None else []:
        e = o.this
        if isinstance(e, exp.Column) and not e.table and e.name.lower() in aliases:
            e = aliases[e.name.lower()]
        keys.append(
            f"{to_sql(e.copy().transform(visit), 'duckdb', scope)}{' DESC' if o.args.get('desc') else ''}"
        )
    out += " ORDER BY " + ", ".join(keys or ["_gi", "_irowts"])
    limit = sel.args.get("limit")
    if limit is not None:
        out += f" LIMIT {to_sql(limit.expression, 'duckdb', scope)}"
        if limit.args.get("offset") is not None:
            out += f" OFFSET {to_sql(limit.args['offset'], 'duckdb', scope)}"
    offset = sel.args.get("offset")
    if offset is not None:
        out += f" OFFSET {to_sql(offset.expression, 'duckdb', scope)}"
    return out
