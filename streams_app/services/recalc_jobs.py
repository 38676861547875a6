"""RECALCULATE STREAM as a background job, cancellable, with progress, and its dry run (issue 16,
"progress you can trust": "RECALCULATE run[s] as background jobs with a progress bar, rows/s and
ETA, cancellable; recalculation shows a diff of the output rows it will change before it commits").

A job (``RecalcJob``) is started by the API (``recalc_job_start``) and run by the Celery task
``streams.recalculate`` (``recalc_job_run``): the statement runs through the executor with the
owner's privileges (``services/streams.stream_recalculate``) and ``runtime/recalc.recalc_hooks``
set, so the runtime reports source rows done after each chunk of groups and polls the job's
``cancel_requested``. The output is committed at once at the end (``runtime/recalc._commit``): a
cancelled job leaves the output table as it was. Each progress step is stored on the job and pushed
as a ``stream.status`` message (the stream's JSON with ``progress`` = the job's progress,
``selectors.recalc_job_progress``) to the groups ``streams`` and ``stream.<id>``.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

from celery import current_app
from django.db import transaction
from django.utils import timezone

from spark_workers.errors import Code, SqlError, TdError
from spark_workers.runtime.recalc import RecalcCancelled, RecalcHooks, recalc_hooks
from spark_workers.runtime.recalc_diff import DIFF_LIMIT, recalc_diff
from streams_app.models import RecalcJob, Stream
from streams_app.selectors import recalc_job_active, recalc_job_progress
from streams_app.serializers import stream_json
from streams_app.services.lake import lake_get
from streams_app.services.stream_control import _publish
from streams_app.services.streams import stream_recalculate

log = logging.getLogger(__name__)

#: the computation is this share of the bar; the commit (one Delta transaction) the rest
COMPUTE_SHARE = 0.9
#: a queued or running job without news for this long lost its worker (it reports per chunk)
STALE_S = 600.0


def _enqueue(job_id: int) -> None:
    """Send the Celery task ``streams.recalculate`` (by name: the web process does not import it)."""
    current_app.send_task("streams.recalculate", args=[job_id])


def recalc_job_start(*, stream: Stream, user: Any, start: dt.datetime, end: dt.datetime | None) -> RecalcJob:
    """Queue a background recalculation of ``stream`` over ``[start, end]`` as ``user`` (aware
    datetimes; ``end`` None = up to the stream's progress).

    A queued or running job without news for ``STALE_S`` seconds lost its worker: it is marked
    failed ("worker lost") first.

    Raises:
        SqlError: INVALID_OPERATION when a recalculation of the stream is already queued or running.
    """
    stale = timezone.now() - dt.timedelta(seconds=STALE_S)
    RecalcJob.objects.filter(
        stream=stream, state__in=(RecalcJob.State.QUEUED, RecalcJob.State.RUNNING), updated_at__lt=stale
    ).update(state=RecalcJob.State.FAILED, error="worker lost", updated_at=timezone.now())
    if recalc_job_active(stream_id=stream.pk) is not None:
        raise SqlError(
            f"a recalculation of stream {stream.name} is already running: cancel it or wait",
            code=Code.INVALID_OPERATION,
        )
    job = RecalcJob.objects.create(stream=stream, owner=user, start=start, end=end)
    transaction.on_commit(lambda: _enqueue(job.pk))
    _push(job)
    return job


def recalc_job_cancel(*, stream: Stream) -> RecalcJob | None:
    """Ask the stream's queued or running recalculation to stop (a queued one is cancelled at
    once); the runtime stops at its next chunk, before its commit. Returns the job (None: none)."""
    job = recalc_job_active(stream_id=stream.pk)
    if job is None:
        return None
    RecalcJob.objects.filter(pk=job.pk).update(cancel_requested=True, updated_at=timezone.now())
    RecalcJob.objects.filter(pk=job.pk, state=RecalcJob.State.QUEUED).update(state=RecalcJob.State.CANCELLED)
    job.refresh_from_db()
    if job.state == RecalcJob.State.CANCELLED:
        _push(job)
    return job


def _push(job: RecalcJob) -> None:
    """Publish the stream's JSON with the job's progress (``stream.status``)."""
    stream = Stream.objects.get(pk=job.stream_id)
    payload = stream_json(stream)
    payload["progress"] = recalc_job_progress(job=job)
    msg = {"type": "stream.status", "stream": payload}
    _publish("streams", msg)
    _publish(f"stream.{stream.pk}", msg)


def _step(job: RecalcJob, t0: float, done: int, total: int) -> None:
    """Store and push the progress after ``done`` of ``total`` source rows (monotonic)."""
    elapsed = time.perf_counter() - t0
    rate = done / elapsed if elapsed > 0 and done else None
    job.rows_done, job.rows_total = max(done, job.rows_done), total
    job.fraction = max(job.fraction, COMPUTE_SHARE * (job.rows_done / total if total else 1.0))
    job.rows_per_s = rate
    job.eta_s = (total - job.rows_done) / rate if rate else None
    fields = ["rows_done", "rows_total", "fraction", "rows_per_s", "eta_s", "updated_at"]
    job.save(update_fields=fields)
    _push(job)


def recalc_job_run(*, job_id: int) -> RecalcJob:
    """Run a queued job to its end (``done`` / ``cancelled`` / ``failed``) and return it; the
    last progress pushed is 100 % with ETA 0 when it is done."""
    job = RecalcJob.objects.select_related("stream", "owner").get(pk=job_id)
    if job.state != RecalcJob.State.QUEUED:
        return job
    job.state, job.started_at = RecalcJob.State.RUNNING, timezone.now()
    job.save(update_fields=["state", "started_at", "updated_at"])
    t0 = time.perf_counter()
    hooks = RecalcHooks(
        progress=lambda done, total: _step(job, t0, done, total),
        cancelled=lambda: RecalcJob.objects.filter(pk=job_id, cancel_requested=True).exists(),
    )
    token = recalc_hooks.set(hooks)
    try:
        job.windows = stream_recalculate(stream=job.stream, user=job.owner, start=job.start, end=job.end)
        job.state, job.fraction, job.eta_s = RecalcJob.State.DONE, 1.0, 0.0
        job.rows_done = job.rows_total = job.rows_total or 0
    except RecalcCancelled:
        job.state = RecalcJob.State.CANCELLED
    except TdError as e:
        job.state, job.error = RecalcJob.State.FAILED, e.message
    except Exception:  # never a Python text to the client
        log.exception("recalculation job %s failed", job_id)
        job.state, job.error = RecalcJob.State.FAILED, "internal error"
    finally:
        recalc_hooks.reset(token)
    elapsed = time.perf_counter() - t0
    if job.state == RecalcJob.State.DONE and elapsed > 0:
        job.rows_per_s = job.rows_done / elapsed
    job.save()
    _push(job)
    return job


def recalc_dry_run(
    *, stream: Stream, user: Any, start: dt.datetime, end: dt.datetime | None, limit: int = DIFF_LIMIT
) -> dict[str, Any]:
    """What recalculating ``stream`` over ``[start, end]`` as ``user`` would change in its output,
    without writing (``runtime/recalc_diff.recalc_diff``), plus ``windows``: the windows (or rows,
    a stream without a window) it would rewrite.

    Raises:
        TdError: the stream is not ``user``'s, or the recalculation fails.
    """
    hooks = RecalcHooks(dry_run=True)
    token = recalc_hooks.set(hooks)
    try:
        windows = stream_recalculate(stream=stream, user=user, start=start, end=end)
    finally:
        recalc_hooks.reset(token)
    writes = hooks.result.writes if hooks.result is not None else []
    return {"windows": windows, **recalc_diff(lake_get(), writes, limit=limit)}
