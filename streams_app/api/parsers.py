"""The API's JSON parser (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``): bounded in size and depth.

DRF's ``JSONParser`` reads the request stream directly, so Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``
(which guards ``request.body`` and form data) never applies to JSON, and Python's ``json`` raises
``RecursionError`` on deeply nested input, which DRF answers with HTTP 500. This parser answers
both as client errors before anything reaches a view: a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``
is HTTP 413, nesting deeper than ``TDWEB_JSON_MAX_DEPTH`` (default 64) HTTP 400.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser


class PayloadTooLarge(APIException):
    """HTTP 413 ``{"detail": "request body too large: at most N bytes"}``."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request body too large"
    default_code = "payload_too_large"


def _strict_constant(value: str) -> Any:
    raise ValueError(f"out of range float values are not JSON compliant: {value}")


def json_depth_exceeds(data: Any, limit: int) -> bool:
    """True if ``data`` (parsed JSON) nests lists and objects more than ``limit`` levels deep
    (``[]`` is 1 level, ``{"a": [1]}`` 2). Iterative: cost O(number of lists and objects)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, Mapping | list))
    return False


class BoundedJSONParser(JSONParser):
    """``application/json`` with a size and a nesting limit (see module docstring).

    Raises:
        PayloadTooLarge: the body (``Content-Length`` or the bytes read) exceeds
            ``DATA_UPLOAD_MAX_MEMORY_SIZE``.
        ParseError: not UTF-8/JSON, or nested deeper than ``TDWEB_JSON_MAX_DEPTH``.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        context = parser_context or {}
        limit: int | None = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = context.get("request")
        meta = getattr(request, "META", {}) if request is not None else {}
        try:
            announced = int(meta.get("CONTENT_LENGTH") or 0)
        except (TypeError, ValueError):
            announced = 0
        too_large = PayloadTooLarge(f"request body too large: at most {limit} bytes")
        if limit is not None and announced > limit:
            raise too_large
        if stream is None:
            return {}
        raw = stream.read(limit + 1) if limit is not None else stream.read()
        if limit is not None and len(raw) > limit:
            raise too_large
        max_depth = int(getattr(settings, "TDWEB_JSON_MAX_DEPTH", 64))
        too_deep = ParseError(f"JSON parse error - nested deeper than {max_depth} levels")
        try:
            text = raw.decode(context.get("encoding", settings.DEFAULT_CHARSET))
            data = json.loads(text, parse_constant=_strict_constant if self.strict else None)
        except RecursionError:
            raise too_deep from None
        except ValueError as exc:  # also UnicodeDecodeError
            raise ParseError(f"JSON parse error - {exc}") from None
        if json_depth_exceeds(data, max_depth):
            raise too_deep
        return data
