"""A Spark stream (local[2]) over a trigger supertable altered while it runs (seed 002, "Database
and Table Operations": adding or dropping trigger-table columns, and tags it does not group by, is
"ignored; no additional handling"): the ``tdlake`` source conforms every read to the schema the
query began with (``lake.changes.conform``), so the stream goes on and its windows equal a pandas
computation over the rows written (COUNT_WINDOW: no premerge transform, the rows reach the
kernel in the schema read)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.spark.test_stream_query import Env, env, spark  # noqa: F401  (fixtures)

pytestmark = pytest.mark.spark

BASE = 1_735_689_600_000


def test_stream_keeps_running_over_columns_and_tags_altered_under_it(spark, env: Env) -> None:  # noqa: F811
    for q in [
        "create database ad",
        "create stable st (ts timestamp, v int, x int) tags (g int, h int)",
        "create table c1 using st tags (1, 10)",
        "create table c2 using st tags (2, 20)",
    ]:
        env.sql(q, "ad")
    env.sql(
        "create stream s count_window(3) from st partition by tbname into out as "
        "select _twstart, count(*) n, sum(v) sv from %%trows",
        "ad",
    )
    env.start(spark, "s")
    rng = np.random.default_rng(9)
    written: list[tuple[str, int, int]] = []

    def write(tb: str, sec: int, cols: str = "(ts, v)", extra: str = "") -> None:
        v = int(rng.integers(-100, 100))
        written.append((tb, BASE + sec * 1000, v))
        env.sql(f"insert into {tb} {cols} values ({BASE + sec * 1000}, {v}{extra})", "ad")

    for sec in (1, 4, 8):
        write("c1", sec)
        write("c2", sec + 1)
    env.sql("alter stable st add column w double", "ad")
    for sec in (11, 14):
        write("c1", sec, "(ts, v, w)", ", 1.5")
        write("c2", sec, "(ts, v, w)", ", 2.5")
    env.sql("alter stable st drop column x", "ad")
    env.sql("alter stable st drop tag h", "ad")
    for sec in (17, 23, 27):
        write("c1", sec)
        write("c2", sec)
    # COUNT_WINDOW(3): each subtable's rows in time order, in threes (no premerge transform: the
    # source's rows reach the window kernel as read, so they must keep the schema it began with)
    df = pd.DataFrame(written, columns=["tb", "ts", "v"]).sort_values(["tb", "ts"], kind="stable")
    expected = []
    for _, g in df.groupby("tb"):
        ts, v = g.ts.to_numpy(), g.v.to_numpy()
        expected.append([[int(ts[i]), 3, int(v[i : i + 3].sum())] for i in range(0, len(g) - 2, 3)])
    expected.sort()
    got_rows = env.wait_rows(
        "select tbname, * from out order by 1, 2",
        "ad",
        lambda r: len(r) >= sum(len(e) for e in expected),
    )
    got: dict[str, list[list[int]]] = {}
    for r in got_rows:  # tbname, then the window start, n, sv (then the output tags)
        got.setdefault(r[0], []).append([int(r[1]), int(r[2]), int(r[3])])
    assert sorted(got.values()) == expected
