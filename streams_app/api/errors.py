"""Error answers of the machine-facing doors (``/rest/sql``, ``/api/``): always JSON, never internals.

- ``api_exception_handler`` (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``): DRF's own handling for its
  exceptions, ``Http404`` and ``PermissionDenied``; a too-large body is HTTP 413 and another
  ``SuspiciousOperation`` HTTP 400 (``{"detail"}``); anything else is logged with its traceback
  under the request id and answered HTTP 500 ``{"code": 257, "desc": "internal error (request id
  <id>)"}`` (TDengine's ``TSDB_CODE_APP_ERROR`` 0x0101, ``Code.INTERNAL``).
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
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from spark_workers.errors import Code
from streams_app.request_id import internal_error_answer

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


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF exception handler (see module docstring); never returns None, so nothing escapes as an
    HTML page or a traceback."""
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
    view = context.get("view")
    return Response(
        internal_error_answer(exc, where=type(view).__name__ if view is not None else ""),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


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
