"""INTERP (``spark_workers/query/interp.py``) against an independent computation: a plain-Python
walk over the rows for a handmade table with gaps and NULLs, numpy / pandas over the real Beijing
air-quality readings (whose missing PM2.5 values are real gaps), TDengine's own test cases
(``tests/system-test/2-query/interp.py``: rows at 00:00:05/10/15) and the errors TDengine gives
(code and position)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests import beijing

T0 = 1_580_515_200_000  # 2020-02-01 00:00:00 UTC
S = 1000


@pytest.fixture(scope="module")
def ex(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    """``tb``: TDengine's test table (c0 5/10/15 at 00:00:05/10/15); ``gaps``: a supertable of two
    subtables with gaps and NULL values (``ROWS``)."""
    e = Executor(Lake(tmp_path_factory.mktemp("lake")), MemoryRegistry(), tz="UTC", default_db="db")
    e.execute(
        "create database db precision 'ms'; "
        "create table tb (ts timestamp, c0 tinyint, c4 double, c6 bool, c7 varchar(10)); "
        "insert into tb values ('2020-02-01 00:00:05', 5, 5.0, true, 'a') "
        "('2020-02-01 00:00:10', 10, 10.0, false, 'b') ('2020-02-01 00:00:15', 15, 15.0, true, 'c'); "
        "create stable gaps (ts timestamp, v int, d double) tags (loc varchar(8)); "
        "create table g1 using gaps tags ('a'); create table g2 using gaps tags ('b')"
    )
    values = ", ".join(
        f"('{tb}', {T0 + t * S}, {'NULL' if v is None else v}, {'NULL' if v is None else v / 4})"
        for tb, rows in ROWS.items()
        for t, v in rows
    )
    e.execute(f"insert into gaps (tbname, ts, v, d) values {values}")
    return e


ROWS: dict[str, list[tuple[int, int | None]]] = {
    "g1": [(2, 20), (3, None), (7, 70), (8, None), (9, None), (13, 31), (20, 100)],
    "g2": [(0, -4), (4, None), (6, 60), (16, 12)],
}


def reference(
    rows: list[tuple[int, int | None]],
    points: list[int],
    mode: str,
    *,
    ignore_null: bool = False,
    value: float | None = None,
    surround: int | None = None,
    integer: bool = True,
) -> list[tuple[int, float | None, bool]]:
    """TDengine's INTERP rules walked row by row: ``(slice, value, isfilled)`` per output slice."""
    out: list[tuple[int, float | None, bool]] = []
    for t in points:
        exact = [v for ts, v in rows if ts == t and (v is not None or not ignore_null)]
        if exact:
            out.append((t, exact[0], False))
            continue
        prev = [(ts, v) for ts, v in rows if ts < t and v is not None]
        nxt = [(ts, v) for ts, v in rows if ts > t and v is not None]
        p = max(prev) if prev else None
        n = min(nxt) if nxt else None
        if surround is not None:
            p = p if p is not None and t - p[0] <= surround else None
            n = n if n is not None and n[0] - t <= surround else None
        if mode == "NULL":
            out.append((t, None, True))
        elif mode == "VALUE":
            out.append((t, value, True))
        elif mode in ("PREV", "NEXT", "NEAR"):
            pick = {"PREV": p, "NEXT": n}.get(mode)
            if mode == "NEAR":
                pick = p if p is not None and (n is None or t - p[0] <= n[0] - t) else n
            if pick is not None:
                out.append((t, pick[1], True))
            elif surround is not None:
                out.append((t, value, True))
        elif mode == "LINEAR" and p is not None and n is not None:
            v = p[1] + (n[1] - p[1]) * (t - p[0]) / (n[0] - p[0])
            out.append((t, math.trunc(v) if integer else v, True))
    return out


def run(ex: Executor, sql: str) -> list[list[object]]:
    return ex.execute_one(sql).rows


def at(sql: str, token: str) -> int:
    return sql.index(token)


# ---------------------------------------------------------------------- TDengine's own test cases


