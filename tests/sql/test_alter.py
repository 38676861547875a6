"""ALTER DATABASE / STABLE / TABLE (TDengine SQL manual "Manage Databases", "Manage Supertables",
"Manage Tables"; ``statements/alter.py``) on the SQLite and the PostgreSQL catalog: stored rows
before and after each clause against a pandas model kept beside the table, INSERT after ALTER,
DESCRIBE / SHOW CREATE TABLE / ins_columns / ins_tags, TDengine's error codes with their positions,
privileges, the Delta table's evolution (no data file rewritten), and streams over an altered
trigger table (seed 002, "Database and Table Operations") through the local pipeline.

PostgreSQL is real: a database ``tdweb_alter_<random>`` of this run alone (two runs sharing one
database reset each other's catalog) on the server of ``TDWEB_TEST_PG_URL`` (default
``postgres://postgres@127.0.0.1:5432/postgres``), dropped afterwards; its catalog schema is reset
for each test. The PostgreSQL cases are skipped, saying why, only when that server cannot be
reached.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.access import Grant, Principal
from spark_workers.errors import Code, TdError
from spark_workers.lake import retention
from spark_workers.lake.catalog import PG_SCHEMA_NAME
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.sql import parse_one, render
from spark_workers.sql.ast import Span
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

ADMIN_URL = os.environ.get("TDWEB_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    """The URL of a fresh PostgreSQL database for this module's run (dropped afterwards)."""
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL unreachable at {ADMIN_URL}: {exc}")
    name = f"tdweb_alter_{uuid.uuid4().hex[:10]}"
    admin.execute(f"CREATE DATABASE {name}")
    try:
        yield ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


@pytest.fixture(params=["sqlite", "postgres"])
def catalog_url(request: pytest.FixtureRequest) -> str:
    """ "" (the SQLite catalog in the lake) or the run's PostgreSQL database, its catalog reset."""
    if request.param != "postgres":
        return ""
    import psycopg

    url = request.getfixturevalue("pg_database")
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA_NAME} CASCADE")
    return url


@pytest.fixture
def lake(tmp_path: Path, catalog_url: str) -> Lake:
    return Lake(tmp_path / "lake", catalog_url)


@pytest.fixture
def ex(lake: Lake) -> Executor:
    return Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")


def rows(ex: Executor, sql: str) -> list[list[Any]]:
    return [list(r) for r in ex.execute_one(sql).rows]


def error(ex: Executor, sql: str) -> TdError:
    with pytest.raises(TdError) as info:
        ex.execute_one(sql)
    return info.value


def frame(ex: Executor, sql: str) -> pd.DataFrame:
    res = ex.execute_one(sql)
    return pd.DataFrame([list(r) for r in res.rows], columns=[c.name for c in res.columns], dtype=object)


