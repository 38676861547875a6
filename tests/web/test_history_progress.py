"""FILL_HISTORY catch-up without Spark (issue 16 item 2 and "progress you can trust"): a stream
whose history is done is RUNNING at once, live rows or not; its catch-up progress is monotonic,
ends at 100 % and carries rows/s and an ETA, in the database and over Channels to the browser."""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np
import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from spark_workers.lake import changes
from spark_workers.runtime import local
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.sink import BatchReport
from spark_workers.streams.spec import StreamSpec
from spark_workers.streams.stored import stream_compiled
from streams_app.models import Stream
from streams_app.services import supervisor
from streams_app.services.lake import lake_get
from streams_app.services.sql import sql_execute
from streams_app.services.stream_control import (
    stream_history_complete,
    stream_progress_record,
    stream_set_status,
)
from tests.web.test_consumers import _connect

DAY_MS = 86_400_000
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z
PER_DAY = (2, 3, 5)  # rows of the trigger table on three days (one-day DURATION: three buckets)


@pytest.fixture
def backfill(admin, lake, monkeypatch):  # type: ignore[no-untyped-def]
    """Database ``h`` (1-day files) with ``PER_DAY`` rows on three days and a FILL_HISTORY stream;
    history micro-batches of one bucket each (``max_rows=1``), so the catch-up takes three."""
    sql_execute(sql="CREATE DATABASE h PRECISION 'ms' DURATION 1d", user=admin)
    sql_execute(sql="CREATE TABLE h.t (ts TIMESTAMP, v INT)", user=admin)
    for day, n in enumerate(PER_DAY):
        values = " ".join(f"({T0 + day * DAY_MS + i * 1000}, {i})" for i in range(n))
        sql_execute(sql=f"INSERT INTO h.t VALUES {values}", user=admin)
    sql_execute(
        sql="CREATE STREAM hs FILL_HISTORY 1 INTO h.out AS SELECT _wstart, count(*) FROM h.t INTERVAL(1h)",
        user=admin,
    )
    monkeypatch.setattr(local, "next_offset", functools.partial(changes.next_offset, max_rows=1))
    stream = Stream.objects.get(name="hs")
    stream_set_status(stream_id=stream.pk, status=Stream.Status.CATCHING_UP)
    return stream


def _runner(stream: Stream, seen: list[tuple[str, dict[str, Any]]]) -> LocalRunner:
    """The stream's non-Spark runner, recording (status, last_progress) after every micro-batch."""
    lake = lake_get()

    def progress(r: BatchReport) -> None:
        stream_progress_record(stream_id=stream.pk, report=r)
        s = Stream.objects.get(pk=stream.pk)
        seen.append((s.status, s.last_progress))

    return LocalRunner(
        stream_compiled(StreamSpec.from_json(stream.spec), stream.compiled, lake, "UTC"),
        lake,
        stream_key=stream.key,
        start_version=stream.start_version,
        history_version=stream.history_version,
        progress=progress,
    )


def _expected_fractions() -> list[float]:
    """Fraction of the snapshot read after each one-bucket micro-batch, from the inserted rows."""
    rows = np.array(PER_DAY, dtype=float)
    return list(np.cumsum(rows) / rows.sum())


@pytest.mark.django_db
def test_running_as_soon_as_history_is_done_without_live_rows(backfill) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    reports = _runner(backfill, seen).run()
    assert [r.phase for r in reports] == ["history"] * len(PER_DAY)  # no live row ever arrives
    assert [s for s, _ in seen] == ["catching_up"] * (len(PER_DAY) - 1) + ["running"]
    assert [p["history_done"] for _, p in seen] == [False] * (len(PER_DAY) - 1) + [True]
    history = [p["history"] for _, p in seen]
    assert [h["fraction"] for h in history] == pytest.approx(_expected_fractions())
    assert [h["rows_done"] for h in history] == list(np.cumsum(PER_DAY))
    assert {h["rows_total"] for h in history} == {sum(PER_DAY)}
    for h in history[:-1]:  # rows/s over the wall clock since the first batch began, and the rest
        assert h["rows_per_s"] > 0
        assert h["eta_s"] == pytest.approx((h["rows_total"] - h["rows_done"]) / h["rows_per_s"])
    assert (history[-1]["fraction"], history[-1]["eta_s"]) == (1.0, 0.0)
    assert history[-1]["label"] == f"history complete: {sum(PER_DAY)} rows"
    s = Stream.objects.get(pk=backfill.pk)
    assert s.status == "running"


