"""TDengine stream notification messages (seed 000 "Stream Computing Event Notifications" and
seed 002 "Notification Mechanism").

Shape::

    {"messageId": "...", "timestamp": 1733284887203,
     "streams": [{"streamName": "s", "events": [{
        "tableName": "t_...", "eventType": "WINDOW_CLOSE", "eventTime": 1733284887197,
        "windowId": "...", "windowType": "Time",                          # seed 000 fields
        "triggerId": "...", "triggerType": "Interval", "groupId": "...",  # seed 002 fields
        "windowStart": 1733284800000, "windowEnd": 1733284860000,
        "result": {"_wstart": 1733284800000, "avg(current)": 1.3}}]}]}

Events carry both seeds' identifying fields (a superset: receivers written for either syntax
find what they expect). ``windowId``/``triggerId`` and ``messageId`` are derived from the
stream, group, window and micro-batch, so a re-sent event after a restart keeps its ids.
Window bounds and result timestamps are in the result table's precision.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

WINDOW_TYPES = {
    "interval": ("Time", "Interval"),
    "session": ("Session", "Session"),
    "state": ("State", "State"),
    "event": ("Event", "Event"),
    "count": ("Count", "Count"),
    "period": ("Time", "Period"),
    "sliding": ("Time", "Sliding"),
}
MAX_EVENTS_PER_MESSAGE = 200


def window_id(stream_key: str, gkey: str, wstart: int) -> str:
    """Stable id of one window of one group of one stream."""
    return hashlib.md5(f"{stream_key}|{gkey}|{wstart}".encode()).hexdigest()[:20]


@dataclass
class Event:
    """One event before serialization."""

    table_name: str
    event_type: str
    gkey: str
    group_id: int
    window_start: int
    window_end: int | None
    result: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def window_fields(window_kind: str, event_type: str, info: dict[str, Any]) -> dict[str, Any]:
    """The window-type fields of an event (seed 000 "Fields for State Windows" / "Fields for Event
    Windows") from the engine's window details ``info``: state windows carry ``prevState`` and
    ``curState`` when they open, ``curState`` and ``nextState`` when they close; event windows the
    condition that opened (index 0) or closed (index 1) them with the condition columns' values."""
    if window_kind == "state" and event_type in ("WINDOW_OPEN", "WINDOW_CLOSE"):
        if event_type == "WINDOW_OPEN":
            return {"prevState": info.get("prev_state"), "curState": info.get("state")}
        return {"curState": info.get("state"), "nextState": info.get("next_state")}
    if window_kind == "event":
        if event_type == "WINDOW_OPEN" and "open_values" in info:
            return {"triggerCondition": {"conditionIndex": 0, "fieldValue": info["open_values"]}}
        if event_type == "WINDOW_CLOSE" and "close_values" in info:
            return {"triggerCondition": {"conditionIndex": 1, "fieldValue": info["close_values"]}}
    return {}


def event_json(stream_key: str, window_kind: str, e: Event, now_ms: int) -> dict[str, Any]:
    """One event object with the fields its type needs."""
    legacy_type, trigger_type = WINDOW_TYPES.get(window_kind, ("Time", "Interval"))
    wid = window_id(stream_key, e.gkey, e.window_start)
    out: dict[str, Any] = {
        "tableName": e.table_name,
        "eventType": e.event_type,
        "eventTime": now_ms,
        "windowId": wid,
        "windowType": legacy_type,
        "triggerId": wid,
        "triggerType": trigger_type,
        "groupId": str(e.group_id),
        "windowStart": e.window_start,
    }
    if e.event_type == "ON_TIME":  # a scheduled trigger has no window: the trigger time
        del out["windowStart"], out["windowType"], out["windowId"]
        out["triggerTime"] = e.window_start
    if e.event_type in ("WINDOW_CLOSE", "WINDOW_INVALIDATION") and e.window_end is not None:
        out["windowEnd"] = e.window_end
    if e.event_type in ("WINDOW_CLOSE", "ON_TIME") and e.result is not None:
        out["result"] = e.result
    out.update(e.extra)
    return out


def build_messages(
    stream_key: str,
    stream_name: str,
    window_kind: str,
    events: list[Event],
    batch_id: int,
    now_ms: int | None = None,
) -> list[dict[str, Any]]:
    """Messages for one micro-batch's events, at most ``MAX_EVENTS_PER_MESSAGE`` events each, with
    ids stable for (stream, batch)."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    out = []
    for i in range(0, len(events), MAX_EVENTS_PER_MESSAGE):
        chunk = events[i : i + MAX_EVENTS_PER_MESSAGE]
        mid = hashlib.md5(f"{stream_key}|{batch_id}|{i}".encode()).hexdigest()
        out.append(
            {
                "messageId": mid,
                "timestamp": now_ms,
                "streams": [
                    {
                        "streamName": stream_name,
                        "events": [event_json(stream_key, window_kind, e, now_ms) for e in chunk],
                    }
                ],
            }
        )
    return out
