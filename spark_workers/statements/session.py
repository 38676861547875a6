"""The state of one client's statements: who runs them, where streams and users live.

:class:`Session` is a :class:`~spark_workers.query.context.QueryContext` (the lake, the time zone,
the default database, the principal) plus the stream registry, the user directory and the
NOTIFY-secret resolver; the statement modules (``ddl``, ``writes``, ``show``, ``stream_commands``,
``users``) are functions of a session, and ``executor.Executor`` dispatches to them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlglot import exp

from spark_workers import access
from spark_workers.access import Principal, UserDirectory
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake.catalog import Database
from spark_workers.lake.store import Lake
from spark_workers.query.context import QueryContext
from spark_workers.query.system_functions import fold_expression
from spark_workers.sql import ast
from spark_workers.sql.values import Now, coerce, constant
from spark_workers.statements.sysinfo import system_source
from spark_workers.streams.registry import StreamInfo, StreamRegistry
from spark_workers.tdtypes import TdType


class Session(QueryContext):
    """One client's statement state.

    Args:
        lake: the lake.
        registry: where streams are created, listed and controlled.
        tz: ``TDWEB_TIMEZONE``: literals without a zone are read in it.
        default_db: database used for unqualified names (REST ``/rest/sql/{db}``, ``USE``).
        principal: the user every statement runs as. The default, the superuser ``root``, is
            for tools and tests that hold no user; every front door (REST, shell, web) passes the
            signed-in user's principal.
        users: where CREATE/ALTER/DROP USER and GRANT/REVOKE go; None refuses those statements.
        notify_secrets: gives back the real URL of a NOTIFY URL whose secrets were shown redacted
            (``access.redact_secrets``: ``...?key=******``) when the client may use it, else None;
            without it such URLs are refused.
    """

    def __init__(
        self,
        lake: Lake,
        registry: StreamRegistry,
        *,
        tz: str = "UTC",
        default_db: str | None = None,
        principal: Principal = access.ROOT,
        users: UserDirectory | None = None,
        notify_secrets: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(lake, tz=tz, default_db=default_db, principal=principal)
        self.registry = registry
        self.users = users
        self.notify_secrets = notify_secrets

    def db_name(self, name: str | None) -> str:
        """The catalog's name of database ``name`` (the default database when None).

        Raises:
            CatalogError: DB_NOT_SPECIFIED / DB_NOT_EXIST.
        """
        return self.catalog.require_database(name or self.default_db).name

    def visible_database(self, name: str | None) -> Database:
        """The database, if the client holds any privilege in it (else PERMISSION_DENIED)."""
        db = self.catalog.require_database(name or self.default_db)
        if not self.principal.may_see(db):
            raise access.denied(f"database {db.name} for user {self.principal.name}")
        return db

    def value(
        self, node: exp.Expr, t: TdType, precision: str, now: Now, what: str, *, sql: str, offset: int | None
    ) -> Any:
        """A constant expression converted for a column or tag of type ``t`` (``what`` names it in
        errors, positioned at ``offset``); system functions (``DATABASE()``...) are this session's
        constants, as TDengine folds them."""
        try:
            node, _ = fold_expression(node, database=self.default_db, user=self.principal.name, sql=sql)
            return coerce(constant(node, precision, self.tz, now), t, precision, self.tz, what)
        except SqlError as e:
            raise SqlError(e.message, sql=sql, offset=offset, code=e.code) from None

    def own_stream(self, name: str, db: str | None, action: str) -> StreamInfo:
        """The stream ``[db.]name`` if the client owns it or administers streams
        (``Principal.controls_stream``).

        Raises:
            CatalogError: STREAM_NOT_EXIST; PERMISSION_DENIED for another user's stream.
        """
        info = self.registry.get(name, db)
        if info is None:
            raise CatalogError(f"stream {name} does not exist", code=Code.STREAM_NOT_EXIST)
        if not self.principal.controls_stream(info.owner):
            raise access.denied(f"{action} {info.name}: only its owner or an administrator may")
        return info

    def system_source(self, name: ast.TableName, sql: str) -> tuple[Any, pa.Table]:
        """``information_schema.<name>`` as this client may see it (``statements/sysinfo.py``)."""
        return system_source(self, name, sql)
