"""Fuzzing the front doors (docs/security.md, "What is tested"): a seeded generator sends at least
10,000 statements and JSON bodies, valid and invalid, over ``/rest/sql`` and ``/api/v1`` as a
normal user, through the whole Django stack (the test client: middleware, authentication,
views). Every answer must be a client answer (no 5xx), must not carry internal text (DuckDB,
Python or path text), and the control tables owned by the admin must be unchanged by it all
(counts and sums compared before and after: every statement touching them is refused).

The figures of a run are printed (``pytest -s tests/security/test_fuzz.py``): requests by
surface, statements accepted and refused, the slowest answer.
"""

from __future__ import annotations

import json
import os
import random
import re
import string
import time
from collections import Counter
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from streams_app.models import Privilege
from tests.web.conftest import basic, root_sql

pytestmark = pytest.mark.django_db(transaction=True)

SEED = int(os.environ.get("TDWEB_FUZZ_SEED", "20261125"))
SCALE = float(os.environ.get("TDWEB_FUZZ_SCALE", "1"))  # < 1 for a quick local look; CI runs 1
N_SQL = int(8_000 * SCALE)
N_JSON = int(2_500 * SCALE)
USER, PASSWORD = "fuzzer", "Fuzz_pw-2024"

# text no answer may contain: DuckDB's, Python's and the libraries' own words, server paths
INTERNAL = re.compile(
    r"Traceback|File \"|RecursionError|MemoryError|KeyError|TypeError|ValueError|AttributeError|"
    r"IndexError|AssertionError|NameError|ZeroDivisionError|Catalog Error|Binder Error|Parser Error|"
    r"Conversion Error|Invalid Input Error|Out of Memory Error|INTERNAL Error|duckdb|sqlglot|pyarrow|"
    r"deltalake|site-packages|\.py\b|<class |object at 0x|provided arguments|Required keyword|"
    r"Invalid expression / Unexpected token|Token\(|TokenType\."
)

TABLES = [
    "ctl.meters",
    "ctl.d1",
    "ctl.d2",
    "ctl.log",
    "scratch.t",
    "scratch.st",
    "information_schema.ins_tables",
]
COLUMNS = ["ts", "v", "f", "s", "site", "tbname", "_c0", "_wstart", "nope", "*"]
FUNCTIONS = [
    "count", "sum", "avg", "min", "max", "first", "last", "last_row", "spread", "stddev", "abs", "round",
    "ceil", "floor", "length", "concat", "lower", "upper", "substr", "cast", "to_iso8601", "timetruncate",
    "timediff", "now", "today", "percentile", "read_csv_auto", "read_text", "read_blob", "glob",
    "duckdb_settings", "current_setting", "getenv", "pragma_version", "java_method", "reflect", "query",
]  # fmt: skip
WINDOWS = [
    "INTERVAL(1m)", "INTERVAL(10s) SLIDING(5s)", "SESSION(ts, 10s)", "STATE_WINDOW(v)",
    "EVENT_WINDOW START WITH v > 1 END WITH v < 1", "COUNT_WINDOW(2)", "INTERVAL(0s)", "INTERVAL(-1m)",
    "INTERVAL(1x)", "SESSION(v, 1s)", "COUNT_WINDOW(0)",
]  # fmt: skip
LITERALS = [
    "1", "-1", "0", "1.5e308", "9223372036854775808", "'a'", "'2024-01-01 00:00:00'", "NULL", "true",
    "'\\x00'", "''''", "'%'", "now", "now - 1h", "1704067200000", "'/etc/passwd'", "'../../x'",
    "'" + "x" * 300 + "'", "'白鹭'",
]  # fmt: skip
ATTACKS = [
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT read_text('/etc/hostname')",
    "SELECT * FROM read_blob('var/tdweb.sqlite3-wal')",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM glob('/*')",
    "SELECT getenv('HOME')",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM pragma_database_list()",
    "COPY ctl.meters TO '/tmp/x.csv'",
    "ATTACH '/tmp/x.db' AS x",
    "INSTALL httpfs",
    "LOAD httpfs",
    "PRAGMA database_list",
    "SET memory_limit='100GB'",
    "CREATE TABLE ctl.`../../../x` (ts TIMESTAMP, v INT)",
    "CREATE DATABASE `../x`",
    "CREATE DATABASE _streams",
    "DROP DATABASE _streams",
    "DROP DATABASE ctl",
    "DROP TABLE ctl.meters",
    "DELETE FROM ctl.d1",
    "INSERT INTO ctl.d1 VALUES (now, 1, 1.0, 'x')",
    "INSERT INTO ctl.d9 USING ctl.meters TAGS ('z') VALUES (now, 1, 1.0, 'x')",
    "ALTER USER root PASS 'Owned_pw-1'",
    "GRANT ALL ON *.* TO fuzzer",
    "CREATE USER x PASS 'Xx_pw-2024'",
    "SELECT " + "(" * 600 + "1" + ")" * 600,
    "SELECT " + " + ".join(["1"] * 3000),
    "SELECT 1;" * 300,
    "SELECT * FROM ctl.meters a, ctl.meters b, ctl.meters c, ctl.meters d",
    "CREATE STREAM x PERIOD(10s) INTO scratch.o AS SELECT cast(_tlocaltime/1000000 as timestamp) ts, "
    "* FROM read_text('/etc/hostname')",
    "CREATE STREAM y INTO scratch.o2 AS SELECT _wstart, count(*) FROM ctl.meters INTERVAL(1m)",
]


