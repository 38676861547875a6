"""TDengine duration literals (``10s``, ``1d``, ``500a``) and timestamp precision arithmetic.

Units (TDengine SQL manual, "time units"): ``b`` nanosecond, ``u`` microsecond, ``a`` millisecond,
``s`` second, ``m`` minute, ``h`` hour, ``d`` day, ``w`` week, ``n`` calendar month, ``y``
calendar year. Months and years have no fixed length; only INTERVAL/SLIDING accept them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from spark_workers.errors import Code, SqlError

NS_PER_UNIT = {
    "b": 1,
    "u": 1_000,
    "a": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3_600 * 1_000_000_000,
    "d": 86_400 * 1_000_000_000,
    "w": 7 * 86_400 * 1_000_000_000,
}
CALENDAR_UNITS = frozenset({"n", "y"})
PRECISIONS = ("ms", "us", "ns")
NS_PER_PRECISION = {"ms": 1_000_000, "us": 1_000, "ns": 1}
_DURATION_RE = re.compile(r"^(-?\d+)([buasmhdwny])$", re.IGNORECASE)
_UNIT_WORDS = {
    "b": "ns",
    "u": "us",
    "a": "ms",
    "s": "s",
    "m": "m",
    "h": "h",
    "d": "d",
    "w": "w",
    "n": "month",
    "y": "year",
}


@dataclass(frozen=True)
class Duration:
    """A TDengine duration as written: ``value`` and one-letter ``unit``.

    Kept as written (not normalised) so SQL -> StreamSpec -> SQL round-trips losslessly.
    """

    value: int
    unit: str

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse ``"10s"``; raises ``SqlError`` (code WRONG_VALUE_TYPE) for anything else."""
        m = _DURATION_RE.match(text.strip())
        if not m:
            raise SqlError(
                f"invalid duration {text!r}: expected an integer and a unit "
                "(b, u, a, s, m, h, d, w, n, y), e.g. 10s",
                code=Code.WRONG_VALUE_TYPE,
            )
        return cls(int(m.group(1)), m.group(2).lower())

    @classmethod
    def is_literal(cls, text: str) -> bool:
        """True if ``text`` is spelled like a duration literal."""
        return bool(_DURATION_RE.match(text.strip()))

    @property
    def is_calendar(self) -> bool:
        """True for months/years, whose length depends on the calendar."""
        return self.unit in CALENDAR_UNITS

    @property
    def ns(self) -> int:
        """Length in nanoseconds; raises ``SqlError`` for calendar units."""
        if self.is_calendar:
            raise SqlError(f"duration {self} has no fixed length (calendar unit)", code=Code.WRONG_VALUE_TYPE)
        return self.value * NS_PER_UNIT[self.unit]

    def in_precision(self, precision: str) -> int:
        """Length in units of a database precision (``ms``, ``us`` or ``ns``); exact or an error."""
        ns = self.ns
        per = NS_PER_PRECISION[precision]
        if ns % per:
            raise SqlError(
                f"duration {self} is finer than the database precision {precision}",
                code=Code.WRONG_VALUE_TYPE,
            )
        return ns // per

    @property
    def months(self) -> int:
        """Length in months for calendar units."""
        return self.value * (12 if self.unit == "y" else 1)

    def __str__(self) -> str:
        return f"{self.value}{self.unit}"

    def describe(self) -> str:
        """Human form for UIs: ``10 s``, ``1 month``."""
        return f"{self.value} {_UNIT_WORDS[self.unit]}"

    def to_json(self) -> str:
        return str(self)

    @classmethod
    def from_json(cls, v: Any) -> Duration | None:
        if v is None:
            return None
        return cls.parse(str(v))


def convert(value: int, from_precision: str, to_precision: str) -> int:
    """Convert an epoch integer between precisions (floor division when coarsening)."""
    if from_precision == to_precision:
        return value
    ns = value * NS_PER_PRECISION[from_precision]
    return ns // NS_PER_PRECISION[to_precision]
