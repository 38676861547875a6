"""CREATE STREAM of both syntaxes: the checks shared by them (the owner's privileges, output
conflicts, the FILL_HISTORY window cap), the output table and the registration.

A stream reads only what its owner may read and writes only where its owner may write
(``spark_workers.access``; docs/security.md "Roles").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from spark_workers import access
from spark_workers.access import READ, WRITE, Principal
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake.catalog import Catalog
from spark_workers.lake.names import check_name
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.sql.sandbox import check_stream
from spark_workers.streams.spec import (
    StreamSpec,
)

if TYPE_CHECKING:
    from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import CompiledStream, compile_stream, ensure_output_table
from spark_workers.streams.legacy import validate_stream
from spark_workers.streams.stored import compiled_to_json

FILL_HISTORY_MAX_WINDOWS = 20_000_000  # seed 000 "FILL_HISTORY"


def create_stream(ex: Executor, s: ast.CreateStreamLegacy, sql: str) -> None:
    """Validate a legacy CREATE STREAM completely, create or check its output table, then register
    it with the source's current lake version as its start (rows written after CREATE STREAM
    returns are processed even if the Spark query is still starting; FILL_HISTORY 1 processes the
    snapshot at that version first)."""
    check_name(s.name, "stream", sql=sql)
    if ex.registry.get(s.name, s.db) is not None:
        if s.if_not_exists:
            return
        raise CatalogError(f"stream {s.name} already exists", code=Code.STREAM_ALREADY_EXIST)
    spec, compiled = validate_stream(s, sql, default_db=ex.default_db, lake=ex.lake, tz=ex.tz)
    _register(ex, spec, compiled, sql, s.options.spans.get("fill_history"))


def create_stream_337(ex: Executor, s: ast.CreateStream337, sql: str) -> None:
    """Validate a TDengine 3.3.7 CREATE STREAM (``streams337.py``: window triggers over
    ``%%trows``), create or check its output table, then register it as ``create_stream`` does."""
    from spark_workers.streams.v337 import spec_337

    check_name(s.name, "stream", sql=sql)
    if ex.registry.get(s.name, s.db) is not None:
        if s.if_not_exists:
            return
        raise CatalogError(f"stream {s.name} already exists", code=Code.STREAM_ALREADY_EXIST)
    check_stream(s, sql)  # the front door: TDengine's SQL only (sandbox.py)
    spec = spec_337(s, sql, ex.default_db, ex.catalog)
    _register(ex, spec, compile_stream(spec, ex.lake, ex.tz), sql, s.options.spans.get("fill_history"))


def stream_tables(spec: StreamSpec) -> tuple[list[tuple[str, str]], tuple[str, str] | None]:
    """What a stream reads and writes: ``(db, table)`` of its trigger table and of every table its
    query or computation names (placeholder tables ``%%trows``/``%%tbname``, CTEs and
    ``information_schema`` excluded), and ``(db, table)`` of its output table (None for
    notify-only streams)."""
    reads: list[tuple[str, str]] = []
    if spec.source is not None:
        reads.append((spec.source.db, spec.source.table))
    home = spec.source.db if spec.source is not None else (spec.db or "")
    if spec.query:
        try:
            stmt = parse_one(spec.query)
        except SqlError:
            stmt = None
        sel = stmt.query.select if isinstance(stmt, ast.Select) else None
        if sel is not None:
            ctes = {c.alias.lower() for c in sel.find_all(exp.CTE)}
            for t in sel.find_all(exp.Table):
                name = t.name
                if not name or name.startswith("__td_") or (not t.db and name.lower() in ctes):
                    continue
                db = t.db or home
                if db.lower() == "information_schema":
                    continue
                if (db, name) not in reads:
                    reads.append((db, name))
    out = (spec.output.db, spec.output.table) if spec.output is not None else None
    return reads, out


def check_stream_access(
    principal: Principal, spec: StreamSpec, catalog: Catalog, *, writes: bool = True
) -> None:
    """A stream reads only what its owner may read and writes only where its owner may write
    (``spark_workers.access``): READ on every table of :func:`stream_tables`, WRITE on the output
    table (on its database when the table does not exist yet) and on the database a 3.3.7 stream
    belongs to. Run at CREATE STREAM and each time a worker starts the stream; a preview, which
    writes nothing, checks the reads only (``writes=False``).

    Raises:
        SqlError: PERMISSION_DENIED naming the table and the privilege missing.
    """
    reads, out = stream_tables(spec)
    for dbname, name in reads:
        db = catalog.database(dbname)
        if db is None:
            continue  # compiling the stream reports it
        t = catalog.table(db.name, name)
        access.require(principal, READ, db, t.storage if t is not None else name)
    if not writes:
        return
    if out is not None:
        db = catalog.database(out[0])
        if db is not None:
            t = catalog.table(db.name, out[1])
            access.require(principal, WRITE, db, t.storage if t is not None else None)
    if spec.db:
        db = catalog.database(spec.db)
        if db is not None:
            access.require(principal, WRITE, db)


def _register(
    ex: Executor, spec: StreamSpec, compiled: CompiledStream, sql: str, history_span: ast.Span | None
) -> None:
    """The checks shared by both syntaxes (privileges, output conflicts, the FILL_HISTORY cap),
    then the output table and the registration."""
    assert spec.source is not None
    check_stream_access(ex.principal, spec, ex.catalog)
    if (
        spec.output is not None
        and spec.output.db.lower() == spec.source.db.lower()
        and (
            spec.output.table.lower()
            in (compiled.source.table.name.lower(), compiled.source.storage.name.lower())
        )
    ):
        raise SqlError(
            "a stream cannot write into its own source table", sql=sql, code=Code.STREAM_OUTPUT_CONFLICT
        )
    for other in ex.registry.list():
        o = other.spec.output
        if (
            o is not None
            and spec.output is not None
            and o.db.lower() == spec.output.db.lower()
            and o.table.lower() == spec.output.table.lower()
        ):
            raise SqlError(
                f"stream {other.name} already writes to {o.db}.{o.table}; two streams cannot share "
                "an output table (seed 001)",
                sql=sql,
                code=Code.STREAM_OUTPUT_CONFLICT,
            )
    version = ex.lake.version(spec.source.db, compiled.source.storage.name)
    if spec.options.fill_history:
        _check_history_windows(compiled, ex.lake, version, sql, history_span)
    if compiled.has_output:
        ensure_output_table(compiled, ex.lake, sql=sql)
    ex.registry.create(
        spec,
        compiled=compiled_to_json(compiled, tz=ex.tz),
        start_version=version,
        history_version=version if spec.options.fill_history else None,
        owner=ex.principal.name,
    )


def history_window_estimate(c: CompiledStream, lake: Any, version: int) -> int | None:
    """Upper bound of the windows FILL_HISTORY computes: INTERVAL windows spanning the history's
    time range (per partition), COUNT windows over its rows; None where no bound is known before
    computing (data-defined windows)."""
    db = c.source.db
    buckets = lake.buckets(db.name, c.source.storage.name, version)
    if not buckets:
        return 0
    rows = sum(n for _, n in buckets)
    span_unit = db.duration.in_precision(db.precision)
    lo, hi = buckets[0][0] * span_unit, (buckets[-1][0] + 1) * span_unit
    groups = 1
    if c.plan.groups and c.source.table.kind == "super":
        groups = max(1, len(lake.catalog.tables(db.name, kinds=("sub",), stable=c.source.storage.name)))
    sh = c.shape
    if sh.kind == "interval":
        step = sh.step or sh.size
        return groups * ((hi - lo) // step + -(-sh.size // step))
    if sh.kind in ("count", "ek_count"):
        return rows // (sh.step or sh.size) + groups
    return None


def _check_history_windows(
    c: CompiledStream, lake: Any, version: int, sql: str, span: ast.Span | None
) -> None:
    """Seed 000: "The maximum number of windows for processing historical data is 20 million,
    exceeding this limit will result in an error"."""
    n = history_window_estimate(c, lake, version)
    if n is not None and n > FILL_HISTORY_MAX_WINDOWS:
        raise SqlError(
            f"FILL_HISTORY would compute up to {n:,} windows; the limit is {FILL_HISTORY_MAX_WINDOWS:,} "
            "(seed 000): narrow the history with WHERE ts >= ... or use a larger window",
            sql=sql,
            offset=span.start if span else None,
            code=Code.INVALID_OPERATION,
        )
