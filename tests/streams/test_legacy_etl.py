"""Legacy streams without a window (filter / scalar ETL), over subqueries, over JOINs, and into an
existing supertable, through the whole pipeline without Spark (executor -> compiled stream -> stage
1 -> output sink -> output table -> SELECT), each checked against an independent pandas model of
the seed's rule.

Seeds: 001 (``[window_clause]`` optional: "data filtering, scalar function computations"), 000
("For non-window computations, the trigger of stream computing is real-time", "Custom tag",
"Writing to an existing supertable"), 004 (``power_stream``, printed without the SELECT keyword).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spark_workers.errors import SqlError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import group_id
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z, ms
SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"

# seed 004 "Creating streams", as printed (no SELECT keyword, no PARTITION BY)
POWER_STREAM = """CREATE STREAM power_stream
  INTO power_stream_output_stb AS
    concat_ws(".", location, TBNAME) AS meter_location,
    current * voltage * cos(phase) AS active_power,
    current * voltage * sin(phase) AS reactive_power
  FROM meters 
  WHERE voltage > 100"""  # noqa: W291 (the seed's trailing space kept)


class Pipeline:
    """An executor in database ``power`` plus one LocalRunner per stream, run after each statement."""

    def __init__(self, root: Path, sender: object = None) -> None:
        self.sender = sender
        self.lake = Lake(root)
        self.registry = MemoryRegistry()
        self.runners: dict[str, LocalRunner] = {}
        self.sql("create database power", db=None)

    def sql(self, text: str, db: str | None = "power"):  # type: ignore[no-untyped-def]
        res = Executor(self.lake, self.registry, tz="UTC", default_db=db).execute_one(text)
        for key in self.registry.streams:
            if key not in self.runners:
                self.runners[key] = LocalRunner.for_registered(
                    self.lake, self.registry, key, buckets=2, sender=self.sender
                )
        for r in self.runners.values():
            r.run()
        return res

    def frame(self, query: str) -> pd.DataFrame:
        res = self.sql(query).to_rest("UTC")
        return pd.DataFrame(res["data"], columns=[c[0] for c in res["column_meta"]])


METERS = (
    "create stable meters (ts timestamp, current float, voltage int, phase float) "
    "tags (groupid int, location varchar(24))"
)


def _meters(p: Pipeline, rng: np.random.Generator, n: int = 60) -> pd.DataFrame:
    """Three meters (of the existing supertable ``meters``) with random readings, some voltages
    NULL, inserted in three statements in random order; the rows as pandas (ts in ms; a ts never
    repeats across meters)."""
    frames = []
    for k, (name, loc) in enumerate((("d1001", "SF"), ("d1002", "LA"), ("d1003", "SJ"))):
        p.sql(f"create table {name} using meters tags ({k + 1}, '{loc}')")
        df = pd.DataFrame(
            {
                "tbname": name,
                "location": loc,
                "ts": T0 + np.arange(n) * 1000 + k,
                "current": np.round(rng.uniform(-20, 20, n), 2).astype(np.float32),
                "voltage": rng.integers(80, 130, n).astype(float),
                "phase": np.round(rng.uniform(0, 3, n), 2).astype(np.float32),
            }
        )
        df.loc[rng.random(n) < 0.1, "voltage"] = np.nan
        frames.append(df)
    data = pd.concat(frames, ignore_index=True)
    shuffled = data.sample(frac=1.0, random_state=1)
    for part in (shuffled.iloc[i::3] for i in range(3)):
        values = " ".join(
            f"{r.tbname} values ({r.ts}, {r.current}, "
            f"{'NULL' if math.isnan(r.voltage) else int(r.voltage)}, {r.phase})"
            for r in part.itertuples()
        )
        p.sql(f"insert into {values}")
    return data


def _close(a: pd.Series, b: pd.Series) -> bool:
    return bool(np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-6, atol=1e-9))


def test_seed_004_power_stream_as_written_matches_pandas(tmp_path: Path) -> None:
    if SEEDS.is_dir():  # the statement is the seed's own text
        assert POWER_STREAM in (SEEDS / "004_d241c3c75c4437ef.txt").read_text()
    p = Pipeline(tmp_path / "lake")
    p.sql(METERS)
    p.sql(POWER_STREAM)  # rows written after CREATE STREAM are processed
    data = _meters(p, np.random.default_rng(4))
    got = p.frame(
        "select ts, meter_location, active_power, reactive_power from power_stream_output_stb order by ts"
    )
    exp = data[data.voltage > 100].sort_values("ts")
    cur = exp.current.astype(np.float64) * exp.voltage
    assert len(got) == len(exp) > 0
    assert list(pd.to_datetime(got.ts).astype("int64") // 1_000_000) == list(exp.ts)
    assert list(got.meter_location) == list(exp.location + "." + exp.tbname)
    assert _close(got.active_power, cur * np.cos(exp.phase.astype(np.float64)))
    assert _close(got.reactive_power, cur * np.sin(exp.phase.astype(np.float64)))
    # no TIMESTAMP selected: the row's timestamp is the first column; no PARTITION BY: one
    # subtable (seed 000 "Without the PARTITION BY clause, all data will be written into a single
    # subtable")
    cols = p.frame("describe power_stream_output_stb")
    assert list(cols.iloc[:, 0]) == ["ts", "meter_location", "active_power", "reactive_power", "groupId"]
    assert p.frame("select count(distinct tbname) n from power_stream_output_stb").n[0] == 1


def test_filter_scalar_etl_partition_by_tbname_subtable_and_tags_matches_pandas(tmp_path: Path) -> None:
    """seed 000 "Stream Computation Partitioning" / "Custom tag": one output subtable per partition,
    named by SUBTABLE(...) + ``_<stb>_<groupId>``, its tag the PARTITION BY alias's value."""
    p = Pipeline(tmp_path / "lake")
    p.sql(METERS)
    p.sql(
        "create stream etl into etl_out tags (dev varchar(16)) subtable(concat('etl-', dev)) as "
        "select ts, voltage * 2 as v2, abs(current) as c, location from meters "
        "where voltage > 100 and current > 0 partition by tbname dev"
    )
    data = _meters(p, np.random.default_rng(7))
    got = p.frame("select tbname, dev, ts, v2, c, location from etl_out").sort_values(["dev", "ts"])
    exp = data[(data.voltage > 100) & (data.current > 0)].sort_values(["tbname", "ts"])
    assert len(got) == len(exp) > 0
    assert list(got.dev) == list(exp.tbname)
    assert list(pd.to_datetime(got.ts).astype("int64") // 1_000_000) == list(exp.ts)
    assert list(got.v2) == list((exp.voltage * 2).astype(int))
    assert _close(got.c, exp.current.abs())
    assert list(got.location) == list(exp.location)
    gids = {t: group_id(f'["{t}"]') for t in exp.tbname.unique()}
    assert set(got.tbname) == {f"etl-{t}_etl_out_{gids[t]}" for t in exp.tbname.unique()}


def _model(changes: list[tuple[str, str, int, int]], *, checked: bool) -> dict[tuple[str, int], int]:
    """The expected output of ``select ts, a * 10 from t where a > 0 partition by tbname`` after
    ``changes`` (kind ``w`` write / ``d`` delete, tbname, ts, a), by the seed's rules: a write
    passing WHERE writes its row; a delete removes it; a write replacing a row that no longer passes
    removes the old output only when updates are checked (IGNORE UPDATE 0)."""
    source: dict[tuple[str, int], int] = {}
    out: dict[tuple[str, int], int] = {}
    for kind, tb, ts, a in changes:
        key = (tb, ts)
        if kind == "d":
            source.pop(key, None)
            out.pop(key, None)
            continue
        if key in source and checked:
            out.pop(key, None)
        source[key] = a
        if a > 0:
            out[key] = a * 10
    return out


@pytest.mark.parametrize("checked", [False, True], ids=["ignore update 1", "ignore update 0"])
def test_updates_and_deletes_reach_the_output(tmp_path: Path, checked: bool) -> None:
    p = Pipeline(tmp_path / "lake")
    p.sql("create stable st (ts timestamp, a int) tags (g int)")
    p.sql("create table t1 using st tags (1)")
    p.sql("create table t2 using st tags (2)")
    opt = "ignore update 0" if checked else ""
    p.sql(
        f"create stream s {opt} into o as select ts, a * 10 as x, tbname src from st where a > 0 "
        "partition by tbname"
    )
    rng = np.random.default_rng(11)
    changes: list[tuple[str, str, int, int]] = []
    for _step in range(12):
        stmt, written = [], []
        for _ in range(int(rng.integers(1, 6))):
            tb, ts, a = (
                f"t{rng.integers(1, 3)}",
                T0 + int(rng.integers(0, 15)) * 1000,
                int(rng.integers(-3, 6)),
            )
            stmt.append(f"{tb} values ({ts}, {a})")
            written.append(("w", tb, ts, a))
        p.sql("insert into " + " ".join(stmt))
        changes += list({(c[1], c[2]): c for c in written}.values())  # one statement: the last row of a key
        if rng.random() < 0.3:
            tb, lo = f"t{rng.integers(1, 3)}", T0 + int(rng.integers(0, 15)) * 1000
            p.sql(f"delete from {tb} where ts >= {lo} and ts <= {lo + 2000}")
            changes += [("d", tb, t, 0) for t in range(lo, lo + 2001, 1000)]
    got = p.frame("select src, ts, x from o")
    expected = _model(changes, checked=checked)
    by_key = {
        (src, int(pd.Timestamp(ts).value // 1_000_000)): x
        for src, ts, x in zip(got.src, got.ts, got.x, strict=True)
    }
    assert by_key == expected


def _readings(p: Pipeline, rng: np.random.Generator, n: int = 90) -> pd.DataFrame:
    """``st (ts, v int, w double) tags (g int)`` with subtables c1, c2; rows as pandas."""
    p.sql("create stable st (ts timestamp, v int, w double) tags (g int)")
    frames = []
    for k in (1, 2):
        p.sql(f"create table c{k} using st tags ({k})")
        frames.append(
            pd.DataFrame(
                {
                    "tbname": f"c{k}",
                    "ts": T0 + np.sort(rng.choice(120, n, replace=False)) * 1000,
                    "v": rng.integers(0, 10, n),
                    "w": np.round(rng.uniform(0, 5, n), 3),
                }
            )
        )
    data = pd.concat(frames, ignore_index=True)
    for lo in range(0, len(data), 40):
        part = data.iloc[lo : lo + 40]
        p.sql(
            "insert into " + " ".join(f"{r.tbname} values ({r.ts}, {r.v}, {r.w})" for r in part.itertuples())
        )
    return data


def _windows(df: pd.DataFrame, size_ms: int) -> pd.DataFrame:
    """pandas INTERVAL(size) per tbname: wstart, count, avg(w)."""
    df = df.assign(wstart=df.ts // size_ms * size_ms)
    return (
        df.groupby(["tbname", "wstart"])
        .agg(n=("w", "size"), avg_w=("w", "mean"))
        .reset_index()
        .sort_values(["tbname", "wstart"])
    )


def test_a_stream_over_a_subquery_keeps_its_where(tmp_path: Path) -> None:
    """Silently wrong before issue 13: the subquery's WHERE was dropped. The stream's windows are
    those of the rows passing both WHEREs (pandas), not of all rows."""
    p = Pipeline(tmp_path / "lake")
    data = _readings(p, np.random.default_rng(3))
    p.sql(
        "create stream sq fill_history 1 into sq_out as select _wstart, count(*) n, avg(x) avg_w, t "
        "from (select ts, w as x, v, tbname as t from st where v > 4) where x < 4 "
        "partition by t interval(10s)"
    )
    p.sql("insert into c1 values (1735700000000, 9, 1.0)")  # closes every history window of c1
    p.sql("insert into c2 values (1735700000000, 9, 1.0)")
    got = p.frame("select t, _wstart ws, n, avg_w from sq_out order by t, ws")
    kept = data[(data.v > 4) & (data.w < 4)]
    exp = _windows(kept, 10_000)
    assert len(kept) < len(data)  # the subquery's WHERE matters for this data
    assert list(got.t) == list(exp.tbname)
    assert list(pd.to_datetime(got.ws).astype("int64") // 1_000_000) == list(exp.wstart)
    assert list(got.n) == list(exp.n)
    assert _close(got.avg_w, exp.avg_w)


def test_window_queries_over_subqueries_match_pandas(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    data = _readings(p, np.random.default_rng(5))
    got = p.frame(
        "select _wstart ws, count(*) n, avg(y) a from (select ts, w * 2 as y from "
        "(select * from c1 where v >= 3)) where y > 2 interval(20s)"
    )
    c1 = data[(data.tbname == "c1") & (data.v >= 3) & (data.w * 2 > 2)].assign(y=lambda d: d.w * 2)
    exp = (
        c1.assign(ws=c1.ts // 20_000 * 20_000)
        .groupby("ws")
        .agg(n=("y", "size"), a=("y", "mean"))
        .reset_index()
    )
    assert list(pd.to_datetime(got.ws).astype("int64") // 1_000_000) == list(exp.ws)
    assert list(got.n) == list(exp.n)
    assert _close(got.a, exp.a)


@pytest.mark.parametrize(
    ("query", "names", "rows"),
    [
        ("select _wstart, count(*) from (select ts, v from st limit 5) interval(10s)", "LIMIT", lambda d: 5),
        (
            "select _wstart, count(*) from (select ts, v from st group by ts, v) interval(10s)",
            "GROUP BY",
            lambda d: len(d[["ts", "v"]].drop_duplicates()),
        ),
        (
            "select _wstart, count(*) from (select distinct ts, v from st) interval(10s)",
            "DISTINCT",
            lambda d: len(d[["ts", "v"]].drop_duplicates()),
        ),
        (
            "select _wstart, count(*) from (select ts, max(v) m from st) interval(10s)",
            "aggregate max",
            lambda d: 1,
        ),
    ],
)
def test_subquery_clauses_that_cannot_be_merged(tmp_path: Path, query: str, names: str, rows) -> None:  # type: ignore[no-untyped-def]
    """An ad-hoc window over a subquery that cannot be merged into it windows the subquery's rows
    (their count is the subquery's, computed here with pandas); a stream refuses it by name."""
    p = Pipeline(tmp_path / "lake")
    data = _readings(p, np.random.default_rng(1), n=5)
    got = p.sql(query).rows
    assert sum(r[1] for r in got) == rows(data)
    with pytest.raises(SqlError) as e2:  # the same rule in a stream
        p.sql("create stream s into o as " + query)
    assert names in e2.value.message


def test_a_window_over_a_subquery_refuses_a_column_the_subquery_lacks(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    _readings(p, np.random.default_rng(1), n=5)
    query = "select _wstart, count(*) from (select ts, v from st) where w > 1 interval(10s)"
    for sql in (query, "create stream s into o as " + query):
        with pytest.raises(SqlError) as e:
            p.sql(sql)
        assert "w" in e.value.message and "not supported yet" not in e.value.message


def test_projection_stream_fill_history_select_star_and_recalculate(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    data = _readings(p, np.random.default_rng(9))
    cut = T0 + 60_000
    p.sql(
        f"create stream h fill_history 1 into h_out as select * from st where ts >= {cut} and v > 2 "
        "partition by tbname"
    )
    got = p.frame("select ts, v, w, g from h_out").sort_values(["g", "ts"])
    exp = data[(data.ts >= cut) & (data.v > 2)].assign(g=lambda d: d.tbname.str[1:].astype(int))
    exp = exp.sort_values(["g", "ts"])
    assert list(pd.to_datetime(got.ts).astype("int64") // 1_000_000) == list(exp.ts)
    assert list(got.v) == list(exp.v) and _close(got.w, exp.w) and list(got.g) == list(exp.g)
    # RECALCULATE rewrites the rows of the range from the lake's current rows
    p.sql(f"delete from h_out where ts >= {cut}")
    p.sql(f"recalculate stream h from {cut} to {cut + 30_000}")
    again = p.frame("select ts from h_out")
    assert sorted(pd.to_datetime(again.ts).astype("int64") // 1_000_000) == sorted(
        exp[exp.ts <= cut + 30_000].ts
    )


@pytest.mark.parametrize(
    ("stmt", "says"),
    [
        (
            "create stream s trigger window_close into o as select ts, v from st",
            "TRIGGER WINDOW_CLOSE needs a window",
        ),
        (
            "create stream s trigger max_delay 5s into o as select ts, v from st",
            "TRIGGER MAX_DELAY needs a window",
        ),
        ("create stream s watermark 10s into o as select ts, v from st", "WATERMARK needs a window"),
        ("create stream s delete_mark 1d into o as select ts, v from st", "DELETE_MARK needs a window"),
        ("create stream s into o as select ts, count(*) from st", "aggregate count needs a window"),
        ("create stream s into o as select ts, v from st order by ts", "ORDER BY needs a window"),
        ("create stream s into o as select _wstart, v from st", "_wstart needs a window"),
        ("create stream s into o as select ts, tbname, v from st", "cannot be named tbname"),
        (
            "create stream s into o as select ts, v from st "
            "notify ('ws://127.0.0.1:18501') on ('WINDOW_CLOSE')",
            "NOTIFY needs a window",
        ),
        ("create stream s into o as select c1.ts, c2.v from c1 join c2 on c1.ts = c2.ts", "seed 001"),
        (
            "create stream s into o as select _wstart, count(*) from c1 join c2 on c1.ts = c2.ts "
            "interval(1s)",
            "seed 001",
        ),
    ],
)
def test_what_a_stream_without_a_window_cannot_have_is_refused_by_name(
    tmp_path: Path, stmt: str, says: str
) -> None:
    p = Pipeline(tmp_path / "lake")
    _readings(p, np.random.default_rng(1), n=3)
    with pytest.raises(SqlError) as e:
        p.sql(stmt)
    assert says in e.value.message and "not supported yet" not in e.value.message


def test_window_queries_over_joins_use_the_driving_tables_timeline(tmp_path: Path) -> None:
    """TDengine "Join Queries", "Primary Key Timeline": an INNER/LEFT join is windowed on the first
    table's timestamps, a RIGHT join on the right table's; a FULL join has no timeline (refused)."""
    p = Pipeline(tmp_path / "lake")
    data = _readings(p, np.random.default_rng(8), n=60)
    c1 = data[data.tbname == "c1"].set_index("ts")
    c2 = data[data.tbname == "c2"].set_index("ts")

    def windows(df: pd.DataFrame, ts: pd.Index) -> pd.DataFrame:
        df = df.assign(ws=np.asarray(ts) // 10_000 * 10_000)
        return df.groupby("ws").agg(n=("v1", "size"), s1=("v1", "sum"), m2=("v2", "max")).reset_index()

    inner = c1.join(c2, lsuffix="1", rsuffix="2", how="inner")
    left = c1.join(c2, lsuffix="1", rsuffix="2", how="left")
    right = c1.join(c2, lsuffix="1", rsuffix="2", how="right")
    for how, joined in (("join", inner), ("left join", left), ("right join", right)):
        got = p.frame(
            f"select _wstart ws, count(*) n, sum(a.v) s1, max(b.v) m2 from c1 a {how} c2 b on a.ts = b.ts "
            "interval(10s)"
        )
        exp = windows(joined, joined.index)
        assert list(pd.to_datetime(got.ws).astype("int64") // 1_000_000) == list(exp.ws), how
        assert list(got.n) == list(exp.n), how
        assert _close(got.s1.fillna(0), exp.s1.fillna(0)) and _close(got.m2.fillna(-1), exp.m2.fillna(-1)), (
            how
        )
    with pytest.raises(SqlError) as e:
        p.sql("select _wstart, count(*) from c1 a full join c2 b on a.ts = b.ts interval(1s)")
    assert "FULL JOIN has none" in e.value.message
    with pytest.raises(SqlError) as e:
        p.sql("select _wstart, avg(w) from c1 a join c2 b on a.ts = b.ts interval(1s)")
    assert "ambiguous column name w" in e.value.message


def test_existing_output_supertable_tags_follow_seed_000(tmp_path: Path) -> None:
    """td-048a's streams: TAGS (ta) names the existing supertable's tag ta (tb, tc NULL); a stream
    without PARTITION BY writes one subtable with NULL tags; another number of PARTITION BY values
    than tags, or a TAGS name the supertable lacks, is refused (seed 000 "Custom tag")."""
    p = Pipeline(tmp_path / "lake")
    p.sql("create table st(ts timestamp, a int, b int) tags(ta varchar(100), tb int, tc int)")
    p.sql('create table t1 using st tags("aa", 1, 2)')
    p.sql('create table t2 using st tags("bb", 3, 4)')
    p.sql("create table out0(ts timestamp, c bigint, m int) tags(ta varchar(100), tb int, tc int)")
    p.sql("create table out2(ts timestamp, c bigint, m int) tags(ta varchar(100), tb int, tc int)")
    p.sql(
        "create stream s0 trigger at_once into out0 as select _wstart, count(*) c1, max(b) from t1 "
        "interval(1s)"
    )
    p.sql(
        "create stream s2 trigger at_once into out2 tags(ta) as select _wstart, count(*) c1, max(b) "
        "from st partition by tbname ta interval(1s)"
    )
    p.sql("insert into t1 values (1648791210000, 1, 2) (1648791210500, 1, 5) t2 values (1648791211000, 1, 7)")
    o0 = p.frame("select ts, c, m, ta, tb, tc from out0")
    assert o0.values.tolist() == [["2022-04-01T05:33:30.000Z", 2, 5, None, None, None]]
    o2 = p.frame("select ts, c, m, ta, tb, tc from out2 order by ta")
    assert o2.values.tolist() == [
        ["2022-04-01T05:33:30.000Z", 2, 5, "t1", None, None],
        ["2022-04-01T05:33:31.000Z", 1, 7, "t2", None, None],
    ]
    with pytest.raises(SqlError) as e:
        p.sql(
            "create stream s3 into out2 as select _wstart, count(*), max(b) from st "
            "partition by tbname interval(1s)"
        )
    assert "3 tags but PARTITION BY gives 1" in e.value.message
    with pytest.raises(SqlError) as e:
        p.sql("create table out3(ts timestamp, c bigint, m int) tags(ta varchar(100))")
        p.sql(
            "create stream s4 into out3 tags(zz) as select _wstart, count(*), max(b) from st "
            "partition by tbname zz interval(1s)"
        )
    assert "tag zz of the TAGS clause is not a tag of the existing supertable out3" in e.value.message


def test_a_column_list_maps_into_an_existing_supertable_by_name(tmp_path: Path) -> None:
    """seed 000 "Writing to an existing supertable": with another number of columns the column
    list is the correspondence (in any order); the table's other columns stay NULL."""
    p = Pipeline(tmp_path / "lake")
    data = _readings(p, np.random.default_rng(2), n=20)
    p.sql("create table wide (ts timestamp, note varchar(8), w2 double, v10 bigint) tags (src varchar(16))")
    p.sql(
        "create stream m fill_history 1 into wide(ts, v10, w2) tags (src) as "
        "select ts, v * 10, w * 2 from st where v > 4 partition by tbname src"
    )
    got = p.frame("select src, ts, note, w2, v10 from wide").sort_values(["src", "ts"])
    exp = data[data.v > 4].sort_values(["tbname", "ts"])
    assert list(got.src) == list(exp.tbname) and got.note.isna().all()
    assert list(got.v10) == list(exp.v * 10) and _close(got.w2, exp.w * 2)
    p.sql("create table wide2 (ts timestamp, v int) tags (src varchar(16))")
    with pytest.raises(SqlError) as e:
        p.sql("create stream m2 into wide2(ts, nosuch) as select ts, v from st")
    assert (
        "column nosuch of the column list is not a column of the existing supertable wide2" in e.value.message
    )


# seed 000 "Stream Computing Event Notifications", as printed up to its first ';' (no INTO)
NOTIFY_STREAM = """CREATE STREAM avg_current_stream FILL_HISTORY 1
    AS SELECT _wstart, _wend, AVG(current) FROM meters
    INTERVAL (1m)
    NOTIFY ('ws://localhost:8080/notify', 'wss://192.168.1.1:8080/notify?key=foo')
    ON ('WINDOW_OPEN', 'WINDOW_CLOSE');"""


def test_seed_000_notify_example_without_into_only_notifies(tmp_path: Path) -> None:
    """A legacy stream without INTO writes no table and sends its window events (checked against
    pandas windows) to a real WebSocket server."""
    import json
    import threading
    import time

    from websockets.sync.server import serve

    from spark_workers.notify.sender import Sender

    if SEEDS.is_dir():
        assert NOTIFY_STREAM in (SEEDS / "000_5f0c346dc97ce9a3.txt").read_text()
    received: list[dict] = []

    def handler(ws) -> None:  # type: ignore[no-untyped-def]
        for msg in ws:
            received.append(json.loads(msg))

    server = serve(handler, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"ws://127.0.0.1:{server.socket.getsockname()[1]}/notify"
    sender = Sender()
    try:
        p = Pipeline(tmp_path / "lake", sender)
        p.sql(METERS)
        url_list = "'ws://localhost:8080/notify', 'wss://192.168.1.1:8080/notify?key=foo'"
        p.sql(NOTIFY_STREAM.replace(url_list, f"'{url}'"))  # history is not notified (NOTIFY_HISTORY 0)
        p.sql("create table d1001 using meters tags (1, 'SF')")
        rng = np.random.default_rng(6)
        data = pd.DataFrame(
            {"ts": T0 + np.arange(150) * 1000, "current": np.round(rng.uniform(-20, 20, 150), 2)}
        )
        for lo in range(0, 150, 50):  # minutes 0, 1, 2, in time order
            part = data.iloc[lo : lo + 50]
            p.sql(
                "insert into d1001 values "
                + " ".join(f"({r.ts}, {r.current}, 220, 0.5)" for r in part.itertuples())
            )
        tables = [t[0] for t in p.lake.catalog.tables("power", kinds=("super", "normal"))]
        assert tables == ["meters"]  # no output table
        f32 = data.current.astype(np.float32).astype(np.float64)  # the column is FLOAT
        minutes = data.assign(ws=data.ts // 60_000 * 60_000, c=f32).groupby("ws").c.mean()
        closed = minutes.iloc[:-1]  # the last minute is still open
        deadline = time.monotonic() + 10
        while True:
            events = [e for m in received for s in m["streams"] for e in s["events"]]
            closes = [e for e in events if e["eventType"] == "WINDOW_CLOSE"]
            if len(closes) >= len(closed) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert [e["windowStart"] for e in closes] == list(closed.index)
        got = [e["result"]["AVG(current)"] for e in closes]
        assert _close(pd.Series(got), closed)
        assert {e["windowStart"] for e in events if e["eventType"] == "WINDOW_OPEN"} == set(minutes.index)
    finally:
        sender.close()
        server.shutdown()


# seed 004 "The subtables in the supertable are aggregated individually in a session window", as
# printed (no SELECT keyword)
SESSION_STREAM = """CREATE STREAM current_stream
          WATERMARK 60s
          INTO current_stream_output_stb AS
                    _wstart as start,
                    _wend as end,
                    avg(current) as avg_current
           FROM meters
           SESSION(ts, 30s)"""


def test_seed_004_session_stream_as_written_matches_pandas(tmp_path: Path) -> None:
    """Sessions split where consecutive rows are more than 30 s apart, ``_wend`` = last row + 30 s
    (seed 000), written once closed: latest event time - WATERMARK 60s past the window's end."""
    if SEEDS.is_dir():
        assert SESSION_STREAM in (SEEDS / "004_d241c3c75c4437ef.txt").read_text()
    p = Pipeline(tmp_path / "lake")
    p.sql(METERS)
    p.sql("create table d1001 using meters tags (1, 'SF')")
    p.sql(SESSION_STREAM)
    rng = np.random.default_rng(12)
    gaps = rng.choice([5_000, 20_000, 31_000, 90_000], size=120, p=[0.5, 0.3, 0.1, 0.1])
    data = pd.DataFrame({"ts": T0 + np.cumsum(gaps), "current": np.round(rng.uniform(0, 30, 120), 2)})
    for lo in range(0, len(data), 30):  # in time order
        part = data.iloc[lo : lo + 30]
        p.sql(
            "insert into d1001 values "
            + " ".join(f"({r.ts}, {r.current}, 220, 0.5)" for r in part.itertuples())
        )
    c = data.current.astype(np.float32).astype(np.float64)
    session = (data.ts.diff() > 30_000).cumsum()
    exp = (
        data.assign(c=c, s=session)
        .groupby("s")
        .agg(start=("ts", "min"), last=("ts", "max"), avg=("c", "mean"))
    )
    exp["end"] = exp["last"] + 30_000
    exp = exp[data.ts.max() - 60_000 > exp["end"]]  # closed by the watermark
    got = p.frame("select start, `end`, avg_current from current_stream_output_stb order by start")
    assert len(got) == len(exp) > 3
    assert list(pd.to_datetime(got.start).astype("int64") // 1_000_000) == list(exp.start)
    assert list(pd.to_datetime(got["end"]).astype("int64") // 1_000_000) == list(exp["end"])
    assert _close(got.avg_current, exp["avg"])


def test_streams_over_a_nanosecond_database(tmp_path: Path) -> None:
    """The change feed carries ns timestamps as int64; stage 1 reads them as timestamps (a window
    stream and a stream without a window, hand-checked values)."""
    p = Pipeline(tmp_path / "lake")
    p.sql("create database dn precision 'ns'", db=None)
    p.sql("create table dn.nt (ts timestamp, a int)")
    p.sql("create stream dn.rows into dn.o_rows as select ts, a + 1 as b from dn.nt where a > 0")
    p.sql(
        "create stream dn.win into dn.o_win as select _wstart, count(*) n, sum(a) s from dn.nt interval(1s)"
    )
    t = 1_700_000_000_000_000_000
    p.sql(f"insert into dn.nt values ({t + 1}, 1) ({t + 2}, 2) ({t + 3}, 0) ({t + 2_000_000_000}, 5)")
    rows = p.sql("select ts, b from dn.o_rows").rows
    assert [(int(r[0]), r[1]) for r in rows] == [(t + 1, 2), (t + 2, 3), (t + 2_000_000_000, 6)]
    assert [tuple(r) for r in p.sql("select n, s from dn.o_win").rows] == [(3, 3)]
