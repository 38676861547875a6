"""The computation of a TDengine 3.3.7 stream: any query, run for every trigger event of a
micro-batch together (seed 002 "Stream Processing Computation Tasks", "Placeholders").

A stream's trigger (a window, a PERIOD schedule, a SLIDING schedule) produces trigger events; each
event runs the stream's query with its placeholders "replaced with constant values at execution
time" (seed 002). This module does that for a whole micro-batch in one DuckDB query over the lake
snapshot (decision in docs/decisions.md):

1. the query is bound once per micro-batch: its tables become snapshot views (like an interactive
   SELECT), ``%%tbname`` / ``%%trows`` become a marker for the trigger table, placeholders become
   marker identifiers, and the translator turns it into DuckDB text once;
2. per event the markers are replaced by literals: the placeholder values, and the trigger table
   filtered to the event's subtable (``%%tbname``) or to the rows of the triggering window or
   period (``%%trows``: group values, time range, PRE_FILTER);
3. the events' queries run as one ``UNION ALL`` (in chunks of ``CHUNK`` events), each row tagged
   with its event's index ``__td_ev``.

Steps 2 and 3 are what the set-oriented path (``query/compute_set.py``, issue 17) proves it can
replace: the events as one relation whose columns are the placeholder values, joined with the rows
they read, one query for the micro-batch; the per-event path runs the shapes it does not rewrite
(and every shape when ``SET_ORIENTED`` is False, which the tests use to compare both).

A query with joins (every TDengine join type: inner, outer, SEMI, ANTI, ASOF, WINDOW) is planned in
step 1 by the interactive SELECT's join planner (``query/joins.py``, TDengine "Join Queries"), the
markers read there as constants and ``%%tbname`` as the trigger table; a query with a window clause
runs per event through the interactive window path (``select.window_arrow``), joins included.

Placeholders (seed 002 table): ``_twstart`` / ``_twend`` (TIMESTAMP), ``_twduration`` (precision
units), ``_twrownum``, ``_tgrpid`` (BIGINT), ``_tcurrent_ts`` / ``_tprev_ts`` / ``_tnext_ts``
(TIMESTAMP, sliding triggers), ``_tlocaltime`` / ``_tprev_localtime`` / ``_tnext_localtime``
(TIMESTAMP, system time; epoch nanoseconds in arithmetic, ``NS_PLACEHOLDERS``),
``%%n`` (the n-th PARTITION BY value), ``%%tbname`` (the subtable name
in SELECT / WHERE, the subtable in FROM).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from spark_workers import timestamps
from spark_workers.errors import Code, SqlError
from spark_workers.query import compute_set
from spark_workers.query.context import QueryContext
from spark_workers.query.duck import DuckSession, quote, sql_string
from spark_workers.query.joins import SOURCE_META, join_query
from spark_workers.query.planner import GroupColumn, Source, aggregate_call, output_type
from spark_workers.query.results import ResultColumn
from spark_workers.query.select import bind_sources, query_scope, result_columns, window_arrow
from spark_workers.sql import ast
from spark_workers.sql.aggregate_functions import expand_item
from spark_workers.sql.dialect import DIALECT
from spark_workers.sql.lexer import PARTITION_PREFIX, TBNAME, TROWS
from spark_workers.sql.parser import parse_expression, parse_one
from spark_workers.sql.sandbox import check_select
from spark_workers.sql.scope import Scope
from spark_workers.sql.translate import to_sql
from spark_workers.tdtypes import TdType

if TYPE_CHECKING:
    from spark_workers.lake.store import Lake

PH = "__td_ph_"
TRIGGER_SRC = "__td_trigsrc"
CHUNK = 256
# False forces the per-event path (tests compare both; query/compute_set.py)
SET_ORIENTED = True
TS_PLACEHOLDERS = frozenset(
    {
        "_twstart",
        "_twend",
        "_tcurrent_ts",
        "_tprev_ts",
        "_tnext_ts",
        "_tlocaltime",
        "_tprev_localtime",
        "_tnext_localtime",
    }
)
INT_PLACEHOLDERS = frozenset({"_twduration", "_twrownum", "_tgrpid"})
# system-time placeholders: "nanosecond precision" (seed 002, Placeholders): in arithmetic with a
# number and in casts to a number they are their epoch nanoseconds (BIGINT), as a TIMESTAMP of
# nanosecond precision is in TDengine: ``cast(_tlocaltime/1000000 AS TIMESTAMP)`` is the trigger
# time in a millisecond database (seed 002, "Scheduled Trigger" example); elsewhere (a select item,
# a comparison, ``_tlocaltime - 1h``) they are the trigger's time
NS_PLACEHOLDERS = frozenset({"_tlocaltime", "_tprev_localtime", "_tnext_localtime"})
NS_SUFFIX = "_ns"
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)
# errors of the statement limits keep their own code (docs/decisions.md, "SQL sandbox and limits")
_LIMIT_CODES = frozenset(
    {Code.TIMEOUT, Code.QUERY_MEM_EXHAUSTED, Code.RESULT_TOO_LARGE, Code.PERMISSION_DENIED}
)
# errors about a name the computation uses keep their code and point at the name
_NAME_CODES = frozenset(
    {Code.INVALID_COLUMN, Code.AMBIGUOUS_COLUMN, Code.INVALID_FUNCTION_NAME, Code.FUNC_PARA_TYPE}
)
_NAMED = re.compile(
    r"^(?:(?:invalid|ambiguous) column name|Invalid function name:|Invalid parameter data type :) ?(\w+)"
)
_MARK = re.compile(r'"(__td_ph_[A-Za-z0-9_]+|__td_trigsrc)"')


def _name_offset(sql: str, name: str) -> int | None:
    """0-based offset of the first use of identifier ``name`` in ``sql`` (not a qualified part,
    not a placeholder's suffix), or None."""
    m = re.search(rf"(?<![\w.%`]){re.escape(name)}(?!\w)", sql, re.IGNORECASE)
    return m.start() if m else None


def placeholder_key(col: exp.Column) -> str | None:
    """The placeholder a column reference stands for (``_twstart``, ``p1`` for ``%%1``,
    ``tbname`` for ``%%tbname``), or None."""
    if col.table:
        return None
    name = col.name.lower()
    if name in TS_PLACEHOLDERS or name in INT_PLACEHOLDERS:
        return name
    if name == TBNAME:
        return "tbname"
    if name.startswith(PARTITION_PREFIX) and name[len(PARTITION_PREFIX) :].isdigit():
        return "p" + name[len(PARTITION_PREFIX) :]
    return None


def numeric_use(col: exp.Expr) -> bool:
    """True when a placeholder column is used as a number: an operand of arithmetic whose other
    operand is not a duration (``_tlocaltime / 1000000``), or cast to a type other than TIMESTAMP
    (``cast(_tlocaltime AS BIGINT)``)."""
    node = col
    parent = node.parent
    while isinstance(parent, exp.Paren):
        node, parent = parent, parent.parent
    if isinstance(parent, _ARITHMETIC):
        other = parent.expression if parent.this is node else parent.this
        return not isinstance(other, exp.Interval)
    if isinstance(parent, exp.Cast):
        return not parent.to.is_type(exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ)
    return False


def _typed_null(t: TdType) -> exp.Expr:
    """``CAST(NULL AS t)``, or a bare NULL for a type the dialect cannot spell."""
    try:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(t.sql, dialect=DIALECT))
    except Exception:  # sqlglot's parse errors vary by type; the column keeps its own type anyway
        return exp.Null()


