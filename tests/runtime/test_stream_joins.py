"""Joins in a TDengine 3.3.7 stream's computation ("a computation task ... can be any type of query
statement", seed 002 "Stream Processing Computation Tasks"; TDengine SQL manual "Join Queries"),
run by the local pipeline (``query/compute.py`` through the ad-hoc SELECT's join planner,
``query/joins.py``): each closed window's rows of the trigger subtable (``%%tbname`` between
``_twstart`` and ``_twend``) joined with a reference supertable, against an independent pandas
computation (``merge_asof`` for ASOF, hand-computed windows for WINDOW JOIN, membership for
SEMI/ANTI). Then the refusals TDengine itself makes (a join on ``%%trows``, an ASOF join of a
subquery) at CREATE STREAM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spark_workers.errors import Code, SqlError
from tests.runtime.test_streams337 import T0, Env, ins

S = 1000
# trigger rows (second, a, b) of c1 (tag g 1) and c2 (tag g 2); count_window(2) closes two
# windows in each (the fifth row of c1 opens a third one that never closes)
C1 = [(0, 1, 1), (2, 2, 1), (3, 5, 1), (6, 7, 1), (9, 8, 1)]
C2 = [(1, 10, 1), (4, 20, 1), (5, 30, 1), (8, 40, 1)]
# reference rows (millisecond offset, v) of r1 (tag g 1) and r2 (tag g 2)
R1 = [(-500, 1), (1500, 2), (2000, 3), (2500, 4), (7000, 5)]
R2 = [(900, 100), (4000, 200), (4100, None), (9000, 300)]


def env(tmp_path: Path) -> Env:
    e = Env(tmp_path)
    e.ex.execute(
        "create stable rs (ts timestamp, v int) tags (g int); "
        "create table r1 using rs tags (1); create table r2 using rs tags (2)"
    )
    for tb, rows in (("r1", R1), ("r2", R2)):
        vals = " ".join(f"({T0 + ms}, {'NULL' if v is None else v})" for ms, v in rows)
        e.ex.execute(f"insert into {tb} values {vals}")
    return e


def closed(rows: list[tuple[int, int, int]], g: int) -> pd.DataFrame:
    """The rows of the windows count_window(2) closes (pairs), with the subtable's tag."""
    n = len(rows) // 2 * 2
    return pd.DataFrame([(T0 + s * S, a, g) for s, a, _b in rows[:n]], columns=["ts", "a", "g"]).astype(
        {"ts": "int64"}
    )


def refs() -> pd.DataFrame:
    rows = [(T0 + ms, v, g) for g, rs in ((1, R1), (2, R2)) for ms, v in rs]
    return pd.DataFrame(rows, columns=["rts", "v", "g"]).astype({"rts": "int64"})


def trigger() -> pd.DataFrame:
    return pd.concat([closed(C1, 1), closed(C2, 2)], ignore_index=True)


def run(tmp_path: Path, computation: str, columns: str) -> list[list[object]]:
    e = env(tmp_path)
    e.stream(f"create stream s count_window(2) from st partition by tbname into res as {computation}")
    e.write(ins("c1", *C1), ins("c2", *C2))
    return e.rows(f"select {columns} from res order by tag_tbname, 1")


def none(v: object) -> object:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    return int(v) if isinstance(v, float | np.integer) and float(v).is_integer() else v


def table(df: pd.DataFrame, cols: list[str]) -> list[list[object]]:
    return [[none(x) for x in r] for r in df.sort_values(["g", "ts"])[cols].itertuples(index=False)]


@pytest.mark.parametrize(("op", "direction", "exact"), [(">=", "backward", True), ("<", "forward", False)])
def test_left_asof_join_is_merge_asof_by_tag(tmp_path: Path, op: str, direction: str, exact: bool) -> None:
    got = run(
        tmp_path,
        f"select a.ts, a.a, r.ts rts, r.v from %%tbname a left asof join d.rs r on a.ts {op} r.ts "
        "and a.g = r.g where a.ts >= _twstart and a.ts <= _twend",
        "ts, a, rts, v",
    )
    want = pd.merge_asof(
        trigger().sort_values("ts"),
        refs().sort_values("rts"),
        left_on="ts",
        right_on="rts",
        by="g",
        direction=direction,  # type: ignore[arg-type]
        allow_exact_matches=exact,
    )
    assert got == table(want, ["ts", "a", "rts", "v"])


