"""ALTER through TDengine's REST protocol (``POST /rest/sql``): the answer shapes, the schema seen
by DESCRIBE and SELECT afterwards, TDengine's error codes, and a user without WRITE refused with
nothing changed (statements/alter.py; access.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from spark_workers.errors import Code
from tests.web.conftest import Rest, basic

pytestmark = pytest.mark.django_db(transaction=True)


def test_alter_stable_over_rest_adds_a_column_existing_rows_read_null(meters: Rest) -> None:
    meters.ok("ALTER STABLE power.meters ADD COLUMN note VARCHAR(16)")
    meters.ok("INSERT INTO power.d1001 (ts, current, note) VALUES ('2024-01-01 00:00:20', 1.0, 'late')")
    described = meters.ok("DESCRIBE power.meters")["data"]
    assert [r[0] for r in described] == ["ts", "current", "voltage", "phase", "note", "location", "groupid"]
    data = meters.ok("SELECT note FROM power.d1001 ORDER BY ts")["data"]
    assert data == [[None], [None], [None], ["late"]]  # three rows written before the ALTER
    body = meters.fails("ALTER STABLE power.meters ADD COLUMN note INT")
    assert body["code"] == Code.COLUMN_ALREADY_EXIST
    body = meters.fails("ALTER TABLE power.d1001 SET TAG nope = 1")
    assert body["code"] == Code.TAG_NOT_EXIST


def test_a_user_without_write_is_refused_over_rest_and_nothing_changes(meters: Rest, power) -> None:  # type: ignore[no-untyped-def]
    from streams_app.models import Privilege

    user = get_user_model().objects.create_user("carol", password="carol-pw")
    Privilege.objects.create(user=user, db="power", read=True, write=False)
    before = meters.ok("DESCRIBE power.meters")["data"]
    for sql in (
        "ALTER STABLE power.meters DROP COLUMN phase",
        "ALTER TABLE power.d1001 SET TAG groupid = 9",
        "ALTER DATABASE power KEEP 10",
    ):
        status, body = meters.post(sql, auth=basic("carol", "carol-pw"))
        assert status == 200 and body["code"] == Code.PERMISSION_DENIED, (sql, body)
    assert meters.ok("DESCRIBE power.meters")["data"] == before
    assert meters.ok("SELECT DISTINCT groupid FROM power.d1001")["data"] == [[2]]
