"""Reads: streams, progress, deliveries, notifications, and the lake's databases and tables."""

from __future__ import annotations

import datetime as dt
import functools
import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, F, Max, Q, QuerySet, Sum, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from spark_workers.access import Principal
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import CatalogError, Code, TdError
from spark_workers.lake.catalog import Database
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.sql.render import trigger_sql
from spark_workers.streams.spec import V337, StreamSpec
from streams_app.models import (
    Delivery,
    ImportJob,
    Inbox,
    Notification,
    RecalcJob,
    Stream,
    StreamProgress,
    StreamRun,
)
from streams_app.services.access import principal_for
from streams_app.services.lake import lake_get

log = logging.getLogger(__name__)

SPARKLINE = 60
STREAM_ORDERINGS = ("name", "created_at", "status", "id")
ACTIVE = (Stream.Status.RUNNING, Stream.Status.CATCHING_UP)
THROUGHPUT_WINDOW_S = 60  # the dashboard's current throughput: rows processed over the last minute


def streams_visible(*, user: Any) -> QuerySet[Stream]:
    """Live streams a user may see: staff see all, others the ones they own."""
    qs = Stream.objects.exclude(status=Stream.Status.DROPPED)
    if not getattr(user, "is_staff", False):
        qs = qs.filter(owner_id=getattr(user, "pk", None))
    return qs.order_by("name", "id")


@functools.lru_cache(maxsize=1024)
def _trigger_clause(sql: str) -> str | None:
    """The trigger clause of a 3.3.7 CREATE STREAM text, rendered (``STATE_WINDOW(voltage)``);
    None when the text is not one. Cost: one parse (about 1 ms) per distinct text."""
    try:
        stmt = parse_one(sql)
    except TdError:
        return None
    return trigger_sql(stmt.trigger) if isinstance(stmt, ast.CreateStream337) else None


def stream_window_text(*, spec: StreamSpec) -> str:
    """A stream's trigger/window as the streams list shows it: a 3.3.7 trigger clause as its
    statement says it (``STATE_WINDOW(voltage)``; the text stored in specs written before the spec's
    trigger became ``trigger_json``, else rendered from ``spec.sql``), ``INTERVAL(i[, offset])
    [SLIDING(s)]``, or the legacy window type in upper case (``SESSION``)."""
    t = spec.trigger or {}
    if t.get("sql"):
        return str(t["sql"])
    clause = _trigger_clause(spec.sql) if spec.syntax == V337 else None
    if clause:
        return clause
    if t.get("type") == "interval":
        text = f"INTERVAL({t.get('interval')}{', ' + t['offset'] if t.get('offset') else ''})"
        if t.get("sliding"):
            text += f" SLIDING({t['sliding']})"
        return text
    return str(t.get("type", "")).upper()


def streams_filter(
    qs: QuerySet[Stream],
    *,
    status: list[str] | None = None,
    db: str | None = None,
    search: str | None = None,
    ordering: str | None = None,
) -> QuerySet[Stream]:
    """Streams with one of ``status``, in database ``db`` (3.3.7 streams) or reading from or
    writing to it, whose name contains ``search`` (any case), ordered by ``ordering`` (one of
    ``STREAM_ORDERINGS``, ``-`` for descending; default name). Arguments are already validated."""
    if status:
        qs = qs.filter(status__in=status)
    if db:
        qs = qs.filter(Q(db__iexact=db) | Q(spec__source__db__iexact=db) | Q(spec__output__db__iexact=db))
    if search:
        qs = qs.filter(name__icontains=search)
    if ordering:
        field = ordering.lstrip("-")
        desc = ordering.startswith("-")
        qs = qs.order_by(f"-{field}" if desc else field, "-id" if desc else "id")
    return qs


def streams_throughput(*, stream_ids: list[int], n: int = SPARKLINE) -> dict[int, list[float]]:
    """Rows/s of the last ``n`` micro-batches of each stream, oldest first: one query (a
    ``ROW_NUMBER()`` window per stream over the ``(stream, -id)`` index)."""
    if not stream_ids:
        return {}
    rows = (
        StreamProgress.objects.filter(stream_id__in=stream_ids)
        .annotate(rn=Window(RowNumber(), partition_by=[F("stream_id")], order_by=F("id").desc()))
        .filter(rn__lte=n)
        .values_list("stream_id", "id", "rows_per_s")
    )
    out: dict[int, list[tuple[int, float]]] = {}
    for sid, pid, rate in rows:
        out.setdefault(sid, []).append((pid, rate))
    return {sid: [r for _, r in sorted(v)] for sid, v in out.items()}


