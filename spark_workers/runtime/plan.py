"""From a CompiledStream to the pieces each runtime needs: the kernel config and stage 1."""

from __future__ import annotations

import dataclasses
import os

from sqlglot import exp

from spark_workers.query.select import AT_FACTOR, stage1_sql
from spark_workers.runtime.kernel import KernelConfig
from spark_workers.runtime.premerge import eligible
from spark_workers.sql.translate import to_sql
from spark_workers.streams.compile import CompiledStream
from spark_workers.streams.spec import V337

META = ("_ct", "_cv", "_seq", "_hist", "_bv", "_at")


def kernel_config(c: CompiledStream, lake_root: str, tz: str, catalog_url: str = "") -> KernelConfig:
    """The picklable kernel settings of a compiled stream (``catalog_url``: the lake's catalog,
    ``TDWEB_CATALOG_URL``, "" for SQLite in the lake)."""
    groups = c.plan.groups
    by_tbname = (
        len(groups) == 1
        and isinstance(groups[0].expr, exp.Column)
        and groups[0].expr.name.lower() == "tbname"
    )
    cfg = KernelConfig(
        lake_root=str(lake_root),
        catalog_url=catalog_url,
        db=c.source.db.name,
        table=c.source.storage.name,
        tbname_filter=c.source.tbname_filter,
        tz=tz,
        precision=c.precision,
        shape=c.shape,
        aggs=tuple(c.aggs),
        rules=c.rules,
        groups=tuple(g.name for g in groups),
        group_is_tbname=by_tbname,
        inputs=tuple(c.plan.inputs),
        extras=tuple(c.plan.extra_columns),
        stage1_sql=stage1_sql(c.plan, "__SOURCE__", "duckdb", tz),
        input_types=tuple(c.input_types.items()),
        ignore_delete=c.spec.syntax == V337 and not c.spec.options.delete_recalc,
    )
    # TDWEB_PREMERGE=0 turns the pre-aggregation off, TDWEB_PACK=0 the packing of the rows in,
    # TDWEB_PACK_OUTPUT=0 that of the windows out (benchmarks compare)
    premerge = eligible(cfg) and os.environ.get("TDWEB_PREMERGE", "1") != "0"
    pack = not premerge and os.environ.get("TDWEB_PACK", "1") != "0" and packable(c)
    pack_output = os.environ.get("TDWEB_PACK_OUTPUT", "1") != "0"
    return dataclasses.replace(cfg, premerge=premerge, pack=pack, pack_output=pack_output)


def packable(c: CompiledStream) -> bool:
    """Can the stream's rows cross Spark's shuffle packed (``runtime/packing.py``)? When every
    PARTITION BY value is a plain column (tbname, a tag, a column): DuckDB's stage 1 and Spark
    SQL's read those with the same types, so Spark's hash puts each group in the bucket an
    unpacked run put it in, and a checkpoint written before packing keeps its groups. An
    expression can be typed differently by the two (``s + 1`` on a SMALLINT: INT in Spark SQL,
    SMALLINT in DuckDB), which would move its groups to other buckets: such streams go unpacked."""
    return all(isinstance(g.expr, exp.Column) for g in c.plan.groups)


def stage1_duckdb(c: CompiledStream, tz: str, view: str = "__SOURCE__") -> str:
    """Stage 1 in DuckDB over change-feed rows of ``view``, carrying the change-feed meta columns
    (``META``) along: what the local runner and the source-side pre-aggregation run."""
    sql = stage1_sql(c.plan, view, "duckdb", tz, passthrough=META, processing_time=c.rules.processing_time)
    if c.history_from is not None:  # FILL_HISTORY(start): history rows before it trigger nothing
        sql = f'SELECT * FROM ({sql}) AS __td_h WHERE NOT "_hist" OR "_ts" >= {int(c.history_from)}'
    return sql


def stage1_spark(c: CompiledStream, tz: str) -> tuple[str | None, list[str]]:
    """Spark SQL of stage 1: the WHERE condition (or None) and the select expressions
    (``_g*``, ``_ts``, ``_i*`` and the meta columns)."""
    scope = c.source.scope(tz)
    ts = "`" + c.source.table.columns[0].name.replace("`", "``") + "`"
    ts_expr = {
        "ms": f"CAST(unix_micros({ts}) DIV 1000 AS BIGINT)",
        "us": f"unix_micros({ts})",
        "ns": f"CAST({ts} AS BIGINT)",
    }[c.precision]
    if c.rules.processing_time:  # EVENT_TIME 0: windows follow the arrival time (seed 003)
        ts_expr = f"CAST(`_at` * {AT_FACTOR[c.precision]} AS BIGINT)"
    exprs = [f"{to_sql(g.expr, 'spark', scope)} AS `{g.name}`" for g in c.plan.groups]
    exprs.append(f"{ts_expr} AS `_ts`")
    exprs += [f"{to_sql(e, 'spark', scope)} AS `{n}`" for n, e in c.plan.inputs.items()]
    exprs += [f"{to_sql(c.plan.extras[k], 'spark', scope)} AS `{col}`" for k, col in c.plan.extra_columns]
    exprs += [f"`{m}`" for m in META]
    cond = to_sql(c.plan.filter, "spark", scope) if c.plan.filter is not None else None
    if c.history_from is not None:  # FILL_HISTORY(start): history rows before it trigger nothing
        hist = f"(NOT `_hist` OR {ts_expr} >= {int(c.history_from)})"
        cond = hist if cond is None else f"({cond}) AND {hist}"
    return cond, exprs
