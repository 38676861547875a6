"""Error location: where each design field's text is in the SQL rendered from the design
(``field_spans``), and an error of validating that SQL placed on the field holding it
(``locate_error``; ``docs/designer.md`` "Validation issues").

The spans come from the re-parsed statement's own spans, then each field's rendered text found in
clause order. A legacy design's computation is spread over the legacy query (FROM, WHERE,
PARTITION BY and the window belong to other nodes): its offsets are re-based into the
computation's ``%%trows`` text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from spark_workers.errors import SqlError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_expression, parse_one
from spark_workers.sql.render import (
    expr_sql,
    name_sql,
    partition_sql,
    render,
    string_sql,
    table_sql,
    trigger_sql,
)
from spark_workers.streams.design.computation import TO_337, rename_text
from spark_workers.streams.design.convert import convert_design
from spark_workers.streams.design.document import DesignError, NotExpressible, issue
from spark_workers.streams.design.to_sql import build_statement


@dataclass(frozen=True)
class FieldSpan:
    """Where a design field's text is in the rendered SQL: ``[start, end)``; ``text`` is the
    field's text in the design; ``rebase`` maps an SQL offset into it (None: ``offset - start``)."""

    node: str
    field: str
    start: int
    end: int
    text: str
    rebase: Callable[[int], int] | None = None

    def offset_in_field(self, offset: int) -> int:
        rel = self.rebase(offset) if self.rebase is not None else offset - self.start
        return max(0, min(rel, len(self.text)))


class _Spans:
    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.out: list[FieldSpan] = []

    def add(
        self,
        node: str,
        field: str,
        start: int,
        end: int,
        text: str | None = None,
        rebase: Callable[[int], int] | None = None,
    ) -> None:
        if start >= 0:
            self.out.append(
                FieldSpan(node, field, start, end, text if text is not None else self.sql[start:end], rebase)
            )

    def find(
        self,
        node: str,
        field: str,
        prefix: str,
        value: str,
        lo: int,
        hi: int | None = None,
        text: str | None = None,
    ) -> int:
        """Add ``value`` found after ``prefix`` in ``[lo, hi)``; returns the end of it (or ``lo``)."""
        at = self.sql.find(prefix + value, lo, len(self.sql) if hi is None else hi)
        if at < 0:
            return lo
        start = at + len(prefix)
        self.add(node, field, start, start + len(value), text if text is not None else value)
        return start + len(value)


def locate_error(design: dict[str, Any], syntax: str, err: SqlError) -> dict[str, Any]:
    """Place an error found while validating ``design_to_sql(design, syntax)`` (``err.offset`` is an
    offset in that text) on the node and field whose text holds it.

    Returns:
        An issue ``{"node", "field", "message", "position"}`` (``docs/designer.md``): the position
        is re-based into the field's own text (``{"offset", "line", "column"}``); ``node`` and
        ``field`` are None (and the position that of the SQL) when no field holds the offset.
    """
    offset = err.offset
    if offset is None:
        return issue(None, None, err.message)
    try:
        sql, spans = field_spans(design, syntax)
    except (DesignError, NotExpressible, SqlError):
        return issue(None, None, err.message, err.sql, offset)
    holding = [s for s in spans if s.start <= offset < s.end] or [
        s for s in spans if s.start <= offset <= s.end
    ]
    if not holding:
        return issue(None, None, err.message, sql, offset)
    best = min(holding, key=lambda s: s.end - s.start)
    return issue(best.node, best.field, err.message, best.text, best.offset_in_field(offset))


def field_spans(design: dict[str, Any], syntax: str) -> tuple[str, list[FieldSpan]]:
    """``design_to_sql(design, syntax)`` and where each node field's text is in it (found from
    the re-parsed statement's spans, then each field's rendered text in clause order).

    Raises:
        NotExpressible, DesignError: as ``design_to_sql``.
    """
    d = convert_design(design, syntax)
    sql = render(build_statement(d))
    st = parse_one(sql)
    nodes = d["nodes"]
    sp = _Spans(sql)
    if isinstance(st, ast.CreateStreamLegacy):
        _legacy_spans(sp, st, nodes)
    else:
        assert isinstance(st, ast.CreateStream337)
        _spans_337(sp, st, nodes)
    return sql, sp.out


