"""The worker's Celery signal handlers (``streams_app/tasks.py``)."""

from __future__ import annotations

import weakref

from celery.signals import worker_init

from spark_workers.runtime import session
from streams_app import tasks


def _receivers(signal) -> list[object]:  # type: ignore[no-untyped-def]
    out = []
    for _key, receiver in signal.receivers:
        out.append(receiver() if isinstance(receiver, weakref.ReferenceType) else receiver)
    return out


def test_the_worker_starts_its_sparksession_at_worker_init(monkeypatch, settings) -> None:
    """The JVM starts when the worker process initialises (``worker_init``), not once Celery is
    ready: a worker restarted after ``kill -9`` overlaps the two (issue 17)."""
    assert tasks._on_worker_init in _receivers(worker_init)
    started: list[str] = []
    monkeypatch.setattr(session, "spark_session", lambda master: started.append(master))
    settings.SPARK_MASTER = "local[1]"
    tasks.spark_warmup().join(timeout=60)
    assert started == ["local[1]"]


def test_memory_tracing_writes_snapshots_only_when_asked(tmp_path):
    """TDWEB_TRACEMALLOC_DIR (the soak bench's --tracemalloc): snapshots appear in the folder, and
    the writer stops once tracing stops; without a folder nothing is started."""
    import time
    import tracemalloc

    from streams_app.tasks import memory_tracing

    assert memory_tracing("", 0.05) is None
    assert not tracemalloc.is_tracing()
    thread = memory_tracing(str(tmp_path / "traces"), 0.05)
    assert thread is not None
    try:
        deadline = time.monotonic() + 20
        while not list((tmp_path / "traces").glob("snapshot-*.pickle")) and time.monotonic() < deadline:
            time.sleep(0.05)
        snap = tracemalloc.Snapshot.load(str(tmp_path / "traces" / "snapshot-0.pickle"))
        assert snap.traceback_limit == 5
    finally:
        tracemalloc.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_memory_sampling_appends_json_lines_only_when_asked(tmp_path):
    """TDWEB_MEMORY_SAMPLES_DIR (the soak bench's --samples): a JSON line per sample in
    samples-<pid>.jsonl; without a folder nothing is started."""
    import json
    import os
    import threading
    import time

    from streams_app.tasks import memory_sampling

    assert memory_sampling("", 0.05) is None
    stop = threading.Event()
    thread = memory_sampling(str(tmp_path / "samples"), 0.05, stop=stop)
    assert thread is not None
    path = tmp_path / "samples" / f"samples-{os.getpid()}.jsonl"
    try:
        deadline = time.monotonic() + 20
        while (not path.exists() or len(path.read_text().splitlines()) < 2) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
    thread.join(timeout=20)
    assert not thread.is_alive()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) >= 2
    assert {"rss", "arrow_allocated", "malloc", "delta", "threads"} <= set(lines[0])
