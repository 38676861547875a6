"""Reading a design's fields into the parts of a statement: text, names, durations, integers,
expressions, queries, tag types and PARTITION BY items.

Each reader takes ``(node, field, value)``, returns None for a field not written (unless
``required``) and raises ``DesignError`` naming the node and field, with the position inside the
field's own text when the parser gives one.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import SqlError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_expression, parse_one
from spark_workers.streams.design.document import DesignError
from spark_workers.tdtypes import TdType


def node_of(design: dict[str, Any], name: str) -> dict[str, Any] | None:
    """``design["nodes"][name]`` (None when absent); raises ``DesignError`` unless an object."""
    nodes = design.get("nodes") or {}
    n = nodes.get(name)
    if n is not None and not isinstance(n, dict):
        raise DesignError(name, None, "must be an object or null")
    return n


def read_text(node: str, field: str, value: Any, required: bool = False) -> str | None:
    """A text field (None when not written or blank)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise DesignError(node, field, "is required")
        return None
    if not isinstance(value, str):
        raise DesignError(node, field, "must be text")
    return value


def read_duration(node: str, field: str, value: Any, required: bool = False) -> Duration | None:
    """A duration literal (``"10s"``), parsed."""
    text = read_text(node, field, value, required)
    if text is None:
        return None
    try:
        d = Duration.parse(text)
    except SqlError as e:
        raise DesignError(node, field, e.message, 0) from None
    return d


def read_expr(node: str, field: str, value: Any, required: bool = False) -> exp.Expr | None:
    """An expression, parsed (TDengine SQL)."""
    text = read_text(node, field, value, required)
    if text is None:
        return None
    try:
        return parse_expression(text)
    except SqlError as e:
        raise DesignError(node, field, e.message, e.offset) from None


def read_query(node: str, field: str, value: Any) -> ast.SelectQuery:
    """A SELECT query, parsed (always required)."""
    text = read_text(node, field, value, True)
    assert text is not None
    try:
        stmt = parse_one(text)
    except SqlError as e:
        raise DesignError(node, field, e.message, e.offset) from None
    if not isinstance(stmt, ast.Select):
        raise DesignError(node, field, "must be a SELECT query", 0)
    return stmt.query


def read_int(node: str, field: str, value: Any, minimum: int, required: bool = False) -> int | None:
    """An integer (or digits as text) at least ``minimum``."""
    if value is None or value == "":
        if required:
            raise DesignError(node, field, "is required")
        return None
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and value.isdigit())
    ):
        raise DesignError(node, field, "must be an integer")
    n = int(value)
    if n < minimum:
        raise DesignError(node, field, f"must be at least {minimum}")
    return n


def read_from(value: Any) -> tuple[exp.Expr, list[exp.Expr]]:
    """``source.from`` (a legacy query's FROM that is a subquery, a join or an aliased table, seed
    000), parsed: ``(what FROM reads, the joins)``.

    Raises:
        DesignError: on ``source.from``, with the position inside its text.
    """
    text = read_text("source", "from", value, True)
    assert text is not None
    prefix = "SELECT 1 FROM "
    try:
        stmt = parse_one(prefix + text)
    except SqlError as e:
        off = None if e.offset is None else max(0, e.offset - len(prefix))
        raise DesignError("source", "from", e.message, off) from None
    sel = stmt.query.select if isinstance(stmt, ast.Select) else None
    if (
        not isinstance(sel, exp.Select)
        or stmt.query.window is not None  # type: ignore[union-attr]
        or stmt.query.partition_by  # type: ignore[union-attr]
        or any(sel.args.get(k) for k in ("where", "group", "having", "order", "limit"))
    ):
        raise DesignError("source", "from", "must be what FROM reads: a table, a subquery or a join", 0)
    return sel.args["from_"].this, list(sel.args.get("joins") or [])


def read_name(node: str, field: str, value: Any, required: bool = True) -> str | None:
    """A name (table, column, database), stripped; required unless told."""
    text = read_text(node, field, value, required)
    return text.strip() if text is not None else None


def read_table(node: str, n: dict[str, Any]) -> ast.TableName:
    """``[db.]table`` of a node with ``db`` and ``table`` fields (``source``, ``output``)."""
    name = read_name(node, "table", n.get("table"))
    assert name is not None
    return ast.TableName(name, read_name(node, "db", n.get("db"), required=False))


def read_partition(source: dict[str, Any] | None) -> list[ast.PartitionItem]:
    """The PARTITION BY items of the source node (``partition_by[]`` = ``{sql, alias}``)."""
    out = []
    for i, p in enumerate((source or {}).get("partition_by") or []):
        field = f"partition_by[{i}]"
        if not isinstance(p, dict):
            raise DesignError("source", field, "must be {sql, alias}")
        e = read_expr("source", field, p.get("sql"), required=True)
        assert e is not None
        alias = read_name("source", f"{field}.alias", p.get("alias"), required=False)
        out.append(ast.PartitionItem(expr=e, alias=alias, text=str(p["sql"]).strip()))
    return out


def read_tag_type(field: str, text: Any) -> TdType:
    """The type of an output tag (``output.tags[i].type``), e.g. ``VARCHAR(270)``."""
    t = read_text("output", field, text, True)
    try:
        stmt = parse_one(f"CREATE STABLE __t (ts TIMESTAMP) TAGS (__x {t})")
    except SqlError as e:
        raise DesignError("output", field, e.message, None) from None
    assert isinstance(stmt, ast.CreateTable)
    return stmt.tags[0].type
