"""The lake: catalog, (tbname, ts) upserts, deletes, the change feed, precisions, stream offsets."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from spark_workers.errors import CatalogError, Code
from spark_workers.lake import store
from spark_workers.lake.catalog import Column, Table, physical_names
from spark_workers.lake.changes import ChangeReader, initial_offset, next_offset, read_range
from spark_workers.lake.store import Lake
from spark_workers.tdtypes import TdType


def make(lake: Lake, precision: str = "ms", duration: str = "10d") -> tuple:
    lake.catalog.create_database("d", precision=precision, options={"DURATION": duration})
    db = lake.catalog.require_database("d")
    names = ["ts", "v", "min(k)", "s"]
    cols = tuple(
        Column(n, TdType.parse(t, ln), p)
        for n, (t, ln), p in zip(
            names,
            [("TIMESTAMP", None), ("INT", None), ("DOUBLE", None), ("NCHAR", 4)],
            physical_names(names),
            strict=True,
        )
    )
    st = Table("d", "st", "super", cols, (Column("site", TdType.parse("VARCHAR", 8), "site"),))
    lake.catalog.create_table(st)
    lake.create_storage(db, st)
    for name, site in (("a", "n"), ("b", "s")):
        lake.catalog.create_table(Table("d", name, "sub", (), (), "st", {"site": site}))
    return db, st


def rows(*tuples: tuple) -> pa.Table:
    return pa.table(
        {"tbname": [t[0] for t in tuples], "ts": [t[1] for t in tuples], "v": [t[2] for t in tuples]}
    )


def stored_rows(lake: Lake, db, st) -> list[tuple]:  # type: ignore[no-untyped-def]
    """The table's rows as sorted ``(tbname, ts, v)`` triples."""
    got = lake.read(db, st).to_pydict()
    return sorted(zip(got["tbname"], got["ts"], got["v"], strict=True))


@pytest.fixture(params=["local", "s3"])
def lake(request, tmp_path) -> Lake:  # type: ignore[no-untyped-def]
    """The same tests on a local folder and on an S3 server (tests/lake/conftest.py)."""
    if request.param == "local":
        return Lake(tmp_path / "lake")
    s3 = request.getfixturevalue("s3_server")
    return Lake(s3.fresh_uri(), local_dir=tmp_path / "var")


def test_physical_names_are_safe_and_unique():
    assert physical_names(["ts", "min(k)", "tbname", "Ts", "_bucket"]) == ["ts", "_c1", "_c2", "_c3", "_c4"]


def test_later_write_of_same_key_overwrites_and_identical_rewrite_is_a_noop(lake):
    db, st = make(lake)
    assert lake.write(db, st, rows(("a", 1000, 1), ("a", 2000, 2))).mode == "append"
    assert lake.write(db, st, rows(("a", 1000, 1))).version is None  # identical: nothing changes
    r = lake.write(db, st, rows(("a", 2000, 7), ("b", 2000, 9)))
    assert (r.mode, r.inserted, r.updated) == ("merge", 1, 1)
    got = lake.read(db, st).to_pydict()
    assert list(zip(got["tbname"], got["ts"], got["v"], strict=True)) == [
        ("a", 1000, 1),
        ("a", 2000, 7),
        ("b", 2000, 9),
    ]


