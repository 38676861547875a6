"""``/api/v1/sql/``: run SQL (the console) and check a statement without running it.

Both answer HTTP 200 whatever the SQL does: the SQL console speaks TDengine's REST protocol
(``{code: 0, column_meta, data, rows}`` or ``{code, desc}``), validation ``{ok: true, statement}``
or ``{ok: false, code, desc, position}``.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from streams_app.services.sql import sql_execute_rest, sql_validate


class SqlInputSerializer(serializers.Serializer):
    """A SQL text and the default database of its unqualified names."""

    sql = serializers.CharField(trim_whitespace=False)
    db = serializers.CharField(required=False, allow_blank=True, allow_null=True)


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

SQL_VALIDATION = inline_serializer(
    "SqlValidation",
    {
        "ok": serializers.BooleanField(),
        "statement": serializers.CharField(required=False),
        "code": serializers.IntegerField(required=False),
        "desc": serializers.CharField(required=False),
        "position": serializers.JSONField(required=False),
    },
)


class SqlValidateApi(APIView):
    """Parse and check a statement without running it (errors carry their position)."""

    @extend_schema(request=SqlInputSerializer, responses=SQL_VALIDATION)
    def post(self, request: Request) -> Response:
        data = SqlInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            sql_validate(
                sql=data.validated_data["sql"], db=data.validated_data.get("db") or None, user=request.user
            )
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
