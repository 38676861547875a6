"""TDengine's multi-row and time-series functions, and the selection-function rule, as DuckDB
queries (non-window queries and 3.3.7 stream computations run on DuckDB).

Source: TDengine SQL manual, "Functions": Selection Functions (``top``, ``bottom``, ``sample``,
``tail``, ``unique``, ``cols``; "Users can specify the output of the ts column or other columns
... making it easy to know which data row the selected values originate from"), Time-Series
Specific Functions (``diff``, ``csum``, ``derivative``, ``mavg``, ``statecount``,
``stateduration``) and ``histogram`` (one row per bin, TDengine's ``histogramFinalize`` text).

A query with one of them is rewritten as three nested SELECTs over its FROM / WHERE rows:
``rows`` (the rows, with the PARTITION BY values ``__td_p<i>``), ``stage`` (DuckDB window
functions over each partition in timestamp order: ``__td_r<i>`` holds the function's value and
``__td_k<i>`` whether the row is output) and the outer SELECT (the select items, the function
replaced by its value; ORDER BY, LIMIT). Per table or PARTITION BY group (``query/select.py``
passes PARTITION BY as the GROUP BY of the tree); rows are ordered by (timestamp, composite key).

Rules (manual): ``diff`` compares with the previous non-NULL value; ignore_option 1/3 turn
negative results to NULL, 2/3 drop rows whose result is NULL; the first row of a series has no
result (no row). ``csum`` / ``mavg`` / ``derivative`` skip NULL rows; ``mavg`` outputs from the
k-th value on; ``derivative`` = (v - v_prev) / ((t - t_prev) / time_interval), negative results
dropped with ignore_negative 1. ``statecount`` / ``stateduration`` output every row: NULL for a
NULL value (it does not break a run), -1 when the condition is false, else the count of rows /
the time since the run's first row (in ``unit``, default the database precision). ``top`` /
``bottom`` the k largest / smallest non-NULL values, ``sample`` k random non-NULL rows, ``tail``
the last k rows after skipping ``offset`` (NULLs kept), ``unique`` the earliest row of every
value; all in timestamp order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql.aggregate_functions import (
    FUNCTIONS,
    ROW_FUNCTIONS,
    STATE_OPERATORS,
    call_args,
    check_types,
    constant,
    histogram_bins,
    spec_of,
)
from spark_workers.sql.ast import offset_of
from spark_workers.sql.scope import Scope

ToSql = Callable[[exp.Expr, str, Scope], str]
_SMALLEST_KEY = frozenset({"diff", "derivative"})
_INTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOL", "TIMESTAMP"})
_INTS |= frozenset(f"{t} UNSIGNED" for t in ("TINYINT", "SMALLINT", "INT", "BIGINT"))
_EPOCH = {"ms": "epoch_ms", "us": "epoch_us", "ns": "epoch_ns"}
_PER_US = {"ms": 1000, "us": 1, "ns": 0.001}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _own_nodes(item: exp.Expr) -> list[exp.Expr]:
    """Nodes of a select item outside its subqueries."""
    out, stack = [], [item]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(ch for ch in n.iter_expressions() if not isinstance(ch, exp.Subquery | exp.Select))
    return out


def row_calls(sel: exp.Select) -> list[exp.Expr]:
    """The multi-row / time-series calls of a SELECT's items (not of its subqueries)."""
    calls = []
    for item in sel.expressions:
        for n in _own_nodes(item):
            spec = spec_of(n)
            if spec is not None and spec.name in ROW_FUNCTIONS:
                calls.append(n)
    return calls


@dataclass
class _Plan:
    """The window columns of one call: stage columns (alias -> SQL), computed over the rows
    (``first``) and over those (``second``), the value and the keep condition."""

    first: dict[str, str] = field(default_factory=dict)
    second: dict[str, str] = field(default_factory=dict)
    value: str = "NULL"
    keep: str = "TRUE"
    grouped: bool = False  # histogram: one row per (group, bin)


