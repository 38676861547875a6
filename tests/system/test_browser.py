"""Real browser (Debian's Chromium through Playwright) against a whole installation.

Signs in as root; the stream page's progress updates live (new micro-batches appear without a
reload); a notification arrives in the inbox live; the create page shows a validation error at
its position. Screenshots of each page are saved to docs/screenshots/.
"""

from __future__ import annotations

import pytest

from tests.system.conftest import SHOTS, System, last_batch, sign_in, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.browser]
BASE = 1_700_000_000_000


def write_hour(rest, hour: int) -> None:  # type: ignore[no-untyped-def]
    ts = BASE + hour * 3_600_000
    rest.sql(
        "insert into "
        + " ".join(
            f"s{i} values ({ts + m * 60_000}, {10 * i + hour + m / 60})"
            for i in range(3)
            for m in range(0, 60, 5)
        )
    )


def test_pages_update_live(system: System, browser) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sign_in(page, system)
    me = page.request.get(f"{system.url}/api/v1/me/").json()
    inbox_url = me["inboxes"][0]["url"].replace("ws://127.0.0.1:8000", system.url.replace("http", "ws"))

    rest = system.rest("web")
    rest.sql("create database if not exists web")
    rest.sql("create stable meters (ts timestamp, v double) tags (site varchar(16))")
    rest.sql("create table " + " ".join(f"s{i} using meters tags ('site{i}')" for i in range(3)))
    rest.sql(
        "create stream hourly into hourly_avg tags (site varchar(16)) as select _wstart, avg(v) av, "
        "count(*) n from meters partition by site interval(1h) "
        f"notify ('{inbox_url}') on ('WINDOW_CLOSE') notify_history 0 on_failure drop"
    )
    write_hour(rest, 0)
    api = f"{system.url}/api/v1"
    streams = wait_for(lambda: page.request.get(f"{api}/streams/").json()["results"], 60, "the stream")
    sid = streams[0]["id"]
    wait_for(
        lambda: page.request.get(f"{system.url}/api/v1/streams/{sid}/progress/").json(),
        180,
        "the first micro-batch",
    )

    page.goto(f"{system.url}/streams/{sid}/")
    page.wait_for_selector("[data-testid=stream-sql]")
    assert "interval(1h)" in page.inner_text("[data-testid=stream-sql]")
    wait_for(lambda: last_batch(page) >= 0, 30, "the progress facts")
    first = last_batch(page)
    for hour in (1, 2):  # new rows: new micro-batches must appear on the open page, with no reload
        write_hour(rest, hour)
    wait_for(lambda: last_batch(page) > first, 120, "a live progress update on the stream page")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(SHOTS / "stream.png"), full_page=True)

    page.goto(f"{system.url}/inbox/")
    page.wait_for_selector("[data-testid^=notification-]", timeout=60_000)
    before = page.locator("[data-testid^=notification-]").count()
    write_hour(rest, 3)  # closes the hour-2 window of each site: three WINDOW_CLOSE events
    wait_for(
        lambda: page.locator("[data-testid^=notification-]").count() >= before + 3,
        120,
        "notifications arriving live in the inbox",
    )
    assert "WINDOW_CLOSE" in page.inner_text("main") or "WINDOW_CLOSE" in page.content()
    page.screenshot(path=str(SHOTS / "inbox.png"), full_page=True)

    page.goto(f"{system.url}/")
    page.wait_for_selector(f"[data-testid=stream-row-{sid}]")
    assert "hourly" in page.inner_text(f"[data-testid=stream-row-{sid}]")
    page.screenshot(path=str(SHOTS / "streams.png"), full_page=True)

    page.goto(f"{system.url}/streams/new/")
    page.wait_for_selector("textarea")
    bad = "CREATE STREAM bad INTO web.o AS SELECT _wstart, avg(nope) FROM web.meters INTERVAL(1m)"
    page.fill("textarea", bad)
    page.wait_for_selector("[data-testid=error-desc]", timeout=20_000)
    desc = page.inner_text("[data-testid=error-desc]")
    assert "nope" in desc and "column" in desc
    page.screenshot(path=str(SHOTS / "create.png"), full_page=True)

    page.goto(f"{system.url}/tables/?db=web&table=hourly_avg")
    page.wait_for_timeout(3000)
    page.screenshot(path=str(SHOTS / "tables.png"), full_page=True)
