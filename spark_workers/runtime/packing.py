"""Packed rows: one shuffle record per group and input partition for the streams that are not
pre-aggregated (issue 17, data-defined windows).

A stream whose rows cannot be combined before the shuffle (STATE_WINDOW, EVENT_WINDOW,
COUNT_WINDOW, SESSION, the eKuiper windows, INTERVAL with a FILTER/WHERE after windowing) used to
hand every stage-1 row to the JVM: one Spark row per trigger row through the source, the shuffle,
its sort and the Arrow -> pandas conversion for ``applyInPandasWithState``; with the engine at
about 1 µs per row (docs/PERFORMANCE.md, "Data-defined windows") that per-row work was most of a
micro-batch. Here the ``tdlake`` source runs stage 1 (DuckDB, as the pre-aggregation and the
recalculation reader do) and packs each partition's rows into one row per group (at most
``PACK_ROWS`` rows each, in arrival order): the PARTITION BY columns stay plain columns, so Spark
hashes them to the same ``_bucket`` as before, and the rows themselves travel as one Arrow IPC
record batch message in a binary column (``_rows``), which Spark copies as one value (list columns,
the first form of packing, were copied element by element into Spark's rows and back). The state
function unpacks them (``unpack``) into exactly the stage-1 rows the source read, then sorts them
by ``_seq`` as always (``runtime/kernel.py`` ``rows_from_table``).

Why this is exact: packing is a lossless regrouping of the same rows (``unpack(pack(t))`` holds
the rows of ``t``, values and types included: Arrow's own serialization of the stage-1 schema),
and the engine never depended on the order Spark's shuffle delivered rows in (it orders them by
``_seq``).

The kernel's output goes back the same way (``encode_output``): the sink is its only reader.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_workers.engine.rows import combination_codes
from spark_workers.lake.changes import conform
from spark_workers.runtime.kernel import KernelConfig
from spark_workers.runtime.premerge import SourcePipeline

PACK_ROWS = 65_536
"""Rows per packed row at most: one Spark row stays a few MB however large a group's run is."""

ROWS = "_rows"
"""The column of a packed row that holds its rows: one Arrow IPC record batch message of the
stage-1 schema (``pack``)."""


def packed_schema(schema: pa.Schema, groups: list[str] | tuple[str, ...]) -> pa.Schema:
    """The schema of packed rows: the ``groups`` columns of ``schema`` as they are (in
    ``schema``'s order), then ``_rows`` (binary): the rows themselves, every column included.

    Raises:
        ValueError: every column is a group column (nothing would carry the rows' count).
    """
    if all(f.name in groups for f in schema):
        raise ValueError("a packed schema needs a column besides the groups")
    return pa.schema([f for f in schema if f.name in groups] + [pa.field(ROWS, pa.binary())])


