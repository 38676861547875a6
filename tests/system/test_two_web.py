"""Two web processes (issue 14, "Several worker and web hosts"): a second Daphne on another port,
sharing the first installation's metadata DB, lake and Redis channel layer, serves the same data,
and a browser signed in on either one gets the live progress and the inbox messages.

Web A is the ``system`` fixture's Daphne; web B is started here with the same environment (its own
``TDWEB_PORT``). The stream is created over TDengine REST on A and notifies A's inbox endpoint
(``/ws/notify/``, so the intake runs in A); its rows are written over REST to B. A real browser
(Chromium) has one signed-in page on each process; the frames their ``/ws/streams/<id>/`` and
``/ws/inbox/`` sockets receive are recorded. An acknowledgement made in B's inbox page must reach
A's REST API, A's socket and A's unread badge.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.system.conftest import System, free_port, last_batch, sign_in, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.browser]

BASE = 1_700_000_000_000
ROOT = Path(__file__).resolve().parents[2]
SITES = 3


@pytest.fixture(scope="module")
def web_b(system: System) -> Iterator[System]:
    """A second Daphne on another port, with A's environment (same var, lake, DB, Redis, channel
    prefix); killed (its process group) at the end."""
    port = free_port()
    env = {**system.launcher.env(), "TDWEB_PORT": str(port)}
    log = system.var / "log" / "web-b.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "tdweb.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            assert proc.poll() is None, f"web B exited with code {proc.returncode}: {log.read_text()[-2000:]}"
            with urllib.request.urlopen(f"{url}/accounts/login/", timeout=2) as r:
                return bool(r.status == 200)

        wait_for(answers, 60, "web B to answer", interval=0.3)
        yield System(system.launcher, url, system.var, env)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def write_hour(rest: Any, hour: int) -> None:
    ts = BASE + hour * 3_600_000
    rest.sql(
        "insert into "
        + " ".join(
            f"s{i} values ({ts + m * 60_000}, {10 * i + hour + m / 60})"
            for i in range(SITES)
            for m in (0, 30)
        )
    )


def recorded(page: Any) -> list[tuple[str, dict[str, Any]]]:
    """The JSON frames the page's WebSockets receive from now on, as ``(path, message)``."""
    frames: list[tuple[str, dict[str, Any]]] = []

    def on_socket(ws: Any) -> None:
        path = urlparse(ws.url).path
        ws.on("framereceived", lambda payload: frames.append((path, json.loads(payload))))

    page.on("websocket", on_socket)
    return frames


def get(page: Any, url: str) -> Any:
    r = page.request.get(url)
    assert r.ok, f"GET {url}: {r.status} {r.text()[:500]}"
    return r.json()


