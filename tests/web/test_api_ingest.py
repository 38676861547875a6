"""Row ingestion ``POST /api/v1/databases/{db}/tables/{name}/rows/`` (JSON and CSV) and import jobs
``/api/v1/imports/`` (streams_app.api.tables, streams_app.services.ingest): values checked like
INSERT, nothing written for bad input, supertables through ``tbname``, the real dataset, visibility
of jobs."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from streams_app.models import ImportJob
from streams_app.services import demo, ingest
from streams_app.services.sql import sql_execute
from tests.web.conftest import root_sql

pytestmark = pytest.mark.django_db

ROWS = "/api/v1/databases/{db}/tables/{t}/rows/"


def _count(sql: str) -> int:
    return int(root_sql(sql).rows[0][0])


def _rows(api: APIClient, db: str, t: str, **q: object) -> dict:
    r = api.get(ROWS.format(db=db, t=t), q)
    assert r.status_code == 200, r.content
    return r.json()


def _csv(text: str, name: str = "rows.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


# ---------------------------------------------------------------------- JSON


def test_json_rows_objects_into_a_subtable(power, alice_api, alice) -> None:
    body = {
        "rows": [
            {"ts": "2024-01-02 00:00:00", "current": 1.5, "voltage": 200, "phase": 0.25},
            {"ts": 1704153605000, "current": "2.5", "voltage": "201"},  # epoch ms; phase missing: NULL
        ]
    }
    r = alice_api.post(ROWS.format(db="power", t="d1001"), body, format="json")
    assert r.status_code == 201, r.content
    job = r.json()
    assert (
        job["state"] == "done" and job["rows_total"] == 2 and job["rows_done"] == 2 and job["fraction"] == 1.0
    )
    assert (job["db"], job["table"], job["filename"], job["error"]) == ("power", "d1001", "", "")
    assert ImportJob.objects.get(pk=job["id"]).owner == alice
    got = _rows(alice_api, "power", "d1001", start="2024-01-02 00:00:00")
    assert got["rows"] == [
        ["2024-01-02T00:00:00.000Z", 1.5, 200, 0.25, "California.SanFrancisco", 2],
        ["2024-01-02T00:00:05.000Z", 2.5, 201, None, "California.SanFrancisco", 2],
    ]


def test_json_columns_and_data_into_a_normal_table(power, root_api) -> None:
    root_sql("CREATE TABLE power.log (ts TIMESTAMP, msg VARCHAR(10), ok BOOL, n BIGINT)")
    body = {
        "columns": ["ts", "msg", "ok", "n"],
        "data": [
            ["2024-01-01T00:00:00Z", "hello", True, 1],
            ["2024-01-01T08:00:01+08:00", None, "false", -2],
        ],
    }
    r = root_api.post(ROWS.format(db="power", t="log"), body, format="json")
    assert r.status_code == 201, r.content
    assert _rows(root_api, "power", "log")["rows"] == [
        ["2024-01-01T00:00:00.000Z", "hello", True, 1],
        ["2024-01-01T00:00:01.000Z", None, False, -2],
    ]


def test_same_key_overwrites_like_insert(power, root_api) -> None:
    body = {"columns": ["ts", "voltage"], "data": [["2024-01-01 00:00:00", 1], ["2024-01-01 00:00:00", 2]]}
    assert root_api.post(ROWS.format(db="power", t="d1001"), body, format="json").status_code == 201
    rows = _rows(root_api, "power", "d1001", start="2024-01-01 00:00:00", end="2024-01-01 00:00:00")["rows"]
    assert [(r[0], r[1], r[2]) for r in rows] == [("2024-01-01T00:00:00.000Z", None, 2)]  # last one wins
    assert _count("SELECT count(*) FROM power.d1001") == 3


@pytest.mark.parametrize(
    ("body", "status", "fragment", "row", "column"),
    [
        (
            {"columns": ["ts", "current"], "data": [["2024-02-01", 1.0], ["2024-02-02", "abc"]]},
            400,
            "row 2, column current: 'abc' is not a FLOAT",
            2,
            "current",
        ),
        (
            {"rows": [{"ts": "2024-02-01", "voltage": 1}, {"ts": "2024-02-02", "voltage": 99999999999}]},
            400,
            "row 2, column voltage: value 99999999999 is out of range for column voltage INT",
            2,
            "voltage",
        ),
        (
            {"rows": [{"ts": "yesterday", "voltage": 1}]},
            400,
            "row 1, column ts: 'yesterday' is not a TIMESTAMP",
            1,
            "ts",
        ),
        (
            {"rows": [{"ts": None, "voltage": 1}]},
            400,
            "row 1, column ts: the timestamp cannot be NULL",
            1,
            "ts",
        ),
        ({"rows": [{"voltage": 1}]}, 400, "the timestamp column ts must be given", None, "ts"),
        (
            {"rows": [{"ts": "2024-02-01", "nope": 1}]},
            400,
            "unknown column nope in power.d1001",
            None,
            "nope",
        ),
        (
            {"rows": [{"ts": "2024-02-01", "tbname": "x"}]},
            400,
            "tbname is only for a supertable",
            None,
            "tbname",
        ),
        (
            {"columns": ["ts", "voltage"], "data": [["2024-02-01"]]},
            400,
            "row 1: 1 values for 2 columns",
            1,
            None,
        ),
        ({"rows": "nope"}, 400, '"rows" must be a list', None, None),
        ({"something": 1}, 400, 'expected {"rows": [...]}', None, None),
    ],
)
def test_bad_json_is_400_naming_row_and_column_and_writes_nothing(
    power, alice_api, body, status, fragment, row, column
) -> None:
    before = _count("SELECT count(*) FROM power.meters")
    r = alice_api.post(ROWS.format(db="power", t="d1001"), body, format="json")
    assert r.status_code == status, r.content
    err = r.json()
    assert fragment in err["desc"], err
    assert err["code"] != 0 and err["row"] == row and err["column"] == column
    assert _count("SELECT count(*) FROM power.meters") == before
    if err["import_id"] is not None:  # the failed job is recorded with its reason
        job = alice_api.get(f"/api/v1/imports/{err['import_id']}/").json()
        assert job["state"] == "failed" and job["error"] == err["desc"] and job["rows_done"] == 0


def test_first_bad_row_is_reported_across_columns(power, root_api) -> None:
    body = {
        "columns": ["ts", "current", "voltage"],
        "data": [["2024-02-01", 1, 1], ["2024-02-02", 1, "x"], ["2024-02-03", "y", 1]],
    }
    err = root_api.post(ROWS.format(db="power", t="d1001"), body, format="json").json()
    assert err["desc"] == "row 2, column voltage: 'x' is not a INT" and err["row"] == 2


def test_unknown_table_is_404_without_a_job(power, root_api) -> None:
    r = root_api.post(ROWS.format(db="power", t="nope"), {"rows": [{"ts": 1}]}, format="json")
    assert r.status_code == 404 and "nope" in r.json()["desc"]
    r = root_api.post(ROWS.format(db="nodb", t="x"), {"rows": [{"ts": 1}]}, format="json")
    assert r.status_code == 404
    assert not ImportJob.objects.exists()


# ---------------------------------------------------------------------- supertables


def test_supertable_needs_tbname(power, root_api) -> None:
    r = root_api.post(
        ROWS.format(db="power", t="meters"), {"rows": [{"ts": "2024-02-01", "voltage": 1}]}, format="json"
    )
    assert r.status_code == 400
    assert "meters is a supertable: give each row's subtable in a tbname column" in r.json()["desc"]
    assert "location, groupid" in r.json()["desc"]


def test_supertable_rows_with_tbname_and_tags_create_subtables(power, root_api) -> None:
    body = {
        "columns": ["tbname", "ts", "voltage", "location", "groupid"],
        "data": [
            ["d1001", "2024-02-01 00:00:00", 1, "ignored for an existing subtable", 9],
            ["d2001", "2024-02-01 00:00:00", 2, "Nevada.Reno", 7],
            ["D2001", "2024-02-01 00:00:01", 3, "Nevada.Other", 8],  # same subtable: first row's tags
        ],
    }
    r = root_api.post(ROWS.format(db="power", t="meters"), body, format="json")
    assert r.status_code == 201, r.content
    sub = root_api.get("/api/v1/databases/power/tables/d2001/").json()
    assert sub["kind"] == "sub" and sub["tag_values"] == {"location": "Nevada.Reno", "groupid": 7}
    assert root_api.get("/api/v1/databases/power/tables/d1001/").json()["tag_values"]["groupid"] == 2
    rows = _rows(root_api, "power", "d2001")["rows"]
    assert [(r[0], r[2]) for r in rows] == [("2024-02-01T00:00:00.000Z", 2), ("2024-02-01T00:00:01.000Z", 3)]


def test_supertable_new_subtable_without_tags_is_refused(power, root_api) -> None:
    body = {
        "columns": ["tbname", "ts", "voltage"],
        "data": [["d1001", "2024-02-01", 1], ["d9", "2024-02-01", 1]],
    }
    r = root_api.post(ROWS.format(db="power", t="meters"), body, format="json")
    assert r.status_code == 400
    err = r.json()
    assert err["desc"] == (
        "row 2, column tbname: subtable d9 does not exist; add tag columns (location, groupid) to create it"
    )
    assert root_api.get("/api/v1/databases/power/tables/d9/").status_code == 404
    assert _count("SELECT count(*) FROM power.meters") == 6  # the good row was not written either


def test_supertable_bad_tag_value_names_row_and_tag(power, root_api) -> None:
    body = {"columns": ["tbname", "ts", "groupid"], "data": [["d3", "2024-02-01", "many"]]}
    err = root_api.post(ROWS.format(db="power", t="meters"), body, format="json").json()
    assert err["desc"] == "row 1, column groupid: 'many' is not a INT" and err["column"] == "groupid"
    assert root_api.get("/api/v1/databases/power/tables/d3/").status_code == 404


# ---------------------------------------------------------------------- CSV


def test_csv_upload(power, alice_api) -> None:
    text = (
        "ts,current,voltage,phase\n"
        "2024-03-01 00:00:00,1.5,10,NULL\n"
        "1709251201000,2.5,,0.5\n"
        "\n"
        "2024-03-01T00:00:02Z,NA,12,0.25\n"
    )
    r = alice_api.post(ROWS.format(db="power", t="d1002"), {"file": _csv(text, "d.csv")}, format="multipart")
    assert r.status_code == 201, r.content
    job = r.json()
    assert (job["filename"], job["rows_total"], job["rows_done"], job["state"]) == ("d.csv", 3, 3, "done")
    rows = _rows(alice_api, "power", "d1002", start="2024-03-01")["rows"]
    assert [r[:4] for r in rows] == [
        ["2024-03-01T00:00:00.000Z", 1.5, 10, None],
        ["2024-03-01T00:00:01.000Z", 2.5, None, 0.5],
        ["2024-03-01T00:00:02.000Z", None, 12, 0.25],
    ]


def test_csv_null_values_are_configurable(power, root_api) -> None:
    root_sql("CREATE TABLE power.notes (ts TIMESTAMP, v VARCHAR(8))")
    text = "ts,v\n2024-01-01,NA\n2024-01-02,-\n2024-01-03,\n"
    r = root_api.post(
        ROWS.format(db="power", t="notes"), {"file": _csv(text), "null_values": "-"}, format="multipart"
    )
    assert r.status_code == 201, r.content
    assert [row[1] for row in _rows(root_api, "power", "notes")["rows"]] == ["NA", None, None]


def test_csv_bad_value_is_400_and_writes_nothing(power, alice_api) -> None:
    lines = ["ts,current,voltage"] + [f"2024-04-01 00:00:{i:02d},{i}.5,{i}" for i in range(30)]
    lines[17] = "2024-04-01 00:00:16,abc,16"  # data row 17
    r = alice_api.post(
        ROWS.format(db="power", t="d1001"), {"file": _csv("\n".join(lines))}, format="multipart"
    )
    assert r.status_code == 400
    assert r.json()["desc"] == "row 17, column current: 'abc' is not a FLOAT"
    assert (r.json()["row"], r.json()["column"]) == (17, "current")
    assert _count("SELECT count(*) FROM power.d1001") == 3


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "the file is empty"),
        (b"ts,current\n2024-01-01,1,2\n", "row 1 (line 2): 3 values for 2 columns"),
        (b"ts,current\n2024-01-01,\xff\n", "not UTF-8"),
        (b"ts,ts\n2024-01-01,2024-01-01\n", "column ts is given twice"),
    ],
)
def test_bad_csv_files(power, root_api, content, fragment) -> None:
    f = SimpleUploadedFile("x.csv", content, content_type="text/csv")
    r = root_api.post(ROWS.format(db="power", t="d1001"), {"file": f}, format="multipart")
    assert r.status_code == 400 and fragment in r.json()["desc"], r.json()


def test_multipart_without_a_file_is_400(power, root_api) -> None:
    r = root_api.post(ROWS.format(db="power", t="d1001"), {"other": "x"}, format="multipart")
    assert r.status_code == 400 and 'expected {"rows": [...]}' in r.json()["desc"]


def test_csv_is_written_in_chunks(power, root_api, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "CHUNK_ROWS", 4)
    seen: list[int] = []
    real_write = ingest.lake_get().write

    def spy(db, table, data, **kw):  # type: ignore[no-untyped-def]
        seen.append(data.num_rows)
        job = ImportJob.objects.get()
        assert job.state == "running" and job.rows_total == 10 and job.rows_done == sum(seen[:-1])
        return real_write(db, table, data, **kw)

    monkeypatch.setattr(ingest.lake_get(), "write", spy)
    text = "ts,voltage\n" + "".join(f"2024-05-01 00:00:{i:02d},{i}\n" for i in range(10))
    r = root_api.post(ROWS.format(db="power", t="d1001"), {"file": _csv(text)}, format="multipart")
    assert r.status_code == 201 and r.json()["rows_done"] == 10
    assert seen == [4, 4, 2]


# ---------------------------------------------------------------------- the real dataset


def _station_csv(path: Path, *, iso: bool, with_station: bool) -> tuple[bytes, pd.DataFrame]:
    """A station file of the dataset as a CSV for ``air.quality``: ``ts`` (epoch ms, or ISO with
    the +08:00 offset), the measurement columns named as in the table, ``NA`` kept for gaps."""
    raw = pd.read_csv(path, keep_default_na=False, dtype=str)
    local = pd.to_datetime(raw[["year", "month", "day", "hour"]].astype(int))
    utc = local.dt.tz_localize(demo.LOCAL_TZ).dt.tz_convert("UTC")
    out = pd.DataFrame()
    if with_station:
        out["tbname"] = raw["station"].str.lower()
        out["station"] = raw["station"]
    out["ts"] = (
        local.dt.strftime("%Y-%m-%dT%H:%M:%S+08:00")
        if iso
        else (utc.astype("int64") // 1_000_000).astype(str)
    )
    for col, src in demo.COLUMNS:
        out[col] = raw[src].replace({" ": "", "": "NA"})
    return out.to_csv(index=False).encode(), out


@pytest.fixture
def air(admin, lake):  # type: ignore[no-untyped-def]
    """Database ``air`` with the demo's supertable ``quality`` and subtable ``aotizhongxin``."""
    folder = demo.dataset_dir()
    cols = ", ".join(f"{c} {'VARCHAR(8)' if c == 'wd' else 'DOUBLE'}" for c, _ in demo.COLUMNS)
    sql_execute(sql="CREATE DATABASE air PRECISION 'ms'", user=admin)
    sql_execute(
        sql=f"CREATE STABLE air.quality (ts TIMESTAMP, {cols}) TAGS (station VARCHAR(32))", user=admin
    )
    sql_execute(sql="CREATE TABLE air.aotizhongxin USING air.quality TAGS ('Aotizhongxin')", user=admin)
    return folder


