"""HTML pages: each mounts the React frontend with its page name (frontend/src/main.tsx)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


def _page(request: HttpRequest, page: str, **data: object) -> HttpResponse:
    return render(request, "streams_app/page.html", {"page": page, "data": data})


@login_required
@ensure_csrf_cookie
def streams_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "streams")


@login_required
@ensure_csrf_cookie
def stream_page(request: HttpRequest, stream_id: int) -> HttpResponse:
    return _page(request, "stream", stream_id=stream_id)


@login_required
@ensure_csrf_cookie
def create_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "create")


@login_required
@ensure_csrf_cookie
def tables_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "tables")


@login_required
@ensure_csrf_cookie
def inbox_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "inbox")


@login_required
@ensure_csrf_cookie
def designer_page(request: HttpRequest, draft_id: int | None = None) -> HttpResponse:
    return _page(request, "designer", draft_id=draft_id)


@login_required
@ensure_csrf_cookie
def dashboard_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "dashboard")
