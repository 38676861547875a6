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
| JSON (tags only)     | string (the canonical JSON text) | JSON, 4095                      |
| VARBINARY(n)         | binary                         | VARBINARY, n (REST: hex text)     |
| GEOMETRY(n)          | binary (WKB, little endian)    | GEOMETRY, n (REST: hex text)      |
| DECIMAL(p, s)        | decimal128(p, s)               | DECIMAL, 8 (p <= 18) or 16        |

JSON, VARBINARY, GEOMETRY and DECIMAL follow TDengine SQL manual "Data Types" and "JSON Type":
a JSON tag is the only tag of its supertable and never a column; DECIMAL (3.3.6+) is a column type
only, precision 1..38, scale 0..precision (default 0).
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
BINARY_TYPES = frozenset({"VARBINARY", "GEOMETRY"})  # bytes, declared length in bytes
_MAX_LENGTH = {"VARBINARY": 65517, "GEOMETRY": 65517}  # data columns
MAX_BINARY_TAG_LENGTH = 16382  # VARBINARY and GEOMETRY tags
JSON_META_LENGTH = 4095  # the length DESCRIBE and REST column_meta give a JSON tag
MAX_JSON_LENGTH = 4095  # bytes of one JSON tag value (TSDB_MAX_JSON_TAG_LEN / 4 - 1)
MAX_JSON_KEY_LENGTH = 256  # TSDB_MAX_JSON_KEY_LEN
MAX_DECIMAL_PRECISION = 38
DECIMAL64_PRECISION = 18  # up to 18 digits a DECIMAL is 8 bytes (DECIMAL64), else 16
INTEGER_TYPES = frozenset(_INT_RANGES)
FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE"})
NUMERIC_TYPES = INTEGER_TYPES | FLOAT_TYPES
MAX_VAR_LENGTH = 65517


@dataclass(frozen=True)
class TdType:
    """One TDengine column type.

    Attributes:
        name: canonical name: TIMESTAMP, BOOL, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE,
            VARCHAR (also written BINARY), NCHAR, JSON, VARBINARY, GEOMETRY or DECIMAL.
        length: declared length for VARCHAR/NCHAR/VARBINARY/GEOMETRY (bytes / characters), the
            precision of a DECIMAL, else 0.
        unsigned: True for the UNSIGNED integer types.
        scale: digits after the point of a DECIMAL, else 0.
    """

    name: str
    length: int = 0
    unsigned: bool = False
    scale: int = 0

    @classmethod
    def parse(
        cls, name: str, length: int | None = None, unsigned: bool = False, scale: int | None = None
    ) -> TdType:
        """Build a type from its SQL spelling; raises ``SqlError`` for unknown names or bad lengths
        (``scale`` is DECIMAL's second parameter, ``length`` its precision)."""
        canon = _ALIASES.get(name.upper(), name.upper())
        if canon in ("JSON", "DECIMAL") or canon in BINARY_TYPES:
            return _parse_extended(canon, name, length, unsigned, scale)
        if canon not in _FIXED_BYTES and canon not in VAR_TYPES:
            raise SqlError(f"unknown data type {name}", code=Code.WRONG_VALUE_TYPE)
        if scale is not None:
            raise SqlError(f"{name} takes one length, not a scale", code=Code.WRONG_VALUE_TYPE)
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
        if self.name in VAR_TYPES or self.name in BINARY_TYPES:
            return f"{self.name}({self.length})"
        if self.name == "DECIMAL":
            return f"DECIMAL({self.length}, {self.scale})"
        return f"{self.name} UNSIGNED" if self.unsigned else self.name

    @property
    def meta_name(self) -> str:
        """Type name in REST ``column_meta``."""
        return f"{self.name} UNSIGNED" if self.unsigned else self.name

    @property
    def byte_length(self) -> int:
        """Length in REST ``column_meta`` and DESCRIBE: bytes for fixed types, declared length else."""
        if self.name in VAR_TYPES or self.name in BINARY_TYPES:
            return self.length
        if self.name == "JSON":
            return JSON_META_LENGTH
        if self.name == "DECIMAL":
            return 8 if self.length <= DECIMAL64_PRECISION else 16
        return _FIXED_BYTES[self.name]

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
        if n in BINARY_TYPES:
            return pa.binary()
        if n == "DECIMAL":
            return pa.decimal128(self.length, self.scale)
        return pa.string()  # VARCHAR, NCHAR, JSON

    def value_range(self) -> tuple[int, int] | None:
        """Inclusive integer range for integer types, else None."""
        if not self.is_integer:
            return None
        return (_UINT_RANGES if self.unsigned else _INT_RANGES)[self.name]

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "length": self.length, "unsigned": self.unsigned}
        if self.scale:
            d["scale"] = self.scale
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TdType:
        return cls(d["name"], int(d.get("length", 0)), bool(d.get("unsigned", False)), int(d.get("scale", 0)))

    def stores_as(self, t: pa.DataType) -> bool:
        """True when an Arrow result column of type ``t`` holds values of this type as stored
        (a column selected as it is), so the result keeps this type."""
        if self.name in BINARY_TYPES:
            return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
        if self.name == "DECIMAL":
            return pa.types.is_decimal(t) and (t.precision, t.scale) == (self.length, self.scale)
        if self.name == "JSON":
            return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        return False


