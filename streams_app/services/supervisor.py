"""Supervising one stream's Spark query inside a Celery worker (ARCHITECTURE "Processes").

A worker process owns one SparkSession; each ``streams.run`` task (thread pool) supervises one
stream: it claims the stream (one runner at a time, judged by a heartbeat), starts the query,
beats every ``TDWEB_HEARTBEAT_S``, follows the desired state (pause/stop/drop stop the query at a
micro-batch boundary), and restarts the query with exponential back-off after a failure. Each
start checks that the stream's owner may still read its tables and write its output
(``streams.check_stream_access``): a revoked grant fails the stream until it is granted again. A
worker that dies (even ``kill -9``) stops beating; ``streams.reconcile`` (beat) hands the stream to
a live worker, which resumes from the checkpoint (``TDWEB_CHECKPOINTS``, shared by every worker
host). A worker that finds the stream claimed by another (it was judged dead while it was only
slow) stops its query at once: a stream runs on one worker at any time.

Queries start a few at a time (``TDWEB_START_CONCURRENCY`` per worker, default 4 per CPU: the start gate):
a query holds its place from ``start_query`` until its first micro-batch commits, it ends, or
``TDWEB_START_GATE_S`` pass. A worker that takes back many streams at once (a restart after
``kill -9``) would otherwise start as many Python source runners as streams on a small machine,
and Spark gives up on those that do not connect back within its fixed 10 s ("Python worker failed
to connect back"): every failed start is retried after a back-off and leaves its runner process
behind. On an idle machine the gate only serializes starts that could overlap, hence a bound per
CPU rather than a small constant (docs/PERFORMANCE.md, "Recovery after kill -9").
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from datetime import datetime, timedelta
from typing import Any

import structlog
from django.conf import settings
from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone

from spark_workers.lake.store import Lake
from spark_workers.notify.sender import Sender
from spark_workers.runtime.paths import StreamState
from spark_workers.runtime.query import committed_version, start_query
from spark_workers.runtime.sink import OutputSink
from spark_workers.streams.compile import CompiledStream
from spark_workers.streams.create import check_stream_access
from spark_workers.streams.spec import StreamSpec
from spark_workers.streams.stored import stream_compiled
from streams_app.models import Stream, StreamRun
from streams_app.services.access import principal_for
from streams_app.services.lake import deployment_problems, lake_get
from streams_app.services.stream_control import (
    checkpoint_remove,
    stream_delivery_record,
    stream_enqueue,
    stream_history_complete,
    stream_progress_record,
    stream_set_status,
)

log = structlog.get_logger(__name__)
SHUTDOWN = threading.Event()  # set when the worker shuts down
_running: set[int] = set()
_running_lock = threading.Lock()
BACKOFF_MAX_S = 60.0
_gate: threading.BoundedSemaphore | None = None
_gate_lock = threading.Lock()


def _stale_before() -> datetime:
    return timezone.now() - timedelta(seconds=settings.TDWEB_STALE_AFTER_S)


def stream_claim(*, stream_id: int, worker: str) -> bool:
    """Take the stream for this worker unless another live worker holds it."""
    n = (
        Stream.objects.filter(pk=stream_id, desired_state=Stream.Desired.RUNNING)
        .exclude(status=Stream.Status.DROPPED)
        .filter(
            Q(worker="")
            | Q(worker=worker)
            | Q(heartbeat_at__isnull=True)
            | Q(heartbeat_at__lt=_stale_before())
        )
        .update(worker=worker, heartbeat_at=timezone.now())
    )
    return n == 1


def stream_supervise(*, stream_id: int, worker: str) -> None:
    """Run a stream until it should stop (see module docstring). Blocks."""
    with _running_lock:
        if stream_id in _running:
            return
        _running.add(stream_id)
    try:
        if not stream_claim(stream_id=stream_id, worker=worker):
            return
        _supervise(stream_id, worker)
    finally:
        with _running_lock:
            _running.discard(stream_id)
        close_old_connections()


def _should_run(stream_id: int, worker: str) -> bool:
    """True while the stream should run and is still ``worker``'s (another worker may have taken
    it over when this one's heartbeats stopped reaching the database)."""
    s = Stream.objects.filter(pk=stream_id).values("desired_state", "status", "worker").first()
    return (
        s is not None
        and s["desired_state"] == Stream.Desired.RUNNING
        and s["status"] != Stream.Status.DROPPED
        and s["worker"] == worker
        and not SHUTDOWN.is_set()
    )


