"""The designer's REST endpoints (streams_app.api.designer, docs/designer.md): compile, validate,
preview, catalog, templates, drafts, deploy and redeploy, stream versions — over the real metadata
DB and a lake holding the demo schema (``air.quality``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from spark_workers.errors import Code, TdError
from spark_workers.runtime.paths import checkpoint_location
from streams_app.api import designer as designer_api
from streams_app.models import Stream, StreamDraft, StreamVersion
from streams_app.services.api_tokens import api_token_create
from streams_app.services.demo import schema_sql
from streams_app.services.designer import stream_redeploy
from streams_app.services.registry import DjangoStreamRegistry
from streams_app.services.sql import sql_execute
from streams_app.services.templates import TEMPLATES
from tests.web.conftest import position

pytestmark = pytest.mark.django_db

EPISODES = (
    "CREATE STREAM air.episodes EVENT_WINDOW(START WITH pm25 > 150 END WITH pm25 <= 75) "
    "FROM air.quality PARTITION BY tbname INTO air.episodes AS\n"
    "  SELECT _twstart AS wstart, _twend AS wend, max(pm25) AS peak_pm25 FROM %%trows"
)
LEGACY = (
    "CREATE STREAM pm25_daily INTO air.pm25_daily AS\n"
    "  SELECT _wstart AS wstart, avg(pm25) AS avg_pm25 FROM air.quality PARTITION BY tbname INTERVAL(1d)"
)
# aotizhongxin, 2017-01-01 hourly from 00:00 UTC: one episode from 01:00 (160) to 04:00 (60)
PM25 = [100, 160, 200, 170, 60, 50]
DAY_MS = 1483228800000  # 2017-01-01T00:00:00Z


@pytest.fixture
def air(admin, lake):  # type: ignore[no-untyped-def]
    """The demo schema (database ``air``, supertable ``quality``, subtables aotizhongxin and dongsi)
    with six hourly rows of aotizhongxin on 2017-01-01 (``PM25``)."""
    stations = pd.DataFrame(
        {"station": ["aotizhongxin", "dongsi"], "station_name": ["Aotizhongxin", "Dongsi"]}
    )
    for sql in schema_sql(stations):
        sql_execute(sql=sql, user=admin)
    values = " ".join(
        f"({DAY_MS + i * 3_600_000}, {v}, 1, 1, 1, 1, 1, {i}, 1000, 0, 0, 'N', 1.5)"
        for i, v in enumerate(PM25)
    )
    sql_execute(sql=f"INSERT INTO air.aotizhongxin VALUES {values}", user=admin)
    return lake


def _compile(api: APIClient, sql: str) -> dict:
    r = api.post("/api/v1/designer/compile/", {"sql": sql}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def _validate(api: APIClient, design: dict, **extra: object) -> dict:
    r = api.post("/api/v1/designer/validate/", {"design": design, **extra}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def _draft(api: APIClient, design: dict, **extra: object) -> dict:
    r = api.post("/api/v1/designer/drafts/", {"design": design, **extra}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def _deploy(api: APIClient, draft_id: int, **body: object):  # type: ignore[no-untyped-def]
    return api.post(f"/api/v1/designer/drafts/{draft_id}/deploy/", body, format="json")


# ---------------------------------------------------------------------- authentication

ENDPOINTS = [
    ("post", "api-designer-compile", {}),
    ("post", "api-designer-validate", {}),
    ("post", "api-designer-preview", {}),
    ("get", "api-designer-catalog", {}),
    ("get", "api-designer-templates", {}),
    ("get", "api-designer-drafts", {}),
    ("post", "api-designer-drafts", {}),
    ("get", "api-designer-draft", {"draft_id": 1}),
    ("put", "api-designer-draft", {"draft_id": 1}),
    ("patch", "api-designer-draft", {"draft_id": 1}),
    ("delete", "api-designer-draft", {"draft_id": 1}),
    ("post", "api-designer-draft-deploy", {"draft_id": 1}),
    ("post", "api-stream-edit", {"stream_id": 1}),
    ("get", "api-stream-versions", {"stream_id": 1}),
    ("get", "api-stream-versions-diff", {"stream_id": 1}),
]


def test_endpoint_list_covers_every_designer_route() -> None:
    assert {e[1] for e in ENDPOINTS} == {p.name for p in designer_api.urlpatterns}


@pytest.mark.parametrize(("method", "name", "kwargs"), ENDPOINTS, ids=[f"{e[0]}-{e[1]}" for e in ENDPOINTS])
def test_anonymous_is_refused(air, method, name, kwargs) -> None:
    r = getattr(APIClient(), method)(reverse(name, kwargs=kwargs), {"sql": EPISODES}, format="json")
    assert r.status_code == 401
    assert r.json()["detail"].startswith("Authentication credentials were not provided")
    assert not StreamDraft.objects.exists() and not Stream.objects.exists()


def test_token_authentication(air, alice) -> None:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=alice)[1]}")
    body = _compile(c, EPISODES)
    assert body["design"]["nodes"]["trigger"]["type"] == "event"
    c.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert c.post("/api/v1/designer/compile/", {"sql": EPISODES}, format="json").status_code == 401


# ---------------------------------------------------------------------- compile


def test_compile_337(root_api) -> None:
    body = _compile(root_api, EPISODES)
    d = body["design"]
    assert d["schema_version"] == 1 and d["name"] == "episodes" and d["syntax"] == "3.3.7"
    assert d["nodes"]["source"]["table"] == "quality"
    assert d["nodes"]["trigger"]["start"] == "pm25 > 150" and d["nodes"]["trigger"]["end"] == "pm25 <= 75"
    assert d["nodes"]["output"]["table"] == "episodes"
    assert set(body["sql"]) == {"3.3.7", "legacy"}
    assert "EVENT_WINDOW(START WITH pm25 > 150 END WITH pm25 <= 75)" in body["sql"]["3.3.7"]
    for syntax, reason in body["not_expressible"].items():  # a syntax without SQL says why
        assert body["sql"][syntax] is None and reason
    # the 3.3.7 SQL compiles back to the same design
    assert _compile(root_api, body["sql"]["3.3.7"])["design"]["nodes"] == d["nodes"]


def test_compile_legacy(root_api) -> None:
    body = _compile(root_api, LEGACY)
    d = body["design"]
    assert d["syntax"] == "legacy" and d["nodes"]["trigger"]["type"] == "interval"
    assert d["nodes"]["trigger"]["interval"] == "1d"
    assert body["sql"]["legacy"] and "INTERVAL(1d)" in body["sql"]["legacy"]


def test_compile_bad_sql_is_400_with_position(root_api) -> None:
    sql = EPISODES.replace("START WITH", "BEGIN WITH")
    r = root_api.post("/api/v1/designer/compile/", {"sql": sql}, format="json")
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == Code.SYNTAX_ERROR and "START WITH" in body["desc"]
    line, col = position(sql, "BEGIN")
    assert body["position"] == {"offset": sql.index("BEGIN"), "line": line, "column": col}
    r = root_api.post("/api/v1/designer/compile/", {"sql": "SELECT * FROM air.quality"}, format="json")
    assert r.status_code == 400 and "CREATE STREAM" in r.json()["desc"]
    assert root_api.post("/api/v1/designer/compile/", {}, format="json").status_code == 400


# ---------------------------------------------------------------------- validate


def test_validate_valid_design(air, root_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    body = _validate(root_api, design)
    assert body["valid"] is True and body["issues"] == []
    assert "EVENT_WINDOW" in body["sql"]["3.3.7"]
    names = [p["name"] for p in body["placeholders"]]
    assert "_twstart" in names and "%%trows" in names
    assert "impact" not in body
    assert not Stream.objects.exists()  # nothing was created
    assert air.catalog.table("air", "episodes") is None


def test_validate_field_issue(air, root_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    design["nodes"]["trigger"]["start"] = ""
    body = _validate(root_api, design)
    assert body["valid"] is False
    assert any(i["node"] == "trigger" and i["field"] == "start" for i in body["issues"]), body["issues"]


@pytest.mark.parametrize(
    ("node", "field", "value", "expect"),
    [
        ("source", "table", "nosuch", ("source", "table")),
        (
            "computation",
            "query",
            "SELECT _twstart AS wstart, max(pm99) AS peak FROM %%trows",
            ("computation", "query"),
        ),
    ],
)
def test_validate_server_checks_map_to_the_node(air, root_api, node, field, value, expect) -> None:
    design = _compile(root_api, EPISODES)["design"]
    design["nodes"][node][field] = value
    body = _validate(root_api, design)
    assert body["valid"] is False and len(body["issues"]) == 1, body
    issue = body["issues"][0]
    assert (issue["node"], issue["field"]) == expect, issue
    assert issue["message"]


def test_validate_refuses_a_name_in_use_unless_editing_that_stream(air, root_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    draft = _draft(root_api, design)
    assert _deploy(root_api, draft["id"]).status_code == 200
    body = _validate(root_api, design)
    assert body["valid"] is False and "already exists" in body["issues"][0]["message"]
    stream = Stream.objects.get(status="starting")
    body = _validate(root_api, design, stream_id=stream.pk)
    assert body["valid"] is True, body["issues"]
    assert body["impact"]["kind"] == "none"


def test_validate_impact_of_a_changed_trigger(air, root_api, alice_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    assert _deploy(root_api, _draft(root_api, design)["id"]).status_code == 200
    stream = Stream.objects.get(status="starting")
    design["nodes"]["trigger"]["start"] = "pm25 > 200"
    body = _validate(root_api, design, stream_id=stream.pk)
    assert body["valid"] is True
    assert body["impact"]["kind"] in ("reset", "recalculate") and body["impact"]["statement"]
    # alice may not name root's stream
    r = alice_api.post(
        "/api/v1/designer/validate/", {"design": design, "stream_id": stream.pk}, format="json"
    )
    assert r.status_code == 400 and "stream_id" in r.json()


# ---------------------------------------------------------------------- preview


def test_preview_runs_the_design_over_the_range(air, root_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    r = root_api.post(
        "/api/v1/designer/preview/",
        {"design": design, "start": "2017-01-01T00:00:00Z", "end": DAY_MS + 86_400_000, "limit": 100},
        format="json",
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["input_rows"] == len(PM25)
    closed = [w for w in body["windows"] if w["event"] == "WINDOW_CLOSE"]
    assert [(w["start"], w["end"]) for w in closed] == [(DAY_MS + 3_600_000, DAY_MS + 4 * 3_600_000)]
    cols = [c["name"] for c in body["rows"]["columns"]]
    assert "peak_pm25" in cols
    assert body["rows"]["data"][0][cols.index("peak_pm25")] == 200
    assert not Stream.objects.exists() and air.catalog.table("air", "episodes") is None


def test_preview_errors_are_400_with_node_and_field(air, root_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    r = root_api.post(
        "/api/v1/designer/preview/", {"design": design, "start": DAY_MS, "end": DAY_MS - 1}, format="json"
    )
    assert r.status_code == 400 and "empty" in r.json()["desc"]
    assert (r.json()["node"], r.json()["field"]) == (None, "start")  # the range, not the design
    design["nodes"]["computation"]["query"] = "SELECT max(pm99) AS peak FROM %%trows"
    r = root_api.post(
        "/api/v1/designer/preview/",
        {"design": design, "start": DAY_MS, "end": DAY_MS + 86_400_000},
        format="json",
    )
    assert r.status_code == 400, r.content
    assert (r.json()["node"], r.json()["field"]) == ("computation", "query")
    r = root_api.post("/api/v1/designer/preview/", {"design": design, "start": "yesterday"}, format="json")
    assert r.status_code == 400 and "start" in r.json()


# ---------------------------------------------------------------------- catalog and templates


def test_catalog(air, alice_api) -> None:
    r = alice_api.get("/api/v1/designer/catalog/?db=air")
    assert r.status_code == 200, r.content
    body = r.json()
    [db] = body["databases"]
    assert db["name"] == "air" and db["precision"] == "ms"
    tables = {t["name"]: t for t in db["tables"]}
    q = tables["quality"]
    assert q["kind"] == "supertable" and q["stable"] is None
    assert [c["name"] for c in q["columns"]][:3] == ["ts", "pm25", "pm10"]
    assert {"name": "wd", "type": "VARCHAR(8)"} in q["columns"]
    assert q["tags"] == [{"name": "station", "type": "VARCHAR(32)"}]
    sub = tables["dongsi"]
    assert sub["kind"] == "subtable" and sub["stable"] == "quality" and sub["columns"] == q["columns"]
    assert q["virtual"] is False and sub["virtual"] is False  # physical tables
    assert [p["name"] for p in body["placeholders"]["none"]] == ["%%trows"]  # legacy, no window
    funcs = {f["name"]: f["kind"] for f in body["functions"]}
    assert funcs["avg"] == "aggregate" and funcs["abs"] == "scalar" and funcs["concat"] == "scalar"
    assert {"interval", "period", "session", "state", "event", "count", "sliding"} <= set(
        body["placeholders"]
    )
    assert any(p["name"] == "%%trows" for p in body["placeholders"]["event"])
    assert "_tlocaltime" in [p["name"] for p in body["placeholders"]["period"]]
    assert body["defaults"]["legacy"]["notify"]["on_failure"] == "PAUSE"  # ARCHITECTURE.md decisions
    assert body["defaults"]["3.3.7"]["notify"]["on_failure"] == "DROP"
    assert alice_api.get("/api/v1/designer/catalog/?db=nosuch").status_code == 404
    everything = alice_api.get("/api/v1/designer/catalog/").json()
    assert "air" in [d["name"] for d in everything["databases"]]


def test_templates_compile_and_validate(air, root_api, admin) -> None:
    r = root_api.get("/api/v1/designer/templates/")
    assert r.status_code == 200
    body = r.json()
    assert [t["id"] for t in body] == [t.id for t in TEMPLATES]
    triggers = set()
    inbox = admin.inboxes.get()
    for t in body:
        assert t["title"] and t["description"]
        assert t["design"] == _compile(root_api, t["sql"])["design"], t["id"]
        v = _validate(root_api, t["design"])
        assert v["valid"] is True, (t["id"], v["issues"])
        triggers.add(t["design"]["nodes"]["trigger"]["type"])
        if "NOTIFY" in t["sql"]:
            assert f"key={inbox.key}" in t["sql"]  # the user's own inbox
    assert {"interval", "event", "state", "period", "session", "count"} <= triggers
    notify_only = next(t for t in body if t["id"] == "notify_only_alert")
    assert not notify_only["design"]["nodes"].get("computation")


# ---------------------------------------------------------------------- drafts


def test_draft_crud_and_pagination(air, alice_api, alice) -> None:
    design = _compile(alice_api, EPISODES)["design"]
    created = [_draft(alice_api, design, name=f"d{i}") for i in range(3)]
    d0 = created[0]
    assert d0["owner"] == "alice" and d0["stream_id"] is None and d0["design"] == design
    page = alice_api.get("/api/v1/designer/drafts/?limit=2&offset=0").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"] and page["previous"] is None
    assert [d["name"] for d in page["results"]] == ["d2", "d1"]  # newest change first
    rest = alice_api.get(page["next"]).json()
    assert [d["name"] for d in rest["results"]] == ["d0"] and rest["next"] is None
    assert alice_api.get(f"/api/v1/designer/drafts/{d0['id']}/").json() == d0
    # PATCH changes one field, PUT replaces
    r = alice_api.patch(f"/api/v1/designer/drafts/{d0['id']}/", {"name": "renamed"}, format="json")
    assert r.status_code == 200 and r.json()["name"] == "renamed" and r.json()["design"] == design
    changed = {**design, "layout": {"source": {"x": 10, "y": 20}}}
    r = alice_api.put(
        f"/api/v1/designer/drafts/{d0['id']}/", {"name": "put", "design": changed}, format="json"
    )
    assert r.status_code == 200 and r.json()["design"]["layout"] == {"source": {"x": 10, "y": 20}}
    assert StreamDraft.objects.get(pk=d0["id"]).name == "put"
    assert (
        alice_api.put(f"/api/v1/designer/drafts/{d0['id']}/", {"name": "x"}, format="json").status_code == 400
    )
    assert alice_api.delete(f"/api/v1/designer/drafts/{d0['id']}/").status_code == 204
    assert alice_api.get(f"/api/v1/designer/drafts/{d0['id']}/").status_code == 404
    assert alice_api.post("/api/v1/designer/drafts/", {"design": "x"}, format="json").status_code == 400


def test_draft_visibility(air, root_api, alice_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    root_draft = _draft(root_api, design, name="root's")
    alice_draft = _draft(alice_api, design, name="alice's")
    assert [d["name"] for d in alice_api.get("/api/v1/designer/drafts/").json()["results"]] == ["alice's"]
    assert {d["name"] for d in root_api.get("/api/v1/designer/drafts/").json()["results"]} == {
        "root's",
        "alice's",
    }
    url = f"/api/v1/designer/drafts/{root_draft['id']}/"
    assert alice_api.get(url).status_code == 404
    assert alice_api.patch(url, {"name": "mine"}, format="json").status_code == 404
    assert alice_api.put(url, {"name": "mine", "design": design}, format="json").status_code == 404
    assert alice_api.delete(url).status_code == 404
    assert _deploy(alice_api, root_draft["id"]).status_code == 404
    assert StreamDraft.objects.get(pk=root_draft["id"]).name == "root's" and not Stream.objects.exists()
    # staff see and change anyone's draft
    r = root_api.patch(f"/api/v1/designer/drafts/{alice_draft['id']}/", {"name": "by root"}, format="json")
    assert r.status_code == 200 and r.json()["owner"] == "alice"


# ---------------------------------------------------------------------- deploy, redeploy, versions


def test_deploy_creates_a_registered_stream_and_version_1(air, alice_api, alice) -> None:
    design = _compile(alice_api, EPISODES)["design"]
    draft = _draft(alice_api, design)
    r = _deploy(alice_api, draft["id"])
    assert r.status_code == 200, r.content
    body = r.json()
    s = Stream.objects.get()
    assert body["stream"]["id"] == s.pk and body["stream"]["name"] == "episodes"
    assert (s.owner, s.status, s.desired_state, s.syntax) == (alice, "starting", "running", "3.3.7")
    assert body["stream"]["target"] == "air.episodes"
    assert DjangoStreamRegistry().get("episodes", "air") is not None  # SHOW STREAMS lists it
    assert air.catalog.table("air", "episodes") is not None  # its output supertable exists
    v = body["version"]
    assert v["number"] == 1 and v["created_by"] == "alice" and v["stream_id"] == s.pk
    assert v["sql"] == s.sql and v["design"]["nodes"] == design["nodes"]
    assert body["impact"]["kind"] in ("none", "reset", "recalculate", "notify_only")
    assert StreamDraft.objects.get(pk=draft["id"]).stream_id == s.pk
    versions = alice_api.get(f"/api/v1/streams/{s.pk}/versions/").json()
    assert versions["count"] == 1 and versions["results"][0]["number"] == 1


def test_deploy_refuses_an_invalid_design_with_the_node(air, root_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    design["nodes"]["source"]["table"] = "nosuch"
    r = _deploy(root_api, _draft(root_api, design)["id"])
    assert r.status_code == 400
    assert (r.json()["node"], r.json()["field"]) == ("source", "table")
    assert r.json()["issues"] and not Stream.objects.exists()


def test_redeploy_needs_confirmation_then_bumps_the_version(air, root_api, alice_api) -> None:
    design = _compile(root_api, EPISODES)["design"]
    first = _deploy(root_api, _draft(root_api, design)["id"]).json()
    sid = first["stream"]["id"]
    old = Stream.objects.get(pk=sid)
    # edit: a draft from the stream's current design
    r = root_api.post(f"/api/v1/streams/{sid}/edit/")
    assert r.status_code == 201, r.content
    draft = r.json()
    assert draft["stream_id"] == sid and draft["design"]["nodes"] == design["nodes"]
    assert alice_api.post(f"/api/v1/streams/{sid}/edit/").status_code == 404
    # unchanged: nothing to deploy
    same = _deploy(root_api, draft["id"])
    assert same.status_code == 200 and same.json()["version"]["number"] == 1
    assert same.json()["stream"]["id"] == sid
    # a changed trigger needs confirmation
    changed = {**draft["design"], "nodes": {**draft["design"]["nodes"]}}
    changed["nodes"]["trigger"] = {**changed["nodes"]["trigger"], "start": "pm25 > 200"}
    r = root_api.patch(f"/api/v1/designer/drafts/{draft['id']}/", {"design": changed}, format="json")
    assert r.status_code == 200
    r = _deploy(root_api, draft["id"])
    assert r.status_code == 409, r.content
    assert r.json()["impact"]["kind"] in ("reset", "recalculate")
    old.refresh_from_db()
    assert old.status == "starting" and StreamVersion.objects.count() == 1
    # confirmed: DROP + CREATE, version 2
    r = _deploy(root_api, draft["id"], confirm_impact=True)
    assert r.status_code == 200, r.content
    body = r.json()
    old.refresh_from_db()
    new = Stream.objects.get(pk=body["stream"]["id"])
    assert old.status == "dropped" and new.pk != sid and new.status == "starting"
    assert "pm25 > 200" in new.sql and body["version"]["number"] == 2
    assert body["impact"] == r.json()["version"]["impact"]
    assert StreamDraft.objects.get(pk=draft["id"]).stream_id == new.pk
    versions = root_api.get(f"/api/v1/streams/{new.pk}/versions/").json()
    assert [v["number"] for v in versions["results"]] == [2, 1]
    assert versions["results"][1]["stream_id"] == sid
    # the diff shows the change
    r = root_api.get(f"/api/v1/streams/{new.pk}/versions/diff/?from=1&to=2")
    assert r.status_code == 200, r.content
    diff = r.json()
    assert diff["from"] == 1 and diff["to"] == 2
    assert any(line.startswith("-") and "pm25 > 150" in line for line in diff["sql_diff"].splitlines())
    assert any(line.startswith("+") and "pm25 > 200" in line for line in diff["sql_diff"].splitlines())
    assert {"node": "trigger", "field": "start", "old": "pm25 > 150", "new": "pm25 > 200"} in diff["changes"]
    assert diff["impact"]["kind"] in ("reset", "recalculate")
    assert root_api.get(f"/api/v1/streams/{new.pk}/versions/diff/").json()["to"] == 2  # defaults
    assert root_api.get(f"/api/v1/streams/{new.pk}/versions/diff/?from=7").status_code == 404
    assert root_api.get(f"/api/v1/streams/{new.pk}/versions/diff/?from=x").status_code == 400


def test_redeploy_rolls_back_when_create_fails(air, admin) -> None:
    sql_execute(sql=EPISODES, user=admin)
    sql_execute(sql=LEGACY, user=admin)
    old = Stream.objects.get(name="episodes")
    ck = Path(checkpoint_location(str(air.root), old.key))
    ck.mkdir(parents=True)
    (ck / "offsets").write_text("0")
    # the new statement writes into pm25_daily's output table: CREATE STREAM refuses it
    bad = EPISODES.replace("INTO air.episodes", "INTO air.pm25_daily")
    with pytest.raises(TdError) as e:
        stream_redeploy(stream=old, sql=bad, user=admin)
    assert e.value.code == Code.STREAM_OUTPUT_CONFLICT
    old.refresh_from_db()
    assert old.status == "starting" and old.desired_state == "running" and old.sql == EPISODES
    assert Path(ck / "offsets").read_text() == "0"  # its checkpoint is kept
    assert Stream.objects.filter(name="episodes").count() == 1
    assert DjangoStreamRegistry().get("episodes", "air") is not None
    assert StreamVersion.objects.filter(name_key=old.name_key).count() == 1


def test_streams_created_by_sql_get_version_1(air, root_api, admin) -> None:
    r = root_api.post("/api/v1/streams/", {"sql": LEGACY}, format="json")
    assert r.status_code == 201
    v = StreamVersion.objects.get(stream_id=r.json()["id"])
    assert (v.number, v.sql, v.created_by) == (1, LEGACY, admin)
    # the executor behind /rest/sql, the SQL editor, tdsql and the demo
    sql_execute(sql=EPISODES, user=admin)
    s = Stream.objects.get(name="episodes")
    body = root_api.get(f"/api/v1/streams/{s.pk}/versions/").json()
    assert body["count"] == 1
    [v1] = body["results"]
    assert v1["number"] == 1 and v1["sql"] == EPISODES and v1["created_by"] == "root"
    assert v1["design"]["nodes"]["trigger"]["type"] == "event"  # computed from the SQL


def test_versions_visibility(air, root_api, alice_api) -> None:
    root_stream = root_api.post("/api/v1/streams/", {"sql": LEGACY}, format="json").json()
    alice_stream = alice_api.post("/api/v1/streams/", {"sql": EPISODES}, format="json").json()
    for path in ("versions/", "versions/diff/"):
        assert alice_api.get(f"/api/v1/streams/{root_stream['id']}/{path}").status_code == 404
        assert root_api.get(f"/api/v1/streams/{alice_stream['id']}/{path}").status_code == 200


@pytest.mark.parametrize(
    "design",
    [
        {},
        {"nodes": "x"},
        {"schema_version": 1, "name": "s", "nodes": {"trigger": 5}},
        {"nodes": {"trigger": {}}},
    ],
)
def test_validate_a_malformed_design_reports_issues(air, root_api, design) -> None:
    body = _validate(root_api, design)
    assert body["valid"] is False and body["issues"], body
    assert all(set(i) == {"node", "field", "message", "position"} for i in body["issues"])
    r = root_api.post("/api/v1/designer/preview/", {"design": design}, format="json")
    assert r.status_code == 400 and r.json()["issues"]
    r = _deploy(root_api, _draft(root_api, design)["id"])
    assert r.status_code == 400 and r.json()["issues"] and not Stream.objects.exists()


# ---------------------------------------------------------------------- the newcomer's path (issue 16)

HOUR_MS = 3_600_000


def _newcomer(**nodes: object) -> dict:
    """A design from an empty canvas with only what a user must fill: the name, the trigger table
    (picked from the catalog, which sets its database), the window, the computation (the node's
    starting query) and the output table; every other field as the designer leaves it (null)."""
    design = {
        "schema_version": 1,
        "name": "newcomer",
        "db": None,
        "syntax": "3.3.7",
        "if_not_exists": True,
        "nodes": {
            "source": {"db": "air", "table": "quality", "partition_by": []},
            "trigger": {
                "type": "interval",
                "interval": "1h",
                "offset": None,
                "sliding": None,
                "sliding_offset": None,
            },
            "computation": {"query": "SELECT _twstart AS wstart, count(*) AS n FROM %%trows"},
            "output": {"db": None, "table": "newcomer_out", "subtable": None, "columns": [], "tags": []},
        },
        "layout": {},
    }
    design["nodes"].update(nodes)  # type: ignore[union-attr]
    return design


@pytest.mark.parametrize(
    ("stream_db", "source_db"), [(None, "air"), ("air", None)], ids=["table-picked", "stream-database"]
)
def test_newcomer_design_validates_previews_and_deploys(air, root_api, stream_db, source_db) -> None:
    design = _newcomer()
    design["db"] = stream_db
    design["nodes"]["source"]["db"] = source_db
    body = _validate(root_api, design)
    assert body["issues"] == [] and body["valid"], body["issues"]
    # SLIDING not written is the interval (seed 002 writes SLIDING always)
    assert "INTERVAL(1h) SLIDING(1h)" in body["sql"]["3.3.7"]
    r = root_api.post("/api/v1/designer/preview/", {"design": design}, format="json")
    assert r.status_code == 200, r.content
    preview = r.json()
    # a blank start is 30 days before the last row (the fixture's rows: DAY_MS + 0..5 h)
    last_row = DAY_MS + (len(PM25) - 1) * HOUR_MS
    assert preview["range"]["start"] == last_row - 30 * 86_400_000
    assert preview["input_rows"] == len(PM25)
    r = _deploy(root_api, _draft(root_api, design)["id"])
    assert r.status_code == 200, r.content
    assert air.catalog.table("air", "newcomer_out") is not None


def test_default_options_validate_with_every_trigger(air, root_api) -> None:
    """The options node as the designer adds it (empty: every option at the seed's default) with
    each 3.3.7 trigger type of the demo: no issue beyond the trigger's own required fields."""
    triggers = {
        "interval": {"interval": "1h"},
        "sliding": {"sliding": "1h"},
        "period": {"period": "1h"},
        "session": {"ts_column": "ts", "gap": "3h"},
        "state": {"expr": "wd"},
        "event": {"start": "pm25 > 150", "end": "pm25 <= 75"},
        "count": {"count": 3},
    }
    for kind, fields in triggers.items():
        design = _newcomer(trigger={"type": kind, **fields}, options={})
        # the designer's starting query per trigger (graph.ts defaultQuery): the trigger's time
        # placeholder (seed 002 Placeholders)
        ts = {"sliding": "_tcurrent_ts AS ts", "period": "_tlocaltime AS ts"}.get(kind, "_twstart AS wstart")
        design["nodes"]["computation"]["query"] = f"SELECT {ts}, count(*) AS n FROM %%trows"
        design["nodes"]["source"]["partition_by"] = [{"sql": "tbname", "alias": None}]
        body = _validate(root_api, design)
        assert body["issues"] == [], (kind, body["issues"])


def test_every_issue_carries_its_node_and_field(air, root_api) -> None:
    cases = {
        "no database": (
            _newcomer(source={"db": None, "table": "quality", "partition_by": []}),
            ("source", "db"),
        ),
        "unknown table": (
            _newcomer(source={"db": "air", "table": "nosuch", "partition_by": []}),
            ("source", "table"),
        ),
        "unknown column": (
            _newcomer(computation={"query": "SELECT _twstart, max(pm99) FROM %%trows"}),
            ("computation", "query"),
        ),
        "option the trigger has not": (
            _newcomer(trigger={"type": "state", "expr": "wd"}, options={"ignore_nodata_trigger": True}),
            ("options", "ignore_nodata_trigger"),
        ),
        "sliding trigger without sliding": (_newcomer(trigger={"type": "sliding"}), ("trigger", "sliding")),
        "bad duration": (_newcomer(trigger={"type": "interval", "interval": "1x"}), ("trigger", "interval")),
        "no stream name": ({**_newcomer(), "name": ""}, (None, "name")),
        "output into its source": (
            _newcomer(output={"db": "air", "table": "quality", "columns": [], "tags": []}),
            ("output", None),  # its db.table
        ),
    }
    for label, (design, where) in cases.items():
        issues = _validate(root_api, design)["issues"]
        assert issues, label
        for i in issues:
            assert i["field"], (label, i)
            assert i["node"] is not None or i["field"] in ("name", "db", "syntax"), (label, i)
        placed = [(i["node"], i["field"] if where[1] else None) for i in issues]
        assert where in placed, (label, issues)


# seed 002 "Stream Processing Control Options", "Watermark", "Out-of-Order Data", "Data
# Deletions", transcribed: option -> the 3.3.7 trigger types it does not apply to
SEED_002_NOT_FOR = {
    "watermark": {"period"},
    "fill_history": {"period"},
    "fill_history_first": {"period"},
    "fill_history_start": {"period"},
    "max_delay": {"period", "sliding"},
    "event_type": {"period", "sliding"},
    "ignore_disorder": {"period", "sliding", "count"},
    "delete_recalc": {"period", "sliding", "count"},
    "ignore_nodata_trigger": {"session", "state", "event", "count"},
}
SEED_002_OPTIONS = {
    "watermark", "expired_time", "ignore_disorder", "delete_recalc", "delete_output_table", "fill_history",
    "fill_history_first", "fill_history_start", "calc_notify_only", "low_latency_calc", "force_output",
    "max_delay", "event_type", "ignore_nodata_trigger",
}  # fmt: skip


OPTION_VALUES = {
    "watermark": "10s",
    "max_delay": "5s",
    "event_type": ["WINDOW_OPEN"],
    "fill_history_start": "'2017-01-01 00:00:00'",
}


def test_catalog_offers_the_options_the_seed_allows(air, root_api) -> None:
    offered = root_api.get("/api/v1/designer/catalog/").json()["options"]
    for kind in ("interval", "sliding", "period", "session", "state", "event", "count"):
        expected = {k for k in SEED_002_OPTIONS if kind not in SEED_002_NOT_FOR.get(k, set())}
        assert set(offered["3.3.7"][kind]) == expected, kind
        for key in SEED_002_OPTIONS - expected:  # set anyway: refused on that option
            options = {key: OPTION_VALUES.get(key, True)}
            if key == "fill_history_start":
                options["fill_history"] = True
            issues = _validate(root_api, _newcomer(trigger={"type": kind}, options=options))["issues"]
            assert ("options", key) in [(i["node"], i["field"]) for i in issues], (kind, key)
    assert (
        "trigger_mode" in offered["legacy"]["interval"]
        and "ignore_disorder" not in offered["legacy"]["interval"]
    )


@pytest.mark.parametrize(
    ("fill_history", "notify_history"), [(False, False), (True, False), (True, True)], ids=str
)
def test_preview_says_what_deploying_notifies(air, root_api, fill_history, notify_history) -> None:
    notify = {"urls": ["ws://127.0.0.1:18240/n"], "events": ["WINDOW_CLOSE"], "where": None,
              "history": notify_history or None, "on_failure": None}  # fmt: skip
    design = _newcomer(notify=notify, options={"fill_history": fill_history})
    r = root_api.post(
        "/api/v1/designer/preview/",
        {"design": design, "start": DAY_MS, "end": DAY_MS + 86_400_000},
        format="json",
    )
    assert r.status_code == 200, r.content
    body = r.json()
    # six hourly rows, INTERVAL(1h): a row closes the window before it, the last stays open
    live = len(PM25) - 1
    assert body["notification_count"] == live and body["output_rows"] == live
    deploy = body["deploy"]
    assert deploy["output_rows"] == (live if fill_history else 0)
    assert deploy["notifications"] == (live if fill_history and notify_history else 0)
    if not fill_history:
        assert any("FILL_HISTORY is off" in n for n in deploy["notes"])
    elif not notify_history:
        assert any("NOTIFY_HISTORY is off" in n and f"{live:,} notifications" in n for n in deploy["notes"])
    else:
        assert deploy["notes"] == []


def test_too_many_empty_windows_is_placed_on_ignore_nodata_trigger(air, root_api) -> None:
    """INTERVAL(1a) over five hours of rows: 18,000,000 windows without rows would fire (seed 002:
    an INTERVAL trigger fires for periods without rows unless IGNORE_NODATA_TRIGGER); the refusal
    sits on the option that avoids it, not on the statement."""
    design = _newcomer(trigger={"type": "interval", "interval": "1a"})
    body = {"design": design, "start": DAY_MS, "end": DAY_MS + 86_400_000}
    r = root_api.post("/api/v1/designer/preview/", body, format="json")
    assert r.status_code == 400, r.content
    assert (r.json()["node"], r.json()["field"]) == ("options", "ignore_nodata_trigger")
    assert "IGNORE_NODATA_TRIGGER" in r.json()["desc"]
    design["nodes"]["options"] = {"ignore_nodata_trigger": True}  # only windows with rows
    r = root_api.post("/api/v1/designer/preview/", body, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["window_count"] == len(PM25)
