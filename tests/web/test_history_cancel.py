"""Cancelling a FILL_HISTORY catch-up (issue 16, "progress you can trust ... cancellable";
``stream_control.stream_history_cancel``): what the catch-up wrote stays, the rest of the snapshot
is skipped, live rows go on; the worker restarts its query on the next heartbeat; only the
stream's owner (or an admin) can do it, once, while a catch-up is under way."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from spark_workers.errors import Code
from streams_app.models import Stream
from streams_app.services import supervisor
from streams_app.services.lake import lake_get
from streams_app.services.sql import sql_execute
from tests.web.conftest import api_client
from tests.web.test_history_progress import DAY_MS, PER_DAY, T0, _runner, backfill  # noqa: F401

HOUR_MS = 3_600_000
LIVE = (T0 + 5 * DAY_MS, T0 + 5 * DAY_MS + 2 * HOUR_MS)  # written after the stream was created


def _window_starts() -> list[int]:
    """The stream's output windows (epoch ms of ``_wstart``), as stored."""
    lake = lake_get()
    db = lake.catalog.require_database("h")
    table = lake.catalog.require_table("h", "out")
    col = lake.read(db, table).column(table.columns[0].physical)
    return sorted(int(v.timestamp() * 1000) if hasattr(v, "timestamp") else int(v) for v in col.to_pylist())


def _cancel(user: Any, stream: Stream) -> Any:
    return api_client(user).post(
        f"/api/v1/streams/{stream.pk}/actions/", {"action": "cancel_history"}, format="json"
    )


@pytest.mark.django_db
def test_cancel_keeps_what_was_done_skips_the_rest_and_goes_live(backfill, admin) -> None:  # noqa: F811
    seen: list[tuple[str, dict[str, Any]]] = []
    runner = _runner(backfill, seen)
    first = runner.poll()  # the first day's bucket of the snapshot
    assert first is not None and first.phase == "history"
    r = _cancel(admin, backfill)
    assert r.status_code == 200, r.content
    cancelled = r.json()["history_cancelled"]
    assert (cancelled["rows_done"], cancelled["rows_total"]) == (PER_DAY[0], sum(PER_DAY))
    assert cancelled["fraction"] == pytest.approx(PER_DAY[0] / sum(PER_DAY))
    assert f"{PER_DAY[0] / sum(PER_DAY):.0%}" in cancelled["label"]
    for ts in LIVE:
        sql_execute(sql=f"INSERT INTO h.t VALUES ({ts}, 1)", user=admin)
    runner.skip_history = True  # what the restarted query reads with (Stream.history_cancelled)
    reports = runner.run()
    assert [r.phase for r in reports] == ["live", "live"]
    assert reports[0].input_rows == 0  # the skipped buckets: nothing read
    assert reports[1].input_rows == len(LIVE)
    starts = _window_starts()
    assert T0 + DAY_MS not in starts and T0 + 2 * DAY_MS not in starts  # never computed
    assert T0 in starts and LIVE[0] in starts  # done before the cut, and the live rows
    s = Stream.objects.get(pk=backfill.pk)
    assert s.status == "running" and s.history_cancelled["rows_done"] == PER_DAY[0]


@pytest.mark.django_db
def test_cancel_is_refused_when_there_is_nothing_to_cancel(backfill, admin) -> None:  # noqa: F811
    assert _cancel(admin, backfill).status_code == 200
    again = _cancel(admin, backfill)
    assert (again.status_code, again.json()["code"]) == (400, int(Code.INVALID_OPERATION))
    assert "already skipped" in again.json()["desc"]
    sql = "CREATE STREAM live INTO h.out2 AS SELECT _wstart, count(*) FROM h.t INTERVAL(1h)"
    sql_execute(sql=sql, user=admin)
    plain = _cancel(admin, Stream.objects.get(name="live"))
    assert (plain.status_code, plain.json()["code"]) == (400, int(Code.INVALID_OPERATION))
    assert "without FILL_HISTORY" in plain.json()["desc"]


@pytest.mark.django_db
def test_cancel_after_the_history_is_done_is_refused(backfill, admin) -> None:  # noqa: F811
    _runner(backfill, []).run()
    r = _cancel(admin, backfill)
    assert (r.status_code, r.json()["code"]) == (400, int(Code.INVALID_OPERATION))
    assert Stream.objects.get(pk=backfill.pk).history_cancelled is None


@pytest.mark.django_db
def test_another_user_cannot_cancel_a_stream_she_does_not_own(backfill, alice) -> None:  # noqa: F811
    from streams_app.models import Privilege

    Privilege.objects.create(user=alice, db="h", read=True, write=True)  # she may even use the data
    r = _cancel(alice, backfill)
    assert r.status_code == 404
    assert Stream.objects.get(pk=backfill.pk).history_cancelled is None


class _HistoryQuery:
    """A Spark query still inside the FILL_HISTORY snapshot (no committed offset past it) that
    ends by itself after ``beats`` heartbeats unless stopped."""

    def __init__(self, beats: int = 5) -> None:
        self.lastProgress: dict[str, Any] = {}
        self.recentProgress: list[Any] = []
        self.stopped = False
        self.left = beats

    def awaitTermination(self, timeout: float) -> bool:
        self.left -= 1
        return self.stopped or self.left < 0

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.stopped = True


@pytest.mark.django_db
def test_the_worker_restarts_its_query_when_the_catch_up_is_cancelled(backfill, admin, settings) -> None:  # noqa: F811
    """``_watch`` stops the query at the next heartbeat and returns (``_supervise`` then starts it
    again with the snapshot skipped); a query started with the skip is left running."""
    settings.TDWEB_HEARTBEAT_S = 0.01
    sid = backfill.pk
    Stream.objects.filter(pk=sid).update(worker="w1", desired_state=Stream.Desired.RUNNING)
    before = _HistoryQuery()
    supervisor._watch(before, sid, "w1", threading.Event(), [1.0])
    assert not before.stopped  # no cancel: it ran until it ended
    assert _cancel(admin, backfill).status_code == 200
    q = _HistoryQuery()
    supervisor._watch(q, sid, "w1", threading.Event(), [1.0])
    assert q.stopped and q.left == 4  # at the first heartbeat
    skipping = _HistoryQuery()
    supervisor._watch(skipping, sid, "w1", threading.Event(), [1.0], skipping=True)
    assert not skipping.stopped