def _supervise(stream_id: int, worker: str) -> None:
    """Run one stream until it should stop, restarting it with back-off after a failure; its
    structured logs carry ``stream_id`` and ``worker``."""
    lake = lake_get()
    run = StreamRun.objects.create(stream_id=stream_id, worker=worker, started_at=timezone.now())
    backoff = [1.0]  # the back-off restarts once a micro-batch commits (``_watch``)
    stop_flag = threading.Event()
    structlog.contextvars.bind_contextvars(stream_id=stream_id, worker=worker)
    try:
        while _should_run(stream_id, worker):
            try:
                _run_once(stream_id, worker, lake, stop_flag, backoff)
                if not _should_run(stream_id, worker):
                    break
            except Exception as e:  # any failure: record it, back off, try again
                if not _should_run(stream_id, worker):  # stopping (shutdown, pause, drop): not a failure
                    break
                backoff[0] = _after_failure(stream_id, worker, run, e, backoff[0])
    finally:
        _finish(stream_id, worker, run, lake)
        structlog.contextvars.unbind_contextvars("stream_id", "worker")


def _run_once(
    stream_id: int, worker: str, lake: Lake, stop_flag: threading.Event, backoff: list[float]
) -> None:
    """One run of the stream: its owner's privileges checked, its stored compiled form loaded,
    the query (or the PERIOD scheduler) run until it ends or should stop; raises what made it
    fail (the query is stopped first)."""
    from spark_workers.runtime.session import public_ui_url, spark_session

    stream = Stream.objects.select_related("owner").get(pk=stream_id)
    problems = deployment_problems()
    if problems:  # a cluster that would lose state between hosts: the stream fails, saying why
        raise RuntimeError("; ".join(problems.values()))
    spark = spark_session(settings.SPARK_MASTER)
    spec = StreamSpec.from_json(stream.spec)
    if stream.owner is not None:  # the stream runs with its owner's privileges
        check_stream_access(principal_for(stream.owner), spec, lake.catalog)
    compiled = stream_compiled(spec, stream.compiled, lake, settings.TDWEB_TIMEZONE)
    sender = Sender(
        on_attempt=lambda a: _discard(stream_delivery_record(stream_id=stream_id, attempt=a)),
        should_stop=lambda: stop_flag.is_set() or SHUTDOWN.is_set(),
    )
    sink = OutputSink(
        compiled,
        lake,
        stream_key=stream.key,
        tz=settings.TDWEB_TIMEZONE,
        sender=sender,
        progress=lambda r: _discard(stream_progress_record(stream_id=stream_id, report=r)),
        log_fields={"stream_id": stream_id, "stream": stream.name},
    )
    if spec.trigger.get("type") == "period":  # a scheduled task: no Spark query
        _run_period(stream, compiled, sink, worker, lake.uri)
        return
    gate = start_gate()
    while not gate.acquire(timeout=settings.TDWEB_HEARTBEAT_S):  # wait for a place, beating
        if not _should_run(stream_id, worker):
            return
        _beat(stream_id, worker)
    query = None
    try:
        query = _start_query(spark, stream, compiled, sink, lake)
        _await_first_batch(query, stream_id, worker, settings.TDWEB_START_GATE_S)
    except BaseException:
        if query is not None:
            with contextlib.suppress(Exception):
                query.stop()
        raise
    finally:
        gate.release()
    catching_up = stream.history_version is not None and stream.last_batch_id is None
    stream_set_status(
        stream_id=stream_id,
        status=Stream.Status.CATCHING_UP if catching_up else Stream.Status.RUNNING,
        error="",
        spark_ui_url=public_ui_url(
            spark.sparkContext.uiWebUrl, template=settings.TDWEB_SPARK_UI_URL, host=settings.TDWEB_HOST
        ),
    )
    log.info("stream query started", stream=stream.name, catching_up=catching_up)
    try:
        _watch(query, stream_id, worker, stop_flag, backoff, skipping=stream.history_cancelled is not None)
    except BaseException:
        with contextlib.suppress(Exception):
            query.stop()
        raise


