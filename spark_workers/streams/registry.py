"""The stream registry contract: where streams are created, listed and controlled.

The statement front door (``spark_workers.statements``) creates and controls streams through a
:class:`StreamRegistry`; the Django app implements it over its ``Stream`` model
(``streams_app.services.registry``), tests and the shell without Django use :class:`MemoryRegistry`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from spark_workers.streams.spec import StreamSpec


@dataclass
class StreamInfo:
    """A stream as the registry knows it (for SHOW STREAMS and management)."""

    name: str
    db: str | None
    sql: str
    status: str
    spec: StreamSpec
    created_ms: int = 0
    message: str = ""
    # the running task (ins_stream_tasks): worker, started_ms, heartbeat_ms, processed_version,
    # last_batch_id, rows_in, rows_out, recalculated, notifications_sent / _failed
    task: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None  # the user who created it (its privileges are the stream's)
    compiled: dict[str, Any] | None = None  # the stored compiled form (streams/stored.py)


class StreamRegistry(Protocol):
    """Where streams live (the Django app implements it; tests use ``MemoryRegistry``)."""

    def get(self, name: str, db: str | None) -> StreamInfo | None: ...

    def create(
        self,
        spec: StreamSpec,
        *,
        compiled: dict[str, Any],
        start_version: int,
        history_version: int | None,
        owner: str | None = None,
    ) -> None:
        """Register a stream with its compiled form (``streams/stored.py``: what workers run)."""
        ...

    def drop(self, name: str, db: str | None) -> None: ...

    def command(self, name: str, db: str | None, action: str, *, ignore_untreated: bool = False) -> None: ...

    def list(self, db: str | None = None) -> list[StreamInfo]: ...


class MemoryRegistry:
    """In-memory StreamRegistry (unit tests, the shell without Django)."""

    def __init__(self) -> None:
        self.streams: dict[str, StreamInfo] = {}
        self.start_versions: dict[str, tuple[int, int | None]] = {}

    @staticmethod
    def key(name: str, db: str | None) -> str:
        """The registry key of a stream name (names are case-insensitive)."""
        return name.lower()

    def get(self, name: str, db: str | None) -> StreamInfo | None:
        return self.streams.get(self.key(name, db))

    def create(
        self,
        spec: StreamSpec,
        *,
        compiled: dict[str, Any],
        start_version: int,
        history_version: int | None,
        owner: str | None = None,
    ) -> None:
        self.streams[self.key(spec.name, spec.db)] = StreamInfo(
            spec.name, spec.db, spec.sql, "running", spec, owner=owner, compiled=compiled
        )
        self.start_versions[self.key(spec.name, spec.db)] = (start_version, history_version)

    def drop(self, name: str, db: str | None) -> None:
        self.streams.pop(self.key(name, db), None)

    def command(self, name: str, db: str | None, action: str, *, ignore_untreated: bool = False) -> None:
        info = self.streams[self.key(name, db)]
        info.status = {"pause": "paused", "stop": "stopped", "resume": "running", "start": "running"}[action]

    def list(self, db: str | None = None) -> list[StreamInfo]:
        return sorted(self.streams.values(), key=lambda s: s.name)
