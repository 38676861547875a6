"""The visual designer in a real browser (Debian's Chromium through Playwright), on the real data.

One installation (web, worker, beat) over a lake holding two Beijing stations' real readings:

- build ``air.pollution_episodes`` on an empty canvas by dragging nodes from the palette and
  filling their forms; the live 3.3.7 SQL is the stream the demo creates;
- preview it on the real history: its closed windows are the episodes an independent pandas pass
  over the CSVs finds (tests/system/demo_reference.py);
- deploy it; replay later real readings through TDengine's REST protocol; progress moves on the
  stream page and an episode's notification arrives in the inbox;
- paste legacy SQL and get the equivalent graph;
- a bad condition shows the server's error on the trigger node's field.

Screenshots of each page go to docs/screenshots/.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from tests.system.conftest import SHOTS, System, last_batch, sign_in, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.browser]
STATIONS = ("aotizhongxin", "dongsi")
HISTORY = ("2016-11-01", "2016-12-01")  # UTC days; the history the stream starts from
EPISODES_SQL = (
    "CREATE STREAM IF NOT EXISTS air.pollution_episodes EVENT_WINDOW(START WITH pm25 > 150 END WITH "
    "pm25 <= 75) FROM air.quality PARTITION BY tbname"
)


def ms(day: str) -> int:
    return int(pd.Timestamp(day, tz="UTC").value // 1_000_000)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    from streams_app.services.demo import read_dataset

    d = read_dataset()
    return d[d["station"].isin(STATIONS)].reset_index(drop=True)


@pytest.fixture(scope="module")
def history(system: System, data: pd.DataFrame) -> System:
    """The installation with the two stations' history loaded."""
    load_history(system, data, HISTORY)
    return system


def load_history(system: System, data: pd.DataFrame, days: tuple[str, str]) -> None:
    """Schema through TDengine's REST protocol; the rows of ``data`` from UTC day ``days[0]`` up
    to ``days[1]`` through the lake's write path."""
    from spark_workers.lake.store import Lake
    from streams_app.services.demo import quality_rows, schema_sql

    rest = system.rest()
    for stmt in schema_sql(data):
        rest.sql(stmt)
    hist = data[(data["ts"] >= ms(days[0])) & (data["ts"] < ms(days[1]))]
    lake = Lake(system.var / "lake")
    lake.write(
        lake.catalog.require_database("air"), lake.catalog.require_table("air", "quality"), quality_rows(hist)
    )


