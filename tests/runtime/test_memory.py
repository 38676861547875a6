"""The worker's memory samples (``spark_workers/runtime/memory.py``)."""

from __future__ import annotations

import gc
import json
import sys
import weakref

import pyarrow as pa

from spark_workers.lake.store import Lake
from spark_workers.runtime.memory import lake_snapshots, memory_sample
from tests.lake.test_store import make, rows


def test_lake_snapshots_counts_cached_tables_and_their_files(tmp_path) -> None:
    """Each table the lake has a snapshot of counts once, with the data files of that snapshot."""
    lake = Lake(tmp_path / "lake")
    assert lake_snapshots([lake]) == {"lakes": 1, "tables": 0, "files": 0, "applied": 0}
    db, st = make(lake)
    lake.write(db, st, rows(("a", 1000, 1)))
    lake.write(db, st, rows(("b", 2000, 2)))
    files = len(lake.delta("d", "st").file_uris())
    assert files >= 2
    # the handle was opened at the table's creation (version 0) and brought forward by two writes
    assert lake_snapshots([lake]) == {"lakes": 1, "tables": 1, "files": files, "applied": 2}
    lake.write(db, st, rows(("b", 3000, 3)))
    assert lake_snapshots([lake])["applied"] == 3


class _Thing:
    pass


def test_memory_sample_is_json_and_sees_the_lakes_of_the_process(tmp_path) -> None:
    """One sample: RSS and threads from /proc, the Arrow pool, and this process's lakes; a dead
    weak proxy among the process's objects does not break it."""
    lake = Lake(tmp_path / "lake")
    db, st = make(lake)
    lake.write(db, st, rows(("a", 1000, 1)))
    kept = pa.array(range(100_000))  # live Arrow memory the sample must count
    gone = _Thing()
    dead = weakref.proxy(gone)  # a proxy whose object is gone: the walk over objects meets it
    del gone
    gc.collect()
    sample = json.loads(json.dumps(memory_sample()))
    assert dead is not None
    assert sample["arrow_allocated"] >= kept.nbytes
    assert sample["arrow_pool"] == pa.default_memory_pool().backend_name
    assert sample["delta"]["lakes"] >= 1
    assert sample["delta"]["tables"] >= 1
    assert sample["delta"]["files"] >= 1
    if sys.platform == "linux":
        assert sample["rss"] > 0
        assert sample["threads"] >= 1