def test_import_of_a_real_station_file(air, root_api) -> None:
    content, frame = _station_csv(
        next(air.glob("PRSA_Data_Aotizhongxin_*.csv.gz")), iso=False, with_station=False
    )
    t0 = time.perf_counter()
    r = root_api.post(
        ROWS.format(db="air", t="aotizhongxin"),
        {"file": SimpleUploadedFile("aotizhongxin.csv", content, content_type="text/csv")},
        format="multipart",
    )
    seconds = time.perf_counter() - t0
    assert r.status_code == 201, r.content
    job = r.json()
    assert job["rows_total"] == job["rows_done"] == len(frame) == 35_064 and job["state"] == "done"
    assert seconds < 20, f"import took {seconds:.1f} s"
    assert _count("SELECT count(*) FROM air.aotizhongxin") == 35_064
    assert _count("SELECT count(pm25) FROM air.aotizhongxin") == int((frame["pm25"] != "NA").sum())
    # the first hour (2013-03-01 00:00 local) read back through the rows endpoint
    first = _rows(root_api, "air", "aotizhongxin", start="2013-02-28T16:00:00Z", end="2013-02-28T16:00:00Z")
    assert first["columns"][:3] == ["ts", "pm25", "pm10"]
    assert first["rows"] == [
        [
            "2013-02-28T16:00:00.000Z",
            4.0,
            4.0,
            4.0,
            7.0,
            300.0,
            77.0,
            -0.7,
            1023.0,
            -18.8,
            0.0,
            "NNW",
            4.4,
            "Aotizhongxin",
        ]
    ]
    last = _rows(root_api, "air", "aotizhongxin", limit=1)["rows"][0]
    assert last[0] == "2017-02-28T15:00:00.000Z"  # 2017-02-28 23:00 local
    tail = frame.iloc[-1]
    assert last[1:13] == [
        None if tail[c] == "NA" else (tail[c] if c == "wd" else float(tail[c])) for c, _ in demo.COLUMNS
    ]


