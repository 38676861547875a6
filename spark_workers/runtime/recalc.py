"""``RECALCULATE STREAM s FROM t1 [TO t2]`` (seed 002, "Manual Recalculation").

The stream's windows are computed again from the lake's current rows with the batch form of the
engine (the same code as interactive window queries, which a property test holds equal to the
stream fed the same rows), and the windows that lie in the range and that the stream has closed
are written to its output table through the stream's own sink: rows with the same key are
overwritten, nothing else is touched ("the results already written to the output table are not
deleted; instead, new results are written again").

Two choices go beyond the seed, both towards correct results:

- segmentation runs over the group's whole history, so data-defined windows (SESSION, STATE,
  EVENT, COUNT) recalculated in a range line up with the windows the stream wrote; the seed warns
  that TDengine may misalign count windows here;
- a window is rewritten when the stream has closed it (at its progress: its latest event time
  minus the watermark) and it overlaps ``[t1, t2]`` (``t2`` = the progress when ``TO`` is omitted),
  as TDengine's own tests assert (td-046); a STATE_WINDOW reaches up to the row that closed it, so
  the window that row opened is recalculated too (``closed_and_reach``). A window the stream has
  not closed yet is never written early.

COUNT_WINDOW streams need both times (seed 002). A PERIOD (scheduled) stream is refused: "Manual
recalculation is not supported for scheduled triggers (PERIOD)" and "In PERIOD mode, no
recalculation is performed" (seed 002, "Manual Recalculation", "Recomputation"). Notifications are
not sent again.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.engine.aggregates import AggSpec, empty_partials, lower
from spark_workers.engine.rows import RowBatch
from spark_workers.engine.shape import WindowShape, batch_windows
from spark_workers.engine.stream import EMPTY_WINDOWS_MAX, StepOutput, WindowResults
from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.query.duck import DuckSession
from spark_workers.query.select import rows_from_stage1, stage1_sql
from spark_workers.runtime.kernel import Kernel
from spark_workers.runtime.plan import kernel_config
from spark_workers.runtime.sink import OutputSink
from spark_workers.streams.compile import CompiledStream


@dataclass
class Recalculation:
    """What a recalculation did: windows computed in the range and written, the range used
    (precision units), its duration in seconds, and the output writes (``OutputWrite``) it made
    (or, a dry run, would make)."""

    windows: int
    start: int
    end: int
    seconds: float
    writes: list[OutputWrite] = field(default_factory=list)


@dataclass
class OutputWrite:
    """One ``Lake.write`` of a recalculation: the output database and table, the engine-form rows
    (``tbname`` plus physical columns), the write's keyword arguments, and the output subtables
    (catalog ``Table`` entries) to create before it."""

    db: Any
    table: Any
    data: pa.Table
    kwargs: dict[str, Any]
    subtables: list[Any] = field(default_factory=list)


class RecalcCancelled(Exception):  # a state, not an error: never reaches a client
    """The recalculation was cancelled before its commit: the output table is untouched."""


@dataclass
class RecalcHooks:
    """What a background recalculation (issue 16, "progress you can trust") asks of
    ``recalculate``: ``progress(rows_done, rows_total)`` after each chunk of source rows (by groups)
    is computed; ``cancelled()`` polled after each chunk and before the commit (True: raise
    ``RecalcCancelled``, nothing written); ``dry_run``: compute the writes, commit nothing.
    ``result`` receives the ``Recalculation`` (with its writes)."""

    progress: Callable[[int, int], None] | None = None
    cancelled: Callable[[], bool] | None = None
    dry_run: bool = False
    result: Recalculation | None = None

    def check(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise RecalcCancelled


#: set by a caller around a RECALCULATE STREAM statement it runs through the executor
recalc_hooks: contextvars.ContextVar[RecalcHooks | None] = contextvars.ContextVar(
    "recalc_hooks", default=None
)

#: source rows are computed in about this many chunks of whole groups (one progress event each)
RECALC_CHUNKS = 20


class _CatalogRecorder:
    """The lake's catalog, except that the output subtables the sink creates are recorded (and
    created at the commit, before the rows): a dry run or a cancelled job creates none."""

    def __init__(self, catalog: Any) -> None:
        self._catalog = catalog
        self.subtables: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)

    def create_subtables(self, tables: list[Any]) -> None:
        self.subtables.extend(tables)


class _Recorder:
    """A ``Lake`` whose ``write`` (and catalog ``create_subtables``) record instead of committing;
    everything else is the lake's: the recalculation's output is computed whole, then committed at
    once, or not at all."""

    def __init__(self, lake: Lake) -> None:
        self._lake = lake
        self.catalog = _CatalogRecorder(lake.catalog)
        self.writes: list[OutputWrite] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lake, name)

    def write(self, db: Any, table: Any, data: pa.Table, **kwargs: Any) -> None:
        self.writes.append(OutputWrite(db, table, data, kwargs))


def _sink_writes(
    c: CompiledStream, lake: Lake, stream_key: str, tz: str, table: pa.Table
) -> list[OutputWrite]:
    """The output writes the stream's sink makes of ``table`` (recorded, not committed)."""
    rec = _Recorder(lake)
    sink = OutputSink(c, cast(Lake, rec), stream_key=f"{stream_key}:recalc:{time.time_ns()}", tz=tz)
    sink.process(table, 0, phase="recalc")
    if rec.catalog.subtables and rec.writes:  # created with the first write, at the commit
        rec.writes[0].subtables = rec.catalog.subtables
    return rec.writes


