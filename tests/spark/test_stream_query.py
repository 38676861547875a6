"""The Spark Structured Streaming pipeline end to end (local[2], UTC, 2 shuffle partitions):
tdlake source -> stage 1 -> applyInPandasWithState kernel -> foreachBatch sink.

Expectations come from the interactive batch query of the same SQL (the batch engine path) and
from hand-checked values; notifications are received by a real WebSocket server.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_workers.lake.store import Lake
from spark_workers.notify.sender import Sender
from spark_workers.runtime.query import start_query
from spark_workers.runtime.sink import BatchReport, OutputSink
from spark_workers.sql.executor import Executor
from spark_workers.sql.results import MemoryRegistry
from spark_workers.sql.streams import compile_stream

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():  # type: ignore[no-untyped-def]
    from spark_workers.runtime.session import spark_session

    return spark_session("local[2]")


class Env:
    def __init__(self, root: Path) -> None:
        self.lake = Lake(root)
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC")
        self.queries: list = []
        self.reports: list[BatchReport] = []

    def sql(self, q: str, db: str | None = None):  # type: ignore[no-untyped-def]
        self.ex.default_db = db
        return self.ex.execute_one(q)

    def start(self, spark, name: str, sender: Sender | None = None):  # type: ignore[no-untyped-def]
        info = self.reg.get(name, None)
        assert info is not None
        sv, hv = self.reg.start_versions[name.lower()]
        c = compile_stream(info.spec, self.lake, "UTC")
        sink = OutputSink(c, self.lake, stream_key=name, sender=sender, progress=self.reports.append)
        q = start_query(
            spark,
            c,
            sink,
            stream_key=name,
            lake_root=str(self.lake.root),
            tz="UTC",
            start_version=sv,
            history_version=hv,
            buckets=4,
            trigger="200 milliseconds",
        )
        self.queries.append(q)
        return q

    def wait_rows(self, query: str, db: str, predicate, timeout: float = 90.0):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            for q in self.queries:
                if q.exception() is not None:
                    raise AssertionError(f"query failed: {q.exception()}")
            try:
                last = self.sql(query, db).rows
                if predicate(last):
                    return last
            except Exception as e:  # the output table may not exist yet
                last = e
            time.sleep(0.5)
        raise AssertionError(f"timed out; last result: {last}")


@pytest.fixture
def env(tmp_path) -> Iterator[Env]:  # type: ignore[no-untyped-def]
    e = Env(tmp_path / "lake")
    yield e
    for q in e.queries:
        with contextlib.suppress(Exception):
            q.stop()


SETUP = [
    "create database d1",
    "create stable st (ts timestamp, v double, k int) tags (site varchar(16))",
    "create table a1 using st tags ('north')",
    "create table a2 using st tags ('north')",
    "create table b1 using st tags ('south')",
]


def test_fill_history_partition_by_tag_matches_batch_query(spark, env):
    for q in SETUP:
        env.sql(q, "d1")
    history = []
    for i in range(300):  # 5 hours of 1-minute data before the stream exists
        ts = 1_700_000_000_000 + i * 60_000
        history.append(
            f"a1 values ({ts}, {i % 7}.5, {i}) a2 values ({ts}, {i % 5}, {i}) b1 values ({ts}, {i % 3}, {i})"
        )
    env.sql("insert into " + " ".join(history), "d1")
    body = (
        "select _wstart, avg(v) av, count(*) n, max(k) mk, first(v) fv, last(v) lv "
        "from st partition by site interval(1h)"
    )
    env.sql(f"create stream s_hist fill_history 1 into out_hist tags (site varchar(16)) as {body}", "d1")
    env.start(spark, "s_hist")
    later = [f"a1 values ({1_700_000_000_000 + (300 + i) * 60_000}, 1, {300 + i})" for i in range(120)]
    env.sql("insert into " + " ".join(later), "d1")  # written after CREATE STREAM: live rows
    # WINDOW_CLOSE: every window but the newest of each group is closed and written
    by_site: dict[str, list] = {}
    for r in env.sql(body.replace("select _wstart", "select site, _wstart"), "d1").rows:
        by_site.setdefault(r[0], []).append(r)
    closed = {site: sorted(rows, key=lambda r: r[1])[:-1] for site, rows in by_site.items()}
    want = sorted([tuple(r) for rows in closed.values() for r in rows], key=lambda r: (r[0], r[1]))
    got = env.wait_rows(
        "select site, _wstart, av, n, mk, fv, lv from out_hist", "d1", lambda rows: len(rows) >= len(want)
    )
    assert sorted(map(tuple, got), key=lambda r: (r[0], r[1])) == want
    assert any(r.phase == "history" for r in env.reports) and any(r.phase == "live" for r in env.reports)


def test_at_once_late_rows_updates_and_deletes_recalculate(spark, env):
    for q in SETUP:
        env.sql(q, "d1")
    env.sql(
        "create stream s_once trigger at_once into out_once as select _wstart, count(*) c, sum(k) s, "
        "min(v) mn from a1 interval(10s)",
        "d1",
    )
    env.start(spark, "s_once")
    base = 1_648_791_210_000
    env.sql(f"insert into a1 values ({base}, 1, 1) ({base + 1000}, 2, 2) ({base + 10_000}, 5, 5)", "d1")
    env.wait_rows("select c, s from out_once", "d1", lambda r: r == [[2, 3], [1, 5]])
    env.sql(f"insert into a1 values ({base + 25_000}, 7, 7)", "d1")
    env.sql(f"insert into a1 values ({base + 2_000}, 0.5, 10)", "d1")  # late: its window has closed
    env.wait_rows("select c, s, mn from out_once", "d1", lambda r: r[0] == [3, 13, 0.5])
    env.sql(f"delete from a1 where ts >= {base + 10_000} and ts <= {base + 10_000}", "d1")
    rows = env.wait_rows("select _wstart, c from out_once", "d1", lambda r: len(r) == 2)
    assert [r[1] for r in rows] == [3, 1]  # the emptied window was removed from the output


def test_notifications_reach_a_websocket_server(spark, env):
    from websockets.sync.server import serve

    received: list[dict] = []

    def handler(ws):  # type: ignore[no-untyped-def]
        for msg in ws:
            received.append(json.loads(msg))

    server = serve(handler, "127.0.0.1", 0)
    port = server.socket.getsockname()[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for q in SETUP:
            env.sql(q, "d1")
        env.sql(
            f"create stream s_note into out_note as select _wstart, avg(v) av from st partition by tbname "
            f"interval(10s) notify ('ws://127.0.0.1:{port}/hook') on ('WINDOW_OPEN', 'WINDOW_CLOSE') "
            "on_failure pause",
            "d1",
        )
        env.start(spark, "s_note", sender=Sender())
        base = 1_648_791_210_000
        env.sql(f"insert into a1 values ({base}, 1, 1) ({base + 5_000}, 3, 2)", "d1")
        env.sql(f"insert into a1 values ({base + 12_000}, 9, 3)", "d1")
        deadline = time.monotonic() + 90
        events = []
        while time.monotonic() < deadline:
            events = [e for m in received for s in m["streams"] for e in s["events"]]
            if any(e["eventType"] == "WINDOW_CLOSE" for e in events):
                break
            time.sleep(0.3)
        close = [e for e in events if e["eventType"] == "WINDOW_CLOSE"]
        opens = [e for e in events if e["eventType"] == "WINDOW_OPEN"]
        assert len(close) == 1 and len(opens) == 2
        c = close[0]
        assert c["windowStart"] == base and c["windowEnd"] == base + 10_000
        assert c["windowType"] == "Time" and c["triggerType"] == "Interval"
        assert c["result"] == {"_wstart": base, "av": 2.0}
        assert c["windowId"] == next(o["windowId"] for o in opens if o["windowStart"] == base)
        assert all(m["streams"][0]["streamName"] == "s_note" and m["messageId"] for m in received)
    finally:
        server.shutdown()
