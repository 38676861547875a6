"""``runtime/projection.py``: which output rows a micro-batch of a stream without a window writes
and deletes (hand-computed expectations)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from spark_workers.runtime.projection import row_actions, runs_to_delete, sorted_by_arrival


def test_runs_to_delete_cover_exactly_the_doomed_existing_keys() -> None:
    existing = np.array([1, 2, 3, 5, 6, 9, 10])
    # 7 and 8 are no rows: 6..10 is one range; the kept 9 splits 6..10 in the second case
    assert runs_to_delete(existing, np.array([2, 3, 6, 7, 9, 10])) == [(2, 3), (6, 10)]
    assert runs_to_delete(existing, np.array([2, 3, 6, 10])) == [(2, 3), (6, 6), (10, 10)]
    assert runs_to_delete(existing, np.array([4, 8])) == []  # nothing there to delete
    assert runs_to_delete(np.array([], np.int64), np.array([1])) == []


def _batch(rows: list[tuple[str, int, int]]) -> pa.Table:
    """(group value, change kind, seq) per row, given out of arrival order."""
    t = pa.table(
        {
            "_g0": [r[0] for r in rows],
            "_ct": pa.array([r[1] for r in rows], pa.int8()),
            "_seq": pa.array([r[2] for r in rows], pa.int64()),
        }
    )
    return t


@pytest.mark.parametrize("ignore_update", [True, False])
def test_the_last_change_of_each_output_key_wins(ignore_update: bool) -> None:
    # seq: 0 insert a@10 (passes) | 1 insert a@20 (fails WHERE) | 2 update pre a@10 | 3 update post
    # a@10 (fails WHERE) | 4 delete b@10 | 5 insert b@30 | 6 insert b@30 again (passes)
    rows = [("b", 0, 6), ("a", 0, 0), ("a", 0, 1), ("a", 1, 2), ("a", 2, 3), ("b", 3, 4), ("b", 0, 5)]
    staged = sorted_by_arrival(_batch(rows))
    assert staged.column("_seq").to_pylist() == list(range(7))
    keys = np.array([10, 20, 10, 10, 10, 30, 30])
    passes = np.array([True, False, True, False, True, True, True])
    gkeys, ups, dels = row_actions(
        staged, ["_g0"], keys, np.ones(7, bool), passes, ignore_update=ignore_update
    )
    assert gkeys.tolist() == ['["a"]'] * 4 + ['["b"]'] * 3
    # b@30: the last insert; b@10: deleted whatever its values
    if ignore_update:  # the pre-image is ignored, the failing post-image writes nothing: a@10 stays
        assert ups.tolist() == [0, 6] and dels.tolist() == [4]
    else:  # checked: the pre-image removes a@10's output, the failing post-image writes nothing
        assert ups.tolist() == [6] and sorted(dels.tolist()) == [2, 4]


def test_null_keys_are_discarded_and_composite_keys_keep_rows_apart() -> None:
    staged = _batch([("a", 0, 0), ("a", 0, 1), ("a", 0, 2)])
    keys = np.array([5, 5, 0])
    valid = np.array([True, True, False])  # the third row's key is NULL
    _g, ups, dels = row_actions(staged, ["_g0"], keys, valid, np.ones(3, bool), ignore_update=True)
    assert ups.tolist() == [1] and dels.tolist() == []
    _g, ups, _d = row_actions(
        staged, ["_g0"], keys, valid, np.ones(3, bool), ignore_update=True, composite=np.array([0, 1, 0])
    )
    assert ups.tolist() == [0, 1]
