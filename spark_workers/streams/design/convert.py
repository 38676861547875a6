"""Cross-syntax conversion: the same stream as a design in the other syntax (legacy <-> 3.3.7),
semantically equivalent with each syntax's defaults written out where they differ, or
``NotExpressible`` with the reason (``docs/designer.md`` "Cross-syntax rendering"; ARCHITECTURE.md
"Decisions on contradictions").

The conversion works on the design document, node by node; the computation stays a ``%%trows``
query (``computation``) and is checked to mean the same in both syntaxes: one row per window, an
aggregate of the window's rows.
"""

from __future__ import annotations

import copy
from typing import Any

from sqlglot import exp

from spark_workers.query.compute import placeholder_key
from spark_workers.query.planner import aggregate_call
from spark_workers.sql import ast
from spark_workers.sql.render import query_sql
from spark_workers.streams.design.computation import TO_LEGACY, from_table, is_trows, rename_text
from spark_workers.streams.design.document import (
    FROM_QUERY_337,
    MAX_DELAY_MIN,
    NO_WINDOW_337,
    SYNTAXES,
    DesignError,
    NotExpressible,
    empty_options,
)
from spark_workers.streams.design.fields import read_duration, read_expr, read_partition, read_query
from spark_workers.streams.spec import LEGACY, V337


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
    nodes["options"] = {**empty_options(), **(nodes.get("options") or {})}
    if syntax == V337:
        _legacy_to_337(nodes)
    else:
        _337_to_legacy(nodes)
    return d


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
    """Rewrite the nodes of a legacy design (options complete) into their 3.3.7 equivalent, in place."""
    trig = nodes.get("trigger") or {}
    o = nodes["options"]
    kind = trig.get("type")
    _trigger_to_337(trig, o)
    if (nodes.get("source") or {}).get("from"):
        raise NotExpressible(V337, FROM_QUERY_337, "source", "from")
    _options_to_337(o, kind)
    items = _partition_to_337(nodes.get("source"))
    comp = nodes.get("computation")
    if comp is not None:
        comp["query"] = _computation_to_337(comp.get("query"))
    out = nodes.get("output")
    if out is not None:
        _output_to_337(out, items)
    n = nodes.get("notify")
    if n is not None:
        n["on_failure"] = "PAUSE" if (n.get("on_failure") or "PAUSE") == "PAUSE" else None
        n["history"] = True if n.get("history") else None


def _trigger_to_337(trig: dict[str, Any], o: dict[str, Any]) -> None:
    """A legacy INTERVAL slides by its interval by default and has windows only where rows are."""
    kind = trig.get("type")
    if kind == "ekuiper":
        raise NotExpressible(
            V337, "eKuiper window functions exist only in legacy syntax (seed 003)", "trigger", "type"
        )
    if kind == "none":
        raise NotExpressible(V337, NO_WINDOW_337, "trigger", "type")
    if kind == "interval":
        trig["sliding"] = trig.get("sliding") or trig.get("interval")
        o["ignore_nodata_trigger"] = True  # legacy INTERVAL windows exist only where rows are


def _options_to_337(o: dict[str, Any], kind: Any) -> None:
    """Legacy options -> 3.3.7: the trigger mode, IGNORE EXPIRED / UPDATE -> IGNORE_DISORDER, and
    what has no equivalent (AT_ONCE, DELETE_MARK, FILL_HISTORY ASYNC, EVENT_TIME 0)."""
    s = V337
    mode = o.get("trigger_mode") or "WINDOW_CLOSE"
    if mode == "AT_ONCE":
        raise NotExpressible(
            s,
            "TRIGGER AT_ONCE has no 3.3.7 equivalent: 3.3.7 computes a window when it closes "
            "(MAX_DELAY gives earlier results)",
            "options",
            "trigger_mode",
        )
    if mode in ("FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE"):
        raise NotExpressible(s, f"TRIGGER {mode} has no 3.3.7 equivalent", "options", "trigger_mode")
    o["trigger_mode"] = None
    o["recalculate"] = None
    _ignore_to_337(o, kind)
    if o.get("delete_mark") is not None:
        raise NotExpressible(s, "DELETE_MARK has no 3.3.7 equivalent", "options", "delete_mark")
    if o.get("fill_history_async"):
        raise NotExpressible(
            s, "FILL_HISTORY 1 ASYNC has no 3.3.7 equivalent", "options", "fill_history_async"
        )
    if o.get("event_time") is False:
        raise NotExpressible(
            s, "EVENT_TIME 0 (processing-time windows) exists only in legacy syntax", "options", "event_time"
        )
    o["event_time"] = None
    o["fill_history"] = True if o.get("fill_history") else None


