"""Request ids: one per HTTP request, in the ``X-Request-ID`` answer header and in every log record.

A client's own ``X-Request-ID`` is kept when it is sane (1 to 64 characters of ``[A-Za-z0-9._:-]``,
what proxies such as nginx's ``$request_id`` or AWS's trace ids send); anything else is replaced by
a new uuid4 hex. The id lives in a context variable, so code running for the request in other
threads (``sync_to_async`` copies the context) logs and answers with the same id; internal-error
answers quote it (``internal error (request id <id>)``) and the server log holds the traceback
under it.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.log import log_response

from spark_workers.errors import Code

log = logging.getLogger(__name__)

HEADER = "X-Request-ID"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("tdweb_request_id", default=None)


def request_id_new(offered: str | None = None) -> str:
    """``offered`` (a client's ``X-Request-ID``) when sane, else a new uuid4 hex (32 characters)."""
    if offered and _SANE.fullmatch(offered):
        return offered
    return uuid.uuid4().hex


def request_id_get() -> str:
    """The id of the request being served; outside a request (shell, worker) a new id, kept for the
    rest of the current context so one failure is logged and answered under one id."""
    rid = _current.get()
    if rid is None:
        rid = uuid.uuid4().hex
        _current.set(rid)
    return rid


def internal_error_answer(exc: BaseException | None = None, *, where: str = "") -> dict[str, Any]:
    """Log ``exc`` with its traceback under the current request id; return the TDengine answer.

    Returns:
        ``{"code": 312, "desc": "internal error (request id <id>)"}``; the id is the one in the
        ``X-Request-ID`` answer header and in the server log line.
    """
    rid = request_id_get()
    if exc is not None:
        log.error(
            "internal error (request id %s)%s: %s: %s",
            rid,
            f" in {where}" if where else "",
            type(exc).__name__,
            exc,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
    return {"code": Code.INTERNAL, "desc": f"internal error (request id {rid})"}


class RequestIdLogFilter(logging.Filter):
    """Adds ``record.request_id`` (the current request's id, or ``-``) to every log record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get() or "-"
        return True


def _log_error_response(request: HttpRequest, response: HttpResponseBase) -> None:
    # Django logs 4xx/5xx answers after the middleware chain, where the id is no longer set; log
    # them here instead (log_response marks the response, so Django does not log it twice)
    if response.status_code >= 400:
        answer: Any = response
        log_response("%s: %s", response.reason_phrase, request.path, response=answer, request=request)


class RequestIdMiddleware:
    """First middleware: assigns the request id (``request.request_id``), sets it for logging and
    answers it in ``X-Request-ID``. Sync and async capable, so it never forces a thread hop."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        rid = request_id_new(request.headers.get(HEADER))
        request.request_id = rid  # type: ignore[attr-defined]
        token = _current.set(rid)
        try:
            response: HttpResponseBase = self.get_response(request)
            _log_error_response(request, response)
        finally:
            _current.reset(token)
        response[HEADER] = rid
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        rid = request_id_new(request.headers.get(HEADER))
        request.request_id = rid  # type: ignore[attr-defined]
        token = _current.set(rid)
        try:
            get: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
            response = await get(request)
            _log_error_response(request, response)
        finally:
            _current.reset(token)
        response[HEADER] = rid
        return response
