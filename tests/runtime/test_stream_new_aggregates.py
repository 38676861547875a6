"""The extended aggregates (``engine/extended.py``) in streams, through the local pipeline: a legacy
INTERVAL stream with apercentile / hyperloglog / stddev_pop / var_pop / count(DISTINCT), and a
3.3.7 INTERVAL trigger whose %%trows computation (twa, irate, elapsed, mode) is fused into the
engine; rows arrive in several micro-batches cutting windows (the window state is checkpointed
between them), and every closed window is checked against pandas over the rows written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.sql.parser import parse_one
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from spark_workers.streams.v337 import is_fused

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC


def data() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    frames = []
    for tb in ("c1", "c2"):
        s = np.sort(rng.choice(np.arange(0, 60), 40, replace=False))
        a = rng.integers(0, 30, s.shape[0]).astype(float)
        a[rng.random(s.shape[0]) < 0.1] = np.nan
        frames.append(
            pd.DataFrame({"tb": tb, "ts": T0 + s * 1000, "a": a, "b": rng.integers(0, 4, s.shape[0])})
        )
    return pd.concat(frames, ignore_index=True)


def run(tmp_path: Path, sql: str) -> tuple[Executor, pd.DataFrame]:
    lake, reg = Lake(tmp_path), MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, a double, b int) tags (g int);"
        "create table c1 using st tags (1); create table c2 using st tags (2)"
    )
    ex.execute(sql)
    runner = LocalRunner.for_registered(lake, reg, sql.split()[2])
    d = data()
    # three micro-batches cutting windows in two: a window's state is checkpointed between them
    parts = [d[d.ts < T0 + 25_000], d[(d.ts >= T0 + 25_000) & (d.ts < T0 + 43_000)], d[d.ts >= T0 + 43_000]]
    for part in parts:
        for tb, rows in part.groupby("tb"):
            vals = " ".join(
                f"({t}, {'NULL' if a != a else a}, {b})"
                for t, a, b in zip(rows.ts, rows.a, rows.b, strict=True)
            )
            ex.execute(f"insert into {tb} values {vals}")
        runner.run()
    return ex, d


def windows(d: pd.DataFrame) -> dict[tuple[str, int], pd.DataFrame]:
    """The rows of each closed window (WINDOW_CLOSE, the default: a table's last window stays open)."""
    w = d.assign(ws=(d.ts - T0) // 10_000 * 10_000 + T0)
    last = w.groupby("tb").ws.max()
    return {(str(tb), int(ws)): rows for (tb, ws), rows in w.groupby(["tb", "ws"]) if ws != last[tb]}


def test_legacy_stream_with_approximate_and_distinct_aggregates(tmp_path: Path) -> None:
    ex, d = run(
        tmp_path,
        "create stream l1 into out1 as select _wstart ws, apercentile(a, 50) ap, hyperloglog(b) h, "
        "stddev_pop(a) sp, var_pop(a) vp, count(distinct b) cd, tbname tb from st partition by tbname "
        "interval(10s)",
    )
    got = {(r[6], r[0]): r for r in ex.execute_one("select ws, ap, h, sp, vp, cd, tb from out1").rows}
    want = windows(d)
    assert set(got) == set(want)
    for key, rows in want.items():
        a, b = rows.a.dropna(), rows.b
        _, ap, h, sp, vp, cd, _ = got[key]
        assert ap == pytest.approx(np.percentile(a, 50))  # below 1000 distinct values: exact
        assert h == cd == b.nunique()
        assert sp == pytest.approx(np.std(a)) and vp == pytest.approx(np.var(a))


def test_v337_trows_computation_is_fused_and_matches_pandas(tmp_path: Path) -> None:
    sql = (
        "create stream n1 interval(10s) sliding(10s) from st partition by tbname into out2 as "
        "select _twstart ws, twa(a) tw, irate(a) ir, elapsed(_c0, 1s) el, mode(b) mo from %%trows"
    )
    stmt = parse_one(sql)
    assert is_fused(stmt)  # type: ignore[arg-type]
    ex, d = run(tmp_path, sql)
    got = {(r[5], r[0]): r for r in ex.execute_one("select ws, tw, ir, el, mo, tag_tbname from out2").rows}
    want = windows(d)
    assert set(got) == set(want)
    for key, rows in want.items():
        p = rows[rows.a.notna()].sort_values("ts")
        t, v = p.ts.to_numpy(np.int64), p.a.to_numpy(float)
        _, tw, ir, el, mo, _ = got[key]
        # %%trows: the window's own rows, no interpolation at its edges
        span = t[-1] - t[0]
        assert tw == pytest.approx(np.sum((v[1:] + v[:-1]) / 2 * np.diff(t)) / span if span else v[0])
        rate = 0.0
        if len(v) > 1:
            rate = ((v[-1] - v[-2]) if v[-1] >= v[-2] else v[-1]) / ((t[-1] - t[-2]) / 1000)
        assert ir == pytest.approx(rate)
        assert el == (rows.ts.max() - rows.ts.min()) / 1000
        assert mo == rows.b.value_counts().sort_index().idxmax()