def test_two_web_processes_serve_the_same_data_and_live_updates(  # type: ignore[no-untyped-def]
    system: System, web_b: System, browser
) -> None:
    a, b = system, web_b
    ctx_a, ctx_b = browser.new_context(), browser.new_context()  # two browsers: own cookie jars
    try:
        page_a, page_b = ctx_a.new_page(), ctx_b.new_page()
        frames_a, frames_b = recorded(page_a), recorded(page_b)
        sign_in(page_a, a)
        sign_in(page_b, b)
        api_a, api_b = f"{a.url}/api/v1", f"{b.url}/api/v1"

        def pump(ms: int = 200) -> None:  # Playwright delivers socket events while it runs
            page_a.wait_for_timeout(ms)

        notify_url = get(page_a, f"{api_a}/me/")["inboxes"][0]["url"]
        assert notify_url.startswith(a.url.replace("http", "ws") + "/ws/notify/")  # intake on A
        rest_a, rest_b = a.rest("two"), b.rest("two")
        rest_a.sql("create database if not exists two")
        rest_a.sql("create stable meters (ts timestamp, v double) tags (site varchar(16))")
        rest_a.sql("create table " + " ".join(f"s{i} using meters tags ('site{i}')" for i in range(SITES)))
        rest_a.sql(
            "create stream two_hourly into hourly_avg tags (site varchar(16)) as select _wstart, "
            "avg(v) av, count(*) n from meters partition by site interval(1h) "
            f"notify ('{notify_url}') on ('WINDOW_CLOSE') notify_history 0 on_failure drop"
        )
        write_hour(rest_b, 0)  # B writes into the tables A created
        streams = wait_for(lambda: get(page_b, f"{api_b}/streams/")["results"], 30, "the stream on B")
        sid = streams[0]["id"]
        wait_for(lambda: get(page_a, f"{api_a}/streams/{sid}/progress/"), 180, "the first micro-batch")

        before = {"a": len(frames_a), "b": len(frames_b)}
        for page, web in ((page_a, a), (page_b, b)):
            page.goto(f"{web.url}/streams/{sid}/")
            page.wait_for_selector("[data-testid=stream-sql]")
            wait_for(lambda p=page: last_batch(p) >= 0, 30, "the progress facts")
            page.wait_for_selector("[data-testid=live-indicator].live-live")  # /ws/streams/<id>/ is open
        first = {"a": last_batch(page_a), "b": last_batch(page_b)}

        def sockets_up() -> bool:  # the stream page's inbox socket answered (its "unread" frame)
            pump()
            new = (frames_a[before["a"] :], frames_b[before["b"] :])
            return all(any(p == "/ws/inbox/" for p, _ in f) for f in new)

        wait_for(sockets_up, 30, "the stream pages' sockets", interval=0.1)
        seen = {"a": len(frames_a), "b": len(frames_b)}

        write_hour(rest_b, 1)  # closes the hour-0 window of each site: WINDOW_CLOSE notifications
        write_hour(rest_b, 2)

        def live(frames: list[tuple[str, dict[str, Any]]], key: str) -> dict[str, list[dict[str, Any]]]:
            new = frames[seen[key] :]
            return {
                "progress": [
                    m for p, m in new if p == f"/ws/streams/{sid}/" and m["type"] == "stream.progress"
                ],
                "notifications": [
                    m["notification"]
                    for p, m in new
                    if p == "/ws/inbox/"
                    and m["type"] == "notification"
                    and m["notification"]["stream_name"] == "two_hourly"
                ],
            }

        state: dict[str, Any] = {}

        def both_live() -> bool:
            pump()
            got = (live(frames_a, "a"), live(frames_b, "b"))
            state["counts"] = [(len(g["progress"]), len(g["notifications"])) for g in got]
            return all(len(g["progress"]) > 0 and len(g["notifications"]) >= 2 * SITES for g in got)

        try:
            wait_for(both_live, 180, "live progress and notifications on both sockets", interval=0.1)
        except AssertionError as e:
            inbox = get(page_a, f"{api_a}/notifications/?limit=100")["count"]
            raise AssertionError(
                f"{e}\n(progress, notifications) frames on A, B: {state.get('counts')}; "
                f"notifications stored: {inbox}\nworker log:\n{a.log('worker')[-1500:]}"
            ) from None
        live_a, live_b = live(frames_a, "a"), live(frames_b, "b")
        assert {m["stream_id"] for m in live_a["progress"] + live_b["progress"]} == {sid}
        ids_a = sorted(n["id"] for n in live_a["notifications"])
        assert ids_a == sorted(n["id"] for n in live_b["notifications"])  # the same rows, pushed once each
        assert len(set(ids_a)) == len(ids_a)
        assert {n["event_type"] for n in live_a["notifications"]} == {"WINDOW_CLOSE"}
        # the pages show the new micro-batches live, with no reload
        wait_for(
            lambda: last_batch(page_a) > first["a"] and last_batch(page_b) > first["b"], 30, "live facts"
        )

        # both processes answer the same data: the output table, the streams, the inbox
        out = "select site, _wstart, av, n from hourly_avg order by site, _wstart"
        assert rest_a.sql(out)["data"] == rest_b.sql(out)["data"]
        assert len(rest_a.sql(out)["data"]) >= 2 * SITES
        keys = ("id", "name", "sql", "owner")
        for x, y in zip(
            get(page_a, f"{api_a}/streams/")["results"],
            get(page_b, f"{api_b}/streams/")["results"],
            strict=True,
        ):
            assert {k: x.get(k) for k in keys} == {k: y.get(k) for k in keys}
        inbox_a = get(page_a, f"{api_a}/notifications/?limit=100")
        assert inbox_a == get(page_b, f"{api_b}/notifications/?limit=100")
        assert sorted(n["id"] for n in inbox_a["results"] if n["stream_name"] == "two_hourly") == ids_a

        # an acknowledgement on B: A's REST, A's socket and A's unread badge follow
        unread = get(page_a, f"{api_a}/notifications/unread-count/")["count"]
        assert unread == get(page_b, f"{api_b}/notifications/unread-count/")["count"] >= 2 * SITES
        wait_for(lambda: page_a.inner_text("[data-testid=inbox-badge]") == str(unread), 30, "A's badge")
        page_b.goto(f"{b.url}/inbox/")
        nid = ids_a[0]
        row = page_b.locator(f"[data-testid=notification-{nid}]")
        seen["a"] = len(frames_a)
        row.get_by_role("button", name="Acknowledge").click()
        row.get_by_text("acknowledged", exact=True).wait_for()
        acked = {
            n["id"]: n["acknowledged"] for n in get(page_a, f"{api_a}/notifications/?limit=100")["results"]
        }
        assert acked[nid] is True and sum(not v for v in acked.values()) == unread - 1
        assert get(page_a, f"{api_a}/notifications/unread-count/")["count"] == unread - 1

        def a_told() -> list[dict[str, Any]]:
            pump()
            return [m for p, m in frames_a[seen["a"] :] if p == "/ws/inbox/"]

        wait_for(lambda: {"type": "unread", "count": unread - 1} in a_told(), 30, "A's unread frame", 0.1)
        told = a_told()
        assert any(m["type"] == "notification" and m["notification"]["id"] == nid for m in told), told
        assert all(m["notification"]["acknowledged"] for m in a_told() if m["type"] == "notification")
        wait_for(lambda: page_a.inner_text("[data-testid=inbox-badge]") == str(unread - 1), 30, "A's badge")
    finally:
        ctx_a.close()
        ctx_b.close()
