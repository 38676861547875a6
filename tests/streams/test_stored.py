"""A stream is compiled once (``streams/stored.py``): the compiled form kept with the stream turns
back into the same CompiledStream without any SQL being tokenized or parsed, and a worker runs it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.sql import lexer
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import compile_stream
from spark_workers.streams.registry import MemoryRegistry
from spark_workers.streams.stored import compiled_from_json, compiled_to_json, stream_compiled

T0 = 1_735_689_600_000
STREAMS = {
    "interval": "create stream s1 into d.o1 as select _wstart, avg(v), count(*) from d.st "
    "partition by tbname interval(10s)",
    "state": "create stream s2 trigger at_once watermark 5s into d.o2 tags (g int) as select _wstart, "
    "first(s) from d.st where v > 1 partition by tbname, g state_window(s)",
    "337 fused": "create stream d.s3 interval(10s) sliding(10s) from d.st partition by tbname "
    "stream_options(ignore_nodata_trigger|pre_filter(v > 0)) into d.o3 as select _twstart ts, "
    "count(*) c, max(v) m from %%trows",
    "337 computation": "create stream d.s4 event_window(start with v > 5 end with v < 2) from d.st "
    "partition by tbname into d.o4 as select _twstart ts, avg(v) a from %%tbname "
    "where ts >= _twstart and ts < _twend",
    "ekuiper": "create stream s5 into d.o5 as select window_start(), count(*) from d.st group by "
    "tumblingwindow(ss, 10)",
    "no window": "create stream s6 into d.o6 tags (tb varchar(16)) as select ts, v * 2 as w, s from d.st "
    "where v > 1 partition by tbname tb",
}


@pytest.fixture
def world(tmp_path: Path) -> tuple[Lake, MemoryRegistry]:
    lake = Lake(tmp_path / "lake")
    registry = MemoryRegistry()
    ex = Executor(lake, registry)
    ex.execute(
        "create database d; create stable d.st (ts timestamp, v int, s varchar(8)) tags (g int);"
        "create table d.c1 using d.st tags (1); create table d.c2 using d.st tags (2)"
    )
    for sql in STREAMS.values():
        ex.execute(sql)
    return lake, registry


def _same(a: object, b: object) -> bool:
    return repr(a) == repr(b)


@pytest.mark.parametrize("kind", list(STREAMS))
def test_stored_form_round_trips_to_the_same_compiled_stream(world, kind: str) -> None:
    lake, registry = world
    info = sorted(registry.list(), key=lambda i: i.name)[list(STREAMS).index(kind)]
    assert info.compiled is not None and info.compiled["format"] == 1  # stored at CREATE STREAM
    fresh = compile_stream(info.spec, lake, "UTC")
    loaded = compiled_from_json(json.loads(json.dumps(info.compiled)), lake)
    for f in dataclasses.fields(fresh):
        a, b = getattr(fresh, f.name), getattr(loaded, f.name)
        if f.name == "computation" and a is not None:
            assert a.q.select.sql() == b.q.select.sql() and a.sql == b.sql
            assert _same(a.pre_filter, b.pre_filter) and _same(a.trigger, b.trigger)
        elif f.name == "plan":
            for g in dataclasses.fields(a):
                assert _same(getattr(a, g.name), getattr(b, g.name)), g.name
        else:
            assert _same(a, b), f.name
    assert compiled_to_json(loaded, tz="UTC") == info.compiled
    assert info.compiled["durations_ms"]["watermark"] == (5000 if kind == "state" else 0)


def test_a_worker_runs_the_stored_form_without_parsing_sql(world, monkeypatch) -> None:
    lake, registry = world
    Executor(lake, registry).execute(
        "insert into d.c1 values "
        + " ".join(f"({T0 + i * 1000}, {i % 9}, 's{i % 3}')" for i in range(40))
        + " d.c2 values "
        + " ".join(f"({T0 + i * 1000}, {i % 7}, 's{i % 2}')" for i in range(40))
    )

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("SQL was tokenized while running a stored stream")

    monkeypatch.setattr(lexer, "tokenize", no_parsing)
    for info in registry.list():
        compiled = stream_compiled(info.spec, info.compiled, lake, "UTC")
        runner = LocalRunner(compiled, lake, stream_key=info.name, start_version=0, history_version=None)
        runner.run()
    monkeypatch.undo()
    rows = Executor(lake, registry).execute_one("select count(*) from d.o1").rows
    assert rows[0][0] > 0  # the interval stream wrote closed windows of both subtables