def stream_lag_ms(*, stream: Stream) -> int | None:
    """Latest event time seen minus the watermark (ms), from the last micro-batch; None before
    the first one or for streams without a watermark (processing-time windows)."""
    p = stream.last_progress or {}
    mx, wm = p.get("max_event_ms"), p.get("watermark_ms")
    if mx is None or wm is None:
        return None
    return max(0, int(mx) - int(wm))


def recalc_job_active(*, stream_id: int) -> RecalcJob | None:
    """The stream's queued or running background recalculation, if any."""
    active = (RecalcJob.State.QUEUED, RecalcJob.State.RUNNING)
    return RecalcJob.objects.filter(stream_id=stream_id, state__in=active).order_by("-id").first()


def recalc_jobs_active(*, stream_ids: list[int]) -> dict[int, RecalcJob]:
    """The queued or running background recalculation of each of ``stream_ids`` that has one
    (the newest), in one query."""
    active = (RecalcJob.State.QUEUED, RecalcJob.State.RUNNING)
    out: dict[int, RecalcJob] = {}
    for job in RecalcJob.objects.filter(stream_id__in=stream_ids, state__in=active).order_by("id"):
        out[job.stream_id] = job
    return out


def _recalc_label(job: RecalcJob) -> str:
    if job.state == RecalcJob.State.DONE:
        return f"recalculation complete: {job.windows or 0:,} windows rewritten"
    if job.state in (RecalcJob.State.CANCELLED, RecalcJob.State.FAILED):
        return f"recalculation {job.state}" + (f": {job.error}" if job.error else "")
    if job.state == RecalcJob.State.QUEUED or not job.rows_total:
        return "recalculating: queued" if job.state == RecalcJob.State.QUEUED else "recalculating"
    left = "" if job.eta_s is None else f", about {dt.timedelta(seconds=round(job.eta_s))} left"
    return f"recalculating: {job.fraction:.0%} ({job.rows_done:,} of {job.rows_total:,} rows{left})"


def recalc_job_progress(*, job: RecalcJob) -> dict[str, Any]:
    """A background recalculation's progress, in the shape of :func:`stream_history_progress`
    with ``phase: "recalculation"``, the job's ``job_id`` and ``state`` (queued, running, done,
    cancelled, failed): ``fraction`` is the share of the stream's source rows computed (up to 0.9;
    1.0 once committed), ``rows_per_s`` the source rows per second of wall clock since the job
    began, ``eta_s`` the rows left at that rate (0 when done)."""
    return {
        "phase": "recalculation",
        "fraction": job.fraction,
        "label": _recalc_label(job),
        "rows_done": job.rows_done,
        "rows_total": job.rows_total,
        "rows_per_s": job.rows_per_s,
        "eta_s": job.eta_s,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "job_id": job.pk,
        "state": job.state,
    }


def stream_work_progress(
    *, stream: Stream, job: RecalcJob | None = None, job_known: bool = False
) -> dict[str, Any] | None:
    """Progress of a stream's long work: a background recalculation under way
    (:func:`recalc_job_progress`), else the FILL_HISTORY catch-up while ``catching_up``, else None.

    The catch-up's is the payload of :func:`stream_history_progress`: the one stored with the last
    micro-batch (``last_progress["history"]``), else (no history micro-batch yet) computed now.
    ``job``/``job_known``: the stream's active recalculation as already looked up (a page's).
    """
    if not job_known:
        job = recalc_job_active(stream_id=stream.pk)
    if job is not None:
        return recalc_job_progress(job=job)
    if stream.status != Stream.Status.CATCHING_UP:
        return None
    p = stream.last_progress or {}
    if isinstance(p.get("history"), dict):
        return dict(p["history"])
    return stream_history_progress(stream=stream, progress=p, at=timezone.now())


def history_read(progress: dict[str, Any]) -> bool:
    """The FILL_HISTORY snapshot has been read to its end, judged from a stream's last micro-batch
    report (``BatchReport.to_json()``): that batch ended it, or it was a live batch."""
    return bool(progress.get("history_done") or progress.get("phase") == "live")


