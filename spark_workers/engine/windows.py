"""Window assigners: which windows each row belongs to.

INTERVAL (seed 000, window_clause; TDengine "time windows"): windows of length ``interval`` start
at ``offset + k * sliding`` for integer k (aligned to the Unix epoch plus the offset; ARCHITECTURE
"timezone"); ``sliding`` defaults to ``interval`` (tumbling). A row at ``ts`` belongs to every
window with ``start <= ts < start + interval``: ``ceil(interval / sliding)`` windows at most.
``_wend`` is the exclusive end ``start + interval``.

All values are int64 in the table's precision units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError


@dataclass(frozen=True)
class IntervalAssigner:
    """INTERVAL(interval[, offset]) [SLIDING(sliding)] in precision units.

    Raises:
        SqlError: sliding > interval, offset >= interval, non-positive sizes (seed 000: "the value of
            sliding_val must be less than or equal to the value of interval_val").
    """

    interval: int
    sliding: int
    offset: int = 0

    def __post_init__(self) -> None:
        if self.interval <= 0 or self.sliding <= 0:
            raise SqlError("INTERVAL and SLIDING must be positive", code=Code.INVALID_WINDOW)
        if self.sliding > self.interval:
            raise SqlError("SLIDING must not be larger than INTERVAL", code=Code.INVALID_WINDOW)
        if not 0 <= self.offset < self.interval:
            raise SqlError(
                "INTERVAL offset must be non-negative and smaller than the interval", code=Code.INVALID_WINDOW
            )

    @classmethod
    def of(
        cls, interval: Duration, offset: Duration | None, sliding: Duration | None, precision: str
    ) -> IntervalAssigner:
        """Build from durations; calendar units (n, y) are not supported yet."""
        for d in (interval, offset, sliding):
            if d is not None and d.is_calendar:
                raise SqlError(
                    f"calendar durations ({d}) in INTERVAL are not supported yet", code=Code.NOT_SUPPORTED
                )
        i = interval.in_precision(precision)
        s = sliding.in_precision(precision) if sliding is not None else i
        o = offset.in_precision(precision) if offset is not None else 0
        return cls(i, s, o)

    @property
    def windows_per_row(self) -> int:
        return -(-self.interval // self.sliding)

    def last_start(self, ts: np.ndarray) -> np.ndarray:
        """Start of the latest window containing each ts."""
        return np.floor_divide(ts - self.offset, self.sliding) * self.sliding + self.offset

    def assign(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expand rows into (row index, window start) pairs.

        Returns:
            ``(row_idx, wstart)`` int64 arrays; each row appears once per window it belongs to.
        """
        last = self.last_start(ts)
        m = self.windows_per_row
        if m == 1:
            return np.arange(ts.shape[0], dtype=np.int64), last
        rows, starts = [], []
        base = np.arange(ts.shape[0], dtype=np.int64)
        for j in range(m):
            w = last - j * self.sliding
            keep = w + self.interval > ts
            rows.append(base[keep])
            starts.append(w[keep])
        return np.concatenate(rows), np.concatenate(starts)

    def end(self, wstart: np.ndarray) -> np.ndarray:
        """Exclusive window end."""
        return wstart + self.interval

    def closing_windows(
        self, floor: np.ndarray, horizon: np.ndarray, limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The windows ending after ``floor`` and at or before ``horizon`` (per item of the two
        int64 arrays): ``(count per item, starts)``, the starts of item 0 first, ascending; no
        starts (only the counts) when there are more than ``limit``."""
        s, o, i = self.sliding, self.offset, self.interval
        lo = np.floor_divide(floor - i - o, s) * s + o + s
        hi = np.floor_divide(horizon - i - o, s) * s + o
        count = np.maximum((hi - lo) // s + 1, 0)
        return count, _runs(lo, count, s, limit)

    def starts_covering(self, lo: int, hi: int) -> np.ndarray:
        """Starts of all windows that intersect ``[lo, hi]`` (inclusive), ascending."""
        first = (lo - self.interval - self.offset) // self.sliding * self.sliding + self.offset
        starts = np.arange(first, hi + 1, self.sliding, dtype=np.int64)
        return starts[(starts + self.interval > lo) & (starts <= hi)]


def _runs(first: np.ndarray, count: np.ndarray, step: int, limit: int) -> np.ndarray:
    """``first[j] + k * step`` for k < ``count[j]``, item after item (none above ``limit``)."""
    total = int(count.sum())
    if total > limit:
        return np.empty(0, np.int64)
    k = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(first, count) + k * step


@dataclass(frozen=True)
class DailyAssigner:
    """A 3.3.7 SLIDING trigger whose sliding does not divide a day (seed 002 "Sliding Trigger": its
    trigger times follow PERIOD's rules with event time): trigger points at each midnight plus
    ``offset`` (days counted from the epoch; ``offset`` also carries the server zone's distance to
    UTC, ``streams.compile.sliding_shape``), then every ``sliding``, reset at the next midnight plus
    ``offset``; a window runs from one point to the next, so the last one of a day
    is shorter. E.g. ``SLIDING(5h30m)``: 00:00, 05:30, 11:00, 16:30, 22:00, then 00:00.

    Windows are numbered ``day * per_day + k`` (``per_day`` points a day), so they are a grid in
    that index; the methods mirror ``IntervalAssigner`` (tumbling: one window per row).
    """

    sliding: int
    offset: int
    day: int

    def __post_init__(self) -> None:
        if not 0 < self.sliding < self.day or not 0 <= self.offset < self.day:
            raise SqlError("SLIDING must be positive and below one day here", code=Code.INVALID_WINDOW)

    @property
    def per_day(self) -> int:
        return -(-self.day // self.sliding)

    @property
    def interval(self) -> int:
        """The longest window (a whole sliding)."""
        return self.sliding

    @property
    def windows_per_row(self) -> int:
        return 1

    def _index(self, ts: np.ndarray) -> np.ndarray:
        d = np.floor_divide(ts - self.offset, self.day)
        return d * self.per_day + (ts - self.offset - d * self.day) // self.sliding

    def _start(self, idx: np.ndarray) -> np.ndarray:
        d, k = np.divmod(idx, self.per_day)
        return d * self.day + self.offset + k * self.sliding

    def last_start(self, ts: np.ndarray) -> np.ndarray:
        return self._start(self._index(ts))

    def assign(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(ts.shape[0], dtype=np.int64), self.last_start(ts)

    def end(self, wstart: np.ndarray) -> np.ndarray:
        """The next trigger point: ``wstart + sliding`` or the next midnight plus the offset."""
        d = np.floor_divide(wstart - self.offset, self.day)
        return np.minimum(wstart + self.sliding, (d + 1) * self.day + self.offset)

    def closing_windows(
        self, floor: np.ndarray, horizon: np.ndarray, limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """As ``IntervalAssigner.closing_windows``: the window holding ``floor`` is the first to
        end after it; the one before the window holding ``horizon`` the last to end by it."""
        lo = self._index(floor)
        hi = self._index(horizon) - 1
        count = np.maximum(hi - lo + 1, 0)
        return count, self._start(_runs(lo, count, 1, limit))

    def starts_covering(self, lo: int, hi: int) -> np.ndarray:
        """Starts of all windows that intersect ``[lo, hi]`` (inclusive), ascending."""
        a, b = self._index(np.array([lo, hi], np.int64))
        return self._start(np.arange(a, b + 1, dtype=np.int64))
