"""The stream designer's design document: CREATE STREAM <-> design JSON, checks, error placement,
placeholders and the impact of a change (contract: ``docs/designer.md``, section "Design").

The modules, each importing only those above it in this list:

- ``document``: the document's nodes and fields, options per syntax and trigger type
  (``options_for``), ``defaults``, the errors (``DesignError``, ``NotExpressible``) and the
  issue shape;
- ``computation``: the computation's ``%%trows`` form and the window pseudo-column renaming;
- ``fields``: reading a design's fields (text, durations, expressions, queries...);
- ``from_sql``: SQL -> design (``design_from_sql``);
- ``convert``: cross-syntax conversion, legacy <-> 3.3.7 (``convert_design``);
- ``to_sql``: design -> SQL (``build_statement``, ``design_to_sql``, ``sql_variants``);
- ``checks``: field checks (``check_design``);
- ``locate``: error location (``field_spans``, ``locate_error``);
- ``placeholders``: the placeholder palette per trigger type (``placeholders_for``);
- ``changes``: changes between designs and their deploy impact (``design_changes``, ``impact``).
"""

from spark_workers.streams.design.changes import design_changes, impact
from spark_workers.streams.design.checks import check_design
from spark_workers.streams.design.convert import convert_design
from spark_workers.streams.design.document import (
    COUNT_MIN,
    EKUIPER_FUNCTIONS,
    EKUIPER_UNITS,
    LEGACY_TRIGGER_MODES,
    MAX_DELAY_MIN,
    NODES,
    OPTION_KEYS,
    OPTIONS_337_NOT_FOR,
    SYNTAXES,
    TRIGGER_FIELDS,
    WINDOW_TRIGGERS,
    DesignError,
    NotExpressible,
    defaults,
    options_for,
)
from spark_workers.streams.design.from_sql import design_from_sql
from spark_workers.streams.design.locate import FieldSpan, field_spans, locate_error
from spark_workers.streams.design.placeholders import placeholders_for
from spark_workers.streams.design.to_sql import build_statement, design_to_sql, sql_variants

__all__ = [
    "COUNT_MIN",
    "EKUIPER_FUNCTIONS",
    "EKUIPER_UNITS",
    "LEGACY_TRIGGER_MODES",
    "MAX_DELAY_MIN",
    "NODES",
    "OPTIONS_337_NOT_FOR",
    "OPTION_KEYS",
    "SYNTAXES",
    "TRIGGER_FIELDS",
    "WINDOW_TRIGGERS",
    "DesignError",
    "FieldSpan",
    "NotExpressible",
    "build_statement",
    "check_design",
    "convert_design",
    "defaults",
    "design_changes",
    "design_from_sql",
    "design_to_sql",
    "field_spans",
    "impact",
    "locate_error",
    "options_for",
    "placeholders_for",
    "sql_variants",
]
