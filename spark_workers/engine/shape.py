"""One description of a window clause for every engine, and the dispatch to them.

``WindowShape`` is what the SQL planner derives from a window clause (legacy INTERVAL, SESSION,
STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW; eKuiper's TUMBLINGWINDOW, HOPPINGWINDOW,
SLIDINGWINDOW, SESSIONWINDOW, COUNTWINDOW) in the table's precision units. Streams build their
engine with ``make_engine``; interactive SELECT calls ``batch_windows``, which runs the very same
engine code over all rows at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.rows import RowBatch
from spark_workers.engine.segments import SegmentEngine, SegmentSpec, SegmentState, segment_aggregate
from spark_workers.engine.sliding import SlidingEngine, SlidingSpec, SlidingState, sliding_aggregate
from spark_workers.engine.stream import (
    I64_MIN,
    IntervalEngine,
    StepOutput,
    StreamRules,
    StreamState,
    WindowResults,
    window_aggregate,
)
from spark_workers.engine.windows import CalendarAssigner, DailyAssigner, IntervalAssigner

SEGMENT_KINDS = ("session", "state", "event", "count", "ek_session", "ek_count")
# "rows": no window (a legacy stream without window clause writes each row; no engine runs it)
KINDS = ("interval", "sliding", *SEGMENT_KINDS, "rows")


class Engine(Protocol):
    """What every window engine offers (``IntervalEngine``, ``SegmentEngine``, ``SlidingEngine``)."""

    def step(self, state: Any, batch: RowBatch, recalc: Any = None, now: int | None = None) -> StepOutput: ...


@dataclass(frozen=True)
class WindowShape:
    """A window clause in precision units.

    Attributes:
        kind: ``interval`` (also eKuiper tumbling/hopping), ``sliding`` (eKuiper), ``session``,
            ``state``, ``event``, ``count``, ``ek_session``, ``ek_count``; ``rows`` for no window.
        size: interval length; session tolerance; eKuiper session timeout; rows per count
            window; sliding window size.
        step: SLIDING / hop; rows between count windows (0 = tumbling).
        offset: interval offset; for ``ek_count`` the row where window 0 starts.
        max_duration: eKuiper session maximum duration.
        delay: eKuiper sliding window delay.
        emit_open: AT_ONCE may write unfinished windows (not legacy event windows, not eKuiper).
        first_start_at_first_row: eKuiper tumbling: the first window starts at the first event.
        ekuiper: an eKuiper window (eKuiper's lateness rule; WHERE applies after windowing).
        true_for: STATE_WINDOW / EVENT_WINDOW minimum duration (TRUE_FOR; 0 = none).
        end_at_last_row: a 3.3.7 SESSION trigger: ``_wend`` is the last row's time
            (``SegmentSpec.end_at_last_row``).
        day: a 3.3.7 SLIDING trigger whose sliding does not divide a day: one day in precision
            units, and the windows are ``DailyAssigner``'s (0: the epoch-aligned grid).
        months: a calendar INTERVAL (``Nn`` / ``Ny``): its length in months (0: fixed windows);
            ``size`` is then a nominal length (28-day months, an upper bound of window counts).
        offset_months: a calendar INTERVAL's offset in months.
        tz: a calendar INTERVAL's time zone.
        precision: a calendar INTERVAL's precision.
    """

    kind: str
    size: int = 0
    step: int = 0
    offset: int = 0
    max_duration: int = 0
    delay: int = 0
    emit_open: bool = True
    first_start_at_first_row: bool = False
    ekuiper: bool = False
    true_for: int = 0
    end_at_last_row: bool = False
    day: int = 0
    months: int = 0
    offset_months: int = 0
    tz: str = "UTC"
    precision: str = "ms"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown window kind {self.kind}")

    def assigner(self) -> IntervalAssigner | DailyAssigner | CalendarAssigner:
        if self.months:
            return CalendarAssigner(self.months, self.offset, self.offset_months, self.tz, self.precision)
        if self.day:
            return DailyAssigner(self.size, self.offset, self.day)
        return IntervalAssigner(self.size, self.step or self.size, self.offset)

    def segment_spec(self) -> SegmentSpec:
        k = self.kind
        if k in ("count", "ek_count"):
            return SegmentSpec(
                k, count=self.size, sliding=self.step, first=self.offset, emit_open=self.emit_open
            )
        return SegmentSpec(
            k,
            gap=self.size,
            max_duration=self.max_duration,
            emit_open=self.emit_open,
            true_for=self.true_for,
            end_at_last_row=self.end_at_last_row,
        )

    def sliding_spec(self) -> SlidingSpec:
        return SlidingSpec(self.size, self.delay)

    def nominal_end(self, wstart: int) -> int:
        """``_wend`` of a window known only by its start (removals): exact for INTERVAL."""
        if self.kind == "interval":
            return int(self.assigner().end(np.array([wstart], np.int64))[0])
        return wstart


def make_engine(shape: WindowShape, aggs: list[AggSpec], rules: StreamRules) -> Engine:
    """The stream engine of a window shape.

    Raises:
        ValueError: the ``rows`` shape, which has no engine (its rows go to the sink as they are).
    """
    if shape.kind == "rows":
        raise ValueError("a stream without a window runs no window engine")
    if shape.kind == "interval":
        return IntervalEngine(
            shape.assigner(), aggs, rules, first_start_at_first_row=shape.first_start_at_first_row
        )
    if shape.kind == "sliding":
        return SlidingEngine(shape.sliding_spec(), aggs, rules)
    return SegmentEngine(shape.segment_spec(), aggs, rules)


def new_state(shape: WindowShape, aggs: list[AggSpec], inputs: list[str]) -> Any:
    if shape.kind == "interval":
        return StreamState(aggs)
    if shape.kind == "sliding":
        return SlidingState(inputs)
    return SegmentState(aggs)


def load_state(shape: WindowShape, aggs: list[AggSpec], inputs: list[str], blob: bytes | None) -> Any:
    """A bucket's state from its checkpointed bytes (a new state for None)."""
    if not blob:
        return new_state(shape, aggs, inputs)
    if shape.kind == "interval":
        return StreamState.from_bytes(aggs, blob)
    if shape.kind == "sliding":
        return SlidingState.from_bytes(inputs, blob)
    return SegmentState.from_bytes(aggs, blob)


def batch_windows(shape: WindowShape, aggs: list[AggSpec], rows: RowBatch) -> WindowResults:
    """Every window of every group of ``rows`` (an interactive SELECT), with the streams' engine
    code; sorted by (group key, window start). ``keep`` false rows (eKuiper FILTER) join no
    window; ``where`` false rows count in windows but are not aggregated (eKuiper WHERE)."""
    if shape.kind == "sliding":
        return sliding_aggregate(shape.sliding_spec(), aggs, rows)
    if shape.kind != "interval":
        return segment_aggregate(shape.segment_spec(), aggs, rows)
    use = np.ones(len(rows), bool)
    for key in ("keep", "where"):
        if key in rows.extra:
            v, ok = rows.extra[key]
            use &= v.astype(bool) & ok
    res = window_aggregate(shape.assigner(), aggs, rows.take(np.flatnonzero(use)) if not use.all() else rows)
    if shape.first_start_at_first_row and len(res) and len(rows):
        first: dict[str, int] = {}
        for g, t in zip(rows.gkey.tolist(), rows.ts.tolist(), strict=True):
            if t < first.get(g, np.iinfo(np.int64).max):
                first[g] = t
        f = np.array([first.get(g, I64_MIN) for g in res.gkey.tolist()], np.int64)
        res = WindowResults(res.gkey, np.maximum(res.wstart, f), res.wend, res.values)
    return res
