"""DuckDB over lake snapshots: the interactive backend (ARCHITECTURE "SQL front door").

Each table reference becomes a temporary view with the logical column names users write:
``tbname``, the columns, and the tags (joined from the catalog's tag table); a subtable is its
supertable filtered on ``tbname``. Scans read the Delta snapshot's Parquet files with DuckDB's
own Parquet reader (``_bucket`` hive partitions pruned, row groups skipped by statistics). Not
through a pyarrow dataset: delta-rs MERGE writes strings as ``string_view``, and pyarrow cannot
evaluate a pushed-down string filter on such files (docs/decisions.md).
The session time zone is UTC; the translator turns literals into exact UTC timestamps.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from spark_workers.lake.store import Lake, storage_schema
from spark_workers.sql.planner import Source


def quote(name: str) -> str:
    """DuckDB identifier quoting."""
    return '"' + name.replace('"', '""') + '"'


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class DuckSession:
    """One DuckDB connection for one request or one micro-batch.

    Args:
        lake: the lake to read snapshots from.
        threads: DuckDB worker threads (keep small on 2 cores).
    """

    def __init__(self, lake: Lake | None = None, threads: int = 2) -> None:
        self.lake = lake
        self.con = duckdb.connect(config={"threads": threads})
        self.con.execute("SET TimeZone='UTC'")
        self._n = 0
        self.versions: dict[str, int] = {}

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> DuckSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _name(self, prefix: str) -> str:
        self._n += 1
        return f"__{prefix}{self._n}"

    def register_arrow(self, data: pa.Table | object, name: str | None = None) -> str:
        """Register an Arrow table/dataset under a fresh (or given) name; returns the name."""
        name = name or self._name("a")
        self.con.register(name, data)
        return name

    def register_source(
        self,
        src: Source,
        version: int | None = None,
        *,
        ts_range: tuple[int, int] | None = None,
        tbnames: list[str] | None = None,
    ) -> str:
        """A view of a table reference with logical names; returns the view name.

        Args:
            src: the resolved table.
            version: Delta version to read (None = latest); recorded in ``self.versions``.
            ts_range: inclusive bounds on the timestamp column, in precision units.
            tbnames: only these subtables.
        """
        assert self.lake is not None
        db, storage = src.db, src.storage
        ver, files = self.lake.snapshot_files(db, storage, version)
        self.versions[f"{db.name}.{storage.name}"] = ver
        if files:
            data = self._name("p")
            listing = ", ".join(sql_string(f) for f in files)
            self.con.execute(
                f"CREATE TEMP VIEW {data} AS SELECT * FROM read_parquet([{listing}], "
                "hive_partitioning = true, union_by_name = true, hive_types = {'_bucket': BIGINT})"
            )
        else:
            data = self.register_arrow(storage_schema(db, storage.columns).empty_table())
        parts = ["d.tbname AS tbname"]
        for c in storage.columns:
            expr = f"d.{quote(c.physical)}"
            if c.type.name == "TIMESTAMP" and db.precision == "ns":
                expr = f"make_timestamp_ns({expr})"
            parts.append(f"{expr} AS {quote(c.name)}")
        join = ""
        if storage.kind == "super" and storage.tags:
            tags = self.register_arrow(self.lake.catalog.subtable_tags(db.name, storage.name))
            for t in storage.tags:
                parts.append(f"g.{quote(t.physical)} AS {quote(t.name)}")
            join = f" LEFT JOIN {tags} g ON d.tbname = g.tbname"
        conds = []
        if src.tbname_filter is not None:
            conds.append(f"d.tbname = {sql_string(src.tbname_filter)}")
        if tbnames is not None:
            conds.append(f"d.tbname IN ({', '.join(sql_string(t) for t in tbnames) or 'NULL'})")
        if ts_range is not None:
            ts = f"d.{quote(storage.columns[0].physical)}"
            lo, hi = (_ts_sql(v, db.precision) for v in ts_range)
            conds.append(f"{ts} >= {lo} AND {ts} <= {hi}")
            bucket = db.duration.in_precision(db.precision)
            conds.append(f"d._bucket >= {ts_range[0] // bucket} AND d._bucket <= {ts_range[1] // bucket}")
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        view = self._name("v")
        self.con.execute(f"CREATE TEMP VIEW {view} AS SELECT {', '.join(parts)} FROM {data} d{join}{where}")
        return view

    def query(self, sql: str) -> pa.Table:
        """Run a query; Arrow result (string views normalised to strings)."""
        t = self.con.sql(sql).to_arrow_table()
        return normalise(t)


def _ts_sql(value: int, precision: str) -> str:
    """SQL literal comparable with a stored timestamp column (int64 for ns databases)."""
    if precision == "ns":
        return str(value)
    us = value * (1000 if precision == "ms" else 1)
    return f"make_timestamp({us})::TIMESTAMPTZ"


def normalise(t: pa.Table) -> pa.Table:
    """Plain string columns instead of string views (what the rest of tdweb expects)."""
    if not any(pa.types.is_string_view(f.type) or pa.types.is_large_string(f.type) for f in t.schema):
        return t
    cols = [
        c.cast(pa.string()) if (pa.types.is_string_view(c.type) or pa.types.is_large_string(c.type)) else c
        for c in t.columns
    ]
    return pa.Table.from_arrays(cols, names=t.column_names)
