"""Reads: streams, progress, deliveries, notifications, and the lake's databases and tables."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from spark_workers.sql.spec import StreamSpec
from streams_app.models import Delivery, Notification, Stream, StreamProgress, StreamRun
from streams_app.services.lake import lake_get

SPARKLINE = 60


def streams_visible(*, user: Any) -> QuerySet[Stream]:
    """Live streams a user may see: staff see all, others the ones they own."""
    qs = Stream.objects.exclude(status=Stream.Status.DROPPED)
    if not getattr(user, "is_staff", False):
        qs = qs.filter(owner_id=getattr(user, "pk", None))
    return qs.order_by("name", "id")


def _window_text(spec: StreamSpec) -> str:
    t = spec.trigger or {}
    if t.get("sql"):  # 3.3.7 triggers keep their clause as written
        return str(t["sql"])
    if t.get("type") == "interval":
        text = f"INTERVAL({t.get('interval')}{', ' + t['offset'] if t.get('offset') else ''})"
        if t.get("sliding"):
            text += f" SLIDING({t['sliding']})"
        return text
    return str(t.get("type", "")).upper()


def stream_payload(*, stream: Stream, throughput: list[float] | None = None) -> dict[str, Any]:
    """The JSON the UI and API show for a stream."""
    spec = StreamSpec.from_json(stream.spec)
    return {
        "id": stream.pk,
        "name": stream.name,
        "db": stream.db or None,
        "syntax": stream.syntax,
        "status": stream.status,
        "desired_state": stream.desired_state,
        "sql": stream.sql,
        "source": f"{spec.source.db}.{spec.source.table}" if spec.source else "",
        "target": f"{spec.output.db}.{spec.output.table}" if spec.output else None,
        "trigger": spec.options.trigger,
        "window": _window_text(spec),
        "created_at": stream.created_at.isoformat() if stream.created_at else None,
        "last_error": stream.last_error,
        "spark_ui_url": stream.spark_ui_url or None,
        "last_progress": stream.last_progress,
        "worker": stream.worker,
        "counters": {
            "rows_in": stream.rows_in,
            "windows_out": stream.windows_out,
            "notifications_sent": stream.notifications_sent,
            "notifications_failed": stream.notifications_failed,
        },
        "throughput": throughput if throughput is not None else stream_throughput(stream_id=stream.pk),
    }


def stream_throughput(*, stream_id: int, n: int = SPARKLINE) -> list[float]:
    """Rows/s of the last ``n`` micro-batches, oldest first (sparkline)."""
    vals = list(
        StreamProgress.objects.filter(stream_id=stream_id)
        .order_by("-id")
        .values_list("rows_per_s", flat=True)[:n]
    )
    return list(reversed(vals))


def stream_progress_list(*, stream_id: int, limit: int = 300) -> list[dict[str, Any]]:
    """Recent micro-batch progress, oldest first."""
    rows = list(StreamProgress.objects.filter(stream_id=stream_id).order_by("-id")[:limit])
    rows.reverse()
    return [progress_payload(p) for p in rows]


def progress_payload(p: StreamProgress) -> dict[str, Any]:
    return {
        "batch_id": p.batch_id,
        "created_at": p.created_at.isoformat(),
        "phase": p.phase,
        "input_rows": p.input_rows,
        "output_rows": p.output_rows,
        "removed_windows": p.removed_windows,
        "rows_per_s": p.rows_per_s,
        "duration_ms": p.duration_ms,
        "open_windows": p.open_windows,
        "state_bytes": p.state_bytes,
        "watermark_ms": p.watermark_ms,
        "max_event_ms": p.max_event_ms,
        "notifications_sent": p.notifications_sent,
        "notifications_failed": p.notifications_failed,
        "expired_rows": p.expired_rows,
        "recalculated": p.recalculated,
    }


def stream_deliveries(*, stream_id: int, limit: int = 100) -> QuerySet[Delivery]:
    return Delivery.objects.filter(stream_id=stream_id).order_by("-id")[:limit]


def stream_runs(*, stream_id: int, limit: int = 50) -> QuerySet[StreamRun]:
    return StreamRun.objects.filter(stream_id=stream_id).order_by("-started_at", "-id")[:limit]


def notifications_visible(*, user: Any) -> QuerySet[Notification]:
    """Notifications of the inboxes a user sees (own inboxes; staff: all)."""
    qs = Notification.objects.select_related("inbox")
    if not getattr(user, "is_staff", False):
        qs = qs.filter(inbox__owner_id=getattr(user, "pk", None))
    return qs.order_by("-id")


def notification_unread_count(*, user_id: int) -> int:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return 0
    return notifications_visible(user=user).filter(acknowledged=False).count()


def notification_payload(n: Notification) -> dict[str, Any]:
    return {
        "id": n.pk,
        "inbox": n.inbox.name,
        "stream_name": n.stream_name,
        "event_type": n.event_type,
        "table_name": n.table_name,
        "window_id": n.window_id,
        "window_start": n.window_start,
        "window_end": n.window_end,
        "event_time": n.event_time,
        "message_id": n.message_id,
        "payload": n.payload,
        "acknowledged": n.acknowledged,
        "created_at": n.created_at.isoformat(),
    }


def notifications_filter(
    qs: QuerySet[Notification], *, stream: str | None, event_type: str | None, acknowledged: bool | None
) -> QuerySet[Notification]:
    if stream:
        qs = qs.filter(stream_name=stream)
    if event_type:
        qs = qs.filter(event_type=event_type)
    if acknowledged is not None:
        qs = qs.filter(acknowledged=acknowledged)
    return qs


# ---------------------------------------------------------------------- the lake


def database_list() -> list[dict[str, Any]]:
    lake = lake_get()
    out = []
    for db, created in lake.catalog.databases():
        out.append(
            {
                "name": db.name,
                "precision": db.precision,
                "created_ms": created,
                "ntables": len(lake.catalog.tables(db.name, kinds=("sub", "normal"))),
            }
        )
    return out


def table_list(*, db: str, kind: str | None = None, stable: str | None = None) -> list[dict[str, Any]]:
    lake = lake_get()
    lake.catalog.require_database(db)
    kinds = (kind,) if kind else ("super", "sub", "normal")
    return [
        {"name": n, "kind": k, "stable": s}
        for n, k, s, _c in lake.catalog.tables(db, kinds=kinds, stable=stable)
    ]


def table_detail(*, db: str, name: str) -> dict[str, Any]:
    t = lake_get().catalog.require_table(db, name)

    def field(c: Any) -> dict[str, Any]:
        return {"name": c.name, "type": c.type.sql, "length": c.type.byte_length}

    return {
        "name": t.name,
        "db": t.db,
        "kind": t.kind,
        "stable": t.stable,
        "columns": [field(c) for c in t.columns],
        "tags": [field(c) for c in t.tags],
        "tag_values": t.tag_values,
    }


def streams_by_status(*, user: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in streams_visible(user=user).values_list("status", flat=True):
        out[s] = out.get(s, 0) + 1
    return out


def stream_get(*, user: Any, stream_id: int) -> Stream | None:
    return streams_visible(user=user).filter(pk=stream_id).first()


def q_owner(user: Any) -> Q:
    return Q() if getattr(user, "is_staff", False) else Q(owner_id=getattr(user, "pk", None))
