"""Lake upkeep run from beat."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from spark_workers.lake.retention import expire
from spark_workers.statements.ddl import drop_expired_tables
from spark_workers.statements.executor import Executor
from streams_app.services.lake import lake_get
from streams_app.services.registry import DjangoStreamRegistry

log = logging.getLogger(__name__)


def lake_compact(*, min_files: int = 16) -> int:
    """Compact every data table with at least ``min_files`` files (delta-rs OPTIMIZE; commits with
    ``dataChange=false`` do not appear in the change feed). Returns how many tables were compacted."""
    lake = lake_get()
    done = 0
    for db, _created in lake.catalog.databases():
        for name, _kind, _st, _c in lake.catalog.tables(db.name, kinds=("super", "normal"), virtual=False):
            try:
                if len(lake.delta(db.name, name).file_uris()) >= min_files:
                    lake.compact(db.name, name)
                    done += 1
            except Exception:
                log.exception("compaction of %s.%s failed", db.name, name)
    return done


def lake_retain(*, now_ms: int | None = None) -> int:
    """Apply every database's KEEP (``spark_workers/lake/retention.py``): delete the rows older than
    ``now - KEEP - KEEP_TIME_OFFSET`` from its data tables (Delta DELETE commits); ``now_ms`` is
    the clock (epoch ms, default the wall clock). Then drops the normal and child tables whose TTL
    has expired (``statements/ddl.drop_expired_tables``; a table a stream reads or writes is
    kept). Returns the number of rows deleted by KEEP; a database that fails is logged and the
    others still run."""
    lake = lake_get()
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    deleted = 0
    for db, _created in lake.catalog.databases():
        try:
            deleted += expire(lake, db, now_ms=now_ms)
        except Exception:
            log.exception("retention of %s failed", db.name)
    try:  # tables whose TTL expired (CREATE / ALTER TABLE ... TTL), as DROP TABLE by root
        drop_expired_tables(Executor(lake, DjangoStreamRegistry(), tz=settings.TDWEB_TIMEZONE), now_ms=now_ms)
    except Exception:
        log.exception("dropping the tables whose TTL expired failed")
    return deleted
