"""DECIMAL in arithmetic (TDengine SQL manual, "Data Types", DECIMAL): an integer operand is
converted to DECIMAL; with a DOUBLE, FLOAT, VARCHAR or NCHAR operand (a float constant such as
``1.5`` is a DOUBLE) the DECIMAL is converted to DOUBLE and so is the result.

DuckDB reads ``1.5`` as a DECIMAL and would keep the result exact; :func:`promote` casts the
DECIMAL operand to DOUBLE first so the result is TDengine's.
"""

from __future__ import annotations

from sqlglot import exp

from spark_workers.sql.functions import kind_of
from spark_workers.sql.scope import Scope

ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


def _is_decimal(node: exp.Expr, scope: Scope) -> bool:
    while isinstance(node, exp.Paren | exp.Neg):
        node = node.this
    if isinstance(node, exp.Column) and not node.table:
        t = scope.columns.get(node.name.lower())
        return t is not None and t.name == "DECIMAL"
    if isinstance(node, ARITHMETIC):
        return _is_decimal(node.this, scope) or _is_decimal(node.expression, scope)
    return False


def promote(node: exp.Expr, scope: Scope) -> None:
    """Cast the DECIMAL operand of ``node`` (an arithmetic node) to DOUBLE, in place, when the
    other operand is a float or a string; integers and DECIMALs keep the DECIMAL arithmetic."""
    if not isinstance(node, ARITHMETIC) or node.meta.get("td_decimal_checked"):
        return
    node.meta["td_decimal_checked"] = True
    sides = [("this", node.this), ("expression", node.expression)]
    for (key, side), (_k, other) in ((sides[0], sides[1]), (sides[1], sides[0])):
        if _is_decimal(side, scope) and kind_of(other, scope) in ("float", "str"):
            node.set(key, exp.cast(exp.Paren(this=side.copy()), "DOUBLE"))
