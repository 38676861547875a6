"""``/api/v1/streams/``: list, create (CREATE STREAM SQL), read, PATCH the desired state, drop, the
actions (pause, resume, stop, start, recalculate, drop), and a stream's micro-batch progress,
delivery log and runs.

Staff users see every stream, other users their own (others' answer 404). A stream is answered by
``StreamSerializer`` (``StreamDetailSerializer`` with its redacted spec): the row's columns, what
its spec says (source, target, trigger, window) and, from selectors, its sparkline, lag and the
progress of long work.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_workers.access import redact_json
from spark_workers.errors import SqlError
from spark_workers.runtime.recalc_diff import DIFF_LIMIT
from streams_app import selectors
from streams_app.api.common import (
    PAGE_PARAMS,
    bool_param,
    int_param,
    page_schema,
    paginated,
    parse_time,
    stream_or_404,
    time_param,
)
from streams_app.api.errors import ErrorSerializer
from streams_app.api.sql import SqlInputSerializer
from streams_app.models import Stream, StreamRun
from streams_app.serializers import IsoDateTimeField, StreamSerializer, WorkProgressSerializer
from streams_app.services.access import stream_sql_reveal
from streams_app.services.recalc_jobs import recalc_dry_run, recalc_job_cancel, recalc_job_start
from streams_app.services.stream_control import stream_action, stream_drop, stream_history_cancel
from streams_app.services.streams import StreamExists, stream_create, stream_recalculate

# ---------------------------------------------------------------------- serializers


class StreamDetailSerializer(StreamSerializer):
    """A stream with its spec (the StreamSpec JSON, secrets redacted)."""

    spec = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.ANY)
    def get_spec(self, stream: Stream) -> Any:
        return redact_json(stream.spec)


class RecalculationSerializer(serializers.Serializer):
    windows = serializers.IntegerField(required=False, help_text="windows rewritten (a waited recalculation)")
    job = WorkProgressSerializer(
        required=False, help_text="background / cancel: the job's progress (selectors.recalc_job_progress)"
    )


class DiffInputSerializer(serializers.Serializer):
    start = serializers.JSONField(help_text="range start, epoch ms or ISO 8601")
    end = serializers.JSONField(
        required=False, allow_null=True, help_text="range end (default: the stream's progress)"
    )
    limit = serializers.IntegerField(required=False, default=DIFF_LIMIT, min_value=0, max_value=5000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["start"] = parse_time(attrs["start"], "start")
        attrs["end"] = None if attrs.get("end") in (None, "") else parse_time(attrs["end"], "end")
        if attrs["end"] is not None and attrs["end"] < attrs["start"]:
            raise ValidationError({"end": ["the end is before the start"]})
        return attrs


class DiffRowSerializer(serializers.Serializer):
    change = serializers.ChoiceField(choices=["added", "changed", "removed"])
    table = serializers.CharField(help_text="output subtable (tbname)")
    key = serializers.DictField(help_text="row key after tbname: ts column [, composite key]")
    old = serializers.DictField(allow_null=True, help_text="stored values (physical column names)")
    new = serializers.DictField(allow_null=True, help_text="values the recalculation writes")


class DiffSerializer(serializers.Serializer):
    """What a recalculation would change in its output table (nothing is written)."""

    windows = serializers.IntegerField(help_text="windows (rows, without a window) it would rewrite")
    added = serializers.IntegerField()
    changed = serializers.IntegerField()
    removed = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    rows = DiffRowSerializer(many=True, help_text="the first `limit` changed rows")
    truncated = serializers.BooleanField()


class ActionResultSerializer(StreamSerializer):
    """The stream after an action, with what a recalculation did."""

    # recalculation: context["recalculation"] ({windows}); absent without it

    recalculation = RecalculationSerializer(required=False, help_text="recalculate only")

    def to_representation(self, instance: Stream) -> dict[str, Any]:
        data = super().to_representation(instance)  # a Stream has no recalculation: left out
        recalculation = self.context.get("recalculation")
        if recalculation is not None:
            data["recalculation"] = self.fields["recalculation"].to_representation(recalculation)
        return data


class StreamPatchSerializer(serializers.Serializer):
    desired_state = serializers.ChoiceField(choices=Stream.Desired.choices)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            other = sorted(set(data) - {"desired_state"})
            if other:
                raise ValidationError(
                    {
                        k: [
                            "only desired_state can be changed; to change a stream's SQL, drop it "
                            "and create it again"
                        ]
                        for k in other
                    }
                )
        return super().to_internal_value(data)


class ActionInputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=["pause", "resume", "stop", "start", "recalculate", "cancel", "cancel_history", "drop"],
        help_text="cancel: stop the running background recalculation; cancel_history: end the "
        "FILL_HISTORY catch-up, keeping what it produced and skipping the rest of the snapshot",
    )
    background = serializers.BooleanField(
        required=False,
        default=False,
        help_text="recalculate: run as a background job (progress over /ws/streams/<id>/, cancel)",
    )
    ignore_untreated = serializers.BooleanField(required=False, default=False, help_text="resume/start only")
    start = serializers.JSONField(
        required=False, help_text="recalculate: range start, epoch ms or ISO 8601 (required)"
    )
    end = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="recalculate: range end, epoch ms or ISO 8601 (default: the stream's progress)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["action"] == "recalculate":
            if attrs.get("start") in (None, ""):
                raise ValidationError({"start": ["recalculate needs a start time"]})
            attrs["start"] = parse_time(attrs["start"], "start")
            if attrs.get("end") not in (None, ""):
                attrs["end"] = parse_time(attrs["end"], "end")
                if attrs["end"] < attrs["start"]:
                    raise ValidationError({"end": ["the end is before the start"]})
            else:
                attrs["end"] = None
        return attrs


class ProgressSerializer(serializers.Serializer):
    """One micro-batch's progress."""

    # a StreamProgress row

    batch_id = serializers.IntegerField()
    created_at = IsoDateTimeField()
    phase = serializers.CharField()
    input_rows = serializers.IntegerField()
    output_rows = serializers.IntegerField()
    removed_windows = serializers.IntegerField()
    rows_per_s = serializers.FloatField()
    duration_ms = serializers.FloatField()
    open_windows = serializers.IntegerField()
    state_bytes = serializers.IntegerField()
    watermark_ms = serializers.IntegerField(allow_null=True)
    max_event_ms = serializers.IntegerField(allow_null=True)
    notifications_sent = serializers.IntegerField()
    notifications_failed = serializers.IntegerField()
    expired_rows = serializers.IntegerField()
    recalculated = serializers.IntegerField()