def same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Equal frames, NULL (None / NaN) equal to NULL, column names and order included."""
    want = want.reset_index(drop=True).astype(object).where(want.notna().reset_index(drop=True), None)
    got = got.astype(object).where(got.notna(), None)
    assert list(got.columns) == list(want.columns)
    assert got.values.tolist() == want.values.tolist()


# ------------------------------------------------------------------------------- supertables


def _seed_stable(ex: Executor, rng: np.random.Generator, n: int = 6) -> list[dict[str, Any]]:
    """Two subtables with random rows; returns the model: tbname, ts, v, s, loc, gid."""
    ex.execute(
        "create database d;"
        "create stable st (ts timestamp, v int, s varchar(5)) tags (loc varchar(8), gid int);"
        "create table a using st tags ('north', 1); create table b using st tags ('south', 2)"
    )
    recs = []
    for tb, loc, gid in (("a", "north", 1), ("b", "south", 2)):
        for k in range(n):
            v = int(rng.integers(-1000, 1000))
            s = "".join(rng.choice(list("abcdef"), size=int(rng.integers(1, 6))))
            recs.append({"tbname": tb, "ts": T0 + k * 1000, "v": v, "s": s, "loc": loc, "gid": gid})
            ex.execute_one(f"insert into {tb} values ({T0 + k * 1000}, {v}, '{s}')")
    return recs


def _model(recs: list[dict[str, Any]], cols: list[str]) -> pd.DataFrame:
    """The expected rows: ``cols`` of the model records, by tbname and ts (absent keys: NULL)."""
    df = pd.DataFrame([{c: r.get(c) for c in ["tbname", *cols]} for r in recs], dtype=object)
    return df.sort_values(["tbname", "ts"], kind="stable")


def _stored(ex: Executor, cols: list[str]) -> pd.DataFrame:
    return frame(ex, f"select tbname, {', '.join(cols)} from st order by tbname, ts")


def test_supertable_columns_evolve_and_existing_rows_keep_their_values(ex: Executor, lake: Lake) -> None:
    recs = _seed_stable(ex, np.random.default_rng(7))
    cols = ["ts", "v", "s", "loc", "gid"]
    same(_stored(ex, cols), _model(recs, cols))
    files_before = set(lake.delta("d", "st").file_uris())

    # ADD COLUMN: existing rows read NULL; a metadata-only Delta commit (no file rewritten)
    ex.execute_one("alter stable st add column w double")
    assert set(lake.delta("d", "st").file_uris()) == files_before
    assert lake.delta("d", "st").history(1)[0]["operation"] == "ADD COLUMN"
    ex.execute_one(f"insert into a values ({T0 + 10_000}, 5, 'new', 2.5)")
    recs.append({"tbname": "a", "ts": T0 + 10_000, "v": 5, "s": "new", "loc": "north", "gid": 1, "w": 2.5})
    cols = ["ts", "v", "s", "w", "loc", "gid"]
    same(_stored(ex, cols), _model(recs, cols))

    # DROP COLUMN: gone from SELECT *; nothing rewritten; a column added again under the same name
    # reads NULL for every earlier row, never the dropped values
    version = lake.version("d", "st")
    ex.execute_one("alter stable st drop column v")
    assert lake.version("d", "st") == version
    assert [c.name for c in ex.execute_one("select * from st").columns] == ["ts", "s", "w", "loc", "gid"]
    assert error(ex, "select v from st").code == Code.INVALID_COLUMN
    ex.execute_one("alter stable st add column v int")
    recs = [{**r, "v": None} for r in recs]
    ex.execute_one(f"insert into b (ts, s, v) values ({T0 + 20_000}, 'z', 77)")
    recs.append({"tbname": "b", "ts": T0 + 20_000, "v": 77, "s": "z", "loc": "south", "gid": 2})
    same(
        frame(ex, "select tbname, * from st order by tbname, ts"),
        _model(recs, ["ts", "s", "w", "v", "loc", "gid"]),
    )

    # MODIFY COLUMN: a longer VARCHAR keeps every value and takes longer ones; the limit is the new one
    ex.execute_one("alter stable st modify column s varchar(12)")
    ex.execute_one(f"insert into a (ts, s) values ({T0 + 30_000}, 'twelve_chars')")
    assert error(ex, f"insert into a (ts, s) values ({T0 + 31_000}, 'thirteen_char')").code != 0
    recs.append({"tbname": "a", "ts": T0 + 30_000, "s": "twelve_chars", "loc": "north", "gid": 1})
    same(_stored(ex, ["ts", "s", "w", "v"]), _model(recs, ["ts", "s", "w", "v"]))
    assert rows(ex, "describe st")[1][:3] == ["s", "VARCHAR", 12]

    # the catalog is durable: a new Lake on the same folder and catalog sees the same table
    again = Executor(Lake(lake.uri, lake.catalog.url or None), MemoryRegistry(), tz="UTC", default_db="d")
    same(_stored(again, ["ts", "s", "w", "v", "loc"]), _model(recs, ["ts", "s", "w", "v", "loc"]))


def test_supertable_tags_evolve_and_subtables_keep_their_values(ex: Executor) -> None:
    model = _model(_seed_stable(ex, np.random.default_rng(11), n=3), ["ts", "v", "s", "loc", "gid"])
    ex.execute_one("alter stable st rename tag loc place")
    model = model.rename(columns={"loc": "place"})
    same(_stored(ex, ["ts", "place", "gid"]), model[["tbname", "ts", "place", "gid"]])
    assert error(ex, "select loc from st").code == Code.INVALID_COLUMN

    ex.execute_one("alter stable st add tag loc int")  # the old name, free again: NULL everywhere
    model["loc"] = None
    ex.execute_one("alter stable st modify tag place varchar(20)")
    ex.execute_one("alter table a set tag place = 'far_far_north_pole', gid = 9, loc = 3")
    model.loc[model.tbname == "a", ["place", "gid", "loc"]] = ["far_far_north_pole", 9, 3]
    same(_stored(ex, ["ts", "v", "place", "gid", "loc"]), model[["tbname", "ts", "v", "place", "gid", "loc"]])

    ex.execute_one("alter stable st drop tag gid")
    ex.execute_one("alter stable st add tag gid bigint")  # a dropped tag's values never come back
    model["gid"] = None
    same(_stored(ex, ["ts", "place", "loc", "gid"]), model[["tbname", "ts", "place", "loc", "gid"]])

    # ins_tags, ins_columns, DESCRIBE and SHOW CREATE TABLE follow
    assert rows(
        ex, "select table_name, tag_name, tag_type, tag_value from information_schema.ins_tags "
        "where db_name = 'd' order by table_name, tag_name"
    ) == [
        ["a", "gid", "BIGINT", None], ["a", "loc", "INT", "3"],
        ["a", "place", "VARCHAR(20)", "far_far_north_pole"],
        ["b", "gid", "BIGINT", None], ["b", "loc", "INT", None], ["b", "place", "VARCHAR(20)", "south"],
    ]  # fmt: skip
    assert [r[:4] for r in rows(ex, "describe st")] == [
        ["ts", "TIMESTAMP", 8, ""], ["v", "INT", 4, ""], ["s", "VARCHAR", 5, ""],
        ["place", "VARCHAR", 20, "TAG"], ["loc", "INT", 4, "TAG"], ["gid", "BIGINT", 8, "TAG"],
    ]  # fmt: skip
    assert rows(ex, "select col_name from information_schema.ins_columns where table_name = 'st'") == [
        ["ts"], ["v"], ["s"]
    ]  # fmt: skip
    ex.execute_one("alter stable st comment 'weather' ttl 0")  # TTL 0: never expire, as tdweb does
    assert rows(ex, "show create table st")[0][1] == (
        "CREATE STABLE `st` (`ts` TIMESTAMP, `v` INT, `s` VARCHAR(5)) "
        "TAGS (`place` VARCHAR(20), `loc` INT, `gid` BIGINT) COMMENT 'weather'"
    )
    assert (
        rows(ex, "show create table a")[0][1]
        == "CREATE TABLE `a` USING `st` TAGS ('far_far_north_pole', 3, NULL)"
    )
    assert rows(
        ex, "select stable_name, columns, tags, table_comment from information_schema.ins_stables"
    ) == [["st", 3, 3, "weather"]]


# ------------------------------------------------------------------------------- normal tables


def test_normal_table_columns_add_drop_modify_rename(ex: Executor) -> None:
    ex.execute("create database d; create table t (ts timestamp, v int, s nchar(3), f float)")
    rng = np.random.default_rng(3)
    vs = rng.integers(0, 100, size=5)
    for k, v in enumerate(vs):
        ex.execute_one(f"insert into t values ({T0 + k}, {int(v)}, 'n{k}', {k / 2})")
    model = pd.DataFrame(
        {"ts": [T0 + k for k in range(5)], "v": vs.tolist(), "s": [f"n{k}" for k in range(5)],
         "f": [k / 2 for k in range(5)]}
    )  # fmt: skip

    ex.execute_one("alter table t rename column v val")
    model = model.rename(columns={"v": "val"})
    same(frame(ex, "select * from t order by ts"), model)
    assert error(ex, "select v from t").code == Code.INVALID_COLUMN

    ex.execute_one("alter table t modify column s nchar(10)")
    ex.execute_one("alter table t drop column f")
    ex.execute_one("alter table t add column b bool")
    model = model.drop(columns=["f"]).assign(b=None)
    ex.execute_one(f"insert into t values ({T0 + 9}, 1, 'ten chars!', true)")
    model.loc[len(model)] = [T0 + 9, 1, "ten chars!", True]
    same(frame(ex, "select * from t order by ts"), model)
    assert (
        rows(ex, "show create table t")[0][1]
        == "CREATE TABLE `t` (`ts` TIMESTAMP, `val` INT, `s` NCHAR(10), `b` BOOL)"
    )
    q = "select col_name, col_type from information_schema.ins_columns where table_name = 't'"
    assert rows(ex, q) == [
        ["ts", "TIMESTAMP"], ["val", "INT"], ["s", "NCHAR(10)"], ["b", "BOOL"]
    ]  # fmt: skip


# ------------------------------------------------------------------------------- errors


ERRORS = [
    # (statement, code, the text at the error's position)
    ("alter stable st drop column ts", Code.CANNOT_DROP_PRIMARY_KEY, "ts"),
    ("alter stable st add column v int", Code.COLUMN_ALREADY_EXIST, "v int"),
    ("alter stable st add column loc int", Code.TAG_ALREADY_EXIST, "loc int"),
    ("alter stable st add tag v int", Code.COLUMN_ALREADY_EXIST, "v int"),
    ("alter stable st add tag gid int", Code.TAG_ALREADY_EXIST, "gid int"),
    ("alter stable st drop column nope", Code.COLUMN_NOT_EXIST, "nope"),
    ("alter stable st drop tag nope", Code.TAG_NOT_EXIST, "nope"),
    ("alter stable st rename tag nope x", Code.TAG_NOT_EXIST, "nope"),
    ("alter stable st rename tag loc gid", Code.TAG_ALREADY_EXIST, "rename tag"),
    ("alter stable st modify column s varchar(4)", Code.INVALID_MODIFY_COL, "s varchar(4)"),
    ("alter stable st modify column v bigint", Code.INVALID_MODIFY_COL, "v bigint"),
    ("alter stable st modify tag loc nchar(20)", Code.INVALID_MODIFY_COL, "loc nchar(20)"),
    ("alter stable st rename column v w", Code.INVALID_ALTER_TABLE, "rename column"),
    ("alter stable a add column w int", Code.INVALID_ALTER_TABLE, "a add"),
    ("alter table a add column w int", Code.INVALID_ALTER_TABLE, "add column"),
    ("alter table t add tag g int", Code.INVALID_ALTER_TABLE, "add tag"),
    ("alter table t set tag loc = 'x'", Code.INVALID_ALTER_TABLE, "set tag"),
    ("alter table t drop column v", Code.INVALID_DROP_COL, "v"),
    ("alter table a set tag nope = 1", Code.TAG_NOT_EXIST, "nope = 1"),
    ("alter table a set tag gid = 'abc'", Code.WRONG_VALUE_TYPE, "'abc'"),
    ("alter table nope add column w int", Code.TABLE_NOT_EXIST, "nope"),
    ("alter stable nope add column w int", Code.STB_NOT_EXIST, "nope"),
    ("alter table st ttl 10", Code.INVALID_ALTER_TABLE, "ttl"),
    ("alter table t comment 'ok' keep 10", Code.NOT_SUPPORTED, "keep 10"),
    ("alter table t comment '" + "x" * 1025 + "'", Code.COMMENT_TOO_LONG, "comment"),
    ("alter stable st add column tbname int", Code.INVALID_COLUMN, "tbname"),
    ("alter table t add column w int primary key", Code.INVALID_ALTER_TABLE, "w int"),
    ("alter table t nothing", Code.SYNTAX_ERROR, "nothing"),
]


def test_errors_have_tdengine_codes_and_positions_and_change_nothing(ex: Executor) -> None:
    ex.execute(
        "create database d;"
        "create stable st (ts timestamp, v int, s varchar(5)) tags (loc varchar(8), gid int);"
        "create table a using st tags ('x', 1); create table t (ts timestamp, v int);"
        f"insert into a values ({T0}, 1, 'one'); insert into t values ({T0}, 2)"
    )
    before = [rows(ex, q) for q in ("describe st", "describe t", "select * from st", "select * from t")]
    for sql, code, at in ERRORS:
        e = error(ex, sql)
        assert e.code == code, (sql, hex(e.code), e.message)
        offset = getattr(e, "offset", None)
        assert offset is not None and sql[offset:].lower().startswith(at), (sql, offset, e.message)
    after = [rows(ex, q) for q in ("describe st", "describe t", "select * from st", "select * from t")]
    assert after == before


def test_alter_database_refuses_what_tdweb_does_not_have_and_names_it(ex: Executor) -> None:
    ex.execute_one("create database d keep 3650 replica 1")
    before = (rows(ex, "show create database d"), rows(ex, "select * from information_schema.ins_databases"))
    for sql, code, at in [
        ("alter database d buffer 64", Code.NOT_SUPPORTED, "buffer 64"),
        ("alter database d cachesize 2", Code.NOT_SUPPORTED, "cachesize"),
        ("alter database d keep 5", Code.INVALID_DB_OPTION, "keep 5"),
        ("alter database d keep 60,30", Code.INVALID_DB_OPTION, "keep 60,30"),
        ("alter database d keep_time_offset 24", Code.INVALID_DB_OPTION, "keep_time_offset"),
        ("alter database d cachemodel 'sometimes'", Code.INVALID_DB_OPTION, "cachemodel"),
        ("alter database d replica 1 wal_level 2", Code.NOT_SUPPORTED, "wal_level 2"),
        ("alter database d replica 3", Code.INVALID_OPERATION, "replica 3"),
        ("alter database d precision 'us'", Code.SYNTAX_ERROR, "precision"),
        ("alter database d duration 1d", Code.SYNTAX_ERROR, "duration"),
    ]:
        e = error(ex, sql)
        assert e.code == code, (sql, hex(e.code), e.message)
        offset = getattr(e, "offset", None)
        assert offset is not None and sql[offset:].lower().startswith(at), (sql, offset)
        word = at.split()[0].upper()
        assert word in e.message, e.message
    for same_value in (
        "alter database d replica 1",
        "alter database d keep 3650",
        "alter database d keep 3650d,87600h",
    ):
        assert error(ex, same_value).code == Code.DB_OPTION_UNCHANGED
    assert error(ex, "alter database nope keep 30").code == Code.DB_NOT_EXIST
    assert error(ex, "alter database d").code == Code.INCOMPLETE_SQL
    after = (rows(ex, "show create database d"), rows(ex, "select * from information_schema.ins_databases"))
    assert after == before


# ------------------------------------------------------------------------------- privileges


def test_alter_needs_write_on_the_database_and_alter_database_its_owner(lake: Lake) -> None:
    root = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    root.execute(
        "create database d; create stable st (ts timestamp, v int) tags (g int);"
        f"create table a using st tags (1); insert into a values ({T0}, 5)"
    )
    reader = Principal("alice", grants=(Grant("d", None, read=True), Grant("d", "st", write=True)))
    alice = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d", principal=reader)
    before = rows(root, "describe st"), rows(root, "select *, tbname, g from st")
    for sql in (
        "alter stable st add column w int",
        "alter stable st drop tag g",
        "alter table st comment 'x'",
    ):
        e = error(alice, sql)
        assert e.code == Code.PERMISSION_DENIED and getattr(e, "offset", None) == sql.index("st "), sql
    assert error(alice, "alter database d keep 10").code == Code.PERMISSION_DENIED
    assert (rows(root, "describe st"), rows(root, "select *, tbname, g from st")) == before
    # a subtable's tags are written with WRITE on its supertable (alice holds it)
    alice.execute_one("alter table a set tag g = 4")
    assert rows(root, "select g from a") == [[4]]

    writer = Principal("bob", grants=(Grant("d", None, read=True, write=True),))
    bob = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d", principal=writer)
    bob.execute_one("alter stable st add column w int")
    assert [r[0] for r in rows(root, "describe st")] == ["ts", "v", "w", "g"]
    # bob may write but does not own the database: ALTER DATABASE is its owner's
    assert error(bob, "alter database d replica 1").code == Code.PERMISSION_DENIED


# ------------------------------------------------------------------------------- streams


class Pipeline:
    """An executor plus a LocalRunner per stream, run after every statement (the local pipeline of
    tests/runtime: stage SQL on DuckDB, the window kernel, the sink)."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self.reg = MemoryRegistry()
        self.ex = Executor(lake, self.reg, tz="UTC", default_db="d")
        self.runners: list[LocalRunner] = []

    def stream(self, sql: str, name: str) -> None:
        self.ex.execute_one(sql)
        self.runners.append(LocalRunner.for_registered(self.lake, self.reg, name))

    def run(self, *stmts: str) -> None:
        for q in stmts:
            self.ex.execute_one(q)
            for r in self.runners:
                r.run()


