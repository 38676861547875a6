"""Creating and recalculating streams: both run a statement with the user's privileges through
the executor (``services/sql.py``); starting, pausing and dropping them is ``services/stream_control.py``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlglot import exp

from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse
from spark_workers.sql.render import render
from streams_app.models import Stream
from streams_app.services.registry import DjangoStreamRegistry
from streams_app.services.sql import executor_for


class StreamExists(CatalogError):
    """CREATE STREAM IF NOT EXISTS met a live stream of that name: nothing was created."""

    code = Code.STREAM_ALREADY_EXIST


def stream_create(*, user: Any, sql: str, db: str | None = None) -> Stream:
    """Run one CREATE STREAM statement (either syntax) as ``user``, who owns the new stream;
    ``db`` is the default database of its unqualified names. Returns the new ``Stream`` row
    (as committed: it is read again), the one the executor's registry created.

    Raises:
        SqlError: ``sql`` is not exactly one CREATE STREAM statement (positioned at its start).
        StreamExists: IF NOT EXISTS met a live stream of that name (nothing is created).
        TdError: the statement fails (nothing is created).
    """
    stmts = parse(sql)
    if len(stmts) != 1 or not isinstance(stmts[0], ast.CreateStreamLegacy | ast.CreateStream337):
        raise SqlError("expected exactly one CREATE STREAM statement", sql=sql, offset=0)
    ex = executor_for(db=db, user=user)
    ex.execute_one(sql)
    created = ex.registry.created if isinstance(ex.registry, DjangoStreamRegistry) else []
    if not created:
        raise StreamExists(f"stream {stmts[0].name} already exists")
    stream = created[-1]
    stream.refresh_from_db()
    return stream


def _time_literal(t: dt.datetime) -> Any:
    return exp.Literal.string(t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def stream_recalculate(
    *, stream: Stream, user: Any, start: dt.datetime, end: dt.datetime | None = None
) -> int:
    """RECALCULATE STREAM ``stream`` FROM ``start`` [TO ``end``] as ``user`` (seed 002): rewrite the
    stream's closed windows in the range from the lake's current rows; waits for it. Without
    ``end`` the range ends at the stream's progress. Times are aware datetimes.

    The statement is built as a tree with the times as literal nodes (UTC ISO 8601, microseconds)
    and run by the executor; its text is rendered from the tree (for error messages only).

    Returns:
        The number of windows rewritten.

    Raises:
        TdError: the stream is not ``user``'s, or the recalculation fails.
    """
    stmt = ast.RecalculateStream(
        name=stream.name,
        db=stream.db or None,
        start=_time_literal(start),
        end=_time_literal(end) if end is not None else None,
    )
    res = executor_for(user=user).run_statement(stmt, render(stmt))
    return int(res.affected_rows or 0)
