"""``StreamRegistry`` over the Stream model: what CREATE/DROP/PAUSE/RESUME/START/STOP STREAM and
SHOW STREAMS do to the metadata DB and to the workers."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import OuterRef, Subquery, Sum

from spark_workers.streams.registry import StreamInfo
from spark_workers.streams.spec import StreamSpec
from streams_app.models import Stream, StreamProgress, StreamRun
from streams_app.services.stream_control import stream_action, stream_drop, stream_enqueue
from streams_app.services.versions import stream_version_create


def name_key(name: str, db: str | None) -> str:
    """Lower-case identity of a stream: legacy stream names are global, 3.3.7 names per database."""
    return f"{db}.{name}".lower() if db else name.lower()


def live_streams():  # type: ignore[no-untyped-def]
    return Stream.objects.exclude(status=Stream.Status.DROPPED).select_related("owner")


def _ms(t: Any) -> int | None:
    return int(t.timestamp() * 1000) if t is not None else None


def _with_task(qs: Any) -> Any:
    """The streams with their last run's start and their recalculated windows (ins_stream_tasks),
    fetched in the same query."""
    last_run = (
        StreamRun.objects.filter(stream=OuterRef("pk")).order_by("-started_at").values("started_at")[:1]
    )
    recalculated = (
        StreamProgress.objects.filter(stream=OuterRef("pk"))
        .values("stream")
        .annotate(n=Sum("recalculated"))
        .values("n")
    )
    return qs.annotate(task_started=Subquery(last_run), task_recalculated=Subquery(recalculated))


def _info(s: Stream) -> StreamInfo:
    """``s`` comes from ``_with_task``."""
    return StreamInfo(
        s.name,
        s.db or None,
        s.sql,
        s.status,
        StreamSpec.from_json(s.spec),
        int(s.created_at.timestamp() * 1000) if s.created_at else 0,
        s.last_error,
        task={
            "key": s.key,
            "worker": s.worker,
            "started_ms": _ms(getattr(s, "task_started", None)),
            "heartbeat_ms": _ms(s.heartbeat_at),
            "processed_version": s.processed_version,
            "last_batch_id": s.last_batch_id,
            "rows_in": s.rows_in,
            "rows_out": s.windows_out,
            "recalculated": getattr(s, "task_recalculated", None) or 0,
            "notifications_sent": s.notifications_sent,
            "notifications_failed": s.notifications_failed,
        },
        owner=s.owner.username if s.owner is not None else None,
        compiled=s.compiled,
    )


class DjangoStreamRegistry:
    """Stream registry backed by ``Stream`` rows; starts work through Celery on commit.

    ``created`` holds the rows this registry created, in order (``services.streams.stream_create``
    answers the new stream from it)."""

    def __init__(self, user: Any | None = None) -> None:
        self.user = user if getattr(user, "is_authenticated", False) else None
        self.created: list[Stream] = []

    def _get(self, name: str, db: str | None) -> Stream | None:
        return live_streams().filter(name_key=name_key(name, db)).first()

    def get(self, name: str, db: str | None) -> StreamInfo | None:
        s = _with_task(live_streams().filter(name_key=name_key(name, db))).first()
        return _info(s) if s else None

    def create(
        self,
        spec: StreamSpec,
        *,
        compiled: dict[str, Any],
        start_version: int,
        history_version: int | None,
        owner: str | None = None,
    ) -> None:
        """Register a stream owned by this registry's user (``owner`` names the same user) with
        its compiled form, which is what workers run."""
        with transaction.atomic():
            s = Stream.objects.create(
                name=spec.name,
                name_key=name_key(spec.name, spec.db),
                db=spec.db or "",
                key=Stream.new_key(),
                syntax=spec.syntax,
                sql=spec.sql,
                spec=spec.to_json(),
                compiled=compiled,
                start_version=start_version,
                history_version=history_version,
                owner=self.user,
            )
            # every created stream starts a version of its name (docs/designer.md, versions)
            stream_version_create(stream=s, created_by=self.user)
            self.created.append(s)
            transaction.on_commit(lambda: stream_enqueue(stream_id=s.pk))

    def drop(self, name: str, db: str | None) -> None:
        s = self._get(name, db)
        if s is not None:
            stream_drop(stream=s)

    def command(self, name: str, db: str | None, action: str, *, ignore_untreated: bool = False) -> None:
        s = self._get(name, db)
        if s is not None:
            stream_action(stream=s, action=action, ignore_untreated=ignore_untreated)

    def list(self, db: str | None = None) -> list[StreamInfo]:
        return [_info(s) for s in _with_task(live_streams()).order_by("name")]
