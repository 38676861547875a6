"""Statement results: columns, rows and TDengine's REST rendering of them."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from spark_workers import timestamps
from spark_workers.duration import NS_PER_PRECISION
from spark_workers.sql.typed_values import decimal_text
from spark_workers.tdtypes import BINARY_TYPES, INT, TdType


@dataclass
class ResultColumn:
    """A result column: ``name``, TDengine ``type`` and, for timestamps, the ``precision`` of the
    values (``ms``/``us``/``ns``)."""

    name: str
    type: TdType
    precision: str = "ms"


@dataclass
class ResultSet:
    """Answer of one statement.

    ``rows`` hold Python values; TIMESTAMP cells are int epoch values in the column's precision.
    DDL/DML answers have the single column ``affected_rows`` (TDengine REST's shape).
    """

    columns: list[ResultColumn]
    rows: list[list[Any]]
    affected_rows: int | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def affected(cls, n: int) -> ResultSet:
        return cls([ResultColumn("affected_rows", INT)], [[n]], affected_rows=n)

    def to_rest(self, tz: str) -> dict[str, Any]:
        """TDengine REST JSON: ``{code: 0, column_meta, data, rows}``; timestamps as RFC 3339."""
        meta = [[c.name, c.type.meta_name, c.type.byte_length] for c in self.columns]
        data = []
        for row in self.rows:
            out = []
            for c, v in zip(self.columns, row, strict=True):
                out.append(rest_value(v, c, tz))
            data.append(out)
        return {"code": 0, "column_meta": meta, "data": data, "rows": len(data)}


def rest_value(v: Any, c: ResultColumn, tz: str) -> Any:
    """One cell as TDengine's REST service renders it."""
    if v is None:
        return None
    if c.type.name == "TIMESTAMP":
        try:
            return timestamps.render(int(v), c.precision, tz)
        except (OverflowError, ValueError):  # _qstart / _qend of an unbounded range: -2^63, 2^63-1
            return int(v)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, decimal.Decimal):
        # DECIMAL as text with its scale (taosAdapter writes DECIMAL as a string); BIGINT UNSIGNED
        return decimal_text(v, c.type.scale) if c.type.name == "DECIMAL" else int(v)
    if isinstance(v, bytes | bytearray):
        # VARBINARY and GEOMETRY (WKB) as hex text, as taosAdapter's REST answer writes them
        return bytes(v).hex() if c.type.name in BINARY_TYPES else bytes(v).decode("utf-8", "replace")
    return v


def arrow_rows(t: pa.Table, columns: list[ResultColumn]) -> list[list[Any]]:
    """Rows of an Arrow table as Python values, timestamps converted to int epoch values in each
    column's precision."""
    cols = []
    for c, col in zip(columns, t.columns, strict=True):
        if pa.types.is_timestamp(col.type):
            unit = col.type.unit
            ints = col.cast(pa.timestamp(unit)).cast(pa.int64()).to_pylist()
            per_unit = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
            want = NS_PER_PRECISION[c.precision]
            cols.append([None if x is None else x * per_unit // want for x in ints])
        elif c.type.name == "TIMESTAMP" and pa.types.is_integer(col.type):
            cols.append(col.to_pylist())
        else:
            vals = col.to_pylist()
            cols.append(
                [
                    x.isoformat()
                    if isinstance(x, dt.date | dt.time) and not isinstance(x, dt.datetime)
                    else x
                    for x in vals
                ]
            )
    return [list(r) for r in zip(*cols, strict=True)] if cols else []
