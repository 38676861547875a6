"""Seed 002's engine options through the local pipeline (SQL -> engine -> sink -> output table):
INTERVAL / SLIDING triggers fire for periods without rows unless IGNORE_NODATA_TRIGGER, EXPIRED_TIME
per trigger group (one group for all subtables without PARTITION BY), RECALCULATE STREAM refused
for PERIOD streams. Expected rows are computed with pandas from the rows written."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

from spark_workers.engine.shape import WindowShape
from spark_workers.errors import SqlError
from spark_workers.streams.compile import sliding_shape
from tests.runtime.test_streams337 import T0, Env, ins

SECONDS = [0, 4, 5, 36, 41, 77]  # rows of c1 (second, a = second + 1)


def per_window(seconds: list[int], size_s: int, offset_s: int = 0) -> pd.DataFrame:
    """count and sum(a) of every window [k*size+offset, +size) from the first row's window to the
    last one closed by the latest row (empty windows included), a = second + 1."""
    df = pd.DataFrame({"s": seconds, "a": [s + 1 for s in seconds]})
    df["w"] = (df.s - offset_s) // size_s * size_s + offset_s
    agg = df.groupby("w").a.agg(["count", "sum"])
    starts = range(int(df.w.min()), max(seconds) - size_s + 1, size_s)
    return agg.reindex(list(starts)).fillna({"count": 0})


def write_rows(env: Env) -> None:
    for s in SECONDS:  # one micro-batch per row
        env.write(ins("c1", (s, s + 1, 0)))


@pytest.mark.parametrize(
    ("trigger", "size", "offset"),
    [
        ("interval(10s) sliding(10s)", 10, 0),
        ("interval(10s, 3s) sliding(10s)", 10, 3),
        ("interval(6s) sliding(6s)", 6, 0),
    ],
)
def test_interval_trigger_fires_windows_without_rows(
    tmp_path: Path, trigger: str, size: int, offset: int
) -> None:
    env = Env(tmp_path)
    env.stream(
        f"create stream s {trigger} from c1 into out as "
        "select _twstart ws, count(*) n, sum(a) total from %%trows"
    )
    write_rows(env)
    want = per_window(SECONDS, size, offset)
    got = env.rows("select ws, n, total from out order by ws")
    assert got == [
        [T0 + int(w) * 1000, int(r["count"]), None if pd.isna(r["sum"]) else int(r["sum"])]
        for w, r in want.iterrows()
    ]
    assert any(n == 0 for _w, n, _t in got)


def test_ignore_nodata_trigger_fires_only_windows_with_rows(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from c1 stream_options(ignore_nodata_trigger) "
        "into out as select _twstart ws, count(*) n from %%trows"
    )
    write_rows(env)
    want = per_window(SECONDS, 10).dropna()
    assert env.rows("select ws, n from out order by ws") == [
        [T0 + int(w) * 1000, int(r["count"])] for w, r in want.iterrows()
    ]


def test_computation_over_another_table_runs_for_empty_windows(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute("create table q (ts timestamp, v int)")
    env.ex.execute("insert into q values " + " ".join(f"({T0 + s * 1000}, 1)" for s in range(0, 60, 3)))
    env.stream(
        "create stream s interval(10s) sliding(10s) from c1 into out as "
        "select _twstart ws, count(*) n from q where ts >= _twstart and ts < _twend"
    )
    write_rows(env)
    starts = per_window(SECONDS, 10).index
    q = pd.Series(range(0, 60, 3))
    want = [[T0 + int(w) * 1000, int(((q >= w) & (q < w + 10)).sum())] for w in starts]
    assert env.rows("select ws, n from out order by ws") == want


def test_sliding_trigger_fires_periods_without_rows(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s sliding(10s) from c1 into out as "
        "select _tcurrent_ts t, _tprev_ts p, count(*) n from %%trows"
    )
    write_rows(env)
    want = per_window(SECONDS, 10)
    assert env.rows("select t, p, n from out order by t") == [
        [T0 + (int(w) + 10) * 1000, T0 + int(w) * 1000, int(r["count"])] for w, r in want.iterrows()
    ]


def test_expired_time_without_partition_by_is_per_stream(tmp_path: Path) -> None:
    # seed 002 "Expired Data": per trigger group; without PARTITION BY all subtables are one group,
    # so c2's row at 20 s, written after c1's row at 100 s, is older than 100 - 30 and ignored
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from st stream_options(expired_time(30s) | "
        "ignore_nodata_trigger) into out as select _twstart ws, count(*) n, sum(a) total from %%trows"
    )
    writes = [("c1", 0, 1), ("c1", 100, 1), ("c2", 20, 5), ("c2", 80, 7), ("c1", 130, 1)]
    for table, s, a in writes:
        env.write(ins(table, (s, a, 0)))
    df = pd.DataFrame(writes, columns=["table", "s", "a"])
    latest_before = df.s.cummax().shift(1)
    kept = df[latest_before.isna() | (df.s >= latest_before - 30)]
    assert list(kept.s) == [0, 100, 80, 130]
    agg = kept.assign(w=kept.s // 10 * 10).groupby("w").a.agg(["count", "sum"])
    agg = agg[agg.index + 10 <= df.s.max()]
    assert env.rows("select ws, n, total from out order by ws") == [
        [T0 + int(w) * 1000, int(r["count"]), int(r["sum"])] for w, r in agg.iterrows()
    ]


def test_expired_time_with_partition_by_is_per_group(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from st partition by tbname stream_options("
        "expired_time(30s) | ignore_nodata_trigger) into out as "
        "select _twstart ws, count(*) n from %%trows"
    )
    for table, s in [("c1", 0), ("c1", 100), ("c2", 20), ("c2", 80), ("c2", 30)]:
        env.write(ins(table, (s, 1, 0)))
    # c2's own latest is 80 when its row at 30 comes: 30 < 50, expired; its row at 20 is not
    # (c2 had no row before it), and c2's [20,30) closed when 80 came
    assert env.rows("select ws, n from out where tag_tbname = 'c2' order by ws") == [[T0 + 20_000, 1]]


def test_expired_time_units_are_the_seeds(tmp_path: Path) -> None:
    env = Env(tmp_path)
    with pytest.raises(SqlError, match=r"EXPIRED_TIME\(1n\) must be positive, in units a, s, m, h or d"):
        env.ex.execute_one(
            "create stream s state_window(a) from c1 stream_options(expired_time(1n)) into r as "
            "select _twstart, count(*) from %%trows"
        )


def test_recalculate_of_a_period_stream_is_refused_by_the_seed(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.ex.execute_one(
        "create stream s period(10s) from st into out as select _tlocaltime t, count(*) n from %%trows"
    )
    with pytest.raises(SqlError, match=r"manual recalculation is not supported for scheduled.*seed 002"):
        env.ex.execute_one(f"recalculate stream s from {T0}")
    assert env.ex.catalog.table("d", "out") is not None
    assert env.rows("select * from out") == []  # nothing written


def test_sliding_that_does_not_divide_a_day_resets_at_midnight(tmp_path: Path) -> None:
    # seed 002: a SLIDING trigger's times follow PERIOD's rules on event time; 5h30m (330m) with an
    # offset of 1m -> 00:01, 05:31, 11:01, 16:31, 22:01 every day (the seed's own example)
    env = Env(tmp_path)
    env.stream(
        "create stream s sliding(330m, 1m) from c1 into out as "
        "select _tcurrent_ts t, _tprev_ts p, _tnext_ts nx, count(*) n from %%trows"
    )
    hours = [0.5, 3, 7, 12, 21.9, 22.5, 23.9, 26, 30, 47, 49]  # hours after T0 (a midnight)
    for h in hours:
        env.write(ins("c1", (int(h * 3600), 1, 0)))
    day = pd.Timestamp(T0, unit="ms")
    points = [
        day + pd.Timedelta(days=d, minutes=1) + pd.Timedelta(minutes=330) * k
        for d in range(-1, 3)
        for k in range(5)
    ]
    times = [day + pd.Timedelta(hours=h) for h in hours]
    latest = max(times)
    first = max(p for p in points if p <= times[0])
    want = []
    for p, nxt in itertools.pairwise(points):
        if p >= first and nxt <= latest:  # every period from the first row's, empty ones too
            after = points[points.index(nxt) + 1]
            n = sum(1 for t in times if p <= t < nxt)
            want.append(
                [int(nxt.value // 1_000_000), int(p.value // 1_000_000), int(after.value // 1_000_000), n]
            )
    got = env.rows("select t, p, nx, n from out order by t")
    assert got == want
    assert [(p - T0) // 60_000 for _t, p, _nx, _n in got][:6] == [
        1,  # 00:01, holding the first row at 00:30
        5 * 60 + 31,
        11 * 60 + 1,
        16 * 60 + 31,
        22 * 60 + 1,  # 22:01-00:01: the day's last period, 2 hours
        24 * 60 + 1,
    ]


@pytest.mark.parametrize(
    ("trigger", "offset"),
    [("interval(10s) sliding(10s, 3s)", 3), ("interval(10s, 2s) sliding(10s, 3s)", 5)],
)
def test_a_sliding_offset_after_interval_moves_the_windows(tmp_path: Path, trigger: str, offset: int) -> None:
    env = Env(tmp_path)
    env.stream(
        f"create stream s {trigger} from c1 into out as "
        "select _twstart ws, count(*) n, sum(a) total from %%trows"
    )
    write_rows(env)
    want = per_window(SECONDS, 10, offset)
    assert env.rows("select ws, n, total from out order by ws") == [
        [T0 + int(w) * 1000, int(r["count"]), None if pd.isna(r["sum"]) else int(r["sum"])]
        for w, r in want.iterrows()
    ]


def test_sliding_trigger_units_and_offsets_are_the_seeds(tmp_path: Path) -> None:
    env = Env(tmp_path)
    with pytest.raises(SqlError, match=r"SLIDING offset 1d must be below one day"):
        env.ex.execute_one(
            "create stream s sliding(5h, 1d) from c1 into r as select _tcurrent_ts, count(*) from %%trows"
        )
    with pytest.raises(SqlError, match=r"takes units a, s, m, h or d"):
        env.ex.execute_one(
            "create stream s sliding(1n) from c1 into r as select _tcurrent_ts, count(*) from %%trows"
        )


@pytest.mark.parametrize(
    ("partition", "output"),
    [
        ("partition by tbname", ""),  # default names t_<md5>, tag tag_tbname
        ("partition by tbname, g", "output_subtable(concat('out_', tbname)) "),
    ],
)
def test_delete_output_table_drops_the_output_subtable_of_a_dropped_subtable(
    tmp_path: Path, partition: str, output: str
) -> None:
    env = Env(tmp_path)
    env.stream(
        f"create stream s interval(10s) sliding(10s) from st {partition} "
        f"stream_options(delete_output_table | ignore_nodata_trigger) into out {output}"
        "as select _twstart ws, count(*) n from %%trows"
    )
    env.stream(  # the same stream without the option keeps its output (seed 002 default)
        f"create stream s2 interval(10s) sliding(10s) from st {partition} "
        f"stream_options(ignore_nodata_trigger) into out2 {output.replace('out_', 'o2_')}"
        "as select _twstart ws, count(*) n from %%trows"
    )
    env.write(ins("c1", (0, 1, 0), (5, 1, 0), (12, 1, 0)), ins("c2", (1, 1, 0), (15, 1, 0)))
    tables = "select tbname, count(*) from {} partition by tbname order by 1"
    # which trigger subtable each output subtable belongs to: its tag_tbname, or its name
    owner = {
        t: v
        for t, v in env.rows(
            "select table_name, tag_value from information_schema.ins_tags "
            "where stable_name = 'out' and tag_name = 'tag_tbname'"
        )
    }
    if output:
        owner = {"out_c1": "c1", "out_c2": "c2"}
    before = dict(env.rows(tables.format("out")))
    assert set(before) == set(owner) and list(before.values()) == [1, 1]  # [0,10) of c1 and c2
    env.write("drop table c1")
    after = dict(env.rows(tables.format("out")))
    (dropped,) = [t for t, o in owner.items() if o == "c1"]
    assert set(after) == {t for t, o in owner.items() if o == "c2"}
    assert env.ex.catalog.table("d", dropped) is None  # the output subtable itself is gone
    assert len(env.rows(tables.format("out2"))) == 2  # without the option: kept (seed 002 default)


def test_delete_output_table_needs_grouping_by_subtable(tmp_path: Path) -> None:
    env = Env(tmp_path)
    for sql in (
        "create stream s interval(10s) sliding(10s) from st stream_options(delete_output_table) "
        "into out as select _twstart, count(*) from %%trows",
        "create stream s interval(10s) sliding(10s) from st partition by g "
        "stream_options(delete_output_table) into out as select _twstart, count(*) from %%trows",
    ):
        with pytest.raises(
            SqlError, match=r"applies only to streams grouped by subtable \(PARTITION BY tbname\)"
        ):
            env.ex.execute_one(sql)


def test_recalculate_rewrites_windows_left_without_rows_and_keeps_empty_ones(tmp_path: Path) -> None:
    # deletes are ignored without DELETE_RECALC (seed 002): the output keeps [10,20)'s old count
    # until RECALCULATE, which rewrites it from the lake's rows: now none, so count 0 (an empty
    # window fires by default); the empty window [20,30) stays empty
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from c1 into out as "
        "select _twstart ws, count(*) n, sum(a) total from %%trows"
    )
    rows = [0, 11, 14, 35, 52]
    for sec in rows:
        env.write(ins("c1", (sec, sec + 1, 0)))
    env.write(f"delete from c1 where ts >= {T0 + 10_000} and ts < {T0 + 20_000}")
    assert env.rows(f"select n from out where ws = {T0 + 10_000}") == [[2]]
    res = env.ex.execute_one(f"recalculate stream s from {T0 + 5_000} to {T0 + 25_000}")
    left = [sec for sec in rows if not 10 <= sec < 20]
    want = per_window(left, 10)
    want = want[want.index + 10 <= max(rows)]
    assert env.rows("select ws, n, total from out order by ws") == [
        [T0 + int(w) * 1000, int(r["count"]), None if pd.isna(r["sum"]) else int(r["sum"])]
        for w, r in want.iterrows()
    ]
    assert res.affected_rows == 3  # [0,10), [10,20), [20,30) overlap the range


def test_output_subtable_and_tags_are_expressions_of_the_group(tmp_path: Path) -> None:
    # seed 002 "Stream Processing Output": OUTPUT_SUBTABLE(tbname_expr) and TAGS(name type AS expr)
    # over the PARTITION BY columns and %%n / %%tbname (td-050a's statement, windows closed by rows)
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from st partition by tbname, g "
        "into out output_subtable(concat('tag-', %%1)) "
        "tags(cc varchar(100) as concat('tag-', %%tbname), gx int as g * 10, k varchar(8) as '12') "
        "as select _twstart, count(*) c1 from %%trows"
    )
    env.write(ins("c1", (1, 1, 0), (12, 1, 0)), ins("c2", (3, 1, 0), (14, 1, 0)))
    got = env.rows("select tbname, cc, gx, k, c1 from out order by 1")
    tags = {"c1": 1, "c2": 2}  # create table cN using st tags (N)
    assert got == [[f"tag-{t}", f"tag-{t}", g * 10, "12", 1] for t, g in tags.items()]


def test_sliding_trigger_ignores_out_of_order_rows(tmp_path: Path) -> None:
    # seed 002 "Out-of-Order Data": periodic, sliding and count window triggers ignore them
    env = Env(tmp_path)
    env.stream(
        "create stream s sliding(10s) from c1 into out as select _tcurrent_ts t, count(*) n from %%trows"
    )
    env.write(ins("c1", (0, 1, 0), (25, 1, 0)))
    assert env.rows("select t, n from out order by t") == [[T0 + 10_000, 1], [T0 + 20_000, 0]]
    env.write(ins("c1", (5, 1, 0), (12, 1, 0)))  # late: both periods already fired
    assert env.rows("select t, n from out order by t") == [[T0 + 10_000, 1], [T0 + 20_000, 0]]


@pytest.mark.parametrize(
    "trigger",
    ["count_window(2) from c1", "sliding(10s) from c1", "period(10s) from st"],
)
def test_delete_recalc_is_refused_where_deletions_are_ignored(tmp_path: Path, trigger: str) -> None:
    env = Env(tmp_path)
    placeholder = {"count": "_twstart", "slidi": "_tcurrent_ts", "perio": "_tlocaltime"}[trigger[:5]]
    with pytest.raises(SqlError, match=r"DELETE_RECALC can only be set if the trigger type supports"):
        env.ex.execute_one(
            f"create stream s {trigger} stream_options(delete_recalc) into out as "
            f"select {placeholder}, count(*) from %%trows"
        )


def test_delete_recalc_recalculates_when_a_subtable_is_dropped(tmp_path: Path) -> None:
    # seed 002 DELETE_RECALC: "data deletions in the trigger table (including when a child table
    # is dropped) should trigger automatic recomputation"
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from st stream_options(delete_recalc) into out as "
        "select _twstart ws, count(*) n from %%trows"
    )
    env.write(ins("c1", (1, 1, 0), (2, 1, 0)), ins("c2", (3, 1, 0), (21, 1, 0)))
    assert env.rows("select ws, n from out order by ws") == [[T0, 3], [T0 + 10_000, 0]]
    env.write("drop table c2")
    assert env.rows("select ws, n from out order by ws") == [[T0, 2], [T0 + 10_000, 0]]


def test_an_empty_window_whose_key_is_null_writes_nothing(tmp_path: Path) -> None:
    # seed 002: "If a NULL value appears [in the first column] during execution, the corresponding
    # computation result will be discarded": first(_c0) of a window without rows is NULL
    env = Env(tmp_path)
    env.stream(
        "create stream s interval(10s) sliding(10s) from c1 into out as "
        "select first(_c0) f, count(*) n from %%trows"
    )
    write_rows(env)
    want = per_window(SECONDS, 10).dropna()
    firsts = {w: min(s for s in SECONDS if w <= s < w + 10) for w in want.index}
    assert env.rows("select f, n from out order by f") == [
        [T0 + firsts[w] * 1000, int(r["count"])] for w, r in want.iterrows()
    ]


@pytest.mark.parametrize(
    ("tz", "sliding", "want_offset_min"),
    [
        ("UTC", "330m", 1),  # 00:01 UTC
        ("Asia/Shanghai", "330m", (1 - 8 * 60) % 1440),  # 00:01 in UTC+8 = 16:01 UTC
        ("Asia/Shanghai", "5m", (1 - 8 * 60) % 5),  # divides a day: the same grid, modulo 5m
    ],
)
def test_sliding_trigger_midnight_is_the_server_time_zones(
    tz: str, sliding: str, want_offset_min: int
) -> None:
    # seed 002: SLIDING follows PERIOD's rules, whose base time is midnight (server time zone)
    trigger = {"type": "sliding", "sliding": sliding, "sliding_offset": "1m"}
    shape = sliding_shape(trigger, WindowShape("interval", 1, 1), "ms", tz)
    assert shape.offset == want_offset_min * 60_000
    assert bool(shape.day) == (sliding == "330m")
