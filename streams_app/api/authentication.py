"""Authentication of the API and the lockout answer of every password check.

- ``LockoutBackend``: the authentication backend in front of every password check (django-axes).
- ``ApiTokenAuthentication``: DRF authentication of ``Authorization: Token <key>`` against the
  hashed ``ApiToken`` store (``streams_app.services.api_tokens``).
- ``ApiBasicAuthentication``: DRF authentication of ``Authorization: Basic`` (the credentials a
  TDengine REST client holds) through ``authenticate()`` and so through the lockout.
- ``lockout_response``: django-axes' ``AXES_LOCKOUT_CALLABLE``. After ``TDWEB_AUTH_FAILURE_LIMIT``
  failed password checks of one user name from one client address within
  ``TDWEB_AUTH_COOLOFF_S``, axes refuses further checks of that pair without looking at the
  password until the cool-off has passed (docs/decisions.md "Authentication throttling"); this is
  the answer then, in the form of the door that was knocked on: ``/rest/sql`` HTTP 401 with
  TDengine's ``{code, desc}``, ``/influxdb/`` HTTP 401 with taosAdapter's ``{code, message}``,
  ``/api/`` HTTP 429 ``{"detail"}`` with ``Retry-After``, the sign-in
  pages HTTP 429 with the sign-in form and the reason.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth import authenticate
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BasicAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled

from spark_workers.errors import Code
from streams_app.services.api_tokens import api_token_user


class LockoutBackend(AxesStandaloneBackend):
    """First of ``AUTHENTICATION_BACKENDS``: django-axes' lockout check before any password check.

    Calls of ``authenticate()`` without a request are in-process (management commands, the test
    client's ``login()``), not a door a client can knock on: they pass unthrottled instead of
    failing with axes' ``AxesBackendRequestParameterRequired``. Every network door passes its
    request (the sign-in form, ``POST /api/v1/auth/token/``, ``/rest/sql``).
    """

    def authenticate(  # type: ignore[override]
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class ApiTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` (DRF's header format) checked against ``ApiToken.digest``.

    Raises:
        AuthenticationFailed: unknown key (``Invalid token.``) or inactive user.
    """

    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[Any, None]:
        user = api_token_user(key=key)
        if user is None:
            raise AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        return user, None


class ApiBasicAuthentication(BasicAuthentication):
    """``Authorization: Basic`` checked by ``authenticate()`` with the Django request, so the
    lockout backend counts every wrong password (``LockoutBackend``, docs/decisions.md
    "Authentication throttling"). No ``WWW-Authenticate: Basic`` challenge is sent: the API's
    401 names ``Token`` (a browser would otherwise pop up its own password dialog).

    Raises:
        AuthenticationFailed: wrong user name or password, inactive user (HTTP 401).
        Throttled: the user name and address are locked out (HTTP 429 with ``Retry-After``).
    """

    def authenticate_credentials(self, userid: str, password: str, request: Any = None) -> tuple[Any, None]:
        django_request = getattr(request, "_request", request)
        user = authenticate(request=django_request, username=userid, password=password)
        if is_locked_out(django_request):
            raise Throttled(wait=cooloff_seconds(), detail=lockout_message())
        if user is None:
            raise AuthenticationFailed("Invalid username/password.")
        if not user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        return user, None


class ApiBasicScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme ``basicAuth`` of :class:`ApiBasicAuthentication`."""

    target_class = "streams_app.api.authentication.ApiBasicAuthentication"
    name = "basicAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "basic"}


def cooloff_seconds() -> int:
    """The lockout period in whole seconds (``AXES_COOLOFF_TIME``, from ``TDWEB_AUTH_COOLOFF_S``)."""
    cooloff = settings.AXES_COOLOFF_TIME
    seconds = cooloff.total_seconds() if isinstance(cooloff, dt.timedelta) else float(cooloff) * 3600
    return max(1, round(seconds))


def lockout_message() -> str:
    """The reason given with every lockout answer, naming the cool-off in seconds."""
    return f"too many failed sign-in attempts: try again in {cooloff_seconds()} s"


def is_locked_out(request: Any) -> bool:
    """True when axes refused a password check of this request (``request.axes_locked_out``)."""
    return bool(getattr(request, "axes_locked_out", False))


def rest_lockout_answer() -> JsonResponse:
    """``/rest/sql``: HTTP 401 ``{"code": 0x0357, "desc": "Authentication failure: ..."}``."""
    return JsonResponse(
        {"code": Code.AUTH_FAILURE, "desc": f"Authentication failure: {lockout_message()}"}, status=401
    )


def influx_lockout_answer() -> JsonResponse:
    """``/influxdb/v1/write``: HTTP 401 ``{"code": "forbidden", "message": ...}`` (taosAdapter's
    answer to a refused authentication)."""
    return JsonResponse(
        {"code": "forbidden", "message": f"Authentication failure: {lockout_message()}"}, status=401
    )


def api_lockout_answer() -> JsonResponse:
    """``/api/``: HTTP 429 ``{"detail": ...}`` with ``Retry-After`` (seconds)."""
    response = JsonResponse({"detail": lockout_message()}, status=429)
    response["Retry-After"] = str(cooloff_seconds())
    return response


def lockout_response(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """``AXES_LOCKOUT_CALLABLE``: the answer to a request whose password check axes refused (see
    module docstring). ``original_response`` and ``credentials`` are not used (axes' async
    middleware passes the credentials in the second place)."""
    path = request.path_info
    if path == "/rest/sql" or path.startswith("/rest/sql/"):
        return rest_lockout_answer()
    if path.startswith("/api/"):
        return api_lockout_answer()
    if path.startswith("/influxdb/"):
        return influx_lockout_answer()
    response = render(
        request,
        "streams_app/login.html",
        {"lockout": lockout_message(), "next": request.POST.get("next") or request.GET.get("next", "/")},
        status=429,
    )
    response["Retry-After"] = str(cooloff_seconds())
    return response
