"""Statements (:mod:`spark_workers.sql.ast`) -> canonical TDengine SQL text.

``parse_one(render(stmt))`` gives back a statement equal to ``stmt`` apart from spans and
``text`` fields. Expressions are printed by the TDengine dialect's generator
(:mod:`spark_workers.sql.dialect`): durations as written (``1h``), ``now``, placeholders
(``%%trows``, ``%%tbname``, ``%%1``). Keywords are upper case; names are backticked only when
they need it. Select-list items and PARTITION BY items are printed as they were written when
their text still parses to the same expression, so legacy output column names (``min(k)``,
seed 000 "Writing to an existing supertable") survive a round trip.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from sqlglot import exp

from spark_workers.errors import SqlError
from spark_workers.sql import ast
from spark_workers.sql.dialect import DIALECT, TDengine
from spark_workers.sql.lexer import WINDOW_KEYWORDS
from spark_workers.sql.parser import parse_expression

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DURATION_LIKE = re.compile(r"^-?\d+[a-zA-Z]?$")
_RESERVED = frozenset(
    {w for w in TDengine.Tokenizer.KEYWORDS if re.match(r"^[A-Z_]+$", w)}
    | {
        "STABLE",
        "STABLES",
        "STREAM",
        "STREAMS",
        "TAGS",
        "USING",
        "VALUES",
        *WINDOW_KEYWORDS,
        "PARTITION",
        "NOTIFY",
        "TRIGGER",
        "WATERMARK",
        "SUBTABLE",
        "OUTPUT_SUBTABLE",
        "STREAM_OPTIONS",
        "PERIOD",
        "TRUE_FOR",
        "DATABASE",
        "DATABASES",
    }
)


def expr_sql(e: exp.Expr) -> str:
    """One expression in TDengine SQL (``now - 10s``, ``%%tbname``, ``CONCAT('a', tbname)``)."""
    return e.sql(dialect=DIALECT)


def name_sql(name: str) -> str:
    """A name, backticked when it is not a plain word or could read as a keyword."""
    if _PLAIN_NAME.match(name) and name.upper() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def table_sql(t: ast.TableName) -> str:
    """``[db.]name``."""
    return f"{name_sql(t.db)}.{name_sql(t.name)}" if t.db else name_sql(t.name)


def string_sql(s: str) -> str:
    """A string literal with TDengine/MySQL escaping."""
    return exp.Literal.string(s).sql(dialect=DIALECT)


def _join(parts: Iterable[str | None]) -> str:
    return " ".join(p for p in parts if p)


def _as_written(text: str, e: exp.Expr) -> str:
    """``text`` when it still parses to ``e`` (keeps the user's spelling), else generated SQL."""
    if text:
        try:
            if parse_expression(text) == e:
                return text
        except SqlError:
            pass
    return expr_sql(e)


# --------------------------------------------------------------------------- queries


def window_sql(w: ast.Window, trigger: bool = False) -> str:
    """A window clause; ``trigger`` selects the 3.3.7 form of EVENT_WINDOW (parenthesised)."""
    if isinstance(w, ast.IntervalWindow):
        args = str(w.interval) + (f", {w.offset}" if w.offset else "")
        return f"INTERVAL({args})" + (f" SLIDING({w.sliding})" if w.sliding else "")
    if isinstance(w, ast.SessionWindow):
        return f"SESSION({name_sql(w.ts_column)}, {w.gap})"
    if isinstance(w, ast.StateWindow):
        return f"STATE_WINDOW({expr_sql(w.expr)})" + (f" TRUE_FOR({w.true_for})" if w.true_for else "")
    if isinstance(w, ast.EventWindow):
        body = f"START WITH {expr_sql(w.start)} END WITH {expr_sql(w.end)}"
        text = f"EVENT_WINDOW({body})" if trigger else f"EVENT_WINDOW {body}"
        return text + (f" TRUE_FOR({w.true_for})" if w.true_for else "")
    if isinstance(w, ast.CountWindow):
        cargs = [str(w.count)]
        if w.sliding is not None:
            cargs.append(str(w.sliding))
        cargs.extend(name_sql(c) for c in w.columns)
        return f"COUNT_WINDOW({', '.join(cargs)})"
    if isinstance(w, ast.EkuiperWindow):
        fname = {v: k for k, v in _EKUIPER_NAMES.items()}[w.function]
        eargs = ([w.unit] if w.unit else []) + [str(a) for a in w.args]
        text = f"{fname}({', '.join(eargs)})"
        if w.filter is not None:
            text += f" FILTER (WHERE {expr_sql(w.filter)})"
        if w.over_when is not None:
            text += f" OVER (WHEN {expr_sql(w.over_when)})"
        return text
    raise TypeError(f"not a window: {w!r}")


_EKUIPER_NAMES = {
    "TUMBLINGWINDOW": "tumbling",
    "HOPPINGWINDOW": "hopping",
    "SLIDINGWINDOW": "sliding",
    "SESSIONWINDOW": "session",
    "COUNTWINDOW": "count",
}


def fill_sql(f: ast.Fill) -> str:
    """``FILL(mode[, v...])``."""
    return f"FILL({', '.join([f.mode, *(expr_sql(v) for v in f.values)])})"


def partition_sql(items: list[ast.PartitionItem]) -> str:
    """``PARTITION BY expr [AS alias], ...``."""
    parts = []
    for p in items:
        text = _as_written(p.text, p.expr)
        parts.append(f"{text} AS {name_sql(p.alias)}" if p.alias else text)
    return "PARTITION BY " + ", ".join(parts)


def _with_item_texts(tree: exp.Expr, texts: list[str]) -> exp.Expr:
    if not isinstance(tree, exp.Select) or len(texts) != len(tree.expressions):
        return tree
    for proj, text in zip(list(tree.expressions), texts, strict=True):
        inner = proj.this if isinstance(proj, exp.Alias) else proj
        if isinstance(inner, exp.Star):
            continue
        written = _as_written(text, inner)
        if written == text:
            inner.replace(exp.Var(this=text))
    return tree


def query_sql(q: ast.SelectQuery) -> str:
    """A TDengine SELECT: the standard part with PARTITION BY, the window clause and FILL put back
    after WHERE, and an eKuiper window function put back into GROUP BY."""
    tree = _with_item_texts(q.select.copy(), q.item_texts)
    if not (q.partition_by or q.window or q.fill) or not isinstance(tree, exp.Select):
        return expr_sql(tree)
    tail_keys = ("group", "having", "order", "limit", "offset")
    tail = {k: tree.args.get(k) for k in tail_keys}
    for k in tail_keys:
        tree.set(k, None)
    parts = [expr_sql(tree)]
    if q.partition_by:
        parts.append(partition_sql(q.partition_by))
    ekuiper = q.window if isinstance(q.window, ast.EkuiperWindow) else None
    if q.window is not None and ekuiper is None:
        parts.append(window_sql(q.window))
    if q.fill is not None:
        parts.append(fill_sql(q.fill))
    group = tail["group"]
    group_items = [expr_sql(g) for g in group.expressions] if group is not None else []
    if ekuiper is not None:
        group_items.append(window_sql(ekuiper))
    if group_items:
        parts.append("GROUP BY " + ", ".join(group_items))
    for k in ("having", "order", "limit", "offset"):
        node = tail[k]
        if node is not None:
            parts.append(expr_sql(node))
    return " ".join(parts)


# --------------------------------------------------------------------------- streams


def _output_columns_sql(cols: list[ast.OutputColumn] | None) -> str | None:
    if cols is None:
        return None
    return (
        "(" + ", ".join(name_sql(c.name) + (" COMPOSITE KEY" if c.composite_key else "") for c in cols) + ")"
    )


def _tags_sql(tags: list[ast.OutputTagDef] | None) -> str | None:
    if tags is None:
        return None
    parts = []
    for t in tags:
        text = name_sql(t.name) if t.type is None else f"{name_sql(t.name)} {t.type.sql}"
        if t.comment is not None:
            text += f" COMMENT {string_sql(t.comment)}"
        if t.expr is not None:
            text += f" AS {expr_sql(t.expr)}"
        parts.append(text)
    return "TAGS (" + ", ".join(parts) + ")"


def legacy_options_sql(o: ast.LegacyStreamOptions) -> str:
    """Legacy ``stream_options`` (seed 000) in a fixed order."""
    parts = []
    if o.trigger:
        trig = f"TRIGGER {o.trigger}"
        if o.trigger == "MAX_DELAY" and o.max_delay is not None:
            trig += f" {o.max_delay}"
        if o.trigger == "CONTINUOUS_WINDOW_CLOSE" and o.recalculate is not None:
            trig += f" RECALCULATE {o.recalculate}"
        parts.append(trig)
    if o.watermark is not None:
        parts.append(f"WATERMARK {o.watermark}")
    if o.ignore_expired is not None:
        parts.append(f"IGNORE EXPIRED {o.ignore_expired}")
    if o.delete_mark is not None:
        parts.append(f"DELETE_MARK {o.delete_mark}")
    if o.fill_history is not None:
        parts.append(f"FILL_HISTORY {o.fill_history}" + (" ASYNC" if o.fill_history_async else ""))
    if o.ignore_update is not None:
        parts.append(f"IGNORE UPDATE {o.ignore_update}")
    if o.event_time is not None:
        parts.append(f"EVENT_TIME {o.event_time}")
    return " ".join(parts)


def _legacy_notify_sql(n: ast.NotifyDef) -> str:
    text = (
        f"NOTIFY ({', '.join(string_sql(u) for u in n.urls)}) "
        f"ON ({', '.join(string_sql(e) for e in n.events)})"
    )
    if n.history is not None:
        text += f" NOTIFY_HISTORY {int(n.history)}"
    if n.on_failure:
        text += f" ON_FAILURE {n.on_failure}"
    return text


def _notify_337_sql(n: ast.NotifyDef) -> str:
    text = f"NOTIFY({', '.join(string_sql(u) for u in n.urls)})"
    if n.events:
        text += f" ON ({'|'.join(n.events)})"
    if n.where is not None:
        text += f" WHERE {expr_sql(n.where)}"
    opts = []
    if n.history:
        opts.append("NOTIFY_HISTORY")
    if n.on_failure == "PAUSE":
        opts.append("ON_FAILURE_PAUSE")
    if opts:
        text += f" NOTIFY_OPTIONS({'|'.join(opts)})"
    return text


def trigger_sql(t: ast.Trigger337) -> str:
    """A 3.3.7 trigger type (seed 002)."""
    if isinstance(t, ast.PeriodTrigger):
        return f"PERIOD({t.period}" + (f", {t.offset}" if t.offset else "") + ")"
    if isinstance(t, ast.SlidingTrigger):
        text = ""
        if t.interval is not None:
            text = f"INTERVAL({t.interval}" + (f", {t.interval_offset}" if t.interval_offset else "") + ") "
        return text + f"SLIDING({t.sliding}" + (f", {t.sliding_offset}" if t.sliding_offset else "") + ")"
    return window_sql(t, trigger=True)


def stream_options_sql(o: ast.StreamOptions337) -> str | None:
    """``STREAM_OPTIONS(...)`` (seed 002) in a fixed order, or None when no option is set."""
    parts: list[str] = []
    if o.watermark is not None:
        parts.append(f"WATERMARK({o.watermark})")
    if o.expired_time is not None:
        parts.append(f"EXPIRED_TIME({o.expired_time})")
    for flag in ("ignore_disorder", "delete_recalc", "delete_output_table"):
        if getattr(o, flag):
            parts.append(flag.upper())
    start = f"({expr_sql(o.fill_history_start)})" if o.fill_history_start is not None else ""
    if o.fill_history:
        parts.append("FILL_HISTORY" + ("" if o.fill_history_first else start))
    if o.fill_history_first:
        parts.append("FILL_HISTORY_FIRST" + start)
    for flag in ("calc_notify_only", "low_latency_calc"):
        if getattr(o, flag):
            parts.append(flag.upper())
    if o.pre_filter is not None:
        parts.append(f"PRE_FILTER({expr_sql(o.pre_filter)})")
    if o.force_output:
        parts.append("FORCE_OUTPUT")
    if o.max_delay is not None:
        parts.append(f"MAX_DELAY({o.max_delay})")
    if o.event_type:
        parts.append(f"EVENT_TYPE({'|'.join(o.event_type)})")
    if o.ignore_nodata_trigger:
        parts.append("IGNORE_NODATA_TRIGGER")
    return f"STREAM_OPTIONS({' | '.join(parts)})" if parts else None


def _stream_name(name: str, db: str | None) -> str:
    return f"{name_sql(db)}.{name_sql(name)}" if db else name_sql(name)


def _legacy_stream_sql(s: ast.CreateStreamLegacy) -> str:
    return _join(
        [
            "CREATE STREAM",
            "IF NOT EXISTS" if s.if_not_exists else None,
            _stream_name(s.name, s.db),
            legacy_options_sql(s.options),
            f"INTO {table_sql(s.into)}" if s.into is not None else None,
            _output_columns_sql(s.columns),
            _tags_sql(s.tags),
            f"SUBTABLE({expr_sql(s.subtable)})" if s.subtable is not None else None,
            "AS",
            query_sql(s.query),
            _legacy_notify_sql(s.notify) if s.notify is not None else None,
        ]
    )


def _stream_337_sql(s: ast.CreateStream337) -> str:
    return _join(
        [
            "CREATE STREAM",
            "IF NOT EXISTS" if s.if_not_exists else None,
            _stream_name(s.name, s.db),
            trigger_sql(s.trigger),
            f"FROM {table_sql(s.from_table)}" if s.from_table is not None else None,
            partition_sql(s.partition_by) if s.partition_by else None,
            stream_options_sql(s.options),
            _notify_337_sql(s.notify) if s.notify is not None else None,
            f"INTO {table_sql(s.into)}" if s.into is not None else None,
            f"OUTPUT_SUBTABLE({expr_sql(s.output_subtable)})" if s.output_subtable is not None else None,
            _output_columns_sql(s.columns),
            _tags_sql(s.tags),
            f"AS {query_sql(s.query)}" if s.query is not None else None,
        ]
    )


# --------------------------------------------------------------------------- other statements


def _column_defs_sql(cols: list[ast.ColumnDef]) -> str:
    parts = []
    for c in cols:
        text = f"{name_sql(c.name)} {c.type.sql}"
        if c.comment is not None:
            text += f" COMMENT {string_sql(c.comment)}"
        if c.composite_key:
            text += " COMPOSITE KEY"
        parts.append(text)
    return "(" + ", ".join(parts) + ")"


def _values_sql(values: list[exp.Expr]) -> str:
    return "(" + ", ".join(expr_sql(v) for v in values) + ")"


def _subtable_sql(d: ast.SubtableDef) -> str:
    return _join(
        [
            "IF NOT EXISTS" if d.if_not_exists else None,
            table_sql(d.table),
            "USING",
            table_sql(d.using),
            "(" + ", ".join(name_sql(n) for n in d.tag_names) + ")" if d.tag_names is not None else None,
            "TAGS",
            _values_sql(d.tag_values),
            _subtable_options_sql(d),
        ]
    )


def _subtable_options_sql(d: ast.SubtableDef) -> str | None:
    """``COMMENT '...' TTL n`` after a subtable's TAGS (the options written, in that order)."""
    return (
        _join(
            [
                f"COMMENT {string_sql(d.comment)}" if d.comment is not None else None,
                f"TTL {d.ttl}" if d.ttl is not None else None,
            ]
        )
        or None
    )


def _option_value_sql(v: object) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int | float):
        return str(v)
    text = str(v)
    if all(_DURATION_LIKE.match(p) for p in text.split(",")):
        return text
    return string_sql(text)