@pytest.mark.django_db
def test_history_progress_is_monotonic_when_a_batch_has_no_event_time(backfill) -> None:
    """A history micro-batch whose rows were all filtered out reports no event time: the catch-up's
    rows done stay where the previous batch left them instead of falling to 0."""
    sid = backfill.pk
    day2 = T0 + DAY_MS + 1000
    stream_progress_record(
        stream_id=sid, report=BatchReport(0, phase="history", max_event_ms=day2, duration_ms=5)
    )
    stream_progress_record(
        stream_id=sid, report=BatchReport(1, phase="history", duration_ms=5)
    )  # all filtered
    s = Stream.objects.get(pk=sid)
    want = sum(PER_DAY[:2])
    assert s.status == "catching_up"
    assert (s.last_progress["history"]["rows_done"], s.last_progress["history"]["fraction"]) == (
        want,
        pytest.approx(want / sum(PER_DAY)),
    )


@pytest.mark.django_db
def test_history_complete_sets_running_once(backfill) -> None:
    """What the supervisor does when the query's committed offset is past the snapshot."""
    sid = backfill.pk
    stream_progress_record(
        stream_id=sid, report=BatchReport(0, phase="history", max_event_ms=T0, duration_ms=5)
    )
    assert Stream.objects.get(pk=sid).status == "catching_up"
    assert stream_history_complete(stream_id=sid) is True
    s = Stream.objects.get(pk=sid)
    assert s.status == "running" and s.last_progress["history"]["fraction"] == 1.0
    assert s.last_progress["history"]["rows_done"] == sum(PER_DAY)
    assert stream_history_complete(stream_id=sid) is False  # already running: nothing changes


class _Query:
    """A Spark query as ``supervisor._watch`` sees it: its last progress's end offset is past the
    FILL_HISTORY snapshot (``h`` = -1), and it ends after a few heartbeats."""

    def __init__(self, version: int) -> None:
        self.beats = 0
        self.lastProgress = {"sources": [{"endOffset": f'{{"v": {version}, "h": -1}}'}]}
        self.recentProgress = [self.lastProgress]

    def awaitTermination(self, timeout: float) -> bool:
        self.beats += 1
        return self.beats > 2

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        pass


@pytest.mark.django_db
def test_supervisor_heartbeat_sets_running_after_the_snapshot(backfill, settings) -> None:
    """The Spark path: the last history micro-batch reported ``history`` (it cannot know it was the
    last); the next heartbeat sees the committed offset past the snapshot and the stream runs."""
    settings.TDWEB_HEARTBEAT_S = 0.01
    sid = backfill.pk
    stream_progress_record(
        stream_id=sid, report=BatchReport(2, phase="history", max_event_ms=T0, duration_ms=5)
    )
    Stream.objects.filter(pk=sid).update(worker="w1", desired_state=Stream.Desired.RUNNING)
    assert Stream.objects.get(pk=sid).status == "catching_up"
    supervisor._watch(_Query(backfill.history_version), sid, "w1", threading.Event(), [1.0])
    assert Stream.objects.get(pk=sid).status == "running"


@pytest.mark.django_db(transaction=True)
async def test_backfill_progress_reaches_the_browser(backfill, admin) -> None:
    """The progress events of a backfill reach the stream's page over Channels: monotonic, ending
    at 100 % with ETA 0, each with rows/s and an ETA; the status message says RUNNING at the end."""
    browser = await _connect(f"/ws/streams/{backfill.pk}/", admin)
    seen: list[tuple[str, dict[str, Any]]] = []
    await sync_to_async(lambda: _runner(backfill, seen).run())()
    progress, statuses = [], []
    while len(statuses) < 1 or len(progress) < len(PER_DAY):
        msg = await browser.receive_json_from(timeout=5)
        if msg["type"] == "stream.progress":
            progress.append(msg["progress"]["history"])
        else:
            statuses.append(msg["stream"]["status"])
    await browser.disconnect()
    fractions = [p["fraction"] for p in progress]
    assert fractions == sorted(fractions) and fractions == pytest.approx(_expected_fractions())
    assert all("eta_s" in p and "rows_per_s" in p for p in progress)
    assert all(p["eta_s"] is not None for p in progress)
    assert progress[-1]["eta_s"] == 0.0
    assert statuses == ["running"]
    assert (await database_sync_to_async(Stream.objects.get)(pk=backfill.pk)).status == "running"
