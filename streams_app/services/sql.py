"""Running and validating TDengine SQL for REST, the shell and the web UI (one code path)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from sqlglot import exp

from spark_workers.errors import SqlError, TdError
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_located
from spark_workers.statements.executor import Executor, error_answer
from spark_workers.statements.schemaless import write_lines
from spark_workers.streams.create import check_create_stream
from streams_app import selectors
from streams_app.request_id import internal_error_answer
from streams_app.services.access import DjangoUserDirectory, notify_url_unredact, principal_for
from streams_app.services.lake import lake_get, sql_limits_configure
from streams_app.services.registry import DjangoStreamRegistry


def executor_for(*, db: str | None = None, user: object | None = None) -> Executor:
    """An executor running every statement with ``user``'s privileges (TDengine's users and
    grants, ``services/access.principal_for``); its streams are registered in the metadata DB and
    owned by ``user``; CREATE/ALTER/DROP USER and GRANT/REVOKE change Django's users; NOTIFY URLs
    copied redacted from a page get their secrets back where ``user`` may use them
    (``access.notify_url_unredact``).

    Raises:
        PermissionError: ``user`` is None, anonymous or inactive.
    """
    sql_limits_configure()
    return Executor(
        lake_get(),
        DjangoStreamRegistry(user=user),
        tz=settings.TDWEB_TIMEZONE,
        default_db=db or None,
        principal=principal_for(user),
        users=DjangoUserDirectory(),
        notify_secrets=lambda url: notify_url_unredact(user=user, url=url),
    )


def sql_execute(*, sql: str, db: str | None = None, user: Any = None) -> ResultSet:
    """Execute every statement of ``sql``; returns the last result. Raises ``TdError``."""
    return executor_for(db=db, user=user).execute_one(sql)


def sql_execute_rest(*, sql: str, db: str | None = None, user: Any = None) -> dict[str, Any]:
    """TDengine REST answer for ``sql``: ``{code: 0, column_meta, data, rows}`` or ``{code, desc}``.

    Never raises: a ``TdError`` is answered with its code and message; anything else (a bug,
    ``RecursionError``, ``MemoryError``) is logged with its traceback under the request id and
    answered ``{"code": 312, "desc": "internal error (request id <id>)"}``, so no exception text,
    path or type reaches the client.
    """
    try:
        return sql_execute(sql=sql, db=db, user=user).to_rest(settings.TDWEB_TIMEZONE)
    except TdError as e:
        return error_answer(e)
    except Exception as e:  # RecursionError and MemoryError are Exceptions too
        return internal_error_answer(e, where="sql_execute_rest")


def influx_write(*, body: str, db: str, precision: str, user: Any) -> int:
    """Write an InfluxDB line-protocol body into ``db`` with ``user``'s privileges (TDengine's
    schemaless writing, ``spark_workers.statements.schemaless``); returns the rows written.

    Raises:
        TdError: the schemaless errors (SML_*, TSC_INVALID_VALUE), DB_NOT_EXIST,
            PERMISSION_DENIED; nothing is written then.
    """
    return write_lines(executor_for(db=db, user=user), db, body, precision).affected_rows or 0


def error_position(e: Exception) -> dict[str, int] | None:
    """``{offset, line, column}`` of a positioned SQL error."""
    if isinstance(e, SqlError) and e.position is not None:
        p = e.position
        return {"offset": p.offset, "line": p.line, "column": p.column}
    return None


def sql_validate(*, sql: str, db: str | None = None, user: Any) -> dict[str, Any]:
    """Check a statement without changing anything: parse it and, for CREATE STREAM of either
    syntax, run every check CREATE STREAM makes with ``user``'s privileges (the one validator,
    ``spark_workers.streams.create.check_create_stream``). Returns ``{ok: true, statement}`` or
    ``{ok: false, code, desc, position}``."""
    try:
        stmts = parse_located(sql)
        if not stmts:
            raise SqlError("empty statement", sql=sql, offset=0)
        last, start, text = stmts[-1]
        if isinstance(last, ast.CreateStreamLegacy | ast.CreateStream337):
            try:
                check_create_stream(executor_for(db=db, user=user), last, text)
            except SqlError as e:
                raise e.shifted(sql, start) from None
        return {"ok": True, "statement": statement_label(last, text)}
    except TdError as e:
        return {"ok": False, "code": e.code, "desc": e.desc, "position": error_position(e)}


_LEADING = re.compile(
    r"\s*([A-Za-z]+(?:\s+(?:STREAM|STABLE|TABLE|DATABASE|USER|TOPIC|VIEW|INDEX|TSMA|INTO|FROM))?)", re.I
)


def statement_label(stmt: ast.Statement, text: str) -> str:
    """What the SQL console calls a valid statement: ``CREATE STREAM db.name (TDengine 3.3.7
    syntax)`` / ``(legacy syntax)`` for the two stream syntaxes (seeds 000 and 002), else its
    leading keywords as written, upper-cased (``SELECT``, ``INSERT INTO``, ``CREATE TABLE``)."""
    if isinstance(stmt, ast.CreateStreamLegacy | ast.CreateStream337):
        name = f"{stmt.db}.{stmt.name}" if stmt.db else stmt.name
        syntax = "TDengine 3.3.7 syntax" if isinstance(stmt, ast.CreateStream337) else "legacy syntax"
        return f"CREATE STREAM {name} ({syntax})"
    m = _LEADING.match(text)
    return " ".join(m.group(1).upper().split()) if m else "statement"


def table_rows(
    *, user: Any, db: str, name: str, start: str | None = None, end: str | None = None, limit: int = 200
) -> ResultSet:
    """The latest ``limit`` rows of a table, optionally with ``start <= ts <= end`` (timestamp
    literals as TDengine reads them), oldest first, read with ``user``'s privileges.

    The query is built as a tree (``SELECT * FROM (SELECT * FROM db.t WHERE ts >= 'start' AND ts
    <= 'end' ORDER BY ts DESC LIMIT n) ORDER BY ts``) with the request's values as literal nodes,
    never pasted into SQL text.

    Raises:
        TdError: missing or unreadable table, a value that is not a timestamp.
    """
    t = selectors.table_detail(user=user, db=db, name=name)
    ts = exp.column(t["columns"][0]["name"], quoted=True)
    table = exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(db, quoted=True))
    inner = exp.select(exp.Star()).from_(table)
    conds = [
        op(this=ts.copy(), expression=exp.Literal.string(value))
        for value, op in ((start, exp.GTE), (end, exp.LTE))
        if value
    ]
    if conds:
        inner = inner.where(exp.and_(*conds))
    inner = inner.order_by(exp.Ordered(this=ts.copy(), desc=True)).limit(int(limit))
    outer = exp.select(exp.Star()).from_(inner.subquery()).order_by(exp.Ordered(this=ts.copy()))
    ex = executor_for(db=db, user=user)
    return ex.run_statement(ast.Select(query=ast.SelectQuery(select=outer)), outer.sql())
