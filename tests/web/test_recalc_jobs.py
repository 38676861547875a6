"""RECALCULATE STREAM as a background job (issue 16, "progress you can trust"), without Spark: its
progress over Channels is monotonic, ends at 100 % and carries rows/s and an ETA; cancelling it
leaves the output as it was; its dry-run diff lists exactly the rows the real recalculation then
changes; another user's stream answers 404 to every one of these."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from spark_workers.runtime.local import LocalRunner
from spark_workers.streams.spec import StreamSpec
from spark_workers.streams.stored import stream_compiled
from streams_app.models import RecalcJob, Stream
from streams_app.services import recalc_jobs
from streams_app.services.lake import lake_get
from streams_app.services.sql import sql_execute
from streams_app.services.stream_control import stream_set_status
from tests.web.conftest import api_client
from tests.web.test_consumers import _connect

HOUR_MS = 3_600_000
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z
PER_HOUR = {"t1": 2, "t2": 3, "t3": 4, "t4": 5}  # rows per subtable in each of hours 0, 1, 2
# rows the stream never saw (inserted after it ran): t1 one more in hour 0 (a changed window),
# t2 one in hour 3 (closes its hour 2: an added window)
LATE = {"t1": [T0 + 30 * 60_000], "t2": [T0 + 3 * HOUR_MS + 1000]}
# a subtable created after the stream ran: its closed hour 0 is added in a new output subtable
NEW_TABLE = ("t5", [T0 + 5000, T0 + HOUR_MS + 5000])


def _insert(admin: Any, table: str, times: list[int]) -> None:
    values = " ".join(f"({t}, {i + 1})" for i, t in enumerate(times))
    sql_execute(sql=f"INSERT INTO h.{table} VALUES {values}", user=admin)


@pytest.fixture
def recalc(admin, lake, monkeypatch):  # type: ignore[no-untyped-def]
    """Supertable ``h.st`` with four subtables and a stream counting and summing per subtable and
    hour; the stream has run over the first rows (FILL_HISTORY), then ``LATE`` rows arrived that it
    did not see. Celery is not called: the tests run the job themselves."""
    sql_execute(sql="CREATE DATABASE h PRECISION 'ms'", user=admin)
    sql_execute(sql="CREATE STABLE h.st (ts TIMESTAMP, v INT) TAGS (k INT)", user=admin)
    for i, (name, n) in enumerate(PER_HOUR.items()):
        sql_execute(sql=f"CREATE TABLE h.{name} USING h.st TAGS ({i})", user=admin)
        _insert(admin, name, [T0 + h * HOUR_MS + j * 1000 for h in range(3) for j in range(n)])
    sql_execute(
        sql="CREATE STREAM rs FILL_HISTORY 1 INTO h.out AS "
        "SELECT _wstart, count(*) c, sum(v) s FROM h.st PARTITION BY tbname INTERVAL(1h)",
        user=admin,
    )
    stream = Stream.objects.get(name="rs")
    stream_set_status(stream_id=stream.pk, status=Stream.Status.CATCHING_UP)
    lake = lake_get()
    compiled = stream_compiled(StreamSpec.from_json(stream.spec), stream.compiled, lake, "UTC")
    LocalRunner(
        compiled,
        lake,
        stream_key=stream.key,
        start_version=stream.start_version,
        history_version=stream.history_version,
    ).run()
    for name, times in LATE.items():
        _insert(admin, name, times)
    sql_execute(sql=f"CREATE TABLE h.{NEW_TABLE[0]} USING h.st TAGS (9)", user=admin)
    _insert(admin, *NEW_TABLE)
    monkeypatch.setattr(recalc_jobs, "_enqueue", lambda job_id: None)
    return stream


def _output_subtables() -> int:
    lake = lake_get()
    return lake.catalog.subtable_tags("h", "out").num_rows


def _output() -> pd.DataFrame:
    """The stream's output rows as stored, by (tbname, window start)."""
    lake = lake_get()
    db = lake.catalog.require_database("h")
    table = lake.catalog.require_table("h", "out")
    df = lake.read(db, table).to_pandas()
    ts = table.columns[0].physical
    return df.drop(columns=[c for c in df.columns if c.startswith("_") and c != ts]).set_index(["tbname", ts])


def _start(stream: Stream, admin: Any) -> RecalcJob:
    import datetime as dt

    start = dt.datetime.fromtimestamp(T0 / 1000, dt.UTC)
    return recalc_jobs.recalc_job_start(stream=stream, user=admin, start=start, end=None)