def _kept_by_force_output(item: exp.Expr) -> bool:
    """A select item FORCE_OUTPUT keeps: no table column (placeholders are constants), no
    aggregate, no subquery."""
    if item.find(exp.Star, exp.Subquery, exp.Select) is not None:
        return False
    if any(placeholder_key(c) is None for c in item.find_all(exp.Column)):
        return False
    return not any(aggregate_call(n) for n in item.walk())


def group_context(
    groups: list[GroupColumn], values: list[Any]
) -> tuple[dict[str, Any], str | None, list[Any]]:
    """What a trigger group gives its events: the ``%%n`` values (keys ``p1``, ``p2``...) and
    ``%%tbname`` (key ``tbname``, when the trigger groups by it), the subtable ``%%tbname`` reads
    (or None), and the ``(column, value)`` conditions selecting the group's rows (``%%trows``).
    ``values`` are the group's PARTITION BY values in order (the engine's group key)."""
    ph: dict[str, Any] = {f"p{i}": v for i, v in enumerate(values, start=1)}
    tb = None
    for i, g in enumerate(groups):
        if g.display.lower() == "tbname" and i < len(values):
            tb = values[i]
            ph["tbname"] = tb
    conds = [
        (g.expr.name, values[i] if i < len(values) else None)
        for i, g in enumerate(groups)
        if isinstance(g.expr, exp.Column)
    ]
    return ph, tb, conds


@dataclass
class TriggerEvent:
    """One trigger event's context.

    Attributes:
        values: placeholder key -> value: timestamps as epoch microseconds (UTC), integers,
            strings (``tbname``, string partition values), or None (SQL NULL).
        tbname: the subtable ``%%tbname`` reads (None: the whole trigger table).
        rows: ``%%trows`` of the event: (group conditions as (column, value) pairs, lowest
            timestamp, highest timestamp, whether the highest is inclusive), timestamps in the
            trigger table's precision; None where the event has no rows.
        rows_view: a DuckDB view holding the event's candidate rows (PERIOD: the rows written
            since the previous trigger) instead of the trigger table.
    """

    values: dict[str, Any]
    tbname: str | None = None
    rows: tuple[list[tuple[str, Any]], int | None, int | None, bool] | None = None
    rows_view: str | None = None


@dataclass
class Bound:
    """The query bound to one DuckDB session: its text with markers, and the trigger view."""

    duck: DuckSession
    text: str
    trigger_view: str
    names: list[str]
    sources: list[Source]
    pre_filter: str | None
    ts_column: str
    precision: str
    ts_types: set[str] = field(default_factory=set)