class _Ctx:
    def __init__(self, scope: Scope, parts: list[str], backend: str, to_sql: ToSql) -> None:
        if scope.ts_column is None:
            raise SqlError(
                "time-series functions need a table with a timestamp column", code=Code.INVALID_FUNCTION
            )
        self.scope, self.parts, self.backend, self.to_sql = scope, parts, backend, to_sql
        self.ts = _q(scope.ts_column)
        self.order = self.ts + (f", {_q(scope.key_column)}" if scope.key_column else "")
        self.us = f"epoch_us({self.ts})"

    def over(self, *, extra: str = "", order: str | None = None, frame: str = "") -> str:
        parts = [*self.parts, *([extra] if extra else [])]
        by = f"PARTITION BY {', '.join(parts)} " if parts else ""
        return f"OVER ({by}ORDER BY {order or self.order}{' ' + frame if frame else ''})"

    def sql(self, e: exp.Expr) -> str:
        return self.to_sql(_unqualified(e), self.backend, self.scope)

    def typed(self, e: exp.Expr) -> tuple[str, bool]:
        """The argument's SQL as a number (bool -> 0/1, timestamp -> epoch in the precision) and
        whether it is an integer type."""
        text = self.sql(e)
        t = self.scope.columns.get(e.name.lower()) if isinstance(e, exp.Column) else None
        if t is not None and t.name == "TIMESTAMP":
            return f"{_EPOCH[self.scope.precision]}({text})", True
        if t is not None and t.name == "BOOL":
            return f"CAST({text} AS BIGINT)", True
        return text, t is not None and t.name in _INTS

    def unit_us(self, arg: exp.Expr | None) -> float:
        d = constant(arg) if arg is not None else None
        return d.ns / 1000 if isinstance(d, Duration) else _PER_US[self.scope.precision]


def _unqualified(e: exp.Expr) -> exp.Expr:
    """``t.c`` -> ``c``: the rewrite reads the rows of one FROM as a subquery."""
    return e.copy().transform(
        lambda n: exp.column(n.name, quoted=True) if isinstance(n, exp.Column) and n.table else n
    )


def _plan(call: exp.Expr, i: int, c: _Ctx) -> _Plan:
    spec = spec_of(call)
    assert spec is not None
    args = call_args(call)
    name = spec.name
    if name == "histogram":
        return _histogram(args, i, c)
    x = c.sql(args[0])
    nn = f"({x}) IS NULL"
    if name in ("top", "bottom", "sample"):
        k = int(float(constant(args[1])))  # type: ignore[arg-type]
        order = {"top": f"{x} DESC", "bottom": f"{x} ASC", "sample": f"__td_x{i}"}[name]
        rn = f"row_number() {c.over(extra=nn, order=f'{order}, {c.order}')}"
        keep = f"NOT {nn} AND __td_n{i} <= {k}"
        if name == "sample":  # DuckDB orders windows by stable values only: draw first
            return _Plan({f"__td_x{i}": "random()"}, {f"__td_n{i}": rn}, value=x, keep=keep)
        return _Plan({f"__td_n{i}": rn}, value=x, keep=keep)
    if name == "tail":
        k = int(float(constant(args[1])))  # type: ignore[arg-type]
        off = int(float(constant(args[2]))) if len(args) > 2 else 0  # type: ignore[arg-type]
        desc = ", ".join(f"{o} DESC" for o in c.order.split(", "))
        rn = f"row_number() {c.over(order=desc)}"
        return _Plan({f"__td_n{i}": rn}, value=x, keep=f"__td_n{i} > {off} AND __td_n{i} <= {off + k}")
    if name == "unique":
        rn = f"row_number() {c.over(extra=x)}"
        return _Plan({f"__td_n{i}": rn}, value=x, keep=f"__td_n{i} = 1")
    return _time_series(name, args, i, c)


