"""The metadata a TDengine client or BI tool asks for: ``information_schema.ins_columns`` /
``ins_dnodes`` / ``ins_functions`` / ``ins_configs``, ``performance_schema``, SHOW VARIABLES /
LOCAL VARIABLES / DNODES / FUNCTIONS / TABLE TAGS, and the system functions (``DATABASE()``...),
each filtered by the client's privileges as TDengine does."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from spark_workers.access import Grant, Principal
from spark_workers.errors import Code, SqlError, TdError
from spark_workers.lake.store import Lake
from spark_workers.query.system_functions import SERVER_VERSION
from spark_workers.sql import ast
from spark_workers.sql.parser import parse
from spark_workers.statements.executor import Executor
from spark_workers.statements.sysinfo import PERF_TABLES
from spark_workers.streams.registry import MemoryRegistry

ST_COLUMNS = [("ts", "TIMESTAMP", 8), ("v", "INT", 4), ("w", "DOUBLE", 8), ("note", "VARCHAR(20)", 20)]
ST_TAGS = {"res_a": (1, "x"), "res_b": (2, None), "other": (3, "z")}


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


@pytest.fixture
def ex(lake: Lake) -> Executor:
    e = Executor(lake, MemoryRegistry(), tz="Asia/Shanghai")
    cols = ", ".join(f"{n} {t}" for n, t, _ in ST_COLUMNS)
    e.execute(
        f"create database d1; create database d2; create stable d1.st ({cols}) tags (site int, nm varchar(8))"
    )
    for name, (site, nm) in ST_TAGS.items():
        e.execute_one(
            f"create table d1.{name} using d1.st tags ({site}, {'null' if nm is None else repr(nm)})"
        )
    e.execute("create table d1.secret (ts timestamp, pin int); create table d2.n (ts timestamp, k bigint)")
    return e


def as_user(lake: Lake, principal: Principal, **kw: object) -> Executor:
    return Executor(lake, MemoryRegistry(), tz="UTC", principal=principal, **kw)  # type: ignore[arg-type]


ALICE = Principal("alice", grants=(Grant("d1", "st", read=True),))  # READ on one supertable only


def rows(ex: Executor, sql: str) -> list[list[object]]:
    return [list(r) for r in ex.execute_one(sql).rows]


def error(ex: Executor, sql: str) -> TdError:
    with pytest.raises(TdError) as info:
        ex.execute_one(sql)
    return info.value


# ---------------------------------------------------------------------- ins_columns


def test_ins_columns_lists_every_column_of_every_table_but_no_tag(ex: Executor) -> None:
    got = rows(
        ex,
        "select table_type, col_name, col_type, col_length, col_nullable from information_schema.ins_columns "
        "where db_name = 'd1' and table_name = 'st'",
    )
    assert got == [["SUPER_TABLE", n, t, length, int(i > 0)] for i, (n, t, length) in enumerate(ST_COLUMNS)]
    # a subtable has its supertable's columns; tags are ins_tags', not ins_columns' (TDengine)
    sub = rows(
        ex, "select col_name, table_type from information_schema.ins_columns where table_name = 'res_b'"
    )
    assert sub == [[n, "CHILD_TABLE"] for n, _t, _l in ST_COLUMNS]
    per_table = dict(
        rows(ex, "select table_name, count(*) from information_schema.ins_columns group by table_name")
    )
    assert per_table == {"st": 4, "res_a": 4, "res_b": 4, "other": 4, "secret": 2, "n": 2}
    assert rows(ex, "select col_type from information_schema.ins_columns where col_name = 'k'") == [
        ["BIGINT"]
    ]


def test_ins_columns_and_tags_show_a_user_only_the_tables_they_may_read(lake: Lake, ex: Executor) -> None:
    alice = as_user(lake, ALICE)
    tables = {r[0] for r in rows(alice, "select distinct table_name from information_schema.ins_columns")}
    assert tables == {"st", *ST_TAGS}  # not d1.secret, nothing of d2
    assert rows(
        alice, "select count(*) from information_schema.ins_columns where col_name in ('pin', 'k')"
    ) == [[0]]
    assert {r[0] for r in rows(alice, "select distinct db_name from information_schema.ins_tags")} == {"d1"}
    # a user without any grant sees no table of anyone
    nobody = as_user(lake, Principal("bob"))
    assert rows(nobody, "select count(*) from information_schema.ins_columns") == [[0]]
    assert rows(nobody, "select count(*) from information_schema.ins_tags") == [[0]]
    # the owner of a database sees its tables, and only them
    carol = as_user(lake, Principal("carol", createdb=True))
    carol.execute("create database c1; create table c1.mine (ts timestamp, secret_col int)")
    assert {r[0] for r in rows(carol, "select distinct table_name from information_schema.ins_columns")} == {
        "mine"
    }
    assert "mine" not in {r[0] for r in rows(alice, "select table_name from information_schema.ins_columns")}


# ---------------------------------------------------------------------- SHOW TABLE TAGS


def test_show_table_tags_lists_each_subtable_with_its_tags(ex: Executor) -> None:
    res = ex.execute_one("show table tags from d1.st")
    assert [c.name for c in res.columns] == ["tbname", "site", "nm"]
    assert [c.type.sql for c in res.columns] == ["VARCHAR(192)", "INT", "VARCHAR(8)"]
    assert sorted(map(list, res.rows)) == sorted([n, s, v] for n, (s, v) in ST_TAGS.items())
    picked = ex.execute_one("show table tags nm as label, tbname from st from d1")
    assert [c.name for c in picked.columns] == ["label", "tbname"]
    assert list(map(list, picked.rows)) == [[ST_TAGS[n][1], n] for n in sorted(ST_TAGS)]  # by name
    assert rows(ex, "show table tags from d1.res_a") == [["res_a", 1, "x"]]  # a subtable: its own row


def test_show_table_tags_errors_in_tdengine_words(lake: Lake, ex: Executor) -> None:
    sql = "show table tags tbname, nope from d1.st"
    e = error(ex, sql)
    assert e.code == Code.INVALID_COLUMN and "nope" in e.desc
    assert getattr(e, "offset", None) == sql.index("nope")
    assert error(ex, "show table tags from d1.secret").code == Code.INVALID_OPERATION
    assert error(ex, "show table tags from d1.missing").code == Code.TABLE_NOT_EXIST
    bob = as_user(lake, Principal("bob", grants=(Grant("d1", "secret", read=True),)))
    assert error(bob, "show table tags from d1.st").code == Code.PERMISSION_DENIED
    assert rows(as_user(lake, ALICE), "show table tags site from d1.st") == [
        [ST_TAGS[n][0]] for n in sorted(ST_TAGS)
    ]


# ---------------------------------------------------------------------- SYSINFO


@pytest.mark.parametrize(
    "sql",
    [
        "select * from information_schema.ins_dnodes",
        "show dnodes",
        "select * from information_schema.ins_dnode_variables",
        "show dnode 1 variables",
        "show users",
        "select * from information_schema.ins_users",
        "show cluster",
        "show mnodes",
        "show qnodes",
        "show snodes",
        "show vnodes",
        "select * from information_schema.ins_vgroups",
        "select * from information_schema.ins_cluster",
    ],
)
def test_sysinfo_0_users_are_refused_system_information(lake: Lake, sql: str) -> None:
    hidden = as_user(lake, Principal("dave", sysinfo=False))
    e = error(hidden, sql)
    assert e.code == Code.NO_RIGHTS and "SYSINFO" in e.desc
    assert as_user(lake, Principal("erin", sysinfo=True)).execute_one(sql).columns  # SYSINFO 1 may


def test_ins_dnodes_is_this_server(ex: Executor) -> None:
    res = ex.execute_one("show dnodes")
    assert [c.name for c in res.columns] == [
        "id", "endpoint", "vnodes", "support_vnodes", "status", "create_time", "reboot_time", "note"
    ]  # fmt: skip
    (row,) = res.rows
    assert row[0] == 1 and row[1] == socket.gethostname() and row[4] == "ready"
    assert row[2] == len(rows(ex, "show d1.vgroups")) * 2  # one vgroup per database: d1, d2


def test_cluster_mnodes_vgroups_and_vnodes_are_this_server_and_its_databases(
    lake: Lake, ex: Executor
) -> None:
    """SHOW CLUSTER / MNODES / VGROUPS / VNODES with TDengine's columns (``systable.c``): one node,
    this process; one vgroup per database the client may see, counting its subtables and normal
    tables."""
    cols = [c.name for c in ex.execute_one("show cluster").columns]
    assert cols == ["id", "name", "uptime", "create_time", "version", "expire_time"]
    ((_, name, uptime, _, version, _),) = rows(ex, "show cluster")
    assert name == socket.gethostname() and uptime >= 0 and version == SERVER_VERSION
    assert [r[1:5] for r in rows(ex, "show mnodes")] == [
        [socket.gethostname(), "leader", "ready", rows(ex, "show mnodes")[0][4]]
    ]
    got = rows(
        ex, "select db_name, tables, v1_dnode, v1_status from information_schema.ins_vgroups order by db_name"
    )
    assert got == [["d1", len(ST_TAGS) + 1, 1, "leader"], ["d2", 1, 1, "leader"]]
    assert [r[1] for r in rows(ex, "show d2.vgroups")] == ["d2"]
    assert sorted(r[2] for r in rows(ex, "show vnodes")) == ["d1", "d2"]
    # a user sees the vgroups of the databases they hold a privilege in only
    erin = as_user(lake, Principal("erin", sysinfo=True, grants=(Grant("d2", None, read=True),)))
    assert [r[1] for r in rows(erin, "select * from information_schema.ins_vgroups")] == ["d2"]


@pytest.mark.parametrize(
    ("sql", "table"),
    [
        ("show topics", "ins_topics"),
        ("show subscriptions", "ins_subscriptions"),
        ("show views", "ins_views"),
        ("show compacts", "ins_compacts"),
        ("show indexes from d1.st", "ins_indexes"),
        ("show indexes from st from d1", "ins_indexes"),
        ("show qnodes", "ins_qnodes"),
        ("show snodes", "ins_snodes"),
    ],
)
def test_objects_tdweb_does_not_have_are_listed_empty_with_tdengines_columns(
    ex: Executor, sql: str, table: str
) -> None:
    res = ex.execute_one(sql)
    described = [r[0] for r in rows(ex, f"describe information_schema.{table}")]
    assert [c.name for c in res.columns] == described and res.rows == []


def test_show_indexes_of_a_table_the_user_may_not_read(lake: Lake, ex: Executor) -> None:
    e = error(as_user(lake, ALICE), "show indexes from d1.secret")
    assert e.code == Code.PERMISSION_DENIED


# ---------------------------------------------------------------------- variables, functions


def test_show_variables_are_the_servers_real_settings(ex: Executor) -> None:
    got = dict(rows(ex, "show variables"))
    assert got["timezone"] == "Asia/Shanghai" and got["charset"] == "UTF-8"
    assert dict(rows(ex, "show cluster variables like 'time%'")) == {"timezone": "Asia/Shanghai"}
    assert rows(ex, "select value from information_schema.ins_configs where name = 'charset'") == [["UTF-8"]]
    local = ex.execute_one("show local variables like '%zone'")
    assert [c.name for c in local.columns] == ["name", "value", "scope", "category", "info"]
    assert [r[:2] for r in local.rows] == [["timezone", "Asia/Shanghai"]]
    assert [r[1:3] for r in rows(ex, "show dnode 1 variables like 'charset'")] == [["charset", "UTF-8"]]
    assert rows(ex, "show dnode 2 variables") == []


def test_no_user_defined_functions_and_empty_performance_schema(ex: Executor) -> None:
    funcs = ex.execute_one("show functions")
    assert funcs.rows == [] and [c.name for c in funcs.columns][:4] == [
        "name",
        "comment",
        "aggregate",
        "output_type",
    ]
    assert rows(ex, "select count(*) from information_schema.ins_functions") == [[0]]
    for table in PERF_TABLES:  # tdweb keeps no connections, running queries or apps: no rows, never invented
        assert rows(ex, f"select count(*) from performance_schema.{table}") == [[0]]
    conns = ex.execute_one("show connections")
    assert [c.name for c in conns.columns][:3] == ["conn_id", "user", "app"] and conns.rows == []
    assert ex.execute_one("show queries").columns[0].name == "kill_id"
    sql = "select * from performance_schema.perf_nothing"
    e = error(ex, sql)
    assert e.code == Code.TABLE_NOT_EXIST and "perf_queries" in e.desc
    ex.execute_one("use performance_schema")
    assert rows(ex, "select count(*) from perf_apps") == [[0]]


def test_show_user_and_system_databases_and_alive(lake: Lake, ex: Executor) -> None:
    assert [r[0] for r in rows(ex, "show user databases")] == ["d1", "d2"]
    assert [r[0] for r in rows(ex, "show system databases")] == ["information_schema", "performance_schema"]
    assert [r[0] for r in rows(as_user(lake, ALICE), "show user databases")] == ["d1"]
    alive = ex.execute_one("show cluster alive")
    assert [c.name for c in alive.columns] == ["status"] and alive.rows == [[1]]
    assert rows(ex, "show d1.alive") == [[1]]
    assert error(as_user(lake, Principal("bob")), "show d1.alive").code == Code.PERMISSION_DENIED


def test_describe_a_system_table(ex: Executor) -> None:
    got = rows(ex, "describe information_schema.ins_columns")
    assert [r[:3] for r in got[:2]] == [["table_name", "VARCHAR", 192], ["db_name", "VARCHAR", 64]]
    cols = ex.execute_one("select * from information_schema.ins_columns limit 1").columns
    assert [r[0] for r in got] == [c.name for c in cols]  # what DESCRIBE says is what SELECT * returns
    ex.execute_one("use performance_schema")
    assert [r[0] for r in rows(ex, "desc perf_connections")][:2] == ["conn_id", "user"]
    sql = "describe information_schema.ins_nothing"
    e = error(ex, sql)
    assert e.code == Code.TABLE_NOT_EXIST and getattr(e, "offset", None) == sql.index("information_schema")


# ---------------------------------------------------------------------- system functions


def test_system_functions_are_the_sessions_constants(lake: Lake, ex: Executor) -> None:
    res = ex.execute_one("select database(), server_version(), client_version(), current_user()")
    assert [c.name for c in res.columns] == [
        "database()",
        "server_version()",
        "client_version()",
        "current_user()",
    ]
    assert res.rows[0][0] is None  # no current database yet
    assert res.rows[0][1:] == [SERVER_VERSION, SERVER_VERSION, f"root@{socket.gethostname()}"]
    ex.execute_one("use d2")
    assert rows(ex, "select database() as db") == [["d2"]]
    assert rows(ex, "select table_name from information_schema.ins_tables where db_name = database()") == [
        ["n"]
    ]
    alice = as_user(lake, ALICE, default_db="d1")
    assert rows(alice, "select user(), database()") == [[f"alice@{socket.gethostname()}", "d1"]]
    assert rows(alice, "select count(*) from (select database() d) where d = 'd1'") == [[1]]


# ---------------------------------------------------------------------- parsing (TDengine's sql.y)


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("show variables", ast.Show(what="variables")),
        ("SHOW CLUSTER VARIABLES LIKE 'time%'", ast.Show(what="variables", like="time%")),
        ("show local variables", ast.Show(what="local_variables")),
        ("show dnode 1 variables like 'c%'", ast.Show(what="dnode_variables", dnode=1, like="c%")),
        ("show dnodes", ast.Show(what="dnodes")),
        ("show functions", ast.Show(what="functions")),
        ("show connections", ast.Show(what="connections")),
        ("show queries", ast.Show(what="queries")),
        ("show apps", ast.Show(what="apps")),
        (
            "show table tags from st from d1",
            ast.Show(what="table_tags", db="d1", target=ast.TableName("st", "d1")),
        ),
        (
            "show table tags tbname, site s, nm as n from d1.st",
            ast.Show(
                what="table_tags",
                db="d1",
                target=ast.TableName("st", "d1"),
                items=[("tbname", None, 16), ("site", "s", 24), ("nm", "n", 32)],
            ),
        ),
    ],
)
def test_show_statements_parse(sql: str, want: ast.Show) -> None:
    (got,) = parse(sql)
    assert isinstance(got, ast.Show)
    assert (got.what, got.db, got.like, got.dnode, got.items) == (
        want.what,
        want.db,
        want.like,
        want.dnode,
        want.items,
    )
    if want.target is not None:
        assert got.target is not None and (got.target.name, got.target.db) == (
            want.target.name,
            want.target.db,
        )


@pytest.mark.parametrize(
    ("sql", "token"),
    [("show dnode x variables", "x"), ("show table tags site", ""), ("show everything", "everything")],
)
def test_bad_show_statements_are_positioned_syntax_errors(sql: str, token: str) -> None:
    with pytest.raises(SqlError) as info:
        parse(sql)
    assert info.value.code in (Code.SYNTAX_ERROR, Code.INCOMPLETE_SQL), info.value.message
    assert info.value.offset == (sql.index(token) if token else len(sql))


def test_a_system_function_takes_no_argument(ex: Executor) -> None:
    sql = "select 1, database('d1')"
    e = error(ex, sql)
    assert e.code == Code.INVALID_FUNCTION and "database expects no arguments" in e.desc
    assert getattr(e, "offset", None) == sql.index("database")


def test_show_tables_of_a_system_database(lake: Lake, ex: Executor) -> None:
    names = {r[0] for r in rows(ex, "show information_schema.tables")}
    assert {"ins_columns", "ins_dnodes", "ins_users", "ins_tables"} <= names
    assert rows(ex, "show information_schema.stables") == []
    hidden = as_user(lake, Principal("dave", sysinfo=False), default_db="information_schema")
    visible = {r[0] for r in rows(hidden, "show tables")}
    assert "ins_columns" in visible and not visible & {"ins_dnodes", "ins_users", "ins_user_privileges"}
    assert {r[0] for r in rows(ex, "show performance_schema.tables like 'perf_q%'")} == {"perf_queries"}


def test_a_stream_computation_cannot_use_a_system_function(ex: Executor) -> None:
    sql = (
        "create stream s1 trigger at_once into d1.out as select _wstart, database() from d1.st interval(10s)"
    )
    e = error(ex, sql)
    assert e.code == Code.NOT_SUPPORTED and "session" in e.desc
    assert getattr(e, "offset", None) == sql.index("database")
    assert ex.registry.list() == []
