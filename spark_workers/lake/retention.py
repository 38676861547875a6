"""Data retention: a database's KEEP and KEEP_TIME_OFFSET (TDengine SQL manual, "Manage
Databases": ``KEEP value[,value,value]``, ``KEEP_TIME_OFFSET value``).

TDengine's rules, as tdweb applies them:

- ``KEEP`` takes one to three values, each a number of days (a bare integer) or a duration in
  minutes, hours or days (``1440m``, ``24h``, ``1d``); each lies in [1 day, 365,000 days] and
  ``keep0 <= keep1 <= keep2`` (TDengine's tiers; one value stands for all three). tdweb has one
  storage tier: the retention is the last value, ``keep2``. ``keep0`` is at least three times
  the database's DURATION (TDengine's "keep0 >= 3 * duration"). A wrong value is
  ``0x2619`` Invalid database option, naming the rule.
- Rows whose timestamp is older than ``now - KEEP`` are not returned by queries
  (:func:`kept_from`, applied by ``query/duck.py`` to every scan), an INSERT of such a row is
  refused with ``0x060B`` "Timestamp data out of range" (``statements/writes.py``), and the
  retention job (:func:`expire`: after ALTER DATABASE KEEP and hourly from beat, task
  ``lake.retain``) deletes them from the Delta tables (a Delta ``DELETE``).
- ``KEEP_TIME_OFFSET`` (hours, [0, 23]) delays that deletion: :func:`expire` removes rows older
  than ``now - KEEP - offset``; queries still hide everything older than ``now - KEEP``.

Table TTL (``CREATE / ALTER TABLE ... TTL n``, TDengine SQL manual "Manage Tables") is the other
expiry the same hourly job applies: a normal or child table created ``n`` days ago or more is
dropped as by DROP TABLE (``statements/ddl.drop_expired_tables``), except one a stream reads or
writes (kept and logged). TDengine drops expired tables lazily; tdweb does it in the job, so an
expired table stays queryable until the job next runs.

Difference: a database created without KEEP keeps every row (TDengine's default is 3650 days, and
SHOW CREATE DATABASE shows it); enforcing a default no one chose would hide and delete rows of
databases created before tdweb enforced KEEP. Delete commits of the retention job are ordinary
Delta deletes: a stream reading the table's change feed sees them as deletions.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Database

if TYPE_CHECKING:
    from spark_workers.lake.store import Lake

log = logging.getLogger(__name__)

MINUTES_PER_UNIT = {"m": 1, "h": 60, "d": 1440}
MIN_KEEP_MIN = 1440  # TSDB_MIN_KEEP: 1 day
MAX_KEEP_MIN = 365_000 * 1440  # TSDB_MAX_KEEP: 365,000 days
MAX_KEEP_TIME_OFFSET_H = 23
_KEEP_RE = re.compile(r"^(\d+)([mhd]?)$", re.IGNORECASE)


def _bad(message: str) -> SqlError:
    return SqlError(f"Invalid database option: {message}", code=Code.INVALID_DB_OPTION)


def parse_keep(value: object) -> tuple[int, int, int]:
    """``KEEP``'s value as stored in the options (``3650``, ``'30d'``, ``'1d,2d,3650d'``) as
    ``(keep0, keep1, keep2)`` in minutes; one or two values are widened as TDengine does
    (``keep1 = keep0``, ``keep2 = keep1``).

    Raises:
        SqlError: ``0x2619`` (count, unit, range or order).
    """
    parts = [p.strip().strip("'\"") for p in str(value).split(",")]
    if not 1 <= len(parts) <= 3:
        raise _bad(f"KEEP takes 1 to 3 values, got {len(parts)}")
    minutes = []
    for p in parts:
        m = _KEEP_RE.match(p)
        if m is None:
            raise _bad(f"KEEP {p}: a number of days or a duration in m, h or d")
        minutes.append(int(m.group(1)) * MINUTES_PER_UNIT[(m.group(2) or "d").lower()])
    while len(minutes) < 3:
        minutes.append(minutes[-1])
    for v in minutes:
        if not MIN_KEEP_MIN <= v <= MAX_KEEP_MIN:
            raise _bad(f"KEEP {value}: each value lies in [1d, 365000d]")
    if not minutes[0] <= minutes[1] <= minutes[2]:
        raise _bad(f"KEEP {value}: the values must satisfy keep0 <= keep1 <= keep2")
    return minutes[0], minutes[1], minutes[2]


def check_options(options: dict[str, object], db: Database) -> None:
    """Check KEEP and KEEP_TIME_OFFSET of ``options`` (CREATE DATABASE's, or the options after an
    ALTER DATABASE) against ``db``'s DURATION: ``keep0 >= 3 * DURATION``.

    Raises:
        SqlError: ``0x2619``.
    """
    if "KEEP" in options:
        keep0 = parse_keep(options["KEEP"])[0]
        duration_min = db.duration.ns // (60 * 1_000_000_000)
        if keep0 < 3 * duration_min:
            raise _bad(
                f"KEEP {options['KEEP']}: keep0 ({keep0}m) must be at least 3 times DURATION "
                f"({duration_min}m)"
            )
    if "KEEP_TIME_OFFSET" in options:
        text = str(options["KEEP_TIME_OFFSET"]).strip("'\"")
        if not text.isdigit() or int(text) > MAX_KEEP_TIME_OFFSET_H:
            raise _bad(f"KEEP_TIME_OFFSET {text}: a number of hours in [0, {MAX_KEEP_TIME_OFFSET_H}]")


def keep_ms(db: Database) -> int | None:
    """The database's retention (``keep2``) in milliseconds; None without a KEEP option."""
    raw = db.options.get("KEEP")
    if raw is None:
        return None
    return parse_keep(raw)[2] * 60_000


def kept_from(db: Database, now_ms: int) -> int | None:
    """The oldest timestamp a query returns and an INSERT takes, in the database's precision
    units: ``now - KEEP`` (inclusive); None when the database keeps every row."""
    keep = keep_ms(db)
    if keep is None:
        return None
    return (now_ms - keep) * (1_000_000 // NS_PER_PRECISION[db.precision])


def expire(lake: Lake, db: Database, *, now_ms: int) -> int:
    """Delete the rows of every data table (supertables and normal tables; virtual tables hold
    none) of ``db`` older than ``now - KEEP - KEEP_TIME_OFFSET``; one Delta DELETE commit per table
    that has such rows. Returns the number of rows deleted (0 without KEEP)."""
    offset_h = int(str(db.options.get("KEEP_TIME_OFFSET", 0)).strip("'\"") or 0)
    cutoff = kept_from(db, now_ms - offset_h * 3_600_000)
    if cutoff is None:
        return 0
    deleted = 0
    for name, _kind, _st, _c in lake.catalog.tables(db.name, kinds=("super", "normal"), virtual=False):
        table = lake.catalog.require_table(db.name, name)
        if not lake.exists(db.name, table.name):
            continue
        deleted += lake.delete(db, table, ts_min=None, ts_max=cutoff - 1).deleted
    if deleted:
        log.info("retention of %s removed %d rows older than %d", db.name, deleted, cutoff)
    return deleted
