"""The design document's shape: its nodes and fields, the options of each syntax, what null
means (``defaults``), the errors a design raises and the issue it is reported as (contract:
``docs/designer.md``, section "Design").

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
keeping the letters' case; FILL stays in the computation: ``computation``).
"""

from __future__ import annotations

from typing import Any

from spark_workers.duration import Duration
from spark_workers.errors import SqlPosition
from spark_workers.streams.spec import LEGACY, V337

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
    # legacy stream without a window: every written row computed at once (seed 000 "Trigger
    # Modes": non-window computations are real-time; seed 004 power_stream)
    "none": (),
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
# 3.3.7 options that are plain words (false: not written)
FLAGS_337 = (
    "ignore_disorder",
    "delete_recalc",
    "delete_output_table",
    "fill_history_first",
    "calc_notify_only",
    "low_latency_calc",
    "force_output",
    "ignore_nodata_trigger",
)
# 3.3.7 options that do not apply to some trigger types (seed 002): option -> {trigger type: why}.
# The designer does not offer them there, and a design that sets one is refused on that option.
_NO_WINDOW = "non-window triggers (PERIOD, SLIDING) ignore it"
_NO_DISORDER = "out-of-order rows and updates are ignored by {kind} triggers (seed 002 Out-of-Order Data)"
OPTIONS_337_NOT_FOR: dict[str, dict[str, str]] = {
    "watermark": {"period": "WATERMARK does not apply to PERIOD triggers (seed 002 Watermark)"},
    "fill_history": {"period": "FILL_HISTORY is not supported with a PERIOD trigger (seed 002)"},
    "fill_history_first": {"period": "FILL_HISTORY_FIRST is not supported with a PERIOD trigger (seed 002)"},
    "fill_history_start": {"period": "FILL_HISTORY is not supported with a PERIOD trigger (seed 002)"},
    "max_delay": {k: f"MAX_DELAY: {_NO_WINDOW} (seed 002)" for k in ("period", "sliding")},
    "event_type": {
        k: f"EVENT_TYPE is not applicable to {k.upper()} triggers (seed 002)" for k in ("period", "sliding")
    },
    "ignore_disorder": {
        k: "IGNORE_DISORDER: " + _NO_DISORDER.format(kind=k.upper()) for k in ("period", "sliding", "count")
    },
    "delete_recalc": {
        k: f"DELETE_RECALC: deletions are ignored by {k.upper()} triggers, which do not recalculate "
        "(seed 002 Data Deletions)"
        for k in ("period", "sliding", "count")
    },
    "ignore_nodata_trigger": {
        k: "IGNORE_NODATA_TRIGGER applies to SLIDING, INTERVAL and PERIOD triggers only (seed 002)"
        for k in ("session", "state", "event", "count")
    },
}
EKUIPER_FUNCTIONS = ("tumbling", "hopping", "sliding", "session", "count")
EKUIPER_UNITS = ("DD", "HH", "MI", "SS", "MS")
WINDOW_TRIGGERS = ("interval", "session", "state", "event", "count")
COUNT_MIN = {LEGACY: 2, V337: 1}  # ARCHITECTURE.md decisions
MAX_DELAY_MIN = {LEGACY: Duration(5, "s"), V337: Duration(3, "s")}  # ARCHITECTURE.md decisions
# event types: EVENT_TYPE(...) and legacy NOTIFY ON (...); 3.3.7 NOTIFY ON (...) has ON_TIME too
LEGACY_EVENTS = ("WINDOW_OPEN", "WINDOW_CLOSE")
EVENTS_337 = ("WINDOW_OPEN", "WINDOW_CLOSE", "ON_TIME")
# a message's eventType may also be WINDOW_INVALIDATION (seed 000/002 "Common Fields"): it is sent to
# a stream notifying WINDOW_OPEN or WINDOW_CLOSE for a generated window that out-of-order rows,
# updates or deletions remove or recompute; it is no event type of ON (...)
# FILL modes (TDengine's FILL clause) and those TRIGGER FORCE_WINDOW_CLOSE allows (seed 000
# "Trigger Modes": "FILL only supports PREV, NULL, NONE, VALUE")
FILL_MODES = ("NONE", "NULL", "NULL_F", "VALUE", "VALUE_F", "PREV", "NEXT", "LINEAR")
FORCE_WINDOW_CLOSE_FILL = ("PREV", "NULL", "NONE", "VALUE")
# why a legacy query's FROM over a subquery or a join (design ``source.from``) has no 3.3.7 form
FROM_QUERY_337 = (
    "a 3.3.7 trigger table is one table, not a subquery or a join (seed 002 Trigger Tables): "
    "read them in the computation instead"
)
# why a legacy stream without a window (trigger type "none") has no 3.3.7 form
NO_WINDOW_337 = (
    "a stream without a window (every written row computed at once) exists only in legacy syntax "
    "(seed 000); every 3.3.7 trigger is a window, a schedule or a count (seed 002)"
)


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


def empty_options() -> dict[str, Any]:
    """An ``options`` node with every key of ``OPTION_KEYS`` not written (null, false or [])."""
    out: dict[str, Any] = {k: None for k in OPTION_KEYS}
    for k in FLAGS_337:
        out[k] = False
    out["fill_history_async"] = False
    out["event_type"] = []
    return out


def issue(
    node: str | None, field: str | None, message: str, text: str | None = None, offset: int | None = None
) -> dict[str, Any]:
    """A validation issue (``docs/designer.md`` "Validation issues").

    Returns:
        ``{"node", "field", "message", "position": {"offset", "line", "column"} | None}``; the
        position is that of ``offset`` in ``text`` (None without an offset).
    """
    pos = None
    if offset is not None:
        p = SqlPosition.of(text or "", offset)
        pos = {"offset": p.offset, "line": p.line, "column": p.column}
    return {"node": node, "field": field, "message": message, "position": pos}


def options_for(syntax: str, trigger_type: str) -> list[str]:
    """The option keys a design of ``syntax`` may set with a trigger of ``trigger_type``, in
    ``OPTION_KEYS`` order: the syntax's own options, less (3.3.7) those seed 002 says do not
    apply to that trigger (``OPTIONS_337_NOT_FOR``). PRE_FILTER is the prefilter node.

    Raises:
        ValueError: unknown syntax.
    """
    if syntax not in SYNTAXES:
        raise ValueError(f"unknown syntax {syntax!r}")
    own = [k for k, (_kind, only) in OPTION_KEYS.items() if only in (None, syntax)]
    if syntax != V337:
        return own
    return [k for k in own if trigger_type not in OPTIONS_337_NOT_FOR.get(k, {})]


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
        options = {k: False for k in FLAGS_337}
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
