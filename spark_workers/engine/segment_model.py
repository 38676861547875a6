"""The data-defined windows' model (engine/segments.py): the window shape, a window of a group
and a group's windows; shared by the row-by-row segmentation (``segments``) and the in-order
fast path across groups (``segments_inorder``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spark_workers.engine.aggregates import I64_MIN
from spark_workers.engine.rows import RowBatch

KINDS = ("session", "state", "event", "count", "ek_session", "ek_count")


@dataclass(frozen=True)
class SegmentSpec:
    """Shape of a data-defined window (times in precision units).

    Attributes:
        kind: one of ``KINDS``.
        gap: SESSION tolerance; eKuiper session timeout.
        max_duration: eKuiper session maximum duration (checked at its multiples, seed 003).
        count: COUNT_WINDOW / COUNTWINDOW size in rows.
        sliding: rows between window starts (COUNT_WINDOW sliding_val, COUNTWINDOW interval);
            0 or ``count`` means tumbling.
        first: position (0-based, in rows of the group) where window 0 starts; eKuiper's
            ``COUNTWINDOW(count, interval)`` fires at every ``interval``-th row once ``count`` rows
            exist, so its windows start at ``(-count) mod interval`` (seed 003).
        emit_open: AT_ONCE writes windows before they close (not legacy event windows, td-011a;
            not eKuiper windows, which output "at the end of the window", seed 003).
        true_for: STATE_WINDOW / EVENT_WINDOW ``TRUE_FOR(d)``: a window whose duration
            (``_wend - _wstart``) is shorter is discarded, with no result and no WINDOW_CLOSE
            event (seed 002); one that a recalculation shortens is removed from the output.
        end_at_last_row: a 3.3.7 SESSION trigger's ``_twend`` is its last row's time (td-046, from
            TDengine's own tests); a legacy SESSION's ``_wend`` is the last row plus the tolerance
            (seed 000). Closing is the same for both.
    """

    kind: str
    gap: int = 0
    max_duration: int = 0
    count: int = 0
    sliding: int = 0
    first: int = 0
    emit_open: bool = True
    true_for: int = 0
    end_at_last_row: bool = False

    @property
    def step(self) -> int:
        return self.sliding if 0 < self.sliding < self.count else self.count

    @property
    def is_ekuiper(self) -> bool:
        return self.kind.startswith("ek_")


@dataclass(slots=True)
class Win:
    """A window of one group, open or retained after closing (times in precision units)."""

    wid: int
    wstart: int
    wlast: int
    nrows: int = 0
    close_time: int | None = None
    final: bool = False
    written: bool = False
    info: dict[str, Any] = field(default_factory=dict)


class SegmentGroup:
    """One group: its windows (ascending start) and what segmentation carries between batches.

    Invariant: final windows form a prefix of ``windows`` (close times grow with the start).
    """

    __slots__ = ("bounds", "carry", "evicted", "last_ts", "max_ts", "next_wid", "windows")

    def __init__(self) -> None:
        self.windows: list[Win] = []
        self.bounds = np.empty((0, 3), np.int64)  # older final windows: wstart, wlast, j (-1)
        self.next_wid = 0
        self.last_ts = I64_MIN  # latest kept row segmented
        self.max_ts = I64_MIN  # latest event time of any row
        self.carry: dict[str, Any] = {}
        self.evicted = False  # final windows were forgotten (RETAIN_CLOSED)

    def unfinished(self) -> list[Win]:
        """Windows not yet final, in start order (a suffix of ``windows``)."""
        out: list[Win] = []
        for w in reversed(self.windows):
            if w.final:
                break
            out.append(w)
        out.reverse()
        return out

    def last_final(self) -> Win | None:
        """The latest final window (final windows are a prefix of ``windows``), or None."""
        for w in reversed(self.windows):
            if w.final:
                return w
        return None

    def open(self) -> list[Win]:
        return [w for w in self.unfinished() if w.close_time is None]

    def known(self) -> list[Win]:
        """Every known window in start order: the bounds as stand-ins (wid -1), then ``windows``."""
        stand_ins = [
            Win(
                -1,
                int(a),
                int(b),
                close_time=int(b),
                final=True,
                written=True,
                info={"j": int(j)} if j >= 0 else {},
            )
            for a, b, j in self.bounds.tolist()
        ]
        return stand_ins + self.windows


def py_scalar(v: Any) -> Any:
    """A numpy scalar as the Python value (anything else as it is)."""
    return v.item() if hasattr(v, "item") else v


def condition_columns(batch: RowBatch, which: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The columns of an event window's start or end condition (extras named
    ``cond.<start|end>.<column>``) as ``(column, values, valid)``; empty when no notification
    needs them."""
    prefix = f"cond.{which}."
    return [(k[len(prefix) :], v, ok) for k, (v, ok) in batch.extra.items() if k.startswith(prefix)]


_NO_VALUES: dict[str, Any] = {}
"""What ``condition_values`` gives when no notification needs the values: one shared (never
mutated) dict, so an event window costs no dict of its own and its state pickles it once."""


def condition_values(cols: list[tuple[str, np.ndarray, np.ndarray]], i: int) -> dict[str, Any]:
    """Values of ``condition_columns`` at row ``i``, for notifications (seed 000, "Fields for
    Event Windows"); NULL as None. The result is read, never mutated."""
    if not cols:
        return _NO_VALUES
    return {name: (py_scalar(v[i]) if ok[i] else None) for name, v, ok in cols}


def next_at(pos: np.ndarray, n: int) -> list[int]:
    """For every position ``0..n``, the first of ``pos`` (ascending positions) at or after it;
    ``n`` when there is none. A list of ``n + 1`` Python ints."""
    a = np.full(n + 1, n, np.int64)
    a[pos] = pos
    return np.minimum.accumulate(a[::-1])[::-1].tolist()


def run_positions(lo: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The positions of consecutive runs ``lo[k] .. lo[k] + sizes[k] - 1``, concatenated (int64)."""
    starts = np.cumsum(sizes) - sizes
    return np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(lo - starts, sizes)