def _time_series(name: str, args: list[exp.Expr], i: int, c: _Ctx) -> _Plan:
    v, integer = c.typed(args[0])
    nn = f"({v}) IS NULL"
    cast = "BIGINT" if integer else "DOUBLE"
    n = f"__td_n{i}"
    if name == "diff":
        opt = int(float(constant(args[1]))) if len(args) > 1 else 0  # type: ignore[arg-type]
        before = c.over(frame="ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING")
        prev = f"last_value(CAST({v} AS {cast}) IGNORE NULLS) {before}"
        d = f"(CAST({v} AS {cast}) - {prev})"
        value = f"(CASE WHEN {d} < 0 THEN NULL ELSE {d} END)" if opt in (1, 3) else d
        keep = f"{n} > 1" + (f" AND __td_r{i} IS NOT NULL" if opt in (2, 3) else "")
        return _Plan({n: f"row_number() {c.over()}", f"__td_r{i}": value}, keep=keep, value=f"__td_r{i}")
    if name == "csum":
        s = f"CAST(sum({v}) {c.over(extra=nn, frame='ROWS UNBOUNDED PRECEDING')} AS {cast})"
        return _Plan({f"__td_r{i}": s}, value=f"__td_r{i}", keep=f"NOT {nn}")
    if name == "mavg":
        k = int(float(constant(args[1])))  # type: ignore[arg-type]
        last_k = c.over(extra=nn, frame=f"ROWS BETWEEN {k - 1} PRECEDING AND CURRENT ROW")
        avg = f"avg(CAST({v} AS DOUBLE)) {last_k}"
        first = {f"__td_r{i}": avg, n: f"row_number() {c.over(extra=nn)}"}
        return _Plan(first, value=f"__td_r{i}", keep=f"NOT {nn} AND {n} >= {k}")
    if name == "derivative":
        unit = c.unit_us(args[1])
        neg = float(constant(args[2])) == 1.0  # type: ignore[arg-type]
        dv = f"(CAST({v} AS DOUBLE) - lag(CAST({v} AS DOUBLE)) {c.over(extra=nn)})"
        dt = f"(({c.us} - lag({c.us}) {c.over(extra=nn)}) / {unit!r})"
        keep = f"NOT {nn} AND __td_r{i} IS NOT NULL" + (f" AND __td_r{i} >= 0" if neg else "")
        return _Plan({f"__td_r{i}": f"({dv} / NULLIF({dt}, 0))"}, value=f"__td_r{i}", keep=keep)
    # statecount / stateduration: runs of rows meeting the condition, NULL rows skipped
    oper = STATE_OPERATORS[str(constant(args[1])).lower()]
    val = float(constant(args[2]))  # type: ignore[arg-type]
    cond = f"(CAST({v} AS DOUBLE) {oper} {val!r})"
    upto = c.over(frame="ROWS UNBOUNDED PRECEDING")
    first = {
        f"__td_c{i}": cond,
        f"__td_f{i}": f"sum(CASE WHEN NOT {cond} THEN 1 ELSE 0 END) {upto}",
    }
    run = c.over(extra=f"__td_f{i}", frame="ROWS UNBOUNDED PRECEDING")
    if name == "statecount":
        inside = f"sum(CASE WHEN __td_c{i} THEN 1 ELSE 0 END) {run}"
    else:
        unit = c.unit_us(args[3] if len(args) > 3 else None)
        start = f"min(CASE WHEN __td_c{i} THEN {c.us} END) {run}"
        inside = f"CAST(trunc(({c.us} - {start}) / {unit!r}) AS BIGINT)"
    value = f"CAST(CASE WHEN __td_c{i} IS NULL THEN NULL WHEN __td_c{i} THEN {inside} ELSE -1 END AS BIGINT)"
    return _Plan(first, {f"__td_r{i}": value}, value=f"__td_r{i}")