def test_stream_over_an_altered_trigger_table_follows_seed_002(lake: Lake) -> None:
    p = Pipeline(lake)
    p.ex.execute(
        "create database d; create stable st (ts timestamp, v int, x int) tags (loc varchar(8), gid int);"
        "create table a using st tags ('n', 1); create table b using st tags ('s', 2)"
    )
    p.stream(
        "create stream s trigger at_once into out as "
        "select _wstart, count(*) c, sum(v) sv from st partition by loc interval(10s)",
        "s",
    )
    rng = np.random.default_rng(5)
    written: list[tuple[str, int, int]] = []

    def write(tb: str, k: int, extra: str = "") -> None:
        v = int(rng.integers(-50, 50))
        written.append((tb, T0 + k * 1000, v))
        cols = "(ts, v" + (", w" if extra else "") + ")"
        p.run(f"insert into {tb} {cols} values ({T0 + k * 1000}, {v}{extra})")

    for k in range(0, 12, 3):
        write("a", k)
        write("b", k + 1)
    # seed 002: adding and dropping trigger-table columns is "ignored; no additional handling":
    # the stream goes on with the same results over the rows written before and after
    p.run("alter stable st add column w double")
    p.run("alter stable st drop column x")
    for k in range(12, 30, 4):
        write("a", k, ", 1.5")
        write("b", k + 2, ", 2.5")
    # modifying the value of a tag the stream groups by is not allowed (seed 002): refused, unchanged
    e = error(p.ex, "alter table a set tag loc = 's'")
    assert e.code == Code.INVALID_OPERATION and "s" in e.message and "PARTITION BY" in e.message
    assert rows(p.ex, "select distinct loc from a") == [["n"]]
    p.run("alter table a set tag gid = 7")  # a tag it does not group by: allowed
    assert rows(p.ex, "select distinct gid from a") == [[7]]
    # dropping a tag it does not group by and adding one: ignored too
    p.run("alter stable st drop tag gid", "alter stable st add tag site int")
    for k in range(30, 50, 7):
        write("a", k, ", 0.5")
        write("b", k + 1)

    df = pd.DataFrame(written, columns=["tb", "ts", "v"])
    df["loc"] = df.tb.map({"a": "n", "b": "s"})
    df["w0"] = (df.ts - T0) // 10_000 * 10_000 + T0
    want = df.groupby(["loc", "w0"]).agg(c=("v", "size"), sv=("v", "sum")).reset_index()
    # AT_ONCE: the last window's row is its state after the last write
    # one output subtable per loc group: compare the groups' rows, whatever the subtables' names
    got: dict[str, list[list[int]]] = {}
    for tb, w0, c, sv in rows(p.ex, "select tbname, `_wstart`, c, sv from out order by tbname, `_wstart`"):
        got.setdefault(tb, []).append([w0, c, sv])
    expected = [g[["w0", "c", "sv"]].values.tolist() for _, g in want.groupby("loc")]
    assert sorted(got.values()) == sorted(expected)

    # once the stream is gone, the tag may change
    p.ex.execute_one("drop stream s")
    p.ex.execute_one("alter table a set tag loc = 's'")
    assert rows(p.ex, "select distinct loc from a") == [["s"]]


