"""TDengine's REST protocol: ``POST /rest/sql[/{db}]`` (ARCHITECTURE "SQL front door").

HTTP Basic authentication against Django users; the body is one SQL text; the answer is always
HTTP 200 with ``{code: 0, column_meta, data, rows}`` or ``{code, desc}`` (what ``taosrest``
expects); a failed authentication is HTTP 401 with ``{code, desc}``. A body over
``TDWEB_SQL_MAX_BYTES`` (default 1 MiB, TDengine's ``maxSQLLength`` default) answers
``{"code": 0x0219, "desc": "SQL statement too long"}``; repeated failed passwords of one user name
from one address are locked out (``streams_app.api.authentication``), the answer then is HTTP 401
whatever the password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.db import close_old_connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from spark_workers.errors import Code
from streams_app.api.authentication import is_locked_out, rest_lockout_answer
from streams_app.api.errors import sql_too_long_answer
from streams_app.services.sql import sql_execute_rest

AUTH_CACHE_S = 300.0
AUTH_CACHE_MAX = 10_000
# sha256(header) -> (user pk, the user's password hash when checked, monotonic time of the check)
_auth_cache: dict[str, tuple[int, str, float]] = {}
_auth_lock = threading.Lock()


def _cache_put(digest: str, entry: tuple[int, str, float]) -> None:
    with _auth_lock:
        if len(_auth_cache) >= AUTH_CACHE_MAX:
            cutoff = entry[2] - AUTH_CACHE_S
            for k in [k for k, v in _auth_cache.items() if v[2] < cutoff] or list(_auth_cache)[:1000]:
                _auth_cache.pop(k, None)
        _auth_cache[digest] = entry


def basic_user(header: str, request: HttpRequest | None = None) -> Any | None:
    """The active user named by an ``Authorization: Basic`` header, or None.

    Successful checks are cached for ``AUTH_CACHE_S`` (5 minutes) per exact header, because
    password hashing is deliberately slow. A cache hit holds only while the user's stored password
    hash is the one seen at the check (compared on every hit), so a changed password stops the old
    one at once. A miss calls ``authenticate(request=request, ...)``, which django-axes counts and
    may refuse (then ``request.axes_locked_out`` is set).
    """
    if not header.startswith("Basic "):
        return None
    digest = hashlib.sha256(header.encode()).hexdigest()
    now = time.monotonic()
    User = get_user_model()
    with _auth_lock:
        hit = _auth_cache.get(digest)
    if hit and now - hit[2] < AUTH_CACHE_S:
        user = User.objects.filter(pk=hit[0], is_active=True).first()
        if user is not None and hmac.compare_digest(user.password, hit[1]):
            return user
        with _auth_lock:
            _auth_cache.pop(digest, None)
    try:
        raw = base64.b64decode(header[6:].strip()).decode("utf-8")
    except Exception:
        return None
    username, sep, password = raw.partition(":")
    if not sep:
        return None
    user = authenticate(request=request, username=username, password=password)
    if user is None or not user.is_active:
        return None
    _cache_put(digest, (user.pk, user.password, now))
    return user


def _unauthorized() -> JsonResponse:
    return JsonResponse({"code": Code.AUTH_FAILURE, "desc": "Authentication failure"}, status=401)


def _run(request: HttpRequest, header: str, sql: str, db: str | None) -> tuple[int, dict[str, Any]]:
    # runs in a pool thread, outside the request's connection handling: close this thread's DB
    # connection like a request's own (else each pool thread keeps one forever, broken or not)
    close_old_connections()
    try:
        user = basic_user(header, request)
        if user is None:
            return 401, {}
        return 200, sql_execute_rest(sql=sql, db=db, user=user)
    finally:
        close_old_connections()


def _sql_text(request: HttpRequest) -> str | None:
    """The body as text, or None when it is over ``TDWEB_SQL_MAX_BYTES`` (announced or read)."""
    limit = int(settings.TDWEB_SQL_MAX_BYTES)
    try:
        announced = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        announced = 0
    if announced > limit:
        return None
    body = request.read(limit + 1)  # not request.body: that is capped by DATA_UPLOAD_MAX_MEMORY_SIZE
    if len(body) > limit:
        return None
    return body.decode("utf-8", errors="replace")


@csrf_exempt
async def rest_sql(request: HttpRequest, db: str | None = None) -> JsonResponse:
    """``POST /rest/sql`` and ``/rest/sql/{db}`` (TDengine REST API)."""
    if request.method != "POST":
        return JsonResponse(
            {"code": Code.INVALID_OPERATION, "desc": "use POST with the SQL text as body"}, status=405
        )
    sql = _sql_text(request)
    if sql is None:
        return JsonResponse(sql_too_long_answer())
    status, answer = await sync_to_async(_run, thread_sensitive=False)(
        request, request.headers.get("Authorization", ""), sql, db
    )
    if status == 401:
        return rest_lockout_answer() if is_locked_out(request) else _unauthorized()
    return JsonResponse(answer, json_dumps_params={"ensure_ascii": False})
