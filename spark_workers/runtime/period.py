"""PERIOD triggers of TDengine 3.3.7 streams (seed 002 "Scheduled Trigger").

A PERIOD stream is "essentially a scheduled task" driven by system time: it has no event-time
windows, so it needs no Structured Streaming query. ``PeriodRunner`` computes the trigger times
(``period_next``), and at each one runs the stream's computation (``query/compute.py``) once per
trigger group, with ``%%trows`` = the rows written to the trigger table since the previous trigger
(the Delta versions committed after the previous trigger and at or before this one, by their
commit times, read from the change feed), writes the results through
the stream's ``OutputSink`` (one Delta commit per trigger, recorded as the txn ``(stream, trigger
time)``, so a repeated trigger never duplicates rows) and sends ``ON_TIME`` notifications. Its
state (the last trigger time and the source version it read up to) lives in
``<checkpoint root>/<key>/period.json`` (``runtime/paths.py``: ``TDWEB_CHECKPOINTS`` or the lake's
local folder), beside the Spark checkpoints of the other streams, so a worker restarted on this or
another host continues where it stopped. The decision is in docs/decisions.md.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_workers import timestamps
from spark_workers.duration import Duration
from spark_workers.engine.rows import INSERT
from spark_workers.lake.changes import META_FIELDS, ChangeReader
from spark_workers.lake.store import Lake
from spark_workers.notify.messages import Event
from spark_workers.query.compute import TriggerEvent, group_context
from spark_workers.query.duck import DuckSession
from spark_workers.runtime.paths import StreamState
from spark_workers.runtime.sink import BatchReport, OutputSink
from spark_workers.streams.compile import CompiledStream, group_id

DAY_MS = 86_400_000
MAX_CATCH_UP = 1000  # missed triggers fired after a restart, at most
STATE_FILE = "period.json"


def period_next(after_ms: int, created_ms: int, period: Duration, offset: Duration | None, tz: str) -> int:
    """The first trigger time strictly after ``after_ms`` (epoch ms), by seed 002's base-time rules:
    below one day the base is each local midnight plus the offset, reset every day (the last gap of
    a day may be shorter); at or above one day the base is the local midnight of the creation day
    plus the offset, never reset. ``tz`` is the server time zone (``TDWEB_TIMEZONE``).

    Example (seed 002): PERIOD(5h30m) fires at 00:00, 05:30, 11:00, 16:30, 22:00 every day.
    """
    p = period.ns // 1_000_000
    off = offset.ns // 1_000_000 if offset is not None else 0
    zone = timestamps.zone(tz)
    if p >= DAY_MS:
        created = dt.datetime.fromtimestamp(created_ms / 1000, zone)
        base = _midnight_ms(created, zone) + off
        k = max(0, (after_ms - base) // p + 1)
        return base + k * p
    local = dt.datetime.fromtimestamp(after_ms / 1000, zone)
    day = local.date()
    for _ in range(3):  # this day, else the next base
        base = _midnight_ms(dt.datetime.combine(day, dt.time(), zone), zone) + off
        next_base = _midnight_ms(dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), zone), zone) + off
        if after_ms < base:
            return base
        k = (after_ms - base) // p + 1
        t = base + k * p
        if t < next_base:
            return t
        day = day + dt.timedelta(days=1)
        if after_ms < next_base:
            return next_base
    raise AssertionError("unreachable: a trigger exists within two days")


def period_prev(
    at_ms: int, created_ms: int, period: Duration, offset: Duration | None, tz: str
) -> int | None:
    """The trigger time before the trigger at ``at_ms`` (None before the first), same rules."""
    p = period.ns // 1_000_000
    lo = at_ms - max(p, DAY_MS) - DAY_MS
    t = period_next(lo, created_ms, period, offset, tz)
    prev = None
    while t < at_ms:
        prev = t
        t = period_next(t, created_ms, period, offset, tz)
    return prev


def _midnight_ms(d: dt.datetime, zone: dt.tzinfo) -> int:
    m = dt.datetime(d.year, d.month, d.day, tzinfo=zone)
    return int(m.timestamp() * 1000)


class PeriodRunner:
    """Runs one PERIOD stream (module docstring).

    Args:
        compiled: the compiled stream (trigger ``period``, a computation).
        lake: the lake.
        sink: the stream's output sink (writes, subtables, notifications).
        created_ms: the stream's creation time (base of periods of a day or more).
        start_version: the trigger table's version at CREATE STREAM (rows after it are read).
        tz: server time zone.
        state: the stream's state folder (``runtime/paths.StreamState``), where the runner keeps
            ``period.json`` (None: in memory only).
    """

    def __init__(
        self,
        compiled: CompiledStream,
        lake: Lake,
        sink: OutputSink,
        *,
        created_ms: int,
        start_version: int,
        tz: str = "UTC",
        state: StreamState | None = None,
    ) -> None:
        self.c = compiled
        self.lake = lake
        self.sink = sink
        self.tz = tz
        self.created_ms = created_ms
        trig = compiled.spec.trigger
        self.period = Duration.parse(str(trig["period"]))
        self.offset = Duration.parse(str(trig["offset"])) if trig.get("offset") else None
        self.has_table = bool(trig.get("from", True))
        self.state_files = state
        self.state: dict[str, Any] = {"last_trigger_ms": None, "version": start_version}
        saved = state.read_text(STATE_FILE) if state is not None else None
        if saved is not None:
            self.state.update(json.loads(saved))

    def next_due(self, now_ms: int | None = None) -> int:
        """The next trigger time (epoch ms): the one after the last trigger fired, or after the
        stream's creation, even when it has passed (a worker that starts late or restarts fires
        the missed triggers in order, each with the rows of its own period); after a pause longer
        than ``MAX_CATCH_UP`` periods, the last trigger before now."""
        last = self.state["last_trigger_ms"]
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        t = period_next(
            last if last is not None else self.created_ms, self.created_ms, self.period, self.offset, self.tz
        )
        if now_ms - t > MAX_CATCH_UP * (self.period.ns // 1_000_000):
            t = period_prev(now_ms + 1, self.created_ms, self.period, self.offset, self.tz) or t
        return t

    def _save(self) -> None:
        if self.state_files is not None:
            self.state_files.write_text(STATE_FILE, json.dumps(self.state))

    def _groups(self) -> list[list[Any]]:
        """One value list per trigger group: the PARTITION BY values of every subtable (tbname
        and tags), or a single group without grouping (seed 002 "Trigger Table and Grouping")."""
        groups = self.c.plan.groups
        if not groups:
            return [[]]
        src = self.c.source
        if src.table.kind != "super":
            return [[src.table.name if g.display.lower() == "tbname" else None for g in groups]]
        tags = self.lake.catalog.subtable_tags(src.db.name, src.storage.name).to_pylist()
        physical = {t.name.lower(): t.physical for t in src.storage.tags}
        out: dict[str, list[Any]] = {}
        for row in tags:
            vals = []
            for g in groups:
                col = g.display.lower()
                vals.append(row["tbname"] if col == "tbname" else row.get(physical.get(col, col)))
            out[json.dumps(vals, default=str)] = vals
        return list(out.values())

    def fire(self, trigger_ms: int, *, now_ms: int | None = None) -> BatchReport:
        """Run the trigger at ``trigger_ms``: computation per group, output, ON_TIME notifications."""
        t0 = time.perf_counter()
        prev = self.state["last_trigger_ms"]
        if prev is None:
            prev = period_prev(trigger_ms, self.created_ms, self.period, self.offset, self.tz)
        nxt = period_next(trigger_ms, self.created_ms, self.period, self.offset, self.tz)
        rep = BatchReport(trigger_ms, phase="live")
        rows = None
        version = int(self.state["version"])
        if self.has_table:
            src = self.c.source
            reader = ChangeReader(self.lake, src.db.name, src.table.name)
            latest = reader.latest_version()
            changes = reader.read_changes(version, latest)
            if changes.num_rows:  # only what was committed by the trigger time (a late fire)
                late = pc.greater(changes.column("_at"), trigger_ms)
                if pc.any(late).as_py():
                    latest = int(pc.min(pc.filter(changes.column("_cv"), late)).as_py()) - 1
                    changes = changes.filter(pc.invert(late))
            keep = pc.equal(changes.column("_ct"), INSERT) if changes.num_rows else None
            rows = changes.filter(keep) if keep is not None else changes
            rows = rows.drop_columns([f.name for f in META_FIELDS if f.name in rows.column_names])
            rep.input_rows = rows.num_rows
            version = latest
        groups = self.c.plan.groups
        with DuckSession(self.lake) as duck:
            view = duck.register_arrow(rows) if rows is not None else None
            evs: list[TriggerEvent] = []
            keys: list[tuple[str, int]] = []
            names = [g.display.lower() for g in groups]
            for vals in self._groups():
                gkey = json.dumps(vals)
                nodata = rows is None or not _group_has_rows(rows, names, vals)
                if self.c.spec.options.ignore_nodata_trigger and nodata:
                    continue
                v: dict[str, Any] = {
                    "_tlocaltime": trigger_ms * 1000,
                    "_tprev_localtime": None if prev is None else prev * 1000,
                    "_tnext_localtime": nxt * 1000,
                    "_tgrpid": group_id(gkey),
                }
                ph, tb, conds = group_context(groups, vals)
                v.update(ph)
                evs.append(TriggerEvent(v, tb, (conds, None, None, True), rows_view=view))
                keys.append((gkey, trigger_ms))
            if self.c.computation is not None:
                data, out_rows = self.sink.run_events(evs, keys, duck=duck)
            else:  # notify-only (seed 002: "send a notification with the current system time")
                data, out_rows = pa.table({"tbname": pa.array([], pa.string())}), {}
        if data.num_rows and self.sink.writes_output:
            table = self.sink.output_table()
            db = self.lake.catalog.require_database(self.c.out_db)
            self.lake.write(db, table, data, txn=(self.sink.app_id, trigger_ms))
            rep.output_rows = data.num_rows
        notify = self.c.notify
        if notify is not None and "ON_TIME" in notify.events:
            events = [
                Event(self.sink.table_name(g), "ON_TIME", g, group_id(g), w, None, out_rows.get((g, w)))
                for g, w in keys
            ]
            rep.events = len(events)
            self.sink.send(events, trigger_ms, rep, now_ms=now_ms)
        self.state["last_trigger_ms"] = trigger_ms
        self.state["version"] = version
        self._save()
        rep.duration_ms = (time.perf_counter() - t0) * 1000
        rep.rows_per_s = rep.input_rows / (rep.duration_ms / 1000.0) if rep.duration_ms > 0 else 0.0
        rep.watermark_ms = trigger_ms
        self.sink.progress(rep)
        return rep

    def run(self, should_run: Callable[[], bool], beat: Callable[[int], None] | None = None) -> None:
        """Fire every trigger on time until ``should_run()`` is False (checked at least every
        second); ``beat(version)`` is called about every second."""
        while should_run():
            due = self.next_due()
            while should_run():
                now = int(time.time() * 1000)
                if now >= due:
                    break
                if beat is not None:
                    beat(int(self.state["version"]))
                time.sleep(min(1.0, (due - now) / 1000.0))
            else:
                return
            self.fire(due)


def _group_has_rows(rows: pa.Table, names: list[str], vals: list[Any]) -> bool:
    if not rows.num_rows:
        return False
    mask = None
    for n, v in zip(names, vals, strict=True):
        if n not in rows.column_names:
            continue
        m = pc.equal(rows.column(n), pa.scalar(v)) if v is not None else pc.is_null(rows.column(n))
        mask = m if mask is None else pc.and_(mask, m)
    return mask is None or bool(pc.any(mask).as_py())