def _history_counts(stream: Stream, progress: dict[str, Any]) -> tuple[int, int] | None:
    """``(rows_done, rows_total)`` of a stream's FILL_HISTORY snapshot after the micro-batch whose
    report is ``progress`` (``BatchReport.to_json()``; ``{}`` before the first); None without a
    snapshot or when the source's log cannot be read.

    History micro-batches read whole time buckets of the snapshot in time order
    (``spark_workers.lake.changes.next_offset``), so the rows done are the snapshot's rows in the
    buckets up to the one holding the batch's latest event time; totals come from the Delta log's
    per-file record counts (one log read). For a subtable source the counts are of its supertable.
    """
    spec = StreamSpec.from_json(stream.spec)
    if stream.history_version is None or spec.source is None:
        return None
    try:
        lake = lake_get()
        db = lake.catalog.require_database(spec.source.db)
        table = lake.catalog.require_table(db.name, spec.source.table)
        buckets = lake.buckets(db.name, table.storage, int(stream.history_version))
    except Exception as e:  # a dropped source, an unreadable log: no fraction
        log.debug("no history progress for stream %s: %s", stream.pk, e)
        return None
    total = sum(r for _, r in buckets)
    done = 0
    if history_read(progress):
        done = total
    elif progress.get("phase") == "history" and progress.get("max_event_ms") is not None:
        per_ms = 1_000_000 // NS_PER_PRECISION[db.precision]
        current = int(progress["max_event_ms"]) * per_ms // db.duration.in_precision(db.precision)
        done = sum(r for b, r in buckets if b <= current)
    return done, total


def _history_label(fraction: float | None, done: int | None, total: int | None, eta_s: float | None) -> str:
    if fraction is None or done is None or total is None:
        return "catching up on history"
    if fraction >= 1.0:
        return f"history complete: {total:,} rows"
    left = "" if eta_s is None else f", about {dt.timedelta(seconds=round(eta_s))} left"
    return f"catching up on history: {fraction:.0%} ({done:,} of {total:,} rows{left})"


def stream_history_progress(
    *, stream: Stream, progress: dict[str, Any], at: dt.datetime, complete: bool = False
) -> dict[str, Any]:
    """The FILL_HISTORY catch-up's progress after the micro-batch ``progress`` (a
    ``BatchReport.to_json()``, ``{}`` before the first) recorded at ``at``; ``complete``: the
    snapshot has been read to its end (issue 16, "progress you can trust").

    Returns ``{phase: "history", fraction: 0..1 | None, label, rows_done, rows_total,
    rows_per_s, eta_s, started_at}``: ``rows_done`` never falls below the one stored with the
    stream's previous micro-batch (``last_progress["history"]``), so the fraction is monotonic, and
    is ``rows_total`` (fraction 1.0, ``eta_s`` 0) once ``complete``; ``rows_per_s`` is the
    snapshot rows done per second of wall clock since the first history micro-batch began
    (``started_at``, ISO 8601 UTC), ``eta_s`` the rows left at that rate (None before a rate is
    known). Cost: one Delta log read (``_history_counts``).
    """
    prev = (stream.last_progress or {}).get("history") or {}
    counts = _history_counts(stream, {**progress, "history_done": complete or progress.get("history_done")})
    done, total = counts if counts is not None else (None, None)
    if done is not None and prev.get("rows_done") is not None:
        done = max(done, int(prev["rows_done"]))
    if prev.get("started_at"):
        started = dt.datetime.fromisoformat(str(prev["started_at"]))
    else:
        started = at - dt.timedelta(milliseconds=float(progress.get("duration_ms") or 0.0))
    elapsed = (at - started).total_seconds()
    rate = done / elapsed if done and elapsed > 0 else None
    fraction = 1.0 if complete else (min(1.0, done / total) if total and done is not None else None)
    eta: float | None = None
    if fraction is not None and fraction >= 1.0:
        eta = 0.0
    elif rate and total is not None and done is not None:
        eta = (total - done) / rate
    return {
        "phase": "history",
        "fraction": fraction,
        "label": _history_label(fraction, done, total, eta),
        "rows_done": done,
        "rows_total": total,
        "rows_per_s": rate,
        "eta_s": eta,
        "started_at": started.isoformat(),
    }


def stream_throughput(*, stream_id: int, n: int = SPARKLINE) -> list[float]:
    """Rows/s of the last ``n`` micro-batches, oldest first (sparkline)."""
    vals = list(
        StreamProgress.objects.filter(stream_id=stream_id)
        .order_by("-id")
        .values_list("rows_per_s", flat=True)[:n]
    )
    return list(reversed(vals))


