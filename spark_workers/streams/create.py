"""CREATE STREAM of both syntaxes: the checks shared by them (the owner's privileges, output
conflicts, the FILL_HISTORY window cap), the output table and the registration.

A stream reads only what its owner may read and writes only where its owner may write
(``spark_workers.access``; docs/security.md "Roles").
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from sqlglot import exp

from spark_workers import access
from spark_workers.access import READ, WRITE, Principal
from spark_workers.errors import CatalogError, Code, SqlError
from spark_workers.lake.catalog import Catalog, Table
from spark_workers.lake.changes import ChangeReader, VirtualChangeReader
from spark_workers.lake.keys import check_composite_key, key_column
from spark_workers.lake.names import check_name
from spark_workers.lake.store import Lake
from spark_workers.lake.virtual import plan as virtual_plan
from spark_workers.lake.virtual import storages as virtual_storages
from spark_workers.query.planner import is_tableless
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.sql.sandbox import check_stream
from spark_workers.streams.compile import CompiledStream, compile_stream, ensure_output_table
from spark_workers.streams.legacy import compile_legacy, legacy_spec, validate_options
from spark_workers.streams.registry import StreamInfo, StreamRegistry
from spark_workers.streams.spec import (
    StreamSpec,
)
from spark_workers.streams.stored import compiled_to_json
from spark_workers.streams.v337 import check_temporary_functions, spec_337

FILL_HISTORY_MAX_WINDOWS = 20_000_000  # seed 000 "FILL_HISTORY"


class StreamContext(Protocol):
    """What CREATE STREAM runs with (``statements.session.Session`` is one): the lake, the time
    zone and default database of unqualified names, the user creating it, the registry."""

    lake: Lake
    tz: str
    default_db: str | None
    principal: Principal
    registry: StreamRegistry

    @property
    def catalog(self) -> Catalog: ...


Statement = ast.CreateStreamLegacy | ast.CreateStream337


def check_create_stream(
    ctx: StreamContext, s: Statement, sql: str, *, replacing: StreamInfo | None = None
) -> tuple[StreamSpec, CompiledStream]:
    """Every check CREATE STREAM makes, for both syntaxes, without changing anything — the one
    validator of the SQL console, the REST API and the designer (and of CREATE STREAM itself):

    - the stream's name (TDengine's naming rules) is free among live streams;
    - TDengine's SQL only (``sql/sandbox.py``);
    - the statement's rules (seed 000/001 legacy options, seed 002 triggers, options, outputs);
    - the user's privileges: READ on what it reads, WRITE where it writes (:func:`check_stream_access`);
    - it compiles against the catalog (``compile.compile_stream``);
    - composite keys: ``COMPOSITE KEY`` on the second output column, of a key type; no legacy
      state, event or count window over a table with one (:func:`check_composite_keys`);
    - its output is not its own source and no other stream writes it (seed 001);
    - FILL_HISTORY computes at most 20 million windows (seed 000);
    - an existing output table fits (seed 000 "Writing to an existing supertable").

    Args:
        ctx: the client: its lake, time zone, default database, principal and registry.
        s: the parsed statement, whose text is ``sql``.
        replacing: a stream a redeploy drops first: its name and output table are not in use.

    Returns:
        The stream's spec and its compiled form.

    Raises:
        SqlError / CatalogError: positioned in ``sql`` where the check knows the place.
    """
    check_name(s.name, "stream", sql=sql)
    existing = ctx.registry.get(s.name, s.db)
    if existing is not None and not _same_stream(existing, replacing):
        raise CatalogError(f"stream {s.name} already exists", code=Code.STREAM_ALREADY_EXIST)
    spec = statement_spec(s, sql, ctx.default_db, ctx.catalog)
    check_stream_access(ctx.principal, spec, ctx.catalog)
    compiled = compile_statement(s, spec, sql, ctx.lake, ctx.tz)
    check_composite_keys(s, compiled, sql)
    check_virtual_source(s, spec, compiled.source.table if compiled.source else None, sql, ctx.catalog)
    _check_output(ctx, spec, compiled, sql, replacing)
    if spec.options.fill_history:
        version = source_version(ctx.lake, compiled)
        _check_history_windows(compiled, ctx.lake, version, sql, s.options.spans.get("fill_history"))
    if compiled.has_output and ctx.catalog.table(compiled.out_db, compiled.out_table) is not None:
        ensure_output_table(compiled, ctx.lake, sql=sql)  # an existing table is only checked
    return spec, compiled


def statement_spec(s: Statement, sql: str, default_db: str | None, catalog: Catalog) -> StreamSpec:
    """The StreamSpec of a CREATE STREAM statement of either syntax after the statement's own
    rules (TDengine's SQL only; seed 000/001 legacy options; seed 002 triggers, options, outputs),
    before anything is looked up beyond the trigger table.

    Raises:
        SqlError: positioned in ``sql``.
    """
    if isinstance(s, ast.CreateStream337):  # named by seed 002's restriction, before the sandbox
        check_temporary_functions(s, sql)
    check_stream(s, sql)  # the front door: TDengine's SQL only (sandbox.py)
    if isinstance(s, ast.CreateStreamLegacy):
        spec = legacy_spec(s, sql, default_db)
        validate_options(spec, sql, s.options.spans)
        return spec
    return spec_337(s, sql, default_db, catalog)


def compile_statement(s: Statement, spec: StreamSpec, sql: str, lake: Lake, tz: str) -> CompiledStream:
    """``compile.compile_stream`` of a statement's spec, its errors positioned in ``sql``."""
    if isinstance(s, ast.CreateStreamLegacy):
        return compile_legacy(s, spec, sql, lake, tz)
    try:
        return compile_stream(spec, lake, tz)
    except SqlError as e:
        raise e.at(sql, None) from None


def create_stream(ctx: StreamContext, s: Statement, sql: str) -> bool:
    """CREATE STREAM of either syntax: :func:`check_create_stream`, then the output table and the
    registration, with the source's current lake version as the stream's start (rows written after
    CREATE STREAM returns are processed even if the Spark query is still starting; FILL_HISTORY 1
    processes the snapshot at that version first) and the client as its owner.

    Returns:
        False when the stream exists and the statement says IF NOT EXISTS (nothing changed).
    """
    if s.if_not_exists and ctx.registry.get(s.name, s.db) is not None:
        return False
    spec, compiled = check_create_stream(ctx, s, sql)
    version = source_version(ctx.lake, compiled)
    if compiled.has_output:
        ensure_output_table(compiled, ctx.lake, sql=sql)
    ctx.registry.create(
        spec,
        compiled=compiled_to_json(compiled, tz=ctx.tz),
        start_version=version,
        history_version=version if spec.options.fill_history else None,
        owner=ctx.principal.name,
    )
    return True


LEGACY_NO_COMPOSITE_KEY = {"state": "STATE_WINDOW", "event": "EVENT_WINDOW", "count": "COUNT_WINDOW"}


def check_composite_keys(s: Statement, compiled: CompiledStream, sql: str) -> None:
    """Composite keys of a stream (``lake/keys.py``):

    - ``COMPOSITE KEY`` in the output column list names the second column, whose computed type
      is INT, INT UNSIGNED, BIGINT, BIGINT UNSIGNED or VARCHAR (seed 000 and seed 002 "Stream
      Processing Output": "the second column is a primary key column");
    - seed 000 "Creating Stream Computing": "For streams whose data source tables have composite
      primary keys, state windows, event windows, and count windows are not supported" — a
      legacy stream with one of them over such a table is refused, naming the seed.

    Raises:
        SqlError: INVALID_COLUMN at the output column; NOT_SUPPORTED at the window clause.
    """
    for i, oc in enumerate(s.columns or []):
        if oc.composite_key and i < len(compiled.columns):
            off = oc.span.start if oc.span else None
            check_composite_key(oc.name, compiled.columns[i].type, i, sql=sql, offset=off)
    window = LEGACY_NO_COMPOSITE_KEY.get(compiled.shape.kind)
    key = key_column(compiled.source.storage)
    if isinstance(s, ast.CreateStreamLegacy) and window is not None and key is not None:
        span = getattr(s.query.window, "span", None)
        raise SqlError(
            f"{window} is not supported over {compiled.source.table.name}, whose column {key.name} is "
            "a composite key: seed 000 does not support state, event and count windows in streams "
            "whose source tables have composite primary keys",
            sql=sql,
            offset=span.start if span is not None else None,
            code=Code.NOT_SUPPORTED,
        )


def source_version(lake: Lake, compiled: CompiledStream) -> int:
    """The offset a stream's source starts from: its storage table's current lake version; for a
    virtual table the version of the one storage table its columns reference, or the time of
    the newest commit when they reference several (``lake/changes.py`` ``VirtualChangeReader``)."""
    src = compiled.source
    if is_tableless(src):  # a 3.3.7 PERIOD without FROM reads no table
        return 0
    if src.table.virtual:
        reader = ChangeReader(lake, src.db.name, src.table.name)
        assert isinstance(reader, VirtualChangeReader)
        return reader.start_offset()
    return lake.version(src.db.name, src.storage.name)


# seed 000 "Support for Virtual Tables in Stream Computing", the restrictions of the legacy syntax
_VIRTUAL_LEGACY = "seed 000, Support for Virtual Tables in Stream Computing"


def check_virtual_source(
    s: Statement, spec: StreamSpec, table: Table | None, sql: str, catalog: Catalog
) -> None:
    """A stream whose trigger table is a virtual table: its columns reference existing tables, and
    a legacy stream keeps seed 000's restrictions: WATERMARK 0, no ``IGNORE UPDATE 0`` /
    ``IGNORE EXPIRED 0``, no ``FILL_HISTORY 1``, no MAX_DELAY / CONTINUOUS_WINDOW_CLOSE /
    FORCE_WINDOW_CLOSE trigger, no COUNT_WINDOW. (Seed 002 lists none of these for the 3.3.7
    syntax: its options run on virtual tables as on any table.)

    Raises:
        SqlError: INVALID_OPERATION positioned at the option, naming the seed's rule;
            INVALID_TABLE_TYPE for a virtual table that references no existing table.
    """
    if table is None or not table.virtual:
        return
    try:
        virtual_plan(catalog, table)
    except CatalogError as e:
        raise SqlError(e.message, sql=sql, code=e.code) from None
    if not isinstance(s, ast.CreateStreamLegacy):
        return
    o, spans = s.options, s.options.spans
    refusals = [
        ("watermark", o.watermark is not None and o.watermark.ns != 0, "the watermark must be 0"),
        (
            "ignore_update",
            o.ignore_update == 0,
            "IGNORE UPDATE 0 cannot be specified (updates are not handled)",
        ),
        (
            "ignore_expired",
            o.ignore_expired == 0,
            "IGNORE EXPIRED 0 cannot be specified (out-of-order data is not handled)",
        ),
        (
            "fill_history",
            o.fill_history == 1,
            "FILL_HISTORY 1 cannot be specified (no historical computation)",
        ),
        (
            "trigger",
            o.trigger in ("MAX_DELAY", "CONTINUOUS_WINDOW_CLOSE", "FORCE_WINDOW_CLOSE"),
            f"the trigger mode {o.trigger} is not supported",
        ),
        ("", spec.trigger.get("type") == "count", "COUNT_WINDOW is not supported"),
    ]
    for key, bad, why in refusals:
        if bad:
            span = spans.get(key)
            raise SqlError(
                f"a stream over virtual table {table.name}: {why} ({_VIRTUAL_LEGACY})",
                sql=sql,
                offset=span.start if span else None,
                code=Code.INVALID_OPERATION,
            )


def _same_stream(a: StreamInfo, b: StreamInfo | None) -> bool:
    return b is not None and a.name.lower() == b.name.lower() and (a.db or "").lower() == (b.db or "").lower()


def _check_output(
    ctx: StreamContext, spec: StreamSpec, compiled: CompiledStream, sql: str, replacing: StreamInfo | None
) -> None:
    """Seed 001: a stream writes neither its own source nor another stream's output table; seed
    002 (Rules and Limitations): the output table "cannot be the same as the trigger table or the
    source table" (any table the computation reads)."""
    out = spec.output
    if out is None:
        return
    source = compiled.source
    if out.db.lower() == source.db.name.lower() and out.table.lower() in (
        source.table.name.lower(),
        source.storage.name.lower(),
    ):
        raise SqlError(
            "a stream cannot write into its own source table",
            sql=sql,
            offset=_into_offset(sql),
            code=Code.STREAM_OUTPUT_CONFLICT,
        )
    for db, name in stream_tables(spec)[0]:
        t = ctx.catalog.table(db, name)
        names = {name.lower()} | ({t.storage.lower()} if t is not None and t.kind == "sub" else set())
        if db.lower() == out.db.lower() and out.table.lower() in names:
            raise SqlError(
                f"a stream cannot write into a table its computation reads ({db}.{name}): the output "
                "table cannot be the trigger table or a source table (seed 002, Rules and Limitations)",
                sql=sql,
                offset=_into_offset(sql),
                code=Code.STREAM_OUTPUT_CONFLICT,
            )
    for other in ctx.registry.list():
        o = other.spec.output
        if _same_stream(other, replacing) or o is None:
            continue
        if (o.db.lower(), o.table.lower()) == (out.db.lower(), out.table.lower()):
            raise SqlError(
                f"stream {other.name} already writes to {o.db}.{o.table}; two streams cannot share "
                "an output table (seed 001)",
                sql=sql,
                code=Code.STREAM_OUTPUT_CONFLICT,
            )


def _into_offset(sql: str) -> int | None:
    """Offset of the output table's name (after the first ``INTO``) in ``sql``, if found."""
    m = re.search(r"\binto\s+", sql, re.IGNORECASE)
    return m.end() if m else None


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
        if t is not None and t.virtual:  # and what it references (query/context.py)
            for ref_db, storage in virtual_storages(catalog, t):
                access.require(principal, READ, catalog.require_database(ref_db), storage)
    if not writes:
        return
    if out is not None:
        db = catalog.database(out[0])
        if db is not None:
            t = catalog.table(db.name, out[1])
            if t is not None and t.virtual:
                raise SqlError(
                    f"Virtual table not support in STMT query and STMT insert: a stream cannot write "
                    f"into virtual table {db.name}.{t.name} (virtual tables are read-only)",
                    code=Code.VTABLE_NOT_SUPPORT_STMT,
                )
            access.require(principal, WRITE, db, t.storage if t is not None else None)
    if spec.db:
        db = catalog.database(spec.db)
        if db is not None:
            access.require(principal, WRITE, db)


def _history_span(c: CompiledStream, lake: Any, version: int) -> tuple[int, int, int] | None:
    """``(rows, first bucket start, last bucket end)`` of a source's history (precision units),
    None when empty; a virtual table's over the storage tables it reads."""
    parts = [(c.source.db, c.source.storage.name, version)]
    if c.source.table.virtual:
        reader = ChangeReader(lake, c.source.db.name, c.source.table.name)
        assert isinstance(reader, VirtualChangeReader)
        parts = [
            (sdb, st.name, reader.version_at(i, version) if reader.clock else version)
            for i, (sdb, st, _) in enumerate(reader.parts)
        ]
    rows, lo, hi = 0, None, None
    for db, storage, v in parts:
        buckets = lake.buckets(db.name, storage, v) if v >= 0 else []
        if not buckets:
            continue
        unit = db.duration.in_precision(db.precision)
        rows += sum(n for _, n in buckets)
        lo = buckets[0][0] * unit if lo is None else min(lo, buckets[0][0] * unit)
        hi = (buckets[-1][0] + 1) * unit if hi is None else max(hi, (buckets[-1][0] + 1) * unit)
    return None if lo is None or hi is None else (rows, lo, hi)


def history_window_estimate(c: CompiledStream, lake: Any, version: int) -> int | None:
    """Upper bound of the windows FILL_HISTORY computes: INTERVAL windows spanning the history's
    time range (per partition), COUNT windows over its rows; None where no bound is known before
    computing (data-defined windows)."""
    db = c.source.db
    span = _history_span(c, lake, version)
    if span is None:
        return 0
    rows, lo, hi = span
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
