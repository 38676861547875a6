"""What the names of a TDengine expression refer to, and the names of its calls.

Shared by the translator (:mod:`spark_workers.sql.translate`), the scalar function catalogue
(:mod:`spark_workers.sql.functions`), the front door's allow-list (:mod:`spark_workers.sql.sandbox`)
and the query planner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from spark_workers.tdtypes import TdType

# TDengine's pseudo columns for a table's primary timestamp column
PSEUDO_TS = frozenset({"_c0", "_rowts"})


@dataclass
class Scope:
    """What the names of an expression refer to.

    Attributes:
        columns: lower-case logical column name -> TDengine type (columns, tags, ``tbname``).
        ts_column: name of the primary timestamp column (target of ``_c0``/``_rowts``).
        precision: database precision for integer timestamp literals.
        tz: time zone for timestamp strings without a zone.
        timestamp_names: extra lower-case names holding timestamps (``_wstart``, ``_wend``).
        key_column: the table's composite key column, which orders rows of one timestamp for
            ``first`` / ``last`` / ``last_row`` (``lake/keys.py``); None without one.
    """

    columns: dict[str, TdType] = field(default_factory=dict)
    ts_column: str | None = None
    precision: str = "ms"
    tz: str = "UTC"
    timestamp_names: frozenset[str] = frozenset()
    key_column: str | None = None

    def is_timestamp(self, node: exp.Expr) -> bool:
        if isinstance(node, exp.Column) and not node.table:
            name = node.name.lower()
            if name in PSEUDO_TS or name in self.timestamp_names:
                return True
            t = self.columns.get(name)
            return t is not None and t.name == "TIMESTAMP"
        return isinstance(node, exp.CurrentTimestamp)


def func_name(node: exp.Expr) -> str | None:
    """Lower-case TDengine name of a function call node, or None if ``node`` is not a call."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.StddevPop | exp.Stddev):
        return "stddev"
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None
