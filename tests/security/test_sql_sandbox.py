"""The SQL front door admits TDengine's language only (docs/decisions.md "SQL sandbox and limits").

Findings reproduced here, each through the real executor: any signed-in user read any file the
server could read through DuckDB's table functions (``select * from read_csv_auto('/etc/passwd')``
returned rows, ``read_blob('<var>/tdweb.sqlite3-wal')`` the metadata DB), also from a 3.3.7 stream
computation; ``select * from duckdb_settings()`` answered HTTP 500. The fix: an allow-list of
TDengine's functions, node types and ``[db.]table`` names in front of DuckDB and Spark
(``spark_workers/sql/sandbox.py``), and DuckDB itself locked down behind it (``duck.py``).

Codes are written as TDengine prints them (``taoserror.h``): 0x264D Invalid function name,
0x2644 Permission denied, 0x2600 syntax error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.query.duck import DuckSession
from spark_workers.query.planner import resolve
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_expression
from spark_workers.sql.scope import Scope
from spark_workers.sql.translate import to_sql
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

INVALID_FUNCTION_NAME = 0x264D  # TSDB_CODE_PAR_INVALID_FUNCTION_NAME
PERMISSION_DENIED = 0x2644  # TSDB_CODE_PAR_PERMISSION_DENIED
SYNTAX_ERROR = 0x2600  # TSDB_CODE_PAR_SYNTAX_ERROR
NOT_SUPPORTED = Code.NOT_SUPPORTED
TABLE_NOT_EXIST = 0x2603
WRONG_VALUE_TYPE = 0x2605
T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC
SECRET = "tdweb-secret-line-7f3a"


class Env:
    """A lake with database ``d`` (supertable ``st``, subtables ``c1``, ``c2``), an executor over
    it, and files the server can read but users must not: ``secret.csv`` and a stand-in for the
    metadata DB's WAL next to the lake (``var/``)."""

    def __init__(self, root: Path) -> None:
        self.var = root / "var"
        self.var.mkdir()
        self.secret = self.var / "secret.csv"
        self.secret.write_text(f"name,value\n{SECRET},1\n")
        self.wal = self.var / "tdweb.sqlite3-wal"
        self.wal.write_bytes(SECRET.encode())
        self.lake = Lake(self.var / "lake")
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC", default_db="d")
        self.ex.execute(
            "create database d; create stable st (ts timestamp, a int, b int) tags (g int);"
            "create table c1 using st tags (1); create table c2 using st tags (2);"
            f"insert into c1 values ({T0}, 1, 10) ({T0 + 1000}, 2, 20) c2 values ({T0}, 3, 30)"
        )

    def sql(self, template: str) -> str:
        return template.format(secret=self.secret, wal=self.wal, lake=self.lake.root)

    def refused(self, template: str) -> SqlError:
        sql = self.sql(template)
        with pytest.raises(SqlError) as info:
            self.ex.execute(sql)
        e = info.value
        assert SECRET not in e.desc
        assert not any(w in e.desc for w in ("Error:", "Exception", "DuckDB")), e.desc  # DuckDB's words
        return e


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def _at(e: SqlError, sql: str, token: str) -> None:
    """The error is positioned at the first occurrence of ``token`` in ``sql``."""
    assert e.position is not None, e.desc
    assert e.position.offset == sql.index(token), (e.desc, sql)