def _expected_fractions() -> list[float]:
    """0.9 of the source rows done after each chunk (one subtable each, in name order), then 1.0."""
    per_table = {name: 3 * n + len(LATE.get(name, [])) for name, n in PER_HOUR.items()}
    per_table[NEW_TABLE[0]] = len(NEW_TABLE[1])
    rows = np.array([per_table[name] for name in sorted(per_table)], float)
    return [*list(0.9 * np.cumsum(rows) / rows.sum()), 1.0]


@pytest.mark.django_db(transaction=True)
async def test_recalculation_progress_reaches_the_browser(recalc, admin) -> None:
    browser = await _connect(f"/ws/streams/{recalc.pk}/", admin)
    job = await database_sync_to_async(_start)(recalc, admin)
    done = await sync_to_async(lambda: recalc_jobs.recalc_job_run(job_id=job.pk))()
    assert done.state == "done"
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["state"] not in ("done", "failed", "cancelled"):
        msg = await browser.receive_json_from(timeout=5)
        p = msg.get("stream", {}).get("progress") if msg["type"] == "stream.status" else None
        if p and p["phase"] == "recalculation":
            seen.append(p)
    await browser.disconnect()
    assert seen[0]["state"] == "queued" and seen[0]["fraction"] == 0.0
    steps = seen[1:]
    fractions = [p["fraction"] for p in steps]
    assert fractions == sorted(fractions) and fractions == pytest.approx(_expected_fractions())
    total = sum(3 * n for n in PER_HOUR.values()) + sum(len(t) for t in LATE.values()) + len(NEW_TABLE[1])
    assert {p["rows_total"] for p in steps} == {total}
    for p in steps[:-1]:
        assert p["rows_per_s"] > 0 and p["eta_s"] is not None
        assert p["eta_s"] == pytest.approx((total - p["rows_done"]) / p["rows_per_s"])
    assert (steps[-1]["fraction"], steps[-1]["eta_s"], steps[-1]["rows_done"]) == (1.0, 0.0, total)


@pytest.mark.django_db
def test_cancel_leaves_the_output_as_it_was(recalc, admin, monkeypatch) -> None:
    before = _output()
    lake = lake_get()
    version = lake.version("h", lake.catalog.require_table("h", "out").storage)
    subtables = _output_subtables()
    step = recalc_jobs._step

    def cancel_after_first(job: RecalcJob, t0: float, done: int, total: int) -> None:
        step(job, t0, done, total)
        api_client(admin).post(f"/api/v1/streams/{recalc.pk}/actions/", {"action": "cancel"}, format="json")

    monkeypatch.setattr(recalc_jobs, "_step", cancel_after_first)
    job = recalc_jobs.recalc_job_run(job_id=_start(recalc, admin).pk)
    assert job.state == "cancelled" and job.rows_done < job.rows_total
    assert lake.version("h", lake.catalog.require_table("h", "out").storage) == version
    pd.testing.assert_frame_equal(_output(), before)
    assert _output_subtables() == subtables == len(PER_HOUR)  # t5's output subtable not created
    # nothing left running: cancel now answers 404, and a new job may start
    again = api_client(admin).post(
        f"/api/v1/streams/{recalc.pk}/actions/", {"action": "cancel"}, format="json"
    )
    assert again.status_code == 404
    monkeypatch.setattr(recalc_jobs, "_step", step)
    assert recalc_jobs.recalc_job_run(job_id=_start(recalc, admin).pk).state == "done"


def _changes(before: pd.DataFrame, after: pd.DataFrame) -> dict[tuple[str, int], tuple[Any, Any]]:
    """Rows of ``after`` that are new or differ from ``before``: key -> (old values | None, new)."""
    out: dict[tuple[str, int], tuple[Any, Any]] = {}
    for key, row in after.iterrows():
        new = {k: (None if pd.isna(v) else v) for k, v in row.items()}
        if key not in before.index:
            out[key] = (None, new)
        else:
            old = {k: (None if pd.isna(v) else v) for k, v in before.loc[key].items()}
            if old != new:
                out[key] = (old, new)
    gone = set(before.index) - set(after.index)
    assert not gone  # a recalculation deletes nothing (seed 002)
    return out