def _histogram(args: list[exp.Expr], i: int, c: _Ctx) -> _Plan:
    bins, normalized = histogram_bins("histogram", args, None)
    v = f"CAST({c.sql(args[0])} AS DOUBLE)"
    counts = [f"count(*) FILTER (WHERE {v} > {_num(lo)} AND {v} <= {_num(hi)})" for lo, hi in bins]
    total = " + ".join(counts)
    parts = []
    for k, ((lo, hi), n) in enumerate(zip(bins, counts, strict=True)):
        head = '{"lower_bin":%g, "upper_bin":%g, "count":' % (lo, hi)  # noqa: UP031 (C's %g)
        body = f"printf('%f', CASE WHEN ({total}) = 0 THEN 0.0 ELSE {n} / ({total}) END)" if normalized else n
        parts.append(f"{{'i': {k}, 's': '{head}' || CAST({body} AS VARCHAR) || '}}'}}")
    return _Plan({f"__td_h{i}": f"unnest([{', '.join(parts)}])"}, value=f"__td_h{i}.s", grouped=True)


def _num(v: float) -> str:
    if v == float("inf"):
        return "'inf'::DOUBLE"
    if v == float("-inf"):
        return "'-inf'::DOUBLE"
    return repr(v)


def select_sql(sel: exp.Select, backend: str, scope: Scope, to_sql: ToSql) -> str:
    """DuckDB text of a SELECT with multi-row / time-series calls (see the module docstring);
    ``to_sql`` translates its pieces.

    Raises:
        SqlError: ``0x2800`` such a call mixed with aggregates, several multi-row calls or
            different time-series functions in one SELECT; ``0x0100`` on Spark.
    """
    if backend != "duckdb":
        raise SqlError("multi-row and time-series functions run on DuckDB only", code=Code.NOT_SUPPORTED)
    sel = sel.copy()
    calls = row_calls(sel)
    _check_mix(sel, calls)
    for call in calls:
        check_types(call, spec_of(call).name, scope)  # type: ignore[union-attr]
    group = sel.args.get("group")
    part_exprs = list(group.expressions) if group is not None else []
    n_parts = int(group.meta.get("td_partition", 0)) if group is not None else 0
    if len(part_exprs) > n_parts:  # a GROUP BY of the user's (query/select.py marks PARTITION BY's)
        raise SqlError(
            f"function {spec_of(calls[0]).name} cannot be used with GROUP BY: "  # type: ignore[union-attr]
            "multi-row and time-series functions compute per table or PARTITION BY group",
            offset=offset_of(part_exprs[n_parts]),
            code=Code.INVALID_FUNCTION,
        )
    rows = sel.copy()
    for key in ("group", "having", "order", "limit", "offset", "distinct"):
        rows.set(key, None)
    rows.set(
        "expressions",
        [exp.Star(), *(exp.alias_(p.copy(), f"__td_p{j}", quoted=True) for j, p in enumerate(part_exprs))],
    )
    rows_sql = to_sql(rows, backend, scope)
    c = _Ctx(scope, [_q(f"__td_p{j}") for j in range(len(part_exprs))], backend, to_sql)
    plans = [_plan(call, i, c) for i, call in enumerate(calls)]
    stage = f"({rows_sql}) AS __td_rows"
    if scope.key_column and any(spec_of(call).name in _SMALLEST_KEY for call in calls):  # type: ignore[union-attr]
        # manual, DIFF / DERIVATIVE: of the rows of one timestamp, the smallest composite key only
        first = f"row_number() {c.over(extra=c.ts, order=_q(scope.key_column))}"
        stage = f"(SELECT * FROM {stage} QUALIFY {first} = 1) AS __td_keyed"
    if any(p.grouped for p in plans):
        stage = _grouped_stage(sel, plans[0], c, stage)
    else:
        for layer in ("first", "second"):
            cols = [f"{e} AS {a}" for p in plans for a, e in getattr(p, layer).items()]
            if cols:
                stage = f"(SELECT *, {', '.join(cols)} FROM {stage}) AS __td_{layer}"
    values = {id(call): p.value for call, p in zip(calls, plans, strict=True)}
    if len(plans) > 1:  # several time-series functions: each value only on the rows it outputs
        values = {
            id(call): f"(CASE WHEN {p.keep} THEN {p.value} END)" for call, p in zip(calls, plans, strict=True)
        }
    keep = " OR ".join(f"({p.keep})" for p in plans)
    return _outer(sel, calls, values, keep, stage, c)


