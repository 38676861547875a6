"""The inbox's groups, bulk acknowledgement by filter, and the stream page's secrets and database
(issue 16, items 4 and 9): ``/api/v1/notifications/`` (groups, ack-all with the list's filters),
``/api/v1/streams/<id>/sql/reveal/`` and a legacy stream's database."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from streams_app.models import Notification, Stream
from streams_app.services.notifications import inbox_get_or_create, notification_ingest
from streams_app.services.users import DEFAULT_INBOX
from tests.web.conftest import api_client, root_sql

pytestmark = pytest.mark.django_db


def _message(mid: str, stream: str, events: list[tuple[str, str, int]]) -> str:
    """A TDengine notification message (seed 002 "Notification Content") of ``stream`` with one
    event per ``(tableName, eventType, windowStart)``."""
    return json.dumps(
        {
            "messageId": mid,
            "timestamp": 1733284887203,
            "streams": [
                {
                    "streamName": stream,
                    "events": [
                        {
                            "tableName": table,
                            "eventType": etype,
                            "eventTime": ws + 70_000,
                            "windowId": f"{stream}-{table}-{etype}-{ws}",
                            "windowStart": ws,
                            "windowEnd": ws + 60_000,
                        }
                        for table, etype, ws in events
                    ],
                }
            ],
        }
    )


# (inbox, stream, tableName, eventType, windowStart) of every event sent below
EVENTS = [
    ("root", "s_root", "t_r1", "WINDOW_CLOSE", 0),
    ("root", "s_root", "t_r1", "WINDOW_OPEN", 60_000),
    ("root", "shared", "t_a1", "WINDOW_CLOSE", 0),  # same stream and table names as alice's
    ("alice", "shared", "t_a1", "WINDOW_CLOSE", 0),
    ("alice", "shared", "t_a1", "WINDOW_OPEN", 60_000),
    ("alice", "shared", "t_a2", "WINDOW_CLOSE", 0),
    ("alice", "a2", "t_a1", "WINDOW_CLOSE", 120_000),
]


@pytest.fixture
def boxes(admin, alice):  # type: ignore[no-untyped-def]
    """root's inbox and alice's, holding ``EVENTS`` (one message per event)."""
    inboxes = {"root": admin.inboxes.get(), "alice": inbox_get_or_create(name="alice", owner=alice)}
    for i, (box, stream, table, etype, ws) in enumerate(EVENTS):
        notification_ingest(inbox=inboxes[box], text=_message(f"m{i}", stream, [(table, etype, ws)]))
    return inboxes


def _unread(box: str) -> list[tuple[str, str, str, int]]:
    name = DEFAULT_INBOX if box == "root" else box
    rows = Notification.objects.filter(inbox__name=name, acknowledged=False)
    return sorted(rows.values_list("stream_name", "table_name", "event_type", "window_start"))


def _expected(box: str, **drop: Any) -> list[tuple[str, str, str, int]]:
    """The events of ``box`` left unread after acknowledging those matching ``drop`` (computed
    from ``EVENTS``, not by the code under test)."""
    keys = {"stream": 1, "group": 2, "event_type": 3}

    def matches(e: tuple[str, str, str, str, int]) -> bool:
        return all(e[keys[k]] == v for k, v in drop.items())

    return sorted((e[1], e[2], e[3], e[4]) for e in EVENTS if e[0] == box and not (drop and matches(e)))


def test_ack_all_takes_the_lists_filters(boxes, alice_api) -> None:
    r = alice_api.post("/api/v1/notifications/ack-all/?stream=shared&event_type=WINDOW_CLOSE")
    assert r.status_code == 200 and r.json() == {"updated": 2}
    acked = [("shared", "t_a1", "WINDOW_CLOSE", 0), ("shared", "t_a2", "WINDOW_CLOSE", 0)]
    assert _unread("alice") == sorted(set(_expected("alice")) - set(acked))
    assert alice_api.post("/api/v1/notifications/ack-all/?group=t_a1").json() == {"updated": 2}
    assert _unread("alice") == []
    assert _unread("root") == _expected("root")  # nothing of root's moved


def test_ack_all_by_group_only_touches_that_group(boxes, alice_api) -> None:
    assert alice_api.post("/api/v1/notifications/ack-all/?group=t_a2").json() == {"updated": 1}
    assert _unread("alice") == _expected("alice", group="t_a2")


def test_a_user_cannot_acknowledge_another_users_notifications_through_the_filters(boxes, alice_api) -> None:
    for query in ("stream=s_root", "group=t_r1", "stream=s_root&event_type=WINDOW_OPEN"):
        assert alice_api.post(f"/api/v1/notifications/ack-all/?{query}").json() == {"updated": 0}
        assert _unread("root") == _expected("root"), query
    refused = alice_api.post("/api/v1/notifications/ack-all/?inbox=inbox")  # no such filter
    assert refused.status_code == 400 and "inbox" in refused.json()
    assert _unread("root") == _expected("root") and _unread("alice") == _expected("alice")
    # root's notification of the stream and table alice also has: her filter reaches only hers
    assert alice_api.post("/api/v1/notifications/ack-all/?stream=shared&group=t_a1").json() == {"updated": 2}
    assert _unread("root") == _expected("root")
    assert ("shared", "t_a1", "WINDOW_CLOSE", 0) in _unread("root")


def test_the_list_filters_by_group(boxes, alice_api) -> None:
    body = alice_api.get("/api/v1/notifications/?group=t_a1").json()
    want = [e for e in EVENTS if e[0] == "alice" and e[2] == "t_a1"]
    assert body["count"] == len(want)
    assert {n["table_name"] for n in body["results"]} == {"t_a1"}


def test_groups_count_unread_per_stream_and_table(boxes, alice_api) -> None:
    groups = alice_api.get("/api/v1/notifications/groups/").json()
    want: dict[tuple[str, str], int] = {}
    for box, stream, table, _e, _w in EVENTS:
        if box == "alice":
            want[(stream, table)] = want.get((stream, table), 0) + 1
    assert {(g["stream_name"], g["table_name"]): g["total"] for g in groups} == want
    assert all(g["unread"] == g["total"] and g["tags"] == {} for g in groups)  # no such streams here
    assert [g["unread"] for g in groups] == sorted((g["unread"] for g in groups), reverse=True)
    only = alice_api.get("/api/v1/notifications/groups/?stream=a2").json()
    assert [(g["stream_name"], g["table_name"]) for g in only] == [("a2", "t_a1")]


STREAM = (
    "CREATE STREAM avg_s INTO power.avg_out TAGS (loc VARCHAR(64)) AS\n"
    "  SELECT _wstart, avg(current) AS avg_current FROM power.meters PARTITION BY location AS loc "
    "INTERVAL(10s)"
)


def test_notifications_carry_their_groups_tags(power, alice, alice_api) -> None:
    r = alice_api.post("/api/v1/streams/", {"sql": STREAM}, format="json")
    assert r.status_code == 201, r.content
    # the output subtable a group writes to, with the tag value of its PARTITION BY column
    root_sql("CREATE TABLE power.t_sf USING power.avg_out TAGS ('California.SanFrancisco')")
    inbox = inbox_get_or_create(name="alice", owner=alice)
    notification_ingest(
        inbox=inbox,
        text=_message("m1", "avg_s", [("t_sf", "WINDOW_CLOSE", 0), ("t_gone", "WINDOW_CLOSE", 0)]),
    )
    listed = {n["table_name"]: n for n in alice_api.get("/api/v1/notifications/").json()["results"]}
    assert listed["t_sf"]["group_tags"] == {"loc": "California.SanFrancisco"}
    assert listed["t_gone"]["group_tags"] == {}  # no such subtable: the page shows tableName
    groups = {g["table_name"]: g["tags"] for g in alice_api.get("/api/v1/notifications/groups/").json()}
    assert groups == {"t_sf": {"loc": "California.SanFrancisco"}, "t_gone": {}}


def test_a_message_to_ones_own_inbox_does_not_read_another_users_tags(
    power, admin, alice, root_api, alice_api
) -> None:
    assert (
        root_api.post("/api/v1/streams/", {"sql": STREAM}, format="json").status_code == 201
    )  # root's stream
    root_sql("CREATE TABLE power.t_sf USING power.avg_out TAGS ('California.SanFrancisco')")
    text = _message("m1", "avg_s", [("t_sf", "WINDOW_CLOSE", 0)])
    notification_ingest(inbox=inbox_get_or_create(name="alice", owner=alice), text=text)
    notification_ingest(inbox=admin.inboxes.get(), text=text)
    (mine,) = alice_api.get("/api/v1/notifications/").json()["results"]
    assert mine["table_name"] == "t_sf" and mine["group_tags"] == {}  # the stream is root's
    assert alice_api.get("/api/v1/notifications/groups/").json()[0]["tags"] == {}
    roots = [n for n in root_api.get("/api/v1/notifications/").json()["results"] if n["inbox"] != "alice"]
    assert [n["group_tags"] for n in roots] == [{"loc": "California.SanFrancisco"}]


# ---------------------------------------------------------------------- the stream page


def test_a_legacy_streams_database_is_its_source_tables(power, alice_api) -> None:
    body = alice_api.post("/api/v1/streams/", {"sql": STREAM}, format="json").json()
    assert Stream.objects.get(pk=body["id"]).db == ""  # a legacy stream's name is in no database
    assert body["db"] == "power"  # FROM power.meters
    assert alice_api.get(f"/api/v1/streams/{body['id']}/").json()["db"] == "power"
    assert [s["db"] for s in alice_api.get("/api/v1/streams/").json()["results"]] == ["power"]


def test_the_inbox_key_is_shown_to_the_streams_owner_on_request_only(power, alice, alice_api) -> None:
    inbox = inbox_get_or_create(name="alice", owner=alice)
    url = f"ws://example.org/ws/notify/alice?key={inbox.key}"
    sql = f"{STREAM}\n  NOTIFY ('{url}') ON ('WINDOW_CLOSE')"
    body = alice_api.post("/api/v1/streams/", {"sql": sql}, format="json").json()
    assert inbox.key not in json.dumps(body) and "key=******" in body["sql"]
    page = alice_api.get(f"/api/v1/streams/{body['id']}/").json()
    assert inbox.key not in json.dumps(page)
    shown = alice_api.post(f"/api/v1/streams/{body['id']}/sql/reveal/")
    assert shown.status_code == 200 and url in shown.json()["sql"]
    users = get_user_model().objects
    staff = api_client(users.create_user("carol", password="carol-pw", is_staff=True))
    refused = staff.post(f"/api/v1/streams/{body['id']}/sql/reveal/")  # sees the stream, not the key
    assert refused.status_code == 403 and inbox.key not in refused.content.decode()
    other = api_client(users.create_user("bob", password="bob-pw"))
    assert other.post(f"/api/v1/streams/{body['id']}/sql/reveal/").status_code == 404
    assert api_client().post(f"/api/v1/streams/{body['id']}/sql/reveal/").status_code in (401, 403)
