"""LOW_LATENCY_CALC sends a micro-batch's window events before its output write (seed 002: "low-latency
computation or notification after each trigger"), and the micro-batch stays idempotent on its id:
a batch that fails after sending is replayed, sends the same message again and writes its rows
once; a stream without the option sends after the write (the row is readable on arrival)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_workers.lake.store import Lake
from spark_workers.notify.sender import Sender
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC
STREAM = (
    "create stream {name} interval(1s) sliding(1s) from c1 {opts}notify('ws://127.0.0.1:9/n') "
    "on (window_close) into {name}_out as select _twstart ws, count(*) n, sum(v) sv from %%trows"
)


class RecordingSender(Sender):
    """Records each message with the output rows readable when it was handed over."""

    def __init__(self, ex: Executor, out: str) -> None:
        super().__init__()
        self.ex, self.out = ex, out
        self.sent: list[tuple[dict[str, Any], list[tuple[Any, ...]]]] = []

    def deliver(self, url: str, message: dict[str, Any], *, on_failure: str) -> bool:
        rows = [tuple(r) for r in self.ex.execute_one(f"select ws, n, sv from {self.out}").rows]
        self.sent.append((message, rows))
        return True


class FailingWriteOnce:
    """A lake whose first ``write`` raises (the output write failing after the events were sent)."""

    def __init__(self, lake: Lake) -> None:
        self._lake, self.failed = lake, False

    def write(self, *a: Any, **kw: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise OSError("disk full")
        return self._lake.write(*a, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lake, name)


@pytest.fixture
def ex(tmp_path: Path) -> Executor:
    """An executor over a fresh lake with database ``d`` and the trigger table ``c1``."""
    ex = Executor(Lake(tmp_path), MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute("create database d; create table c1 (ts timestamp, v int)")
    return ex


def _runner(ex: Executor, name: str, low_latency: bool) -> tuple[LocalRunner, RecordingSender]:
    opts = "stream_options(low_latency_calc) " if low_latency else ""
    ex.execute(STREAM.format(name=name, opts=opts))
    sender = RecordingSender(ex, f"{name}_out")
    return LocalRunner.for_registered(ex.lake, ex.registry, name, sender=sender), sender


def _closes(sender: RecordingSender) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (m["messageId"], e["windowStart"], e["result"])
        for m, _rows in sender.sent
        for s in m["streams"]
        for e in s["events"]
        if e["eventType"] == "WINDOW_CLOSE"
    ]


def test_low_latency_calc_sends_before_the_write_and_a_replayed_batch_writes_once(ex: Executor) -> None:
    runner, sender = _runner(ex, "fast", low_latency=True)
    ex.execute(f"insert into c1 values ({T0}, 1) ({T0 + 500}, 2) ({T0 + 1200}, 4)")
    batches: list[Any] = []
    process = runner.sink.process

    def capture(batch: Any, batch_id: int, **kw: Any) -> Any:
        batches.append((batch, batch_id, kw))
        return process(batch, batch_id, **kw)

    runner.sink.process = capture  # type: ignore[method-assign]
    runner.sink.lake = FailingWriteOnce(runner.sink.lake)  # type: ignore[assignment]
    with pytest.raises(OSError, match="disk full"):
        runner.poll()
    first = _closes(sender)
    assert [(w, r) for _id, w, r in first] == [(T0, {"ws": T0, "n": 2, "sv": 3})]
    assert sender.sent[0][1] == []  # sent before the output row was written
    assert ex.execute_one("select ws, n, sv from fast_out").rows == []
    batch, batch_id, kw = batches[0]  # Spark runs the uncommitted micro-batch again
    process(batch, batch_id, **kw)
    again = _closes(sender)
    assert len(again) == 2 and again[1] == first[0]  # the same message, the same messageId
    assert [tuple(r) for r in ex.execute_one("select ws, n, sv from fast_out").rows] == [(T0, 2, 3)]


def test_without_low_latency_calc_the_row_is_readable_when_the_close_is_sent(ex: Executor) -> None:
    runner, sender = _runner(ex, "slow", low_latency=False)
    ex.execute(f"insert into c1 values ({T0}, 1) ({T0 + 500}, 2) ({T0 + 1200}, 4)")
    runner.run()
    assert [(w, r) for _id, w, r in _closes(sender)] == [(T0, {"ws": T0, "n": 2, "sv": 3})]
    closing = [rows for m, rows in sender.sent if _closes(RecordingSenderView(m))]
    assert closing == [[(T0, 2, 3)]]


class RecordingSenderView:
    """One message seen as a one-message sender (for ``_closes``)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.sent = [(message, [])]
