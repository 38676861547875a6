"""TDengine's users and grants through the real surfaces (docs/security.md, "Roles").

Two normal users and the admin talk to a live server with the ``taosrest`` client (TDengine's
REST protocol) and through ``/api/v1``. Each test first shows the finding of the security review
(a normal user reads, writes or drops another user's data; stream commands and stream SQL of other
users) as refused, then that a GRANT opens exactly what it names and a REVOKE closes it again.
"""

from __future__ import annotations

from typing import Any

import pytest
import taosrest
from rest_framework.test import APIClient

from spark_workers.errors import Code
from streams_app.models import Inbox, Stream

pytestmark = pytest.mark.django_db(transaction=True)

ANN_PW, BEN_PW = "Ann_pw-2024", "Ben_pw-2024"


def _client(url: str, user: str, password: str) -> taosrest.RestClient:
    return taosrest.RestClient(url, user=user, password=password, timezone="UTC")


def _code(client: taosrest.RestClient, sql: str) -> int:
    """The TDengine error code ``sql`` is refused with (fails the test if it succeeds)."""
    with pytest.raises(taosrest.Error) as err:
        client.sql(sql)
    return int(err.value.errno)


@pytest.fixture
def users(live_server, admin, lake) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """``root`` creates two normal users over SQL: ann (CREATEDB 1) and ben (CREATEDB 1); ann
    creates database ``ann_db`` with supertable ``meters`` (two subtables, three rows) and normal
    table ``notes``."""
    root = _client(live_server.url, "root", "taosdata")
    root.sql(f"CREATE USER ann PASS '{ANN_PW}' CREATEDB 1")
    root.sql(f"CREATE USER ben PASS '{BEN_PW}' SYSINFO 1 CREATEDB 1")
    ann = _client(live_server.url, "ann", ANN_PW)
    ann.sql("CREATE DATABASE ann_db")
    ann.sql("CREATE STABLE ann_db.meters (ts TIMESTAMP, v INT) TAGS (site VARCHAR(16))")
    ann.sql("CREATE TABLE ann_db.notes (ts TIMESTAMP, msg VARCHAR(16))")
    ann.sql(
        "INSERT INTO ann_db.d1 USING ann_db.meters TAGS ('a') VALUES ('2024-01-01 00:00:00', 1) "
        "('2024-01-01 00:00:10', 2) ann_db.d2 USING ann_db.meters TAGS ('b') VALUES "
        "('2024-01-01 00:00:05', 3) ann_db.notes VALUES ('2024-01-01 00:00:00', 'hi')"
    )
    return {"root": root, "ann": ann, "ben": _client(live_server.url, "ben", BEN_PW), "url": live_server.url}


def test_normal_users_cannot_read_write_or_drop_each_others_data(users) -> None:
    ben, ann, root = users["ben"], users["ann"], users["root"]
    for sql in (
        "SELECT * FROM ann_db.meters",
        "SELECT count(*) FROM ann_db.d1",
        "SELECT * FROM ann_db.notes",
        "SELECT * FROM (SELECT v FROM ann_db.meters) t",
        "SELECT _wstart, count(*) FROM ann_db.meters INTERVAL(1m)",
        "INSERT INTO ann_db.d1 VALUES ('2024-01-02 00:00:00', 9)",
        "INSERT INTO ann_db.d9 USING ann_db.meters TAGS ('z') VALUES ('2024-01-02 00:00:00', 9)",
        "DELETE FROM ann_db.d1",
        "CREATE TABLE ann_db.mine (ts TIMESTAMP, v INT)",
        "CREATE TABLE ann_db.d7 USING ann_db.meters TAGS ('x')",
        "DROP TABLE ann_db.d1",
        "DROP STABLE ann_db.meters",
        "DROP DATABASE ann_db",
        "DESCRIBE ann_db.meters",
        "SHOW CREATE TABLE ann_db.notes",
        "SHOW TAGS FROM ann_db.d1",
        "SHOW ann_db.TABLES",
        "USE ann_db",
    ):
        assert _code(ben, sql) == Code.PERMISSION_DENIED, sql
    # what ben may list does not show ann's database or tables
    assert "ann_db" not in [r[0] for r in ben.sql("SHOW DATABASES")["data"]]
    for table in ("ins_databases", "ins_stables", "ins_tables", "ins_tags"):
        rows = ben.sql(f"SELECT * FROM information_schema.{table}")["data"]
        assert not any("ann_db" in r for r in rows), table
    # and nothing changed: ann's rows and tables are all there
    assert ann.sql("SELECT count(*) FROM ann_db.meters")["data"] == [[3]]
    assert sorted(r[0] for r in ann.sql("SHOW ann_db.TABLES")["data"]) == ["d1", "d2", "notes"]
    assert root.sql("SELECT count(*) FROM ann_db.notes")["data"] == [[1]]  # the superuser reads all
    assert ann.sql("SHOW CREATE TABLE ann_db.notes")["data"] == [
        ["notes", "CREATE TABLE `notes` (`ts` TIMESTAMP, `msg` VARCHAR(16))"]
    ]