# (query, token the error points at, code, word the message names)
FILE_READS = [
    ("select * from read_csv_auto('{secret}')", "read_csv_auto", PERMISSION_DENIED, "read_csv_auto"),
    ("select * from read_text('/etc/hostname')", "read_text", PERMISSION_DENIED, "read_text"),
    ("select * from read_blob('{wal}')", "read_blob", PERMISSION_DENIED, "read_blob"),
    (
        "select * from read_parquet('{lake}/*/*/*/*.parquet')",
        "read_parquet",
        PERMISSION_DENIED,
        "read_parquet",
    ),
    ("select * from '{secret}'", "'", PERMISSION_DENIED, "string"),
    ('select * from "{secret}"', '"', PERMISSION_DENIED, "string"),
    ("select * from sniff_csv('{secret}')", "sniff_csv", PERMISSION_DENIED, "sniff_csv"),
    ("select * from parquet_metadata('{secret}')", "parquet_metadata", PERMISSION_DENIED, "parquet_metadata"),
    ("select * from query_table('st')", "query_table", PERMISSION_DENIED, "query_table"),
    ("select * from query('select 1')", "query", PERMISSION_DENIED, "query"),
    ("select * from duckdb_settings()", "duckdb_settings", PERMISSION_DENIED, "duckdb_settings"),
    ("select * from pragma_version()", "pragma_version", PERMISSION_DENIED, "pragma_version"),
    # in a subquery, a CTE, a join, WHERE
    (
        "select * from st where a in (select length(content) from read_text('{secret}'))",
        "read_text",
        PERMISSION_DENIED,
        "read_text",
    ),
    (
        "with x as (select * from read_csv_auto('{secret}')) select * from x",
        "read_csv_auto",
        PERMISSION_DENIED,
        "read_csv_auto",
    ),
    (
        "select * from st join read_csv_auto('{secret}') f on 1 = 1",
        "read_csv_auto",
        PERMISSION_DENIED,
        "read_csv_auto",
    ),
    ("select * from st where getenv('HOME') is not null", "getenv", INVALID_FUNCTION_NAME, "getenv"),
    ("select getenv('HOME')", "getenv", INVALID_FUNCTION_NAME, "getenv"),
    ("select current_setting('temp_directory')", "current_setting", INVALID_FUNCTION_NAME, "current_setting"),
    ("select a, read_text('{secret}') from st", "read_text", INVALID_FUNCTION_NAME, "read_text"),
    (
        "select list_transform([a], x -> x + 1) from st",
        "list_transform",
        INVALID_FUNCTION_NAME,
        "list_transform",
    ),
    ("select columns('a') from st", "columns", INVALID_FUNCTION_NAME, "columns"),
    ("select * from a.b.xyz", "xyz", SYNTAX_ERROR, "two parts"),
]


@pytest.mark.parametrize(
    ("template", "token", "code", "word"), FILE_READS, ids=[t[1] + str(i) for i, t in enumerate(FILE_READS)]
)
def test_duckdb_table_functions_and_files_are_refused_in_select(
    env: Env, template, token, code, word
) -> None:
    e = env.refused(template)
    assert e.code == code, e.desc
    assert word in e.desc
    _at(e, env.sql(template), token)


def test_unknown_function_error_is_tdengines(env: Env) -> None:
    e = env.refused("select * from st where a > 0 and read_text('x') is null")
    assert (e.code, e.message) == (INVALID_FUNCTION_NAME, "Invalid function name: read_text")


@pytest.mark.parametrize(
    ("sql", "word"),
    [
        ("select a ^ 1 from st", "^"),
        ("select * exclude (a) from st", "EXCLUDE"),
        ("select a from st group by all", "GROUP BY ALL"),
        ("with recursive x as (select 1) select * from x", "RECURSIVE"),
        ("select cast(a as json) from st", "JSON"),
        ("select a ->> '$.x' from st", "->>"),  # -> is TDengine's (JSON tags)
        ("select * from st natural join st", "NATURAL"),
        ("select * from (values (1)) v(a)", "VALUES"),
        ("select * from st tablesample 10%", "TABLESAMPLE"),
        ("select row_number() over (order by ts) from st", "OVER"),
        ("select 1 intersect select 2", "INTERSECT"),
    ],
)
def test_constructs_outside_tdengine_sql_are_syntax_errors(env: Env, sql: str, word: str) -> None:
    e = env.refused(sql)
    assert e.code in (SYNTAX_ERROR, INVALID_FUNCTION_NAME), e.desc
    assert word.lower() in e.desc.lower()


def test_tdengine_functions_not_implemented_are_not_supported(env: Env) -> None:
    # INTERP is implemented (query/interp.py): without its clause it is TDengine's 0x265D
    e = env.refused("select interp(a) from st")
    assert e.code == 0x265D and "Missing RANGE clause" in e.desc
    # anywhere but an INTERP query's select list it is refused by name
    e = env.refused("select a from st where interp(a) > 1")
    assert e.code == NOT_SUPPORTED and "interp" in e.desc
    # the geometry predicates run GEOS on GEOMETRY values only: an INT is TDengine's 0x2802
    e = env.refused("select st_intersects(a, a) from st")
    assert e.code == 0x2802 and "st_intersects" in e.desc


