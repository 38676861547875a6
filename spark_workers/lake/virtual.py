"""Virtual tables: what a virtual table reads (TDengine SQL manual, "Virtual Tables").

A virtual normal table or virtual child table stores no rows: each of its columns (except the
primary timestamp) may reference a column of a normal table or subtable (``col FROM
db.table.col``); a virtual supertable is the template of virtual child tables and reads what its
children read. Queries align the referenced tables on the timestamp (``query/duck.py``); streams
read the referenced tables' change feeds (``lake/changes.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_workers.lake.catalog import Catalog, ColumnRef, Table


@dataclass(frozen=True)
class Origin:
    """One physical table a virtual table reads: ``table`` (a normal table or subtable) of
    database ``db``, and the virtual columns it fills: virtual column name -> source column name
    (both as written)."""

    db: str
    table: Table
    columns: dict[str, str]


def members(catalog: Catalog, table: Table) -> list[Table]:
    """The virtual tables whose rows ``table`` holds: a virtual supertable's virtual child tables
    (by name), else the table itself."""
    if table.kind != "super":
        return [table]
    out = []
    for name, _kind, _stable, _created in catalog.tables(table.db, kinds=("sub",), stable=table.name):
        child = catalog.table(table.db, name)
        if child is not None:
            out.append(child)
    return out


def origins(catalog: Catalog, table: Table) -> list[Origin]:
    """The physical tables one virtual normal or child table reads, in the order of its columns;
    references to tables that no longer exist are left out (their columns read NULL)."""
    by_table: dict[tuple[str, str], Origin] = {}
    for col in table.columns[1:]:
        ref: ColumnRef | None = table.refs.get(col.name.lower())
        if ref is None:
            continue
        src = catalog.table(ref.db, ref.table)
        if src is None or src.virtual or src.kind == "super":
            continue
        key = (src.db.lower(), src.name.lower())
        if key not in by_table:
            by_table[key] = Origin(src.db, src, {})
        by_table[key].columns[col.name] = ref.column
    return list(by_table.values())


def storages(catalog: Catalog, table: Table) -> list[tuple[str, str]]:
    """``(db, storage table)`` of every physical table a virtual table (of any kind) reads,
    sorted and without repeats (a subtable's storage is its supertable)."""
    out = set()
    for member in members(catalog, table):
        for o in origins(catalog, member):
            out.add((o.db, o.table.storage))
    return sorted(out, key=lambda k: (k[0].lower(), k[1].lower()))
