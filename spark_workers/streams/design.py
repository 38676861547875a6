"""The stream designer's design document: CREATE STREAM <-> design JSON, checks, error placement,
placeholders and the impact of a change (contract: ``docs/designer.md``, section "Design").

A design is one JSON document per stream with one entry per node of the designer's graph::

    {"schema_version": 1, "name": "s1", "db": null, "default_db": null, "syntax": "legacy",
     "if_not_exists": false,
     "nodes": {
       "source": {"db": null, "table": "t1", "partition_by": [{"sql": "tbname", "alias": null}]},
       "prefilter": {"condition": "a > 0"} | null,
       "trigger": {"type": "interval", "interval": "10s", "offset": null, "sliding": null,
                   "sliding_offset": null},
       "options": {"trigger_mode": "AT_ONCE", "watermark": null, ...every key of OPTION_KEYS},
       "computation": {"query": "SELECT _twstart, count(*) FROM %%trows"} | null,
       "output": {"db": null, "table": "out", "subtable": null, "columns": [], "tags": []} | null,
       "notify": {"urls": [...], "events": [...], "where": null, "history": null,
                  "on_failure": null} | null},
     "layout": {}}

Every field keeps the text as written (durations ``"10s"``, names, PARTITION BY items and
select-list items as written); expressions and queries are kept in their canonical rendering
(``spark_workers.sql.render``), which is what makes SQL -> design -> SQL exact. ``None`` means "not
written": the syntax's default applies (``defaults``).

The computation is always kept in the 3.3.7 form, ``SELECT ... FROM %%trows`` (seed 002,
Placeholders). A legacy query ``SELECT items FROM tbl [WHERE c] [PARTITION BY ...] window
[FILL(...)] [GROUP BY ...] ...`` (seed 000) is split into: source (``tbl``, PARTITION BY),
prefilter (``c``), trigger (the window, also an eKuiper window function of GROUP BY, seed 003)
and computation (the rest, with ``FROM %%trows`` for ``FROM tbl`` and the window pseudo-columns
renamed ``_wstart`` <-> ``_twstart``, ``_wend`` <-> ``_twend``, ``_wduration`` <-> ``_twduration``,
keeping the letters' case; FILL stays in the computation).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError, SqlPosition
from spark_workers.query.compute import placeholder_key
from spark_workers.query.planner import aggregate_call
from spark_workers.sql import ast
from spark_workers.sql.lexer import TROWS
from spark_workers.sql.parser import parse_expression, parse_one
from spark_workers.sql.render import (
    expr_sql,
    name_sql,
    partition_sql,
    query_sql,
    render,
    string_sql,
    table_sql,
    trigger_sql,
)
from spark_workers.streams.spec import LEGACY, SCHEMA_VERSION, V337
from spark_workers.tdtypes import TdType

SYNTAXES = (V337, LEGACY)
NODES = ("source", "prefilter", "trigger", "options", "computation", "output", "notify")
TRIGGER_FIELDS: dict[str, tuple[str, ...]] = {
    "interval": ("interval", "offset", "sliding", "sliding_offset"),
    "sliding": ("sliding", "sliding_offset"),
    "period": ("period", "offset"),
    "session": ("ts_column", "gap"),
    "state": ("expr", "true_for"),
    "event": ("start", "end", "true_for"),
    "count": ("count", "sliding", "columns"),
    "ekuiper": ("function", "unit", "args", "over_when", "filter"),
}
LEGACY_TRIGGER_MODES = (
    "AT_ONCE",
    "WINDOW_CLOSE",
    "MAX_DELAY",
    "FORCE_WINDOW_CLOSE",
    "CONTINUOUS_WINDOW_CLOSE",
)
# option key -> value kind; "legacy" / "3.3.7" say which syntax alone has it (None: both)
OPTION_KEYS: dict[str, tuple[str, str | None]] = {
    "trigger_mode": ("mode", LEGACY),
    "max_delay": ("duration", None),
    "recalculate": ("duration", LEGACY),
    "watermark": ("duration", None),
    "ignore_expired": ("bool", LEGACY),
    "ignore_update": ("bool", LEGACY),
    "delete_mark": ("duration", LEGACY),
    "fill_history": ("bool", None),
    "fill_history_async": ("flag", LEGACY),
    "event_time": ("bool", LEGACY),
    "expired_time": ("duration", V337),
    "ignore_disorder": ("flag", V337),
    "delete_recalc": ("flag", V337),
    "delete_output_table": ("flag", V337),
    "fill_history_first": ("flag", V337),
    "fill_history_start": ("expr", V337),
    "calc_notify_only": ("flag", V337),
    "low_latency_calc": ("flag", V337),
    "force_output": ("flag", V337),
    "event_type": ("events", V337),
    "ignore_nodata_trigger": ("flag", V337),
}
_337_FLAGS = (
    "ignore_disorder",
    "delete_recalc",
    "delete_output_table",
    "fill_history_first",
    "calc_notify_only",
    "low_latency_calc",
    "force_output",
    "ignore_nodata_trigger",
)
EKUIPER_FUNCTIONS = ("tumbling", "hopping", "sliding", "session", "count")
EKUIPER_UNITS = ("DD", "HH", "MI", "SS", "MS")
WINDOW_TRIGGERS = ("interval", "session", "state", "event", "count")
COUNT_MIN = {LEGACY: 2, V337: 1}  # ARCHITECTURE.md decisions
MAX_DELAY_MIN = {LEGACY: Duration(5, "s"), V337: Duration(3, "s")}  # ARCHITECTURE.md decisions
_LEGACY_EVENTS = ("WINDOW_OPEN", "WINDOW_CLOSE")
_337_EVENTS = ("WINDOW_OPEN", "WINDOW_CLOSE", "ON_TIME")
# legacy window pseudo-column -> 3.3.7 placeholder (the design's computation uses the latter)
_TO_337 = {"_wstart": "_twstart", "_wend": "_twend", "_wduration": "_twduration"}
_TO_LEGACY = {v: k for k, v in _TO_337.items()}


class DesignError(ValueError):
    """A design field that is malformed (bad duration, unparsable expression, missing value).

    Attributes:
        node: node id (``trigger``, ``computation``...) or None for the stream itself.
        field: field name (``interval``, ``query``, ``tags[0].expr``...) or None.
        message: what is wrong.
        position: 0-based offset inside the field's text, when the parser gave one.
    """

    def __init__(
        self, node: str | None, field: str | None, message: str, position: int | None = None
    ) -> None:
        super().__init__(f"{node or 'stream'}.{field or '-'}: {message}")
        self.node = node
        self.field = field
        self.message = message
        self.position = position


class NotExpressible(ValueError):
    """The design cannot be written (equivalently) in ``syntax``; ``reason`` says why."""

    def __init__(self, syntax: str, reason: str, node: str | None = None, field: str | None = None) -> None:
        super().__init__(f"not expressible in {syntax} syntax: {reason}")
        self.syntax = syntax
        self.reason = reason
        self.node = node
        self.field = field


# --------------------------------------------------------------------------- helpers


def _dur(d: Duration | None) -> str | None:
    return None if d is None else str(d)


def _expr(e: exp.Expr | None) -> str | None:
    return None if e is None else expr_sql(e)


def _rename(name: str, mapping: dict[str, str]) -> str | None:
    """``_wstart`` -> ``_twstart`` (or back), keeping the case of the letters; None if unmapped."""
    target = mapping.get(name.lower())
    if target is None:
        return None
    if len(target) > len(name):  # insert the "t"
        return name[0] + ("T" if name[1:2].isupper() else "t") + name[1:]
    return name[0] + name[2:]


def _rename_columns(tree: exp.Expr, mapping: dict[str, str]) -> None:
    for col in list(tree.find_all(exp.Column)):
        if col.table:
            continue
        new = _rename(col.name, mapping)
        if new is not None:
            col.set("this", exp.to_identifier(new))


def _rename_text(text: str, mapping: dict[str, str]) -> str:
    pattern = re.compile(r"(?<![\w.`])(" + "|".join(mapping) + r")(?![\w`])", re.IGNORECASE)
    return pattern.sub(lambda m: _rename(m.group(1), mapping) or m.group(1), text)


def _trows_table() -> exp.Expr:
    stmt = parse_one("SELECT 1 FROM %%trows")
    assert isinstance(stmt, ast.Select) and isinstance(stmt.query.select, exp.Select)
    return stmt.query.select.args["from_"].this


def _from_table(sel: exp.Expr) -> exp.Table | None:
    if not isinstance(sel, exp.Select) or sel.args.get("joins"):
        return None
    frm = sel.args.get("from_")
    t = frm.this if frm is not None else None
    return t if isinstance(t, exp.Table) else None


def _is_trows(t: exp.Table | None) -> bool:
    return t is not None and t.name.lower() == TROWS and not t.db and not t.alias


# --------------------------------------------------------------------------- SQL -> design


def design_from_sql(sql: str, default_db: str | None = None) -> dict[str, Any]:
    """The design of one CREATE STREAM statement, legacy (seed 000) or 3.3.7 (seed 002) syntax.

    Args:
        sql: exactly one statement (a trailing ``;`` is allowed).
        default_db: the database unqualified names refer to; kept as ``default_db`` (it is not
            written into the SQL).

    Returns:
        The design (module docstring): ``syntax`` is the syntax written; ``layout`` is empty.

    Raises:
        SqlError: the parser's error unchanged for bad SQL; ``SYNTAX_ERROR`` when the statement is
            not a CREATE STREAM; ``INVALID_STREAM_QUERY`` when a legacy query does not read
            exactly one table (seed 000).
    """
    stmt = parse_one(sql)
    if isinstance(stmt, ast.CreateStreamLegacy):
        nodes = _legacy_nodes(stmt, sql)
        syntax = LEGACY
    elif isinstance(stmt, ast.CreateStream337):
        nodes = _nodes_337(stmt)
        syntax = V337
    else:
        raise SqlError(f"expected a CREATE STREAM statement, got {type(stmt).__name__}", sql=sql, offset=0)
    return {
        "schema_version": SCHEMA_VERSION,
        "name": stmt.name,
        "db": stmt.db,
        "default_db": default_db,
        "syntax": syntax,
        "if_not_exists": stmt.if_not_exists,
        "nodes": nodes,
        "layout": {},
    }


def _empty_options() -> dict[str, Any]:
    out: dict[str, Any] = {k: None for k in OPTION_KEYS}
    for k in _337_FLAGS:
        out[k] = False
    out["fill_history_async"] = False
    out["event_type"] = []
    return out


def _trigger_of(w: ast.Window | ast.Trigger337) -> dict[str, Any]:
    if isinstance(w, ast.IntervalWindow):
        return {
            "type": "interval",
            "interval": str(w.interval),
            "offset": _dur(w.offset),
            "sliding": _dur(w.sliding),
            "sliding_offset": None,
        }
    if isinstance(w, ast.SlidingTrigger):
        if w.interval is None:
            return {"type": "sliding", "sliding": str(w.sliding), "sliding_offset": _dur(w.sliding_offset)}
        return {
            "type": "interval",
            "interval": str(w.interval),
            "offset": _dur(w.interval_offset),
            "sliding": str(w.sliding),
            "sliding_offset": _dur(w.sliding_offset),
        }
    if isinstance(w, ast.PeriodTrigger):
        return {"type": "period", "period": str(w.period), "offset": _dur(w.offset)}
    if isinstance(w, ast.SessionWindow):
        return {"type": "session", "ts_column": w.ts_column, "gap": str(w.gap)}
    if isinstance(w, ast.StateWindow):
        return {"type": "state", "expr": expr_sql(w.expr), "true_for": _dur(w.true_for)}
    if isinstance(w, ast.EventWindow):
        return {
            "type": "event",
            "start": expr_sql(w.start),
            "end": expr_sql(w.end),
            "true_for": _dur(w.true_for),
        }
    if isinstance(w, ast.CountWindow):
        return {"type": "count", "count": w.count, "sliding": w.sliding, "columns": list(w.columns)}
    assert isinstance(w, ast.EkuiperWindow)
    return {
        "type": "ekuiper",
        "function": w.function,
        "unit": w.unit,
        "args": list(w.args),
        "over_when": _expr(w.over_when),
        "filter": _expr(w.filter),
    }


def _output_of(
    into: ast.TableName | None,
    subtable: exp.Expr | None,
    columns: list[ast.OutputColumn] | None,
    tags: list[ast.OutputTagDef] | None,
) -> dict[str, Any] | None:
    if into is None:
        return None
    return {
        "db": into.db,
        "table": into.name,
        "subtable": _expr(subtable),
        "columns": [{"name": c.name, "composite_key": c.composite_key} for c in columns or []],
        "tags": [
            {"name": t.name, "type": t.type.sql, "comment": t.comment, "expr": _expr(t.expr)}
            for t in tags or []
        ],
    }


def _notify_of(n: ast.NotifyDef | None) -> dict[str, Any] | None:
    if n is None:
        return None
    return {
        "urls": list(n.urls),
        "events": list(n.events),
        "where": _expr(n.where),
        "history": n.history,
        "on_failure": n.on_failure,
    }


def _partition_of(items: list[ast.PartitionItem]) -> list[dict[str, Any]]:
    return [{"sql": p.text, "alias": p.alias} for p in items]


def _legacy_nodes(s: ast.CreateStreamLegacy, sql: str) -> dict[str, Any]:
    q = s.query
    table = _from_table(q.select)
    if table is None or not table.name or table.alias or _is_trows(table):
        raise SqlError(
            "a stream's query reads exactly one table (FROM [db.]table, without joins or alias)",
            sql=sql,
            offset=q.span.start if q.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    assert isinstance(q.select, exp.Select) and q.window is not None
    where = q.select.args.get("where")
    sel = q.select.copy()
    sel.set("where", None)
    sel.args["from_"].set("this", _trows_table())
    _rename_columns(sel, _TO_337)
    comp = ast.SelectQuery(
        select=sel, fill=q.fill, item_texts=[_rename_text(t, _TO_337) for t in q.item_texts]
    )
    o = s.options
    options = _empty_options()
    options.update(
        trigger_mode=o.trigger,
        max_delay=_dur(o.max_delay),
        recalculate=_dur(o.recalculate),
        watermark=_dur(o.watermark),
        ignore_expired=None if o.ignore_expired is None else bool(o.ignore_expired),
        ignore_update=None if o.ignore_update is None else bool(o.ignore_update),
        delete_mark=_dur(o.delete_mark),
        fill_history=None if o.fill_history is None else bool(o.fill_history),
        fill_history_async=o.fill_history_async,
        event_time=None if o.event_time is None else bool(o.event_time),
    )
    return {
        "source": {
            "db": table.db or None,
            "table": table.name,
            "partition_by": _partition_of(q.partition_by),
        },
        "prefilter": {"condition": expr_sql(where.this)} if where is not None else None,
        "trigger": _trigger_of(q.window),
        "options": options,
        "computation": {"query": query_sql(comp)},
        "output": _output_of(s.into, s.subtable, s.columns, s.tags),
        "notify": _notify_of(s.notify),
    }


def _nodes_337(s: ast.CreateStream337) -> dict[str, Any]:
    o = s.options
    options = _empty_options()
    options.update(
        max_delay=_dur(o.max_delay),
        watermark=_dur(o.watermark),
        fill_history=True if o.fill_history else None,
        expired_time=_dur(o.expired_time),
        fill_history_start=_expr(o.fill_history_start),
        event_type=list(o.event_type),
    )
    for k in _337_FLAGS:
        options[k] = bool(getattr(o, k))
    source = None
    if s.from_table is not None or s.partition_by:
        source = {
            "db": s.from_table.db if s.from_table else None,
            "table": s.from_table.name if s.from_table else None,
            "partition_by": _partition_of(s.partition_by),
        }
    return {
        "source": source,
        "prefilter": {"condition": expr_sql(o.pre_filter)} if o.pre_filter is not None else None,
        "trigger": _trigger_of(s.trigger),
        "options": options,
        "computation": {"query": query_sql(s.query)} if s.query is not None else None,
        "output": _output_of(s.into, s.output_subtable, s.columns, s.tags),
        "notify": _notify_of(s.notify),
    }


# --------------------------------------------------------------------------- design -> statement


def _node(design: dict[str, Any], name: str) -> dict[str, Any] | None:
    nodes = design.get("nodes") or {}
    n = nodes.get(name)
    if n is not None and not isinstance(n, dict):
        raise DesignError(name, None, "must be an object or null")
    return n


def _text(node: str, field: str, value: Any, required: bool = False) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise DesignError(node, field, "is required")
        return None
    if not isinstance(value, str):
        raise DesignError(node, field, "must be text")
    return value


def _parse_dur(node: str, field: str, value: Any, required: bool = False) -> Duration | None:
    text = _text(node, field, value, required)
    if text is None:
        return None
    try:
        d = Duration.parse(text)
    except SqlError as e:
        raise DesignError(node, field, e.message, 0) from None
    return d


def _parse_expr(node: str, field: str, value: Any, required: bool = False) -> exp.Expr | None:
    text = _text(node, field, value, required)
    if text is None:
        return None
    try:
        return parse_expression(text)
    except SqlError as e:
        raise DesignError(node, field, e.message, e.offset) from None


def _parse_query(node: str, field: str, value: Any) -> ast.SelectQuery:
    text = _text(node, field, value, True)
    assert text is not None
    try:
        stmt = parse_one(text)
    except SqlError as e:
        raise DesignError(node, field, e.message, e.offset) from None
    if not isinstance(stmt, ast.Select):
        raise DesignError(node, field, "must be a SELECT query", 0)
    return stmt.query


def _parse_int(node: str, field: str, value: Any, minimum: int, required: bool = False) -> int | None:
    if value is None or value == "":
        if required:
            raise DesignError(node, field, "is required")
        return None
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and value.isdigit())
    ):
        raise DesignError(node, field, "must be an integer")
    n = int(value)
    if n < minimum:
        raise DesignError(node, field, f"must be at least {minimum}")
    return n


def _name(node: str, field: str, value: Any, required: bool = True) -> str | None:
    text = _text(node, field, value, required)
    return text.strip() if text is not None else None


def _table(node: str, n: dict[str, Any]) -> ast.TableName:
    name = _name(node, "table", n.get("table"))
    assert name is not None
    return ast.TableName(name, _name(node, "db", n.get("db"), required=False))


def _partition_items(source: dict[str, Any] | None) -> list[ast.PartitionItem]:
    out = []
    for i, p in enumerate((source or {}).get("partition_by") or []):
        field = f"partition_by[{i}]"
        if not isinstance(p, dict):
            raise DesignError("source", field, "must be {sql, alias}")
        e = _parse_expr("source", field, p.get("sql"), required=True)
        assert e is not None
        alias = _name("source", f"{field}.alias", p.get("alias"), required=False)
        out.append(ast.PartitionItem(expr=e, alias=alias, text=str(p["sql"]).strip()))
    return out


def _tag_type(field: str, text: Any) -> TdType:
    t = _text("output", field, text, True)
    try:
        stmt = parse_one(f"CREATE STABLE __t (ts TIMESTAMP) TAGS (__x {t})")
    except SqlError as e:
        raise DesignError("output", field, e.message, None) from None
    assert isinstance(stmt, ast.CreateTable)
    return stmt.tags[0].type


def _output_parts(
    out: dict[str, Any] | None, with_expr: bool
) -> tuple[
    ast.TableName | None, exp.Expr | None, list[ast.OutputColumn] | None, list[ast.OutputTagDef] | None
]:
    if out is None:
        return None, None, None, None
    into = _table("output", out)
    subtable = _parse_expr("output", "subtable", out.get("subtable"))
    columns = []
    for i, c in enumerate(out.get("columns") or []):
        if not isinstance(c, dict):
            raise DesignError("output", f"columns[{i}]", "must be {name, composite_key}")
        name = _name("output", f"columns[{i}].name", c.get("name"))
        assert name is not None
        columns.append(ast.OutputColumn(name=name, composite_key=bool(c.get("composite_key"))))
    tags = []
    for i, t in enumerate(out.get("tags") or []):
        if not isinstance(t, dict):
            raise DesignError("output", f"tags[{i}]", "must be {name, type, comment, expr}")
        name = _name("output", f"tags[{i}].name", t.get("name"))
        assert name is not None
        ttype = _tag_type(f"tags[{i}].type", t.get("type"))
        texpr = _parse_expr("output", f"tags[{i}].expr", t.get("expr"), required=with_expr)
        if texpr is not None and not with_expr:
            raise NotExpressible(
                LEGACY, "legacy output tags take no value expression", "output", f"tags[{i}].expr"
            )
        tags.append(ast.OutputTagDef(name=name, type=ttype, expr=texpr, comment=t.get("comment")))
    return into, subtable, columns or None, tags or None


def _notify_def(n: dict[str, Any] | None, syntax: str) -> ast.NotifyDef | None:
    if n is None:
        return None
    urls = n.get("urls") or []
    if not urls:
        raise DesignError("notify", "urls", "at least one URL is required")
    allowed = _LEGACY_EVENTS if syntax == LEGACY else _337_EVENTS
    events = [str(e).upper() for e in n.get("events") or []]
    for i, e in enumerate(events):
        if e not in allowed:
            raise DesignError("notify", f"events[{i}]", f"unknown event {e}: use {', '.join(allowed)}")
    if syntax == LEGACY and not events:
        raise DesignError("notify", "events", "legacy NOTIFY needs ON (event types)")
    where = _parse_expr("notify", "where", n.get("where"))
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


def _window(t: dict[str, Any], syntax: str) -> ast.Window | ast.Trigger337:
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
    if kind == "interval":
        interval = _parse_dur("trigger", "interval", t.get("interval"), True)
        offset = _parse_dur("trigger", "offset", t.get("offset"))
        sliding = _parse_dur("trigger", "sliding", t.get("sliding"), syntax == V337)
        s_off = _parse_dur("trigger", "sliding_offset", t.get("sliding_offset"))
        assert interval is not None
        if syntax == LEGACY:
            if s_off is not None:
                raise NotExpressible(
                    LEGACY, "a SLIDING offset exists only in 3.3.7 syntax", "trigger", "sliding_offset"
                )
            return ast.IntervalWindow(interval=interval, offset=offset, sliding=sliding)
        assert sliding is not None
        return ast.SlidingTrigger(
            sliding=sliding, interval=interval, interval_offset=offset, sliding_offset=s_off
        )
    if kind == "sliding":
        sliding = _parse_dur("trigger", "sliding", t.get("sliding"), True)
        assert sliding is not None
        return ast.SlidingTrigger(
            sliding=sliding, sliding_offset=_parse_dur("trigger", "sliding_offset", t.get("sliding_offset"))
        )
    if kind == "period":
        period = _parse_dur("trigger", "period", t.get("period"), True)
        assert period is not None
        return ast.PeriodTrigger(period=period, offset=_parse_dur("trigger", "offset", t.get("offset")))
    if kind == "session":
        ts = _name("trigger", "ts_column", t.get("ts_column"))
        gap = _parse_dur("trigger", "gap", t.get("gap"), True)
        assert ts is not None and gap is not None
        return ast.SessionWindow(ts_column=ts, gap=gap)
    if kind == "state":
        e = _parse_expr("trigger", "expr", t.get("expr"), True)
        assert e is not None
        return ast.StateWindow(expr=e, true_for=_parse_dur("trigger", "true_for", t.get("true_for")))
    if kind == "event":
        start = _parse_expr("trigger", "start", t.get("start"), True)
        end = _parse_expr("trigger", "end", t.get("end"), True)
        assert start is not None and end is not None
        return ast.EventWindow(
            start=start, end=end, true_for=_parse_dur("trigger", "true_for", t.get("true_for"))
        )
    if kind == "count":
        count = _parse_int("trigger", "count", t.get("count"), 1, True)
        assert count is not None
        if count < COUNT_MIN[syntax]:
            raise NotExpressible(
                syntax,
                f"COUNT_WINDOW({count}): the count is at least {COUNT_MIN[syntax]} in {syntax} syntax",
                "trigger",
                "count",
            )
        sliding_n = _parse_int("trigger", "sliding", t.get("sliding"), 1)
        cols = tuple(str(c) for c in t.get("columns") or [])
        return ast.CountWindow(count=count, sliding=sliding_n, columns=cols)
    function = t.get("function")
    if function not in EKUIPER_FUNCTIONS:
        raise DesignError("trigger", "function", f"unknown eKuiper window function {function!r}")
    unit = t.get("unit")
    if function != "count" and (not isinstance(unit, str) or unit.upper() not in EKUIPER_UNITS):
        raise DesignError("trigger", "unit", f"time unit must be one of {', '.join(EKUIPER_UNITS)}")
    args = tuple(
        _parse_int("trigger", f"args[{i}]", a, 0, True) or 0 for i, a in enumerate(t.get("args") or [])
    )
    return ast.EkuiperWindow(
        function=function,
        unit=unit.upper() if function != "count" and isinstance(unit, str) else None,
        args=args,
        over_when=_parse_expr("trigger", "over_when", t.get("over_when")),
        filter=_parse_expr("trigger", "filter", t.get("filter")),
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
    max_delay = _parse_dur("options", "max_delay", o.get("max_delay"), mode == "MAX_DELAY")
    if max_delay is not None and mode != "MAX_DELAY":
        raise DesignError("options", "max_delay", "belongs to trigger mode MAX_DELAY in legacy syntax")
    recalculate = _parse_dur("options", "recalculate", o.get("recalculate"))
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
        watermark=_parse_dur("options", "watermark", o.get("watermark")),
        ignore_expired=flag01("ignore_expired"),
        delete_mark=_parse_dur("options", "delete_mark", o.get("delete_mark")),
        fill_history=fill_history,
        fill_history_async=bool(o.get("fill_history_async")),
        ignore_update=flag01("ignore_update"),
        event_time=flag01("event_time"),
    )


def _options_337(o: dict[str, Any], prefilter: exp.Expr | None) -> ast.StreamOptions337:
    _options_check_syntax(o, V337)
    out = ast.StreamOptions337(
        watermark=_parse_dur("options", "watermark", o.get("watermark")),
        expired_time=_parse_dur("options", "expired_time", o.get("expired_time")),
        fill_history=bool(o.get("fill_history")),
        fill_history_start=_parse_expr("options", "fill_history_start", o.get("fill_history_start")),
        pre_filter=prefilter,
        max_delay=_parse_dur("options", "max_delay", o.get("max_delay")),
        event_type=[str(e).upper() for e in o.get("event_type") or []],
    )
    for i, e in enumerate(out.event_type):
        if e not in _LEGACY_EVENTS:
            raise DesignError(
                "options", f"event_type[{i}]", f"unknown event {e}: use WINDOW_OPEN or WINDOW_CLOSE"
            )
    for k in _337_FLAGS:
        setattr(out, k, bool(o.get(k)))
    return out


def _legacy_computation(design: dict[str, Any]) -> ast.SelectQuery:
    """The legacy query of a legacy design (module docstring, the reverse of ``_legacy_nodes``)."""
    comp = _node(design, "computation")
    if comp is None:
        raise NotExpressible(
            LEGACY, "a legacy stream needs a computation (AS subquery)", "computation", "query"
        )
    source = _node(design, "source")
    if source is None or not source.get("table"):
        raise NotExpressible(LEGACY, "a legacy stream needs a trigger table (FROM table)", "source", "table")
    q = _parse_query("computation", "query", comp.get("query"))
    table = _from_table(q.select)
    if not _is_trows(table) or q.partition_by or q.window is not None:
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
    src = _table("source", source)
    tbl = exp.Table(this=exp.to_identifier(src.name))
    if src.db:
        tbl.set("db", exp.to_identifier(src.db))
    sel.args["from_"].set("this", tbl)
    pre = _node(design, "prefilter")
    cond = _parse_expr("prefilter", "condition", pre.get("condition"), True) if pre is not None else None
    if cond is not None:
        sel.set("where", exp.Where(this=cond))
    _rename_columns(sel, _TO_LEGACY)
    trig = _node(design, "trigger")
    if trig is None:
        raise DesignError("trigger", "type", "the trigger is required")
    window = _window(trig, LEGACY)
    assert not isinstance(window, ast.PeriodTrigger | ast.SlidingTrigger)
    return ast.SelectQuery(
        select=sel,
        partition_by=_partition_items(source),
        window=window,
        fill=q.fill,
        item_texts=[_rename_text(t, _TO_LEGACY) for t in q.item_texts],
    )


def build_statement(design: dict[str, Any]) -> ast.CreateStreamLegacy | ast.CreateStream337:
    """The statement a design says in its own syntax (``design["syntax"]``).

    Raises:
        DesignError: a malformed field (position inside the field's text when known).
        NotExpressible: a part the design's syntax has not (e.g. a PERIOD trigger in legacy syntax).
    """
    syntax = design.get("syntax")
    if syntax not in SYNTAXES:
        raise DesignError(None, "syntax", f"unknown syntax {syntax!r}: use 3.3.7 or legacy")
    name = _name("stream", "name", design.get("name"))
    assert name is not None
    db = _name("stream", "db", design.get("db"), required=False)
    ine = bool(design.get("if_not_exists"))
    options = _node(design, "options") or {}
    out = _node(design, "output")
    if syntax == LEGACY:
        query = _legacy_computation(design)
        if out is None:
            raise NotExpressible(LEGACY, "a legacy stream writes INTO an output table", "output", "table")
        into, subtable, columns, tags = _output_parts(out, with_expr=False)
        assert into is not None
        return ast.CreateStreamLegacy(
            name=name,
            db=db,
            if_not_exists=ine,
            options=_legacy_options(options),
            into=into,
            columns=columns,
            tags=tags,
            subtable=subtable,
            query=query,
            notify=_notify_def(_node(design, "notify"), LEGACY),
        )
    trig = _node(design, "trigger")
    if trig is None:
        raise DesignError("trigger", "type", "the trigger is required")
    trigger = _window(trig, V337)
    assert not isinstance(trigger, ast.IntervalWindow | ast.EkuiperWindow)
    source = _node(design, "source")
    from_table = _table("source", source) if source is not None and source.get("table") else None
    pre = _node(design, "prefilter")
    cond = _parse_expr("prefilter", "condition", pre.get("condition"), True) if pre is not None else None
    comp = _node(design, "computation")
    computation = _parse_query("computation", "query", comp.get("query")) if comp is not None else None
    into, subtable, columns, tags = _output_parts(out, with_expr=True)
    return ast.CreateStream337(
        name=name,
        db=db,
        if_not_exists=ine,
        trigger=trigger,
        from_table=from_table,
        partition_by=_partition_items(source),
        options=_options_337(options, cond),
        notify=_notify_def(_node(design, "notify"), V337),
        into=into,
        output_subtable=subtable,
        columns=columns,
        tags=tags,
        query=computation,
    )


# --------------------------------------------------------------------------- cross-syntax


def convert_design(design: dict[str, Any], syntax: str) -> dict[str, Any]:
    """The same stream as a design in ``syntax``: semantically equivalent, with each syntax's
    defaults written out where they differ (ARCHITECTURE.md "Decisions on contradictions").

    Mapping legacy -> 3.3.7: INTERVAL gets SLIDING = interval and IGNORE_NODATA_TRIGGER (legacy
    windows need rows); TRIGGER WINDOW_CLOSE (default) -> nothing, MAX_DELAY d -> MAX_DELAY(d);
    IGNORE EXPIRED = IGNORE UPDATE (default 1) -> IGNORE_DISORDER; FILL_HISTORY 1 -> FILL_HISTORY;
    WHERE -> PRE_FILTER; TAGS (name type) -> TAGS (name type AS <the PARTITION BY item the legacy
    rule picks>); un-aliased ``_wstart`` items get ``AS _wstart`` to keep the column name;
    notification failure default PAUSE written as ON_FAILURE_PAUSE. 3.3.7 -> legacy is the reverse.

    Raises:
        NotExpressible: what has no equivalent (reason in the message), e.g. AT_ONCE,
            FORCE_WINDOW_CLOSE, CONTINUOUS_WINDOW_CLOSE, DELETE_MARK, EVENT_TIME 0, FILL, eKuiper
            windows, partitioned output without TAGS (legacy ``groupId`` tag) in 3.3.7; PERIOD and
            SLIDING triggers, SLIDING offsets, INTERVAL without IGNORE_NODATA_TRIGGER, computations
            other than an aggregate over ``%%trows``, OUTPUT_SUBTABLE, 3.3.7-only options in legacy.
        DesignError: a field needed for the conversion is malformed.
    """
    if syntax not in SYNTAXES:
        raise DesignError(None, "syntax", f"unknown syntax {syntax!r}: use 3.3.7 or legacy")
    d = copy.deepcopy(design)
    if d.get("syntax") == syntax:
        return d
    d["syntax"] = syntax
    nodes = d.setdefault("nodes", {})
    nodes["options"] = {**_empty_options(), **(nodes.get("options") or {})}
    if syntax == V337:
        _legacy_to_337(nodes)
    else:
        _337_to_legacy(nodes)
    return d


def _ne(syntax: str, reason: str, node: str | None = None, field: str | None = None) -> NotExpressible:
    return NotExpressible(syntax, reason, node, field)


def _legacy_tag_item(tags: list[dict[str, Any]], i: int, items: list[ast.PartitionItem]) -> int | None:
    """The PARTITION BY item a legacy tag takes its value from (streams.py ``_tag_plan``): the item
    named like the tag (alias or column), else the item at the tag's position."""
    name = str(tags[i].get("name", "")).lower()
    for j, p in enumerate(items):
        display = p.alias or (p.expr.name if isinstance(p.expr, exp.Column) else p.text)
        if display.lower() == name:
            return j
    return i if len(tags) == len(items) else None


def _legacy_to_337(nodes: dict[str, Any]) -> None:
    s = V337
    trig = nodes.get("trigger") or {}
    o = nodes["options"]
    kind = trig.get("type")
    if kind == "ekuiper":
        raise _ne(s, "eKuiper window functions exist only in legacy syntax (seed 003)", "trigger", "type")
    if kind == "interval":
        trig["sliding"] = trig.get("sliding") or trig.get("interval")
        o["ignore_nodata_trigger"] = True  # legacy INTERVAL windows exist only where rows are
    mode = o.get("trigger_mode") or "WINDOW_CLOSE"
    if mode == "AT_ONCE":
        raise _ne(
            s,
            "TRIGGER AT_ONCE has no 3.3.7 equivalent: 3.3.7 computes a window when it closes "
            "(MAX_DELAY gives earlier results)",
            "options",
            "trigger_mode",
        )
    if mode in ("FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE"):
        raise _ne(s, f"TRIGGER {mode} has no 3.3.7 equivalent", "options", "trigger_mode")
    o["trigger_mode"] = None
    o["recalculate"] = None
    expired = True if o.get("ignore_expired") is None else bool(o["ignore_expired"])
    update = True if o.get("ignore_update") is None else bool(o["ignore_update"])
    if kind == "count":
        if not (expired and update):
            raise _ne(
                s,
                "a 3.3.7 COUNT_WINDOW trigger always ignores out-of-order rows and updates "
                "(IGNORE EXPIRED 0 / IGNORE UPDATE 0 have no equivalent)",
                "options",
                "ignore_expired" if not expired else "ignore_update",
            )
    elif expired != update:
        raise _ne(
            s,
            "IGNORE EXPIRED and IGNORE UPDATE differ; 3.3.7 has one switch for both, IGNORE_DISORDER",
            "options",
            "ignore_update",
        )
    else:
        o["ignore_disorder"] = expired
    o["ignore_expired"] = o["ignore_update"] = None
    if o.get("delete_mark") is not None:
        raise _ne(s, "DELETE_MARK has no 3.3.7 equivalent", "options", "delete_mark")
    if o.get("fill_history_async"):
        raise _ne(s, "FILL_HISTORY 1 ASYNC has no 3.3.7 equivalent", "options", "fill_history_async")
    if o.get("event_time") is False:
        raise _ne(
            s, "EVENT_TIME 0 (processing-time windows) exists only in legacy syntax", "options", "event_time"
        )
    o["event_time"] = None
    o["fill_history"] = True if o.get("fill_history") else None
    source = nodes.get("source")
    items = _partition_items(source)
    for i, p in enumerate(items):
        if p.alias:
            raise _ne(
                s,
                f"PARTITION BY {p.text} AS {p.alias}: 3.3.7 PARTITION BY takes no aliases (seed 002)",
                "source",
                f"partition_by[{i}]",
            )
        if not isinstance(p.expr, exp.Column) or p.expr.table:
            raise _ne(
                s,
                f"PARTITION BY {p.text}: a 3.3.7 trigger groups by tbname or tags only",
                "source",
                f"partition_by[{i}]",
            )
    comp = nodes.get("computation")
    if comp is not None:
        comp["query"] = _computation_to_337(comp.get("query"))
    out = nodes.get("output")
    if out is not None:
        if out.get("subtable"):
            raise _ne(
                s,
                "legacy SUBTABLE(expr) names subtables expr_<table>_<groupId>, 3.3.7 "
                "OUTPUT_SUBTABLE(expr) names them exactly",
                "output",
                "subtable",
            )
        tags = out.get("tags") or []
        if items and not tags:
            raise _ne(
                s,
                "a partitioned legacy stream tags its output with groupId BIGINT UNSIGNED by "
                "default, 3.3.7 with the PARTITION BY values: write TAGS (...) to convert",
                "output",
                "tags",
            )
        for i, t in enumerate(tags):
            j = _legacy_tag_item(tags, i, items)
            if j is None:
                raise _ne(s, f"tag {t.get('name')} matches no PARTITION BY item", "output", f"tags[{i}]")
            t["expr"] = items[j].text
    n = nodes.get("notify")
    if n is not None:
        n["on_failure"] = "PAUSE" if (n.get("on_failure") or "PAUSE") == "PAUSE" else None
        n["history"] = True if n.get("history") else None


def _computation_to_337(text: Any) -> str:
    s = V337
    q = _parse_query("computation", "query", text)
    sel = q.select
    if q.fill is not None:
        raise _ne(
            s,
            "FILL has no 3.3.7 equivalent (a 3.3.7 trigger computes windows that have rows)",
            "computation",
            "query",
        )
    if not isinstance(sel, exp.Select) or not _is_trows(_from_table(sel)):
        raise _ne(s, "the computation must read FROM %%trows", "computation", "query")
    for key in ("group", "having", "order", "limit", "offset", "distinct"):
        if sel.args.get(key):
            raise _ne(
                s,
                f"{key.upper()} in a windowed legacy query has no 3.3.7 %%trows equivalent",
                "computation",
                "query",
            )
    first = sel.expressions[0] if sel.expressions else None
    inner = first.this if isinstance(first, exp.Alias) else first
    if not (isinstance(inner, exp.Column) and inner.name.lower() in _TO_LEGACY):
        raise _ne(
            s,
            "legacy adds _wstart in front when the first column is not a TIMESTAMP, 3.3.7 "
            "refuses it: start the select list with _wstart to convert",
            "computation",
            "query",
        )
    _check_aggregate(sel, s)
    sel = sel.copy()
    texts = list(q.item_texts)
    for i, proj in enumerate(list(sel.expressions)):
        if isinstance(proj, exp.Alias) or i >= len(texts):
            continue
        uses = [c for c in proj.find_all(exp.Column) if not c.table and c.name.lower() in _TO_LEGACY]
        if uses:  # keep the legacy output column name (``_wstart``)
            proj.replace(exp.alias_(proj.copy(), _rename_text(texts[i], _TO_LEGACY)))
    return query_sql(ast.SelectQuery(select=sel, item_texts=texts))


def _check_aggregate(sel: exp.Select, syntax: str) -> None:
    """Every column is a window placeholder or inside an aggregate: one row per window, as both a
    legacy window query and a 3.3.7 ``%%trows`` computation give (streams337.is_fused)."""
    if any(isinstance(i, exp.Star) for i in sel.expressions):
        raise _ne(syntax, "SELECT * is a row-level computation: no equivalent", "computation", "query")
    for col in sel.find_all(exp.Column):
        if col.name.lower() in _TO_LEGACY and not col.table:
            continue
        p = col.parent
        inside = False
        while p is not None:
            if aggregate_call(p):
                inside = True
                break
            p = p.parent
        if not inside:
            raise _ne(
                syntax,
                f"the row-level column {col.sql()} makes the computation differ between "
                "syntaxes: use it inside an aggregate",
                "computation",
                "query",
            )


def _337_to_legacy(nodes: dict[str, Any]) -> None:
    s = LEGACY
    trig = nodes.get("trigger") or {}
    o = nodes["options"]
    kind = trig.get("type")
    if kind in ("period", "sliding"):
        raise _ne(s, f"{kind.upper()} triggers exist only in 3.3.7 syntax (seed 002)", "trigger", "type")
    if kind == "interval":
        if trig.get("sliding_offset"):
            raise _ne(s, "a SLIDING offset exists only in 3.3.7 syntax", "trigger", "sliding_offset")
        if not o.get("ignore_nodata_trigger"):
            raise _ne(
                s,
                "a 3.3.7 INTERVAL trigger fires for windows without rows unless "
                "IGNORE_NODATA_TRIGGER; legacy windows need rows",
                "options",
                "ignore_nodata_trigger",
            )
    o["ignore_nodata_trigger"] = False  # no effect on other triggers
    source = nodes.get("source")
    if source is None or not source.get("table"):
        raise _ne(s, "a legacy stream needs a trigger table (FROM table)", "source", "table")
    for key, why in (
        ("expired_time", "EXPIRED_TIME"),
        ("delete_output_table", "DELETE_OUTPUT_TABLE"),
        ("fill_history_first", "FILL_HISTORY_FIRST"),
        ("fill_history_start", "FILL_HISTORY(start_time)"),
        ("calc_notify_only", "CALC_NOTIFY_ONLY"),
        ("low_latency_calc", "LOW_LATENCY_CALC"),
        ("force_output", "FORCE_OUTPUT"),
    ):
        if o.get(key):
            raise _ne(s, f"{why} has no legacy equivalent", "options", key)
    if o.get("delete_recalc") and kind != "count":
        raise _ne(s, "DELETE_RECALC has no legacy equivalent", "options", "delete_recalc")
    o["delete_recalc"] = False
    if [e for e in o.get("event_type") or [] if e.upper() != "WINDOW_CLOSE"]:
        raise _ne(
            s,
            "EVENT_TYPE(WINDOW_OPEN) (computing when a window opens) has no legacy equivalent",
            "options",
            "event_type",
        )
    o["event_type"] = []
    if o.get("max_delay"):
        d = _parse_dur("options", "max_delay", o["max_delay"])
        assert d is not None
        if d.is_calendar or d.ns < MAX_DELAY_MIN[LEGACY].ns:
            raise _ne(
                s,
                f"MAX_DELAY below {MAX_DELAY_MIN[LEGACY]} exists only in 3.3.7 syntax",
                "options",
                "max_delay",
            )
        o["trigger_mode"] = "MAX_DELAY"
    if not (o.get("ignore_disorder") or kind == "count"):
        o["ignore_expired"] = o["ignore_update"] = False  # legacy defaults are 1, 3.3.7 recalculates
    o["ignore_disorder"] = False
    o["fill_history"] = True if o.get("fill_history") else None
    comp = nodes.get("computation")
    out = nodes.get("output")
    if comp is None or out is None:
        raise _ne(
            s, "a legacy stream needs a computation written INTO an output table", "computation", "query"
        )
    comp["query"] = _computation_to_legacy(comp.get("query"))
    if out.get("subtable"):
        raise _ne(
            s,
            "3.3.7 OUTPUT_SUBTABLE(expr) names subtables exactly, legacy SUBTABLE(expr) "
            "appends _<table>_<groupId>",
            "output",
            "subtable",
        )
    items = _partition_items(source)
    tags = out.get("tags") or []
    if items and not tags:
        if (
            len(items) == 1
            and isinstance(items[0].expr, exp.Column)
            and items[0].expr.name.lower() == "tbname"
        ):
            out["tags"] = [{"name": "tag_tbname", "type": "VARCHAR(270)", "comment": None, "expr": None}]
        else:
            raise _ne(
                s,
                "3.3.7 tags the output with the PARTITION BY tags' own types by default, unknown "
                "here: write TAGS (...) to convert",
                "output",
                "tags",
            )
    for i, t in enumerate(tags):
        j = _legacy_tag_item(tags, i, items)
        e = _parse_expr("output", f"tags[{i}].expr", t.get("expr"))
        ok = (
            j is not None
            and e is not None
            and (e == items[j].expr or (isinstance(e, exp.Column) and placeholder_key(e) == f"p{j + 1}"))
        )
        if not ok:
            raise _ne(
                s,
                f"legacy tag {t.get('name')} takes the PARTITION BY item of its name or position; "
                "its expression differs",
                "output",
                f"tags[{i}].expr",
            )
        t["expr"] = None
    n = nodes.get("notify")
    if n is not None:
        if n.get("where"):
            raise _ne(s, "NOTIFY ... WHERE exists only in 3.3.7 syntax", "notify", "where")
        if not n.get("events"):
            raise _ne(s, "legacy NOTIFY needs ON (event types)", "notify", "events")
        n["on_failure"] = None if n.get("on_failure") == "PAUSE" else "DROP"
        n["history"] = True if n.get("history") else None


def _computation_to_legacy(text: Any) -> str:
    s = LEGACY
    q = _parse_query("computation", "query", text)
    sel = q.select
    if not isinstance(sel, exp.Select) or not _is_trows(_from_table(sel)) or q.partition_by or q.window:
        raise _ne(
            s,
            "only a computation over FROM %%trows has a legacy equivalent (the window query)",
            "computation",
            "query",
        )
    if len(list(sel.find_all(exp.Select))) > 1 or len(list(sel.find_all(exp.Table))) > 1:
        raise _ne(
            s,
            "a computation reading other tables or subqueries has no legacy equivalent",
            "computation",
            "query",
        )
    for col in sel.find_all(exp.Column):
        key = placeholder_key(col)
        if key is not None and key not in _TO_LEGACY:
            name = (
                col.name
                if not key.startswith("p") and key != "tbname"
                else ("%%tbname" if key == "tbname" else "%%" + key[1:])
            )
            raise _ne(s, f"the placeholder {name} has no legacy equivalent", "computation", "query")
    for key in ("group", "having", "order", "limit", "offset", "distinct", "where"):
        if sel.args.get(key):
            raise _ne(
                s, f"{key.upper()} in a %%trows computation has no legacy equivalent", "computation", "query"
            )
    _check_aggregate(sel, s)
    sel = sel.copy()
    texts = list(q.item_texts)
    for i, proj in enumerate(list(sel.expressions)):
        if isinstance(proj, exp.Alias) or i >= len(texts):
            continue
        if [c for c in proj.find_all(exp.Column) if not c.table and c.name.lower() in _TO_LEGACY]:
            proj.replace(exp.alias_(proj.copy(), texts[i]))
    return query_sql(ast.SelectQuery(select=sel, item_texts=texts))


# --------------------------------------------------------------------------- public: SQL


def design_to_sql(design: dict[str, Any], syntax: str | None = None) -> str:
    """The CREATE STREAM statement of a design, rendered canonically by ``render.render``.

    Args:
        design: a design (module docstring).
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


# --------------------------------------------------------------------------- checks


def _issue(
    node: str | None, field: str | None, message: str, text: str | None = None, offset: int | None = None
) -> dict[str, Any]:
    pos = None
    if offset is not None:
        p = SqlPosition.of(text or "", offset)
        pos = {"offset": p.offset, "line": p.line, "column": p.column}
    return {"node": node, "field": field, "message": message, "position": pos}


def _field_text(design: dict[str, Any], node: str | None, field: str | None) -> str | None:
    """The text of ``nodes[node]`` field ``a[0].b`` (None when absent or not text)."""
    if node is None or field is None:
        return None
    cur: Any = (design.get("nodes") or {}).get(node)
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        if part.startswith("["):
            idx = int(part[1:-1])
            cur = cur[idx] if isinstance(cur, list) and idx < len(cur) else None
        else:
            cur = cur.get(part) if isinstance(cur, dict) else None
        if isinstance(cur, dict) and "sql" in cur and part.startswith("["):
            cur = cur["sql"]
    return cur if isinstance(cur, str) else None


def check_design(design: dict[str, Any]) -> list[dict[str, Any]]:
    """Field-level issues of a design, without the lake (the catalog checks come from validating
    the SQL, see ``locate_error``).

    Checks: required fields (name, trigger and its fields per type, source table unless a 3.3.7
    PERIOD trigger, output table); durations parse and are positive (offsets, WATERMARK,
    DELETE_MARK may be 0); expressions and the computation query parse; COUNT_WINDOW counts are
    integers >= 2 legacy / 1 in 3.3.7 and MAX_DELAY >= 5s legacy / 3s in 3.3.7 (ARCHITECTURE.md);
    unknown trigger types, options and events; notification URLs ws:// or wss:// (seed 000, 002);
    then whatever building the statement in the design's syntax refuses.

    Returns:
        ``[{"node", "field", "message", "position": {"offset", "line", "column"} | None}]``,
        positions inside the field's own text; empty when the design is well formed.
    """
    issues: list[dict[str, Any]] = []
    syntax = design.get("syntax")
    if design.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        issues.append(
            _issue(None, "schema_version", f"unsupported schema_version {design.get('schema_version')}")
        )
    if syntax not in SYNTAXES:
        issues.append(_issue(None, "syntax", f"unknown syntax {syntax!r}: use 3.3.7 or legacy"))
        return issues
    if not isinstance(design.get("name"), str) or not design["name"].strip():
        issues.append(_issue(None, "name", "the stream name is required"))

    def run(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except DesignError as e:
            text = _field_text(design, e.node, e.field)
            issues.append(_issue(e.node, e.field, e.message, text, e.position))
        except NotExpressible as e:
            issues.append(_issue(e.node, e.field, e.reason))

    nodes = design.get("nodes") or {}
    trig = nodes.get("trigger")
    if not isinstance(trig, dict):
        issues.append(_issue("trigger", "type", "the trigger is required"))
        trig = None
    else:
        kind = trig.get("type")
        if kind not in TRIGGER_FIELDS:
            issues.append(
                _issue("trigger", "type", f"unknown trigger type {kind!r}: use {', '.join(TRIGGER_FIELDS)}")
            )
        else:
            for f in trig:
                if f != "type" and f not in TRIGGER_FIELDS[kind]:
                    issues.append(_issue("trigger", f, f"a {kind} trigger has no field {f}"))
            for f in ("interval", "sliding", "period", "gap", "true_for"):
                if not (kind == "count" and f == "sliding"):
                    run(_positive, "trigger", f, trig.get(f))
            for f in ("offset", "sliding_offset"):
                run(_parse_dur, "trigger", f, trig.get(f))
            if kind == "count":
                run(lambda: _parse_int("trigger", "count", trig.get("count"), COUNT_MIN[str(syntax)], True))
                run(lambda: _parse_int("trigger", "sliding", trig.get("sliding"), 1))
            for f in ("expr", "start", "end", "over_when", "filter"):
                required = f in ("expr", "start", "end") and f in TRIGGER_FIELDS[kind]
                run(_parse_expr, "trigger", f, trig.get(f), required)
            run(lambda: _window(trig, str(syntax)))
    source = nodes.get("source")
    needs_source = syntax == LEGACY or (trig or {}).get("type") != "period"
    if needs_source and not (isinstance(source, dict) and source.get("table")):
        issues.append(_issue("source", "table", "the trigger table is required"))
    run(lambda: _partition_items(source if isinstance(source, dict) else None))
    pre = nodes.get("prefilter")
    if isinstance(pre, dict):
        run(lambda: _parse_expr("prefilter", "condition", pre.get("condition"), True))
    opts = nodes.get("options") or {}
    for key, value in opts.items():
        if key not in OPTION_KEYS:
            issues.append(_issue("options", key, f"unknown option {key}"))
            continue
        kind_, _only = OPTION_KEYS[key]
        if kind_ == "duration" and value is not None:
            run(_non_negative, "options", key, value)
        elif kind_ in ("bool", "flag") and value is not None and not isinstance(value, bool):
            issues.append(_issue("options", key, "must be true, false or null"))
        elif kind_ == "mode" and value is not None and value not in LEGACY_TRIGGER_MODES:
            issues.append(
                _issue("options", key, f"unknown trigger mode {value}: use {', '.join(LEGACY_TRIGGER_MODES)}")
            )
        elif kind_ == "events":
            for i, ev in enumerate(value or []):
                if str(ev).upper() not in _LEGACY_EVENTS:
                    issues.append(
                        _issue(
                            "options", f"{key}[{i}]", f"unknown event {ev}: use WINDOW_OPEN or WINDOW_CLOSE"
                        )
                    )
        elif kind_ == "expr" and value is not None:
            run(_parse_expr, "options", key, value)
    if opts.get("max_delay"):
        try:
            d = Duration.parse(str(opts["max_delay"]))
            low = MAX_DELAY_MIN[str(syntax)]
            if d.is_calendar or d.ns < low.ns:
                issues.append(
                    _issue("options", "max_delay", f"MAX_DELAY must be at least {low} in {syntax} syntax")
                )
        except SqlError:
            pass
    comp = nodes.get("computation")
    if isinstance(comp, dict):
        run(lambda: _parse_query("computation", "query", comp.get("query")))
    elif syntax == LEGACY:
        issues.append(_issue("computation", "query", "a legacy stream needs a computation"))
    out = nodes.get("output")
    if isinstance(out, dict):
        run(lambda: _output_parts(out, with_expr=syntax == V337))
    n = nodes.get("notify")
    if isinstance(n, dict):
        for i, url in enumerate(n.get("urls") or []):
            if not isinstance(url, str) or not (url.startswith("ws://") or url.startswith("wss://")):
                issues.append(
                    _issue("notify", f"urls[{i}]", "a notification URL starts with ws:// or wss://")
                )
        run(lambda: _notify_def(n, str(syntax)))
    if not issues:
        run(lambda: design_to_sql(design))
    # one issue per field
    seen: set[tuple[Any, Any, str]] = set()
    unique = []
    for issue in issues:
        mark = (issue["node"], issue["field"], issue["message"])
        if mark not in seen:
            seen.add(mark)
            unique.append(issue)
    return unique


def _positive(node: str, field: str, value: Any) -> None:
    d = _parse_dur(node, field, value)
    if d is not None and d.value <= 0:
        raise DesignError(node, field, "must be a positive duration", 0)


def _non_negative(node: str, field: str, value: Any) -> None:
    d = _parse_dur(node, field, value)
    if d is not None and d.value < 0:
        raise DesignError(node, field, "must not be negative", 0)


# --------------------------------------------------------------------------- error placement


@dataclass(frozen=True)
class FieldSpan:
    """Where a design field's text is in the rendered SQL: ``[start, end)``; ``text`` is the
    field's text in the design; ``rebase`` maps an SQL offset into it (None: ``offset - start``)."""

    node: str
    field: str
    start: int
    end: int
    text: str
    rebase: Callable[[int], int] | None = None

    def offset_in_field(self, offset: int) -> int:
        rel = self.rebase(offset) if self.rebase is not None else offset - self.start
        return max(0, min(rel, len(self.text)))


class _Spans:
    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.out: list[FieldSpan] = []

    def add(
        self,
        node: str,
        field: str,
        start: int,
        end: int,
        text: str | None = None,
        rebase: Callable[[int], int] | None = None,
    ) -> None:
        if start >= 0:
            self.out.append(
                FieldSpan(node, field, start, end, text if text is not None else self.sql[start:end], rebase)
            )

    def find(
        self,
        node: str,
        field: str,
        prefix: str,
        value: str,
        lo: int,
        hi: int | None = None,
        text: str | None = None,
    ) -> int:
        """Add ``value`` found after ``prefix`` in ``[lo, hi)``; returns the end of it (or ``lo``)."""
        at = self.sql.find(prefix + value, lo, len(self.sql) if hi is None else hi)
        if at < 0:
            return lo
        start = at + len(prefix)
        self.add(node, field, start, start + len(value), text if text is not None else value)
        return start + len(value)


def field_spans(design: dict[str, Any], syntax: str) -> tuple[str, list[FieldSpan]]:
    """``design_to_sql(design, syntax)`` and where each node field's text is in it (found from
    the re-parsed statement's spans, then each field's rendered text in clause order).

    Raises:
        NotExpressible, DesignError: as ``design_to_sql``.
    """
    d = convert_design(design, syntax)
    sql = render(build_statement(d))
    st = parse_one(sql)
    nodes = d["nodes"]
    sp = _Spans(sql)
    if isinstance(st, ast.CreateStreamLegacy):
        _legacy_spans(sp, st, nodes)
    else:
        assert isinstance(st, ast.CreateStream337)
        _spans_337(sp, st, nodes)
    return sql, sp.out


def _window_field_spans(sp: _Spans, trig: dict[str, Any], lo: int, hi: int) -> None:
    kind = trig.get("type")
    sp.add("trigger", "type", lo, hi, "")
    order: dict[str, list[tuple[str, str]]] = {
        "interval": [
            ("interval", "INTERVAL("),
            ("offset", ", "),
            ("sliding", "SLIDING("),
            ("sliding_offset", ", "),
        ],
        "sliding": [("sliding", "SLIDING("), ("sliding_offset", ", ")],
        "period": [("period", "PERIOD("), ("offset", ", ")],
        "session": [("ts_column", "SESSION("), ("gap", ", ")],
        "state": [("expr", "STATE_WINDOW("), ("true_for", "TRUE_FOR(")],
        "event": [("start", "START WITH "), ("end", "END WITH "), ("true_for", "TRUE_FOR(")],
        "count": [("count", "COUNT_WINDOW("), ("sliding", ", ")],
        "ekuiper": [("unit", "("), ("filter", "FILTER (WHERE "), ("over_when", "OVER (WHEN ")],
    }
    cur = lo
    if kind == "ekuiper":
        cur = sp.find("trigger", "unit", "(", str(trig.get("unit")), cur, hi) if trig.get("unit") else cur + 1
        for i, a in enumerate(trig.get("args") or []):
            cur = sp.find(
                "trigger",
                f"args[{i}]",
                "" if i == 0 and trig.get("function") == "count" else ", ",
                str(a),
                cur,
                hi,
            )
        order["ekuiper"] = order["ekuiper"][1:]
    for field, prefix in order.get(str(kind), []):
        v = trig.get(field)
        if v is None:
            continue
        value = str(v)
        if field in ("expr", "start", "end", "filter", "over_when"):
            value = _canon(value)
        elif field == "ts_column":
            value = name_sql(value)
        cur = sp.find("trigger", field, prefix, value, cur, hi, text=str(v))
    if kind == "count":
        for i, c in enumerate(trig.get("columns") or []):
            cur = sp.find("trigger", f"columns[{i}]", ", ", name_sql(str(c)), cur, hi, text=str(c))


def _canon(text: Any) -> str:
    try:
        return expr_sql(parse_expression(str(text)))
    except SqlError:
        return str(text)


def _output_spans(
    sp: _Spans,
    st: ast.CreateStreamLegacy | ast.CreateStream337,
    out: dict[str, Any] | None,
    lo: int,
    subtable_kw: str,
) -> None:
    if out is None or st.into is None:
        return
    prefix = f"{name_sql(st.into.db)}." if st.into.db else ""
    sp.find("output", "table", "INTO " + prefix, name_sql(st.into.name), lo, text=out.get("table"))
    if out.get("db"):
        sp.find("output", "db", "INTO ", name_sql(str(out["db"])), lo, text=out.get("db"))
    if out.get("subtable"):
        sp.find("output", "subtable", subtable_kw + "(", _canon(out["subtable"]), lo, text=out["subtable"])
    for i, c in enumerate(st.columns or []):
        if c.span is not None:
            sp.add("output", f"columns[{i}]", c.span.start, c.span.end)
    for i, t in enumerate(st.tags or []):
        if t.span is None:
            continue
        sp.add("output", f"tags[{i}]", t.span.start, t.span.end)
        tags = out.get("tags") or []
        if i < len(tags) and tags[i].get("expr"):
            sp.find(
                "output",
                f"tags[{i}].expr",
                " AS ",
                _canon(tags[i]["expr"]),
                t.span.start,
                t.span.end,
                text=tags[i]["expr"],
            )
        sp.find(
            "output",
            f"tags[{i}].type",
            " ",
            t.type.sql,
            t.span.start,
            t.span.end,
            text=tags[i].get("type") if i < len(tags) else None,
        )


def _notify_spans(sp: _Spans, n: ast.NotifyDef | None, nd: dict[str, Any] | None) -> None:
    if n is None or n.span is None or nd is None:
        return
    lo, hi = n.span.start, n.span.end
    sp.add("notify", "urls", lo, hi, "")
    cur = lo
    for i, u in enumerate(n.urls):
        cur = sp.find("notify", f"urls[{i}]", "'", string_sql(u)[1:-1], cur, hi, text=u)
    for i, e in enumerate(n.events):
        cur = max(cur, sp.find("notify", f"events[{i}]", "", e, cur, hi))
    if n.where is not None:
        cur = sp.find("notify", "where", "WHERE ", expr_sql(n.where), cur, hi, text=nd.get("where"))
    for field, word in (("history", "NOTIFY_HISTORY"), ("on_failure", "ON_FAILURE")):
        at = sp.sql.find(word, cur, hi)
        if at >= 0:
            sp.add("notify", field, at, hi if field == "on_failure" else at + len(word), "")


def _legacy_spans(sp: _Spans, st: ast.CreateStreamLegacy, nodes: dict[str, Any]) -> None:
    sql = sp.sql
    opts = nodes["options"]
    keys = {"trigger": "trigger_mode"}
    for key, span in st.options.spans.items():
        field = keys.get(key, key)
        value = opts.get(field)
        text = str(value) if isinstance(value, str) else ""
        at = sql.rfind(text, span.start, span.end) if text else -1
        if at >= 0:
            sp.add("options", field, at, at + len(text), text)
        else:
            sp.add("options", field, span.start, span.end, "")
    q = st.query
    assert q.span is not None
    _output_spans(sp, st, nodes.get("output"), 0, "SUBTABLE")
    q_lo, q_hi = q.span.start, q.span.end
    source = nodes["source"]
    src = ast.TableName(source["table"], source.get("db"))
    from_at = sql.find("FROM " + table_sql(src), q_lo, q_hi)
    cuts: list[tuple[int, int, str]] = []
    if from_at >= 0:
        t_lo = from_at + len("FROM ")
        sp.add(
            "source",
            "table",
            t_lo + (len(name_sql(src.db)) + 1 if src.db else 0),
            t_lo + len(table_sql(src)),
            source["table"],
        )
        if src.db:
            sp.add("source", "db", t_lo, t_lo + len(name_sql(src.db)), src.db)
        cuts.append((t_lo, t_lo + len(table_sql(src)), "%%trows"))
    pre = nodes.get("prefilter")
    sel = q.select
    where = sel.args.get("where") if isinstance(sel, exp.Select) else None
    cur = from_at if from_at >= 0 else q_lo
    if pre is not None and where is not None:
        w_at = sql.find(" WHERE " + expr_sql(where.this), cur, q_hi)
        if w_at >= 0:
            end = w_at + len(" WHERE ") + len(expr_sql(where.this))
            sp.add("prefilter", "condition", w_at, end, "")
            sp.add("prefilter", "condition", w_at + len(" WHERE "), end, pre.get("condition"))
            cuts.append((w_at, end, ""))
            cur = end
    if q.partition_by:
        clause = " " + partition_sql(q.partition_by)
        p_at = sql.find(clause, cur, q_hi)
        if p_at >= 0:
            sp.add("source", "partition_by", p_at, p_at + len(clause), "")
            cuts.append((p_at, p_at + len(clause), ""))
        for i, p in enumerate(q.partition_by):
            if p.span is not None:
                sp.add("source", f"partition_by[{i}]", p.span.start, p.span.end)
    w = q.window
    if w is not None and w.span is not None:
        _window_field_spans(sp, nodes["trigger"], w.span.start, w.span.end)
        if isinstance(w, ast.EkuiperWindow):
            before = sql[: w.span.start]
            if before.endswith(", "):
                cuts.append((w.span.start - 2, w.span.end, ""))
            elif before.endswith(" GROUP BY "):
                cuts.append((w.span.start - len(" GROUP BY "), w.span.end, ""))
        else:
            cuts.append((w.span.start - 1, w.span.end, ""))
    comp_text = (nodes.get("computation") or {}).get("query") or ""
    cuts.sort()

    def rebase(offset: int) -> int:
        edited = ""
        pos = q_lo
        for a, b, repl in cuts:
            if a >= offset:
                break
            edited += sql[pos:a] + repl
            pos = b
        edited += sql[pos:offset] if offset > pos else ""
        return len(_rename_text(edited, _TO_337))

    sp.add("computation", "query", q_lo, q_hi, comp_text, rebase)
    _notify_spans(sp, st.notify, nodes.get("notify"))


def _spans_337(sp: _Spans, st: ast.CreateStream337, nodes: dict[str, Any]) -> None:
    sql = sp.sql
    trig_text = trigger_sql(st.trigger)
    t_at = sql.find(" " + trig_text)
    if t_at >= 0:
        _window_field_spans(sp, nodes["trigger"], t_at + 1, t_at + 1 + len(trig_text))
    cur = max(t_at, 0) + len(trig_text)
    source = nodes.get("source")
    if st.from_table is not None and source is not None:
        prefix = f"{name_sql(st.from_table.db)}." if st.from_table.db else ""
        sp.find(
            "source", "table", "FROM " + prefix, name_sql(st.from_table.name), cur, text=source.get("table")
        )
    for i, p in enumerate(st.partition_by):
        if p.span is not None:
            sp.add("source", f"partition_by[{i}]", p.span.start, p.span.end)
    opts = nodes["options"]
    for key, span in st.options.spans.items():
        if key == "pre_filter":
            pre = nodes.get("prefilter") or {}
            sp.add("prefilter", "condition", span.start, span.end, "")
            sp.find(
                "prefilter",
                "condition",
                "PRE_FILTER(",
                _canon(pre.get("condition")),
                span.start,
                span.end,
                text=pre.get("condition"),
            )
            continue
        value = opts.get(key)
        sp.add("options", key, span.start, span.end, "")
        if isinstance(value, str):
            sp.find("options", key, "(", value, span.start, span.end)
        if key in ("fill_history", "fill_history_first") and opts.get("fill_history_start"):
            sp.find(
                "options",
                "fill_history_start",
                "(",
                _canon(opts["fill_history_start"]),
                span.start,
                span.end,
                text=opts["fill_history_start"],
            )
    _notify_spans(sp, st.notify, nodes.get("notify"))
    _output_spans(sp, st, nodes.get("output"), 0, "OUTPUT_SUBTABLE")
    if st.query is not None and st.query.span is not None:
        comp = nodes.get("computation") or {}
        sp.add("computation", "query", st.query.span.start, st.query.span.end, comp.get("query") or "")


def locate_error(design: dict[str, Any], syntax: str, err: SqlError) -> dict[str, Any]:
    """Place an error found while validating ``design_to_sql(design, syntax)`` (``err.offset`` is an
    offset in that text) on the node and field whose text holds it.

    Returns:
        An issue ``{"node", "field", "message", "position"}`` (``docs/designer.md``): the position
        is re-based into the field's own text (``{"offset", "line", "column"}``); ``node`` and
        ``field`` are None (and the position that of the SQL) when no field holds the offset.
    """
    offset = err.offset
    if offset is None:
        return _issue(None, None, err.message)
    try:
        sql, spans = field_spans(design, syntax)
    except (DesignError, NotExpressible, SqlError):
        return _issue(None, None, err.message, err.sql, offset)
    holding = [s for s in spans if s.start <= offset < s.end] or [
        s for s in spans if s.start <= offset <= s.end
    ]
    if not holding:
        return _issue(None, None, err.message, sql, offset)
    best = min(holding, key=lambda s: s.end - s.start)
    return _issue(best.node, best.field, err.message, best.text, best.offset_in_field(offset))


# --------------------------------------------------------------------------- palette, defaults


_PLACEHOLDERS = {
    "_twstart": "start timestamp of the window",
    "_twend": "end timestamp of the window",
    "_twduration": "duration of the window (database precision units)",
    "_twrownum": "number of rows in the window (3.3.7 syntax)",
    "_tprev_ts": "event time of the previous trigger",
    "_tcurrent_ts": "event time of the current trigger",
    "_tnext_ts": "event time of the next trigger",
    "_tprev_localtime": "system time of the previous trigger",
    "_tnext_localtime": "system time of the next trigger",
    "_tgrpid": "id of the trigger group (BIGINT; 3.3.7 syntax)",
    "_tlocaltime": "system time of the current trigger (3.3.7 syntax)",
    "%%1": "value of the 1st PARTITION BY item (%%2 the 2nd...; 3.3.7 syntax)",
    "%%tbname": "the trigger group's subtable when PARTITION BY has tbname (FROM, SELECT, WHERE; 3.3.7)",
    "%%trows": "the rows of the trigger group that caused this trigger (FROM only, no WHERE or joins)",
}


def placeholders_for(trigger_type: str, partitioned: bool) -> list[dict[str, str]]:
    """Placeholders the computation may use with a trigger type (seed 002, Placeholders table;
    ``streams337.check_placeholders``): ``_tw*`` for window triggers, ``_tprev_ts`` /
    ``_tcurrent_ts`` / ``_tnext_ts`` for SLIDING, ``_tprev_localtime`` / ``_tnext_localtime`` for
    PERIOD, ``_tgrpid`` / ``_tlocaltime`` / ``%%trows`` for all, ``%%n`` and ``%%tbname`` when
    partitioned. eKuiper windows (legacy only) have ``_twstart`` / ``_twend`` / ``_twduration``
    (the design's names of ``_wstart`` / ``_wend`` / ``_wduration``) and ``%%trows``.

    Returns:
        ``[{"name": "_twstart", "description": "..."}]`` in palette order; unknown types: ``[]``.
    """
    if trigger_type == "ekuiper":
        names = ["_twstart", "_twend", "_twduration", "%%trows"]
    elif trigger_type in WINDOW_TRIGGERS:
        names = ["_twstart", "_twend", "_twduration", "_twrownum"]
    elif trigger_type == "sliding":
        names = ["_tprev_ts", "_tcurrent_ts", "_tnext_ts"]
    elif trigger_type == "period":
        names = ["_tprev_localtime", "_tnext_localtime"]
    else:
        return []
    if trigger_type != "ekuiper":
        names += ["_tgrpid", "_tlocaltime", "%%trows"]
        if partitioned:
            names += ["%%1", "%%tbname"]
    return [{"name": n, "description": _PLACEHOLDERS[n]} for n in names]


def defaults(syntax: str) -> dict[str, Any]:
    """What a field means when it is null (not written), per syntax, for the forms to show
    (``OptionsSpec``; seed 000 / 002; ARCHITECTURE.md "Decisions on contradictions").

    Returns:
        ``{"options": {key: default}, "notify": {"history", "on_failure"}, "count_window_min": n,
        "max_delay_min": "5s" | "3s"}``; options the syntax does not have are left out.

    Raises:
        ValueError: unknown syntax.
    """
    if syntax == LEGACY:
        options: dict[str, Any] = {
            "trigger_mode": "WINDOW_CLOSE",
            "max_delay": None,
            "recalculate": "60m",
            "watermark": "0s",
            "ignore_expired": True,
            "ignore_update": True,
            "delete_mark": "3650d",
            "fill_history": False,
            "fill_history_async": False,
            "event_time": True,
        }
        notify = {"history": False, "on_failure": "PAUSE"}
    elif syntax == V337:
        options = {k: False for k in _337_FLAGS}
        options.update(
            max_delay=None,
            watermark="0s",
            expired_time=None,
            fill_history=False,
            fill_history_start=None,
            event_type=["WINDOW_CLOSE"],
        )
        notify = {"history": False, "on_failure": "DROP"}
    else:
        raise ValueError(f"unknown syntax {syntax!r}")
    return {
        "options": options,
        "notify": notify,
        "count_window_min": COUNT_MIN[syntax],
        "max_delay_min": str(MAX_DELAY_MIN[syntax]),
    }


# --------------------------------------------------------------------------- changes and impact


_STREAM_FIELDS = ("name", "db", "syntax", "if_not_exists")


def design_changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Field-by-field differences, ignoring ``layout`` (and ``default_db``).

    Returns:
        ``[{"node": "trigger" | ... | None (the stream itself), "field": name | None (a whole node
        added or removed), "old": value, "new": value}]`` in node order.
    """
    out: list[dict[str, Any]] = []
    for f in _STREAM_FIELDS:
        if old.get(f) != new.get(f):
            out.append({"node": None, "field": f, "old": old.get(f), "new": new.get(f)})
    on, nn = old.get("nodes") or {}, new.get("nodes") or {}
    for node in NODES:
        a, b = on.get(node), nn.get(node)
        if a == b:
            continue
        if not isinstance(a, dict) or not isinstance(b, dict):
            out.append({"node": node, "field": None, "old": a, "new": b})
            continue
        keys = list(a) + [k for k in b if k not in a]
        for k in keys:
            if a.get(k) != b.get(k):
                out.append({"node": node, "field": k, "old": a.get(k), "new": b.get(k)})
    return out


_RESET_NODES = frozenset({"source", "prefilter", "trigger", "options"})


def impact(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, str]:
    """What deploying ``new`` over a running stream designed as ``old`` does to its state and
    output (seed 002 "Recalculation": results already written are not deleted).

    - ``reset``: the source, partitioning, pre-filter, trigger or options change the windows: the
      window state is rebuilt from the history (FILL_HISTORY) or from the rows written from now on;
    - ``recalculate``: the computation or output changes: later windows use it, rows already
      written stay unless recalculated (``RECALCULATE STREAM ... FROM ...``);
    - ``notify_only``: only the notifications change;
    - ``none``: nothing changes (also for a new stream, ``old`` None, which has no state yet).

    Returns:
        ``{"kind": ..., "statement": human text}``.
    """
    name = str(new.get("name") or "stream")
    qualified = f"{new['db']}.{name}" if new.get("db") else name
    nodes = new.get("nodes") or {}
    history = bool(
        (nodes.get("options") or {}).get("fill_history")
        or (nodes.get("options") or {}).get("fill_history_first")
    )
    source = nodes.get("source") or {}
    src = ".".join(str(p) for p in (source.get("db"), source.get("table")) if p) or "its trigger table"
    from_where = (
        f"from the earliest row of {src} (FILL_HISTORY)"
        if history
        else f"from the rows written to {src} after the deployment (add FILL_HISTORY to include the history)"
    )
    if old is None:
        return {"kind": "none", "statement": f"A new stream: {qualified} computes its windows {from_where}."}
    changes = design_changes(old, new)
    if not changes:
        return {"kind": "none", "statement": "Nothing changes: the design is the same."}
    touched = sorted({c["node"] or "stream" for c in changes})
    what = ", ".join(touched)
    out = new.get("nodes", {}).get("output") or {}
    out_name = ".".join(str(p) for p in (out.get("db"), out.get("table")) if p) or "the output table"
    if any(c["node"] in _RESET_NODES or c["node"] is None for c in changes):
        return {
            "kind": "reset",
            "statement": (
                f"Changes to {what} change the windows: the stream's window state is discarded and "
                f"rebuilt {from_where}. Rows already in {out_name} stay as they are; windows computed "
                "again overwrite rows with the same start."
            ),
        }
    if any(c["node"] in ("computation", "output") for c in changes):
        return {
            "kind": "recalculate",
            "statement": (
                f"Changes to {what}: windows that close from now on use the new computation; existing "
                f"rows in {out_name} stay as they are unless you recalculate them, e.g. "
                f"RECALCULATE STREAM {qualified} FROM '<first affected window start>' (to recompute the "
                "whole history, FROM the first row of the source)."
            ),
        }
    return {
        "kind": "notify_only",
        "statement": "Only the notifications change: results and window state stay; new events follow the "
        "new notification settings.",
    }