def test_cte_names_only_shadow_inside_their_scope(env: Env) -> None:
    # the outer sqlite_master is not the CTE: it must not reach DuckDB's own catalog view
    sql = "select * from (with sqlite_master as (select 1 x) select x from sqlite_master) q, sqlite_master"
    e = env.refused(sql)
    assert e.code == TABLE_NOT_EXIST and "sqlite_master" in e.desc
    assert e.position is not None and e.position.offset == sql.rindex("sqlite_master")
    # a later CTE is not visible in an earlier one
    e = env.refused("with x as (select * from duckdb_views), duckdb_views as (select 1) select * from x")
    assert e.code == TABLE_NOT_EXIST


def test_tdengine_sql_still_runs(env: Env) -> None:
    ex = env.ex
    assert ex.execute_one("select count(*), sum(a), avg(b), spread(a), last_row(b) from st").rows == [
        [3, 6, 20.0, 2.0, 20]
    ]
    rows = ex.execute_one(
        "with x as (select tbname t, a from st where a between 1 and 3) "
        "select t, cast(a as varchar(4)), abs(-a), concat('a', 'b'), timetruncate(now, 1d) is not null "
        "from x where t in (select tbname from st) order by a"
    ).rows
    assert [r[:4] for r in rows] == [["c1", "1", 1, "ab"], ["c1", "2", 2, "ab"], ["c2", "3", 3, "ab"]]
    assert ex.execute_one("select _wstart, count(*) from st partition by tbname interval(1s)").rows
    assert ex.execute_one("select a from c1 union all select a from c2").rows == [[1], [2], [3]]
    assert ex.execute_one("select count(*) from information_schema.ins_tables where db_name = 'd'").rows


def test_duckdb_failures_are_answered_in_tdengine_words(env: Env) -> None:
    e = env.refused("select * from st where a = 'abc'")
    assert e.code == WRONG_VALUE_TYPE and "abc" in e.desc
    for word in ("Conversion", "INT32", "Error:", "Binder"):
        assert word not in e.desc
    e = env.refused("select a, count(*) from st group by b")
    assert "Binder" not in e.desc and "GROUP BY" in e.desc


# ---------------------------------------------------------------------- streams


STREAMS = [
    # 3.3.7 PERIOD computation reading a file
    (
        "create stream s1 period(10s) from st into out1 as "
        "select _tlocaltime ts, content from read_text('/etc/hostname')",
        "read_text",
        PERMISSION_DENIED,
    ),
    (
        "create stream s2 period(10s) into out2 as select _tlocaltime ts, count(*) c from st "
        "where a in (select length(content) from read_blob('{wal}'))",
        "read_blob",
        PERMISSION_DENIED,
    ),
    # 3.3.7 window trigger over %%trows
    (
        "create stream s3 state_window(a) from st partition by tbname into out3 as "
        "select _twstart ts, count(*) c, current_setting('temp_directory') d from %%trows",
        "current_setting",
        INVALID_FUNCTION_NAME,
    ),
    (
        "create stream s4 state_window(a) from st partition by tbname "
        "stream_options(pre_filter(getenv('HOME') is not null)) into out4 as "
        "select _twstart ts, count(*) c from %%trows",
        "getenv",
        INVALID_FUNCTION_NAME,
    ),
    # legacy syntax
    (
        "create stream s5 into out5 as select _wstart, count(*), getenv('HOME') from st interval(10s)",
        "getenv",
        INVALID_FUNCTION_NAME,
    ),
    (
        "create stream s6 into out6 as select _wstart, count(*) from st "
        "where a in (select 1 from read_csv_auto('{secret}')) interval(10s)",
        "read_csv_auto",
        PERMISSION_DENIED,
    ),
    # the Spark backend's stage 1 (java_method / reflect run arbitrary Java)
    (
        "create stream s7 into out7 as select _wstart, count(*) from st "
        "where reflect('java.lang.System', 'getenv', 'HOME') is null interval(10s)",
        "reflect",
        INVALID_FUNCTION_NAME,
    ),
    (
        "create stream s8 into out8 subtable(java_method('java.lang.System', 'getenv', 'HOME')) as "
        "select _wstart, count(*) from st partition by tbname interval(10s)",
        "java_method",
        INVALID_FUNCTION_NAME,
    ),
]


