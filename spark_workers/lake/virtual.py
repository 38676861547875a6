"""Virtual tables: what a virtual table reads (TDengine SQL manual, "Virtual Tables").

A virtual normal table or virtual child table stores no rows: each of its columns (except the
primary timestamp) may reference a column of a normal table or subtable (``col FROM
db.table.col``); a virtual supertable is the template of virtual child tables and reads what its
children read. Queries align the referenced tables on the timestamp (``query/duck.py``); streams
read the referenced tables' change feeds (``lake/changes.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from spark_workers.errors import CatalogError, Code
from spark_workers.lake.catalog import Catalog, ColumnRef, Database, Table
from spark_workers.lake.store import engine_schema


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
    references to tables or columns that no longer exist are left out (their columns read NULL:
    DROP TABLE, ALTER TABLE ... DROP COLUMN)."""
    by_table: dict[tuple[str, str], Origin] = {}
    for col in table.columns[1:]:
        ref: ColumnRef | None = table.refs.get(col.name.lower())
        if ref is None:
            continue
        src = catalog.table(ref.db, ref.table)
        if src is None or src.virtual or src.kind == "super" or src.column(ref.column) is None:
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


@dataclass(frozen=True)
class MemberPlan:
    """How one virtual normal or child table ``name`` is read: per referenced physical table (its
    key :func:`origin_key`), virtual column physical name -> source column physical name."""

    name: str
    origins: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


def origin_key(db: str, table: str) -> str:
    """How rows of physical table ``db.table`` are told apart in a virtual table's input (its
    ``tbname`` qualified: two databases may hold tables of the same name)."""
    return f"{db.lower()}.{table}"


@dataclass(frozen=True)
class VirtualPlan:
    """A virtual table read as a stream (seed 000 "Support for Virtual Tables in Stream
    Computing"; seed 002 trigger tables): the storage tables its members' columns come from
    (``storages``: ``(db, storage table, physical table names read)``), and ``shape``, the table
    whose columns and tags the rows carry (the virtual supertable of a child table, else the
    virtual table itself).

    The members are fixed when the plan is made, when a stream's task starts: "sub-tables that
    are added after the stream computing task starts will not participate" (seed 000), "ignored"
    (seed 002, "Database and Table Operations").
    """

    storages: tuple[tuple[str, str, tuple[str, ...]], ...]
    shape: Table
    members: tuple[MemberPlan, ...]


def plan(catalog: Catalog, table: Table, only: list[str] | None = None) -> VirtualPlan:
    """The stream plan of a virtual table; ``only`` keeps these members (names fixed at the
    task's start).

    Raises:
        CatalogError: the table reads no table at all (INVALID_TABLE_TYPE).
    """
    shape = table if table.kind != "sub" else catalog.require_table(table.db, table.storage)
    keep = None if only is None else {n.lower() for n in only}
    chosen = [m for m in members(catalog, table) if keep is None or m.name.lower() in keep]
    read: dict[tuple[str, str], set[str]] = {}
    by_member = []
    for m in chosen:
        found_origins = origins(catalog, m)
        by_member.append((m, found_origins))
        for o in found_origins:
            read.setdefault((o.db, o.table.storage), set()).add(o.table.name)
    if not read:
        raise CatalogError(
            f"virtual table {table.db}.{table.name} reads no table: none of its columns references "
            "an existing table",
            code=Code.INVALID_TABLE_TYPE,
        )
    keys = sorted(read, key=lambda k: (k[0].lower(), k[1].lower()))
    index = {k: i for i, k in enumerate(keys)}
    out = []
    for m, found_origins in by_member:
        per = []
        for o in found_origins:
            i = index[(o.db, o.table.storage)]
            pairs = []
            for vname, sname in o.columns.items():
                vcol, scol = shape.column(vname), o.table.column(sname)
                if vcol is not None and scol is not None:
                    pairs.append((vcol.physical, source_column(i, scol.physical)))
            per.append((origin_key(o.db, o.table.name), tuple(pairs)))
        out.append(MemberPlan(m.name, tuple(per)))
    found = tuple((d, st, tuple(sorted(read[(d, st)]))) for d, st in keys)
    return VirtualPlan(found, shape, tuple(out))


TS = "__ts"  # the timestamp column of a virtual table's input rows


def source_column(storage_index: int, physical: str) -> str:
    """The name of storage table ``storage_index``'s column ``physical`` in a virtual table's
    input rows (storage tables may share column names of other types)."""
    return f"s{storage_index}.{physical}"


Snapshot = Callable[[list[str], int, int], pa.Table]