class Computation:
    """A stream's computation query (module docstring).

    Args:
        query: the query as written (``AS subquery``), in tdweb's TDengine dialect.
        trigger: the trigger table (``%%tbname`` / ``%%trows`` read it).
        default_db: database of unqualified table names (the stream's database).
        tz: server time zone (literals without a zone).
        pre_filter: PRE_FILTER expression (``%%trows`` sees only rows passing it).

    Raises:
        SqlError: the query is not a SELECT, or not TDengine's SQL
            (:func:`spark_workers.sql.sandbox.check_select`: DuckDB's table functions, file
            reads and settings functions are refused here, before any micro-batch runs).
    """

    def __init__(
        self,
        query: str,
        trigger: Source | None,
        *,
        default_db: str | None,
        tz: str,
        pre_filter: str | None = None,
        partition_types: list[TdType] | None = None,
    ) -> None:
        stmt = parse_one(query)
        if not isinstance(stmt, ast.Select):
            raise SqlError(
                "a stream's computation must be a query", sql=query, code=Code.INVALID_STREAM_QUERY
            )
        check_select(stmt.query, query)  # the front door: TDengine's SQL only
        if stmt.query.fill is not None and stmt.query.window is None:
            raise SqlError(
                "FILL needs an INTERVAL window clause",
                sql=query,
                offset=stmt.query.fill.span.start if stmt.query.fill.span else None,
                code=Code.INVALID_WINDOW,
            )
        self.sql = query
        self.q = stmt.query
        self.trigger = trigger
        self.default_db = default_db
        self.tz = tz
        self.pre_filter = parse_expression(pre_filter) if pre_filter else None
        self.partition_types = partition_types or []

    @classmethod
    def restore(
        cls,
        *,
        sql: str,
        q: ast.SelectQuery,
        trigger: Source | None,
        default_db: str | None,
        tz: str,
        pre_filter: exp.Expr | None,
        partition_types: list[TdType],
    ) -> Computation:
        """A computation from its parsed parts (a stored compiled stream, ``streams/stored.py``):
        nothing is parsed again."""
        c = cls.__new__(cls)
        c.sql, c.q, c.trigger, c.default_db, c.tz = sql, q, trigger, default_db, tz
        c.pre_filter, c.partition_types = pre_filter, partition_types
        return c

    def forced(self, types: list[TdType]) -> Computation:
        """The FORCE_OUTPUT query of this computation: one row per trigger whose query returned
        none, "all columns except constants (including constant-treated columns) ... set to NULL"
        (seed 002, Stream Processing Control Options). A select item is kept when it reads no
        table column and aggregates nothing (literals, placeholders, functions of them); every
        other item, and every item of ``SELECT *`` or a UNION, is ``CAST(NULL AS its type)``;
        ``types`` are the result columns' types, in order. The query has no FROM."""
        sel = self.q.select
        plain = isinstance(sel, exp.Select) and not any(isinstance(i, exp.Star) for i in sel.expressions)
        items: list[exp.Expr] = []
        for i, t in enumerate(types):
            item = sel.expressions[i] if plain and i < len(sel.expressions) else None
            if item is not None and _kept_by_force_output(item):
                items.append(item.copy())
            else:
                items.append(_typed_null(t))
        q = ast.SelectQuery(select=exp.select(*items), item_texts=list(self.q.item_texts))
        return Computation.restore(
            sql=self.sql,
            q=q,
            trigger=self.trigger,
            default_db=self.default_db,
            tz=self.tz,
            pre_filter=self.pre_filter,
            partition_types=self.partition_types,
        )

    # ------------------------------------------------------------------ binding
    def _expand(self, sel: exp.Expr, sources: list[Source]) -> list[str]:
        """Expand ``*`` in the select list to the first table's columns (and tags, for a
        supertable) and return the output column names: alias, column name (``%%tbname`` for the
        placeholder), else the item's text as written."""
        names: list[str] = []
        if not isinstance(sel, exp.Select):
            return names
        items: list[exp.Expr] = []
        for i, item in enumerate(sel.expressions):
            if isinstance(item, exp.Star):
                if not sources:
                    raise SqlError("SELECT * needs a table", sql=self.sql, code=Code.INVALID_STREAM_QUERY)
                src = sources[0]
                cols = (
                    src.storage.columns
                    if src.table.kind != "super"
                    else (*src.storage.columns, *src.storage.tags)
                )
                items.extend(exp.column(c.name, quoted=True) for c in cols)
                names.extend(c.name for c in cols)
                continue
            if sources and (expanded := expand_item(item, [c.name for c in sources[0].storage.columns])):
                items += [e for e, _ in expanded]
                names += [n for _, n in expanded]
                continue
            items.append(item)
            if isinstance(item, exp.Alias):
                names.append(item.alias)
            elif isinstance(item, exp.Column):
                names.append("%%tbname" if placeholder_key(item) == "tbname" else item.name)
            elif i < len(self.q.item_texts):
                names.append(self.q.item_texts[i])
            else:
                names.append(item.sql())
        sel.set("expressions", items)
        return names

    def bind(self, lake: Lake, duck: DuckSession | None = None) -> Bound:
        """Bind the query to a DuckDB session over the lake's latest snapshot.

        Raises:
            SqlError / CatalogError: a table is missing, a name is unknown.
        """

        duck = duck or DuckSession(lake)
        if self.q.window is not None:  # a window query: bound per event (run_windows)
            trig = self.trigger
            return Bound(
                duck,
                "",
                "",
                [],
                [],
                None,
                trig.table.columns[0].name if trig else "",
                trig.db.precision if trig else "ms",
            )
        sel = self.q.select.copy()
        uses_trigger = self._trigger_tables(sel)
        ts_types: set[str] = set()

        def mark(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column):
                k = placeholder_key(node)
                if k in NS_PLACEHOLDERS and numeric_use(node):
                    return exp.column(PH + k + NS_SUFFIX, quoted=True)
                if k is not None:
                    if k in TS_PLACEHOLDERS:
                        ts_types.add(PH + k)
                    return exp.column(PH + k, quoted=True)
            return node

        ctx = QueryContext(lake, tz=self.tz, default_db=self.default_db)
        others = bind_sources(ctx, duck, sel, self.sql, skip=frozenset({TRIGGER_SRC}))
        sources = ([self.trigger] if uses_trigger and self.trigger is not None else []) + others
        joins = isinstance(sel, exp.Select) and bool(sel.args.get("joins"))
        names = [] if joins else self._expand(sel, sources)
        sel = sel.transform(mark, copy=False)
        scope = query_scope(sources, self.tz)
        scope.timestamp_names = frozenset(ts_types)
        try:
            if joins:
                assert isinstance(sel, exp.Select)
                text, names = self._join_text(sel, scope)
            else:
                text = to_sql(sel, "duckdb", scope)
        except SqlError as e:
            raise SqlError(e.message, sql=self.sql, offset=None, code=e.code) from None
        trigger_view = ""
        pre_filter = None
        ts_column = ""
        precision = "ms"
        if self.trigger is not None:
            trigger_view = duck.register_source(self.trigger)
            tscope = self.trigger.scope(self.tz)
            ts_column = self.trigger.table.columns[0].name
            precision = self.trigger.db.precision
            if self.pre_filter is not None:
                pre_filter = to_sql(self.pre_filter, "duckdb", tscope)
        return Bound(duck, text, trigger_view, names, sources, pre_filter, ts_column, precision, ts_types)

    def _trigger_tables(self, sel: exp.Expr) -> bool:
        """Point ``FROM %%tbname`` / ``FROM %%trows`` at the trigger table's marker (its rows are
        chosen per event, ``_trigger_rows``), its Source kept for the join planner; returns whether
        the query reads the trigger table.

        Raises:
            SqlError: ``INVALID_STREAM_QUERY`` a placeholder table without a trigger table."""
        uses_trigger = False
        for t in list(sel.find_all(exp.Table)):
            if t.name.lower() not in (TBNAME, TROWS):
                continue
            if self.trigger is None:
                raise SqlError(
                    f"{'%%tbname' if t.name.lower() == TBNAME else '%%trows'} needs a trigger table "
                    "(FROM [db.]table)",
                    sql=self.sql,
                    code=Code.INVALID_STREAM_QUERY,
                )
            node = exp.Table(
                this=exp.to_identifier(TRIGGER_SRC, quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(t.alias or "__td_trig", quoted=True)),
            )
            node.meta[SOURCE_META] = self.trigger  # a join side (query/joins.py)
            t.replace(node)
            uses_trigger = True
        return uses_trigger

    def _join_text(self, sel: exp.Select, scope: Scope) -> tuple[str, list[str]]:
        """DuckDB text and output names of a computation with joins, through the interactive
        SELECT's join planner (``query/joins.py``: TDengine's join rules, every join type): its
        placeholders are marker columns the planner reads as constants, ``%%tbname`` / ``%%trows``
        the trigger table; the markers are replaced per event (``_event_sql``), so the events of a
        micro-batch still run as one query.

        Raises:
            SqlError: the join rules, with TDengine's codes and the offset in the statement."""
        markers = frozenset(c.name.lower() for c in sel.find_all(exp.Column) if c.name.startswith(PH))
        joined = join_query(sel, self.q, self.sql, markers)
        names = [_display(n) for n in joined.names or []]  # None: a subquery's ``*`` names itself
        return joined.sql(scope), names

    # ------------------------------------------------------------------ running
    def schema(self, lake: Lake) -> list[ResultColumn]:
        """Output columns of the query (names as written, TDengine types), found by running it
        with NULL placeholders over no rows.

        Raises:
            SqlError: the query does not bind or run (DuckDB's message).
        """

        if self.q.window is not None:
            return self._window_schema(lake)
        with DuckSession(lake) as duck:
            b = self.bind(lake, duck)
            dummy: dict[str, Any] = {k: 0 for k in (*TS_PLACEHOLDERS, *INT_PLACEHOLDERS)}
            dummy["tbname"] = ""
            for i, t in enumerate(self.partition_types, start=1):
                dummy[f"p{i}"] = "" if t.is_string else (True if t.name == "BOOL" else 0)
            text = self._event_sql(b, TriggerEvent(dummy, None, None), empty=True)
            result = self._query(duck, f"SELECT * FROM ({text}) AS __td_q LIMIT 0", "does not run")
        return result_columns(result, b.names if len(b.names) == result.num_columns else None, b.sources)

    def run(self, b: Bound, events: list[TriggerEvent]) -> pa.Table:
        """Rows of every event's query, each tagged with its event's index (``__td_ev``, int64,
        first column); the others are the query's columns by position.

        Raises:
            SqlError: DuckDB refused a query (its message).
        """
        if self.q.window is not None:
            return self._run_windows(b, events)
        if SET_ORIENTED and events:
            out = self._run_set(b, events)
            if out is not None:
                return out
        return self._run_per_event(b, events, list(range(len(events))))

    def _run_per_event(self, b: Bound, events: list[TriggerEvent], idx: list[int]) -> pa.Table:
        """The per-event path: one sub-query per event (its placeholders substituted), ``CHUNK``
        events per ``UNION ALL``, over the trigger rows copied once (``_materialize``);
        ``idx[i]`` is ``events[i]``'s ``__td_ev``."""
        source = self._materialize(b, events)
        parts: list[pa.Table] = []
        for lo in range(0, len(events), CHUNK):
            sql = " UNION ALL ".join(
                f"SELECT {idx[j]} AS __td_ev, * FROM ({self._event_sql(b, events[j], source=source)})"
                f" AS __td_q{j}"
                for j in range(lo, min(lo + CHUNK, len(events)))
            )
            parts.append(self._query(b.duck, sql, "failed"))
        return _by_event(parts)  # chunks by position: a placeholder's literal names its column

    # ------------------------------------------------------------------ set-oriented
    def _run_set(self, b: Bound, events: list[TriggerEvent]) -> pa.Table | None:
        """All events in one query per shape of their trigger rows (``query/compute_set.py``), or
        None when the query's shape is not rewritten (the caller runs it per event). The join
        reads the trigger table's view: DuckDB prunes it by the events (faster than a copy)."""
        markers = sorted(set(_MARK.findall(b.text)) - {TRIGGER_SRC})
        p = compute_set.plan(b.text, markers, compute_set.aggregate_names(b.duck), TRIGGER_SRC)
        if p is None:
            return None
        shapes: dict[tuple[Any, ...], list[int]] = {}
        for i, ev in enumerate(events):
            shapes.setdefault(_shape(ev) if p.table == TRIGGER_SRC else (), []).append(i)
        parts: list[pa.Table] = []
        for shape, idx in shapes.items():
            evs = [events[i] for i in idx]
            rel = None if shape and shape[0] else self._event_relation(b, evs, idx, markers, shape)
            out = None if rel is None else self._set_query(b, p, rel, shape)
            if out is None:
                parts.append(self._run_per_event(b, evs, idx))
                continue
            if p.scalar:
                have = set(out.column("__td_ev").to_pylist())
                miss = [i for i in idx if i not in have]
                parts.append(out)
                out = self._run_per_event(b, [events[i] for i in miss], miss) if miss else None
            if out is not None:
                parts.append(out)
        return _by_event(parts)

    def _event_relation(
        self, b: Bound, evs: list[TriggerEvent], idx: list[int], markers: list[str], shape: tuple[Any, ...]
    ) -> pa.Table | None:
        """The events as an Arrow table: ``__td_ev``, each marker's value typed as its per-event
        literal (``_event_sql``), and the trigger rows' conditions (``_trigger_rows``): ``__td_tb``,
        ``__td_g<i>``, ``__td_lo`` / ``__td_hi`` (TIMESTAMPTZ). None: a column cannot be typed."""
        cols: dict[str, pa.Array] = {"__td_ev": pa.array(idx, pa.int64())}
        for m in markers:
            key = m[len(PH) :]
            if key.endswith(NS_SUFFIX) and key[: -len(NS_SUFFIX)] in NS_PLACEHOLDERS:
                vals = [ev.values.get(key[: -len(NS_SUFFIX)]) for ev in evs]
                arr = pa.array([None if v is None else int(v) * 1000 for v in vals], pa.int64())
            elif key in INT_PLACEHOLDERS:
                arr = pa.array([ev.values.get(key) for ev in evs], pa.int64())
            elif m in b.ts_types:
                arr = compute_set.timestamp_column([ev.values.get(key) for ev in evs])
            else:
                arr = compute_set.arrow_column([ev.values.get(key) for ev in evs])
            if arr is None:
                return None
            cols[m] = arr
        if shape:
            _, has_tb, has_rows, ngroups, has_lo, has_hi, _, _ = shape
            if has_tb:
                cols["__td_tb"] = pa.array([str(ev.tbname) for ev in evs], pa.string())
            rows = [ev.rows for ev in evs if ev.rows is not None]
            for g in range(ngroups if has_rows else 0):
                arr = compute_set.arrow_column([r[0][g][1] for r in rows])
                cols[f"__td_g{g}"] = pa.nulls(len(rows)) if arr is None else arr
            if has_rows and has_lo:
                lo = [None if r[1] is None else _us(int(r[1]), b.precision) for r in rows]
                cols["__td_lo"] = compute_set.timestamp_column(lo)
            if has_rows and has_hi:
                hi = [None if r[2] is None else _us(int(r[2]), b.precision) for r in rows]
                cols["__td_hi"] = compute_set.timestamp_column(hi)
        return pa.table(cols)

    def _set_query(
        self, b: Bound, p: compute_set.SetPlan, rel: pa.Table, shape: tuple[Any, ...]
    ) -> pa.Table | None:
        """Run the rewritten query over the events ``rel``; None when DuckDB refuses it (the
        per-event path then runs, and reports a real error in TDengine's words)."""
        name = b.duck.register_arrow(rel)
        e, t = compute_set.EV_ALIAS, compute_set.T_ALIAS
        try:
            if p.table != TRIGGER_SRC:
                src = f"SELECT {e}.*, {t}.* FROM {name} AS {e} CROSS JOIN {quote(p.table)} AS {t}"
            else:
                on = self._set_conditions(b, rel, shape)
                src = f"SELECT {e}.*, {t}.* FROM {name} AS {e} JOIN {b.trigger_view} AS {t} ON {on}"
            out = b.duck.query(p.sql(src))
            return out.select([out.num_columns - 1, *range(out.num_columns - 1)])  # __td_ev first
        except SqlError:
            return None
        finally:
            b.duck.con.unregister(name)

    def _set_conditions(self, b: Bound, rel: pa.Table, shape: tuple[Any, ...]) -> str:
        """``_trigger_rows``'s conditions with the event's values as columns of ``__td_e``."""
        _, has_tb, has_rows, _, has_lo, has_hi, inclusive, _ = shape
        e, t = compute_set.EV_ALIAS, compute_set.T_ALIAS
        conds = ["TRUE"]
        if has_tb:
            conds.append(f"{t}.tbname = {e}.__td_tb")
        if has_rows:
            for g, col in enumerate(shape[7]):
                conds.append(f"{t}.{quote(col)} IS NOT DISTINCT FROM {e}.__td_g{g}")
            ts = f"{t}.{quote(b.ts_column)}"
            if has_lo:
                conds.append(f"{ts} >= {e}.__td_lo")
            if has_hi:
                conds.append(f"{ts} {'<=' if inclusive else '<'} {e}.__td_hi")
            if b.pre_filter:
                conds.append(f"({b.pre_filter})")
        return " AND ".join(conds)

    # ------------------------------------------------------------------ window queries
    def _window_schema(self, lake: Lake) -> list[ResultColumn]:
        """Output columns of a window computation, from a run over one hour of year 2000 with the
        placeholders set (a FILL's range and values are checked then, as at every event)."""
        t0 = 946_684_800_000_000  # 2000-01-01 UTC, µs
        hour = 3_600_000_000
        values: dict[str, Any] = {k: t0 for k in TS_PLACEHOLDERS}
        values.update({"_twend": t0 + hour, "_tcurrent_ts": t0 + hour, "_tnext_ts": t0 + 2 * hour})
        values.update({"_tnext_localtime": t0 + hour, "_twduration": 0, "_twrownum": 0, "_tgrpid": 0})
        values["tbname"] = ""
        for i, t in enumerate(self.partition_types, start=1):
            values[f"p{i}"] = "" if t.is_string else (True if t.name == "BOOL" else 0)
        per = {"ms": 1000, "us": 1, "ns": 1}[self.trigger.db.precision] if self.trigger else 1000
        ev = TriggerEvent(values, None, ([], t0 // per, (t0 + hour) // per, False))
        with DuckSession(lake) as duck:
            out, plan = self._window_event(lake, duck, ev)
        return [
            ResultColumn(n, output_type(n, out.schema.field(i).type, plan), plan.source.db.precision)
            for i, n in enumerate(plan.output_names)
        ]

    def _run_windows(self, b: Bound, events: list[TriggerEvent]) -> pa.Table:
        """A window computation (``INTERVAL ... [FILL]``): the window query of every event, its
        placeholders replaced by the event's values (``_event_query``), through the interactive
        SELECT's three stages (``select.window_arrow``)."""
        assert b.duck.lake is not None
        parts = []
        for j, ev in enumerate(events):
            out, _plan = self._window_event(b.duck.lake, b.duck, ev)
            cols = {f"c{i}": out.column(i) for i in range(out.num_columns)}
            parts.append(pa.table({"__td_ev": pa.array([j] * out.num_rows, pa.int64()), **cols}))
        if not parts:
            return pa.table({"__td_ev": pa.array([], pa.int64())})
        return pa.concat_tables(parts, promote_options="permissive")

    def _window_event(self, lake: Lake, duck: DuckSession, ev: TriggerEvent) -> tuple[pa.Table, Any]:
        q = self._event_query(ev)
        ctx = QueryContext(lake, tz=self.tz, default_db=self.default_db)
        try:
            return window_arrow(ctx, duck, q, q.select.copy(), self.sql)
        except SqlError as e:
            if e.code in _LIMIT_CODES:
                raise
            code = e.code if e.code == Code.INVALID_FILL_TIME_RANGE else Code.INVALID_STREAM_QUERY
            raise SqlError(f"the stream's computation failed: {e.message}", sql=self.sql, code=code) from None

    def _event_query(self, ev: TriggerEvent) -> ast.SelectQuery:
        """The query of one event: placeholders as constants (timestamps as ``CAST('...' AS
        TIMESTAMP)`` in UTC), ``FROM %%tbname`` as the event's subtable, ``FROM %%trows`` as the
        trigger table with the event's rows' conditions (group, time range, PRE_FILTER) added to
        WHERE."""
        trig = self.trigger
        extra: list[exp.Expr] = []

        def table(name: str, alias: str | None) -> exp.Table:
            assert trig is not None
            t = exp.Table(this=exp.to_identifier(name), db=exp.to_identifier(trig.db.name))
            return t.as_(alias) if alias else t  # type: ignore[return-value]

        def visit(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column):
                k = placeholder_key(node)
                if k is not None:
                    return _constant(ev.values.get(k), k in TS_PLACEHOLDERS)
            if isinstance(node, exp.Table) and node.name.lower() in (TBNAME, TROWS):
                if trig is None:
                    raise SqlError(
                        "%%tbname / %%trows need a trigger table",
                        sql=self.sql,
                        code=Code.INVALID_STREAM_QUERY,
                    )
                alias = node.alias or None
                if node.name.lower() == TBNAME:
                    return table(ev.tbname or trig.table.name, alias)
                extra.extend(self._rows_conditions(ev))
                return table(trig.table.name, alias)
            return node

        sel = self.q.select.copy().transform(visit)
        if extra and isinstance(sel, exp.Select):
            for cond in extra:
                sel = sel.where(cond, copy=False)
        return dataclasses.replace(self.q, select=sel)

    def _rows_conditions(self, ev: TriggerEvent) -> list[exp.Expr]:
        """``%%trows`` of a window computation as WHERE terms over the trigger table."""
        assert self.trigger is not None
        conds: list[exp.Expr] = []
        if ev.tbname is not None:
            conds.append(exp.column("tbname").eq(exp.Literal.string(ev.tbname)))
        if ev.rows is not None:
            groups, lo, hi, inclusive = ev.rows
            ts = exp.column(self.trigger.table.columns[0].name)
            for col, v in groups:
                c = exp.column(col)
                conds.append(c.is_(exp.Null()) if v is None else c.eq(_constant(v, False)))
            if lo is not None:
                conds.append(exp.GTE(this=ts.copy(), expression=exp.Literal.number(lo)))
            if hi is not None:
                cmp = exp.LTE if inclusive else exp.LT
                conds.append(cmp(this=ts.copy(), expression=exp.Literal.number(hi)))
        if self.pre_filter is not None:
            conds.append(exp.Paren(this=self.pre_filter.copy()))
        return conds

    def _query(self, duck: DuckSession, sql: str, what: str) -> pa.Table:
        """``sql``'s rows; DuckDB's failure in TDengine's words (``duck.duck_error``): a statement
        limit keeps its code, an unknown or ambiguous column or function keeps its code and points
        at the name in the computation, anything else is ``0x2645`` naming ``what`` went wrong."""
        try:
            return duck.query(sql)
        except SqlError as e:
            if e.code in _LIMIT_CODES:
                raise SqlError(
                    f"the stream's computation {what}: {e.message}", sql=self.sql, code=e.code
                ) from None
            if e.code in _NAME_CODES and (m := _NAMED.match(e.message)):
                raise SqlError(
                    e.message, sql=self.sql, offset=_name_offset(self.sql, m.group(1)), code=e.code
                ) from None
            raise SqlError(
                f"the stream's computation {what}: {e.message}", sql=self.sql, code=Code.INVALID_STREAM_QUERY
            ) from None

    def _materialize(self, b: Bound, events: list[TriggerEvent]) -> str:
        """The trigger table's rows the batch's events can read, copied once into a DuckDB
        temporary table (their subtables, their time span): each event then filters memory instead
        of scanning the Parquet files again. Returns the table's name (or the view's, when the
        events do not narrow it down)."""
        if not b.trigger_view or not events or any(e.rows_view for e in events):
            return b.trigger_view
        conds = []
        if all(e.tbname is not None for e in events):
            names = sorted({str(e.tbname) for e in events})
            conds.append(f"tbname IN ({', '.join(sql_string(n) for n in names)})")
        if all(e.rows is not None and e.rows[1] is not None and e.rows[2] is not None for e in events):
            lo = min(int(e.rows[1]) for e in events if e.rows and e.rows[1] is not None)
            hi = max(int(e.rows[2]) for e in events if e.rows and e.rows[2] is not None)
            ts = quote(b.ts_column)
            conds.append(f"{ts} >= {_ts_literal(lo, b.precision)} AND {ts} <= {_ts_literal(hi, b.precision)}")
        if not conds:
            return b.trigger_view
        name = f"__td_trigmat{id(events)}"
        where = " AND ".join(conds)
        b.duck.con.execute(
            f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {b.trigger_view} WHERE {where}"
        )
        return name

    def _event_sql(
        self, b: Bound, ev: TriggerEvent, *, empty: bool = False, source: str | None = None
    ) -> str:
        def repl(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == TRIGGER_SRC:
                return f"({self._trigger_rows(b, ev, empty, source)})"
            key = name[len(PH) :]
            if key.endswith(NS_SUFFIX) and key[: -len(NS_SUFFIX)] in NS_PLACEHOLDERS:
                us = ev.values.get(key[: -len(NS_SUFFIX)])  # epoch µs -> ns
                return "CAST(NULL AS BIGINT)" if us is None else f"CAST({int(us) * 1000} AS BIGINT)"
            value = ev.values.get(key)
            if value is None and key in INT_PLACEHOLDERS:
                return "CAST(NULL AS BIGINT)"
            return _literal(value, timestamp=name in b.ts_types)

        return _MARK.sub(repl, b.text)

    def _trigger_rows(self, b: Bound, ev: TriggerEvent, empty: bool, source: str | None = None) -> str:
        conds: list[str] = []
        if empty:
            conds.append("FALSE")
        if ev.tbname is not None:
            conds.append(f"tbname = {sql_string(ev.tbname)}")
        if ev.rows is not None:
            groups, lo, hi, inclusive = ev.rows
            for col, v in groups:
                conds.append(f"{quote(col)} IS NOT DISTINCT FROM {_literal(v, timestamp=False)}")
            ts = quote(b.ts_column)
            if lo is not None:
                conds.append(f"{ts} >= {_ts_literal(lo, b.precision)}")
            if hi is not None:
                conds.append(f"{ts} {'<=' if inclusive else '<'} {_ts_literal(hi, b.precision)}")
            if b.pre_filter:
                conds.append(f"({b.pre_filter})")
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        return f"SELECT * FROM {ev.rows_view or source or b.trigger_view}{where}"


def _shape(ev: TriggerEvent) -> tuple[Any, ...]:
    """What decides the join of an event with the trigger table: (a PERIOD view, a subtable, rows,
    group count, a lowest time, a highest time, inclusive highest, group columns)."""
    if ev.rows is None:
        return (ev.rows_view is not None, ev.tbname is not None, False, 0, False, False, False, ())
    groups, lo, hi, inclusive = ev.rows
    cols = tuple(c for c, _ in groups)
    return (
        ev.rows_view is not None,
        ev.tbname is not None,
        True,
        len(cols),
        lo is not None,
        hi is not None,
        inclusive,
        cols,
    )


def _by_event(parts: list[pa.Table]) -> pa.Table:
    """The parts (set-oriented and per-event, the same columns by position) as one table ordered
    by ``__td_ev`` (a stable sort: an event's rows keep their order), with the first part's names."""
    if not parts:
        return pa.table({"__td_ev": pa.array([], pa.int64())})
    if len(parts) == 1:
        return parts[0]
    names = parts[0].column_names  # may repeat (two items written alike): concatenated by position
    by_pos = ["__td_ev", *(f"__td_c{i}" for i in range(1, len(names)))]
    out = pa.concat_tables([p.rename_columns(by_pos) for p in parts], promote_options="permissive")
    return out.take(pc.sort_indices(out, [("__td_ev", "ascending")])).rename_columns(names)


def _us(value: int, precision: str) -> int:
    """A trigger-table timestamp in epoch microseconds, as ``_ts_literal`` converts it."""
    return {"ms": value * 1000, "us": value, "ns": value // 1000}[precision]


def _display(name: str) -> str:
    """An output column's name as written: a placeholder marker's name is the placeholder's
    (``_twstart``, ``%%tbname``, ``%%1``'s column), as :meth:`Computation._expand` names them."""
    if not name.startswith(PH):
        return name
    key = name[len(PH) :]
    if key == "tbname":
        return "%%tbname"
    if key.startswith("p") and key[1:].isdigit():
        return PARTITION_PREFIX + key[1:]
    return (
        key[: -len(NS_SUFFIX)]
        if key.endswith(NS_SUFFIX) and key[: -len(NS_SUFFIX)] in NS_PLACEHOLDERS
        else key
    )


def _constant(v: Any, timestamp: bool) -> exp.Expr:
    """A placeholder value as a TDengine constant (timestamps: epoch µs -> CAST of a UTC text)."""
    if v is None:
        return exp.Null()
    if timestamp:
        text = timestamps.render(int(v), "us", "UTC").replace("T", " ").replace("Z", "+00:00")
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("TIMESTAMP"))
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, int | float):
        return exp.Literal.number(v)
    return exp.Literal.string(str(v))


def _ts_literal(value: int, precision: str) -> str:
    us = {"ms": value * 1000, "us": value, "ns": value // 1000}[precision]
    return _literal(us, timestamp=True)


def _literal(v: Any, *, timestamp: bool) -> str:
    """DuckDB literal of a placeholder value (timestamps: epoch microseconds, UTC)."""
    if timestamp:
        if v is None:
            return "CAST(NULL AS TIMESTAMPTZ)"
        text = timestamps.render(int(v), "us", "UTC").replace("T", " ").replace("Z", "+00:00")
        return f"CAST('{text}' AS TIMESTAMPTZ)"
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return f"CAST({v} AS BIGINT)"
    if isinstance(v, float):
        return f"CAST({v!r} AS DOUBLE)"
    return sql_string(str(v))
