"""TDengine's users and privileges: the one check of who may read, write, create and drop what.

Rules (TDengine SQL manual, "Permissions", 3.3.x; "Users"; "Metadata"):

- A superuser (``root``; in tdweb every Django superuser) may do everything.
- A database belongs to the user who created it, who has all privileges on it. Creating a
  database needs the CREATEDB attribute (``CREATE USER ... CREATEDB 1``; default 0).
- Other users act on a database through grants: ``GRANT {ALL | READ | WRITE [, ...]} ON
  {db.* | db.tbl | *.*} TO user``. READ allows SELECT, DESCRIBE and SHOW on it; WRITE allows
  INSERT and DELETE, and on a database also creating, altering and dropping its supertables,
  subtables and normal tables. A table-level grant names a supertable or a normal table (never a
  subtable: a subtable's privileges are its supertable's). Database and table grants add up: the
  union of the two decides (the manual's table "Relationship Between Table-Level Permissions and
  Database Permissions").
- Dropping or altering a database is for its owner and superusers.
- SYSINFO 0 hides system information: ``ins_users``, ``ins_user_privileges``, ``SHOW USERS``,
  ``SHOW VGROUPS``.
- A stream belongs to its creator: only the owner, a superuser or an operator (tdweb's staff) may
  see, pause, resume, drop or recalculate it; a stream reads only what its owner may read and
  writes only where its owner may write (checked when it is created and each time a worker starts
  it).

Everything here is pure data: the Django app builds a :class:`Principal` for each request from its
users, profiles and grants (``streams_app.services.users``) and implements :class:`UserDirectory`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake.catalog import Database

READ = "read"
WRITE = "write"
PRIVILEGES = (READ, WRITE)
ALL_DATABASES = "*"


@dataclass(frozen=True)
class Grant:
    """Privileges granted on one level.

    Attributes:
        db: database name, or ``*`` for every database (``*.*``).
        table: supertable or normal table name; None for every table of ``db`` (``db.*``).
        read, write: the privileges held at this level.
    """

    db: str
    table: str | None
    read: bool = False
    write: bool = False

    def covers(self, db: str, table: str | None) -> bool:
        """Does this level include table ``table`` of ``db`` (any table when None is asked only
        of database-wide grants)?"""
        if self.db != ALL_DATABASES and self.db.lower() != db.lower():
            return False
        return self.table is None or (table is not None and self.table.lower() == table.lower())

    def holds(self, privilege: str) -> bool:
        """True when this grant gives ``privilege`` (``read`` or ``write``)."""
        return self.read if privilege == READ else self.write

    @property
    def level(self) -> str:
        """``db.*``, ``db.tbl`` or ``*.*`` as TDengine writes it."""
        return f"{self.db}.{self.table or '*'}"


@dataclass(frozen=True)
class Principal:
    """The user a statement runs as.

    Attributes:
        name: user name (TDengine's ``user_name``; Django's ``username``).
        super: superuser (``SHOW USERS`` column ``super``).
        sysinfo: may view system information (default 1).
        createdb: may create databases (default 0).
        grants: the user's grants.
        operator: may see and control every user's streams (SHOW STREAMS, PAUSE/RESUME/DROP/
            RECALCULATE) without reading their data: tdweb's staff users, who run the service
            and receive every inbox's notifications (docs/security.md, "Roles").
    """

    name: str
    super: bool = False
    sysinfo: bool = True
    createdb: bool = False
    grants: tuple[Grant, ...] = field(default_factory=tuple)
    operator: bool = False

    def controls_stream(self, owner: str | None) -> bool:
        """May this user see and control a stream created by ``owner``: its owner, a superuser or
        an operator."""
        return self.super or self.operator or (owner or "").lower() == self.name.lower()

    def owns(self, db: Database) -> bool:
        """Superuser, or the user who created ``db``."""
        return self.super or (db.owner is not None and db.owner.lower() == self.name.lower())

    def may(self, privilege: str, db: Database, table: str | None = None) -> bool:
        """May this user ``read``/``write`` table ``table`` of ``db`` (the whole database when
        ``table`` is None: then only database-wide grants count)?"""
        if self.owns(db):
            return True
        return any(g.holds(privilege) and g.covers(db.name, table) for g in self.grants)

    def may_see(self, db: Database) -> bool:
        """Does the user hold any privilege in ``db`` (its own, or a database or table grant)?
        Such databases appear in SHOW DATABASES and may be chosen with USE."""
        if self.owns(db):
            return True
        return any(
            (g.read or g.write) and (g.db == ALL_DATABASES or g.db.lower() == db.name.lower())
            for g in self.grants
        )

    def may_see_table(self, db: Database, table: str) -> bool:
        """May the user know of table ``table`` (a supertable or normal table name) of ``db``?"""
        return self.may(READ, db, table) or self.may(WRITE, db, table)


ROOT = Principal("root", super=True, createdb=True)

REDACTED = "******"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"`]*", re.IGNORECASE)
_QUERY_VALUE = re.compile(r"([?&][^=&#]+=)[^&#]*")


def redact_secrets(text: str) -> str:
    """``text`` with the values of URL query parameters replaced by ``******``: NOTIFY URLs carry
    inbox keys and receivers' tokens (``ws://h/ws/notify/inbox?key=abc`` ->
    ``ws://h/ws/notify/inbox?key=******``). Used wherever a stream's SQL or spec is shown."""
    return _URL.sub(lambda u: _QUERY_VALUE.sub(lambda m: m.group(1) + REDACTED, u.group(0)), text)


