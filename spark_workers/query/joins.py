"""TDengine's joins on DuckDB: their rules, and the SQL of the ones standard SQL lacks.

TDengine SQL manual, "Join Queries" (3.3): INNER, LEFT/RIGHT/FULL [OUTER], LEFT/RIGHT SEMI,
LEFT/RIGHT ANTI, LEFT/RIGHT ASOF (``JLIMIT``, default 1) and LEFT/RIGHT WINDOW (``WINDOW_OFFSET``,
``JLIMIT``, default all) joins. The parser keeps the words standard SQL lacks on the ``exp.Join``
(:mod:`spark_workers.sql.parser.joins`); here, after the tables are bound (each one's READ privilege
checked by ``select.bind_sources``):

- **Rules** (:func:`check_joins`): inner/outer/semi/anti joins need the primary timestamp equality
  (``a.ts = b.ts``, ``timetruncate`` allowed) AND-ed into their condition (``0x2701``; none at all
  on an inner join is a cross join, ``0x2702``; one only under OR, ``0x2703``); ASOF's condition is
  at most one primary key comparison (``> >= = < <=``) and column equalities, WINDOW's only column
  equalities (``0x2703``); only inner joins nest or chain (``0x2664``); ASOF/WINDOW join tables, not
  subqueries (``0x2664``: the manual's "Only supports ASOF Join between tables, not between
  subqueries" and the same for Window Join, and TDengine's own tests ``tsim/join/left_asof_join.sim``
  / ``left_win_join`` refuse ``(select * from sta) a left asof|window join sta b``); JLIMIT is in
  [0, 1024] (``0x0200``); WINDOW_OFFSET has fixed units no finer than the precision (``0x2673``) and
  start <= end (``0x0200``).
- **Where**: an interactive SELECT and a 3.3.7 stream's computation (seed 002, "a computation task
  ... can be any type of query statement") both come here; a computation's placeholders reach the
  planner as marker columns (``query/compute.py``), named in ``constants``, which read as themselves
  over the join's rows; ``%%tbname`` as a join side is the trigger table (its Source).
- **Inner and outer joins** run as written; ``*`` is every column and tag of each table in FROM
  order (no ``tbname``), and without ORDER BY the rows come in the driving table's timestamp order
  (the left table's; a RIGHT JOIN's right table; FULL: either timestamp).
- **SEMI, ANTI, ASOF, WINDOW** (:func:`join_rows`) are computed first as rows with one column
  ``"alias.col"`` per column, tag and ``tbname`` of both tables (the form windows over joins use);
  the query's items, WHERE, GROUP BY, HAVING and ORDER BY are then read over those rows, so WHERE
  filters the join's result as TDengine does. SEMI keeps the first matching row of the other table,
  ANTI the driving rows without a match (the other table's columns NULL). ASOF and WINDOW number the
  other table's rows per group (the ON equalities) in timestamp order and find, with DuckDB's ASOF
  JOIN, where each driving row's matches begin and end; the matches are then read by position, so
  the cost is the rows read plus the rows returned (no pairwise comparison). In a window join,
  aggregates are per window (per driving row); HAVING must hold an aggregate (``0x2672``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.query.planner import Source, aggregate_call
from spark_workers.sql import ast, lexer
from spark_workers.sql.ast import join_spec
from spark_workers.sql.scope import Scope
from spark_workers.sql.translate import to_sql, to_tree
from spark_workers.tdtypes import TdType

JLIMIT_MAX = 1024  # TDengine's JOIN_JLIMIT_MAX_VALUE
SOURCE_META = "td_source"  # the Source a bound table reads (set by select.bind_sources)
RID = "__td_rid"
_J = "__td_j"
_POS, _FIRST, _LAST, _COUNT, _P = "__td_pos", "__td_first", "__td_last", "__td_n", "__td_p"
_FLIP: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.EQ: exp.EQ,
}
_CMP = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ)


@dataclass
class Side:
    """One table of a join: the alias the query names it by, its bound table node, its Source
    (None for a subquery)."""

    alias: str
    node: exp.Expr
    source: Source | None

    @property
    def ts(self) -> str | None:
        return self.source.table.columns[0].name if self.source is not None else None

    def flat(self) -> list[tuple[str, str]]:
        """``(column display name, flat name "alias.col")`` of every column, tag and tbname."""
        if self.source is None:
            return []
        return [(name, f"{self.alias}.{name}") for name, _t in self.source.columns.values()]

    def star(self) -> list[str]:
        """The display names ``*`` expands to: columns then tags (TDengine returns no tbname)."""
        if self.source is None:
            return []
        return [c.name for c in (*self.source.storage.columns, *self.source.storage.tags)]


@dataclass
class Plan:
    """A two-table SEMI/ANTI/ASOF/WINDOW join: the driving side, the other, the condition split
    into the main timestamp comparison (``other.ts <op> drive.ts`` as ``op``) and the equalities
    ``(drive expr, other expr)`` (the groups)."""

    spec: ast.JoinSpec
    drive: Side
    other: Side
    left: Side
    right: Side
    on: exp.Expr | None
    op: type[exp.Expr] = exp.LTE
    groups: list[tuple[exp.Expr, exp.Expr]] = field(default_factory=list)


def _err(message: str, sql: str, offset: int | None, code: int) -> SqlError:
    return SqlError(message, sql=sql, offset=offset, code=code)


def _at(node: exp.Expr) -> int | None:
    """Where an expression starts in the statement (its leftmost token: ``a`` of ``a.ts``)."""
    starts = [int(n.meta["start"]) for n in node.walk() if n.meta and "start" in n.meta]
    return min(starts) if starts else ast.offset_of(node)


def _span_start(spec: ast.JoinSpec, node: exp.Expr) -> int | None:
    return spec.span.start if spec.span is not None else _at(node)


def sides_of(sel: exp.Select, sql: str = "") -> list[Side]:
    """The FROM table and each joined table, with their Sources (after binding).

    Raises:
        SqlError: ``0x2663`` two tables under one name (``FROM t JOIN t``)."""
    out: list[Side] = []
    nodes = [sel.args["from_"].this, *(j.this for j in sel.args.get("joins") or [])]
    for n in nodes:
        alias = n.alias_or_name
        if any(s.alias.lower() == alias.lower() for s in out):
            raise _err(
                f"Not unique table/alias: '{alias}' (give the tables different aliases)",
                sql,
                _at(n),
                Code.NOT_UNIQUE_TABLE_ALIAS,
            )
        src = n.meta.get(SOURCE_META) if isinstance(n, exp.Table) else None
        out.append(Side(alias, n, src if isinstance(src, Source) else None))
    return out


def has_td_join(sel: exp.Expr) -> bool:
    """Whether a query holds a SEMI, ANTI, ASOF or WINDOW join anywhere."""
    return any(join_spec(j).kind for j in sel.find_all(exp.Join))


def check_nested(sel: exp.Expr, sql: str) -> None:
    """Only inner joins chain or nest (TDengine "Nested Join and Multi-table Join Limitations");
    SEMI/ANTI/ASOF/WINDOW joins are read in the outermost query only.

    Raises:
        SqlError: ``0x2664`` at the join."""
    joins = sel.args.get("joins") or []
    for j in sel.find_all(exp.Join):
        spec = join_spec(j)
        if j.args.get("using"):  # TDengine's grammar: join_on_clause only
            raise _err(
                "syntax error: JOIN ... USING is not part of TDengine SQL; write ON a.ts = b.ts",
                sql,
                _span_start(spec, j),
                Code.SYNTAX_ERROR,
            )
        inner = not spec.kind and spec.side in ("", "INNER")
        if j not in joins and spec.kind:
            raise _err(
                f"Not supported join since '{spec.kind.upper()} JOIN in a subquery'",
                sql,
                _span_start(spec, j),
                Code.NOT_SUPPORT_JOIN,
            )
        if j in joins and len(joins) > 1 and not inner:
            raise _err(
                "Not supported join since 'only INNER JOIN joins more than two tables'",
                sql,
                _span_start(spec, j),
                Code.NOT_SUPPORT_JOIN,
            )


def conjuncts(e: exp.Expr | None) -> list[exp.Expr]:
    """The AND-ed terms of a condition (parentheses dropped)."""
    if e is None:
        return []
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.And):
        return [*conjuncts(e.this), *conjuncts(e.expression)]
    return [e]


def _owner(col: exp.Column, sides: list[Side], sql: str) -> Side | None:
    """The side a column belongs to (by its qualifier, else by its name)."""
    if col.table:
        for s in sides:
            if s.alias.lower() == col.table.lower():
                return s
        return None
    found = [s for s in sides if s.source is not None and col.name.lower() in s.source.columns]
    if len(found) > 1:
        raise _err(f"ambiguous column name {col.name}", sql, _at(col), Code.AMBIGUOUS_COLUMN)
    return found[0] if found else None


def _primary(e: exp.Expr, sides: list[Side], sql: str) -> Side | None:
    """The side whose primary timestamp ``e`` is (``timetruncate`` of it counts; TDengine "Main
    Join Condition"); a subquery side's columns count as its timeline."""
    if isinstance(e, exp.Anonymous | exp.Func) and not isinstance(e, exp.Column):
        name = e.name.lower() if isinstance(e, exp.Anonymous) else e.sql_name().lower()
        if name != "timetruncate":
            return None
        args = list(e.expressions) if isinstance(e, exp.Anonymous) else [e.this]
        e = args[0] if args else e
    if not isinstance(e, exp.Column):
        return None
    s = _owner(e, sides, sql)
    if s is None:
        return None
    return s if s.ts is None or s.ts.lower() == e.name.lower() else None


def _ts_equality(term: exp.Expr, sides: list[Side], sql: str) -> bool:
    if not isinstance(term, exp.EQ):
        return False
    a, b = _primary(term.this, sides, sql), _primary(term.expression, sides, sql)
    return a is not None and b is not None and a is not b


def check_ts_equality(sel: exp.Select, sides: list[Side], sql: str) -> None:
    """Inner, outer, semi and anti joins: each joined table's condition holds the primary timestamp
    equality as an AND-ed term (an inner join's WHERE counts; TDengine "Join Condition Limitations").

    Raises:
        SqlError: ``0x2702`` an inner join without any condition, ``0x2703`` the equality only
            under OR, ``0x2701`` none."""
    where = sel.args.get("where")
    for k, j in enumerate(sel.args.get("joins") or []):
        spec = join_spec(j)
        if spec.kind in ("asof", "window"):
            continue
        inner = not spec.kind and spec.side in ("", "INNER")
        terms = conjuncts(j.args.get("on"))
        if inner:
            terms += conjuncts(where.this if where is not None else None)
        pair = [sides[i] for i in range(k + 2)]
        if any(_ts_equality(t, pair, sql) for t in terms):
            continue
        at = _span_start(spec, j)
        anywhere = [*(j.args.get("on") or exp.true()).find_all(exp.EQ)]
        if inner and where is not None:
            anywhere += list(where.find_all(exp.EQ))
        if any(_ts_equality(t, pair, sql) for t in anywhere):
            raise _err(
                "Not supported join conditions: the primary timestamp equality must be AND-ed with "
                "the other conditions",
                sql,
                at,
                Code.NOT_SUPPORT_JOIN_COND,
            )
        if inner and not terms:
            raise _err(
                "not support cross join: give the join a condition", sql, at, Code.NOT_SUPPORT_CROSS_JOIN
            )
        raise _err(
            "primary timestamp equal condition is expected in join conditions",
            sql,
            at,
            Code.EXPECTED_TS_EQUAL,
        )


def plan_td_join(sel: exp.Select, sides: list[Side], sql: str) -> Plan:
    """Check a SEMI/ANTI/ASOF/WINDOW join and split its condition (module docstring, Rules).

    Raises:
        SqlError: ``0x2664`` (a subquery side of ASOF/WINDOW, mixed precisions), ``0x2703`` (a
            condition the join type does not take), ``0x0200`` / ``0x2673`` (JLIMIT, WINDOW_OFFSET).
    """
    j = sel.args["joins"][0]
    spec = join_spec(j)
    left, right = sides[0], sides[1]
    drive, other = (right, left) if spec.side == "RIGHT" else (left, right)
    plan = Plan(spec, drive, other, left, right, j.args.get("on"))
    at = _span_start(spec, j)
    if spec.kind in ("asof", "window"):
        if left.source is None or right.source is None:  # TDengine's rule (module docstring)
            raise _err(
                f"Not supported join since 'only supports {spec.kind.upper()} JOIN between tables, not "
                "between subqueries'",
                sql,
                at,
                Code.NOT_SUPPORT_JOIN,
            )
        if left.source.db.precision != right.source.db.precision:
            raise _err(
                "Not supported join since 'the databases of the two tables have different precisions'",
                sql,
                at,
                Code.NOT_SUPPORT_JOIN,
            )
        _check_jlimit(spec, sql)
        _split_condition(plan, sql)
    if spec.kind == "window":
        assert drive.source is not None
        _check_offset(spec, drive.source.db.precision, sql)
    return plan


def _check_jlimit(spec: ast.JoinSpec, sql: str) -> None:
    if spec.jlimit is not None and not 0 <= spec.jlimit <= JLIMIT_MAX:
        raise _err(
            f"JLIMIT value is out of valid range [0, {JLIMIT_MAX}]",
            sql,
            spec.jlimit_span.start if spec.jlimit_span else None,
            Code.INVALID_OPERATION,
        )


def _check_offset(spec: ast.JoinSpec, precision: str, sql: str) -> None:
    assert spec.window_offset is not None
    at = spec.offset_span.start if spec.offset_span else None
    start, end = spec.window_offset
    for d in (start, end):
        if d.is_calendar:
            raise _err(
                f"Invalid window offset unit: {d} (natural months and years are not supported)",
                sql,
                at,
                Code.INVALID_WIN_OFFSET_UNIT,
            )
        try:
            d.in_precision(precision)
        except SqlError:
            raise _err(
                f"Invalid window offset unit: {d} is finer than the database precision {precision}",
                sql,
                at,
                Code.INVALID_WIN_OFFSET_UNIT,
            ) from None
    if start.ns > end.ns:
        raise _err(
            f"Invalid window offset: start {start} is after end {end}", sql, at, Code.INVALID_OPERATION
        )


def _split_condition(plan: Plan, sql: str) -> None:
    """ASOF: at most one primary key comparison and column equalities; WINDOW: column equalities."""
    pair = [plan.drive, plan.other]
    main_seen = False
    for term in conjuncts(plan.on):
        at = _at(term)
        if isinstance(term, _CMP):
            a, b = _primary(term.this, pair, sql), _primary(term.expression, pair, sql)
            if a is not None and b is not None and a is not b and plan.spec.kind == "asof" and not main_seen:
                main_seen = True
                if not (isinstance(term.this, exp.Column) and isinstance(term.expression, exp.Column)):
                    raise _err(
                        "timetruncate in an ASOF JOIN's main condition is not supported: compare the "
                        "primary keys themselves",
                        sql,
                        at,
                        Code.NOT_SUPPORTED,
                    )
                # normalise to "other.ts <op> drive.ts"
                plan.op = type(term) if a is plan.other else _FLIP[type(term)]
                continue
        if (
            isinstance(term, exp.EQ)
            and isinstance(term.this, exp.Column)
            and isinstance(term.expression, exp.Column)
        ):
            a_side = _owner(term.this, pair, sql)
            b_side = _owner(term.expression, pair, sql)
            prim = _primary(term.this, pair, sql) or _primary(term.expression, pair, sql)
            if a_side is not None and b_side is not None and a_side is not b_side and prim is None:
                x, y = (term.this, term.expression) if a_side is plan.drive else (term.expression, term.this)
                plan.groups.append((x, y))
                continue
        allowed = (
            "one primary key comparison and equalities between columns of the two tables"
            if plan.spec.kind == "asof"
            else "equalities between columns of the two tables (WINDOW_OFFSET gives the time range)"
        )
        raise _err(
            f"Not supported join conditions: the ON of a {plan.spec.kind.upper()} JOIN takes {allowed}",
            sql,
            at,
            Code.NOT_SUPPORT_JOIN_COND,
        )


def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def _col(table: str | None, name: str) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def _table(side: Side, alias: str) -> exp.Table:
    """Another reference to a side's view under ``alias``."""
    assert isinstance(side.node, exp.Table)
    return exp.Table(this=side.node.this.copy(), alias=exp.TableAlias(this=_ident(alias)))


def _derived(query: exp.Query, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=_ident(alias)))