def test_import_of_a_real_gzipped_file_into_the_supertable(air, root_api) -> None:
    """ISO timestamps with an offset, ``tbname`` + tag column: the station's subtable is created."""
    content, frame = _station_csv(next(air.glob("PRSA_Data_Changping_*.csv.gz")), iso=True, with_station=True)
    upload = SimpleUploadedFile("changping.csv.gz", gzip.compress(content), content_type="application/gzip")
    r = root_api.post(ROWS.format(db="air", t="quality"), {"file": upload}, format="multipart")
    assert r.status_code == 201, r.content
    assert r.json()["rows_done"] == len(frame)
    sub = root_api.get("/api/v1/databases/air/tables/changping/").json()
    assert sub["stable"] == "quality" and sub["tag_values"] == {"station": "Changping"}
    assert _count("SELECT count(*) FROM air.changping") == len(frame)
    assert _count("SELECT count(*) FROM air.quality WHERE station = 'Changping'") == len(frame)


# ---------------------------------------------------------------------- import jobs


def test_import_jobs_visibility_pagination_and_filters(power, root_api, alice_api, admin, alice) -> None:
    for api in (alice_api, alice_api, root_api):
        r = api.post(
            ROWS.format(db="power", t="d1001"), {"rows": [{"ts": "2024-06-01", "voltage": 1}]}, format="json"
        )
        assert r.status_code == 201
    bad = alice_api.post(ROWS.format(db="power", t="d1001"), {"rows": [{"ts": "x"}]}, format="json").json()
    mine = alice_api.get("/api/v1/imports/").json()
    assert mine["count"] == 3 and {j["state"] for j in mine["results"]} == {"done", "failed"}
    assert mine["results"][0]["id"] == bad["import_id"]  # newest first
    assert root_api.get("/api/v1/imports/").json()["count"] == 4  # staff see every job
    failed = alice_api.get("/api/v1/imports/?state=failed").json()
    assert [j["id"] for j in failed["results"]] == [bad["import_id"]]
    assert alice_api.get("/api/v1/imports/?state=weird").status_code == 400
    page = alice_api.get("/api/v1/imports/?limit=2&offset=1").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"] is None and page["previous"]
    roots = ImportJob.objects.get(owner=admin)
    assert alice_api.get(f"/api/v1/imports/{roots.pk}/").status_code == 404
    detail = root_api.get(f"/api/v1/imports/{bad['import_id']}/").json()
    assert detail["state"] == "failed" and detail["rows_total"] == 1 and detail["fraction"] == 0.0
    assert ImportJob.objects.filter(owner=alice).count() == 3


