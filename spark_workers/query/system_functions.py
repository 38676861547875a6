"""TDengine's system functions: ``DATABASE()``, ``CLIENT_VERSION()``, ``SERVER_VERSION()``,
``SERVER_STATUS()``, ``CURRENT_USER()`` and ``USER()`` (SQL manual, "Functions", "System
Information Functions").

TDengine replaces them by constants when it translates a statement (``parTranslater.c``: the
current database, the versions, ``user@host``), before anything is computed; so does
:func:`fold_system_functions`, before a query reaches the front door's allow-list, so they work
wherever a constant does (``SELECT database();``, ``WHERE db_name = database()``, in subqueries)
and never reach DuckDB, whose functions of the same names answer about DuckDB. Stream
computations have no session: there they stay refused (:mod:`spark_workers.sql.sandbox`).
"""

from __future__ import annotations

import dataclasses
import socket

from sqlglot import exp

from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast
from spark_workers.sql.ast import offset_of
from spark_workers.sql.sandbox import SESSION_FUNCTIONS

SERVER_VERSION = "3.3.7.0"
"""What ``SERVER_VERSION()`` and ``CLIENT_VERSION()`` answer: the TDengine release whose SQL and
REST protocol tdweb speaks (the stream syntax of seed 002 is 3.3.7's). Over REST the client that
parses the statement is the server itself, as with taosAdapter, so the two are the same."""

SYSTEM_FUNCTIONS = SESSION_FUNCTIONS
"""Lower-case names of the system functions (all take no argument)."""


def _system_name(node: exp.Expr, sql: str | None) -> str | None:
    """The system function a call node is (``sqlglot`` reads ``DATABASE()`` as ``CurrentSchema``
    and ``CURRENT_USER()`` as ``CurrentUser``), or None.

    Raises:
        SqlError: INVALID_FUNCTION, positioned at the call, when it is given arguments.
    """
    name: str | None = None
    args: list[exp.Expr] = []
    if isinstance(node, exp.CurrentSchema):
        name, this = "database", node.args.get("this")
        args = [this] if isinstance(this, exp.Expr) else []
    elif isinstance(node, exp.CurrentUser):
        name, this = "current_user", node.args.get("this")
        args = [this] if isinstance(this, exp.Expr) else []
    elif isinstance(node, exp.Anonymous) and str(node.name).lower() in SYSTEM_FUNCTIONS:
        name, args = str(node.name).lower(), list(node.expressions)
    if name is not None and args:
        raise SqlError(
            f"function {name} expects no arguments, got {len(args)}",
            sql=sql,
            offset=offset_of(node),
            code=Code.INVALID_FUNCTION,
        )
    return name


def system_values(*, database: str | None, user: str) -> dict[str, str | int | None]:
    """The value of each system function for a session whose current database is ``database``
    (None: no ``USE`` and no database in the REST URL) and whose user is ``user``.

    ``CURRENT_USER()`` / ``USER()`` are ``user@host`` with this server's host name (TDengine writes
    the name of the host that parses the statement); ``SERVER_STATUS()`` is 1 (the server answers).
    """
    user_at = f"{user}@{socket.gethostname()}"
    return {
        "database": database,
        "client_version": SERVER_VERSION,
        "server_version": SERVER_VERSION,
        "server_status": 1,
        "current_user": user_at,
        "user": user_at,
    }


def fold_expression(
    expr: exp.Expr, *, database: str | None, user: str, sql: str | None = None
) -> tuple[exp.Expr, bool]:
    """``expr`` (a copy) with every system function call replaced by its constant
    (:func:`system_values`): a string literal, the integer 1, or ``CAST(NULL AS VARCHAR(64))`` for
    ``DATABASE()`` without a current database; and whether it called any. Used for SELECT trees
    and for the values of INSERT ... VALUES and DELETE bounds, where TDengine folds constants.

    Raises:
        SqlError: INVALID_FUNCTION for a system function given arguments (positioned in ``sql``).
    """
    values = system_values(database=database, user=user)
    found = False

    def visit(node: exp.Expr) -> exp.Expr:
        nonlocal found
        name = _system_name(node, sql)
        if name is None:
            return node
        found = True
        v = values[name]
        if v is None:
            return exp.Cast(this=exp.Null(), to=exp.DataType.build("VARCHAR(64)"))
        return exp.Literal.number(v) if isinstance(v, int) else exp.Literal.string(v)

    return expr.transform(visit), found


def fold_system_functions(
    q: ast.SelectQuery, *, database: str | None, user: str, sql: str | None = None
) -> ast.SelectQuery:
    """``q`` with every system function call of its SELECT tree (subqueries included) replaced
    by its constant (:func:`fold_expression`). Output column names are unchanged (they are the
    items as written). ``q`` itself is not modified; it is returned as is when it calls none.

    Raises:
        SqlError: INVALID_FUNCTION for a system function given arguments (positioned in ``sql``).
    """
    select, found = fold_expression(q.select, database=database, user=user, sql=sql)
    return dataclasses.replace(q, select=select) if found else q
