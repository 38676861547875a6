"""Composite keys (TDengine 3.3+ ``PRIMARY KEY`` / ``COMPOSITE KEY``, ``lake/keys.py``): the lake's
row key is (tbname, ts, key) for a table that declares one — inserts, updates, deletes, query
order — streams over such a table see every row, stream outputs declared ``COMPOSITE KEY`` keep
one row per (ts, key), and the declarations TDengine refuses are refused.

Expected values are computed independently (pandas over the rows written, or by hand)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from spark_workers.errors import Code, LakeError, SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC


class Env:
    def __init__(self, root: Path) -> None:
        self.lake = Lake(root)
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC", default_db="d")
        self.ex.execute(
            "create database d; create table t (ts timestamp, k int primary key, v int);"
            "create stable st (ts timestamp, k varchar(8) composite key, v int) tags (g int);"
            "create table c1 using st tags (1); create table c2 using st tags (2)"
        )
        self.runners: list[LocalRunner] = []

    def stream(self, sql: str) -> None:
        self.ex.execute(sql)
        self.runners.append(LocalRunner.for_registered(self.lake, self.reg, sql.split()[2]))

    def write(self, *stmts: str) -> None:
        for q in stmts:
            self.ex.execute(q)
            for r in self.runners:
                r.run()

    def rows(self, sql: str) -> list[list[object]]:
        return [list(r) for r in self.ex.execute_one(sql).rows]


def ins(table: str, *rows: tuple[int, object, int | None]) -> str:
    """INSERT of ``(seconds after T0, key, v)`` rows."""

    def lit(k: object) -> str:
        return f"'{k}'" if isinstance(k, str) else ("NULL" if k is None else str(k))

    vals = " ".join(f"({T0 + s * 1000}, {lit(k)}, {lit(v)})" for s, k, v in rows)
    return f"insert into {table} values {vals}"


def expected(frames: list[tuple[int, object, int]]) -> list[list[object]]:
    """TDengine's rule, independently: the last write of each (ts, key) wins; rows in (ts, key)
    order."""
    df = pd.DataFrame(frames, columns=["s", "k", "v"])
    df = df.drop_duplicates(["s", "k"], keep="last").sort_values(["s", "k"])
    return [[T0 + int(s) * 1000, k, int(v)] for s, k, v in df.itertuples(index=False)]


# ---------------------------------------------------------------------- the lake's row key


def test_same_ts_different_keys_are_two_rows_and_same_key_overwrites(tmp_path: Path) -> None:
    env = Env(tmp_path)
    first = [(0, 2, 20), (0, 1, 10), (1, 1, 11)]
    env.write(ins("t", *first))  # an append: keys of one timestamp, out of order
    assert env.rows("select * from t") == expected(first)
    second = [(0, 2, 25), (0, 3, 30), (1, 1, 11)]  # an update, a new key at an old ts, a re-write
    env.write(ins("t", *second))  # a MERGE
    assert env.rows("select * from t") == expected(first + second)
    assert env.rows("select count(*) from t") == [[4]]


def test_duplicate_keys_inside_one_insert_keep_the_last(tmp_path: Path) -> None:
    env = Env(tmp_path)
    rows = [(0, 1, 1), (0, 1, 2), (0, 2, 3), (0, 1, 4)]
    env.write(ins("t", *rows))
    assert env.rows("select * from t") == expected(rows) == [[T0, 1, 4], [T0, 2, 3]]


def test_varchar_key_on_a_supertable_orders_by_tbname_ts_key(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.write(ins("c2", (0, "b", 1), (0, "a", 2)), ins("c1", (1, "z", 3), (1, "m", 4), (0, "q", 5)))
    got = env.rows("select tbname, ts, k, v from st")
    want = [["c1", *r] for r in expected([(1, "z", 3), (1, "m", 4), (0, "q", 5)])]
    want += [["c2", *r] for r in expected([(0, "b", 1), (0, "a", 2)])]
    assert got == want
    assert env.rows("select ts, k from c2") == [[T0, "a"], [T0, "b"]]


def test_delete_by_timestamp_removes_every_key_at_that_timestamp(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.write(ins("t", (0, 1, 1), (0, 2, 2), (0, 3, 3), (1, 1, 4)))
    n = env.ex.execute_one(f"delete from t where ts = {T0}")
    assert n.affected_rows == 3  # TDengine deletes by time range only, never by key
    assert env.rows("select * from t") == [[T0 + 1000, 1, 4]]


def test_change_feed_shows_each_key_as_its_own_row(tmp_path: Path) -> None:
    env = Env(tmp_path)
    db = env.lake.catalog.require_database("d")
    t = env.lake.catalog.require_table("d", "t")
    v0 = env.lake.version("d", "t")
    env.write(ins("t", (0, 1, 1), (0, 2, 2)), ins("t", (0, 2, 7)))
    feed = env.lake.changes(db, t, v0, env.lake.version("d", "t")).to_pydict()
    assert feed["_change_type"] == ["insert", "insert", "update_preimage", "update_postimage"]
    assert feed["k"] == [1, 2, 2, 2] and feed["v"] == [1, 2, 2, 7]


def test_a_null_key_is_refused_at_insert_and_in_the_lake(tmp_path: Path) -> None:
    env = Env(tmp_path)
    sql = ins("t", (0, 1, 1), (1, None, 2))
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(sql)
    assert e.value.code == Code.PRIMARY_KEY_IS_NULL and "cannot be NULL" in e.value.message
    assert e.value.position is not None and sql[e.value.position.offset :].startswith("NULL")
    with pytest.raises(SqlError, match="composite key column k must be written"):
        env.ex.execute_one(f"insert into t (ts, v) values ({T0}, 1)")
    assert env.rows("select count(*) from t") == [[0]]
    import pyarrow as pa

    db = env.lake.catalog.require_database("d")
    table = env.lake.catalog.require_table("d", "t")
    with pytest.raises(LakeError, match="cannot be NULL"):
        env.lake.write(db, table, pa.table({"tbname": ["t"], "ts": [T0], "k": pa.array([None], pa.int32())}))


@pytest.mark.parametrize(
    ("ddl", "named"),
    [
        ("create table x (ts timestamp, a int, b int primary key)", "only the second column"),
        ("create table x (ts timestamp primary key, a int)", "only the second column"),
        ("create table x (ts timestamp, a float primary key)", "must be INT"),
        ("create table x (ts timestamp, a double composite key)", "must be INT"),
        ("create table x (ts timestamp, a timestamp primary key)", "must be INT"),
        ("create table x (ts timestamp, a nchar(4) primary key)", "must be INT"),
        ("create table x (ts timestamp, a bool primary key)", "must be INT"),
        ("create stable x (ts timestamp, a int) tags (g int primary key)", "a tag cannot be"),
    ],
)
def test_invalid_key_declarations_are_refused_at_the_column(tmp_path: Path, ddl: str, named: str) -> None:
    env = Env(tmp_path)
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(ddl)
    assert named in e.value.message and e.value.code == Code.INVALID_COLUMN
    assert e.value.position is not None
    assert env.ex.catalog.table("d", "x") is None


@pytest.mark.parametrize(
    "typ", ["int", "int unsigned", "bigint", "bigint unsigned", "varchar(4)", "binary(4)"]
)
def test_every_key_type_tdengine_allows_is_accepted(tmp_path: Path, typ: str) -> None:
    env = Env(tmp_path)
    env.ex.execute(f"create table x (ts timestamp, a {typ} primary key, v int)")
    key = "'1'" if "char" in typ or "binary" in typ else "1"
    key2 = "'2'" if key == "'1'" else "2"
    env.ex.execute(f"insert into x values ({T0}, {key2}, 2) ({T0}, {key}, 1)")
    assert env.rows("select v from x") == [[1], [2]]  # both rows, in key order
    assert env.rows("desc x")[1][3] == "COMPOSITE KEY"


def test_count_window_query_takes_rows_of_one_timestamp_in_key_order(tmp_path: Path) -> None:
    env = Env(tmp_path)
    rows = [(0, 3, 30), (0, 1, 10), (0, 2, 20), (1, 5, 50), (1, 4, 40)]
    env.write(ins("t", *rows[:2]), ins("t", *rows[2:]))  # second write is a MERGE
    got = env.rows("select _wstart, first(v), last(v), count(*) from t count_window(2)")
    ordered = [v for _t, _k, v in expected(rows)]  # (ts, key) order: 10 20 30 40 50
    want = [
        [T0 + (0 if i < 3 else 1000), ordered[i], ordered[min(i + 1, 4)], min(2, 5 - i)] for i in (0, 2, 4)
    ]
    assert got == want


def test_first_and_last_at_one_timestamp_follow_the_key_not_the_value(tmp_path: Path) -> None:
    """Rows of one timestamp are ordered by key (TDengine), so first() is the smallest key's value
    and last() / last_row() the largest key's, whatever the values: in queries and in streams."""
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from t stream_options(ignore_nodata_trigger) "
        "into res as select _twstart, first(v), last(v), last_row(v) from %%trows"
    )
    rows = [(0, 2, 5), (0, 1, 9), (0, 3, 7), (12, 2, 1), (12, 1, 4)]
    env.write(ins("t", *rows[:2]), ins("t", *rows[2:]), ins("t", (25, 1, 0)))  # 25 s closes both
    df = pd.DataFrame(expected(rows), columns=["ts", "k", "v"])  # in (ts, key) order
    df["w"] = (df["ts"] - T0) // 10_000
    per = df.groupby("w")["v"].agg(["first", "last"])
    want = [[T0 + int(w) * 10_000, int(f), int(la), int(la)] for w, (f, la) in per.iterrows()]
    before = f"where ts < {T0 + 20_000}"
    got = env.rows(f"select _wstart, first(v), last(v), last_row(v) from t {before} interval(10s)")
    assert got == want == [[T0, 9, 7, 7], [T0 + 10_000, 4, 1, 1]]
    assert env.rows("select * from res") == want
    w0 = df[df["w"] == 0]["v"]
    assert env.rows(f"select first(v), last(v), last_row(v) from t where ts < {T0 + 10_000}") == [
        [int(w0.iloc[0]), int(w0.iloc[-1]), int(w0.iloc[-1])]
    ]


