"""The shared acceptance cases (legacy and eKuiper) through the whole stream pipeline without
Spark: TDengine SQL -> StreamSpec -> stage 1 (DuckDB) -> per-bucket kernel -> output sink ->
output table -> SELECT, checked with the acceptance runner's own comparison.

Each statement of a step is its own micro-batch (the runner sends one REST request per statement),
so windows span micro-batches. The same cases run against the real service (Spark, Celery, REST)
with ``../shared/acceptance/run_acceptance.py``; this test catches regressions in seconds.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry
from tests.s3_server import s3_server

__all__ = ["s3_server"]

CASES = (
    "td-001",
    "td-002",
    "td-008",
    "td-009",
    "td-011a",
    "td-014",
    "td-016",
    "td-017",
    "ek-009",
    "ek-011",
    # TDengine 3.3.7 window triggers over %%trows (streams/v337.py)
    "td-019",
    "td-023",
    "td-028",
    "td-031a",
    # a computation over %%tbname with placeholders, per trigger event (query/compute.py)
    "td-038",
    "td-048a",
    # RECALCULATE STREAM ranges of INTERVAL (empty windows fire), SESSION, STATE and EVENT triggers
    "td-046",
    # virtual tables as trigger and source tables (lake/virtual.py, lake/changes.py)
    "td-041",
    "td-043",
)

ACCEPTANCE = Path(__file__).resolve().parents[3] / "shared" / "acceptance"


def _runner_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("run_acceptance", ACCEPTANCE / "run_acceptance.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Pipeline:
    """An executor plus one LocalRunner per created stream, polled after every statement."""

    def __init__(self, root: Path | str, catalog_url: str | None = None) -> None:
        self.lake = Lake(root, catalog_url)
        self.registry = MemoryRegistry()
        self.runners: dict[str, LocalRunner] = {}

    def sql(self, text: str, db: str | None):  # type: ignore[no-untyped-def]
        ex = Executor(self.lake, self.registry, tz="UTC", default_db=db)
        res = ex.execute_one(text)
        for key in self.registry.streams:
            if key not in self.runners:
                self.runners[key] = LocalRunner.for_registered(self.lake, self.registry, key, buckets=2)
        for r in self.runners.values():
            r.run()
        return res


@pytest.mark.skipif(not ACCEPTANCE.is_dir(), reason="../shared/acceptance is not on this machine")
@pytest.mark.parametrize("case_id", CASES)
def test_acceptance_case_through_the_local_pipeline(case_id: str, tmp_path: Path) -> None:
    _run_case(case_id, Pipeline(tmp_path / "lake"))


@pytest.mark.skipif(not ACCEPTANCE.is_dir(), reason="../shared/acceptance is not on this machine")
@pytest.mark.parametrize("case_id", ["td-001", "td-016"])
def test_acceptance_case_on_a_lake_in_an_s3_bucket(case_id: str, s3_server, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The same pipeline with ``TDWEB_LAKE=s3://...`` (moto's server): ingest, updates, stream
    output writes and recalculation all go through the object store; the lake's local parts
    (catalog) are under ``TDWEB_VAR``, where every Lake opened from the URL finds them."""
    monkeypatch.setenv("TDWEB_VAR", str(tmp_path))
    _run_case(case_id, Pipeline(s3_server.fresh_uri()))


def _run_case(case_id: str, p: Pipeline) -> None:
    mod = _runner_module()
    case = json.loads((ACCEPTANCE / "cases" / f"{case_id}.json").read_text())
    db = None
    for stmt in case["setup"]:
        p.sql(stmt, db)
        if stmt.strip().lower().startswith("create database"):
            db = stmt.split()[-1].rstrip(";") if "if not exists" not in stmt.lower() else stmt.split()[5]
            db = stmt.replace(";", " ").split()[2]
    for stmt in case["streams"]:
        p.sql(stmt, db)
    for i, step in enumerate(case["steps"]):
        for stmt in step["sql"]:
            p.sql(stmt, db)
        check = step.get("check")
        if check:
            resp = p.sql(check["query"], db).to_rest("UTC")
            ok, message, _shown = mod.compare(resp, check)
            assert ok, f"{case_id} step {i}: {message}"


@pytest.mark.skipif(not ACCEPTANCE.is_dir(), reason="../shared/acceptance is not on this machine")
def test_td050a_max_delay_with_a_clock(tmp_path: Path) -> None:
    """td-050a is a wall-clock case (its window never closes: MAX_DELAY(3s) writes it): replayed
    with the runners' clock moved 4 s past each statement instead of waiting, then checked with the
    acceptance runner's comparison."""
    mod = _runner_module()
    case = json.loads((ACCEPTANCE / "cases" / "td-050a.json").read_text())
    now = [1_700_000_000_000]
    lake = Lake(tmp_path / "lake")
    registry = MemoryRegistry()
    runners: dict[str, LocalRunner] = {}
    db = case["database"]

    def sql(text: str):  # type: ignore[no-untyped-def]
        res = Executor(lake, registry, tz="UTC", default_db=db).execute_one(text)
        for key in registry.streams:
            if key not in runners:
                runners[key] = LocalRunner.for_registered(
                    lake, registry, key, buckets=2, clock=lambda: now[0]
                )
        for r in runners.values():
            r.run()
            now[0] += 4_000  # MAX_DELAY(3s) has passed since the window's first unwritten change
            r.tick()
        return res

    for stmt in case["setup"] + case["streams"]:
        sql(stmt)
    for i, step in enumerate(case["steps"]):
        for stmt in step["sql"]:
            sql(stmt)
        resp = sql(step["check"]["query"]).to_rest("UTC")
        ok, message, _shown = mod.compare(resp, step["check"])
        assert ok, f"td-050a step {i}: {message}"