def _check_mix(sel: exp.Select, calls: list[exp.Expr]) -> None:
    names = {spec_of(c).name for c in calls}  # type: ignore[union-attr]
    kinds = {FUNCTIONS[n].kind for n in names}
    if len(calls) > 1 and "multi-row" in kinds:
        raise SqlError(
            f"functions {', '.join(sorted(names))} cannot be used together in one SELECT "
            "(TDengine allows one multi-row function per SELECT)",
            offset=offset_of(calls[0]),
            code=Code.INVALID_FUNCTION,
        )
    row_ids = {id(c) for c in calls}
    for item in sel.expressions:
        for n in _own_nodes(item):
            spec = spec_of(n)
            if spec is None or id(n) in row_ids or any(id(a) in row_ids for a in _ancestors(n)):
                continue
            if spec.kind in ("aggregate", "selection") or isinstance(n, exp.AggFunc):
                raise SqlError(
                    f"function {spec.name} cannot be mixed with {', '.join(sorted(names))}: "
                    "multi-row and time-series functions take no aggregates in the same SELECT",
                    offset=offset_of(calls[0]),
                    code=Code.INVALID_FUNCTION,
                )


def _ancestors(n: exp.Expr) -> list[exp.Expr]:
    out, p = [], n.parent
    while p is not None:
        out.append(p)
        p = p.parent
    return out


def _grouped_stage(sel: exp.Select, plan: _Plan, c: _Ctx, rows: str) -> str:
    """``histogram``: one row per (group, bin); the plain columns of the select items (tags,
    tbname of the PARTITION BY group) are carried as ``any_value``."""
    plain = sorted(
        {
            n.name
            for item in sel.expressions
            for n in item.find_all(exp.Column)
            if not any(spec_of(a) is not None for a in _ancestors(n))
        }
    )
    cols = [*c.parts, *(f"any_value({_q(p)}) AS {_q(p)}" for p in plain)]
    ((alias, expr),) = plan.first.items()
    group = f" GROUP BY {', '.join(c.parts)}" if c.parts else ""
    inner = f"(SELECT {', '.join([*cols, f'{expr} AS {alias}'])} FROM {rows}{group}) AS __td_g"
    c.order = f"{alias}.i"
    return inner


def _outer(
    sel: exp.Select, calls: list[exp.Expr], values: dict[int, str], keep: str, stage: str, c: _Ctx
) -> str:
    marks = {id(call): f"__td_v{i}" for i, call in enumerate(calls)}

    def swap(n: exp.Expr) -> exp.Expr:
        if id(n) in marks:
            return exp.column(marks[id(n)], quoted=True)
        return n

    items = []
    for item in sel.expressions:
        new = item.transform(swap, copy=False)
        items.append(c.to_sql(_unqualified(new), c.backend, c.scope))
    text = ", ".join(items)
    for i, call in enumerate(calls):
        text = text.replace(_q(f"__td_v{i}"), values[id(call)])
    order_by = sel.args.get("order")
    if order_by is not None:
        terms = []
        for o in order_by.expressions:
            t = c.to_sql(_unqualified(o.this.transform(swap, copy=False)), c.backend, c.scope)
            for i, call in enumerate(calls):
                t = t.replace(_q(f"__td_v{i}"), values[id(call)])
            terms.append(t + (" DESC" if o.args.get("desc") else ""))
        order = ", ".join(terms)
    else:
        order = ", ".join([*c.parts, c.order])
    out = f"SELECT {text} FROM {stage} WHERE {keep} ORDER BY {order}"
    limit = sel.args.get("limit")
    if limit is not None:
        out += f" LIMIT {limit.expression.sql()}"
        if limit.args.get("offset") is not None:
            out += f" OFFSET {limit.args['offset'].sql()}"
    if sel.args.get("offset") is not None:
        out += f" OFFSET {sel.args['offset'].expression.sql()}"
    return out


# ------------------------------------------------------------------ the selection-function rule

_SELECTORS = frozenset({"min", "max", "first", "last", "last_row"})


