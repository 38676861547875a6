"""TDengine 3.3.7 streams (seed 002): CREATE STREAM -> StreamSpec, checks, and the engine query of
the trigger.

A 3.3.7 stream whose trigger is a window (``[INTERVAL(i[, o])] SLIDING(s)``, ``SESSION``,
``STATE_WINDOW``, ``EVENT_WINDOW``, ``COUNT_WINDOW``) and whose computation aggregates the rows of
the triggering window (``SELECT ... FROM %%trows``) computes exactly what the legacy window query
over the trigger table computes for that window. Such a stream keeps its own StreamSpec (syntax
``3.3.7``, the statement as written) and runs on the engine through ``engine_query``, the
equivalent window SELECT:

- ``FROM %%trows`` -> the trigger table; ``PRE_FILTER(expr)`` -> ``WHERE expr`` (filtered rows are
  invisible to window detection and to ``%%trows``, seed 002);
- ``_twstart`` / ``_twend`` / ``_twduration`` -> ``_wstart`` / ``_wend`` / ``_wduration``;
  ``_twrownum`` -> ``count(*)`` (the rows of the window); ``_c0`` -> the primary timestamp column;
- the trigger's PARTITION BY and window after WHERE.

Semantics follow seed 002: results are computed when a window closes (WINDOW_CLOSE; ``%%trows``
is "applicable only for WINDOW_CLOSE triggers"); WATERMARK as given; out-of-order rows and
updates recalculate the window for SESSION / STATE / EVENT / INTERVAL triggers unless
IGNORE_DISORDER, and are ignored for COUNT_WINDOW; deletes are ignored unless DELETE_RECALC (never
for COUNT_WINDOW) ("Atypical Data Ingestion Scenarios"). Without PARTITION BY the output is a
normal table; with it, a supertable with one subtable per group, named by OUTPUT_SUBTABLE exactly
or by default, tagged ``tag_tbname VARCHAR(270)`` for ``tbname`` and by the tag's own name and
type otherwise ("Outputs").

Computations that are not such an aggregate (any query, other tables, ``%%tbname``, the other
placeholders), PERIOD and SLIDING-only triggers and notify-only streams run per trigger event
(``compute.py``, ``runtime/period.py``); so do streams with FORCE_OUTPUT (a row of constants and
NULLs for a trigger without a result). NOTIFY ... WHERE is bound to the result columns at compile
(``query/notify_where.py``); FILL_HISTORY[(start)] / FILL_HISTORY_FIRST[(start)] compute the
history from its start before real time. INTERVAL and SLIDING triggers fire for periods without
rows unless IGNORE_NODATA_TRIGGER (``StreamRules.fire_empty``); EXPIRED_TIME is judged per trigger
group; DELETE_OUTPUT_TABLE needs grouping by tbname (docs/decisions.md, "Seed 002's options in the
engine"). What seed 002 forbids is refused with the seed's rule, code and position
(``check_supported``, ``spec_337``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sqlglot import exp

from spark_workers.duration import NS_PER_PRECISION, NS_PER_UNIT, Duration
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.query.compute import placeholder_key
from spark_workers.query.planner import NO_TABLE, aggregate_call
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.lexer import TBNAME, TROWS
from spark_workers.sql.parser import parse_one
from spark_workers.sql.render import expr_sql, partition_sql, query_sql, window_sql
from spark_workers.streams.spec import (
    V337,
    NotifySpec,
    OptionsSpec,
    OutputSpec,
    OutputTag,
    SourceSpec,
    StreamSpec,
    trigger_json,
)

if TYPE_CHECKING:
    from spark_workers.lake.catalog import Catalog, Table

WINDOW_PLACEHOLDERS = {"_twstart": "_wstart", "_twend": "_wend", "_twduration": "_wduration"}


def _window(s: ast.CreateStream337) -> ast.Window | None:
    """The trigger as the engine's window clause (None for PERIOD / SLIDING-only triggers)."""
    t = s.trigger
    if isinstance(t, ast.SlidingTrigger):
        if t.interval is None:  # trigger points every ``sliding``: the periods between them
            # (an offset of a sliding and more, or a daily reset: compile.sliding_shape)
            small = t.sliding_offset is not None and t.sliding_offset.ns < t.sliding.ns
            return ast.IntervalWindow(t.sliding, t.sliding_offset if small else None, t.sliding)
        # SLIDING(s, offset) after INTERVAL moves the windows' start like INTERVAL's offset (the
        # two add up)
        return ast.IntervalWindow(t.interval, _offset_sum(t.interval_offset, t.sliding_offset), t.sliding)
    if isinstance(t, ast.PeriodTrigger):  # the plan's groups only: a PeriodRunner fires it
        return ast.IntervalWindow(t.period)
    return t


