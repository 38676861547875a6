"""The lake on object storage (an S3 server, moto's): two processes standing for two hosts write
one supertable at the same time; no row is lost or duplicated and the Delta log stays valid
(issue 14, "Safe concurrent writes without local locks")."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from spark_workers.lake import location
from spark_workers.lake.catalog import Column, Database, Table, physical_names
from spark_workers.lake.store import Lake
from spark_workers.tdtypes import TdType

BATCHES = 50
OWN_ROWS = 10  # rows per batch under the process's own subtable
SHARED_ROWS = 5  # rows per batch under a subtable both processes write, same keys and values


def _make(lake: Lake) -> tuple[Database, Table]:
    lake.catalog.create_database("d", precision="ms", options={"DURATION": "10d"})
    db = lake.catalog.require_database("d")
    names = ["ts", "v"]
    cols = tuple(
        Column(n, TdType.parse(t, None), p)
        for n, t, p in zip(names, ["TIMESTAMP", "BIGINT"], physical_names(names), strict=True)
    )
    st = Table("d", "st", "super", cols, (Column("host", TdType.parse("VARCHAR", 8), "host"),))
    lake.create_table(db, st)
    return db, st


def _batch(host: int, b: int) -> pa.Table:
    """Batch ``b`` of ``host``: its own rows, then rows of subtable ``both`` (identical in both
    hosts' batch ``b``, so the two writers race on the same keys)."""
    own = [(f"host{host}", b * 100 + j, host * 1_000_000 + b * 100 + j) for j in range(OWN_ROWS)]
    shared = [("both", b * 100 + j, b * 100 + j) for j in range(SHARED_ROWS)]
    rows = own + shared
    return pa.table(
        {
            "tbname": [r[0] for r in rows],
            "ts": pa.array([r[1] for r in rows], pa.int64()),
            "v": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def _writer(
    uri: str, local_dir: str, env: dict[str, str], host: int, db: Database, st: Table, start: Any, out: Any
) -> None:
    """One 'host': its own Lake object in its own process, writing BATCHES batches."""
    import os

    os.environ.update(env)
    lake = Lake(uri, local_dir=local_dir)
    start.wait()
    t0 = time.monotonic()
    modes: dict[str, int] = {}
    for b in range(BATCHES):
        r = lake.write(db, st, _batch(host, b))
        modes[r.mode] = modes.get(r.mode, 0) + 1
    out.put({"host": host, "seconds": time.monotonic() - t0, "retries": lake.commit_retries, "modes": modes})


def test_s3_storage_options_ask_for_conditional_put(monkeypatch) -> None:
    for k in ("AWS_S3_LOCKING_PROVIDER", "AWS_S3_ALLOW_UNSAFE_RENAME", "AWS_CONDITIONAL_PUT"):
        monkeypatch.delenv(k, raising=False)
    assert location.storage_options("s3://b/p")["conditional_put"] == "etag"
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")  # the operator's explicit choice wins
    assert "conditional_put" not in location.storage_options("s3://b/p")
    assert location.storage_options("/data/lake") == {}


def test_remote_lake_keeps_its_local_parts_under_var(s3_server, tmp_path) -> None:
    uri = s3_server.fresh_uri()
    lake = Lake(uri, local_dir=tmp_path)
    assert lake.uri == uri and lake.remote
    assert lake.root.is_relative_to(tmp_path / "lake-local")
    _make(lake)
    assert lake.table_uri("d", "st") == f"{uri}/d/st"
    assert not any(p.name.endswith(".lock") for p in tmp_path.rglob("*"))


def test_two_hosts_write_one_supertable_concurrently(s3_server, tmp_path) -> None:
    uri = s3_server.fresh_uri()
    lake = Lake(uri, local_dir=tmp_path)
    db, st = _make(lake)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(3), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(uri, str(tmp_path), s3_server.env, h, db, st, start, out))
        for h in (1, 2)
    ]
    for p in procs:
        p.start()
    start.wait(timeout=60)
    t0 = time.monotonic()
    reports = [out.get(timeout=120) for _ in procs]
    elapsed = time.monotonic() - t0
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    rows_written = 2 * BATCHES * (OWN_ROWS + SHARED_ROWS)
    print(
        f"\n2 hosts x {BATCHES} batches: {rows_written} rows in {elapsed:.1f} s "
        f"({rows_written / elapsed:.0f} rows/s, {2 * BATCHES / elapsed:.1f} writes/s); "
        f"commit retries {[r['retries'] for r in reports]}; modes {[r['modes'] for r in reports]}"
    )

    # every key once, with the value its writer gave it (expected rows built independently)
    expected = pd.concat([_batch(h, b).to_pandas() for h in (1, 2) for b in range(BATCHES)])
    expected = expected.drop_duplicates(["tbname", "ts"]).sort_values(["tbname", "ts"]).reset_index(drop=True)
    got = lake.read(db, st).to_pandas()[["tbname", "ts", "v"]].reset_index(drop=True)
    assert len(expected) == 2 * BATCHES * OWN_ROWS + BATCHES * SHARED_ROWS
    assert not got.duplicated(["tbname", "ts"]).any()
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)

    # a valid Delta log: versions 0..N contiguous, each loadable, row counts never shrink
    dt = DeltaTable(lake.table_uri("d", "st"), storage_options=lake.storage_options)
    last = dt.version()
    assert sorted(h["version"] for h in dt.history()) == list(range(last + 1))
    assert last >= 2 * BATCHES  # one commit per batch that changed something, plus CREATE
    counts = []
    for v in range(last + 1):
        dt.load_as_version(v)
        assert dt.version() == v
        counts.append(int(pa.table(dt.get_add_actions(flatten=True)).column("num_records").to_numpy().sum()))
    assert counts == sorted(counts) and counts[-1] == len(expected)