def pack(t: pa.Table, groups: list[str] | tuple[str, ...], max_rows: int = PACK_ROWS) -> pa.Table:
    """Stage-1 rows ``t`` -> packed rows (``packed_schema``): one per combination of the
    ``groups`` values (NULL is a value) and run of at most ``max_rows`` rows, its rows in
    ``_seq`` order when ``t`` has ``_seq`` (arrival order), else in ``t``'s order.

    Why one binary value and not a list per column: Spark copies list values element by element
    into its rows, through the shuffle and back into Arrow for the state function (a JVM profile
    of a packed STATE_WINDOW run: most of the JVM's work); a binary value crosses as one copy.

    Shapes: ``t`` has n rows; the result has between ``ceil(n / max_rows)`` and n rows, holding
    n rows in all (read back with ``unpack``).
    """
    schema = packed_schema(t.schema, groups)
    n = t.num_rows
    if n == 0:
        return schema.empty_table()
    code = combination_codes(t, list(groups)) if groups else np.zeros(n, np.int64)
    seq = t.column("_seq").to_numpy(zero_copy_only=False) if "_seq" in t.column_names else None
    if seq is None or bool((np.diff(seq) >= 0).all()):  # rows in arrival order: one key to sort
        order = np.argsort(code, kind="stable")
    else:
        order = np.lexsort((seq, code))
    c = code[order]
    brk = np.ones(n, bool)
    brk[1:] = c[1:] != c[:-1]
    starts = np.flatnonzero(brk)
    lengths = np.diff(np.append(starts, n))
    if max_rows and int(lengths.max()) > max_rows:  # cut runs longer than max_rows
        pos = np.arange(n) - np.repeat(starts, lengths)
        brk |= (pos % max_rows) == 0
        starts = np.flatnonzero(brk)
    ends = np.append(starts[1:], n)
    batch = t.take(pa.array(order)).combine_chunks().to_batches()[0]  # one chunk: one batch
    messages = [
        batch.slice(a, b - a).serialize() for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    firsts = pa.array(order[starts])
    cols = [t.column(f.name).take(firsts).combine_chunks() for f in t.schema if f.name in groups]
    return pa.Table.from_arrays([*cols, _binary_chunks(messages)], schema=schema)


def _binary_chunks(values: list[pa.Buffer], limit: int = 2**31 - 1) -> pa.ChunkedArray:
    """``values`` as a binary column, in chunks of at most ``limit`` bytes each (a binary array's
    offsets are 32-bit; one value is one packed row of at most ``PACK_ROWS`` rows, far below it)."""
    chunks: list[pa.Array] = []
    start, size = 0, 0
    for i, v in enumerate([*values, None]):
        if v is not None and (size + v.size <= limit or i == start):
            size += v.size
            continue
        part = values[start:i]
        offsets = np.zeros(len(part) + 1, np.int64)
        np.cumsum([m.size for m in part], out=offsets[1:])
        data = pa.py_buffer(b"".join(memoryview(m) for m in part))
        chunks.append(
            pa.BinaryArray.from_buffers(
                pa.binary(), len(part), [None, pa.py_buffer(offsets.astype(np.int32).tobytes()), data]
            )
        )
        start, size = i, (v.size if v is not None else 0)
    return pa.chunked_array(chunks, pa.binary())


def unpack(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """Packed rows ``t`` -> the stage-1 rows of ``schema`` they hold (``pack``'s inverse, up to
    row order: rows come packed row by packed row).

    ``schema`` must be the one the rows were packed with (packed rows live within one micro-batch
    of one query run, whose stage-1 schema is fixed when the query starts: ``PackingPipeline``).

    Raises:
        KeyError: ``t`` lacks the ``_rows`` column.
    """
    batches = []
    for chunk in t.column(ROWS).chunks:
        for i in range(len(chunk)):
            batches.append(pa.ipc.read_record_batch(chunk[i].as_buffer(), schema))
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


OUTPUT_SCHEMA = pa.schema([pa.field("_out", pa.binary())])
"""The rows a kernel hands back to Spark when its output is packed (``encode_output``): one
binary value per run of at most ``PACK_ROWS`` output rows, each an Arrow IPC stream."""


def encode_output(t: pa.Table, max_rows: int = PACK_ROWS) -> list[bytes]:
    """A kernel step's output rows -> Arrow IPC streams of at most ``max_rows`` rows each, in
    order (at least one, so an empty table's schema still travels).

    Why: ``applyInPandasWithState`` returns pandas, which Spark turns back into Arrow and then
    into one JVM row per window before ``foreachBatch`` collects them to Arrow again; a
    micro-batch of STATE_WINDOW or EVENT_WINDOW closes about one window per ten rows, so that
    round trip was a sixth of the Python workers' time (docs/PERFORMANCE.md, "Packed rows").
    The sink is the output's only reader, so the rows cross Spark as a few opaque values.
    """
    out: list[bytes] = []
    for start in range(0, max(t.num_rows, 1), max_rows):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t.slice(start, max_rows))
        out.append(sink.getvalue().to_pybytes())
    return out


def decode_output(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows of ``OUTPUT_SCHEMA`` (as collected by ``foreachBatch``) -> the output rows of
    ``schema`` they hold, blob by blob in ``t``'s order (``encode_output``'s inverse).

    Raises:
        pyarrow.ArrowInvalid: a value is not an Arrow IPC stream of ``schema``.
    """
    parts = []
    for chunk in t.column("_out").chunks:
        for i in range(len(chunk)):
            part = pa.ipc.open_stream(chunk[i].as_buffer()).read_all()
            if part.schema != schema:
                raise pa.ArrowInvalid("a packed output value does not hold the kernel's output schema")
            parts.append(part)
    return pa.concat_tables(parts) if parts else schema.empty_table()


class PackingPipeline(SourcePipeline):
    """Stage 1 (DuckDB) and packing where the ``tdlake`` source reads the rows: the source's
    ``transform`` for streams that are not pre-aggregated (module docstring).

    Args:
        cfg: the stream's kernel settings (``cfg.groups``: the PARTITION BY columns of stage 1).
        stage1: DuckDB stage-1 SQL over the placeholder view ``__SOURCE__``.
    """

    def __init__(self, cfg: KernelConfig, stage1: str) -> None:
        super().__init__(cfg, stage1)
        self.unpacked: pa.Schema | None = None  # stage 1's schema: what ``unpack`` gives back

    def shape(self, stage1: pa.Schema) -> pa.Schema:
        """The packed schema of stage-1 rows of schema ``stage1`` (kept: what ``unpack`` gives
        back, and what every later call's stage-1 rows are conformed to)."""
        self.unpacked = stage1
        return packed_schema(stage1, self.cfg.groups)

    def finish(self, staged: pa.Table) -> pa.Table:
        """Stage-1 rows -> packed rows."""
        if self.unpacked is not None:
            staged = conform(staged, self.unpacked)
        return pack(staged, self.cfg.groups)