def test_subtables_written_at_the_same_times_append_and_a_key_written_again_merges(lake):
    """A fleet writes its subtables at the same timestamps: a write whose rows are later than
    every stored row *of their subtable* cannot collide and is appended (it used to be merged
    because another subtable had later rows), while a row written again under its key still goes
    through the merge and overwrites; the change feed tells inserts from updates either way."""
    db, st = make(lake)
    lake.catalog.create_table(Table("d", "c", "sub", (), (), "st", {"site": "x"}))
    assert lake.write(db, st, rows(("a", 1000, 1), ("a", 2000, 2))).mode == "append"
    assert lake.write(db, st, rows(("b", 1000, 3), ("b", 2000, 4))).mode == "append"
    assert lake.write(db, st, rows(("c", 500, 5), ("b", 3000, 6))).mode == "append"
    r = lake.write(db, st, rows(("a", 2000, 7), ("c", 600, 8)))  # a/2000 exists
    assert (r.mode, r.inserted, r.updated) == ("merge", 1, 1)
    # late within its subtable, but no stored row at its key: the files that could hold one
    # are read (Lake._keys_met) and the row is appended
    assert lake.write(db, st, rows(("a", 1500, 9))).mode == "append"
    assert stored_rows(lake, db, st) == [
        ("a", 1000, 1),
        ("a", 1500, 9),
        ("a", 2000, 7),
        ("b", 1000, 3),
        ("b", 2000, 4),
        ("b", 3000, 6),
        ("c", 500, 5),
        ("c", 600, 8),
    ]
    feed = lake.changes(db, st, 0, lake.version("d", "st")).to_pydict()
    kinds = list(zip(feed["tbname"], feed["ts"], feed["_change_type"], strict=True))
    inserted = sorted((t, ts) for t, ts, k in kinds if k == "insert")
    expected = [("a", 1000), ("a", 1500), ("a", 2000), ("b", 1000), ("b", 2000), ("b", 3000)]
    assert inserted == [*expected, ("c", 500), ("c", 600)]
    assert ("a", 2000, "update_postimage") in kinds


def test_long_subtable_names_fall_back_to_reading_the_files(lake, monkeypatch):
    """Tbname statistics of 32 characters or more may be truncated by a writer: such files count
    as holding every subtable, so their keys are read to decide (append when no key meets);
    with reading not allowed (``EXACT_FILES_MAX`` 0) the write merges (correct, only slower)."""
    db, st = make(lake)
    long_a, long_b = "a" * 40, "b" * 40
    for name in (long_a, long_b):
        lake.catalog.create_table(Table("d", name, "sub", (), (), "st", {"site": "l"}))
    assert lake.write(db, st, rows((long_a, 1000, 1), (long_a, 2000, 2))).mode == "append"
    assert lake.write(db, st, rows((long_b, 1000, 3))).mode == "append"
    r = lake.write(db, st, rows((long_b, 1000, 4)))  # its key is stored: merged, overwritten
    assert (r.mode, r.inserted, r.updated) == ("merge", 0, 1)
    monkeypatch.setattr(store, "EXACT_FILES_MAX", 0)
    r = lake.write(db, st, rows((long_b, 500, 5)))
    assert (r.mode, r.inserted, r.updated) == ("merge", 1, 0)
    assert stored_rows(lake, db, st) == [
        (long_a, 1000, 1),
        (long_a, 2000, 2),
        (long_b, 500, 5),
        (long_b, 1000, 4),
    ]


def test_group_commits_of_clients_at_different_paces_append_unless_a_key_meets(lake):
    """One commit holds the subtables of several clients (group commit): its file's tbname range
    spans the subtables of a slower client, whose next rows are earlier than the file's latest.
    The statistics cannot tell, the file's keys are read: no key meets, so the write appends; a
    row written again under a stored key still merges and overwrites; the change feed and the
    table are what one write after the other gives."""
    db, st = make(lake)
    for name in ("c0", "c1", "c3"):
        lake.catalog.create_table(Table("d", name, "sub", (), (), "st", {"site": "g"}))
    assert lake.write(db, st, rows(("c0", 5000, 1), ("c3", 5000, 2), ("c0", 6000, 3))).mode == "append"
    assert lake.write(db, st, rows(("c1", 3000, 4), ("c1", 4000, 5))).mode == "append"
    assert lake.write(db, st, rows(("c1", 4500, 6), ("c0", 5500, 7))).mode == "append"
    r = lake.write(db, st, rows(("c1", 4600, 8), ("c3", 5000, 9)))  # c3/5000 is stored
    assert (r.mode, r.inserted, r.updated) == ("merge", 1, 1)
    assert stored_rows(lake, db, st) == [
        ("c0", 5000, 1),
        ("c0", 5500, 7),
        ("c0", 6000, 3),
        ("c1", 3000, 4),
        ("c1", 4000, 5),
        ("c1", 4500, 6),
        ("c1", 4600, 8),
        ("c3", 5000, 9),
    ]
    feed = lake.changes(db, st, 0, lake.version("d", "st")).to_pydict()
    kinds = sorted(zip(feed["tbname"], feed["ts"], feed["_change_type"], strict=True))
    assert [k for k in kinds if k[2] == "insert"] == [
        (t, ts, "insert") for t, ts, _ in stored_rows(lake, db, st)
    ]
    assert ("c3", 5000, "update_postimage") in kinds and ("c3", 5000, "update_preimage") in kinds


