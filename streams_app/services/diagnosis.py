""" "Why no output?": what a stream's recorded micro-batches, delivery log and source say about
its silence, in plain words naming the option that explains it.

Sources, all recorded by the runtime: ``StreamProgress`` rows (``BatchReport``, with the
dropped-row counters of ``engine/stream.py`` ``drop_stats`` in ``drops``; the latest
``TDWEB_PROGRESS_KEEP`` micro-batches), the ``Delivery`` log (one row per notification attempt),
and the source table's latest event time per group (one query, as the stream's owner sees it).
Rows the stage-1 filter removed (a legacy stream's WHERE, a 3.3.7 stream's PRE_FILTER) are never
counted by the engine: they are computed here on demand (``runtime/filtered.py``), over the newest
rows the stream read, as the user sees the source table.

Rules quoted in the causes: a window closes once the watermark (latest event time - WATERMARK)
reaches its end and a row of an already closed window is expired (seed 000 "Window Closure",
"Expired Data"); IGNORE EXPIRED 1 drops it; DELETE_MARK bounds recalculation; rows before the
stream's creation are computed only with FILL_HISTORY 1 (seed 000 "fill_history"); history
windows are notified only with NOTIFY_HISTORY (seed 000 "notification_options").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from spark_workers import access
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import TdError
from spark_workers.query.context import QueryContext
from spark_workers.runtime.filtered import FilterCheck, filter_check
from spark_workers.streams.compile import CompiledStream
from spark_workers.streams.spec import V337, StreamSpec
from spark_workers.streams.stored import stream_compiled
from streams_app import selectors
from streams_app.models import Delivery, Stream, StreamProgress
from streams_app.services.access import principal_for
from streams_app.services.lake import lake_get, sql_limits_configure
from streams_app.services.sql import sql_execute

DROP_KEYS = ("expired", "filtered", "disordered", "late", "beyond_delete_mark")
GROUPS_SHOWN = 50
QUIET_S = 60  # no micro-batch for this long: "no row since ..."

log = logging.getLogger(__name__)


class StreamNotVisible(Exception):
    """The user may not see the stream (the API answers 404, as for a missing stream)."""


@dataclass
class Totals:
    """The recorded micro-batches summed: rows in / out, dropped rows by reason, sample times."""

    batches: int = 0
    history_batches: int = 0
    input_rows: int = 0
    output_rows: int = 0
    events: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_KEYS, 0))
    sample_ms: list[int] = field(default_factory=list)
    open_windows: int = 0
    open_wend_min_ms: int | None = None
    watermark_ms: int | None = None
    latest_event_ms: int | None = None
    last_batch_at: dt.datetime | None = None
    # the latest micro-batches whose rows were all expired: rows and the first one's time
    expired_run: int = 0
    expired_run_since: dt.datetime | None = None


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC (``2017-02-28T01:00:00Z``), None for None."""
    if ms is None:
        return None
    t = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    text = t.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")


def iso_dt(t: dt.datetime) -> str:
    """A recorded time as ISO 8601 UTC to the second (``2026-11-26T03:52:13Z``)."""
    return t.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def progress_totals(*, stream: Stream) -> Totals:
    """Sum the stream's recorded micro-batches (``StreamProgress``, oldest first)."""
    t = Totals()
    for p in StreamProgress.objects.filter(stream=stream).order_by("id").iterator():
        t.batches += 1
        t.history_batches += p.phase == "history"
        t.input_rows += p.input_rows
        t.output_rows += p.output_rows
        drops = p.drops or {}
        t.dropped["expired"] += p.expired_rows
        if p.input_rows and p.expired_rows >= p.input_rows:
            t.expired_run_since = t.expired_run_since if t.expired_run else p.created_at
            t.expired_run += p.input_rows
        elif p.input_rows:
            t.expired_run, t.expired_run_since = 0, None
        for k in DROP_KEYS[1:]:
            t.dropped[k] += int(drops.get(k) or 0)
        for ms in drops.get("sample_ms") or []:
            if len(t.sample_ms) < 8 and ms not in t.sample_ms:
                t.sample_ms.append(int(ms))
        t.open_windows = p.open_windows
        t.open_wend_min_ms = drops.get("open_wend_min_ms", t.open_wend_min_ms)
        t.watermark_ms = p.watermark_ms if p.watermark_ms is not None else t.watermark_ms
        t.latest_event_ms = p.max_event_ms if p.max_event_ms is not None else t.latest_event_ms
        t.last_batch_at = p.created_at
    return t


