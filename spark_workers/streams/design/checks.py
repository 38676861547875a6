"""Field checks: the issues of a design, each placed on the node and field that holds it
(``docs/designer.md`` "Validation issues"), found without the lake.

``check_design`` reads every field with the readers of ``fields`` and the builders of ``to_sql``,
turning what they raise into issues with the position inside the field's own text; the catalog
checks come from validating the SQL (``locate.locate_error``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from spark_workers.duration import Duration
from spark_workers.errors import SqlError
from spark_workers.streams.design.document import (
    COUNT_MIN,
    FORCE_WINDOW_CLOSE_FILL,
    LEGACY_EVENTS,
    LEGACY_TRIGGER_MODES,
    MAX_DELAY_MIN,
    OPTION_KEYS,
    OPTIONS_337_NOT_FOR,
    SYNTAXES,
    TRIGGER_FIELDS,
    DesignError,
    NotExpressible,
    issue,
)
from spark_workers.streams.design.fields import (
    read_duration,
    read_expr,
    read_from,
    read_int,
    read_partition,
    read_query,
)
from spark_workers.streams.design.to_sql import build_notify, build_output, build_trigger, design_to_sql
from spark_workers.streams.spec import LEGACY, SCHEMA_VERSION, V337


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
    found = _Issues(design)
    syntax = design.get("syntax")
    if design.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        found.add(None, "schema_version", f"unsupported schema_version {design.get('schema_version')}")
    if syntax not in SYNTAXES:
        found.add(None, "syntax", f"unknown syntax {syntax!r}: use 3.3.7 or legacy")
        return found.items
    syntax = str(syntax)
    if not isinstance(design.get("name"), str) or not design["name"].strip():
        found.add(None, "name", "the stream name is required")
    nodes = design.get("nodes") or {}
    trig = nodes.get("trigger")
    if not isinstance(trig, dict):
        found.add("trigger", "type", "the trigger is required")
        trig = None
    else:
        _check_trigger(found, trig, syntax)
    source = nodes.get("source")
    needs_source = syntax == LEGACY or (trig or {}).get("type") != "period"
    has_from = isinstance(source, dict) and bool(source.get("from"))
    if needs_source and not (isinstance(source, dict) and (source.get("table") or has_from)):
        found.add("source", "table", "the trigger table is required")
    if has_from:
        assert isinstance(source, dict)
        found.run(read_from, source.get("from"))
    found.run(read_partition, source if isinstance(source, dict) else None)
    pre = nodes.get("prefilter")
    if isinstance(pre, dict):
        found.run(read_expr, "prefilter", "condition", pre.get("condition"), True)
    _check_options(found, nodes.get("options") or {}, syntax)
    if syntax == V337:
        for node, field, message in nodes_337(nodes) + rules_337(nodes) + duration_rules_337(nodes):
            found.add(node, field, message)
    out_node = nodes.get("output")
    if isinstance(out_node, dict):
        for i, col in enumerate(out_node.get("columns") or []):
            if i != 1 and isinstance(col, dict) and col.get("composite_key"):
                found.add(
                    "output",
                    f"columns[{i}].composite_key",
                    "COMPOSITE KEY marks the second column, the key with the first (seed 000, seed 002)",
                )
    comp = nodes.get("computation")
    if isinstance(comp, dict):
        found.run(_check_fill, comp.get("query"), syntax, trig, nodes.get("options") or {})
    elif syntax == LEGACY:
        found.add("computation", "query", "a legacy stream needs a computation")
    out = nodes.get("output")
    if isinstance(out, dict):
        found.run(build_output, out, syntax == V337)
    n = nodes.get("notify")
    if isinstance(n, dict):
        _check_notify(found, n, syntax)
    if not found.items:
        found.run(design_to_sql, design)
    return found.unique()


class _Issues:
    """The issues found so far in ``design``; ``run`` turns what a reader raises into one."""

    def __init__(self, design: dict[str, Any]) -> None:
        self.design = design
        self.items: list[dict[str, Any]] = []

    def add(self, node: str | None, field: str | None, message: str) -> None:
        self.items.append(issue(node, field, message))

    def run(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)``: a ``DesignError`` is an issue placed in the field's own text, a
        ``NotExpressible`` one without a position."""
        try:
            fn(*args)
        except DesignError as e:
            text = _field_text(self.design, e.node, e.field)
            self.items.append(issue(e.node, e.field, e.message, text, e.position))
        except NotExpressible as e:
            self.items.append(issue(e.node, e.field, e.reason))

    def unique(self) -> list[dict[str, Any]]:
        """The issues in order, one per node, field and message."""
        seen: set[tuple[Any, Any, str]] = set()
        out = []
        for item in self.items:
            mark = (item["node"], item["field"], item["message"])
            if mark not in seen:
                seen.add(mark)
                out.append(item)
        return out


