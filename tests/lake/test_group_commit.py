"""Group commit (docs/architecture.md, "Group commit"): concurrent writes to one table from threads
of one process join one Delta commit; the later row of a key wins as in serial writes; a failed
commit fails every member and writes nothing; a bad batch fails only its writer."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.errors import LakeError
from spark_workers.lake import store
from spark_workers.lake.store import Lake
from tests.lake.test_store import make, rows


def _wait(cond: Callable[[], bool], what: str) -> None:
    """Poll ``cond`` (a state, not a duration: the test fails only if it never holds)."""
    end = time.monotonic() + 30
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.005)


def grouped(lake: Lake, db, table, batches: list[pa.Table], bad: frozenset[int] = frozenset()) -> list:
    """Write each batch from its own thread, in list order, while the table's commit lock is held:
    batch 0's writer leads a commit of its batch alone (it waits for the lock), the others queue
    behind it in list order and the next leader commits them as one group. ``bad`` batches are
    refused before queuing. Returns each writer's WriteResult or exception."""
    g = lake._group(db.name, table.name)
    out: list = [None] * len(batches)

    def run(i: int) -> None:
        try:
            out[i] = lake.write(db, table, batches[i])
        except Exception as e:
            out[i] = e

    threads = []
    queued = 0
    with lake._thread_lock(db.name, table.name):
        for i in range(len(batches)):
            t = threading.Thread(target=run, args=(i,))
            t.start()
            threads.append(t)
            if i in bad:
                t.join()
                continue
            want = queued
            _wait(lambda want=want: g.busy and len(g.queue) == want, f"batch {i} queued")
            queued += 1
    for t in threads:
        t.join()
    return out


def table_rows(lake: Lake, db, table) -> list[tuple]:
    got = lake.read(db, table).to_pydict()
    return list(zip(got["tbname"], got["ts"], got["v"], strict=True))


def test_concurrent_writers_share_commits_and_every_row_lands_once(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    db, st_ = make(lake)
    v0 = lake.version("d", "st")
    writers, per = 8, 5
    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            for k in range(per):
                r = lake.write(db, st_, rows(("a", w * 1000 + k, w), ("b", w * 1000 + k, k)))
                assert r.version is not None and r.rows == 2
        except BaseException as e:
            errors.append(e)

    with lake._thread_lock("d", "st"):  # the first commit waits: everyone else queues behind it
        threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        g = lake._group("d", "st")
        _wait(lambda: g.busy and len(g.queue) == writers - 1, "all writers queued")
    for t in threads:
        t.join()
    assert not errors
    got = table_rows(lake, db, st_)
    want = sorted(
        (tb, w * 1000 + k, w if tb == "a" else k) for w in range(writers) for k in range(per) for tb in "ab"
    )
    assert got == want  # every row once
    commits = lake.version("d", "st") - v0
    assert commits < writers * per
    assert g.commits == commits


def test_a_group_commits_once_and_each_writer_gets_its_rows_and_the_version(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    db, st_ = make(lake)
    res = grouped(lake, db, st_, [rows(("a", 1, 1)), rows(("a", 2, 2), ("b", 2, 2)), rows(("b", 3, 3))])
    assert [r.version for r in res] == [1, 2, 2]
    assert [r.rows for r in res] == [1, 2, 1]
    assert lake.version("d", "st") == 2


batch = st.lists(
    st.tuples(st.sampled_from("ab"), st.integers(0, 5), st.integers(-3, 3)), min_size=1, max_size=4
)


@settings(max_examples=12, deadline=None)
@given(st.lists(batch, min_size=1, max_size=5), st.lists(batch, max_size=2))
def test_grouped_writes_leave_the_table_serial_writes_would(batches: list, before: list) -> None:
    """Same keys overwritten in arrival order: the grouped table equals the serially written one."""
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(Path(tmp) / "g")
        serial = Lake(Path(tmp) / "s")
        db, st_ = make(lake)
        sdb, sst = make(serial)
        for b in before:  # some rows already stored: the group MERGEs
            lake.write(db, st_, rows(*b))
            serial.write(sdb, sst, rows(*b))
        res = grouped(lake, db, st_, [rows(*b) for b in batches])
        assert all(not isinstance(r, BaseException) for r in res)
        for b in batches:
            serial.write(sdb, sst, rows(*b))
        assert table_rows(lake, db, st_) == table_rows(serial, sdb, sst)


def test_a_failed_group_commit_fails_every_member_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    lake = Lake(tmp_path / "lake")
    db, st_ = make(lake)
    lake.write(db, st_, rows(("a", 1, 1)))
    v = lake.version("d", "st")

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(store, "write_deltalake", broken)
    res = grouped(lake, db, st_, [rows(("a", 5, 1)), rows(("a", 6, 2)), rows(("b", 7, 3)), rows(("a", 8, 4))])
    assert all(isinstance(r, LakeError) for r in res)
    assert len({(r.code, r.message) for r in res}) == 1  # one error, in TDengine's form
    assert res[1].code != 0
    assert "disk full" not in res[1].message  # delta-rs/OS words stay in the log
    monkeypatch.undo()
    assert lake.version("d", "st") == v
    assert table_rows(lake, db, st_) == [("a", 1, 1)]


def test_a_bad_batch_fails_only_its_writer(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    db, st_ = make(lake)
    bad = pa.table({"tbname": ["a"], "ts": [9], "v": pa.array([2**40], pa.int64())})
    res = grouped(
        lake, db, st_, [rows(("a", 1, 1)), bad, rows(("b", 2, 2)), rows(("a", 3, 3))], bad=frozenset({1})
    )
    assert isinstance(res[1], pa.ArrowInvalid)
    assert [r.version for i, r in enumerate(res) if i != 1] == [1, 2, 2]
    assert table_rows(lake, db, st_) == [("a", 1, 1), ("a", 3, 3), ("b", 2, 2)]


def test_idempotent_txn_writes_are_not_grouped_and_stay_idempotent(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    db, st_ = make(lake)
    assert lake.write(db, st_, rows(("a", 1, 1)), txn=("app", 3)).version == 1
    assert lake.write(db, st_, rows(("a", 1, 9)), txn=("app", 3)).mode == "noop"
    assert lake._group("d", "st").commits == 0
    assert table_rows(lake, db, st_) == [("a", 1, 1)]


@pytest.mark.parametrize("n", [1, 3])
def test_a_group_of_identical_rewrites_is_a_noop(tmp_path: Path, n: int) -> None:
    lake = Lake(tmp_path / "lake")
    db, st_ = make(lake)
    lake.write(db, st_, rows(("a", 1, 1)))
    res = grouped(lake, db, st_, [rows(("a", 1, 1))] * n)
    assert all(r.version is None and r.mode == "noop" for r in res)
    assert lake.version("d", "st") == 1
