"""TDengine's ``information_schema`` system tables, queryable with any SELECT.

``ins_databases``, ``ins_stables``, ``ins_tables``, ``ins_tags``, ``ins_streams`` and
``ins_stream_tasks`` (one row per stream's worker task: progress, recalculations, last error) are built
from the lake's catalog and the stream registry when a query names them
(``information_schema.ins_tables`` or, with ``information_schema`` as the current database, just
``ins_tables``), then registered in DuckDB like any other table, so WHERE, LIKE, ORDER BY,
aggregates and joins work on them as on data tables. Column names and types follow TDengine's
(reference manual, "Information_Schema Database"; seed 000/002 query ``ins_streams``); columns
tdweb has no value for (``uid``, ``vgroup_id``) hold what a single-node TDengine reports (0 / 1);
``ins_tables.ttl`` is the table's TTL in days (CREATE / ALTER TABLE ... TTL; 0: never expires).

``performance_schema`` holds TDengine's ``perf_*`` tables with their columns; tdweb answers the ones
whose rows it cannot know truthfully (a REST request is not a connection; tdweb keeps no list of
running statements or client applications) with no rows, never with invented ones.

The cluster's topology is this one server: ``ins_cluster``, ``ins_mnodes``, ``ins_dnodes`` (one
node), ``ins_vgroups`` / ``ins_vnodes`` (one vgroup per database). Objects tdweb does not have
(TMQ topics and subscriptions, indexes, views, compactions, qnodes, snodes) have their tables with
TDengine's columns and no rows.

Which tables a SYSINFO 0 user may not read follows TDengine's ``systable.c`` (the tables marked
``sysInfo = true``: ``ins_dnodes``, ``ins_mnodes``, ``ins_qnodes``, ``ins_snodes``,
``ins_cluster``, ``ins_vgroups``, ``ins_vnodes``, ``ins_users``, ``ins_user_privileges``,
``ins_dnode_variables``); every other table lists only what the client may see.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from spark_workers.access import Principal, UserDirectory, redact_secrets, require_sysinfo
from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Catalog, Column, Database, Table
from spark_workers.lake.names import SYSTEM_DB
from spark_workers.limits import current_limits
from spark_workers.query.planner import Source
from spark_workers.query.system_functions import SERVER_VERSION as SERVER_RELEASE
from spark_workers.sql import ast
from spark_workers.streams.registry import StreamInfo, StreamRegistry
from spark_workers.tdtypes import BIGINT, BOOL, INT, TIMESTAMP, TdType, varchar

SYSTEM_DATABASE = Database(SYSTEM_DB, "ms", {})
PERF_DB = "performance_schema"
PERF_DATABASE = Database(PERF_DB, "ms", {})
STARTED_MS = int(time.time() * 1000)
"""When this process started (epoch ms): ``ins_dnodes.reboot_time``."""
SMALLINT = TdType("SMALLINT")
TINYINT = TdType("TINYINT")


class SystemView(Protocol):
    """What the system tables are built from: the client's catalog, principal, stream registry
    and user directory (``statements.session.Session`` has them)."""

    @property
    def catalog(self) -> Catalog: ...

    principal: Principal
    registry: StreamRegistry
    users: UserDirectory | None
    tz: str
    default_db: str | None


@dataclass(frozen=True)
class SystemTable:
    """One system table: its columns, the function producing its rows, and whether only SYSINFO 1
    users may read it (TDengine's ``systable.c``; its row function refuses the others)."""

    name: str
    columns: tuple[tuple[str, TdType], ...]
    rows: Callable[[SystemView], list[list[Any]]]
    sysinfo: bool = False


def _visible_databases(ex: SystemView) -> list[tuple[Database, int]]:
    """The databases the client holds any privilege in (all of them for superusers; TDengine:
    "when showing db, [a normal user] can only see their own db" and those granted)."""
    return [(db, created) for db, created in ex.catalog.databases() if ex.principal.may_see(db)]


def _visible_tables(
    ex: SystemView, kinds: tuple[str, ...]
) -> list[tuple[Database, str, str, str | None, int]]:
    """``(db, name, kind, stable, created_ms)`` of the tables the client may know of: every table
    of a database it owns or holds a database-wide grant on, else the tables (and subtables of
    supertables) it holds a table grant on."""
    out = []
    for db, _ in _visible_databases(ex):
        for name, kind, stable, created in ex.catalog.tables(db.name, kinds=kinds):
            if ex.principal.may_see_table(db, stable or name):
                out.append((db, name, kind, stable, created))
    return out


def _databases(ex: SystemView) -> list[list[Any]]:
    out: list[list[Any]] = [
        [SYSTEM_DB, None, 0, len(TABLES), "ms", None, None, "ready", None, None],
        [PERF_DB, None, 0, len(PERF_TABLES), "ms", None, None, "ready", None, None],
    ]
    for db, created in _visible_databases(ex):
        ntables = len(ex.catalog.tables(db.name, kinds=("sub", "normal")))
        out.append(
            [
                db.name,
                created,
                int(db.options.get("VGROUPS", 2)),
                ntables,
                db.precision,
                str(db.options.get("KEEP", "3650d")),
                str(db.duration),
                "ready",
                str(db.options.get("CACHEMODEL", "none")).strip("'\""),  # stored; no effect on results
                int(str(db.options.get("KEEP_TIME_OFFSET", 0)).strip("'\"")),
            ]
        )
    return out


def _stables(ex: SystemView) -> list[list[Any]]:
    out: list[list[Any]] = []
    for db, name, _kind, _st, created in _visible_tables(ex, ("super",)):
        t = ex.catalog.require_table(db.name, name)
        out.append([name, db.name, created, len(t.columns), len(t.tags), created, t.comment, t.virtual])
    return out


def _tables(ex: SystemView) -> list[list[Any]]:
    out: list[list[Any]] = []
    for db, name, _kind, stable, created in _visible_tables(ex, ("sub", "normal")):
        t = ex.catalog.require_table(db.name, name)
        out.append([name, db.name, created, len(t.columns), stable, 0, 1, t.ttl, t.comment, t.type_name])
    return out


def _tags(ex: SystemView) -> list[list[Any]]:
    out: list[list[Any]] = []
    for db, name, _kind, stable, _created in _visible_tables(ex, ("sub",)):
        t = ex.catalog.require_table(db.name, name)
        for tag in t.tags:
            v = t.tag_values.get(tag.name.lower())
            out.append([name, db.name, stable, tag.name, tag.type.sql, None if v is None else str(v)])
    return out


def visible_streams(ex: SystemView) -> list[StreamInfo]:
    """The streams the client may see: its own; every stream for superusers and operators."""
    return [i for i in ex.registry.list() if ex.principal.controls_stream(i.owner)]


def _streams(ex: SystemView) -> list[list[Any]]:
    out: list[list[Any]] = []
    for i in visible_streams(ex):
        s = i.spec
        src_db = s.source.db if s.source else None
        out.append(
            [
                i.name,
                i.created_ms or None,
                redact_secrets(i.sql),
                i.status,
                src_db,
                s.output.db if s.output else None,
                s.output.table if s.output else None,
                s.options.watermark,
                s.options.trigger if s.syntax == "legacy" else str(s.trigger.get("type", "")).upper(),
                i.message or None,
            ]
        )
    return out


def _stream_tasks(ex: SystemView) -> list[list[Any]]:
    """One row per stream: the worker task that triggers and computes it (a Spark query, or the
    scheduler of a PERIOD stream) with its progress and last error."""
    out: list[list[Any]] = []
    for i in visible_streams(ex):
        t = i.task
        kind = "Scheduler" if i.spec.trigger.get("type") == "period" else "Spark"
        out.append(
            [
                i.name,
                i.db,
                t.get("key") or i.name,
                kind,
                t.get("worker") or None,
                i.status,
                t.get("started_ms"),
                t.get("heartbeat_ms"),
                t.get("processed_version"),
                t.get("last_batch_id"),
                int(t.get("rows_in", 0)),
                int(t.get("rows_out", 0)),
                int(t.get("recalculated", 0)),
                int(t.get("notifications_sent", 0)),
                int(t.get("notifications_failed", 0)),
                i.message or None,
            ]
        )
    return out


def _users(ex: SystemView) -> list[list[Any]]:
    """``ins_users`` (SYSINFO 1 only; TDengine SQL manual, "Metadata")."""
    require_sysinfo(ex.principal, "information_schema.ins_users")
    if ex.users is None:
        return [[ex.principal.name, int(ex.principal.super), 1, int(ex.principal.sysinfo),
                 int(ex.principal.createdb), None, "+127.0.0.1/32, +::1/128"]]  # fmt: skip
    return [
        [u.name, int(u.super), int(u.enable), int(u.sysinfo), int(u.createdb), u.create_ms or None, "+ALL"]
        for u in ex.users.users()
    ]


def _user_privileges(ex: SystemView) -> list[list[Any]]:
    """``ins_user_privileges``: one row per user, privilege and level (SYSINFO 1 only); a level
    holding both READ and WRITE is shown as ``all``; superusers hold ``all`` on ``*.*``."""
    require_sysinfo(ex.principal, "information_schema.ins_user_privileges")
    out: list[list[Any]] = []
    if ex.users is None:
        return out
    for u in ex.users.users():
        if u.super:
            out.append([u.name, "all", "all", "", ""])
    for user, g in ex.users.privileges():
        kinds = (
            ["all"] if g.read and g.write else [k for k, on in (("read", g.read), ("write", g.write)) if on]
        )
        for k in kinds:
            out.append([user, k, "all" if g.db == "*" else g.db, g.table or "", ""])
    return out


def _columns(ex: SystemView) -> list[list[Any]]:
    """``ins_columns``: one row per column (not tag: those are ``ins_tags``) of every supertable,
    subtable and normal table the client may know of, in the tables' column order; ``col_source``
    is where a virtual table's column takes its values."""
    out: list[list[Any]] = []
    for db, name, _kind, _stable, _created in _visible_tables(ex, ("super", "sub", "normal")):
        t = ex.catalog.require_table(db.name, name)
        for i, c in enumerate(t.columns):
            ref = t.refs.get(c.name.lower()) if t.virtual else None
            nullable = 0 if i == 0 or c.composite_key else 1  # the primary key columns hold no NULL
            out.append(
                [name, db.name, t.type_name, c.name, c.type.sql, c.type.byte_length, 0, 0, nullable,
                 ref.text if ref else None]
            )  # fmt: skip
    return out


def _dnodes(ex: SystemView) -> list[list[Any]]:
    """``ins_dnodes`` (SYSINFO 1 only): one dnode, this server process; its vnodes are the
    databases' vgroups as SHOW VGROUPS lists them (one each)."""
    require_sysinfo(ex.principal, "information_schema.ins_dnodes")
    vnodes = len(ex.catalog.databases())
    return [[1, socket.gethostname(), vnodes, None, "ready", None, STARTED_MS, ""]]


def _cluster(ex: SystemView) -> list[list[Any]]:
    """``ins_cluster`` (SHOW CLUSTER; SYSINFO 1 only): one cluster, this server: its host name, the
    seconds since this process started, the TDengine release whose SQL it speaks."""
    require_sysinfo(ex.principal, "information_schema.ins_cluster")
    uptime = int(time.time() - STARTED_MS / 1000)
    return [[1, socket.gethostname(), uptime, STARTED_MS, SERVER_RELEASE, None]]


def _mnodes(ex: SystemView) -> list[list[Any]]:
    """``ins_mnodes`` (SHOW MNODES; SYSINFO 1 only): the one management node, this server."""
    require_sysinfo(ex.principal, "information_schema.ins_mnodes")
    return [[1, socket.gethostname(), "leader", "ready", STARTED_MS, STARTED_MS]]


def _vgroups(ex: SystemView) -> list[list[Any]]:
    """``ins_vgroups`` (SHOW VGROUPS; SYSINFO 1 only): one vgroup per visible database, on dnode 1,
    holding its tables; ids are 1-based in database-name order."""
    require_sysinfo(ex.principal, "information_schema.ins_vgroups")
    out: list[list[Any]] = []
    for i, (db, _) in enumerate(_visible_databases(ex), start=1):
        n = len(ex.catalog.tables(db.name, kinds=("sub", "normal")))
        out.append([i, db.name, n, 1, "leader", None, None, None, None, None, None, 0, 0, 0])
    return out


def _vnodes(ex: SystemView) -> list[list[Any]]:
    """``ins_vnodes`` (SYSINFO 1 only): the vnode of each vgroup (:func:`_vgroups`)."""
    require_sysinfo(ex.principal, "information_schema.ins_vnodes")
    return [[1, r[0], r[1], "leader", STARTED_MS, STARTED_MS, True] for r in _vgroups(ex)]


def _sysinfo_none(table: str) -> Callable[[SystemView], list[list[Any]]]:
    """No rows, for SYSINFO 1 users only: node kinds tdweb does not run (qnodes, snodes)."""

    def rows(ex: SystemView) -> list[list[Any]]:
        require_sysinfo(ex.principal, f"information_schema.{table}")
        return []

    return rows


def _configs(ex: SystemView) -> list[list[Any]]:
    """``ins_configs`` (SHOW [CLUSTER] VARIABLES): the settings of this server a TDengine client
    asks for, with their real values: the time zone literals are read in (``TDWEB_TIMEZONE``),
    the character set of every string (UTF-8) and the longest SQL text accepted
    (``TDWEB_SQL_MAX_LENGTH``)."""
    return [[n, v] for n, v, _scope, _info in variables(ex)]


def variables(ex: SystemView) -> list[tuple[str, str, str, str]]:
    """``(name, value, scope, info)`` of the server settings SHOW VARIABLES reports, by name."""
    tz = ex.tz
    return [
        ("charset", "UTF-8", "both", "character set of every string"),
        ("maxSQLLength", str(current_limits().max_sql_chars), "both", "characters of one request's SQL"),
        ("timezone", tz, "both", "time zone of timestamps written without one"),
    ]


def _dnode_variables(ex: SystemView) -> list[list[Any]]:
    """``ins_dnode_variables`` (SYSINFO 1 only): :func:`variables` of dnode 1."""
    require_sysinfo(ex.principal, "information_schema.ins_dnode_variables")
    return [[1, n, v, scope] for n, v, scope, _info in variables(ex)]


def _none(_ex: SystemView) -> list[list[Any]]:
    """No rows: user-defined functions (tdweb has none), and the ``performance_schema`` tables
    whose rows tdweb does not keep."""
    return []


_NAME = varchar(192)
TABLES: dict[str, SystemTable] = {
    t.name: t
    for t in (
        SystemTable(
            "ins_databases",
            (
                ("name", varchar(64)),
                ("create_time", TIMESTAMP),
                ("vgroups", INT),
                ("ntables", BIGINT),
                ("precision", varchar(2)),
                ("keep", varchar(32)),
                ("duration", varchar(10)),
                ("status", varchar(10)),
                ("cachemodel", varchar(11)),
                ("keep_time_offset", INT),
            ),
            _databases,
        ),
        SystemTable(
            "ins_stables",
            (
                ("stable_name", _NAME),
                ("db_name", varchar(64)),
                ("create_time", TIMESTAMP),
                ("columns", INT),
                ("tags", INT),
                ("last_update", TIMESTAMP),
                ("table_comment", varchar(1024)),
                ("isvirtual", BOOL),
            ),
            _stables,
        ),
        SystemTable(
            "ins_tables",
            (
                ("table_name", _NAME),
                ("db_name", varchar(64)),
                ("create_time", TIMESTAMP),
                ("columns", INT),
                ("stable_name", _NAME),
                ("uid", BIGINT),
                ("vgroup_id", INT),
                ("ttl", INT),
                ("table_comment", varchar(1024)),
                ("type", varchar(21)),
            ),
            _tables,
        ),
        SystemTable(
            "ins_tags",
            (
                ("table_name", _NAME),
                ("db_name", varchar(64)),
                ("stable_name", _NAME),
                ("tag_name", varchar(64)),
                ("tag_type", varchar(64)),
                ("tag_value", varchar(16384)),
            ),
            _tags,
        ),
        SystemTable(
            "ins_streams",
            (
                ("stream_name", _NAME),
                ("create_time", TIMESTAMP),
                ("sql", varchar(4096)),
                ("status", varchar(20)),
                ("source_db", varchar(64)),
                ("target_db", varchar(64)),
                ("target_table", _NAME),
                ("watermark", varchar(32)),
                ("trigger", varchar(32)),
                ("message", varchar(1024)),
            ),
            _streams,
        ),
        SystemTable(
            "ins_stream_tasks",
            (
                ("stream_name", _NAME),
                ("db_name", varchar(64)),
                ("task_id", varchar(64)),
                ("type", varchar(16)),
                ("node_id", varchar(128)),
                ("status", varchar(20)),
                ("start_time", TIMESTAMP),
                ("last_update", TIMESTAMP),
                ("processed_version", BIGINT),
                ("last_batch_id", BIGINT),
                ("rows_in", BIGINT),
                ("rows_out", BIGINT),
                ("recalculated", BIGINT),
                ("notifications_sent", BIGINT),
                ("notifications_failed", BIGINT),
                ("last_error", varchar(1024)),
            ),
            _stream_tasks,
        ),
        SystemTable(
            "ins_users",
            (
                ("name", varchar(24)),
                ("super", TINYINT),
                ("enable", TINYINT),
                ("sysinfo", TINYINT),
                ("createdb", TINYINT),
                ("create_time", TIMESTAMP),
                ("allowed_host", varchar(49152)),
            ),
            _users,
            sysinfo=True,
        ),
        SystemTable(
            "ins_user_privileges",
            (
                ("user_name", varchar(24)),
                ("privilege", varchar(10)),
                ("db_name", varchar(65)),
                ("table_name", varchar(193)),
                ("condition", varchar(49152)),
            ),
            _user_privileges,
            sysinfo=True,
        ),
        SystemTable(
            "ins_columns",
            (
                ("table_name", _NAME),
                ("db_name", varchar(64)),
                ("table_type", varchar(21)),
                ("col_name", varchar(64)),
                ("col_type", varchar(32)),
                ("col_length", INT),
                ("col_precision", INT),
                ("col_scale", INT),
                ("col_nullable", INT),
                ("col_source", varchar(576)),
            ),
            _columns,
        ),
        SystemTable(
            "ins_dnodes",
            (
                ("id", INT),
                ("endpoint", varchar(134)),
                ("vnodes", SMALLINT),
                ("support_vnodes", SMALLINT),
                ("status", varchar(10)),
                ("create_time", TIMESTAMP),
                ("reboot_time", TIMESTAMP),
                ("note", varchar(256)),
            ),
            _dnodes,
            sysinfo=True,
        ),
        SystemTable(
            "ins_functions",
            (
                ("name", varchar(64)),
                ("comment", varchar(255)),
                ("aggregate", INT),
                ("output_type", varchar(31)),
                ("create_time", TIMESTAMP),
                ("code_len", INT),
                ("bufsize", INT),
                ("func_language", varchar(31)),
                ("func_body", varchar(16384)),
                ("func_version", INT),
            ),
            _none,
        ),
        SystemTable("ins_configs", (("name", varchar(64)), ("value", varchar(64))), _configs),
        SystemTable(
            "ins_cluster",
            (
                ("id", BIGINT),
                ("name", varchar(134)),
                ("uptime", INT),
                ("create_time", TIMESTAMP),
                ("version", varchar(10)),
                ("expire_time", TIMESTAMP),
            ),
            _cluster,
            sysinfo=True,
        ),
        SystemTable(
            "ins_mnodes",
            (
                ("id", INT),
                ("endpoint", varchar(134)),
                ("role", varchar(12)),
                ("status", varchar(9)),
                ("create_time", TIMESTAMP),
                ("role_time", TIMESTAMP),
            ),
            _mnodes,
            sysinfo=True,
        ),
        SystemTable(
            "ins_qnodes",
            (("id", INT), ("endpoint", varchar(134)), ("create_time", TIMESTAMP)),
            _sysinfo_none("ins_qnodes"),
            sysinfo=True,
        ),
        SystemTable(
            "ins_snodes",
            (("id", INT), ("endpoint", varchar(134)), ("create_time", TIMESTAMP)),
            _sysinfo_none("ins_snodes"),
            sysinfo=True,
        ),
        SystemTable(
            "ins_vgroups",
            (
                ("vgroup_id", INT),
                ("db_name", varchar(64)),
                ("tables", INT),
                *(
                    (f"v{i}_{part}", SMALLINT if part == "dnode" else varchar(9))
                    for i in range(1, 5)
                    for part in ("dnode", "status")
                ),
                ("cacheload", INT),
                ("cacheelements", INT),
                ("tsma", TINYINT),
            ),
            _vgroups,
            sysinfo=True,
        ),
        SystemTable(
            "ins_vnodes",
            (
                ("dnode_id", INT),
                ("vgroup_id", INT),
                ("db_name", varchar(64)),
                ("status", varchar(9)),
                ("role_time", TIMESTAMP),
                ("start_time", TIMESTAMP),
                ("restored", BOOL),
            ),
            _vnodes,
            sysinfo=True,
        ),
        # objects tdweb does not have (TDengine's TMQ topics, indexes, views, compactions): their
        # tables exist with TDengine's columns and no rows; CREATE TOPIC / INDEX / VIEW are refused
        SystemTable(
            "ins_topics",
            (
                ("topic_name", varchar(192)),
                ("db_name", varchar(64)),
                ("create_time", TIMESTAMP),
                ("sql", varchar(1024)),
                ("schema", varchar(16384)),
                ("meta", varchar(4)),
                ("type", varchar(8)),
            ),
            _none,
        ),
        SystemTable(
            "ins_subscriptions",
            (
                ("topic_name", varchar(256)),
                ("consumer_group", varchar(192)),
                ("vgroup_id", INT),
                ("consumer_id", varchar(32)),
                ("user", varchar(23)),
                ("fqdn", varchar(128)),
                ("offset", varchar(64)),
                ("rows", BIGINT),
            ),
            _none,
        ),
        SystemTable(
            "ins_indexes",
            (
                ("index_name", varchar(192)),
                ("db_name", varchar(64)),
                ("table_name", varchar(192)),
                ("vgroup_id", INT),
                ("create_time", TIMESTAMP),
                ("column_name", varchar(192)),
                ("index_type", varchar(192)),
            ),
            _none,
        ),
        SystemTable(
            "ins_views",
            (
                ("view_name", varchar(192)),
                ("db_name", varchar(64)),
                ("effective_user", varchar(23)),
                ("create_time", TIMESTAMP),
                ("type", varchar(128)),
                ("query_sql", varchar(1024)),
                ("parameters", varchar(2048)),
                ("default_values", varchar(2048)),
                ("target_table", varchar(192)),
            ),
            _none,
        ),
        SystemTable(
            "ins_compacts",
            (("compact_id", INT), ("db_name", varchar(64)), ("start_time", TIMESTAMP)),
            _none,
        ),
        SystemTable(
            "ins_dnode_variables",
            (("dnode_id", INT), ("name", varchar(64)), ("value", varchar(4096)), ("scope", varchar(8))),
            _dnode_variables,
            sysinfo=True,
        ),
    )
}

_IP = varchar(22)
_APP = varchar(24)
PERF_TABLES: dict[str, SystemTable] = {
    t.name: t
    for t in (
        SystemTable(
            "perf_connections",
            (
                ("conn_id", INT),
                ("user", varchar(24)),
                ("app", _APP),
                ("pid", INT),
                ("end_point", varchar(134)),
                ("login_time", TIMESTAMP),
                ("last_access", TIMESTAMP),
                ("user_app", _APP),
                ("user_ip", _IP),
            ),
            _none,
        ),
        SystemTable(
            "perf_queries",
            (
                ("kill_id", varchar(64)),
                ("query_id", BIGINT),
                ("conn_id", INT),
                ("app", _APP),
                ("pid", INT),
                ("user", varchar(24)),
                ("end_point", _IP),
                ("create_time", TIMESTAMP),
                ("exec_usec", BIGINT),
                ("stable_query", BOOL),
                ("sub_query", BOOL),
                ("sub_num", INT),
                ("sub_status", varchar(1000)),
                ("sql", varchar(1024)),
                ("user_app", _APP),
                ("user_ip", _IP),
            ),
            _none,
        ),
        SystemTable(
            "perf_apps",
            (
                ("app_id", BIGINT),
                ("ip", varchar(16)),
                ("pid", INT),
                ("name", _APP),
                ("start_time", TIMESTAMP),
                ("insert_req", BIGINT),
                ("insert_row", BIGINT),
                ("insert_time", BIGINT),
                ("insert_bytes", BIGINT),
                ("fetch_bytes", BIGINT),
                ("query_time", BIGINT),
                ("slow_query", BIGINT),
                ("total_req", BIGINT),
                ("current_req", BIGINT),
                ("last_access", TIMESTAMP),
            ),
            _none,
        ),
        SystemTable(
            "perf_consumers",
            (
                ("consumer_id", varchar(32)),
                ("consumer_group", varchar(192)),
                ("client_id", varchar(256)),
                ("user", varchar(24)),
                ("fqdn", varchar(128)),
                ("status", varchar(20)),
                ("topics", varchar(204)),
                ("up_time", TIMESTAMP),
                ("subscribe_time", TIMESTAMP),
                ("rebalance_time", TIMESTAMP),
                ("parameters", varchar(256)),
            ),
            _none,
        ),
        SystemTable(
            "perf_trans",
            (
                ("id", INT),
                ("create_time", TIMESTAMP),
                ("stage", varchar(12)),
                ("oper", varchar(16)),
                ("db", varchar(64)),
                ("stable", _NAME),
                ("failed_times", INT),
                ("last_exec_time", TIMESTAMP),
                ("last_action_info", varchar(512)),
            ),
            _none,
        ),
    )
}
SYSTEM_TABLES: dict[str, dict[str, SystemTable]] = {SYSTEM_DB: TABLES, PERF_DB: PERF_TABLES}
"""System database name -> its tables."""


def system_source(ex: SystemView, name: ast.TableName, sql: str) -> tuple[Source, pa.Table]:
    """The resolved system table and its current rows (Arrow, logical column names; timestamps as
    UTC ``timestamp[ms]``).

    Raises:
        SqlError: TABLE_NOT_EXIST for an unknown system table, positioned at its name when known.
    """
    dbname = PERF_DB if (name.db or ex.default_db or "").lower() == PERF_DB else SYSTEM_DB
    tables = SYSTEM_TABLES[dbname]
    st = tables.get(name.name.lower())
    if st is None:
        raise SqlError(
            f"table {dbname}.{name.name} does not exist (system tables: {', '.join(sorted(tables))})",
            sql=sql or None,
            offset=name.span.start if name.span else None,
            code=Code.TABLE_NOT_EXIST,
        )
    cols = tuple(Column(n, t, n) for n, t in st.columns)
    table = Table(dbname, st.name, "normal", cols)
    rows = st.rows(ex)
    arrays = []
    for i, (_n, t) in enumerate(st.columns):
        values = [r[i] for r in rows]
        if t.name == "TIMESTAMP":
            arrays.append(pa.array(values, pa.int64()).cast(pa.timestamp("ms", tz="UTC")))
        else:
            arrays.append(pa.array(values, t.arrow("ms")))
    data = pa.Table.from_arrays(arrays, names=[n for n, _ in st.columns])
    columns = {n.lower(): (n, t) for n, t in st.columns}
    db = PERF_DATABASE if dbname == PERF_DB else SYSTEM_DATABASE
    return Source(db, table, table, columns), data