def test_a_missing_table_and_a_forbidden_one_get_the_same_answer(users) -> None:
    """Whether ``ann_db.<name>`` exists must not leak to ben: a missing table and an existing one
    he may not read both answer 0x2644 (TDengine's "Permission denied or target object not
    exist"), for every statement that names a table; ann, who owns the database, learns that the
    missing one does not exist."""
    ben, ann, root = users["ben"], users["ann"], users["root"]
    forms = (
        "SELECT * FROM ann_db.{t}",
        "SELECT count(*) FROM ann_db.{t} INTERVAL(1m)",
        "DESCRIBE ann_db.{t}",
        "SHOW CREATE TABLE ann_db.{t}",
        "SHOW TAGS FROM ann_db.{t}",
        "SHOW TABLE TAGS FROM ann_db.{t}",
        "INSERT INTO ann_db.{t} VALUES ('2024-01-02 00:00:00', 9)",
        "DELETE FROM ann_db.{t} WHERE ts < '2025-01-01'",
    )
    for form in forms:
        existing, missing = _code(ben, form.format(t="d1")), _code(ben, form.format(t="no_such"))
        assert existing == missing == Code.PERMISSION_DENIED, form
        assert _code(ann, form.format(t="no_such")) == Code.TABLE_NOT_EXIST, form
    # with a database-wide grant, ben may learn what exists
    root.sql("GRANT READ ON ann_db.* TO ben")
    assert _code(ben, "SELECT * FROM ann_db.no_such") == Code.TABLE_NOT_EXIST


def test_grant_opens_what_it_names_and_revoke_closes_it(users) -> None:
    ben, root = users["ben"], users["root"]
    root.sql("GRANT READ ON ann_db.* TO ben")
    assert ben.sql("SELECT count(*) FROM ann_db.meters")["data"] == [[3]]
    assert "ann_db" in [r[0] for r in ben.sql("SHOW DATABASES")["data"]]
    assert _code(ben, "INSERT INTO ann_db.d1 VALUES ('2024-01-02 00:00:00', 9)") == Code.PERMISSION_DENIED
    assert _code(ben, "DROP DATABASE ann_db") == Code.PERMISSION_DENIED  # only the owner drops it

    root.sql("GRANT WRITE ON ann_db.* TO ben")
    assert ben.sql("INSERT INTO ann_db.d1 VALUES ('2024-01-02 00:00:00', 9)")["data"] == [[1]]
    assert _code(ben, "DROP DATABASE ann_db") == Code.PERMISSION_DENIED

    privileges = root.sql("SHOW USER PRIVILEGES")["data"]
    assert ["ben", "all", "ann_db", "", ""] in privileges and ["root", "all", "all", "", ""] in privileges
    root.sql("REVOKE ALL ON ann_db.* FROM ben")
    assert _code(ben, "SELECT count(*) FROM ann_db.meters") == Code.PERMISSION_DENIED
    assert not any(r[0] == "ben" for r in root.sql("SHOW USER PRIVILEGES")["data"])


