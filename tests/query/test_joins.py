"""Every join type of TDengine 3.3 (SQL manual, "Join Queries"; ``spark_workers/query/joins.py``)
against an independent pandas computation: ``merge`` for inner/outer, membership for semi/anti,
``merge_asof`` (direction, exact matches, ``by``, tolerance) and a hand-written nearest-k search for
ASOF with JLIMIT, a hand-written window search for WINDOW JOIN; on two handmade supertables (NULL
values, timestamps shared by subtables, rows without a match) and on two Beijing air-quality
stations. Then TDengine's rules (error codes and positions) and the READ privilege on each table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.access import Grant, Principal
from spark_workers.errors import Code, TdError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_700_000_000_000
S = 1000
# subtable -> (tag g, rows (second offset, value or None)); "a*" rows have v, "b*" rows have w
A = {"a1": (1, [(0, 1), (2, None), (5, 3), (9, 4)]), "a2": (2, [(0, 10), (3, 11), (5, None), (12, 13)])}
B = {
    "b1": (1, [(0, 100), (1, 101), (5, None), (6, 103), (20, 104)]),
    "b2": (2, [(2, 200), (3, 201), (4, 202), (10, None)]),
}


def frame(tables: dict[str, tuple[int, list[tuple[int, int | None]]]], value: str) -> pd.DataFrame:
    rows = [(T0 + s * S, v, g) for _tb, (g, rs) in tables.items() for s, v in rs]
    return pd.DataFrame(rows, columns=["ts", value, "g"])


DA, DB = frame(A, "v"), frame(B, "w")
DTA, DTB = frame({"a1": A["a1"]}, "v")[["ts", "v"]], frame({"b1": B["b1"]}, "w")[["ts", "w"]]


@pytest.fixture(scope="module")
def ex(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    lake = Lake(tmp_path_factory.mktemp("lake"))
    e = Executor(lake, MemoryRegistry(), tz="UTC", default_db="j")
    e.execute(
        "create database j precision 'ms'; create stable sa (ts timestamp, v int) tags (g int); "
        "create stable sb (ts timestamp, w int) tags (g int); "
        "create table ta (ts timestamp, v int); create table tb (ts timestamp, w int)"
    )
    for st, tables in (("sa", A), ("sb", B)):
        for tb, (g, rs) in tables.items():
            values = " ".join(f"({T0 + s * S}, {'null' if v is None else v})" for s, v in rs)
            e.execute(f"create table {tb} using {st} tags ({g}); insert into {tb} values {values}")
    for tb, src in (("ta", A["a1"]), ("tb", B["b1"])):
        values = " ".join(f"({T0 + s * S}, {'null' if v is None else v})" for s, v in src[1])
        e.execute(f"insert into {tb} values {values}")
    return e


def norm(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT:
        return None
    if isinstance(v, np.integer | float) and float(v).is_integer():
        return int(v)
    return v


def bag(rows: Any) -> list[tuple[Any, ...]]:
    """Rows as a sorted list of tuples, NULL/NaN as None (sorted with None first)."""
    out = [tuple(norm(x) for x in r) for r in rows]
    return sorted(out, key=lambda r: tuple((x is not None, x if x is not None else 0) for x in r))


def query(ex: Executor, sql: str) -> list[list[Any]]:
    return [list(r) for r in ex.execute_one(sql).rows]


def error(ex: Executor, sql: str) -> TdError:
    with pytest.raises(TdError) as info:
        ex.execute_one(sql)
    return info.value


# ---------------------------------------------------------------------- inner / outer


@pytest.mark.parametrize(
    ("words", "how"),
    [
        ("join", "inner"),
        ("inner join", "inner"),
        ("left join", "left"),
        ("right outer join", "right"),
        ("full join", "outer"),
    ],
)
def test_inner_and_outer_joins_are_pandas_merges(ex: Executor, words: str, how: str) -> None:
    got = query(ex, f"select a.ts, a.v, b.ts, b.w from sa a {words} sb b on a.ts = b.ts")
    m = DA.merge(DB, on="ts", how=how, suffixes=("", "_b"), indicator=True)
    ts_a = m.ts.where(m._merge != "right_only")
    ts_b = m.ts.where(m._merge != "left_only")
    assert bag(got) == bag(zip(ts_a, m.v, ts_b, m.w, strict=True))
    # TDengine: without ORDER BY, the rows come in the driving table's timestamp order
    key = [r[2] for r in got] if how == "right" else [r[0] for r in got if r[0] is not None]
    assert key == sorted(key)


def test_tag_equality_groups_the_join(ex: Executor) -> None:
    got = query(ex, "select a.ts, a.v, a.g, b.w from sa a left join sb b on a.ts = b.ts and a.g = b.g")
    m = DA.merge(DB, on=["ts", "g"], how="left")
    assert bag(got) == bag(m[["ts", "v", "g", "w"]].itertuples(index=False))
    comma = query(ex, "select a.ts, a.v, b.w from ta a, tb b where a.ts = b.ts and b.w > 100")
    m = DTA.merge(DTB, on="ts")
    assert bag(comma) == bag(m[m.w > 100][["ts", "v", "w"]].itertuples(index=False))


def test_star_is_every_column_and_tag_of_each_table(ex: Executor) -> None:
    r = ex.execute_one("select * from sa a join sb b on a.ts = b.ts and a.g = b.g")
    assert [c.name for c in r.columns] == ["ts", "v", "g", "ts", "w", "g"]
    r = ex.execute_one("select b.*, a.v from ta a left join tb b on a.ts = b.ts")
    assert [c.name for c in r.columns] == ["ts", "w", "v"]
    m = DTA.merge(DTB, on="ts", how="left", indicator=True)
    assert bag(r.rows) == bag(zip(m.ts.where(m._merge == "both"), m.w, m.v, strict=True))


# ---------------------------------------------------------------------- semi / anti


def test_semi_and_anti_joins_are_membership(ex: Executor) -> None:
    in_b = DA.ts.isin(DB.ts)
    semi = query(ex, "select a.ts, a.v, a.g, b.ts from sa a left semi join sb b on a.ts = b.ts")
    assert bag(r[:3] for r in semi) == bag(DA[in_b].itertuples(index=False))
    assert all(r[0] == r[3] for r in semi)  # the matching row of the other table
    anti = query(ex, "select a.ts, a.v, a.g, b.ts, b.w from sa a left anti join sb b on a.ts = b.ts")
    assert bag(anti) == bag((*r, None, None) for r in DA[~in_b].itertuples(index=False))
    right = query(ex, "select b.ts, b.w from sa a right semi join sb b on a.ts = b.ts and a.v is not null")
    assert bag(right) == bag(DB[DB.ts.isin(DA.ts[DA.v.notna()])][["ts", "w"]].itertuples(index=False))
    right_anti = query(ex, "select b.ts, b.w, a.v from sa a right anti join sb b on a.ts = b.ts")
    assert bag(right_anti) == bag(
        (t, w, None) for t, w in DB[~DB.ts.isin(DA.ts)][["ts", "w"]].itertuples(index=False)
    )
    # WHERE filters the join's result
    where = query(ex, "select a.ts from sa a left anti join sb b on a.ts = b.ts where a.v is not null")
    assert bag(where) == bag((t,) for t in DA[~in_b & DA.v.notna()].ts)


def test_semi_and_anti_joins_of_subqueries(ex: Executor) -> None:
    a = DA[DA.v.notna()]
    semi = query(
        ex,
        "select a.ts, a.v, b.ts from (select ts, v from sa where v is not null) a "
        "left semi join sb b on a.ts = b.ts",
    )
    assert bag(semi) == bag((t, v, t) for t, v in a[a.ts.isin(DB.ts)][["ts", "v"]].itertuples(index=False))
    b = DTB[DTB.w > 100]
    r = ex.execute_one(
        "select * from ta a right anti join (select ts, w from tb where w > 100) b on a.ts = b.ts"
    )
    assert [c.name for c in r.columns] == ["ts", "v", "ts", "w"]
    assert bag(r.rows) == bag((None, None, t, w) for t, w in b[~b.ts.isin(DTA.ts)].itertuples(index=False))
    anti = query(
        ex,
        "select a.ts from (select ts, v from ta) a left anti join (select ts, w from tb) b on a.ts = b.ts "
        "where a.v > 1",
    )
    assert bag(anti) == bag((t,) for t in DTA[~DTA.ts.isin(DTB.ts) & (DTA.v > 1)].ts)


# ---------------------------------------------------------------------- asof


ASOF_DIRECTIONS = {
    ">=": ("backward", True),
    ">": ("backward", False),
    "<=": ("forward", True),
    "<": ("forward", False),
}


@pytest.mark.parametrize("op", [">=", ">", "<=", "<", "="])
def test_asof_jlimit_1_is_merge_asof(ex: Executor, op: str) -> None:
    got = query(ex, f"select a.ts, a.v, b.ts, b.w from ta a left asof join tb b on a.ts {op} b.ts")
    right = DTB.rename(columns={"ts": "tsb"})
    if op == "=":
        m = DTA.merge(right, left_on="ts", right_on="tsb", how="left")
    else:
        direction, exact = ASOF_DIRECTIONS[op]
        m = pd.merge_asof(
            DTA, right, left_on="ts", right_on="tsb", direction=direction, allow_exact_matches=exact
        )
    assert bag(got) == bag(m[["ts", "v", "tsb", "w"]].itertuples(index=False))
    assert [r[0] for r in got] == sorted(r[0] for r in got)


def test_asof_right_default_groups_and_tolerance(ex: Executor) -> None:
    # RIGHT ASOF: tb drives; "a.ts >= b.ts" matches the nearest ta row at or after each tb row
    got = query(ex, "select b.ts, b.w, a.ts from ta a right asof join tb b on a.ts >= b.ts")
    m = pd.merge_asof(
        DTB, DTA.rename(columns={"ts": "tsa"}), left_on="ts", right_on="tsa", direction="forward"
    )
    assert bag(got) == bag(m[["ts", "w", "tsa"]].itertuples(index=False))
    # no ON: the default rule is ">=" (rows of the other table at or before the driving row)
    assert bag(query(ex, "select a.ts, b.ts from ta a left asof join tb b")) == bag(
        query(ex, "select a.ts, b.ts from ta a left asof join tb b on a.ts >= b.ts")
    )
    # a tag equality groups the supertables' rows; WHERE after the join acts as a tolerance
    sql = "select a.ts, a.g, b.ts from sa a left asof join sb b on a.ts >= b.ts and a.g = b.g"
    da, db = DA.sort_values("ts"), DB.rename(columns={"ts": "tsb"}).sort_values("tsb")
    m = pd.merge_asof(da, db, left_on="ts", right_on="tsb", by="g")
    assert bag(query(ex, sql)) == bag(m[["ts", "g", "tsb"]].itertuples(index=False))
    m = pd.merge_asof(da, db, left_on="ts", right_on="tsb", by="g", tolerance=1 * S).dropna(subset=["tsb"])
    near = query(ex, sql + " where b.ts >= a.ts - 1s")
    assert bag(near) == bag(m[["ts", "g", "tsb"]].itertuples(index=False))


def nearest_k(
    a: pd.DataFrame,
    b: pd.DataFrame,
    op: str,
    k: int,
    by: str | None = None,
    keep: tuple[str, ...] = ("ts", "v"),
) -> list[tuple]:
    """Hand-written ASOF with JLIMIT: per row of ``a`` (its ``keep`` columns), the timestamps of the
    ``k`` rows of ``b`` (same ``by``) satisfying ``a.ts <op> b.ts`` nearest in time (NULL when none)."""
    out = []
    for r in a.itertuples(index=False):
        cand = b if by is None else b[b[by] == getattr(r, by)]
        keep_rows = {
            ">=": cand.ts <= r.ts,
            ">": cand.ts < r.ts,
            "<=": cand.ts >= r.ts,
            "<": cand.ts > r.ts,
            "=": cand.ts == r.ts,
        }[op]
        cand = cand[keep_rows]
        cand = cand.assign(dist=(cand.ts - r.ts).abs()).sort_values("dist").head(k)
        head = tuple(getattr(r, c) for c in keep)
        out += [(*head, t) for t in cand.ts] or [(*head, None)]
    return out


@pytest.mark.parametrize("op", [">=", ">", "<=", "<", "="])
@pytest.mark.parametrize("k", [0, 2, 3])
def test_asof_jlimit_k_is_the_k_nearest(ex: Executor, op: str, k: int) -> None:
    sql = f"select a.ts, a.v, b.ts from sa a left asof join sb b on a.ts {op} b.ts and a.g = b.g jlimit {k}"
    assert bag(query(ex, sql)) == bag(nearest_k(DA, DB, op, k, by="g"))
    flipped = op.translate(str.maketrans("<>", "><"))  # the same rule written the other way round
    sql = f"select a.ts, a.v, b.ts from ta a left asof join tb b on b.ts {flipped} a.ts jlimit {k}"
    assert bag(query(ex, sql)) == bag(nearest_k(DTA, DTB, op, k))


def test_window_clause_over_an_asof_join(ex: Executor) -> None:
    got = query(
        ex, "select _wstart, count(*), count(b.w) from ta a left asof join tb b jlimit 2 interval(5s)"
    )
    rows = pd.DataFrame(nearest_k(DTA, DTB, ">=", 2), columns=["ts", "v", "tsb"])
    w = rows.merge(DTB.rename(columns={"ts": "tsb"}), on="tsb", how="left")
    g = w.groupby((w.ts // (5 * S)) * (5 * S)).agg(n=("ts", "size"), nw=("w", "count"))
    assert bag(got) == bag(g.reset_index().itertuples(index=False))


# ---------------------------------------------------------------------- window join


def window_rows(a: pd.DataFrame, b: pd.DataFrame, lo: int, hi: int, k: int | None, by: str | None = None):
    """Hand-written WINDOW JOIN: per row of ``a``, the rows of ``b`` (same ``by``) with
    ``a.ts + lo <= b.ts <= a.ts + hi``, the ``k`` earliest (NULL row when none)."""
    out = []
    for r in a.itertuples(index=False):
        cand = b if by is None else b[b[by] == getattr(r, by)]
        cand = cand[(cand.ts >= r.ts + lo) & (cand.ts <= r.ts + hi)].sort_values("ts")
        if k is not None:
            cand = cand.head(k)
        out += [(r.ts, r.v, t, w) for t, w in zip(cand.ts, cand.w, strict=True)] or [(r.ts, r.v, None, None)]
    return out


@pytest.mark.parametrize(("lo", "hi"), [(-1, 1), (0, 3), (-2, -1), (0, 0)])
@pytest.mark.parametrize("k", [None, 1, 2])
def test_window_join_rows(ex: Executor, lo: int, hi: int, k: int | None) -> None:
    jl = "" if k is None else f" jlimit {k}"
    sql = f"select a.ts, a.v, b.ts, b.w from ta a left window join tb b window_offset({lo}s, {hi}s){jl}"
    got = query(ex, sql)
    assert bag(got) == bag(window_rows(DTA, DTB, lo * S, hi * S, k))
    assert got == sorted(got, key=lambda r: (r[0], r[2] is None, r[2] or 0))  # driving ts, then b.ts
    sql = (
        f"select a.ts, a.v, b.ts, b.w from sa a left window join sb b on a.g = b.g "
        f"window_offset({lo}s, {hi}s){jl}"
    )
    assert bag(query(ex, sql)) == bag(window_rows(DA, DB, lo * S, hi * S, k, by="g"))


def test_window_join_aggregates_per_window(ex: Executor) -> None:
    got = query(
        ex, "select a.ts, count(b.w), sum(b.w) from ta a left window join tb b window_offset(-2s, 2s)"
    )
    want = []
    for r in DTA.itertuples(index=False):
        win = DTB[(DTB.ts >= r.ts - 2 * S) & (DTB.ts <= r.ts + 2 * S)]
        want.append((r.ts, int(win.w.count()), win.w.sum() if win.w.count() else None))
    assert [tuple(norm(x) for x in row) for row in got] == want
    having = query(
        ex,
        "select a.ts, count(b.w) from ta a left window join tb b window_offset(-2s, 2s) "
        "having count(b.w) > 1",
    )
    assert [r[0] for r in having] == [t for t, n, _s in want if n > 1]
    # RIGHT WINDOW JOIN: tb drives
    got = query(ex, "select b.ts, count(a.v) from ta a right window join tb b window_offset(0s, 3s) jlimit 1")
    want = [
        (r.ts, int(DTA[(DTA.ts >= r.ts) & (DTA.ts <= r.ts + 3 * S)].head(1).v.count()))
        for r in DTB.itertuples()
    ]
    assert [tuple(row) for row in got] == want


# ---------------------------------------------------------------------- Beijing


DATA = Path(__file__).resolve().parents[2] / "data/beijing-air-quality"
LO = 1_388_505_600_000  # 2014-01-01 00:00 UTC
HI = LO + 31 * 24 * 3_600_000


def station(name: str) -> pd.DataFrame:
    df = pd.read_csv(DATA / f"PRSA_Data_{name}_20130301-20170228.csv.gz", na_values=["NA"], low_memory=False)
    ts = pd.to_datetime(df[["year", "month", "day", "hour"]]).astype("int64") // 1_000_000
    d = pd.DataFrame({"ts": ts, "pm25": df["PM2.5"]})
    return d[(d.ts >= LO) & (d.ts < HI)].reset_index(drop=True)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, pd.DataFrame, pd.DataFrame]:
    """Aotizhongxin (every hour) and Changping (only the hours with a PM2.5 reading, so ASOF and
    WINDOW joins have gaps to bridge), January 2014."""
    lake = Lake(tmp_path_factory.mktemp("air"))
    e = Executor(lake, MemoryRegistry(), tz="UTC", default_db="air")
    e.execute(
        "create database air precision 'ms'; create table aoti (ts timestamp, pm25 double); "
        "create table chang (ts timestamp, pm25 double)"
    )
    a, c = station("Aotizhongxin"), station("Changping")
    c = c[c.pm25.notna()].reset_index(drop=True)
    db = lake.catalog.require_database("air")
    for name, d in (("aoti", a), ("chang", c)):
        lake.write(
            db,
            lake.catalog.require_table("air", name),
            pa.table(
                {"tbname": [name] * len(d), "ts": d.ts.to_numpy(), "pm25": pa.array(d.pm25, from_pandas=True)}
            ),
        )
    return e, a, c


def test_beijing_asof_is_merge_asof(air: tuple[Executor, pd.DataFrame, pd.DataFrame]) -> None:
    e, a, c = air
    got = query(e, "select a.ts, a.pm25, b.ts, b.pm25 from aoti a left asof join chang b on a.ts >= b.ts")
    m = pd.merge_asof(a, c.rename(columns={"ts": "tsb", "pm25": "pb"}), left_on="ts", right_on="tsb")
    assert len(got) == len(a) and bag(got) == bag(m[["ts", "pm25", "tsb", "pb"]].itertuples(index=False))
    got = query(
        e, "select a.ts, b.ts from aoti a left asof join chang b on a.ts < b.ts where b.ts <= a.ts + 3h"
    )
    m = pd.merge_asof(
        a,
        c.rename(columns={"ts": "tsb"}),
        left_on="ts",
        right_on="tsb",
        direction="forward",
        allow_exact_matches=False,
        tolerance=3 * 3_600_000,
    ).dropna(subset=["tsb"])
    assert bag(got) == bag(m[["ts", "tsb"]].itertuples(index=False))


def test_beijing_window_join_average(air: tuple[Executor, pd.DataFrame, pd.DataFrame]) -> None:
    e, a, c = air
    got = query(
        e,
        "select a.ts, count(b.pm25), avg(b.pm25) from aoti a left window join chang b window_offset(-3h, 3h)",
    )
    t, v = c.ts.to_numpy(), c.pm25.to_numpy()
    lo = np.searchsorted(t, a.ts.to_numpy() - 3 * 3_600_000, "left")
    hi = np.searchsorted(t, a.ts.to_numpy() + 3 * 3_600_000, "right")
    assert [r[0] for r in got] == a.ts.tolist()
    assert [r[1] for r in got] == (hi - lo).tolist()
    means = [v[i:j].mean() if j > i else None for i, j in zip(lo, hi, strict=True)]
    for row, want in zip(got, means, strict=True):
        assert (row[2] is None and want is None) or row[2] == pytest.approx(want)
    got = query(e, "select a.ts, b.ts from aoti a left window join chang b window_offset(0s, 6h) jlimit 2")
    want = [
        (x, t[i + d] if i + d < j else None)
        for x, i, j in zip(
            a.ts,
            np.searchsorted(t, a.ts, "left"),
            np.searchsorted(t, a.ts + 6 * 3_600_000, "right"),
            strict=True,
        )
        for d in range(max(1, min(2, j - i)))
    ]
    assert bag(got) == bag(want)


# ---------------------------------------------------------------------- rules and errors


@pytest.mark.parametrize(
    ("sql", "code", "at"),
    [
        ("select * from ta a join tb b on a.v = b.w", Code.EXPECTED_TS_EQUAL, "join"),
        ("select * from ta a left join tb b on a.ts > b.ts", Code.EXPECTED_TS_EQUAL, "left"),
        ("select * from ta a left semi join tb b on a.v = b.w", Code.EXPECTED_TS_EQUAL, "left"),
        ("select * from ta a, tb b", Code.NOT_SUPPORT_CROSS_JOIN, "tb b"),
        ("select * from ta a join tb b on a.ts = b.ts or a.v = 1", Code.NOT_SUPPORT_JOIN_COND, "join"),
        ("select * from ta a left asof join tb b on a.ts != b.ts", Code.NOT_SUPPORT_JOIN_COND, "a.ts !="),
        (
            "select * from ta a left asof join tb b on a.ts >= b.ts and a.v > 1",
            Code.NOT_SUPPORT_JOIN_COND,
            "a.v >",
        ),
        (
            "select * from ta a left asof join tb b on a.ts >= b.ts and a.v = a.ts",
            Code.NOT_SUPPORT_JOIN_COND,
            "a.v =",
        ),
        (
            "select * from ta a left window join tb b on a.ts = b.ts window_offset(-1s, 1s)",
            Code.NOT_SUPPORT_JOIN_COND,
            "a.ts =",
        ),
        ("select * from ta a left asof join tb b jlimit 1025", Code.INVALID_OPERATION, "jlimit"),
        (
            "select * from ta a left window join tb b window_offset(1s, -1s)",
            Code.INVALID_OPERATION,
            "window_offset",
        ),
        (
            "select * from ta a left window join tb b window_offset(-1n, 1s)",
            Code.INVALID_WIN_OFFSET_UNIT,
            "window_offset",
        ),
        (
            "select * from ta a left window join tb b window_offset(-1u, 1s)",
            Code.INVALID_WIN_OFFSET_UNIT,
            "window_offset",
        ),
        ("select * from ta a asof join tb b", Code.SYNTAX_ERROR, "asof"),
        ("select * from ta a full asof join tb b", Code.SYNTAX_ERROR, "full"),
        ("select * from ta a left window join tb b", Code.SYNTAX_ERROR, "left"),
        ("select * from ta a left join tb b on a.ts = b.ts jlimit 2", Code.NOT_SUPPORT_JOIN, "jlimit"),
        ("select * from (select * from ta) a left asof join tb b", Code.NOT_SUPPORT_JOIN, "left"),
        ("select * from ta a right asof join (select ts, w from tb) b", Code.NOT_SUPPORT_JOIN, "right"),
        (
            "select * from ta a left window join (select ts, w from tb) b window_offset(-1s, 1s)",
            Code.NOT_SUPPORT_JOIN,
            "left",
        ),
        (
            "select * from ta a left join tb b on a.ts = b.ts join sa c on a.ts = c.ts",
            Code.NOT_SUPPORT_JOIN,
            "left",
        ),
        (
            "select * from ta where ts in (select a.ts from ta a left semi join tb b on a.ts = b.ts)",
            Code.NOT_SUPPORT_JOIN,
            "left",
        ),
        (
            "select a.ts, count(b.w) from ta a left window join tb b window_offset(-1s, 1s) having a.v > 1",
            Code.INVALID_WJOIN_HAVING_EXPR,
            "a.v > 1",
        ),
        (
            "select count(b.w) from ta a left window join tb b window_offset(-1s, 1s) group by a.v",
            Code.NOT_SUPPORT_JOIN,
            "left",
        ),
        ("select a.nope from ta a left asof join tb b", Code.INVALID_COLUMN, "a.nope"),
        ("select * from ta join tb using (ts)", Code.SYNTAX_ERROR, "join"),
        ("select * from ta left asof join TA", Code.NOT_UNIQUE_TABLE_ALIAS, "TA"),
        (
            "select _wstart, count(*) from ta a join tb b on a.v = b.w interval(1s)",
            Code.EXPECTED_TS_EQUAL,
            "join",
        ),
        (
            "select * from (select a.ts from ta a left asof join tb b) t join tb c on t.ts = c.ts",
            Code.NOT_SUPPORT_JOIN,
            "left",
        ),
        (
            "select a.ts from ta a left asof join tb b union all select a.ts from ta a left asof join tb b",
            Code.NOT_SUPPORT_JOIN,
            "left",
        ),
        (
            "select * from ta a left asof join tb b on timetruncate(a.ts, 1s) >= timetruncate(b.ts, 1s)",
            Code.NOT_SUPPORTED,
            "timetruncate(a.ts",
        ),
    ],
)
def test_rules_are_refused_with_tdengine_codes_at_the_place(
    ex: Executor, sql: str, code: int, at: str
) -> None:
    e = error(ex, sql)
    assert e.code == code, (e.code, e.message)
    assert getattr(e, "offset", None) == sql.index(at), e.message
    assert "duckdb" not in e.message.lower() and "binder" not in e.message.lower()


@pytest.mark.parametrize(
    "sql",
    [
        "select a.ts, b.w from ta a left asof join (select ts, w from tb) b on a.ts >= b.ts",
        "select a.ts, b.w from (select ts, v from ta) a left asof join tb b",
        "select a.ts, count(b.w) from ta a left window join (select * from tb) b window_offset(-1s, 1s)",
    ],
)
def test_asof_and_window_joins_of_subqueries_are_refused_as_tdengine_does(ex: Executor, sql: str) -> None:
    # TDengine SQL manual, "Join Queries": "Only supports ASOF Join between tables, not between
    # subqueries" (and so for Window Join); its tests tsim/join/left_asof_join.sim and
    # left_win_join refuse "(select * from sta) a left asof|window join sta b"
    e = error(ex, sql)
    assert e.code == Code.NOT_SUPPORT_JOIN
    assert "between tables, not between subqueries" in e.message


def test_inner_join_of_three_tables_chains(ex: Executor) -> None:
    got = query(ex, "select a.ts, b.w, c.v from ta a join tb b on a.ts = b.ts join sa c on c.ts = a.ts")
    m = DTA.merge(DTB, on="ts").merge(DA.rename(columns={"v": "cv"}), on="ts")
    assert bag(got) == bag(m[["ts", "w", "cv"]].itertuples(index=False))


def test_joined_tables_each_need_read(ex: Executor) -> None:
    ex.execute("create database k precision 'ms'; create table k.secret (ts timestamp, pin int)")
    ex.execute(f"insert into k.secret values ({T0}, 1234)")
    bob = Executor(
        ex.lake,
        MemoryRegistry(),
        tz="UTC",
        default_db="j",
        principal=Principal("bob", grants=(Grant("j", None, read=True),)),
    )
    assert query(bob, "select count(*) from ta") == [[len(DTA)]]
    for sql in (
        "select a.ts, s.pin from ta a join k.secret s on a.ts = s.ts",
        "select a.ts, s.pin from ta a left asof join k.secret s",
        "select a.ts from ta a left semi join k.secret s on a.ts = s.ts",
        "select s.pin from k.secret s right window join ta a window_offset(-1s, 1s)",
        "select _wstart, count(*) from ta a left asof join k.secret s interval(1s)",
    ):
        e = error(bob, sql)
        assert e.code == Code.PERMISSION_DENIED, sql
        assert "1234" not in e.message


def test_asof_over_supertables_without_groups_takes_the_nearest_timestamps(ex: Executor) -> None:
    # sb's subtables share timestamps: the rows chosen among equal timestamps may be any, their
    # timestamps may not
    for op, k in ((">=", 1), (">=", 3), ("<", 2), ("=", 2)):
        sql = f"select a.ts, a.v, a.g, b.ts from sa a left asof join sb b on a.ts {op} b.ts jlimit {k}"
        assert bag(query(ex, sql)) == bag(nearest_k(DA, DB, op, k, keep=("ts", "v", "g"))), sql


def test_timetruncate_main_condition(ex: Executor) -> None:
    got = query(
        ex, "select a.ts, b.ts from ta a join tb b on timetruncate(a.ts, 1m) = timetruncate(b.ts, 1m)"
    )
    minute = 60_000
    m = DTA.assign(k=DTA.ts // minute * minute).merge(DTB.assign(k=DTB.ts // minute * minute), on="k")
    assert bag(got) == bag(m[["ts_x", "ts_y"]].itertuples(index=False))


def test_join_words_survive_rendering_and_streams_take_them(ex: Executor) -> None:
    from spark_workers.sql.parser import parse_one
    from spark_workers.sql.render import query_sql

    for sql in (
        "SELECT a.ts FROM ta AS a LEFT ASOF JOIN tb AS b ON a.ts > b.ts AND a.v = b.w JLIMIT 2 WHERE a.v > 1",
        "SELECT * FROM ta AS a RIGHT WINDOW JOIN tb AS b WINDOW_OFFSET(-1s, 2m) JLIMIT 3",
        "SELECT * FROM ta AS a LEFT ANTI JOIN tb AS b ON a.ts = b.ts",
    ):
        stmt = parse_one(sql)
        assert query_sql(stmt.query) == sql  # type: ignore[attr-defined]
    # a 3.3.7 computation is any query (seed 002): its joins go through the same planner
    # (tests/runtime/test_stream_joins.py runs them)
    ex.execute(
        "create stream s1 interval(5s) sliding(5s) from ta into out1 as select _twstart, count(*) "
        "from ta a left asof join tb b where a.ts >= _twstart and a.ts < _twend"
    )
    assert any("s1" in row for row in query(ex, "show streams"))


def test_queries_over_a_join_subquery(ex: Executor) -> None:
    # TDengine's own form: a window join in a subquery, windowed by the outer query on its timeline
    got = query(
        ex,
        "select _wstart, count(*), sum(c) from "
        "(select a.ts, count(b.w) c from ta a left window join tb b window_offset(-2s, 2s)) interval(5s)",
    )
    per_row = pd.DataFrame(
        [(t, int(DTB[(DTB.ts >= t - 2 * S) & (DTB.ts <= t + 2 * S)].w.count())) for t in DTA.ts],
        columns=["ts", "c"],
    )
    g = per_row.groupby(per_row.ts // (5 * S) * (5 * S)).c.agg(["size", "sum"]).reset_index()
    assert bag(got) == bag(g.itertuples(index=False))
    r = ex.execute_one(
        "select * from (select a.ts, b.ts as bts, b.w from ta a left asof join tb b jlimit 2) t where w > 100"
    )
    assert [c.name for c in r.columns] == ["ts", "bts", "w"]
    rows = pd.DataFrame(nearest_k(DTA, DTB, ">=", 2), columns=["ts", "v", "bts"])
    rows = rows.merge(DTB.rename(columns={"ts": "bts"}), on="bts")
    assert bag(r.rows) == bag(rows[rows.w > 100][["ts", "bts", "w"]].itertuples(index=False))
    assert [row[0] for row in r.rows] == sorted(row[0] for row in r.rows)


def test_join_words_are_words_elsewhere(ex: Executor) -> None:
    ex.execute(f"create table jw (ts timestamp, jlimit int); insert into jw values ({T0}, 5)")
    assert query(ex, "select jlimit from jw") == [[5]]
    assert query(ex, "select a.jlimit, b.jlimit from jw a left asof join jw b jlimit 1") == [[5, 5]]
