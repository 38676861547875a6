"""JSON, VARBINARY, GEOMETRY and DECIMAL through TDengine's REST protocol (``POST /rest/sql``)
and the real ``taosrest`` client: taosAdapter answers VARBINARY and GEOMETRY as hex text, JSON
and DECIMAL as text; ``column_meta`` carries ``[name, type, length]``. Expected values are
computed with ``bytes.hex``, ``struct`` (WKB), ``json`` and ``decimal``."""

from __future__ import annotations

import json
import struct
from decimal import ROUND_HALF_UP, Decimal

import pytest
import taosrest

from spark_workers.errors import Code
from tests.web.conftest import Rest

pytestmark = pytest.mark.django_db(transaction=True)


def _client(url: str, database: str | None = None) -> taosrest.RestClient:
    return taosrest.RestClient(url, user="root", password="taosdata", database=database, timezone="UTC")


def test_taosrest_round_trip_of_the_new_types(live_server, admin, lake) -> None:
    c = _client(live_server.url)
    c.sql("CREATE DATABASE ty PRECISION 'ms'")
    db = _client(live_server.url, database="ty")
    db.sql("CREATE STABLE st (ts TIMESTAMP, v VARBINARY(8), g GEOMETRY(64), d DECIMAL(12, 3)) TAGS (j JSON)")
    tag = {"site": "north", "n": 3, "on": True}
    db.sql(
        f"INSERT INTO c1 USING st TAGS ('{json.dumps(tag)}') VALUES "
        r"(1704067200000, '\xcafe01', 'POINT(1.5 -2)', 123.4567) (1704067201000, NULL, NULL, NULL)"
    )
    res = db.sql("SELECT v, g, d, j, j->'site' FROM st ORDER BY ts")
    assert res["column_meta"] == [
        ["v", "VARBINARY", 8],
        ["g", "GEOMETRY", 64],
        ["d", "DECIMAL", 8],
        ["j", "JSON", 4095],
        ["j->'site'", "JSON", 4095],
    ]
    d = Decimal("123.4567").quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    canonical = json.dumps(tag, sort_keys=True, separators=(",", ":"))
    assert res["data"] == [
        [
            bytes.fromhex("cafe01").hex(),
            struct.pack("<BIdd", 1, 1, 1.5, -2.0).hex(),
            f"{d:.3f}",
            canonical,
            '"north"',
        ],
        [None, None, None, canonical, '"north"'],
    ]
    geo = db.sql("SELECT ST_AsText(g) FROM st WHERE g IS NOT NULL")["data"]
    assert geo == [[f"POINT ({1.5:.6f} {-2.0:.6f})"]]


def test_bad_values_answer_their_code_and_change_nothing(meters: Rest) -> None:
    meters.ok("CREATE TABLE power.tv (ts TIMESTAMP, v VARBINARY(4), d DECIMAL(5, 2))")
    meters.ok(r"INSERT INTO power.tv VALUES (1000, '\x01', 1.5)")
    for sql, code in [
        (r"INSERT INTO power.tv VALUES (2000, '\x0', 1)", Code.INVALID_VARBINARY),
        ("INSERT INTO power.tv VALUES (2000, 'a', 1000)", Code.DECIMAL_OVERFLOW),
        ("CREATE STABLE power.sj (ts TIMESTAMP, a INT) TAGS (j JSON, k INT)", Code.ONLY_ONE_JSON_TAG),
        ("CREATE TABLE power.nj (ts TIMESTAMP, j JSON)", Code.INVALID_COL_JSON),
    ]:
        body = meters.fails(sql)
        assert body["code"] == code, (sql, body)
    assert meters.ok("SELECT v, d FROM power.tv")["data"] == [["01", "1.50"]]
    assert meters.fails("SELECT * FROM power.sj")["code"] != 0  # not created