def redact_json(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings...) with :func:`redact_secrets` applied to every
    string in it (stream specs and designs carry NOTIFY URLs)."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(v) for v in value]
    return value


def denied(what: str, *, sql: str | None = None, offset: int | None = None) -> SqlError:
    """TDengine's ``Permission denied or target object not exist`` (0x2644) about ``what``."""
    return SqlError(
        f"Permission denied or target object not exist: {what}",
        sql=sql,
        offset=offset,
        code=Code.PERMISSION_DENIED,
    )


def require(
    principal: Principal,
    privilege: str,
    db: Database,
    table: str | None = None,
    *,
    sql: str | None = None,
    offset: int | None = None,
) -> None:
    """Raise :func:`denied` unless ``principal`` may ``privilege`` table ``table`` of ``db``.

    Args:
        privilege: ``read`` or ``write``.
        table: the storage table (supertable or normal table); None: the whole database.
    """
    if not principal.may(privilege, db, table):
        target = f"{db.name}.{table}" if table else db.name
        raise denied(f"{privilege} access to {target} for user {principal.name}", sql=sql, offset=offset)


def require_owner(principal: Principal, db: Database, action: str) -> None:
    """Raise unless ``principal`` owns ``db`` (or is a superuser); ``action`` names the
    statement (``drop database``)."""
    if not principal.owns(db):
        raise denied(f"{action} {db.name}: only its owner or a superuser may")


def require_super(principal: Principal, action: str) -> None:
    """Raise TDengine's ``Insufficient privilege for operation`` (0x0303) unless superuser."""
    if not principal.super:
        raise CatalogError(
            f"Insufficient privilege for operation: {action} needs a superuser", code=Code.NO_RIGHTS
        )


def require_sysinfo(principal: Principal, what: str) -> None:
    """Raise unless the user may view system information (SYSINFO 1)."""
    if not (principal.super or principal.sysinfo):
        raise CatalogError(
            f"Insufficient privilege for operation: {what} needs SYSINFO 1", code=Code.NO_RIGHTS
        )


@dataclass(frozen=True)
class UserInfo:
    """A row of ``SHOW USERS`` / ``information_schema.ins_users``."""

    name: str
    super: bool
    enable: bool
    sysinfo: bool
    createdb: bool
    create_ms: int