def _ignore_to_337(o: dict[str, Any], kind: Any) -> None:
    """IGNORE EXPIRED = IGNORE UPDATE (default 1) -> IGNORE_DISORDER; a 3.3.7 COUNT_WINDOW always
    ignores disorder."""
    s = V337
    expired = True if o.get("ignore_expired") is None else bool(o["ignore_expired"])
    update = True if o.get("ignore_update") is None else bool(o["ignore_update"])
    if kind == "count":
        if not (expired and update):
            raise NotExpressible(
                s,
                "a 3.3.7 COUNT_WINDOW trigger always ignores out-of-order rows and updates "
                "(IGNORE EXPIRED 0 / IGNORE UPDATE 0 have no equivalent)",
                "options",
                "ignore_expired" if not expired else "ignore_update",
            )
    elif expired != update:
        raise NotExpressible(
            s,
            "IGNORE EXPIRED and IGNORE UPDATE differ; 3.3.7 has one switch for both, IGNORE_DISORDER",
            "options",
            "ignore_update",
        )
    else:
        o["ignore_disorder"] = expired
    o["ignore_expired"] = o["ignore_update"] = None


def _partition_to_337(source: dict[str, Any] | None) -> list[ast.PartitionItem]:
    """The PARTITION BY items, which 3.3.7 takes without aliases and of tbname or tags only."""
    s = V337
    items = read_partition(source)
    for i, p in enumerate(items):
        if p.alias:
            raise NotExpressible(
                s,
                f"PARTITION BY {p.text} AS {p.alias}: 3.3.7 PARTITION BY takes no aliases (seed 002)",
                "source",
                f"partition_by[{i}]",
            )
        if not isinstance(p.expr, exp.Column) or p.expr.table:
            raise NotExpressible(
                s,
                f"PARTITION BY {p.text}: a 3.3.7 trigger groups by tbname or tags only",
                "source",
                f"partition_by[{i}]",
            )
    return items


def _output_to_337(out: dict[str, Any], items: list[ast.PartitionItem]) -> None:
    """Legacy tags get the value the legacy rule gives them: ``AS <PARTITION BY item>``."""
    s = V337
    if out.get("subtable"):
        raise NotExpressible(
            s,
            "legacy SUBTABLE(expr) names subtables expr_<table>_<groupId>, 3.3.7 "
            "OUTPUT_SUBTABLE(expr) names them exactly",
            "output",
            "subtable",
        )
    tags = out.get("tags") or []
    if items and not tags:
        raise NotExpressible(
            s,
            "a partitioned legacy stream tags its output with groupId BIGINT UNSIGNED by "
            "default, 3.3.7 with the PARTITION BY values: write TAGS (...) to convert",
            "output",
            "tags",
        )
    for i, t in enumerate(tags):
        j = _legacy_tag_item(tags, i, items)
        if j is None:
            raise NotExpressible(
                s, f"tag {t.get('name')} matches no PARTITION BY item", "output", f"tags[{i}]"
            )
        t["expr"] = items[j].text