def test_every_join_type_needs_read_on_each_joined_table(users) -> None:
    """TDengine's join types (query/joins.py) bind each table through the one READ check: ben
    joining his own table with ann's is refused until a grant names ann's database."""
    ben, root = users["ben"], users["root"]
    ben.sql("CREATE DATABASE ben_db")
    ben.sql("CREATE TABLE ben_db.mine (ts TIMESTAMP, k INT)")
    ben.sql("INSERT INTO ben_db.mine VALUES ('2024-01-01 00:00:00', 7)")
    joins = (
        "SELECT m.ts, n.msg FROM ben_db.mine m JOIN ann_db.notes n ON m.ts = n.ts",
        "SELECT m.ts, n.msg FROM ben_db.mine m LEFT JOIN ann_db.notes n ON m.ts = n.ts",
        "SELECT m.ts, n.msg FROM ben_db.mine m LEFT SEMI JOIN ann_db.notes n ON m.ts = n.ts",
        "SELECT m.ts, n.msg FROM ben_db.mine m LEFT ANTI JOIN ann_db.notes n ON m.ts = n.ts",
        "SELECT m.ts, n.msg FROM ben_db.mine m LEFT ASOF JOIN ann_db.notes n",
        "SELECT m.ts, n.msg FROM ann_db.notes n RIGHT ASOF JOIN ben_db.mine m",
        "SELECT m.ts, n.msg FROM ben_db.mine m LEFT WINDOW JOIN ann_db.notes n WINDOW_OFFSET(-1s, 1s)",
        "SELECT m.ts, count(d.v) FROM ben_db.mine m LEFT WINDOW JOIN ann_db.meters d WINDOW_OFFSET(-1m, 1m)",
    )
    for sql in joins:
        assert _code(ben, sql) == Code.PERMISSION_DENIED, sql
    root.sql("GRANT READ ON ann_db.* TO ben")
    for sql in joins:  # now ben reads what root reads
        assert ben.sql(sql)["data"] == root.sql(sql)["data"], sql
    assert ben.sql(joins[2])["data"] and not ben.sql(joins[3])["data"]  # the note matches: semi, not anti


def test_table_level_grants(users) -> None:
    ben, root = users["ben"], users["root"]
    root.sql("GRANT READ ON ann_db.meters TO ben")
    assert ben.sql("SELECT count(*) FROM ann_db.d2")["data"] == [[1]]  # a subtable of the supertable
    assert _code(ben, "SELECT * FROM ann_db.notes") == Code.PERMISSION_DENIED
    assert [r[0] for r in ben.sql("SHOW ann_db.TABLES")["data"]] == ["d1", "d2"]
    # a subtable cannot be granted on its own (TDengine: grants name supertables or normal tables)
    assert _code(root, "GRANT READ ON ann_db.d1 TO ben") == Code.INVALID_OPERATION
    root.sql("GRANT WRITE ON ann_db.notes TO ben")
    assert ben.sql("INSERT INTO ann_db.notes VALUES ('2024-01-02 00:00:00', 'ben')")["data"] == [[1]]
    assert _code(ben, "INSERT INTO ann_db.d1 VALUES ('2024-01-02 00:00:00', 9)") == Code.PERMISSION_DENIED