def notification_failures(*, stream: Stream) -> list[dict[str, Any]]:
    """Per notification URL with failed attempts, most failures first: ``{url, attempts,
    failed, last_error, last_failed_at}`` from the delivery log (``Delivery``)."""
    per_url = (
        Delivery.objects.filter(stream=stream)
        .values("url")
        .annotate(attempts=Count("id"), failed=Count("id", filter=Q(ok=False)))
        .order_by("-failed", "url")
    )
    out = []
    for row in per_url:
        if not row["failed"]:
            continue
        last = Delivery.objects.filter(stream=stream, url=row["url"], ok=False).order_by("-id").first()
        assert last is not None
        out.append({**row, "last_error": plain_error(last.error), "last_failed_at": iso_dt(last.created_at)})
    return out


def plain_error(error: str) -> str:
    """A delivery error in plain words (no Python exception text reaches a client)."""
    e = error.lower()
    if "refused" in e:
        return "connection refused"
    if "timed out" in e or "timeout" in e:
        return "no answer (timed out)"
    if "status" in e or "handshake" in e:
        return "the WebSocket handshake was rejected"
    if "name or service" in e or "getaddrinfo" in e or "resolve" in e:
        return "unknown host"
    return "connection failed" if e else ""


def _compiled(stream: Stream, spec: StreamSpec) -> CompiledStream | None:
    """The stream's compiled form, None when its tables are gone (the diagnosis says so)."""
    try:
        return stream_compiled(spec, stream.compiled, lake_get(), settings.TDWEB_TIMEZONE)
    except TdError:
        return None


def rows_at_creation(*, stream: Stream, c: CompiledStream) -> int | None:
    """Rows the source table held at CREATE STREAM (its Delta version ``start_version``): what
    FILL_HISTORY 0 leaves out (seed 000 "fill_history"). None when it cannot be read (dropped or
    vacuumed since). Cost: one scan of the timestamp (and tbname) column of that snapshot."""
    src = c.source
    try:
        t = lake_get().read(
            src.db, src.storage, version=stream.start_version, columns=[src.storage.columns[0].physical]
        )
    except Exception:  # a dropped table, a vacuumed version: the diagnosis makes no claim
        return None
    sub = src.tbname_filter
    return int(t.num_rows if sub is None else sum(1 for v in t.column("tbname").to_pylist() if v == sub))


def filtered_rows(*, stream: Stream, c: CompiledStream, user: Any) -> FilterCheck | None:
    """What the stream's WHERE / PRE_FILTER removed from the newest rows it read (at most
    ``filtered.LIMIT_ROWS``, ``runtime/filtered.py`` ``filter_check``), read with ``user``'s
    privileges: None without a filter, for a user who may not read the source table, or when the
    rows cannot be read (logged; the rest of the diagnosis stands)."""
    if c.plan.filter is None:
        return None
    lake = lake_get()
    try:
        ctx = QueryContext(lake, principal=principal_for(user))
        ctx.require_storage(access.READ, c.source.db, c.source.table)
    except TdError:
        return None
    sql_limits_configure()
    try:
        return filter_check(
            c,
            lake,
            settings.TDWEB_TIMEZONE,
            start_version=stream.start_version,
            history_version=stream.history_version,
            ignore_until=stream.ignore_until_version,
        )
    except Exception:  # a dropped or vacuumed table, a timeout: the diagnosis makes no claim
        log.warning("diagnosis of stream %s: the filtered rows could not be read", stream.pk, exc_info=True)
        return None


def _filter_cause(f: FilterCheck | None) -> dict[str, Any] | None:
    """The cause ``{option: WHERE | PRE_FILTER, text}`` when examined rows failed the filter."""
    if f is None or not f.failed:
        return None
    share = f"all {f.examined} rows" if f.failed >= f.examined else f"{f.failed} of {f.examined} rows"
    newest = "" if f.complete else " (the newest rows read)"
    sample = "; e.g. " + ", ".join(_sample_text(s) for s in f.sample[:3]) if f.sample else ""
    return _cause(
        f.clause,
        f"{share} examined{newest} did not pass the filter ({f.condition}): dropped before any "
        f"window{sample}",
    )


