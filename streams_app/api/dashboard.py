"""``/api/v1/dashboard/``: streams by status, throughput, failures, notification delivery and the
unread inbox, over the streams and inboxes the user sees (``selectors.dashboard_get``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
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


class DashboardSeriesQuery(serializers.Serializer):
    """``?since=&until=`` (ISO 8601, UTC when no offset is given) or ``?range=15m|1h|6h|24h|7d``
    ending now; at most 31 days."""

    RANGES = {"15m": 900, "1h": 3600, "6h": 21_600, "24h": 86_400, "7d": 604_800}
    range = serializers.ChoiceField(choices=list(RANGES), required=False, default="1h")
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        until = attrs.get("until") or timezone.now()
        since = attrs.get("since") or until - dt.timedelta(seconds=self.RANGES[attrs["range"]])
        if since >= until:
            raise serializers.ValidationError("since must be before until")
        if until - since > dt.timedelta(days=31):
            raise serializers.ValidationError("the range is at most 31 days")
        return {"since": since, "until": until}


_SERIES_STREAM = inline_serializer(
    "DashboardSeriesStream",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "db": serializers.CharField(),
        "status": serializers.CharField(),
        "lag_ms": serializers.IntegerField(allow_null=True),
        "rows_per_s": serializers.ListField(child=serializers.FloatField()),
        "lag_s": serializers.ListField(child=serializers.FloatField(allow_null=True)),
        "delivered": serializers.ListField(child=serializers.IntegerField()),
        "failed": serializers.ListField(child=serializers.IntegerField()),
    },
    many=True,
)


class DashboardSeriesSerializer(serializers.Serializer):
    """Time series per stream and in total (``selectors.dashboard_series``)."""

    since = serializers.CharField()
    until = serializers.CharField()
    bucket_s = serializers.FloatField()
    t = serializers.ListField(child=serializers.IntegerField())
    totals = inline_serializer(
        "DashboardSeriesTotals",
        {
            "rows_per_s": serializers.ListField(child=serializers.FloatField()),
            "delivered": serializers.ListField(child=serializers.IntegerField()),
            "failed": serializers.ListField(child=serializers.IntegerField()),
        },
    )
    streams = _SERIES_STREAM


class DashboardSeriesApi(APIView):
    """Throughput, event-time lag and notification delivery over time, per stream and in total
    (the streams the user sees), for the dashboard's charts and the streams table's sparklines."""

    @extend_schema(parameters=[DashboardSeriesQuery], responses=DashboardSeriesSerializer)
    def get(self, request: Request) -> Response:
        q = DashboardSeriesQuery(data=request.query_params)
        q.is_valid(raise_exception=True)
        series = selectors.dashboard_series(user=request.user, **q.validated_data)
        return Response(DashboardSeriesSerializer(series).data)