def test_a_microsecond_key_written_again_merges(lake):
    """delta-rs writes timestamp statistics cut to the millisecond: in a database of PRECISION
    'us' a file's latest row lies up to 999 us after its statistic, and a row written again at
    that time must still merge (it used to be appended: two rows under one key)."""
    db, st = make(lake, precision="us")
    t = 1_700_000_000_001_999
    assert lake.write(db, st, rows(("a", t, 1))).mode == "append"
    assert lake.write(db, st, rows(("a", t, 2))).mode == "merge"
    lake.write(db, st, rows(("a", t - 1, 3)))
    lake.write(db, st, rows(("a", t + 1, 4)))
    assert stored_rows(lake, db, st) == [
        ("a", t - 1, 3),
        ("a", t, 2),
        ("a", t + 1, 4),
    ]


def test_duplicate_keys_inside_one_write_keep_the_last(lake):
    db, st = make(lake)
    lake.write(db, st, rows(("a", 1000, 1), ("a", 1000, 5), ("a", 500, 3)))
    got = lake.read(db, st).to_pydict()
    assert got["ts"] == [500, 1000] and got["v"] == [3, 5]


def test_change_feed_shows_inserts_updates_and_deletes_in_order(lake):
    db, st = make(lake)
    v0 = lake.version("d", "st")
    lake.write(db, st, rows(("a", 1000, 1)))
    lake.write(db, st, rows(("a", 1000, 2)))
    lake.delete(db, st, ts_min=1000, ts_max=1000, tbnames=["a"])
    feed = lake.changes(db, st, v0, lake.version("d", "st")).to_pydict()
    assert feed["_change_type"] == ["insert", "update_preimage", "update_postimage", "delete"]
    assert feed["v"] == [1, 1, 2, 2]
    assert feed["_commit_version"] == sorted(feed["_commit_version"])


def test_delete_by_time_range_and_subtable(lake):
    db, st = make(lake)
    lake.write(db, st, rows(*[(t, ts, 1) for t in "ab" for ts in (1000, 2000, 3000)]))
    assert lake.delete(db, st, ts_min=2000, ts_max=None, tbnames=["a"]).deleted == 2
    got = lake.read(db, st).to_pydict()
    assert list(zip(got["tbname"], got["ts"], strict=True)) == [
        ("a", 1000),
        ("b", 1000),
        ("b", 2000),
        ("b", 3000),
    ]
    assert lake.delete(db, st, ts_min=10, ts_max=20, tbnames=None).version is None  # nothing matched


@pytest.mark.parametrize(
    ("precision", "ts"),
    [("ms", 1_700_000_000_123), ("us", 1_700_000_000_123_456), ("ns", 1_700_000_000_123_456_789)],
)
def test_precisions_round_trip_exactly(lake, precision, ts):
    db, st = make(lake, precision)
    lake.write(db, st, rows(("a", ts, 1), ("a", ts + 1, 2)))
    assert lake.read(db, st).column("ts").to_pylist() == [ts, ts + 1]
    assert lake.read(db, st, ts_min=ts + 1).column("ts").to_pylist() == [ts + 1]


def test_out_of_range_value_fails_and_writes_nothing(lake):
    db, st = make(lake)
    bad = pa.table({"tbname": ["a"], "ts": [1], "v": pa.array([2**40], pa.int64())})
    with pytest.raises(pa.ArrowInvalid):
        lake.write(db, st, bad)
    assert lake.read(db, st).num_rows == 0


def test_recreated_table_is_not_served_from_a_stale_handle(lake):
    db, st = make(lake)
    lake.write(db, st, rows(("a", 1000, 1), ("a", 2000, 2), ("a", 3000, 3)))
    assert lake.version("d", "st") == 1
    lake.catalog.drop_database("d")
    lake.drop_database_storage("d")
    db, st = make(lake)
    lake.write(db, st, rows(("b", 5, 5)))
    assert lake.read(db, st).to_pydict()["tbname"] == ["b"]


