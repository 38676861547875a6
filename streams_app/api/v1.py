"""REST API ``/api/v1/``: streams, SQL, databases and tables (with row ingestion), imports,
notifications, the dashboard and token authentication.

Views parse input, call one service or selector, and serialize the answer (STYLE.md rule 1).
Session and token authentication; staff users see every stream, inbox and import, other users
their own. Lists are paginated with ``?limit=&offset=`` (default 50, at most 500) and answer
``{count, next, previous, results}``; time series (progress) are plain arrays.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_workers.access import redact_json
from spark_workers.errors import CatalogError, SqlError, TdError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse
from spark_workers.timestamps import parse_literal
from streams_app import selectors
from streams_app.api.authentication import cooloff_seconds, is_locked_out, lockout_message
from streams_app.api.parsers import BoundedJSONParser
from streams_app.models import ImportJob, Stream
from streams_app.services import notifications as notif_services
from streams_app.services.api_tokens import api_token_create
from streams_app.services.ingest import (
    DEFAULT_NULL_VALUES,
    IngestError,
    import_rows,
    rows_from_csv,
    rows_from_json,
)
from streams_app.services.sql import error_position, sql_execute, sql_execute_rest, sql_validate
from streams_app.services.streams import stream_action, stream_drop

# ---------------------------------------------------------------------- pagination and parameters


class ApiPagination(LimitOffsetPagination):
    """``?limit=&offset=`` -> ``{count, next, previous, results}``."""

    default_limit = 50
    max_limit = 500


PAGE_PARAMS = [
    OpenApiParameter("limit", int, description="page size (default 50, at most 500)"),
    OpenApiParameter("offset", int, description="index of the first result (default 0)"),
]


def page_of(name: str, child: serializers.Serializer) -> serializers.Serializer:
    """Schema of a page: ``{count, next, previous, results: [child]}``."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": child,
        },
    )


def _page(view: APIView, request: Request, qs: Any, render: Any) -> Response:
    pager = ApiPagination()
    page: list[Any] = pager.paginate_queryset(qs, request, view=view) or []
    return pager.get_paginated_response(render(page))