def _parse_extended(canon: str, name: str, length: int | None, unsigned: bool, scale: int | None) -> TdType:
    """JSON, VARBINARY(n), GEOMETRY(n) and DECIMAL(p[, s]) (TDengine SQL manual, "Data Types")."""
    if unsigned:
        raise SqlError(f"{name} cannot be UNSIGNED", code=Code.WRONG_VALUE_TYPE)
    if canon == "JSON":
        if length is not None:
            raise SqlError("JSON takes no length", code=Code.WRONG_VALUE_TYPE)
        return TdType("JSON")
    if canon == "DECIMAL":
        if length is None:
            raise SqlError("DECIMAL needs a precision, e.g. DECIMAL(10, 2)", code=Code.WRONG_VALUE_TYPE)
        if not 1 <= length <= MAX_DECIMAL_PRECISION:
            raise SqlError(
                f"precision of DECIMAL must be in [1, {MAX_DECIMAL_PRECISION}], got {length}",
                code=Code.WRONG_VALUE_TYPE,
            )
        s = 0 if scale is None else scale
        if not 0 <= s <= length:
            raise SqlError(
                f"scale of DECIMAL must be in [0, {length}] (its precision), got {s}",
                code=Code.WRONG_VALUE_TYPE,
            )
        return TdType("DECIMAL", length, False, s)
    if scale is not None:
        raise SqlError(f"{name} takes one length, not a scale", code=Code.WRONG_VALUE_TYPE)
    top = _MAX_LENGTH[canon]
    if length is None:
        raise SqlError(f"{name} needs a length, e.g. {name}(32)", code=Code.WRONG_VALUE_TYPE)
    if not 1 <= length <= top:
        raise SqlError(f"length of {name} must be in [1, {top}], got {length}", code=Code.WRONG_VALUE_TYPE)
    return TdType(canon, length)


def check_placement(t: TdType, *, tag: bool, tag_count: int) -> str | None:
    """Why type ``t`` may not be a column (``tag=False``) or one of ``tag_count`` tags, else None.

    Rules (TDengine SQL manual, "JSON Type"; "Data Types", DECIMAL): JSON only as a tag and then
    the only tag (TSDB_CODE_PAR_INVALID_COL_JSON, TSDB_CODE_PAR_ONLY_ONE_JSON_TAG); DECIMAL is a
    column type only; VARBINARY and GEOMETRY tags hold at most 16382 bytes. ALTER TABLE ... ADD
    COLUMN / ADD TAG applies the same rules (``tag_count``: the tags after the change). Returns
    the message; the caller raises it with its position and the code from :func:`placement_code`.
    """
    if t.name == "JSON" and not tag:
        return "Only tag can be json type"
    if t.name == "JSON" and tag_count > 1:
        return "Only one tag if there is a json tag"
    if t.name == "DECIMAL" and tag:
        return "Invalid tag type: DECIMAL is a column type only"
    if tag and t.name in BINARY_TYPES and t.length > MAX_BINARY_TAG_LENGTH:
        return f"length of a {t.name} tag must be in [1, {MAX_BINARY_TAG_LENGTH}], got {t.length}"
    return None


def placement_code(t: TdType, *, tag: bool) -> int:
    """The TDengine code of :func:`check_placement`'s refusal of ``t``."""
    if t.name == "JSON":
        return Code.ONLY_ONE_JSON_TAG if tag else Code.INVALID_COL_JSON
    return Code.WRONG_VALUE_TYPE


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
    if pa.types.is_decimal(t) and t.scale > 0:  # scale 0: sums of integers, BIGINT UNSIGNED
        return TdType("DECIMAL", min(t.precision, MAX_DECIMAL_PRECISION), False, t.scale)
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return BIGINT
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return TdType("VARBINARY", 65517)
    if pa.types.is_float32(t):
        return FLOAT
    if pa.types.is_floating(t):
        return DOUBLE
    return varchar(256)
