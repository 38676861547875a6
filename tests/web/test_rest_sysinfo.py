"""The metadata statements a TDengine client or BI tool sends, over TDengine's REST protocol
(``POST /rest/sql``): SHOW VARIABLES, ``information_schema.ins_columns``, SHOW TABLE TAGS and the
system functions, in TDengine's answer shape (``code``, ``column_meta``, ``data``, ``rows``),
through the real ``taosrest`` client and as raw JSON for a user with fewer privileges."""

from __future__ import annotations

import pytest
import taosrest
from django.conf import settings

from spark_workers.errors import Code
from spark_workers.query.system_functions import SERVER_VERSION
from tests.web.conftest import Rest, basic, root_sql

pytestmark = pytest.mark.django_db(transaction=True)


def _client(url: str, database: str | None = None) -> taosrest.RestClient:
    return taosrest.RestClient(url, user="root", password="taosdata", database=database, timezone="UTC")


def test_show_variables_and_ins_columns_through_taosrest(live_server, power) -> None:
    c = _client(live_server.url)
    variables = c.sql("SHOW VARIABLES")
    assert variables["code"] == 0
    assert variables["column_meta"] == [["name", "VARCHAR", 64], ["value", "VARCHAR", 64]]
    assert variables["rows"] == len(variables["data"])
    values = dict(variables["data"])
    assert values["timezone"] == settings.TDWEB_TIMEZONE and values["charset"] == "UTF-8"

    cols = c.sql(
        "SELECT col_name, col_type, col_length FROM information_schema.ins_columns "
        "WHERE db_name = 'power' AND table_name = 'meters'"
    )
    assert cols["column_meta"] == [
        ["col_name", "VARCHAR", 64],
        ["col_type", "VARCHAR", 32],
        ["col_length", "INT", 4],
    ]
    assert cols["data"] == [
        ["ts", "TIMESTAMP", 8],
        ["current", "FLOAT", 4],
        ["voltage", "INT", 4],
        ["phase", "FLOAT", 4],
    ]
    assert cols["rows"] == 4

    tags = _client(live_server.url, database="power").sql("SHOW TABLE TAGS FROM meters")
    assert [m[0] for m in tags["column_meta"]] == ["tbname", "location", "groupid"]
    assert tags["data"] == [["d1001", "California.SanFrancisco", 2], ["d1002", "California.LosAngeles", 3]]

    fns = _client(live_server.url, database="power").sql("SELECT database(), server_version()")
    assert fns["column_meta"][0][0] == "database()" and fns["data"] == [["power", SERVER_VERSION]]


def test_a_user_sees_only_the_columns_of_tables_they_may_read(client, power, alice) -> None:
    root_sql("CREATE DATABASE hidden")
    root_sql("CREATE TABLE hidden.salaries (ts TIMESTAMP, amount DOUBLE)")
    rest = Rest(client, basic("alice", "alice-pw"))
    body = rest.ok("SELECT DISTINCT db_name, table_name FROM information_schema.ins_columns")
    assert set(body) == {"code", "column_meta", "data", "rows"}
    seen = {tuple(r) for r in body["data"]}
    assert ("power", "meters") in seen and not any(db == "hidden" for db, _ in seen)
    assert rest.ok("SELECT count(*) FROM information_schema.ins_columns WHERE col_name = 'amount'")[
        "data"
    ] == [[0]]
    denied = rest.fails("SHOW TABLE TAGS FROM hidden.salaries")
    assert denied["code"] == Code.PERMISSION_DENIED
    # what the root sees, for contrast: the table exists
    assert root_sql("SELECT count(*) FROM information_schema.ins_columns WHERE col_name = 'amount'").rows == [
        [1]
    ]