def _sample_text(s: dict[str, Any]) -> str:
    """One sample row in words: ``d1001 at 2024-01-01T00:10:00Z (v=1.0)``."""
    where = f"{s['tbname']} at " if s["tbname"] else ""
    values = ", ".join(f"{k}={v}" for k, v in s["values"].items())
    return f"{where}{iso(s['ts_ms'])}" + (f" ({values})" if values else "")


def _window_end_ms(c: CompiledStream, t_ms: int) -> int | None:
    """The exclusive end (epoch ms) of the last INTERVAL window holding a row at ``t_ms``; None
    for other windows (their end depends on rows still to come)."""
    if c.plan.shape is None or c.spec.trigger.get("type") not in ("interval", "sliding"):
        return None
    per = NS_PER_PRECISION[c.precision]
    t = np.array([t_ms * 1_000_000 // per], np.int64)
    try:
        a = c.plan.assigner()
        _rows, wkeys = a.assign(t)
        ends = a.end(wkeys)
    except (AssertionError, TypeError, ValueError):
        return None
    return int(ends.max()) * per // 1_000_000 if ends.size else None


def group_states(*, stream: Stream, c: CompiledStream, user: Any) -> list[dict[str, Any]]:
    """Per group (the stream's PARTITION BY values) of the source table: ``{group, rows,
    latest_event_ms, watermark_ms, open_window_end_ms, closes_when}`` (at most ``GROUPS_SHOWN``,
    the latest first). One query of the source table as ``user``; [] if it fails."""
    spec = c.spec
    if spec.source is None:
        return []
    parts = [p["sql"] for p in spec.partition_by]
    ts = c.source.table.columns[0].name
    head = ", ".join(f"{p} AS g{i}" for i, p in enumerate(parts))
    sql = (
        f"SELECT {head + ', ' if head else ''}LAST({ts}) AS latest, COUNT(*) AS n "
        f"FROM {spec.source.db}.{spec.source.table}" + (f" PARTITION BY {', '.join(parts)}" if parts else "")
    )
    try:
        rows = sql_execute(sql=sql, user=user).rows
    except TdError:
        return []
    per = NS_PER_PRECISION[c.precision]
    wm_ms = c.rules.watermark * per // 1_000_000
    out = []
    for r in sorted(rows, key=lambda r: -(r[-2] or 0))[:GROUPS_SHOWN]:
        if r[-2] is None:
            continue
        v = r[-2]  # the epoch in precision units (a datetime from other back ends)
        latest = int(v.timestamp() * 1000) if isinstance(v, dt.datetime) else int(v) * per // 1_000_000
        end = _window_end_ms(c, latest)
        out.append(
            {
                "group": ", ".join(str(v) for v in r[:-2]) or "(all rows)",
                "rows": int(r[-1]),
                "latest_event_ms": latest,
                "watermark_ms": latest - wm_ms,
                "open_window_end_ms": end,
                "closes_when": _closes_when(c, end, wm_ms),
            }
        )
    return out


def _closes_when(c: CompiledStream, end_ms: int | None, wm_ms: int) -> str:
    """What closes a group's open window, in the trigger's words."""
    mode = _trigger_mode(c.spec)
    if end_ms is None:
        return f"{mode}: the window's closing condition (a {c.spec.trigger.get('type', 'window')} window)"
    return (
        f"{mode}: a row of this group at or after {iso(end_ms + wm_ms)} "
        f"(window end {iso(end_ms)} + WATERMARK {wm_ms // 1000}s)"
    )


def _trigger_mode(spec: StreamSpec) -> str:
    """What decides when a window is done: the legacy TRIGGER option (``WINDOW_CLOSE``), or a
    3.3.7 stream's trigger clause (``INTERVAL(10s) SLIDING(10s)``: its windows close when the
    watermark passes their end, seed 002 "Trigger Types")."""
    if spec.syntax == V337:
        return selectors.stream_window_text(spec=spec)
    return spec.options.trigger


def _cause(option: str | None, text: str) -> dict[str, Any]:
    """One cause: ``{option, text}``; ``text`` starts with the option (``IGNORE_EXPIRED 1: ...``)."""
    return {"option": option, "text": f"{option}: {text}" if option else text}


def _state_causes(stream: Stream, spec: StreamSpec, t: Totals, before: int | None) -> list[dict[str, Any]]:
    """The stream's state, FILL_HISTORY (``before``: rows of the source at CREATE STREAM) and
    silence since the last row."""
    out = []
    if stream.status in (Stream.Status.PAUSED, Stream.Status.STOPPED, Stream.Status.FAILED):
        why = f" ({stream.last_error})" if stream.last_error else ""
        out.append(_cause(None, f"the stream is {stream.status.upper()}{why}: it reads no rows"))
    if not spec.options.fill_history and stream.history_version is None and before:
        out.append(
            _cause(
                "FILL_HISTORY 0",
                f"rows before the stream's creation are not computed (the {before} rows the source "
                "table held when it was created)",
            )
        )
    quiet = t.last_batch_at is None or (timezone.now() - t.last_batch_at).total_seconds() > QUIET_S
    if quiet and t.latest_event_ms is not None:
        out.append(_cause(None, f"no row since {iso(t.latest_event_ms)} (latest event time read)"))
    elif quiet:
        what = "micro-batch" if spec.source is None else "row"  # a PERIOD trigger reads no table
        out.append(_cause(None, f"no {what} since the stream was created ({iso_dt(stream.created_at)})"))
    return out


def _row_causes(spec: StreamSpec, c: CompiledStream | None, t: Totals) -> list[dict[str, Any]]:
    """Rows read but dropped: expired, beyond DELETE_MARK, late, filtered, disordered."""
    out, d, n = [], t.dropped, t.input_rows
    o = spec.options
    sample = f"; e.g. rows at {', '.join(str(iso(ms)) for ms in t.sample_ms[:4])}" if t.sample_ms else ""
    if d["expired"]:
        if spec.syntax == V337:
            option = (
                f"EXPIRED_TIME({o.expired_time})" if o.expired_time else f"WATERMARK({o.watermark or '0s'})"
            )
        else:
            option = f"IGNORE_EXPIRED {int(o.ignore_expired)}"
        share = f"all {n} rows were" if d["expired"] >= n else f"{d['expired']} of {n} rows were"
        if t.expired_run and d["expired"] < n and t.expired_run_since is not None:
            since = iso_dt(t.expired_run_since)
            share = f"all {t.expired_run} rows read since {since} were"
        out.append(
            _cause(
                option,
                f"{share} older than the watermark when they came (their windows had closed): "
                f"dropped{sample}",
            )
        )
    if d["beyond_delete_mark"]:
        out.append(
            _cause(
                f"DELETE_MARK {o.delete_mark or '10y'}",
                f"{d['beyond_delete_mark']} rows were beyond DELETE_MARK: their windows are not recalculated",
            )
        )
    if d["late"]:
        out.append(
            _cause(
                f"WATERMARK {o.watermark or '0s'}",
                f"{d['late']} rows came later than the watermark: dropped{sample}",
            )
        )
    if d["filtered"]:
        option = f"PRE_FILTER({o.pre_filter})" if o.pre_filter else "WHERE / FILTER"
        out.append(_cause(option, f"{d['filtered']} rows did not pass the filter"))
    if d["disordered"] and spec.syntax == V337 and o.ignore_disorder:
        out.append(
            _cause(
                "IGNORE_DISORDER 1",
                f"{d['disordered']} rows arrived out of order (older than their group's latest row)",
            )
        )
    if n and not t.output_rows and c is not None and c.spec.options.calc_notify_only:
        out.append(_cause("CALC_NOTIFY_ONLY", "results are notified, not written to the output table"))
    return out


def _window_causes(spec: StreamSpec, c: CompiledStream | None, t: Totals) -> list[dict[str, Any]]:
    """Windows still open: which trigger waits for what."""
    if not t.open_windows or t.output_rows:
        return []
    mode = _trigger_mode(spec)
    wm_ms = c.rules.watermark * NS_PER_PRECISION[c.precision] // 1_000_000 if c is not None else 0
    closes = ""
    if t.open_wend_min_ms is not None:
        closes = (
            f"; the earliest closes with a row of its group at or after {iso(t.open_wend_min_ms + wm_ms)} "
            f"(window end {iso(t.open_wend_min_ms)} + WATERMARK {wm_ms // 1000}s)"
        )
    return [_cause(mode, f"{t.open_windows} windows are open and none has closed yet{closes}")]


def _notify_causes(spec: StreamSpec, t: Totals, failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Notification failures (delivery log) and NOTIFY_HISTORY."""
    out = []
    on_failure = spec.notify.on_failure if spec.notify else "PAUSE"
    then = "the stream waits until it answers" if on_failure == "PAUSE" else "the messages were dropped"
    for f in failures:
        what = (
            "refused the connection"
            if f["last_error"] == "connection refused"
            else f"could not be reached ({f['last_error']})"
        )
        out.append(
            _cause(
                None, f"the receiver {f['url']} {what} {f['failed']} times; ON_FAILURE {on_failure}: {then}"
            )
        )
    if spec.notify is not None and not spec.notify.history and t.history_batches:
        out.append(
            _cause(
                "NOTIFY_HISTORY 0",
                f"history windows are not notified ({t.history_batches} FILL_HISTORY micro-batches)",
            )
        )
    return out


def stream_diagnosis(*, stream: Stream, user: Any) -> dict[str, Any]:
    """ "Why no output?" for ``stream`` as ``user`` sees it.

    Returns:
        ``{stream_id, name, status, trigger, watermark_ms, latest_event_ms, watermark,
        latest_event_time, batches, input_rows, output_rows, dropped: {expired, filtered,
        disordered, late, beyond_delete_mark}, dropped_sample (ISO times), open_windows: {count,
        earliest_end, closes_when}, notifications: {sent, failed, receivers: [...]}, groups:
        [...], causes: [{option, text}]}`` (times: epoch ms and ISO 8601 UTC).

    Raises:
        StreamNotVisible: ``user`` may not see the stream (neither its owner nor privileged).
    """
    fresh = selectors.stream_get(user=user, stream_id=stream.pk)
    if fresh is None:
        raise StreamNotVisible(stream.pk)
    stream = fresh  # its counters and status as recorded now
    spec = StreamSpec.from_json(stream.spec)
    c = _compiled(stream, spec)
    t = progress_totals(stream=stream)
    failures = notification_failures(stream=stream)
    groups = group_states(stream=stream, c=c, user=user) if c is not None else []
    causes = [
        *_state_causes(stream, spec, t, rows_at_creation(stream=stream, c=c) if c is not None else None),
        *_row_causes(spec, c, t),
        *_window_causes(spec, c, t),
        *_notify_causes(spec, t, failures),
    ]
    if c is None:
        causes.insert(0, _cause(None, "a table of the stream no longer exists"))
    f = filtered_rows(stream=stream, c=c, user=user) if c is not None else None
    if (fc := _filter_cause(f)) is not None:
        assert f is not None
        causes.insert(0 if f.failed >= f.examined else len(causes), fc)
    wm_ms = c.rules.watermark * NS_PER_PRECISION[c.precision] // 1_000_000 if c is not None else 0
    closes = _closes_when(c, t.open_wend_min_ms, wm_ms) if c is not None and t.open_windows else None
    return {
        "stream_id": stream.pk,
        "name": stream.name,
        "status": stream.status,
        "trigger": _trigger_mode(spec),
        "watermark_ms": t.watermark_ms,
        "watermark": iso(t.watermark_ms),
        "latest_event_ms": t.latest_event_ms,
        "latest_event_time": iso(t.latest_event_ms),
        "batches": t.batches,
        "input_rows": t.input_rows,
        "output_rows": t.output_rows,
        "dropped": t.dropped,
        "dropped_sample": [iso(ms) for ms in t.sample_ms],
        "open_windows": {
            "count": t.open_windows,
            "earliest_end": iso(t.open_wend_min_ms),
            "closes_when": closes,
        },
        "notifications": {
            "sent": stream.notifications_sent,
            "failed": stream.notifications_failed,
            "receivers": failures,
        },
        "groups": [
            {**g, "latest_event_time": iso(g["latest_event_ms"]), "watermark": iso(g["watermark_ms"])}
            for g in groups
        ],
        "filter_check": _filter_json(f),
        "causes": causes,
    }


def _filter_json(f: FilterCheck | None) -> dict[str, Any] | None:
    """The filter check as the response shows it (sample times also as ISO 8601)."""
    if f is None:
        return None
    return {
        **dataclasses.asdict(f),
        "sample": [{**s, "time": iso(s["ts_ms"])} for s in f.sample],
    }
