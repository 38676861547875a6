"""streams_app.models: __str__, orderings and the database constraints."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from streams_app.models import Delivery, Inbox, Notification, Stream, StreamProgress, StreamRun

pytestmark = pytest.mark.django_db


def _stream(name: str, *, db: str = "", status: str = Stream.Status.STARTING, **kw: object) -> Stream:
    return Stream.objects.create(
        name=name,
        name_key=(f"{db}.{name}" if db else name).lower(),
        db=db,
        key=Stream.new_key(),
        sql=f"CREATE STREAM {name} ...",
        spec={},
        start_version=0,
        status=status,
        **kw,
    )


def test_str() -> None:
    s = _stream("speed")
    assert str(s) == "speed (starting)"
    assert str(_stream("s2", db="power", status=Stream.Status.RUNNING)) == "power.s2 (running)"
    run = StreamRun.objects.create(stream=s, started_at=timezone.now())
    assert str(run) == f"run {run.pk} of {s.pk} (running)"
    assert str(StreamProgress.objects.create(stream=s, batch_id=7)) == f"stream {s.pk} batch 7"
    assert (
        str(Delivery.objects.create(stream=s, url="ws://h/x", message_id="m1", ok=True))
        == "m1 -> ws://h/x (ok)"
    )
    assert (
        str(Delivery.objects.create(stream=s, url="ws://h/x", message_id="m2", ok=False))
        == "m2 -> ws://h/x (failed)"
    )
    inbox = Inbox.objects.create(name="ops", key=Inbox.new_key())
    assert str(inbox) == "ops"
    n = Notification.objects.create(
        inbox=inbox,
        dedupe_key="k",
        message_id="m",
        stream_name="speed",
        event_type="WINDOW_CLOSE",
        window_start=60_000,
        payload={},
    )
    assert str(n) == "speed WINDOW_CLOSE 60000"


def test_new_keys_are_random() -> None:
    keys = {Stream.new_key() for _ in range(50)}
    assert len(keys) == 50 and all(len(k) == 16 and int(k, 16) >= 0 for k in keys)
    inbox_keys = {Inbox.new_key() for _ in range(50)}
    assert len(inbox_keys) == 50 and all(len(k) >= 32 for k in inbox_keys)


def test_orderings() -> None:
    b, a2, a1 = _stream("b"), _stream("a", db="y"), _stream("a", db="x")
    assert list(Stream.objects.all()) == [a2, a1, b]  # by name, then id
    early = StreamRun.objects.create(stream=b, started_at=timezone.now() - timezone.timedelta(minutes=1))
    late = StreamRun.objects.create(stream=b, started_at=timezone.now())
    assert list(StreamRun.objects.all()) == [late, early]  # newest first
    p1, p2 = (
        StreamProgress.objects.create(stream=b, batch_id=1),
        StreamProgress.objects.create(stream=a1, batch_id=1),
    )
    p3 = StreamProgress.objects.create(stream=b, batch_id=2)
    assert list(StreamProgress.objects.all()) == [p2, p1, p3]  # by stream, then id
    d1 = Delivery.objects.create(stream=b, url="u", message_id="1", ok=True)
    d2 = Delivery.objects.create(stream=b, url="u", message_id="2", ok=True)
    assert list(Delivery.objects.all()) == [d2, d1]
    z, y = Inbox.objects.create(name="z", key="k"), Inbox.objects.create(name="y", key="k")
    assert list(Inbox.objects.all()) == [y, z]
    n1 = Notification.objects.create(
        inbox=z, dedupe_key="1", message_id="m", stream_name="s", event_type="e", payload={}
    )
    n2 = Notification.objects.create(
        inbox=y, dedupe_key="1", message_id="m", stream_name="s", event_type="e", payload={}
    )
    assert list(Notification.objects.all()) == [n2, n1]  # newest first


def test_defaults() -> None:
    s = _stream("d")
    assert (s.desired_state, s.status, s.syntax) == ("running", "starting", "legacy")
    assert (s.rows_in, s.windows_out, s.notifications_sent, s.notifications_failed) == (0, 0, 0, 0)
    assert s.created_at is not None and s.updated_at is not None


def test_live_stream_names_are_unique() -> None:
    _stream("speed")
    with pytest.raises(IntegrityError), transaction.atomic():
        _stream("speed")
    with pytest.raises(IntegrityError), transaction.atomic():
        Stream.objects.filter(pk=_stream("other").pk).update(name_key="speed")


def test_dropped_stream_names_may_repeat() -> None:
    _stream("speed", status=Stream.Status.DROPPED)
    _stream("speed", status=Stream.Status.DROPPED)
    live = _stream("speed")
    assert Stream.objects.filter(name_key="speed").count() == 3
    # dropping the live one frees the name once more
    Stream.objects.filter(pk=live.pk).update(status=Stream.Status.DROPPED)
    _stream("speed", status=Stream.Status.PAUSED)


def test_same_name_in_different_databases() -> None:
    _stream("s", db="a")
    _stream("s", db="b")
    _stream("s")
    assert Stream.objects.filter(name="s").count() == 3


def test_stream_keys_are_unique() -> None:
    s = _stream("a")
    with pytest.raises(IntegrityError), transaction.atomic():
        Stream.objects.filter(pk=_stream("b").pk).update(key=s.key)


@pytest.mark.parametrize("field", ["rows_in", "windows_out"])
def test_counters_are_not_negative(field) -> None:
    s = _stream("c")
    with pytest.raises(IntegrityError), transaction.atomic():
        Stream.objects.filter(pk=s.pk).update(**{field: -1})


def test_notification_once_per_inbox() -> None:
    a, b = Inbox.objects.create(name="a", key="k"), Inbox.objects.create(name="b", key="k")
    kw = {"dedupe_key": "same", "message_id": "m", "stream_name": "s", "event_type": "e", "payload": {}}
    Notification.objects.create(inbox=a, **kw)
    Notification.objects.create(inbox=b, **kw)  # another inbox may hold the same event
    with pytest.raises(IntegrityError), transaction.atomic():
        Notification.objects.create(inbox=a, **kw)


def test_inbox_names_are_unique() -> None:
    Inbox.objects.create(name="a", key="k1")
    with pytest.raises(IntegrityError), transaction.atomic():
        Inbox.objects.create(name="a", key="k2")


def test_deleting_a_stream_deletes_its_history_but_deleting_a_user_keeps_streams(alice) -> None:
    s = _stream("h", owner=alice)
    StreamRun.objects.create(stream=s, started_at=timezone.now())
    StreamProgress.objects.create(stream=s, batch_id=1)
    Delivery.objects.create(stream=s, url="u", message_id="m", ok=True)
    alice.delete()
    s.refresh_from_db()
    assert s.owner is None
    s.delete()
    assert not (StreamRun.objects.exists() or StreamProgress.objects.exists() or Delivery.objects.exists())
