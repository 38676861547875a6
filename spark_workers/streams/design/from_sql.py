"""SQL -> design: one CREATE STREAM statement, legacy (seed 000) or 3.3.7 (seed 002) syntax, as a
design document (``document``).

A legacy window query is split into the source, prefilter, trigger and computation nodes; the
computation becomes ``SELECT ... FROM %%trows`` with the 3.3.7 window placeholders
(``computation``). Durations, names and PARTITION BY items keep the text as written; expressions
and queries their canonical rendering.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.sql.render import expr_sql, query_sql
from spark_workers.streams.design.computation import (
    TO_337,
    from_table,
    is_trows,
    rename_columns,
    rename_text,
    trows_table,
)
from spark_workers.streams.design.document import FLAGS_337, empty_options
from spark_workers.streams.spec import LEGACY, SCHEMA_VERSION, V337, trigger_json


def design_from_sql(sql: str, default_db: str | None = None) -> dict[str, Any]:
    """The design of one CREATE STREAM statement, legacy (seed 000) or 3.3.7 (seed 002) syntax.

    Args:
        sql: exactly one statement (a trailing ``;`` is allowed).
        default_db: the database unqualified names refer to; kept as ``default_db`` (it is not
            written into the SQL).

    Returns:
        The design (``document``): ``syntax`` is the syntax written; ``layout`` is empty.

    Raises:
        SqlError: the parser's error unchanged for bad SQL; ``SYNTAX_ERROR`` when the statement is
            not a CREATE STREAM; ``INVALID_STREAM_QUERY`` when a legacy query does not read
            exactly one table (seed 000).
    """
    stmt = parse_one(sql)
    if isinstance(stmt, ast.CreateStreamLegacy):
        nodes = _legacy_nodes(stmt, sql)
        syntax = LEGACY
    elif isinstance(stmt, ast.CreateStream337):
        nodes = _nodes_337(stmt)
        syntax = V337
    else:
        raise SqlError(f"expected a CREATE STREAM statement, got {type(stmt).__name__}", sql=sql, offset=0)
    return {
        "schema_version": SCHEMA_VERSION,
        "name": stmt.name,
        "db": stmt.db,
        "default_db": default_db,
        "syntax": syntax,
        "if_not_exists": stmt.if_not_exists,
        "nodes": nodes,
        "layout": {},
    }


def _dur(d: Duration | None) -> str | None:
    return None if d is None else str(d)


def _expr(e: exp.Expr | None) -> str | None:
    return None if e is None else expr_sql(e)


def _output_of(
    into: ast.TableName | None,
    subtable: exp.Expr | None,
    columns: list[ast.OutputColumn] | None,
    tags: list[ast.OutputTagDef] | None,
) -> dict[str, Any] | None:
    if into is None:
        return None
    return {
        "db": into.db,
        "table": into.name,
        "subtable": _expr(subtable),
        "columns": [{"name": c.name, "composite_key": c.composite_key} for c in columns or []],
        "tags": [
            {
                "name": t.name,
                "type": t.type.sql if t.type else "",
                "comment": t.comment,
                "expr": _expr(t.expr),
            }
            for t in tags or []
        ],
    }


def _notify_of(n: ast.NotifyDef | None) -> dict[str, Any] | None:
    if n is None:
        return None
    return {
        "urls": list(n.urls),
        "events": list(n.events),
        "where": _expr(n.where),
        "history": n.history,
        "on_failure": n.on_failure,
    }


def _partition_of(items: list[ast.PartitionItem]) -> list[dict[str, Any]]:
    return [{"sql": p.text, "alias": p.alias} for p in items]


def _legacy_nodes(s: ast.CreateStreamLegacy, sql: str) -> dict[str, Any]:
    q = s.query
    table = from_table(q.select)
    if table is None or not table.name or table.alias or is_trows(table):
        raise SqlError(
            "a stream's query reads exactly one table (FROM [db.]table, without joins or alias)",
            sql=sql,
            offset=q.span.start if q.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    if q.window is None:  # seed 001/004 filter / scalar ETL streams: no trigger node draws them
        raise SqlError(
            "a legacy stream without a window clause (filter / scalar ETL, seed 001) has no trigger "
            "window to draw: the designer's graphs start from a trigger; create it in the SQL console",
            sql=sql,
            offset=q.span.start if q.span else None,
            code=Code.INVALID_STREAM_QUERY,
        )
    assert isinstance(q.select, exp.Select)
    where = q.select.args.get("where")
    sel = q.select.copy()
    sel.set("where", None)
    sel.args["from_"].set("this", trows_table())
    rename_columns(sel, TO_337)
    comp = ast.SelectQuery(select=sel, fill=q.fill, item_texts=[rename_text(t, TO_337) for t in q.item_texts])
    o = s.options
    options = empty_options()
    options.update(
        trigger_mode=o.trigger,
        max_delay=_dur(o.max_delay),
        recalculate=_dur(o.recalculate),
        watermark=_dur(o.watermark),
        ignore_expired=None if o.ignore_expired is None else bool(o.ignore_expired),
        ignore_update=None if o.ignore_update is None else bool(o.ignore_update),
        delete_mark=_dur(o.delete_mark),
        fill_history=None if o.fill_history is None else bool(o.fill_history),
        fill_history_async=o.fill_history_async,
        event_time=None if o.event_time is None else bool(o.event_time),
    )
    return {
        "source": {
            "db": table.db or None,
            "table": table.name,
            "partition_by": _partition_of(q.partition_by),
        },
        "prefilter": {"condition": expr_sql(where.this)} if where is not None else None,
        "trigger": trigger_json(q.window),
        "options": options,
        "computation": {"query": query_sql(comp)},
        "output": _output_of(s.into, s.subtable, s.columns, s.tags),
        "notify": _notify_of(s.notify),
    }


def _nodes_337(s: ast.CreateStream337) -> dict[str, Any]:
    o = s.options
    options = empty_options()
    options.update(
        max_delay=_dur(o.max_delay),
        watermark=_dur(o.watermark),
        fill_history=True if o.fill_history else None,
        expired_time=_dur(o.expired_time),
        fill_history_start=_expr(o.fill_history_start),
        event_type=list(o.event_type),
    )
    for k in FLAGS_337:
        options[k] = bool(getattr(o, k))
    source = None
    if s.from_table is not None or s.partition_by:
        source = {
            "db": s.from_table.db if s.from_table else None,
            "table": s.from_table.name if s.from_table else None,
            "partition_by": _partition_of(s.partition_by),
        }
    return {
        "source": source,
        "prefilter": {"condition": expr_sql(o.pre_filter)} if o.pre_filter is not None else None,
        "trigger": trigger_json(s.trigger),
        "options": options,
        "computation": {"query": query_sql(s.query)} if s.query is not None else None,
        "output": _output_of(s.into, s.output_subtable, s.columns, s.tags),
        "notify": _notify_of(s.notify),
    }