def test_conform_keeps_the_schema_a_stream_began_with() -> None:
    """``lake.changes.conform``: by name, missing fields NULL, extra fields left out, cast."""
    from spark_workers.lake.changes import conform

    began = pa.schema([("tbname", pa.string()), ("ts", pa.int64()), ("x", pa.int32()), ("s", pa.string())])
    now = pa.table(
        {"tbname": ["a", "b"], "w": [1.5, 2.5], "ts": [1, 2], "s": pa.array(["p", "q"], pa.large_string())}
    )
    out = conform(now, began)
    assert out.schema.equals(began)
    assert out.to_pylist() == [
        {"tbname": "a", "ts": 1, "x": None, "s": "p"},
        {"tbname": "b", "ts": 2, "x": None, "s": "q"},
    ]
    assert conform(out, began) is out


def test_virtual_tables_follow_a_renamed_column_and_read_null_for_a_dropped_one(ex: Executor) -> None:
    ex.execute(
        "create database d; create table t1 (ts timestamp, a int, b int, c int);"
        "create vtable v1 (ts timestamp, va int from t1.a, vb int from t1.b, vc int from t1.c);"
        f"insert into t1 values ({T0}, 1, 2, 3) ({T0 + 1000}, 4, 5, 6)"
    )
    ex.execute_one("alter table t1 rename column a aa")
    assert rows(ex, "select * from v1 order by ts") == [[T0, 1, 2, 3], [T0 + 1000, 4, 5, 6]]
    assert "`va` INT FROM `d`.`t1`.`aa`" in rows(ex, "show create vtable v1")[0][1]
    # a dropped column reads NULL through the virtual table, as a dropped table does
    ex.execute_one("alter table t1 drop column b")
    assert rows(ex, "select * from v1 order by ts") == [[T0, 1, None, 3], [T0 + 1000, 4, None, 6]]
    # references are by name (SHOW CREATE VTABLE shows `t1`.`b`): a new column b is read, and
    # the rows written before it read NULL, never the dropped column's values
    ex.execute_one("alter table t1 add column b int")
    ex.execute_one(f"insert into t1 values ({T0 + 2000}, 7, 8, 9)")  # ts, aa, c, b
    assert rows(ex, "select vb, vc from v1 order by ts") == [[None, 3], [None, 6], [9, 8]]


