"""Window assigners: which windows each row belongs to.

INTERVAL (seed 000, window_clause; TDengine "time windows"): windows of length ``interval`` start
at ``offset + k * sliding`` for integer k (aligned to the Unix epoch plus the offset; ARCHITECTURE
"timezone"); ``sliding`` defaults to ``interval`` (tumbling). A row at ``ts`` belongs to every
window with ``start <= ts < start + interval``: ``ceil(interval / sliding)`` windows at most.
``_wend`` is the exclusive end ``start + interval``.

All values are int64 in the table's precision units.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo

import numpy as np

from spark_workers.duration import NS_PER_PRECISION, Duration
from spark_workers.errors import Code, SqlError

SLIDING_CALENDAR = "Does not support sliding when interval is natural month/year"
UNITS_PER_SECOND = {p: 1_000_000_000 // NS_PER_PRECISION[p] for p in NS_PER_PRECISION}


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
        """Build from fixed durations; a calendar INTERVAL is a :class:`CalendarAssigner`
        (:func:`calendar_assigner`), a calendar offset or SLIDING after a fixed INTERVAL is
        refused as TDengine refuses it (offset longer than the interval, sliding of natural
        months/years)."""
        if offset is not None and offset.is_calendar:
            raise SqlError("Interval offset should be shorter than interval", code=Code.INVALID_WINDOW)
        if sliding is not None and sliding.is_calendar:
            raise SqlError(SLIDING_CALENDAR, code=Code.INVALID_WINDOW)
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


@lru_cache(maxsize=4096)
def _month_start(month: int, tz: str) -> int:
    """Epoch seconds of local midnight on the first day of ``month`` (months since January 1900,
    TDengine's ``tm_year * 12 + tm_mon``) in ``tz``."""
    y, m = divmod(month, 12)
    return int(dt.datetime(1900 + y, m + 1, 1, tzinfo=ZoneInfo(tz)).timestamp())


def _month_of(seconds: float, tz: str) -> int:
    t = dt.datetime.fromtimestamp(seconds, ZoneInfo(tz))
    return (t.year - 1900) * 12 + t.month - 1


@dataclass(frozen=True)
class CalendarAssigner:
    """INTERVAL(Nn | Ny[, offset]): tumbling windows of calendar months in a time zone (TDengine's
    ``taosTimeTruncate``: windows of N months counted from January 1900, starting at local
    midnight on the first day of a month; ``1y`` is 12 months from 1 January).

    Attributes:
        months: the window length in months (``Nn``: N, ``Ny``: 12 N).
        offset: the fixed part of the offset (``1d``, ``12h``) in precision units: windows start
            that much after the month boundary.
        offset_months: a calendar offset in months (``INTERVAL(1y, 3n)``: years from 1 April).
        tz: the time zone of the calendar (the session's / the stream's, as for day windows of
            eKuiper).
        precision: the table's precision.
    """

    months: int
    offset: int = 0
    offset_months: int = 0
    tz: str = "UTC"
    precision: str = "ms"

    windows_per_row = 1

    @property
    def interval(self) -> int:
        """Nominal length (30-day months, TDengine's ``checkFill``) in precision units."""
        return self.months * 30 * 86_400 * UNITS_PER_SECOND[self.precision]

    @property
    def sliding(self) -> int:
        return self.interval

    def _bounds(self, lo: int, hi: int) -> tuple[int, np.ndarray]:
        """``(first month, window-start instants)``: the start (precision units, offset included)
        of every month from a little before ``lo`` to a little after ``hi``."""
        per = UNITS_PER_SECOND[self.precision]
        pad = self.months + abs(self.offset_months) + 2
        m0 = _month_of((lo - self.offset) / per, self.tz) - pad
        m1 = _month_of((hi - self.offset) / per, self.tz) + pad
        starts = np.array([_month_start(m, self.tz) for m in range(m0, m1 + 1)], np.int64) * per
        return m0, starts + self.offset

    def last_start(self, ts: np.ndarray) -> np.ndarray:
        """Start of the window containing each ts."""
        if ts.size == 0:
            return ts.astype(np.int64)
        m0, b = self._bounds(int(ts.min()), int(ts.max()))
        month = m0 + np.searchsorted(b, ts, "right") - 1
        k = np.floor_divide(month - self.offset_months, self.months) * self.months + self.offset_months
        return b[k - m0]

    def assign(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows to ``(row index, window start)``: one window per row (no SLIDING)."""
        return np.arange(ts.shape[0], dtype=np.int64), self.last_start(ts)

    def end(self, wstart: np.ndarray) -> np.ndarray:
        """Exclusive window end: the start ``months`` later."""
        w = np.asarray(wstart, np.int64)
        if w.size == 0:
            return w.copy()
        _m0, b = self._bounds(int(w.min()), int(w.max()))
        return b[np.searchsorted(b, w, "left") + self.months]

    def closing_windows(
        self, floor: np.ndarray, horizon: np.ndarray, limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """As ``IntervalAssigner.closing_windows``: per item, the windows ending after ``floor``
        and at or before ``horizon``; ``(count per item, starts)``, no starts above ``limit``."""
        counts, parts = [], []
        for lo, hi in zip(floor.tolist(), horizon.tolist(), strict=True):
            if hi <= lo:
                counts.append(0)
                continue
            starts = self.starts_covering(lo, hi)
            ends = self.end(starts)
            keep = starts[(ends > lo) & (ends <= hi)]
            counts.append(keep.size)
            parts.append(keep)
        count = np.array(counts, np.int64)
        if int(count.sum()) > limit or not parts:
            return count, np.empty(0, np.int64)
        return count, np.concatenate(parts).astype(np.int64)

    def starts_covering(self, lo: int, hi: int) -> np.ndarray:
        """Starts of all windows that intersect ``[lo, hi]`` (inclusive), ascending."""
        _m0, b = self._bounds(lo, hi)
        first = int(np.searchsorted(b, self.last_start(np.array([lo], np.int64))[0], "left"))
        last = int(np.searchsorted(b, self.last_start(np.array([hi], np.int64))[0], "left"))
        return b[first : last + 1 : self.months]


def _offset_months(d: Duration, precision: str) -> int:
    """TDengine's ``getMonthsFromTimeVal``: an offset in months (fixed units: days / 28)."""
    if d.is_calendar:
        return d.months
    return d.in_precision(precision) // (86_400 * UNITS_PER_SECOND[precision]) // 28


def calendar_assigner(
    interval: Duration, offset: Duration | None, sliding: Duration | None, precision: str, tz: str
) -> CalendarAssigner:
    """The assigner of ``INTERVAL(Nn | Ny[, offset]) [SLIDING(s)]`` (TDengine's rules for natural
    months and years, ``checkIntervalWindow``): a positive length; an offset shorter than the
    interval in months (fixed units count days / 28), never in years after a month interval; no
    SLIDING but one equal to the interval (tumbling).

    Raises:
        SqlError: INVALID_WINDOW with TDengine's messages.
    """
    if interval.value <= 0:
        raise SqlError("INTERVAL and SLIDING must be positive", code=Code.INVALID_WINDOW)
    if sliding is not None and not (sliding.is_calendar and sliding.months == interval.months):
        raise SqlError(SLIDING_CALENDAR, code=Code.INVALID_WINDOW)
    fixed, months = 0, 0
    if offset is not None:
        if offset.value < 0:
            raise SqlError("Interval offset cannot be negative", code=Code.INVALID_WINDOW)
        if interval.unit == "n" and offset.unit == "y":
            raise SqlError("Cannot use 'year' as offset when interval is 'month'", code=Code.INVALID_WINDOW)
        if _offset_months(offset, precision) >= interval.months:
            raise SqlError("Interval offset should be shorter than interval", code=Code.INVALID_WINDOW)
        if offset.is_calendar:
            months = offset.months
        else:
            fixed = offset.in_precision(precision)
    return CalendarAssigner(interval.months, fixed, months, tz, precision)