def _insert_target_sql(t: ast.InsertTarget) -> str:
    using = None
    if t.using is not None:
        d = t.using
        using = _join(
            [
                "USING",
                table_sql(d.using),
                "(" + ", ".join(name_sql(n) for n in d.tag_names) + ")" if d.tag_names is not None else None,
                "TAGS",
                _values_sql(d.tag_values),
                _subtable_options_sql(d),
            ]
        )
    return _join(
        [
            table_sql(t.table),
            using,
            "(" + ", ".join(name_sql(c) for c in t.columns) + ")" if t.columns is not None else None,
            "VALUES",
            " ".join(_values_sql(r) for r in t.rows),
        ]
    )


def _show_sql(s: ast.Show) -> str:
    if s.what == "databases":
        return "SHOW DATABASES"
    if s.what == "create_database":
        return f"SHOW CREATE DATABASE {name_sql(s.db or '')}"
    if s.what in ("create_table", "create_stable", "create_vtable") and s.target is not None:
        return f"SHOW CREATE {s.what.split('_')[1].upper()} {table_sql(s.target)}"
    if s.what == "tags" and s.target is not None:
        return f"SHOW TAGS FROM {table_sql(s.target)}"
    prefix = f"{name_sql(s.db)}." if s.db else ""
    kind = f"{s.vkind.upper()} " if s.vkind else ""
    text = f"SHOW {kind}{prefix}{s.what.upper()}"
    if s.like is not None:
        text += f" LIKE {string_sql(s.like)}"
    return text


