"""``StreamSpec``: the versioned JSON contract between the web tier and the Spark workers.

Both stream syntaxes (legacy, seed 000; TDengine 3.3.7, seed 002) compile to one StreamSpec. It
keeps every part of a design as written (durations as ``"10s"``, expressions as TDengine SQL text)
so SQL -> StreamSpec -> SQL is lossless, and it is complete: a worker needs nothing else (plus the
lake's catalog) to run the stream.

JSON shape (``schema_version`` 1)::

    {"schema_version": 1, "name": "s1", "db": "d0", "syntax": "legacy",
     "source": {"db": "d0", "table": "st"},
     "trigger": {"type": "interval", "interval": "10s", "offset": null, "sliding": "5s"},
     "partition_by": [{"sql": "tbname", "alias": "tname"}],
     "filter": "a > 0",
     "query": "SELECT _wstart, count(*) FROM st ... INTERVAL(10s)",
     "options": {"trigger": "AT_ONCE", "watermark": "1d", ...},
     "output": {"db": "d0", "table": "out", "subtable": null, "columns": null, "tags": []},
     "notify": null, "sql": "CREATE STREAM ..."}
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.sql import ast
from spark_workers.sql.render import expr_sql

SCHEMA_VERSION = 1
LEGACY = "legacy"
V337 = "3.3.7"


@dataclass
class SourceSpec:
    """The trigger table (``FROM`` of a legacy subquery, ``FROM`` of a 3.3.7 trigger)."""

    db: str
    table: str


@dataclass
class OptionsSpec:
    """Trigger mode and stream options; durations as TDengine literals (``"10s"``) or None.

    Legacy defaults (seed 000, ARCHITECTURE.md): trigger WINDOW_CLOSE, watermark 0,
    IGNORE EXPIRED 1, IGNORE UPDATE 1, DELETE_MARK 10 years, FILL_HISTORY 0.
    """

    trigger: str = "WINDOW_CLOSE"
    max_delay: str | None = None
    recalculate: str | None = None
    watermark: str | None = None
    ignore_expired: bool = True
    ignore_update: bool = True
    delete_mark: str | None = None
    fill_history: bool = False
    fill_history_async: bool = False
    event_time: bool = True  # tdweb: False = processing time (eKuiper's mode, seed 003)
    # 3.3.7 STREAM_OPTIONS (seed 002); unused by legacy streams
    expired_time: str | None = None
    ignore_disorder: bool = False
    delete_recalc: bool = False
    delete_output_table: bool = False
    fill_history_first: bool = False
    fill_history_start: str | None = None
    calc_notify_only: bool = False
    low_latency_calc: bool = False
    pre_filter: str | None = None
    force_output: bool = False
    event_type: list[str] = field(default_factory=list)
    ignore_nodata_trigger: bool = False


@dataclass
class OutputTag:
    """A tag of the output supertable: name, TDengine type text (empty for a legacy tag named
    alone, ``TAGS (ta)``), optional value expression."""

    name: str
    type: str
    expr: str | None = None
    comment: str | None = None


@dataclass
class OutputSpec:
    """Where results go: ``table`` (a supertable when grouped), ``subtable`` naming expression,
    explicit output ``columns`` (name list with composite key flags) and ``tags``."""

    db: str
    table: str
    subtable: str | None = None
    columns: list[dict[str, Any]] | None = None
    tags: list[OutputTag] = field(default_factory=list)


@dataclass
class NotifySpec:
    """Notification targets and rules (seed 000 "Stream Computing Event Notifications", seed 002)."""

    urls: list[str]
    events: list[str]
    history: bool = False
    on_failure: str = "PAUSE"
    where: str | None = None


@dataclass
class StreamSpec:
    """One stream, as designed. See the module docstring for the JSON shape."""

    name: str
    db: str | None
    syntax: str
    source: SourceSpec | None
    trigger: dict[str, Any]
    partition_by: list[dict[str, Any]]
    filter: str | None
    query: str | None
    options: OptionsSpec
    output: OutputSpec | None
    notify: NotifySpec | None = None
    sql: str = ""
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StreamSpec:
        """Inverse of ``to_json``; raises ``ValueError`` for an unknown ``schema_version``."""
        version = int(d.get("schema_version", 0))
        if version != SCHEMA_VERSION:
            raise ValueError(f"unsupported StreamSpec schema_version {version}")
        out = d.get("output")
        return cls(
            name=d["name"],
            db=d.get("db"),
            syntax=d["syntax"],
            source=SourceSpec(**d["source"]) if d.get("source") else None,
            trigger=dict(d["trigger"]),
            partition_by=[dict(p) for p in d.get("partition_by", [])],
            filter=d.get("filter"),
            query=d.get("query"),
            options=OptionsSpec(**d.get("options", {})),
            output=OutputSpec(
                db=out["db"],
                table=out["table"],
                subtable=out.get("subtable"),
                columns=out.get("columns"),
                tags=[OutputTag(**t) for t in out.get("tags", [])],
            )
            if out
            else None,
            notify=NotifySpec(**d["notify"]) if d.get("notify") else None,
            sql=d.get("sql", ""),
            schema_version=version,
        )

    @property
    def qualified_name(self) -> str:
        return f"{self.db}.{self.name}" if self.db else self.name


def _written(d: Duration | None) -> str | None:
    return None if d is None else str(d)


def _written_expr(e: exp.Expr | None) -> str | None:
    return None if e is None else expr_sql(e)


def trigger_json(w: ast.Window | ast.Trigger337) -> dict[str, Any]:
    """The one JSON form of a trigger or window clause, for the StreamSpec (both syntaxes) and the
    designer's trigger node (docs/designer.md): ``type`` (``interval``, ``sliding``, ``period``,
    ``session``, ``state``, ``event``, ``count``, ``ekuiper``) and its fields, durations and
    expressions as written (``"10s"``, ``"pm25 > 150"``), None where not written."""
    if isinstance(w, ast.IntervalWindow):
        return {
            "type": "interval",
            "interval": str(w.interval),
            "offset": _written(w.offset),
            "sliding": _written(w.sliding),
            "sliding_offset": None,
        }
    if isinstance(w, ast.SlidingTrigger):
        if w.interval is None:
            return {
                "type": "sliding",
                "sliding": str(w.sliding),
                "sliding_offset": _written(w.sliding_offset),
            }
        return {
            "type": "interval",
            "interval": str(w.interval),
            "offset": _written(w.interval_offset),
            "sliding": str(w.sliding),
            "sliding_offset": _written(w.sliding_offset),
        }
    if isinstance(w, ast.PeriodTrigger):
        return {"type": "period", "period": str(w.period), "offset": _written(w.offset)}
    if isinstance(w, ast.SessionWindow):
        return {"type": "session", "ts_column": w.ts_column, "gap": str(w.gap)}
    if isinstance(w, ast.StateWindow):
        return {"type": "state", "expr": expr_sql(w.expr), "true_for": _written(w.true_for)}
    if isinstance(w, ast.EventWindow):
        return {
            "type": "event",
            "start": expr_sql(w.start),
            "end": expr_sql(w.end),
            "true_for": _written(w.true_for),
        }
    if isinstance(w, ast.CountWindow):
        return {"type": "count", "count": w.count, "sliding": w.sliding, "columns": list(w.columns)}
    assert isinstance(w, ast.EkuiperWindow)
    return {
        "type": "ekuiper",
        "function": w.function,
        "unit": w.unit,
        "args": list(w.args),
        "over_when": _written_expr(w.over_when),
        "filter": _written_expr(w.filter),
    }
