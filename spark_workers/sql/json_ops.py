"""TDengine's JSON tag operators ``tag->'key'`` and ``tag CONTAINS 'key'``, for DuckDB.

Rules (TDengine SQL manual, "JSON Type"; TDengine's tests/system-test/2-query/json_tag.py):

- ``j->'k'`` is the value of key ``k`` as JSON text: a string with its quotes (``"femail"``), a
  number with nine decimals (``35.000000000``), ``true``/``false``, ``null``; NULL when the key is
  missing or the tag is NULL. The key must be a string constant; ``j`` a JSON tag.
- ``j->'k' IS NULL`` holds when the key is missing or its value is JSON null.
- Comparisons with a constant compare like values only: a string constant with string values; a
  number or boolean constant with numbers and booleans (``true`` = 1, ``false`` = 0). ``!=`` also
  holds when the types differ (a number against a string constant and the other way round);
  a boolean constant never matches a string. No match is FALSE, never NULL.
- ``LIKE`` applies to string values; ``j CONTAINS 'k'`` holds when key ``k`` exists (its value
  may be null), FALSE for a NULL tag.

The JSON tag is stored as its canonical text (:mod:`spark_workers.sql.typed_values`) and read
with DuckDB's built-in ``json_type`` / ``json_extract_string``. Streams (Spark) refuse these
operators with NOT_SUPPORTED.
"""

from __future__ import annotations

import re

from sqlglot import exp

from spark_workers.errors import Code, SqlError
from spark_workers.sql.ast import offset_of
from spark_workers.sql.scope import Scope
from spark_workers.tdtypes import TdType

_NUMERIC = ("BIGINT", "UBIGINT", "DOUBLE")
_CMP_FLIP: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.EQ: exp.EQ,
    exp.NEQ: exp.NEQ,
    exp.GT: exp.LT,
    exp.LT: exp.GT,
    exp.GTE: exp.LTE,
    exp.LTE: exp.GTE,
}


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def handles(node: exp.Expr) -> bool:
    """True for the nodes :func:`rewrite` turns into backend SQL: ``->``, ``CONTAINS``, and
    comparisons, ``IS NULL`` and ``LIKE`` with a ``->`` operand."""
    if isinstance(node, exp.JSONExtract | exp.JSONBContains):
        return True
    if isinstance(node, tuple(_CMP_FLIP)):
        return any(isinstance(_unparen(side), exp.JSONExtract) for side in (node.this, node.expression))
    if isinstance(node, exp.Is | exp.Like):
        return isinstance(_unparen(node.this), exp.JSONExtract)
    return False


def _key(node: exp.Expr, what: str) -> str:
    key = node.expression
    if isinstance(key, exp.Literal) and key.is_string:
        return str(key.this)
    raise SqlError(
        f"Invalid value type: the key of {what} must be a string constant, e.g. tag->'key'",
        offset=offset_of(key) if key is not None else None,
        code=Code.WRONG_VALUE_TYPE,
    )


def _column(node: exp.Expr, scope: Scope, what: str) -> exp.Expr:
    col = node.this
    t = scope.columns.get(col.name.lower()) if isinstance(col, exp.Column) else None
    if t is None or t.name != "JSON":
        raise SqlError(
            f"Invalid value type: {what} applies to a JSON tag",
            offset=offset_of(node),
            code=Code.WRONG_VALUE_TYPE,
        )
    return col.copy()


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


class _Path:
    """``json_type`` and ``json_extract_string`` of one ``tag->'key'``."""

    def __init__(self, node: exp.JSONExtract, scope: Scope) -> None:
        self.col = _column(node, scope, "the operator ->")
        key = _key(node, "the operator ->")
        self.path = exp.Literal.string('$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"')

    def jtype(self) -> exp.Expr:
        return _call("json_type", self.col.copy(), self.path.copy())

    def text(self) -> exp.Expr:
        return _call("json_extract_string", self.col.copy(), self.path.copy())

    def is_type(self, *names: str) -> exp.Expr:
        return exp.In(this=self.jtype(), expressions=[exp.Literal.string(n) for n in names])

    def number(self) -> exp.Expr:
        """The value as a DOUBLE for numbers and booleans (1/0), else NULL."""
        boolean = exp.If(
            this=exp.EQ(this=self.text(), expression=exp.Literal.string("true")),
            true=exp.Literal.number(1.0),
            false=exp.Literal.number(0.0),
        )
        return exp.Case(
            ifs=[
                exp.If(
                    this=exp.EQ(this=self.jtype(), expression=exp.Literal.string("BOOLEAN")), true=boolean
                ),
                exp.If(this=self.is_type(*_NUMERIC), true=exp.cast(self.text(), "DOUBLE")),
            ]
        )

    def value(self) -> exp.Expr:
        """TDengine's rendering of the value (see the module rules)."""
        raw = exp.cast(_call("json_extract", self.col.copy(), self.path.copy()), "VARCHAR")
        nine = _call("printf", exp.Literal.string("%.9f"), exp.cast(self.text(), "DOUBLE"))
        return exp.Case(
            ifs=[
                exp.If(this=exp.EQ(this=self.jtype(), expression=exp.Literal.string("VARCHAR")), true=raw),
                exp.If(
                    this=exp.EQ(this=self.jtype(), expression=exp.Literal.string("BOOLEAN")), true=self.text()
                ),
                exp.If(
                    this=exp.EQ(this=self.jtype(), expression=exp.Literal.string("NULL")),
                    true=exp.Literal.string("null"),
                ),
                exp.If(this=self.is_type(*_NUMERIC), true=nine),
            ]
        )


