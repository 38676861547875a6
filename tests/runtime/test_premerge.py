"""Map-side pre-aggregation (``runtime/premerge.py``) changes nothing: the same INTERVAL streams
fed the same writes — in order, out of order, rewrites, deletes, two groups per bucket — write the
same output tables with and without it."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import pytest

from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.premerge import eligible, premerge
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

QUERIES = {
    "tumbling": "select _wstart, count(*) n, sum(k) s, min(v) mn, first(v) f, last(k) l from st "
    "partition by tbname interval(10s)",
    "sliding_at_once": "select _wstart, count(*) n, avg(v) a, spread(k) sp, last_row(v) lr from st "
    "partition by site interval(10s, 2s) sliding(5s)",
    # value buffers (engine/extended.py) cross the shuffle as engine/buffers.py bytes
    "buffers": "select _wstart, apercentile(v, 50) ap, hyperloglog(k) h, count(distinct k) cd, "
    "var_pop(v) vp from st partition by site interval(10s)",
}
OPTIONS = {
    "tumbling": "trigger window_close watermark 3s ignore update 0",
    "sliding_at_once": "trigger at_once",
    "buffers": "trigger window_close watermark 3s ignore update 0",
}


def _pipeline(root: Path, name: str, merge: bool) -> tuple[Executor, LocalRunner]:
    lake = Lake(root)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, v double, k int) tags (site int);"
        "create table a using st tags (1); create table b using st tags (1); create table c using st tags (2)"
    )
    ex.execute(f"create stream s {OPTIONS[name]} into o as {QUERIES[name]}")
    r = LocalRunner.for_registered(lake, reg, "s", buckets=2)
    assert eligible(r.kernel.cfg)
    r.kernel.cfg = dataclasses.replace(r.kernel.cfg, premerge=merge)
    return ex, r


@pytest.mark.parametrize("name", list(QUERIES))
def test_premerged_items_write_what_rows_write(tmp_path: Path, name: str) -> None:
    rng = random.Random(11)
    runs = [_pipeline(tmp_path / "plain", name, False), _pipeline(tmp_path / "merged", name, True)]
    t = 0
    for _ in range(30):
        stmts = []
        for _ in range(rng.randint(1, 4)):
            rows = []
            for _ in range(rng.randint(1, 8)):
                t += rng.randint(0, 1500)
                late = rng.random() < 0.2
                ts = 1_700_000_000_000 + t - (rng.randint(0, 20_000) if late else 0)
                rows.append(
                    f"{rng.choice('abc')} values ({ts}, {rng.randint(0, 99) / 4}, {rng.randint(-9, 9)})"
                )
            stmts.append("insert into " + " ".join(rows))
        if rng.random() < 0.3:
            lo = 1_700_000_000_000 + t - rng.randint(0, 30_000)
            stmts.append(f"delete from {rng.choice('abc')} where ts >= {lo} and ts <= {lo + 3_000}")
        for ex, r in runs:
            for q in stmts:
                ex.execute(q)
            r.run()
    plain, merged = (ex.execute_one("select * from o order by _wstart").rows for ex, _ in runs)
    assert len(plain) > 20
    assert len(merged) == len(plain)
    for m, p in zip(sorted(merged, key=str), sorted(plain, key=str), strict=True):
        assert _same_row(m, p), (m, p)


def _same_row(a: list[object], b: list[object]) -> bool:
    """Equal rows; floats to 1e-12 relative: partial aggregates combined in another order (var_pop's
    sums) may differ in the last bit, as the same sums added in another order do."""
    return len(a) == len(b) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isclose(x, y, rel_tol=1e-12))
        for x, y in zip(a, b, strict=True)
    )


def test_an_in_order_group_becomes_one_item_per_window(tmp_path: Path) -> None:
    ex, r = _pipeline(tmp_path / "l", "tumbling", True)
    ex.execute(
        "insert into a values " + " ".join(f"({1_700_000_000_000 + i * 1000}, 1, {i})" for i in range(30))
    )
    from spark_workers.lake.changes import next_offset, read_range
    from spark_workers.query.duck import DuckSession

    rows = read_range(r.reader, r.offset, next_offset(r.reader, r.offset))
    with DuckSession(None) as duck:
        staged = duck.query(r._stage1(duck.register_arrow(rows)))
    items = premerge(r.kernel.cfg, staged)
    assert staged.num_rows == 30 and items.num_rows == 3  # 10-second windows
    assert items.column("_ts").to_pylist() == [1_700_000_000_000, 1_700_000_010_000, 1_700_000_020_000]
    assert items.column("_tmax").to_pylist() == [1_700_000_009_000, 1_700_000_019_000, 1_700_000_029_000]


def test_ekuiper_hopping_windows_keep_their_rows_when_premerged(tmp_path: Path) -> None:
    """Overlapping windows: an item of a later window starts before the previous item's last row;
    eKuiper's lateness rule must not take that for a late row."""
    outs = []
    for merge in (False, True):
        lake = Lake(tmp_path / f"l{merge}")
        reg = MemoryRegistry()
        ex = Executor(lake, reg, tz="UTC", default_db="d")
        ex.execute("create database d; create table t (ts timestamp, v int)")
        ex.execute(
            "create stream s trigger window_close into o as "
            "select window_start() ws, count(*) n from t group by hoppingwindow(ss, 10, 5)"
        )
        r = LocalRunner.for_registered(lake, reg, "s", buckets=1)
        r.kernel.cfg = dataclasses.replace(r.kernel.cfg, premerge=merge)
        ex.execute(
            "insert into t values " + " ".join(f"({1_700_000_000_000 + i * 1000}, 1)" for i in range(40))
        )
        r.run()
        outs.append(ex.execute_one("select ws, n from o order by ws").rows)
    assert outs[0] == outs[1] and [n for _, n in outs[1]][1:6] == [10, 10, 10, 10, 10]


def test_rows_in_counts_rows_not_items(tmp_path: Path) -> None:
    ex, r = _pipeline(tmp_path / "l", "sliding_at_once", True)
    ex.execute(
        "insert into a values " + " ".join(f"({1_700_000_000_000 + i * 1000}, 1, {i})" for i in range(30))
    )
    ex.execute("insert into b values (1700000000500, 2, 2)")
    ex.execute("delete from a where ts = 1700000003000")
    reports = r.run()
    assert sum(rep.input_rows for rep in reports) == 30 + 1 + 1  # the delete is one changed row
