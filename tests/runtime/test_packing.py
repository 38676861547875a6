"""Packed rows (``runtime/packing.py``) lose nothing: ``unpack(pack(t))`` holds exactly the rows of
``t`` with their types, every packed row is one group's rows in arrival order, a kernel's packed
output decodes to exactly its rows, and the streams that pack write what they wrote with one row
per trigger row and per window."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_workers.lake.store import Lake
from spark_workers.runtime.kernel import OUTPUT_FIELDS
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.packing import (
    OUTPUT_SCHEMA,
    PACK_ROWS,
    decode_output,
    encode_output,
    pack,
    packed_schema,
    unpack,
)
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

UTC = dt.UTC


@st.composite
def stage1_tables(draw: st.DrawFn) -> tuple[pa.Table, list[str]]:
    """Stage-1-like tables: up to two group columns (NULL is a group value), a timestamp, and
    inputs of every kind a trigger table's column can have, with NULLs, in shuffled arrival order."""
    n = draw(st.integers(0, 60))
    names = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n))
    sites = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=n, max_size=n))
    floats = draw(st.lists(st.one_of(st.none(), st.floats(allow_nan=False)), min_size=n, max_size=n))
    texts = draw(st.lists(st.one_of(st.none(), st.text(max_size=5)), min_size=n, max_size=n))
    flags = draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n))
    blobs = draw(st.lists(st.one_of(st.none(), st.binary(max_size=4)), min_size=n, max_size=n))
    seq = np.array(draw(st.permutations(list(range(n)))), np.int64)
    ts = np.array(draw(st.lists(st.integers(0, 10**12), min_size=n, max_size=n)), np.int64)
    cols = {
        "_g0": pa.array(names, pa.string()),
        "_g1": pa.array(sites, pa.int32()),
        "_ts": pa.array(ts, pa.int64()),
        "_i0": pa.array(floats, pa.float64()),
        "_i1": pa.array(texts, pa.string()),
        "_i2": pa.array(flags, pa.bool_()),
        "_i3": pa.array(blobs, pa.binary()),
        "_i4": pa.array(ts * 1000, pa.timestamp("us", tz="UTC")),
        "_i5": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=int(x % 900)) for x in ts], pa.date32()),
        "_seq": pa.array(seq),
        "_ct": pa.array(np.ones(n, np.int8)),
    }
    groups = draw(st.sampled_from([[], ["_g0"], ["_g0", "_g1"]]))
    return pa.table(cols), groups


def _by_seq(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["_seq"])


@settings(max_examples=150, deadline=None)
@given(case=stage1_tables(), max_rows=st.sampled_from([1, 2, 3, 7, PACK_ROWS]))
def test_unpack_gives_back_exactly_the_packed_rows(case: tuple[pa.Table, list[str]], max_rows: int) -> None:
    t, groups = case
    packed = pack(t, groups, max_rows)
    assert packed.schema == packed_schema(t.schema, groups)
    back = unpack(packed, t.schema)
    assert back.schema == t.schema
    assert _by_seq(back) == _by_seq(t)
    # one group per packed row, in arrival order, at most max_rows, and no more rows than needed
    parts = [unpack(packed.slice(i, 1), t.schema) for i in range(packed.num_rows)]
    lengths = [p.num_rows for p in parts]
    assert all(0 < k <= max_rows for k in lengths) and sum(lengths) == t.num_rows
    seqs = [p.column("_seq").to_pylist() for p in parts]
    assert all(s == sorted(s) for s in seqs)
    combos = {tuple(r[g] for g in groups) for r in t.to_pylist()}
    assert len(combos) <= packed.num_rows <= len(combos) + t.num_rows // max_rows
    for row, part in zip(packed.to_pylist(), parts, strict=True):
        assert {tuple(r[g] for g in groups) for r in part.to_pylist()} == {tuple(row[g] for g in groups)}


