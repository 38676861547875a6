"""HTML pages (streams_app.views): each mounts the frontend with its page name; sign-in required."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db

PAGES = [
    ("/", "streams"),
    ("/streams/new/", "create"),
    ("/streams/42/", "stream"),
    ("/tables/", "tables"),
    ("/inbox/", "inbox"),
]


@pytest.mark.parametrize(("url", "page"), PAGES)
def test_pages_need_sign_in(client, url, page) -> None:
    r = client.get(url)
    assert r.status_code == 302 and r["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.parametrize(("url", "page"), PAGES)
def test_pages_mount_the_frontend(client, alice, url, page) -> None:
    client.force_login(alice)
    r = client.get(url)
    assert r.status_code == 200
    html = r.content.decode()
    root = re.search(r'<div id="root"[^>]*>', html, re.S).group(0)
    assert (
        f'data-page="{page}"' in root and 'data-username="alice"' in root and 'data-is-staff="false"' in root
    )
    assert ('data-stream-id="42"' in root) == (page == "stream")
    assert re.search(r'data-csrf="[A-Za-z0-9]{32,}"', root)
    assert "csrftoken" in r.cookies  # the frontend's POSTs need it
    assert re.search(r'<script type="module"[^>]+src="/static/assets/[^"]+\.js"', html)


def test_sign_in_with_the_admin_password(client, admin) -> None:
    assert client.get("/accounts/login/").status_code == 200
    bad = client.post("/accounts/login/", {"username": "root", "password": "nope"})
    assert bad.status_code == 200 and "_auth_user_id" not in client.session  # the form again, not signed in
    r = client.post("/accounts/login/", {"username": "root", "password": "taosdata"})
    assert r.status_code == 302 and r["Location"] == "/"
    assert client.session["_auth_user_id"] == str(admin.pk)
    assert client.get("/").status_code == 200
