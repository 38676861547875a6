"""String constants compared with VARBINARY and GEOMETRY columns (TDengine SQL manual, "Data
Types"): a ``'\\x..'`` constant is its hex bytes, any other string its UTF-8 bytes; a GEOMETRY
column compares with the WKB of a WKT constant. :func:`bind_constants` turns the constants of a
comparison (``=  != <> < <= > >=``, ``IN``) into DuckDB blobs (``unhex('6162')``) so that DuckDB
never reads them with its own blob escapes.
"""

from __future__ import annotations

from sqlglot import exp

from spark_workers.errors import SqlError
from spark_workers.sql import typed_values
from spark_workers.sql.ast import offset_of
from spark_workers.sql.scope import Scope

_CMP = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _binary_type(node: exp.Expr, scope: Scope) -> str | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column) and not node.table:
        t = scope.columns.get(node.name.lower())
        if t is not None and t.name in ("VARBINARY", "GEOMETRY"):
            return t.name
    return None


def _blob(lit: exp.Expr, type_name: str, what: str) -> exp.Expr | None:
    if not (isinstance(lit, exp.Literal) and lit.is_string):
        return None
    text = str(lit.this)
    try:
        if type_name == "GEOMETRY":
            data = typed_values.wkt_to_wkb(text, what)
        else:
            data = typed_values.varbinary(text, None, what) or b""
    except SqlError as e:
        raise SqlError(e.message, offset=offset_of(lit), code=e.code) from None
    return exp.Anonymous(this="unhex", expressions=[exp.Literal.string(data.hex())])


def bind_constants(node: exp.Expr, scope: Scope) -> None:
    """Replace, in place, the string constants compared with a VARBINARY or GEOMETRY column.

    Raises:
        SqlError: INVALID_VARBINARY for a bad ``\\x`` constant; SYNTAX_ERROR for a GEOMETRY
            constant that is not WKT.
    """
    if isinstance(node, _CMP):
        for key, other in (("expression", node.this), ("this", node.expression)):
            kind = _binary_type(other, scope)
            if kind is not None:
                blob = _blob(node.args[key], kind, f"a {kind} comparison")
                if blob is not None:
                    node.set(key, blob)
    elif isinstance(node, exp.In):
        kind = _binary_type(node.this, scope)
        if kind is not None:
            items = [_blob(e, kind, f"a {kind} comparison") or e for e in node.expressions]
            node.set("expressions", items)