class UserDirectory(Protocol):
    """Where users and grants live (the Django app implements it over Django's users)."""

    def create_user(self, name: str, password: str, *, sysinfo: bool, createdb: bool) -> None:
        """Create a user; raises CatalogError USER_ALREADY_EXIST."""
        ...

    def alter_user(
        self,
        name: str,
        *,
        password: str | None = None,
        sysinfo: bool | None = None,
        createdb: bool | None = None,
        enable: bool | None = None,
    ) -> None:
        """Change a user; raises CatalogError USER_NOT_EXIST."""
        ...

    def drop_user(self, name: str) -> None:
        """Remove a user with its grants; raises CatalogError USER_NOT_EXIST."""
        ...

    def users(self) -> list[UserInfo]:
        """Every user, by name."""
        ...

    def grant(self, name: str, grant: Grant) -> None:
        """Add ``grant``'s privileges at its level; raises CatalogError USER_NOT_EXIST."""
        ...

    def revoke(self, name: str, grant: Grant) -> None:
        """Remove ``grant``'s privileges at its level (no-op if not held)."""
        ...

    def privileges(self) -> list[tuple[str, Grant]]:
        """``(user name, grant)`` of every grant, by user name."""
        ...


class MemoryUserDirectory:
    """In-memory :class:`UserDirectory` (unit tests, the shell without Django); ``root`` exists."""

    def __init__(self) -> None:
        self._users: dict[str, tuple[UserInfo, str]] = {
            "root": (UserInfo("root", True, True, True, True, 0), "")
        }
        self._grants: dict[str, list[Grant]] = {}

    def _get(self, name: str) -> tuple[UserInfo, str]:
        hit = self._users.get(name.lower())
        if hit is None:
            raise CatalogError(f"User not exist: {name}", code=Code.USER_NOT_EXIST)
        return hit

    def create_user(self, name: str, password: str, *, sysinfo: bool, createdb: bool) -> None:
        if name.lower() in self._users:
            raise CatalogError(f"User already exists: {name}", code=Code.USER_ALREADY_EXIST)
        self._users[name.lower()] = (UserInfo(name, False, True, sysinfo, createdb, 0), password)

    def alter_user(
        self,
        name: str,
        *,
        password: str | None = None,
        sysinfo: bool | None = None,
        createdb: bool | None = None,
        enable: bool | None = None,
    ) -> None:
        info, pw = self._get(name)
        info = replace(
            info,
            sysinfo=info.sysinfo if sysinfo is None else sysinfo,
            createdb=info.createdb if createdb is None else createdb,
            enable=info.enable if enable is None else enable,
        )
        self._users[name.lower()] = (info, pw if password is None else password)

    def drop_user(self, name: str) -> None:
        self._get(name)
        del self._users[name.lower()]
        self._grants.pop(name.lower(), None)

    def users(self) -> list[UserInfo]:
        return sorted((u for u, _ in self._users.values()), key=lambda u: u.name)

    def grant(self, name: str, grant: Grant) -> None:
        self._get(name)
        self._grants[name.lower()] = merge_grant(self._grants.get(name.lower(), []), grant, add=True)

    def revoke(self, name: str, grant: Grant) -> None:
        self._get(name)
        self._grants[name.lower()] = merge_grant(self._grants.get(name.lower(), []), grant, add=False)

    def privileges(self) -> list[tuple[str, Grant]]:
        return [(self._users[u][0].name, g) for u in sorted(self._grants) for g in self._grants[u]]

    def principal(self, name: str) -> Principal:
        """The principal of user ``name`` with its grants."""
        info, _ = self._get(name)
        return Principal(
            info.name, info.super, info.sysinfo, info.createdb, tuple(self._grants.get(name.lower(), []))
        )


def merge_grant(grants: list[Grant], change: Grant, *, add: bool) -> list[Grant]:
    """``grants`` after GRANT (``add``) or REVOKE of ``change``'s privileges at its level; levels
    left with no privilege disappear."""
    out: list[Grant] = []
    found = False
    for g in grants:
        same = g.db.lower() == change.db.lower() and (g.table or "").lower() == (change.table or "").lower()
        if same:
            found = True
            if add:
                g = replace(g, read=g.read or change.read, write=g.write or change.write)
            else:
                g = replace(g, read=g.read and not change.read, write=g.write and not change.write)
        if g.read or g.write:
            out.append(g)
    if add and not found and (change.read or change.write):
        out.append(change)
    return out