def _start_query(spark: Any, stream: Stream, compiled: CompiledStream, sink: OutputSink, lake: Lake) -> Any:
    """``runtime.query.start_query`` for the stream with this installation's settings."""
    return start_query(
        spark,
        compiled,
        sink,
        stream_key=stream.key,
        lake_root=lake.uri,
        tz=settings.TDWEB_TIMEZONE,
        start_version=stream.start_version,
        history_version=stream.history_version,
        ignore_until=stream.ignore_until_version,
        buckets=settings.TDWEB_STREAM_BUCKETS,
        catalog_url=lake.catalog.url,
        checkpoints=settings.TDWEB_CHECKPOINTS,
        skip_history=stream.history_cancelled is not None,
    )


def start_gate() -> threading.BoundedSemaphore:
    """The worker's start gate (module docstring): a semaphore of ``TDWEB_START_CONCURRENCY``
    places (at least 1), created at first use."""
    global _gate
    with _gate_lock:
        if _gate is None:
            _gate = threading.BoundedSemaphore(max(1, int(settings.TDWEB_START_CONCURRENCY)))
        return _gate


def _beat(stream_id: int, worker: str) -> None:
    Stream.objects.filter(pk=stream_id, worker=worker).update(heartbeat_at=timezone.now())


def _await_first_batch(query: Any, stream_id: int, worker: str, limit_s: float) -> None:
    """Return once the query has committed a micro-batch (``recentProgress``), has ended, the
    worker shuts down or ``limit_s`` seconds have passed; polls every 0.25 s and beats every
    ``TDWEB_HEARTBEAT_S`` meanwhile (the stream stays this worker's)."""
    deadline = time.monotonic() + limit_s
    next_beat = time.monotonic() + settings.TDWEB_HEARTBEAT_S
    while time.monotonic() < deadline and not SHUTDOWN.is_set() and not _made_progress(query):
        if query.awaitTermination(0.25):
            return
        if time.monotonic() >= next_beat:
            _beat(stream_id, worker)
            next_beat = time.monotonic() + settings.TDWEB_HEARTBEAT_S


def _watch(
    query: Any,
    stream_id: int,
    worker: str,
    stop_flag: threading.Event,
    backoff: list[float],
    *,
    skipping: bool = False,
) -> None:
    """Beat every ``TDWEB_HEARTBEAT_S`` while the query runs, resetting the back-off once a
    micro-batch has committed; stop it at a micro-batch boundary when the stream should stop.
    Once the query's committed offset is past the FILL_HISTORY snapshot, a CATCHING_UP stream
    becomes RUNNING at the next beat, live rows or not (issue 16 item 2). When the catch-up is
    cancelled while the query reads history (``skipping`` False: it was started before), the
    query is stopped and ``_watch`` returns, so ``_supervise`` starts it again from its checkpoint
    with the rest of the snapshot skipped (``stream_control.stream_history_cancel``).
    Raises the query's failure."""
    caught_up = False
    while True:
        if query.awaitTermination(settings.TDWEB_HEARTBEAT_S):
            exc = query.exception()
            if exc is not None and _should_run(stream_id, worker):
                raise RuntimeError(str(exc).split("\n")[0][:2000])
            return
        beat: dict[str, object] = {"heartbeat_at": timezone.now()}
        committed = committed_version(query)
        if committed is not None:
            beat["processed_version"] = committed
        Stream.objects.filter(pk=stream_id, worker=worker).update(**beat)
        if committed is not None and not caught_up:  # past the FILL_HISTORY snapshot
            stream_history_complete(stream_id=stream_id)
            caught_up = True
        if not caught_up and not skipping and _history_cancelled(stream_id):
            log.info("history catch-up cancelled: restarting the query without the rest of the snapshot")
            query.stop()
            return
        if not _should_run(stream_id, worker):
            stop_flag.set()
            query.stop()
            return
        if _made_progress(query):
            backoff[0] = 1.0


def _history_cancelled(stream_id: int) -> bool:
    """The stream's FILL_HISTORY catch-up has been cancelled (``Stream.history_cancelled``)."""
    return Stream.objects.filter(pk=stream_id, history_cancelled__isnull=False).exists()


