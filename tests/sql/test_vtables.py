"""Virtual tables (TDengine SQL manual, "Virtual Tables"; seed 000 "Support for Virtual Tables in
Stream Computing"; seed 002 trigger tables): DDL and its errors, SHOW / DESCRIBE /
information_schema, refused writes, queries aligned on the timestamp (against pandas), and
privileges through a virtual table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spark_workers.access import Grant, Principal
from spark_workers.errors import Code, SqlError, TdError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

BASE_MS = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


@pytest.fixture
def ex(lake: Lake) -> Executor:
    e = Executor(lake, MemoryRegistry())
    for sql in [
        "create database vt precision 'ms'",
        "create table vt.stb (cts timestamp, cint int) tags (tint int)",
        "create table vt.vstb (cts timestamp, cint int) tags (tint int) virtual 1",
        "create table vt.ct1 using vt.stb tags(1)",
        "create table vt.ct2 using vt.stb tags(2)",
        "create vtable vt.vct1 (cint from vt.ct1.cint) using vt.vstb tags(1)",
        "create vtable vt.vct2 (vt.ct2.cint) using vt.vstb tags(2)",
        "create table vt.t1 (ts timestamp, value int)",
        "create table vt.t2 (ts timestamp, value int)",
        "create table vt.t3 (ts timestamp, value1 int, value2 float)",
        "create vtable vt.v1 (ts timestamp, c1 int from vt.t1.value, c2 int from vt.t2.value, "
        "c3 int from vt.t3.value1, c4 float from vt.t3.value2)",
    ]:
        e.execute_one(sql)
    return e


def rows(ex: Executor, sql: str) -> list[list[object]]:
    return ex.execute_one(sql).rows


def error(ex: Executor, sql: str) -> TdError:
    with pytest.raises(TdError) as info:
        ex.execute_one(sql)
    return info.value


# ------------------------------------------------------------------------------- DDL


def test_show_lists_virtual_tables_apart_from_tables(ex: Executor) -> None:
    assert rows(ex, "show vt.vtables") == [["v1"], ["vct1"], ["vct2"]]
    assert rows(ex, "show child vt.vtables") == [["vct1"], ["vct2"]]
    assert rows(ex, "show normal vt.vtables") == [["v1"]]
    assert rows(ex, "show vt.vtables like 'vct%'") == [["vct1"], ["vct2"]]
    # SHOW TABLES lists no virtual table; SHOW STABLES lists the virtual supertable too
    assert rows(ex, "show vt.tables") == [["ct1"], ["ct2"], ["t1"], ["t2"], ["t3"]]
    assert rows(ex, "show vt.stables") == [["stb"], ["vstb"]]


def test_information_schema_reports_tdengine_table_types(ex: Executor) -> None:
    got = dict(
        (r[0], r[1])
        for r in rows(ex, "select table_name, type from information_schema.ins_tables where db_name = 'vt'")
    )
    assert got == {
        "ct1": "CHILD_TABLE",
        "ct2": "CHILD_TABLE",
        "t1": "NORMAL_TABLE",
        "t2": "NORMAL_TABLE",
        "t3": "NORMAL_TABLE",
        "v1": "VIRTUAL_NORMAL_TABLE",
        "vct1": "VIRTUAL_CHILD_TABLE",
        "vct2": "VIRTUAL_CHILD_TABLE",
    }
    stables = rows(
        ex, "select stable_name, isvirtual from information_schema.ins_stables where db_name = 'vt'"
    )
    assert sorted(stables) == [["stb", False], ["vstb", True]]


def test_show_create_and_describe_give_the_references(ex: Executor) -> None:
    ((_, text),) = rows(ex, "show create vtable vt.v1")
    assert "`c1` INT FROM `vt`.`t1`.`value`" in text and "`c4` FLOAT FROM `vt`.`t3`.`value2`" in text
    ((_, child),) = rows(ex, "show create vtable vt.vct2")
    assert child == "CREATE VTABLE `vct2` (`cint` FROM `vt`.`ct2`.`cint`) USING `vstb` TAGS (2)"
    ((_, stable),) = rows(ex, "show create stable vt.vstb")
    assert stable.endswith("VIRTUAL 1")
    desc = rows(ex, "describe vt.v1")
    assert [r[0] for r in desc] == ["ts", "c1", "c2", "c3", "c4"]
    assert [r[4] for r in desc] == [None, "vt.t1.value", "vt.t2.value", "vt.t3.value1", "vt.t3.value2"]
    # the statement SHOW CREATE VTABLE writes creates the same table again
    ex.execute_one("drop vtable vt.v1")
    ex.execute_one(text.replace("`v1`", "vt.`v1`"))
    assert rows(ex, "describe vt.v1") == desc


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("create vtable vt.bad (ts timestamp, c1 bigint from vt.t1.value)", Code.INVALID_REF_COLUMN_TYPE),
        ("create vtable vt.bad (ts timestamp, c1 int from vt.t1.nope)", Code.INVALID_REF_COLUMN),
        ("create vtable vt.bad (ts timestamp, c1 int from vt.ct1.tint)", Code.INVALID_REF_COLUMN),
        ("create vtable vt.bad (ts timestamp, c1 int from vt.stb.cint)", Code.INVALID_REF_COLUMN),
        ("create vtable vt.bad (ts timestamp, c1 int from vt.v1.c1)", Code.INVALID_REF_COLUMN),
        ("create vtable vt.bad (ts timestamp, c1 int from vt.missing.value)", Code.TABLE_NOT_EXIST),
        (
            "create vtable vt.bad (ts timestamp from vt.t1.ts, c1 int from vt.t1.value)",
            Code.VTABLE_PRIMTS_HAS_REF,
        ),
        ("create vtable vt.bad (cint from vt.ct1.cint) using vt.stb tags(1)", Code.VTABLE_NOT_VIRTUAL_STABLE),
        ("create table vt.bad using vt.vstb tags(1)", Code.CHILD_OF_VIRTUAL_STABLE),
        ("create vtable vt.bad (vt.ct1.cint, vt.ct2.cint) using vt.vstb tags(1)", Code.COLUMN_COUNT_MISMATCH),
        ("create vtable vt.v1 (ts timestamp, c1 int from vt.t1.value)", Code.TABLE_ALREADY_EXIST),
        ("drop table vt.v1", Code.INVALID_TABLE_TYPE),
        ("drop vtable vt.t1", Code.INVALID_TABLE_TYPE),
        ("insert into vt.vct1 values (now, 1)", Code.VTABLE_NOT_SUPPORT_STMT),
        ("insert into vt.v1 values (now, 1, 2, 3, 4)", Code.VTABLE_NOT_SUPPORT_STMT),
        ("insert into vt.t1 values (now, 1) vt.vct2 values (now, 1)", Code.VTABLE_NOT_SUPPORT_STMT),
        (
            "insert into vt.vstb (tbname, tint, cts, cint) values ('vct1', 1, now, 1)",
            Code.VTABLE_NOT_SUPPORT_STMT,
        ),
        ("delete from vt.v1 where ts < now", Code.VTABLE_NOT_SUPPORT_STMT),
    ],
)
def test_what_tdengine_refuses_is_refused_with_its_code(ex: Executor, sql: str, code: int) -> None:
    assert error(ex, sql).code == code


def test_refused_multi_table_insert_writes_nothing(ex: Executor) -> None:
    error(ex, "insert into vt.t1 values (now, 1) vt.vct2 values (now, 1)")
    assert rows(ex, "select count(*) from vt.t1") == [[0]]


def test_drop_vtable_and_virtual_supertable(ex: Executor) -> None:
    ex.execute_one("drop vtable vt.vct1")
    assert rows(ex, "show vt.vtables") == [["v1"], ["vct2"]]
    ex.execute_one("drop stable vt.vstb")  # with its virtual child tables
    assert rows(ex, "show vt.vtables") == [["v1"]]
    ex.execute_one("drop vtable if exists vt.vct1")
    # the referenced tables are untouched
    assert rows(ex, "show vt.tables") == [["ct1"], ["ct2"], ["t1"], ["t2"], ["t3"]]


# ------------------------------------------------------------------------------- queries


def _manual_example(ex: Executor) -> dict[str, pd.DataFrame]:
    """The data of the manual's alignment example (t1, t2, t3 at seconds 1..5)."""
    data = {
        "t1": pd.DataFrame({"ts": [1, 4], "value": [1, 4]}),
        "t2": pd.DataFrame({"ts": [2, 4, 5], "value": [20, 40, 50]}),
        "t3": pd.DataFrame({"ts": [3, 5], "value1": [300, 500], "value2": [3000.0, 5000.0]}),
    }
    for name, df in data.items():
        values = " ".join(
            "(" + ", ".join([str(BASE_MS + int(r["ts"]) * 1000), *[str(r[c]) for c in df.columns[1:]]]) + ")"
            for _, r in df.iterrows()
        )
        ex.execute_one(f"insert into vt.{name} values {values}")
    return data