def _create_database_sql(stmt: ast.CreateDatabase) -> str:
    opts = " ".join(f"{k} {_option_value_sql(v)}" for k, v in stmt.options.items())
    return _join(
        ["CREATE DATABASE", "IF NOT EXISTS" if stmt.if_not_exists else None, name_sql(stmt.name), opts]
    )


def _alter_database_sql(stmt: ast.AlterDatabase) -> str:
    opts = " ".join(f"{k} {_option_value_sql(v)}" for k, v in stmt.options.items())
    return _join(["ALTER DATABASE", name_sql(stmt.name), opts])


def _alter_table_sql(stmt: ast.AlterTable) -> str:
    """``ALTER {STABLE | TABLE | VTABLE} t clause`` (:class:`ast.AlterTable`)."""
    kind = "VTABLE" if stmt.vtable else "STABLE" if stmt.stable else "TABLE"
    head = f"ALTER {kind} {table_sql(stmt.table)}"
    ref = "" if stmt.ref is None else _column_ref_sql(stmt.ref)
    if stmt.action == "ALTER COLUMN":
        return f"{head} ALTER COLUMN {name_sql(stmt.name or '')} SET {ref or 'NULL'}"
    if stmt.action == "SET TAG":
        items = ", ".join(f"{name_sql(n)} = {expr_sql(v)}" for n, v, _, _ in stmt.tag_values)
        return f"{head} SET TAG {items}"
    if stmt.action == "OPTIONS":
        return _join([head, *(f"{k} {_option_value_sql(v)}" for k, v in stmt.options.items())])
    if stmt.column is not None:  # ADD / MODIFY
        src = f" FROM {ref}" if ref else ""
        return f"{head} {stmt.action} {_column_defs_sql([stmt.column])[1:-1]}{src}"
    rename = f" {name_sql(stmt.new_name)}" if stmt.new_name is not None else ""
    return f"{head} {stmt.action} {name_sql(stmt.name or '')}{rename}"


