"""TDengine's REST protocol ``POST /rest/sql[/{db}]`` (streams_app.api.rest_sql).

The happy path runs through the real ``taosrest`` client against a live server; bad input goes
through plain HTTP so the raw JSON answer can be checked. The view runs the SQL in a worker
thread, so these tests use committed (transactional) data.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import taosrest
from django.contrib.auth import get_user_model

from spark_workers.errors import Code
from streams_app.models import Stream
from tests.web.conftest import Rest, basic, position

pytestmark = pytest.mark.django_db(transaction=True)


def _client(url: str, database: str | None = None, password: str = "taosdata") -> taosrest.RestClient:
    return taosrest.RestClient(url, user="root", password=password, database=database, timezone="UTC")


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# ---------------------------------------------------------------------- through taosrest


def test_taosrest_create_insert_select_roundtrip(live_server, admin, lake) -> None:
    c = _client(live_server.url)
    assert c.sql("CREATE DATABASE power PRECISION 'ms'")["code"] == 0
    db = _client(live_server.url, database="power")  # /rest/sql/power: the default database
    db.sql(
        "CREATE STABLE meters (ts TIMESTAMP, current FLOAT, voltage INT, phase FLOAT) "
        "TAGS (location VARCHAR(64), groupid INT)"
    )
    db.sql(
        "CREATE TABLE d1001 USING meters TAGS ('California.SanFrancisco', 2) "
        "d1002 USING meters TAGS ('California.LosAngeles', 3)"
    )
    res = db.sql(
        "INSERT INTO d1001 VALUES ('2024-01-01 00:00:00.123', 10.5, 220, 0.31) "
        "('2024-01-01 00:00:05', 11.0, 221, 0.32) ('2024-01-01 00:00:12', 12.5, 219, 0.33) "
        "d1002 VALUES ('2024-01-01 00:00:01', 20.0, 230, 0.5) ('2024-01-01 00:00:06', 21.0, 231, 0.5) "
        "d1003 USING meters TAGS ('California.SanDiego', 4) VALUES (1704067213000, 22.0, 232, 0.5)"
    )
    assert res["data"] == [[6]]  # affected rows of the multi-table INSERT (d1003 created on the fly)

    rows = db.sql("SELECT ts, current, voltage, location FROM meters WHERE groupid >= 3")["data"]
    assert sorted(rows) == [
        [_utc(2024, 1, 1, 0, 0, 1), 20.0, 230, "California.LosAngeles"],
        [_utc(2024, 1, 1, 0, 0, 6), 21.0, 231, "California.LosAngeles"],
        [_utc(2024, 1, 1, 0, 0, 13), 22.0, 232, "California.SanDiego"],
    ]
    first = db.sql("SELECT ts, voltage FROM d1001 WHERE ts < '2024-01-01 00:00:01'")
    ts = first["data"][0][0]
    assert ts == _utc(2024, 1, 1, 0, 0, 0, 123000)  # millisecond precision kept
    assert ts.tzinfo is not None and ts.utcoffset().total_seconds() == 0
    assert first["column_meta"] == [["ts", "TIMESTAMP", 8], ["voltage", "INT", 4]]

    # a fully qualified name works from any default database
    assert _client(live_server.url).sql("SELECT count(*) FROM power.meters")["data"] == [[6]]


def test_taosrest_show_and_describe_shapes(live_server, meters) -> None:
    c = _client(live_server.url, database="power")
    dbs = c.sql("SHOW DATABASES")
    assert [m[0] for m in dbs["column_meta"]] == [
        "name",
        "create_time",
        "vgroups",
        "ntables",
        "precision",
        "keep",
        "duration",
        "status",
        "cachemodel",
        "keep_time_offset",
    ]
    # the system databases first
    assert [r[0] for r in dbs["data"]] == ["information_schema", "performance_schema", "power"]
    row = dbs["data"][2]
    assert row[0] == "power" and row[3] == 2 and row[4] == "ms"
    assert isinstance(row[1], datetime) and row[1].tzinfo is not None

    st = c.sql("SHOW STABLES")
    assert st["column_meta"] == [["stable_name", "VARCHAR", 192]] and st["data"] == [["meters"]]
    tb = c.sql("SHOW TABLES")
    assert sorted(r[0] for r in tb["data"]) == ["d1001", "d1002"]

    desc = c.sql("DESCRIBE meters")
    assert desc["column_meta"] == [
        ["field", "VARCHAR", 64],
        ["type", "VARCHAR", 32],
        ["length", "INT", 4],
        ["note", "VARCHAR", 16],
    ]
    assert desc["data"] == [
        ["ts", "TIMESTAMP", 8, ""],
        ["current", "FLOAT", 4, ""],
        ["voltage", "INT", 4, ""],
        ["phase", "FLOAT", 4, ""],
        ["location", "VARCHAR", 64, "TAG"],
        ["groupid", "INT", 4, "TAG"],
    ]
    sel = c.sql("SELECT * FROM d1001 LIMIT 1")
    assert sel["column_meta"] == [
        ["ts", "TIMESTAMP", 8],
        ["current", "FLOAT", 4],
        ["voltage", "INT", 4],
        ["phase", "FLOAT", 4],
        ["location", "VARCHAR", 64],
        ["groupid", "INT", 4],
    ]


def test_taosrest_interval_window_partitioned(live_server, meters) -> None:
    c = _client(live_server.url, database="power")
    res = c.sql(
        "SELECT tbname, _wstart, _wend, count(*), avg(current), max(voltage) FROM meters "
        "PARTITION BY tbname INTERVAL(10s)"
    )
    assert [m[0] for m in res["column_meta"]] == [
        "tbname",
        "_wstart",
        "_wend",
        "count(*)",
        "avg(current)",
        "max(voltage)",
    ]
    t0, t10, t20 = _utc(2024, 1, 1, 0, 0, 0), _utc(2024, 1, 1, 0, 0, 10), _utc(2024, 1, 1, 0, 0, 20)
    # d1001: 00:00 10.5/220, 00:05 11.0/221 | 00:12 12.5/219; d1002: 00:01 20/230, 00:06 21/231 | 00:13 22/232
    assert sorted(res["data"]) == [
        ["d1001", t0, t10, 2, 10.75, 221],
        ["d1001", t10, t20, 1, 12.5, 219],
        ["d1002", t0, t10, 2, 20.5, 231],
        ["d1002", t10, t20, 1, 22.0, 232],
    ]


def test_taosrest_delete(live_server, meters) -> None:
    c = _client(live_server.url, database="power")
    res = c.sql("DELETE FROM d1001 WHERE ts >= '2024-01-01 00:00:05' AND ts <= '2024-01-01 00:00:12'")
    assert res["data"] == [[2]]
    left = c.sql("SELECT tbname, ts FROM meters")["data"]
    assert sorted(left) == [
        ["d1001", _utc(2024, 1, 1, 0, 0, 0)],
        ["d1002", _utc(2024, 1, 1, 0, 0, 1)],
        ["d1002", _utc(2024, 1, 1, 0, 0, 6)],
        ["d1002", _utc(2024, 1, 1, 0, 0, 13)],
    ]


def test_taosrest_error_answer_raises_with_code(live_server, meters) -> None:
    with pytest.raises(taosrest.Error) as err:
        _client(live_server.url, database="power").sql("SELECT nope FROM meters")
    assert err.value.errno == Code.INVALID_COLUMN
    assert "nope" in err.value.msg and "line 1, column 8" in err.value.msg


def test_taosrest_wrong_password_is_401(live_server, admin, lake) -> None:
    with pytest.raises(taosrest.HTTPError) as err:
        _client(live_server.url, password="wrong").sql("SHOW DATABASES")
    assert err.value.status_code == 401


# ---------------------------------------------------------------------- authentication (plain HTTP)


def test_authentication_failures_are_401(rest: Rest) -> None:
    for auth in (
        "",
        basic("root", "wrong"),
        basic("nobody", "x"),
        "Basic !!!not-base64",
        "Bearer abc",
        "Basic " + "cm9vdA==",
    ):  # "root" without a colon
        status, body = rest.post("SHOW DATABASES", auth=auth)
        assert status == 401, auth
        assert body == {"code": Code.AUTH_FAILURE, "desc": "Authentication failure"}


def test_deactivated_user_is_refused_even_when_cached(rest: Rest) -> None:
    assert rest.post("SHOW DATABASES")[0] == 200  # now cached
    get_user_model().objects.filter(username="root").update(is_active=False)
    assert rest.post("SHOW DATABASES")[0] == 401


def test_get_is_not_allowed(client, admin, lake) -> None:
    r = client.get("/rest/sql", HTTP_AUTHORIZATION=basic())
    assert r.status_code == 405
    assert json.loads(r.content)["code"] == Code.INVALID_OPERATION


def test_db_in_path_is_the_default_database(meters: Rest) -> None:
    assert meters.ok("SELECT count(*) FROM meters", db="power")["data"] == [[6]]
    body = meters.fails("SELECT count(*) FROM meters")  # no default database
    assert body["code"] == Code.DB_NOT_SPECIFIED and "/rest/sql/{db}" in body["desc"]
    body = meters.fails("SELECT count(*) FROM meters", db="nosuchdb")
    assert body["code"] == Code.DB_NOT_EXIST and "nosuchdb" in body["desc"]


# ---------------------------------------------------------------------- bad input changes nothing


def _snapshot(rest: Rest) -> dict[str, object]:
    return {
        "rows": sorted(map(tuple, rest.ok("SELECT tbname, * FROM power.meters")["data"])),
        "stables": rest.ok("SHOW power.STABLES")["data"],
        "tables": sorted(rest.ok("SHOW power.TABLES")["data"]),
        "databases": [r[0] for r in rest.ok("SHOW DATABASES")["data"]],
        "streams": rest.ok("SHOW STREAMS")["data"],
        "stream_rows": Stream.objects.count(),
    }


def _assert_positioned(body: dict[str, object], sql: str, token: str, *words: str) -> None:
    desc = str(body["desc"])
    line, col = position(sql, token)
    assert f"line {line}, column {col}" in desc, desc
    for w in words:
        assert w.lower() in desc.lower(), (w, desc)


BAD_STATEMENTS = [
    # (sql, offending token, words the message must contain, expected code)
    ("SELEC * FROM power.meters", "SELEC", ["SELEC"], Code.SYNTAX_ERROR),
    ("SELECT * FROM power.meters WHERE", "", ["incomplete"], Code.INCOMPLETE_SQL),
    ("SELECT *\n  FROM power.nope", "nope", ["nope", "does not exist"], Code.TABLE_NOT_EXIST),
    ("SELECT ts,\n       nope FROM power.meters", "nope", ["nope"], Code.INVALID_COLUMN),
    (
        "INSERT INTO power.d1001 VALUES\n  ('2024-01-01 00:01:00', 1.0, 'abc', 0.1)",
        "'abc'",
        ["abc", "voltage"],
        Code.WRONG_VALUE_TYPE,
    ),
    (
        "INSERT INTO power.d1001 VALUES ('2024-01-01 00:01:00', 1.0, 2)",
        "'2024-01-01 00:01:00'",
        ["3", "4"],
        Code.COLUMN_COUNT_MISMATCH,
    ),
    (
        "INSERT INTO power.nope VALUES ('2024-01-01 00:01:00', 1.0, 2, 0.1)",
        "power.nope",
        ["nope"],
        Code.TABLE_NOT_EXIST,
    ),
    (
        "CREATE STREAM s1 INTO power.out1 AS\n  SELECT _wstart, avg(current) FROM power.meters INTERVAL(10x)",
        "10x",
        ["10x"],
        None,
    ),
]


@pytest.mark.parametrize(
    ("sql", "token", "words", "code"), BAD_STATEMENTS, ids=[s[0][:40] for s in BAD_STATEMENTS]
)
def test_bad_statement_is_positioned_and_changes_nothing(meters: Rest, sql, token, words, code) -> None:
    before = _snapshot(meters)
    body = meters.fails(sql)
    if code is not None:
        assert body["code"] == code, body
    _assert_positioned(body, sql, token, *words)
    assert _snapshot(meters) == before


def test_error_position_counts_leading_blank_lines(meters: Rest) -> None:
    sql = "\n\n  SELECT ts, nope FROM power.meters"
    _assert_positioned(meters.fails(sql), sql, "nope", "nope")


def test_multi_table_insert_with_one_bad_row_writes_nothing(meters: Rest) -> None:
    before = _snapshot(meters)
    sql = (
        "INSERT INTO power.d1001 VALUES ('2024-01-01 00:02:00', 1.0, 1, 0.1) "
        "power.d1002 VALUES ('2024-01-01 00:02:00', 2.0, 99999999999, 0.1)"
    )
    body = meters.fails(sql)
    _assert_positioned(body, sql, "99999999999", "voltage")
    assert _snapshot(meters) == before


def test_insert_creating_subtable_with_bad_value_creates_no_subtable(meters: Rest) -> None:
    before = _snapshot(meters)
    sql = (
        "INSERT INTO power.d9 USING power.meters TAGS ('x', 1) VALUES ('2024-01-01 00:02:00', 'abc', 1, 0.1)"
    )
    body = meters.fails(sql)
    _assert_positioned(body, sql, "'abc'", "current")
    assert _snapshot(meters) == before


STREAM_SQL = (
    "CREATE STREAM s1 INTO power.out1 AS\n  SELECT _wstart, {items} FROM power.meters INTERVAL(10s){tail}"
)
# errors in a stream's subquery and in its window clause are positioned in the statement
BAD_STREAMS = [
    # (items, tail, offending token, words)
    pytest.param("avg(nope)", "", "nope", ["nope"], id="unknown-column"),
    pytest.param("twa(current)", "", "twa", ["twa"], id="twa"),
    pytest.param("avg(current)", " SLIDING(20s)", "INTERVAL", ["SLIDING", "INTERVAL"], id="sliding"),
    pytest.param("avg(current)", " SLIDING(20x)", "20x", ["20x"], id="bad-sliding-unit"),
]


@pytest.mark.parametrize(
    ("items", "tail", "token", "words"), [p.values for p in BAD_STREAMS], ids=[p.id for p in BAD_STREAMS]
)
def test_bad_create_stream_names_the_problem_and_changes_nothing(
    meters: Rest, items, tail, token, words
) -> None:
    sql = STREAM_SQL.format(items=items, tail=tail)
    before = _snapshot(meters)
    body = meters.fails(sql)
    for w in words:
        assert w.lower() in body["desc"].lower(), body
    assert _snapshot(meters) == before  # no stream, no output supertable out1


@pytest.mark.parametrize(("items", "tail", "token", "words"), BAD_STREAMS)
def test_bad_create_stream_is_positioned(meters: Rest, items, tail, token, words) -> None:
    sql = STREAM_SQL.format(items=items, tail=tail)
    _assert_positioned(meters.fails(sql), sql, token, *words)


def test_duplicate_stream_is_refused_and_if_not_exists_is_a_no_op(meters: Rest) -> None:
    sql = STREAM_SQL.format(items="avg(current)", tail="")
    meters.ok(sql)
    assert [r[0] for r in meters.ok("SHOW STREAMS")["data"]] == ["s1"]
    body = meters.fails(sql.replace("out1", "out2"))
    assert body["code"] == Code.STREAM_ALREADY_EXIST and "s1" in body["desc"]
    meters.ok(sql.replace("CREATE STREAM", "CREATE STREAM IF NOT EXISTS").replace("out1", "out2"))
    assert Stream.objects.count() == 1
    assert [r[0] for r in meters.ok("SHOW power.STABLES")["data"]] == ["meters", "out1"]


def test_stream_statements_over_rest(meters: Rest) -> None:
    meters.ok(STREAM_SQL.format(items="avg(current) AS a", tail=""))
    show = meters.ok("SHOW STREAMS")
    assert [m[0] for m in show["column_meta"]][:4] == ["stream_name", "create_time", "sql", "status"]
    name, _created, sql, status, source_db, target_db, target_table = show["data"][0][:7]
    assert (name, status, source_db, target_db, target_table) == ("s1", "starting", "power", "power", "out1")
    system = meters.ok("SELECT stream_name, status, target_table FROM information_schema.ins_streams")
    assert system["data"] == [["s1", "starting", "out1"]]
    assert sql.startswith("CREATE STREAM s1")
    Stream.objects.update(rows_in=42, windows_out=7, worker="w1", last_error="boom at batch 3")
    tasks = meters.ok(
        "SELECT stream_name, type, node_id, status, rows_in, rows_out, recalculated, last_error "
        "FROM information_schema.ins_stream_tasks"
    )
    assert tasks["data"] == [["s1", "Spark", "w1", "starting", 42, 7, 0, "boom at batch 3"]]
    from streams_app.models import StreamProgress

    for b, n in ((1, 2), (2, 3)):
        StreamProgress.objects.create(stream=Stream.objects.get(), batch_id=b, recalculated=n)
    recalc = meters.ok("SELECT recalculated FROM information_schema.ins_stream_tasks")
    assert recalc["data"] == [[5]]  # summed over the stream's micro-batches
    meters.ok("PAUSE STREAM s1")
    assert Stream.objects.get().desired_state == Stream.Desired.PAUSED
    meters.ok("RESUME STREAM s1")
    assert Stream.objects.get().desired_state == Stream.Desired.RUNNING
    meters.ok("DROP STREAM s1")
    assert meters.ok("SHOW STREAMS")["data"] == []
    assert Stream.objects.get().status == Stream.Status.DROPPED
    assert meters.fails("DROP STREAM s1")["code"] == Code.STREAM_NOT_EXIST
    meters.ok("DROP STREAM IF EXISTS s1")
    # the output supertable stays (seed 000: data written by the stream is not deleted)
    assert [r[0] for r in meters.ok("SHOW power.STABLES")["data"]] == ["meters", "out1"]


def test_337_stream_over_rest_is_registered_with_its_own_syntax(meters: Rest) -> None:
    from streams_app.serializers import stream_json

    sql = (
        "CREATE STREAM s337 STATE_WINDOW(voltage) FROM power.meters PARTITION BY tbname "
        "STREAM_OPTIONS(WATERMARK(10s)) INTO power.res OUTPUT_SUBTABLE(CONCAT('res_', tbname)) "
        "AS SELECT _twstart, _twrownum, avg(current) FROM %%trows"
    )
    meters.ok(sql)
    s = Stream.objects.get()
    assert (s.syntax, s.sql) == ("3.3.7", sql)
    assert stream_json(s)["window"] == "STATE_WINDOW(voltage)"
    assert meters.ok("SELECT trigger, watermark FROM information_schema.ins_streams")["data"] == [
        ["STATE", "10s"]
    ]
    bad = meters.fails(
        sql.replace("s337", "s2")
        .replace("power.res", "power.res2")
        .replace("WATERMARK(10s)", "EXPIRED_TIME(1n)")
    )
    # seed 002: EXPIRED_TIME takes units a, s, m, h or d
    assert bad["code"] == Code.INVALID_STREAM_QUERY and "EXPIRED_TIME(1n)" in bad["desc"]
    assert Stream.objects.count() == 1


def test_recalculate_stream_over_rest_writes_the_closed_windows_of_the_range(meters: Rest) -> None:
    meters.ok(STREAM_SQL.format(items="count(*) AS n, max(current) AS mx", tail=""))
    # no worker runs in these tests, so the output is empty until the recalculation writes it
    res = meters.ok("RECALCULATE STREAM s1 FROM '2024-01-01 00:00:00'")
    assert res["rows"] == 1  # [00:00:00, 00:00:10); [00:00:10, 00:00:20) is not closed at 00:00:13
    assert meters.ok("SELECT n, mx FROM power.out1")["data"] == [[4, 21.0]]
    bad = meters.fails("RECALCULATE STREAM nope FROM '2024-01-01 00:00:00'")
    assert bad["code"] == Code.STREAM_NOT_EXIST


def test_requests_leave_no_database_connection_open(meters: Rest) -> None:
    """The SQL runs in a worker thread; its DB connection must be closed like a request's own
    (otherwise every pool thread keeps a connection forever, and a broken one is never replaced)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("counts server sessions (PostgreSQL)")

    def sessions() -> int:
        with connection.cursor() as c:
            c.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            return int(c.fetchone()[0])

    before = sessions()
    for _ in range(5):
        meters.ok("SELECT count(*) FROM power.meters")
    assert sessions() <= before