def stream_progress_list(
    *, stream_id: int, limit: int = 300, since: dt.datetime | None = None
) -> list[StreamProgress]:
    """The latest ``limit`` micro-batch progress rows (recorded after ``since``), oldest first."""
    qs = StreamProgress.objects.filter(stream_id=stream_id)
    if since is not None:
        qs = qs.filter(created_at__gt=since)
    rows = list(qs.order_by("-id")[:limit])
    rows.reverse()
    return rows


def stream_deliveries(*, stream_id: int, ok: bool | None = None) -> QuerySet[Delivery]:
    """A stream's delivery log (attempts), newest first, optionally only (un)successful ones."""
    qs = Delivery.objects.filter(stream_id=stream_id)
    if ok is not None:
        qs = qs.filter(ok=ok)
    return qs.order_by("-id")


def stream_runs(*, stream_id: int) -> QuerySet[StreamRun]:
    """A stream's runs (worker attempts), newest first."""
    return StreamRun.objects.filter(stream_id=stream_id).order_by("-started_at", "-id")


def notifications_visible(*, user: Any) -> QuerySet[Notification]:
    """Notifications of the inboxes a user sees (own inboxes; staff: all)."""
    qs = Notification.objects.select_related("inbox")
    if not getattr(user, "is_staff", False):
        qs = qs.filter(inbox__owner_id=getattr(user, "pk", None))
    return qs.order_by("-id")


def notification_unread_count(*, user_id: int) -> int:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return 0
    return notifications_visible(user=user).filter(acknowledged=False).count()


def notifications_filter(
    qs: QuerySet[Notification],
    *,
    stream: str | None,
    event_type: str | None,
    acknowledged: bool | None,
    since: dt.datetime | None = None,
    group: str | None = None,
) -> QuerySet[Notification]:
    """Notifications of stream ``stream``, of ``event_type``, of the group whose events name the
    table ``group`` (the event's ``tableName``: the group's output subtable, seed 002
    "Notification Content"), (un)acknowledged, received at or after ``since``. Narrows ``qs``
    only: the inboxes a user sees stay those of ``notifications_visible``."""
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    if stream:
        qs = qs.filter(stream_name=stream)
    if event_type:
        qs = qs.filter(event_type=event_type)
    if group:
        qs = qs.filter(table_name=group)
    if acknowledged is not None:
        qs = qs.filter(acknowledged=acknowledged)
    return qs


def notification_groups(qs: QuerySet[Notification], *, limit: int = 200) -> list[dict[str, Any]]:
    """The groups of the notifications ``qs`` (one per stream and ``tableName``), most unread first:
    ``[{stream_name, table_name, tags: {tag: value}, total, unread, latest_id}]``, at most
    ``limit``. ``tags`` as ``notification_group_tags``. One aggregate query plus the catalog
    look-ups of the groups listed."""
    rows = list(
        qs.order_by()
        .values("inbox__owner_id", "stream_name", "table_name")
        .annotate(total=Count("id"), unread=Count("id", filter=Q(acknowledged=False)), latest_id=Max("id"))
        .order_by("-unread", "-latest_id")[:limit]
    )
    keys: list[GroupKey] = [(r["inbox__owner_id"], r["stream_name"], r["table_name"]) for r in rows]
    tags = notification_group_tags(keys=keys)
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for key, r in zip(keys, rows, strict=True):  # several inboxes (staff): one group per stream and table
        g = groups.setdefault(
            (r["stream_name"], r["table_name"]),
            {
                "stream_name": r["stream_name"],
                "table_name": r["table_name"],
                "tags": {},
                "total": 0,
                "unread": 0,
                "latest_id": 0,
            },
        )
        g["tags"] = g["tags"] or tags.get(key, {})
        g["total"] += r["total"]
        g["unread"] += r["unread"]
        g["latest_id"] = max(g["latest_id"], r["latest_id"])
    return sorted(groups.values(), key=lambda g: (-g["unread"], -g["latest_id"]))


GroupKey = tuple[int | None, str, str]