def test_rows_into_a_table_with_a_composite_key_keep_every_key_and_refuse_a_null_key(power, root_api) -> None:
    root_sql("CREATE TABLE power.trades (ts TIMESTAMP, id INT PRIMARY KEY, px DOUBLE)")
    body = {
        "columns": ["ts", "id", "px"],
        "data": [
            ["2024-01-01T00:00:00Z", 2, 2.5],
            ["2024-01-01T00:00:00Z", 1, 1.5],
            ["2024-01-01T00:00:00Z", 2, 3],
        ],
    }
    r = root_api.post(ROWS.format(db="power", t="trades"), body, format="json")
    assert r.status_code == 201, r.content
    # one row per (ts, key), the later write of a key wins, in (ts, key) order
    assert _rows(root_api, "power", "trades")["rows"] == [
        ["2024-01-01T00:00:00.000Z", 1, 1.5],
        ["2024-01-01T00:00:00.000Z", 2, 3.0],
    ]
    bad = {"rows": [{"ts": "2024-01-02", "id": 1, "px": 1}, {"ts": "2024-01-02", "id": None, "px": 2}]}
    r = root_api.post(ROWS.format(db="power", t="trades"), bad, format="json")
    assert r.status_code == 400, r.content
    err = r.json()
    assert err["code"] == 0x267B and "composite key cannot be NULL" in err["desc"]
    assert (err["row"], err["column"]) == (2, "id")
    r = root_api.post(
        ROWS.format(db="power", t="trades"), {"rows": [{"ts": "2024-01-02", "px": 1}]}, format="json"
    )
    assert r.status_code == 400 and "composite key column id must be given" in r.json()["desc"]
    assert _count("SELECT count(*) FROM power.trades") == 2
