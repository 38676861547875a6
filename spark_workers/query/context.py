"""What a query runs with: the lake, the time zone, the default database, the user and the
system tables (``information_schema``).

The statement front door's ``Executor`` is a :class:`QueryContext` that also knows the stream
registry and the users, and serves ``information_schema`` from them; the per-event computations
of streams (``query/compute.py``) run queries with a bare context (their reads were checked
against the stream owner's privileges when the stream was created and started).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_workers import access
from spark_workers.access import Principal
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Catalog, Database, Table
from spark_workers.lake.names import SYSTEM_DATABASES, SYSTEM_DB
from spark_workers.lake.store import Lake
from spark_workers.lake.virtual import storages
from spark_workers.sql import ast

if TYPE_CHECKING:
    import pyarrow as pa

    from spark_workers.query.planner import Source


def is_system(name: ast.TableName, default_db: str | None) -> bool:
    """Does ``[db.]name`` refer to a system database (``information_schema``,
    ``performance_schema``)?"""
    return (name.db or default_db or "").lower() in SYSTEM_DATABASES


class QueryContext:
    """The context of one client's queries.

    Args:
        lake: the lake (its catalog resolves names).
        tz: ``TDWEB_TIMEZONE``: literals without a zone are read in it.
        default_db: database of unqualified names (REST ``/rest/sql/{db}``, ``USE``).
        principal: the user the queries run as (``spark_workers.access``); the default superuser
            is for tools, tests and stream computations (checked when the stream is created).
    """

    def __init__(
        self,
        lake: Lake,
        *,
        tz: str = "UTC",
        default_db: str | None = None,
        principal: Principal = access.ROOT,
    ) -> None:
        self.lake = lake
        self.tz = tz
        self.default_db = default_db
        self.principal = principal

    @property
    def catalog(self) -> Catalog:
        """The lake's catalog."""
        return self.lake.catalog

    def require(
        self,
        privilege: str,
        db: Database,
        table: str | None = None,
        *,
        sql: str | None = None,
        span: ast.Span | None = None,
    ) -> None:
        """Raise PERMISSION_DENIED unless the client may ``read``/``write`` ``db`` (``table``: a
        supertable or normal table; None: the database as a whole)."""
        access.require(self.principal, privilege, db, table, sql=sql, offset=span.start if span else None)

    def no_such_table(
        self, db: str, name: str, *, sql: str | None = None, span: ast.Span | None = None, message: str = ""
    ) -> SqlError:
        """The error for table ``name`` missing from database ``db``: ``TABLE_NOT_EXIST`` for a user
        who may read or write the whole database (or owns it), else TDengine's ``0x2644``
        "Permission denied or target object not exist", the same answer an existing table they may
        not read gets, so a name's existence in another user's database never leaks
        (docs/security.md). ``message`` replaces the default TABLE_NOT_EXIST wording."""
        offset = span.start if span else None
        database = self.catalog.database(db)
        if database is not None and (
            self.principal.may(access.READ, database) or self.principal.may(access.WRITE, database)
        ):
            text = message or f"table {db}.{name} does not exist"
            return SqlError(text, sql=sql, offset=offset, code=Code.TABLE_NOT_EXIST)
        return access.denied(f"table {db}.{name}", sql=sql, offset=offset)

    def require_storage(
        self,
        privilege: str,
        db: Database,
        table: Table,
        *,
        sql: str | None = None,
        span: ast.Span | None = None,
    ) -> None:
        """As :meth:`require` for the table holding ``table``'s rows (a subtable's supertable).

        A virtual table holds none: reading it needs READ on it (its virtual supertable for a
        child table; TDengine SQL manual, "Virtual Tables", "Permissions") and, in tdweb, READ on
        every table its columns reference too, so a virtual table never shows a user rows they
        could not read directly (docs/security.md).
        """
        self.require(privilege, db, table.storage, sql=sql, span=span)
        if table.virtual and privilege == access.READ:
            for ref_db, storage in storages(self.catalog, table):
                self.require(privilege, self.catalog.require_database(ref_db), storage, sql=sql, span=span)

    def system_source(self, name: ast.TableName, sql: str) -> tuple[Source, pa.Table]:
        """A system table and its rows; a bare context serves none.

        Raises:
            SqlError: TABLE_NOT_EXIST, positioned at the name.
        """
        raise SqlError(
            f"table {SYSTEM_DB}.{name.name} cannot be read here",
            sql=sql or None,
            offset=name.span.start if name.span else None,
            code=Code.TABLE_NOT_EXIST,
        )