def test_user_management_is_for_superusers(users) -> None:
    ben, root, ann = users["ben"], users["root"], users["ann"]
    for sql in (
        "CREATE USER eve PASS 'Eve_pw-2024'",
        "DROP USER ann",
        "ALTER USER ann PASS 'Other_pw-1'",
        "ALTER USER ben CREATEDB 1",
        "GRANT ALL ON ann_db.* TO ben",
        "REVOKE READ ON *.* FROM ann",
    ):
        assert _code(ben, sql) == Code.NO_RIGHTS, sql
    # a user may change their own password; the new one works at once, the old one does not
    ben.sql("ALTER USER ben PASS 'Ben_new-2024'")
    assert _client(users["url"], "ben", "Ben_new-2024").sql("SELECT 1")["code"] == 0
    with pytest.raises(taosrest.errors.HTTPError) as err:
        _client(users["url"], "ben", BEN_PW).sql("SELECT 1")
    assert err.value.status_code == 401
    # CREATEDB 0 (TDengine's default) may not create databases
    root.sql("CREATE USER cat PASS 'Cat_pw-2024'")
    cat = _client(users["url"], "cat", "Cat_pw-2024")
    assert _code(cat, "CREATE DATABASE cat_db") == Code.NO_RIGHTS
    # SYSINFO 0 hides users and privileges
    root.sql("ALTER USER cat SYSINFO 0")
    assert _code(cat, "SHOW USERS") == Code.NO_RIGHTS
    assert _code(cat, "SELECT * FROM information_schema.ins_user_privileges") == Code.NO_RIGHTS
    names = {r[0]: r for r in root.sql("SHOW USERS")["data"]}
    assert names["cat"][1:5] == [0, 1, 0, 0] and names["root"][1] == 1  # super, enable, sysinfo, createdb
    # ENABLE 0 locks the user out; DROP USER removes them
    root.sql("ALTER USER cat ENABLE 0")
    with pytest.raises(taosrest.errors.HTTPError) as err:
        cat.sql("SELECT 1")
    assert err.value.status_code == 401
    root.sql("DROP USER cat")
    assert "cat" not in [r[0] for r in root.sql("SHOW USERS")["data"]]
    assert _code(root, "DROP USER cat") == Code.USER_NOT_EXIST
    assert _code(root, "CREATE USER ann PASS 'Ann_pw-2025'") == Code.USER_ALREADY_EXIST
    assert _code(root, "CREATE USER dan PASS 'short'") == Code.INVALID_PASS_FORMAT
    assert _code(root, "CREATE USER `a.b` PASS 'Long_enough1'") == Code.INVALID_IDENTIFIER_NAME
    assert ann.sql("SELECT count(*) FROM ann_db.meters")["data"] == [[3]]


STREAM = (
    "CREATE STREAM {name} INTO {db}.{out} AS SELECT _wstart, count(*) AS n FROM ann_db.meters "
    "PARTITION BY tbname INTERVAL(1m) NOTIFY ('ws://127.0.0.1:1/ws/notify/{inbox}?key={key}') ON "
    "('WINDOW_CLOSE')"
)


def test_stream_commands_and_stream_sql_of_other_users(users, live_server) -> None:
    ann, ben, root = users["ann"], users["ben"], users["root"]
    ann_user = Stream._meta.get_field("owner").related_model.objects.get(username="ann")
    inbox = Inbox.objects.create(name="ann-inbox", key=Inbox.new_key(), owner=ann_user)
    ann.sql(STREAM.format(name="ann_s", db="ann_db", out="ann_out", inbox=inbox.name, key=inbox.key))
    stream = Stream.objects.get(name="ann_s")
    assert stream.owner == ann_user and inbox.key in stream.sql

    # ben sees neither the stream nor its SQL, and cannot control it
    assert ben.sql("SHOW STREAMS")["data"] == []
    assert ben.sql("SELECT * FROM information_schema.ins_streams")["data"] == []
    assert ben.sql("SELECT * FROM information_schema.ins_stream_tasks")["data"] == []
    for sql in ("PAUSE STREAM ann_s", "RESUME STREAM ann_s", "DROP STREAM ann_s", "SHOW CREATE STREAM ann_s",
                "RECALCULATE STREAM ann_s FROM '2024-01-01 00:00:00'"):  # fmt: skip
        assert _code(ben, sql) == Code.PERMISSION_DENIED, sql
    stream.refresh_from_db()
    assert stream.desired_state == "running" and stream.status != "dropped"

    # nobody reads the inbox key: ann's and root's answers show it redacted
    for client in (ann, root):
        for sql in (
            "SHOW STREAMS",
            "SELECT `sql` FROM information_schema.ins_streams",
            "SHOW CREATE STREAM ann_s",
        ):
            text = str(client.sql(sql)["data"])
            assert "ann_s" in text and "key=******" in text and inbox.key not in text, sql
    api = APIClient()
    api.force_login(ann_user)
    body = api.get(f"/api/v1/streams/{stream.pk}/").content.decode()
    assert "key=******" in body and inbox.key not in body

    # ben cannot read ann's data through a stream either, nor write into her database
    ben.sql("CREATE DATABASE ben_db")
    assert (
        _code(ben, STREAM.format(name="ben_s", db="ben_db", out="o", inbox="x", key="y"))
        == Code.PERMISSION_DENIED
    )
    root.sql("GRANT READ ON ann_db.* TO ben")
    assert (
        _code(ben, STREAM.format(name="ben_s", db="ann_db", out="o", inbox="x", key="y"))
        == Code.PERMISSION_DENIED
    )
    ben.sql(STREAM.format(name="ben_s", db="ben_db", out="o", inbox="x", key="y"))
    assert Stream.objects.get(name="ben_s").owner.username == "ben"

    # the owner (and root) control their streams
    ann.sql("PAUSE STREAM ann_s")
    root.sql("RESUME STREAM ann_s")
    ann.sql("DROP STREAM ann_s")
    assert Stream.objects.get(pk=stream.pk).status == "dropped"


