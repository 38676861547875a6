"""Stream statements: CREATE STREAM of both syntaxes (``spark_workers.streams.create``), PAUSE /
RESUME / START / STOP / DROP STREAM, RECALCULATE STREAM (``runtime/recalc.py``): for the stream's
owner, superusers and operators.
"""

from __future__ import annotations

import json

from sqlglot import exp

from spark_workers import access
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Table
from spark_workers.query.results import ResultSet
from spark_workers.runtime.recalc import recalculate
from spark_workers.runtime.sink import output_subtable_name
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.sql.values import Now
from spark_workers.statements.session import Session
from spark_workers.streams import create
from spark_workers.streams.spec import V337
from spark_workers.streams.stored import stream_compiled
from spark_workers.tdtypes import TIMESTAMP


def create_stream_legacy(ex: Session, s: ast.CreateStreamLegacy, sql: str) -> ResultSet:
    """Legacy CREATE STREAM (seed 000), with the client as the stream's owner."""
    stmt, sql = unredacted(ex, s, sql)
    assert isinstance(stmt, ast.CreateStreamLegacy)
    create.create_stream(ex, stmt, sql)
    return ResultSet.affected(0)


def create_stream_337(ex: Session, s: ast.CreateStream337, sql: str) -> ResultSet:
    """TDengine 3.3.7 CREATE STREAM (seed 002), with the client as the stream's owner."""
    stmt, sql = unredacted(ex, s, sql)
    assert isinstance(stmt, ast.CreateStream337)
    create.create_stream(ex, stmt, sql)
    return ResultSet.affected(0)


def unredacted(
    ex: Session, s: ast.CreateStreamLegacy | ast.CreateStream337, sql: str
) -> tuple[ast.Statement, str]:
    """The statement with every NOTIFY URL shown redacted (copied from a stream page or
    ``SHOW CREATE STREAM``) replaced by the real URL the client may use.

    Raises:
        SqlError: INVALID_OPERATION naming the URL when its secret cannot be restored.
    """
    urls = [u for u in (s.notify.urls if s.notify else []) if access.REDACTED in u]
    if not urls:
        return s, sql
    for url in urls:
        real = ex.notify_secrets(url) if ex.notify_secrets is not None else None
        if real is None:
            raise SqlError(
                f"NOTIFY URL {url} holds a redacted value ({access.REDACTED}): write the real "
                "value (an inbox's key is on its page)",
                sql=sql,
                offset=sql.find(url) if url in sql else None,
                code=Code.INVALID_OPERATION,
            )
        sql = sql.replace(url, real)
    return parse_one(sql), sql


def stream_command(ex: Session, s: ast.StreamCommand, sql: str) -> ResultSet:
    if s.if_exists and ex.registry.get(s.name, s.db) is None:
        return ResultSet.affected(0)
    info = ex.own_stream(s.name, s.db, f"{s.action} stream")
    if s.action == "drop":
        ex.registry.drop(info.name, info.db)
    else:
        ex.registry.command(info.name, info.db, s.action, ignore_untreated=s.ignore_untreated)
    return ResultSet.affected(0)


def recalculate_stream(ex: Session, s: ast.RecalculateStream, sql: str) -> ResultSet:
    """RECALCULATE STREAM (``runtime/recalc.py``); answers the number of windows rewritten.

    Raises:
        SqlError: NOT_SUPPORTED for a 3.3.7 PERIOD stream ("Manual recalculation is not supported
            for scheduled triggers (PERIOD)", seed 002, Manual Recalculation). A 3.3.7 COUNT_WINDOW
            stream's request without an end time is ignored (answers 0), as the seed says.
    """
    info = ex.own_stream(s.name, s.db, "recalculate stream")
    if info.spec.syntax == V337 and info.spec.trigger.get("type") == "period":
        raise SqlError(
            f"stream {info.name} has a PERIOD trigger: manual recalculation is not supported for "
            "scheduled triggers (seed 002, Manual Recalculation)",
            sql=sql,
            offset=0,
            code=Code.NOT_SUPPORTED,
        )
    if info.spec.syntax == V337 and info.spec.trigger.get("type") == "count" and s.end is None:
        # "For count window triggers, both the start time and end time must be specified ... if no
        # end time is specified, the recalculation request will be ignored" (seed 002)
        return ResultSet.affected(0)
    compiled = stream_compiled(info.spec, info.compiled, ex.lake, ex.tz)
    precision = compiled.source.db.precision
    now = Now()
    bounds = [
        None if e is None else ex.value(e, TIMESTAMP, precision, now, what, sql=sql, offset=None)
        for e, what in ((s.start, "the start time"), (s.end, "the end time"))
    ]
    assert bounds[0] is not None
    try:
        done = recalculate(compiled, ex.lake, stream_key=info.name, tz=ex.tz, start=bounds[0], end=bounds[1])
    except SqlError as e:
        raise SqlError(e.message, sql=sql, offset=0, code=e.code) from None
    return ResultSet.affected(done.windows)


def drop_output_subtables(ex: Session, db: str, sub: Table) -> list[str]:
    """DELETE_OUTPUT_TABLE (seed 002): the subtable ``sub`` of supertable ``sub.storage`` in ``db``
    is being dropped; every 3.3.7 stream with the option over that supertable (grouped by tbname:
    checked at CREATE STREAM) drops the output subtable of the group the subtable made (its
    PARTITION BY values: the subtable's name and tags), rows and all. Returns the dropped output
    subtables as ``db.name``."""
    dropped: list[str] = []
    for info in ex.registry.list():
        spec = info.spec
        if spec.syntax != V337 or not spec.options.delete_output_table or spec.source is None:
            continue
        if spec.output is None or (spec.source.db or "").lower() != db.lower():
            continue
        if spec.source.table.lower() != sub.storage.lower():
            continue
        c = stream_compiled(spec, info.compiled, ex.lake, ex.tz)
        values: list[object] = []
        for g in c.plan.groups:
            name = g.expr.name.lower() if isinstance(g.expr, exp.Column) else ""
            v = sub.name if name == "tbname" else sub.tag_values.get(name)
            if isinstance(v, int) and g.type is not None and g.type.name == "TIMESTAMP":
                v = v * NS_PER_PRECISION[c.precision] // 1000  # group keys hold microseconds
            values.append(v)
        gkey = json.dumps(values, separators=(",", ":"), ensure_ascii=False, default=str)
        out_name = output_subtable_name(c, gkey, ex.tz)
        out = ex.catalog.table(c.out_db, out_name)
        if out is None or out.kind != "sub" or out.storage.lower() != c.out_table.lower():
            continue
        out_db = ex.catalog.require_database(c.out_db)
        stable = ex.catalog.require_table(c.out_db, c.out_table)
        ex.lake.delete(out_db, stable, ts_min=None, ts_max=None, tbnames=[out.name])
        ex.catalog.drop_table(c.out_db, out.name)
        dropped.append(f"{c.out_db}.{out.name}")
    return dropped
