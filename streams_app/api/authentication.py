"""Authentication of the API and the lockout answer of every password check.

- ``LockoutBackend``: the authentication backend in front of every password check (django-axes).
- ``ApiTokenAuthentication``: DRF authentication of ``Authorization: Token <key>`` against the
  hashed ``ApiToken`` store (``streams_app.services.api_tokens``).
- ``lockout_response``: django-axes' ``AXES_LOCKOUT_CALLABLE``. After ``TDWEB_AUTH_FAILURE_LIMIT``
  failed password checks of one user name from one client address within
  ``TDWEB_AUTH_COOLOFF_S``, axes refuses further checks of that pair without looking at the
  password until the cool-off has passed (docs/decisions.md "Authentication throttling"); this is
  the answer then, in the form of the door that was knocked on: ``/rest/sql`` HTTP 401 with
  TDengine's ``{code, desc}``, ``/api/`` HTTP 429 ``{"detail"}`` with ``Retry-After``, the sign-in
  pages HTTP 429 with the sign-in form and the reason.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

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
    response = render(
        request,
        "streams_app/login.html",
        {"lockout": lockout_message(), "next": request.POST.get("next") or request.GET.get("next", "/")},
        status=429,
    )
    response["Retry-After"] = str(cooloff_seconds())
    return response
