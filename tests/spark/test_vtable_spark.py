"""Streams over virtual tables in Spark Structured Streaming (local[2]): the ``tdlake`` source
reads the referenced tables' change feeds (``members`` and ``align`` options), for a virtual
supertable over one supertable (versions) and a virtual table over several normal tables (commit
times). Expectations come from the interactive query of the same virtual table."""

from __future__ import annotations

import pytest

from tests.spark.test_stream_query import Env, env, spark  # noqa: F401  (fixtures)

pytestmark = pytest.mark.spark

BASE = 1_735_689_600_000


def test_virtual_supertable_and_several_table_virtual_table_in_spark(spark, env: Env) -> None:  # noqa: F811
    for q in [
        "create database vd",
        "create stable stb (ts timestamp, c int) tags (g int)",
        "create stable vstb (ts timestamp, a int, b int) tags (g int) virtual 1",
        "create table ct1 using stb tags (1)",
        "create table ct2 using stb tags (2)",
        "create vtable vct1 (a from ct1.c, b from ct2.c) using vstb tags (1)",
        "create table n1 (ts timestamp, x int)",
        "create table n2 (ts timestamp, y int)",
        "create vtable vn (ts timestamp, x int from n1.x, y int from n2.y)",
    ]:
        env.sql(q, "vd")
    env.sql(
        "create stream s_v interval(10s) sliding(10s) from vstb partition by tbname "
        "stream_options(ignore_nodata_trigger) into out_v as "
        "select _twstart, count(*) n, sum(a) sa, sum(b) sb from %%trows",
        "vd",
    )
    env.sql(
        "create stream s_n interval(10s) sliding(10s) from vn stream_options(ignore_nodata_trigger) "
        "into out_n as select _twstart, count(*) n, sum(x) sx, sum(y) sy from %%trows",
        "vd",
    )
    env.start(spark, "s_v")
    env.start(spark, "s_n")
    for s, v in [(1, 1), (2, 2), (5, 5), (11, 11), (25, 0)]:
        env.sql(f"insert into ct1 values ({BASE + s * 1000}, {v})", "vd")
        env.sql(f"insert into n1 values ({BASE + s * 1000}, {v})", "vd")
    for s, v in [(1, 10), (3, 30), (12, 120), (25, 0)]:
        env.sql(f"insert into ct2 values ({BASE + s * 1000}, {v})", "vd")
        env.sql(f"insert into n2 values ({BASE + s * 1000}, {v})", "vd")
    closed = f"ts < {BASE + 20_000}"
    want_v = env.sql(
        f"select _wstart, count(*), sum(a), sum(b) from vct1 where {closed} interval(10s)", "vd"
    ).rows
    want_n = env.sql(
        f"select _wstart, count(*), sum(x), sum(y) from vn where {closed} interval(10s)", "vd"
    ).rows
    assert len(want_v) == 2 and want_v[0][1] == 4  # seconds 1, 2, 3, 5 aligned
    expect_v = [[w[0], w[1], int(w[2]), int(w[3])] for w in want_v]
    expect_n = [[w[0], w[1], int(w[2]), int(w[3])] for w in want_n]
    # n2's rows are written after all of n1's: a micro-batch may close [10s, 20s) on n1's 25 s row
    # before n2's 12 s row arrives, which then comes late and the window is recalculated; wait
    # for the recalculated rows, not the first two rows
    got_v = env.wait_rows(
        "select * from out_v order by 1", "vd", lambda r: [list(x[:4]) for x in r] == expect_v
    )
    got_n = env.wait_rows(
        "select * from out_n order by 1", "vd", lambda r: [list(x[:4]) for x in r] == expect_n
    )
    assert [list(r[:4]) for r in got_v] == expect_v
    assert [list(r[:4]) for r in got_n] == expect_n
