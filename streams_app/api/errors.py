"""Error answers of the machine-facing doors (``/rest/sql``, ``/api/``): always JSON, never internals.

- ``api_exception_handler`` (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``), the API's one handler:

  - ``spark_workers.errors.TdError`` (what services and selectors raise): ``{"code", "desc",
    "position"}`` (``td_error_answer``; ``position`` is ``{offset, line, column}`` of a positioned
    SQL error, else null); an ``IngestError`` answers ``{"code", "desc", "row", "column",
    "import_id"}``. The HTTP status is 400 unless the view maps the error's class to another in
    its ``td_error_status`` (``{CatalogError: 404}``: the most specific class wins); a view
    answering in the designer's shape lists the classes in ``td_error_issues`` (``{"code",
    "desc", "position", "node", "field", "issues"}``, ``design_error_answer``).
  - The designer's errors (``streams_app.services.designer``): ``DesignInvalid`` and
    ``PreviewFailed`` HTTP 400 in the designer's shape, ``ImpactUnconfirmed`` HTTP 409 ``{"detail",
    "impact"}``, ``VersionNotFound`` HTTP 404 ``{"detail"}``.
  - DRF's own handling for its exceptions, ``Http404`` and ``PermissionDenied``; a too-large body
    is HTTP 413 and another ``SuspiciousOperation`` HTTP 400 (``{"detail"}``); anything else is
    logged with its traceback under the request id and answered HTTP 500 ``{"code": 312, "desc":
    "internal error (request id <id>)"}`` (TDengine's ``TSDB_CODE_APP_ERROR`` 0x0101,
    ``Code.INTERNAL``).

  A TdError answer is an answer, not a failure of the request: nothing is rolled back (an
  import job that failed stays recorded).
- ``ErrorSerializer``, ``IssueSerializer``, ``DesignErrorSerializer``, ``IngestErrorSerializer``:
  those answers in the OpenAPI schema.
- ``bad_request`` / ``permission_denied`` / ``page_not_found`` / ``server_error``
  (``handler400`` … ``handler500`` in ``tdweb/urls.py``): Django's own error pages, as JSON on
  ``/rest/sql`` (TDengine's ``{code, desc}``) and ``/api/`` (DRF's ``{detail}``), Django's HTML
  pages elsewhere. A ``/rest/sql`` body over the limit answers HTTP 200 ``{"code": 537, "desc":
  "SQL statement too long"}`` (TDengine's ``TSDB_CODE_TSC_EXCEED_SQL_LIMIT``, 0x0219), which
  ``taosrest`` raises as an error with that code (it turns any non-200 answer into a bare
  ``HTTPError``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from spark_workers.errors import Code, TdError
from streams_app.request_id import internal_error_answer
from streams_app.services.designer import DesignInvalid, ImpactUnconfirmed, PreviewFailed, VersionNotFound
from streams_app.services.ingest import IngestError
from streams_app.services.sql import error_position

EXCEED_SQL_LIMIT = 0x0219  # TSDB_CODE_TSC_EXCEED_SQL_LIMIT: "SQL statement too long"
SQL_TOO_LONG = "SQL statement too long"


def sql_too_long_answer() -> dict[str, Any]:
    """TDengine's answer for a SQL text over ``TDWEB_SQL_MAX_BYTES``: ``{"code": 537, "desc"}``."""
    return {"code": EXCEED_SQL_LIMIT, "desc": SQL_TOO_LONG}


def body_too_large_detail() -> str:
    """``detail`` of an API body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (HTTP 413)."""
    return f"request body too large: at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"


def _security_log(exc: SuspiciousOperation) -> None:
    # what Django's own handler does for a SuspiciousOperation it answers with 400
    logging.getLogger(f"django.security.{type(exc).__name__}").error(str(exc))


# ---------------------------------------------------------------------- answers (schema)


class SqlPositionSerializer(serializers.Serializer):
    """Where in the SQL text: 0-based character ``offset``, 1-based ``line`` and ``column``."""

    offset = serializers.IntegerField()
    line = serializers.IntegerField()
    column = serializers.IntegerField()


def _position_field() -> SqlPositionSerializer:
    return SqlPositionSerializer(allow_null=True)


class ErrorSerializer(serializers.Serializer):
    """A TDengine error code, its message and where in the SQL it is (null: nowhere in particular)."""

    # td_error_answer

    code = serializers.IntegerField()
    desc = serializers.CharField()
    position = _position_field()


class IssueSerializer(serializers.Serializer):
    """A problem of a design: the node and field at fault (null: the design as a whole)."""

    node = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    position = _position_field()


class DesignErrorSerializer(serializers.Serializer):
    """An error of a design: the first issue as ``code``/``desc``/``position``/``node``/``field``,
    and every issue."""

    code = serializers.IntegerField()
    desc = serializers.CharField()
    position = _position_field()
    node = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    issues = IssueSerializer(many=True)