def sql_value(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "NULL"
    return f"'{v}'" if isinstance(v, str) else repr(float(v)) if isinstance(v, float) else str(v)


def insert_hours(system: System, rows: pd.DataFrame) -> None:
    """Real readings written through ``POST /rest/sql`` (INSERT), as a TDengine client would."""
    from streams_app.services.demo import COLUMNS

    cols = ["ts"] + [c for c, _ in COLUMNS]
    parts = []
    for r in rows.itertuples(index=False):
        vals = ", ".join(sql_value(getattr(r, c)) for c in cols)
        parts.append(f"air.{r.station} ({', '.join(cols)}) VALUES ({vals})")
    system.rest().sql("INSERT INTO " + " ".join(parts))


def drop_node(page, kind: str, x: int, y: int) -> None:  # type: ignore[no-untyped-def]
    """Drag a palette item onto the canvas (HTML5 drag and drop, as a user does)."""
    page.drag_and_drop(
        f"[data-testid=palette-{kind}]", "[data-testid=designer-canvas]", target_position={"x": x, "y": y}
    )
    page.wait_for_selector(f"[data-testid=node-{kind}]")
    page.click(f"[data-testid=node-{kind}]")
    page.wait_for_selector(f"[data-testid=props-{kind}]")


def field(page, kind: str, name: str):  # type: ignore[no-untyped-def]
    return page.locator(f"[data-testid=props-{kind}] [name='{name}']").first


def canonical(sql: str) -> str:
    """A statement as the server renders it, whitespace-normalised."""
    from spark_workers.sql.parser import parse_one
    from spark_workers.sql.render import render

    return " ".join(render(parse_one(sql)).split())


def shown(page, testid: str) -> str:  # type: ignore[no-untyped-def]
    return " ".join(page.inner_text(f"[data-testid='{testid}']").split())


def reference_episodes(lo: int, hi: int | None) -> pd.DataFrame:
    """Closed episodes of the two stations from the CSVs (tests/system/demo_reference.py)."""
    from tests.system.demo_reference import pollution_episodes, raw

    d = raw()
    d = d[d["station"].str.lower().isin(STATIONS) & (d["ts"] >= lo)]
    if hi is not None:
        d = d[d["ts"] < hi]
    return pollution_episodes(d).sort_values(["station", "wstart"]).reset_index(drop=True)


def test_design_preview_deploy_pollution_episodes(history: System, browser, data) -> None:  # type: ignore[no-untyped-def]
    system = history
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    sign_in(page, system)
    inbox = page.request.get(f"{system.url}/api/v1/me/").json()["inboxes"][0]["url"]

    page.goto(f"{system.url}/designer/")
    page.wait_for_selector("[data-testid=designer-canvas]")
    assert page.locator(".react-flow__node").count() == 0, "the designer starts from an empty canvas"
    page.locator(".dz-topbar input[name=name]").fill("pollution_episodes")
    page.locator(".dz-topbar input[name=db]").fill("air")
    page.locator(".dz-topbar input[name=if_not_exists]").check()

    drop_node(page, "source", 60, 120)
    field(page, "source", "db").select_option("air")
    field(page, "source", "table").select_option("quality")
    page.locator("[data-testid=props-source] button", has_text="+ tbname").click()
    drop_node(page, "trigger", 260, 120)
    field(page, "trigger", "type").select_option("event")
    field(page, "trigger", "start").fill("pm25 > 150")
    field(page, "trigger", "end").fill("pm25 <= 75")
    drop_node(page, "options", 460, 120)
    field(page, "options", "fill_history").select_option("true")
    drop_node(page, "computation", 660, 120)
    page.locator("[data-testid=props-computation] textarea").first.fill(
        "SELECT _twstart AS wstart, _twend AS wend, _twrownum AS nrows, max(pm25) AS peak_pm25 FROM %%trows"
    )
    drop_node(page, "output", 860, 120)
    field(page, "output", "db").fill("air")
    field(page, "output", "table").fill("pollution_episodes")
    drop_node(page, "notify", 860, 300)
    page.locator("[data-testid=props-notify] button", has_text="My inbox").click()
    for ev in ("WINDOW_OPEN", "WINDOW_CLOSE"):
        page.locator(f"[data-testid=props-notify] input[name=events][value={ev}]").check()

    # the live SQL is the demo's stream (streams_app/services/demo.py), notifying this user's inbox
    expected = canonical(
        f"{EPISODES_SQL} STREAM_OPTIONS(FILL_HISTORY) NOTIFY('{inbox}') ON (WINDOW_OPEN|WINDOW_CLOSE) "
        "INTO air.pollution_episodes AS SELECT _twstart AS wstart, _twend AS wend, _twrownum AS nrows, "
        "max(pm25) AS peak_pm25 FROM %%trows"
    )
    wait_for(lambda: shown(page, "sql-3.3.7") == expected, 30, f"the live SQL {expected}")
    wait_for(
        lambda: "valid" in shown(page, "issues-count") and "problem" not in shown(page, "issues-count"),
        30,
        "a valid design",
    )
    assert page.locator(".react-flow__edge").count() >= 5, "the nodes are connected left to right"
    page.screenshot(path=str(SHOTS / "designer.png"), full_page=True)

    # preview on the real history: the closed windows are the reference episodes
    lo, hi = ms(HISTORY[0]), ms(HISTORY[1])
    page.get_by_role("tab", name="Preview").click()
    page.fill("[data-testid=designer-page] input[name=start], .dz-preview input[name=start]", HISTORY[0])
    page.fill(".dz-preview input[name=end]", HISTORY[1])
    with page.expect_response(lambda r: "/designer/preview/" in r.url) as resp:
        page.click("[data-testid=preview-run]")
    answer = resp.value.json()
    assert resp.value.status == 200, answer
    page.wait_for_selector("[data-testid=preview-rows]")
    ref = reference_episodes(lo, hi)
    assert len(ref) > 0, "the chosen month holds episodes"
    cols = [c["name"] for c in answer["rows"]["columns"]]
    got = pd.DataFrame(answer["rows"]["data"], columns=cols)
    assert answer["output_rows"] == len(ref)
    assert sorted(got["wstart"].astype("int64")) == sorted(ref["wstart"])
    assert sorted(got["nrows"].astype("int64")) == sorted(ref["nrows"])
    assert sorted(got["peak_pm25"].round(6)) == sorted(ref["peak_pm25"].round(6))
    closed = [w for w in answer["windows"] if w["event"] == "WINDOW_CLOSE"]
    assert len(closed) == len(ref)
    assert page.locator("[data-testid=preview-rows] tbody tr").count() == len(ref)
    assert page.locator("[data-testid=timeline-lane]").count() == len(STATIONS)
    page.screenshot(path=str(SHOTS / "designer-preview.png"), full_page=True)

    # deploy; the stream catches up on the history
    page.click("[data-testid=deploy]")
    page.wait_for_selector("[data-testid=deployed]", timeout=60_000)
    href = page.locator("[data-testid=deployed] a").get_attribute("href") or ""
    sid = int(re.search(r"/streams/(\d+)/", href).group(1))  # type: ignore[union-attr]
    api = f"{system.url}/api/v1"
    wait_for(lambda: page.request.get(f"{api}/streams/{sid}/progress/").json(), 240, "the first micro-batch")
    page.goto(f"{system.url}/streams/{sid}/")
    wait_for(lambda: last_batch(page) >= 0, 60, "the progress on the stream page")
    first = last_batch(page)

    # later real readings, through TDengine's REST protocol: progress moves on the open page and the
    # next episode's WINDOW_OPEN reaches the inbox (history windows are not notified)
    later = data[data["ts"] >= hi].sort_values("ts")
    step = 6 * 3_600_000
    t = hi
    inbox_api = f"{api}/notifications/?stream=pollution_episodes"
    while not page.request.get(inbox_api).json()["count"]:
        assert t < hi + 20 * 86_400_000, "no episode started within 20 days of real readings"
        insert_hours(system, later[(later["ts"] >= t) & (later["ts"] < t + step)])
        t += step
        try:
            wait_for(lambda: page.request.get(inbox_api).json()["count"], 20, "a notification", interval=2)
        except AssertionError:
            continue
    wait_for(lambda: last_batch(page) > first, 120, "live progress on the stream page")
    page.screenshot(path=str(SHOTS / "stream-designed.png"), full_page=True)
    page.goto(f"{system.url}/inbox/")
    page.wait_for_selector("[data-testid^=notification-]", timeout=60_000)
    assert "pollution_episodes" in page.inner_text("main")
    assert page.locator("[data-testid=inbox-badge]").count() == 1
    page.screenshot(path=str(SHOTS / "inbox-designed.png"), full_page=True)
    page.goto(f"{system.url}/dashboard/")
    page.wait_for_timeout(2000)
    page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)