def _check_trigger(found: _Issues, trig: dict[str, Any], syntax: str) -> None:
    """The trigger's type, its fields (durations positive, counts, expressions), then the window."""
    kind = trig.get("type")
    if kind not in TRIGGER_FIELDS:
        found.add("trigger", "type", f"unknown trigger type {kind!r}: use {', '.join(TRIGGER_FIELDS)}")
        return
    for f in trig:
        if f != "type" and f not in TRIGGER_FIELDS[kind]:
            found.add("trigger", f, f"a {kind} trigger has no field {f}")
    for f in ("interval", "sliding", "period", "gap", "true_for"):
        if not (kind == "count" and f == "sliding"):
            found.run(_positive, "trigger", f, trig.get(f))
    for f in ("offset", "sliding_offset"):
        found.run(read_duration, "trigger", f, trig.get(f))
    if kind == "count":
        found.run(read_int, "trigger", "count", trig.get("count"), COUNT_MIN[syntax], True)
        found.run(read_int, "trigger", "sliding", trig.get("sliding"), 1)
    for f in ("expr", "start", "end", "over_when", "filter"):
        required = f in ("expr", "start", "end") and f in TRIGGER_FIELDS[kind]
        found.run(read_expr, "trigger", f, trig.get(f), required)
    found.run(build_trigger, trig, syntax)


def _obj(nodes: dict[str, Any], key: str) -> dict[str, Any]:
    v = nodes.get(key)
    return v if isinstance(v, dict) else {}


