"""``POST /influxdb/v1/write``: TDengine's schemaless InfluxDB line protocol through taosAdapter's
endpoint (docs/schemaless.md).

Expected subtable names are computed here from TDengine's rule (manual, "Schema-less Write Handling
Rules": ``t_`` + md5 of ``measurement,k1=v1,...`` with the tags sorted by key) with ``hashlib``,
not by the code under test; expected types from the manual's suffix table and its example
``st,t1=3,t2=4,t3=t3 c1=3i64,c3="passit",c2=false,c4=4f64 1626006833639000000``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import requests
from django.contrib.auth import get_user_model

from spark_workers.errors import Code
from tests.web.conftest import basic, root_sql

pytestmark = pytest.mark.django_db(transaction=True)

T0 = 1_700_000_000_000_000_000  # 2023-11-14 22:13:20 UTC in ns (inside the default KEEP)


def md5_name(measurement: str, tags: dict[str, str]) -> str:
    text = measurement + "".join(f",{k}={tags[k]}" for k in sorted(tags, key=str.lower))
    return "t_" + hashlib.md5(text.encode()).hexdigest()


def post(client: Any, body: str, query: str = "db=sml", auth: str | None = None) -> tuple[int, Any]:
    r = client.post(
        f"/influxdb/v1/write?{query}",
        data=body.encode(),
        content_type="text/plain",
        HTTP_AUTHORIZATION=auth if auth is not None else basic(),
    )
    return r.status_code, (json.loads(r.content) if r.content else None)


@pytest.fixture
def sml(admin, lake):  # type: ignore[no-untyped-def]
    root_sql("CREATE DATABASE sml PRECISION 'ns'")
    return lake


def q(sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in root_sql(sql).rows]


def describe(table: str) -> dict[str, tuple[str, int, str]]:
    rows = root_sql(f"DESCRIBE sml.`{table}`").rows
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_manual_example_maps_types_tags_and_child_name(client, sml) -> None:
    line = 'st,t1=3,t2=4,t3=t3 c1=3i64,c3="passit",c2=false,c4=4f64 1626006833639000000'
    status, body = post(client, line)
    assert (status, body) == (204, None)
    d = describe("st")
    # the manual: _ts timestamp, c1 bigint, c3 binary, c2 bool, c4 double; tags nchar
    assert {k: v[0] for k, v in d.items()} == {
        "_ts": "TIMESTAMP",
        "c1": "BIGINT",
        "c3": "VARCHAR",
        "c2": "BOOL",
        "c4": "DOUBLE",
        "t1": "NCHAR",
        "t2": "NCHAR",
        "t3": "NCHAR",
    }
    assert all(d[t][2] == "TAG" for t in ("t1", "t2", "t3"))
    # lengths: TDengine's smlFindNearestPowerOf2 (6 bytes -> 8; 1 -> 2; 2 -> 4)
    assert d["c3"][1] == 8 and d["t1"][1] == 2 and d["t3"][1] == 4
    child = md5_name("st", {"t1": "3", "t2": "4", "t3": "t3"})
    rows = q("SELECT tbname, cast(_ts as bigint), c1, c2, c3, c4, t1, t3 FROM sml.st")
    assert len(rows) == 1
    tb, ts, c1, c2, c3, c4, t1, t3 = rows[0]
    assert tb == child and ts == 1626006833639000000
    assert (c1, c2, c3, c4, t1, t3) == (3, False, "passit", 4.0, "3", "t3")


def test_tag_order_does_not_change_the_child_table(client, sml) -> None:
    body = f"m,b=2,A=1 v=1 {T0}\nm,A=1,b=2 v=2 {T0 + 1}\nm,A=1,b=3 v=3 {T0 + 2}"
    assert post(client, body)[0] == 204
    rows = q("SELECT tbname, count(*) FROM sml.m GROUP BY tbname ORDER BY tbname")
    expected = {md5_name("m", {"A": "1", "b": "2"}): 2, md5_name("m", {"A": "1", "b": "3"}): 1}
    assert dict((r[0], r[1]) for r in rows) == expected


def test_new_field_adds_a_column_and_longer_string_widens_it(client, sml) -> None:
    assert post(client, f'w,d=a c1=1i,s="pass" {T0}')[0] == 204
    assert describe("w")["s"][1] == 8
    assert post(client, f'w,d=a c1=2i,s="passit-longer",c6=L"ñ" {T0 + 1}')[0] == 204
    d = describe("w")
    assert d["s"][1] == 16  # 13 bytes -> 16
    assert d["c6"][0] == "NCHAR"
    rows = q("SELECT _ts, c1, s, c6 FROM sml.w ORDER BY _ts")
    assert [r[1:] for r in rows] == [(1, "pass", None), (2, "passit-longer", "ñ")]


def test_precision_parameter_converts_to_the_database_precision(client, admin, lake) -> None:
    root_sql("CREATE DATABASE sml PRECISION 'ms'")
    assert post(client, "p v=1 1700000000", "db=sml&precision=s")[0] == 204
    assert post(client, "p v=2 28333334", "db=sml&precision=m")[0] == 204
    rows = q("SELECT cast(_ts as bigint), v FROM sml.p ORDER BY _ts")
    assert rows == [(1_700_000_000_000, 1.0), (28_333_334 * 60_000, 2.0)]
    status, body = post(client, "p v=3 1", "db=sml&precision=fortnight")
    assert status == 500 and body["message"].startswith(f"[0x{Code.SML_INVALID_PRECISION_TYPE:x}]")


def test_a_bad_line_writes_nothing(client, sml) -> None:
    assert post(client, f"a,t=x v=1 {T0}")[0] == 204
    body = f"a,t=x v=2 {T0 + 1}\nb,t=y v=1 {T0}\na,t=x v=oops {T0 + 2}"
    status, answer = post(client, body)
    assert status == 500 and answer["code"] == "internal error"
    assert answer["message"].startswith(f"[0x{Code.SML_INVALID_DATA:x}]") and "line 3" in answer["message"]
    assert q("SELECT count(*) FROM sml.a") == [(1,)]
    assert [r[0] for r in q("SHOW sml.STABLES")] == ["a"]  # b was not created


def test_type_conflicts_are_refused_with_tdengine_codes(client, sml) -> None:
    # in one request: SML_NOT_SAME_TYPE (the manual's "Data Mode Change Handling" example)
    body = "st,t1=3 c1=3i64,c4=4 1626006833639000000\nst,t1=3 c1=3i64,c4=4i 1626006833640000000"
    status, answer = post(client, body)
    assert status == 500 and answer["message"].startswith(f"[0x{Code.SML_NOT_SAME_TYPE:x}]")
    assert post(client, f"st,t1=3 c1=3i64,c4=4 {T0}")[0] == 204
    # against the stored type: TSC_INVALID_VALUE (smlGenerateSchemaAction)
    status, answer = post(client, f"st,t1=3 c4=4i {T0 + 1}")
    assert status == 500 and answer["message"].startswith(f"[0x{Code.TSC_INVALID_VALUE:x}]")
    assert q("SELECT count(*) FROM sml.st") == [(1,)]


def test_missing_timestamp_is_the_server_time(client, sml) -> None:
    import time

    before = time.time_ns()
    assert post(client, "n v=1")[0] == 204
    after = time.time_ns()
    (ts,) = q("SELECT cast(_ts as bigint) FROM sml.n")[0]
    assert before <= ts <= after


def test_no_tags_gets_the_null_tag(client, sml) -> None:
    assert post(client, f"bare v=1 {T0}")[0] == 204
    d = describe("bare")
    assert d["_tag_null"][2] == "TAG"
    rows = q("SELECT tbname FROM sml.bare")
    assert rows == [("t_" + hashlib.md5(b"bare,_tag_null=").hexdigest(),)]


def test_db_required_and_missing_db(client, sml) -> None:
    status, body = post(client, "x v=1", query="")
    assert status == 400 and body["message"] == "db required"
    status, body = post(client, "x v=1", query="db=nope")
    assert status == 500 and body["message"].startswith(f"[0x{Code.DB_NOT_EXIST:x}]")


def test_unsupported_parameters_are_refused(client, sml) -> None:
    for q in ("db=sml&ttl=3", "db=sml&table_name_key=host", "db=sml&rp=autogen"):
        status, body = post(client, "x v=1", query=q)
        assert status == 400 and q.split("&")[1].split("=")[0] in body["message"]


def test_authentication_basic_and_query_parameters(client, sml) -> None:
    assert post(client, f"q v=1 {T0}", query="db=sml&u=root&p=taosdata", auth="")[0] == 204
    for query, auth in (
        ("db=sml", ""),
        ("db=sml", basic("root", "wrong")),
        ("db=sml&u=root&p=wrong", ""),
        ("db=sml&u=root&p=wrong", basic()),  # u/p win over the header, as taosAdapter's getAuth
    ):
        status, body = post(client, f"q v=2 {T0 + 1}", query=query, auth=auth)
        assert status == 401 and body["code"] == "forbidden", (query, auth)
    assert q("SELECT count(*) FROM sml.q") == [(1,)]


def test_user_without_write_is_refused_and_nothing_is_written(client, sml) -> None:
    from streams_app.models import Privilege

    get_user_model().objects.create_user("reader", password="reader-pw")
    user = get_user_model().objects.get(username="reader")
    Privilege.objects.create(user=user, db="sml", read=True, write=False)
    status, body = post(client, f"r v=1 {T0}", auth=basic("reader", "reader-pw"))
    assert status == 500 and body["message"].startswith(f"[0x{Code.PERMISSION_DENIED:x}]")
    assert q("SHOW sml.STABLES") == []  # nothing created either
    assert post(client, f"r v=1 {T0}")[0] == 204  # root creates it
    status, body = post(client, f"r v=2 {T0 + 1}", auth=basic("reader", "reader-pw"))
    assert status == 500 and body["message"].startswith(f"[0x{Code.PERMISSION_DENIED:x}]")
    assert q("SELECT count(*) FROM sml.r") == [(1,)]
    Privilege.objects.filter(user=user).update(write=True)
    assert post(client, f"r v=3 {T0 + 2}", auth=basic("reader", "reader-pw"))[0] == 204
    assert q("SELECT count(*) FROM sml.r") == [(2,)]


def test_requests_client_over_http(live_server, sml) -> None:
    """A collector's request as Telegraf's ``influxdb`` output sends it: plain HTTP POST."""
    lines = "\n".join(
        f"cpu,host=h{i % 3},region=eu usage_idle={i}.5,busy={i}i {1_700_000_000_000 + i}" for i in range(30)
    )
    r = requests.post(
        f"{live_server.url}/influxdb/v1/write",
        params={"db": "sml", "precision": "ms", "u": "root", "p": "taosdata"},
        data=lines.encode(),
        timeout=30,
    )
    assert r.status_code == 204 and r.content == b""
    rows = q("SELECT tbname, count(*), sum(busy) FROM sml.cpu GROUP BY tbname")
    expected = {
        md5_name("cpu", {"host": f"h{h}", "region": "eu"}): (10, sum(i for i in range(30) if i % 3 == h))
        for h in range(3)
    }
    assert {r[0]: (r[1], r[2]) for r in rows} == expected


def test_gzip_bodies_are_inflated_and_bombs_refused(client, sml, settings) -> None:
    import gzip

    r = client.post(
        "/influxdb/v1/write?db=sml",
        data=gzip.compress(f"z,h=a v=1 {T0}\nz,h=b v=2 {T0}".encode()),
        content_type="text/plain",
        HTTP_CONTENT_ENCODING="gzip",
        HTTP_AUTHORIZATION=basic(),
    )
    assert r.status_code == 204
    assert q("SELECT count(*) FROM sml.z") == [(2,)]
    settings.TDWEB_INFLUX_MAX_BYTES = 1000
    bomb = gzip.compress(b"z,h=a v=1\n" * 10_000)  # 100 kB inflated, ~200 bytes sent
    r = client.post(
        "/influxdb/v1/write?db=sml",
        data=bomb,
        content_type="text/plain",
        HTTP_CONTENT_ENCODING="gzip",
        HTTP_AUTHORIZATION=basic(),
    )
    assert r.status_code == 413
    r = client.post(
        "/influxdb/v1/write?db=sml",
        data=b"not gzip",
        content_type="text/plain",
        HTTP_CONTENT_ENCODING="gzip",
        HTTP_AUTHORIZATION=basic(),
    )
    assert r.status_code == 400
    assert q("SELECT count(*) FROM sml.z") == [(2,)]


def test_new_and_longer_tags_alter_the_supertable(client, sml) -> None:
    assert post(client, f"g,host=a v=1 {T0}")[0] == 204
    assert describe("g")["host"][:1] == ("NCHAR",) and describe("g")["host"][1] == 2
    assert post(client, f"g,host=abcdefghij,rack=r1 v=2 {T0 + 1}")[0] == 204
    d = describe("g")
    assert d["host"][1] == 16 and d["rack"] == ("NCHAR", 4, "TAG")  # 10 bytes -> 16, 2 -> 4
    rows = q("SELECT tbname, host, rack, v FROM sml.g ORDER BY _ts")
    assert rows == [
        (md5_name("g", {"host": "a"}), "a", None, 1.0),
        (md5_name("g", {"host": "abcdefghij", "rack": "r1"}), "abcdefghij", "r1", 2.0),
    ]


def test_a_supertable_made_by_sql_is_written_by_its_own_timestamp_and_types(client, sml) -> None:
    root_sql(
        "CREATE STABLE sml.meters (ts TIMESTAMP, current FLOAT, voltage INT) "
        "TAGS (location NCHAR(64), gid INT)"
    )
    line = f"meters,location=SF current=10.5f32,voltage=219i32 {T0}"
    assert post(client, line)[0] == 204
    assert q("SELECT cast(ts as bigint), current, voltage, location, gid FROM sml.meters") == [
        (T0, 10.5, 219, "SF", None)
    ]
    # a field whose suffix gives another type, or an INT tag written as NCHAR: TSC_INVALID_VALUE
    for bad in (
        f"meters,location=SF current=10.5 {T0 + 1}",
        f"meters,location=SF,gid=3 voltage=1i32 {T0 + 1}",
    ):
        status, body = post(client, bad)
        assert status == 500 and body["message"].startswith(f"[0x{Code.TSC_INVALID_VALUE:x}]"), body
    assert q("SELECT count(*) FROM sml.meters") == [(1,)]
