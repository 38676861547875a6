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
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import compile_stream
from spark_workers.streams.registry import MemoryRegistry

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():  # type: ignore[no-untyped-def]
    from spark_workers.runtime.session import spark_session

    return spark_session("local[2]")


class Env:
    def __init__(self, root: Path, catalog_url: str | None = None) -> None:
        self.lake = Lake(root, catalog_url)
        self.reg = MemoryRegistry()
        self.ex = Executor(self.lake, self.reg, tz="UTC")
        self.queries: list = []
        self.reports: list[BatchReport] = []

    def sql(self, q: str, db: str | None = None):  # type: ignore[no-untyped-def]
        self.ex.default_db = db
        return self.ex.execute_one(q)

    def start(self, spark, name: str, sender: Sender | None = None, skip_history: bool = False):  # type: ignore[no-untyped-def]
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
            catalog_url=self.lake.catalog.url,
            skip_history=skip_history,
        )
        self.queries.append(q)
        return q

    def wait_like_batch(self, body: str, out: str, db: str) -> None:
        """Wait until the output table ``out`` of a stream holds the rows of its query ``body``
        run as an interactive (batch) query, compared as sorted rows of the select list's
        names (the output subtables are named after the groups: all groups are compared)."""
        want = sorted(tuple(r) for r in self.sql(body, db).rows)
        cols = ", ".join(c.split()[-1] for c in body.split(" from ")[0][7:].split(", "))
        self.wait_rows(f"select {cols} from {out}", db, lambda got: sorted(tuple(r) for r in got) == want)

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


def test_sparks_python_workers_import_pyspark_from_the_package(spark) -> None:  # type: ignore[no-untyped-def]
    """Spark's Python workers (forked from ``runtime.daemon``) import pyspark from the installed
    package, not from the ``pyspark.zip`` Spark puts first on their PYTHONPATH
    (``runtime/tdweb_pyspark_site.pth``)."""
    import sysconfig

    def probe(_: int) -> tuple[str, bool]:
        import sys

        import pyspark

        return pyspark.__file__ or "", any(p.endswith("pyspark.zip") for p in sys.path)

    file, zipped = spark.sparkContext.parallelize([0], 1).map(probe).collect()[0]
    assert Path(file) == Path(sysconfig.get_paths()["purelib"]) / "pyspark" / "__init__.py"
    assert not zipped


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


def test_a_cancelled_catch_up_skips_the_snapshot_in_spark(spark, env):
    """``skip_history`` (a cancelled FILL_HISTORY catch-up, ``stream_history_cancel``): the Spark
    source reads none of the snapshot and the stream goes on with the rows written after it."""
    for q in SETUP:
        env.sql(q, "d1")
    t0 = 1_700_000_000_000
    env.sql("insert into a1 values " + " ".join(f"({t0 + i * 60_000}, {i}, {i})" for i in range(180)), "d1")
    body = "select _wstart, count(*) n from a1 interval(1h)"
    env.sql(f"create stream s_skip fill_history 1 into out_skip as {body}", "d1")
    env.start(spark, "s_skip", skip_history=True)
    live = [t0 + 10 * 3_600_000 + i * 60_000 for i in range(61)]  # an hour later: one window closes
    env.sql("insert into a1 values " + " ".join(f"({ts}, 1, 1)" for ts in live), "d1")
    got = env.wait_rows("select _wstart, n from out_skip", "d1", lambda rows: len(rows) >= 1)
    time.sleep(2)  # a history window, had one been computed, would be written by now too
    got = env.sql("select _wstart, n from out_skip", "d1").rows
    want = env.sql(f"select _wstart, count(*) from a1 where ts >= {live[0]} interval(1h)", "d1").rows
    assert [tuple(r) for r in got] == [tuple(want[0])]  # the live rows' first (closed) window only
    assert all(r.phase == "live" for r in env.reports)


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


def test_a_stream_without_a_window_writes_rows_in_spark(spark, env):
    """Seed 001 filter / scalar ETL: Spark runs stage 1 only and the sink writes each row passing
    WHERE (history and live), per partition; a deleted source row deletes its output row."""
    for q in SETUP:
        env.sql(q, "d1")
    t0 = 1_700_000_000_000
    hist = [f"a1 values ({t0 + i * 1000}, {i % 4}, {i})" for i in range(20)]
    env.sql("insert into " + " ".join(hist), "d1")
    env.sql(
        "create stream s_rows fill_history 1 into out_rows tags (site varchar(16)) as "
        "select ts, v * 10 as v10, concat(tbname, '-', site) as who from st where v > 1 partition by site",
        "d1",
    )
    env.start(spark, "s_rows")
    env.sql(f"insert into b1 values ({t0 + 500}, 3, 0) ({t0 + 1500}, 0.5, 0)", "d1")
    want = sorted(
        [(t0 + i * 1000, float(i % 4) * 10, "a1-north") for i in range(20) if i % 4 > 1]
        + [(t0 + 500, 30.0, "b1-south")]
    )

    def as_tuples(rows):  # type: ignore[no-untyped-def]
        return sorted(
            (r[0] if isinstance(r[0], int) else int(r[0].timestamp() * 1000), r[1], r[2]) for r in rows
        )

    env.wait_rows("select ts, v10, who from out_rows", "d1", lambda r: as_tuples(r) == want)
    env.sql(f"delete from a1 where ts >= {t0 + 2000} and ts <= {t0 + 3000}", "d1")
    gone = [w for w in want if not (t0 + 2000 <= w[0] <= t0 + 3000)]
    env.wait_rows("select ts, v10, who from out_rows", "d1", lambda r: as_tuples(r) == gone)
    sites = env.sql("select distinct site from out_rows", "d1").rows
    assert sorted(r[0] for r in sites) == ["north", "south"]


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


