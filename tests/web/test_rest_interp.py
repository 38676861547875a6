"""INTERP and the other query clauses over TDengine's REST protocol (``POST /rest/sql``): the
answer's shape (``code``, ``column_meta`` with TDengine's names and types, ``data``, ``rows``)
and the error answer (``code``, ``desc`` with the position)."""

from __future__ import annotations

import numpy as np
import pytest

from spark_workers.errors import Code
from tests.web.conftest import Rest

pytestmark = pytest.mark.django_db(transaction=True)


def test_interp_answer_has_tdengines_rest_shape(meters: Rest) -> None:
    # d1001: 00:00:00 10.5, 00:00:05 11.0, 00:00:12 12.5 (current FLOAT); d1002: 00:00:01/06/13
    body = meters.ok(
        "SELECT _irowts, tbname, interp(current), _isfilled FROM meters WHERE tbname = 'd1001' "
        "PARTITION BY tbname RANGE('2024-01-01 00:00:00', '2024-01-01 00:00:12') EVERY(3s) FILL(LINEAR)",
        db="power",
    )
    assert set(body) == {"code", "column_meta", "data", "rows"}
    assert body["code"] == 0 and body["rows"] == 5 == len(body["data"])
    meta = body["column_meta"]
    assert [m[0] for m in meta] == ["_irowts", "tbname", "interp(current)", "_isfilled"]
    assert [m[1:] for m in (meta[0], meta[2], meta[3])] == [["TIMESTAMP", 8], ["FLOAT", 4], ["BOOL", 1]]
    assert [r[0] for r in body["data"]] == [f"2024-01-01T00:00:{s:02d}.000Z" for s in (0, 3, 6, 9, 12)]
    assert {r[1] for r in body["data"]} == {"d1001"}
    t, v = np.array([0.0, 5.0, 12.0]), np.array([10.5, 11.0, 12.5])
    want = np.interp([0, 3, 6, 9, 12], t, v).astype(np.float32)
    np.testing.assert_allclose([r[2] for r in body["data"]], want, rtol=1e-6)
    assert [r[3] for r in body["data"]] == [False, True, True, True, False]


def test_interp_error_answer_is_positioned(meters: Rest) -> None:
    sql = "SELECT interp(current) FROM meters RANGE('2024-01-01 00:00:00', '2024-01-01 00:00:12') FILL(PREV)"
    body = meters.fails(sql, db="power")
    assert body["code"] == Code.INVALID_INTERP_CLAUSE == 0x265D
    assert "Missing RANGE clause, EVERY clause or FILL clause" in body["desc"]
    assert f"column {sql.index('RANGE') + 1}" in body["desc"]


def test_slimit_and_match_over_rest(meters: Rest) -> None:
    body = meters.ok(
        "SELECT tbname, count(*) FROM meters WHERE location MATCH '^California' PARTITION BY tbname "
        "SLIMIT 1 SOFFSET 1",
        db="power",
    )
    assert body["data"] == [["d1002", 3]]
    assert meters.fails("SELECT ts FROM meters SLIMIT 1", db="power")["code"] == 0x2638