@pytest.mark.parametrize(("template", "token", "code"), STREAMS, ids=[s[0].split()[2] for s in STREAMS])
def test_stream_computations_cannot_read_files(env: Env, template: str, token: str, code: int) -> None:
    e = env.refused(template)
    assert e.code == code, e.desc
    _at(e, env.sql(template), token)
    assert env.reg.list() == []  # nothing registered
    assert env.ex.catalog.table("d", f"out{template.split()[2][1:]}") is None  # no output table


def test_spark_translation_refuses_java_calls() -> None:
    for text in ("java_method('java.lang.Runtime', 'getRuntime')", "reflect('java.lang.System', 'exit', 0)"):
        with pytest.raises(SqlError) as info:
            to_sql(parse_expression(text), "spark", Scope())
        assert info.value.code == INVALID_FUNCTION_NAME
        assert text.split("(")[0] in info.value.message
    assert to_sql(parse_expression("abs(a) + 1"), "spark", Scope()) == "ABS(`a`) + 1"


# ---------------------------------------------------------------------- DuckDB, behind the front door


def test_a_raw_duckdb_session_cannot_read_outside_the_lake(env: Env) -> None:
    """Defence in depth: even SQL that slipped past the front door reads no file but the lake's
    data, cannot re-enable access, load extensions or scan Python objects."""
    with DuckSession(env.lake) as duck:
        con = duck.con
        for target in (
            "/etc/hostname",
            str(env.secret),
            str(env.wal),
            str(env.lake.root / "_catalog.sqlite"),
        ):
            with pytest.raises(duckdb.PermissionException):
                con.sql(f"select * from read_text('{target}')").fetchall()
        with pytest.raises(duckdb.PermissionException):
            con.sql(f"select * from read_csv_auto('{env.secret}')").fetchall()
        with pytest.raises(duckdb.PermissionException):
            con.sql("select * from glob('/etc/*')").fetchall()
        with pytest.raises(duckdb.PermissionException):
            con.execute("COPY (select 1) TO '/tmp/tdweb-sandbox-copy.csv'")
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"ATTACH '{env.var / 'x.db'}'")
        for setting in (
            "enable_external_access = true",
            "memory_limit = '100GB'",
            "allowed_directories = ['/']",
        ):
            with pytest.raises(duckdb.InvalidInputException, match="locked"):
                con.execute(f"SET {setting}")
        with pytest.raises(duckdb.Error):
            con.execute("LOAD httpfs")
        secret_frame = {"x": [SECRET]}  # noqa: F841 - a Python object DuckDB must not find by name
        with pytest.raises(duckdb.CatalogException):
            con.sql("select * from secret_frame").fetchall()
        # through the session's query(): a TDengine error without DuckDB's text or the path
        with pytest.raises(SqlError) as info:
            duck.query("select * from read_text('/etc/hostname')")
        assert info.value.code == PERMISSION_DENIED and "/etc" not in info.value.desc
        # the lake's own data still reads: snapshot views over its Parquet files
        src = resolve(env.lake.catalog, ast.TableName("st", "d"), "d")
        view = duck.register_source(src)
        assert duck.query(f"select count(*) n from {view}").column("n").to_pylist() == [3]
    with DuckSession(None) as duck:  # a session without a lake reads no files at all
        files = [
            os.path.join(d, f) for d, _, fs in os.walk(env.lake.root) for f in fs if f.endswith(".parquet")
        ]
        assert files
        with pytest.raises(duckdb.PermissionException):
            duck.con.sql(f"select * from read_parquet('{files[0]}')").fetchall()


@pytest.mark.django_db(transaction=True)  # /rest/sql checks passwords in a pool thread
def test_rest_answers_duckdb_settings_with_a_tdengine_error(client, admin, lake) -> None:  # type: ignore[no-untyped-def]
    """Was HTTP 500; now TDengine's error answer."""
    from tests.web.conftest import basic

    r = client.post(
        "/rest/sql",
        data=b"select * from duckdb_settings()",
        content_type="text/plain",
        HTTP_AUTHORIZATION=basic(),
    )
    body = json.loads(r.content)
    assert r.status_code == 200 and body["code"] == PERMISSION_DENIED, body
    r = client.post(
        "/rest/sql",
        data=b"select * from read_csv_auto('/etc/passwd')",
        content_type="text/plain",
        HTTP_AUTHORIZATION=basic(),
    )
    body = json.loads(r.content)
    assert r.status_code == 200 and body["code"] == PERMISSION_DENIED and "root:" not in r.content.decode()