def _legacy_spans(sp: _Spans, st: ast.CreateStreamLegacy, nodes: dict[str, Any]) -> None:
    _legacy_option_spans(sp, st.options, nodes.get("options") or {})
    q = st.query
    assert q.span is not None
    _output_spans(sp, st, nodes.get("output"), "SUBTABLE")
    q_lo, q_hi = q.span.start, q.span.end
    cuts: list[_Cut] = []
    from_at = _legacy_from_spans(sp, nodes.get("source") or {}, q_lo, q_hi, cuts)
    cur = from_at if from_at >= 0 else q_lo
    cur = _legacy_where_spans(sp, q, nodes.get("prefilter"), cur, q_hi, cuts)
    _legacy_partition_spans(sp, q, cur, q_hi, cuts)
    _legacy_window_spans(sp, q.window, nodes.get("trigger") or {}, cuts)
    comp_text = (nodes.get("computation") or {}).get("query") or ""
    cuts.sort()
    sp.add("computation", "query", q_lo, q_hi, comp_text, _computation_rebase(sp.sql, q_lo, cuts))
    _notify_spans(sp, st.notify, nodes.get("notify"))


# a piece [start, end) of a legacy query's text and what stands for it in the design's computation
_Cut = tuple[int, int, str]


def _legacy_option_spans(sp: _Spans, options: ast.LegacyStreamOptions, opts: dict[str, Any]) -> None:
    keys = {"trigger": "trigger_mode"}
    for key, span in options.spans.items():
        field = keys.get(key, key)
        value = opts.get(field)
        text = str(value) if isinstance(value, str) else ""
        at = sp.sql.rfind(text, span.start, span.end) if text else -1
        if at >= 0:
            sp.add("options", field, at, at + len(text), text)
        else:
            sp.add("options", field, span.start, span.end, "")


def _legacy_from_spans(sp: _Spans, source: dict[str, Any], q_lo: int, q_hi: int, cuts: list[_Cut]) -> int:
    """The source table (and database) in ``FROM [db.]table`` (or ``source.from``: a subquery or a
    join), which the computation reads as ``%%trows``; returns where ``FROM`` is (-1: not found)."""
    if source.get("from"):
        text = str(source["from"])
        from_at = sp.sql.find("FROM " + text, q_lo, q_hi)
        if from_at >= 0:
            t_lo = from_at + len("FROM ")
            sp.add("source", "from", t_lo, t_lo + len(text), text)
            cuts.append((t_lo, t_lo + len(text), "%%trows"))
        return from_at
    src = ast.TableName(source["table"], source.get("db"))
    from_at = sp.sql.find("FROM " + table_sql(src), q_lo, q_hi)
    if from_at >= 0:
        t_lo = from_at + len("FROM ")
        sp.add(
            "source",
            "table",
            t_lo + (len(name_sql(src.db)) + 1 if src.db else 0),
            t_lo + len(table_sql(src)),
            source["table"],
        )
        if src.db:
            sp.add("source", "db", t_lo, t_lo + len(name_sql(src.db)), src.db)
        cuts.append((t_lo, t_lo + len(table_sql(src)), "%%trows"))
    return from_at


def _legacy_where_spans(
    sp: _Spans, q: ast.SelectQuery, pre: dict[str, Any] | None, cur: int, q_hi: int, cuts: list[_Cut]
) -> int:
    """The prefilter's condition in ``WHERE``, which the computation has not; returns the end of
    the WHERE clause (``cur`` without one)."""
    sel = q.select
    where = sel.args.get("where") if isinstance(sel, exp.Select) else None
    if pre is not None and where is not None:
        w_at = sp.sql.find(" WHERE " + expr_sql(where.this), cur, q_hi)
        if w_at >= 0:
            end = w_at + len(" WHERE ") + len(expr_sql(where.this))
            sp.add("prefilter", "condition", w_at, end, "")
            sp.add("prefilter", "condition", w_at + len(" WHERE "), end, pre.get("condition"))
            cuts.append((w_at, end, ""))
            cur = end
    return cur


def _legacy_partition_spans(sp: _Spans, q: ast.SelectQuery, cur: int, q_hi: int, cuts: list[_Cut]) -> None:
    if not q.partition_by:
        return
    clause = " " + partition_sql(q.partition_by)
    p_at = sp.sql.find(clause, cur, q_hi)
    if p_at >= 0:
        sp.add("source", "partition_by", p_at, p_at + len(clause), "")
        cuts.append((p_at, p_at + len(clause), ""))
    for i, p in enumerate(q.partition_by):
        if p.span is not None:
            sp.add("source", f"partition_by[{i}]", p.span.start, p.span.end)


