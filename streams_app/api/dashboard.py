"""``/api/v1/dashboard/``: streams by status, throughput, failures, notification delivery and the
unread inbox, over the streams and inboxes the user sees (``selectors.dashboard_get``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from streams_app import selectors


class DashboardSerializer(serializers.Serializer):
    """Streams by status, throughput, failures, notification delivery and the unread inbox."""

    # selectors.dashboard_get

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


class DashboardApi(APIView):
    """Streams by status, total throughput, failures, notification delivery rate, unread inbox
    (over the streams and inboxes the user sees)."""

    @extend_schema(responses=DashboardSerializer)
    def get(self, request: Request) -> Response:
        return Response(DashboardSerializer(selectors.dashboard_get(user=request.user)).data)