def test_aggregates_over_an_asof_join_per_window_name_the_placeholder(tmp_path: Path) -> None:
    e = env(tmp_path)
    e.stream(
        "create stream s count_window(2) from st partition by tbname into res as select _twstart, "
        "count(r.v), sum(r.v) from %%tbname a left asof join d.rs r on a.ts >= r.ts and a.g = r.g "
        "where a.ts >= _twstart and a.ts <= _twend"
    )
    e.write(ins("c1", *C1), ins("c2", *C2))
    names = [r[0] for r in e.ex.execute_one("desc res").rows]
    assert names[:3] == ["_twstart", "count(r.v)", "sum(r.v)"]
    got = e.rows("select * from res order by tag_tbname, 1")
    m = pd.merge_asof(
        trigger().sort_values("ts"), refs().sort_values("rts"), left_on="ts", right_on="rts", by="g"
    )
    m["window"] = m.groupby("g").ts.rank(method="first").sub(1).floordiv(2)  # count_window(2)
    want = [
        [int(w.ts.min()), int(w.v.count()), none(w.v.sum()) if w.v.count() else None, f"c{g}"]
        for (g, _k), w in m.groupby(["g", "window"])
    ]
    assert got == want


def test_a_window_clause_over_an_asof_join_runs_per_event(tmp_path: Path) -> None:
    # the join's rows first, then windowed on the driving table's timestamps (TDengine "Join
    # Queries", Primary Key Timeline); interval(1s) puts each trigger row in its own window
    got = run(
        tmp_path,
        "select _wstart, count(r.v) n, max(r.ts) m from %%tbname a left asof join d.rs r on a.ts >= r.ts "
        "and a.g = r.g where a.ts >= _twstart and a.ts <= _twend interval(1s)",
        "_wstart, n, m",
    )
    m = pd.merge_asof(
        trigger().sort_values("ts"), refs().sort_values("rts"), left_on="ts", right_on="rts", by="g"
    )
    want = [
        [t, int(v == v), none(r)]
        for t, v, r in m.sort_values(["g", "ts"])[["ts", "v", "rts"]].itertuples(index=False)
    ]
    assert got == want


def test_window_join_aggregates_per_driving_row(tmp_path: Path) -> None:
    got = run(
        tmp_path,
        "select a.ts, count(r.v) n, sum(r.v) sv, count(*) c from %%tbname a left window join d.rs r "
        "on a.g = r.g window_offset(-1s, 1s) where a.ts >= _twstart and a.ts <= _twend",
        "ts, n, sv, c",
    )
    ref = refs()
    want = []
    for t in trigger().sort_values(["g", "ts"]).itertuples(index=False):
        w = ref[(ref.g == t.g) & (ref.rts >= t.ts - S) & (ref.rts <= t.ts + S)]
        vals = w.v.dropna()
        # no row in the window: one row with the other table's columns NULL (count(*) counts it)
        want.append([t.ts, len(vals), int(vals.sum()) if len(vals) else None, max(len(w), 1)])
    assert got == want


@pytest.mark.parametrize("kind", ["semi", "anti"])
def test_semi_and_anti_joins_are_membership(tmp_path: Path, kind: str) -> None:
    got = run(
        tmp_path,
        f"select a.ts, a.a from %%tbname a left {kind} join d.rs r on a.ts = r.ts "
        "where a.ts >= _twstart and a.ts <= _twend",
        "ts, a",
    )
    t = trigger()
    member = t.ts.isin(refs().rts)
    assert got == table(t[member if kind == "semi" else ~member], ["ts", "a"])


def test_left_outer_join_is_a_pandas_merge(tmp_path: Path) -> None:
    got = run(
        tmp_path,
        "select a.ts, a.a, r.v from %%tbname a left join d.rs r on a.ts = r.ts "
        "where a.ts >= _twstart and a.ts <= _twend",
        "ts, a, v",
    )
    want = trigger().merge(refs().drop(columns="g"), left_on="ts", right_on="rts", how="left")
    assert got == table(want, ["ts", "a", "v"])


@pytest.mark.parametrize(
    ("computation", "code", "words"),
    [
        # seed 002, Placeholders: "Queries that use %%trows do not support ... join operations"
        ("select a.ts from %%trows a left asof join d.rs r", Code.INVALID_STREAM_QUERY, "%%trows"),
        # TDengine "Join Queries": "Only supports ASOF Join between tables, not between subqueries"
        (
            "select a.ts from (select * from %%tbname) a left asof join d.rs r",
            Code.NOT_SUPPORT_JOIN,
            "between",
        ),
        (
            "select a.ts from %%tbname a left window join (select ts, v from d.r1) r window_offset(-1s, 1s)",
            Code.NOT_SUPPORT_JOIN,
            "between",
        ),
        (
            "select a.ts from %%tbname a left asof join d.rs r on a.ts != r.ts",
            Code.NOT_SUPPORT_JOIN_COND,
            "ON",
        ),
        (
            "select _wstart, count(*) from %%tbname a left window join d.rs r window_offset(-1s, 1s) "
            "interval(1s)",
            Code.INVALID_STREAM_QUERY,
            "window clause",
        ),
    ],
)
def test_tdengines_refusals_at_create_stream(tmp_path: Path, computation: str, code: int, words: str) -> None:
    e = env(tmp_path)
    with pytest.raises(SqlError) as info:
        e.stream(f"create stream s count_window(2) from st partition by tbname into res as {computation}")
    assert info.value.code == code, info.value.message
    assert words in info.value.message
