"""TDengine query clauses (SQL manual, "Data Querying"): SLIMIT / SOFFSET over the groups of
PARTITION BY and GROUP BY, the ``_qstart`` / ``_qend`` / ``_qduration`` pseudo columns, the MATCH
/ NMATCH regular-expression operators and window clauses over subqueries, each against an
independent pandas / ``re`` computation on a handmade supertable, and their errors (TDengine's
code, positioned)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_577_836_800_000  # 2020-01-01 00:00:00 UTC
S = 1000
ROWS = [
    # tbname, seconds after T0, v, s
    ("d1", 0, 1, "abc"),
    ("d1", 4, 2, "Abd"),
    ("d1", 12, 3, "a.c"),
    ("d1", 25, 4, None),
    ("d2", 1, 10, "xyz"),
    ("d2", 13, 20, "xaay"),
    ("d2", 14, 30, "aaa"),
    ("d3", 2, 100, "b1"),
    ("d3", 22, 200, "B22"),
    ("d4", 5, 1000, "zz top"),
]


@pytest.fixture(scope="module")
def ex(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    e = Executor(Lake(tmp_path_factory.mktemp("lake")), MemoryRegistry(), tz="UTC", default_db="db")
    e.execute(
        "create database db precision 'ms'; "
        "create stable st (ts timestamp, v int, s varchar(16)) tags (loc varchar(8)); "
        + "; ".join(f"create table {tb} using st tags ('{tb[::-1]}')" for tb in ("d1", "d2", "d3", "d4"))
    )
    values = " ".join(
        f"{tb} values ({T0 + t * S}, {v}, {'NULL' if s is None else repr(s)})" for tb, t, v, s in ROWS
    )
    e.execute(f"insert into {values}")
    return e


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    d = pd.DataFrame(ROWS, columns=["tbname", "t", "v", "s"])
    d["ts"] = T0 + d.t * S
    return d


def run(ex: Executor, sql: str) -> list[list[object]]:
    return ex.execute_one(sql).rows


def fails(ex: Executor, sql: str) -> SqlError:
    with pytest.raises(SqlError) as err:
        ex.execute_one(sql)
    return err.value


# ---------------------------------------------------------------------- SLIMIT / SOFFSET


@pytest.mark.parametrize(("slimit", "soffset"), [(1, 0), (2, 0), (2, 1), (3, 2), (10, 0), (1, 5), (0, 0)])
def test_slimit_keeps_whole_partitions(ex: Executor, frame: pd.DataFrame, slimit: int, soffset: int) -> None:
    groups = sorted(frame.tbname.unique())[soffset : soffset + slimit]
    want = frame[frame.tbname.isin(groups)].sort_values(["tbname", "ts"])
    for clause in (f"slimit {slimit} soffset {soffset}", f"slimit {soffset}, {slimit}"):
        got = run(ex, f"select tbname, ts, v from st partition by tbname {clause}")
        assert got == want[["tbname", "ts", "v"]].values.tolist()


def test_slimit_counts_groups_of_group_by_and_limit_follows(ex: Executor, frame: pd.DataFrame) -> None:
    agg = frame.groupby("tbname").v.agg(["count", "sum"]).reset_index().sort_values("tbname")
    got = run(ex, "select tbname, count(*), sum(v) from st group by tbname slimit 2 soffset 1")
    assert got == agg.iloc[1:3].values.tolist()
    got = run(ex, "select tbname, count(*), sum(v) from st partition by tbname slimit 3 limit 2")
    assert got == agg.iloc[0:2].values.tolist()


def test_slimit_on_partitioned_windows(ex: Executor, frame: pd.DataFrame) -> None:
    got = run(
        ex,
        "select tbname, _wstart, count(*), max(v) from st partition by tbname interval(10s) "
        "slimit 2 soffset 1",
    )
    f = frame[frame.tbname.isin(["d2", "d3"])].copy()
    f["w"] = T0 + ((f.ts - T0) // (10 * S)) * 10 * S
    want = f.groupby(["tbname", "w"]).v.agg(["count", "max"]).reset_index()
    assert sorted(map(tuple, got)) == sorted(map(tuple, want.values.tolist()))


def test_slimit_without_groups_is_0x2638_at_slimit(ex: Executor) -> None:
    sql = "select ts, v from st where v > 1 slimit 2"
    e = fails(ex, sql)
    assert e.code == Code.SLIMIT_LEAK_PARTITION_GROUP_BY == 0x2638
    assert e.offset == sql.index("slimit")
    sql = "select _wstart, count(*) from st interval(10s) slimit 1"
    assert fails(ex, sql).code == 0x2638


def test_slimit_syntax(ex: Executor) -> None:
    sql = "select tbname, v from st partition by tbname slimit x"
    e = fails(ex, sql)
    assert e.code == Code.SYNTAX_ERROR and e.offset == sql.index("x")
    sql = "select tbname, v from st partition by tbname soffset 1"
    e = fails(ex, sql)
    assert e.code == Code.SYNTAX_ERROR and e.offset == sql.index("soffset")


# ---------------------------------------------------------------------- _qstart / _qend / _qduration


@pytest.mark.parametrize(
    ("where", "lo", "hi"),
    [
        (f"ts >= {T0 + 2 * S} and ts < {T0 + 14 * S}", T0 + 2 * S, T0 + 14 * S - 1),
        ("ts between '2020-01-01 00:00:01' and '2020-01-01 00:00:13'", T0 + S, T0 + 13 * S),
        (f"v > 1 and ts > {T0} and {T0 + 20 * S} >= ts", T0 + 1, T0 + 20 * S),
    ],
)
def test_qstart_qend_qduration_are_the_where_range(ex: Executor, where: str, lo: int, hi: int) -> None:
    r = ex.execute_one(f"select _qstart, _qend, _qduration, count(*) from st where {where}")
    assert [c.type.name for c in r.columns[:3]] == ["TIMESTAMP", "TIMESTAMP", "BIGINT"]
    assert r.rows[0][:3] == [lo, hi, hi - lo]


def test_qstart_unbounded_is_int64_limits(ex: Executor) -> None:
    rows = run(ex, "select _qstart, _qend from st where v = 1")
    assert rows == [[-(2**63), 2**63 - 1]]


def test_qstart_in_window_query_is_constant(ex: Executor) -> None:
    rows = run(
        ex,
        f"select _wstart, _qstart, _qend from st where ts >= {T0} and ts <= {T0 + 19 * S} interval(10s)",
    )
    assert rows == [[T0, T0, T0 + 19 * S], [T0 + 10 * S, T0, T0 + 19 * S]]


def test_qstart_in_where_is_refused(ex: Executor) -> None:
    sql = "select v from st where _qstart > 0"
    e = fails(ex, sql)
    assert e.code == Code.NOT_SUPPORTED and e.offset == sql.index("_qstart")


# ---------------------------------------------------------------------- MATCH / NMATCH


@pytest.mark.parametrize(
    "pattern",
    ["^a", "a.c", "c$", "a+", "^[ab]", "[[:upper:]]", "^(abc|xyz)$", "a{2}", "[0-9]+", "zz top", " "],
)
def test_match_and_nmatch_are_posix_searches(ex: Executor, frame: pd.DataFrame, pattern: str) -> None:
    rx = re.compile(pattern.replace("[[:upper:]]", "[A-Z]"))
    texts = [s for s in frame.s if s is not None]
    hit = sorted(s for s in texts if rx.search(s))
    miss = sorted(s for s in texts if not rx.search(s))
    assert sorted(r[0] for r in run(ex, f"select s from st where s match '{pattern}'")) == hit
    assert sorted(r[0] for r in run(ex, f"select s from st where s nmatch '{pattern}'")) == miss


def test_match_on_tbname_and_in_the_select_list(ex: Executor, frame: pd.DataFrame) -> None:
    got = run(ex, "select distinct tbname from st where tbname match '^d[13]$' order by tbname")
    assert got == [["d1"], ["d3"]]
    r = ex.execute_one("select s, s match 'a' from st where tbname = 'd1' order by ts")
    assert r.columns[1].type.name == "BOOL"
    assert [row[1] for row in r.rows] == [True, False, True, None]


@pytest.mark.parametrize(
    ("sql", "token", "code"),
    [
        ("select s from st where v match 'a'", "v match", Code.INVALID_OPERATION),
        ("select s from st where s match s", "s match s", Code.INVALID_OPERATION),
        ("select s from st where s match '(a'", "'(a'", Code.REGULAR_EXPRESSION_ERROR),
        ("select s from st where s nmatch 'a[b'", "'a[b'", Code.REGULAR_EXPRESSION_ERROR),
        ("select s from st where s match '(?=a)'", "'(?=a)'", Code.REGULAR_EXPRESSION_ERROR),
        ("select s from st where s match '[[:foo:]]'", "'[[:foo:]]'", Code.REGULAR_EXPRESSION_ERROR),
        ("select s from st where s match 'a{1001}'", "'a{1001}'", Code.REGULAR_EXPRESSION_ERROR),
        ("select s from st where s regexp 'a'", "regexp", Code.SYNTAX_ERROR),
    ],
)
def test_match_errors(ex: Executor, sql: str, token: str, code: int) -> None:
    e = fails(ex, sql)
    assert e.code == code, e.message
    want = sql.rindex("s") if token == "s match s" else sql.index(token)  # the right operand
    assert e.offset == want, e.message


# ---------------------------------------------------------------------- window over a subquery


def _windows(f: pd.DataFrame, col: str = "v", size: int = 10 * S) -> list[list[object]]:
    w = T0 + ((f.ts - T0) // size) * size
    g = f.assign(w=w).groupby("w")[col].agg(["count", "sum"]).reset_index()
    return [[int(a), int(b), int(c)] for a, b, c in g.values.tolist()]


def test_window_over_merged_subquery(ex: Executor, frame: pd.DataFrame) -> None:
    got = run(
        ex, "select _wstart, count(*), sum(x) from (select ts, v * 2 as x from st where v > 2) interval(10s)"
    )
    f = frame[frame.v > 2].assign(x=lambda d: d.v * 2)
    assert got == _windows(f, "x")


def test_window_over_union_all(ex: Executor, frame: pd.DataFrame) -> None:
    got = run(
        ex,
        "select _wstart, count(*), sum(v) from "
        "(select ts, v from d1 union all select ts, v + 1 as v from d2) interval(10s)",
    )
    f = pd.concat([frame[frame.tbname == "d1"], frame[frame.tbname == "d2"].assign(v=lambda d: d.v + 1)])
    assert got == _windows(f)


def test_window_over_order_limit_and_distinct(ex: Executor, frame: pd.DataFrame) -> None:
    got = run(
        ex,
        "select _wstart, count(*), sum(v) from (select ts, v from st order by v desc limit 4) interval(10s)",
    )
    assert got == _windows(frame.sort_values("v", ascending=False).head(4))
    got = run(ex, "select _wstart, count(*), sum(v) from (select distinct ts, v from st) session(ts, 3s)")
    ts = np.sort(frame.ts.to_numpy())
    sessions = np.cumsum(np.r_[True, np.diff(ts) > 3 * S])
    f = frame.sort_values("ts").assign(sess=sessions)
    want = f.groupby("sess").agg(w=("ts", "min"), count=("v", "count"), sum=("v", "sum")).values.tolist()
    assert got == [[int(a), int(b), int(c)] for a, b, c in want]


def test_window_over_subquery_without_timestamp_is_refused(ex: Executor) -> None:
    sql = "select _wstart, max(c) from (select tbname, count(*) c from st group by tbname) interval(10s)"
    e = fails(ex, sql)
    assert e.code == Code.INVALID_WINDOW
    assert e.offset == sql.index("tbname")  # the subquery's first column, where its timestamp would be