# ---------------------------------------------------------------------- streams


def test_interval_stream_over_a_composite_key_source_counts_every_row(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from t stream_options(ignore_nodata_trigger) "
        "into res as select _twstart, count(*), sum(v) from %%trows"
    )
    rows = [(0, 1, 1), (0, 2, 2), (0, 3, 3), (5, 1, 4), (12, 1, 5), (12, 2, 6), (25, 1, 7)]
    env.write(ins("t", *rows[:3]), ins("t", *rows[3:]))
    df = pd.DataFrame(rows, columns=["s", "k", "v"])
    df["w"] = df["s"] // 10 * 10
    closed = df[df["w"] < 20].groupby("w").agg(n=("v", "size"), total=("v", "sum")).reset_index()
    want = [[T0 + int(w) * 1000, int(n), int(t)] for w, n, t in closed.itertuples(index=False)]
    assert env.rows("select * from res") == want == [[T0, 4, 10], [T0 + 10_000, 2, 11]]


def test_count_window_stream_segments_rows_of_one_timestamp_in_key_order(tmp_path: Path) -> None:
    """A row written later at the time of the latest row with a smaller key sorts before it
    (TDengine reads (ts, key)): the count windows are cut again in that order."""
    env = Env(tmp_path)
    env.stream(
        "create stream s count_window(2) from t stream_options(watermark(10s)) into res (ws, n, total) "
        "as select _twstart, count(*), sum(v) from %%trows"
    )
    rows = [(0, 5, 1), (1, 2, 20), (1, 1, 10), (2, 3, 30), (3, 4, 40), (30, 6, 0)]
    env.write(ins("t", *rows[:2]), ins("t", *rows[2:]))
    ordered = expected(rows)  # (ts, key) order: values 1 10 20 30 40 0
    # windows of two rows; final once the watermark (30 s - 10 s) passes their last row
    want = [[ordered[i][0], 2, ordered[i][2] + ordered[i + 1][2]] for i in (0, 2)]
    assert env.rows("select ws, n, total from res") == want == [[T0, 2, 11], [T0 + 1000, 2, 50]]


