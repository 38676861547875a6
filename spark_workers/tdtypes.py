"""TDengine data types and their storage in Arrow / Delta Lake, DuckDB and Spark.

Storage rules (Delta Lake has no unsigned integers and no nanosecond timestamps):

| TDengine             | Arrow / Delta                  | REST ``column_meta`` type, length |
| -------------------- | ------------------------------ | --------------------------------- |
| TIMESTAMP (ms, us)   | timestamp[us, tz=UTC]          | TIMESTAMP, 8                      |
| TIMESTAMP (ns)       | int64 nanoseconds              | TIMESTAMP, 8                      |
| BOOL                 | bool                           | BOOL, 1                           |
| TINYINT/SMALLINT/INT/BIGINT | int8/int16/int32/int64  | same, 1/2/4/8                     |
| TINYINT/SMALLINT/INT UNSIGNED | int16/int32/int64 (next wider signed) | same + UNSIGNED   |
| BIGINT UNSIGNED      | decimal128(20, 0)              | BIGINT UNSIGNED, 8                |
| FLOAT / DOUBLE       | float32 / float64              | FLOAT 4 / DOUBLE 8                |
| BINARY(n)/VARCHAR(n) | string (length checked on write) | VARCHAR, n                      |
| NCHAR(n)             | string (length in characters)  | NCHAR, n                          |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from spark_workers.errors import Code, SqlError

_INT_RANGES = {
    "TINYINT": (-(2**7), 2**7 - 1),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INT": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
}
_UINT_RANGES = {
    "TINYINT": (0, 2**8 - 1),
    "SMALLINT": (0, 2**16 - 1),
    "INT": (0, 2**32 - 1),
    "BIGINT": (0, 2**64 - 1),
}
_FIXED_BYTES = {
    "TIMESTAMP": 8,
    "BOOL": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "BIGINT": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
}
_ALIASES = {"INTEGER": "INT", "BOOLEAN": "BOOL", "BINARY": "VARCHAR", "STRING": "VARCHAR"}
VAR_TYPES = frozenset({"VARCHAR", "NCHAR"})
INTEGER_TYPES = frozenset(_INT_RANGES)
FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE"})
NUMERIC_TYPES = INTEGER_TYPES | FLOAT_TYPES
MAX_VAR_LENGTH = 65517


@dataclass(frozen=True)
class TdType:
    """One TDengine column type.

    Attributes:
        name: canonical name: TIMESTAMP, BOOL, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE,
            VARCHAR (also written BINARY) or NCHAR.
        length: declared length for VARCHAR/NCHAR (bytes / characters), else 0.
        unsigned: True for the UNSIGNED integer types.
    """

    name: str
    length: int = 0
    unsigned: bool = False

    @classmethod
    def parse(cls, name: str, length: int | None = None, unsigned: bool = False) -> TdType:
        """Build a type from its SQL spelling; raises ``SqlError`` for unknown names or bad lengths."""
        canon = _ALIASES.get(name.upper(), name.upper())
        if canon not in _FIXED_BYTES and canon not in VAR_TYPES:
            raise SqlError(f"unknown data type {name}", code=Code.WRONG_VALUE_TYPE)
        if canon in VAR_TYPES:
            if length is None:
                raise SqlError(f"{name} needs a length, e.g. {name}(32)", code=Code.WRONG_VALUE_TYPE)
            if not 1 <= length <= MAX_VAR_LENGTH:
                raise SqlError(
                    f"length of {name} must be in [1, {MAX_VAR_LENGTH}], got {length}",
                    code=Code.WRONG_VALUE_TYPE,
                )
            return cls(canon, length, False)
        if unsigned and canon not in INTEGER_TYPES:
            raise SqlError(f"{name} cannot be UNSIGNED", code=Code.WRONG_VALUE_TYPE)
        return cls(canon, 0, unsigned)

    @property
    def sql(self) -> str:
        """The type as TDengine's DESCRIBE prints it (``VARCHAR(16)``, ``INT UNSIGNED``)."""
        if self.name in VAR_TYPES:
            return f"{self.name}({self.length})"
        return f"{self.name} UNSIGNED" if self.unsigned else self.name

    @property
    def meta_name(self) -> str:
        """Type name in REST ``column_meta``."""
        return f"{self.name} UNSIGNED" if self.unsigned else self.name

    @property
    def byte_length(self) -> int:
        """Length in REST ``column_meta`` and DESCRIBE: bytes for fixed types, declared length else."""
        return self.length if self.name in VAR_TYPES else _FIXED_BYTES[self.name]

    @property
    def is_numeric(self) -> bool:
        return self.name in NUMERIC_TYPES

    @property
    def is_integer(self) -> bool:
        return self.name in INTEGER_TYPES

    @property
    def is_string(self) -> bool:
        return self.name in VAR_TYPES

    def arrow(self, precision: str = "ms") -> pa.DataType:
        """Arrow (and so Delta) storage type; see the module table."""
        n = self.name
        if n == "TIMESTAMP":
            return pa.int64() if precision == "ns" else pa.timestamp("us", tz="UTC")
        if n == "BOOL":
            return pa.bool_()
        if n in INTEGER_TYPES:
            if not self.unsigned:
                return {
                    "TINYINT": pa.int8(),
                    "SMALLINT": pa.int16(),
                    "INT": pa.int32(),
                    "BIGINT": pa.int64(),
                }[n]
            return {
                "TINYINT": pa.int16(),
                "SMALLINT": pa.int32(),
                "INT": pa.int64(),
                "BIGINT": pa.decimal128(20, 0),
            }[n]
        if n == "FLOAT":
            return pa.float32()
        if n == "DOUBLE":
            return pa.float64()
        return pa.string()

    def value_range(self) -> tuple[int, int] | None:
        """Inclusive integer range for integer types, else None."""
        if not self.is_integer:
            return None
        return (_UINT_RANGES if self.unsigned else _INT_RANGES)[self.name]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "length": self.length, "unsigned": self.unsigned}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TdType:
        return cls(d["name"], int(d.get("length", 0)), bool(d.get("unsigned", False)))


TIMESTAMP = TdType("TIMESTAMP")
BOOL = TdType("BOOL")
INT = TdType("INT")
BIGINT = TdType("BIGINT")
DOUBLE = TdType("DOUBLE")
FLOAT = TdType("FLOAT")


def varchar(n: int) -> TdType:
    """VARCHAR(n)."""
    return TdType("VARCHAR", n)


def from_arrow(t: pa.DataType) -> TdType:
    """Best TDengine type for an Arrow type (used for computed columns such as aggregates)."""
    if pa.types.is_timestamp(t):
        return TIMESTAMP
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_int8(t):
        return TdType("TINYINT")
    if pa.types.is_int16(t):
        return TdType("SMALLINT")
    if pa.types.is_int32(t):
        return INT
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return BIGINT
    if pa.types.is_float32(t):
        return FLOAT
    if pa.types.is_floating(t):
        return DOUBLE
    return varchar(256)