def test_a_packed_row_is_its_group_values_and_one_binary_value() -> None:
    t = pa.table(
        {
            "_g0": ["x", "y", "x"],
            "_ts": pa.array([5, 6, 7], pa.int64()),
            "_i0": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC), None, None], pa.timestamp("ms", tz="UTC")),
            "_seq": pa.array([1, 0, 2], pa.int64()),
        }
    )
    packed = pack(t, ["_g0"])
    assert packed.schema == pa.schema([pa.field("_g0", pa.string()), pa.field("_rows", pa.binary())])
    assert packed.column("_g0").to_pylist() == ["x", "y"]
    assert _by_seq(unpack(packed, t.schema)) == _by_seq(t)  # timestamps come back typed


def test_packed_rows_beyond_a_binary_arrays_bytes_go_into_further_chunks() -> None:
    """A binary array holds at most 2 GiB (32-bit offsets): the packed rows of a large input
    partition are split into chunks below the limit, and read back whole (a small limit here)."""
    from spark_workers.runtime.packing import _binary_chunks

    t = pa.table({"_g0": [f"g{i % 7}" for i in range(70)], "_ts": pa.array(range(70), pa.int64())})
    packed = pack(t, ["_g0"], max_rows=3)
    values = [packed.column("_rows")[i].as_buffer() for i in range(packed.num_rows)]
    limit = 3 * max(v.size for v in values)
    chunked = _binary_chunks(values, limit)
    assert chunked.num_chunks > 1
    assert all(c.nbytes <= limit + 8 * (len(c) + 1) for c in chunked.chunks)  # data + offsets
    assert [chunked[i].as_py() for i in range(len(chunked))] == [v.to_pybytes() for v in values]
    again = packed.set_column(1, "_rows", chunked)
    assert _by_ts(unpack(again, t.schema)) == _by_ts(t)


def _by_ts(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["_ts"])


def test_a_schema_of_group_columns_only_is_refused() -> None:
    with pytest.raises(ValueError, match="besides the groups"):
        packed_schema(pa.schema([pa.field("_g0", pa.string())]), ["_g0"])