def _drop_database_sql(stmt: ast.DropDatabase) -> str:
    return _join(
        [
            "DROP DATABASE",
            "IF EXISTS" if stmt.if_exists else None,
            name_sql(stmt.name),
            "FORCE" if stmt.force else None,
        ]
    )


def _create_table_sql(stmt: ast.CreateTable) -> str:
    super_table = stmt.kind == "super"
    return _join(
        [
            "CREATE STABLE" if super_table else "CREATE TABLE",
            "IF NOT EXISTS" if stmt.if_not_exists else None,
            table_sql(stmt.table),
            _column_defs_sql(stmt.columns),
            f"TAGS {_column_defs_sql(stmt.tags)}" if stmt.tags else None,
            f"COMMENT {string_sql(stmt.comment)}" if stmt.comment is not None else None,
            "VIRTUAL 1" if stmt.virtual else None,
            f"TTL {stmt.ttl}" if stmt.ttl is not None else None,
        ]
    )


def _column_ref_sql(r: ast.ColumnRefName) -> str:
    return ".".join(name_sql(n) for n in (r.db, r.table, r.column) if n is not None)


def _vcolumn_sql(d: ast.VColumnDef) -> str:
    ref = _column_ref_sql(d.ref) if d.ref is not None else None
    if d.name is None:
        return ref or ""
    return _join(
        [name_sql(d.name), d.type.sql if d.type is not None else None, f"FROM {ref}" if ref else None]
    )


