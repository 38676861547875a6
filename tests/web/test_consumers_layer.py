"""Channels consumers when Redis (the channel layer) is slow or gone (issue 16 item 9): a failed
read is retried, then the socket is closed with 1013 and a one-line warning; no exception escapes
the consumer (``WebsocketCommunicator`` re-raises whatever the application raised)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.exceptions
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels.testing import WebsocketCommunicator

from streams_app import consumers
from tests.web.test_consumers import _application, _headers

pytestmark = pytest.mark.django_db(transaction=True)

SILENT_PORT = 18200  # this helper's ports: 18200-18219


class FlakyLayer(InMemoryChannelLayer):
    """An in-memory layer whose next ``fail`` receives raise Redis's ``TimeoutError``."""

    fail = 0

    async def receive(self, channel: str) -> dict[str, Any]:
        if FlakyLayer.fail > 0:
            FlakyLayer.fail -= 1
            raise redis.exceptions.TimeoutError("Timeout reading from 127.0.0.1:6379")
        return await super().receive(channel)


@pytest.fixture(autouse=True)
def _app_built() -> None:
    """Build the ASGI application (it configures logging) before the test's log capture starts."""
    _application()


@pytest.fixture
async def silent_redis(settings) -> AsyncIterator[None]:  # type: ignore[no-untyped-def]
    """A TCP server that accepts Redis connections and never answers; the channel layer points at
    it with a 0.3 s socket timeout."""

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", SILENT_PORT)
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": f"redis://127.0.0.1:{SILENT_PORT}/0", "socket_timeout": 0.3}]},
        }
    }
    yield
    server.close()
    await server.wait_closed()


@pytest.fixture
def flaky(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "tests.web.test_consumers_layer.FlakyLayer"}}
    monkeypatch.setattr(consumers, "LAYER_RETRY_DELAY_S", 0.01)
    FlakyLayer.fail = 0
    yield FlakyLayer
    FlakyLayer.fail = 0


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The consumers' log lines; none may be above WARNING or carry a traceback."""
    records = [r for r in caplog.records if r.name == consumers.__name__]
    assert all(r.levelno <= logging.WARNING and r.exc_info is None for r in records)
    lines = [r.getMessage() for r in records]
    assert all("\n" not in line for line in lines)
    return lines


async def _communicator(path: str, user=None) -> WebsocketCommunicator:  # type: ignore[no-untyped-def]
    return WebsocketCommunicator(_application(), path, headers=await _headers(path, user))


async def test_joining_a_group_on_a_silent_redis_refuses_the_socket(silent_redis, admin, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=consumers.__name__)
    comm = await _communicator("/ws/streams/", admin)
    connected, code = await comm.connect(timeout=5)  # raises if the consumer raised
    assert (connected, code) == (False, consumers.CLOSE_TRY_AGAIN_LATER)
    await comm.wait(timeout=1)  # the application ended without an exception
    closed = [line for line in _warnings(caplog) if "channel layer unavailable" in line]
    assert len(closed) == 1 and "(TimeoutError: Timeout reading from 127.0.0.1:18200)" in closed[0]


async def test_receiving_from_a_silent_redis_retries_then_closes(
    silent_redis, admin, monkeypatch, caplog
) -> None:
    """``/ws/notify/`` joins no group: the socket is accepted, then its channel's reads time out."""
    monkeypatch.setattr(consumers, "LAYER_RETRY_DELAY_S", 0.01)
    caplog.set_level(logging.WARNING, logger=consumers.__name__)
    inbox = await admin.inboxes.aget()
    comm = await _communicator(f"/ws/notify/{inbox.name}?key={inbox.key}")
    connected, _ = await comm.connect(timeout=5)
    assert connected
    closing = await comm.receive_output(timeout=5)
    assert closing == {"type": "websocket.close", "code": consumers.CLOSE_TRY_AGAIN_LATER}
    await comm.wait(timeout=1)
    lines = _warnings(caplog)
    retries = [line for line in lines if "receive failed" in line]
    assert [line.rsplit(" ", 1)[1] for line in retries] == [
        str(i + 1) for i in range(consumers.LAYER_RETRIES)
    ]
    assert sum("channel layer unavailable" in line for line in lines) == 1


async def test_a_transient_timeout_is_retried_and_messages_still_arrive(flaky, admin, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=consumers.__name__)
    comm = await _communicator("/ws/streams/", admin)
    flaky.fail = 2  # the next two reads of the consumer's channel time out
    assert (await comm.connect(timeout=5))[0]
    progress = {"batch_id": 7, "input_rows": 3}
    await get_channel_layer().group_send(
        "streams", {"type": "stream.progress", "stream_id": 1, "progress": progress}
    )
    assert await comm.receive_json_from(timeout=5) == {
        "type": "stream.progress",
        "stream_id": 1,
        "progress": progress,
    }
    lines = _warnings(caplog)
    assert len([line for line in lines if "receive failed" in line]) == 2
    await comm.disconnect()


async def test_a_lasting_timeout_closes_the_socket(flaky, admin, caplog) -> None:
    comm = await _communicator("/ws/inbox/", admin)
    assert (await comm.connect(timeout=5))[0]
    assert (await comm.receive_json_from(timeout=5))["type"] == "unread"
    flaky.fail = 1000  # from the read after the next message on
    await get_channel_layer().group_send(f"inbox.{admin.pk}", {"type": "inbox.unread", "count": 4})
    assert await comm.receive_json_from(timeout=5) == {"type": "unread", "count": 4}
    closing = await comm.receive_output(timeout=5)
    assert closing == {"type": "websocket.close", "code": consumers.CLOSE_TRY_AGAIN_LATER}
    await comm.wait(timeout=1)
    assert sum("channel layer unavailable" in line for line in _warnings(caplog)) == 1
