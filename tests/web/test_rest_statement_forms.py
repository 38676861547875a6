"""Every statement form docs/sql.md marks supported, over TDengine's REST protocol
(``POST /rest/sql/{db}``) through the real ``taosrest`` client, in the catalogue's order
(spark_workers/sql/reference.py): each answers code 0 in TDengine's REST shape: ``column_meta``
(``[name, type, length]`` triples), ``data`` (rows as long as ``column_meta``) and ``rows``
(``len(data)``); a write (DDL, INSERT, DELETE, users, streams) answers the one column
``affected_rows`` (an INSERT: the rows it wrote, counted independently from its VALUES)."""

from __future__ import annotations

import re

import pytest
import taosrest

from spark_workers.sql import reference
from spark_workers.sql.reference import Refused

pytestmark = pytest.mark.django_db(transaction=True)

QUERY_WORDS = frozenset({"select", "show", "describe", "desc"})
SUPPORTED = [e for e in reference.STATEMENT_ENTRIES if not isinstance(e.where, Refused)]


def _client(url: str, database: str | None = None) -> taosrest.RestClient:
    return taosrest.RestClient(url, user="root", password="taosdata", database=database, timezone="UTC")


def _check_shape(sql: str, res: dict, *, query: bool) -> None:
    assert res["code"] == 0, (sql, res)
    meta, data = res["column_meta"], res["data"]
    assert res["rows"] == len(data), sql
    assert meta and all(len(m) == 3 and isinstance(m[0], str) and isinstance(m[1], str) for m in meta), sql
    assert all(len(row) == len(meta) for row in data), sql
    if not query:
        assert meta == [["affected_rows", "INT", 4]] and len(data) == 1, (sql, res)


def _inserted_rows(sql: str) -> int | None:
    """Rows a ``INSERT ... VALUES`` writes, counted from its text: one per parenthesised tuple after
    each VALUES (None for INSERT ... SELECT)."""
    if " select " in sql.lower():
        return None
    return sum(part.count("(") for part in re.split(r"(?i)\bvalues\b", sql)[1:])


def test_supported_statement_forms_answer_the_rest_shape(live_server, admin, lake) -> None:
    setup, *rest_of_setup = reference.PROBE_SETUP
    assert _client(live_server.url).sql(setup)["code"] == 0
    c = _client(live_server.url, database="ref")  # /rest/sql/ref
    for sql in rest_of_setup:
        _check_shape(sql, c.sql(sql), query=False)
    checked = 0
    for e in SUPPORTED:
        for sql in e.statements():
            res = c.sql(sql)
            _check_shape(sql, res, query=sql.split()[0].lower() in QUERY_WORDS)
        if e.category == "insert":
            expected = _inserted_rows(sql)
            assert res["data"][0][0] == (expected if expected is not None else 12), (e.name, res)
        checked += 1
    assert checked == len(SUPPORTED) > 50


def test_inserted_rows_counts_value_tuples() -> None:
    assert _inserted_rows("insert into a values (1, 2, 'x') (3, 4, 'y') b values (5, 6)") == 3
    assert _inserted_rows("insert into a using st tags (5) values (1, 1.0, 1)") == 1
    assert _inserted_rows("insert into a (ts, x) select ts, i from t") is None