def _create_vtable_sql(stmt: ast.CreateVTable) -> str:
    """``CREATE VTABLE`` (TDengine SQL manual, "Virtual Tables")."""
    using = None
    if stmt.using is not None:
        tags = (
            "(" + ", ".join(name_sql(n) for n in stmt.tag_names) + ")" if stmt.tag_names is not None else None
        )
        using = _join(["USING", table_sql(stmt.using), tags, "TAGS", _values_sql(stmt.tag_values)])
    return _join(
        [
            "CREATE VTABLE",
            "IF NOT EXISTS" if stmt.if_not_exists else None,
            table_sql(stmt.table),
            "(" + ", ".join(_vcolumn_sql(d) for d in stmt.columns) + ")",
            using,
        ]
    )


def _drop_table_sql(stmt: ast.DropTable) -> str:
    return _join(
        [
            "DROP VTABLE" if stmt.virtual else "DROP STABLE" if stmt.super_only else "DROP TABLE",
            "IF EXISTS" if stmt.if_exists else None,
            ", ".join(table_sql(t) for t in stmt.tables),
        ]
    )


def _delete_sql(stmt: ast.Delete) -> str:
    return f"DELETE FROM {table_sql(stmt.table)}" + (
        f" WHERE {expr_sql(stmt.where)}" if stmt.where is not None else ""
    )