def virtualize(
    vp: VirtualPlan,
    db: Database,
    raw: pa.Table,
    ts_physical: str,
    snapshots: tuple[Snapshot, Snapshot | None] | None,
    *,
    align: bool = True,
) -> pa.Table:
    """Rows of the storage tables (engine form: ``tbname`` qualified by :func:`origin_key`,
    physical columns, any extra columns such as the change type) -> rows of the virtual table's
    members (engine form of ``vp.shape``:
    ``tbname`` the member, its columns' physical names, the extra columns kept).

    A member reading one physical table takes each row as it is. A member reading several aligns
    them on the timestamp (TDengine SQL manual, "Data Alignment Rules"): for every timestamp the
    rows touch, the whole aligned row is read from ``snapshots[0](tbnames, ts_min, ts_max)`` (the
    storage's rows at the batch's end; ``snapshots`` None: ``raw`` holds them all, a history
    slice) and comes out once: an insert, an update (its pre-image read from ``snapshots[1]``,
    the rows at the batch's start) when the timestamp had a row before, a delete when no
    referenced table has a row there any more; with the meta columns of the last raw row of that
    timestamp. Cost: two snapshot reads per several-table member and batch.

    With ``align`` False (legacy streams: IGNORE UPDATE 1, seed 000 "Out-of-order data, updates,
    or deletions are not handled" and "merging the data might produce null values"), every row
    of a referenced table comes out as it arrives, with the member's other columns NULL:
    incremental data, never an update of what an earlier micro-batch delivered.
    """
    extra = [c for c in raw.column_names if c not in {"tbname", ts_physical} and c.startswith("_")]
    shape_cols = [c.physical for c in vp.shape.columns]
    pieces: list[pa.Table] = []
    tbn = raw.column("tbname").cast(pa.string())
    for m in vp.members:
        if len(m.origins) == 1 or not align:
            for origin, pairs in m.origins:
                sub = raw.filter(pc.equal(tbn, origin))
                pieces.append(_member_rows(vp, m.name, sub, dict(pairs), ts_physical, shape_cols, extra))
        elif m.origins:
            pieces.append(_aligned_rows(vp, m, raw, ts_physical, shape_cols, extra, snapshots))
    schema = _engine_schema(vp, db, raw, extra)
    pieces = [p.cast(schema) for p in pieces if p.num_rows]
    return pa.concat_tables(pieces) if pieces else schema.empty_table()


def _engine_schema(vp: VirtualPlan, db: Database, raw: pa.Table, extra: list[str]) -> pa.Schema:
    base = engine_schema(db, vp.shape.columns)
    return pa.schema([*base, *[raw.schema.field(e) for e in extra]])


def _member_rows(
    vp: VirtualPlan,
    name: str,
    sub: pa.Table,
    pairs: dict[str, str],
    ts: str,
    shape_cols: list[str],
    extra: list[str],
) -> pa.Table:
    n = sub.num_rows
    cols: dict[str, pa.Array | pa.ChunkedArray] = {"tbname": pa.array([name] * n, pa.string())}
    cols[shape_cols[0]] = sub.column(ts)
    for c in vp.shape.columns[1:]:
        src = pairs.get(c.physical)
        cols[c.physical] = sub.column(src) if src is not None and src in sub.column_names else pa.nulls(n)
    for e in extra:
        cols[e] = sub.column(e)
    return pa.table(cols)


def _merge(m: MemberPlan, snap: pa.Table, ts: str, wanted: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """The aligned rows of member ``m`` at timestamps ``wanted`` from the storage rows ``snap``:
    (virtual columns by physical name, whether any referenced table has a row there)."""
    merged = pd.DataFrame(index=range(len(wanted)))
    present = np.zeros(len(wanted), bool)
    df = snap.to_pandas() if snap.num_rows else None
    for origin, pairs in m.origins:
        part = None if df is None else df[(df["tbname"] == origin) & df[ts].isin(wanted)]
        if part is None or part.empty:
            continue
        part = part.drop_duplicates(ts, keep="last").set_index(ts)
        present |= part.index.get_indexer(wanted) >= 0
        for vphys, sphys in pairs:
            if sphys in part.columns:
                merged[vphys] = part[sphys].reindex(wanted).to_numpy()
    return merged, present


def _aligned_rows(
    vp: VirtualPlan,
    m: MemberPlan,
    raw: pa.Table,
    ts: str,
    shape_cols: list[str],
    extra: list[str],
    snapshots: tuple[Snapshot, Snapshot | None] | None,
) -> pa.Table:
    """Rows of a member reading several tables (:func:`virtualize`): per touched timestamp the
    aligned row at the batch's end, as an insert, an update (pre-image: the aligned row at the
    batch's start) or a delete."""
    names = [o for o, _ in m.origins]
    touched = raw.filter(pc.is_in(raw.column("tbname").cast(pa.string()), pa.array(names, pa.string())))
    if touched.num_rows == 0:
        return pa.table({})
    keys = touched.column(ts).to_numpy(zero_copy_only=False)
    wanted = np.unique(keys)
    lo, hi = int(wanted.min()), int(wanted.max())
    after, at_end = _merge(m, touched if snapshots is None else snapshots[0](names, lo, hi), ts, wanted)
    before, at_start = None, np.zeros(len(wanted), bool)
    if snapshots is not None and snapshots[1] is not None:
        before, at_start = _merge(m, snapshots[1](names, lo, hi), ts, wanted)
    last = touched.to_pandas().drop_duplicates(ts, keep="last").set_index(ts).reindex(wanted)
    frames = []
    kinds = [
        (before, at_start & at_end, "update_preimage"),
        (after, at_end, None),
        (before, at_start & ~at_end, "delete"),
    ]
    for values, mask, kind in kinds:
        if values is None or not mask.any():
            continue
        values = values.astype(object)
        f = values.copy()
        f.insert(0, shape_cols[0], wanted)
        f.insert(0, "tbname", m.name)
        for e in extra:
            f[e] = last[e].to_numpy()
        if "_change_type" in extra:
            f["_change_type"] = kind or np.where(at_start, "update_postimage", "insert")
        for c in shape_cols[1:]:
            if c not in f.columns:
                f[c] = None
        f["__order"] = np.arange(len(wanted)) * 3 + (0 if kind == "update_preimage" else 1)
        frames.append(f[mask])
    if not frames:
        return pa.table({})
    out = pd.concat(frames).sort_values("__order", kind="stable")[["tbname", *shape_cols, *extra]]
    return pa.Table.from_pandas(out, preserve_index=False)