def _ident(r: random.Random) -> str:
    choice = r.random()
    if choice < 0.6:
        return r.choice(TABLES)
    if choice < 0.8:
        return "`" + "".join(r.choice(string.printable) for _ in range(r.randint(0, 12))) + "`"
    return "".join(r.choice(string.ascii_letters + "_.0") for _ in range(r.randint(1, 10)))


def _expr(r: random.Random, depth: int = 0) -> str:
    k = r.random()
    if depth > 3 or k < 0.3:
        return r.choice(COLUMNS + LITERALS)
    if k < 0.6:
        f = r.choice(FUNCTIONS)
        args = ", ".join(_expr(r, depth + 1) for _ in range(r.randint(0, 3)))
        if f == "cast":
            to = r.choice(["INT", "BIGINT", "DOUBLE", "VARCHAR(8)", "TIMESTAMP", "BLOB"])
            return f"cast({_expr(r, depth + 1)} AS {to})"
        return f"{f}({args})"
    op = r.choice(["+", "-", "*", "/", "%", "=", "<>", "<", ">=", "AND", "OR", "LIKE", "||", "&", "MATCH"])
    return f"({_expr(r, depth + 1)} {op} {_expr(r, depth + 1)})"


def _valid(r: random.Random) -> str:
    """A statement the fuzzing user may run: reads of ``ctl``, writes into ``scratch``."""
    k = r.random()
    num = r.choice(["v", "f", "abs(v)", "v * 2 + 1", "round(f)", "cast(v AS DOUBLE)"])
    cond = r.choice(
        ["v > 3", "f <= 2.5", "s = 'r1'", "site = 'a'", "ts >= '2024-01-01 00:00:10'", "v BETWEEN 2 AND 9"]
    )
    if k < 0.35:
        table = r.choice(["meters", "d1", "d2"])
        return f"SELECT ts, {num}, s FROM ctl.{table} WHERE {cond} LIMIT {r.randint(1, 20)}"
    if k < 0.6:
        agg = r.choice(
            ["count(*)", "sum(v)", "avg(f)", "max(v)", "min(f)", "first(v)", "last(s)", "spread(v)"]
        )
        window = r.choice(["INTERVAL(10s)", "INTERVAL(20s) SLIDING(10s)", "SESSION(ts, 2s)",
                           "STATE_WINDOW(s)",
                           "EVENT_WINDOW START WITH v > 10 END WITH v > 20", "COUNT_WINDOW(5)"])  # fmt: skip
        return f"SELECT _wstart, {agg} FROM ctl.meters WHERE {cond} PARTITION BY tbname {window}"
    if k < 0.75:
        return f"SELECT site, count(*), {r.choice(['sum(v)', 'avg(f)'])} FROM ctl.meters GROUP BY site"
    if k < 0.9:
        return f"INSERT INTO scratch.t VALUES ({1704067200000 + r.randint(0, 10**6)}, {r.randint(-100, 100)})"
    return r.choice(["SHOW DATABASES", "SHOW ctl.STABLES", "DESCRIBE ctl.meters",
                     "SELECT count(*) FROM scratch.t",
                     "SELECT * FROM information_schema.ins_tables WHERE db_name = 'ctl'"])  # fmt: skip


