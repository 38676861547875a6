"""Spark 4 Python streaming data source ``tdlake``: a trigger table's history and change feed.

Offsets are Delta versions (see ``changes``); ``read`` yields Arrow record batches in the
logical schema, cast exactly to the declared Spark schema (ARCHITECTURE pitfalls: TIMESTAMP must
arrive as ``timestamp[us, tz=UTC]``; delta-rs hands out ``string_view``).

Options: ``lake`` (root folder), ``db``, ``table``, ``members`` (a virtual table's members read
by this run, comma-separated), ``align`` (``0``: a virtual table's rows are not aligned across
micro-batches, ``ChangeReader``), ``start_version``, ``history_version``
(empty = no FILL_HISTORY), ``ignore_until`` (skip changes up to this version),
``skip_history`` (``1``: the FILL_HISTORY catch-up was cancelled; the rest of the snapshot is
not read, ``changes.next_offset``), ``max_rows``
(history rows per micro-batch), ``max_versions`` (Delta versions per micro-batch), ``partitions``
(input partitions per micro-batch, read in parallel; default 2).

A subclass may set ``transform`` (a picklable ``pa.Table -> pa.Table``) and ``transform_schema``:
each partition's rows are then transformed where they are read (``runtime/premerge.py`` turns an
INTERVAL stream's rows into partial aggregates there) and the source declares that schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from spark_workers.lake.changes import (
    HISTORY_ROWS_PER_BATCH,
    ChangeReader,
    conform,
    initial_offset,
    next_offset,
    read_range,
    split_range,
)
from spark_workers.lake.store import Lake

_LAKES: dict[tuple[str, str], Lake] = {}


def _lake(options: Any) -> Lake:
    """The lake of the source options ``lake`` (root) and ``catalog`` (``TDWEB_CATALOG_URL``,
    "" for the SQLite catalog in the lake), one per process (executors included)."""
    key = (str(options["lake"]), str(options.get("catalog") or ""))
    lake = _LAKES.get(key)
    if lake is None:
        lake = _LAKES[key] = Lake(key[0], key[1] or None)
    return lake


class RangePartition(InputPartition):
    """Rows between two offsets."""

    def __init__(self, start: dict[str, int], end: dict[str, int]) -> None:
        super().__init__((start, end))
        self.start = start
        self.end = end


class TdLakeStreamReader(DataSourceStreamReader):
    """Reader of one trigger table (see module docstring)."""

    def __init__(self, options: dict[str, str], schema: StructType, transform: Any = None) -> None:
        self.opts = dict(options)
        self.schema = schema
        self.transform = transform
        # (version, db, storage table) when the last full poll found no version after ``version``
        self._idle: tuple[int, str, str] | None = None

    def _reader(self) -> ChangeReader:
        return ChangeReader(_lake(self.opts), self.opts["db"], self.opts["table"], _members(self.opts))

    def initialOffset(self) -> dict[str, int]:
        hv = self.opts.get("history_version") or ""
        return initial_offset(int(self.opts["start_version"]), int(hv) if hv != "" else None)

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, int]:
        if start is None:  # older call shape: report the newest version
            return {"v": self._reader().latest_version(), "h": -1}
        s = {"v": int(start["v"]), "h": int(start["h"])}
        idle = self._idle
        if (
            idle is not None
            and s["h"] < 0
            and idle[0] == s["v"]
            and not _lake(self.opts).has_version(idle[1], idle[2], s["v"] + 1)
        ):
            return s  # still nothing new: one stat of the next log file
        reader = self._reader()
        end = next_offset(
            reader,
            s,
            max_rows=int(self.opts.get("max_rows", HISTORY_ROWS_PER_BATCH)),
            max_versions=int(self.opts.get("max_versions", 1000)),
            skip_history=self._skip_history(),
        )
        # an idle change feed of one table: the next polls only look for version v + 1's log file
        # (Delta versions are consecutive; a log cleanup removes old files only), not the whole
        # log and catalog: Spark polls every 10 ms between micro-batches with LOW_LATENCY_CALC's
        # 0 s trigger (docs/decisions.md, "Latency")
        quiet = end == s and s["h"] < 0 and type(reader) is ChangeReader
        self._idle = (s["v"], reader.db.name, reader.storage.name) if quiet else None
        return end

    def _skip_history(self) -> bool:
        """The FILL_HISTORY catch-up was cancelled (option ``skip_history``, ``next_offset``)."""
        return (self.opts.get("skip_history") or "") == "1"

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        s = {"v": int(start["v"]), "h": int(start["h"])}
        e = {"v": int(end["v"]), "h": int(end["h"])}
        if s == e:
            return []
        if self._skip_history() and s["h"] >= 0 and e["h"] < 0:  # the rest of a cancelled catch-up
            return [RangePartition(s, e)]
        parts = int(self.opts.get("partitions", 2))
        return [RangePartition(a, b) for a, b in split_range(self._reader(), s, e, parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        skip = self.opts.get("ignore_until") or ""
        table = read_range(
            self._reader(),
            partition.start,
            partition.end,
            ignore_until=int(skip) if skip != "" else None,
            skip_history=self._skip_history(),
            ordered=self.transform is None,  # a transform orders the rows by ``_seq`` itself
        )
        target = _arrow_schema(self.schema)
        if self.transform is not None:
            table = self.transform(table)  # conforms its input itself (runtime/premerge.py)
        else:  # the schema declared when the query began: ALTER while it runs changes nothing
            table = conform(table, target)  # (seed 002, "Database and Table Operations")
        table = table.cast(target)
        yield from table.to_batches(max_chunksize=65_536)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: offsets are Delta versions, kept by the table itself."""


class TdLakeSource(DataSource):
    """``spark.readStream.format("tdlake")``."""

    @classmethod
    def name(cls) -> str:
        return "tdlake"

    transform: Any = None
    transform_schema: pa.Schema | None = None

    def schema(self) -> StructType:
        if self.transform_schema is not None:
            return from_arrow_schema(self.transform_schema)
        reader = ChangeReader(
            _lake(self.options), self.options["db"], self.options["table"], _members(self.options)
        )
        return from_arrow_schema(reader.schema())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TdLakeStreamReader(dict(self.options), schema, self.transform)


def _members(opts: Any) -> list[str] | None:
    """Option ``members``: a virtual table's members, comma-separated (absent: not virtual)."""
    raw = opts.get("members") or ""
    return [m for m in raw.split(",") if m] if raw else None


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