OUT_SCHEMA = pa.schema([*OUTPUT_FIELDS, pa.field("n", pa.int64()), pa.field("av", pa.float64())])


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(0, 40),
    max_rows=st.sampled_from([1, 3, 7, PACK_ROWS]),
    data=st.data(),
)
def test_packed_output_decodes_to_exactly_the_kernel_rows(n: int, max_rows: int, data: st.DataObject) -> None:
    """Kernel output rows of every kind (results, removals, events, the stats row), with NULLs,
    cross Spark as ``encode_output`` values and come back as the same rows in the same order."""

    def col(strategy: st.SearchStrategy) -> list:
        return data.draw(st.lists(st.one_of(st.none(), strategy), min_size=n, max_size=n))

    t = pa.table(
        {
            "_bucket": pa.array(data.draw(st.lists(st.integers(0, 7), min_size=n, max_size=n)), pa.int32()),
            "_kind": pa.array(col(st.sampled_from("rxes")), pa.string()),
            "_gkey": pa.array(col(st.text(max_size=6)), pa.string()),
            "_wstart": pa.array(col(st.integers(-(2**62), 2**62)), pa.int64()),
            "_wend": pa.array(col(st.integers(-(2**62), 2**62)), pa.int64()),
            "_event": pa.array(col(st.sampled_from(["WINDOW_OPEN", "WINDOW_CLOSE"])), pa.string()),
            "_hist": pa.array(col(st.booleans()), pa.bool_()),
            "_stats": pa.array(col(st.text(max_size=8)), pa.string()),
            "_info": pa.array(col(st.text(max_size=8)), pa.string()),
            "n": pa.array(col(st.integers(0, 2**40)), pa.int64()),
            "av": pa.array(col(st.floats(allow_nan=False)), pa.float64()),
        },
        schema=OUT_SCHEMA,
    )
    blobs = encode_output(t, max_rows)
    assert len(blobs) == max(1, -(-n // max_rows))  # runs of at most max_rows, one for no rows
    # as foreachBatch collects them: one binary column, possibly in several chunks
    half = len(blobs) // 2
    collected = pa.Table.from_batches(
        [
            pa.record_batch([pa.array(part, pa.binary())], schema=OUTPUT_SCHEMA)
            for part in (blobs[:half], blobs[half:])
        ]
    )
    back = decode_output(collected, OUT_SCHEMA)
    assert back.schema == OUT_SCHEMA
    assert back.to_pylist() == t.to_pylist()


def test_packed_output_of_another_schema_is_refused() -> None:
    other = pa.table({"_bucket": pa.array([1], pa.int32())})
    collected = pa.table({"_out": pa.array(encode_output(other), pa.binary())})
    with pytest.raises(pa.ArrowInvalid, match="output schema"):
        decode_output(collected, OUT_SCHEMA)
    assert decode_output(OUTPUT_SCHEMA.empty_table(), OUT_SCHEMA).num_rows == 0


STREAMS = {
    "state": "select _wstart, count(*) n, first(v) f, last(note) ln, max(ts) mt from st "
    "partition by tbname state_window(k)",
    "session": "select _wstart, _wend, count(*) n, sum(v) sv, last(note) ln from st "
    "partition by site session(ts, 3s)",
    "event": "select _wstart, count(*) n, avg(v) a from st partition by tbname "
    "event_window start with v > 5 end with v < 2",
    "count": "select _wstart, count(*) n, min(v) mn, first(note) fn from a count_window(5, 2)",  # no groups,
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_packed_streams_write_what_unpacked_streams_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The same writes (in order, late rows, rewrites of a timestamp, deletes, NULL states) give
    the same output table with ``TDWEB_PACK`` and ``TDWEB_PACK_OUTPUT`` 1 and 0 (``LocalRunner``
    packs and unpacks around the places where Spark shuffles and hands windows back)."""
    import random

    outs = []
    for packed in ("1", "0"):
        monkeypatch.setenv("TDWEB_PACK", packed)
        monkeypatch.setenv("TDWEB_PACK_OUTPUT", packed)
        lake = Lake(tmp_path / f"l{packed}")
        reg = MemoryRegistry()
        ex = Executor(lake, reg, tz="UTC", default_db="d")
        ex.execute(
            "create database d; create stable st (ts timestamp, v double, k int, note varchar(8)) "
            "tags (site int); create table a using st tags (1); create table b using st tags (1); "
            "create table c using st tags (2)"
        )
        ex.execute(f"create stream s trigger at_once ignore update 0 into o as {STREAMS[name]}")
        r = LocalRunner.for_registered(lake, reg, "s", buckets=2)
        rng = random.Random(5)
        t = 0
        for _ in range(25):
            rows = []
            for _ in range(rng.randint(1, 12)):
                t += rng.randint(0, 2500)
                late = rng.random() < 0.15
                ts = 1_700_000_000_000 + t - (rng.randint(0, 15_000) if late else 0)
                k = "null" if rng.random() < 0.1 else rng.randint(0, 2)
                rows.append(
                    f"{rng.choice('abc')} values ({ts}, {rng.randint(0, 9)}, {k}, 'n{rng.randint(0, 9)}')"
                )
            ex.execute("insert into " + " ".join(rows))
            if rng.random() < 0.2:
                lo = 1_700_000_000_000 + t - rng.randint(0, 20_000)
                ex.execute(f"delete from {rng.choice('abc')} where ts >= {lo} and ts <= {lo + 2_000}")
            r.run()
        outs.append(sorted(map(str, ex.execute_one("select * from o").rows)))
    assert len(outs[0]) > 10
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("partition", "packed"),
    [
        ("tbname", True),
        ("tbname, site", True),
        ("tbname, k", True),
        ("tbname, k % 3", False),
        ("tbname, site || 'x'", False),
    ],
)
def test_only_plain_partition_columns_are_packed(tmp_path: Path, partition: str, packed: bool) -> None:
    """A PARTITION BY expression may be typed differently by DuckDB's stage 1 and Spark SQL's, so
    its groups could land in other buckets than a checkpoint written unpacked has them in: only
    streams partitioned by plain columns pack (``runtime/plan.py`` ``packable``)."""
    lake = Lake(tmp_path / "l")
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, v double, k int) tags (site varchar(8)); "
        "create table a using st tags ('n')"
    )
    body = f"select _wstart, count(*) n from st partition by {partition} state_window(k)"
    ex.execute(f"create stream s into o as {body}")
    r = LocalRunner.for_registered(lake, reg, "s", buckets=2)
    assert r.kernel.cfg.pack is packed and not r.kernel.cfg.premerge