def _statement(r: random.Random) -> str:
    k = r.random()
    if k < 0.3:
        return _valid(r)
    k = r.random()
    if k < 0.05:
        return r.choice(ATTACKS)
    if k < 0.45:
        items = ", ".join(_expr(r) for _ in range(r.randint(1, 3)))
        sql = f"SELECT {items} FROM {_ident(r)}"
        if r.random() < 0.5:
            sql += f" WHERE {_expr(r)}"
        if r.random() < 0.3:
            sql += " PARTITION BY " + r.choice(["tbname", "site", "v", "nope"])
        if r.random() < 0.4:
            sql += " " + r.choice(WINDOWS)
        if r.random() < 0.3:
            sql += f" ORDER BY {r.choice(COLUMNS)} LIMIT {r.choice(['1', '10', '-1', '99999999999'])}"
        return sql
    if k < 0.55:
        values = ", ".join(r.choice(LITERALS) for _ in range(r.randint(1, 5)))
        return f"INSERT INTO {_ident(r)} VALUES ({values})"
    if k < 0.62:
        return (
            f"CREATE {r.choice(['TABLE', 'STABLE', 'DATABASE'])} {_ident(r)} "
            f"(ts TIMESTAMP, {r.choice(['v INT', 'v FOO', 'v VARCHAR(-1)', 'ts INT'])})"
        )
    if k < 0.68:
        return r.choice(
            [
                "SHOW " + r.choice(["DATABASES", "STABLES", "TABLES", "STREAMS", "USERS", "USER PRIVILEGES"]),
                f"DESCRIBE {_ident(r)}",
                f"SHOW CREATE TABLE {_ident(r)}",
                f"DROP TABLE IF EXISTS {_ident(r)}",
                f"DELETE FROM {_ident(r)} WHERE ts < {r.choice(LITERALS)}",
                f"USE {_ident(r)}",
                f"GRANT {r.choice(['ALL', 'READ', 'WRITE'])} ON {_ident(r)} TO {r.choice(['fuzzer', 'x'])}",
            ]
        )
    if k < 0.74:
        return (
            f"CREATE STREAM {r.choice(['s', '_s', 'x.y', '`a b`'])} "
            f"{r.choice(['', 'TRIGGER AT_ONCE', 'FILL_HISTORY 1'])} "
            f"INTO {_ident(r)} AS SELECT _wstart, {_expr(r)} FROM {_ident(r)} {r.choice(WINDOWS)}"
        )
    # mutate a valid statement: drop, repeat, swap or insert characters
    base = list(r.choice([f"SELECT v, s FROM ctl.d1 WHERE v > 1 {r.choice(WINDOWS)}", r.choice(ATTACKS)]))
    for _ in range(r.randint(1, 6)):
        i = r.randrange(len(base) + 1)
        op = r.random()
        if op < 0.3 and base:
            del base[min(i, len(base) - 1)]
        elif op < 0.6:
            base.insert(i, r.choice(string.printable + "`'\"();\\\x00é"))
        else:
            base[i:i] = base[max(0, i - 5) : i]
    return "".join(base)


def _json(r: random.Random, depth: int = 0) -> Any:
    k = r.random()
    if depth > 4 or k < 0.4:
        return r.choice([None, True, 0, -1, 2**70, 1.5, "", "x" * r.randint(0, 50), "2024-01-01", [], {}])
    if k < 0.7:
        return [_json(r, depth + 1) for _ in range(r.randint(0, 4))]
    keys = ["sql", "db", "name", "rows", "columns", "data", "action", "start", "end", "design", "limit", "x"]
    return {r.choice(keys): _json(r, depth + 1) for _ in range(r.randint(0, 5))}


API_POSTS = [
    "/api/v1/sql/",
    "/api/v1/sql/validate/",
    "/api/v1/streams/",
    "/api/v1/databases/scratch/tables/t/rows/",
    "/api/v1/databases/ctl/tables/d1/rows/",
    "/api/v1/designer/validate/",
    "/api/v1/designer/compile/",
    "/api/v1/designer/preview/",
    "/api/v1/designer/drafts/",
    "/api/v1/auth/token/",
    "/api/v1/notifications/ack-all/",
]
API_GETS = [
    "/api/v1/databases/ctl/tables/d1/rows/?start={v}",
    "/api/v1/databases/{v}/tables/",
    "/api/v1/streams/?status={v}&limit={v}",
    "/api/v1/notifications/?limit={v}",
    "/api/v1/databases/ctl/tables/{v}/",
]


def _control() -> list[list[Any]]:
    return [
        list(root_sql(sql).rows[0])
        for sql in (
            "SELECT count(*), sum(v), sum(f) FROM ctl.meters",
            "SELECT count(*), sum(v) FROM ctl.log",
            "SELECT count(*) FROM information_schema.ins_tables WHERE db_name = 'ctl'",
        )
    ]


