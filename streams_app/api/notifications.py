"""``/api/v1/notifications/``: the inbox (notifications of the inboxes a user sees: own; staff:
all), acknowledging one or all, and the unread count."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from streams_app import selectors
from streams_app.api.common import (
    PAGE_PARAMS,
    bool_param,
    page_schema,
    paginated,
    time_param,
)
from streams_app.serializers import NotificationSerializer
from streams_app.services.notifications import notification_ack, notification_ack_all


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
        responses=page_schema("NotificationPage", NotificationSerializer(many=True)),
    )
    def get(self, request: Request) -> Response:
        qs = selectors.notifications_filter(
            selectors.notifications_visible(user=request.user),
            stream=request.query_params.get("stream"),
            event_type=request.query_params.get("event_type"),
            acknowledged=bool_param(request, "acknowledged"),
            since=time_param(request, "since"),
        )
        return paginated(self, request, qs, lambda page: NotificationSerializer(page, many=True).data)


class NotificationAckApi(APIView):
    @extend_schema(request=None, responses=NotificationSerializer)
    def post(self, request: Request, notification_id: int) -> Response:
        n = get_object_or_404(selectors.notifications_visible(user=request.user), pk=notification_id)
        return Response(NotificationSerializer(notification_ack(notification=n)).data)


class NotificationAckAllApi(APIView):
    @extend_schema(
        request=None, responses=inline_serializer("AckAll", {"updated": serializers.IntegerField()})
    )
    def post(self, request: Request) -> Response:
        return Response({"updated": notification_ack_all(user=request.user)})


class NotificationUnreadApi(APIView):
    @extend_schema(responses=inline_serializer("Unread", {"count": serializers.IntegerField()}))
    def get(self, request: Request) -> Response:
        return Response({"count": selectors.notification_unread_count(user_id=int(request.user.pk or 0))})