def _window(fn: exp.Expr, part: list[exp.Expr], order: list[str], running: bool = False) -> exp.Window:
    spec = (
        exp.WindowSpec(kind="RANGE", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW")
        if running
        else None
    )
    return exp.Window(
        this=fn,
        partition_by=[p.copy() for p in part] or None,
        order=exp.Order(expressions=[exp.Ordered(this=_col(None, o)) for o in order]) if order else None,
        spec=spec,
    )


def _numbered(plan: Plan) -> exp.Select:
    """The other table's rows numbered per group in timestamp order: ``__td_pos`` (1-based; ties
    ordered by every column, so the numbering is the same at each reading), ``__td_first`` /
    ``__td_last`` (the positions of the first and last row of the row's timestamp), ``__td_n``."""
    o = plan.other
    assert o.source is not None and o.ts is not None
    part: list[exp.Expr] = [_col(None, g) for _, g in _group_names(plan)]
    every = [o.ts, *(n for n, _t in o.source.columns.values() if n.lower() != o.ts.lower())]
    items = [
        exp.Star(),
        exp.alias_(_window(exp.RowNumber(), part, every), _POS, quoted=True),
        exp.alias_(_window(exp.Anonymous(this="rank"), part, [o.ts]), _FIRST, quoted=True),
        exp.alias_(_window(exp.Count(this=exp.Star()), part, [o.ts], running=True), _LAST, quoted=True),
        exp.alias_(_window(exp.Count(this=exp.Star()), part, []), _COUNT, quoted=True),
    ]
    return exp.select(*items).from_(_table(o, o.alias))


def _group_names(plan: Plan) -> list[tuple[str, str]]:
    """``(driving column, other column)`` display names of the ON equalities."""
    out = []
    for x, y in plan.groups:
        assert isinstance(x, exp.Column) and isinstance(y, exp.Column)
        assert plan.drive.source is not None and plan.other.source is not None
        dx = plan.drive.source.columns.get(x.name.lower(), (x.name, None))[0]
        oy = plan.other.source.columns.get(y.name.lower(), (y.name, None))[0]
        out.append((dx, oy))
    return out


def _group_on(plan: Plan, drive: str, other: str) -> list[exp.Expr]:
    return [exp.EQ(this=_col(drive, x), expression=_col(other, y)) for x, y in _group_names(plan)]


def _and(terms: list[exp.Expr]) -> exp.Expr:
    out = terms[0]
    for t in terms[1:]:
        out = exp.And(this=out, expression=t)
    return out


def _offset(ts: exp.Expr, d: Duration) -> exp.Expr:
    if d.value == 0:
        return ts
    node = lexer.duration_interval(f"{abs(d.value)}{d.unit}")
    return exp.Add(this=ts, expression=node) if d.value > 0 else exp.Sub(this=ts, expression=node)


def _asof(plan: Plan, name: str, drive_ts: exp.Expr, op: type[exp.Expr]) -> exp.Join:
    """``ASOF LEFT JOIN <numbered other> AS name ON groups AND drive_ts <op> name.ts``."""
    assert plan.other.ts is not None
    on = [*_group_on(plan, plan.drive.alias, name), op(this=drive_ts, expression=_col(name, plan.other.ts))]
    return exp.Join(this=_derived(_numbered(plan), name), method="ASOF", side="LEFT", on=_and(on))


def _positions(plan: Plan) -> tuple[exp.Select, exp.Expr, exp.Expr, exp.Expr]:
    """The driving rows with the ASOF lookups: ``(select, no-match condition, lo, hi)`` (positions
    of the first and last matching row of the other table; module docstring)."""
    d = plan.drive
    items: list[exp.Expr] = [exp.Column(this=exp.Star(), table=_ident(d.alias))]
    items.append(exp.alias_(_window(exp.RowNumber(), [], []), RID, quoted=True))
    if plan.spec.kind == "window":
        joins, none, lo, hi = _window_bounds(plan, items)
    else:
        joins, none, lo, hi = _asof_bounds(plan, items)
    if plan.spec.jlimit == 0:
        none = exp.true()
    sel = exp.select(*items).from_(_table(d, d.alias))
    sel.set("joins", joins)
    return sel, none, lo, hi


_M1, _M2 = "__td_m1", "__td_m2"


def _minus_one(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    """``a + b - 1``."""
    return exp.Sub(this=exp.Add(this=a, expression=b), expression=exp.Literal.number(1))


def _window_bounds(plan: Plan, items: list[exp.Expr]) -> tuple[list[exp.Join], exp.Expr, exp.Expr, exp.Expr]:
    """WINDOW JOIN: the first row at or after ``ts + start``, the last at or before ``ts + end``,
    at most JLIMIT of them."""
    assert plan.spec.window_offset is not None and plan.drive.ts is not None
    dts = _col(plan.drive.alias, plan.drive.ts)
    start, end = plan.spec.window_offset
    joins = [
        _asof(plan, _M1, _offset(dts.copy(), start), exp.LTE),
        _asof(plan, _M2, _offset(dts.copy(), end), exp.GTE),
    ]
    items += [
        exp.alias_(_col(_M1, _FIRST), "__td_lo", quoted=True),
        exp.alias_(_col(_M2, _LAST), "__td_hi", quoted=True),
    ]
    lo, last = _col(None, "__td_lo"), _col(None, "__td_hi")
    none = exp.or_(lo.is_(exp.null()), last.is_(exp.null()), exp.GT(this=lo.copy(), expression=last.copy()))
    k = plan.spec.jlimit
    hi: exp.Expr = last
    if k is not None:
        hi = exp.Least(this=last, expressions=[_minus_one(lo.copy(), exp.Literal.number(k))])
    return joins, none, lo, hi


def _asof_bounds(plan: Plan, items: list[exp.Expr]) -> tuple[list[exp.Join], exp.Expr, exp.Expr, exp.Expr]:
    """ASOF JOIN: the JLIMIT rows nearest the driving row's timestamp on the operator's side."""
    assert plan.drive.ts is not None and plan.other.ts is not None
    op = plan.op
    dts = _col(plan.drive.alias, plan.drive.ts)
    joins = [_asof(plan, _M1, dts, exp.GTE if op is exp.EQ else _FLIP[op])]
    for src, alias in ((_FIRST, "__td_f"), (_LAST, "__td_l"), (_COUNT, "__td_nn")):
        items.append(exp.alias_(_col(_M1, src), alias, quoted=True))
    items.append(exp.alias_(_col(_M1, plan.other.ts), "__td_mts", quoted=True))
    f, last, n = _col(None, "__td_f"), _col(None, "__td_l"), _col(None, "__td_nn")
    k = exp.Literal.number(1 if plan.spec.jlimit is None else plan.spec.jlimit)
    none: exp.Expr = f.is_(exp.null())
    lo: exp.Expr
    hi: exp.Expr
    if op in (exp.LT, exp.LTE):  # the other table's rows before: (last - k, last]
        lo = exp.Greatest(
            this=exp.Add(this=exp.Sub(this=last.copy(), expression=k), expression=exp.Literal.number(1)),
            expressions=[exp.Literal.number(1)],
        )
        hi = last.copy()
    else:  # after, or at (=): [first, first + k)
        lo = f.copy()
        hi = exp.Least(this=_minus_one(f.copy(), k), expressions=[last.copy() if op is exp.EQ else n])
        if op is exp.EQ:
            none = exp.or_(none, exp.NEQ(this=_col(None, "__td_mts"), expression=_col(None, plan.drive.ts)))
    return joins, none, lo, hi


def _flat_items(plan: Plan) -> list[exp.Expr]:
    """``"alias.col"`` of both tables (FROM order), then the driving row id."""
    items: list[exp.Expr] = []
    for s in (plan.left, plan.right):
        items += [exp.alias_(_col(s.alias, n), flat, quoted=True) for n, flat in s.flat()]
    return items


def join_rows(plan: Plan) -> exp.Select:
    """The rows of a SEMI/ANTI/ASOF/WINDOW join: one column ``"alias.col"`` per column, tag and
    ``tbname`` of both tables, and ``__td_rid`` (the driving row's number); module docstring."""
    d, o = plan.drive, plan.other
    assert d.ts is not None and o.ts is not None
    kind = plan.spec.kind
    rid = exp.alias_(_col(d.alias, RID), RID, quoted=True)
    if kind == "semi":
        numbered = exp.select(exp.Star(), exp.alias_(_window(exp.RowNumber(), [], []), RID, quoted=True))
        numbered = numbered.from_(_table(d, d.alias))
        first = _window(exp.RowNumber(), [_col(d.alias, RID)], [])
        first.set("order", exp.Order(expressions=[exp.Ordered(this=_col(o.alias, o.ts))]))
        sel = exp.select(*_flat_items(plan), rid).from_(_derived(numbered, d.alias))
        sel = sel.join(
            _table(o, o.alias), on=plan.on.copy() if plan.on is not None else exp.true(), join_type="INNER"
        )
        return sel.qualify(exp.EQ(this=first, expression=exp.Literal.number(1)))
    if kind == "anti":
        exists = exp.Exists(
            this=exp.select(exp.Literal.number(1))
            .from_(_table(o, o.alias))
            .where(plan.on.copy() if plan.on is not None else exp.true())
        )
        sel = exp.select(*_flat_items(plan), exp.alias_(exp.Literal.number(0), RID, quoted=True))
        sel = sel.from_(_table(d, d.alias)).join(_table(o, o.alias), on=exp.false(), join_type="LEFT")
        return sel.where(exp.Not(this=exists))
    looked, none, lo, hi = _positions(plan)
    plist = exp.Case(
        ifs=[
            exp.If(
                this=none,
                true=exp.Cast(this=exp.Array(expressions=[exp.null()]), to=exp.DataType.build("BIGINT[]")),
            )
        ],
        default=exp.Anonymous(
            this="range", expressions=[lo, exp.Add(this=hi, expression=exp.Literal.number(1))]
        ),
    )
    spread = exp.select(exp.Star(), exp.alias_(exp.Explode(this=plist), _P, quoted=True))
    spread = spread.from_(_derived(looked, d.alias))
    on = [*_group_on(plan, d.alias, o.alias), exp.EQ(this=_col(o.alias, _POS), expression=_col(d.alias, _P))]
    sel = exp.select(*_flat_items(plan), rid).from_(_derived(spread, d.alias))
    return sel.join(_derived(_numbered(plan), o.alias), on=_and(on), join_type="LEFT")


@dataclass
class Names:
    """How the query's column names read over flat join rows: ``(alias, col)`` and ``col`` (lower
    case) -> flat names."""

    qualified: dict[tuple[str, str], str] = field(default_factory=dict)
    bare: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, sides: list[Side]) -> Names:
        n = cls()
        for s in sides:
            for name, flat in s.flat():
                n.qualified[(s.alias.lower(), name.lower())] = flat
                n.bare.setdefault(name.lower(), []).append(flat)
        return n


def _reader(names: Names, sql: str, aliases: frozenset[str]):
    """A transform reading the query's column names over the flat join rows; names in ``aliases``
    (select aliases, a computation's placeholder markers) stay as they are."""

    def visit(n: exp.Expr) -> exp.Expr:
        if not isinstance(n, exp.Column) or isinstance(n.this, exp.Star):
            return n
        if n.table:
            flat = names.qualified.get((n.table.lower(), n.name.lower()))
            if flat is None:
                raise _err(f"invalid column name {n.table}.{n.name}", sql, _at(n), Code.INVALID_COLUMN)
            return _col(None, flat)
        found = names.bare.get(n.name.lower(), [])
        if len(found) > 1:
            raise _err(
                f"ambiguous column name {n.name}: qualify it ({', '.join(found)})",
                sql,
                _at(n),
                Code.AMBIGUOUS_COLUMN,
            )
        if found:
            return _col(None, found[0])
        if n.name.lower() in aliases:
            return n
        raise _err(f"invalid column name {n.name}", sql, _at(n), Code.INVALID_COLUMN)

    return visit


def expand_stars(sel: exp.Select, sides: list[Side], item_texts: list[str]) -> list[str] | None:
    """Expand ``*`` (every table's columns and tags, FROM order) and ``a.*``; return the output
    names (alias, column name, else the item as written), or None when a subquery's ``*`` is left
    for DuckDB to expand (its columns name themselves)."""
    items: list[exp.Expr] = []
    names: list[str] = []
    known = True
    for i, item in enumerate(sel.expressions):
        star_of = None
        if isinstance(item, exp.Star):
            star_of = sides
        elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            star_of = [s for s in sides if s.alias.lower() == item.table.lower()]
        if star_of:
            for s in star_of:
                if s.source is None:
                    items.append(exp.Column(this=exp.Star(), table=_ident(s.alias)))
                    known = False
                for c in s.star():
                    items.append(_col(s.alias, c))
                    names.append(c)
            continue
        items.append(item)
        if isinstance(item, exp.Alias):
            names.append(item.alias)
        elif isinstance(item, exp.Column):
            names.append(item.name)
        else:
            names.append(item_texts[i] if i < len(item_texts) else item.sql())
    sel.set("expressions", items)
    return names if known else None


def _aggregated(sel: exp.Select) -> bool:
    return any(
        aggregate_call(n) or isinstance(n, exp.AggFunc) for item in sel.expressions for n in item.walk()
    )


def over_join_rows(
    sel: exp.Select, plan: Plan, q: ast.SelectQuery, sql: str, constants: frozenset[str] = frozenset()
) -> tuple[exp.Select, list[str]]:
    """The query read over :func:`join_rows` (module docstring); returns it and its output names.
    ``constants``: lower-case names of placeholder markers (a stream's computation).

    Raises:
        SqlError: ``0x2664`` GROUP BY / PARTITION BY / a window clause with a WINDOW JOIN,
            ``0x2672`` a window join's HAVING without an aggregate, unknown (``0x2602``) or
            ambiguous (``0x2604``) column names."""
    at = _span_start(plan.spec, sel.args["joins"][0])
    window = plan.spec.kind == "window"
    if window and (sel.args.get("group") or q.partition_by or q.window is not None):
        raise _err(
            "Not supported join since 'a WINDOW JOIN query cannot have GROUP BY, PARTITION BY or a "
            "window clause'",
            sql,
            at,
            Code.NOT_SUPPORT_JOIN,
        )
    out = sel.copy()
    expanded = expand_stars(out, [plan.left, plan.right], q.item_texts)
    assert expanded is not None  # both sides are tables
    out_names = expanded
    aliases = constants | frozenset(i.alias.lower() for i in out.expressions if isinstance(i, exp.Alias))
    visit = _reader(Names.of([plan.left, plan.right]), sql, aliases)
    items = []
    for item, name in zip(out.expressions, out_names, strict=True):
        new = item.transform(visit)
        named = isinstance(item, exp.Column) and item.name.lower() not in constants  # markers: replaced
        items.append(exp.alias_(new, name, quoted=True) if named else new)
    out.set("expressions", items)
    out.set("joins", None)
    for key in ("where", "group", "having", "order", "qualify"):
        if out.args.get(key) is not None:
            out.set(key, out.args[key].transform(visit))
    having = out.args.get("having")
    if (
        window
        and having is not None
        and not any(aggregate_call(n) or isinstance(n, exp.AggFunc) for n in having.walk())
    ):
        raise _err(
            "Invalid window join having expression: HAVING filters each window by an aggregate",
            sql,
            _at(sel.args["having"]),
            Code.INVALID_WJOIN_HAVING_EXPR,
        )
    agg = _aggregated(out)
    if window and agg:  # aggregates per window: per driving row
        keys = [_col(None, RID), *(_col(None, f) for _n, f in plan.drive.flat())]
        out.set("group", exp.Group(expressions=keys))
    if not out.args.get("order") and not out.args.get("group") and not agg and not out.args.get("distinct"):
        assert plan.drive.ts is not None and plan.other.ts is not None
        order = [f"{plan.drive.alias}.{plan.drive.ts}", f"{plan.other.alias}.{plan.other.ts}", RID]
        out.set("order", exp.Order(expressions=[exp.Ordered(this=_col(None, o)) for o in order]))
    elif window and agg and not out.args.get("order"):
        assert plan.drive.ts is not None
        out.set(
            "order",
            exp.Order(expressions=[exp.Ordered(this=_col(None, f"{plan.drive.alias}.{plan.drive.ts}"))]),
        )
    return out, out_names


def _default_order(sel: exp.Select, sides: list[Side]) -> None:
    """Inner/outer joins without ORDER BY: the driving table's timestamp order (TDengine "Query
    Result Order Limitations"; FULL JOIN has no driving table: either timestamp)."""
    if sel.args.get("order") or sel.args.get("group") or sel.args.get("distinct") or _aggregated(sel):
        return
    joins = sel.args.get("joins") or []
    side = join_spec(joins[0]).side if len(joins) == 1 else ""
    if any(s.ts is None for s in sides):
        return
    left, right = sides[0], sides[-1]
    assert left.ts is not None and right.ts is not None
    keys = [_col(left.alias, left.ts), _col(right.alias, right.ts)]  # FULL: unmatched right rows last
    if side == "RIGHT":
        keys.reverse()
    sel.set("order", exp.Order(expressions=[exp.Ordered(this=k) for k in keys]))


@dataclass
class JoinQuery:
    """A query with joins ready for DuckDB: the query, its output names, and for SEMI/ANTI/ASOF/
    WINDOW joins the plan whose rows (:func:`join_rows`) the query reads."""

    select: exp.Select
    names: list[str] | None
    plan: Plan | None = None
    direct: ast.JoinSpec | None = None  # a SEMI/ANTI join with a subquery side

    def sql(self, scope: Scope) -> str:
        """DuckDB SQL; ``scope`` is the joined tables' names (``select.query_scope``)."""
        if self.direct is not None:
            return render_direct(self.select, self.direct, scope)
        if self.plan is None:
            return to_sql(self.select, "duckdb", scope)
        return render_over_rows(self.select, self.plan, scope)


def render_direct(sel: exp.Select, spec: ast.JoinSpec, scope: Scope) -> str:
    """DuckDB SQL of a SEMI/ANTI join with a subquery side, whose columns are not known before it
    runs: the query translated as written, then its join rewritten in place — SEMI: the driving
    table ``JOIN LATERAL (SELECT * FROM other WHERE on LIMIT 1)`` (one matching row, under the
    other table's alias); ANTI: the driving table ``LEFT JOIN other ON FALSE`` (its columns NULL)
    ``WHERE NOT EXISTS (SELECT 1 FROM other WHERE on)`` AND the query's WHERE."""
    plain = sel.copy()
    for j in plain.args.get("joins") or []:
        j.meta.pop(ast.TD_JOIN, None)
    tree = to_tree(plain, "duckdb", scope)
    assert isinstance(tree, exp.Select)
    join = tree.args["joins"][0]
    left, right, on = tree.args["from_"].this, join.this, join.args.get("on") or exp.true()
    drive, other = (right, left) if spec.side == "RIGHT" else (left, right)
    alias = exp.TableAlias(this=_ident(other.alias_or_name))
    if spec.kind == "semi":
        one = exp.select(exp.Star()).from_(other.copy()).where(on.copy()).limit(1)
        new_join = exp.Join(this=exp.Lateral(this=exp.Subquery(this=one), alias=alias), on=exp.true())
    else:
        new_join = exp.Join(this=other.copy(), side="LEFT", on=exp.false())
        missing = exp.Not(
            this=exp.Exists(this=exp.select(exp.Literal.number(1)).from_(other.copy()).where(on.copy()))
        )
        where = tree.args.get("where")
        tree.set("where", exp.Where(this=exp.and_(missing, where.this) if where is not None else missing))
    tree.set("from_", exp.From(this=drive.copy()))
    tree.set("joins", [new_join])
    return tree.sql(dialect="duckdb", identify=True)


def render_over_rows(sel: exp.Select, plan: Plan, scope: Scope) -> str:
    """DuckDB SQL of a query over :func:`join_rows` (its FROM): the query translated with the flat
    names in scope, the rows (tdweb's own tree around the user's ON, checked with the statement)
    translated without the allow-list."""
    flat = Scope(
        {f.lower(): t for s in (plan.left, plan.right) for f, t in _flat_types(s)},
        f"{plan.drive.alias}.{plan.drive.ts}",
        scope.precision,
        scope.tz,
        timestamp_names=scope.timestamp_names,  # a computation's timestamp placeholders
    )
    outer = sel.copy()
    outer.set("from_", exp.From(this=exp.to_table(_J)))
    tree = to_tree(outer, "duckdb", flat)
    rows = to_tree(join_rows(plan), "duckdb", scope, checked=False)
    assert isinstance(rows, exp.Query)
    tree.set("from_", exp.From(this=_derived(rows, _J)))
    return tree.sql(dialect="duckdb", identify=True)


def _flat_types(s: Side) -> list[tuple[str, TdType]]:
    if s.source is None:
        return []
    return [(f"{s.alias}.{name}", t) for name, t in s.source.columns.values()]


def join_query(
    sel: exp.Select, q: ast.SelectQuery, sql: str, constants: frozenset[str] = frozenset()
) -> JoinQuery:
    """A bound query with joins, checked and ready for DuckDB (module docstring); ``constants``:
    lower-case names of a stream computation's placeholder markers.

    Raises:
        SqlError: the join rules (module docstring, Rules) with TDengine's codes, at the join."""
    check_nested(sel, sql)
    sides = sides_of(sel, sql)
    joins = sel.args["joins"]
    spec = join_spec(joins[0])
    check_ts_equality(sel, sides, sql)
    if spec.kind:
        if any(s.source is None for s in sides) and spec.kind in ("semi", "anti"):
            direct = JoinQuery(sel, expand_stars(sel, sides, q.item_texts), direct=spec)
            drive = sides[1] if spec.side == "RIGHT" else sides[0]
            plain = not (sel.args.get("order") or sel.args.get("distinct") or _aggregated(sel))
            if drive.ts is not None and plain:  # the driving table's order (a subquery's is its own)
                sel.set("order", exp.Order(expressions=[exp.Ordered(this=_col(drive.alias, drive.ts))]))
            return direct
        plan = plan_td_join(sel, sides, sql)
        out, out_names = over_join_rows(sel, plan, q, sql, constants)
        return JoinQuery(out, out_names, plan)
    names = expand_stars(sel, sides, q.item_texts)
    _default_order(sel, sides)
    return JoinQuery(sel, names)


def window_join_rows(sel: exp.Select, sql: str, ts_name: str, scope: Scope) -> str:
    """DuckDB SQL of the rows a window clause reads over a SEMI/ANTI/ASOF join: :func:`join_rows`
    filtered by WHERE, with the driving table's timestamp as ``ts_name`` (TDengine "Primary Key
    Timeline").

    Raises:
        SqlError: ``0x2664`` a WINDOW JOIN (TDengine: no window clause with it), the join rules."""
    check_nested(sel, sql)
    sides = sides_of(sel, sql)
    check_ts_equality(sel, sides, sql)
    plan = plan_td_join(sel, sides, sql)
    if plan.spec.kind == "window":
        raise _err(
            "Not supported join since 'a WINDOW JOIN query cannot have a window clause'",
            sql,
            _span_start(plan.spec, sel.args["joins"][0]),
            Code.NOT_SUPPORT_JOIN,
        )
    assert plan.drive.ts is not None
    visit = _reader(Names.of([plan.left, plan.right]), sql, frozenset())
    rows = exp.select(
        exp.alias_(_col(None, f"{plan.drive.alias}.{plan.drive.ts}"), ts_name, quoted=True), exp.Star()
    ).from_(exp.to_table(_J))
    where = sel.args.get("where")
    if where is not None:
        rows.set("where", where.transform(visit))
    return render_over_rows(rows, plan, scope)