def _aligned(data: dict[str, pd.DataFrame], cols: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """The manual's alignment rules, computed independently: outer merge on ts of the tables the
    columns reference, in time order."""
    out: pd.DataFrame | None = None
    for table in dict.fromkeys(t for t, _ in cols.values()):
        part = data[table].rename(columns={src: v for v, (t, src) in cols.items() if t == table})
        part = part[["ts", *[v for v, (t, _) in cols.items() if t == table]]]
        out = part if out is None else out.merge(part, on="ts", how="outer")
    assert out is not None
    return out.sort_values("ts").reset_index(drop=True)[["ts", *cols]]


def _frame(ex: Executor, sql: str) -> pd.DataFrame:
    res = ex.execute_one(sql)
    df = pd.DataFrame(res.rows, columns=[c.name for c in res.columns])
    return df


def test_select_star_aligns_the_referenced_tables_on_the_timestamp(ex: Executor) -> None:
    data = _manual_example(ex)
    got = _frame(ex, "select * from vt.v1 order by ts")
    want = _aligned(
        data, {"c1": ("t1", "value"), "c2": ("t2", "value"), "c3": ("t3", "value1"), "c4": ("t3", "value2")}
    )
    assert list(got["ts"]) == [BASE_MS + s * 1000 for s in want["ts"]]
    for c in ("c1", "c2", "c3", "c4"):
        np.testing.assert_array_equal(
            got[c].astype("float64").to_numpy(), want[c].astype("float64").to_numpy(), err_msg=c
        )


def test_selecting_fewer_columns_gives_only_their_tables_timestamps(ex: Executor) -> None:
    data = _manual_example(ex)
    got = _frame(ex, "select ts, c1, c2 from vt.v1 order by ts")
    want = _aligned(data, {"c1": ("t1", "value"), "c2": ("t2", "value")})
    # 0:00:03 is t3's only: it is not a row here (manual, alignment rule 3)
    assert list(got["ts"]) == [BASE_MS + s * 1000 for s in want["ts"]] and 3 not in list(want["ts"])
    np.testing.assert_array_equal(got["c2"].astype("float64"), want["c2"].astype("float64"))


def test_aggregates_and_windows_over_a_virtual_table(ex: Executor) -> None:
    data = _manual_example(ex)
    want = _aligned(data, {"c2": ("t2", "value"), "c3": ("t3", "value1")})
    ((count, total, mx),) = rows(ex, "select count(*), sum(c2), max(c3) from vt.v1")
    full = _aligned(
        data, {"c1": ("t1", "value"), "c2": ("t2", "value"), "c3": ("t3", "value1"), "c4": ("t3", "value2")}
    )
    assert count == len(full) and int(total) == int(want["c2"].sum()) and mx == want["c3"].max()
    got = rows(ex, "select _wstart, count(c2), sum(c3) from vt.v1 interval(2s)")
    want["w"] = (want["ts"] // 2) * 2
    g = want.groupby("w").agg(n=("c2", "count"), s=("c3", "sum"))
    assert [[r[0], r[1], None if r[2] is None else int(r[2])] for r in got] == [
        [BASE_MS + int(w) * 1000, int(n), int(s) if want[want["w"] == w]["c3"].notna().any() else None]
        for w, (n, s) in g.iterrows()
    ]


def test_virtual_supertable_partition_by_tbname(ex: Executor) -> None:
    ct = {"ct1": [(0, 1), (5, 2), (12, 3)], "ct2": [(0, 10), (20, 30)]}
    for name, vals in ct.items():
        ex.execute_one(
            f"insert into vt.{name} values " + " ".join(f"({BASE_MS + s * 1000}, {v})" for s, v in vals)
        )
    got = rows(
        ex, "select tbname, tint, count(*), sum(cint) from vt.vstb partition by tbname, tint order by tbname"
    )
    assert got == [
        [f"v{name}", int(name[-1]), len(vals), sum(v for _, v in vals)] for name, vals in sorted(ct.items())
    ]
    assert rows(ex, "select cint from vt.vct2 order by cts") == [[10], [30]]


# ------------------------------------------------------------------------------- privileges


def test_reading_through_a_virtual_table_needs_read_on_what_it_references(lake: Lake, ex: Executor) -> None:
    ex.execute_one("insert into vt.t1 values (now, 7)")
    ex.execute_one("create database pub precision 'ms'")
    ex.execute_one("create vtable pub.peek (ts timestamp, secret int from vt.t1.value)")
    reader = Principal("alice", super=False, grants=(Grant("pub", None, read=True),))
    alice = Executor(lake, MemoryRegistry(), principal=reader)
    with pytest.raises(SqlError) as info:
        alice.execute_one("select secret from pub.peek")
    assert info.value.code == Code.PERMISSION_DENIED and "vt.t1" in info.value.message
    # nor may she create one over a table she cannot read
    writer = Principal(
        "bob", super=False, grants=(Grant("pub", None, write=True), Grant("pub", None, read=True))
    )
    bob = Executor(lake, MemoryRegistry(), principal=writer)
    assert error(bob, "create vtable pub.peek2 (ts timestamp, s int from vt.t1.value)").code == (
        Code.PERMISSION_DENIED
    )
    # granted READ on the referenced table, she reads it
    granted = Principal(
        "alice", super=False, grants=(Grant("pub", None, read=True), Grant("vt", "t1", read=True))
    )
    assert Executor(lake, MemoryRegistry(), principal=granted).execute_one(
        "select secret from pub.peek"
    ).rows == [[7]]


def test_a_dropped_referenced_table_reads_null(ex: Executor) -> None:
    data = _manual_example(ex)
    ex.execute_one("drop table vt.t3")
    got = _frame(ex, "select * from vt.v1 order by ts")
    want = _aligned(data, {"c1": ("t1", "value"), "c2": ("t2", "value")})
    assert list(got["ts"]) == [BASE_MS + s * 1000 for s in want["ts"]]
    assert got["c3"].isna().all() and got["c4"].isna().all()


def test_nanosecond_database_alignment(ex: Executor) -> None:
    ex.execute_one("create database ns precision 'ns'")
    ex.execute_one("create table ns.a (ts timestamp, v int)")
    ex.execute_one("create table ns.b (ts timestamp, v int)")
    ex.execute_one("create vtable ns.v (ts timestamp, x int from ns.a.v, y int from ns.b.v)")
    t0 = BASE_MS * 1_000_000
    ex.execute_one(f"insert into ns.a values ({t0 + 1}, 1) ({t0 + 3}, 3)")
    ex.execute_one(f"insert into ns.b values ({t0 + 2}, 2) ({t0 + 3}, 30)")
    assert rows(ex, "select * from ns.v order by ts") == [
        [t0 + 1, 1, None],
        [t0 + 2, None, 2],
        [t0 + 3, 3, 30],
    ]
    # a reference into a database of another precision is refused
    assert (
        error(ex, "create vtable ns.bad (ts timestamp, x int from vt.t1.value)").code
        == Code.INVALID_REF_COLUMN
    )


# ------------------------------------------------------------------------------- ALTER VTABLE


def _seed_sources(ex: Executor, rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """Random rows in vt.t1, vt.t2, vt.t3 at partly shared timestamps; the frames written."""
    frames = {}
    for name, cols in (("t1", ["value"]), ("t2", ["value"]), ("t3", ["value1", "value2"])):
        ts = sorted(rng.choice(np.arange(12), size=6, replace=False).tolist())
        df = pd.DataFrame({"ts": [BASE_MS + int(k) * 1000 for k in ts]})
        for c in cols:
            df[c] = rng.integers(-100, 100, size=len(df)).astype(float if c == "value2" else int)
        values = " ".join("(" + ", ".join(str(v) for v in r) + ")" for r in df.itertuples(index=False))
        ex.execute_one(f"insert into vt.{name} values {values}")
        frames[name] = df
    return frames


def _model_rows(
    frames: dict[str, pd.DataFrame], cols: dict[str, tuple[str, str] | None]
) -> list[list[object]]:
    """The manual's alignment, computed with pandas: the union of the timestamps of the tables the
    columns reference, each column its source's value at that timestamp (NULL when absent)."""
    used = {src[0] for src in cols.values() if src is not None}
    ts = sorted(set().union(*(set(frames[t]["ts"]) for t in used)))
    out = pd.DataFrame({"ts": ts})
    for name, src in cols.items():
        if src is None:
            out[name] = None
            continue
        f = frames[src[0]][["ts", src[1]]].rename(columns={src[1]: name})
        out = out.merge(f, on="ts", how="left")
    out = out.astype(object).where(out.notna(), None)

    def cell(v: object) -> object:
        return None if v is None else (float(v) if isinstance(v, float) else int(v))  # type: ignore[call-overload]

    return [[int(r[0]), *[cell(v) for v in r[1:]]] for r in out.itertuples(index=False)]


def _read(ex: Executor, sql: str) -> list[list[object]]:
    return [[r[0], *[None if v is None else (float(v) if isinstance(v, float) else v) for v in r[1:]]]
            for r in rows(ex, sql)]  # fmt: skip


def test_alter_vtable_columns_and_sources_against_pandas(ex: Executor) -> None:
    frames = _seed_sources(ex, np.random.default_rng(15))
    model: dict[str, tuple[str, str] | None] = {
        "c1": ("t1", "value"), "c2": ("t2", "value"), "c3": ("t3", "value1"), "c4": ("t3", "value2"),
    }  # fmt: skip
    ex.execute_one("use vt")
    assert _read(ex, "select * from v1 order by ts") == _model_rows(frames, model)
    steps = [
        ("alter vtable v1 add column c5 int from vt.t1.value", "c5", ("t1", "value")),
        ("alter vtable v1 add column c6 double", "c6", None),
        ("alter vtable v1 alter column c2 set t3.value1", "c2", ("t3", "value1")),
        ("alter vtable v1 alter column c3 set null", "c3", None),
    ]
    for sql, col, src in steps:
        ex.execute_one(sql)
        model[col] = src
        assert _read(ex, "select * from v1 order by ts") == _model_rows(frames, model), sql
    ex.execute_one("alter vtable v1 drop column c1")
    del model["c1"]
    ex.execute_one("alter vtable v1 rename column c4 c44")
    model = {("c44" if k == "c4" else k): v for k, v in model.items()}
    assert [r[0] for r in rows(ex, "describe v1")] == ["ts", *model]
    assert _read(ex, "select * from v1 order by ts") == _model_rows(frames, model)
    # a column added later under a dropped name has no source: NULL, never the old values
    ex.execute_one("alter vtable v1 add column c1 int")
    model["c1"] = None
    assert _read(ex, "select * from v1 order by ts") == _model_rows(frames, model)
    assert "`c44` FLOAT FROM `vt`.`t3`.`value2`" in rows(ex, "show create vtable v1")[0][1]


def test_alter_vtable_child_sources_tags_and_virtual_supertable_columns(ex: Executor) -> None:
    ex.execute_one("use vt")
    ex.execute_one(f"insert into ct1 values ({BASE_MS}, 1) ({BASE_MS + 1000}, 2)")
    ex.execute_one(f"insert into ct2 values ({BASE_MS + 5000}, 7)")
    ex.execute_one("alter vtable vct1 alter column cint set vt.ct2.cint")
    ex.execute_one("alter vtable vct1 set tag tint = 9")
    assert rows(ex, "select cts, cint, tint from vct1") == [[BASE_MS + 5000, 7, 9]]
    ex.execute_one("alter stable vstb add column extra int")
    assert rows(ex, "select cts, cint, extra from vct2") == [[BASE_MS + 5000, 7, None]]
    ex.execute_one("alter vtable vct2 alter column extra set vt.ct1.cint")
    want = [[BASE_MS, None, 1], [BASE_MS + 1000, None, 2], [BASE_MS + 5000, 7, None]]
    assert rows(ex, "select cts, cint, extra from vct2 order by cts") == want
    ex.execute_one("alter stable vstb drop column extra")
    ex.execute_one("alter stable vstb add column extra int")  # same name: no source, NULL
    assert rows(ex, "select cts, cint, extra from vct2 order by cts") == [[BASE_MS + 5000, 7, None]]
    ex.execute_one("alter stable vstb add tag t2 int")
    assert rows(ex, "select distinct tbname, t2 from vstb order by tbname") == [
        ["vct1", None],
        ["vct2", None],
    ]


@pytest.mark.parametrize(
    ("sql", "code", "at"),
    [
        ("alter vtable vt.v1 alter column ts set vt.t1.ts", Code.VTABLE_PRIMTS_HAS_REF, "ts set"),
        ("alter vtable vt.v1 drop column ts", Code.CANNOT_DROP_PRIMARY_KEY, "ts"),
        ("alter vtable vt.v1 add column c9 bigint from vt.t1.value", Code.INVALID_REF_COLUMN_TYPE, "vt.t1"),
        ("alter vtable vt.v1 alter column c1 set vt.stb.cint", Code.INVALID_REF_COLUMN, "vt.stb"),
        ("alter vtable vt.v1 alter column c1 set vt.t1.nope", Code.INVALID_REF_COLUMN, "vt.t1"),
        ("alter vtable vt.v1 alter column nope set vt.t1.value", Code.COLUMN_NOT_EXIST, "nope"),
        ("alter vtable vt.v1 add column c2 int", Code.COLUMN_ALREADY_EXIST, "c2"),
        ("alter vtable vt.t1 add column c9 int", Code.INVALID_TABLE_TYPE, "vt.t1"),
        ("alter table vt.v1 add column c9 int", Code.INVALID_TABLE_TYPE, "vt.v1"),
        ("alter vtable vt.vstb add column c9 int", Code.INVALID_ALTER_TABLE, "vt.vstb"),
        ("alter vtable vt.vct1 add column c9 int", Code.INVALID_ALTER_TABLE, "add column"),
        ("alter vtable vt.v1 set tag tint = 1", Code.INVALID_ALTER_TABLE, "set tag"),
        ("alter vtable vt.v1 alter column c1", Code.INCOMPLETE_SQL, None),
        ("alter vtable vt.v1 alter column c1 put null", Code.SYNTAX_ERROR, "put"),
    ],
)
def test_alter_vtable_errors_change_nothing(ex: Executor, sql: str, code: int, at: str | None) -> None:
    before = [rows(ex, f"describe vt.{t}") for t in ("v1", "vct1", "vstb")]
    e = error(ex, sql)
    assert e.code == code, (sql, hex(e.code), e.message)
    if at is not None:
        offset = getattr(e, "offset", None)
        assert offset is not None and sql[offset:].startswith(at), (sql, offset, e.message)
    assert [rows(ex, f"describe vt.{t}") for t in ("v1", "vct1", "vstb")] == before


def test_alter_vtable_is_refused_while_a_stream_reads_it(ex: Executor) -> None:
    """Seed 000, "Support for Virtual Tables in Stream Computing", restrictions 1 and 2."""
    ex.execute_one(
        "create stream vt.s1 trigger at_once into vt.out1 as select _wstart, count(*) from vt.v1 "
        "interval(10s)"
    )
    for sql in ("alter vtable vt.v1 add column c9 int", "alter vtable vt.v1 alter column c1 set null"):
        e = error(ex, sql)
        assert e.code == Code.INVALID_OPERATION and "s1" in e.message, e.message
    ex.execute_one("drop stream vt.s1")
    ex.execute_one("alter vtable vt.v1 alter column c1 set null")
    assert rows(ex, "describe vt.v1")[1][4] in (None, "")


def test_alter_vtable_needs_write_on_the_database(lake: Lake, ex: Executor) -> None:
    reader = Principal("alice", grants=(Grant("vt", None, read=True),))
    alice = Executor(lake, MemoryRegistry(), principal=reader)
    e = error(alice, "alter vtable vt.v1 add column c9 int")
    assert e.code == Code.PERMISSION_DENIED
    assert [r[0] for r in rows(ex, "describe vt.v1")] == ["ts", "c1", "c2", "c3", "c4"]