def _commit(lake: Lake, hooks: RecalcHooks, writes: list[OutputWrite]) -> None:
    """Commit the recorded writes (each one Delta transaction; a recalculation makes one)
    unless a dry run; checks for cancellation first."""
    hooks.check()
    if hooks.dry_run:
        return
    for w in writes:
        if w.subtables:
            lake.catalog.create_subtables(w.subtables)
        lake.write(w.db, w.table, w.data, **w.kwargs)


def _concat_results(parts: list[WindowResults]) -> WindowResults:
    """Window results of disjoint groups as one, sorted by (group, start)."""
    if len(parts) == 1:
        return parts[0]
    gkey = np.concatenate([p.gkey.astype(object) for p in parts])
    ws = np.concatenate([p.wstart for p in parts])
    order = np.lexsort((ws, gkey.astype(str)))
    return WindowResults(
        gkey[order],
        ws[order],
        np.concatenate([p.wend for p in parts])[order],
        {
            k: (
                np.concatenate([p.values[k][0] for p in parts])[order],
                np.concatenate([p.values[k][1] for p in parts])[order],
            )
            for k in parts[0].values
        },
    )


def _windows_in_chunks(
    c: CompiledStream, aggs: list[AggSpec], rows: RowBatch, hooks: RecalcHooks
) -> WindowResults:
    """``batch_windows`` over ``rows`` in chunks of whole groups (about ``RECALC_CHUNKS``, in
    group order; a group's windows depend only on its rows), reporting the source rows done after
    each chunk and polling for cancellation."""
    total = len(rows)
    if not total:
        return batch_windows(c.shape, aggs, rows)
    keys, inv = np.unique(rows.gkey.astype(str), return_inverse=True)
    per_group = np.bincount(inv, minlength=keys.shape[0])
    chunk_of = np.cumsum(per_group) * RECALC_CHUNKS // (total + 1)  # chunk number per group
    parts: list[WindowResults] = []
    done = 0
    for chunk in np.unique(chunk_of).tolist():
        idx = np.flatnonzero(np.isin(inv, np.flatnonzero(chunk_of == chunk)))
        parts.append(batch_windows(c.shape, aggs, rows.take(idx)))
        done += len(idx)
        if hooks.progress is not None:
            hooks.progress(done, total)
        hooks.check()
    return _concat_results(parts)


def _group_latest(rows: RowBatch) -> dict[str, int]:
    """The latest event time of each group of ``rows``."""
    if not len(rows):
        return {}
    keys, inv = np.unique(rows.gkey.astype(str), return_inverse=True)
    mx = np.full(keys.shape[0], np.iinfo(np.int64).min, np.int64)
    np.maximum.at(mx, inv, rows.ts.astype(np.int64))
    return dict(zip(keys.tolist(), mx.tolist(), strict=True))


