"""Seed 002's examples and prohibitions over TDengine's REST protocol (``/rest/sql``), through the
Django registry: a PERIOD stream without a trigger table is registered and listed; what the seed
forbids answers its TDengine error code and nothing is registered."""

from __future__ import annotations

import pytest

from spark_workers.errors import Code
from streams_app.models import Stream
from streams_app.serializers import stream_json
from tests.web.conftest import Rest

pytestmark = pytest.mark.django_db(transaction=True)  # the view runs SQL in a worker thread


def test_seed_period_notify_only_stream_without_from_over_rest(meters: Rest) -> None:
    sql = 'CREATE stream sm1 PERIOD(1h)\nNOTIFY("ws://localhost:8080/notify");'
    meters.ok(sql, "power")
    s = Stream.objects.get()
    assert (s.syntax, s.name) == ("3.3.7", "sm1")
    assert stream_json(s)["source"] == "" and stream_json(s)["target"] is None
    assert s.spec["source"] is None and s.spec["notify"]["events"] == ["ON_TIME"]
    rows = meters.ok("show streams", "power")["data"]
    assert [r[0] for r in rows] == ["sm1"]


def test_seed_002_prohibitions_over_rest(meters: Rest) -> None:
    body = "AS SELECT _twstart, count(*) FROM %%trows"
    cases = [
        (
            "CREATE STREAM s1 SESSION(ts, 1s) FROM power.meters PARTITION BY tbname "
            f"NOTIFY('http://h:1/x') ON (WINDOW_CLOSE) INTO power.o1 {body}",
            Code.INVALID_STREAM_QUERY,
        ),
        (
            f"CREATE STREAM s2 SESSION(ts, 1s) FROM power.meters INTO power.o2 OUTPUT_SUBTABLE('x') {body}",
            Code.INVALID_STREAM_QUERY,
        ),
        (f"CREATE STREAM nodb.s3 SESSION(ts, 1s) FROM power.meters INTO power.o3 {body}", Code.DB_NOT_EXIST),
        (
            f"CREATE STREAM s4 SESSION(ts, 1s) FROM power.meters INTO power.meters {body}",
            Code.STREAM_OUTPUT_CONFLICT,
        ),
    ]
    for sql, code in cases:
        bad = meters.fails(sql, "power")
        assert bad["code"] == code, (sql, bad)
    assert Stream.objects.count() == 0
