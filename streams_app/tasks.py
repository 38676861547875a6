"""Celery tasks (thin: they call one service each)."""

from __future__ import annotations

import logging
import socket
import threading
import time

from celery import shared_task
from celery.signals import worker_init, worker_ready, worker_shutting_down

log = logging.getLogger(__name__)


def _worker_name(task: object | None = None) -> str:
    req = getattr(task, "request", None)
    return str(getattr(req, "hostname", None) or socket.gethostname())


@shared_task(name="streams.run", bind=True, acks_late=False, ignore_result=True)
def stream_run(self, stream_id: int) -> None:  # type: ignore[no-untyped-def]
    """Supervise stream ``stream_id`` until it should stop (queue ``streams``)."""
    from streams_app.services.supervisor import stream_supervise

    stream_supervise(stream_id=stream_id, worker=_worker_name(self))


@shared_task(name="streams.recalculate", ignore_result=True)
def stream_recalculate_task(job_id: int) -> None:
    """Run background recalculation ``job_id`` (``services/recalc_jobs.recalc_job_run``)."""
    from streams_app.services.recalc_jobs import recalc_job_run

    recalc_job_run(job_id=job_id)


@shared_task(name="streams.reconcile", ignore_result=True)
def stream_reconcile_task() -> list[int]:
    """Hand streams without a live worker to one (beat)."""
    from streams_app.services.supervisor import stream_reconcile

    return stream_reconcile()


@shared_task(name="lake.compact", ignore_result=True)
def lake_compact_task() -> int:
    """Compact small files of every data table (beat)."""
    from streams_app.services.maintenance import lake_compact

    return lake_compact()


@shared_task(name="lake.retain", ignore_result=True)
def lake_retain_task() -> int:
    """Delete rows older than each database's KEEP (beat)."""
    from streams_app.services.maintenance import lake_retain

    return lake_retain()


def spark_warmup() -> threading.Thread:
    """Start the worker's SparkSession in a background thread (the JVM takes seconds to start:
    a worker restarted after ``kill -9`` starts it while Celery boots, before it takes its streams
    back). Returns the thread; a failure is logged, and the streams' own start reports it."""
    from django.conf import settings

    def warm() -> None:
        from spark_workers.runtime.session import spark_session

        t0 = time.monotonic()
        try:
            spark_session(settings.SPARK_MASTER)
            log.info("SparkSession ready in %.1fs", time.monotonic() - t0)
        except Exception:
            log.exception("SparkSession warm-up failed")

    thread = threading.Thread(target=warm, name="spark-warmup", daemon=True)
    thread.start()
    return thread


def memory_tracing(folder: str, every_s: float) -> threading.Thread | None:
    """Start ``tracemalloc`` (5 frames) and a daemon thread that writes a snapshot to
    ``folder/snapshot-<n>.pickle`` every ``every_s`` seconds (n = 0, 1, ...), for tracing the
    worker's memory growth (docs/PERFORMANCE.md, "Worker memory soak"); None when ``folder`` is
    empty. Costs CPU and memory while on: a diagnostic, off by default."""
    if not folder:
        return None
    import tracemalloc
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(5)

    def dump() -> None:
        n = 0
        while True:
            time.sleep(every_s)
            if not tracemalloc.is_tracing():  # stopped elsewhere: nothing more to write
                return
            tracemalloc.take_snapshot().dump(str(out / f"snapshot-{n}.pickle"))
            n += 1

    thread = threading.Thread(target=dump, name="tracemalloc-snapshots", daemon=True)
    thread.start()
    return thread


def memory_sampling(
    folder: str, every_s: float, *, stop: threading.Event | None = None
) -> threading.Thread | None:
    """Start a daemon thread that appends one JSON line of
    :func:`spark_workers.runtime.memory.memory_sample` (RSS, Arrow pool, glibc arenas, cached
    Delta snapshots, DuckDB pool, threads) to ``folder/samples-<pid>.jsonl`` now and every
    ``every_s`` seconds, for finding what grows with the worker's RSS (docs/PERFORMANCE.md,
    "Worker memory soak"); None when ``folder`` is empty. A failed sample is logged and the next
    one taken; ``stop``, when given and set, ends the thread. A diagnostic, off by default."""
    if not folder:
        return None
    import json
    import os
    from pathlib import Path

    from spark_workers.runtime.memory import memory_sample

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"samples-{os.getpid()}.jsonl"

    halt = stop or threading.Event()

    def sample() -> None:
        while not halt.is_set():
            try:
                line = json.dumps(memory_sample())
                with path.open("a") as f:
                    f.write(line + "\n")
            except Exception:
                log.exception("memory sample failed")
            halt.wait(every_s)

    thread = threading.Thread(target=sample, name="memory-samples", daemon=True)
    thread.start()
    return thread


@worker_init.connect
def _on_worker_init(**kwargs):  # type: ignore[no-untyped-def]
    from django.conf import settings

    memory_tracing(settings.TDWEB_TRACEMALLOC_DIR, settings.TDWEB_TRACEMALLOC_EVERY_S)
    memory_sampling(settings.TDWEB_MEMORY_SAMPLES_DIR, settings.TDWEB_MEMORY_SAMPLES_EVERY_S)
    spark_warmup()


@worker_ready.connect
def _on_worker_ready(sender=None, **kwargs):  # type: ignore[no-untyped-def]
    from streams_app.services.supervisor import worker_recover

    name = getattr(sender, "hostname", None) or socket.gethostname()
    try:
        recovered = worker_recover(worker=name)
        if recovered:
            log.info("worker %s takes back streams %s", name, recovered)
    except Exception:  # the DB may not be migrated yet in odd setups; beat will reconcile
        log.exception("worker recovery failed")


@worker_shutting_down.connect
def _on_worker_shutdown(**kwargs):  # type: ignore[no-untyped-def]
    from streams_app.services.supervisor import SHUTDOWN

    SHUTDOWN.set()
