"""Seed 002's engine options through the local pipeline (SQL -> engine -> sink -> output table):
INTERVAL / SLIDING triggers fire for periods without rows unless IGNORE_NODATA_TRIGGER, EXPIRED_TIME
per trigger group (one group for all subtables without PARTITION BY), RECALCULATE STREAM refused
for PERIOD streams. Expected rows are computed with pandas from the rows written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from spark_workers.errors import SqlError
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
    with pytest.raises(SqlError, match=r"not supported for scheduled triggers \(PERIOD\) \(seed 002"):
        env.ex.execute_one(f"recalculate stream s from {T0}")
    assert env.ex.catalog.table("d", "out") is not None
    assert env.rows("select * from out") == []  # nothing written