def _after_failure(stream_id: int, worker: str, run: StreamRun, e: Exception, backoff: float) -> float:
    """Record a failed run, wait out the back-off (beating, so the stream stays this worker's) and
    return the next back-off."""
    log.exception("stream failed", error=str(e)[:200], backoff_s=backoff)
    run.restarts += 1
    run.error = str(e)[:4000]
    run.save(update_fields=["restarts", "error", "updated_at"])
    stream_set_status(stream_id=stream_id, status=Stream.Status.FAILED, error=str(e))
    deadline = time.monotonic() + backoff * random.uniform(0.75, 1.25)
    while time.monotonic() < deadline and _should_run(stream_id, worker):
        Stream.objects.filter(pk=stream_id, worker=worker).update(heartbeat_at=timezone.now())
        time.sleep(min(1.0, backoff))
    return min(backoff * 2, BACKOFF_MAX_S)


def _finish(stream_id: int, worker: str, run: StreamRun, lake: Lake) -> None:
    """End the run: release the stream, remove a dropped stream's state, settle its status."""
    run.ended_at = timezone.now()
    run.state = StreamRun.State.FAILED if run.error and not SHUTDOWN.is_set() else StreamRun.State.STOPPED
    run.save(update_fields=["ended_at", "state", "updated_at"])
    stream = Stream.objects.get(pk=stream_id)
    fields = {"worker": "", "heartbeat_at": None}
    if stream.status == Stream.Status.DROPPED:
        Stream.objects.filter(pk=stream_id).update(**fields)
        checkpoint_remove(stream, lake.uri)
    elif SHUTDOWN.is_set():
        Stream.objects.filter(pk=stream_id, worker=worker).update(**fields)
    else:
        final: dict[str, str] = {
            Stream.Desired.PAUSED: Stream.Status.PAUSED,
            Stream.Desired.STOPPED: Stream.Status.STOPPED,
        }
        status = final.get(stream.desired_state, stream.status)
        Stream.objects.filter(pk=stream_id, worker=worker).update(**fields)
        stream_set_status(stream_id=stream_id, status=status)
    log.info("stream stopped", state=run.state, restarts=run.restarts)


def _run_period(
    stream: Stream, compiled: CompiledStream, sink: OutputSink, worker: str, lake_root: str
) -> None:
    """Run a PERIOD stream (runtime/period.py) until it should stop; its state is kept beside the
    checkpoints of Spark streams, so a restart continues from the last trigger."""
    from spark_workers.runtime.period import PeriodRunner

    runner = PeriodRunner(
        compiled,
        sink.lake,
        sink,
        created_ms=int(stream.created_at.timestamp() * 1000),
        start_version=stream.start_version,
        tz=settings.TDWEB_TIMEZONE,
        state=StreamState(lake_root, stream.key, settings.TDWEB_CHECKPOINTS),
    )
    stream_set_status(stream_id=stream.pk, status=Stream.Status.RUNNING, error="")

    def beat(version: int) -> None:
        Stream.objects.filter(pk=stream.pk, worker=worker).update(
            heartbeat_at=timezone.now(), processed_version=version
        )

    runner.run(lambda: _should_run(stream.pk, worker), beat)


def _discard(_value: object) -> None:
    """Adapt a service that returns the row it wrote to a callback that returns nothing."""


def _made_progress(query: object) -> bool:
    """True once the query has committed at least one micro-batch since it started."""
    try:
        return bool(query.recentProgress)  # type: ignore[attr-defined]
    except Exception:  # the query may be stopping
        return False


def stream_reconcile() -> list[int]:
    """Enqueue every stream that should run but has no live worker (beat, every few seconds)."""
    ids = list(
        Stream.objects.filter(desired_state=Stream.Desired.RUNNING)
        .exclude(status=Stream.Status.DROPPED)
        .filter(Q(worker="") | Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=_stale_before()))
        .values_list("pk", flat=True)
    )
    for pk in ids:
        stream_enqueue(stream_id=pk)
    return ids


def worker_recover(*, worker: str) -> list[int]:
    """On worker start: streams this worker name held before it died are taken back at once."""
    ids = list(
        Stream.objects.filter(worker=worker, desired_state=Stream.Desired.RUNNING)
        .exclude(status=Stream.Status.DROPPED)
        .values_list("pk", flat=True)
    )
    Stream.objects.filter(pk__in=ids).update(worker="", heartbeat_at=None)
    for pk in ids:
        stream_enqueue(stream_id=pk)
    return ids