def test_a_handle_moved_many_versions_is_reopened_not_updated(tmp_path, monkeypatch):
    """The cached handle of a table is updated incrementally until it has moved
    SNAPSHOT_REOPEN_VERSIONS past the version it was opened at; then a fresh handle at the latest
    version replaces it (delta-rs's incremental updates keep native memory per commit applied:
    docs/PERFORMANCE.md, "Worker memory soak"), with the same snapshot."""
    from deltalake import DeltaTable

    from spark_workers.lake import store

    monkeypatch.setattr(store, "SNAPSHOT_REOPEN_VERSIONS", 3)
    lake = Lake(tmp_path / "lake")
    db, st = make(lake)
    first = lake.delta("d", "st")
    opened = first.version()
    handles = [first]
    for i in range(7):
        lake.write(db, st, rows(("a", 1000 * (i + 1), i)))
        handles.append(lake.delta("d", "st"))
        uri = lake.table_uri("d", "st")
        dt, _, base = lake._tables[uri]
        assert dt is handles[-1]
        assert 0 <= dt.version() - base < 3  # never moved the bound or more past its open
        assert dt.version() == DeltaTable(uri).version()
        assert sorted(dt.file_uris()) == sorted(DeltaTable(uri).file_uris())
    assert handles[1] is first and handles[2] is first  # below the bound: updated in place
    assert len({id(h) for h in handles}) >= 3  # replaced at opened + 3 and again at + 6
    assert handles[-1].version() == opened + 7
    assert lake.read(db, st).num_rows == 7


def test_a_handle_is_updated_only_when_another_writer_committed(lake, tmp_path, monkeypatch):
    """``Lake.delta`` asks delta-rs for an incremental update only when the commit file after
    the handle's version exists (one stat): after the handle's own writes nothing is re-read,
    while a commit by another process's Lake (same lake, another handle) is seen by the next
    read and write of this one, and its rows are neither lost nor overwritten."""
    from deltalake import DeltaTable

    db, st = make(lake)
    other = Lake(lake.uri, local_dir=tmp_path / "var")  # the fixture's lake, seen from another process
    lake.write(db, st, rows(("a", 1000, 1)))
    calls: list[int] = []
    real = DeltaTable.update_incremental

    def counted(self):  # type: ignore[no-untyped-def]
        calls.append(1)
        real(self)

    monkeypatch.setattr(DeltaTable, "update_incremental", counted)
    lake.write(db, st, rows(("a", 2000, 2)))
    assert lake.delta("d", "st").version() == lake.version("d", "st") == 2
    assert calls == []  # the handle was at the latest version each time
    other_db = other.catalog.require_database("d")
    other_st = other.catalog.require_table("d", "st")
    other.write(other_db, other_st, rows(("b", 1000, 7)))
    assert lake.delta("d", "st").version() == 3  # another writer's commit: updated
    assert calls == [1]
    assert lake.write(db, st, rows(("a", 3000, 3))).version == 4
    assert stored_rows(lake, db, st) == [
        ("a", 1000, 1),
        ("a", 2000, 2),
        ("a", 3000, 3),
        ("b", 1000, 7),
    ]


def test_catalog_names_are_case_insensitive_and_unique(lake):
    make(lake)
    assert lake.catalog.table("D", "ST").name == "st"
    with pytest.raises(CatalogError) as e:
        lake.catalog.create_table(Table("d", "A", "normal", lake.catalog.require_table("d", "st").columns))
    assert e.value.code == Code.TABLE_ALREADY_EXIST
    tags = lake.catalog.subtable_tags("d", "st").to_pydict()
    assert tags == {"tbname": ["a", "b"], "site": ["n", "s"]}