def test_a_stream_refuses_to_write_an_output_table_altered_to_another_shape(lake: Lake) -> None:
    """Seed 002: "User modifies or deletes an output table: ignored; (if a schema mismatch is
    detected at write time, an error is raised)"."""
    p = Pipeline(lake)
    p.ex.execute("create database d; create table t (ts timestamp, v int)")
    p.stream(
        "create stream s trigger at_once into out as "
        "select _wstart, count(*) c, sum(v) sv from t interval(10s)",
        "s",
    )
    p.run(f"insert into t values ({T0}, 3)")
    p.run("alter table out comment 'results'")  # not the shape: the stream goes on
    p.run(f"insert into t values ({T0 + 1000}, 4)")
    assert rows(p.ex, "select c, sv from out") == [[2, 7]]
    p.ex.execute_one("alter stable out drop column sv")
    p.ex.execute_one(f"insert into t values ({T0 + 2000}, 5)")
    with pytest.raises(TdError) as info:
        p.runners[0].run()
    assert "2 columns" in info.value.message and "produces 3" in info.value.message
    assert rows(p.ex, "select c from out") == [[2]]  # nothing of the refused batch written


def _plain(value: Any) -> Any:
    """A comparable form of a parsed statement: positions (spans) left out."""
    import dataclasses

    if isinstance(value, Span):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)},
        )
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER DATABASE d KEEP 3650 CACHEMODEL 'last_row'",
        "alter stable d.st add column `w x` varchar(20) comment 'c'",
        "ALTER TABLE t DROP COLUMN v",
        "alter table t modify column s nchar(30)",
        "alter table t rename column a b",
        "alter stable st add tag g int",
        "alter stable st drop tag g",
        "alter stable st modify tag g varchar(9)",
        "alter stable st rename tag g h",
        "alter table a set tag g = -3, h = 'x', t = now + 1s",
        "alter table t comment 'it''s' ttl 3",
        "alter vtable d.v add column c double from d.t.v",
        "alter vtable v alter column c set other.t.v",
        "alter vtable v alter column c set null",
        "alter vtable v rename column c c2",
    ],
)
def test_alter_statements_render_and_parse_back(sql: str) -> None:
    stmt = parse_one(sql)
    text = render(stmt)
    again = parse_one(text)
    assert _plain(again) == _plain(stmt), text
    assert render(again) == text