def _with_empty_windows(
    c: CompiledStream, aggs: list[AggSpec], res: WindowResults, rows: RowBatch, latest: dict[str, int]
) -> WindowResults:
    """``res`` plus the windows without rows the stream fires (3.3.7 INTERVAL / SLIDING without
    IGNORE_NODATA_TRIGGER, seed 002): per group, from the window holding its first row to the
    last one its latest time closed; sorted by (group, start) as ``batch_windows`` answers."""
    assigner = c.shape.assigner()
    keys, inv = np.unique(rows.gkey.astype(str), return_inverse=True)
    first = np.full(keys.shape[0], np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, inv, rows.ts.astype(np.int64))
    horizon = np.array([latest[k] for k in keys.tolist()], np.int64) - c.rules.watermark
    count, starts = assigner.closing_windows(first, horizon, EMPTY_WINDOWS_MAX)
    if int(count.sum()) > EMPTY_WINDOWS_MAX:
        raise SqlError(
            f"RECALCULATE STREAM: more than {EMPTY_WINDOWS_MAX} windows in the range",
            code=Code.INVALID_OPERATION,
        )
    gk = np.repeat(keys.astype(object), count)
    have = set(zip(res.gkey.astype(str).tolist(), res.wstart.tolist(), strict=True))
    new = np.array([(g, w) not in have for g, w in zip(gk.tolist(), starts.tolist(), strict=True)], bool)
    if not new.any():
        return res
    gk, starts = gk[new], starts[new]
    vals = lower(aggs, empty_partials(aggs, np.zeros(starts.shape[0], np.int64), starts))
    ws = np.concatenate([res.wstart, starts])
    gkeys = np.concatenate([res.gkey.astype(object), gk])
    order = np.lexsort((ws, gkeys.astype(str)))
    return WindowResults(
        gkeys[order],
        ws[order],
        np.concatenate([res.wend, assigner.end(starts)])[order],
        {
            k: (np.concatenate([v, vals[k][0]])[order], np.concatenate([m, vals[k][1]])[order])
            for k, (v, m) in res.values.items()
        },
    )


