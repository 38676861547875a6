"""The catalog on both backends (issue 14, "A shared, transactional catalog"): SQLite in the lake
folder and PostgreSQL (``TDWEB_CATALOG_URL``) give the same answers and errors; concurrent DDL from
two processes on the PostgreSQL catalog (``CREATE TABLE ... USING ... TAGS`` and INSERT
auto-creation into one supertable) loses no table and creates none twice.

PostgreSQL is real: ``TDWEB_TEST_PG_URL`` (default ``postgres://postgres@127.0.0.1:5432/postgres``)
names a server where the test may create and drop a database ``tdweb_pgcat_<random>``; the
PostgreSQL cases are skipped, saying why, only when that server cannot be reached.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_workers.errors import CatalogError, Code
from spark_workers.lake.catalog import PG_SCHEMA_NAME, Catalog, Column, ColumnRef, Table
from spark_workers.tdtypes import TdType

ADMIN_URL = os.environ.get("TDWEB_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
NOW_MS = 1_764_000_000_000  # beyond 32 bits: created_ms must be a BIGINT in PostgreSQL
BASE_MS = 1_735_689_600_000
N_TABLES = 20


def _db_url(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this module (dropped afterwards)."""
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL unreachable at {ADMIN_URL}: {exc}")
    name = f"tdweb_pgcat_{uuid.uuid4().hex[:10]}"
    admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _db_url(name)
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def _pg_reset(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA_NAME} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def make_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A factory of catalogs over one empty store: ``make_catalog()`` opens another handle."""
    url = ""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        _pg_reset(url)
    return lambda: Catalog(tmp_path / "lake", url)


@pytest.fixture
def cat(make_catalog: Any) -> Catalog:
    return make_catalog()


def col(name: str, type_: str, length: int | None = None) -> Column:
    return Column(name, TdType.parse(type_, length), name.lower())


def supertable(db: str = "d", name: str = "st") -> Table:
    tags = (col("site", "VARCHAR", 8), col("n", "INT"), col("at", "TIMESTAMP"))
    return Table(db, name, "super", (col("ts", "TIMESTAMP"), col("v", "DOUBLE")), tags)


def sub(name: str, stable: str = "st", **tags: Any) -> Table:
    return Table("d", name, "sub", (), (), stable, tags)


def with_schema(cat: Catalog) -> None:
    cat.create_database("d", precision="us", options={"DURATION": "1d"}, now_ms=NOW_MS, owner="u1")
    cat.create_table(supertable(), now_ms=NOW_MS)


def codes_of(fn: Any) -> int:
    with pytest.raises(CatalogError) as info:
        fn()
    return info.value.code


def test_databases_round_trip_and_refuse_duplicates(cat: Catalog) -> None:
    assert cat.create_database("Air", precision="ns", options={"KEEP": 3650}, now_ms=NOW_MS, owner="u1")
    assert not cat.create_database("AIR", if_not_exists=True)
    assert codes_of(lambda: cat.create_database("air")) == Code.DB_ALREADY_EXIST
    cat.create_database("b", now_ms=NOW_MS + 1)
    got = cat.require_database("aiR")
    assert (got.name, got.precision, got.options, got.owner) == ("Air", "ns", {"KEEP": 3650}, "u1")
    assert [(d.name, created) for d, created in cat.databases()] == [("Air", NOW_MS), ("b", NOW_MS + 1)]
    assert codes_of(lambda: cat.require_database("nope")) == Code.DB_NOT_EXIST
    assert codes_of(lambda: cat.require_database(None)) == Code.DB_NOT_SPECIFIED


def test_table_names_are_unique_across_kinds_with_tdengine_codes(cat: Catalog) -> None:
    with_schema(cat)
    assert cat.create_table(sub("A", site="n", n=1, at=5))
    normal = Table("d", "plain", "normal", supertable().columns)
    assert cat.create_table(normal)
    assert codes_of(lambda: cat.create_table(supertable(name="ST"))) == Code.STB_ALREADY_EXIST
    assert codes_of(lambda: cat.create_table(Table("d", "a", "normal", normal.columns))) == (
        Code.TABLE_ALREADY_EXIST
    )
    assert not cat.create_table(sub("a", site="x"), if_not_exists=True)
    with pytest.raises(CatalogError, match="not a subtable of st"):
        cat.create_table(sub("plain", site="x"), if_not_exists=True)
    assert codes_of(lambda: cat.create_table(sub("c", stable="nost"))) == Code.STB_NOT_EXIST
    assert codes_of(lambda: cat.create_table(supertable(db="nodb"))) == Code.DB_NOT_EXIST
    t = cat.require_table("D", "a")
    assert (t.name, t.kind, t.stable, t.storage, t.tag_values) == (
        "A",
        "sub",
        "st",
        "st",
        {"site": "n", "n": 1, "at": 5},
    )
    assert [c.name for c in t.columns] == ["ts", "v"]
    assert codes_of(lambda: cat.require_table("d", "missing")) == Code.TABLE_NOT_EXIST


def test_create_subtables_skips_existing_and_refuses_a_foreign_name_atomically(cat: Catalog) -> None:
    with_schema(cat)
    cat.create_table(sub("a", site="n"))
    assert (
        cat.create_subtables([sub("a", site="n"), sub("b", site="s"), sub("c", site="e")], now_ms=NOW_MS) == 2
    )
    cat.create_table(supertable(name="other"))
    version = cat.version()
    with pytest.raises(CatalogError, match="not a subtable of st"):
        cat.create_subtables([sub("new1", site="x"), sub("other", site="x")])
    assert cat.table("d", "new1") is None  # the whole batch rolled back
    assert cat.version() == version
    assert [r[0] for r in cat.tables("d", kinds=("sub",))] == ["a", "b", "c"]
    assert cat.create_subtables([sub("e", site="1"), sub("E", site="2")]) == 1  # first one wins
    assert cat.require_table("d", "e").tag_values == {"site": "1"}
    with pytest.raises(CatalogError, match="not a subtable of other"):
        cat.create_subtables([sub("f"), sub("f", stable="other")])
    assert cat.table("d", "f") is None
    many = [sub(f"m{i}", n=i) for i in range(1203)]  # more names than one lookup chunk
    assert cat.create_subtables(many[::2]) == 602
    assert cat.create_subtables(many) == 601
    assert len(cat.tables("d", stable="st")) == 4 + 1203


def test_listing_filters_and_virtual_references_round_trip(cat: Catalog) -> None:
    with_schema(cat)
    cat.create_table(sub("a", site="n"), now_ms=NOW_MS)
    cat.create_table(Table("d", "plain", "normal", supertable().columns), now_ms=NOW_MS + 5)
    refs = {"v": ColumnRef("d", "plain", "v")}
    vt = Table("d", "vt", "normal", supertable().columns, virtual=True, refs=refs)
    cat.create_table(vt, now_ms=NOW_MS + 6)
    assert cat.tables("d") == [
        ("a", "sub", "st", NOW_MS),
        ("plain", "normal", None, NOW_MS + 5),
        ("st", "super", None, NOW_MS),
        ("vt", "normal", None, NOW_MS + 6),
    ]
    assert [r[0] for r in cat.tables("d", virtual=True)] == ["vt"]
    assert [r[0] for r in cat.tables("d", kinds=("normal",), virtual=False)] == ["plain"]
    assert [r[0] for r in cat.tables("d", stable="ST")] == ["a"]
    got = cat.require_table("d", "vt")
    assert (got.virtual, got.refs, got.type_name) == (True, refs, "VIRTUAL_NORMAL_TABLE")


def test_subtable_tags_are_typed_and_follow_set_tag(make_catalog: Any) -> None:
    cat = make_catalog()
    with_schema(cat)
    cat.create_subtables([sub("b", site="s", n=2, at=1_000), sub("a", site="n", n=None, at=2_000)])
    tags = cat.subtable_tags("d", "st")
    assert tags.column_names == ["tbname", "site", "n", "at"]
    assert str(tags.schema.field("at").type) == "timestamp[us, tz=UTC]"  # database precision "us"
    assert tags.column("at").cast("int64").to_pylist() == [2_000, 1_000]
    assert tags.to_pydict()["n"] == [None, 2]
    other = make_catalog()  # another process's handle sees the change through the version row
    assert other.subtable_tags("d", "st").to_pydict()["site"] == ["n", "s"]
    cat.set_tag_value("d", "A", "SITE", "w")
    assert other.subtable_tags("d", "st").to_pydict()["site"] == ["w", "s"]
    assert other.require_table("d", "a").tag_values["site"] == "w"
    assert codes_of(lambda: cat.set_tag_value("d", "st", "site", "x")) == Code.INVALID_OPERATION


def test_drops_remove_subtables_and_return_storage_tables(make_catalog: Any) -> None:
    cat = make_catalog()
    with_schema(cat)
    cat.create_subtables([sub("a"), sub("b")])
    cat.create_table(Table("d", "plain", "normal", supertable().columns))
    cat.create_table(Table("d", "vt", "normal", supertable().columns, virtual=True))
    assert cat.drop_table("d", "missing") is None
    assert cat.drop_table("d", "ST").name == "st"  # type: ignore[union-attr]
    assert [r[0] for r in make_catalog().tables("d")] == ["plain", "vt"]
    cat.create_table(supertable())
    cat.create_table(sub("a"))
    dropped = cat.drop_database("D")
    assert sorted(t.name for t in dropped) == ["plain", "st"]  # not subtables, not virtual tables
    assert make_catalog().database("d") is None
    assert make_catalog().tables("d") == []


def test_a_killed_postgres_connection_is_replaced(pg_url: str, tmp_path: Path) -> None:
    """PostgreSQL restarted or the session killed: reads retry once on a new connection, the next
    write too; a write whose link breaks inside its transaction fails and commits nothing."""
    import psycopg

    _pg_reset(pg_url)
    cat = Catalog(tmp_path / "lake", pg_url)
    with_schema(cat)

    def kill_sessions() -> None:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )

    kill_sessions()
    assert cat.require_table("d", "st").kind == "super"
    kill_sessions()
    assert cat.create_table(sub("a", site="x"))
    version = cat.version()
    with pytest.raises(psycopg.OperationalError), cat._tx() as con:
        kill_sessions()
        con.execute(
            "INSERT INTO databases (key, name, precision, options, created_ms) "
            "VALUES ('z', 'z', 'ms', '{}', 0)"
        )
    assert cat.database("z") is None
    assert cat.version() == version
    assert [r[0] for r in cat.tables("d")] == ["a", "st"]


def test_an_invalid_catalog_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="TDWEB_CATALOG_URL") as info:
        Catalog(tmp_path, "mysql://host/db")
    assert info.value.code == Code.INVALID_OPERATION


def _ddl_worker(args: tuple[int, str, str, Any, Any]) -> None:
    """One "host": creates ``t<k>`` (DDL or INSERT auto-create, alternating with the other
    process), ``u<k>`` (the other way round) and its own ``p<who>_<k>``."""
    from spark_workers.lake.store import Lake
    from spark_workers.statements.executor import Executor
    from spark_workers.streams.registry import MemoryRegistry

    who, root, url, barrier, errors = args
    ex = Executor(Lake(root, url), MemoryRegistry())
    barrier.wait(timeout=60)
    try:
        for k in range(N_TABLES):
            create = f"create table if not exists c.{{}}{k} using c.st tags ({k})"
            insert = f"insert into c.{{}}{k} using c.st tags ({k}) values ({BASE_MS + k}, {k})"
            first, second = (create, insert) if who == 0 else (insert, create)
            ex.execute_one(first.format("t"))
            ex.execute_one(second.format("u"))
            ex.execute_one(f"create table c.p{who}_{k} using c.st tags ({100 * (who + 1) + k})")
    except Exception as exc:  # reported to the test, which fails on it
        errors.put(f"process {who}: {type(exc).__name__}: {exc}")


@pytest.fixture(params=["sqlite", "postgres"])
def catalog_url(request: pytest.FixtureRequest) -> str:
    """ "" (SQLite in the lake) or a PostgreSQL database with an empty catalog schema."""
    if request.param == "sqlite":
        return ""
    url: str = request.getfixturevalue("pg_url")
    _pg_reset(url)
    return url


def _catalog_rows(root: str, url: str) -> list[tuple[str, int, str]]:
    """``(key, rows with that key, tag values JSON)`` of database ``c``'s subtables, read from the
    store itself (not through the catalog's cache)."""
    query = "SELECT key, count(*), min(tag_values) FROM {}tables WHERE db = 'c' AND kind = 'sub' GROUP BY key"
    if not url:
        import sqlite3

        with contextlib.closing(sqlite3.connect(Path(root) / "_catalog.sqlite")) as con:
            return con.execute(query.format("")).fetchall()
    import psycopg

    with psycopg.connect(url) as con:
        return con.execute(query.format(f"{PG_SCHEMA_NAME}.")).fetchall()  # type: ignore[arg-type]


def test_concurrent_ddl_from_two_processes_loses_nothing_and_duplicates_nothing(
    catalog_url: str, tmp_path: Path
) -> None:
    from spark_workers.lake.store import Lake
    from spark_workers.statements.executor import Executor
    from spark_workers.streams.registry import MemoryRegistry

    root = str(tmp_path / "lake")
    ex = Executor(Lake(root, catalog_url), MemoryRegistry())
    ex.execute_one("create database c")
    ex.execute_one("create table c.st (ts timestamp, v int) tags (k int)")
    ctx = multiprocessing.get_context("spawn")
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_ddl_worker, args=((who, root, catalog_url, barrier, errors),)) for who in (0, 1)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0, 0]
    assert errors.empty(), errors.get()
    rows = _catalog_rows(root, catalog_url)
    expected = {f"{p}{k}": k for p in ("t", "u") for k in range(N_TABLES)}
    expected |= {f"p{w}_{k}": 100 * (w + 1) + k for w in (0, 1) for k in range(N_TABLES)}
    assert {key: n for key, n, _ in rows} == dict.fromkeys(expected, 1)  # each once, none lost
    assert {key: int(tags.split(":")[1].strip(" }")) for key, _, tags in rows} == expected
    got = Executor(Lake(root, catalog_url), MemoryRegistry()).execute_one(
        "select tbname, v from c.st order by tbname"
    )
    assert sorted(map(tuple, got.rows)) == sorted((f"{p}{k}", k) for p in ("t", "u") for k in range(N_TABLES))