@pytest.mark.django_db
def test_diff_lists_exactly_what_the_recalculation_changes(recalc, admin) -> None:
    before = _output()
    url = f"/api/v1/streams/{recalc.pk}/recalculate/diff/"
    r = api_client(admin).post(url, {"start": T0}, format="json")
    assert r.status_code == 200, r.content
    diff = r.json()
    limited = api_client(admin).post(url, {"start": T0, "limit": 1}, format="json").json()
    assert len(limited["rows"]) == 1 and limited["truncated"] is True
    assert limited["rows"][0] == diff["rows"][0]
    pd.testing.assert_frame_equal(_output(), before)  # a dry run writes nothing
    assert _output_subtables() == len(PER_HOUR)  # nor creates an output subtable
    job = recalc_jobs.recalc_job_run(job_id=_start(recalc, admin).pk)
    assert job.state == "done" and job.windows == diff["windows"]
    want = _changes(before, _output())
    assert _output_subtables() == len(PER_HOUR) + 1
    # the test can fail: the late rows change one window and add one, t5 adds its hour 0
    assert len(want) >= 3
    listed = {}
    for row in diff["rows"]:
        ts = next(iter(row["key"].values()))
        listed[(row["table"], ts)] = (row["old"], row["new"])
    assert set(listed) == set(want)
    for key, (old, new) in want.items():
        got_old, got_new = listed[key]
        assert got_new == pytest.approx(new)
        assert (got_old is None) == (old is None) and (old is None or got_old == pytest.approx(old))
    assert (diff["added"], diff["changed"], diff["removed"]) == (
        sum(o is None for o, _ in want.values()),
        sum(o is not None for o, _ in want.values()),
        0,
    )
    assert diff["truncated"] is False and diff["added"] + diff["changed"] + diff["unchanged"] == job.windows
    assert api_client(admin).post(url, {"start": T0}, format="json").json()["rows"] == []  # all done


@pytest.mark.django_db
def test_another_users_stream_is_404(recalc, admin, alice) -> None:
    alice_api = api_client(alice)
    actions = f"/api/v1/streams/{recalc.pk}/actions/"
    job = _start(recalc, admin)
    for body in (
        {"action": "recalculate", "start": T0, "background": True},
        {"action": "recalculate", "start": T0},
        {"action": "cancel"},
    ):
        assert alice_api.post(actions, body, format="json").status_code == 404, body
    diff = alice_api.post(f"/api/v1/streams/{recalc.pk}/recalculate/diff/", {"start": T0}, format="json")
    assert diff.status_code == 404
    job.refresh_from_db()
    assert (job.state, job.cancel_requested) == ("queued", False)
    assert RecalcJob.objects.count() == 1


@pytest.mark.django_db
def test_background_action_queues_one_job_and_cancel_stops_it(
    recalc, admin, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """The API's background recalculation queues a job for the Celery task (once committed), a
    second one is refused while it runs, cancel stops a queued job at once, and the task runs one."""
    sent: list[int] = []
    monkeypatch.setattr(recalc_jobs, "_enqueue", sent.append)
    api = api_client(admin)
    actions = f"/api/v1/streams/{recalc.pk}/actions/"
    body = {"action": "recalculate", "start": T0, "background": True}
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(actions, body, format="json")
    assert r.status_code == 200, r.content
    job = r.json()["recalculation"]["job"]
    assert (job["state"], job["phase"], sent) == ("queued", "recalculation", [job["job_id"]])
    assert r.json()["progress"]["job_id"] == job["job_id"]  # the stream shows the job as its long work
    assert api.post(actions, body, format="json").status_code == 400  # one at a time
    cancelled = api.post(actions, {"action": "cancel"}, format="json")
    assert cancelled.json()["recalculation"]["job"]["state"] == "cancelled"
    assert recalc_jobs.recalc_job_run(job_id=job["job_id"]).state == "cancelled"  # never runs
    from streams_app.tasks import stream_recalculate_task

    again = api.post(actions, body, format="json").json()["recalculation"]["job"]["job_id"]
    stream_recalculate_task(again)
    assert RecalcJob.objects.get(pk=again).state == "done"


@pytest.mark.django_db
def test_a_job_that_lost_its_worker_does_not_block_the_next(recalc, admin) -> None:
    job = _start(recalc, admin)
    RecalcJob.objects.filter(pk=job.pk).update(
        state="running", updated_at=job.updated_at - pd.Timedelta(seconds=recalc_jobs.STALE_S + 1)
    )
    new = _start(recalc, admin)
    job.refresh_from_db()
    assert (job.state, job.error) == ("failed", "worker lost") and new.state == "queued"
