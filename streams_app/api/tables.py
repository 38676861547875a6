"""``/api/v1/databases/`` and ``/api/v1/imports/``: databases, tables (schema and rows), row
ingestion (JSON or CSV) and the import jobs it records.

What a user may know of follows their privileges (``selectors.database_list`` …): a database or
table they hold no privilege on answers as a missing one (HTTP 404). Import jobs: own; staff: all.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_workers.errors import CatalogError, TdError
from streams_app import selectors
from streams_app.api.common import PAGE_PARAMS, int_param, page_schema, paginated
from streams_app.api.errors import ErrorSerializer, IngestErrorSerializer
from streams_app.models import ImportJob
from streams_app.serializers import IsoDateTimeField
from streams_app.services.ingest import DEFAULT_NULL_VALUES, import_rows, rows_from_csv, rows_from_json
from streams_app.services.sql import table_rows

# ---------------------------------------------------------------------- serializers


class FieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    length = serializers.IntegerField()


class TableDetailSerializer(serializers.Serializer):
    """Columns, tags and tag values of a table."""

    # selectors.table_detail

    name = serializers.CharField()
    db = serializers.CharField()
    kind = serializers.CharField()
    stable = serializers.CharField(allow_null=True)
    columns = FieldSerializer(many=True)
    tags = FieldSerializer(many=True)
    tag_values = serializers.JSONField()


class TableEntrySerializer(serializers.Serializer):
    """A table of a database."""

    # an entry of selectors.table_list

    name = serializers.CharField()
    kind = serializers.CharField()
    stable = serializers.CharField(allow_null=True)


class DatabaseSerializer(serializers.Serializer):
    """A database."""

    # an entry of selectors.database_list

    name = serializers.CharField()
    precision = serializers.CharField()
    created_ms = serializers.IntegerField()
    ntables = serializers.IntegerField()


class RowsSerializer(serializers.Serializer):
    """Rows of a table: column names, their types, and the rows (values in column order)."""

    # from TDengine's REST answer (ResultSet.to_rest): {column_meta: [[name, type, length]], data}

    columns = serializers.SerializerMethodField()
    types = serializers.SerializerMethodField()
    rows = serializers.SerializerMethodField()

    def get_columns(self, rest: dict[str, Any]) -> list[str]:
        return [c[0] for c in rest["column_meta"]]

    def get_types(self, rest: dict[str, Any]) -> list[str]:
        return [c[1] for c in rest["column_meta"]]

    @extend_schema_field(serializers.ListField(child=serializers.ListField(child=serializers.JSONField())))
    def get_rows(self, rest: dict[str, Any]) -> list[list[Any]]:
        return rest["data"]


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
    """An import job; ``fraction`` = rows_done / rows_total (null while the total is unknown)."""

    # an ImportJob row

    id = serializers.IntegerField()
    db = serializers.CharField()
    table = serializers.CharField()
    filename = serializers.CharField(allow_blank=True)
    state = serializers.ChoiceField(choices=ImportJob.State.choices)
    rows_total = serializers.IntegerField(allow_null=True)
    rows_done = serializers.IntegerField()
    fraction = serializers.SerializerMethodField()
    error = serializers.CharField(allow_blank=True)
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()

    def get_fraction(self, job: ImportJob) -> float | None:
        if job.rows_total is None:
            return None
        return job.rows_done / job.rows_total if job.rows_total else 1.0


# ---------------------------------------------------------------------- databases and tables


class DatabaseListApi(APIView):
    @extend_schema(responses=DatabaseSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(DatabaseSerializer(selectors.database_list(user=request.user), many=True).data)


class TableListApi(APIView):
    td_error_status = {TdError: status.HTTP_404_NOT_FOUND}

    @extend_schema(
        parameters=[OpenApiParameter("kind", str), OpenApiParameter("stable", str)],
        responses=TableEntrySerializer(many=True),
    )
    def get(self, request: Request, db: str) -> Response:
        tables = selectors.table_list(
            user=request.user,
            db=db,
            kind=request.query_params.get("kind") or None,
            stable=request.query_params.get("stable") or None,
        )
        return Response(TableEntrySerializer(tables, many=True).data)


class TableDetailApi(APIView):
    td_error_status = {TdError: status.HTTP_404_NOT_FOUND}

    @extend_schema(responses=TableDetailSerializer)
    def get(self, request: Request, db: str, name: str) -> Response:
        return Response(
            TableDetailSerializer(selectors.table_detail(user=request.user, db=db, name=name)).data
        )


class TableRowsApi(APIView):
    """GET: latest rows of a table (optionally in a time range), newest last.
    POST: write rows (JSON) or a CSV file (multipart ``file``) as an import job.

    A missing (or invisible) database or table answers 404, other errors 400."""

    td_error_status = {CatalogError: status.HTTP_404_NOT_FOUND}

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", int, description="the latest n rows (default 200, at most 10000)"),
            OpenApiParameter("start", str, description="ts >= start (a timestamp literal)"),
            OpenApiParameter("end", str, description="ts <= end"),
        ],
        responses={200: RowsSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request, db: str, name: str) -> Response:
        res = table_rows(
            user=request.user,
            db=db,
            name=name,
            start=request.query_params.get("start") or None,
            end=request.query_params.get("end") or None,
            limit=int_param(request, "limit", 200, 1, 10_000),
        )
        return Response(RowsSerializer(res.to_rest(settings.TDWEB_TIMEZONE)).data)

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
        return Response(ImportSerializer(job).data, status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------------- imports


class ImportListApi(APIView):
    """Import jobs (own; staff: all), newest first, paginated."""

    @extend_schema(
        operation_id="v1_imports_list",
        parameters=[*PAGE_PARAMS, OpenApiParameter("state", str, enum=ImportJob.State.values)],
        responses=page_schema("ImportPage", ImportSerializer(many=True)),
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
        return paginated(self, request, qs, lambda page: ImportSerializer(page, many=True).data)


class ImportDetailApi(APIView):
    """One import job and its progress (``rows_done`` of ``rows_total``)."""

    @extend_schema(responses=ImportSerializer)
    def get(self, request: Request, import_id: int) -> Response:
        job = get_object_or_404(selectors.imports_visible(user=request.user), pk=import_id)
        return Response(ImportSerializer(job).data)
