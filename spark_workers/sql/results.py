"""Statement results and the stream registry contract used by the executor."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from spark_workers import timestamps
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.sql.spec import StreamSpec
from spark_workers.tdtypes import INT, TdType


@dataclass
class ResultColumn:
    """A result column: ``name``, TDengine ``type`` and, for timestamps, the ``precision`` of the
    values (``ms``/``us``/``ns``)."""

    name: str
    type: TdType
    precision: str = "ms"


@dataclass
class ResultSet:
    """Answer of one statement.

    ``rows`` hold Python values; TIMESTAMP cells are int epoch values in the column's precision.
    DDL/DML answers have the single column ``affected_rows`` (TDengine REST's shape).
    """

    columns: list[ResultColumn]
    rows: list[list[Any]]
    affected_rows: int | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def affected(cls, n: int) -> ResultSet:
        return cls([ResultColumn("affected_rows", INT)], [[n]], affected_rows=n)

    def to_rest(self, tz: str) -> dict[str, Any]:
        """TDengine REST JSON: ``{code: 0, column_meta, data, rows}``; timestamps as RFC 3339."""
        meta = [[c.name, c.type.meta_name, c.type.byte_length] for c in self.columns]
        data = []
        for row in self.rows:
            out = []
            for c, v in zip(self.columns, row, strict=True):
                out.append(rest_value(v, c, tz))
            data.append(out)
        return {"code": 0, "column_meta": meta, "data": data, "rows": len(data)}


def rest_value(v: Any, c: ResultColumn, tz: str) -> Any:
    """One cell as TDengine's REST service renders it."""
    if v is None:
        return None
    if c.type.name == "TIMESTAMP":
        return timestamps.render(int(v), c.precision, tz)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, decimal.Decimal):
        return int(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def arrow_rows(t: pa.Table, columns: list[ResultColumn]) -> list[list[Any]]:
    """Rows of an Arrow table as Python values, timestamps converted to int epoch values in each
    column's precision."""
    cols = []
    for c, col in zip(columns, t.columns, strict=True):
        if pa.types.is_timestamp(col.type):
            unit = col.type.unit
            ints = col.cast(pa.timestamp(unit)).cast(pa.int64()).to_pylist()
            per_unit = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
            want = NS_PER_PRECISION[c.precision]
            cols.append([None if x is None else x * per_unit // want for x in ints])
        elif c.type.name == "TIMESTAMP" and pa.types.is_integer(col.type):
            cols.append(col.to_pylist())
        else:
            vals = col.to_pylist()
            cols.append(
                [
                    x.isoformat()
                    if isinstance(x, dt.date | dt.time) and not isinstance(x, dt.datetime)
                    else x
                    for x in vals
                ]
            )
    return [list(r) for r in zip(*cols, strict=True)] if cols else []


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


class StreamRegistry(Protocol):
    """Where streams live (the Django app implements it; tests use ``MemoryRegistry``)."""

    def get(self, name: str, db: str | None) -> StreamInfo | None: ...

    def create(
        self, spec: StreamSpec, *, start_version: int, history_version: int | None, owner: str | None = None
    ) -> None: ...

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
        self, spec: StreamSpec, *, start_version: int, history_version: int | None, owner: str | None = None
    ) -> None:
        self.streams[self.key(spec.name, spec.db)] = StreamInfo(
            spec.name, spec.db, spec.sql, "running", spec, owner=owner
        )
        self.start_versions[self.key(spec.name, spec.db)] = (start_version, history_version)

    def drop(self, name: str, db: str | None) -> None:
        self.streams.pop(self.key(name, db), None)

    def command(self, name: str, db: str | None, action: str, *, ignore_untreated: bool = False) -> None:
        info = self.streams[self.key(name, db)]
        info.status = {"pause": "paused", "stop": "stopped", "resume": "running", "start": "running"}[action]

    def list(self, db: str | None = None) -> list[StreamInfo]:
        return sorted(self.streams.values(), key=lambda s: s.name)
