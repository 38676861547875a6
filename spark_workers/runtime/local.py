"""``LocalRunner``: a stream without Spark, for tests and tools.

It runs exactly the pipeline of the Spark query (``runtime.query``): the same offsets and change
reader, stage 1 (here DuckDB instead of Spark SQL), the same per-bucket kernel and state bytes, and
the same output sink. What Spark adds on top (checkpoints, shuffles, the state store, scheduling)
is exercised by the Spark tests.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.engine.rows import combination_codes
from spark_workers.lake.changes import ChangeReader, initial_offset, next_offset, read_range
from spark_workers.lake.store import Lake
from spark_workers.notify.sender import Sender
from spark_workers.query.duck import DuckSession
from spark_workers.runtime.filtered import ns_timestamps
from spark_workers.runtime.kernel import Kernel
from spark_workers.runtime.packing import decode_output, encode_output, pack, unpack
from spark_workers.runtime.plan import kernel_config, stage1_duckdb
from spark_workers.runtime.premerge import premerge
from spark_workers.runtime.sink import BatchReport, OutputSink
from spark_workers.streams.compile import CompiledStream
from spark_workers.streams.registry import MemoryRegistry
from spark_workers.streams.stored import stream_compiled


class LocalRunner:
    """One stream, one process, micro-batches on demand.

    Args:
        compiled: the compiled stream; lake: the lake.
        start_version / history_version: as registered at CREATE STREAM.
        buckets: number of state buckets (as in Spark).
        clock: the wall clock in precision units (tests pass their own).
        skip_history: the FILL_HISTORY catch-up was cancelled (``lake.changes.next_offset``);
            settable between polls, as a restarted Spark query sees it.
    """

    def __init__(
        self,
        compiled: CompiledStream,
        lake: Lake,
        *,
        stream_key: str,
        start_version: int,
        history_version: int | None,
        tz: str = "UTC",
        buckets: int = 4,
        sender: Sender | None = None,
        ignore_until: int | None = None,
        progress: Callable[[BatchReport], None] | None = None,
        clock: Callable[[], int] | None = None,
        skip_history: bool = False,
    ) -> None:
        self.c = compiled
        self.lake = lake
        self.tz = tz
        self.buckets = buckets
        self.reader = ChangeReader(
            lake, compiled.source.db.name, compiled.source.table.name, align=not compiled.rules.ignore_update
        )
        self.offset = initial_offset(start_version, history_version)
        # a stream without a window runs no kernel: its stage-1 rows go to the sink
        self.kernel = (
            None
            if compiled.plan.projection
            else Kernel(kernel_config(compiled, lake.uri, tz, lake.catalog.url))
        )
        self.sink = OutputSink(compiled, lake, stream_key=stream_key, tz=tz, sender=sender, progress=progress)
        self.states: dict[int, bytes] = {}
        self.ignore_until = ignore_until
        self.skip_history = skip_history
        self.batch_id = 0
        self.clock = clock or (self.kernel.cfg.now if self.kernel is not None else lambda: 0)

    @classmethod
    def for_registered(
        cls, lake: Lake, registry: MemoryRegistry, name: str, *, tz: str = "UTC", **kwargs: Any
    ) -> LocalRunner:
        """The runner of a stream created by an ``Executor`` over ``registry``, from the versions
        registered at CREATE STREAM; ``kwargs`` as for the constructor (``stream_key`` defaults
        to the registry's key).

        Raises:
            KeyError: no such stream.
        """
        info = registry.get(name, None)
        if info is None:
            raise KeyError(f"stream {name} is not registered")
        key = registry.key(name, None)
        start, history = registry.start_versions[key]
        kwargs.setdefault("stream_key", key)
        return cls(
            stream_compiled(info.spec, info.compiled, lake, tz),
            lake,
            start_version=start,
            history_version=history,
            tz=tz,
            **kwargs,
        )

    def poll(self) -> BatchReport | None:
        """Run one micro-batch if there is new data; None otherwise."""
        end = next_offset(self.reader, self.offset, skip_history=self.skip_history)
        if end == self.offset:
            return None
        skipped = self.skip_history and self.offset["h"] >= 0  # the rest of a cancelled catch-up
        phase = "history" if self.offset["h"] >= 0 and not skipped else "live"
        rows = read_range(
            self.reader, self.offset, end, ignore_until=self.ignore_until, skip_history=self.skip_history
        )
        out = self._process(rows)
        done = phase == "history" and int(end["h"]) < 0  # the snapshot's last bucket
        rep = self.sink.process(out, self.batch_id, phase=phase, now=self.clock(), history_done=done)
        self.offset = end
        self.batch_id += 1
        return rep

    def run(self, max_batches: int = 10_000) -> list[BatchReport]:
        """Poll until caught up."""
        reports = []
        for _ in range(max_batches):
            r = self.poll()
            if r is None:
                break
            reports.append(r)
        return reports

    def _timestamps(self, rows: pa.Table) -> pa.Table:
        """Change rows as stage 1 reads them (``filtered.ns_timestamps``)."""
        return ns_timestamps(self.c, rows)

    def _process(self, rows: pa.Table) -> pa.Table:
        with DuckSession(None) as duck:
            view = duck.register_arrow(self._timestamps(rows))
            staged = duck.query(self._stage1(view))
        if self.kernel is None:
            return staged
        gcols = [g.name for g in self.c.plan.groups]
        if gcols and staged.num_rows:
            code = combination_codes(staged, gcols)  # the bucket is computed once per group
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            keys = staged.select(gcols).take(pa.array(first)).to_pylist()
            per = np.array([zlib.crc32(repr(list(k.values())).encode()) % self.buckets for k in keys])
            bucket = pa.array(per[inv].astype(np.int32), pa.int32())
        else:
            bucket = pa.array([0] * staged.num_rows, pa.int32())
        outs = []
        now = self.clock() if self.kernel.cfg.timers else None
        for b in sorted(set(bucket.to_pylist())):
            part = staged.filter(pc.equal(bucket, b))
            if self.kernel.cfg.premerge:  # as Spark does before its shuffle
                part = premerge(self.kernel.cfg, part)
            elif self.kernel.cfg.pack:  # packed and unpacked around Spark's shuffle (runtime/packing.py)
                part = unpack(pack(part, self.kernel.cfg.groups), part.schema)
            out, self.states[b] = self.kernel.step(b, self.states.get(b), part, now)
            outs.append(self._crossed(out))
        if not outs:
            return self._timer_step(staged.schema.empty_table(), now)
        return pa.concat_tables(outs)

    def tick(self) -> BatchReport | None:
        """A step without data at the clock's time for every bucket (what Spark's processing-time
        timeouts do), for streams with timers; None for the others."""
        if self.kernel is None or not self.kernel.cfg.timers:
            return None
        with DuckSession(None) as duck:
            view = duck.register_arrow(self._timestamps(self.reader.schema().empty_table()))
            staged = duck.query(self._stage1(view))
        now = self.clock()
        out = self._timer_step(staged, now)
        rep = self.sink.process(out, self.batch_id, phase="live", now=now)
        self.batch_id += 1
        return rep

    def _timer_step(self, empty: pa.Table, now: int | None) -> pa.Table:
        assert self.kernel is not None
        outs = []
        for b in sorted(self.states) or [0]:
            out, self.states[b] = self.kernel.step(b, self.states.get(b), empty, now)
            outs.append(self._crossed(out))
        return pa.concat_tables(outs)

    def _crossed(self, out: pa.Table) -> pa.Table:
        """A kernel step's output as the sink gets it from Spark: through the packed output's
        round trip when the stream packs it (``runtime/packing.py`` ``encode_output``)."""
        assert self.kernel is not None
        if not self.kernel.cfg.pack_output:
            return out
        schema = self.kernel.cfg.output_schema()
        return decode_output(pa.table({"_out": encode_output(out.cast(schema))}), schema)

    def _stage1(self, view: str) -> str:
        return stage1_duckdb(self.c, self.tz, view)