# type, literal, the value SELECT answers (TDengine's types; tdtypes.py storage table)
ADD_TYPES = [
    ("bool", "true", True),
    ("tinyint", "-5", -5),
    ("smallint", "300", 300),
    ("int", "70000", 70000),
    ("bigint", "9000000000", 9_000_000_000),
    ("tinyint unsigned", "250", 250),
    ("smallint unsigned", "65000", 65000),
    ("int unsigned", "4000000000", 4_000_000_000),
    ("bigint unsigned", "18000000000000000000", 18_000_000_000_000_000_000),
    ("float", "1.5", 1.5),
    ("double", "2.25", 2.25),
    ("varchar(10)", "'abc'", "abc"),
    ("nchar(4)", "'día'", "día"),
    ("timestamp", str(T0 + 1), T0 + 1),
]


def test_every_type_can_be_added_and_written(ex: Executor) -> None:
    ex.execute(f"create database d; create table t (ts timestamp, v int); insert into t values ({T0}, 1)")
    for i, (tdtype, _, _) in enumerate(ADD_TYPES):
        ex.execute_one(f"alter table t add column c{i} {tdtype}")
    # read before any data file holds the new columns: NULL in each, typed
    assert rows(ex, "select * from t") == [[T0, 1] + [None] * len(ADD_TYPES)]
    assert rows(ex, "select count(c0), max(c4), last(c13) from t") == [[0, None, None]]
    for i, (_, literal, _) in enumerate(ADD_TYPES):
        ex.execute_one(f"insert into t (ts, c{i}) values ({T0 + 1000 * (i + 1)}, {literal})")
    got = rows(ex, "select * from t order by ts")
    assert got[0] == [T0, 1] + [None] * len(ADD_TYPES)  # the first row reads NULL in every one
    for i, (tdtype, _, want) in enumerate(ADD_TYPES):
        row = got[i + 1]
        assert row[2 + i] == want, tdtype
        assert row[1] is None and all(v is None for j, v in enumerate(row[2:]) if j != i), tdtype


def test_a_replacing_write_after_drop_column_keeps_the_row_key_rule(ex: Executor, lake: Lake) -> None:
    """``Lake.write(replace_times=True)`` (a legacy stream's updated window, composite key) on a
    table whose Delta schema still holds a dropped column."""
    ex.execute(
        "create database d; create table t (ts timestamp, k int primary key, v int, x int);"
        f"insert into t values ({T0}, 1, 10, 100) ({T0}, 2, 20, 200) ({T0 + 1000}, 1, 30, 300)"
    )
    ex.execute_one("alter table t drop column x")
    db, table = lake.catalog.require_database("d"), lake.catalog.require_table("d", "t")
    data = pa.table({"tbname": ["t"], "ts": pa.array([T0], pa.int64()), "k": pa.array([5], pa.int32()),
                     "v": pa.array([50], pa.int32())})  # fmt: skip
    lake.write(db, table, data, replace_times=True)
    assert rows(ex, "select * from t order by ts, k") == [[T0, 5, 50], [T0 + 1000, 1, 30]]


def test_set_tag_is_refused_for_the_grouping_tags_of_337_streams_too(ex: Executor) -> None:
    """Seed 002: the tag is a grouping key of a 3.3.7 stream (PARTITION BY tbname, gid) or appears
    in a grouping expression of another database's stream; a tag no stream groups by changes."""
    ex.execute(
        "create database d; create database e;"
        "create stable st (ts timestamp, v int) tags (loc varchar(8), gid int, zone int);"
        "create table a using st tags ('n', 1, 7)"
    )
    ex.execute_one(
        "create stream s2 interval(10s) sliding(10s) from st partition by tbname, gid into out2 "
        "as select _twstart, count(*) from %%trows"
    )
    ex.execute_one(
        "create stream e.s3 into e.out3 as select _wstart, count(*) from d.st "
        "partition by concat(loc, 'x') interval(10s)"
    )
    for sql, stream in (
        ("alter table a set tag gid = 3", "s2"),
        ("alter table a set tag zone = 8, loc = 'q'", "s3"),
    ):
        e = error(ex, sql)
        assert e.code == Code.INVALID_OPERATION and stream in e.message, e.message
    assert rows(ex, "show create table a")[0][1] == "CREATE TABLE `a` USING `st` TAGS ('n', 1, 7)"
    ex.execute_one("alter table a set tag zone = 8, gid = 1")  # gid unchanged: no grouping changes
    assert rows(ex, "show create table a")[0][1] == "CREATE TABLE `a` USING `st` TAGS ('n', 1, 8)"


def test_add_tag_stops_at_128_tags(ex: Executor) -> None:
    tags = ", ".join(f"t{i} int" for i in range(127))
    ex.execute(f"create database d; create stable st (ts timestamp, v int) tags ({tags})")
    ex.execute_one("alter stable st add tag t127 int")
    sql = "alter stable st add tag t128 int"
    e = error(ex, sql)
    assert e.code == Code.TOO_MANY_TAGS and getattr(e, "offset", None) == sql.index("t128")
    assert len(rows(ex, "describe st")) == 2 + 128


