"""Issue 13 in the designer, in a real browser (Debian's Chromium through Playwright), deployed on
a whole installation (web, worker, beat):

- a legacy INTERVAL stream whose FILL mode is chosen in the computation's form, and a 3.3.7
  COUNT_WINDOW(1) stream built from the palette, both deployed from the designer; the statements
  the streams run are the ones the designer showed, and their output tables fill;
- a 3.3.7 stream over a virtual supertable (seed 000 "Virtual Tables", seed 002 "Trigger Tables")
  with FORCE_OUTPUT and NOTIFY ... WHERE set in the forms, deployed from the designer: a window
  without rows is output with NULL (FORCE_OUTPUT) and only windows that satisfy the WHERE reach the
  inbox (seed 002 "Notification Mechanism").
"""

from __future__ import annotations

import re

import pytest

from tests.system.conftest import System, sign_in, wait_for
from tests.system.test_designer_browser import canonical, drop_node, field, shown

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.browser]

T0 = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC
MIN = 60_000
WRITTEN = [(T0, 1.0), (T0 + MIN, 2.0), (T0 + 3 * MIN, 3.0), (T0 + 5 * MIN, 4.0)]
SCHEMA = [
    "CREATE DATABASE IF NOT EXISTS d13 PRECISION 'ms'",
    "CREATE STABLE d13.meters (ts TIMESTAMP, current FLOAT, voltage INT) TAGS (location VARCHAR(24))",
    "CREATE TABLE d13.d1001 USING d13.meters TAGS ('north')",
    "CREATE TABLE d13.d1002 USING d13.meters TAGS ('south')",
]
VIRTUAL_SCHEMA = [
    "CREATE STABLE d13.vmeters (ts TIMESTAMP, current FLOAT) TAGS (location VARCHAR(24)) VIRTUAL 1",
    "CREATE VTABLE d13.v1001 (current FROM d13.d1001.current) USING d13.vmeters TAGS ('north')",
]


@pytest.fixture(scope="module")
def tables(system: System) -> System:
    rest = system.rest()
    for stmt in SCHEMA:
        rest.sql(stmt)
    return system


def insert(system: System, table: str, rows: list[tuple[int, float]]) -> None:
    """Rows ``(ts_ms, current)`` through TDengine's REST protocol."""
    values = " ".join(f"({ts}, {cur}, 220)" for ts, cur in rows)
    system.rest().sql(f"INSERT INTO d13.{table} (ts, current, voltage) VALUES {values}")


def deploy(page) -> int:  # type: ignore[no-untyped-def]
    """Deploy the design; the new stream's id (fails with the designer's banner text)."""
    page.click("[data-testid=deploy]")
    page.wait_for_selector("[data-testid=deployed], .banner:has-text('Could not deploy')", timeout=90_000)
    if page.locator("[data-testid=deployed]").count() == 0:
        raise AssertionError(page.inner_text(".banner:has-text('Could not deploy')"))
    href = page.locator("[data-testid=deployed] a").first.get_attribute("href") or ""
    return int(href.rstrip("/").split("/")[-1])


