"""Stream versions: every stream created under a name is the next version of that name
(docs/designer.md, "Versions"); the designer compares and redeploys them."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, QuerySet

from streams_app.models import Stream, StreamVersion


def stream_version_create(
    *,
    stream: Stream,
    created_by: Any = None,
    design: dict[str, Any] | None = None,
    impact: dict[str, Any] | None = None,
) -> StreamVersion:
    """Record the stream's current SQL as the next version of its name (1, 2, ... per
    ``name_key``; the registry calls it for every stream it creates)."""
    last = StreamVersion.objects.filter(name_key=stream.name_key).aggregate(n=Max("number"))["n"] or 0
    return StreamVersion.objects.create(
        name_key=stream.name_key,
        number=last + 1,
        stream=stream,
        sql=stream.sql,
        design=design,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
        impact=impact,
    )


def stream_versions(*, stream: Stream) -> QuerySet[StreamVersion]:
    """Every version of the stream's name, newest first."""
    return (
        StreamVersion.objects.filter(name_key=stream.name_key)
        .select_related("created_by")
        .order_by("-number")
    )