def test_sql_statements_on_an_s3_lake(s3_server, tmp_path) -> None:
    """DDL, INSERT with tag auto-creation, overwrite, DELETE and queries on a lake in a bucket
    (the ad-hoc query path reads the snapshot's files from the object store)."""
    from spark_workers.statements.executor import Executor
    from spark_workers.streams.registry import MemoryRegistry

    ex = Executor(Lake(s3_server.fresh_uri(), local_dir=tmp_path), MemoryRegistry(), tz="UTC")
    ex.execute("create database sdb precision 'ms'")
    ex.default_db = "sdb"
    ex.execute("create stable m (ts timestamp, v int) tags (site varchar(8))")
    ex.execute(
        "insert into m1 using m tags ('n') values (1000, 1) (2000, 2) (3000, 3) "
        "m2 using m tags ('s') values (1000, 10)"
    )
    ex.execute("insert into m1 values (2000, 20)")  # a later write of the same key overwrites
    ex.execute("delete from m1 where ts = 3000")
    rs = ex.execute_one("select tbname, ts, v, site from m order by tbname, ts")
    assert [list(r) for r in rs.rows] == [["m1", 1000, 1, "n"], ["m1", 2000, 20, "n"], ["m2", 1000, 10, "s"]]
    sums = ex.execute_one("select site, sum(v) from m group by site order by site")
    assert sums.rows == [["n", 21], ["s", 10]]


def test_a_commit_on_a_stale_snapshot_is_refused_on_s3(s3_server, tmp_path) -> None:
    """The protocol the retries rely on: a writer whose snapshot is behind cannot create the
    version another writer already created (conditional put of the log entry); it gets
    CommitFailedError and the log keeps the winner's commit."""
    from deltalake import CommitProperties, write_deltalake
    from deltalake.exceptions import CommitFailedError

    lake = Lake(s3_server.fresh_uri(), local_dir=tmp_path)
    db, st = _make(lake)
    uri, opts = lake.table_uri("d", "st"), lake.storage_options
    stale, winner = DeltaTable(uri, storage_options=opts), DeltaTable(uri, storage_options=opts)
    rows_a = _stored(lake, db, st, _batch(1, 0))
    write_deltalake(winner, rows_a, mode="append", commit_properties=CommitProperties(max_commit_retries=0))
    with pytest.raises(CommitFailedError):
        write_deltalake(
            stale,
            _stored(lake, db, st, _batch(2, 0)),
            mode="append",
            commit_properties=CommitProperties(max_commit_retries=0),
        )
    after = DeltaTable(uri, storage_options=opts)
    assert after.version() == 1
    assert lake.read(db, st).num_rows == rows_a.num_rows
    # through the lake, the loser's rows land on top of the winner's, once
    assert lake.write(db, st, _batch(2, 0)).version == 2
    assert lake.read(db, st).num_rows == 2 * (OWN_ROWS + SHARED_ROWS) - SHARED_ROWS


def _stored(lake: Lake, db: Database, st: Table, data: pa.Table) -> pa.Table:
    from spark_workers.lake.store import to_storage

    return to_storage(lake._complete(db, st, data), db, st.columns)