def _legacy_window_spans(sp: _Spans, w: ast.Window | None, trig: dict[str, Any], cuts: list[_Cut]) -> None:
    """The trigger's fields in the window clause (an eKuiper window in GROUP BY, with its comma)."""
    if w is None or w.span is None:
        return
    _window_field_spans(sp, trig, w.span.start, w.span.end)
    if isinstance(w, ast.EkuiperWindow):
        before = sp.sql[: w.span.start]
        if before.endswith(", "):
            cuts.append((w.span.start - 2, w.span.end, ""))
        elif before.endswith(" GROUP BY "):
            cuts.append((w.span.start - len(" GROUP BY "), w.span.end, ""))
    else:
        cuts.append((w.span.start - 1, w.span.end, ""))


def _computation_rebase(sql: str, q_lo: int, cuts: list[_Cut]) -> Callable[[int], int]:
    """Map an offset in the legacy query (from ``q_lo``) to the computation's text: the query with
    the ``cuts`` (sorted) made and the window pseudo-columns renamed."""

    def rebase(offset: int) -> int:
        edited = ""
        pos = q_lo
        for a, b, repl in cuts:
            if a >= offset:
                break
            edited += sql[pos:a] + repl
            pos = b
        edited += sql[pos:offset] if offset > pos else ""
        return len(rename_text(edited, TO_337))

    return rebase


def _spans_337(sp: _Spans, st: ast.CreateStream337, nodes: dict[str, Any]) -> None:
    sql = sp.sql
    trig_text = trigger_sql(st.trigger)
    t_at = sql.find(" " + trig_text)
    if t_at >= 0:
        _window_field_spans(sp, nodes.get("trigger") or {}, t_at + 1, t_at + 1 + len(trig_text))
    cur = max(t_at, 0) + len(trig_text)
    source = nodes.get("source")
    if st.from_table is not None and source is not None:
        prefix = f"{name_sql(st.from_table.db)}." if st.from_table.db else ""
        sp.find(
            "source", "table", "FROM " + prefix, name_sql(st.from_table.name), cur, text=source.get("table")
        )
    for i, p in enumerate(st.partition_by):
        if p.span is not None:
            sp.add("source", f"partition_by[{i}]", p.span.start, p.span.end)
    opts = nodes.get("options") or {}
    for key, span in st.options.spans.items():
        if key == "pre_filter":
            pre = nodes.get("prefilter") or {}
            sp.add("prefilter", "condition", span.start, span.end, "")
            sp.find(
                "prefilter",
                "condition",
                "PRE_FILTER(",
                _canon(pre.get("condition")),
                span.start,
                span.end,
                text=pre.get("condition"),
            )
            continue
        value = opts.get(key)
        sp.add("options", key, span.start, span.end, "")
        if isinstance(value, str):
            sp.find("options", key, "(", value, span.start, span.end)
        if key in ("fill_history", "fill_history_first") and opts.get("fill_history_start"):
            sp.find(
                "options",
                "fill_history_start",
                "(",
                _canon(opts["fill_history_start"]),
                span.start,
                span.end,
                text=opts["fill_history_start"],
            )
    _notify_spans(sp, st.notify, nodes.get("notify"))
    _output_spans(sp, st, nodes.get("output"), "OUTPUT_SUBTABLE")
    if st.query is not None and st.query.span is not None:
        comp = nodes.get("computation") or {}
        sp.add("computation", "query", st.query.span.start, st.query.span.end, comp.get("query") or "")


# trigger type -> its fields in the order the window clause writes them, with the text before each
# (an eKuiper window's unit and arguments come first, found apart)
_WINDOW_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "interval": (
        ("interval", "INTERVAL("),
        ("offset", ", "),
        ("sliding", "SLIDING("),
        ("sliding_offset", ", "),
    ),
    "sliding": (("sliding", "SLIDING("), ("sliding_offset", ", ")),
    "period": (("period", "PERIOD("), ("offset", ", ")),
    "session": (("ts_column", "SESSION("), ("gap", ", ")),
    "state": (("expr", "STATE_WINDOW("), ("true_for", "TRUE_FOR(")),
    "event": (("start", "START WITH "), ("end", "END WITH "), ("true_for", "TRUE_FOR(")),
    "count": (("count", "COUNT_WINDOW("), ("sliding", ", ")),
    "ekuiper": (("filter", "FILTER (WHERE "), ("over_when", "OVER (WHEN ")),
}


