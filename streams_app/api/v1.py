"""REST API ``/api/v1/``: streams, SQL, databases and tables, notifications.

Views parse input, call one service or selector, and serialize the answer (STYLE.md rule 1).
Session and token authentication; staff users see every stream and inbox, other users their own.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_workers.errors import CatalogError, SqlError, TdError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse
from streams_app import selectors
from streams_app.models import Stream
from streams_app.services import notifications as notif_services
from streams_app.services.sql import error_position, sql_execute, sql_execute_rest, sql_validate
from streams_app.services.streams import stream_action, stream_drop

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
    throughput = serializers.ListField(child=serializers.FloatField())


class StreamDetailSerializer(StreamSerializer):
    spec = serializers.JSONField()


class SqlInputSerializer(serializers.Serializer):
    sql = serializers.CharField(trim_whitespace=False)
    db = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class ActionInputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["pause", "resume", "stop", "start"])
    ignore_untreated = serializers.BooleanField(required=False, default=False)


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
        from django.http import Http404

        raise Http404("no such stream")
    return stream


# ---------------------------------------------------------------------- streams


class StreamListApi(APIView):
    """List streams; create one from SQL (CREATE STREAM ...)."""

    @extend_schema(
        operation_id="v1_streams_list",
        responses=inline_serializer(
            "StreamPage", {"count": serializers.IntegerField(), "results": StreamSerializer(many=True)}
        ),
    )
    def get(self, request: Request) -> Response:
        streams = list(selectors.streams_visible(user=request.user))
        return Response(
            {"count": len(streams), "results": [selectors.stream_payload(stream=s) for s in streams]}
        )

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
            {**selectors.stream_payload(stream=stream), "spec": stream.spec}, status=status.HTTP_201_CREATED
        )


class StreamDetailApi(APIView):
    """One stream; DELETE drops it (its output data stays)."""

    @extend_schema(responses=StreamDetailSerializer)
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        return Response({**selectors.stream_payload(stream=s), "spec": s.spec})

    @extend_schema(responses={204: None})
    def delete(self, request: Request, stream_id: int) -> Response:
        stream_drop(stream=_stream_or_404(request, stream_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class StreamActionApi(APIView):
    """pause / resume / stop / start."""

    @extend_schema(request=ActionInputSerializer, responses={200: StreamSerializer, 400: ErrorSerializer})
    def post(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        data = ActionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            s = stream_action(
                stream=s,
                action=data.validated_data["action"],
                ignore_untreated=data.validated_data["ignore_untreated"],
            )
        except CatalogError as e:
            return td_error(e)
        return Response(selectors.stream_payload(stream=s))


class StreamProgressApi(APIView):
    """Recent micro-batch progress, oldest first."""

    @extend_schema(parameters=[OpenApiParameter("limit", int)], responses=ProgressSerializer(many=True))
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        limit = max(1, min(int(request.query_params.get("limit", 300)), 5000))
        return Response(selectors.stream_progress_list(stream_id=s.pk, limit=limit))


class StreamDeliveriesApi(APIView):
    """The notification delivery log, newest first."""

    @extend_schema(parameters=[OpenApiParameter("limit", int)], responses=DeliverySerializer(many=True))
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        limit = max(1, min(int(request.query_params.get("limit", 100)), 1000))
        return Response(
            DeliverySerializer(selectors.stream_deliveries(stream_id=s.pk, limit=limit), many=True).data
        )


class StreamRunsApi(APIView):
    """Run history (worker attempts), newest first."""

    @extend_schema(responses=RunSerializer(many=True))
    def get(self, request: Request, stream_id: int) -> Response:
        s = _stream_or_404(request, stream_id)
        return Response(RunSerializer(selectors.stream_runs(stream_id=s.pk), many=True).data)


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
        return Response(selectors.database_list())


class TableListApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("kind", str), OpenApiParameter("stable", str)],
        responses=TableEntrySerializer(many=True),
    )
    def get(self, request: Request, db: str) -> Response:
        try:
            return Response(
                selectors.table_list(
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
            return Response(selectors.table_detail(db=db, name=name))
        except TdError as e:
            return td_error(e, status.HTTP_404_NOT_FOUND)


class TableRowsApi(APIView):
    """Latest rows of a table (optionally in a time range), newest last."""

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", int),
            OpenApiParameter("start", str),
            OpenApiParameter("end", str),
        ],
        responses={200: RowsSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request, db: str, name: str) -> Response:
        limit = max(1, min(int(request.query_params.get("limit", 200)), 10_000))
        try:
            t = selectors.table_detail(db=db, name=name)
        except TdError as e:
            return td_error(e, status.HTTP_404_NOT_FOUND)
        ts = t["columns"][0]["name"]
        conds = []
        for key, op in (("start", ">="), ("end", "<=")):
            v = request.query_params.get(key)
            if v:
                conds.append(f"`{ts}` {op} '{v.replace(chr(39), '')}'")
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        sql = (
            f"SELECT * FROM (SELECT * FROM `{db}`.`{name}`{where} ORDER BY `{ts}` DESC LIMIT {limit}) "
            f"ORDER BY `{ts}`"
        )
        try:
            res = sql_execute(sql=sql, db=db, user=request.user)
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


# ---------------------------------------------------------------------- notifications


class NotificationListApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("stream", str),
            OpenApiParameter("event_type", str),
            OpenApiParameter("acknowledged", bool),
            OpenApiParameter("page", int),
        ],
        responses=inline_serializer(
            "NotificationPage",
            {
                "count": serializers.IntegerField(),
                "next": serializers.URLField(allow_null=True),
                "previous": serializers.URLField(allow_null=True),
                "results": NotificationSerializer(many=True),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        ack = request.query_params.get("acknowledged")
        qs = selectors.notifications_filter(
            selectors.notifications_visible(user=request.user),
            stream=request.query_params.get("stream"),
            event_type=request.query_params.get("event_type"),
            acknowledged=None if ack in (None, "") else ack.lower() in ("1", "true", "yes"),
        )
        pager = PageNumberPagination()
        page = pager.paginate_queryset(qs, request, view=self)
        return pager.get_paginated_response([selectors.notification_payload(n) for n in page or []])


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