def test_catalog_alter_database_is_what_show_create_database_and_ins_databases_show(ex: Executor) -> None:
    """``Catalog.alter_database`` (where an option ALTER DATABASE honours is stored) on both
    catalogs: the new options are SHOW CREATE DATABASE's and ins_databases' values."""
    ex.execute_one("create database d keep 3650")
    ex.lake.catalog.alter_database("d", {"KEEP": "30d", "PRECISION": "ms"})
    assert "KEEP 30d" in rows(ex, "show create database d")[0][1]
    assert rows(ex, "select name, `keep` from information_schema.ins_databases where name = 'd'") == [
        ["d", "30d"]
    ]
    with pytest.raises(TdError) as info:
        ex.lake.catalog.alter_database("nope", {})
    assert info.value.code == Code.DB_NOT_EXIST


# ------------------------------------------------------------------------------- KEEP (retention)

DAY_MS = 86_400_000


def _seed_ages(ex: Executor, rng: np.random.Generator, ages_h: list[int], now_ms: int) -> pd.DataFrame:
    """Rows ``age`` hours before ``now_ms`` in subtables a, b of st and in normal table t; the
    model (table, ts, v) of what was written."""
    recs = []
    for age in ages_h:
        ts = now_ms - age * 3_600_000
        for tb in ("a", "b", "t"):
            v = int(rng.integers(-1000, 1000))
            recs.append({"tb": tb, "ts": ts, "v": v})
            ex.execute_one(f"insert into {tb} values ({ts}, {v})")
    return pd.DataFrame(recs)


def _stored_rows(lake: Lake, name: str) -> set[tuple[str, int]]:
    """(tbname, ts ms) of every row in the Delta table, read past the query layer."""
    db = lake.catalog.require_database("d")
    data = lake.read(db, lake.catalog.require_table("d", name), columns=["ts"])
    ts = data.column("ts").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).to_pylist()
    return set(zip(data.column("tbname").to_pylist(), ts, strict=True))


def _queried(ex: Executor) -> set[tuple[str, int, int]]:
    got = {(r[0], r[1], r[2]) for r in rows(ex, "select tbname, ts, v from st")}
    return got | {("t", r[0], r[1]) for r in rows(ex, "select ts, v from t")}


def test_keep_hides_refuses_and_removes_rows_older_than_now_minus_keep(ex: Executor, lake: Lake) -> None:
    """TDengine SQL manual, "Manage Databases", KEEP: rows older than now - KEEP are not returned,
    not written (0x060B) and removed; KEEP_TIME_OFFSET delays the removal only. Ages are whole
    hours + 30 min away from every cut, so the seconds the test takes never move a row across."""
    now_ms = int(time.time() * 1000) - 1_800_000
    ex.execute(
        "create database d duration 1d; create stable st (ts timestamp, v int) tags (g int);"
        "create table a using st tags (1); create table b using st tags (2);"
        "create table t (ts timestamp, v int)"
    )
    rng = np.random.default_rng(7)
    ages_h = sorted(int(h) for h in rng.choice(np.arange(0, 60 * 24), size=40, replace=False))
    model = _seed_ages(ex, rng, ages_h, now_ms)
    assert _queried(ex) == set(model.itertuples(index=False, name=None))  # no KEEP: every row
    ex.execute_one("alter database d keep 30d keep_time_offset 20")
    live = model[model.ts >= now_ms - 30 * DAY_MS]
    assert _queried(ex) == set(live.itertuples(index=False, name=None))
    # stored: rows up to 20 h past KEEP are hidden but not yet removed
    stored = model[model.ts >= now_ms - 30 * DAY_MS - 20 * 3_600_000]
    for name, tbs in (("st", ("a", "b")), ("t", ("t",))):
        want = {(r.tb, r.ts) for r in stored.itertuples() if r.tb in tbs}
        assert _stored_rows(lake, name) == want
    # the periodic job (lake.retain) at a later clock: 10 days on, the cut moves with it
    later = now_ms + 10 * DAY_MS
    deleted = retention.expire(lake, lake.catalog.require_database("d"), now_ms=later)
    kept = model[model.ts >= later - 30 * DAY_MS - 20 * 3_600_000]
    assert deleted == len(stored) - len(kept)
    assert _stored_rows(lake, "t") == {(r.tb, r.ts) for r in kept.itertuples() if r.tb == "t"}
    # INSERT older than KEEP: 0x060B at the value, nothing written (the statement is atomic)
    old_ts = now_ms - 31 * DAY_MS
    sql = f"insert into a values ({now_ms}, 1) ({old_ts}, 2)"
    e = error(ex, sql)
    assert e.code == Code.TIMESTAMP_OUT_OF_RANGE and getattr(e, "offset", None) == sql.index(str(old_ts))
    assert (now_ms, 1) not in {(r[0], r[1]) for r in rows(ex, "select ts, v from a")}
    ex.execute_one(f"insert into a values ({now_ms - 29 * DAY_MS}, 3)")
    assert rows(ex, f"select v from a where ts = {now_ms - 29 * DAY_MS}") == [[3]]
    shown = rows(ex, "select `keep`, keep_time_offset from information_schema.ins_databases where name = 'd'")
    assert shown == [["30d", 20]]


