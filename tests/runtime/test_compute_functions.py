"""TDengine's aggregate and time-series functions in 3.3.7 stream computations that run on DuckDB
per trigger event (``query/compute.py``; not fused into the engine): each window's rows
(``%%trows``) give the values an independent numpy computation of the manual's definition gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spark_workers.errors import SqlError
from tests.runtime.test_streams337 import T0, Env, ins

# c1's rows: (second, a, b); count_window(4) closes [0 s, 4 s] and [6 s, 12 s]
ROWS = [(0, 1, 1), (1, 3, 1), (3, 2, 5), (4, 8, None), (6, 9, 2), (7, 4, 2), (9, 4, 3), (12, 10, 1)]


def windows() -> list[np.ndarray]:
    a = np.array(ROWS, dtype=float)
    return [a[0:4], a[4:8]]


@pytest.mark.parametrize("tb", ["", "%%tbname tb, "])
def test_aggregates_per_window(tmp_path: Path, tb: str) -> None:
    """With ``%%tbname`` among the items the computation runs per event on DuckDB (not fused into
    the engine: ``streams.v337.is_fused``); without, on whichever runs it: the same values."""
    env = Env(tmp_path)
    env.stream(
        "create stream s count_window(4) from st partition by tbname into res "
        f"as select _twstart ws, {tb}twa(a) t, irate(a) ir, elapsed(ts, 1s) el, leastsquares(a, 1, 1) ls, "
        "hyperloglog(b) h, apercentile(a, 50) ap, mode(a) m from %%trows"
    )
    env.write(ins("c1", *ROWS))
    got = env.rows("select ws, t, ir, el, ls, h, ap, m from res order by ws")
    assert len(got) == 2
    for row, w in zip(got, windows(), strict=True):
        t, a, b = w[:, 0], w[:, 1], w[:, 2]
        assert row[0] == T0 + int(t[0]) * 1000
        assert row[1] == pytest.approx(np.sum((a[1:] + a[:-1]) / 2 * np.diff(t)) / (t[-1] - t[0]))
        d = a[-1] if a[-1] < a[-2] else a[-1] - a[-2]
        assert row[2] == pytest.approx(d / (t[-1] - t[-2]))
        assert row[3] == pytest.approx(t[-1] - t[0])
        slope, intercept = np.polyfit(np.arange(1, len(a) + 1), a, 1)
        assert row[4] == f"{{slop:{slope:.6f}, intercept:{intercept:.6f}}}"
        assert row[5] == len(set(b[~np.isnan(b)]))
        assert row[6] == pytest.approx(np.percentile(a, 50))
        vals, counts = np.unique(a, return_counts=True)
        assert row[7] in set(vals[counts == counts.max()])


def test_time_series_functions_per_window(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s count_window(4) from st partition by tbname into res "
        "as select ts, diff(a) d, csum(a) cs, statecount(a, 'GE', 4) sc from %%trows"
    )
    env.write(ins("c1", *ROWS))
    got = env.rows("select ts, d, cs, sc from res order by ts")
    want = []
    for w in windows():
        a = w[:, 1]
        run = 0
        for k, (s, v) in enumerate(zip(w[:, 0], a, strict=True)):
            run = run + 1 if v >= 4 else 0
            want.append(
                [T0 + int(s) * 1000, None if k == 0 else int(v - a[k - 1]), int(a[: k + 1].sum()), run or -1]
            )
    assert got == want


def test_percentile_is_refused_in_a_stream_as_seed_002_says(tmp_path: Path) -> None:
    env = Env(tmp_path)
    with pytest.raises(SqlError) as e:
        env.stream(
            "create stream s count_window(4) from st partition by tbname into res "
            "as select _twstart, percentile(a, 50) from %%trows"
        )
    assert "percentile" in e.value.message


def test_selection_columns_per_window(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.stream(
        "create stream s count_window(4) from st partition by tbname into res "
        "as select _twstart ws, max(a) mx, ts, cols(min(a), ts) tmin from %%trows"
    )
    env.write(ins("c1", *ROWS))
    got = env.rows("select ws, mx, ts, tmin from res order by ws")
    want = []
    for w in windows():
        t, a = w[:, 0], w[:, 1]
        want.append(
            [
                T0 + int(t[0]) * 1000,
                int(a.max()),
                T0 + int(t[a.argmax()]) * 1000,
                T0 + int(t[a.argmin()]) * 1000,
            ]
        )
    assert got == want
