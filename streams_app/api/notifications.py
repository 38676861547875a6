"""``/api/v1/notifications/``: the inbox (notifications of the inboxes a user sees: own; staff:
all), its groups, acknowledging one or all matching a filter, and the unread count."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
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
from streams_app.serializers import (
    NotificationGroupSerializer,
    NotificationSerializer,
    notification_group_context,
)
from streams_app.services.notifications import notification_ack, notification_ack_all

FILTER_PARAMS = [
    OpenApiParameter("stream", str, description="stream name"),
    OpenApiParameter("event_type", str, description="WINDOW_OPEN, WINDOW_CLOSE, ON_TIME, ..."),
    OpenApiParameter(
        "group", str, description="the group: its events' tableName (the group's output subtable)"
    ),
    OpenApiParameter("since", str, description="received at or after (epoch ms or ISO)"),
]


def _filters(request: Request) -> dict[str, Any]:
    """The inbox filters of a request (``selectors.notifications_filter``'s keywords but
    ``acknowledged``)."""
    q = request.query_params
    return {
        "stream": q.get("stream") or None,
        "event_type": q.get("event_type") or None,
        "group": q.get("group") or None,
        "since": time_param(request, "since"),
    }


class NotificationListApi(APIView):
    """The inbox, newest first, paginated; each notification with its group's tags."""

    @extend_schema(
        operation_id="v1_notifications_list",
        parameters=[*PAGE_PARAMS, *FILTER_PARAMS, OpenApiParameter("acknowledged", bool)],
        responses=page_schema("NotificationPage", NotificationSerializer(many=True)),
    )
    def get(self, request: Request) -> Response:
        qs = selectors.notifications_filter(
            selectors.notifications_visible(user=request.user),
            acknowledged=bool_param(request, "acknowledged"),
            **_filters(request),
        )
        return paginated(
            self,
            request,
            qs,
            lambda page: (
                NotificationSerializer(page, many=True, context=notification_group_context(page)).data
            ),
        )


class NotificationGroupListApi(APIView):
    """The groups of the inbox's notifications (stream and tableName, with the group's tags and its
    unread and total counts), most unread first, for the same filters as the list."""

    @extend_schema(
        operation_id="v1_notifications_groups",
        parameters=[*FILTER_PARAMS, OpenApiParameter("acknowledged", bool)],
        responses=NotificationGroupSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        qs = selectors.notifications_filter(
            selectors.notifications_visible(user=request.user),
            acknowledged=bool_param(request, "acknowledged"),
            **_filters(request),
        )
        return Response(NotificationGroupSerializer(selectors.notification_groups(qs), many=True).data)


class NotificationAckApi(APIView):
    @extend_schema(request=None, responses=NotificationSerializer)
    def post(self, request: Request, notification_id: int) -> Response:
        n = get_object_or_404(selectors.notifications_visible(user=request.user), pk=notification_id)
        return Response(NotificationSerializer(notification_ack(notification=n)).data)


class NotificationAckAllApi(APIView):
    """Acknowledge every unread notification of the user's inbox(es) that matches the filters (none:
    all of them); the filters are the list's."""

    @extend_schema(
        request=None,
        parameters=FILTER_PARAMS,
        responses=inline_serializer("AckAll", {"updated": serializers.IntegerField()}),
    )
    def post(self, request: Request) -> Response:
        unknown = sorted(set(request.query_params) - {p.name for p in FILTER_PARAMS})
        if unknown:  # a misspelt filter must not widen a bulk acknowledgement to everything
            raise ValidationError(
                {k: ["not a filter of ack-all: use stream, event_type, group, since"] for k in unknown}
            )
        return Response({"updated": notification_ack_all(user=request.user, **_filters(request))})


class NotificationUnreadApi(APIView):
    @extend_schema(responses=inline_serializer("Unread", {"count": serializers.IntegerField()}))
    def get(self, request: Request) -> Response:
        return Response({"count": selectors.notification_unread_count(user_id=int(request.user.pk or 0))})