def test_data_defined_windows_in_spark_match_the_batch_queries(spark, env):
    """SESSION, STATE_WINDOW, EVENT_WINDOW and COUNT_WINDOW streams (AT_ONCE) over history and
    live rows, with a late row, equal the interactive queries of the same SQL."""
    for q in SETUP:
        env.sql(q, "d1")
    rows = []
    for i in range(240):
        ts = 1_700_000_000_000 + i * 60_000 + (0 if i % 50 else 3_600_000 * (i // 50))
        rows.append(
            f"a1 values ({ts}, {i % 4}, {(i // 6) % 3}) b1 values ({ts + 7}, {i % 5}, {(i // 9) % 2})"
        )
    env.sql("insert into " + " ".join(rows[:120]), "d1")
    bodies = {
        "s_sess": "select _wstart, _wend, count(*) n, sum(v) sv from st partition by tbname session(ts, 2m)",
        "s_state": "select _wstart, count(*) n, max(v) mv from st partition by tbname state_window(k)",
        "s_event": "select _wstart, count(*) n, sum(k) sk from st partition by tbname "
        "event_window start with v = 0 end with v >= 3",
        "s_count": "select _wstart, count(*) n, sum(v) sv from st partition by tbname count_window(7, 3)",
    }
    for name, body in bodies.items():
        env.sql(f"create stream {name} trigger at_once fill_history 1 into o_{name} as {body}", "d1")
        env.start(spark, name)
    for chunk in range(120, 240, 40):
        env.sql("insert into " + " ".join(rows[chunk : chunk + 40]), "d1")
    env.sql("insert into a1 values (1700000030000, 0, 2)", "d1")  # late: splits/merges windows
    for name, body in bodies.items():
        env.wait_like_batch(body, f"o_{name}", "d1")


def test_ekuiper_windows_and_timers_in_spark(spark, env):
    """eKuiper tumbling (rows without aggregates) and session windows, and a MAX_DELAY stream
    whose open window is written by the processing-time timer without any new data."""
    env.sql("create database e1", None)
    env.sql("create table m (ts timestamp, temp double, hum bigint)", "e1")
    env.sql(
        "create stream s_tumble trigger window_close watermark 1s into o_tumble as "
        "select window_start() ws, temp, ts from m where hum > 2 group by tumblingwindow(ss, 1)",
        "e1",
    )
    env.sql(
        "create stream s_ses trigger window_close into o_ses as "
        "select window_start() ws, count(*) n, sum(temp) st from m group by sessionwindow(ss, 10, 2)",
        "e1",
    )
    env.sql(
        "create stream s_delay trigger max_delay 5s into o_delay as "
        "select _wstart, count(*) n from m interval(1h)",
        "e1",
    )
    for name in ("s_tumble", "s_ses", "s_delay"):
        env.start(spark, name)
    t0 = 1_541_152_486_000
    for i, (dt, temp, hum) in enumerate([(13, 25.5, 3), (632, 26.0, 1), (1_900, 27.0, 5), (5_100, 28.0, 4)]):
        env.sql(f"insert into m values ({t0 + dt}, {temp}, {hum})", "e1")
        if i == 0:
            time.sleep(1)
    # tumbling: windows [486, 487) and [487, 488) are closed by 491.1 - 1 s; rows with hum > 2
    got = env.wait_rows("select ws, temp from o_tumble", "e1", lambda r: len(r) >= 2)
    assert sorted(r[1] for r in got) == [25.5, 27.0]
    assert min(r[0] for r in got) == t0 + 13  # eKuiper: the first window starts at the first event
    # session: 486.013, 486.632, 487.9 (gaps < 2 s), then 491.1 (gap 3.2 s) closes the first
    got = env.wait_rows("select ws, n, st from o_ses", "e1", lambda r: len(r) >= 1)
    assert got[0][1:] == [3, 78.5]
    # MAX_DELAY: the hour window never closes; the timer writes it about 5 s after its changes
    got = env.wait_rows("select _wstart, n from o_delay", "e1", lambda r: r and r[0][1] == 4, timeout=60)
    assert got[0][0] == (t0 // 3_600_000) * 3_600_000


@pytest.mark.parametrize("packed", ["1", "0"])
def test_packed_rows_in_spark_match_the_batch_queries(spark, env, monkeypatch, packed):
    """STATE_WINDOW and SESSION streams with VARCHAR and TIMESTAMP inputs, NULL states, a late row,
    a rewritten timestamp and a delete equal the interactive queries, with rows packed per group in
    the source and windows packed on their way to the sink (``runtime/packing.py``: Spark then
    counts packed rows, far fewer than the rows written) and without (``TDWEB_PACK=0``,
    ``TDWEB_PACK_OUTPUT=0``: one Spark row per trigger row and per window)."""
    monkeypatch.setenv("TDWEB_PACK", packed)
    monkeypatch.setenv("TDWEB_PACK_OUTPUT", packed)
    env.sql("create database d2", "d2")
    env.sql("create stable st (ts timestamp, v double, k int, note varchar(8)) tags (site varchar(8))", "d2")
    env.sql("create table a1 using st tags ('n'); create table b1 using st tags ('s')", "d2")
    rows = []
    for i in range(300):
        ts = 1_700_000_000_000 + i * 1_000 + (0 if i % 60 else 20_000)
        k = "null" if i % 17 == 0 else (i // 7) % 3
        rows.append(
            f"a1 values ({ts}, {i % 5}, {k}, 'a{i % 4}') b1 values ({ts + 3}, {i % 3}, {(i // 11) % 2}, 'b')"
        )
    bodies = {
        "p_state": "select _wstart, count(*) n, first(note) fn, last(ts) lt, sum(v) sv from st "
        "partition by tbname state_window(k)",
        "p_sess": "select _wstart, _wend, count(*) n, last(note) ln from st "
        "partition by site session(ts, 2s)",
    }
    env.sql("insert into " + " ".join(rows[:100]), "d2")
    for name, body in bodies.items():
        env.sql(
            f"create stream {name} trigger at_once fill_history 1 ignore update 0 into o_{name} as {body}",
            "d2",
        )
        env.start(spark, name)
    for chunk in range(100, 300, 50):
        env.sql("insert into " + " ".join(rows[chunk : chunk + 50]), "d2")
    env.sql("insert into a1 values (1700000030500, 9, 2, 'late')", "d2")  # late: splits a window
    env.sql("insert into b1 values (1700000040003, 7, 1, 'again')", "d2")  # rewrites a row
    env.sql("delete from a1 where ts >= 1700000100000 and ts <= 1700000104000", "d2")
    for name, body in bodies.items():
        env.wait_like_batch(body, f"o_{name}", "d2")
    seen = sum(p["numInputRows"] for q in env.queries for p in q.recentProgress)
    written = 2 * 2 * 300 + 3  # two streams, two tables
    if packed == "1":
        assert 0 < seen < written / 10
    else:
        assert seen >= written


def test_a_stream_checkpointed_unpacked_resumes_packed(spark, env, monkeypatch):
    """A deployment upgraded to packed rows: a STATE_WINDOW stream that ran with one Spark row per
    trigger row and per window (``TDWEB_PACK=0``, ``TDWEB_PACK_OUTPUT=0``) restarts from its
    checkpoint with both packings on; its groups keep their buckets (Spark's hash of the same
    PARTITION BY columns) and its state operator takes the new output shape, so the open windows
    it had go on and the output equals the batch query over all rows."""
    env.sql("create database d3", "d3")
    env.sql("create stable st (ts timestamp, v double, k int) tags (site varchar(8))", "d3")
    env.sql("create table a1 using st tags ('n'); create table b1 using st tags ('s')", "d3")
    body = "select _wstart, count(*) n, sum(v) sv from st partition by tbname state_window(k)"
    t0 = 1_700_000_000_000

    def rows(lo: int, hi: int) -> str:
        a = [f"a1 values ({t0 + i * 1000}, {i}, {(i // 9) % 3})" for i in range(lo, hi)]
        b = [f"b1 values ({t0 + i * 1000 + 1}, 1, {(i // 4) % 2})" for i in range(lo, hi)]
        return " ".join(a + b)

    monkeypatch.setenv("TDWEB_PACK", "0")
    monkeypatch.setenv("TDWEB_PACK_OUTPUT", "0")
    env.sql("insert into " + rows(0, 50), "d3")
    env.sql(f"create stream s_up trigger at_once fill_history 1 into o_up as {body}", "d3")
    q = env.start(spark, "s_up")
    env.sql("insert into " + rows(50, 100), "d3")
    env.wait_like_batch(body, "o_up", "d3")
    q.stop()
    env.queries.remove(q)
    monkeypatch.setenv("TDWEB_PACK", "1")
    monkeypatch.setenv("TDWEB_PACK_OUTPUT", "1")
    env.sql("insert into " + rows(100, 160), "d3")  # continues the windows open at the stop
    env.sql("insert into a1 values (1700000030500, 5, 2)", "d3")  # late: re-segments a closed one
    q = env.start(spark, "s_up")
    env.wait_like_batch(body, "o_up", "d3")
    assert sum(p["numInputRows"] for p in q.recentProgress) < 60  # packed after the restart