def _bool_param(request: Request, name: str) -> bool | None:
    """``true/false/1/0/yes/no`` (any case); absent or empty = None; else 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    low = raw.strip().lower()
    if low in ("1", "true", "yes"):
        return True
    if low in ("0", "false", "no"):
        return False
    raise ValidationError({name: [f"{raw!r} is not a boolean: use true or false"]})


def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise ValidationError({name: [f"{raw!r} is not an integer"]}) from None
    if not lo <= v <= hi:
        raise ValidationError({name: [f"{v} is out of range [{lo}, {hi}]"]})
    return v


def parse_time(raw: Any, what: str) -> dt.datetime:
    """Integer epoch milliseconds or an ISO 8601 timestamp (no zone: ``TDWEB_TIMEZONE``) -> an
    aware UTC datetime; raises ``ValidationError`` naming ``what``."""
    text = str(raw).strip()
    try:
        if text.lstrip("-").isdigit():
            us = int(text) * 1000
        else:
            us = parse_literal(text, "ns", settings.TDWEB_TIMEZONE) // 1000
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=us)
    except (SqlError, OverflowError, ValueError):
        raise ValidationError(
            {what: [f"{raw!r} is not a time: use epoch milliseconds or 'YYYY-MM-DD[THH:MM:SS[.fff]][Z]'"]}
        ) from None


def _time_param(request: Request, name: str) -> dt.datetime | None:
    raw = request.query_params.get(name)
    return None if raw in (None, "") else parse_time(raw, name)


# ---------------------------------------------------------------------- serializers (schema)


class ErrorSerializer(serializers.Serializer):
    code = serializers.IntegerField()
    desc = serializers.CharField()
    position = inline_serializer(
        "SqlPosition",
        {
            "offset": serializers.IntegerField(),
            "line": serializers.IntegerField(),
            "column": serializers.IntegerField(),
        },
        allow_null=True,
    )


class ProgressSerializer(serializers.Serializer):
    batch_id = serializers.IntegerField()
    created_at = serializers.CharField()
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


class WorkProgressSerializer(serializers.Serializer):
    phase = serializers.CharField(help_text="history")
    fraction = serializers.FloatField(allow_null=True, help_text="0..1, null when not computable")
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label
    rows_done = serializers.IntegerField(allow_null=True)
    rows_total = serializers.IntegerField(allow_null=True)


class StreamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    db = serializers.CharField(allow_null=True)
    syntax = serializers.CharField()
    status = serializers.CharField()
    desired_state = serializers.CharField()
    sql = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.source
    target = serializers.CharField(allow_null=True)
    trigger = serializers.CharField()
    window = serializers.CharField()
    created_at = serializers.CharField(allow_null=True)
    last_error = serializers.CharField(allow_blank=True)
    spark_ui_url = serializers.CharField(allow_null=True)
    last_progress = serializers.JSONField(allow_null=True)
    worker = serializers.CharField(allow_blank=True)
    counters = serializers.DictField(child=serializers.IntegerField())
    throughput = serializers.ListField(
        child=serializers.FloatField(),
        help_text="rows/s of the last 60 micro-batches, oldest first (sparkline)",
    )
    lag_ms = serializers.IntegerField(
        allow_null=True, help_text="latest event time seen minus the watermark, from the last micro-batch"
    )
    progress = WorkProgressSerializer(
        allow_null=True, help_text="long work under way (FILL_HISTORY catch-up), else null"
    )


class StreamDetailSerializer(StreamSerializer):
    spec = serializers.JSONField()


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


class SqlInputSerializer(serializers.Serializer):
    sql = serializers.CharField(trim_whitespace=False)
    db = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class ActionInputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["pause", "resume", "stop", "start", "recalculate", "drop"])
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


class ActionResultSerializer(StreamSerializer):
    recalculation = inline_serializer(
        "Recalculation",
        {"windows": serializers.IntegerField(help_text="windows rewritten")},
        required=False,
        help_text="recalculate only",
    )


class DeliverySerializer(serializers.Serializer):
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
    id = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    state = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    restarts = serializers.IntegerField()
    worker = serializers.CharField(allow_blank=True)


class NotificationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    inbox = serializers.CharField()
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
    created_at = serializers.CharField()


class FieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    length = serializers.IntegerField()


class TableDetailSerializer(serializers.Serializer):
    name = serializers.CharField()
    db = serializers.CharField()
    kind = serializers.CharField()
    stable = serializers.CharField(allow_null=True)
    columns = FieldSerializer(many=True)
    tags = FieldSerializer(many=True)
    tag_values = serializers.JSONField()


class TableEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    stable = serializers.CharField(allow_null=True)


class DatabaseSerializer(serializers.Serializer):
    name = serializers.CharField()
    precision = serializers.CharField()
    created_ms = serializers.IntegerField()
    ntables = serializers.IntegerField()


class RowsSerializer(serializers.Serializer):
    columns = serializers.ListField(child=serializers.CharField())
    types = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.ListField(child=serializers.JSONField()))


ROWS_JSON = inline_serializer(
    "RowsInput",
    {
        "rows": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="[{column: value}]; or give columns + data. A supertable needs a tbname column "
            "(and its tag columns to create new subtables).",
        ),
        "columns": serializers.ListField(child=serializers.CharField(), required=False),
        "data": serializers.ListField(
            child=serializers.ListField(child=serializers.JSONField()),
            required=False,
            help_text="rows as lists of values in the order of columns",
        ),
    },
)
ROWS_FILE = inline_serializer(
    "RowsUpload",
    {
        "file": serializers.FileField(
            help_text="CSV (UTF-8, optionally .gz): a header line of column names, then one row per "
            "line; timestamps ISO 8601 or epoch ms"
        ),
        "null_values": serializers.CharField(
            required=False,
            help_text="comma-separated cells read as NULL besides empty ones (default NULL,NA)",
        ),
    },
)


class ImportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    db = serializers.CharField()
    table = serializers.CharField()
    filename = serializers.CharField(allow_blank=True)
    state = serializers.ChoiceField(choices=ImportJob.State.choices)
    rows_total = serializers.IntegerField(allow_null=True)
    rows_done = serializers.IntegerField()
    fraction = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.CharField()
    updated_at = serializers.CharField()


class IngestErrorSerializer(serializers.Serializer):
    code = serializers.IntegerField()
    desc = serializers.CharField(help_text="e.g. \"row 17, column pm25: 'abc' is not a DOUBLE\"")
    row = serializers.IntegerField(allow_null=True, help_text="1-based data row (CSV header not counted)")
    column = serializers.CharField(allow_null=True)
    import_id = serializers.IntegerField(allow_null=True, help_text="the failed import job, if recorded")


class DashboardSerializer(serializers.Serializer):
    streams_total = serializers.IntegerField()
    streams_by_status = serializers.DictField(child=serializers.IntegerField())
    throughput_rows_per_s = serializers.FloatField()
    failures = inline_serializer(
        "DashboardFailures",
        {
            "streams_failed": serializers.IntegerField(),
            "recent_errors": inline_serializer(
                "DashboardError",
                {
                    "stream_id": serializers.IntegerField(),
                    "name": serializers.CharField(),
                    "error": serializers.CharField(),
                    "at": serializers.CharField(),
                },
                many=True,
            ),
        },
    )
    notifications = inline_serializer(
        "DashboardNotifications",
        {
            "sent": serializers.IntegerField(),
            "failed": serializers.IntegerField(),
            "delivery_rate": serializers.FloatField(allow_null=True),
            "last_24h": inline_serializer(
                "DashboardDeliveries24h",
                {
                    "attempts": serializers.IntegerField(),
                    "ok": serializers.IntegerField(),
                    "failed": serializers.IntegerField(),
                    "delivery_rate": serializers.FloatField(allow_null=True),
                },
            ),
        },
    )
    inbox_unread = serializers.IntegerField()


# TDengine's REST answer: ``{code: 0, column_meta, data, rows}`` or ``{code, desc}`` (inline: a
# serializer class may not declare a ``data`` field, it would hide ``Serializer.data``)
SQL_ANSWER = inline_serializer(
    "SqlAnswer",
    {
        "code": serializers.IntegerField(),
        "desc": serializers.CharField(required=False),
        "column_meta": serializers.ListField(
            child=serializers.ListField(child=serializers.JSONField()),
            required=False,
            help_text="[name, type, length] per column",
        ),
        "data": serializers.ListField(
            child=serializers.ListField(child=serializers.JSONField()), required=False
        ),
        "rows": serializers.IntegerField(required=False),
    },
)


def td_error(e: TdError, http_status: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"code": e.code, "desc": e.desc, "position": error_position(e)}, status=http_status)


def _stream_or_404(request: Request, stream_id: int) -> Stream:
    stream = selectors.stream_get(user=request.user, stream_id=stream_id)
    if stream is None:
        raise Http404("no such stream")
    return stream


# ---------------------------------------------------------------------- streams

STATUS_FILTER = [c for c in Stream.Status.values if c != Stream.Status.DROPPED]
ORDERINGS = [o for f in selectors.STREAM_ORDERINGS for o in (f, f"-{f}")]


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
        responses={200: page_of("StreamPage", StreamSerializer(many=True)), 400: OpenApiTypes.OBJECT},
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
        return _page(self, request, qs, lambda page: selectors.stream_payloads(streams=page))

    @extend_schema(request=SqlInputSerializer, responses={201: StreamDetailSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = SqlInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        sql, db = data.validated_data["sql"], data.validated_data.get("db") or None
        try:
            stmts = parse(sql)
            if len(stmts) != 1 or not isinstance(stmts[0], ast.CreateStreamLegacy | ast.CreateStream337):
                raise SqlError("expected exactly one CREATE STREAM statement", sql=sql, offset=0)
            stmt = stmts[0]
            last_id = Stream.objects.order_by("-id").values_list("pk", flat=True).first() or 0
            sql_execute(sql=sql, db=db, user=request.user)
        except TdError as e:
            return td_error(e)
        # only a stream this request created (IF NOT EXISTS on an existing one creates nothing)
        stream = (
            selectors.streams_visible(user=request.user)
            .filter(name__iexact=stmt.name, pk__gt=last_id)
            .order_by("-id")
            .first()
        )
        if stream is None:
            return Response(
                {"code": 0, "desc": "stream already exists (IF NOT EXISTS)", "position": None},
                status=status.HTTP_200_OK,
            )
        return Response(
            {**selectors.stream_payload(stream=stream), "spec": redact_json(stream.spec)},
            status=status.HTTP_201_CREATED,
        )


DESIRED_ACTION = {
    Stream.Desired.RUNNING: "resume",
    Stream.Desired.PAUSED: "pause",
    Stream.Desired.STOPPED: "stop",
}


class StreamDetailApi(APIView):
    """One stream; PATCH sets its desired state (as the actions do); DELETE drops it (its output
    data stays). A stream's SQL cannot be changed in place: drop it and create it again."""

    @extend_schema(responses=StreamDetailSerializer)
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        return Response({**selectors.stream_payload(stream=s), "spec": redact_json(s.spec)})

    @extend_schema(
        request=StreamPatchSerializer,
        responses={200: StreamDetailSerializer, 400: ErrorSerializer},
        description="`desired_state` running = resume, paused = pause, stopped = stop.",
    )
    def patch(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        data = StreamPatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            s = stream_action(stream=s, action=DESIRED_ACTION[data.validated_data["desired_state"]])
        except CatalogError as e:
            return td_error(e)
        return Response({**selectors.stream_payload(stream=s), "spec": redact_json(s.spec)})

    @extend_schema(responses={204: None})
    def delete(self, request: Request, stream_id: int) -> Response:
        stream_drop(stream=_stream_or_404(request, stream_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _ts_literal(t: dt.datetime) -> str:
    return "'" + t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z'"


class StreamActionApi(APIView):
    """pause / resume / stop / start / recalculate / drop.

    ``recalculate`` runs ``RECALCULATE STREAM s FROM start [TO end]`` (times as epoch ms or ISO
    8601) and waits for it; the answer carries ``recalculation: {windows}``. ``drop`` is DELETE.
    """

    @extend_schema(
        request=ActionInputSerializer, responses={200: ActionResultSerializer, 400: ErrorSerializer}
    )
    def post(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        data = ActionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action = data.validated_data["action"]
        extra: dict[str, Any] = {}
        try:
            if action == "drop":
                stream_drop(stream=s)
                s.refresh_from_db()
            elif action == "recalculate":
                name = (f"`{s.db}`." if s.db else "") + f"`{s.name}`"
                sql = f"RECALCULATE STREAM {name} FROM {_ts_literal(data.validated_data['start'])}"
                if data.validated_data["end"] is not None:
                    sql += f" TO {_ts_literal(data.validated_data['end'])}"
                res = sql_execute(sql=sql, user=request.user)
                extra["recalculation"] = {"windows": int(res.affected_rows or 0)}
                s.refresh_from_db()
            else:
                s = stream_action(
                    stream=s, action=action, ignore_untreated=data.validated_data["ignore_untreated"]
                )
        except TdError as e:
            return td_error(e)
        return Response({**selectors.stream_payload(stream=s), **extra})


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
        s = _stream_or_404(request, stream_id)
        limit = _int_param(request, "limit", 300, 1, 5000)
        since = _time_param(request, "since")
        return Response(selectors.stream_progress_list(stream_id=s.pk, limit=limit, since=since))


class StreamDeliveriesApi(APIView):
    """The notification delivery log (one row per attempt), newest first, paginated."""

    @extend_schema(
        operation_id="v1_streams_deliveries_list",
        parameters=[*PAGE_PARAMS, OpenApiParameter("ok", bool, description="only (un)successful attempts")],
        responses=page_of("DeliveryPage", DeliverySerializer(many=True)),
    )
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        qs = selectors.stream_deliveries(stream_id=s.pk, ok=_bool_param(request, "ok"))
        return _page(self, request, qs, lambda page: DeliverySerializer(page, many=True).data)


class StreamRunsApi(APIView):
    """Run history (worker attempts), newest first, paginated."""

    @extend_schema(
        operation_id="v1_streams_runs_list",
        parameters=PAGE_PARAMS,
        responses=page_of("RunPage", RunSerializer(many=True)),
    )
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        qs = selectors.stream_runs(stream_id=s.pk)
        return _page(self, request, qs, lambda page: RunSerializer(page, many=True).data)


class DashboardApi(APIView):
    """Streams by status, total throughput, failures, notification delivery rate, unread inbox
    (over the streams and inboxes the user sees)."""

    @extend_schema(responses=DashboardSerializer)
    def get(self, request: Request) -> Response:
        return Response(selectors.dashboard_get(user=request.user))


# ---------------------------------------------------------------------- SQL


class SqlValidateApi(APIView):
    """Parse and check a statement without running it (errors carry their position)."""

    @extend_schema(
        request=SqlInputSerializer,
        responses=inline_serializer(
            "SqlValidation",
            {
                "ok": serializers.BooleanField(),
                "statement": serializers.CharField(required=False),
                "code": serializers.IntegerField(required=False),
                "desc": serializers.CharField(required=False),
                "position": serializers.JSONField(required=False),
            },
        ),
    )
    def post(self, request: Request) -> Response:
        data = SqlInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            sql_validate(sql=data.validated_data["sql"], db=data.validated_data.get("db") or None)
        )


class SqlExecuteApi(APIView):
    """Run SQL (the console); answers like TDengine's REST protocol."""

    @extend_schema(request=SqlInputSerializer, responses=SQL_ANSWER)
    def post(self, request: Request) -> Response:
        data = SqlInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            sql_execute_rest(
                sql=data.validated_data["sql"], db=data.validated_data.get("db") or None, user=request.user
            )
        )


# ---------------------------------------------------------------------- databases and tables


class DatabaseListApi(APIView):
    @extend_schema(responses=DatabaseSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(selectors.database_list(user=request.user))


class TableListApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("kind", str), OpenApiParameter("stable", str)],
        responses=TableEntrySerializer(many=True),
    )
    def get(self, request: Request, db: str) -> Response:
        try:
            return Response(
                selectors.table_list(
                    user=request.user,
                    db=db,
                    kind=request.query_params.get("kind") or None,
                    stable=request.query_params.get("stable") or None,
                )
            )
        except TdError as e:
            return td_error(e, status.HTTP_404_NOT_FOUND)


class TableDetailApi(APIView):
    @extend_schema(responses=TableDetailSerializer)
    def get(self, request: Request, db: str, name: str) -> Response:
        try:
            return Response(selectors.table_detail(user=request.user, db=db, name=name))
        except TdError as e:
            return td_error(e, status.HTTP_404_NOT_FOUND)


class TableRowsApi(APIView):
    """GET: latest rows of a table (optionally in a time range), newest last.
    POST: write rows (JSON) or a CSV file (multipart ``file``) as an import job."""

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", int, description="the latest n rows (default 200, at most 10000)"),
            OpenApiParameter("start", str, description="ts >= start (a timestamp literal)"),
            OpenApiParameter("end", str, description="ts <= end"),
        ],
        responses={200: RowsSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request, db: str, name: str) -> Response:
        limit = _int_param(request, "limit", 200, 1, 10_000)
        try:
            selectors.table_detail(user=request.user, db=db, name=name)
        except TdError as e:
            return td_error(e, status.HTTP_404_NOT_FOUND)
        try:
            res = selectors.table_rows(
                user=request.user,
                db=db,
                name=name,
                start=request.query_params.get("start") or None,
                end=request.query_params.get("end") or None,
                limit=limit,
            )
        except TdError as e:
            return td_error(e)
        rest = res.to_rest(settings.TDWEB_TIMEZONE)
        return Response(
            {
                "columns": [c[0] for c in rest["column_meta"]],
                "types": [c[1] for c in rest["column_meta"]],
                "rows": rest["data"],
            }
        )

    @extend_schema(
        operation_id="v1_databases_tables_rows_create",
        request={"application/json": ROWS_JSON, "multipart/form-data": ROWS_FILE},
        responses={201: ImportSerializer, 400: IngestErrorSerializer, 404: ErrorSerializer},
        description=(
            "Rows are checked like INSERT values, all before anything is written (a bad value "
            "writes nothing and answers 400 naming its row and column), then written in chunks "
            "through the INSERT write path; the answer is the finished import job. A subtable or "
            "normal table takes its columns; a supertable needs a `tbname` column (and tag columns "
            "to create new subtables). Timestamps: ISO 8601 or epoch milliseconds."
        ),
    )
    def post(self, request: Request, db: str, name: str) -> Response:
        upload = request.FILES.get("file")
        try:
            if upload is not None:
                nulls = request.data.get("null_values") if isinstance(request.data, dict) else None
                columns, rows = rows_from_csv(
                    upload.read(),
                    filename=upload.name or "",
                    null_values=DEFAULT_NULL_VALUES if nulls is None else str(nulls).split(","),
                )
            else:
                columns, rows = rows_from_json(request.data)
            job = import_rows(
                user=request.user,
                db=db,
                table=name,
                columns=columns,
                rows=rows,
                filename=(upload.name or "") if upload is not None else "",
            )
        except IngestError as e:
            return Response(
                {"code": e.code, "desc": e.desc, "row": e.row, "column": e.column, "import_id": e.import_id},
                status=status.HTTP_400_BAD_REQUEST,
            )
        except CatalogError as e:
            return td_error(e, status.HTTP_404_NOT_FOUND)
        except TdError as e:
            return td_error(e)
        return Response(selectors.import_payload(job), status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------------- imports


class ImportListApi(APIView):
    """Import jobs (own; staff: all), newest first, paginated."""

    @extend_schema(
        operation_id="v1_imports_list",
        parameters=[*PAGE_PARAMS, OpenApiParameter("state", str, enum=ImportJob.State.values)],
        responses=page_of("ImportPage", ImportSerializer(many=True)),
    )
    def get(self, request: Request) -> Response:
        qs = selectors.imports_visible(user=request.user)
        state = request.query_params.get("state")
        if state:
            if state not in ImportJob.State.values:
                raise ValidationError(
                    {"state": [f"unknown state {state!r}: use {', '.join(ImportJob.State.values)}"]}
                )
            qs = qs.filter(state=state)
        return _page(self, request, qs, lambda page: [selectors.import_payload(j) for j in page])


class ImportDetailApi(APIView):
    """One import job and its progress (``rows_done`` of ``rows_total``)."""

    @extend_schema(responses=ImportSerializer)
    def get(self, request: Request, import_id: int) -> Response:
        job = get_object_or_404(selectors.imports_visible(user=request.user), pk=import_id)
        return Response(selectors.import_payload(job))


# ---------------------------------------------------------------------- token authentication


class AuthTokenApi(APIView):
    """Exchange a username and password for a new API token (``Authorization: Token <key>``).

    Every call creates a token; its key is in this answer only (the server keeps its SHA-256).
    A user's tokens stay valid until their password changes. Repeated failed passwords of one user
    name from one address are refused for a while without a check (HTTP 429)."""

    authentication_classes = ()
    permission_classes = ()
    parser_classes = (FormParser, MultiPartParser, BoundedJSONParser)
    renderer_classes = (JSONRenderer,)

    @extend_schema(
        operation_id="v1_auth_token_create",
        request=AuthTokenSerializer,
        responses={
            200: inline_serializer("AuthToken", {"token": serializers.CharField()}),
            400: OpenApiTypes.OBJECT,
            429: OpenApiTypes.OBJECT,
        },
        auth=[],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # the Django request: django-axes marks a refused check on it (request.axes_locked_out)
        data = AuthTokenSerializer(data=request.data, context={"request": request._request})
        valid = data.is_valid()
        if is_locked_out(request._request):
            return Response(
                {"detail": lockout_message()}, status=429, headers={"Retry-After": str(cooloff_seconds())}
            )
        if not valid:
            raise ValidationError(data.errors)
        _token, key = api_token_create(user=data.validated_data["user"])
        return Response({"token": key})


# ---------------------------------------------------------------------- notifications


class NotificationListApi(APIView):
    """The inbox, newest first, paginated."""

    @extend_schema(
        operation_id="v1_notifications_list",
        parameters=[
            *PAGE_PARAMS,
            OpenApiParameter("stream", str, description="stream name"),
            OpenApiParameter("event_type", str, description="WINDOW_OPEN, WINDOW_CLOSE, ON_TIME, ..."),
            OpenApiParameter("acknowledged", bool),
            OpenApiParameter("since", str, description="received at or after (epoch ms or ISO)"),
        ],
        responses=page_of("NotificationPage", NotificationSerializer(many=True)),
    )
    def get(self, request: Request) -> Response:
        qs = selectors.notifications_filter(
            selectors.notifications_visible(user=request.user),
            stream=request.query_params.get("stream"),
            event_type=request.query_params.get("event_type"),
            acknowledged=_bool_param(request, "acknowledged"),
            since=_time_param(request, "since"),
        )
        return _page(self, request, qs, lambda page: [selectors.notification_payload(n) for n in page])


class NotificationAckApi(APIView):
    @extend_schema(request=None, responses=NotificationSerializer)
    def post(self, request: Request, notification_id: int) -> Response:
        n = get_object_or_404(selectors.notifications_visible(user=request.user), pk=notification_id)
        return Response(selectors.notification_payload(notif_services.notification_ack(notification=n)))


class NotificationAckAllApi(APIView):
    @extend_schema(
        request=None, responses=inline_serializer("AckAll", {"updated": serializers.IntegerField()})
    )
    def post(self, request: Request) -> Response:
        return Response({"updated": notif_services.notification_ack_all(user=request.user)})


class NotificationUnreadApi(APIView):
    @extend_schema(responses=inline_serializer("Unread", {"count": serializers.IntegerField()}))
    def get(self, request: Request) -> Response:
        return Response({"count": selectors.notification_unread_count(user_id=int(request.user.pk or 0))})


class MeApi(APIView):
    """The signed-in user and the URL of their inbox for NOTIFY clauses."""

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "username": serializers.CharField(),
                "is_staff": serializers.BooleanField(),
                "inboxes": serializers.JSONField(),
            },
        )
    )
    def get(self, request: Request) -> Response:
        from streams_app.models import Inbox
        from streams_app.services.users import inbox_url

        inboxes: Any = Inbox.objects.filter(owner_id=request.user.pk)
        return Response(
            {
                "username": request.user.get_username(),
                "is_staff": request.user.is_staff,
                "inboxes": [{"name": i.name, "url": inbox_url(inbox=i)} for i in inboxes],
            }
        )