def _computation_to_337(text: Any) -> str:
    s = V337
    q = read_query("computation", "query", text)
    sel = q.select
    if q.fill is not None:
        raise NotExpressible(
            s,
            "FILL has no 3.3.7 equivalent (a 3.3.7 trigger computes windows that have rows)",
            "computation",
            "query",
        )
    if not isinstance(sel, exp.Select) or not is_trows(from_table(sel)):
        raise NotExpressible(s, "the computation must read FROM %%trows", "computation", "query")
    for key in ("group", "having", "order", "limit", "offset", "distinct"):
        if sel.args.get(key):
            raise NotExpressible(
                s,
                f"{key.upper()} in a windowed legacy query has no 3.3.7 %%trows equivalent",
                "computation",
                "query",
            )
    first = sel.expressions[0] if sel.expressions else None
    inner = first.this if isinstance(first, exp.Alias) else first
    if not (isinstance(inner, exp.Column) and inner.name.lower() in TO_LEGACY):
        raise NotExpressible(
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
        uses = [c for c in proj.find_all(exp.Column) if not c.table and c.name.lower() in TO_LEGACY]
        if uses:  # keep the legacy output column name (``_wstart``)
            proj.replace(exp.alias_(proj.copy(), rename_text(texts[i], TO_LEGACY)))
    return query_sql(ast.SelectQuery(select=sel, item_texts=texts))


def _check_aggregate(sel: exp.Select, syntax: str) -> None:
    """Every column is a window placeholder or inside an aggregate: one row per window, as both a
    legacy window query and a 3.3.7 ``%%trows`` computation give (streams.v337.is_fused)."""
    if any(isinstance(i, exp.Star) for i in sel.expressions):
        raise NotExpressible(
            syntax, "SELECT * is a row-level computation: no equivalent", "computation", "query"
        )
    for col in sel.find_all(exp.Column):
        if col.name.lower() in TO_LEGACY and not col.table:
            continue
        p = col.parent
        inside = False
        while p is not None:
            if aggregate_call(p):
                inside = True
                break
            p = p.parent
        if not inside:
            raise NotExpressible(
                syntax,
                f"the row-level column {col.sql()} makes the computation differ between "
                "syntaxes: use it inside an aggregate",
                "computation",
                "query",
            )


def _337_to_legacy(nodes: dict[str, Any]) -> None:
    """Rewrite the nodes of a 3.3.7 design (options complete) into their legacy equivalent, in place."""
    s = LEGACY
    trig = nodes.get("trigger") or {}
    o = nodes["options"]
    kind = trig.get("type")
    _trigger_to_legacy(trig, o)
    source = nodes.get("source")
    if source is None or not source.get("table"):
        raise NotExpressible(s, "a legacy stream needs a trigger table (FROM table)", "source", "table")
    _options_to_legacy(o, kind)
    comp = nodes.get("computation")
    out = nodes.get("output")
    if comp is None or (out is None and nodes.get("notify") is None):
        raise NotExpressible(
            s,
            "a legacy stream needs a computation written INTO an output table or notified (seed 000)",
            "computation",
            "query",
        )
    comp["query"] = _computation_to_legacy(comp.get("query"))
    if out is not None:
        _output_to_legacy(out, source)
    n = nodes.get("notify")
    if n is not None:
        if n.get("where"):
            raise NotExpressible(s, "NOTIFY ... WHERE exists only in 3.3.7 syntax", "notify", "where")
        if not n.get("events"):
            raise NotExpressible(s, "legacy NOTIFY needs ON (event types)", "notify", "events")
        n["on_failure"] = None if n.get("on_failure") == "PAUSE" else "DROP"
        n["history"] = True if n.get("history") else None


def _trigger_to_legacy(trig: dict[str, Any], o: dict[str, Any]) -> None:
    """Legacy has no PERIOD or SLIDING trigger, no SLIDING offset, and windows only where rows are."""
    s = LEGACY
    kind = trig.get("type")
    if kind in ("period", "sliding"):
        raise NotExpressible(
            s, f"{kind.upper()} triggers exist only in 3.3.7 syntax (seed 002)", "trigger", "type"
        )
    if kind == "interval":
        if trig.get("sliding_offset"):
            raise NotExpressible(
                s, "a SLIDING offset exists only in 3.3.7 syntax", "trigger", "sliding_offset"
            )
        if not o.get("ignore_nodata_trigger"):
            raise NotExpressible(
                s,
                "a 3.3.7 INTERVAL trigger fires for windows without rows unless "
                "IGNORE_NODATA_TRIGGER; legacy windows need rows",
                "options",
                "ignore_nodata_trigger",
            )
    o["ignore_nodata_trigger"] = False  # no effect on other triggers


# 3.3.7 options without a legacy equivalent, with their SQL words
_337_ONLY_OPTIONS = (
    ("expired_time", "EXPIRED_TIME"),
    ("delete_output_table", "DELETE_OUTPUT_TABLE"),
    ("fill_history_first", "FILL_HISTORY_FIRST"),
    ("fill_history_start", "FILL_HISTORY(start_time)"),
    ("calc_notify_only", "CALC_NOTIFY_ONLY"),
    ("low_latency_calc", "LOW_LATENCY_CALC"),
    ("force_output", "FORCE_OUTPUT"),
)


def _options_to_legacy(o: dict[str, Any], kind: Any) -> None:
    """3.3.7 options -> legacy: MAX_DELAY(d) -> TRIGGER MAX_DELAY d, IGNORE_DISORDER -> IGNORE
    EXPIRED = IGNORE UPDATE, and what has no equivalent."""
    s = LEGACY
    for key, why in _337_ONLY_OPTIONS:
        if o.get(key):
            raise NotExpressible(s, f"{why} has no legacy equivalent", "options", key)
    if o.get("delete_recalc") and kind != "count":
        raise NotExpressible(s, "DELETE_RECALC has no legacy equivalent", "options", "delete_recalc")
    o["delete_recalc"] = False
    if [e for e in o.get("event_type") or [] if e.upper() != "WINDOW_CLOSE"]:
        raise NotExpressible(
            s,
            "EVENT_TYPE(WINDOW_OPEN) (computing when a window opens) has no legacy equivalent",
            "options",
            "event_type",
        )
    o["event_type"] = []
    if o.get("max_delay"):
        d = read_duration("options", "max_delay", o["max_delay"])
        assert d is not None
        if d.is_calendar or d.ns < MAX_DELAY_MIN[LEGACY].ns:
            raise NotExpressible(
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


def _output_to_legacy(out: dict[str, Any], source: dict[str, Any]) -> None:
    """Legacy tags take the PARTITION BY item of their name or position (``_legacy_tag_item``):
    a tag expression must be that item; 3.3.7 default tags of ``PARTITION BY tbname`` are written."""
    s = LEGACY
    if out.get("subtable"):
        raise NotExpressible(
            s,
            "3.3.7 OUTPUT_SUBTABLE(expr) names subtables exactly, legacy SUBTABLE(expr) "
            "appends _<table>_<groupId>",
            "output",
            "subtable",
        )
    items = read_partition(source)
    tags = out.get("tags") or []
    if items and not tags:
        if (
            len(items) == 1
            and isinstance(items[0].expr, exp.Column)
            and items[0].expr.name.lower() == "tbname"
        ):
            out["tags"] = [{"name": "tag_tbname", "type": "VARCHAR(270)", "comment": None, "expr": None}]
        else:
            raise NotExpressible(
                s,
                "3.3.7 tags the output with the PARTITION BY tags' own types by default, unknown "
                "here: write TAGS (...) to convert",
                "output",
                "tags",
            )
    for i, t in enumerate(tags):
        j = _legacy_tag_item(tags, i, items)
        e = read_expr("output", f"tags[{i}].expr", t.get("expr"))
        ok = (
            j is not None
            and e is not None
            and (e == items[j].expr or (isinstance(e, exp.Column) and placeholder_key(e) == f"p{j + 1}"))
        )
        if not ok:
            raise NotExpressible(
                s,
                f"legacy tag {t.get('name')} takes the PARTITION BY item of its name or position; "
                "its expression differs",
                "output",
                f"tags[{i}].expr",
            )
        t["expr"] = None


def _computation_to_legacy(text: Any) -> str:
    s = LEGACY
    q = read_query("computation", "query", text)
    sel = q.select
    if not isinstance(sel, exp.Select) or not is_trows(from_table(sel)) or q.partition_by or q.window:
        raise NotExpressible(
            s,
            "only a computation over FROM %%trows has a legacy equivalent (the window query)",
            "computation",
            "query",
        )
    if len(list(sel.find_all(exp.Select))) > 1 or len(list(sel.find_all(exp.Table))) > 1:
        raise NotExpressible(
            s,
            "a computation reading other tables or subqueries has no legacy equivalent",
            "computation",
            "query",
        )
    for col in sel.find_all(exp.Column):
        key = placeholder_key(col)
        if key is not None and key not in TO_LEGACY:
            name = (
                col.name
                if not key.startswith("p") and key != "tbname"
                else ("%%tbname" if key == "tbname" else "%%" + key[1:])
            )
            raise NotExpressible(
                s, f"the placeholder {name} has no legacy equivalent", "computation", "query"
            )
    for key in ("group", "having", "order", "limit", "offset", "distinct", "where"):
        if sel.args.get(key):
            raise NotExpressible(
                s, f"{key.upper()} in a %%trows computation has no legacy equivalent", "computation", "query"
            )
    _check_aggregate(sel, s)
    sel = sel.copy()
    texts = list(q.item_texts)
    for i, proj in enumerate(list(sel.expressions)):
        if isinstance(proj, exp.Alias) or i >= len(texts):
            continue
        if [c for c in proj.find_all(exp.Column) if not c.table and c.name.lower() in TO_LEGACY]:
            proj.replace(exp.alias_(proj.copy(), texts[i]))
    return query_sql(ast.SelectQuery(select=sel, item_texts=texts))