@pytest.fixture
def fuzz_world(admin, lake, settings):  # type: ignore[no-untyped-def]
    """Control database ``ctl`` (the admin's: 2 subtables x 50 rows, a normal table) that the fuzzing
    user may only read, and ``scratch`` that it owns."""
    settings.AXES_FAILURE_LIMIT = 10**9  # the token endpoint gets random credentials
    root_sql("CREATE DATABASE ctl")
    root_sql("CREATE STABLE ctl.meters (ts TIMESTAMP, v INT, f DOUBLE, s VARCHAR(8)) TAGS (site VARCHAR(8))")
    root_sql("CREATE TABLE ctl.log (ts TIMESTAMP, v INT)")
    for t, site in (("d1", "a"), ("d2", "b")):
        values = " ".join(f"({1704067200000 + i * 1000}, {i}, {i / 4}, 'r{i % 5}')" for i in range(50))
        root_sql(f"INSERT INTO ctl.{t} USING ctl.meters TAGS ('{site}') VALUES {values}")
    root_sql("INSERT INTO ctl.log VALUES " + " ".join(f"({1704067200000 + i}, {i})" for i in range(20)))
    user = get_user_model().objects.create_user(USER, password=PASSWORD)
    Privilege.objects.create(user=user, db="ctl", read=True)
    root_sql("CREATE DATABASE scratch")
    Privilege.objects.create(user=user, db="scratch", read=True, write=True)
    root_sql("CREATE TABLE scratch.t (ts TIMESTAMP, v INT)")
    return user


def _check(status: int, text: str, what: str, problems: list[str]) -> None:
    """Record a problem for a 5xx answer or one carrying internal text. The user's own words
    quoted back (``near "..."``, a function name they wrote) are not internal text."""
    shown = re.sub(r'near "(?:[^"\\]|\\.)*"', "", text.replace('\\"', '"'))
    if status >= 500:
        problems.append(f"{status} for {what!r}: {text[:300]}")
        return
    leaks = [m.group(0) for m in INTERNAL.finditer(shown) if m.group(0).lower() not in what.lower()]
    if leaks or str(settings.BASE_DIR) in shown or str(settings.TDWEB_LAKE) in shown:
        problems.append(f"internal text {leaks} for {what!r}: {text[:300]}")


def test_fuzz_rest_sql_and_api(client, fuzz_world) -> None:
    r = random.Random(SEED)
    before = _control()
    auth = basic(USER, PASSWORD)
    problems: list[str] = []
    counts: Counter[str] = Counter()
    slowest = (0.0, "")
    for i in range(N_SQL):
        sql = _statement(r)
        t0 = time.perf_counter()
        url = "/rest/sql" if i % 3 else "/rest/sql/scratch"
        resp = client.post(url, data=sql.encode(), content_type="text/plain", HTTP_AUTHORIZATION=auth)
        dt = time.perf_counter() - t0
        slowest = max(slowest, (dt, sql[:80]))
        text = resp.content.decode("utf-8", "replace")
        _check(resp.status_code, text, sql, problems)
        body = json.loads(text)
        counts["sql ok" if body.get("code") == 0 else "sql refused"] += 1
    api = APIClient()
    api.force_login(fuzz_world)
    for _ in range(N_JSON):
        if r.random() < 0.75:
            path = r.choice(API_POSTS)
            data = json.dumps(_json(r))
            if r.random() < 0.05:  # deeply nested
                depth = r.choice([100, 2000, 6000])
                data = "[" * depth + data + "]" * depth
            elif r.random() < 0.1:
                data = "".join(r.choice(string.printable) for _ in range(40))
            resp = api.generic("POST", path, data, content_type="application/json")
            what = f"POST {path} {data[:80]}"
        else:
            v = r.choice([*LITERALS, "", "%00", "..%2F..", "-1", "999999999999"])
            path = r.choice(API_GETS).format(v=v.strip("'"))
            resp = api.get(path)
            what = f"GET {path}"
        counts[f"api {resp.status_code // 100}xx"] += 1
        _check(resp.status_code, resp.content.decode("utf-8", "replace"), what, problems)
    after = _control()
    total = sum(counts.values())
    print(f"\nfuzz: {total} requests ({N_SQL} statements, {N_JSON} JSON bodies): "
          f"{dict(sorted(counts.items()))}; "
          f"slowest {slowest[0] * 1000:.0f} ms ({slowest[1]!r})")  # fmt: skip
    assert total >= 10_000 * SCALE
    assert not problems, "\n".join(problems[:20]) + f"\n... {len(problems)} problems"
    assert after == before
    assert counts["sql refused"] > N_SQL / 4 and counts["sql ok"] > N_SQL / 5  # both kinds were exercised
