"""TDengine's naming rules, and the storage keys the lake derives from names.

Rules (TDengine SQL manual, "Naming Conventions and Limitations"): an unquoted name is letters,
digits and underscores, not starting with a digit (the lexer enforces that); a backquoted name may
hold other characters but never ``.``; a database name is at most 64 bytes, a table or stream
name at most 192, a column or tag name at most 64, a user name at most 23. tdweb adds, for the
safety of a shared service (docs/security.md): no control characters (NUL included) anywhere in
a name; database, table and stream names starting with ``_`` are the system's (the lake keeps
its catalog and stream checkpoints under ``_`` names); ``information_schema`` and
``performance_schema`` are system databases.

A name never becomes a path as written: :func:`storage_key` maps it to a key made of
``[a-z0-9_]`` (the lower-cased name when it already is one, else ``x-`` and a digest), and the
lake checks that every path it builds from keys resolves under its root before creating or
deleting anything (``Lake.table_path``).
"""

from __future__ import annotations

import hashlib
import re

from spark_workers.errors import Code, SqlError

MAX_BYTES = {"database": 64, "table": 192, "stream": 192, "column": 64, "tag": 64, "user": 23}
SYSTEM_DB = "information_schema"
SYSTEM_DATABASES = frozenset({SYSTEM_DB, "performance_schema"})
_RESERVED_PREFIX_KINDS = frozenset({"database", "table", "stream"})
_PLAIN_KEY = re.compile(r"^[a-z0-9][a-z0-9_]{0,191}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_name(name: str, what: str, *, sql: str | None = None, offset: int | None = None) -> None:
    """Raise unless ``name`` is a valid TDengine name for ``what``.

    Args:
        name: the name as written (backquotes removed).
        what: ``database``, ``table``, ``stream``, ``column``, ``tag`` or ``user``.
        sql, offset: where the name is written, for the error's position.

    Raises:
        SqlError: code 0x2617 (TSDB_CODE_PAR_INVALID_IDENTIFIER_NAME) naming the rule broken:
            empty or too long (in UTF-8 bytes), a ``.``, a control character, a reserved ``_``
            prefix (databases, tables, streams) or a system database name.
    """
    limit = MAX_BYTES[what]
    size = len(name.encode("utf-8"))

    def bad(rule: str) -> SqlError:
        shown = _CONTROL.sub("?", name)[:64]
        return SqlError(
            f"Invalid identifier name: {what} name '{shown}' {rule}",
            sql=sql,
            offset=offset,
            code=Code.INVALID_IDENTIFIER_NAME,
        )

    if size == 0:
        raise bad("is empty")
    if size > limit:
        raise bad(f"is {size} bytes long; at most {limit} bytes are allowed")
    if _CONTROL.search(name):
        raise bad("contains a control character")
    if "." in name:
        raise bad("cannot contain '.'")
    if what in _RESERVED_PREFIX_KINDS and name.startswith("_"):
        raise bad("starts with '_': such names are reserved for the system")
    if what == "database" and name.lower() in SYSTEM_DATABASES:
        raise bad("is a system database")


def storage_key(name: str) -> str:
    """The storage key of a database or table name: ``[a-z0-9_]`` only, never ``.``/``/``.

    The lower-cased name itself when it is made of ASCII letters, digits and underscores and
    does not start with ``_`` (so existing lakes keep their folders); otherwise ``x-`` and the
    first 40 hex digits of the SHA-256 of the lower-cased name (names are case-insensitive).
    """
    low = name.lower()
    if _PLAIN_KEY.match(low):
        return low
    return "x-" + hashlib.sha256(low.encode("utf-8")).hexdigest()[:40]