def test_paste_legacy_sql_and_errors_on_nodes(history: System, browser) -> None:  # type: ignore[no-untyped-def]
    system = history
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    sign_in(page, system)
    page.goto(f"{system.url}/designer/")
    page.wait_for_selector("[data-testid=designer-canvas]")
    legacy = (
        "CREATE STREAM IF NOT EXISTS air.pm25_daily_copy TRIGGER WINDOW_CLOSE WATERMARK 1h FILL_HISTORY 1 "
        "INTO air.pm25_daily_copy TAGS (station VARCHAR(32)) AS SELECT _wstart AS wstart, "
        "avg(pm25) AS avg_pm25, max(pm25) AS max_pm25, count(*) AS n FROM air.quality "
        "WHERE pm25 IS NOT NULL PARTITION BY station INTERVAL(1d)"
    )
    page.get_by_role("tab", name="Paste SQL").click()
    page.fill("[data-testid=paste-sql]", legacy)
    page.get_by_role("button", name="Build graph").click()
    for kind in ("source", "prefilter", "trigger", "options", "computation", "output"):
        page.wait_for_selector(f"[data-testid=node-{kind}]")
    assert page.locator("[data-testid=node-notify]").count() == 0
    assert "INTERVAL" in page.inner_text("[data-testid=node-trigger]").upper()
    page.click("[data-testid=node-trigger]")
    assert field(page, "trigger", "type").input_value() == "interval"
    assert field(page, "trigger", "interval").input_value() == "1d"
    page.click("[data-testid=node-source]")
    assert field(page, "source", "table").input_value() == "quality"
    page.click("[data-testid=node-prefilter]")
    # expressions are kept in the server's canonical rendering (sqlglot writes IS NOT NULL as NOT ... IS NULL)
    assert field(page, "prefilter", "condition").input_value() in ("pm25 IS NOT NULL", "NOT pm25 IS NULL")
    page.get_by_role("tab", name="SQL", exact=True).click()
    wait_for(lambda: shown(page, "sql-legacy") == canonical(legacy), 30, "the pasted statement as legacy SQL")
    assert "INTERVAL(1d) SLIDING(1d)" in shown(page, "sql-3.3.7")
    page.screenshot(path=str(SHOTS / "designer-paste.png"), full_page=True)

    # a column that does not exist, in the computation: the server's error lands on that field
    page.click("[data-testid=node-computation]")
    editor = page.locator("[data-testid=props-computation] textarea").first
    editor.fill(editor.input_value().replace("max(pm25)", "max(pm99)"))
    page.wait_for_selector("[data-testid=error-computation-query]", timeout=30_000)
    assert "pm99" in page.inner_text("[data-testid=error-computation-query]")
    assert page.locator("[data-testid=node-issues-computation]").count() == 1
    assert page.locator("[data-testid=node-issues-trigger]").count() == 0
    # a malformed duration on the trigger
    page.click("[data-testid=node-trigger]")
    field(page, "trigger", "interval").fill("1x")
    page.wait_for_selector("[data-testid=error-trigger-interval]", timeout=30_000)
    page.screenshot(path=str(SHOTS / "designer-error.png"), full_page=True)