def _window_field_spans(sp: _Spans, trig: dict[str, Any], lo: int, hi: int) -> None:
    """The trigger's fields in its window / trigger clause ``[lo, hi)``."""
    kind = trig.get("type")
    sp.add("trigger", "type", lo, hi, "")
    cur = lo
    if kind == "ekuiper":
        cur = sp.find("trigger", "unit", "(", str(trig.get("unit")), cur, hi) if trig.get("unit") else cur + 1
        for i, a in enumerate(trig.get("args") or []):
            cur = sp.find(
                "trigger",
                f"args[{i}]",
                "" if i == 0 and trig.get("function") == "count" else ", ",
                str(a),
                cur,
                hi,
            )
    for field, prefix in _WINDOW_FIELDS.get(str(kind), ()):
        v = trig.get(field)
        if v is None:
            continue
        value = str(v)
        if field in ("expr", "start", "end", "filter", "over_when"):
            value = _canon(value)
        elif field == "ts_column":
            value = name_sql(value)
        cur = sp.find("trigger", field, prefix, value, cur, hi, text=str(v))
    if kind == "count":
        for i, c in enumerate(trig.get("columns") or []):
            cur = sp.find("trigger", f"columns[{i}]", ", ", name_sql(str(c)), cur, hi, text=str(c))


def _canon(text: Any) -> str:
    try:
        return expr_sql(parse_expression(str(text)))
    except SqlError:
        return str(text)


def _output_spans(
    sp: _Spans,
    st: ast.CreateStreamLegacy | ast.CreateStream337,
    out: dict[str, Any] | None,
    subtable_kw: str,
) -> None:
    if out is None or st.into is None:
        return
    prefix = f"{name_sql(st.into.db)}." if st.into.db else ""
    sp.find("output", "table", "INTO " + prefix, name_sql(st.into.name), 0, text=out.get("table"))
    if out.get("db"):
        sp.find("output", "db", "INTO ", name_sql(str(out["db"])), 0, text=out.get("db"))
    if out.get("subtable"):
        sp.find("output", "subtable", subtable_kw + "(", _canon(out["subtable"]), 0, text=out["subtable"])
    for i, c in enumerate(st.columns or []):
        if c.span is not None:
            sp.add("output", f"columns[{i}]", c.span.start, c.span.end)
    for i, t in enumerate(st.tags or []):
        if t.span is None:
            continue
        sp.add("output", f"tags[{i}]", t.span.start, t.span.end)
        tags = out.get("tags") or []
        if i < len(tags) and tags[i].get("expr"):
            sp.find(
                "output",
                f"tags[{i}].expr",
                " AS ",
                _canon(tags[i]["expr"]),
                t.span.start,
                t.span.end,
                text=tags[i]["expr"],
            )
        if t.type is None:
            continue
        sp.find(
            "output",
            f"tags[{i}].type",
            " ",
            t.type.sql,
            t.span.start,
            t.span.end,
            text=tags[i].get("type") if i < len(tags) else None,
        )


def _notify_spans(sp: _Spans, n: ast.NotifyDef | None, nd: dict[str, Any] | None) -> None:
    if n is None or n.span is None or nd is None:
        return
    lo, hi = n.span.start, n.span.end
    sp.add("notify", "urls", lo, hi, "")
    cur = lo
    for i, u in enumerate(n.urls):
        cur = sp.find("notify", f"urls[{i}]", "'", string_sql(u)[1:-1], cur, hi, text=u)
    for i, e in enumerate(n.events):
        cur = max(cur, sp.find("notify", f"events[{i}]", "", e, cur, hi))
    if n.where is not None:
        cur = sp.find("notify", "where", "WHERE ", expr_sql(n.where), cur, hi, text=nd.get("where"))
    for field, word in (("history", "NOTIFY_HISTORY"), ("on_failure", "ON_FAILURE")):
        at = sp.sql.find(word, cur, hi)
        if at >= 0:
            sp.add("notify", field, at, hi if field == "on_failure" else at + len(word), "")
