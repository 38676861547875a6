"""The OpenAPI schema's grouping: every ``/api/v1/`` operation under the tag of its resource
(drf-spectacular ``POSTPROCESSING_HOOKS``), so Swagger UI at ``/api/docs/`` lists streams,
designer, tables, SQL, notifications, dashboard and authentication apart instead of one list.
"""

from __future__ import annotations

from typing import Any

# first path segment after /api/v1/ -> tag
_SEGMENT_TAG = {
    "streams": "streams",
    "designer": "designer",
    "databases": "tables",
    "imports": "tables",
    "sql": "sql",
    "notifications": "notifications",
    "dashboard": "dashboard",
    "me": "auth",
    "auth": "auth",
}

TAGS = [
    {"name": "streams", "description": "Streams: create, deploy, pause, resume, recalculate, runs."},
    {"name": "designer", "description": "The visual stream designer: compile, validate, preview, drafts."},
    {"name": "tables", "description": "Databases, tables, rows and CSV imports of the lake."},
    {"name": "sql", "description": "TDengine SQL statements, run with the caller's privileges."},
    {"name": "notifications", "description": "The in-app inbox of stream notifications."},
    {"name": "dashboard", "description": "Counters and figures of the dashboard."},
    {"name": "auth", "description": "The signed-in user and API tokens."},
]


def tag_by_resource(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular post-processing hook: set each operation's ``tags`` to its resource's tag
    (``_SEGMENT_TAG`` by the first path segment after ``/api/v1/``; unknown segments keep the
    segment itself). ``result`` is the OpenAPI document (dict); returned changed in place."""
    for path, operations in result.get("paths", {}).items():
        parts = [p for p in path.split("/") if p]
        segment = parts[2] if len(parts) > 2 and parts[:2] == ["api", "v1"] else (parts[0] if parts else "")
        for operation in operations.values():
            if isinstance(operation, dict):
                operation["tags"] = [_SEGMENT_TAG.get(segment, segment)]
    return result
