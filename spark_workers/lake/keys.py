"""Composite keys: TDengine 3.3's second key column (``PRIMARY KEY`` in CREATE TABLE, ``COMPOSITE
KEY`` in a stream's output column list, seed 000 and seed 002 "Stream Processing Output").

A table whose second column is declared a key holds one row per ``(tbname, ts, key)`` instead of
per ``(tbname, ts)``: two rows with the same timestamp and different keys are two rows, the same
timestamp and key overwrite (TDengine's update rule), deletes go by time range (every key at the
deleted timestamps), and a table's rows are read in ``(ts, key)`` order. The key is never NULL.

Rules (TDengine SQL manual "Create Table"): only the second column, at most one, never a tag, of
type INT, INT UNSIGNED, BIGINT, BIGINT UNSIGNED or VARCHAR (BINARY); the column cannot be added,
changed or dropped later.
"""

from __future__ import annotations

from spark_workers.errors import Code, SqlError
from spark_workers.lake.catalog import Column, Table
from spark_workers.tdtypes import TdType

COMPOSITE_KEY_TYPES = frozenset({"INT", "BIGINT", "VARCHAR"})


def key_column(table: Table) -> Column | None:
    """The composite key column of a table: its second column when declared a key, else None."""
    if len(table.columns) > 1 and table.columns[1].composite_key:
        return table.columns[1]
    return None


def row_key(table: Table) -> tuple[str, ...]:
    """Physical names of a table's row key after ``tbname``: ``(ts,)`` or ``(ts, key)``."""
    key = key_column(table)
    return (table.columns[0].physical,) if key is None else (table.columns[0].physical, key.physical)


def check_composite_key(
    name: str, tdtype: TdType, index: int, *, sql: str, offset: int | None, tag: bool = False
) -> None:
    """Raise unless column ``name`` of type ``tdtype`` at 0-based ``index`` may be a composite key
    (module docstring's rules).

    Raises:
        SqlError: INVALID_COLUMN naming the rule, at ``offset`` of ``sql``.
    """
    where = f"{'tag' if tag else 'column'} {name}"
    if tag:
        raise SqlError(
            f"{where}: a tag cannot be a composite key (PRIMARY KEY); only the second column can",
            sql=sql,
            offset=offset,
            code=Code.INVALID_COLUMN,
        )
    if index != 1:
        raise SqlError(
            f"{where}: only the second column can be a composite key (PRIMARY KEY / COMPOSITE KEY); "
            "the first column is the timestamp key",
            sql=sql,
            offset=offset,
            code=Code.INVALID_COLUMN,
        )
    if tdtype.name not in COMPOSITE_KEY_TYPES:
        raise SqlError(
            f"{where}: a composite key (PRIMARY KEY / COMPOSITE KEY) must be INT, INT UNSIGNED, "
            f"BIGINT, BIGINT UNSIGNED or VARCHAR, not {tdtype.sql}",
            sql=sql,
            offset=offset,
            code=Code.INVALID_COLUMN,
        )
