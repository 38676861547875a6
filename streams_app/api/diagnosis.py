"""``GET /api/v1/streams/{id}/diagnosis/``: "why no output?" for a stream
(``streams_app.services.diagnosis.stream_diagnosis``). The owner and privileged users only: to
another user the stream does not exist (404)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from streams_app.api.common import stream_or_404
from streams_app.api.errors import ErrorSerializer
from streams_app.services.diagnosis import stream_diagnosis


class DroppedRowsSerializer(serializers.Serializer):
    """Rows read but not in any window, by reason (the recorded micro-batches summed)."""

    expired = serializers.IntegerField(help_text="older than the watermark when they came (IGNORE EXPIRED)")
    filtered = serializers.IntegerField(
        help_text="kept out by a filter in the engine (stage-1 WHERE / PRE_FILTER: filter_check)"
    )
    disordered = serializers.IntegerField(help_text="older than their group's latest row")
    late = serializers.IntegerField(help_text="later than the watermark (eKuiper)")
    beyond_delete_mark = serializers.IntegerField(help_text="expired beyond DELETE_MARK")


class OpenWindowsSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    earliest_end = serializers.CharField(allow_null=True, help_text="ISO 8601 UTC")
    closes_when = serializers.CharField(allow_null=True)


class ReceiverFailuresSerializer(serializers.Serializer):
    url = serializers.CharField()
    attempts = serializers.IntegerField()
    failed = serializers.IntegerField()
    last_error = serializers.CharField(allow_blank=True, help_text="in plain words")
    last_failed_at = serializers.CharField()


class NotificationHealthSerializer(serializers.Serializer):
    sent = serializers.IntegerField()
    failed = serializers.IntegerField()
    receivers = ReceiverFailuresSerializer(many=True, help_text="URLs with failed deliveries")


class GroupStateSerializer(serializers.Serializer):
    """One group (PARTITION BY values) of the source table."""

    group = serializers.CharField()
    rows = serializers.IntegerField(help_text="rows in the source table")
    latest_event_ms = serializers.IntegerField()
    latest_event_time = serializers.CharField()
    watermark_ms = serializers.IntegerField()
    watermark = serializers.CharField()
    open_window_end_ms = serializers.IntegerField(allow_null=True)
    closes_when = serializers.CharField()


class FilteredRowSerializer(serializers.Serializer):
    """One examined row the filter did not keep."""

    ts_ms = serializers.IntegerField(help_text="event time, epoch milliseconds")
    time = serializers.CharField(help_text="event time, ISO 8601 UTC")
    tbname = serializers.CharField(allow_null=True, help_text="the subtable (None: a normal table)")
    values = serializers.DictField(
        child=serializers.JSONField(allow_null=True), help_text="the columns the filter reads"
    )


class FilterCheckSerializer(serializers.Serializer):
    """What the stage-1 filter (a legacy stream's WHERE, a 3.3.7 stream's PRE_FILTER) removed
    from the newest rows the stream read (at most 100,000), computed on request."""

    clause = serializers.ChoiceField(choices=["WHERE", "PRE_FILTER"])
    condition = serializers.CharField()
    examined = serializers.IntegerField(help_text="rows examined")
    failed = serializers.IntegerField(help_text="examined rows the filter did not keep")
    complete = serializers.BooleanField(help_text="false: only the newest rows read were examined")
    columns = serializers.ListField(child=serializers.CharField(), help_text="the columns the filter reads")
    sample = FilteredRowSerializer(many=True, help_text="up to 5 failing rows, the latest first")


class CauseSerializer(serializers.Serializer):
    option = serializers.CharField(allow_null=True, help_text="the stream option that explains it")
    text = serializers.CharField(help_text="in plain words, starting with the option")


class DiagnosisSerializer(serializers.Serializer):
    """Why a stream produces no output (see ``stream_diagnosis``)."""

    stream_id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()
    trigger = serializers.CharField()
    watermark_ms = serializers.IntegerField(allow_null=True)
    watermark = serializers.CharField(allow_null=True)
    latest_event_ms = serializers.IntegerField(allow_null=True)
    latest_event_time = serializers.CharField(allow_null=True)
    batches = serializers.IntegerField(help_text="recorded micro-batches considered")
    input_rows = serializers.IntegerField()
    output_rows = serializers.IntegerField()
    dropped = DroppedRowsSerializer()
    dropped_sample = serializers.ListField(child=serializers.CharField(), help_text="event times, ISO 8601")
    open_windows = OpenWindowsSerializer()
    notifications = NotificationHealthSerializer()
    groups = GroupStateSerializer(many=True)
    filter_check = FilterCheckSerializer(
        allow_null=True, help_text="null: no filter, or the source table could not be read"
    )
    causes = CauseSerializer(many=True)


class StreamDiagnosisApi(APIView):
    """ "Why no output?": watermark, latest event time, open windows and what closes them,
    dropped rows, notification failures and the options that explain the silence."""

    @extend_schema(responses={200: DiagnosisSerializer, 404: ErrorSerializer})
    def get(self, request: Request, stream_id: int) -> Response:
        s = stream_or_404(request, stream_id)
        return Response(DiagnosisSerializer(stream_diagnosis(stream=s, user=request.user)).data)
