"""Every 3.3.7 trigger type notifies a real WebSocket server, and every field of every message is
checked against seed 002's lists ("Notification Mechanism"): the message (``messageId``,
``timestamp``, ``streams[].streamName``), the common event fields (``tableName``, ``eventType``,
``eventTime``, ``triggerId``, ``triggerType``, ``groupId``) and the fields of the trigger type."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spark_workers.lake.store import Lake
from spark_workers.notify.sender import Sender
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.period import PeriodRunner
from spark_workers.runtime.sink import OutputSink
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import compile_stream, group_id
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC
COMMON = {"tableName", "eventType", "eventTime", "triggerId", "triggerType", "groupId"}


class Receiver:
    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.messages: list[dict[str, Any]] = []

        def handler(ws) -> None:  # type: ignore[no-untyped-def]
            for msg in ws:
                self.messages.append(json.loads(msg))

        self.server = serve(handler, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}/notify"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self, n: int) -> list[dict[str, Any]]:
        """The events received, once ``n`` have arrived (the server reads on its own thread)."""
        deadline = time.monotonic() + 10
        while sum(len(s["events"]) for m in list(self.messages) for s in m["streams"]) < n:
            assert time.monotonic() < deadline, f"{n} events expected, got {self.messages}"
            time.sleep(0.02)
        time.sleep(0.05)  # nothing more should come
        for m in self.messages:
            assert set(m) == {"messageId", "timestamp", "streams"} and isinstance(m["timestamp"], int)
            assert len(m["messageId"]) == 32 and [s["streamName"] for s in m["streams"]] == ["s"]
        return [e for m in self.messages for st in m["streams"] for e in st["events"]]


@pytest.fixture
def env(tmp_path: Path):  # type: ignore[no-untyped-def]
    lake = Lake(tmp_path)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, tz="UTC", default_db="d")
    ex.execute(
        "create database d; create stable st (ts timestamp, a int, b int) tags (g int);"
        "create table c1 using st tags (1)"
    )
    rec = Receiver()
    sender = Sender()
    yield lake, reg, ex, rec, sender
    sender.close()
    rec.server.shutdown()


def ins(ex: Executor, *rows: tuple[int, int, int]) -> None:
    ex.execute("insert into c1 values " + " ".join(f"({T0 + s * 1000}, {a}, {b})" for s, a, b in rows))


WINDOW_CASES = [
    # trigger, trigger type, rows (second, a, b), expected (event type, window start s, window end s)
    (
        "interval(2s) sliding(2s) from st partition by tbname stream_options(ignore_nodata_trigger)",
        "Interval",
        [(0, 1, 1), (1, 1, 1), (2, 2, 1)],
        [("WINDOW_OPEN", 0, None), ("WINDOW_CLOSE", 0, 2), ("WINDOW_OPEN", 2, None)],
    ),
    (
        "session(ts, 2s) from st partition by tbname",
        "Session",
        [(0, 1, 1), (1, 1, 1), (9, 1, 1)],
        # a 3.3.7 session's end is its last row (td-046, TDengine's own tests)
        [("WINDOW_OPEN", 0, None), ("WINDOW_CLOSE", 0, 1), ("WINDOW_OPEN", 9, None)],
    ),
    (
        "state_window(a) from st partition by tbname",
        "State",
        [(0, 1, 1), (1, 1, 1), (2, 2, 1)],
        [("WINDOW_OPEN", 0, None), ("WINDOW_CLOSE", 0, 1), ("WINDOW_OPEN", 2, None)],
    ),
    (
        "event_window(start with a >= 5 end with b < 5) from st partition by tbname",
        "Event",
        [(0, 6, 7), (1, 7, 1), (2, 1, 9)],
        [("WINDOW_OPEN", 0, None), ("WINDOW_CLOSE", 0, 1)],
    ),
    (
        "count_window(2) from st partition by tbname",
        "Count",
        [(0, 1, 1), (1, 1, 1), (2, 1, 1)],
        [("WINDOW_OPEN", 0, None), ("WINDOW_CLOSE", 0, 1), ("WINDOW_OPEN", 2, None)],
    ),
]


@pytest.mark.parametrize(("trigger", "ttype", "rows", "want"), WINDOW_CASES, ids=[c[1] for c in WINDOW_CASES])
def test_window_triggers_send_every_field(env, trigger: str, ttype: str, rows, want) -> None:  # type: ignore[no-untyped-def]
    lake, reg, ex, rec, sender = env
    ex.execute(
        f"create stream s {trigger} notify('{rec.url}') on (window_open|window_close) "
        "into res output_subtable(concat('r_', tbname)) "
        "as select _twstart ws, _twrownum n, sum(b) total from %%trows"
    )
    runner = LocalRunner.for_registered(lake, reg, "s", sender=sender)
    before = int(time.time() * 1000)
    ins(ex, *rows)
    runner.run()
    events = rec.events(len(want))
    got = sorted((e["windowStart"], e["eventType"], e.get("windowEnd")) for e in events)
    assert got == sorted((T0 + s * 1000, k, None if we is None else T0 + we * 1000) for k, s, we in want)
    gid = str(group_id(json.dumps(["c1"])))
    for e in events:
        extra = {"windowStart"}
        if e["eventType"] == "WINDOW_CLOSE":
            extra |= {"windowEnd", "result"}
        if ttype == "State":
            extra |= (
                {"prevState", "curState"} if e["eventType"] == "WINDOW_OPEN" else {"curState", "nextState"}
            )
        if ttype == "Event":
            extra |= {"triggerCondition"}
        assert set(e) - {"windowId", "windowType"} == COMMON | extra, e
        assert e["tableName"] == "r_c1" and e["triggerType"] == ttype and e["groupId"] == gid
        assert before <= e["eventTime"] <= int(time.time() * 1000)
        if e["eventType"] == "WINDOW_CLOSE":
            n = sum(
                1
                for s, _a, _b in rows
                if T0 + s * 1000 >= e["windowStart"] and T0 + s * 1000 <= e["windowEnd"]
            )
            if ttype == "Interval":  # [start, end)
                n = sum(1 for s, _a, _b in rows if e["windowStart"] <= T0 + s * 1000 < e["windowEnd"])
            assert e["result"]["ws"] == e["windowStart"] and e["result"]["n"] == n
    opened = {e["windowStart"]: e["triggerId"] for e in events if e["eventType"] == "WINDOW_OPEN"}
    for e in events:  # one trigger id per window: open and close share it
        if e["eventType"] == "WINDOW_CLOSE":
            assert e["triggerId"] == opened[e["windowStart"]]
    if ttype == "State":
        o = next(e for e in events if e["eventType"] == "WINDOW_OPEN" and e["windowStart"] == T0)
        c = next(e for e in events if e["eventType"] == "WINDOW_CLOSE")
        assert (o["prevState"], o["curState"], c["curState"], c["nextState"]) == (None, 1, 1, 2)
    if ttype == "Event":
        o = next(e for e in events if e["eventType"] == "WINDOW_OPEN")
        c = next(e for e in events if e["eventType"] == "WINDOW_CLOSE")
        assert o["triggerCondition"] == {"conditionIndex": 0, "fieldValue": {"a": 6}}
        assert c["triggerCondition"] == {"conditionIndex": 1, "fieldValue": {"b": 1}}


@pytest.mark.parametrize(
    ("events", "start_values", "end_values"),
    [
        ("window_open|window_close", True, True),
        ("window_close", False, True),
        ("window_open", True, False),
        (None, False, False),
    ],
)
def test_event_window_condition_values_travel_only_for_the_notifications_that_send_them(  # type: ignore[no-untyped-def]
    env, events: str | None, start_values: bool, end_values: bool
) -> None:
    """The values a START WITH / END WITH condition read (``triggerCondition``, seed 002) are
    computed and kept per window only when a WINDOW_OPEN / WINDOW_CLOSE notification sends them
    (``streams.compile._unread_conditions_dropped``); the messages that are sent still carry
    them, and the results are the same either way."""
    lake, reg, ex, rec, sender = env
    notify = f"notify('{rec.url}') on ({events}) " if events else ""
    ex.execute(
        f"create stream s event_window(start with a >= 5 end with b < 5) from st partition by tbname {notify}"
        "into res as select _twstart ws, _twrownum n, sum(b) total from %%trows"
    )
    runner = LocalRunner.for_registered(lake, reg, "s", sender=sender)
    extras = set(runner.c.plan.extras)
    assert ("cond.start.a" in extras, "cond.end.b" in extras) == (start_values, end_values)
    assert {"start", "end"} <= extras  # the conditions themselves always
    ins(ex, (0, 6, 7), (1, 7, 1), (2, 1, 9), (3, 8, 2))
    runner.run()
    assert [list(r) for r in ex.execute_one("select ws, n, total from res").rows] == [
        [T0, 2, 8],
        [T0 + 3000, 1, 2],
    ]
    want = (["WINDOW_OPEN"] * 2 if start_values else []) + (["WINDOW_CLOSE"] * 2 if end_values else [])
    got = rec.events(len(want)) if want else []
    assert sorted(e["eventType"] for e in got) == sorted(want)
    for e in got:
        index, value = (0, {"a": 6}) if e["eventType"] == "WINDOW_OPEN" else (1, {"b": 1})
        if e["windowStart"] == T0 + 3000:
            value = {"a": 8} if index == 0 else {"b": 2}
        assert e["triggerCondition"] == {"conditionIndex": index, "fieldValue": value}


def test_sliding_trigger_sends_on_time_with_its_result(env) -> None:  # type: ignore[no-untyped-def]
    lake, reg, ex, rec, sender = env
    ex.execute(
        f"create stream s sliding(2s) from st partition by tbname stream_options(ignore_nodata_trigger) "
        f"notify('{rec.url}') into res as "
        "select _tcurrent_ts t, _tprev_ts p, _tnext_ts nx, count(*) n from %%trows"
    )
    runner = LocalRunner.for_registered(lake, reg, "s", sender=sender)
    ins(ex, (0, 1, 1), (1, 1, 1), (2, 1, 1), (5, 1, 1))
    runner.run()
    events = sorted(rec.events(2), key=lambda e: e["triggerTime"])
    assert [(e["eventType"], e["triggerType"], e["triggerTime"] - T0) for e in events] == [
        ("ON_TIME", "Sliding", 2000),
        ("ON_TIME", "Sliding", 4000),
    ]
    for e in events:
        assert set(e) == COMMON | {"triggerTime", "result"}
    assert events[0]["result"] == {"t": T0 + 2000, "p": T0, "nx": T0 + 4000, "n": 2}
    assert [list(r) for r in ex.execute_one("select t, n from res").rows] == [[T0 + 2000, 2], [T0 + 4000, 1]]


def test_period_trigger_sends_on_time_with_its_result(env) -> None:  # type: ignore[no-untyped-def]
    lake, reg, ex, rec, sender = env
    ex.execute(
        f"create stream s period(10s) from st partition by tbname notify('{rec.url}') into res "
        "as select _tlocaltime t, count(*) n from %%trows"
    )
    info = reg.get("s", None)
    assert info is not None
    c = compile_stream(info.spec, lake, "UTC")
    key = reg.key("s", None)
    runner = PeriodRunner(
        c,
        lake,
        OutputSink(c, lake, stream_key=key, sender=sender),
        created_ms=0,
        start_version=reg.start_versions[key][0],
    )
    ins(ex, (0, 1, 1), (1, 2, 2))
    at = (int(time.time() * 1000) // 10_000 + 1) * 10_000
    runner.fire(at, now_ms=at + 3)
    (e,) = rec.events(1)
    assert set(e) == COMMON | {"triggerTime", "result"}
    assert (e["eventType"], e["triggerType"], e["triggerTime"], e["eventTime"]) == (
        "ON_TIME",
        "Period",
        at,
        at + 3,
    )
    assert e["result"] == {"t": at, "n": 2} and e["tableName"].startswith("t_")


INVALIDATION_CASES = [
    # trigger, trigger type, batches of rows (second, a, b), the invalidated closed window (start s,
    # end s), and the opened windows that vanish (start s, end s)
    (
        "interval(2s) sliding(2s) from st partition by tbname stream_options(ignore_nodata_trigger)",
        "Interval",
        [[(0, 1, 1), (1, 1, 1), (2, 1, 1), (5, 1, 1)], [(1, 1, 5)]],  # an update of a closed window
        (0, 2),
        [],
    ),
    (
        "session(ts, 2s) from st partition by tbname",
        "Session",
        [[(0, 1, 1), (10, 1, 1)], [(2, 1, 1), (4, 1, 1), (6, 1, 1), (8, 1, 1)], [(20, 1, 1)]],  # merge
        (0, 0),
        [(10, 10)],  # the open session at 10 s is merged into the one at 0 s
    ),
    (
        "state_window(a) from st partition by tbname",
        "State",
        [[(0, 1, 1), (1, 1, 1), (2, 2, 1), (3, 2, 1)], [(1, 2, 1)]],  # the state of 1 s changes
        (0, 1),
        [(2, 3)],  # the open state-2 window now starts at 1 s
    ),
]


@pytest.mark.parametrize(
    ("trigger", "ttype", "batches", "invalid", "vanished"),
    INVALIDATION_CASES,
    ids=[c[1] for c in INVALIDATION_CASES],
)
def test_window_invalidation_is_delivered_and_window_open_is_never_resent(  # type: ignore[no-untyped-def]
    env, trigger: str, ttype: str, batches, invalid: tuple[int, int], vanished: list[tuple[int, int]]
) -> None:
    """Seed 002 "Fields for Window Invalidation": a window already closed that a late row, an
    update or a merge recalculates is invalidated (windowStart, windowEnd: its old bounds) before
    it closes again; the windows a recalculation re-creates are not opened a second time."""
    lake, reg, ex, rec, sender = env
    ex.execute(
        f"create stream s {trigger} notify('{rec.url}') on (window_open|window_close) "
        "into res output_subtable(concat('r_', tbname)) "
        "as select _twstart ws, _twrownum n, sum(b) total from %%trows"
    )
    runner = LocalRunner.for_registered(lake, reg, "s", sender=sender)
    before = int(time.time() * 1000)
    for rows in batches:
        ins(ex, *rows)
        runner.run()
    deadline = time.monotonic() + 10
    while not any(
        e["eventType"] == "WINDOW_INVALIDATION"
        for m in rec.messages
        for st in m["streams"]
        for e in st["events"]
    ):
        assert time.monotonic() < deadline, rec.messages
        time.sleep(0.02)
    time.sleep(0.1)
    events = [e for m in rec.messages for st in m["streams"] for e in st["events"]]
    invs = [e for e in events if e["eventType"] == "WINDOW_INVALIDATION"]
    bounds = sorted(((e["windowStart"] - T0) // 1000, (e["windowEnd"] - T0) // 1000) for e in invs)
    assert bounds == sorted([invalid, *vanished])
    (inv,) = [e for e in invs if e["windowStart"] == T0 + invalid[0] * 1000]
    assert set(inv) - {"windowId", "windowType"} == COMMON | {"windowStart", "windowEnd"}, inv
    assert (inv["windowStart"], inv["windowEnd"]) == (T0 + invalid[0] * 1000, T0 + invalid[1] * 1000)
    assert inv["tableName"] == "r_c1" and inv["triggerType"] == ttype
    assert inv["groupId"] == str(group_id(json.dumps(["c1"])))
    assert before <= inv["eventTime"] <= int(time.time() * 1000)
    first_close = next(
        e for e in events if e["eventType"] == "WINDOW_CLOSE" and e["windowStart"] == inv["windowStart"]
    )
    assert inv["triggerId"] == first_close["triggerId"]  # the invalidated window's own id
    later = events[events.index(inv) + 1 :]
    again = [e for e in later if e["eventType"] == "WINDOW_CLOSE" and e["windowStart"] == inv["windowStart"]]
    assert again, "the recalculated window closes again after its invalidation"
    # the recalculated result: the trigger rows now in the window (the lake's current rows)
    lake_rows = {s: b for rows in batches for s, _a, b in rows}
    lo, hi = (again[0]["windowStart"] - T0) // 1000, (again[0]["windowEnd"] - T0) // 1000
    inside = [b for s, b in lake_rows.items() if lo <= s < hi or (ttype != "Interval" and s == hi)]
    assert again[0]["result"]["n"] == len(inside) and again[0]["result"]["total"] == sum(inside)
    opens = [e["windowStart"] for e in events if e["eventType"] == "WINDOW_OPEN"]
    assert len(opens) == len(set(opens)), f"WINDOW_OPEN sent twice for a window: {sorted(opens)}"
