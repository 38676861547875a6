"""Design -> SQL: the CREATE STREAM statement a design says, in its own syntax
(``build_statement``) or, through ``convert.convert_design``, in the other one (``design_to_sql``,
``sql_variants``), rendered canonically by ``spark_workers.sql.render``.

The builders read each node with ``fields``; they raise ``DesignError`` for a malformed field and
``NotExpressible`` for what the syntax has not (a PERIOD trigger in legacy syntax, a legacy option
in 3.3.7...). A legacy design's computation (``FROM %%trows``) becomes the legacy window query
again: the reverse of ``from_sql``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sqlglot import exp

from spark_workers.sql import ast
from spark_workers.sql.render import render
from spark_workers.streams.design.computation import (
    TO_LEGACY,
    from_table,
    is_trows,
    rename_columns,
    rename_text,
)
from spark_workers.streams.design.convert import convert_design
from spark_workers.streams.design.document import (
    COUNT_MIN,
    EKUIPER_FUNCTIONS,
    EKUIPER_UNITS,
    EVENTS_337,
    FLAGS_337,
    FROM_QUERY_337,
    LEGACY_EVENTS,
    LEGACY_TRIGGER_MODES,
    NO_WINDOW_337,
    OPTION_KEYS,
    SYNTAXES,
    TRIGGER_FIELDS,
    DesignError,
    NotExpressible,
)
from spark_workers.streams.design.fields import (
    node_of,
    read_duration,
    read_expr,
    read_from,
    read_int,
    read_name,
    read_partition,
    read_query,
    read_table,
    read_tag_type,
)
from spark_workers.streams.spec import LEGACY, V337


def design_to_sql(design: dict[str, Any], syntax: str | None = None) -> str:
    """The CREATE STREAM statement of a design, rendered canonically by ``render.render``.

    Args:
        design: a design (``document``).
        syntax: ``"3.3.7"`` or ``"legacy"``; None = ``design["syntax"]``. Another syntax than the
            design's goes through ``convert_design`` (semantically equivalent or refused).

    Raises:
        NotExpressible: the design cannot be written (equivalently) in that syntax.
        DesignError: a malformed field (``node``, ``field``, ``position`` inside the field's text).
    """
    target = syntax or design.get("syntax") or V337
    return render(build_statement(convert_design(design, str(target))))


def sql_variants(design: dict[str, Any]) -> tuple[dict[str, str | None], dict[str, str]]:
    """SQL per syntax and why a syntax cannot express the design.

    Returns:
        ``({"3.3.7": sql | None, "legacy": sql | None}, {syntax: reason})``.

    Raises:
        DesignError: a malformed field (the design has no SQL in any syntax).
    """
    sqls: dict[str, str | None] = {}
    reasons: dict[str, str] = {}
    for syntax in SYNTAXES:
        try:
            sqls[syntax] = design_to_sql(design, syntax)
        except NotExpressible as e:
            sqls[syntax] = None
            reasons[syntax] = e.reason
    return sqls, reasons


def build_statement(design: dict[str, Any]) -> ast.CreateStreamLegacy | ast.CreateStream337:
    """The statement a design says in its own syntax (``design["syntax"]``).

    Raises:
        DesignError: a malformed field (position inside the field's text when known).
        NotExpressible: a part the design's syntax has not (e.g. a PERIOD trigger in legacy syntax).
    """
    syntax = design.get("syntax")
    if syntax not in SYNTAXES:
        raise DesignError(None, "syntax", f"unknown syntax {syntax!r}: use 3.3.7 or legacy")
    name = read_name("stream", "name", design.get("name"))
    assert name is not None
    db = read_name("stream", "db", design.get("db"), required=False)
    ine = bool(design.get("if_not_exists"))
    options = node_of(design, "options") or {}
    out = node_of(design, "output")
    if syntax == LEGACY:
        query = _legacy_computation(design)
        notify = build_notify(node_of(design, "notify"), LEGACY)
        if out is None and notify is None:
            raise NotExpressible(
                LEGACY,
                "a legacy stream writes INTO an output table or notifies (NOTIFY ... ON, seed 000)",
                "output",
                "table",
            )
        into, subtable, columns, tags = build_output(out, with_expr=False)
        return ast.CreateStreamLegacy(
            name=name,
            db=db,
            if_not_exists=ine,
            options=_legacy_options(options),
            # None: results only notified (seed 000 "Stream Computing Event Notifications")
            into=cast(ast.TableName, into),
            columns=columns,
            tags=tags,
            subtable=subtable,
            query=query,
            notify=notify,
        )
    trig = node_of(design, "trigger")
    if trig is None:
        raise DesignError("trigger", "type", "the trigger is required")
    trigger = build_trigger(trig, V337)
    assert trigger is not None and not isinstance(trigger, ast.IntervalWindow | ast.EkuiperWindow)
    source = node_of(design, "source")
    if source is not None and source.get("from"):
        raise NotExpressible(V337, FROM_QUERY_337, "source", "from")
    from_table = read_table("source", source) if source is not None and source.get("table") else None
    pre = node_of(design, "prefilter")
    cond = read_expr("prefilter", "condition", pre.get("condition"), True) if pre is not None else None
    comp = node_of(design, "computation")
    computation = read_query("computation", "query", comp.get("query")) if comp is not None else None
    into, subtable, columns, tags = build_output(out, with_expr=True)
    return ast.CreateStream337(
        name=name,
        db=db,
        if_not_exists=ine,
        trigger=trigger,
        from_table=from_table,
        partition_by=read_partition(source),
        options=_options_337(options, cond),
        notify=build_notify(node_of(design, "notify"), V337),
        into=into,
        output_subtable=subtable,
        columns=columns,
        tags=tags,
        query=computation,
    )


def _legacy_computation(design: dict[str, Any]) -> ast.SelectQuery:
    """The legacy query of a legacy design: the reverse of ``from_sql._legacy_nodes`` (``document``)."""
    comp = node_of(design, "computation")
    if comp is None:
        raise NotExpressible(
            LEGACY, "a legacy stream needs a computation (AS subquery)", "computation", "query"
        )
    source = node_of(design, "source")
    if source is None or not (source.get("table") or source.get("from")):
        raise NotExpressible(LEGACY, "a legacy stream needs a trigger table (FROM table)", "source", "table")
    q = read_query("computation", "query", comp.get("query"))
    table = from_table(q.select)
    if not is_trows(table) or q.partition_by or q.window is not None:
        raise DesignError(
            "computation",
            "query",
            "a legacy computation reads FROM %%trows (the source table), without joins, PARTITION BY "
            "or window clause: they belong to the source and trigger nodes",
            0,
        )
    assert isinstance(q.select, exp.Select)
    if q.select.args.get("where") is not None:
        raise DesignError(
            "computation", "query", "a FROM %%trows computation takes no WHERE: use the pre-filter node", 0
        )
    sel = q.select.copy()
    if source.get("from"):
        frm, joins = read_from(source.get("from"))
        sel.args["from_"].set("this", frm)
        sel.set("joins", joins or None)
    else:
        src = read_table("source", source)
        tbl = exp.Table(this=exp.to_identifier(src.name))
        if src.db:
            tbl.set("db", exp.to_identifier(src.db))
        sel.args["from_"].set("this", tbl)
    pre = node_of(design, "prefilter")
    cond = read_expr("prefilter", "condition", pre.get("condition"), True) if pre is not None else None
    if cond is not None:
        sel.set("where", exp.Where(this=cond))
    rename_columns(sel, TO_LEGACY)
    trig = node_of(design, "trigger")
    if trig is None:
        raise DesignError("trigger", "type", "the trigger is required")
    window = build_trigger(trig, LEGACY)
    assert not isinstance(window, ast.PeriodTrigger | ast.SlidingTrigger)
    if window is None and q.fill is not None:
        raise DesignError(
            "computation", "query", "FILL belongs to a window: a stream without a window has none", 0
        )
    return ast.SelectQuery(
        select=sel,
        partition_by=read_partition(source),
        window=window,
        fill=q.fill,
        item_texts=[rename_text(t, TO_LEGACY) for t in q.item_texts],
    )


def build_trigger(t: dict[str, Any], syntax: str) -> ast.Window | ast.Trigger337 | None:
    """The trigger node as the window (legacy) or trigger (3.3.7) of ``syntax``; None for a legacy
    stream without a window (type ``none``: every written row computed at once, seed 000).

    Raises:
        DesignError: an unknown type or a malformed field.
        NotExpressible: a trigger type (or field) the syntax has not, or a COUNT_WINDOW count
            below ``COUNT_MIN``.
    """
    kind = t.get("type")
    if kind not in TRIGGER_FIELDS:
        raise DesignError(
            "trigger", "type", f"unknown trigger type {kind!r}: use {', '.join(TRIGGER_FIELDS)}"
        )
    if syntax == LEGACY and kind in ("period", "sliding"):
        raise NotExpressible(
            LEGACY, f"{kind.upper()} triggers exist only in 3.3.7 syntax (seed 002)", "trigger", "type"
        )
    if syntax == V337 and kind == "ekuiper":
        raise NotExpressible(
            V337, "eKuiper window functions exist only in legacy syntax (seed 003)", "trigger", "type"
        )
    if kind == "none":
        if syntax == V337:
            raise NotExpressible(V337, NO_WINDOW_337, "trigger", "type")
        return None
    return _TRIGGER_BUILDERS[kind](t, syntax)


def _interval_trigger(t: dict[str, Any], syntax: str) -> ast.IntervalWindow | ast.SlidingTrigger:
    interval = read_duration("trigger", "interval", t.get("interval"), True)
    offset = read_duration("trigger", "offset", t.get("offset"))
    sliding = read_duration("trigger", "sliding", t.get("sliding"))
    s_off = read_duration("trigger", "sliding_offset", t.get("sliding_offset"))
    assert interval is not None
    if syntax == LEGACY:
        if s_off is not None:
            raise NotExpressible(
                LEGACY, "a SLIDING offset exists only in 3.3.7 syntax", "trigger", "sliding_offset"
            )
        return ast.IntervalWindow(interval=interval, offset=offset, sliding=sliding)
    # seed 002 writes SLIDING always; not written, it is the interval (tumbling windows), the
    # designer's documented default (``defaults``: "sliding": "= interval")
    return ast.SlidingTrigger(
        sliding=sliding if sliding is not None else interval,
        interval=interval,
        interval_offset=offset,
        sliding_offset=s_off,
    )


def _sliding_trigger(t: dict[str, Any], syntax: str) -> ast.SlidingTrigger:
    sliding = read_duration("trigger", "sliding", t.get("sliding"), True)
    assert sliding is not None
    return ast.SlidingTrigger(
        sliding=sliding, sliding_offset=read_duration("trigger", "sliding_offset", t.get("sliding_offset"))
    )


def _period_trigger(t: dict[str, Any], syntax: str) -> ast.PeriodTrigger:
    period = read_duration("trigger", "period", t.get("period"), True)
    assert period is not None
    return ast.PeriodTrigger(period=period, offset=read_duration("trigger", "offset", t.get("offset")))


def _session_window(t: dict[str, Any], syntax: str) -> ast.SessionWindow:
    ts = read_name("trigger", "ts_column", t.get("ts_column"))
    gap = read_duration("trigger", "gap", t.get("gap"), True)
    assert ts is not None and gap is not None
    return ast.SessionWindow(ts_column=ts, gap=gap)


def _state_window(t: dict[str, Any], syntax: str) -> ast.StateWindow:
    e = read_expr("trigger", "expr", t.get("expr"), True)
    assert e is not None
    return ast.StateWindow(expr=e, true_for=read_duration("trigger", "true_for", t.get("true_for")))


def _event_window(t: dict[str, Any], syntax: str) -> ast.EventWindow:
    start = read_expr("trigger", "start", t.get("start"), True)
    end = read_expr("trigger", "end", t.get("end"), True)
    assert start is not None and end is not None
    return ast.EventWindow(
        start=start, end=end, true_for=read_duration("trigger", "true_for", t.get("true_for"))
    )


def _count_window(t: dict[str, Any], syntax: str) -> ast.CountWindow:
    count = read_int("trigger", "count", t.get("count"), 1, True)
    assert count is not None
    if count < COUNT_MIN[syntax]:
        raise NotExpressible(
            syntax,
            f"COUNT_WINDOW({count}): the count is at least {COUNT_MIN[syntax]} in {syntax} syntax",
            "trigger",
            "count",
        )
    sliding_n = read_int("trigger", "sliding", t.get("sliding"), 1)
    cols = tuple(str(c) for c in t.get("columns") or [])
    return ast.CountWindow(count=count, sliding=sliding_n, columns=cols)


def _ekuiper_window(t: dict[str, Any], syntax: str) -> ast.EkuiperWindow:
    function = t.get("function")
    if function not in EKUIPER_FUNCTIONS:
        raise DesignError("trigger", "function", f"unknown eKuiper window function {function!r}")
    unit = t.get("unit")
    if function != "count" and (not isinstance(unit, str) or unit.upper() not in EKUIPER_UNITS):
        raise DesignError("trigger", "unit", f"time unit must be one of {', '.join(EKUIPER_UNITS)}")
    args = tuple(
        read_int("trigger", f"args[{i}]", a, 0, True) or 0 for i, a in enumerate(t.get("args") or [])
    )
    return ast.EkuiperWindow(
        function=function,
        unit=unit.upper() if function != "count" and isinstance(unit, str) else None,
        args=args,
        over_when=read_expr("trigger", "over_when", t.get("over_when")),
        filter=read_expr("trigger", "filter", t.get("filter")),
    )


# trigger type -> builder of its window (legacy) or trigger (3.3.7), given the node and the syntax
_TRIGGER_BUILDERS: dict[str, Callable[[dict[str, Any], str], ast.Window | ast.Trigger337]] = {
    "interval": _interval_trigger,
    "sliding": _sliding_trigger,
    "period": _period_trigger,
    "session": _session_window,
    "state": _state_window,
    "event": _event_window,
    "count": _count_window,
    "ekuiper": _ekuiper_window,
}


def build_output(
    out: dict[str, Any] | None, with_expr: bool
) -> tuple[
    ast.TableName | None, exp.Expr | None, list[ast.OutputColumn] | None, list[ast.OutputTagDef] | None
]:
    """The output node as ``(into, subtable, columns, tags)`` (all None without an output);
    ``with_expr``: tags take value expressions (3.3.7), else an expression is ``NotExpressible``."""
    if out is None:
        return None, None, None, None
    into = read_table("output", out)
    subtable = read_expr("output", "subtable", out.get("subtable"))
    columns = []
    for i, c in enumerate(out.get("columns") or []):
        if not isinstance(c, dict):
            raise DesignError("output", f"columns[{i}]", "must be {name, composite_key}")
        name = read_name("output", f"columns[{i}].name", c.get("name"))
        assert name is not None
        columns.append(ast.OutputColumn(name=name, composite_key=bool(c.get("composite_key"))))
    tags = []
    for i, t in enumerate(out.get("tags") or []):
        if not isinstance(t, dict):
            raise DesignError("output", f"tags[{i}]", "must be {name, type, comment, expr}")
        name = read_name("output", f"tags[{i}].name", t.get("name"))
        assert name is not None
        # a legacy tag may be named alone (TAGS (ta): the existing supertable's tag)
        untyped = not with_expr and not t.get("type")
        ttype = None if untyped else read_tag_type(f"tags[{i}].type", t.get("type"))
        texpr = read_expr("output", f"tags[{i}].expr", t.get("expr"), required=with_expr)
        if texpr is not None and not with_expr:
            raise NotExpressible(
                LEGACY, "legacy output tags take no value expression", "output", f"tags[{i}].expr"
            )
        tags.append(ast.OutputTagDef(name=name, type=ttype, expr=texpr, comment=t.get("comment")))
    return into, subtable, columns or None, tags or None


def build_notify(n: dict[str, Any] | None, syntax: str) -> ast.NotifyDef | None:
    """The notify node as the NOTIFY clause of ``syntax`` (None without one); 3.3.7 leaves its
    defaults (no history, ON_FAILURE DROP) unwritten."""
    if n is None:
        return None
    urls = n.get("urls") or []
    if not urls:
        raise DesignError("notify", "urls", "at least one URL is required")
    allowed = LEGACY_EVENTS if syntax == LEGACY else EVENTS_337
    events = [str(e).upper() for e in n.get("events") or []]
    for i, e in enumerate(events):
        if e == "WINDOW_INVALIDATION":
            raise DesignError(
                "notify",
                f"events[{i}]",
                "WINDOW_INVALIDATION is not an ON event: a stream notifying WINDOW_OPEN or "
                "WINDOW_CLOSE also receives it for a generated window that out-of-order rows, "
                f"updates or deletions remove or recompute (seed 000/002); ON takes {', '.join(allowed)}",
            )
        if e not in allowed:
            raise DesignError("notify", f"events[{i}]", f"unknown event {e}: use {', '.join(allowed)}")
    if syntax == LEGACY and not events:
        raise DesignError("notify", "events", "legacy NOTIFY needs ON (event types)")
    where = read_expr("notify", "where", n.get("where"))
    if where is not None and syntax == LEGACY:
        raise NotExpressible(LEGACY, "NOTIFY ... WHERE exists only in 3.3.7 syntax", "notify", "where")
    history = n.get("history")
    on_failure = n.get("on_failure")
    if on_failure is not None and on_failure not in ("DROP", "PAUSE"):
        raise DesignError("notify", "on_failure", "must be DROP or PAUSE")
    if syntax == V337 and (history is False or on_failure == "DROP"):
        # 3.3.7 writes only the non-defaults; the defaults are implied
        history = None if history is False else history
        on_failure = None if on_failure == "DROP" else on_failure
    return ast.NotifyDef(
        urls=[str(u) for u in urls],
        events=events,
        where=where,
        history=None if history is None else bool(history),
        on_failure=on_failure,
    )


def _options_check_syntax(o: dict[str, Any], syntax: str) -> None:
    for key, value in o.items():
        if key not in OPTION_KEYS:
            raise DesignError("options", key, f"unknown option {key}")
        only = OPTION_KEYS[key][1]
        if only is not None and only != syntax and value not in (None, False, []):
            raise NotExpressible(
                syntax, f"the option {key.upper()} exists only in {only} syntax", "options", key
            )


def _bool_opt(o: dict[str, Any], key: str) -> bool | None:
    v = o.get(key)
    if v is None:
        return None
    if not isinstance(v, bool | int):
        raise DesignError("options", key, "must be true, false or null")
    return bool(v)


def _legacy_options(o: dict[str, Any]) -> ast.LegacyStreamOptions:
    _options_check_syntax(o, LEGACY)
    mode = o.get("trigger_mode")
    if mode is not None and mode not in LEGACY_TRIGGER_MODES:
        raise DesignError(
            "options", "trigger_mode", f"unknown trigger mode {mode}: use {', '.join(LEGACY_TRIGGER_MODES)}"
        )
    max_delay = read_duration("options", "max_delay", o.get("max_delay"), mode == "MAX_DELAY")
    if max_delay is not None and mode != "MAX_DELAY":
        raise DesignError("options", "max_delay", "belongs to trigger mode MAX_DELAY in legacy syntax")
    recalculate = read_duration("options", "recalculate", o.get("recalculate"))
    if recalculate is not None and mode != "CONTINUOUS_WINDOW_CLOSE":
        raise DesignError("options", "recalculate", "belongs to trigger mode CONTINUOUS_WINDOW_CLOSE")

    def flag01(key: str) -> int | None:
        b = _bool_opt(o, key)
        return None if b is None else int(b)

    fill_history = flag01("fill_history")
    if o.get("fill_history_async") and not fill_history:
        raise DesignError("options", "fill_history_async", "ASYNC belongs to FILL_HISTORY 1")
    return ast.LegacyStreamOptions(
        trigger=mode,
        max_delay=max_delay,
        recalculate=recalculate,
        watermark=read_duration("options", "watermark", o.get("watermark")),
        ignore_expired=flag01("ignore_expired"),
        delete_mark=read_duration("options", "delete_mark", o.get("delete_mark")),
        fill_history=fill_history,
        fill_history_async=bool(o.get("fill_history_async")),
        ignore_update=flag01("ignore_update"),
        event_time=flag01("event_time"),
    )


def _options_337(o: dict[str, Any], prefilter: exp.Expr | None) -> ast.StreamOptions337:
    _options_check_syntax(o, V337)
    out = ast.StreamOptions337(
        watermark=read_duration("options", "watermark", o.get("watermark")),
        expired_time=read_duration("options", "expired_time", o.get("expired_time")),
        fill_history=bool(o.get("fill_history")),
        fill_history_start=read_expr("options", "fill_history_start", o.get("fill_history_start")),
        pre_filter=prefilter,
        max_delay=read_duration("options", "max_delay", o.get("max_delay")),
        event_type=[str(e).upper() for e in o.get("event_type") or []],
    )
    for i, e in enumerate(out.event_type):
        if e not in LEGACY_EVENTS:
            raise DesignError(
                "options", f"event_type[{i}]", f"unknown event {e}: use WINDOW_OPEN or WINDOW_CLOSE"
            )
    for k in FLAGS_337:
        setattr(out, k, bool(o.get(k)))
    return out
