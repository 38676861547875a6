"""Users and privileges: CREATE/ALTER/DROP USER, GRANT and REVOKE (TDengine SQL manual, "Users",
"Permissions")."""

from __future__ import annotations

from sqlglot.tokens import TokenType

from spark_workers.errors import Code
from spark_workers.sql import ast
from spark_workers.sql.parser.base import COMMA, ParserBase


class UsersParser(ParserBase):
    """User and privilege statements."""

    def create_user(self) -> ast.CreateUser:
        """``CREATE USER name PASS 'pw' [SYSINFO {1|0}] [CREATEDB {1|0}]`` (after CREATE USER)."""
        start = self.i
        name = self.name("a user name")[0]
        self.expect("PASS", message="syntax error: expected PASS 'password' after the user name")
        password = self.string("a password")
        opts = self.user_options(("SYSINFO", "CREATEDB"))
        return ast.CreateUser(
            name=name,
            password=password,
            sysinfo=bool(opts.get("SYSINFO", 1)),
            createdb=bool(opts.get("CREATEDB", 0)),
            span=self.span(start, start + 1),
        )

    def alter_user(self) -> ast.AlterUser:
        """``ALTER USER name alter_user_clause ...`` (TDengine SQL manual, "Users")."""
        self.expect("ALTER", "USER")
        start = self.i
        name = self.name("a user name")[0]
        password = None
        if self.accept("PASS"):
            password = self.string("a password")
        opts = self.user_options(("SYSINFO", "CREATEDB", "ENABLE"))
        if password is None and not opts:
            raise self.error("syntax error: expected PASS, SYSINFO, CREATEDB or ENABLE after the user name")
        return ast.AlterUser(
            name=name,
            password=password,
            sysinfo=None if "SYSINFO" not in opts else bool(opts["SYSINFO"]),
            createdb=None if "CREATEDB" not in opts else bool(opts["CREATEDB"]),
            enable=None if "ENABLE" not in opts else bool(opts["ENABLE"]),
            span=self.span(start, start + 1),
        )

    def user_options(self, allowed: tuple[str, ...]) -> dict[str, int]:
        """``OPTION {0|1}`` pairs up to the end of the statement, each at most once."""
        opts: dict[str, int] = {}
        while not self.done():
            w = self.word()
            key = w[0] if len(w) == 1 else ""
            if key not in allowed:
                t = self.tok()
                assert t is not None
                raise self.error(
                    f"syntax error: unexpected '{self.text_of(t)}': expected one of {', '.join(allowed)}", t
                )
            if key in opts:
                raise self.error(f"syntax error: {key} given twice")
            self.i += 1
            opts[key] = self.flag01(key)
        return opts

    def grant(self) -> ast.GrantStatement:
        """``GRANT privileges ON priv_level TO user`` / ``REVOKE ... FROM user`` with
        ``privileges: ALL | {READ | WRITE} [, ...]`` and ``priv_level: db.* | db.tbl | *.*``
        (TDengine SQL manual, "Permissions")."""
        revoke = bool(self.accept("REVOKE"))
        if not revoke:
            self.expect("GRANT")
        privileges: set[str] = set()
        if self.accept("ALL"):
            self.accept("PRIVILEGES")
            privileges = {"read", "write"}
        else:
            while True:
                w = self.word()
                if not w or w[0] not in ("READ", "WRITE"):
                    raise self.error("syntax error: expected ALL, READ or WRITE")
                privileges.add(w[0].lower())
                self.i += 1
                if not self.accept_type(COMMA):
                    break
        self.expect("ON", message="syntax error: expected ON priv_level (db.*, db.tbl or *.*)")
        start = self.i
        if self.accept_type(TokenType.STAR):
            db = "*"
        else:
            db = self.name("a database name")[0]
        self.expect_type(TokenType.DOT, "syntax error: expected '.' in priv_level (db.*, db.tbl or *.*)")
        table: str | None
        if self.accept_type(TokenType.STAR):
            table = None
        elif db == "*":
            raise self.error("syntax error: priv_level *.tbl is not allowed: use *.* or db.tbl")
        else:
            table = self.name("a table name")[0]
        span = self.span(start, self.i)
        if self.at("WITH"):
            raise self.error(
                "GRANT ... WITH tag_condition (tag-based authorization of subtables) is not "
                "supported by tdweb: grant on the supertable or the database",
                code=Code.NOT_SUPPORTED,
            )
        self.expect(
            "FROM" if revoke else "TO",
            message=f"syntax error: expected {'FROM' if revoke else 'TO'} user_name",
        )
        user = self.name("a user name")[0]
        return ast.GrantStatement(
            revoke=revoke,
            privileges=tuple(sorted(privileges)),
            db=db,
            table=table,
            user=user,
            span=span,
        )

    def drop_user(self) -> ast.DropUser:
        """``DROP USER name`` (after DROP USER)."""
        start = self.i
        name = self.name("a user name")[0]
        return ast.DropUser(name=name, span=self.span(start, self.i))