def _stream_command_sql(stmt: ast.StreamCommand) -> str:
    return _join(
        [
            stmt.action.upper(),
            "STREAM",
            "IF EXISTS" if stmt.if_exists else None,
            "IGNORE UNTREATED" if stmt.ignore_untreated else None,
            _stream_name(stmt.name, stmt.db),
        ]
    )


def _recalculate_sql(stmt: ast.RecalculateStream) -> str:
    return _join(
        [
            "RECALCULATE STREAM",
            _stream_name(stmt.name, stmt.db),
            f"FROM {expr_sql(stmt.start)}",
            f"TO {expr_sql(stmt.end)}" if stmt.end is not None else None,
        ]
    )


# statement type -> its printer (checked in order with isinstance)
_RENDERERS: tuple[tuple[type[Any], Callable[[Any], str]], ...] = (
    (ast.Select, lambda s: query_sql(s.query)),
    (ast.CreateStreamLegacy, _legacy_stream_sql),
    (ast.CreateStream337, _stream_337_sql),
    (ast.CreateDatabase, _create_database_sql),
    (ast.DropDatabase, _drop_database_sql),
    (ast.AlterDatabase, _alter_database_sql),
    (ast.AlterTable, _alter_table_sql),
    (ast.UseDatabase, lambda s: f"USE {name_sql(s.name)}"),
    (ast.CreateTable, _create_table_sql),
    (ast.CreateSubtables, lambda s: "CREATE TABLE " + " ".join(_subtable_sql(d) for d in s.items)),
    (ast.CreateVTable, _create_vtable_sql),
    (ast.DropTable, _drop_table_sql),
    (ast.Insert, lambda s: "INSERT INTO " + " ".join(_insert_target_sql(t) for t in s.targets)),
    (ast.Delete, _delete_sql),
    (ast.Show, _show_sql),
    (ast.Describe, lambda s: f"DESCRIBE {table_sql(s.table)}"),
    (ast.StreamCommand, _stream_command_sql),
    (ast.RecalculateStream, _recalculate_sql),
)


def render(stmt: ast.Statement) -> str:
    """Canonical TDengine SQL for a statement (no trailing ``;``).

    Args:
        stmt: any statement of :mod:`spark_workers.sql.ast`.

    Returns:
        Text such that ``parse_one(text)`` equals ``stmt`` ignoring spans and ``text`` fields.
        Legacy streams use the seed 000 syntax, 3.3.7 streams the seed 002 syntax.

    Raises:
        TypeError: ``stmt`` is not a statement.
    """
    for cls, printer in _RENDERERS:
        if isinstance(stmt, cls):
            return printer(stmt)
    raise TypeError(f"not a statement: {stmt!r}")