def nodes_337(nodes: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The nodes a 3.3.7 stream needs together, each missing one as ``(node, field, message)`` on
    the node to add (seed 002 "Stream Processing Output": a computation writes INTO a table unless
    CALC_NOTIFY_ONLY; INTO needs a computation; a stream without a computation must notify). The
    statement check says the same on the stream's name; placed here, the designer marks the node
    the user still has to add."""
    has = {k: isinstance(nodes.get(k), dict) for k in ("computation", "output", "notify")}
    notify_only = bool(_obj(nodes, "options").get("calc_notify_only"))
    if has["computation"] and not has["output"] and not notify_only:
        return [
            (
                "output",
                "table",
                "a computation needs INTO [db.]table (an Output node), or STREAM_OPTIONS(CALC_NOTIFY_ONLY) "
                "to only notify its results (seed 002)",
            )
        ]
    if not has["computation"] and has["output"]:
        return [("computation", "query", "INTO needs a computation (AS subquery) to write (seed 002)")]
    if not has["computation"] and not has["notify"]:
        return [
            (
                "computation",
                "query",
                "a stream without a computation must notify (NOTIFY(url) ...): add a Computation or a "
                "Notification node (seed 002)",
            )
        ]
    return []


def rules_337(nodes: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The rules of seed 002 between a 3.3.7 design's nodes, each as ``(node, field, message)``:
    FILL_HISTORY and FILL_HISTORY_FIRST exclude each other; an option the trigger type has not
    (``OPTIONS_337_NOT_FOR``: neither FILL_HISTORY nor WATERMARK with PERIOD...);
    OUTPUT_SUBTABLE and TAGS need a trigger grouping (PARTITION BY); NOTIFY of a window trigger
    needs ON (WINDOW_OPEN|WINDOW_CLOSE), PERIOD and SLIDING triggers notify ON_TIME only
    (seed 002, "Stream Processing Control Options", "Stream Processing Output", "Notification
    Mechanism")."""
    out: list[tuple[str, str, str]] = []
    o = _obj(nodes, "options")
    kind = _obj(nodes, "trigger").get("type")
    if o.get("fill_history") and o.get("fill_history_first"):
        out.append(("options", "fill_history_first", "cannot be used together with FILL_HISTORY (seed 002)"))
    for key, why in OPTIONS_337_NOT_FOR.items():  # options seed 002 says the trigger has not
        if o.get(key) not in (None, False, []) and kind in why:
            out.append(("options", key, why[str(kind)]))
    if o.get("fill_history_start") and not (o.get("fill_history") or o.get("fill_history_first")):
        out.append(
            ("options", "fill_history_start", "the start time belongs to FILL_HISTORY or FILL_HISTORY_FIRST")
        )
    if "output" in nodes and nodes["output"] is not None and not _obj(nodes, "source").get("partition_by"):
        output = _obj(nodes, "output")
        if output.get("subtable"):
            out.append(
                ("output", "subtable", "OUTPUT_SUBTABLE needs a trigger grouping, PARTITION BY (seed 002)")
            )
        if output.get("tags"):
            out.append(("output", "tags", "TAGS need a trigger grouping, PARTITION BY (seed 002)"))
    if nodes.get("notify") is not None and kind is not None:
        out.extend(_notify_events_337(_obj(nodes, "notify"), str(kind)))
    return out


# seed 002 units: PERIOD "milliseconds (a), seconds (s), minutes (m), hours (h), and days (d)",
# its offset and a SLIDING offset "a, s, m, h", EXPIRED_TIME "a, s, m, h, d", MAX_DELAY "s, m, h, d"
_UNITS_337 = {
    ("trigger", "period"): ("a", "s", "m", "h", "d"),
    ("trigger", "offset"): ("a", "s", "m", "h"),
    ("trigger", "sliding_offset"): ("a", "s", "m", "h"),
    ("options", "expired_time"): ("a", "s", "m", "h", "d"),
    ("options", "max_delay"): ("s", "m", "h", "d"),
}
_DAY_NS = 86_400 * 10**9


def duration_rules_337(nodes: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Seed 002's units and ranges of 3.3.7 durations, each as ``(node, field, message)``: PERIOD
    within [10a, 3650d] with an offset below one day ("Scheduled Trigger"), the units of a PERIOD
    or SLIDING offset, EXPIRED_TIME and MAX_DELAY ("Stream Processing Control Options")."""
    out: list[tuple[str, str, str]] = []
    trig = _obj(nodes, "trigger")
    kind = trig.get("type")
    values = {
        ("trigger", "period"): trig.get("period") if kind == "period" else None,
        ("trigger", "offset"): trig.get("offset") if kind == "period" else None,
        ("trigger", "sliding_offset"): trig.get("sliding_offset") if kind == "sliding" else None,
        ("options", "expired_time"): _obj(nodes, "options").get("expired_time"),
        ("options", "max_delay"): _obj(nodes, "options").get("max_delay"),
    }
    for (node, field), text in values.items():
        if not isinstance(text, str) or not text.strip():
            continue
        try:
            d = Duration.parse(text)
        except SqlError:
            continue  # the field's own check reports it
        units = _UNITS_337[(node, field)]
        if d.unit not in units:
            out.append(
                (node, field, f"{field.upper()} takes the units {', '.join(units)} (seed 002), not {d.unit}")
            )
        elif field == "period" and not 10 * 10**6 <= d.ns <= 3650 * _DAY_NS:
            out.append((node, field, "the period is within [10a, 3650d] (seed 002)"))
        elif field == "offset" and d.ns >= _DAY_NS:
            out.append((node, field, "the PERIOD offset is below one day (seed 002)"))
    return out


def _notify_events_337(notify: dict[str, Any], kind: str) -> list[tuple[str, str, str]]:
    events = [str(e).upper() for e in notify.get("events") or []]
    if kind in ("period", "sliding"):
        bad = [e for e in events if e != "ON_TIME"]
        if bad:
            return [
                (
                    "notify",
                    "events",
                    f"a {kind.upper()} trigger notifies ON_TIME events, not {bad[0]} (seed 002)",
                )
            ]
    elif not events:
        return [
            ("notify", "events", "NOTIFY of a window trigger needs ON (WINDOW_OPEN|WINDOW_CLOSE) (seed 002)")
        ]
    elif "ON_TIME" in events:
        return [
            (
                "notify",
                "events",
                "ON_TIME belongs to PERIOD and SLIDING triggers; a window trigger notifies "
                "WINDOW_OPEN and WINDOW_CLOSE (seed 002)",
            )
        ]
    return []


def _check_fill(query: Any, syntax: str, trig: dict[str, Any] | None, opts: dict[str, Any]) -> None:
    """The computation parses, and its FILL clause fits: VALUE / VALUE_F with their values, the
    other modes without; in a legacy design the FILL of the stream's window, which is an INTERVAL;
    with TRIGGER FORCE_WINDOW_CLOSE only PREV, NULL, NONE or VALUE (seed 000, "Trigger Modes").

    Raises:
        DesignError: on ``computation.query``, at the FILL clause.
    """
    q = read_query("computation", "query", query)
    if q.fill is None:
        return
    at = str(query).upper().rfind("FILL")
    at = max(at, 0)
    mode = q.fill.mode.upper()
    if mode in ("VALUE", "VALUE_F") and not q.fill.values:
        raise DesignError("computation", "query", f"FILL({mode}, ...) needs a value per filled column", at)
    if mode not in ("VALUE", "VALUE_F") and q.fill.values:
        raise DesignError("computation", "query", f"FILL({mode}) takes no values", at)
    if syntax != LEGACY:
        return
    kind = (trig or {}).get("type")
    if kind != "interval":
        raise DesignError(
            "computation",
            "query",
            "FILL fills the INTERVAL windows without rows: it needs an INTERVAL trigger",
            at,
        )
    if opts.get("trigger_mode") == "FORCE_WINDOW_CLOSE" and mode not in FORCE_WINDOW_CLOSE_FILL:
        raise DesignError(
            "computation",
            "query",
            f"TRIGGER FORCE_WINDOW_CLOSE takes FILL {', '.join(FORCE_WINDOW_CLOSE_FILL)} only "
            f"(seed 000, Trigger Modes), not FILL({mode})",
            at,
        )


def _check_options(found: _Issues, opts: dict[str, Any], syntax: str) -> None:
    """Each option by its kind (``OPTION_KEYS``), then MAX_DELAY against the syntax's minimum."""
    for key, value in opts.items():
        if key not in OPTION_KEYS:
            found.add("options", key, f"unknown option {key}")
            continue
        kind, _only = OPTION_KEYS[key]
        if kind == "duration" and value is not None:
            found.run(_non_negative, "options", key, value)
        elif kind in ("bool", "flag") and value is not None and not isinstance(value, bool):
            found.add("options", key, "must be true, false or null")
        elif kind == "mode" and value is not None and value not in LEGACY_TRIGGER_MODES:
            found.add("options", key, f"unknown trigger mode {value}: use {', '.join(LEGACY_TRIGGER_MODES)}")
        elif kind == "events" and value is not None and not isinstance(value, list):
            found.add("options", key, "must be a list of event types: WINDOW_OPEN, WINDOW_CLOSE")
        elif kind == "events":
            for i, ev in enumerate(value or []):
                if str(ev).upper() not in LEGACY_EVENTS:
                    found.add(
                        "options", f"{key}[{i}]", f"unknown event {ev}: use WINDOW_OPEN or WINDOW_CLOSE"
                    )
        elif kind == "expr" and value is not None:
            found.run(read_expr, "options", key, value)
    if opts.get("max_delay"):
        try:
            d = Duration.parse(str(opts["max_delay"]))
            low = MAX_DELAY_MIN[syntax]
            if d.is_calendar or d.ns < low.ns:
                found.add("options", "max_delay", f"MAX_DELAY must be at least {low} in {syntax} syntax")
        except SqlError:
            pass


def _check_notify(found: _Issues, n: dict[str, Any], syntax: str) -> None:
    """Notification URLs are ws:// or wss:// (seed 000, 002), then the NOTIFY clause of the syntax."""
    for i, url in enumerate(n.get("urls") or []):
        if not isinstance(url, str) or not (url.startswith("ws://") or url.startswith("wss://")):
            found.add("notify", f"urls[{i}]", "a notification URL starts with ws:// or wss://")
    found.run(build_notify, n, syntax)


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


def _positive(node: str, field: str, value: Any) -> None:
    d = read_duration(node, field, value)
    if d is not None and d.value <= 0:
        raise DesignError(node, field, "must be a positive duration", 0)


def _non_negative(node: str, field: str, value: Any) -> None:
    d = read_duration(node, field, value)
    if d is not None and d.value < 0:
        raise DesignError(node, field, "must not be negative", 0)
