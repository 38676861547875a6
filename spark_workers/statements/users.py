"""Users and privileges: CREATE/ALTER/DROP USER, GRANT/REVOKE (TDengine SQL manual "Users",
"Permissions"), applied to the client's :class:`~spark_workers.access.UserDirectory`.
"""

from __future__ import annotations

from spark_workers import access
from spark_workers.access import READ, WRITE, Grant, UserDirectory
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake.names import check_name
from spark_workers.query.results import ResultSet
from spark_workers.sql import ast
from spark_workers.statements.session import Session

# TDengine's password rules (SQL manual "Names & Limits" and "Users"): 8 to 255 characters of
# [a-zA-Z0-9!?$%^&*()_–+={[}]:;@~#|<,>.?/], no quotes, backquote, backslash or space
PASSWORD_MIN, PASSWORD_MAX = 8, 255
_PASSWORD_FORBIDDEN = frozenset("'\"`\\ ")


def directory(ex: Session, action: str) -> UserDirectory:
    if ex.users is None:
        raise SqlError(f"{action} is not available here: no user directory", code=Code.NOT_SUPPORTED)
    return ex.users


def create_user(ex: Session, s: ast.CreateUser, sql: str) -> ResultSet:
    """``CREATE USER`` (superusers only; TDengine SQL manual, "Users")."""
    access.require_super(ex.principal, "CREATE USER")
    check_name(s.name, "user", sql=sql, offset=s.span.start if s.span else None)
    check_password(s.password)
    directory(ex, "CREATE USER").create_user(s.name, s.password, sysinfo=s.sysinfo, createdb=s.createdb)
    return ResultSet.affected(0)


def alter_user(ex: Session, s: ast.AlterUser, sql: str) -> ResultSet:
    """``ALTER USER``: superusers change anything; a user with SYSINFO 1 may change their own
    password (TDengine SQL manual, "Permissions": SYSINFO 0 users cannot modify users,
    including their own password)."""
    own_password = (
        s.name.lower() == ex.principal.name.lower()
        and s.password is not None
        and (s.sysinfo, s.createdb, s.enable) == (None, None, None)
        and (ex.principal.sysinfo or ex.principal.super)
    )
    if not own_password:
        access.require_super(ex.principal, "ALTER USER")
    if s.name.lower() == ex.principal.name.lower() and s.enable is False:
        raise CatalogError(
            "Invalid alter operation: a user cannot disable itself", code=Code.INVALID_ALTER_OPER
        )
    if s.password is not None:
        check_password(s.password)
    directory(ex, "ALTER USER").alter_user(
        s.name, password=s.password, sysinfo=s.sysinfo, createdb=s.createdb, enable=s.enable
    )
    return ResultSet.affected(0)


def drop_user(ex: Session, s: ast.DropUser, sql: str) -> ResultSet:
    """``DROP USER`` (superusers only; a user cannot drop itself)."""
    access.require_super(ex.principal, "DROP USER")
    if s.name.lower() == ex.principal.name.lower():
        raise CatalogError("Invalid alter operation: a user cannot drop itself", code=Code.INVALID_ALTER_OPER)
    directory(ex, "DROP USER").drop_user(s.name)
    return ResultSet.affected(0)


def grant(ex: Session, s: ast.GrantStatement, sql: str) -> ResultSet:
    """``GRANT``/``REVOKE`` on ``db.*``, ``db.tbl`` or ``*.*`` (superusers only; TDengine SQL
    manual, "Permissions"). The database and table must exist; a table-level grant names a
    supertable or a normal table, not a subtable."""
    what = "REVOKE" if s.revoke else "GRANT"
    access.require_super(ex.principal, what)
    db = "*"
    table = s.table
    if s.db != "*":
        db = ex.catalog.require_database(s.db).name
        if table is not None:
            t = ex.catalog.table(db, table)
            if t is None:
                raise SqlError(
                    f"table {db}.{table} does not exist",
                    sql=sql,
                    offset=s.span.start if s.span else None,
                    code=Code.TABLE_NOT_EXIST,
                )
            if t.kind == "sub":
                raise SqlError(
                    f"{table} is a subtable: grant on its supertable {t.stable} (privileges of "
                    "subtables cannot be granted directly)",
                    sql=sql,
                    offset=s.span.start if s.span else None,
                    code=Code.INVALID_OPERATION,
                )
            table = t.name
    grant = Grant(db, table, read=READ in s.privileges, write=WRITE in s.privileges)
    users = directory(ex, what)
    if not any(u.name.lower() == s.user.lower() for u in users.users()):
        raise CatalogError(f"User not exist: {s.user}", code=Code.USER_NOT_EXIST)
    if s.revoke:
        users.revoke(s.user, grant)
    else:
        users.grant(s.user, grant)
    return ResultSet.affected(0)


def check_password(password: str) -> None:
    """TDengine's password rules (length 8 to 255, its legal characters).

    Raises:
        SqlError: 0x2610 (too long) or 0x0353 (TSDB_CODE_MND_INVALID_PASS_FORMAT).
    """
    if len(password) > PASSWORD_MAX:
        raise SqlError(
            f"Name or password too long: a password has at most {PASSWORD_MAX} characters",
            code=Code.NAME_OR_PASSWD_TOO_LONG,
        )
    if len(password) < PASSWORD_MIN:
        raise SqlError(
            f"Invalid password format: a password has at least {PASSWORD_MIN} characters",
            code=Code.INVALID_PASS_FORMAT,
        )
    if any(ch in _PASSWORD_FORBIDDEN or not ch.isprintable() for ch in password):
        raise SqlError(
            "Invalid password format: quotes, backquotes, backslashes, spaces and control "
            "characters are not allowed",
            code=Code.INVALID_PASS_FORMAT,
        )