def closed_and_reach(
    shape: WindowShape, res: WindowResults, progress: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per window of ``res`` (sorted by group, start): has the stream closed it at ``progress``
    (per window: its group's latest event time minus the watermark), and the last instant it covers: the range
    ``[start, end]`` recalculates the closed windows with ``wstart <= end`` and ``reach >= start``
    (seed 002, "Manual Recalculation"; td-046).

    INTERVAL covers ``[_wstart, _wend)`` and closes at ``_wend``; SESSION covers its rows up to the
    tolerance after the last and closes after that; STATE_WINDOW covers up to the row that changed
    the state (the next window's first row, which closes it); EVENT and COUNT windows cover their
    rows and are closed once a later window exists or their end is before ``progress``.
    """
    ws, we = res.wstart, res.wend
    n = len(res)
    nxt = np.full(n, np.iinfo(np.int64).max, np.int64)  # the group's next window start
    if n > 1:
        same = res.gkey[1:] == res.gkey[:-1]
        nxt[:-1] = np.where(same, ws[1:], nxt[:-1])
    has_next = nxt != np.iinfo(np.int64).max
    if shape.kind == "interval":
        return we <= progress, we - 1
    if shape.kind == "session":
        close = we + shape.size if shape.end_at_last_row else we
        return close < progress, close
    if shape.kind == "state":
        return has_next & (nxt <= progress), np.where(has_next, nxt, we)
    return has_next | (we <= progress), we


def recalculate(
    c: CompiledStream, lake: Lake, *, stream_key: str, tz: str, start: int, end: int | None
) -> Recalculation:
    """Recalculate a stream's windows in ``[start, end]`` (precision units of the source
    database; ``end`` None = up to the stream's progress).

    The hooks of ``recalc_hooks`` (if set) receive progress, may cancel it before its commit
    (``RecalcCancelled``: nothing written) or make it a dry run; they receive the result.

    Raises:
        SqlError: a PERIOD stream; a COUNT_WINDOW stream without ``end``; ``start`` after ``end``.
        RecalcCancelled: cancelled through the hooks (the output is as it was).
    """
    hooks = recalc_hooks.get() or RecalcHooks()
    done = _recalculate(c, lake, stream_key=stream_key, tz=tz, start=start, end=end, hooks=hooks)
    _commit(lake, hooks, done.writes)
    hooks.result = done
    return done


def _recalculate(
    c: CompiledStream,
    lake: Lake,
    *,
    stream_key: str,
    tz: str,
    start: int,
    end: int | None,
    hooks: RecalcHooks,
) -> Recalculation:
    """``recalculate`` up to its commit: the writes it would make."""
    t0 = time.perf_counter()
    if c.spec.trigger.get("type") == "period":
        raise SqlError(
            "RECALCULATE STREAM: manual recalculation is not supported for scheduled triggers "
            "(PERIOD) (seed 002, Manual Recalculation)",
            code=Code.INVALID_OPERATION,
        )
    if c.plan.projection:
        return _recalculate_rows(
            c, lake, stream_key=stream_key, tz=tz, start=start, end=end, t0=t0, hooks=hooks
        )
    if c.shape.kind in ("count", "ek_count") and end is None:
        raise SqlError(
            "RECALCULATE STREAM of a COUNT_WINDOW stream needs both FROM and TO (seed 002)",
            code=Code.INVALID_OPERATION,
        )
    staged = _stage1_rows(c, lake, tz, start, end)
    rows, _values, aggs = rows_from_stage1(c.plan, staged)
    res = _windows_in_chunks(c, aggs, rows, hooks)
    progress = (int(rows.ts.max()) - c.rules.watermark) if len(rows) else start - 1
    hi = min(end, progress) if end is not None else progress
    latest = _group_latest(rows)  # each group closes its windows by its own latest time
    if c.rules.fire_empty and len(rows):
        res = _with_empty_windows(c, aggs, res, rows, latest)
    group_progress = np.array([latest[g] for g in res.gkey.tolist()], np.int64) - c.rules.watermark
    closed, reach = closed_and_reach(c.shape, res, group_progress)
    keep = closed & (res.wstart <= hi) & (reach >= start)
    if c.shape.kind == "state" and len(res) > 1:  # the window opened by the row that closed one
        opened = np.zeros(len(res), bool)
        opened[1:] = keep[:-1] & (res.gkey[1:] == res.gkey[:-1])
        keep |= opened & closed
    idx = np.flatnonzero(keep)
    picked = WindowResults(
        res.gkey[idx],
        res.wstart[idx],
        res.wend[idx],
        {k: (v[idx], m[idx]) for k, (v, m) in res.values.items()},
    )
    kernel = Kernel(kernel_config(c, lake.uri, tz, lake.catalog.url))
    table = kernel.to_table(0, StepOutput(picked, stats={"rows_in": 0}))
    # its own Delta transaction id: a recalculation never collides with the stream's micro-batches
    writes = _sink_writes(c, lake, stream_key, tz, table)
    return Recalculation(len(idx), start, hi, time.perf_counter() - t0, writes)


def _stage1_rows(c: CompiledStream, lake: Lake, tz: str, start: int, end: int | None) -> pa.Table:
    """The source's stage-1 rows (the lake's current snapshot) of a recalculation over
    ``[start, end]``.

    Raises:
        SqlError: INVALID_OPERATION when ``start`` is after ``end``.
    """
    if end is not None and start > end:
        raise SqlError(
            "RECALCULATE STREAM: the start time is after the end time", code=Code.INVALID_OPERATION
        )
    with DuckSession(lake) as duck:
        view = duck.register_source(c.source)
        staged = duck.query(stage1_sql(c.plan, view, "duckdb", tz))
    return staged


def _recalculate_rows(
    c: CompiledStream,
    lake: Lake,
    *,
    stream_key: str,
    tz: str,
    start: int,
    end: int | None,
    t0: float,
    hooks: RecalcHooks,
) -> Recalculation:
    """A stream without a window: its output rows of the source rows with timestamps in
    ``[start, end]`` written again from the lake's current rows (``windows`` counts the rows)."""
    staged = _stage1_rows(c, lake, tz, start, end)
    ts = staged.column("_ts")
    keep = pc.greater_equal(ts, start)
    if end is not None:
        keep = pc.and_(keep, pc.less_equal(ts, end))
    staged = staged.filter(keep)
    n = staged.num_rows
    staged = (
        staged.append_column("_ct", pa.array(np.zeros(n, np.int8)))
        .append_column("_seq", pa.array(np.arange(n, dtype=np.int64)))
        .append_column("_hist", pa.array(np.zeros(n, bool)))
    )
    if hooks.progress is not None:
        hooks.progress(n, n)
    hooks.check()
    writes = _sink_writes(c, lake, stream_key, tz, staged)
    hi = end if end is not None else (int(pc.max(ts).as_py()) if len(ts) else start)
    return Recalculation(n, start, hi, time.perf_counter() - t0, writes)
