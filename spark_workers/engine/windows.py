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

    def starts_covering(self, lo: int, hi: int) -> np.ndarray:
        """Starts of all windows that intersect ``[lo, hi]`` (inclusive), ascending."""
        first = (lo - self.interval - self.offset) // self.sliding * self.sliding + self.offset
        starts = np.arange(first, hi + 1, self.sliding, dtype=np.int64)
        return starts[(starts + self.interval > lo) & (starts <= hi)]
