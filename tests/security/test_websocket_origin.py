"""WebSocket handshakes through ``tdweb.asgi.application``: a page of another site must not open the
signed-in user's feeds (cross-site WebSocket hijacking), while producers on ``/ws/notify/`` (not
browsers: no Origin header) keep working with their key (streams_app.routing)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)

OWN = (b"origin", b"http://testserver")
LOCAL = (b"origin", b"http://127.0.0.1:8000")
FOREIGN = (b"origin", b"https://evil.example")


def _cookie(user) -> tuple[bytes, bytes]:  # type: ignore[no-untyped-def]
    c = Client()
    c.force_login(user)
    return (b"cookie", f"sessionid={c.cookies['sessionid'].value}".encode())


async def _handshake(path: str, headers: list[tuple[bytes, bytes]]) -> bool:
    from tdweb.asgi import application

    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect()
    await comm.disconnect(timeout=0.2)
    return connected


@pytest.mark.parametrize("path", ["/ws/inbox/", "/ws/streams/"])
async def test_browser_feeds_accept_only_own_origins(admin, path) -> None:
    cookie = await database_sync_to_async(_cookie)(admin)
    assert await _handshake(path, [OWN, cookie])
    assert await _handshake(path, [LOCAL, cookie])  # the host make up serves on
    assert not await _handshake(path, [FOREIGN, cookie])  # another site's page, with the victim's cookie
    assert not await _handshake(path, [(b"origin", b"null"), cookie])  # sandboxed frame / file://
    assert not await _handshake(path, [cookie])  # no Origin: not a browser of this site


async def test_notify_producers_without_origin_still_connect_with_their_key(admin) -> None:
    inbox = await database_sync_to_async(lambda: admin.inboxes.get())()
    url = f"/ws/notify/{inbox.name}?key={inbox.key}"
    assert await _handshake(url, [])  # tdweb's streams and TDengine send no Origin
    assert await _handshake(f"/ws/notify/{inbox.name}/?key={inbox.key}", [])
    assert not await _handshake(f"/ws/notify/{inbox.name}?key=wrong", [])  # the key still counts
    assert not await _handshake(url, [FOREIGN])  # a browser page of another site is refused
    assert await _handshake(url, [OWN])
