"""Legacy CREATE STREAM (seed 000 "Creating Stream Computing", seed 001) -> StreamSpec, and the checks of
its options; :func:`compile_legacy` compiles it with its errors positioned in the statement.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.query.planner import aggregate_call, join_refused
from spark_workers.query.subquery import merge_subquery
from spark_workers.sql import ast
from spark_workers.sql.render import expr_sql
from spark_workers.streams.compile import CompiledStream, compile_stream
from spark_workers.streams.spec import (
    LEGACY,
    NotifySpec,
    OptionsSpec,
    OutputSpec,
    OutputTag,
    SourceSpec,
    StreamSpec,
    trigger_json,
)

TRIGGERS = ("AT_ONCE", "WINDOW_CLOSE", "MAX_DELAY", "FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE")


MAX_DELAY_MIN = Duration(5, "s")  # legacy syntax (ARCHITECTURE.md decisions)


def _dur(d: Duration | None) -> str | None:
    return None if d is None else str(d)


def legacy_spec(s: ast.CreateStreamLegacy, sql: str, default_db: str | None) -> StreamSpec:
    """StreamSpec of a parsed legacy CREATE STREAM (no catalog checks; see ``create_stream``)."""
    q = s.query
    o = s.options
    for j in (q.select.args.get("joins") or []) if isinstance(q.select, exp.Select) else []:
        raise join_refused(j, sql)
    from_tables = list(q.select.find_all(exp.Table)) if isinstance(q.select, exp.Select) else []
    if len(from_tables) != 1:
        raise SqlError(
            "a stream's query reads exactly one table",
            sql=sql,
            offset=q.span.start if q.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    t = from_tables[0]
    src_db = t.db or default_db
    if not src_db:
        raise CatalogError("database not specified for the stream's source table", code=Code.DB_NOT_SPECIFIED)
    into_db = (s.into.db if s.into is not None else None) or default_db or src_db
    merged = merge_subquery(q, sql, aggregate_call).select  # a subquery's WHERE filters too
    where = merged.args.get("where") if isinstance(merged, exp.Select) else None
    # seed 000 "Trigger Modes": non-window computations trigger in real time (AT_ONCE)
    options = OptionsSpec(
        trigger=(o.trigger or ("WINDOW_CLOSE" if q.window is not None else "AT_ONCE")).upper(),
        max_delay=_dur(o.max_delay),
        recalculate=_dur(o.recalculate),
        watermark=_dur(o.watermark),
        ignore_expired=bool(1 if o.ignore_expired is None else o.ignore_expired),
        ignore_update=bool(1 if o.ignore_update is None else o.ignore_update),
        delete_mark=_dur(o.delete_mark),
        fill_history=bool(o.fill_history or 0),
        fill_history_async=o.fill_history_async,
        event_time=bool(1 if o.event_time is None else o.event_time),
    )
    notify = None
    if s.notify is not None:
        notify = NotifySpec(
            urls=list(s.notify.urls),
            events=[e.upper() for e in s.notify.events],
            history=bool(s.notify.history),
            on_failure=(s.notify.on_failure or "PAUSE").upper(),
            where=expr_sql(s.notify.where) if s.notify.where is not None else None,
        )
    output = (
        None
        if s.into is None
        else OutputSpec(
            db=into_db,
            table=s.into.name,
            subtable=expr_sql(s.subtable) if s.subtable is not None else None,
            columns=[{"name": c.name, "composite_key": c.composite_key} for c in s.columns]
            if s.columns
            else None,
            tags=[
                OutputTag(
                    t.name,
                    t.type.sql if t.type else "",
                    expr_sql(t.expr) if t.expr is not None else None,
                    t.comment,
                )
                for t in (s.tags or [])
            ],
        )
    )
    return StreamSpec(
        name=s.name,
        db=s.db,
        syntax=LEGACY,
        source=SourceSpec(src_db, t.name),
        trigger=trigger_json(q.window) if q.window is not None else {"type": "none"},
        partition_by=[{"sql": p.text, "alias": p.alias} for p in q.partition_by],
        filter=expr_sql(where.this) if where is not None else None,
        query=("SELECT " + q.text) if q.implicit_select else q.text,
        options=options,
        output=output,
        notify=notify,
        sql=sql,
    )


def validate_options(spec: StreamSpec, sql: str, spans: dict[str, ast.Span] | None = None) -> None:
    """The trigger modes' constraints (seed 000 "Stream Computing Trigger Modes"): MAX_DELAY at
    least 5 s; FORCE_WINDOW_CLOSE only for INTERVAL without SLIDING, with FILL_HISTORY 0,
    IGNORE EXPIRED 1 and IGNORE UPDATE 1; CONTINUOUS_WINDOW_CLOSE only for INTERVAL."""
    o = spec.options
    spans = spans or {}

    def err(message: str, key: str | None = None, code: int = Code.INVALID_OPERATION) -> SqlError:
        sp = spans.get(key or "") or spans.get("trigger")
        return SqlError(message, sql=sql, offset=sp.start if sp else None, code=code)

    if o.trigger not in TRIGGERS:
        raise err(f"unknown TRIGGER {o.trigger}: use one of {', '.join(TRIGGERS)}", "trigger")
    kind = spec.trigger.get("type")
    legacy_interval = kind == "interval"
    if o.trigger == "MAX_DELAY":
        if o.max_delay is None:
            raise err("TRIGGER MAX_DELAY needs a time, e.g. MAX_DELAY 10s", "max_delay")
        d = Duration.parse(o.max_delay)
        if d.is_calendar or d.ns < MAX_DELAY_MIN.ns:
            raise err(f"MAX_DELAY must be at least {MAX_DELAY_MIN} (seed 000), got {d}", "max_delay")
    if o.trigger == "FORCE_WINDOW_CLOSE":
        sliding = spec.trigger.get("sliding")
        if not legacy_interval or (sliding is not None and sliding != spec.trigger.get("interval")):
            raise err("TRIGGER FORCE_WINDOW_CLOSE supports only INTERVAL windows without SLIDING (seed 000)")
        if o.fill_history:
            raise err("TRIGGER FORCE_WINDOW_CLOSE needs FILL_HISTORY 0 (seed 000)", "fill_history")
        if not o.ignore_expired:
            raise err("TRIGGER FORCE_WINDOW_CLOSE needs IGNORE EXPIRED 1 (seed 000)", "ignore_expired")
        if not o.ignore_update:
            raise err("TRIGGER FORCE_WINDOW_CLOSE needs IGNORE UPDATE 1 (seed 000)", "ignore_update")
    if o.trigger == "CONTINUOUS_WINDOW_CLOSE":
        if not legacy_interval:
            raise err("TRIGGER CONTINUOUS_WINDOW_CLOSE supports only INTERVAL windows (seed 000)")
        if o.recalculate is not None:
            r = Duration.parse(o.recalculate)
            if r.is_calendar or r.value <= 0:
                raise err("RECALCULATE must be a positive fixed duration", "recalculate")
    elif o.recalculate is not None:
        raise err("RECALCULATE belongs to TRIGGER CONTINUOUS_WINDOW_CLOSE", "recalculate")
    if kind in (None, "none"):
        _validate_no_window(spec, err)
    for name in ("watermark", "delete_mark"):
        v = getattr(o, name)
        if v is not None and (Duration.parse(v).is_calendar or Duration.parse(v).value < 0):
            raise err(f"{name.upper()} must be a non-negative fixed duration", name)
    if spec.notify is not None:
        for url in spec.notify.urls:
            if not (url.startswith("ws://") or url.startswith("wss://")):
                raise SqlError(
                    f"notification URL {url!r} must start with ws:// or wss:// (seed 000: only "
                    "the WebSocket protocol is supported)",
                    sql=sql,
                    code=Code.INVALID_OPERATION,
                )
        for ev in spec.notify.events:
            if ev not in ("WINDOW_OPEN", "WINDOW_CLOSE"):
                raise SqlError(
                    f"unknown notification event {ev}: use WINDOW_OPEN or WINDOW_CLOSE",
                    sql=sql,
                    code=Code.INVALID_OPERATION,
                )
        if spec.notify.on_failure not in ("DROP", "PAUSE"):
            raise SqlError("ON_FAILURE must be DROP or PAUSE", sql=sql, code=Code.INVALID_OPERATION)


def _validate_no_window(spec: StreamSpec, err: Any) -> None:
    """A stream without a window clause (seed 001 ``[window_clause]``, seed 004 ``power_stream``)
    writes every row as it arrives: "For non-window computations, the trigger of stream computing
    is real-time" (seed 000 "Trigger Modes of Stream Computing"). Options about windows have
    nothing to act on and are refused by name: a TRIGGER other than AT_ONCE, WATERMARK, DELETE_MARK,
    EVENT_TIME 0, NOTIFY (its events are window events, seed 000 "Event Notifications")."""
    o = spec.options
    if o.trigger != "AT_ONCE":
        raise err(
            f"TRIGGER {o.trigger} needs a window clause: a stream without a window is triggered by every "
            'write, i.e. AT_ONCE (seed 000: "For non-window computations, the trigger of stream '
            'computing is real-time")',
            "trigger",
            Code.INVALID_STREAM_QUERY,
        )
    for name, written in (("watermark", o.watermark), ("delete_mark", o.delete_mark)):
        if written is not None:
            raise err(
                f"{name.upper()} needs a window clause: it decides when windows close (seed 000 "
                '"Window Closure", "Cleaning up intermediate states"); a stream without a window has none',
                name,
                Code.INVALID_STREAM_QUERY,
            )
    if not o.event_time:
        raise err("EVENT_TIME 0 needs a window clause: it windows rows by arrival time", "event_time")
    if spec.notify is not None:
        raise err(
            "NOTIFY needs a window clause: its events are window events (WINDOW_OPEN, WINDOW_CLOSE; "
            'seed 000 "Stream Computing Event Notifications")',
            "notify",
            Code.INVALID_STREAM_QUERY,
        )


def compile_legacy(
    s: ast.CreateStreamLegacy, spec: StreamSpec, sql: str, lake: Any, tz: str
) -> CompiledStream:
    """Compile a legacy stream's spec with its errors positioned in ``sql`` (the statement's
    text), including those found while compiling the subquery."""
    try:
        return compile_stream(spec, lake, tz)
    except SqlError as e:
        if e.sql == spec.query and s.query.span is not None:  # positioned in the subquery text
            prefix = len("SELECT ") if s.query.implicit_select else 0  # seed 004: SELECT left out
            if e.offset is not None and e.offset < prefix:
                raise SqlError(e.message, sql=sql, offset=s.query.span.start, code=e.code) from None
            raise e.shifted(sql, s.query.span.start - prefix) from None
        raise