@pytest.mark.parametrize("case_id", ["td-001", "td-041", "td-046"])
def test_streams_run_on_the_postgres_catalog(case_id: str, pg_url: str, tmp_path: Path) -> None:
    """Shared acceptance cases (an INTERVAL stream, virtual tables, RECALCULATE) through the local
    pipeline with the catalog in PostgreSQL: kernels and recalculation open the same catalog."""
    from tests.runtime.test_local_acceptance import ACCEPTANCE, Pipeline, _run_case

    if not ACCEPTANCE.is_dir():
        pytest.skip("../shared/acceptance is not on this machine")
    _pg_reset(pg_url)
    p = Pipeline(tmp_path / "lake", pg_url)
    _run_case(case_id, p)
    assert p.lake.catalog.url == pg_url
    assert not (tmp_path / "lake" / "_catalog.sqlite").exists()  # nothing fell back to SQLite


def test_the_spark_source_options_carry_the_catalog(pg_url: str, tmp_path: Path) -> None:
    """Executors open the lake from the source options: the catalog URL travels with them, not
    only the lake root (the kernel's own config is covered by the td-041 case above)."""
    pytest.importorskip("pyspark")
    from spark_workers.lake.spark_source import _lake

    _pg_reset(pg_url)
    Catalog(tmp_path / "other", pg_url).create_database("seen_elsewhere")
    lake = _lake({"lake": str(tmp_path / "lake"), "catalog": pg_url})
    assert lake.catalog.database("seen_elsewhere") is not None
    assert _lake({"lake": str(tmp_path / "lake"), "catalog": ""}).catalog.database("seen_elsewhere") is None


