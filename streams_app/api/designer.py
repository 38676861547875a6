"""``/api/v1/designer/`` and stream versions: the visual designer's endpoints (docs/designer.md).

Views parse input, call one service of ``streams_app.services.designer`` and serialize the answer
(STYLE.md rule 1); the service's errors are answered by ``api/errors.api_exception_handler`` (a
design's issues in the designer's shape ``{code, desc, position, node, field, issues}``). Every
endpoint needs a signed-in user (session or token); drafts and streams follow the API's rule:
staff see all, other users their own (others' answer 404). ``urlpatterns`` holds every designer
route (``api/urls.py`` includes it).
"""

from __future__ import annotations

import copy
from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_workers.access import redact_json
from spark_workers.errors import Code, SqlError, TdError
from streams_app import selectors
from streams_app.api.common import (
    PAGE_PARAMS,
    page_schema,
    paginated,
    stream_or_404,
)
from streams_app.api.errors import DesignErrorSerializer, ErrorSerializer, IssueSerializer
from streams_app.models import Stream, StreamDraft, StreamVersion
from streams_app.serializers import IsoDateTimeField, RedactedSqlField, StreamSerializer
from streams_app.services import designer as svc
from streams_app.services.templates import template_list
from streams_app.services.users import inbox_url
from streams_app.services.versions import stream_versions

# ---------------------------------------------------------------------- serializers (schema)


def _design_field(**kw: Any) -> serializers.DictField:
    return serializers.DictField(
        child=serializers.JSONField(allow_null=True), help_text="design document, docs/designer.md", **kw
    )


class ImpactSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["none", "notify_only", "recalculate", "reset"])
    statement = serializers.CharField()


class PlaceholderSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()


SQL_VARIANTS = inline_serializer(
    "DesignSqlVariants",
    {
        "3.3.7": serializers.CharField(allow_null=True),
        "legacy": serializers.CharField(allow_null=True),
    },
)


class CompileInputSerializer(serializers.Serializer):
    sql = serializers.CharField(trim_whitespace=False)
    db = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class CompileSerializer(serializers.Serializer):
    design = _design_field()
    sql = copy.deepcopy(SQL_VARIANTS)
    not_expressible = serializers.DictField(
        child=serializers.CharField(), help_text="syntax -> why the design cannot be written in it"
    )


class ValidateInputSerializer(serializers.Serializer):
    design = _design_field()
    stream_id = serializers.IntegerField(required=False, allow_null=True)


class ValidationSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    issues = IssueSerializer(many=True)
    sql = copy.deepcopy(SQL_VARIANTS)
    not_expressible = serializers.DictField(child=serializers.CharField())
    placeholders = PlaceholderSerializer(many=True)
    impact = ImpactSerializer(required=False, help_text="with stream_id: what redeploying does")


@extend_schema_field(
    {"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
)
class InstantField(serializers.Field):
    """Epoch milliseconds or an ISO 8601 time (no zone: TDWEB_TIMEZONE) -> epoch ms."""

    def to_internal_value(self, data: Any) -> int:
        try:
            return svc.instant_ms(data)
        except ValueError as e:
            raise serializers.ValidationError(str(e))

    def to_representation(self, value: Any) -> Any:
        return value


class PreviewInputSerializer(serializers.Serializer):
    design = _design_field()
    start = InstantField(
        required=False,
        allow_null=True,
        help_text="inclusive; null: 30 days before the trigger table's last row",
    )
    end = InstantField(required=False, allow_null=True, help_text="exclusive; null: open")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=10_000, default=1000)


class PreviewWindowSerializer(serializers.Serializer):
    group = serializers.CharField(allow_blank=True)
    start = serializers.IntegerField()
    end = serializers.IntegerField(allow_null=True)
    event = serializers.CharField()
    trigger_id = serializers.CharField()


class PreviewColumnSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()


PREVIEW = inline_serializer(
    "DesignPreview",
    {
        "windows": PreviewWindowSerializer(many=True),
        "rows": inline_serializer(
            "DesignPreviewRows",
            {
                "columns": PreviewColumnSerializer(many=True),
                "data": serializers.ListField(child=serializers.ListField(child=serializers.JSONField())),
            },
        ),
        "notifications": serializers.ListField(child=serializers.DictField(child=serializers.JSONField())),
        "input_rows": serializers.IntegerField(),
        "output_rows": serializers.IntegerField(),
        "window_count": serializers.IntegerField(),
        "notification_count": serializers.IntegerField(),
        "elapsed_ms": serializers.FloatField(),
        "truncated": serializers.BooleanField(),
        "range": inline_serializer(
            "DesignPreviewRange",
            {
                "start": serializers.IntegerField(allow_null=True),
                "end": serializers.IntegerField(allow_null=True),
            },
        ),
        "deploy": inline_serializer(
            "DesignPreviewDeploy",
            {
                "fill_history": serializers.BooleanField(),
                "notify_history": serializers.BooleanField(),
                "output_rows": serializers.IntegerField(
                    help_text="output rows deploying computes for these rows"
                ),
                "notifications": serializers.IntegerField(help_text="notifications deploying sends for them"),
                "notes": serializers.ListField(child=serializers.CharField()),
            },
        ),
    },
)


class CatalogFieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()


class CatalogTableSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["supertable", "subtable", "normal"])
    stable = serializers.CharField(allow_null=True, help_text="a subtable's supertable")
    virtual = serializers.BooleanField(
        help_text="a virtual table (CREATE VTABLE, CREATE STABLE ... VIRTUAL 1): a trigger table too "
        "(seed 002 Trigger Tables)"
    )
    columns = CatalogFieldSerializer(many=True)
    tags = CatalogFieldSerializer(many=True)


class CatalogDatabaseSerializer(serializers.Serializer):
    name = serializers.CharField()
    precision = serializers.CharField()
    tables = CatalogTableSerializer(many=True)


class CatalogFunctionSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["aggregate", "scalar"])


class CatalogSerializer(serializers.Serializer):
    databases = CatalogDatabaseSerializer(many=True)
    functions = CatalogFunctionSerializer(many=True)
    placeholders = serializers.DictField(
        child=PlaceholderSerializer(many=True), help_text="trigger type -> its placeholders"
    )
    defaults = serializers.DictField(
        child=serializers.DictField(child=serializers.JSONField(allow_null=True)),
        help_text="syntax -> what a null field means: {options, notify, count_window_min, max_delay_min}",
    )
    options = serializers.DictField(
        child=serializers.DictField(child=serializers.ListField(child=serializers.CharField())),
        help_text="syntax -> trigger type -> the option keys the seeds allow with it (the others are "
        "not offered)",
    )


class TemplateSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    sql = serializers.CharField()
    design = _design_field()


class DraftSerializer(serializers.Serializer):
    """A draft: its design and the stream it edits (null: a new stream)."""

    # a StreamDraft row

    id = serializers.IntegerField()
    name = serializers.CharField()
    design = _design_field()
    stream_id = serializers.IntegerField(allow_null=True)
    owner = serializers.CharField(source="owner.get_username")
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()


class DraftInputSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=192)
    design = _design_field()
    stream_id = serializers.IntegerField(required=False, allow_null=True)


class DraftPatchSerializer(DraftInputSerializer):
    design = _design_field(required=False)


class DeployInputSerializer(serializers.Serializer):
    confirm_impact = serializers.BooleanField(required=False, default=False)


class VersionSerializer(serializers.Serializer):
    """A version: its SQL and design (NOTIFY secrets redacted) and the impact deploying it had
    (null: created by SQL)."""

    # a StreamVersion row

    number = serializers.IntegerField()
    stream_id = serializers.IntegerField(allow_null=True)
    sql = RedactedSqlField()
    design = serializers.SerializerMethodField()
    created_at = IsoDateTimeField()
    created_by = serializers.SerializerMethodField()
    impact = serializers.SerializerMethodField()

    @extend_schema_field(_design_field(allow_null=True))
    def get_design(self, version: StreamVersion) -> Any:
        return redact_json(svc.version_design(version))

    def get_created_by(self, version: StreamVersion) -> str | None:
        return version.created_by.get_username() if version.created_by else None

    @extend_schema_field(ImpactSerializer(allow_null=True))
    def get_impact(self, version: StreamVersion) -> Any:
        return version.impact


class DeploySerializer(serializers.Serializer):
    """The deployed stream, its new version and the impact of the change."""

    # a services.designer.Deployment

    stream = StreamSerializer()
    version = VersionSerializer()
    impact = serializers.SerializerMethodField()

    @extend_schema_field(ImpactSerializer())
    def get_impact(self, deployment: svc.Deployment) -> Any:
        return deployment.impact


class ImpactConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    impact = ImpactSerializer()


class ChangeSerializer(serializers.Serializer):
    node = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


VERSION_DIFF = inline_serializer(
    "StreamVersionDiff",
    {
        "from": serializers.IntegerField(),
        "to": serializers.IntegerField(),
        "sql_diff": serializers.CharField(allow_blank=True, help_text="unified diff of the SQL texts"),
        "changes": ChangeSerializer(many=True),
        "impact": ImpactSerializer(allow_null=True),
    },
)