def stream_of(page, system: System, sid: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return page.request.get(f"{system.url}/api/v1/streams/{sid}/").json()  # type: ignore[no-any-return]


def running(page, system: System, sid: int) -> None:  # type: ignore[no-untyped-def]
    wait_for(lambda: stream_of(page, system, sid)["status"] == "running", 240, f"stream {sid} running")


def ms_of(v: object) -> int:
    """A TIMESTAMP value of a REST answer (datetime or epoch ms) as epoch ms."""
    return int(v.timestamp() * 1000) if hasattr(v, "timestamp") else int(v)  # type: ignore[call-overload]


def rows_of(system: System, sql: str) -> list[list[object]]:
    return system.rest().sql(sql)["data"]  # type: ignore[no-any-return]


def live_sql(page, syntax: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    """Wait until the SQL tab shows ``expected`` in ``syntax``; fail showing what it shows."""
    try:
        wait_for(lambda: shown(page, f"sql-{syntax}") == expected, 60, "the live SQL")
    except AssertionError:
        assert shown(page, f"sql-{syntax}") == expected


def valid(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the designer reports a valid design; fail with its problems."""
    try:
        wait_for(lambda: "problem" not in shown(page, "issues-count"), 30, "a valid design")
    except AssertionError:
        raise AssertionError(page.inner_text(".dz-issues")) from None


def paste(page, sql: str) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("tab", name="Paste SQL").click()
    page.fill("[data-testid=paste-sql]", sql)
    page.get_by_role("button", name="Build graph").click()
    page.wait_for_selector("[data-testid=node-computation]")
    page.get_by_role("tab", name=re.compile(r"^SQL")).click()  # "SQL 1" with a problem badge


def test_fill_mode_designed_and_deployed(tables: System, browser) -> None:  # type: ignore[no-untyped-def]
    system = tables
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    sign_in(page, system)

    # a legacy INTERVAL stream; FILL(PREV) chosen in the computation's form
    page.goto(f"{system.url}/designer/")
    page.wait_for_selector("[data-testid=designer-canvas]")
    base = (
        "CREATE STREAM d13.cur_fill INTO d13.cur_fill AS SELECT _wstart AS ws, avg(current) AS avg_current "
        "FROM d13.meters PARTITION BY tbname INTERVAL(1m)"
    )
    paste(page, base)
    page.click("[data-testid=node-computation]")
    field(page, "computation", "fill_mode").select_option("PREV")
    expected = canonical(base + " FILL(PREV)")
    live_sql(page, "legacy", expected)
    assert "FILL has no 3.3.7 equivalent" in shown(page, "sql-3.3.7")
    sid = deploy(page)
    assert canonical(stream_of(page, system, sid)["sql"]) == expected
    running(page, system, sid)

    # rows at minutes 0, 1, 3 and 5 (none at 2 and 4): the closed windows with rows (0, 1, 3) are
    # in d13.cur_fill; FILL(PREV) may add 2 and 4
    insert(system, "d1001", WRITTEN)
    with_rows = {T0, T0 + MIN, T0 + 3 * MIN}

    def closed() -> set[int] | None:
        got = {ms_of(r[0]) for r in rows_of(system, "SELECT ws FROM d13.cur_fill")}
        return got if with_rows <= got else None

    starts = wait_for(closed, 240, "the closed windows in d13.cur_fill")
    assert starts <= {T0 + i * MIN for i in range(5)}  # nothing before the rows or in the open window


def test_count_window_1_designed_and_deployed(tables: System, browser) -> None:  # type: ignore[no-untyped-def]
    system = tables
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    sign_in(page, system)
    # a 3.3.7 COUNT_WINDOW(1) stream from the palette: one window per written row
    page.goto(f"{system.url}/designer/")
    page.wait_for_selector("[data-testid=designer-canvas]")
    page.locator(".dz-topbar input[name=name]").fill("per_row")
    page.locator(".dz-topbar input[name=db]").fill("d13")
    drop_node(page, "source", 60, 120)
    field(page, "source", "db").select_option("d13")
    field(page, "source", "table").select_option("meters")
    page.locator("[data-testid=props-source] button", has_text="+ tbname").click()
    drop_node(page, "trigger", 260, 120)
    field(page, "trigger", "type").select_option("count")
    field(page, "trigger", "count").fill("1")
    drop_node(page, "computation", 460, 120)
    page.locator("[data-testid=props-computation] textarea").first.fill(
        "SELECT _twstart AS ws, max(current) AS current FROM %%trows"
    )
    drop_node(page, "output", 660, 120)
    field(page, "output", "db").fill("d13")
    field(page, "output", "table").fill("per_row")
    per_row = canonical(
        "CREATE STREAM IF NOT EXISTS d13.per_row COUNT_WINDOW(1) FROM d13.meters PARTITION BY tbname "
        "INTO d13.per_row AS SELECT _twstart AS ws, max(current) AS current FROM %%trows"
    )
    live_sql(page, "3.3.7", per_row)
    valid(page)
    sid2 = deploy(page)
    assert canonical(stream_of(page, system, sid2)["sql"]) == per_row
    running(page, system, sid2)

    # every row written is a COUNT_WINDOW(1) window (rows at minutes 20-23, later than the others)
    rows = [(T0 + 20 * MIN, 1.0), (T0 + 21 * MIN, 2.0), (T0 + 22 * MIN, 3.0), (T0 + 23 * MIN, 4.0)]
    insert(system, "d1002", rows)
    query = f"SELECT ws, current FROM d13.per_row WHERE ws >= {rows[0][0]} ORDER BY ws"
    wait_for(lambda: len(rows_of(system, query)) == len(rows), 240, "one d13.per_row row per written row")
    got = [(ms_of(ts), round(float(c), 3)) for ts, c in rows_of(system, query)]  # type: ignore[arg-type]
    assert got == rows


def test_virtual_supertable_force_output_notify_where(tables: System, browser) -> None:  # type: ignore[no-untyped-def]
    system = tables
    rest = system.rest()
    for stmt in VIRTUAL_SCHEMA:
        rest.sql(stmt)
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    sign_in(page, system)
    page.goto(f"{system.url}/designer/")
    page.wait_for_selector("[data-testid=designer-canvas]")
    paste(
        page,
        "CREATE STREAM d13.vavg INTERVAL(1m) SLIDING(1m) FROM d13.vmeters PARTITION BY tbname "
        "INTO d13.vavg AS SELECT _twstart AS ws, avg(current) AS avg_current FROM %%trows",
    )
    # the trigger table is the virtual supertable
    page.click("[data-testid=node-source]")
    assert field(page, "source", "table").input_value() == "vmeters"
    # FORCE_OUTPUT in the options' form
    page.click("[data-testid=node-trigger]")
    drop_node(page, "options", 360, 260)
    field(page, "options", "force_output").select_option("true")
    # NOTIFY to this user's inbox, on window close, WHERE avg_current > 10
    drop_node(page, "notify", 860, 300)
    page.locator("[data-testid=props-notify] button", has_text="My inbox").click()
    page.locator("[data-testid=props-notify] input[name=events][value=WINDOW_CLOSE]").check()
    field(page, "notify", "where").fill("avg_current > 10")
    inbox = page.request.get(f"{system.url}/api/v1/me/").json()["inboxes"][0]["url"]
    expected = canonical(
        "CREATE STREAM d13.vavg INTERVAL(1m) SLIDING(1m) FROM d13.vmeters PARTITION BY tbname "
        f"STREAM_OPTIONS(FORCE_OUTPUT) NOTIFY('{inbox}') ON (WINDOW_CLOSE) WHERE avg_current > 10 "
        "INTO d13.vavg AS SELECT _twstart AS ws, avg(current) AS avg_current FROM %%trows"
    )
    live_sql(page, "3.3.7", expected)
    sid = deploy(page)
    # the stream's SQL as the API shows it: the inbox key redacted
    assert canonical(stream_of(page, system, sid)["sql"]) == re.sub(r"key=[^'&]+", "key=******", expected)
    running(page, system, sid)

    # d1001 (read through v1001), minutes 10-14 (later than the rows of the other test): minute 10
    # avg 5, minute 11 avg 20, minute 12 no row, minute 13 avg 30; minute 14 closes minute 13
    m10 = T0 + 10 * MIN
    insert(system, "d1001", [(m10 + 1000, 4.0), (m10 + 2000, 6.0), (m10 + MIN, 20.0), (m10 + 3 * MIN, 30.0)])
    insert(system, "d1001", [(m10 + 4 * MIN, 1.0)])
    query = f"SELECT ws, avg_current FROM d13.vavg WHERE ws >= {m10} ORDER BY ws"

    def closed() -> list[list[object]] | None:
        r = rows_of(system, query)
        return r if len(r) >= 4 else None

    out = wait_for(closed, 240, "four closed windows in d13.vavg")
    avgs = [None if v is None else round(float(v), 3) for _, v in out[:4]]  # type: ignore[arg-type]
    assert avgs == [5.0, 20.0, None, 30.0]  # the minute without rows is output with NULL: FORCE_OUTPUT
    api = f"{system.url}/api/v1/notifications/?stream=vavg&limit=500"
    wait_for(lambda: page.request.get(api).json()["count"] >= 2, 120, "the notifications of vavg")
    page.wait_for_timeout(3000)
    notes = page.request.get(api).json()["results"]
    results = sorted(
        round(float(n["payload"]["result"]["avg_current"]), 3)
        for n in notes
        if n["event_type"] == "WINDOW_CLOSE" and (n["window_start"] or 0) >= m10
    )
    assert results == [20.0, 30.0]  # WHERE avg_current > 10: not minute 10 (5) nor minute 12 (NULL)
