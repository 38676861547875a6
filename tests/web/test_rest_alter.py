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


def test_keep_over_rest_hides_refuses_and_the_beat_job_removes_old_rows(meters: Rest, power) -> None:  # type: ignore[no-untyped-def]
    """ALTER DATABASE KEEP over REST (TDengine SQL manual, "Manage Databases"): the seeded 2024
    rows are older than now - 30 days, so they are neither returned nor kept; a row 29 days old is
    returned until the hourly ``lake.retain`` task runs two days later (clock moved by the test)."""
    import time

    from django.conf import settings

    from streams_app.services import maintenance
    from streams_app.tasks import lake_retain_task

    day = 86_400_000
    now = int(time.time() * 1000)
    meters.ok(f"INSERT INTO power.d1001 (ts, current) VALUES ({now - 29 * day}, 29.0) ({now - day}, 1.0)")
    before = meters.ok("SELECT COUNT(*) FROM power.meters")["data"]
    assert before == [[8]]  # 6 seeded + 2
    meters.ok("ALTER DATABASE power KEEP 30")
    assert meters.ok("SELECT current FROM power.meters ORDER BY ts")["data"] == [[29.0], [1.0]]
    body = meters.fails(f"INSERT INTO power.d1002 (ts, current) VALUES ({now - 31 * day}, 5.0)")
    assert body["code"] == Code.TIMESTAMP_OUT_OF_RANGE and "KEEP" in body["desc"]
    db = power.catalog.require_database("power")
    assert power.read(db, power.catalog.require_table("power", "meters")).num_rows == 2  # removed, not hidden
    assert settings.CELERY_BEAT_SCHEDULE["lake-retain"]["task"] == lake_retain_task.name == "lake.retain"
    assert maintenance.lake_retain(now_ms=now + 2 * day) == 1  # the row 29 days old is now 31 days old
    assert power.read(db, power.catalog.require_table("power", "meters")).num_rows == 1


def test_the_beat_job_drops_a_table_whose_ttl_expired(meters: Rest, power) -> None:  # type: ignore[no-untyped-def]
    """CREATE / ALTER TABLE ... TTL over REST (TDengine SQL manual, "Manage Tables"): the hourly
    ``lake.retain`` task drops a table ``ttl`` days after its creation (clock moved by the test)
    and keeps one whose TTL has not run out."""
    import time

    from streams_app.services import maintenance

    day = 86_400_000
    meters.ok("CREATE TABLE power.short (ts TIMESTAMP, v INT) TTL 1")
    meters.ok("CREATE TABLE power.long (ts TIMESTAMP, v INT)")
    meters.ok("ALTER TABLE power.long TTL 3")
    meters.ok("CREATE TABLE power.d9 USING power.meters TAGS ('x', 9) TTL 2")
    got = meters.ok(
        "SELECT table_name, ttl FROM information_schema.ins_tables WHERE db_name = 'power' AND ttl > 0"
    )
    assert sorted(got["data"]) == [["d9", 2], ["long", 3], ["short", 1]]
    maintenance.lake_retain(now_ms=int(time.time() * 1000) + 2 * day + 60_000)
    left = {n for n, _k, _s, _c in power.catalog.tables("power")}
    assert "long" in left and "short" not in left and "d9" not in left and "d1001" in left