def test_legacy_stream_over_a_composite_key_source_counts_every_row(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s trigger window_close into res as "
        "select _wstart, count(*) n, sum(v) total from st partition by tbname interval(10s)"
    )
    rows = {
        "c1": [(0, "a", 1), (0, "b", 2), (3, "a", 3), (12, "a", 4)],
        "c2": [(1, "x", 5), (1, "y", 6), (11, "x", 7)],
    }
    env.write(*(ins(tb, *r) for tb, r in rows.items()))
    want = []
    for r in rows.values():
        df = pd.DataFrame(r, columns=["s", "k", "v"])
        df = df[df["s"] < 10]  # the windows [0 s, 10 s) closed by each subtable's row after 10 s
        want.append([T0, len(df), int(df["v"].sum())])
    assert sorted(env.rows("select _c0, n, total from res")) == sorted(want) == [[T0, 2, 11], [T0, 3, 6]]


def test_delete_of_one_timestamp_takes_every_key_out_of_a_stream_window(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s trigger at_once into res as "
        "select _wstart, count(*) n, sum(v) total from t interval(10s)"
    )
    rows = [(0, 1, 1), (0, 2, 2), (0, 3, 3), (5, 1, 4), (12, 1, 5)]
    env.write(ins("t", *rows))
    assert env.rows("select _c0, n, total from res") == [[T0, 4, 10], [T0 + 10_000, 1, 5]]
    env.write(f"delete from t where ts = {T0}")
    left = [r for r in rows if r[0] != 0]  # every key at T0 goes
    df = pd.DataFrame(left, columns=["s", "k", "v"])
    per = df.groupby(df["s"] // 10 * 10)["v"].agg(["size", "sum"])
    want = [[T0 + int(w) * 1000, int(n), int(t)] for w, (n, t) in per.iterrows()]
    assert env.rows("select _c0, n, total from res") == want == [[T0, 1, 4], [T0 + 10_000, 1, 5]]


def test_legacy_at_once_window_update_replaces_its_row_whatever_the_key(tmp_path: Path) -> None:
    """td-048a: count(*) is the output's composite key; when a window's count goes from 1 to 2
    the legacy engine replaces the window's row (one row per window), not adds one."""
    env = Env(tmp_path)
    env.ex.execute("create table src (ts timestamp, a int, b int)")
    env.stream(
        "create stream s trigger at_once ignore expired 0 ignore update 0 into res (ws, n composite key, mb) "
        "as select _wstart, count(*), max(b) from src interval(1s)"
    )
    base = 1_648_791_210_000
    rows = [(0, 1, 2), (1, 4, 2), (10_000, 2, 2), (20_000, 3, 2), (30_000, 4, 2), (40_000, 4, 7)]
    env.write(f"insert into src values ({base}, 1, 2)")
    assert env.rows("select ws, n, mb from res") == [[base, 1, 2]]
    env.write(*(f"insert into src values ({base + ms}, {a}, {b})" for ms, a, b in rows[1:]))
    df = pd.DataFrame(rows, columns=["ms", "a", "b"])
    df["w"] = base + df["ms"] // 1000 * 1000
    per = df.groupby("w").agg(n=("a", "size"), mb=("b", "max")).reset_index()
    want = [[int(w), int(n), int(mb)] for w, n, mb in per.itertuples(index=False)]
    assert env.rows("select ws, n, mb from res") == want and len(want) == 5
    assert want[0] == [base, 2, 2]


@pytest.mark.parametrize("partitioned", [False, True])
def test_td048a_precreated_composite_key_supertable_keeps_one_row_per_window(
    tmp_path: Path, partitioned: bool
) -> None:
    """td-048a as a test: a pre-created output supertable whose second column is a COMPOSITE KEY
    and which has more tags than the stream fills (its tags by name, ``TAGS (ta)`` without a type,
    the others NULL)."""
    env = Env(tmp_path)
    env.ex.execute(
        "create stable src (ts timestamp, a int, b int, c int, d double) "
        "tags (ta varchar(100), tb int, tc int); create table t1 using src tags ('aa', 1, 2);"
        "create table out (ts timestamp, a int composite key, b bigint) "
        "tags (ta varchar(100), tb int, tc int)"
    )
    env.stream(
        "create stream s2 trigger at_once ignore expired 0 ignore update 0 into out tags(ta) as "
        "select _wstart, count(*) c1, max(b) from src partition by tbname ta interval(1s)"
        if partitioned
        else "create stream s0 trigger at_once ignore expired 0 ignore update 0 into out as "
        "select _wstart, count(*) c1, max(b) from t1 interval(1s)"
    )
    base = 1_648_791_210_000
    rows = [(0, 1, 2), (1, 4, 2), (10_000, 2, 2), (20_000, 3, 2), (30_000, 4, 2), (40_000, 4, 2)]
    env.write(*(f"insert into t1 values({base + ms}, {a}, {b}, 3, 1.0)" for ms, a, b in rows))
    df = pd.DataFrame(rows, columns=["ms", "a", "b"])
    per = df.groupby(base + df["ms"] // 1000 * 1000).agg(n=("a", "size"), mb=("b", "max"))
    tag = "t1" if partitioned else None  # PARTITION BY tbname ta fills tag ta; tb, tc stay NULL
    want = [[int(w), int(n), int(mb), tag, None, None] for w, (n, mb) in per.iterrows()]
    assert env.rows("select * from out") == want and len(want) == 5 and want[0][1] == 2


def test_legacy_state_event_count_windows_over_a_composite_key_source_are_refused(tmp_path: Path) -> None:
    env = Env(tmp_path)
    for window in ("state_window(v)", "event_window start with v > 1 end with v < 1", "count_window(2)"):
        sql = f"create stream s into res as select _wstart, count(*) from t {window}"
        with pytest.raises(SqlError) as e:
            env.ex.execute_one(sql)
        assert "seed 000" in e.value.message and "composite" in e.value.message
        assert e.value.position is not None and sql[e.value.position.offset :].startswith(
            window.split("(")[0].split()[0]
        )
    assert env.reg.list() == []


def test_337_output_with_composite_key_keeps_one_row_per_ts_and_key(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute("create table src (ts timestamp, dev int, v int)")
    env.stream(
        "create stream s interval(10s) sliding(10s) from src stream_options(ignore_nodata_trigger) "
        "into res (wstart, dev composite key, n, total) "
        "as select _twstart, dev, count(*), sum(v) from %%trows group by dev"
    )
    rows = [(0, 1, 5), (1, 2, 6), (2, 1, 7), (4, 3, 8), (11, 1, 1), (13, 2, 2), (25, 1, 0)]
    env.write(f"insert into src values {' '.join(f'({T0 + s * 1000}, {d}, {v})' for s, d, v in rows)}")
    df = pd.DataFrame(rows, columns=["s", "dev", "v"])
    df["w"] = df["s"] // 10 * 10
    closed = df[df["w"] < 20].groupby(["w", "dev"]).agg(n=("v", "size"), total=("v", "sum")).reset_index()
    want = [[T0 + int(w) * 1000, int(d), int(n), int(t)] for w, d, n, t in closed.itertuples(index=False)]
    assert env.rows("select * from res") == want
    assert len({r[0] for r in want}) < len(want)  # rows share timestamps
    assert env.rows("desc res")[1][3] == "COMPOSITE KEY"
    # a late row recalculates its window: rows are replaced per (ts, key)
    env.write(f"insert into src values ({T0 + 3000}, 2, 100)")
    rows.append((3, 2, 100))
    df = pd.DataFrame(rows, columns=["s", "dev", "v"])
    df["w"] = df["s"] // 10 * 10
    closed = df[df["w"] < 20].groupby(["w", "dev"]).agg(n=("v", "size"), total=("v", "sum")).reset_index()
    want = [[T0 + int(w) * 1000, int(d), int(n), int(t)] for w, d, n, t in closed.itertuples(index=False)]
    assert env.rows("select * from res") == want


@pytest.mark.parametrize(
    ("cols", "named"),
    [
        ("(wstart composite key, dev, n)", "only the second column"),
        ("(wstart, dev, n composite key)", "only the second column"),
        ("(wstart, a composite key, n)", "must be INT"),
    ],
)
def test_invalid_output_composite_keys_are_refused(tmp_path: Path, cols: str, named: str) -> None:
    env = Env(tmp_path)
    env.ex.execute("create table src (ts timestamp, dev int, v int)")
    select = "_twstart, avg(v), count(*)" if " a composite" in cols else "_twstart, dev, count(*)"
    group = "" if " a composite" in cols else " group by dev"
    sql = (
        "create stream s interval(10s) sliding(10s) from src stream_options(ignore_nodata_trigger) "
        f"into res {cols} as select {select} from %%trows{group}"
    )
    with pytest.raises(SqlError) as e:
        env.ex.execute_one(sql)
    assert named in e.value.message and e.value.code == Code.INVALID_COLUMN
    assert e.value.position is not None
    assert env.reg.list() == [] and env.ex.catalog.table("d", "res") is None


def test_existing_output_table_without_the_declared_key_is_refused(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute(
        "create table src (ts timestamp, dev int, v int); create table res (ts timestamp, dev int, n bigint)"
    )
    with pytest.raises(SqlError, match="declared COMPOSITE KEY but column dev of the existing table res"):
        env.ex.execute_one(
            "create stream s interval(10s) sliding(10s) from src stream_options(ignore_nodata_trigger) "
            "into res (wstart, dev composite key, n) "
            "as select _twstart, dev, count(*) from %%trows group by dev"
        )
