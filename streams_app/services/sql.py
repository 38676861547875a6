"""Running and validating TDengine SQL for REST, the shell and the web UI (one code path)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from spark_workers.errors import SqlError, TdError
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_located
from spark_workers.statements.executor import error_answer
from spark_workers.streams.create import check_create_stream
from streams_app.request_id import internal_error_answer
from streams_app.services.lake import executor_for


def sql_execute(*, sql: str, db: str | None = None, user: Any = None) -> ResultSet:
    """Execute every statement of ``sql``; returns the last result. Raises ``TdError``."""
    return executor_for(db=db, user=user).execute_one(sql)


def sql_execute_rest(*, sql: str, db: str | None = None, user: Any = None) -> dict[str, Any]:
    """TDengine REST answer for ``sql``: ``{code: 0, column_meta, data, rows}`` or ``{code, desc}``.

    Never raises: a ``TdError`` is answered with its code and message; anything else (a bug,
    ``RecursionError``, ``MemoryError``) is logged with its traceback under the request id and
    answered ``{"code": 257, "desc": "internal error (request id <id>)"}``, so no exception text,
    path or type reaches the client.
    """
    try:
        return sql_execute(sql=sql, db=db, user=user).to_rest(settings.TDWEB_TIMEZONE)
    except TdError as e:
        return error_answer(e)
    except Exception as e:  # RecursionError and MemoryError are Exceptions too
        return internal_error_answer(e, where="sql_execute_rest")


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
        return {"ok": True, "statement": type(last).__name__}
    except TdError as e:
        return {"ok": False, "code": e.code, "desc": e.desc, "position": error_position(e)}