def _json_value(v: Any) -> Any:
    """A catalog tag value as JSON: numbers, strings, booleans and null as they are, bytes as
    UTF-8 text (hex when not text), anything else (timestamps, decimals) as its ``str``."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, bytes | bytearray):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return "\\x" + bytes(v).hex()
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return str(v)


def notification_group_tags(*, keys: list[GroupKey]) -> dict[GroupKey, dict[str, Any]]:
    """The tags of the groups that notifications name: for each ``(inbox owner id, streamName,
    tableName)`` of an event, the tag values (``{tag: value}``, in the supertable's tag order) of
    the output subtable ``tableName`` of a stream called ``streamName`` that the inbox's owner
    created (any stream for a superuser's inbox: a message sent to one's own inbox cannot read the
    tags of another user's tables) — the PARTITION BY values (or the TAGS / OUTPUT_SUBTABLE tag
    expressions over them) the stream gave its group (seed 000 "Stream Output"; seed 002
    "Notification Content": ``tableName`` is "the name of the target child table associated with
    the event").

    A key whose stream is not tdweb's, writes no output (notify-only), or whose subtable is gone is
    left out: the inbox shows its ``tableName``. Catalog look-ups are cached per process.
    """
    out: dict[GroupKey, dict[str, Any]] = {}
    wanted = {k for k in keys if k[1] and k[2]}
    if not wanted:
        return out
    owners = {o for o, _s, _t in wanted if o is not None}
    supers = set(
        get_user_model().objects.filter(pk__in=owners, is_superuser=True).values_list("pk", flat=True)
    )
    streams = (
        Stream.objects.filter(name__in={s for _o, s, _t in wanted})
        .exclude(status=Stream.Status.DROPPED)
        .order_by("-id")
        .values_list("owner_id", "name", "spec")
    )
    outputs: list[tuple[int | None, str, str, str]] = []  # (owner, stream name, db, supertable)
    for stream_owner, name, spec in streams:
        o = StreamSpec.from_json(spec).output
        if o is not None:
            outputs.append((stream_owner, name, o.db, o.table))
    try:
        catalog = lake_get().catalog
    except Exception as e:  # no lake here: the inbox shows tableName
        log.warning("group tags: %s", e)
        return out
    for key in wanted:
        owner, stream_name, table_name = key
        for s_owner, s_name, db, stable in outputs:
            if s_name != stream_name or (s_owner != owner and owner not in supers):
                continue
            try:
                t = catalog.table(db, table_name)
            except Exception as e:  # a label is best effort; the notification stays readable
                log.warning("tags of %s.%s: %s", db, table_name, e)
                continue
            if t is not None and t.kind == "sub" and (t.stable or "").lower() == stable.lower():
                out[key] = {tag.name: _json_value(t.tag_values.get(tag.name.lower())) for tag in t.tags}
                break
    return out


# ---------------------------------------------------------------------- the lake


def _principal(user: Any) -> Principal:
    return principal_for(user)


def database_list(*, user: Any) -> list[dict[str, Any]]:
    """The databases ``user`` holds any privilege in (all of them for superusers), by name:
    ``[{name, precision, created_ms, ntables}]``."""
    lake = lake_get()
    principal = _principal(user)
    out = []
    for db, created in lake.catalog.databases():
        if not principal.may_see(db):
            continue
        out.append(
            {
                "name": db.name,
                "precision": db.precision,
                "created_ms": created,
                "ntables": len(lake.catalog.tables(db.name, kinds=("sub", "normal"))),
            }
        )
    return out


def _visible_database(principal: Principal, db: str) -> Database:
    """The database if the principal may see it; else the same error as a missing one."""
    database = lake_get().catalog.require_database(db)
    if not principal.may_see(database):
        raise CatalogError(f"database {db} does not exist", code=Code.DB_NOT_EXIST)
    return database


def table_list(
    *, user: Any, db: str, kind: str | None = None, stable: str | None = None
) -> list[dict[str, Any]]:
    """The tables of ``db`` that ``user`` may know of: ``[{name, kind, stable}]``.

    Raises:
        CatalogError: the database does not exist or is not visible to ``user`` (DB_NOT_EXIST).
    """
    principal = _principal(user)
    database = _visible_database(principal, db)
    kinds = (kind,) if kind else ("super", "sub", "normal")
    return [
        {"name": n, "kind": k, "stable": s}
        for n, k, s, _c in lake_get().catalog.tables(database.name, kinds=kinds, stable=stable)
        if principal.may_see_table(database, s or n)
    ]


def table_detail(*, user: Any, db: str, name: str) -> dict[str, Any]:
    """Columns, tags and tag values of a table ``user`` may know of.

    Raises:
        CatalogError: no such (visible) database or table (DB_NOT_EXIST / TABLE_NOT_EXIST).
    """
    principal = _principal(user)
    database = _visible_database(principal, db)
    t = lake_get().catalog.require_table(database.name, name)
    if not principal.may_see_table(database, t.storage):
        raise CatalogError(f"table {db}.{name} does not exist", code=Code.TABLE_NOT_EXIST)

    def field(c: Any) -> dict[str, Any]:
        return {"name": c.name, "type": c.type.sql, "length": c.type.byte_length}

    return {
        "name": t.name,
        "db": t.db,
        "kind": t.kind,
        "stable": t.stable,
        "columns": [field(c) for c in t.columns],
        "tags": [field(c) for c in t.tags],
        "tag_values": t.tag_values,
    }


def streams_by_status(*, user: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in streams_visible(user=user).values_list("status", flat=True):
        out[s] = out.get(s, 0) + 1
    return out


def dashboard_get(*, user: Any) -> dict[str, Any]:
    """The dashboard over the streams and inboxes ``user`` sees (non-staff: their own).

    Returns ``{streams_total, streams_by_status: {status: n}, throughput_rows_per_s,
    failures: {streams_failed, recent_errors: [{stream_id, name, error, at}]},
    notifications: {sent, failed, delivery_rate, last_24h: {attempts, ok, failed,
    delivery_rate}}, inbox_unread}``: ``throughput_rows_per_s`` is the rows the streams processed
    in the last ``THROUGHPUT_WINDOW_S`` seconds per second (0 when nothing flows);
    ``sent``/``failed`` are the streams' notification counters; ``last_24h`` counts the delivery
    log's attempts; a rate is None without attempts. Cost: five small queries.
    """
    streams = list(
        streams_visible(user=user).only(
            "id",
            "name",
            "status",
            "last_error",
            "updated_at",
            "last_progress",
            "notifications_sent",
            "notifications_failed",
        )
    )
    by_status: dict[str, int] = {}
    sent = failed = 0
    errors: list[dict[str, Any]] = []
    for s in streams:
        by_status[s.status] = by_status.get(s.status, 0) + 1
        sent += s.notifications_sent
        failed += s.notifications_failed
        if s.last_error:
            errors.append({"stream_id": s.pk, "name": s.name, "error": s.last_error, "at": s.updated_at})
    ids = [s.pk for s in streams]
    names = {s.pk: s.name for s in streams}
    minute_ago = timezone.now() - dt.timedelta(seconds=THROUGHPUT_WINDOW_S)
    recent_rows = StreamProgress.objects.filter(stream_id__in=ids, created_at__gte=minute_ago).aggregate(
        n=Sum("input_rows")
    )["n"]
    throughput = (recent_rows or 0) / THROUGHPUT_WINDOW_S
    runs = (
        StreamRun.objects.filter(stream_id__in=ids)
        .exclude(error="")
        .order_by("-updated_at")
        .values_list("stream_id", "error", "updated_at")[:10]
    )
    seen = {(e["stream_id"], e["error"]) for e in errors}
    for sid, error, at in runs:
        if (sid, error) not in seen:
            seen.add((sid, error))
            errors.append({"stream_id": sid, "name": names[sid], "error": error, "at": at})
    errors.sort(key=lambda e: e["at"], reverse=True)
    recent = Delivery.objects.filter(
        stream_id__in=ids, created_at__gte=timezone.now() - dt.timedelta(hours=24)
    ).aggregate(attempts=Count("id"), ok=Count("id", filter=Q(ok=True)))
    attempts, ok = recent["attempts"] or 0, recent["ok"] or 0

    def rate(good: int, bad: int) -> float | None:
        return good / (good + bad) if good + bad else None

    return {
        "streams_total": len(streams),
        "streams_by_status": by_status,
        "throughput_rows_per_s": throughput,
        "failures": {
            "streams_failed": by_status.get(Stream.Status.FAILED, 0),
            "recent_errors": [{**e, "at": e["at"].isoformat()} for e in errors[:10]],
        },
        "notifications": {
            "sent": sent,
            "failed": failed,
            "delivery_rate": rate(sent, failed),
            "last_24h": {
                "attempts": attempts,
                "ok": ok,
                "failed": attempts - ok,
                "delivery_rate": rate(ok, attempts - ok),
            },
        },
        "inbox_unread": notifications_visible(user=user).filter(acknowledged=False).count(),
    }


def imports_visible(*, user: Any) -> QuerySet[ImportJob]:
    """Import jobs a user sees: their own (staff: all), newest first."""
    qs = ImportJob.objects.all()
    if not getattr(user, "is_staff", False):
        qs = qs.filter(owner_id=getattr(user, "pk", None))
    return qs.order_by("-id")


def stream_get(*, user: Any, stream_id: int) -> Stream | None:
    """The live stream ``stream_id`` if ``user`` may see it (``streams_visible``), else None."""
    return streams_visible(user=user).filter(pk=stream_id).first()


def inboxes_owned(*, user: Any) -> QuerySet[Inbox]:
    """The inboxes ``user`` owns, by name."""
    return Inbox.objects.filter(owner_id=getattr(user, "pk", None)).order_by("name")


SERIES_BUCKETS = 60  # points per series of the dashboard's charts


def dashboard_series(*, user: Any, since: dt.datetime, until: dt.datetime) -> dict[str, Any]:
    """Time series of the dashboard over ``[since, until)`` (wall clock), for the streams ``user``
    sees: ``SERIES_BUCKETS`` equal buckets (at least 1 s each).

    Returns ``{since, until, bucket_s, t: [bucket start, epoch ms], totals: {rows_per_s,
    delivered, failed}, streams: [{id, name, db, status, lag_ms, rows_per_s, lag_s, delivered,
    failed}]}``; each series has one value per bucket: ``rows_per_s`` the rows processed in the
    bucket per second, ``lag_s`` the event-time lag (latest event − watermark, seconds) of the
    bucket's last micro-batch (None without one), ``delivered`` / ``failed`` the notification
    delivery attempts. Micro-batch records are kept per stream up to ``TDWEB_PROGRESS_KEEP``, so
    older buckets of a busy stream may be empty. Cost: two queries, one pass over their rows.
    """
    streams = list(streams_visible(user=user).only("id", "name", "db", "status", "last_progress"))
    ids = [s.pk for s in streams]
    span_ms = max(1000, int((until - since).total_seconds() * 1000))
    bucket_ms = max(1000, -(-span_ms // SERIES_BUCKETS))
    start_ms = int(since.timestamp() * 1000)
    n = -(-span_ms // bucket_ms)

    def slot(at: dt.datetime) -> int | None:
        i = (int(at.timestamp() * 1000) - start_ms) // bucket_ms
        return i if 0 <= i < n else None

    rows = {sid: [0] * n for sid in ids}
    lag: dict[int, list[float | None]] = {sid: [None] * n for sid in ids}
    progress = StreamProgress.objects.filter(stream_id__in=ids, created_at__gte=since, created_at__lt=until)
    for sid, at, nrows, wm, mx in progress.order_by("id").values_list(
        "stream_id", "created_at", "input_rows", "watermark_ms", "max_event_ms"
    ):
        if (i := slot(at)) is not None:
            rows[sid][i] += nrows
            if wm is not None and mx is not None:
                lag[sid][i] = max(0, mx - wm) / 1000
    ok = {sid: [0] * n for sid in ids}
    bad = {sid: [0] * n for sid in ids}
    deliveries = Delivery.objects.filter(stream_id__in=ids, created_at__gte=since, created_at__lt=until)
    for sid, at, good in deliveries.values_list("stream_id", "created_at", "ok"):
        if (i := slot(at)) is not None:
            (ok if good else bad)[sid][i] += 1
    per_s = 1000 / bucket_ms
    out = [
        {
            "id": s.pk,
            "name": s.name,
            "db": s.db,
            "status": s.status,
            "lag_ms": stream_lag_ms(stream=s),
            "rows_per_s": [r * per_s for r in rows[s.pk]],
            "lag_s": lag[s.pk],
            "delivered": ok[s.pk],
            "failed": bad[s.pk],
        }
        for s in streams
    ]
    return {
        "since": since.isoformat(),
        "until": until.isoformat(),
        "bucket_s": bucket_ms / 1000,
        "t": [start_ms + i * bucket_ms for i in range(n)],
        "totals": {
            "rows_per_s": [sum(r[i] for r in rows.values()) * per_s for i in range(n)],
            "delivered": [sum(v[i] for v in ok.values()) for i in range(n)],
            "failed": [sum(v[i] for v in bad.values()) for i in range(n)],
        },
        "streams": out,
    }