def test_redacted_notify_urls_get_their_key_back_only_for_the_inbox_owner(users) -> None:
    ann, ben = users["ann"], users["ben"]
    ann_user = Stream._meta.get_field("owner").related_model.objects.get(username="ann")
    inbox = Inbox.objects.create(name="ann-inbox", key=Inbox.new_key(), owner=ann_user)
    redacted = STREAM.format(name="copy", db="ann_db", out="copy_out", inbox=inbox.name, key="******")
    ann.sql(redacted)  # pasted from a stream page: the key is hers, it is filled in
    assert inbox.key in Stream.objects.get(name="copy").spec["notify"]["urls"][0]
    ben.sql("CREATE DATABASE ben_db")
    root = users["root"]
    root.sql("GRANT READ ON ann_db.* TO ben")
    stolen = STREAM.format(name="steal", db="ben_db", out="o", inbox=inbox.name, key="******")
    assert _code(ben, stolen) == Code.INVALID_OPERATION
    assert not Stream.objects.filter(name="steal").exists()


def test_api_shows_a_user_only_the_databases_they_may_read(users) -> None:
    from django.contrib.auth import get_user_model

    ben = APIClient()
    ben.force_login(get_user_model().objects.get(username="ben"))
    assert "ann_db" not in [d["name"] for d in ben.get("/api/v1/databases/").json()]
    for path in ("tables/", "tables/meters/", "tables/d1/rows/"):
        assert ben.get(f"/api/v1/databases/ann_db/{path}").status_code == 404, path
    r = ben.post("/api/v1/databases/ann_db/tables/d1/rows/", {"rows": [{"ts": 1, "v": 1}]}, format="json")
    assert r.status_code in (400, 403, 404) and r.json()["code"] in (
        Code.PERMISSION_DENIED,
        Code.DB_NOT_EXIST,
    )
    assert users["ann"].sql("SELECT count(*) FROM ann_db.d1")["data"] == [[2]]
    catalog = ben.get("/api/v1/designer/catalog/").json()
    assert "ann_db" not in [d["name"] for d in catalog["databases"]]

    users["root"].sql("GRANT READ ON ann_db.meters TO ben")
    assert "ann_db" in [d["name"] for d in ben.get("/api/v1/databases/").json()]
    assert [t["name"] for t in ben.get("/api/v1/databases/ann_db/tables/").json()] == ["d1", "d2", "meters"]
    rows = ben.get("/api/v1/databases/ann_db/tables/d1/rows/").json()["rows"]
    assert [r[1] for r in rows] == [1, 2]
    assert ben.get("/api/v1/databases/ann_db/tables/notes/rows/").status_code == 404


def test_table_rows_filters_are_values_not_sql(users) -> None:
    from django.contrib.auth import get_user_model

    api = APIClient()
    api.force_login(get_user_model().objects.get(username="ann"))
    url = "/api/v1/databases/ann_db/tables/d1/rows/"
    assert [r[1] for r in api.get(url, {"start": "2024-01-01 00:00:05"}).json()["rows"]] == [2]
    # a quote in the value is a character of the literal, never SQL: the value is not a timestamp
    for start in ("2024-01-01' OR '1'='1", "x') UNION SELECT * FROM ann_db.notes --", "0'\\"):
        r = api.get(url, {"start": start})
        assert r.status_code == 400 and r.json()["code"] != 0, (start, r.content)
