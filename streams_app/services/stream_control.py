"""Stream control: start requests, user actions, drop, and what workers report back (the
registry, the supervisor and the API's actions use these; creating and recalculating a stream,
which run statements, are in ``services/streams.py``).

Live updates go to the Channels groups ``streams`` (all streams) and ``stream.<id>``.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from celery import current_app
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from spark_workers.errors import CatalogError, Code
from spark_workers.notify.sender import Attempt
from spark_workers.runtime.paths import StreamState
from spark_workers.runtime.sink import BatchReport
from spark_workers.streams.spec import StreamSpec
from streams_app.models import Delivery, Stream, StreamProgress
from streams_app.selectors import history_read, stream_history_progress
from streams_app.serializers import stream_json
from streams_app.services.lake import lake_get

log = logging.getLogger(__name__)
ACTIONS = ("pause", "resume", "stop", "start")


def stream_enqueue(*, stream_id: int) -> None:
    """Ask a worker (queue ``streams``) to run the stream: the Celery task ``streams.run``
    (``streams_app.tasks.stream_run``) sent by name, so the web process does not import the
    workers' code (the task supervises a stream until it stops: it never runs in the caller)."""
    current_app.send_task("streams.run", args=[stream_id], queue="streams")


def _publish(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception as e:  # live updates are best effort; the DB keeps the truth
        log.warning("publish to %s failed: %s", group, e)


def stream_publish_status(*, stream: Stream) -> None:
    """Push a stream's current row to its page and the streams list."""
    payload = stream_json(stream)
    msg = {"type": "stream.status", "stream": payload}
    _publish("streams", msg)
    _publish(f"stream.{stream.pk}", msg)


def stream_set_status(*, stream_id: int, status: str, error: str | None = None, **fields: Any) -> Stream:
    """Record what the worker reports (status, last error, worker fields)."""
    updates: dict[str, Any] = {"status": status, "updated_at": timezone.now(), **fields}
    if error is not None:
        updates["last_error"] = error[:4000]
    Stream.objects.filter(pk=stream_id).exclude(status=Stream.Status.DROPPED).update(**updates)
    stream = Stream.objects.get(pk=stream_id)
    stream_publish_status(stream=stream)
    return stream


def stream_action(*, stream: Stream, action: str, ignore_untreated: bool = False) -> Stream:
    """PAUSE/STOP (the query stops at a batch boundary; its checkpoint is kept) or RESUME/START
    (it continues from the checkpoint; IGNORE UNTREATED skips what was written meanwhile).

    Raises:
        CatalogError: unknown action or a dropped stream.
    """
    if action not in ACTIONS:
        raise CatalogError(
            f"unknown stream action {action!r}: use one of {', '.join(ACTIONS)}", code=Code.INVALID_OPERATION
        )
    if stream.status == Stream.Status.DROPPED:
        raise CatalogError(f"stream {stream.name} was dropped", code=Code.STREAM_NOT_EXIST)
    if action in ("pause", "stop"):
        desired = Stream.Desired.PAUSED if action == "pause" else Stream.Desired.STOPPED
        Stream.objects.filter(pk=stream.pk).update(desired_state=desired, updated_at=timezone.now())
        if not stream.worker:  # nobody runs it: the new state is final now
            Stream.objects.filter(pk=stream.pk).update(status=desired)
    else:
        fields: dict[str, Any] = {"desired_state": Stream.Desired.RUNNING, "updated_at": timezone.now()}
        if ignore_untreated:
            spec = StreamSpec.from_json(stream.spec)
            if spec.source is not None:
                lake = lake_get()
                t = lake.catalog.require_table(spec.source.db, spec.source.table)
                fields["ignore_until_version"] = lake.version(spec.source.db, t.storage)
        with transaction.atomic():
            Stream.objects.filter(pk=stream.pk).update(**fields)
            if stream.status in (Stream.Status.PAUSED, Stream.Status.STOPPED, Stream.Status.FAILED):
                Stream.objects.filter(pk=stream.pk).update(status=Stream.Status.STARTING)
            transaction.on_commit(lambda: stream_enqueue(stream_id=stream.pk))
    stream.refresh_from_db()
    stream_publish_status(stream=stream)
    return stream


def stream_drop(*, stream: Stream) -> None:
    """DROP STREAM: stop the query and forget the stream; its output tables and data stay
    (seed 000). The worker removes the checkpoint when it stops; if none runs it, it is removed now."""
    Stream.objects.filter(pk=stream.pk).update(
        status=Stream.Status.DROPPED, desired_state=Stream.Desired.STOPPED, updated_at=timezone.now()
    )
    stream.refresh_from_db()
    if not stream.worker:
        checkpoint_remove(stream, lake_get().uri)
    stream_publish_status(stream=stream)


def checkpoint_remove(stream: Stream, lake_root: str) -> None:
    """Delete a dropped stream's state folder, checkpoint included, wherever ``TDWEB_CHECKPOINTS``
    puts it (its output data stays, seed 000)."""
    StreamState(lake_root, stream.key, settings.TDWEB_CHECKPOINTS).remove()


def stream_progress_record(*, stream_id: int, report: BatchReport) -> StreamProgress:
    """Store a micro-batch's progress, update the stream's counters and status, push it live.

    A FILL_HISTORY micro-batch keeps the stream CATCHING_UP and carries the catch-up's progress
    (``progress["history"]``: fraction, rows/s, ETA; ``selectors.stream_history_progress``); the
    one that ends the snapshot (``report.history_done``) and any live one make it RUNNING at once
    (issue 16 item 2). The message ``stream.progress`` goes to the groups ``stream.<id>`` and
    ``streams``, and ``stream.status`` too when the status changed.
    """
    d = report.to_json()
    rows_per_s = report.input_rows / (report.duration_ms / 1000.0) if report.duration_ms > 0 else 0.0
    d["rows_per_s"] = rows_per_s
    p = StreamProgress.objects.create(
        stream_id=stream_id,
        batch_id=report.batch_id,
        phase=report.phase,
        input_rows=report.input_rows,
        output_rows=report.output_rows,
        removed_windows=report.removed_windows,
        rows_per_s=rows_per_s,
        duration_ms=report.duration_ms,
        open_windows=report.open_windows,
        state_bytes=report.state_bytes,
        watermark_ms=report.watermark_ms,
        max_event_ms=report.max_event_ms,
        notifications_sent=report.notifications_sent,
        notifications_failed=report.notifications_failed,
        expired_rows=report.expired_rows,
        recalculated=report.recalculated,
        drops=report.drops(),
    )
    catching_up = report.phase == "history" and not report.history_done
    status = Stream.Status.CATCHING_UP if catching_up else Stream.Status.RUNNING
    d["created_at"] = p.created_at.isoformat()
    before = Stream.objects.filter(pk=stream_id).first()
    if before is not None and report.phase == "history":
        d["history"] = stream_history_progress(
            stream=before, progress=d, at=p.created_at, complete=report.history_done
        )
    changed = (
        Stream.objects.filter(pk=stream_id)
        .exclude(status__in=[Stream.Status.DROPPED, Stream.Status.PAUSED, Stream.Status.STOPPED])
        .update(
            status=status,
            last_batch_id=report.batch_id,
            last_progress=d,
            heartbeat_at=timezone.now(),
            rows_in=F("rows_in") + report.input_rows,
            windows_out=F("windows_out") + report.output_rows,
            notifications_sent=F("notifications_sent") + report.notifications_sent,
            notifications_failed=F("notifications_failed") + report.notifications_failed,
        )
    )
    _progress_trim(stream_id, report.batch_id)
    msg = {"type": "stream.progress", "stream_id": stream_id, "progress": d}
    _publish(f"stream.{stream_id}", msg)
    _publish("streams", msg)
    if changed and before is not None and before.status != status:
        stream_publish_status(stream=Stream.objects.get(pk=stream_id))
    return p


def stream_history_complete(*, stream_id: int) -> bool:
    """The FILL_HISTORY snapshot has been read to its end (the supervisor learns it from the
    query's committed offset when no micro-batch said so, e.g. a Spark query whose last history
    micro-batch could not know it was the last): a CATCHING_UP stream becomes RUNNING now, without
    waiting for a live row (issue 16 item 2), its catch-up progress reaching 100 % (or, after
    ``stream_history_cancel``, staying where it was cut, ``state: "cancelled"``); the new
    progress and status are pushed live. Returns True when the status changed (idempotent)."""
    stream = Stream.objects.filter(pk=stream_id, status=Stream.Status.CATCHING_UP).first()
    if stream is None:
        return False
    d = dict(stream.last_progress or {})
    d["history"] = stream_history_progress(stream=stream, progress=d, at=timezone.now(), complete=True)
    if stream.history_cancelled is not None:  # ended by skipping the rest (stream_history_cancel)
        d["history"].update({k: stream.history_cancelled.get(k) for k in ("fraction", "label", "rows_done")})
        d["history"]["state"] = "cancelled"
    d["history_done"] = True
    changed = Stream.objects.filter(pk=stream_id, status=Stream.Status.CATCHING_UP).update(
        status=Stream.Status.RUNNING, last_progress=d, updated_at=timezone.now()
    )
    if not changed:
        return False
    msg = {"type": "stream.progress", "stream_id": stream_id, "progress": d}
    _publish(f"stream.{stream_id}", msg)
    _publish("streams", msg)
    stream_publish_status(stream=Stream.objects.get(pk=stream_id))
    return True


def history_pending(stream: Stream) -> bool:
    """True while a stream has a FILL_HISTORY snapshot it has not finished reading (and the
    catch-up was not cancelled): it is CATCHING_UP, or stopped/paused/failed/starting before its
    last micro-batch said the history was done."""
    if stream.history_version is None or stream.history_cancelled is not None:
        return False
    if stream.status in (Stream.Status.RUNNING, Stream.Status.DROPPED):
        return False
    return not history_read(stream.last_progress or {})


def stream_history_cancel(*, stream: Stream) -> Stream:
    """Cancel a FILL_HISTORY catch-up (issue 16, "progress you can trust ... cancellable").

    What it means: the output windows and notifications the catch-up has already produced stay;
    the rest of the history snapshot (the time buckets not yet read) is skipped; the stream goes
    on with the rows written after it was created, as a stream without FILL_HISTORY does (seed
    000 / 002: FILL_HISTORY 0 "only processes data written after the stream is created"). Windows
    still open at the cut are computed from the rows read before it. The running worker notices
    at its next heartbeat, stops the query at a micro-batch boundary and restarts it from its
    checkpoint with the snapshot skipped (``lake.changes.next_offset``); a stream no worker runs
    (paused, stopped) skips it when it starts. ``Stream.history_cancelled`` keeps how far the
    catch-up got; the stream's page and the ``stream.status`` message show it.

    Raises:
        CatalogError: ``INVALID_OPERATION`` when the stream has no catch-up under way (no
            FILL_HISTORY, the history is complete, or it was already cancelled); a dropped
            stream is ``STREAM_NOT_EXIST``.
    """
    if stream.status == Stream.Status.DROPPED:
        raise CatalogError(f"stream {stream.name} was dropped", code=Code.STREAM_NOT_EXIST)
    if not history_pending(stream):
        why = (
            "was created without FILL_HISTORY"
            if stream.history_version is None
            else "already skipped the rest of its history"
            if stream.history_cancelled is not None
            else "has finished reading its history"
        )
        raise CatalogError(
            f"stream {stream.name} has no history catch-up to cancel: it {why}", code=Code.INVALID_OPERATION
        )
    at = timezone.now()
    h = stream_history_progress(stream=stream, progress=stream.last_progress or {}, at=at)
    frac = h.get("fraction")
    done = f"{frac:.0%} " if frac is not None else ""
    cancelled = {
        "at": at.isoformat(),
        "rows_done": h.get("rows_done"),
        "rows_total": h.get("rows_total"),
        "fraction": frac,
        "label": f"history catch-up cancelled at {done}({h.get('rows_done') or 0:,} of "
        f"{h.get('rows_total') or 0:,} rows); the rest of the snapshot is skipped",
    }
    n = Stream.objects.filter(pk=stream.pk, history_cancelled__isnull=True).update(
        history_cancelled=cancelled, updated_at=at
    )
    if not n:  # a concurrent cancel won
        raise CatalogError(
            f"stream {stream.name} already skipped the rest of its history", code=Code.INVALID_OPERATION
        )
    log.info("stream %s: history catch-up cancelled at %s", stream.name, cancelled["label"])
    stream.refresh_from_db()
    stream_publish_status(stream=stream)
    return stream


def _progress_trim(stream_id: int, batch_id: int) -> None:
    """Keep the newest ``TDWEB_PROGRESS_KEEP`` progress rows of a stream (every 100 batches)."""
    keep = settings.TDWEB_PROGRESS_KEEP
    if batch_id % 100 == 0:
        old = list(
            StreamProgress.objects.filter(stream_id=stream_id)
            .order_by("-id")
            .values_list("id", flat=True)[keep : keep + 1]
        )
        if old:
            StreamProgress.objects.filter(stream_id=stream_id, id__lte=old[0]).delete()


def stream_delivery_record(*, stream_id: int, attempt: Attempt) -> Delivery:
    """Store one notification delivery attempt (the delivery log)."""
    return Delivery.objects.create(
        stream_id=stream_id,
        url=attempt.url[:1024],
        message_id=attempt.message_id,
        events=attempt.events,
        ok=attempt.ok,
        latency_ms=attempt.latency_ms,
        error=attempt.error[:4000],
        attempt=attempt.attempt,
    )