class DeliverySerializer(serializers.Serializer):
    """One notification delivery attempt."""

    # a Delivery row

    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    url = serializers.CharField()
    message_id = serializers.CharField()
    events = serializers.IntegerField()
    ok = serializers.BooleanField()
    latency_ms = serializers.FloatField()
    error = serializers.CharField(allow_blank=True)
    attempt = serializers.IntegerField()


class RunSerializer(serializers.Serializer):
    """One worker attempt to run the stream."""

    # a StreamRun row

    id = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    state = serializers.ChoiceField(choices=StreamRun.State.choices)
    error = serializers.CharField(allow_blank=True)
    restarts = serializers.IntegerField()
    worker = serializers.CharField(allow_blank=True)


# ---------------------------------------------------------------------- views

STATUS_FILTER = [c for c in Stream.Status.values if c != Stream.Status.DROPPED]
ORDERINGS = [o for f in selectors.STREAM_ORDERINGS for o in (f, f"-{f}")]
DESIRED_ACTION = {
    Stream.Desired.RUNNING: "resume",
    Stream.Desired.PAUSED: "pause",
    Stream.Desired.STOPPED: "stop",
}


def _stream_page(streams: list[Stream]) -> Any:
    """A page of streams with their sparklines and running recalculations fetched in one query each."""
    ids = [s.pk for s in streams]
    context = {
        "throughput": selectors.streams_throughput(stream_ids=ids),
        "recalc_jobs": selectors.recalc_jobs_active(stream_ids=ids),
    }
    return StreamSerializer(streams, many=True, context=context).data


