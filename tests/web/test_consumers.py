"""Channels consumers through ``tdweb.asgi.application`` with the real Redis channel layer:
producers notifying an inbox, browsers' inbox feeds, live stream progress."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from spark_workers.runtime.sink import BatchReport
from streams_app.models import Notification, Stream
from streams_app.services.notifications import inbox_get_or_create, notification_ack, notification_ack_all
from streams_app.services.sql import sql_execute
from streams_app.services.stream_control import stream_progress_record

pytestmark = pytest.mark.django_db(transaction=True)

QUIET_S = 0.5  # how long "nothing more arrives" is watched
WAIT_S = 20  # how long an expected frame may take on a loaded machine (a fast one answers at once)
W = 1733284800000
SEED_MESSAGE = {  # seed 000 "Stream Computing Event Notifications", one time-window close event
    "messageId": "unique-message-id-12345",
    "timestamp": 1733284887203,
    "streams": [
        {
            "streamName": "avg_current_stream",
            "events": [
                {
                    "tableName": "t_a667a16127d3b5a18988e32f3e76cd30",
                    "eventType": "WINDOW_CLOSE",
                    "eventTime": 1733284887197,
                    "windowId": "window-id-67890",
                    "windowType": "Time",
                    "windowStart": W,
                    "windowEnd": W + 60_000,
                    "result": {"_wstart": W, "avg(current)": 1.3},
                }
            ],
        }
    ],
}


def _cookie(user) -> list[tuple[bytes, bytes]]:  # type: ignore[no-untyped-def]
    c = Client()
    c.force_login(user)
    return [(b"cookie", f"sessionid={c.cookies['sessionid'].value}".encode())]


def _application():  # type: ignore[no-untyped-def]
    from tdweb.asgi import application  # imported late: building it warns about missing static files

    return application


async def _headers(path: str, user=None) -> list[tuple[bytes, bytes]]:  # type: ignore[no-untyped-def]
    """A browser's handshake headers (its Origin, the session cookie); producers on /ws/notify/
    are not browsers and send neither."""
    cookie = await database_sync_to_async(_cookie)(user) if user is not None else []
    return cookie if path.startswith("/ws/notify/") else [(b"origin", b"http://testserver"), *cookie]


async def _stored(n: int) -> None:
    """Wait (up to ``WAIT_S``) until ``n`` notifications are stored."""
    import asyncio

    for _ in range(int(WAIT_S / 0.05)):
        if await database_sync_to_async(Notification.objects.count)() >= n:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{n} notifications were not stored within {WAIT_S} s")


async def _connect(path: str, user=None) -> WebsocketCommunicator:  # type: ignore[no-untyped-def]
    headers = await _headers(path, user)
    comm = WebsocketCommunicator(_application(), path, headers=headers)
    connected, _ = await comm.connect()
    assert connected, path
    return comm


async def _refused(path: str, user=None) -> int | None:  # type: ignore[no-untyped-def]
    headers = await _headers(path, user)
    comm = WebsocketCommunicator(_application(), path, headers=headers)
    connected, code = await comm.connect()
    assert not connected, path
    # the refused consumer still waits on its channel-layer receive; do not wait the default 1 s
    await comm.disconnect(timeout=0.2)
    return code


@pytest.fixture
def inbox(admin):  # type: ignore[no-untyped-def]
    return admin.inboxes.get()


# ---------------------------------------------------------------------- /ws/notify/ -> /ws/inbox/


async def test_notification_reaches_the_browser_exactly_once(admin, inbox) -> None:
    browser = await _connect("/ws/inbox/", admin)
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 0}
    producer = await _connect(f"/ws/notify/{inbox.name}?key={inbox.key}")
    text = json.dumps(SEED_MESSAGE)
    await producer.send_to(text_data=text)
    await producer.send_to(text_data=text)  # at-least-once delivery: the same message again
    await producer.disconnect()  # returns once the consumer has handled both frames

    frame = await browser.receive_json_from(timeout=WAIT_S)
    assert frame["type"] == "notification"
    n = frame["notification"]
    assert (n["inbox"], n["stream_name"], n["event_type"], n["table_name"], n["window_id"]) == (
        "inbox",
        "avg_current_stream",
        "WINDOW_CLOSE",
        "t_a667a16127d3b5a18988e32f3e76cd30",
        "window-id-67890",
    )
    assert (n["window_start"], n["window_end"], n["event_time"]) == (W, W + 60_000, 1733284887197)
    assert n["message_id"] == "unique-message-id-12345" and n["acknowledged"] is False
    assert n["payload"]["result"] == {"_wstart": W, "avg(current)": 1.3}
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 1}
    assert await browser.receive_nothing(timeout=QUIET_S)  # no second notification
    assert await database_sync_to_async(Notification.objects.count)() == 1
    await browser.disconnect()


async def test_producer_gets_no_reply_and_bad_messages_are_dropped(admin, inbox) -> None:
    producer = await _connect(f"/ws/notify/{inbox.name}/?key={inbox.key}")  # trailing slash also routes
    await producer.send_to(text_data="{not json")
    await producer.send_to(bytes_data=json.dumps(SEED_MESSAGE).encode())  # binary frames are read as UTF-8
    assert await producer.receive_nothing(timeout=QUIET_S)  # TDengine expects no answer frames
    await producer.disconnect()
    assert await database_sync_to_async(Notification.objects.count)() == 1


async def test_only_the_inbox_users_are_told(admin, alice, inbox) -> None:
    alices = await database_sync_to_async(inbox_get_or_create)(name="alice", owner=alice)
    alice_browser = await _connect("/ws/inbox/", alice)
    root_browser = await _connect("/ws/inbox/", admin)
    assert (await alice_browser.receive_json_from(timeout=WAIT_S))["count"] == 0
    assert (await root_browser.receive_json_from(timeout=WAIT_S))["count"] == 0
    producer = await _connect(f"/ws/notify/{inbox.name}?key={inbox.key}")
    await producer.send_to(text_data=json.dumps(SEED_MESSAGE))
    await producer.disconnect()
    assert (await root_browser.receive_json_from(timeout=WAIT_S))["type"] == "notification"
    assert await alice_browser.receive_nothing(timeout=QUIET_S)  # not her inbox
    producer = await _connect(f"/ws/notify/alice?key={alices.key}")
    await producer.send_to(text_data=json.dumps({**SEED_MESSAGE, "messageId": "m2"}))
    await producer.disconnect()
    assert (await alice_browser.receive_json_from(timeout=WAIT_S))["notification"]["inbox"] == "alice"
    assert (await root_browser.receive_json_from(timeout=WAIT_S))["type"] == "unread"  # the first push
    assert (await root_browser.receive_json_from(timeout=WAIT_S))["notification"][
        "inbox"
    ] == "alice"  # staff see all
    await alice_browser.disconnect()
    await root_browser.disconnect()


async def test_producer_with_a_wrong_or_missing_key_is_refused(inbox) -> None:
    for path in (
        f"/ws/notify/{inbox.name}?key=wrong",
        f"/ws/notify/{inbox.name}",
        f"/ws/notify/{inbox.name}?key=",
        f"/ws/notify/nosuchinbox?key={inbox.key}",
    ):
        assert await _refused(path) == 4403, path
    assert await database_sync_to_async(Notification.objects.count)() == 0


async def test_anonymous_browser_sockets_are_refused(db) -> None:
    assert await _refused("/ws/inbox/") == 4401
    assert await _refused("/ws/streams/") == 4401
    assert await _refused("/ws/streams/1/") == 4401


async def test_unread_count_on_connect(admin, inbox) -> None:
    producer = await _connect(f"/ws/notify/{inbox.name}?key={inbox.key}")
    await producer.send_to(text_data=json.dumps(SEED_MESSAGE))
    await producer.disconnect()
    browser = await _connect("/ws/inbox/", admin)
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 1}
    await browser.disconnect()


async def test_acknowledgements_reach_the_other_browsers(admin, alice, inbox) -> None:
    """An acknowledgement (made through any web process) is pushed to every browser of the inbox's
    users: the changed notification and the new unread count (issue 14, several web hosts)."""
    producer = await _connect(f"/ws/notify/{inbox.name}?key={inbox.key}")
    await producer.send_to(text_data=json.dumps(SEED_MESSAGE))
    await producer.send_to(
        text_data=json.dumps(
            {
                **SEED_MESSAGE,
                "messageId": "m2",
                "streams": [
                    {
                        **SEED_MESSAGE["streams"][0],
                        "events": [{**SEED_MESSAGE["streams"][0]["events"][0], "windowId": "w2"}],
                    }
                ],
            }
        )
    )
    await producer.disconnect()
    await _stored(2)  # both messages ingested before the browser asks for its count
    browser = await _connect("/ws/inbox/", admin)
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 2}
    first = await database_sync_to_async(Notification.objects.order_by("id").first)()
    await database_sync_to_async(notification_ack)(notification=first)
    frame = await browser.receive_json_from(timeout=WAIT_S)
    assert frame["type"] == "notification"
    assert (frame["notification"]["id"], frame["notification"]["acknowledged"]) == (first.pk, True)
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 1}
    await database_sync_to_async(notification_ack)(notification=first)  # already acknowledged
    assert await browser.receive_nothing(timeout=QUIET_S)
    assert await database_sync_to_async(notification_ack_all)(user=admin) == 1
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 0}
    await browser.disconnect()


async def test_a_quiet_socket_stays_subscribed(admin) -> None:
    """Nothing arrives for longer than the channel layer's blocking receive and redis-py's default
    socket timeout together; the socket must still be connected and get the next message (redis-py 8
    tore it down: channels_redis#422; settings ``CHANNEL_REDIS_SOCKET_TIMEOUT_S``). Cost: ~11 s."""
    from channels.layers import get_channel_layer
    from redis._defaults import DEFAULT_SOCKET_TIMEOUT

    layer = get_channel_layer()
    browser = await _connect("/ws/inbox/", admin)
    assert (await browser.receive_json_from(timeout=WAIT_S))["type"] == "unread"
    assert await browser.receive_nothing(timeout=layer.brpop_timeout + DEFAULT_SOCKET_TIMEOUT + 1)
    await layer.group_send(f"inbox.{admin.pk}", {"type": "inbox.unread", "count": 42})
    assert await browser.receive_json_from(timeout=WAIT_S) == {"type": "unread", "count": 42}
    await browser.disconnect()


# ---------------------------------------------------------------------- /ws/streams/


def _stream(user, name: str) -> int:  # type: ignore[no-untyped-def]
    sql_execute(
        sql=f"CREATE STREAM {name} INTO power.{name}_out AS SELECT _wstart, count(*) FROM power.meters "
        "INTERVAL(10s)",
        user=user,
    )
    return Stream.objects.get(name=name).pk


@pytest.fixture
def streams(power, admin, alice):  # type: ignore[no-untyped-def]
    return _stream(admin, "s_root"), _stream(alice, "s_alice")


async def test_stream_socket_receives_progress(admin, streams) -> None:
    sid = streams[0]
    ws = await _connect(f"/ws/streams/{sid}/", admin)
    report = BatchReport(
        batch_id=7, input_rows=120, output_rows=3, duration_ms=400.0, watermark_ms=W, open_windows=2
    )
    await database_sync_to_async(stream_progress_record)(stream_id=sid, report=report)
    msg = await ws.receive_json_from(timeout=WAIT_S)
    assert msg["type"] == "stream.progress" and msg["stream_id"] == sid
    p = msg["progress"]
    assert (p["batch_id"], p["input_rows"], p["output_rows"], p["watermark_ms"], p["open_windows"]) == (
        7,
        120,
        3,
        W,
        2,
    )
    assert p["rows_per_s"] == 300.0 and p["created_at"]
    # the first micro-batch made the starting stream RUNNING: its page is told
    status = await ws.receive_json_from(timeout=WAIT_S)
    assert (status["type"], status["stream"]["id"], status["stream"]["status"]) == (
        "stream.status",
        sid,
        "running",
    )
    # another stream's progress is not sent to this stream's page
    await database_sync_to_async(stream_progress_record)(stream_id=streams[1], report=BatchReport(batch_id=1))
    assert await ws.receive_nothing(timeout=QUIET_S)
    await ws.disconnect()


async def test_stream_socket_of_an_invisible_stream_is_refused(alice, streams) -> None:
    assert await _refused(f"/ws/streams/{streams[0]}/", alice) == 4404
    assert await _refused("/ws/streams/999999/", alice) == 4404
    ws = await _connect(f"/ws/streams/{streams[1]}/", alice)  # her own
    await ws.disconnect()


async def test_streams_list_socket_filters_by_visibility(admin, alice, streams) -> None:
    s_root, s_alice = streams
    alice_ws = await _connect("/ws/streams/", alice)
    root_ws = await _connect("/ws/streams/", admin)
    await database_sync_to_async(stream_progress_record)(stream_id=s_root, report=BatchReport(batch_id=1))
    assert (await root_ws.receive_json_from(timeout=WAIT_S))["stream_id"] == s_root
    assert (await root_ws.receive_json_from(timeout=WAIT_S))["stream"]["id"] == s_root  # now running
    assert await alice_ws.receive_nothing(timeout=QUIET_S)
    await database_sync_to_async(stream_progress_record)(stream_id=s_alice, report=BatchReport(batch_id=1))
    for ws in (alice_ws, root_ws):
        assert (await ws.receive_json_from(timeout=WAIT_S))["stream_id"] == s_alice
        assert (await ws.receive_json_from(timeout=WAIT_S))["stream"]["id"] == s_alice
    # status changes (pause) are pushed too, with the stream's row
    from streams_app.services.stream_control import stream_action

    def pause() -> None:
        stream_action(stream=Stream.objects.get(pk=s_alice), action="pause")

    await database_sync_to_async(pause)()
    status = await alice_ws.receive_json_from(timeout=WAIT_S)
    assert status["type"] == "stream.status" and status["stream"]["id"] == s_alice
    assert (status["stream"]["status"], status["stream"]["desired_state"]) == ("paused", "paused")
    await alice_ws.disconnect()
    await root_ws.disconnect()


def _rest(user, path: str):  # type: ignore[no-untyped-def]
    c = Client()
    c.force_login(user)
    r = c.get(path)
    assert r.status_code == 200, r.content
    return r.json()


async def test_websocket_messages_carry_the_rest_answers(admin, inbox, streams) -> None:
    # one shape per resource (streams_app/serializers.py): the stream.status and
    # inbox.notification messages are the REST API's JSON of the same rows
    sid = streams[0]
    ws = await _connect(f"/ws/streams/{sid}/", admin)

    def pause() -> None:
        from streams_app.services.stream_control import stream_action

        stream_action(stream=Stream.objects.get(pk=sid), action="pause")

    await database_sync_to_async(pause)()
    pushed = (await ws.receive_json_from(timeout=WAIT_S))["stream"]
    answered = await database_sync_to_async(_rest)(admin, f"/api/v1/streams/{sid}/")
    assert pushed["status"] == "paused"
    assert set(answered) - set(pushed) == {"spec"}  # the detail answer adds the spec
    assert {k: answered[k] for k in pushed} == pushed
    await ws.disconnect()

    browser = await _connect("/ws/inbox/", admin)
    await browser.receive_json_from(timeout=WAIT_S)  # the unread count
    producer = await _connect(f"/ws/notify/{inbox.name}?key={inbox.key}")
    await producer.send_to(text_data=json.dumps(SEED_MESSAGE))
    await producer.disconnect()
    pushed_n = (await browser.receive_json_from(timeout=WAIT_S))["notification"]
    page = await database_sync_to_async(_rest)(admin, "/api/v1/notifications/")
    assert page["results"] == [pushed_n]
    await browser.disconnect()
