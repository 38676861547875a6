"""What the ``/api/v1/`` resource modules share: pagination, query parameters and the stream lookup
(the output fields their serializers have in common are in ``streams_app/serializers.py``).

- Lists are paginated by ``ApiPagination``: ``?limit=&offset=`` (default 50, at most 500) answering
  ``{count, next, previous, results}``; ``paginated`` answers one page through a serializer and
  ``page_schema`` is that answer in the OpenAPI schema.
- Query parameters: ``bool_param``, ``int_param``, ``time_param`` (``parse_time``); a bad value is
  HTTP 400 naming the parameter (``{name: [message]}``, DRF's ``ValidationError``).
- ``stream_or_404``: a stream the user may see (staff: all, others their own), else HTTP 404.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_workers.errors import SqlError
from spark_workers.timestamps import parse_literal
from streams_app import selectors
from streams_app.models import Stream

# ---------------------------------------------------------------------- pagination


class ApiPagination(LimitOffsetPagination):
    """``?limit=&offset=`` -> ``{count, next, previous, results}`` (the API's one pagination;
    ``REST_FRAMEWORK["DEFAULT_PAGINATION_CLASS"]``)."""

    default_limit = 50
    max_limit = 500


PAGE_PARAMS = [
    OpenApiParameter("limit", int, description="page size (default 50, at most 500)"),
    OpenApiParameter("offset", int, description="index of the first result (default 0)"),
]


def page_schema(name: str, child: serializers.BaseSerializer) -> serializers.Serializer:
    """Schema of a page answered by ``paginated``: ``{count, next, previous, results: [child]}``."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": child,
        },
    )


def paginated(
    view: APIView,
    request: Request,
    items: Any,
    serialize: Callable[[list[Any]], Any],
) -> Response:
    """One page of ``items`` (a queryset or a list) as ``{count, next, previous, results}``;
    ``serialize`` turns the page's items into ``results`` (e.g. a serializer's ``.data``)."""
    pager = ApiPagination()
    page: list[Any] = pager.paginate_queryset(items, request, view=view) or []
    return pager.get_paginated_response(serialize(page))


# ---------------------------------------------------------------------- query parameters


def bool_param(request: Request, name: str) -> bool | None:
    """``true/false/1/0/yes/no`` (any case); absent or empty = None; else 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    low = raw.strip().lower()
    if low in ("1", "true", "yes"):
        return True
    if low in ("0", "false", "no"):
        return False
    raise ValidationError({name: [f"{raw!r} is not a boolean: use true or false"]})


def int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    """An integer in ``[lo, hi]``; absent or empty = ``default``; else 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise ValidationError({name: [f"{raw!r} is not an integer"]}) from None
    if not lo <= v <= hi:
        raise ValidationError({name: [f"{v} is out of range [{lo}, {hi}]"]})
    return v


def parse_time(raw: Any, what: str) -> dt.datetime:
    """Integer epoch milliseconds or an ISO 8601 timestamp (no zone: ``TDWEB_TIMEZONE``) -> an
    aware UTC datetime; raises ``ValidationError`` naming ``what``."""
    text = str(raw).strip()
    try:
        if text.lstrip("-").isdigit():
            us = int(text) * 1000
        else:
            us = parse_literal(text, "ns", settings.TDWEB_TIMEZONE) // 1000
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=us)
    except (SqlError, OverflowError, ValueError):
        raise ValidationError(
            {what: [f"{raw!r} is not a time: use epoch milliseconds or 'YYYY-MM-DD[THH:MM:SS[.fff]][Z]'"]}
        ) from None


def time_param(request: Request, name: str) -> dt.datetime | None:
    """A time (``parse_time``); absent or empty = None."""
    raw = request.query_params.get(name)
    return None if raw in (None, "") else parse_time(raw, name)


# ---------------------------------------------------------------------- lookups


def stream_or_404(request: Request, stream_id: int) -> Stream:
    """The live stream ``stream_id`` if the user may see it (``selectors.stream_get``); raises
    ``Http404`` otherwise, so another user's stream looks like a missing one."""
    stream = selectors.stream_get(user=request.user, stream_id=stream_id)
    if stream is None:
        raise Http404("no such stream")
    return stream


# ---------------------------------------------------------------------- output fields
