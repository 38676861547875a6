"""Swagger UI at ``/api/docs/`` renders with the network cut off (issue 16, acceptance): Chromium
loads the page from a live server while every request to another host is aborted; the page's
operations, grouped by resource tag, appear, and no request left 127.0.0.1."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.system.conftest import CHROMIUM_ARGS, SHOTS

pytestmark = [pytest.mark.browser]


def test_swagger_ui_renders_offline(live_server, db) -> None:  # type: ignore[no-untyped-def]
    """A browser of its own, closed before the database teardown (Playwright's sync API runs an
    event loop in this thread while it is open)."""
    import shutil

    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("Chromium is not installed: `make test` installs Debian's chromium (make browser-deps)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            _render_offline(browser, live_server.url)
        finally:
            browser.close()


def _render_offline(browser, url: str) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    outside: list[str] = []

    def only_local(route) -> None:  # type: ignore[no-untyped-def]
        host = urlparse(route.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort("internetdisconnected")

    page.route("**/*", only_local)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock-tag", timeout=30_000)
    tags = {t.strip().split("\n")[0] for t in page.locator(".opblock-tag").all_inner_texts()}
    assert {"streams", "designer", "tables", "sql", "notifications", "dashboard", "auth"} <= tags, tags
    assert page.locator(".opblock").count() >= 30  # the operations themselves, not an empty shell
    assert outside == [] and errors == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "api-docs-offline.png"))
    page.close()