def test_keep_of_create_database_and_its_checks(ex: Executor) -> None:
    now_ms = int(time.time() * 1000)
    for sql, at in [
        ("create database d keep 10", "keep"),  # < 3 * DURATION (10d by default)
        ("create database d duration 1d keep 2", "keep"),
        ("create database d duration 1d keep 30,20", "keep"),
        ("create database d duration 1d keep 1,2,3,4", "keep"),
        ("create database d duration 1d keep 30w", "keep"),
        ("create database d cachemodel 'all'", "cachemodel"),
    ]:
        e = error(ex, sql)
        assert e.code == Code.INVALID_DB_OPTION, (sql, hex(e.code), e.message)
        assert at.upper() in e.message
    assert all(r[0] != "d" for r in rows(ex, "show databases"))
    ex.execute_one("create database d duration 1d keep 3d,72h,96h cachemodel 'last_row'")
    ex.execute_one("create table t (ts timestamp, v int)")
    ex.execute_one(f"insert into t values ({now_ms - 2 * DAY_MS}, 1)")
    e = error(ex, f"insert into t values ({now_ms - 5 * DAY_MS}, 2)")  # keep2 = 96h = 4 days
    assert e.code == Code.TIMESTAMP_OUT_OF_RANGE
    assert rows(ex, "select v from t") == [[1]]
    assert "CACHEMODEL 'last_row'" in rows(ex, "show create database d")[0][1]
    assert rows(ex, "select cachemodel from information_schema.ins_databases where name = 'd'") == [
        ["last_row"]
    ]
    # CACHEMODEL only speeds up LAST / LAST_ROW in TDengine: stored, the results are the same
    before = rows(ex, "select last_row(v), last(v) from t")
    ex.execute_one("alter database d cachemodel 'none'")
    assert rows(ex, "select last_row(v), last(v) from t") == before == [[1, 1]]


def test_a_user_who_does_not_own_a_database_cannot_change_its_keep(lake: Lake) -> None:
    root = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    now_ms = int(time.time() * 1000)
    root.execute(
        "create database d duration 1d; create table t (ts timestamp, v int);"
        f"insert into t values ({now_ms - 5 * DAY_MS}, 1)"
    )
    writer = Principal("bob", grants=(Grant("d", None, read=True, write=True),))
    bob = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d", principal=writer)
    for sql in (
        "alter database d keep 3",
        "alter database d keep_time_offset 1",
        "alter database d cachemodel 'both'",
    ):
        assert error(bob, sql).code == Code.PERMISSION_DENIED, sql
    assert rows(root, "select v from t") == [[1]]
    assert "KEEP" not in rows(root, "show create database d")[0][1]
    # bob's own database is his to alter
    bob_owner = Principal("bob", createdb=True)
    Executor(lake, MemoryRegistry(), tz="UTC", principal=bob_owner).execute_one(
        "create database bobs duration 1d"
    )
    Executor(lake, MemoryRegistry(), tz="UTC", principal=bob_owner).execute_one("alter database bobs keep 3")


def _race_writer(root: str, url: str, n: int) -> list[str]:
    ex = Executor(Lake(root, url or None), MemoryRegistry(), tz="UTC", default_db="d")
    errors = []
    for i in range(n):
        try:
            ex.execute_one(f"insert into a (ts, v) values ({T0 + i * 1000}, {i})")
        except TdError as e:
            errors.append(e.message)
    return errors


def _race_alterer(root: str, url: str, n: int) -> list[str]:
    ex = Executor(Lake(root, url or None), MemoryRegistry(), tz="UTC", default_db="d")
    errors = []
    for i in range(n):
        try:
            ex.execute_one(f"alter stable st add column c{i} int")
            if i % 2:
                ex.execute_one(f"alter stable st drop column c{i - 1}")
        except TdError as e:
            errors.append(e.message)
    return errors


def test_alter_from_another_process_while_rows_are_written_loses_nothing(lake: Lake) -> None:
    """ADD / DROP COLUMN in one process while another inserts into the same supertable (Delta
    optimistic concurrency; each side retries a commit it lost), on both catalogs: every row
    arrives, no error."""
    import multiprocessing

    ex = Executor(lake, MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, v int) tags (g int);"
        "create table a using st tags (1)"
    )
    root, url, n = str(lake.uri), lake.catalog.url, 60
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        w = pool.apply_async(_race_writer, (root, url, n))
        a = pool.apply_async(_race_alterer, (root, url, 10))
        assert (w.get(timeout=300), a.get(timeout=300)) == ([], [])
    assert rows(ex, "select count(*), sum(v) from st") == [[n, sum(range(n))]]
    assert [r[0] for r in rows(ex, "describe st")] == ["ts", "v", "c1", "c3", "c5", "c7", "c9", "g"]


def test_alter_vtable_sources_are_stored_by_both_catalogs(ex: Executor) -> None:
    """ALTER VTABLE and ALTER STABLE of a virtual supertable on the SQLite and the PostgreSQL
    catalog (``Catalog.alter_table`` stores a virtual table's references; DROP COLUMN of a virtual
    supertable forgets its children's); the rows read are the sources' (statements/alter.py)."""
    ex.execute(
        "create database d; create table t1 (ts timestamp, a int); create table t2 (ts timestamp, b int);"
        f"insert into t1 values ({T0}, 1) ({T0 + 1000}, 2); insert into t2 values ({T0 + 1000}, 20);"
        "create stable vst (ts timestamp, x int, y int) tags (g int) virtual 1;"
        "create vtable c1 (x from t1.a, y from t2.b) using vst tags (1);"
        "create vtable v (ts timestamp, p int from t1.a)"
    )
    ex.execute_one("alter vtable v add column q int from t2.b")
    ex.execute_one("alter vtable v rename column p pp")
    assert rows(ex, "select ts, pp, q from v order by ts") == [[T0, 1, None], [T0 + 1000, 2, 20]]
    ex.execute_one("alter vtable c1 alter column x set t2.b")
    assert rows(ex, "select ts, x, y from c1 order by ts") == [[T0 + 1000, 20, 20]]
    ex.execute_one("alter stable vst drop column y")
    ex.execute_one("alter stable vst add column y int")  # the dropped name has no source any more
    assert rows(ex, "select ts, x, y from c1 order by ts") == [[T0 + 1000, 20, None]]
    ddl = rows(ex, "show create vtable c1")[0][1]
    assert "`x` FROM `d`.`t2`.`b`" in ddl and "`y` FROM" not in ddl, ddl