@pytest.mark.parametrize(
    ("fill", "lo", "hi", "want"),
    [
        # tests/system-test/2-query/interp.py, steps 3-7, rows 5/10/15 at 00:00:05/10/15
        ("null", 4, 16, [None, 5, None, None, None, None, 10, None, None, None, None, 15, None]),
        ("null", 1, 4, [None] * 4),
        ("value, 1", 3, 7, [1, 1, 5, 1, 1]),
        ("prev", 4, 16, [5] * 5 + [10] * 5 + [15] * 2),
        ("prev", 1, 4, []),
        ("prev", 16, 19, [15] * 4),
        ("next", 1, 4, [5] * 4),
        ("next", 6, 9, [10] * 4),
        ("linear", 4, 16, [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        ("linear", 8, 12, [8, 9, 10, 11, 12]),
        ("linear", 1, 4, []),
        ("linear", 16, 19, []),
    ],
)
def test_tdengine_test_cases(ex: Executor, fill: str, lo: int, hi: int, want: list[object]) -> None:
    sql = (
        f"select interp(c0) from tb range('2020-02-01 00:00:{lo:02d}', '2020-02-01 00:00:{hi:02d}') "
        f"every(1s) fill({fill})"
    )
    assert [r[0] for r in run(ex, sql)] == want


def test_irowts_every_500a_and_column_names(ex: Executor) -> None:
    # interp.py step 8: _irowts every 500 ms from 00:00:08 to 00:00:12 -> 9 rows
    r = ex.execute_one(
        "select _irowts, interp(c0), _isfilled from tb range('2020-02-01 00:00:08', "
        "'2020-02-01 00:00:12') every(500a) fill(null)"
    )
    assert [c.name for c in r.columns] == ["_irowts", "interp(c0)", "_isfilled"]
    assert [c.type.name for c in r.columns] == ["TIMESTAMP", "TINYINT", "BOOL"]
    assert [row[0] for row in r.rows] == [T0 + 8000 + 500 * k for k in range(9)]
    assert [row[1] for row in r.rows] == [None, None, None, None, 10, None, None, None, None]
    assert [row[2] for row in r.rows] == [True] * 4 + [False] + [True] * 4


def test_single_point_without_every_and_near(ex: Executor) -> None:
    # the manual: SELECT INTERP(col) FROM tb RANGE('2023-01-01 00:00:00') FILL(linear)
    assert run(ex, "select interp(c4) from tb range('2020-02-01 00:00:07') fill(linear)") == [[7.0]]
    # NEAR: 00:00:07 is 2 s after 5 and 3 s before 10; 00:00:12.5 is as near to 10 as to 15: the earlier
    got = run(
        ex,
        "select _irowts, interp(c0), _irowts_origin from tb range('2020-02-01 00:00:07', "
        "'2020-02-01 00:00:13') every(2500a) fill(near)",
    )
    assert got == [[T0 + 7000, 5, T0 + 5000], [T0 + 9500, 10, T0 + 10000], [T0 + 12000, 10, T0 + 10000]]


def test_range_with_surrounding_time(ex: Executor) -> None:
    # RANGE(ts, 1s): no row within 1 s of 00:00:07 -> FILL's value; 2 s reaches the row at 00:00:05
    sql = (
        "select interp(c0), _isfilled, _irowts_origin from tb range('2020-02-01 00:00:07', {}) fill(near, 99)"
    )
    assert run(ex, sql.format("1s")) == [[99, True, None]]
    assert run(ex, sql.format("2s")) == [[5, True, T0 + 5000]]
    got = run(
        ex,
        "select interp(c0) from tb range('2020-02-01 00:00:06', '2020-02-01 00:00:12', 1s) "
        "every(2s) fill(prev, 9)",
    )
    assert [r[0] for r in got] == [5, 9, 10, 9]


# ---------------------------------------------------------------------- handmade table with NULLs


@pytest.mark.parametrize("mode", ["NULL", "VALUE", "PREV", "NEXT", "NEAR", "LINEAR"])
@pytest.mark.parametrize("ignore_null", [False, True])
def test_gaps_and_nulls_per_subtable(ex: Executor, mode: str, ignore_null: bool) -> None:
    fill = "value, -7" if mode == "VALUE" else mode.lower()
    sql = (
        f"select tbname, _irowts, interp(v, {int(ignore_null)}), _isfilled from gaps partition by tbname "
        f"range('2020-02-01 00:00:01', '2020-02-01 00:00:18') every(1s) fill({fill}) order by tbname, _irowts"
    )
    got = [(r[0], (r[1] - T0) // S, r[2], r[3]) for r in run(ex, sql)]
    want = [
        (tb, t, v, f)
        for tb in ("g1", "g2")
        for t, v, f in reference(ROWS[tb], list(range(1, 19)), mode, ignore_null=ignore_null, value=-7)
    ]
    assert got == want
    assert any(f for *_, f in want) and any(not f for *_, f in want)


def test_linear_of_a_double_and_two_interps_need_both(ex: Executor) -> None:
    got = run(
        ex,
        "select _irowts, interp(d), interp(v) from g1 range('2020-02-01 00:00:00', '2020-02-01 00:00:22') "
        "every(1s) fill(linear)",
    )
    rows_d = [(t, None if v is None else v / 4) for t, v in ROWS["g1"]]
    want_d = reference(rows_d, list(range(23)), "LINEAR", integer=False)
    want_v = reference(ROWS["g1"], list(range(23)), "LINEAR")
    assert [(r[0] - T0) // S for r in got] == [t for t, _, _ in want_d] == [t for t, _, _ in want_v]
    np.testing.assert_allclose(
        [np.nan if r[1] is None else r[1] for r in got], [np.nan if v is None else v for _, v, _ in want_d]
    )
    assert [r[2] for r in got] == [v for _, v, _ in want_v]


def test_supertable_without_partition_is_one_timeline(ex: Executor) -> None:
    merged = sorted(ROWS["g1"] + ROWS["g2"])
    got = run(
        ex,
        "select interp(v) from gaps range('2020-02-01 00:00:00', '2020-02-01 00:00:20') every(1s) fill(prev)",
    )
    assert [r[0] for r in got] == [v for _, v, _ in reference(merged, list(range(21)), "PREV")]


def test_order_limit_and_slimit(ex: Executor) -> None:
    base = (
        "select tbname, _irowts, interp(v) from gaps partition by tbname range('2020-02-01 00:00:00', "
        "'2020-02-01 00:00:05') every(1s) fill(null)"
    )
    rows = run(ex, base)
    assert {r[0] for r in rows} == {"g1", "g2"} and len(rows) == 12
    assert run(ex, base + " order by _irowts desc, tbname limit 2") == [
        ["g1", T0 + 5000, None],
        ["g2", T0 + 5000, None],
    ]
    assert {r[0] for r in run(ex, base + " slimit 1")} == {"g1"}
    assert {r[0] for r in run(ex, base + " slimit 1 soffset 1")} == {"g2"}


# ---------------------------------------------------------------------- Beijing air quality

STATIONS = {"aotizhongxin": "Aotizhongxin", "changping": "Changping"}
HOUR = 3_600_000
LO = 1_392_912_000_000  # 2014-02-20 16:00 UTC: 16 and 18 hours without a PM2.5 reading follow
HI = LO + 10 * 24 * HOUR


def readings() -> pd.DataFrame:
    d = beijing.readings(STATIONS, {"pm25": "PM2.5"})
    return d[(d.ts >= LO - 72 * HOUR) & (d.ts <= HI + 72 * HOUR)].reset_index(drop=True)


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> tuple[Executor, pd.DataFrame]:
    lake = Lake(tmp_path_factory.mktemp("air"))
    e = Executor(lake, MemoryRegistry(), tz="UTC", default_db="air")
    e.execute(
        "create database air precision 'ms'; create stable quality (ts timestamp, pm25 double) "
        "tags (station varchar(32)); "
        + "; ".join(f"create table {tb} using quality tags ('{n}')" for tb, n in STATIONS.items())
    )
    d = readings()
    lake.write(
        lake.catalog.require_database("air"),
        lake.catalog.require_table("air", "quality"),
        pa.table(
            {"tbname": d.tbname.to_numpy(), "ts": d.ts.to_numpy(), "pm25": pa.array(d.pm25, from_pandas=True)}
        ),
    )
    return e, d


def _air(e: Executor, fill: str, ignore: int = 1) -> pd.DataFrame:
    rows = e.execute_one(
        f"select tbname, _irowts, interp(pm25, {ignore}), _isfilled from quality partition by tbname "
        f"range({LO}, {HI}) every(30m) fill({fill})"
    ).rows
    return pd.DataFrame(rows, columns=["tbname", "ts", "v", "filled"])


def test_beijing_linear_is_numpy_interp_over_the_readings(air: tuple[Executor, pd.DataFrame]) -> None:
    e, d = air
    got = _air(e, "linear")
    points = np.arange(LO, HI + 1, HOUR // 2)
    for tb in STATIONS:
        r = d[(d.tbname == tb) & d.pm25.notna()].sort_values("ts")
        assert (d[(d.tbname == tb) & (d.ts >= LO) & (d.ts <= HI)].pm25.isna()).sum() >= 3  # real gaps
        want = np.interp(points, r.ts.to_numpy(), r.pm25.to_numpy())
        g = got[got.tbname == tb]
        assert list(g.ts) == list(points)
        np.testing.assert_allclose(g.v.to_numpy(float), want, rtol=1e-12)
        on_hour = np.isin(points, r.ts.to_numpy())
        assert list(g.filled) == list(~on_hour)


def test_beijing_prev_and_next_are_asof_joins(air: tuple[Executor, pd.DataFrame]) -> None:
    e, d = air
    points = pd.DataFrame({"ts": np.arange(LO, HI + 1, HOUR // 2)})
    for fill, direction in (("prev", "backward"), ("next", "forward")):
        got = _air(e, fill)
        for tb in STATIONS:
            r = d[(d.tbname == tb) & d.pm25.notna()].sort_values("ts")[["ts", "pm25"]]
            want = pd.merge_asof(points, r, on="ts", direction=direction)
            g = got[got.tbname == tb]
            np.testing.assert_allclose(g.v.to_numpy(float), want.pm25.to_numpy(float), rtol=1e-12)


def test_beijing_null_keeps_the_missing_readings_without_ignore(air: tuple[Executor, pd.DataFrame]) -> None:
    e, d = air
    got = _air(e, "null", ignore=0)
    for tb in STATIONS:
        r = d[(d.tbname == tb)].set_index("ts").pm25
        g = got[got.tbname == tb]
        want = [r.get(t, np.nan) if t in r.index else np.nan for t in g.ts]
        np.testing.assert_allclose(g.v.to_numpy(float), np.array(want, float))
        assert list(g.filled) == [t not in r.index for t in g.ts]


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("sql", "token", "code"),
    [
        # TDengine: "Missing RANGE clause, EVERY clause or FILL clause"
        (
            "select interp(c0) from tb range('2020-02-01 00:00:01', '2020-02-01 00:00:04') fill(null)",
            "range",
            0x265D,
        ),
        (
            "select interp(c0) from tb range('2020-02-01 00:00:01', '2020-02-01 00:00:04') every(1s)",
            "range",
            0x265D,
        ),
        ("select interp(c0) from tb every(1s) fill(null)", "every", 0x265D),
        ("select interp(c0) from tb", "interp", 0x265D),
        (
            "select interp(c0) from tb range('2020-02-01 00:00:01') fill(linear) interval(1s)",
            "interval",
            0x265D,
        ),
        ("select c0 from tb range('2020-02-01 00:00:01') fill(null)", "range", 0x265D),
        ("select _irowts from tb range('2020-02-01 00:00:01') fill(null)", "_irowts", Code.INVALID_COLUMN),
        ("select interp(c0) from tb range('2020-02-01 00:00:01', 1s) fill(linear)", "fill", 0x265D),
        ("select interp(c0) from tb range('2020-02-01 00:00:01', 1n) fill(prev, 1)", "range", 0x265D),
        (
            "select interp(c0) from tb range('2020-02-01 00:00:01', '2020-02-01 00:00:04', '1s') "
            "every(1s) fill(prev, 1)",
            "'1s'",
            0x265D,
        ),
        (
            "select interp(c0) from tb range('2020-02-01 00:00:01', 1s) fill(near)",
            "fill",
            Code.WRONG_VALUE_TYPE,
        ),
        ("select interp(c0), interp(c4) from tb range(0) fill(value, 1)", "fill", Code.WRONG_VALUE_TYPE),
        (
            "select interp(c0), _irowts_origin from tb range(0) fill(linear)",
            "_irowts_origin",
            Code.INVALID_COLUMN,
        ),
        ("select interp(c7) from tb range(0) fill(null)", "interp", Code.FUNC_PARA_TYPE),
        ("select interp(c0), max(c0) from tb range(0) fill(null)", "max", 0x265D),
        ("select interp(c0, 2) from tb range(0) fill(null)", "2)", Code.FUNC_PARA_VALUE),
        (
            "select _wstart, avg(c0) from tb where ts > 0 and ts < 100000 interval(1s) fill(near)",
            "fill",
            Code.NOT_SUPPORTED,
        ),
    ],
)
def test_errors_are_tdengines_and_positioned(ex: Executor, sql: str, token: str, code: int) -> None:
    with pytest.raises(SqlError) as err:
        ex.execute_one(sql)
    assert err.value.code == code, err.value.message
    assert err.value.offset == at(sql, token), err.value.message


def test_too_many_slices_is_refused_before_work(ex: Executor) -> None:
    with pytest.raises(SqlError) as err:
        ex.execute_one("select interp(c0) from tb range('2000-01-01', '2030-01-01') every(1a) fill(null)")
    assert err.value.code == Code.TOO_MANY_TIMEWINDOW


def test_interp_in_a_stream_is_refused(ex: Executor) -> None:
    sql = (
        "create stream s1 into out1 as select _irowts, interp(c0) from tb range('2020-02-01 00:00:01') "
        "fill(prev)"
    )
    with pytest.raises(SqlError) as err:
        ex.execute_one(sql)
    assert err.value.code in (Code.NOT_SUPPORTED, Code.INVALID_FUNCTION)


def test_range_now_is_one_slice_per_group(ex: Executor) -> None:
    got = run(ex, "select tbname, interp(v) from gaps partition by tbname range(now) fill(prev)")
    last = {tb: [v for _, v in rows if v is not None][-1] for tb, rows in ROWS.items()}
    assert got == [[tb, last[tb]] for tb in sorted(ROWS)]


@pytest.mark.parametrize(("precision", "per_ms"), [("us", 1_000), ("ns", 1_000_000)])
def test_finer_precisions(tmp_path: Path, precision: str, per_ms: int) -> None:
    e = Executor(Lake(tmp_path), MemoryRegistry(), tz="UTC", default_db="p")
    e.execute(f"create database p precision '{precision}'; create table t (ts timestamp, v double)")
    rows = [(0, 1.0), (3, 4.0), (7, 0.0)]  # microseconds after T0
    per_us = per_ms // 1000
    e.execute("insert into t values " + " ".join(f"({T0 * per_ms + t * per_us}, {v})" for t, v in rows))
    lo = T0 * per_ms
    got = e.execute_one(
        f"select _irowts, interp(v) from t range({lo}, {lo + 8 * per_us}) every(1u) fill(linear)"
    ).rows
    want = reference(rows, list(range(9)), "LINEAR", integer=False)
    assert [(r[0] - lo) // per_us for r in got] == [t for t, _, _ in want]
    np.testing.assert_allclose([r[1] for r in got], [v for _, v, _ in want])