class IngestErrorSerializer(serializers.Serializer):
    """A row import that wrote nothing: the first bad row and column."""

    code = serializers.IntegerField()
    desc = serializers.CharField(help_text="e.g. \"row 17, column pm25: 'abc' is not a DOUBLE\"")
    row = serializers.IntegerField(allow_null=True, help_text="1-based data row (CSV header not counted)")
    column = serializers.CharField(allow_null=True)
    import_id = serializers.IntegerField(allow_null=True, help_text="the failed import job, if recorded")


# ---------------------------------------------------------------------- answers


def td_error_answer(e: TdError) -> dict[str, Any]:
    """``{code, desc, position}`` of a TdError (``IngestError``: ``{code, desc, row, column,
    import_id}``)."""
    if isinstance(e, IngestError):
        return {"code": e.code, "desc": e.desc, "row": e.row, "column": e.column, "import_id": e.import_id}
    return {"code": e.code, "desc": e.desc, "position": error_position(e)}


def design_error_answer(
    *, code: int, desc: str, position: dict[str, int] | None, issues: list[dict[str, Any]]
) -> dict[str, Any]:
    """``{code, desc, position, node, field, issues}``: ``node`` and ``field`` of the first issue."""
    first = issues[0] if issues else {}
    return {
        "code": code,
        "desc": desc,
        "position": position,
        "node": first.get("node"),
        "field": first.get("field"),
        "issues": issues,
    }


def _design_invalid_answer(issues: list[dict[str, Any]]) -> dict[str, Any]:
    first: dict[str, Any] = issues[0] if issues else {"message": "invalid design"}
    return design_error_answer(
        code=Code.INVALID_STREAM_QUERY, desc=first["message"], position=first.get("position"), issues=issues
    )


def _td_error_status(e: TdError, view: Any) -> int:
    """The view's ``td_error_status`` of the most specific class of ``e`` it maps, else 400."""
    statuses: dict[type, int] = getattr(view, "td_error_status", {})
    for cls in type(e).__mro__:
        if cls in statuses:
            return statuses[cls]
    return status.HTTP_400_BAD_REQUEST


def _td_error_response(e: TdError, view: Any) -> Response:
    if isinstance(e, tuple(getattr(view, "td_error_issues", ()))):
        position = error_position(e)
        issue = {"node": None, "field": None, "message": e.message, "position": position}
        body = design_error_answer(code=e.code, desc=e.desc, position=position, issues=[issue])
    else:
        body = td_error_answer(e)
    return Response(body, status=_td_error_status(e, view))


def _designer_response(exc: Exception) -> Response | None:
    if isinstance(exc, DesignInvalid):
        return Response(_design_invalid_answer(exc.issues), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PreviewFailed):
        issue = exc.issue
        body = design_error_answer(
            code=exc.error.code,
            desc=exc.error.desc,
            position=issue.get("position") or error_position(exc.error),
            issues=[issue],
        )
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ImpactUnconfirmed):
        return Response(
            {"detail": "deploying this change needs confirm_impact: true", "impact": exc.impact},
            status=status.HTTP_409_CONFLICT,
        )
    return None


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF exception handler (see module docstring); never returns None, so nothing escapes as an
    HTML page or a traceback."""
    view = context.get("view")
    if isinstance(exc, TdError):
        return _td_error_response(exc, view)
    designer = _designer_response(exc)
    if designer is not None:
        return designer
    if isinstance(exc, VersionNotFound):
        exc = Http404(str(exc))
    response = exception_handler(exc, context)
    if response is not None:
        return response
    set_rollback()
    if isinstance(exc, RequestDataTooBig):
        _security_log(exc)
        return Response({"detail": body_too_large_detail()}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, SuspiciousOperation):
        _security_log(exc)
        return Response({"detail": "bad request"}, status=status.HTTP_400_BAD_REQUEST)
    return Response(
        internal_error_answer(exc, where=type(view).__name__ if view is not None else ""),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


# ---------------------------------------------------------------------- Django's error pages


def _door(request: HttpRequest) -> str | None:
    path = request.path_info
    if path == "/rest/sql" or path.startswith("/rest/sql/"):
        return "rest"
    if path.startswith("/api/"):
        return "api"
    return None


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: see module docstring."""
    door = _door(request)
    if door == "rest":
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(sql_too_long_answer())
        return JsonResponse({"code": Code.INVALID_OPERATION, "desc": "bad request"}, status=400)
    if door == "api":
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse({"detail": body_too_large_detail()}, status=413)
        return JsonResponse({"detail": "bad request"}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler403``: see module docstring."""
    door = _door(request)
    if door == "rest":
        return JsonResponse({"code": Code.AUTH_FAILURE, "desc": "permission denied"}, status=403)
    if door == "api":
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: see module docstring."""
    door = _door(request)
    if door == "rest":
        return JsonResponse({"code": Code.INVALID_OPERATION, "desc": "not found"}, status=404)
    if door == "api":
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: see module docstring (Django has logged the traceback already, under the
    request id)."""
    if _door(request) is not None:
        return JsonResponse(internal_error_answer(), status=500)
    return defaults.server_error(request)