def selection_rule(sel: exp.Select, scope: Scope) -> None:
    """TDengine's selection-function rule, in place: with one single-row selection function
    (``max``, ``min``, ``first``, ``last``, ``last_row``) a plain column of the select items
    (not a GROUP BY / PARTITION BY value) is the column of the selected row
    (``select max(c1), c2, ts from t``); ``cols(f(x), e)`` is ``e`` of ``f``'s row."""
    _first_last_rows(sel)
    group = sel.args.get("group")
    keys = {g.sql() for g in group.expressions} if group is not None else set()
    calls: dict[str, exp.Expr] = {}
    for item in sel.expressions:
        for n in _own_nodes(item):
            spec = spec_of(n)
            if spec is not None and spec.name in _SELECTORS and not any(_is_cols(a) for a in _ancestors(n)):
                calls.setdefault(n.sql(), n)
    for item in sel.expressions:
        for n in list(_own_nodes(item)):
            if _is_cols(n):
                args = call_args(n)
                n.replace(_selected(args[1].copy(), args[0], scope))
    if len(calls) != 1:
        return
    (call,) = calls.values()
    for item in sel.expressions:
        for n in list(_own_nodes(item)):
            if not isinstance(n, exp.Column) or n.sql() in keys:
                continue
            if any(_aggregated(a) for a in _ancestors(n)):
                continue
            n.replace(_selected(n.copy(), call, scope))


def _first_last_rows(sel: exp.Select) -> None:
    """A SELECT of ``first`` / ``last`` / ``last_row`` calls only has no row for a group whose
    values are all NULL (manual, FIRST / LAST: "If all columns in the result set are NULL, no
    results are returned"; ``last_row``: a group without rows has no last row)."""
    if sel.args.get("having") is not None or not sel.expressions:
        return
    calls = [i.this if isinstance(i, exp.Alias) else i for i in sel.expressions]
    names = [s.name if (s := spec_of(c)) is not None else None for c in calls]
    if not all(n in ("first", "last", "last_row") for n in names):
        return
    if all(n == "last_row" for n in names):
        cond: exp.Expr = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
    else:
        nulls = exp.and_(*(exp.Is(this=c.copy(), expression=exp.Null()) for c in calls))
        cond = exp.Not(this=exp.Paren(this=nulls))
    sel.set("having", exp.Having(this=cond))


def _aggregated(a: exp.Expr) -> bool:
    """An aggregate call, or a selected column this rule built (``arg_max_null(...)``)."""
    if isinstance(a, exp.Anonymous) and str(a.name) in ("arg_min_null", "arg_max_null"):
        return True
    return spec_of(a) is not None or isinstance(a, exp.AggFunc | exp.Filter)


def _is_cols(n: exp.Expr) -> bool:
    spec = spec_of(n)
    return spec is not None and spec.name == "cols"


def _selected(e: exp.Expr, call: exp.Expr, scope: Scope) -> exp.Expr:
    """``e`` of the row a selection call picks (DuckDB ``arg_max_null`` & co. keep NULL ``e``)."""
    spec = spec_of(call)
    assert spec is not None
    (arg,) = call_args(call)[:1]
    ts = exp.column(scope.ts_column, quoted=True) if scope.ts_column else None
    if spec.name in ("max", "min"):
        key: exp.Expr = arg.copy()
        if ts is not None:  # ties: the earliest row
            when = exp.Anonymous(this="epoch_us", expressions=[ts])
            key = exp.Tuple(expressions=[key, exp.Neg(this=when) if spec.name == "max" else when])
    elif ts is None:
        raise SqlError(f"{spec.name}() needs a table with a timestamp column", code=Code.INVALID_FUNCTION)
    else:
        key = ts
    fn = "arg_min_null" if spec.name in ("min", "first") else "arg_max_null"
    sel = exp.Anonymous(this=fn, expressions=[e, key])
    if spec.name == "last_row":
        return sel
    return exp.Filter(
        this=sel, expression=exp.Where(this=exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null())))
    )