def test_skip_history_ends_the_snapshot_where_it_stands(lake):
    """A cancelled catch-up (``skip_history``): from inside the snapshot the next offset ends it,
    that step reads nothing, and the changes after the snapshot version come as usual."""
    db, st = make(lake, duration="1d")
    day = 86_400_000
    lake.write(db, st, rows(*[("a", d * day + 1, d) for d in range(5)]))
    reader = ChangeReader(lake, "d", "st")
    hv = lake.version("d", "st")
    first = next_offset(reader, initial_offset(hv, hv), max_rows=2)
    assert read_range(reader, initial_offset(hv, hv), first).column("v").to_pylist() == [0, 1]
    end = next_offset(reader, first, skip_history=True)
    assert end == {"v": hv, "h": -1}
    assert read_range(reader, first, end, skip_history=True).num_rows == 0
    assert read_range(reader, first, end).column("v").to_pylist() == [2, 3, 4]  # what was skipped
    lake.write(db, st, rows(("b", 1, 9)))
    live = next_offset(reader, end, skip_history=True)
    assert live == {"v": hv + 1, "h": -1}
    assert read_range(reader, end, live, skip_history=True).column("v").to_pylist() == [9]


def test_history_then_changes_offsets(lake):
    db, st = make(lake, duration="1d")  # one bucket per day
    day = 86_400_000
    lake.write(db, st, rows(*[("a", d * day + 1, d) for d in range(5)]))
    reader = ChangeReader(lake, "d", "st")
    hv = lake.version("d", "st")
    start = initial_offset(hv, hv)
    assert start == {"v": hv, "h": 0}
    first = next_offset(reader, start, max_rows=2)
    assert first == {"v": hv, "h": 2}  # two one-row buckets
    assert read_range(reader, start, first).column("v").to_pylist() == [0, 1]
    rest = next_offset(reader, first, max_rows=10)
    assert rest == {"v": hv, "h": -1}
    assert read_range(reader, first, rest).column("v").to_pylist() == [2, 3, 4]
    assert next_offset(reader, rest) == rest  # nothing new
    lake.write(db, st, rows(("b", 1, 9)))
    live = next_offset(reader, rest)
    batch = read_range(reader, rest, live)
    assert live == {"v": hv + 1, "h": -1}
    assert batch.column("tbname").to_pylist() == ["b"] and batch.column("site").to_pylist() == ["s"]
    assert batch.column("_ct").to_pylist() == [0] and batch.column("_hist").to_pylist() == [False]
    assert read_range(reader, rest, live, ignore_until=live["v"]).num_rows == 0  # IGNORE UNTREATED


def test_unordered_change_rows_carry_their_arrival_order_in_seq(lake):
    """``read_range(..., ordered=False)`` (what the source hands a transform that sorts by
    ``_seq``) gives the same rows with the same meta fields as the ordered read; sorted by
    ``_seq`` they are the ordered read, row for row: inserts across buckets and subtables in
    time order, an update's pre-image before its post-image, a delete after them."""
    db, st = make(lake, duration="1d")  # one bucket per day: one write's files per bucket
    day = 86_400_000
    v = lake.version("d", "st")
    lake.write(
        db, st, rows(*[(t, d * day + k, d * 10 + k) for d in (3, 0, 2, 1) for t in "ba" for k in (2, 1)])
    )
    lake.write(db, st, rows(("a", 2 * day + 1, 99), ("b", 5, 7)))  # an update and an insert
    lake.delete(db, st, ts_min=day, ts_max=day + 5, tbnames=["b"])
    reader = ChangeReader(lake, "d", "st")
    lo, hi = {"v": v, "h": -1}, {"v": lake.version("d", "st"), "h": -1}
    ordered = read_range(reader, lo, hi)
    loose = read_range(reader, lo, hi, ordered=False)
    assert loose.num_rows == ordered.num_rows == 16 + 3 + 2
    assert loose.to_pylist() != ordered.to_pylist()  # the feed's own order differs here
    by_seq = loose.take(pa.array(np.argsort(loose.column("_seq").to_numpy(), kind="stable")))
    assert by_seq.to_pylist() == ordered.to_pylist()