# ---------------------------------------------------------------------- helpers


def _stream_field(request: Request, stream_id: int | None) -> Stream | None:
    """The stream a body's ``stream_id`` names, if the user may see it (else a 400 field error)."""
    if stream_id is None:
        return None
    stream = selectors.stream_get(user=request.user, stream_id=stream_id)
    if stream is None:
        raise serializers.ValidationError({"stream_id": [f"no such stream: {stream_id}"]})
    return stream


def _draft_or_404(request: Request, draft_id: int) -> StreamDraft:
    return get_object_or_404(svc.drafts_visible(user=request.user), pk=draft_id)


# ---------------------------------------------------------------------- SQL <-> design


class DesignerCompileApi(APIView):
    """SQL -> design, and the design's SQL in both syntaxes."""

    @extend_schema(request=CompileInputSerializer, responses={200: CompileSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = CompileInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            svc.design_compile(sql=data.validated_data["sql"], db=data.validated_data.get("db") or None)
        )


class DesignerValidateApi(APIView):
    """Field issues of a design and the server's CREATE STREAM checks of its SQL (nothing is
    created); with ``stream_id``, the impact of redeploying that stream."""

    @extend_schema(request=ValidateInputSerializer, responses=ValidationSerializer)
    def post(self, request: Request) -> Response:
        data = ValidateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        stream = _stream_field(request, data.validated_data.get("stream_id"))
        return Response(
            svc.design_validate(user=request.user, design=data.validated_data["design"], stream=stream)
        )


class DesignerPreviewApi(APIView):
    """Run a design over a time range of the real tables without deploying it."""

    @extend_schema(request=PreviewInputSerializer, responses={200: PREVIEW, 400: DesignErrorSerializer})
    def post(self, request: Request) -> Response:
        data = PreviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        return Response(
            svc.design_preview(
                user=request.user,
                design=v["design"],
                start_ms=v.get("start"),
                end_ms=v.get("end"),
                limit=v["limit"],
            )
        )


class DesignerCatalogApi(APIView):
    """Databases and tables, SQL functions and placeholders for the designer's forms."""

    td_error_status = {TdError: status.HTTP_404_NOT_FOUND}

    @extend_schema(
        parameters=[OpenApiParameter("db", str, description="only this database")],
        responses={200: CatalogSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        return Response(svc.designer_catalog(user=request.user, db=request.query_params.get("db") or None))


class DesignerTemplateListApi(APIView):
    """Starting designs (seed 002 "Designing Streams") over the demo table air.quality; NOTIFY
    clauses name the user's first inbox."""

    @extend_schema(responses=TemplateSerializer(many=True))
    def get(self, request: Request) -> Response:
        inbox = selectors.inboxes_owned(user=request.user).first()
        return Response(template_list(notify_url=inbox_url(inbox=inbox) if inbox else None))


# ---------------------------------------------------------------------- drafts


class DraftListApi(APIView):
    """The user's drafts (staff: all), newest change first; POST creates one."""

    @extend_schema(
        operation_id="v1_designer_drafts_list",
        parameters=PAGE_PARAMS,
        responses=page_schema("StreamDraftPage", DraftSerializer(many=True)),
    )
    def get(self, request: Request) -> Response:
        drafts = svc.drafts_visible(user=request.user)
        return paginated(self, request, drafts, lambda page: DraftSerializer(page, many=True).data)

    @extend_schema(request=DraftInputSerializer, responses={201: DraftSerializer})
    def post(self, request: Request) -> Response:
        data = DraftInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        draft = svc.draft_create(
            user=request.user,
            design=v["design"],
            name=v.get("name") or "",
            stream=_stream_field(request, v.get("stream_id")),
        )
        return Response(DraftSerializer(draft).data, status=status.HTTP_201_CREATED)


class DraftDetailApi(APIView):
    """One draft: read, replace (PUT), change (PATCH), delete."""

    @extend_schema(responses=DraftSerializer)
    def get(self, request: Request, draft_id: int) -> Response:
        return Response(DraftSerializer(_draft_or_404(request, draft_id)).data)

    def _update(self, request: Request, draft_id: int, serializer: type[serializers.Serializer]) -> Response:
        draft = _draft_or_404(request, draft_id)
        data = serializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        stream: Stream | bool | None = False
        if "stream_id" in v:
            stream = _stream_field(request, v["stream_id"])
        elif serializer is DraftInputSerializer:  # PUT replaces: no stream_id = a new stream
            stream = None
        draft = svc.draft_update(
            draft=draft, design=v.get("design"), name=v.get("name") or None, stream=stream
        )
        return Response(DraftSerializer(draft).data)

    @extend_schema(request=DraftInputSerializer, responses=DraftSerializer)
    def put(self, request: Request, draft_id: int) -> Response:
        return self._update(request, draft_id, DraftInputSerializer)

    @extend_schema(request=DraftPatchSerializer, responses=DraftSerializer)
    def patch(self, request: Request, draft_id: int) -> Response:
        return self._update(request, draft_id, DraftPatchSerializer)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, draft_id: int) -> Response:
        svc.draft_delete(draft=_draft_or_404(request, draft_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DraftDeployApi(APIView):
    """Validate the draft again and deploy it: CREATE STREAM, or DROP + CREATE of the stream it
    edits (409 when that resets or recalculates the stream and ``confirm_impact`` is not true).
    A CREATE STREAM that fails on its SQL is an issue of the design (the designer's shape)."""

    td_error_issues = (SqlError,)

    @extend_schema(
        request=DeployInputSerializer,
        responses={200: DeploySerializer, 400: DesignErrorSerializer, 409: ImpactConflictSerializer},
    )
    def post(self, request: Request, draft_id: int) -> Response:
        draft = _draft_or_404(request, draft_id)
        data = DeployInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        edited = draft.stream
        if edited is not None and edited.status != Stream.Status.DROPPED:
            stream_or_404(request, edited.pk)  # the stream it edits must be the user's too
        deployment = svc.draft_deploy(
            draft=draft, user=request.user, confirm_impact=data.validated_data["confirm_impact"]
        )
        return Response(DeploySerializer(deployment).data)


class StreamEditApi(APIView):
    """A new draft editing the stream, from its current design."""

    @extend_schema(request=None, responses={201: DraftSerializer})
    def post(self, request: Request, stream_id: int) -> Response:
        draft = svc.draft_from_stream(user=request.user, stream=stream_or_404(request, stream_id))
        return Response(DraftSerializer(draft).data, status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------------- versions


def _version_number(request: Request, key: str) -> int | None:
    """Query parameter ``key`` as a version number (absent: None); else TdError INVALID_OPERATION
    (answered ``{code, desc, position: null}``, HTTP 400)."""
    raw = request.query_params.get(key)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise TdError(f"{key} must be a version number", code=Code.INVALID_OPERATION) from None


class StreamVersionListApi(APIView):
    """Every version of the stream's name, newest first."""

    @extend_schema(
        operation_id="v1_streams_versions_list",
        parameters=PAGE_PARAMS,
        responses=page_schema("StreamVersionPage", VersionSerializer(many=True)),
    )
    def get(self, request: Request, stream_id: int) -> Response:
        versions = stream_versions(stream=stream_or_404(request, stream_id))
        return paginated(self, request, versions, lambda page: VersionSerializer(page, many=True).data)


class StreamVersionDiffApi(APIView):
    """Two versions compared (default: the latest and the one before)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("from", OpenApiTypes.INT, description="version number; default to - 1"),
            OpenApiParameter("to", OpenApiTypes.INT, description="version number; default the latest"),
        ],
        responses={200: VERSION_DIFF, 400: ErrorSerializer},
    )
    def get(self, request: Request, stream_id: int) -> Response:
        stream = stream_or_404(request, stream_id)
        return Response(
            svc.stream_version_diff(
                stream=stream,
                from_number=_version_number(request, "from"),
                to_number=_version_number(request, "to"),
            )
        )


urlpatterns = [
    path("designer/compile/", DesignerCompileApi.as_view(), name="api-designer-compile"),
    path("designer/validate/", DesignerValidateApi.as_view(), name="api-designer-validate"),
    path("designer/preview/", DesignerPreviewApi.as_view(), name="api-designer-preview"),
    path("designer/catalog/", DesignerCatalogApi.as_view(), name="api-designer-catalog"),
    path("designer/templates/", DesignerTemplateListApi.as_view(), name="api-designer-templates"),
    path("designer/drafts/", DraftListApi.as_view(), name="api-designer-drafts"),
    path("designer/drafts/<int:draft_id>/", DraftDetailApi.as_view(), name="api-designer-draft"),
    path(
        "designer/drafts/<int:draft_id>/deploy/", DraftDeployApi.as_view(), name="api-designer-draft-deploy"
    ),
    path("streams/<int:stream_id>/edit/", StreamEditApi.as_view(), name="api-stream-edit"),
    path("streams/<int:stream_id>/versions/", StreamVersionListApi.as_view(), name="api-stream-versions"),
    path(
        "streams/<int:stream_id>/versions/diff/",
        StreamVersionDiffApi.as_view(),
        name="api-stream-versions-diff",
    ),
]
