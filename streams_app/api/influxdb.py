"""TDengine taosAdapter's InfluxDB v1 write endpoint: ``POST /influxdb/v1/write`` (TDengine manual,
taosAdapter, "InfluxDB v1 write interface"; ``spark_workers.statements.schemaless`` for the
mapping).

Query parameters: ``db`` (required), ``precision`` (``ns`` default, ``u``, ``ms``, ``s``, ``m``,
``h``), ``u`` / ``p`` (user and password; else HTTP Basic, as taosAdapter's ``getAuth``). The
answers are taosAdapter's: 204 with no body when the lines are written; 400 ``{code, message, op,
err, line}`` without ``db``; 401 ``{"code": "forbidden", "message": ...}`` for a failed
authentication (also while the user name is locked out, ``streams_app.api.authentication``); 500
``{"code": "internal error", "message": "[0x3002] Invalid data format: ..."}`` for a request
TDengine refuses (the TDengine code in brackets, as taosAdapter prints a ``TaosError``).

A ``Content-Encoding: gzip`` body is inflated (Telegraf's default); other encodings answer 415.
Differences: a body over ``TDWEB_INFLUX_MAX_BYTES`` (4 MiB, after inflating) answers 413 ``{code, message}``
(taosAdapter reads any size); ``ttl``, ``table_name_key`` and InfluxDB's ``rp`` are refused with
400 naming them (tdweb drops no table by age, names subtables by TDengine's MD5 rule only and has
no retention policies; taosAdapter ignores ``rp``); InfluxDB's ``consistency`` (any / one / quorum
/ all) is met by every answer, which comes after the commit; the database must
exist (the request does not create it).
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from spark_workers.errors import TdError
from streams_app.api.authentication import influx_lockout_answer, is_locked_out
from streams_app.api.rest_sql import basic_user
from streams_app.request_id import internal_error_answer
from streams_app.services.sql import influx_write

_REFUSED_PARAMS = ("ttl", "table_name_key", "rp")


def _bad_request(message: str, op: str) -> JsonResponse:
    return JsonResponse(
        {"code": "illegal param", "message": message, "op": op, "err": message, "line": 0}, status=400
    )


def _gunzip(raw: bytes, limit: int) -> bytes | None:
    """A gzip body (Telegraf's ``content_encoding = "gzip"``) inflated to at most ``limit + 1``
    bytes (a bomb stops there and is answered 413); None when it is not gzip."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return d.decompress(raw, limit + 1)
    except zlib.error:
        return None


def _auth_header(request: HttpRequest) -> str:
    """The credentials as a Basic header: ``u`` / ``p`` override the Authorization header's."""
    header = request.headers.get("Authorization", "").strip()
    user = request.GET.get("u")
    password = request.GET.get("p")
    if not user and not password:
        return header
    if header.startswith("Basic "):
        try:
            hu, _, hp = base64.b64decode(header[6:].strip()).decode("utf-8").partition(":")
        except Exception:
            hu, hp = "", ""
        user, password = user or hu, password or hp
    return "Basic " + base64.b64encode(f"{user or ''}:{password or ''}".encode()).decode()


def _run(request: HttpRequest, header: str, body: str, db: str, precision: str) -> tuple[int, dict[str, Any]]:
    close_old_connections()
    try:
        user = basic_user(header, request)
        if user is None:
            return 401, {}
        influx_write(body=body, db=db, precision=precision, user=user)
        return 204, {}
    except TdError as e:
        return 500, {"code": "internal error", "message": f"[0x{e.code:x}] {e.desc}"}
    except Exception as e:  # never an exception's text to the client
        answer = internal_error_answer(e, where="influx_write")
        return 500, {"code": "internal error", "message": answer["desc"]}
    finally:
        close_old_connections()


@csrf_exempt
async def influxdb_write(request: HttpRequest) -> HttpResponse:
    """``POST /influxdb/v1/write?db=...`` (module docstring)."""
    if request.method != "POST":
        return JsonResponse(
            {"code": "method not allowed", "message": "use POST with line protocol as body"}, status=405
        )
    db = request.GET.get("db", "")
    if not db:
        return JsonResponse(
            {
                "code": "not found",
                "message": "db required",
                "op": "get db query",
                "err": "db required",
                "line": 0,
            },
            status=400,
        )
    for name in _REFUSED_PARAMS:
        if request.GET.get(name):
            return _bad_request(f"{name} is not supported by tdweb", f"parse {name}")
    limit = int(settings.TDWEB_INFLUX_MAX_BYTES)
    try:
        announced = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        announced = 0
    raw = b"" if announced > limit else request.read(limit + 1)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding == "gzip" and len(raw) <= limit:
        inflated = _gunzip(raw, limit)
        if inflated is None:
            return _bad_request("the body is not gzip", "read line")
        raw = inflated
    elif encoding not in ("identity", ""):
        return JsonResponse(
            {"code": "unsupported", "message": f"Content-Encoding {encoding[:32]}"}, status=415
        )
    if announced > limit or len(raw) > limit:
        return JsonResponse({"code": "too large", "message": f"the body is over {limit} bytes"}, status=413)
    status, answer = await sync_to_async(_run, thread_sensitive=False)(
        request,
        _auth_header(request),
        raw.decode("utf-8", errors="replace"),
        db,
        request.GET.get("precision") or "ns",
    )
    if status == 401:
        if is_locked_out(request):
            return influx_lockout_answer()
        return JsonResponse({"code": "forbidden", "message": "Authentication failure"}, status=401)
    if status == 204:
        return HttpResponse(status=204)
    return JsonResponse(answer, status=status, json_dumps_params={"ensure_ascii": False})