def _offset_sum(a: Duration | None, b: Duration | None) -> Duration | None:
    """Two window offsets as one (None when neither is given)."""
    if a is None or b is None:
        return a if b is None else b
    ns = a.ns + b.ns
    for unit in ("h", "m", "s", "a", "u", "b"):
        if ns % NS_PER_UNIT[unit] == 0:
            return Duration(ns // NS_PER_UNIT[unit], unit)
    return Duration(ns, "b")


WINDOW_ONLY = frozenset({"_twstart", "_twend", "_twduration", "_twrownum"})
QUERY_PSEUDO = frozenset({"_qstart", "_qend", "_qduration"})
# seed 002 "Temporary Restrictions": "The functions Interp, Percentile, Forecast, and UDFs are not
# yet supported" (tdweb has no UDFs: an unknown function is refused by name anyway)
TEMPORARY_FUNCTIONS = frozenset({"interp", "percentile", "forecast"})
SLIDING_ONLY = frozenset({"_tprev_ts", "_tcurrent_ts", "_tnext_ts"})
PERIOD_ONLY = frozenset({"_tprev_localtime", "_tnext_localtime"})


def trigger_class(t: ast.Trigger337) -> str:
    """``period``, ``sliding`` (SLIDING without INTERVAL) or ``window`` (seed 002 "Trigger Types")."""
    if isinstance(t, ast.PeriodTrigger):
        return "period"
    if isinstance(t, ast.SlidingTrigger) and t.interval is None:
        return "sliding"
    return "window"


def is_fused(s: ast.CreateStream337) -> bool:
    """True when the computation aggregates ``%%trows`` only (``SELECT agg(...), _twstart ...
    FROM %%trows``): it then runs as the equivalent window query on the engine (fused);
    every other computation runs per trigger event (``compute.py``)."""
    if s.query is None or trigger_class(s.trigger) != "window" or s.query.window is not None:
        return False
    if s.options.calc_notify_only or s.into is None or s.options.force_output:
        return False  # FORCE_OUTPUT: rows for triggers without a result, per event (compute.py)
    sel = s.query.select
    if not isinstance(sel, exp.Select):
        return False
    tables = list(sel.find_all(exp.Table))
    if len(tables) != 1 or tables[0].name.lower() != TROWS:
        return False
    if s.query.partition_by or sel.args.get("group") or sel.args.get("where") or sel.args.get("joins"):
        return False
    if any(isinstance(i, exp.Star) for i in sel.expressions):
        return False
    for col in sel.find_all(exp.Column):
        name = col.name.lower()
        if name in WINDOW_ONLY:
            continue
        if placeholder_key(col) is not None:
            return False
        if not any(aggregate_call(a) for a in _ancestors(col)):
            return False  # a row-level column: one output row per row, not per window
    return True


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    out = []
    p = node.parent
    while p is not None:
        out.append(p)
        p = p.parent
    return out


def _placeholder_error(name: str, why: str, sql: str, col: exp.Expr | None = None) -> SqlError:
    """INVALID_STREAM_QUERY naming a misplaced placeholder, at ``col`` when given."""
    return SqlError(
        f"placeholder {name} is not allowed here: {why} (seed 002, Placeholders)",
        sql=sql,
        offset=offset_of(col) if col is not None else None,
        code=Code.INVALID_STREAM_QUERY,
    )


def check_placeholders(s: ast.CreateStream337, sql: str) -> None:
    """Each placeholder only where seed 002 allows it: ``_tw*`` with window triggers, ``_tprev_ts``
    / ``_tcurrent_ts`` / ``_tnext_ts`` with SLIDING triggers, ``_tprev_localtime`` /
    ``_tnext_localtime`` with PERIOD triggers; ``%%n`` within the PARTITION BY list; ``%%tbname``
    only when the trigger groups by tbname; ``%%trows`` only in FROM, without WHERE or joins, at
    WINDOW_CLOSE; no ``_qstart`` / ``_qend`` / ``_qduration`` (seed 002, Rules and Limitations).

    Raises:
        SqlError: INVALID_STREAM_QUERY naming the placeholder.
    """
    if s.query is None:
        return
    cls = trigger_class(s.trigger)
    sel = s.query.select
    by_tbname = any(
        isinstance(p.expr, exp.Column) and p.expr.name.lower() == "tbname" for p in s.partition_by
    )
    allowed = {"window": WINDOW_ONLY, "sliding": SLIDING_ONLY, "period": PERIOD_ONLY}[cls]
    for col in sel.find_all(exp.Column):
        if not col.table and col.name.lower() in QUERY_PSEUDO:
            raise SqlError(
                f"{col.name}: the pseudo-columns _qstart, _qend and _qduration are not supported in "
                "a stream's computation (seed 002, Rules and Limitations)",
                sql=sql,
                offset=offset_of(col),
                code=Code.INVALID_STREAM_QUERY,
            )
        key = placeholder_key(col)
        if key is None:
            continue
        if key in WINDOW_ONLY | SLIDING_ONLY | PERIOD_ONLY and key not in allowed:
            owner = (
                "window triggers"
                if key in WINDOW_ONLY
                else ("SLIDING triggers" if key in SLIDING_ONLY else "PERIOD triggers")
            )
            raise _placeholder_error(
                col.name, f"it belongs to {owner}, this stream has a {cls} trigger", sql, col
            )
        if key.startswith("p") and key[1:].isdigit():
            n = int(key[1:])
            if not 1 <= n <= len(s.partition_by):
                raise _placeholder_error(
                    f"%%{n}", f"the trigger has {len(s.partition_by)} PARTITION BY column(s)", sql, col
                )
        if key == "tbname" and not by_tbname:
            raise _placeholder_error("%%tbname", "the trigger does not group by tbname", sql, col)
    _check_placeholder_tables(s, sql, cls, by_tbname)
    if isinstance(sel, exp.Select) and is_fused(s) and (s.query.partition_by or sel.args.get("group")):
        raise SqlError(
            "a %%trows computation takes no GROUP BY or PARTITION BY: group with the trigger's PARTITION BY",
            sql=sql,
            offset=s.query.span.start if s.query.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )


def _check_placeholder_tables(s: ast.CreateStream337, sql: str, cls: str, by_tbname: bool) -> None:
    """``%%tbname`` / ``%%trows`` as tables (``check_placeholders``): ``%%tbname`` only when the
    trigger groups by tbname; ``%%trows`` without WHERE or joins, and only when the computation
    runs at WINDOW_CLOSE (seed 002, Placeholders)."""
    assert s.query is not None
    for t in s.query.select.find_all(exp.Table):
        name = t.name.lower()
        if name == TBNAME and not by_tbname:
            raise _placeholder_error("%%tbname", "the trigger does not group by tbname", sql)
        if (
            name == TROWS
            and cls == "window"
            and s.options.event_type
            and "WINDOW_CLOSE" not in s.options.event_type
        ):
            # "%%trows ... Applicable only for WINDOW_CLOSE triggers" (seed 002, Placeholders)
            raise _placeholder_error(
                "%%trows",
                "it holds the rows of a closed window, and EVENT_TYPE computes at WINDOW_OPEN only; "
                "read FROM %%tbname WHERE ts >= _twstart, or add WINDOW_CLOSE",
                sql,
                t,
            )
        if name == TROWS:
            q = t.find_ancestor(exp.Select)
            if q is not None and (q.args.get("where") or q.args.get("joins")):
                # seed 002: "Queries that use %%trows do not support WHERE condition filtering
                # or join operations on %%trows"
                raise SqlError(
                    "a %%trows computation takes no WHERE or join: filter with "
                    "STREAM_OPTIONS(PRE_FILTER(...)) (seed 002, Placeholders)",
                    sql=sql,
                    offset=s.query.span.start if s.query.span else None,
                    code=Code.INVALID_STREAM_QUERY,
                )


PERIOD_MIN_NS = 10 * 1_000_000  # 10a
MAX_DELAY_MIN_NS = 3 * 1_000_000_000  # seed 002 / ARCHITECTURE: 3 s in 3.3.7 syntax
PERIOD_MAX_NS = 3650 * 86_400 * 1_000_000_000  # 3650d
DAY_NS = 86_400 * 1_000_000_000


def check_period(s: ast.CreateStream337, t: ast.PeriodTrigger, sql: str) -> None:
    """Seed 002 "Scheduled Trigger": the period in [10a, 3650d] (units a, s, m, h, d), the offset
    below one day (units a, s, m, h); FILL_HISTORY and FILL_HISTORY_FIRST are "not supported in
    PERIOD (scheduled trigger) mode".

    Raises:
        SqlError: INVALID_STREAM_QUERY naming the value or option.
    """

    def err(msg: str, key: str | None = None) -> SqlError:
        sp = s.options.spans.get(key) if key else None
        return SqlError(msg, sql=sql, offset=sp.start if sp else None, code=Code.INVALID_STREAM_QUERY)

    if t.period.unit not in ("a", "s", "m", "h", "d") or not PERIOD_MIN_NS <= t.period.ns <= PERIOD_MAX_NS:
        raise err(
            f"PERIOD({t.period}): the period must be within [10a, 3650d] in units a, s, m, h or d (seed 002)"
        )
    if t.offset is not None and (t.offset.unit not in ("a", "s", "m", "h") or t.offset.ns >= DAY_NS):
        raise err(f"PERIOD offset {t.offset} must be below one day, in units a, s, m or h (seed 002)")
    if s.options.fill_history or s.options.fill_history_first:
        key = "fill_history" if s.options.fill_history else "fill_history_first"
        raise err(f"{key.upper()} is not supported with a PERIOD trigger (seed 002)", key)


def check_supported(s: ast.CreateStream337, sql: str) -> None:
    """Refuse what the engine does not run yet, and placeholders where the seed forbids them
    (module docstring).

    Raises:
        SqlError: NOT_SUPPORTED naming the trigger, clause or option; INVALID_STREAM_QUERY for a
            misplaced placeholder or notification event.
    """
    _check_trigger(s, sql)
    _check_trigger_table(s, sql)
    _check_notify(s, sql)
    _check_computation_and_output(s, sql)
    _check_options(s, sql)
    check_placeholders(s, sql)


def _check_trigger(s: ast.CreateStream337, sql: str) -> None:
    """PERIOD (``check_period``) and SLIDING triggers: a SLIDING-only period in PERIOD's units, a
    SLIDING offset below one day (seed 002)."""
    t = s.trigger
    if isinstance(t, ast.PeriodTrigger):
        check_period(s, t, sql)
    cast = t.expr.find(exp.Cast) if isinstance(t, ast.StateWindow) else None
    if isinstance(t, ast.StateWindow) and cast is not None:
        raise SqlError(
            "CAST in a STATE_WINDOW trigger: seed 002 lists it among its Temporary Restrictions "
            '("The Cast function is not yet supported in state window triggers")',
            sql=sql,
            offset=sql.lower().find("cast", t.span.start) if t.span else offset_of(cast),
            code=Code.NOT_SUPPORTED,
        )
    if not isinstance(t, ast.SlidingTrigger):
        return
    # seed 002: a SLIDING trigger's times follow PERIOD's rules on event time (units a, s, m, h,
    # d; an offset in a, s, m or h below one day); one that does not divide a day resets at every
    # midnight (streams/compile.sliding_shape)
    if t.interval is None and t.sliding.unit not in ("a", "s", "m", "h", "d"):
        raise SqlError(
            f"SLIDING({t.sliding}) of a SLIDING trigger takes units a, s, m, h or d (seed 002, "
            "Sliding Trigger: the rules of scheduled triggers)",
            sql=sql,
            code=Code.INVALID_STREAM_QUERY,
        )
    off = t.sliding_offset
    if off is not None and (off.unit not in ("a", "s", "m", "h") or off.ns >= DAY_NS):
        raise SqlError(
            f"the SLIDING offset {off} must be below one day, in units a, s, m or h (seed 002, "
            "Sliding Trigger)",
            sql=sql,
            code=Code.INVALID_STREAM_QUERY,
        )


def _check_trigger_table(s: ast.CreateStream337, sql: str) -> None:
    """Only a PERIOD trigger goes without FROM, and then reads no ``%%trows`` / ``%%tbname`` and
    has no PARTITION BY (seed 002, Trigger Tables)."""
    if s.from_table is not None:
        return
    if not isinstance(s.trigger, ast.PeriodTrigger):
        raise SqlError(
            "a trigger table (FROM [db.]table) is required for every trigger type except PERIOD "
            "(seed 002, Trigger Tables)",
            sql=sql,
            code=Code.INVALID_STREAM_QUERY,
        )
    if s.query is not None:
        for tb in s.query.select.find_all(exp.Table):
            if tb.name.lower() in (TROWS, TBNAME):
                raise _placeholder_error(
                    "%%trows" if tb.name.lower() == TROWS else "%%tbname",
                    "it reads the trigger table, and this stream has none (FROM [db.]table)",
                    sql,
                )
    if s.partition_by:
        raise SqlError(
            "PARTITION BY groups the trigger table: a PERIOD trigger without FROM has one group "
            "(seed 002, Trigger Table and Grouping)",
            sql=sql,
            offset=s.partition_by[0].span.start if s.partition_by[0].span else None,
            code=Code.INVALID_STREAM_QUERY,
        )


def _check_notify(s: ast.CreateStream337, sql: str) -> None:
    """NOTIFY events by trigger (seed 002): ON_TIME for PERIOD and SLIDING triggers, WINDOW_OPEN /
    WINDOW_CLOSE (at least one) for window triggers; its URLs (``_check_urls``). NOTIFY ... WHERE is
    bound to the result columns when the stream compiles (``query/notify_where.py``)."""
    n = s.notify
    if n is None:
        return
    _check_urls(n, sql)
    cls = trigger_class(s.trigger)
    if cls in ("period", "sliding"):
        bad = [e for e in n.events if e != "ON_TIME"]
        if bad:
            raise SqlError(
                f"a {cls.upper()} trigger notifies ON_TIME events, not {bad[0]} (seed 002)",
                sql=sql,
                offset=n.span.start if n.span else None,
                code=Code.INVALID_STREAM_QUERY,
            )
    else:
        at = n.span.start if n.span else None
        if not n.events:
            raise SqlError(
                "NOTIFY of a window trigger needs ON (WINDOW_OPEN|WINDOW_CLOSE) (seed 002)",
                sql=sql,
                offset=at,
                code=Code.INVALID_STREAM_QUERY,
            )
        if "ON_TIME" in n.events:
            raise SqlError(
                "ON_TIME events belong to PERIOD and SLIDING triggers; a window trigger notifies "
                "WINDOW_OPEN and WINDOW_CLOSE (seed 002)",
                sql=sql,
                offset=at,
                code=Code.INVALID_STREAM_QUERY,
            )


NOTIFY_SCHEMES = ("ws", "wss")


def _check_urls(n: ast.NotifyDef, sql: str) -> None:
    """Each NOTIFY URL "must include the protocol, IP or domain" and "Currently, only the
    WebSocket protocol is supported" (seed 002, Notification Mechanism): ``ws://`` or ``wss://``
    and a host.

    Raises:
        SqlError: INVALID_STREAM_QUERY at the URL.
    """
    for i, url in enumerate(n.urls):
        scheme, sep, rest = url.partition("://")
        host = rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
        if sep and scheme.lower() in NOTIFY_SCHEMES and host and not host.startswith(":"):
            continue
        sp = n.url_spans[i] if i < len(n.url_spans) else n.span
        why = (
            f"the {scheme.lower()}:// protocol is not supported: only WebSocket URLs (ws:// or wss://) are"
            if sep and scheme.lower() not in NOTIFY_SCHEMES
            else "a URL needs the protocol (ws:// or wss://) and the host"
        )
        raise SqlError(
            f"invalid NOTIFY URL '{url}': {why} (seed 002, Notification Mechanism)",
            sql=sql,
            offset=sp.start if sp else None,
            code=Code.INVALID_STREAM_QUERY,
        )


def _check_grouped_output(s: ast.CreateStream337, sql: str) -> None:
    """OUTPUT_SUBTABLE "cannot be specified if there is no trigger grouping"; TAGS "can only be
    specified if trigger grouping is present"; without TAGS the tags are the grouping columns,
    which then "cannot have duplicate names" (seed 002, Stream Processing Output).

    Raises:
        SqlError: INVALID_STREAM_QUERY at the clause or the duplicate grouping column.
    """
    if not s.partition_by:
        if s.output_subtable is not None:
            raise SqlError(
                "OUTPUT_SUBTABLE names the output subtable of each trigger group: it cannot be "
                "specified without PARTITION BY (seed 002, Stream Processing Output)",
                sql=sql,
                offset=offset_of(s.output_subtable),
                code=Code.INVALID_STREAM_QUERY,
            )
        if s.tags:
            raise SqlError(
                "TAGS define the output supertable of the trigger groups: they can only be "
                "specified with PARTITION BY (seed 002, Stream Processing Output)",
                sql=sql,
                offset=s.tags[0].span.start if s.tags[0].span else None,
                code=Code.INVALID_STREAM_QUERY,
            )
        return
    if s.tags:
        _check_tag_values(s, sql)
        return
    seen: set[str] = set()
    for p in s.partition_by:
        name = (p.alias or (p.expr.name if isinstance(p.expr, exp.Column) else p.text)).lower()
        if name in seen:
            raise SqlError(
                f"PARTITION BY names {name} twice: without TAGS the grouping columns are the "
                "output tags and cannot have duplicate names (seed 002, Stream Processing Output)",
                sql=sql,
                offset=p.span.start if p.span else None,
                code=Code.INVALID_STREAM_QUERY,
            )
        seen.add(name)


def _check_tag_values(s: ast.CreateStream337, sql: str) -> None:
    """A TAGS value "can use any trigger table grouping columns": PARTITION BY columns (by name or
    alias), ``%%n`` and ``%%tbname``, and constants (seed 002, Stream Processing Output).

    Raises:
        SqlError: INVALID_COLUMN at the first other column.
    """
    allowed = set()
    for p in s.partition_by:
        if isinstance(p.expr, exp.Column):
            allowed.add(p.expr.name.lower())
        if p.alias:
            allowed.add(p.alias.lower())
    for t in s.tags or []:
        for col in t.expr.find_all(exp.Column) if t.expr is not None else ():
            if placeholder_key(col) is not None or (not col.table and col.name.lower() in allowed):
                continue
            raise SqlError(
                f"tag {t.name} AS {expr_sql(t.expr) if t.expr is not None else ''}: {col.name} is not a "
                "grouping column; a tag value can use the PARTITION BY columns (seed 002, Stream "
                "Processing Output)",
                sql=sql,
                offset=offset_of(col),
                code=Code.INVALID_COLUMN,
            )


def check_temporary_functions(s: ast.CreateStream337, sql: str) -> None:
    """Seed 002 "Temporary Restrictions": Interp, Percentile and Forecast are not yet supported in
    a stream's computation.

    Raises:
        SqlError: NOT_SUPPORTED at the call, naming the seed's restriction.
    """
    if s.query is None:
        return
    for f in s.query.select.find_all(exp.Func):
        name = str(f.name).lower() if isinstance(f, exp.Anonymous) else f.sql_name().lower()
        if name in TEMPORARY_FUNCTIONS:
            raise SqlError(
                f"function {name} in a stream's computation: seed 002 lists it among its Temporary "
                'Restrictions ("The functions Interp, Percentile, Forecast, and UDFs are not yet '
                'supported")',
                sql=sql,
                offset=offset_of(f),
                code=Code.NOT_SUPPORTED,
            )


def _check_computation_and_output(s: ast.CreateStream337, sql: str) -> None:
    """INTO with a computation, a computation with INTO or CALC_NOTIFY_ONLY, NOTIFY without a
    computation or with CALC_NOTIFY_ONLY, the output table's clauses with INTO (seed 002)."""
    if s.query is None and s.into is not None:
        raise SqlError(
            "INTO needs a computation (AS subquery) to write", sql=sql, code=Code.INVALID_STREAM_QUERY
        )
    if s.query is not None and s.into is None and not s.options.calc_notify_only:
        raise SqlError(
            "a computation needs INTO [db.]table, or STREAM_OPTIONS(CALC_NOTIFY_ONLY) to only notify "
            "its results (seed 002)",
            sql=sql,
            code=Code.INVALID_STREAM_QUERY,
        )
    if s.query is None and s.notify is None:
        raise SqlError(
            "a stream without a computation must notify (NOTIFY(url) ...): it would do nothing",
            sql=sql,
            code=Code.INVALID_STREAM_QUERY,
        )
    if s.options.calc_notify_only and s.notify is None:
        raise SqlError(
            "CALC_NOTIFY_ONLY sends results as notifications only: add NOTIFY(url) (seed 002)",
            sql=sql,
            offset=s.options.spans["calc_notify_only"].start
            if "calc_notify_only" in s.options.spans
            else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    if s.into is None and (s.output_subtable is not None or s.tags or s.columns):
        raise SqlError(
            "OUTPUT_SUBTABLE, the column list and TAGS describe the output table: they need INTO",
            sql=sql,
            code=Code.INVALID_STREAM_QUERY,
        )
    _check_grouped_output(s, sql)


def _check_options(s: ast.CreateStream337, sql: str) -> None:
    """STREAM_OPTIONS: the seed's rules between options, FILL_HISTORY(start), DELETE_OUTPUT_TABLE,
    EXPIRED_TIME and MAX_DELAY of at least 3s in units s, m, h or d (seed 002)."""
    o = s.options
    if o.fill_history and o.fill_history_first:
        sp = o.spans.get("fill_history_first")
        raise SqlError(
            "FILL_HISTORY and FILL_HISTORY_FIRST cannot be used together (seed 002, Stream "
            "Processing Control Options)",
            sql=sql,
            offset=sp.start if sp else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    if o.fill_history_start is not None:
        history_start_text(
            o.fill_history_start,
            sql,
            o.spans.get("fill_history_first" if o.fill_history_first else "fill_history"),
        )
    if o.delete_output_table:
        _check_delete_output_table(s, sql)
    if o.delete_recalc and (isinstance(s.trigger, ast.CountWindow) or trigger_class(s.trigger) != "window"):
        sp = o.spans.get("delete_recalc")
        raise SqlError(
            "DELETE_RECALC can only be set if the trigger type supports automatic recomputation for "
            "deletions: PERIOD, SLIDING and COUNT_WINDOW triggers ignore deletions (seed 002, Stream "
            "Processing Control Options, Data Deletions)",
            sql=sql,
            offset=sp.start if sp else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    exp_t = o.expired_time
    if exp_t is not None and (exp_t.unit not in ("a", "s", "m", "h", "d") or exp_t.ns <= 0):
        sp = o.spans.get("expired_time")
        raise SqlError(
            f"EXPIRED_TIME({o.expired_time}) must be positive, in units a, s, m, h or d (seed 002, "
            "Stream Processing Control Options)",
            sql=sql,
            offset=sp.start if sp else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    if o.max_delay is not None:
        d = o.max_delay
        if d.unit not in ("s", "m", "h", "d") or d.ns < MAX_DELAY_MIN_NS:
            sp = o.spans.get("max_delay")
            raise SqlError(
                f"MAX_DELAY({d}) must be at least 3s, in units s, m, h or d (seed 002)",
                sql=sql,
                offset=sp.start if sp else None,
                code=Code.INVALID_STREAM_QUERY,
            )


def _check_delete_output_table(s: ast.CreateStream337, sql: str) -> None:
    """DELETE_OUTPUT_TABLE "applies only to scenarios grouped by subtables" (seed 002, Stream
    Processing Control Options): it needs an output table (INTO) and PARTITION BY tbname.

    Raises:
        SqlError: INVALID_STREAM_QUERY naming the seed's rule.
    """
    by_tbname = any(
        isinstance(p.expr, exp.Column) and p.expr.name.lower() == "tbname" for p in s.partition_by
    )
    if s.into is None or not by_tbname:
        sp = s.options.spans.get("delete_output_table")
        raise SqlError(
            "DELETE_OUTPUT_TABLE deletes the output subtable of a dropped trigger subtable: it applies "
            "only to streams grouped by subtable (PARTITION BY tbname) with an output table (INTO) "
            "(seed 002, Stream Processing Control Options)",
            sql=sql,
            offset=sp.start if sp else None,
            code=Code.INVALID_STREAM_QUERY,
        )


def spec_337(s: ast.CreateStream337, sql: str, default_db: str | None, catalog: Catalog) -> StreamSpec:
    """StreamSpec of a 3.3.7 CREATE STREAM (the subset of ``check_supported``).

    Raises:
        SqlError / CatalogError: unsupported parts, a missing trigger table or database.
    """
    check_supported(s, sql)
    _check_databases(s, sql, default_db, catalog)
    # PERIOD without FROM: the plan reads the computation's first table, or no table at all
    # (a notify-only stream, a computation of constants): it then lives in the stream's database
    trigger_table = s.from_table or _first_table(s)
    src_db = (trigger_table.db if trigger_table is not None else s.db) or default_db
    if not src_db:
        raise CatalogError("database not specified for the trigger table", code=Code.DB_NOT_SPECIFIED)
    db = catalog.require_database(src_db)
    src = catalog.require_table(db.name, trigger_table.name) if trigger_table is not None else None
    options = _options_spec(s, db.precision)
    tags = _output_tags(s, src, sql)
    notify = None
    if s.notify is not None:  # seed 002 defaults: no history, drop on failure
        notify = NotifySpec(
            urls=list(s.notify.urls),
            events=[e.upper() for e in s.notify.events] or ["ON_TIME"],
            history=bool(s.notify.history),
            on_failure=s.notify.on_failure or "DROP",
            where=expr_sql(s.notify.where) if s.notify.where is not None else None,
        )
    window = _window(s)
    assert window is not None
    trigger = trigger_json(s.trigger)
    if isinstance(s.trigger, ast.PeriodTrigger):
        trigger["from"] = s.from_table is not None
        if trigger_table is None:
            trigger["home_db"] = db.name  # no table read: the database the stream runs in
    output = None
    if s.into is not None:
        output = OutputSpec(
            db=s.into.db or default_db or src_db,
            table=s.into.name,
            subtable=expr_sql(s.output_subtable) if s.output_subtable is not None else None,
            columns=[{"name": c.name, "composite_key": c.composite_key} for c in s.columns]
            if s.columns
            else None,
            tags=tags,
        )
    return StreamSpec(
        name=s.name,
        db=s.db,
        syntax=V337,
        source=SourceSpec(src_db, trigger_table.name) if trigger_table is not None else None,
        trigger=trigger,
        partition_by=[{"sql": p.text, "alias": p.alias} for p in s.partition_by],
        filter=options.pre_filter,
        query=query_sql(s.query) if s.query is not None else None,
        options=options,
        output=output,
        notify=notify,
        sql=sql,
    )


SYSTEM_DATABASES = frozenset({"information_schema", "performance_schema"})


def _check_databases(s: ast.CreateStream337, sql: str, default_db: str | None, catalog: Catalog) -> None:
    """The stream's own database and its output table's database exist ("the database must
    already exist before creating a stream"); the trigger table is no system table ("System
    tables, views, and queries are not supported") (seed 002, Rules and Limitations; Trigger
    Tables).

    Raises:
        SqlError: DB_NOT_EXIST at the database's name; INVALID_STREAM_QUERY for a system table.
    """
    for what, name in (("the stream", s.db), ("the output table", s.into.db if s.into else None)):
        if name is not None and catalog.database(name) is None:
            raise SqlError(
                f"database {name} of {what} does not exist: create it first (seed 002, Rules and "
                "Limitations)",
                sql=sql,
                offset=_name_offset(sql, name),
                code=Code.DB_NOT_EXIST,
            )
    t = s.from_table
    if t is not None and (t.db or default_db or "").lower() in SYSTEM_DATABASES:
        raise SqlError(
            f"{t.db or default_db}.{t.name} is a system table: a trigger table is a normal table, "
            "supertable, subtable or virtual table (seed 002, Trigger Tables)",
            sql=sql,
            offset=t.span.start if t.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )


def _name_offset(sql: str, name: str) -> int | None:
    """Offset of the first ``name.`` (a database qualifier, quoted or not) in ``sql``."""
    low = sql.lower()
    for text in (f"`{name.lower()}`.", f"{name.lower()}."):
        at = low.find(text)
        if at >= 0:
            return at
    return None


def history_start_text(
    e: exp.Expr, sql: str = "", span: ast.Span | None = None, precision: str | None = None
) -> str:
    """The start time of FILL_HISTORY(start_time) / FILL_HISTORY_FIRST(start_time) as kept in the
    spec: an integer (epoch in the database precision) or a timestamp string, as TDengine takes
    them (``'2025-05-27 14:29:42'``, ``1748327382161``); ``now`` plus or minus durations
    (``now - 1d``) is the time of CREATE STREAM, kept as its epoch in ``precision`` (when given;
    without it only the form is checked).

    Raises:
        SqlError: INVALID_STREAM_QUERY for anything else, at the option.
    """
    if isinstance(e, exp.Literal) and (e.is_string or e.is_int):
        return str(e.this) if e.is_string else str(int(e.this))
    ns = _now_offset_ns(e)
    if ns is not None:
        if precision is None:
            return ""
        now_ns = time.time_ns() + ns
        return str(now_ns // NS_PER_PRECISION[precision])
    raise SqlError(
        f"FILL_HISTORY start time {expr_sql(e)}: expected an epoch integer or a timestamp string "
        "('YYYY-MM-DD HH:MM:SS[.fff]') (seed 002, Stream Processing Control Options)",
        sql=sql,
        offset=span.start if span else None,
        code=Code.INVALID_STREAM_QUERY,
    )


def _now_offset_ns(e: exp.Expr) -> int | None:
    """``now`` plus or minus fixed durations (``now - 1d``): the offset from now in nanoseconds,
    or None for any other expression."""
    if isinstance(e, exp.Paren):
        return _now_offset_ns(e.this)
    if isinstance(e, exp.CurrentTimestamp):
        return 0
    if isinstance(e, exp.Add | exp.Sub) and isinstance(e.expression, exp.Interval):
        base = _now_offset_ns(e.this)
        raw = e.expression.meta.get("td_duration")
        if base is None or not raw:
            return None
        d = Duration.parse(str(raw))
        if d.is_calendar:
            return None
        return base + (d.ns if isinstance(e, exp.Add) else -d.ns)
    return None


def _options_spec(s: ast.CreateStream337, precision: str = "ms") -> OptionsSpec:
    """The engine options of a 3.3.7 stream's STREAM_OPTIONS (seed 002 "Atypical Data Ingestion
    Scenarios"; MAX_DELAY for window triggers only)."""
    o = s.options
    # COUNT_WINDOW and SLIDING triggers ignore out-of-order rows, updates and deletes (seed 002
    # "Atypical Data Ingestion Scenarios": "Ignored; no processing performed")
    count = isinstance(s.trigger, ast.CountWindow) or trigger_class(s.trigger) == "sliding"
    # MAX_DELAY (window triggers only; "non-window triggers automatically ignore this option"):
    # the engine's processing-time trigger, computing open windows every delay_time
    max_delay = o.max_delay is not None and trigger_class(s.trigger) == "window"
    return OptionsSpec(
        trigger="MAX_DELAY" if max_delay else "WINDOW_CLOSE",
        max_delay=str(o.max_delay) if max_delay else None,
        low_latency_calc=o.low_latency_calc,
        watermark=str(o.watermark) if o.watermark is not None else None,
        expired_time=str(o.expired_time) if o.expired_time is not None else None,
        # out-of-order / updates: recalculated except for COUNT_WINDOW, SLIDING or IGNORE_DISORDER
        ignore_expired=count or o.ignore_disorder,
        ignore_update=count or o.ignore_disorder,
        # FILL_HISTORY_FIRST computes the history too, before real time: tdweb reads a stream's
        # history snapshot before its changes for both options (docs/decisions.md)
        fill_history=o.fill_history or o.fill_history_first,
        fill_history_first=o.fill_history_first,
        fill_history_start=history_start_text(o.fill_history_start, precision=precision)
        if o.fill_history_start is not None
        else None,
        ignore_disorder=o.ignore_disorder,
        delete_recalc=o.delete_recalc and not count,
        delete_output_table=o.delete_output_table,
        pre_filter=expr_sql(o.pre_filter) if o.pre_filter is not None else None,
        ignore_nodata_trigger=o.ignore_nodata_trigger,
        event_type=[e.upper() for e in o.event_type],
        force_output=o.force_output,
        calc_notify_only=o.calc_notify_only,
    )


def _output_tags(s: ast.CreateStream337, src: Table | None, sql: str) -> list[OutputTag]:
    """The output supertable's tags: the TAGS clause, else one per PARTITION BY item
    (``tag_tbname VARCHAR(270)`` for tbname, the tag's own name and type otherwise; seed 002
    "Outputs").

    Raises:
        SqlError: INVALID_STREAM_QUERY for a PARTITION BY item that is neither tbname nor a tag.
    """
    if s.tags:
        return [
            OutputTag(
                t.name,
                t.type.sql if t.type else "",
                expr_sql(t.expr) if t.expr is not None else None,
                t.comment,
            )
            for t in s.tags
        ]
    tags: list[OutputTag] = []
    for p in s.partition_by:
        col = p.expr.name.lower() if isinstance(p.expr, exp.Column) else None
        if col == "tbname":
            tags.append(OutputTag("tag_tbname", "VARCHAR(270)"))
            continue
        tag = src.tag(col) if col and src is not None else None
        if tag is None:
            raise SqlError(
                f"PARTITION BY {p.text}: a 3.3.7 trigger groups by tbname or tags only (seed 002, "
                "Trigger Grouping)",
                sql=sql,
                offset=p.span.start if p.span else None,
                code=Code.INVALID_STREAM_QUERY,
            )
        tags.append(OutputTag(p.alias or tag.name, tag.type.sql))
    return tags


def _first_table(s: ast.CreateStream337) -> ast.TableName | None:
    """The first table a PERIOD computation without FROM reads (its plan's source), None when it
    reads none (or there is no computation: seed 002's notify-only ``PERIOD(1h) NOTIFY(...)``)."""
    if s.query is None:
        return None
    ctes = {c.alias.lower() for c in s.query.select.find_all(exp.CTE)}
    for t in s.query.select.find_all(exp.Table):
        name = t.name.lower() if t.name else ""
        real = name and name not in (TROWS, TBNAME) and (t.db or name not in ctes)
        if real and (t.db or "").lower() not in SYSTEM_DATABASES:
            return ast.TableName(t.name, t.db or None)
    return None


def engine_query(spec: StreamSpec, ts_column: str, stmt: ast.CreateStream337 | None = None) -> str:
    """The legacy window SELECT computing a 3.3.7 stream's results (module docstring), or for a
    computation that is not fused (``is_fused``) its trigger windows with their row counts;
    ``ts_column`` is the trigger table's primary timestamp column (``_c0``); ``stmt`` is
    ``spec.sql`` already parsed (parsed here when None)."""
    if stmt is None:
        parsed = parse_one(spec.sql)
        assert isinstance(parsed, ast.CreateStream337)
        stmt = parsed
    window = _window(stmt)
    assert window is not None
    if is_fused(stmt):
        assert stmt.query is not None
        sel = stmt.query.select.copy()
    else:  # the trigger only: windows and their row counts (_twrownum); compute.py computes
        sel = exp.select(exp.column("_wstart"), exp.Count(this=exp.Star())).from_(TROWS)
    assert isinstance(sel, exp.Select)
    if spec.source is None:  # a PERIOD stream reading no table (planner.tableless_source)
        src = exp.Table(this=exp.to_identifier(NO_TABLE, quoted=True))
    else:
        src = exp.Table(this=exp.to_identifier(spec.source.table, quoted=True))
        if spec.source.db:
            src.set("db", exp.to_identifier(spec.source.db, quoted=True))
    for t in list(sel.find_all(exp.Table)):
        t.replace(src.copy())
    for col in list(sel.find_all(exp.Column)):
        name = col.name.lower()
        if name in WINDOW_PLACEHOLDERS:
            col.replace(exp.column(WINDOW_PLACEHOLDERS[name]))
        elif name == "_twrownum":
            col.replace(exp.Count(this=exp.Star()))
        elif name == "_c0":
            col.replace(exp.column(ts_column, quoted=True))
    if stmt.options.pre_filter is not None:
        sel = sel.where(stmt.options.pre_filter.copy())
    parts = [expr_sql(sel)]
    if stmt.partition_by:
        parts.append(partition_sql(stmt.partition_by))
    parts.append(window_sql(window))
    return " ".join(parts)
