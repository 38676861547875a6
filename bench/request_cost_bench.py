"""The cost of one ``/rest/sql`` request in process, without HTTP: authentication, the user's
grants, the statement, the answer, and the metadata-DB connection handling a request does
(``close_old_connections`` before and after, as ``streams_app.api.rest_sql._run``).

    PYTHONPATH=$PWD .venv/bin/python bench/request_cost_bench.py [--requests 200]
        [--sql "SELECT SERVER_VERSION()"] [--database-url postgres://postgres@127.0.0.1:5432/x]

Uses a fresh SQLite metadata DB and lake in a temporary folder, or the PostgreSQL database
``--database-url`` names (created if missing, its tables migrated; a scratch database, never a
deployment's). Prints the median and p90 per request and how many connections were opened.
Settings are a web process's (``tdweb.settings`` as ``tdweb/asgi.py`` loads them): ``TDWEB_DB_POOL_MAX=0`` or
``TDWEB_DB_CONN_MAX_AGE_S=0`` in the environment show the cost of a connection per request.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--sql", default="SELECT SERVER_VERSION()")
    ap.add_argument("--database-url", default="")
    a = ap.parse_args()
    var = tempfile.mkdtemp(prefix="request-cost-")
    os.environ.update(TDWEB_VAR=var, TDWEB_LAKE=f"{var}/lake", DJANGO_SETTINGS_MODULE="tdweb.settings")
    os.environ.setdefault("TDWEB_DB_POOLED", "1")  # a web process's settings (tdweb/asgi.py)
    if a.database_url:
        import psycopg

        base, _, name = a.database_url.rpartition("/")
        with psycopg.connect(f"{base}/postgres", autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}"')
            con.execute(f'CREATE DATABASE "{name}"')
        os.environ["DATABASE_URL"] = a.database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db.backends.signals import connection_created
    from django.test import RequestFactory

    from streams_app.api import rest_sql

    call_command("migrate", verbosity=0)
    get_user_model().objects.create_superuser("root", "", "taosdata")
    header = "Basic " + base64.b64encode(b"root:taosdata").decode()
    request = RequestFactory().post("/rest/sql", data="", content_type="text/plain")
    opened: list[int] = []

    def count(**kwargs: object) -> None:
        opened.append(1)

    connection_created.connect(count, weak=False)
    status, answer = rest_sql._run(request, header, a.sql, None)
    if status != 200 or answer.get("code") != 0:
        raise SystemExit(f"the statement failed: {status} {answer}")
    opened.clear()
    lat = []
    for _ in range(a.requests):
        t = time.perf_counter()
        rest_sql._run(request, header, a.sql, None)
        lat.append(time.perf_counter() - t)
    lat.sort()
    from django.conf import settings

    db = settings.DATABASES["default"]
    kind = "PostgreSQL" + (" (pool)" if "pool" in db.get("OPTIONS", {}) else " (no pool)")
    if db["ENGINE"].endswith("sqlite3"):
        kind = f"SQLite (CONN_MAX_AGE {db.get('CONN_MAX_AGE')})"
    print(
        f"{kind}: {a.requests} requests of {a.sql!r}: median {statistics.median(lat) * 1000:.2f} ms, "
        f"p90 {lat[int(0.9 * len(lat))] * 1000:.2f} ms; connections checked out or opened: {len(opened)}",
        flush=True,
    )


if __name__ == "__main__":
    main()
