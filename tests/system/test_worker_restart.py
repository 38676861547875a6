"""Killing the worker (kill -9) while a stream runs, then starting it again, yields the same output
table as an uninterrupted run: no missing and no duplicate windows.

The reference is the interactive batch query of the stream's own SELECT (what an uninterrupted
AT_ONCE run converges to: every window of every group, computed from all rows).
"""

from __future__ import annotations

import math
import random

import pytest

from tests.system.conftest import System, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration]

BASE = 1_700_000_000_000
QUERY = (
    "select _wstart, count(*) n, sum(v) s, min(v) mn, max(v) mx, last(v) lv from m "
    "partition by tbname tb interval(1m)"
)


def write(rest, start: int, count: int, devices: int = 8) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(start)
    for chunk in range(start, start + count, 50):
        parts = []
        for d in range(devices):
            vals = " ".join(
                f"({BASE + i * 7_000}, {rng.randint(-500, 500) / 10})"
                for i in range(chunk, min(chunk + 50, start + count))
            )
            parts.append(f"d{d} values {vals}")
        rest.sql("insert into " + " ".join(parts))


def snapshot(rest, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted((str(r[0]), str(r[1]), *r[2:]) for r in rest.sql(sql)["data"])


def difference(got: list[tuple], want: list[tuple]) -> str | None:
    """None when equal (keys exactly, numbers to 1e-9 relative: incremental sums add in another
    order than a batch sum); else the first difference."""
    if len(got) != len(want):
        keys_g, keys_w = {r[:2] for r in got}, {r[:2] for r in want}
        missing, extra = sorted(keys_w - keys_g)[:3], sorted(keys_g - keys_w)[:3]
        return f"{len(got)} rows, expected {len(want)}; missing {missing}, extra {extra}"
    for g, w in zip(got, want, strict=True):
        if g[:2] != w[:2] or len(g) != len(w):
            return f"row {g} != {w}"
        for a, b in zip(g[2:], w[2:], strict=True):
            if a != b and not (
                isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-9)
            ):
                return f"row {g} != {w}"
    return None


def test_kill_9_worker_then_restart_gives_the_uninterrupted_result(system: System) -> None:
    rest = system.rest("k9")
    rest.sql("create database if not exists k9")
    rest.sql("create stable m (ts timestamp, v double) tags (dev int)")
    rest.sql("create table " + " ".join(f"d{i} using m tags ({i})" for i in range(8)))
    rest.sql(f"create stream k9s trigger at_once into k9out tags (tb varchar(16)) as {QUERY}")
    write(rest, 0, 300)
    wait_for(lambda: rest.sql("select count(*) from k9out")["data"][0][0] > 0, 180, "the first results")
    system.launcher.kill("worker")  # kill -9 of the worker and its Spark driver
    write(rest, 300, 300)  # written while no worker runs
    system.launcher.start_worker()
    write(rest, 600, 300)
    expected = snapshot(rest, QUERY.replace("select _wstart", "select tb, _wstart"))
    out_sql = "select tb, _wstart, n, s, mn, mx, lv from k9out"

    state = {"diff": "not checked"}

    def matches() -> bool:
        state["diff"] = difference(snapshot(rest, out_sql), expected) or ""
        return not state["diff"]

    try:
        wait_for(matches, 240, f"k9out to equal the batch result ({len(expected)} windows)")
    except AssertionError:
        raise AssertionError(f"{state['diff']}\nworker log:\n{system.log('worker')[-1500:]}") from None
    keys = [(r[0], r[1]) for r in snapshot(rest, out_sql)]
    assert len(keys) == len(set(keys)) == len(expected)  # every window once
    # the stream did restart after the kill: two runs recorded
    runs = rest.sql("show streams")["data"]
    assert any(r[0] == "k9s" and r[3] in ("running", "catching_up") for r in runs)