@pytest.mark.spark
def test_a_spark_stream_runs_on_the_postgres_catalog(pg_url: str, tmp_path: Path) -> None:
    """An INTERVAL stream through Spark (tdlake source on executors, pre-merge, kernel, sink) with
    the catalog in PostgreSQL: the windows equal the hand-computed ones and no SQLite catalog
    appears in the lake."""
    pytest.importorskip("pyspark")
    from spark_workers.runtime.session import spark_session
    from tests.spark.test_stream_query import SETUP, Env

    _pg_reset(pg_url)
    env = Env(tmp_path / "lake", pg_url)
    try:
        for q in SETUP:
            env.sql(q, "d1")
        t0 = 1_700_000_000_000  # a multiple of 10 s
        env.sql("insert into a1 values " + " ".join(f"({t0 + i * 1000}, {i}, {i})" for i in range(30)), "d1")
        env.sql(
            "create stream s_pg trigger at_once fill_history 1 into out_pg as "
            "select _wstart, count(*) as c, sum(v) as s from st interval(10s)",
            "d1",
        )
        env.start(spark_session("local[2]"), "s_pg")
        env.sql(f"insert into b1 values ({t0 + 25_500}, 100, 0)", "d1")
        want = [(t0, 10, 45.0), (t0 + 10_000, 10, 145.0), (t0 + 20_000, 11, 345.0)]

        def as_tuples(rows: list[list[Any]]) -> list[tuple[int, int, float]]:
            ms = [r[0] if isinstance(r[0], int) else int(r[0].timestamp() * 1000) for r in rows]
            return sorted((t, int(r[1]), float(r[2])) for t, r in zip(ms, rows, strict=True))

        env.wait_rows("select _wstart, c, s from out_pg", "d1", lambda r: as_tuples(r) == want)
    finally:
        for q in env.queries:
            q.stop()
    assert not (tmp_path / "lake" / "_catalog.sqlite").exists()
