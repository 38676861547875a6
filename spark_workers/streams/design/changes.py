"""Changes between two designs of a stream, field by field, and the impact of deploying the new
one over the running stream (``docs/designer.md`` "Impact of a change").
"""

from __future__ import annotations

from typing import Any

from spark_workers.streams.design.document import NODES

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
