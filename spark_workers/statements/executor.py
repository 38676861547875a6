"""Execute TDengine SQL statements against the lake: the one code path behind REST, the shell and
the designer.

Every statement is validated completely before anything is changed, so a bad statement changes
nothing (a multi-table INSERT is one Delta commit per storage table, after all rows are checked).
Each statement runs with the client's privileges (``spark_workers.access``); the handlers live in
the modules of their statement family (``ddl``, ``writes``, ``show``, ``stream_commands``,
``users``), the client's state in ``session.Session``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spark_workers.errors import Code, LakeError, SqlError, TdError
from spark_workers.query.results import ResultSet
from spark_workers.query.select import run_select
from spark_workers.sql import ast
from spark_workers.sql.fast_insert import parse_plain_insert
from spark_workers.sql.parser import parse_located
from spark_workers.statements import alter, ddl, show, stream_commands, users, vtables, writes
from spark_workers.statements.session import Session

Handler = Callable[[Session, Any, str], ResultSet]

HANDLERS: dict[type, Handler] = {
    ast.CreateDatabase: ddl.create_database,
    ast.DropDatabase: ddl.drop_database,
    ast.UseDatabase: ddl.use_database,
    ast.CreateTable: ddl.create_table,
    ast.CreateSubtables: ddl.create_subtables,
    ast.CreateVTable: vtables.create_vtable,
    ast.DropTable: ddl.drop_table,
    ast.AlterDatabase: alter.alter_database,
    ast.AlterTable: alter.alter_table,
    ast.Insert: writes.insert,
    ast.Delete: writes.delete,
    ast.Show: show.show,
    ast.Describe: show.describe,
    ast.Select: lambda ex, s, sql: run_select(ex, s.query, sql),
    ast.CreateStreamLegacy: stream_commands.create_stream_legacy,
    ast.CreateStream337: stream_commands.create_stream_337,
    ast.StreamCommand: stream_commands.stream_command,
    ast.RecalculateStream: stream_commands.recalculate_stream,
    ast.CreateUser: users.create_user,
    ast.AlterUser: users.alter_user,
    ast.DropUser: users.drop_user,
    ast.GrantStatement: users.grant,
}


class Executor(Session):
    """Runs statements for one client (see :class:`~spark_workers.statements.session.Session`
    for its arguments)."""

    def execute(self, sql: str) -> list[ResultSet]:
        """Execute every statement of ``sql`` in order; stops at the first error (raised)."""
        plain = parse_plain_insert(sql)
        if plain is not None:
            try:
                return [self.run_statement(plain, sql)]
            except LakeError:
                raise
            except TdError:
                pass  # the full parser's answer is the positioned one (fast_insert docstring)
        results = []
        for stmt, start, text in parse_located(sql):
            try:
                results.append(self.run_statement(stmt, text))
            except SqlError as e:
                raise e.shifted(sql, start) from None
        return results

    def execute_one(self, sql: str) -> ResultSet:
        """Execute a text holding one statement (REST); the last result if there are several."""
        results = self.execute(sql)
        if not results:
            raise SqlError("empty statement", sql=sql, offset=0, code=Code.INCOMPLETE_SQL)
        return results[-1]

    def run_statement(self, stmt: ast.Statement, sql: str) -> ResultSet:
        """Execute one parsed statement of the text ``sql`` (errors are anchored in ``sql``)."""
        handler = HANDLERS.get(type(stmt))
        if handler is None:
            raise SqlError(f"{type(stmt).__name__} is not supported", sql=sql, code=Code.NOT_SUPPORTED)
        try:
            return handler(self, stmt, sql)
        except SqlError as e:
            raise e.at(sql, None)


def error_answer(e: Exception) -> dict[str, Any]:
    """TDengine REST error JSON of a ``TdError``; any other exception is an internal error whose
    text is not shown (callers log it)."""
    if isinstance(e, TdError):
        return {"code": e.code, "desc": e.desc}
    return {"code": Code.INTERNAL, "desc": "internal error"}