# ---------------------------------------------------------------------- INSERT and DELETE forms


def test_rest_insert_into_supertable_by_tbname_insert_select_and_folded_delete(meters: Rest) -> None:
    """The forms of tests/sql/test_writes_forms.py over ``/rest/sql``: TDengine's REST shape,
    codes and positions."""
    body = meters.ok(
        "INSERT INTO power.meters (tbname, location, groupid, ts, current, voltage, phase) VALUES "
        "('d3001', 'California.SanJose', 7, '2024-01-01 00:01:00', 1.5, 100, 0.1) "
        "('d3001', 'California.SanJose', 7, '2024-01-01 00:01:00' + 5s, 2.5, 101, 0.1)"
    )
    assert body["data"] == [[2]] and body["column_meta"] == [["affected_rows", "INT", 4]]
    got = meters.ok("SELECT ts, voltage, location FROM power.meters WHERE tbname = 'd3001'")["data"]
    assert got == [
        ["2024-01-01T00:01:00.000Z", 100, "California.SanJose"],
        ["2024-01-01T00:01:05.000Z", 101, "California.SanJose"],
    ]
    # INSERT ... SELECT into a normal table: the fixture's six rows with voltage > 220
    meters.ok("CREATE TABLE power.high (ts TIMESTAMP, v BIGINT)")
    assert meters.ok(
        "INSERT INTO power.high SELECT ts, voltage FROM power.meters WHERE voltage > 220 AND groupid < 7"
    )["data"] == [[4]]
    high = meters.ok("SELECT v FROM power.high")["data"]
    assert sorted(r[0] for r in high) == [221, 230, 231, 232]
    # DELETE with a bound TDengine folds: 2024-01-01 00:00:06 UTC is 1704067206000
    assert meters.ok("DELETE FROM power.high WHERE ts = cast(1704067200000 + 6000 as timestamp)")["data"] == [
        [1]
    ]
    assert sorted(r[0] for r in meters.ok("SELECT v FROM power.high")["data"]) == [221, 230, 232]
    # a condition on a data column is refused in TDengine's words, nothing deleted
    sql = "DELETE FROM power.high WHERE v > 0"
    bad = meters.fails(sql)
    assert bad["code"] == Code.INVALID_DELETE_WHERE
    _assert_positioned(bad, sql, "v > 0", "The DELETE statement must have a definite time window range")
    assert len(meters.ok("SELECT v FROM power.high")["data"]) == 3
    # a column count mismatch of INSERT ... SELECT
    bad = meters.fails("INSERT INTO power.high SELECT ts, voltage, current FROM power.meters")
    assert bad["code"] == Code.INVALID_COLUMNS_NUM and "Illegal number of columns" in bad["desc"]
