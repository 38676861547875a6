"""Catalog cost on both stores (docs/operations.md, "Shared catalog"): SQLite in the lake folder
against PostgreSQL (``TDWEB_CATALOG_URL``).

    .venv/bin/python bench/catalog_bench.py [--pg postgres://postgres@127.0.0.1:5432/postgres]

Creates a scratch database ``tdweb_catalog_bench_<random>`` on the server given by ``--pg``
(dropped afterwards). Workload per store: one supertable; 300 single ``CREATE TABLE ... USING``
(one transaction each); 1,000 subtables in one ``create_subtables`` call (what one INSERT with
auto-create does); 1,000 cached table lookups (one version round trip each); the tags of all
1,301 subtables right after a change (cache refilled). The machine's load moves the figures;
run it twice. Prints one line per store.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_workers.lake.catalog import Catalog, Column, Table
from spark_workers.tdtypes import TdType

SINGLE = 300
BATCH = 1000


def measure(cat: Catalog) -> str:
    """One store's figures, as a printable line."""
    cat.create_database("d")
    ts, k = TdType.parse("TIMESTAMP", None), TdType.parse("INT", None)
    cat.create_table(Table("d", "st", "super", (Column("ts", ts, "ts"),), (Column("k", k, "k"),)))
    t0 = time.perf_counter()
    for i in range(SINGLE):
        cat.create_table(Table("d", f"s{i}", "sub", (), (), "st", {"k": i}))
    t1 = time.perf_counter()
    cat.create_subtables([Table("d", f"b{i}", "sub", (), (), "st", {"k": i}) for i in range(BATCH)])
    t2 = time.perf_counter()
    for i in range(1000):
        cat.table("d", f"s{i % SINGLE}")
    t3 = time.perf_counter()
    cat.subtable_tags("d", "st")  # warm: the first call of a process pays imports
    cat.create_table(Table("d", "x", "sub", (), (), "st", {"k": 1}))
    t4 = time.perf_counter()
    cat.subtable_tags("d", "st")
    t5 = time.perf_counter()
    return (
        f"CREATE TABLE {SINGLE / (t1 - t0):,.0f}/s ({(t1 - t0) / SINGLE * 1e3:.2f} ms each); "
        f"{BATCH} auto-created subtables {(t2 - t1) * 1e3:.0f} ms; cached lookup "
        f"{(t3 - t2) / 1000 * 1e6:.0f} us; tags of {SINGLE + BATCH + 1} subtables {(t5 - t4) * 1e3:.1f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    import psycopg

    name = f"tdweb_catalog_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            print("sqlite:  ", measure(Catalog(tempfile.mkdtemp())))
            cat = Catalog(tempfile.mkdtemp(), args.pg.rsplit("/", 1)[0] + "/" + name)
            print("postgres:", measure(cat))
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


if __name__ == "__main__":
    main()
