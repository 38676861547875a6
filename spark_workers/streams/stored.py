"""A compiled stream as it is stored with the stream: what the worker runs, without parsing SQL.

CREATE STREAM compiles a stream once (``compile.compile_stream``); its :class:`CompiledStream` is
kept as JSON beside the stream (the Django model's ``Stream.compiled``), and a worker turns that
JSON back into the same object: window plans, expressions (sqlglot trees through
``sqlglot.serde``, their token positions kept), engine shapes and rules, output mapping, the
3.3.7 computation's parsed query. Tables are named by ``(database, table)`` and looked up in the
catalog again (a dropped source fails the stream's start with TABLE_NOT_EXIST, as before).

Shape::

    {"format": 1, "spec": <StreamSpec JSON>, "tz": str,
     "durations_ms": {"watermark": int, "max_delay": int, ...},   # for people and tools
     "compiled": <encoded CompiledStream fields>}

Only the types listed in :data:`_TYPES` are rebuilt from JSON (never a class named by the data).
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pyarrow as pa
from sqlglot import exp, serde

from spark_workers.duration import Duration
from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.shape import WindowShape
from spark_workers.engine.stream import StreamRules
from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.query.compute import Computation
from spark_workers.query.fill import FillSpec
from spark_workers.query.planner import NO_TABLE, GroupColumn, Source, WindowPlan, resolve, tableless_source
from spark_workers.sql import ast
from spark_workers.streams.compile import CompiledStream, OutputColumnPlan, TagPlan, compile_stream
from spark_workers.streams.spec import NotifySpec, StreamSpec
from spark_workers.tdtypes import TdType

FORMAT = 1

_TYPES: dict[str, type] = {
    t.__name__: t
    for t in (
        AggSpec,
        WindowShape,
        StreamRules,
        GroupColumn,
        WindowPlan,
        OutputColumnPlan,
        TagPlan,
        NotifySpec,
        Duration,
        TdType,
        ast.Span,
        ast.TableName,
        ast.PartitionItem,
        ast.Fill,
        ast.SelectQuery,
        ast.IntervalWindow,
        ast.SessionWindow,
        ast.StateWindow,
        ast.EventWindow,
        ast.CountWindow,
        ast.EkuiperWindow,
        FillSpec,
    )
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode(v: Any) -> Any:
    """JSON-able form of ``v`` (see module docstring)."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, exp.Expr):
        return {"$expr": serde.dump(v)}
    if isinstance(v, Source):
        return {"$source": [v.db.name, v.table.name]}
    if isinstance(v, Computation):
        return {
            "$computation": {
                "sql": v.sql,
                "q": _encode(v.q),
                "trigger": _encode(v.trigger),
                "default_db": v.default_db,
                "tz": v.tz,
                "pre_filter": _encode(v.pre_filter),
                "partition_types": _encode(v.partition_types),
            }
        }
    if isinstance(v, StreamSpec):
        return {"$spec": v.to_json()}
    if isinstance(v, pa.Schema):
        return {"$arrow_schema": _b64(v.serialize().to_pybytes())}
    if isinstance(v, pa.DataType):
        return {"$arrow_type": _b64(pa.schema([pa.field("t", v)]).serialize().to_pybytes())}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = type(v).__name__
        if _TYPES.get(name) is not type(v):
            raise TypeError(f"{name} cannot be stored")
        return {"$dc": name, "f": {f.name: _encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, tuple):
        return {"$tuple": [_encode(x) for x in v]}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {"$dict": [[_encode(k), _encode(x)] for k, x in v.items()]}
    raise TypeError(f"{type(v).__name__} cannot be stored")


class _Decoder:
    """Rebuilds encoded values; tables are resolved in ``lake``'s catalog once each."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self.sources: dict[tuple[str, str], Source] = {}

    def source(self, db: str, table: str) -> Source:
        key = (db, table)
        if key not in self.sources and table == NO_TABLE:  # a stream reading no table
            self.sources[key] = tableless_source(self.lake.catalog.require_database(db))
        if key not in self.sources:
            self.sources[key] = resolve(self.lake.catalog, ast.TableName(table, db), db)
        return self.sources[key]

    def __call__(self, v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float | str):
            return v
        if isinstance(v, list):
            return [self(x) for x in v]
        if "$expr" in v:
            return serde.load(v["$expr"])
        if "$source" in v:
            return self.source(*v["$source"])
        if "$computation" in v:
            c = v["$computation"]
            return Computation.restore(
                sql=c["sql"],
                q=self(c["q"]),
                trigger=self(c["trigger"]),
                default_db=c["default_db"],
                tz=c["tz"],
                pre_filter=self(c["pre_filter"]),
                partition_types=self(c["partition_types"]),
            )
        if "$spec" in v:
            return StreamSpec.from_json(v["$spec"])
        if "$arrow_schema" in v:
            return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(v["$arrow_schema"])))
        if "$arrow_type" in v:
            return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(v["$arrow_type"]))).field("t").type
        if "$dc" in v:
            cls = _TYPES[v["$dc"]]
            return cls(**{k: self(x) for k, x in v["f"].items()})
        if "$tuple" in v:
            return tuple(self(x) for x in v["$tuple"])
        if "$dict" in v:
            return {self(k): self(x) for k, x in v["$dict"]}
        raise ValueError(f"not a stored value: {sorted(v)[:3]}")


def _durations_ms(c: CompiledStream) -> dict[str, int]:
    """The rules' durations in milliseconds (they are kept in the source's precision)."""
    per_ms = {"ms": 1, "us": 1_000, "ns": 1_000_000}[c.precision]
    r = c.rules
    return {
        k: int(getattr(r, k)) // per_ms
        for k in ("watermark", "delete_mark", "max_delay", "recalc_every")
        if isinstance(getattr(r, k, None), int)
    }


def compiled_to_json(c: CompiledStream, *, tz: str) -> dict[str, Any]:
    """The JSON kept with a stream for ``c`` (compiled in time zone ``tz``).

    Raises:
        TypeError: ``c`` holds a value that cannot be stored (a bug, not a user error).
    """
    fields = {f.name: _encode(getattr(c, f.name)) for f in dataclasses.fields(c) if f.name != "spec"}
    return {
        "format": FORMAT,
        "spec": c.spec.to_json(),
        "tz": tz,
        "durations_ms": _durations_ms(c),
        "compiled": fields,
    }


def stream_compiled(spec: StreamSpec, stored: dict[str, Any] | None, lake: Lake, tz: str) -> CompiledStream:
    """What a worker runs for a registered stream: its stored compiled form, without parsing; a
    stream registered before compiled forms were stored is compiled from its spec.

    Raises:
        SqlError / CatalogError: a table of the stream no longer exists (or does not fit).
    """
    if stored is None:
        return compile_stream(spec, lake, tz)
    return compiled_from_json(stored, lake)


def compiled_from_json(data: dict[str, Any], lake: Lake) -> CompiledStream:
    """The :class:`CompiledStream` stored as ``data``, its tables looked up in ``lake``.

    Raises:
        SqlError / CatalogError: a table of the stream no longer exists (TABLE_NOT_EXIST,
            DB_NOT_EXIST); INVALID_OPERATION for a stored form of another format.
    """
    if data.get("format") != FORMAT:
        raise SqlError(
            f"the stored compiled stream has format {data.get('format')!r}, not {FORMAT}: recompile it",
            code=Code.INVALID_OPERATION,
        )
    decode = _Decoder(lake)
    fields = {k: decode(v) for k, v in data["compiled"].items()}
    return CompiledStream(spec=StreamSpec.from_json(data["spec"]), **fields)
