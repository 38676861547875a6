"""Names never escape the lake (docs/security.md, "Storage"): the findings of the security review
(``create table db.`../../../victim``` then ``drop table`` deleted a folder outside the lake;
``create database _streams`` then ``drop database _streams`` deleted every stream checkpoint; NUL
bytes in names; a create that failed halfway stayed in the catalog), each reproduced through
TDengine's REST protocol as a superuser, then the storage keys and path checks underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
import taosrest

from spark_workers.errors import Code, LakeError
from spark_workers.lake.catalog import Column, Database, Table
from spark_workers.lake.names import check_name, storage_key
from spark_workers.lake.store import Lake
from spark_workers.tdtypes import INT, TIMESTAMP

pytestmark = pytest.mark.django_db(transaction=True)


def _code(client: taosrest.RestClient, sql: str) -> int:
    with pytest.raises(taosrest.Error) as err:
        client.sql(sql)
    return int(err.value.errno)


def _tree(path: Path) -> dict[str, int]:
    """Every file under ``path`` with its size (what a test compares before and after)."""
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def root(live_server, admin, lake) -> taosrest.RestClient:  # type: ignore[no-untyped-def]
    c = taosrest.RestClient(live_server.url, user="root", password="taosdata", timezone="UTC")
    c.sql("CREATE DATABASE db")
    return c


@pytest.fixture
def victim(lake) -> Path:  # type: ignore[no-untyped-def]
    """A folder beside the lake (what ``../`` names aimed at), with a file in it."""
    folder = Path(lake.root).parent / "victim"
    folder.mkdir()
    (folder / "precious.txt").write_text("keep me")
    return folder


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE db.`../../victim` (ts TIMESTAMP, v INT)",
        "CREATE TABLE db.`../../../victim` (ts TIMESTAMP, v INT)",
        "CREATE STABLE db.`..` (ts TIMESTAMP, v INT) TAGS (t INT)",
        "CREATE DATABASE `../victim`",
        "CREATE DATABASE `../../x`",
        "CREATE TABLE `..`.t (ts TIMESTAMP, v INT)",
    ],
)
def test_dotted_names_are_refused_and_nothing_outside_the_lake_is_touched(root, victim, lake, sql) -> None:
    before = _tree(victim)
    assert _code(root, sql) in (Code.INVALID_IDENTIFIER_NAME, Code.DB_NOT_EXIST)
    for drop in ("DROP TABLE db.`../../victim`", "DROP DATABASE `../victim`", "DROP TABLE db.`..`"):
        with pytest.raises(taosrest.Error):
            root.sql(drop)
    assert _tree(victim) == before and (victim / "precious.txt").read_text() == "keep me"
    assert [r[0] for r in root.sql("SHOW DATABASES")["data"]] == [
        "information_schema",
        "performance_schema",
        "db",
    ]


def test_system_names_are_reserved_and_checkpoints_survive(root, lake) -> None:
    checkpoints = Path(lake.root) / "_streams" / "k1" / "checkpoint"
    checkpoints.mkdir(parents=True)
    (checkpoints / "offsets").write_text("0")
    for sql in (
        "CREATE DATABASE _streams",
        "CREATE DATABASE `_catalog.sqlite`",
        "CREATE DATABASE information_schema",
        "CREATE DATABASE performance_schema",
        "CREATE TABLE db._hidden (ts TIMESTAMP, v INT)",
        "CREATE STREAM _s INTO db.o AS SELECT _wstart, count(*) FROM db.t INTERVAL(1m)",
    ):
        assert _code(root, sql) == Code.INVALID_IDENTIFIER_NAME, sql
    assert _code(root, "DROP DATABASE _streams") == Code.DB_NOT_EXIST
    assert (checkpoints / "offsets").read_text() == "0"
    assert (Path(lake.root) / "_catalog.sqlite").is_file()


@pytest.mark.parametrize("name", ["a\x00b", "tab\tname", "line\nbreak", "x" * 193, "é" * 97, "", "a.b"])
def test_control_characters_long_names_and_dots_are_refused(root, name) -> None:
    quoted = "`" + name + "`"
    assert _code(root, f"CREATE TABLE db.{quoted} (ts TIMESTAMP, v INT)") in (
        Code.INVALID_IDENTIFIER_NAME,
        Code.SYNTAX_ERROR,
    )
    assert root.sql("SHOW db.TABLES")["data"] == []


def test_unusual_names_map_to_safe_storage_keys(root, lake, victim) -> None:
    before = _tree(victim)
    for name in ("a/b", "a\\x", "白 鹭", "1970", "Select"):
        quoted = "`" + name + "`"
        root.sql(f"CREATE TABLE db.{quoted} (ts TIMESTAMP, v INT)")
        root.sql(f"INSERT INTO db.{quoted} VALUES ('2024-01-01 00:00:00', 1)")
        assert root.sql(f"SELECT v FROM db.{quoted}")["data"] == [[1]]
        key = storage_key(name)
        assert set(key) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-") and not key.startswith("_")
        assert (Path(lake.root) / "db" / key / "_delta_log").is_dir()
        root.sql(f"DROP TABLE db.{quoted}")
    # every folder of the lake is a storage key; nothing was made or removed outside it
    for p in Path(lake.root).rglob("*"):
        assert ".." not in p.relative_to(lake.root).parts
    assert _tree(victim) == before


def test_a_create_that_fails_halfway_leaves_nothing_in_the_catalog(root, lake, monkeypatch) -> None:
    def broken(self, db, table):  # type: ignore[no-untyped-def]
        raise LakeError("disk full")

    monkeypatch.setattr(Lake, "create_storage", broken)
    with pytest.raises(taosrest.Error):
        root.sql("CREATE TABLE db.half (ts TIMESTAMP, v INT)")
    assert lake.catalog.table("db", "half") is None
    monkeypatch.undo()
    root.sql("CREATE TABLE db.half (ts TIMESTAMP, v INT)")  # the name is free: nothing was left
    assert [r[0] for r in root.sql("SHOW db.TABLES")["data"]] == ["half"]


def test_storage_paths_are_checked_under_the_lake_root(tmp_path) -> None:
    lake = Lake(tmp_path / "lake")
    db = Database("db", "ms")
    for bad in ("..", "../x", "_streams", "/etc"):
        key = storage_key(bad)
        assert key.startswith("x-") and lake.table_path("db", bad).parent.name == "db"
    # a key that is not one of storage_key's still cannot leave the root (defence in depth)
    with pytest.raises(LakeError):
        lake._contained(lake.root / ".." / "elsewhere")
    with pytest.raises(LakeError):
        lake._contained(lake.root / "_streams")
    # a folder an older tdweb made under the name as written keeps being used (no data lost);
    # a name that is not one ordinary path component never is
    (lake.root / "db" / "my-table" / "_delta_log").mkdir(parents=True)
    assert lake.table_path("db", "My-Table") == lake.root / "db" / "my-table"
    (lake.root / "db" / ".." / "x").mkdir(parents=True, exist_ok=True)
    assert lake.table_path("db", "..").name.startswith("x-")
    table = Table("db", "ok", "normal", (Column("ts", TIMESTAMP, "ts"), Column("v", INT, "v")))
    lake.catalog.create_database("db")
    assert lake.create_table(db, table)
    assert lake.table_path("db", "ok") == lake.root / "db" / "ok"


@pytest.mark.parametrize(
    ("name", "what", "ok"),
    [
        ("meters", "table", True),
        ("x" * 192, "table", True),
        ("x" * 193, "table", False),
        ("x" * 65, "database", False),
        ("_x", "database", False),
        ("_x", "column", True),  # pseudo-like column names are the table's own business
        ("a.b", "column", False),
        ("x" * 24, "user", False),
    ],
)
def test_check_name_rules(name: str, what: str, ok: bool) -> None:
    if ok:
        check_name(name, what)
    else:
        with pytest.raises(Exception) as err:
            check_name(name, what)
        assert getattr(err.value, "code", None) == Code.INVALID_IDENTIFIER_NAME