class StreamListApi(APIView):
    """List streams (paginated, filtered); create one from SQL (CREATE STREAM ...)."""

    @extend_schema(
        operation_id="v1_streams_list",
        parameters=[
            *PAGE_PARAMS,
            OpenApiParameter(
                "status", str, description=f"comma-separated statuses: {', '.join(STATUS_FILTER)}"
            ),
            OpenApiParameter("db", str, description="streams of, reading from or writing to this database"),
            OpenApiParameter("search", str, description="name contains (any case)"),
            OpenApiParameter("ordering", str, enum=ORDERINGS, description="default name"),
        ],
        responses={200: page_schema("StreamPage", StreamSerializer(many=True)), 400: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        q = request.query_params
        statuses = [x.strip() for x in (q.get("status") or "").split(",") if x.strip()]
        bad = [x for x in statuses if x not in STATUS_FILTER]
        if bad:
            raise ValidationError({"status": [f"unknown status {bad[0]!r}: use {', '.join(STATUS_FILTER)}"]})
        ordering = q.get("ordering") or None
        if ordering is not None and ordering not in ORDERINGS:
            raise ValidationError({"ordering": [f"cannot order by {ordering!r}: use {', '.join(ORDERINGS)}"]})
        qs = selectors.streams_filter(
            selectors.streams_visible(user=request.user),
            status=statuses,
            db=q.get("db") or None,
            search=q.get("search") or None,
            ordering=ordering,
        )
        return paginated(self, request, qs, _stream_page)

    @extend_schema(request=SqlInputSerializer, responses={201: StreamDetailSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = SqlInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            stream = stream_create(
                user=request.user, sql=data.validated_data["sql"], db=data.validated_data.get("db") or None
            )
        except StreamExists:
            return Response(
                {"code": 0, "desc": "stream already exists (IF NOT EXISTS)", "position": None},
                status=status.HTTP_200_OK,
            )
        return Response(StreamDetailSerializer(stream).data, status=status.HTTP_201_CREATED)


class StreamDetailApi(APIView):
    """One stream; PATCH sets its desired state (as the actions do); DELETE drops it (its output
    data stays). A stream's SQL cannot be changed in place: drop it and create it again."""

    @extend_schema(responses=StreamDetailSerializer)
    def get(self, request: Request, stream_id: int) -> Response:
        return Response(StreamDetailSerializer(stream_or_404(request, stream_id)).data)

    @extend_schema(
        request=StreamPatchSerializer,
        responses={200: StreamDetailSerializer, 400: ErrorSerializer},
        description="`desired_state` running = resume, paused = pause, stopped = stop.",
    )
    def patch(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        data = StreamPatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        s = stream_action(stream=s, action=DESIRED_ACTION[data.validated_data["desired_state"]])
        return Response(StreamDetailSerializer(s).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, stream_id: int) -> Response:
        stream_drop(stream=stream_or_404(request, stream_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class StreamSqlRevealApi(APIView):
    """A stream's SQL with its NOTIFY secrets (the inbox key of a NOTIFY URL), for its owner or a
    superuser only (403 for anyone else): the explicit "show" / copy of the stream page; every
    other answer shows the SQL redacted."""

    td_error_status = {SqlError: status.HTTP_403_FORBIDDEN}

    @extend_schema(
        operation_id="v1_streams_sql_reveal",
        request=None,
        responses={
            200: inline_serializer("StreamSqlRevealed", {"sql": serializers.CharField()}),
            403: ErrorSerializer,
        },
    )
    def post(self, request: Request, stream_id: int) -> Response:
        stream = stream_or_404(request, stream_id)
        return Response({"sql": stream_sql_reveal(user=request.user, stream=stream)})


class StreamActionApi(APIView):
    """pause / resume / stop / start / recalculate / drop.

    ``recalculate`` runs ``RECALCULATE STREAM s FROM start [TO end]`` (times as epoch ms or ISO
    8601) and waits for it; the answer carries ``recalculation: {windows}``. With ``background``
    it queues a job and answers at once with ``recalculation: {job}`` (its progress); ``cancel``
    stops the running one before its commit (404 when none). ``cancel_history`` ends a
    FILL_HISTORY catch-up (``stream_history_cancel``: what it wrote stays, the rest of the
    snapshot is skipped; 400 ``0x0200`` when none is under way). ``drop`` is DELETE.
    """

    @extend_schema(
        request=ActionInputSerializer, responses={200: ActionResultSerializer, 400: ErrorSerializer}
    )
    def post(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        data = ActionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        context: dict[str, Any] = {}
        if v["action"] == "drop":
            stream_drop(stream=s)
            s.refresh_from_db()
        elif v["action"] == "recalculate" and v["background"]:
            job = recalc_job_start(stream=s, user=request.user, start=v["start"], end=v["end"])
            context["recalculation"] = {"job": selectors.recalc_job_progress(job=job)}
        elif v["action"] == "recalculate":
            windows = stream_recalculate(stream=s, user=request.user, start=v["start"], end=v["end"])
            context["recalculation"] = {"windows": windows}
            s.refresh_from_db()
        elif v["action"] == "cancel":
            cancelled = recalc_job_cancel(stream=s)
            if cancelled is None:
                raise Http404("no recalculation of this stream is running")
            context["recalculation"] = {"job": selectors.recalc_job_progress(job=cancelled)}
        elif v["action"] == "cancel_history":
            s = stream_history_cancel(stream=s)
        else:
            s = stream_action(stream=s, action=v["action"], ignore_untreated=v["ignore_untreated"])
        return Response(ActionResultSerializer(s, context=context).data)


class StreamRecalcDiffApi(APIView):
    """The output rows a recalculation over ``[start, end]`` would add, change or remove, computed
    without writing (a dry run of ``RECALCULATE STREAM``); at most ``limit`` rows are listed."""

    @extend_schema(request=DiffInputSerializer, responses={200: DiffSerializer, 400: ErrorSerializer})
    def post(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        data = DiffInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        diff = recalc_dry_run(stream=s, user=request.user, start=v["start"], end=v["end"], limit=v["limit"])
        return Response(DiffSerializer(diff).data)


class StreamProgressApi(APIView):
    """Recent micro-batch progress, oldest first (a time series: a plain array, not paginated)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", int, description="the latest n batches (default 300, at most 5000)"),
            OpenApiParameter(
                "since", str, description="only batches recorded after this time (epoch ms or ISO)"
            ),
        ],
        responses=ProgressSerializer(many=True),
    )
    def get(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        batches = selectors.stream_progress_list(
            stream_id=s.pk,
            limit=int_param(request, "limit", 300, 1, 5000),
            since=time_param(request, "since"),
        )
        return Response(ProgressSerializer(batches, many=True).data)


class StreamDeliveriesApi(APIView):
    """The notification delivery log (one row per attempt), newest first, paginated."""

    @extend_schema(
        operation_id="v1_streams_deliveries_list",
        parameters=[*PAGE_PARAMS, OpenApiParameter("ok", bool, description="only (un)successful attempts")],
        responses=page_schema("DeliveryPage", DeliverySerializer(many=True)),
    )
    def get(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        qs = selectors.stream_deliveries(stream_id=s.pk, ok=bool_param(request, "ok"))
        return paginated(self, request, qs, lambda page: DeliverySerializer(page, many=True).data)


class StreamRunsApi(APIView):
    """Run history (worker attempts), newest first, paginated."""

    @extend_schema(
        operation_id="v1_streams_runs_list",
        parameters=PAGE_PARAMS,
        responses=page_schema("RunPage", RunSerializer(many=True)),
    )
    def get(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        qs = selectors.stream_runs(stream_id=s.pk)
        return paginated(self, request, qs, lambda page: RunSerializer(page, many=True).data)