def _false_if_null(e: exp.Expr) -> exp.Expr:
    return exp.Coalesce(this=exp.Paren(this=e), expressions=[exp.false()])


def _constant(node: exp.Expr) -> tuple[str, exp.Expr] | None:
    """(kind, literal) of a comparison constant: ``str``, ``num`` or ``bool``."""
    node = _unparen(node)
    if isinstance(node, exp.Literal):
        return ("str", node.copy()) if node.is_string else ("num", node.copy())
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "num", node.copy()
    if isinstance(node, exp.Boolean):
        return "bool", exp.Literal.number(1.0 if node.this else 0.0)
    return None


def _compare(node: exp.Expr, scope: Scope) -> exp.Expr:
    left, right = _unparen(node.this), _unparen(node.expression)
    op = type(node)
    if not isinstance(left, exp.JSONExtract):
        left, right, op = right, left, _CMP_FLIP[op]
    assert isinstance(left, exp.JSONExtract)
    path = _Path(left, scope)
    const = _constant(right)
    if const is None:
        raise SqlError(
            "Invalid value type: tag->'key' is compared with a constant only",
            offset=offset_of(right),
            code=Code.WRONG_VALUE_TYPE,
        )
    kind, lit = const
    if kind == "str":
        same: exp.Expr = exp.and_(
            exp.EQ(this=path.jtype(), expression=exp.Literal.string("VARCHAR")),
            op(this=path.text(), expression=lit),
        )
        other: exp.Expr | None = path.is_type(*_NUMERIC, "BOOLEAN")
    else:
        same = exp.and_(path.is_type(*_NUMERIC, "BOOLEAN"), op(this=path.number(), expression=lit))
        other = exp.EQ(this=path.jtype(), expression=exp.Literal.string("VARCHAR")) if kind == "num" else None
    if op is exp.NEQ and other is not None:
        same = exp.or_(same, other)
    return _false_if_null(same)


def rewrite(node: exp.Expr, backend: str, scope: Scope) -> exp.Expr:
    """Backend expression for a node :func:`handles` (DuckDB only).

    Raises:
        SqlError: WRONG_VALUE_TYPE for ``->`` on something other than a JSON tag or with a key
            that is not a string constant; NOT_SUPPORTED on the Spark backend (streams).
    """
    if backend != "duckdb":
        raise SqlError(
            "the JSON operators -> and CONTAINS are not supported in streams",
            offset=offset_of(node),
            code=Code.NOT_SUPPORTED,
        )
    if isinstance(node, exp.JSONBContains):
        col = _column(node, scope, "CONTAINS")
        key = _key(node, "CONTAINS")
        where = exp.Literal.string('$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"')
        return _false_if_null(
            exp.Not(this=exp.Is(this=_call("json_type", col, where), expression=exp.Null()))
        )
    if isinstance(node, exp.JSONExtract):
        return _Path(node, scope).value()
    if isinstance(node, exp.Is):
        inner = _unparen(node.this)
        assert isinstance(inner, exp.JSONExtract)
        if not isinstance(node.expression, exp.Null):
            raise SqlError(
                "tag->'key' IS takes NULL only", offset=offset_of(node), code=Code.WRONG_VALUE_TYPE
            )
        path = _Path(inner, scope)
        return exp.Paren(
            this=exp.or_(
                exp.Is(this=path.jtype(), expression=exp.Null()),
                exp.EQ(this=path.jtype(), expression=exp.Literal.string("NULL")),
            )
        )
    if isinstance(node, exp.Like):
        inner = _unparen(node.this)
        assert isinstance(inner, exp.JSONExtract)
        path = _Path(inner, scope)
        return _false_if_null(
            exp.and_(
                exp.EQ(this=path.jtype(), expression=exp.Literal.string("VARCHAR")),
                exp.Like(this=path.text(), expression=node.expression.copy()),
            )
        )
    return _compare(node, scope)


_ARROW_NAME = re.compile(r"^`?([A-Za-z_][A-Za-z0-9_]*)`?->'.*'$", re.S)


def result_type(name: str, columns: dict[str, TdType]) -> TdType | None:
    """JSON for a result column named ``tag->'key'`` over a JSON tag (TDengine types the value of
    ``->`` JSON), else None. ``columns``: lower-case name -> type of the query's sources."""
    m = _ARROW_NAME.match(name)
    if m is None:
        return None
    t = columns.get(m.group(1).lower())
    return TdType("JSON") if t is not None and t.name == "JSON" else None
