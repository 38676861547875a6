"""The computation's form in a design: a query over ``%%trows`` with the 3.3.7 window placeholders.

A design keeps its computation as ``SELECT ... FROM %%trows`` in both syntaxes (seed 002,
Placeholders; ``docs/designer.md`` "The computation"). A legacy window query reads its table and
names the window ``_wstart`` / ``_wend`` / ``_wduration``; the design's computation reads
``%%trows`` and names them ``_twstart`` / ``_twend`` / ``_twduration``. This module holds the
renaming between the two (keeping the letters' case) and the ``FROM %%trows`` checks.
"""

from __future__ import annotations

import re

from sqlglot import exp

from spark_workers.sql import ast
from spark_workers.sql.lexer import TROWS
from spark_workers.sql.parser import parse_one

# legacy window pseudo-column -> 3.3.7 placeholder (the design's computation uses the latter)
TO_337 = {"_wstart": "_twstart", "_wend": "_twend", "_wduration": "_twduration"}
TO_LEGACY = {v: k for k, v in TO_337.items()}


def _rename(name: str, mapping: dict[str, str]) -> str | None:
    """``_wstart`` -> ``_twstart`` (or back), keeping the case of the letters; None if unmapped."""
    target = mapping.get(name.lower())
    if target is None:
        return None
    if len(target) > len(name):  # insert the "t"
        return name[0] + ("T" if name[1:2].isupper() else "t") + name[1:]
    return name[0] + name[2:]


def rename_columns(tree: exp.Expr, mapping: dict[str, str]) -> None:
    """Rename the unqualified window pseudo-columns of ``tree`` in place (``TO_337`` / ``TO_LEGACY``)."""
    for col in list(tree.find_all(exp.Column)):
        if col.table:
            continue
        new = _rename(col.name, mapping)
        if new is not None:
            col.set("this", exp.to_identifier(new))


def rename_text(text: str, mapping: dict[str, str]) -> str:
    """``text`` (a select-list item as written) with its window pseudo-columns renamed."""
    pattern = re.compile(r"(?<![\w.`])(" + "|".join(mapping) + r")(?![\w`])", re.IGNORECASE)
    return pattern.sub(lambda m: _rename(m.group(1), mapping) or m.group(1), text)


def trows_table() -> exp.Expr:
    """A fresh ``%%trows`` table node, as the parser makes it."""
    stmt = parse_one("SELECT 1 FROM %%trows")
    assert isinstance(stmt, ast.Select) and isinstance(stmt.query.select, exp.Select)
    return stmt.query.select.args["from_"].this


def from_table(sel: exp.Expr) -> exp.Table | None:
    """The one table a SELECT reads (``FROM t`` without joins), else None."""
    if not isinstance(sel, exp.Select) or sel.args.get("joins"):
        return None
    frm = sel.args.get("from_")
    t = frm.this if frm is not None else None
    return t if isinstance(t, exp.Table) else None


def is_trows(t: exp.Table | None) -> bool:
    """Whether ``t`` is ``%%trows`` (no database, no alias)."""
    return t is not None and t.name.lower() == TROWS and not t.db and not t.alias
