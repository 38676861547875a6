"""TDengine's REST protocol: ``POST /rest/sql[/{db}]`` (ARCHITECTURE "SQL front door").

HTTP Basic authentication against Django users; the body is one SQL text; the answer is always
HTTP 200 with ``{code: 0, column_meta, data, rows}`` or ``{code, desc}`` (what ``taosrest``
expects); a failed authentication is HTTP 401 with ``{code, desc}``.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import authenticate, get_user_model
from django.db import close_old_connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from spark_workers.errors import Code
from streams_app.services.sql import sql_execute_rest

AUTH_CACHE_S = 300.0
_auth_cache: dict[str, tuple[int, float]] = {}
_auth_lock = threading.Lock()


def basic_user(header: str) -> Any | None:
    """The active user named by an ``Authorization: Basic`` header, or None. Successful checks are
    cached for a few minutes per exact header (password hashing is deliberately slow)."""
    if not header.startswith("Basic "):
        return None
    digest = hashlib.sha256(header.encode()).hexdigest()
    now = time.monotonic()
    User = get_user_model()
    with _auth_lock:
        hit = _auth_cache.get(digest)
    if hit and now - hit[1] < AUTH_CACHE_S:
        user = User.objects.filter(pk=hit[0], is_active=True).first()
        if user is not None:
            return user
    try:
        raw = base64.b64decode(header[6:].strip()).decode("utf-8")
    except Exception:
        return None
    username, sep, password = raw.partition(":")
    if not sep:
        return None
    user = authenticate(username=username, password=password)
    if user is None or not user.is_active:
        return None
    with _auth_lock:
        _auth_cache[digest] = (user.pk, now)
    return user


def _unauthorized() -> JsonResponse:
    return JsonResponse({"code": Code.AUTH_FAILURE, "desc": "Authentication failure"}, status=401)


def _run(header: str, sql: str, db: str | None) -> tuple[int, dict[str, Any]]:
    # runs in a pool thread, outside the request's connection handling: close this thread's DB
    # connection like a request's own (else each pool thread keeps one forever, broken or not)
    close_old_connections()
    try:
        user = basic_user(header)
        if user is None:
            return 401, {}
        return 200, sql_execute_rest(sql=sql, db=db, user=user)
    finally:
        close_old_connections()


@csrf_exempt
async def rest_sql(request: HttpRequest, db: str | None = None) -> JsonResponse:
    """``POST /rest/sql`` and ``/rest/sql/{db}`` (TDengine REST API)."""
    if request.method != "POST":
        return JsonResponse(
            {"code": Code.INVALID_OPERATION, "desc": "use POST with the SQL text as body"}, status=405
        )
    sql = request.body.decode("utf-8", errors="replace")
    status, answer = await sync_to_async(_run, thread_sensitive=False)(
        request.headers.get("Authorization", ""), sql, db
    )
    if status == 401:
        return _unauthorized()
    return JsonResponse(answer, json_dumps_params={"ensure_ascii": False})