def test_change_rows_come_in_commit_time_subtable_and_change_order(lake):
    """Arrival order inside a read (``ChangeReader._arrival_order``): by commit, then time, then
    subtable name as TDengine compares them (bytes of UTF-8: "Z" before "a" before "b10" before
    "b9" before "é"), an update's pre-image before its post-image; subtables written in another
    order, at the same times, over several commits."""
    db, st = make(lake)
    v = lake.version("d", "st")
    names = ["é", "b9", "Z", "b10", "a"]
    lake.write(db, st, rows(*[(n, t, i) for t in (3, 1, 2) for i, n in enumerate(names)]))
    lake.write(db, st, rows(*[(n, 2, 50 + i) for i, n in enumerate(reversed(names))]))  # updates
    lake.write(db, st, rows(("b9", 0, 7), ("Z", 9, 8)))
    reader = ChangeReader(lake, "d", "st")
    got = read_range(reader, {"v": v, "h": -1}, {"v": lake.version("d", "st"), "h": -1})
    keys = list(
        zip(
            got.column("_cv").to_pylist(),
            [t.timestamp() for t in got.column("ts").to_pylist()],
            [n.encode() for n in got.column("tbname").to_pylist()],
            got.column("_ct").to_pylist(),
            strict=True,
        )
    )
    assert len(keys) == 15 + 10 + 2
    assert keys == sorted(keys)
    assert [n.decode() for _, t, n, c in keys[:5]] == ["Z", "a", "b10", "b9", "é"]
    assert [c for _, _, n, c in keys[15:17]] == [1, 2]  # "Z"'s update: pre-image, post-image


def test_subtable_reader_sees_only_its_rows(lake):
    db, st = make(lake)
    v = lake.version("d", "st")
    lake.write(db, st, rows(("a", 1, 1), ("b", 1, 2)))
    reader = ChangeReader(lake, "d", "b")
    got = read_range(reader, {"v": v, "h": -1}, {"v": v + 1, "h": -1})
    assert got.column("tbname").to_pylist() == ["b"] and got.column("v").to_pylist() == [2]


def test_one_writes_rows_reach_the_stream_in_time_order_across_buckets(lake):
    """One INSERT spanning 30 time buckets is one commit of 30 data files, which the change feed
    returns in no fixed order: the rows still come out in time order per subtable (arrival order
    ``_seq`` increasing with time), else a stream's engine would take the earlier windows for
    expired ones (seed 000, IGNORE EXPIRED) and lose them."""
    db, st = make(lake, duration="1d")  # one bucket per day
    day = 86_400_000
    v = lake.version("d", "st")
    lake.write(
        db, st, rows(*[(s, d * day + h * 3_600_000, d) for d in range(30) for h in (0, 12) for s in "ab"])
    )
    got = read_range(ChangeReader(lake, "d", "st"), {"v": v, "h": -1}, {"v": v + 1, "h": -1})
    assert got.num_rows == 120
    seq = got.column("_seq").to_pylist()
    in_arrival = got.take(pa.array(sorted(range(got.num_rows), key=seq.__getitem__)))
    for s in "ab":
        ts = in_arrival.filter(pa.compute.equal(in_arrival.column("tbname"), s)).column("ts")
        ms = [t.timestamp() * 1000 for t in ts.to_pylist()]
        assert ms == sorted(ms) and len(ms) == 60


def test_tables_checkpoint_every_checkpoint_interval_commits(tmp_path):
    """Tables the lake creates are checkpointed every ``CHECKPOINT_INTERVAL`` commits (Delta's
    default is 100; a delta-rs commit costs more the more commits its handle holds since the
    last checkpoint); the table reads the same through a fresh handle that starts from it."""
    from deltalake import DeltaTable

    lake = Lake(tmp_path / "lake")
    db, st = make(lake)
    uri = lake.table_uri("d", "st")
    assert DeltaTable(uri).metadata().configuration["delta.checkpointInterval"] == str(
        store.CHECKPOINT_INTERVAL
    )
    for i in range(store.CHECKPOINT_INTERVAL + 1):
        lake.write(db, st, rows(("a", 1000 * (i + 1), i)))
    log = tmp_path / "lake" / uri.rsplit("/lake/", 1)[1] / "_delta_log"
    assert len(list(log.glob("*.checkpoint.parquet"))) == 1  # at the CHECKPOINT_INTERVAL-th commit
    assert DeltaTable(uri).to_pyarrow_table().num_rows == store.CHECKPOINT_INTERVAL + 1
    assert lake.read(db, st).to_pydict()["v"] == list(range(store.CHECKPOINT_INTERVAL + 1))
