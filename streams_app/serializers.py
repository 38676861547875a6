"""How a stream and a notification are answered, once for both front doors: the REST API
(``api/streams.py``, ``api/notifications.py``) answers through these serializers, and the
``stream.status`` / ``inbox.notification`` WebSocket messages carry the same serializers' JSON
(``services/stream_control.stream_publish_status``, ``services/notifications.notifications_push``).
Also the output fields every API module shares: ``IsoDateTimeField`` (``datetime.isoformat()``,
``+00:00`` as stored), ``BlankAsNullCharField`` ("" answered as null), ``RedactedSqlField``
(NOTIFY secrets hidden)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from spark_workers.access import redact_secrets
from spark_workers.streams.spec import StreamSpec
from streams_app import selectors
from streams_app.models import Notification, Stream

# ---------------------------------------------------------------------- fields


class IsoDateTimeField(serializers.DateTimeField):
    """A stored time as ``datetime.isoformat()`` (``2024-01-01T00:00:00.123456+00:00``: the
    time zone as stored, not DRF's ``Z``)."""

    def to_representation(self, value: dt.datetime) -> str:
        return value.isoformat()


class BlankAsNullCharField(serializers.CharField):
    """A text column whose blank value is answered as null (``db``, ``spark_ui_url``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def to_representation(self, value: str) -> str | None:  # type: ignore[override]  # null for ""
        return value or None


class RedactedSqlField(serializers.CharField):
    """A statement with its secrets hidden (``spark_workers.access.redact_secrets``: NOTIFY URL
    keys and tokens)."""

    def to_representation(self, value: str) -> str:
        return redact_secrets(value)


# ---------------------------------------------------------------------- streams


class WorkProgressSerializer(serializers.Serializer):
    """Long work of a stream under way (FILL_HISTORY catch-up, background recalculation)."""

    # selectors.stream_work_progress

    phase = serializers.CharField(help_text="history | recalculation")
    fraction = serializers.FloatField(allow_null=True, help_text="0..1, null when not computable")
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label
    rows_done = serializers.IntegerField(allow_null=True)
    rows_total = serializers.IntegerField(allow_null=True)
    rows_per_s = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="snapshot rows done per second since the catch-up began; null before",
    )
    eta_s = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="seconds left at that rate (0 when done); null while no rate is known",
    )
    started_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="when the first history micro-batch / the recalculation began (UTC)",
    )
    job_id = serializers.IntegerField(required=False, help_text="recalculation: the job")
    state = serializers.ChoiceField(
        choices=["queued", "running", "done", "cancelled", "failed"],
        required=False,
        help_text="recalculation: the job's state",
    )


class HistoryCancelledSerializer(serializers.Serializer):
    """How far a FILL_HISTORY catch-up had got when it was cancelled (``Stream.history_cancelled``,
    ``services/stream_control.stream_history_cancel``)."""

    at = serializers.DateTimeField(help_text="when it was cancelled (UTC)")
    rows_done = serializers.IntegerField(allow_null=True, help_text="snapshot rows read before the cut")
    rows_total = serializers.IntegerField(allow_null=True, help_text="rows of the whole snapshot")
    fraction = serializers.FloatField(allow_null=True, help_text="rows_done / rows_total, 0..1")
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label


class StreamCountersSerializer(serializers.Serializer):
    """A stream's running totals."""

    rows_in = serializers.IntegerField()
    windows_out = serializers.IntegerField()
    notifications_sent = serializers.IntegerField()
    notifications_failed = serializers.IntegerField()


class StreamSerializer(serializers.Serializer):
    """A stream: its SQL (NOTIFY secrets redacted), what it reads and writes, its state, counters,
    throughput, lag and the progress of long work."""

    # A Stream row; the computed fields come from selectors. ``throughput`` is
    # ``context["throughput"]`` ({stream id: [rows/s]}, selectors.streams_throughput of a page)
    # and ``context["recalc_jobs"]`` ({stream id: RecalcJob}, selectors.recalc_jobs_active)
    # when given, else one query per stream.

    id = serializers.IntegerField()
    name = serializers.CharField()
    db = serializers.SerializerMethodField(
        help_text="the stream's database; a legacy stream (whose name TDengine keeps outside any "
        "database) is shown with its source table's database (ins_streams.source_db), else its "
        "output's (target_db); null when it has neither"
    )
    syntax = serializers.ChoiceField(choices=Stream.Syntax.choices)
    status = serializers.ChoiceField(choices=Stream.Status.choices)
    desired_state = serializers.ChoiceField(choices=Stream.Desired.choices)
    sql = RedactedSqlField()
    source = serializers.SerializerMethodField()  # type: ignore[assignment]  # named like Field.source
    target = serializers.SerializerMethodField()
    trigger = serializers.SerializerMethodField()
    window = serializers.SerializerMethodField()
    created_at = IsoDateTimeField(allow_null=True)
    last_error = serializers.CharField(allow_blank=True)
    spark_ui_url = BlankAsNullCharField()
    last_progress = serializers.JSONField(allow_null=True)
    worker = serializers.CharField(allow_blank=True)
    counters = StreamCountersSerializer(source="*")
    throughput = serializers.SerializerMethodField(
        help_text="rows/s of the last 60 micro-batches, oldest first (sparkline)"
    )
    lag_ms = serializers.SerializerMethodField(
        help_text="latest event time seen minus the watermark, from the last micro-batch"
    )
    progress = serializers.SerializerMethodField(
        help_text="long work under way (FILL_HISTORY catch-up), else null"
    )
    history_cancelled = HistoryCancelledSerializer(
        allow_null=True,
        help_text="the FILL_HISTORY catch-up was cancelled (the rest of the snapshot was skipped), else null",
    )

    def to_representation(self, instance: Stream) -> dict[str, Any]:
        self._spec = StreamSpec.from_json(instance.spec)  # read once for the fields below
        return super().to_representation(instance)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_db(self, stream: Stream) -> str | None:
        if stream.db:
            return stream.db
        src, out = self._spec.source, self._spec.output
        return (src.db if src and src.db else None) or (out.db if out and out.db else None)

    def get_source(self, stream: Stream) -> str:
        src = self._spec.source
        return f"{src.db}.{src.table}" if src else ""

    def get_target(self, stream: Stream) -> str | None:
        out = self._spec.output
        return f"{out.db}.{out.table}" if out else None

    def get_trigger(self, stream: Stream) -> str:
        return self._spec.options.trigger

    def get_window(self, stream: Stream) -> str:
        return selectors.stream_window_text(spec=self._spec)

    def get_throughput(self, stream: Stream) -> list[float]:
        page: dict[int, list[float]] | None = self.context.get("throughput")
        if page is not None:
            return page.get(stream.pk, [])
        return selectors.stream_throughput(stream_id=stream.pk)

    def get_lag_ms(self, stream: Stream) -> int | None:
        return selectors.stream_lag_ms(stream=stream)

    @extend_schema_field(WorkProgressSerializer(allow_null=True))
    def get_progress(self, stream: Stream) -> dict[str, Any] | None:
        jobs: dict[int, Any] | None = self.context.get("recalc_jobs")
        if jobs is None:
            return selectors.stream_work_progress(stream=stream)
        return selectors.stream_work_progress(stream=stream, job=jobs.get(stream.pk), job_known=True)


def stream_json(stream: Stream) -> dict[str, Any]:
    """``StreamSerializer``'s JSON of ``stream`` as plain dicts (the ``stream.status`` message)."""
    return _plain(StreamSerializer(stream).data)


# ---------------------------------------------------------------------- notifications


class NotificationSerializer(serializers.Serializer):
    """One received event; the ``inbox.notification`` WebSocket message carries the same JSON."""

    # a Notification row

    id = serializers.IntegerField()
    inbox = serializers.CharField(source="inbox.name")
    stream_name = serializers.CharField()
    event_type = serializers.CharField()
    table_name = serializers.CharField(allow_blank=True)
    window_id = serializers.CharField(allow_blank=True)
    window_start = serializers.IntegerField(allow_null=True)
    window_end = serializers.IntegerField(allow_null=True)
    event_time = serializers.IntegerField(allow_null=True)
    message_id = serializers.CharField()
    payload = serializers.JSONField()
    acknowledged = serializers.BooleanField()
    created_at = IsoDateTimeField()
    group_tags = serializers.SerializerMethodField(
        help_text="the tags of the event's group: {tag: value} of its output subtable (tableName), "
        "e.g. the PARTITION BY values; {} when unknown (notify-only stream, other sender)"
    )

    @extend_schema_field(serializers.DictField(child=serializers.JSONField()))
    def get_group_tags(self, n: Notification) -> dict[str, Any]:
        known: dict[selectors.GroupKey, dict[str, Any]] | None = self.context.get("group_tags")
        key = _group_key(n)
        if known is None:
            known = selectors.notification_group_tags(keys=[key])
        return known.get(key, {})


def _group_key(n: Notification) -> selectors.GroupKey:
    return (n.inbox.owner_id, n.stream_name, n.table_name)


class NotificationGroupSerializer(serializers.Serializer):
    """One group of the inbox (``selectors.notification_groups``)."""

    stream_name = serializers.CharField()
    table_name = serializers.CharField(allow_blank=True, help_text="the events' tableName")
    tags = serializers.DictField(child=serializers.JSONField(), help_text="{tag: value}; {} when unknown")
    total = serializers.IntegerField()
    unread = serializers.IntegerField()
    latest_id = serializers.IntegerField()


def notification_group_context(notifications: list[Notification]) -> dict[str, Any]:
    """The serializer context of a page of notifications: their groups' tags, looked up once
    (``selectors.notification_group_tags``)."""
    return {"group_tags": selectors.notification_group_tags(keys=[_group_key(n) for n in notifications])}


def notification_json(n: Notification, *, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """``NotificationSerializer``'s JSON of ``n`` as plain dicts (the ``inbox.notification``
    message); ``context`` as ``notification_group_context`` of the batch ``n`` belongs to."""
    return _plain(NotificationSerializer(n, context=context or {}).data)


def _plain(v: Any) -> Any:
    """A serializer's output with DRF's dict subclasses made plain dicts (the channel layer packs
    messages with msgpack)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v
