"""Timestamp literals and their rendering, in a database precision and the server time zone.

Rules (ARCHITECTURE.md, "timezone"): a literal without a zone is read in ``TDWEB_TIMEZONE``
(default UTC); REST answers render timestamps as RFC 3339 in that zone, with as many fraction
digits as the precision (3 for ms, 6 for us, 9 for ns), which is what TDengine's REST service sends
and what ``taosrest`` parses.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from functools import lru_cache
from zoneinfo import ZoneInfo

from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, SqlError

_TS_RE = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?\s*$",
    re.IGNORECASE,
)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@lru_cache(maxsize=32)
def zone(name: str) -> dt.tzinfo:
    """The tzinfo for an IANA name (``UTC``, ``Asia/Shanghai``); raises ``SqlError`` if unknown."""
    if name.upper() in ("UTC", "Z"):
        return dt.UTC
    try:
        return ZoneInfo(name)
    except Exception:
        raise SqlError(f"unknown time zone {name!r}", code=Code.WRONG_VALUE_TYPE) from None


def parse_literal(text: str, precision: str, tz: str) -> int:
    """Epoch value of a timestamp string in units of ``precision``.

    Args:
        text: ``YYYY-MM-DD[ HH:MM[:SS[.fff...]]][Z|+hh:mm]``.
        precision: ``ms``, ``us`` or ``ns``.
        tz: zone applied when ``text`` carries none.

    Raises:
        SqlError: the text is not a timestamp, or has more fraction digits than the precision.
    """
    m = _TS_RE.match(text)
    if not m:
        raise SqlError(
            f"invalid timestamp {text!r}: expected 'YYYY-MM-DD HH:MM:SS[.fff]'", code=Code.WRONG_VALUE_TYPE
        )
    year, month, day, hh, mi, ss, frac, off = m.groups()
    try:
        base = dt.datetime(int(year), int(month), int(day), int(hh or 0), int(mi or 0), int(ss or 0))
    except ValueError as e:
        raise SqlError(f"invalid timestamp {text!r}: {e}", code=Code.WRONG_VALUE_TYPE) from None
    if off:
        if off.upper() == "Z":
            tzinfo: dt.tzinfo = dt.UTC
        else:
            sign = 1 if off[0] == "+" else -1
            digits = off[1:].replace(":", "")
            tzinfo = dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        aware = base.replace(tzinfo=tzinfo)
    else:
        aware = base.replace(tzinfo=zone(tz))
    delta = aware - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    frac_ns = int((frac or "").ljust(9, "0")) if frac else 0
    per = NS_PER_PRECISION[precision]
    if frac_ns % per:
        raise SqlError(
            f"timestamp {text!r} is finer than the database precision {precision}", code=Code.WRONG_VALUE_TYPE
        )
    return (seconds * 1_000_000_000 + frac_ns) // per


def now(precision: str) -> int:
    """Current wall-clock time in units of ``precision``."""
    return time.time_ns() // NS_PER_PRECISION[precision]


def render(value: int, precision: str, tz: str) -> str:
    """RFC 3339 text of an epoch value: ``2022-05-08T03:42:00.000Z`` / ``...+08:00``."""
    per = NS_PER_PRECISION[precision]
    ns = value * per
    seconds, frac_ns = divmod(ns, 1_000_000_000)
    t = _EPOCH + dt.timedelta(seconds=seconds)
    z = zone(tz)
    local = t.astimezone(z)
    digits = {"ms": 3, "us": 6, "ns": 9}[precision]
    frac = str(frac_ns).rjust(9, "0")[:digits]
    off = local.utcoffset() or dt.timedelta(0)
    if off == dt.timedelta(0):
        suffix = "Z"
    else:
        total = int(off.total_seconds())
        sign = "+" if total >= 0 else "-"
        total = abs(total)
        suffix = f"{sign}{total // 3600:02d}:{(total % 3600) // 60:02d}"
    return local.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac}{suffix}"


def render_plain(value: int, precision: str, tz: str) -> str:
    """``YYYY-MM-DD HH:MM:SS.fff`` in ``tz`` (the form TDengine's CLI prints)."""
    text = render(value, precision, tz)
    head, _, rest = text.partition("T")
    clock = rest[: 8 + 1 + {"ms": 3, "us": 6, "ns": 9}[precision]]
    return f"{head} {clock}"


def to_datetime(value: int, precision: str) -> dt.datetime:
    """UTC-aware datetime (microsecond resolution) of an epoch value."""
    us = value * NS_PER_PRECISION[precision] // 1000
    return _EPOCH + dt.timedelta(microseconds=us)
