"""The visual designer's services (docs/designer.md): compile SQL into a design, validate a design
field by field and as the CREATE STREAM it renders, drafts, deploy (create or redeploy a stream)
and stream versions.

The design document itself (parse, render, check, compare) is ``spark_workers.streams.design``
(imported here as ``design_doc``: ``design`` is the document's name in these functions).
"""

from __future__ import annotations

import datetime as dt
import difflib
import logging
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from spark_workers.access import redact_json
from spark_workers.engine.aggregates import AGGREGATES
from spark_workers.errors import Code, SqlError, TdError
from spark_workers.sql import ast
from spark_workers.sql.functions import FUNCTIONS
from spark_workers.sql.parser import parse_one
from spark_workers.streams import design as design_doc
from spark_workers.streams.create import check_create_stream
from spark_workers.streams.spec import StreamSpec
from streams_app import selectors
from streams_app.models import Stream, StreamDraft, StreamVersion
from streams_app.services.lake import lake_get
from streams_app.services.preview import preview
from streams_app.services.sql import executor_for
from streams_app.services.stream_control import stream_drop
from streams_app.services.streams import stream_create
from streams_app.services.versions import stream_version_create, stream_versions

log = logging.getLogger(__name__)

Issue = dict[str, Any]
RECONFIRM_KINDS = ("reset", "recalculate")
SYNTAXES = ("3.3.7", "legacy")


class DesignInvalid(Exception):
    """A design that cannot be deployed: ``issues`` as ``design_validate`` reports them."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__(issues[0]["message"] if issues else "invalid design")
        self.issues = issues


class ImpactUnconfirmed(Exception):
    """Redeploying would reset or recalculate a running stream and the user has not confirmed it;
    ``impact`` is ``{kind, statement}``."""

    def __init__(self, impact: dict[str, Any]) -> None:
        super().__init__(impact.get("statement", ""))
        self.impact = impact


def _issue(message: str, *, node: str | None = None, field: str | None = None, position: Any = None) -> Issue:
    return {"node": node, "field": field, "message": message, "position": position}


def default_db_of(design: dict[str, Any]) -> str | None:
    """The database of a design's unqualified names: its ``default_db``, else the stream's own
    database (``db``): what the designer's forms show as "not set: the stream's database"
    (docs/designer.md). None when the design names neither."""
    if not isinstance(design, dict):
        return None
    for key in ("default_db", "db"):
        v = design.get(key)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def syntax_of(design: dict[str, Any]) -> str:
    """The syntax a design is deployed in (docs/designer.md: ``3.3.7`` unless it says ``legacy``)."""
    s = design.get("syntax") if isinstance(design, dict) else None
    return s if s in SYNTAXES else "3.3.7"


# ---------------------------------------------------------------------- SQL <-> design


def design_compile(*, sql: str, db: str | None = None) -> dict[str, Any]:
    """SQL -> design, with the SQL of every syntax the design can be written in.

    Returns:
        ``{design, sql: {"3.3.7": str | None, "legacy": str | None}, not_expressible: {syntax:
        reason}}``.

    Raises:
        SqlError: the text is not one CREATE STREAM statement (positioned in ``sql``).
    """
    d = design_doc
    design = d.design_from_sql(sql, default_db=db or None)
    variants, reasons = d.sql_variants(design)
    return {"design": design, "sql": _variants(variants), "not_expressible": dict(reasons)}


def _variants(variants: dict[str, str | None]) -> dict[str, str | None]:
    return {s: variants.get(s) for s in SYNTAXES}


def stream_design(*, stream: Stream) -> dict[str, Any]:
    """The design of a deployed stream: the one recorded with its latest version when that version
    is the stream's SQL (it keeps the node layout), else ``design_from_sql(stream.sql)``; NOTIFY
    URLs with their secrets redacted (deploying it restores them, ``notify_url_unredact``)."""
    v = StreamVersion.objects.filter(stream=stream).order_by("-number").first()
    if v is not None and v.design and v.sql == stream.sql:
        return redact_json(dict(v.design))
    return redact_json(design_doc.design_from_sql(stream.sql, default_db=stream.db or None))


def version_design(v: StreamVersion) -> dict[str, Any] | None:
    """A version's design: the one recorded with it, else compiled from its SQL (None when its SQL
    has no design)."""
    if v.design:
        return dict(v.design)
    try:
        return design_doc.design_from_sql(v.sql, default_db=None)
    except TdError:
        return None


# ---------------------------------------------------------------------- validation


def stream_sql_check(
    *, user: Any, sql: str, db: str | None = None, replacing: Stream | None = None
) -> StreamSpec:
    """Every check CREATE STREAM makes, without creating anything: the one validator,
    ``spark_workers.streams.create.check_create_stream``, run with ``user``'s privileges.

    Args:
        user: who deploys.
        sql: one CREATE STREAM statement.
        db: database for unqualified names.
        replacing: the stream a redeploy drops first (its name and output table are not in use).

    Returns:
        The stream's ``StreamSpec``.

    Raises:
        SqlError: positioned in ``sql`` where the check knows the place.
        CatalogError: a missing database or table, a name in use.

    Cost: parsing and compiling one statement plus catalog reads (milliseconds); the FILL_HISTORY
    estimate reads the source's file statistics.
    """
    stmt = parse_one(sql)
    if not isinstance(stmt, ast.CreateStreamLegacy | ast.CreateStream337):
        raise SqlError("expected one CREATE STREAM statement", sql=sql, offset=0, code=Code.SYNTAX_ERROR)
    ex = executor_for(db=db, user=user)
    info = ex.registry.get(replacing.name, replacing.db or None) if replacing is not None else None
    spec, _compiled = check_create_stream(ex, stmt, sql, replacing=info)
    return spec


_NAMED = re.compile(r"\b(?:table|database|column name|column|tag)\s+`?([\w.]+)`?", re.IGNORECASE)
_TOKEN = re.compile(r"[`\w%]+")


def _word_at(sql: str, word: str, start: int) -> int | None:
    m = re.compile(rf"(?<![\w%]){re.escape(word)}(?!\w)", re.IGNORECASE).search(sql, start)
    return m.start() if m else None


def anchored(e: TdError, sql: str) -> SqlError:
    """``e`` as an error positioned in ``sql``, the statement the design renders.

    Errors found while compiling a stream may be positioned in another text (the computation
    query, the engine's window query) or not at all (a missing table): such an error is moved to
    that text's place in ``sql`` when ``sql`` contains it, else to the first occurrence after the
    stream's name of the token at its position or of the name its message mentions ("table
    air.nosuch does not exist"); otherwise it keeps no position.
    """
    if isinstance(e, SqlError) and e.sql == sql:
        return e
    code = e.code
    text = e.sql if isinstance(e, SqlError) else None
    offset = e.offset if isinstance(e, SqlError) else None
    if text and text in sql:
        return SqlError(e.message, sql=sql, offset=sql.index(text) + (offset or 0), code=code)
    try:
        stmt = parse_one(sql)
        name = getattr(stmt, "name", "")
        after = sql.lower().index(name.lower()) + len(name) if name and name.lower() in sql.lower() else 0
    except SqlError:
        after = 0
    words = []
    if text and offset is not None and (m := _TOKEN.match(text, offset)):
        words.append(m.group(0).strip("`"))
    words += [w.rsplit(".", 1)[-1] for w in _NAMED.findall(e.message)]
    for w in words:
        at = _word_at(sql, w, after) if w else None
        if at is not None:
            return SqlError(e.message, sql=sql, offset=at, code=code)
    return SqlError(e.message, sql=sql, code=code)


def _located(design: dict[str, Any], syntax: str, e: TdError, sql: str) -> Issue:
    """An error of the rendered SQL as an issue on the node/field it comes from: where its
    position is in the SQL (``locate_error``), else the field its code or message names
    (``placed_by_meaning``)."""
    err = anchored(e, sql)
    issue = dict(design_doc.locate_error(design, syntax, err))
    if issue.get("position") is None:
        issue["position"] = _position(err)
    if issue.get("field") is None:
        issue["node"], issue["field"] = placed_by_meaning(design, e)
    return issue


# (words of an error message, node, field): the field an unpositioned error is about
_MEANINGS: tuple[tuple[str, str | None, str], ...] = (
    ("preview range", None, "start"),  # the preview's range, not the design
    ("preview of PERIOD", "trigger", "type"),
    ("processing-time", "options", "event_time"),
    ("IGNORE_NODATA_TRIGGER", "options", "ignore_nodata_trigger"),
    ("FILL_HISTORY", "options", "fill_history"),
    ("MAX_DELAY", "options", "max_delay"),
    ("WATERMARK", "options", "watermark"),
    ("NOTIFY", "notify", "urls"),
    ("output", "output", "table"),
    ("trigger table", "source", "table"),
    ("source table", "source", "table"),
    ("stream", None, "name"),
)


def placed_by_meaning(design: dict[str, Any], e: TdError) -> tuple[str | None, str]:
    """The node and field an error without a position in the design's SQL is about, by its code
    (a missing database: the trigger table's or the output's ``db``; a stream name in use: the
    name) or the option or clause its message names; the computation's query otherwise (what
    compiling the stream checks last)."""
    msg = e.message
    raw = design.get("nodes")
    nodes: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if e.code == Code.DB_NOT_SPECIFIED:
        return ("output", "db") if "output" in msg.lower() else ("source", "db")
    if e.code == Code.STREAM_ALREADY_EXIST:
        return None, "name"
    for words, node, field in _MEANINGS:
        present = node in (None, "options") or nodes.get(node) is not None  # options: defaults apply
        if words.lower() in msg.lower() and present:
            return node, field
    if nodes.get("computation") is not None:
        return "computation", "query"
    return "trigger", "type"


def _position(e: TdError) -> dict[str, int] | None:
    if isinstance(e, SqlError) and e.position is not None:
        return {"offset": e.position.offset, "line": e.position.line, "column": e.position.column}
    return None


def _render(design: dict[str, Any]) -> tuple[str | None, list[Issue]]:
    """The design's SQL in its own syntax, or the issues that prevent rendering it."""
    d = design_doc
    try:
        return d.design_to_sql(design, syntax_of(design)), []
    except d.NotExpressible as e:
        return None, [_issue(str(getattr(e, "reason", e)), field="syntax")]
    except d.DesignError as e:
        return None, [_issue(e.message, node=e.node, field=e.field)]
    except (KeyError, TypeError, ValueError, AttributeError):  # a malformed document: no Python text
        log.info("design not renderable", exc_info=True)
        return None, [_issue("the design is not well-formed: a node or field has the wrong shape")]


def shape_issues(design: Any) -> list[Issue]:
    """Issues of a document that is not shaped like a design at all (docs/designer.md): ``nodes``
    an object whose entries are objects or null, with a ``trigger`` that has a ``type``. The
    field rules (``check_design``) only run on a document shaped like this."""
    if not isinstance(design, dict):
        return [_issue("a design is a JSON object")]
    nodes = design.get("nodes")
    if not isinstance(nodes, dict):
        return [_issue("the design needs nodes: an object with one entry per node", field="nodes")]
    out = [
        _issue(f"node {name} must be an object or null", node=str(name))
        for name, node in nodes.items()
        if node is not None and not isinstance(node, dict)
    ]
    trigger = nodes.get("trigger")
    if not out and (not isinstance(trigger, dict) or not trigger.get("type")):
        out.append(_issue("every stream needs a trigger with a type", node="trigger", field="type"))
    return out


def design_validate(
    *, user: Any, design: dict[str, Any], stream: Stream | None = None, db: str | None = None
) -> dict[str, Any]:
    """Check a design the way deploying it would, without changing anything.

    Field rules first (``check_design``); when they pass, the SQL of the design's syntax goes
    through ``stream_sql_check`` and its error is placed on a node/field (``locate_error``).

    Args:
        user: who asks (the SQL checks run with their privileges).
        design: a design document (docs/designer.md).
        stream: the deployed stream the design edits: its name and output table are free, and the
            answer says what redeploying does (``impact``).
        db: database for unqualified names.

    Returns:
        ``{valid, issues[{node, field, message, position}], sql: {"3.3.7", "legacy"},
        not_expressible: {syntax: reason}, placeholders[{name, description}], impact?}``.

    Cost: one parse and compile of the statement plus catalog reads; meant to run while typing.
    """
    d = design_doc
    variants: dict[str, str | None] = {s: None for s in SYNTAXES}
    reasons: dict[str, str] = {}
    issues = shape_issues(design)
    if issues:
        return {
            "valid": False,
            "issues": issues,
            "sql": variants,
            "not_expressible": reasons,
            "placeholders": [],
        }
    db = db or default_db_of(design)
    issues = [dict(i) for i in d.check_design(design)]
    try:
        v, r = d.sql_variants(design)
        variants, reasons = _variants(v), dict(r)
    except (d.DesignError, d.NotExpressible) as e:
        if not issues:
            message = e.message if isinstance(e, d.DesignError) else e.reason
            issues.append(_issue(message, node=e.node, field=e.field or "syntax"))
    except TdError as e:
        if not issues:
            node, field = placed_by_meaning(design, e)
            issues.append(_issue(e.message, node=node, field=field))
    except (KeyError, TypeError, ValueError, AttributeError):  # a malformed document: no Python text
        log.info("design not renderable", exc_info=True)
        if not issues:
            issues.append(_issue("the design is not well-formed: a node or field has the wrong shape"))
    if not issues:
        sql, issues = _render(design)
        if sql is not None:
            try:
                stream_sql_check(user=user, sql=sql, db=db, replacing=stream)
            except TdError as e:
                issues.append(_located(design, syntax_of(design), e, sql))
    out: dict[str, Any] = {
        "valid": not issues,
        "issues": issues,
        "sql": variants,
        "not_expressible": reasons,
        "placeholders": _placeholders(design),
    }
    if stream is not None:
        try:
            out["impact"] = d.impact(stream_design(stream=stream), design)
        except (TdError, KeyError, TypeError, ValueError):
            out["impact"] = d.impact(None, design) if not issues else None
        if out["impact"] is None:
            del out["impact"]
    return out


def _placeholders(design: dict[str, Any]) -> list[dict[str, str]]:
    nodes = design.get("nodes") if isinstance(design, dict) else None
    trigger = (nodes or {}).get("trigger") or {}
    source = (nodes or {}).get("source") or {}
    if not isinstance(trigger, dict) or not trigger.get("type"):
        return []
    try:
        return list(
            design_doc.placeholders_for(
                trigger["type"], bool(isinstance(source, dict) and source.get("partition_by"))
            )
        )
    except (KeyError, ValueError):
        return []


def placeholder_catalog() -> dict[str, list[dict[str, str]]]:
    """The placeholders of every trigger type, for a partitioned trigger table (seed 002,
    Placeholders table)."""
    d = design_doc
    out = {}
    for t in ("interval", "sliding", "period", "session", "state", "event", "count", "none"):
        try:
            out[t] = list(d.placeholders_for(t, True))
        except (KeyError, ValueError):
            out[t] = []
    return out


# ---------------------------------------------------------------------- catalog and preview


_KINDS = {"super": "supertable", "sub": "subtable", "normal": "normal"}


def _is_virtual(db: str, table: str) -> bool:
    """Whether ``db.table`` is a virtual table (CREATE VTABLE / a virtual supertable's child, or
    CREATE STABLE ... VIRTUAL 1), which may be a trigger table (seed 002, Trigger Tables)."""
    try:
        return bool(getattr(lake_get().catalog.require_table(db, table), "virtual", False))
    except TdError:
        return False


def designer_catalog(*, user: Any, db: str | None = None) -> dict[str, Any]:
    """What the designer's forms offer: databases with their tables, the SQL functions and the
    placeholders per trigger type.

    Returns:
        ``{databases[{name, precision, tables[{name, kind (supertable | subtable | normal),
        stable, virtual, columns[{name, type}], tags[{name, type}]}]}], functions[{name, kind (aggregate |
        scalar)}], placeholders{trigger_type: [{name, description}]}, defaults{syntax: what null
        fields mean (``design.defaults``)}, options{syntax: {trigger_type: [option keys offered]}}}``;
        subtables carry their supertable's columns and tags.

    Raises:
        CatalogError: ``db`` does not exist.
    """
    visible = selectors.database_list(user=user)
    names = [db] if db else [d["name"] for d in visible]
    precisions = {d["name"]: d["precision"] for d in visible}
    databases = []
    for name in names:
        entries = selectors.table_list(user=user, db=name)
        details: dict[str, dict[str, Any]] = {}
        for e in entries:
            if e["kind"] != "sub":
                details[e["name"].lower()] = selectors.table_detail(user=user, db=name, name=e["name"])

        def fields(cols: list[dict[str, Any]]) -> list[dict[str, str]]:
            return [{"name": c["name"], "type": c["type"]} for c in cols]

        tables = []
        for e in entries:
            t = details.get((e["stable"] if e["kind"] == "sub" else e["name"]).lower())
            if t is None:
                continue
            tables.append(
                {
                    "name": e["name"],
                    "kind": _KINDS.get(e["kind"], e["kind"]),
                    "stable": e["stable"],
                    "virtual": _is_virtual(name, e["name"]),
                    "columns": fields(t["columns"]),
                    "tags": fields(t["tags"]),
                }
            )
        canonical = lake_get().catalog.require_database(name).name
        databases.append({"name": canonical, "precision": precisions.get(canonical, "ms"), "tables": tables})
    functions = [{"name": f, "kind": "aggregate"} for f in AGGREGATES]
    functions += [{"name": f, "kind": "scalar"} for f in sorted(FUNCTIONS) if f not in AGGREGATES]
    d = design_doc
    return {
        "databases": databases,
        "functions": functions,
        "placeholders": placeholder_catalog(),
        "defaults": {syntax: d.defaults(syntax) for syntax in SYNTAXES},
        "options": option_catalog(),
    }


def option_catalog() -> dict[str, dict[str, list[str]]]:
    """The options the designer offers per syntax and trigger type (``design.options_for``):
    seed 002's options less those it says a 3.3.7 trigger type has not; legacy: every legacy
    option.

    Returns:
        ``{syntax: {trigger_type: [option key]}}``.
    """
    d = design_doc
    return {syntax: {t: d.options_for(syntax, t) for t in d.TRIGGER_FIELDS} for syntax in SYNTAXES}


def instant_ms(value: Any) -> int:
    """Epoch milliseconds of ``value``: an integer (epoch ms) or an ISO 8601 text (without a zone:
    in ``TDWEB_TIMEZONE``, ARCHITECTURE.md).

    Raises:
        ValueError: neither.
    """
    if isinstance(value, bool):
        raise ValueError("expected epoch milliseconds or an ISO 8601 time")
    if isinstance(value, int | float):
        return int(value)
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither epoch milliseconds nor an ISO 8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=ZoneInfo(settings.TDWEB_TIMEZONE))
    return int(t.timestamp() * 1000)


class PreviewFailed(Exception):
    """A preview that cannot run: ``issue`` places the error on a node/field; ``error`` is the
    SQL error (code, message, position)."""

    def __init__(self, error: TdError, issue: Issue) -> None:
        super().__init__(issue["message"])
        self.error = error
        self.issue = issue


def design_preview(
    *, user: Any, design: dict[str, Any], start_ms: int, end_ms: int, limit: int
) -> dict[str, Any]:
    """Run a design over the rows of ``[start_ms, end_ms]`` without deploying it
    (``streams_app.services.preview.preview``).

    Returns:
        ``{windows[], rows{columns, data}, notifications[], input_rows, elapsed_ms, truncated}``.

    Raises:
        DesignInvalid: the design has field issues or cannot be rendered.
        PreviewFailed: the SQL or the run failed.
    """
    issues = shape_issues(design) or [dict(i) for i in design_doc.check_design(design)]
    if issues:
        raise DesignInvalid(issues)
    sql, issues = _render(design)
    if sql is None:
        raise DesignInvalid(issues)
    try:
        return preview(
            user, sql, start_ms=start_ms, end_ms=end_ms, limit=limit, default_db=default_db_of(design)
        )
    except TdError as e:
        raise PreviewFailed(e, _located(design, syntax_of(design), e, sql)) from e


# ---------------------------------------------------------------------- drafts


def drafts_visible(*, user: Any) -> QuerySet[StreamDraft]:
    """Drafts a user may see and change: their own; staff: all. Newest change first."""
    qs = StreamDraft.objects.select_related("owner", "stream")
    if not getattr(user, "is_staff", False):
        qs = qs.filter(owner_id=getattr(user, "pk", None))
    return qs.order_by("-updated_at", "-id")


def draft_create(
    *, user: Any, design: dict[str, Any], name: str = "", stream: Stream | None = None
) -> StreamDraft:
    """A new draft owned by ``user``; ``name`` defaults to the design's stream name."""
    return StreamDraft.objects.create(
        owner=user, name=(name or str(design.get("name") or "untitled"))[:192], design=design, stream=stream
    )


def draft_update(
    *,
    draft: StreamDraft,
    design: dict[str, Any] | None = None,
    name: str | None = None,
    stream: Stream | bool | None = False,
) -> StreamDraft:
    """Change a draft's design, name or edited stream (``stream=False``: unchanged)."""
    if design is not None:
        draft.design = design
    if name is not None:
        draft.name = name[:192]
    if stream is not False:
        draft.stream = stream if isinstance(stream, Stream) else None
    draft.save()
    return draft


def draft_delete(*, draft: StreamDraft) -> None:
    draft.delete()


def draft_from_stream(*, user: Any, stream: Stream) -> StreamDraft:
    """A draft editing a deployed stream, starting from its current design."""
    return draft_create(user=user, design=stream_design(stream=stream), name=stream.name, stream=stream)


# ---------------------------------------------------------------------- deploy


def stream_create_sql(*, sql: str, user: Any, db: str | None = None) -> Stream:
    """CREATE STREAM ``sql`` owned by ``user`` (``db``: the database of unqualified names);
    returns the new stream.

    Raises:
        TdError: the statement fails (nothing is created); CatalogError STREAM_ALREADY_EXIST when
            IF NOT EXISTS met an existing stream.
    """
    return stream_create(user=user, sql=sql, db=db)


def stream_redeploy(*, stream: Stream, sql: str, user: Any, db: str | None = None) -> Stream:
    """Replace a stream by a new statement: DROP STREAM then CREATE STREAM, as one step.

    The old stream is marked dropped and the new one created in one transaction; if CREATE fails
    the transaction rolls back, so the old stream is live again with its row, key and checkpoint
    untouched (nothing is lost; re-creating it from its SQL would restart it without its state).
    Only after the new stream exists is the old one's query stopped and its checkpoint removed
    (``stream_drop``). The new stream keeps the old one's owner (``user`` when it had none); its
    output data stays (seed 000).

    Raises:
        TdError: CREATE STREAM failed; the old stream is unchanged.
    """
    owner = stream.owner or user
    with transaction.atomic():
        Stream.objects.filter(pk=stream.pk).update(
            status=Stream.Status.DROPPED, desired_state=Stream.Desired.STOPPED, updated_at=timezone.now()
        )
        new = stream_create_sql(sql=sql, user=owner, db=db)
    stream_drop(stream=stream)
    return new


@dataclass(frozen=True)
class Deployment:
    """What ``draft_deploy`` did: the live stream, its version and the impact of the change."""

    stream: Stream
    version: StreamVersion
    impact: dict[str, Any]


def draft_deploy(*, draft: StreamDraft, user: Any, confirm_impact: bool = False) -> Deployment:
    """Deploy a draft: validate it again, then CREATE STREAM (a new stream) or redeploy the stream
    it edits, and record the version with its design and impact.

    A changed design whose impact is ``reset`` or ``recalculate`` needs ``confirm_impact``; an
    unchanged design deploys nothing and answers the stream's current version.

    Raises:
        DesignInvalid: the design has issues: its field rules, or CREATE STREAM's error placed on
            a node and field (as ``design_validate`` reports them); a redeployed stream is left
            as it was.
        ImpactUnconfirmed: the change needs confirmation.
    """
    d = design_doc
    target = (
        draft.stream if draft.stream is not None and draft.stream.status != Stream.Status.DROPPED else None
    )
    design = dict(draft.design)
    # the field rules, then the design's SQL rendered once; CREATE STREAM itself is the check of
    # the statement (streams.create.check_create_stream, compiling it once), its error placed on
    # a node and field as design_validate places it
    issues = shape_issues(design) or [dict(i) for i in d.check_design(design)]
    if issues:
        raise DesignInvalid(issues)
    sql, issues = _render(design)
    if sql is None:
        raise DesignInvalid(issues)
    try:
        return _deploy(draft, design, sql, target, user=user, confirm_impact=confirm_impact)
    except TdError as e:
        raise DesignInvalid([_located(design, syntax_of(design), e, sql)]) from e


def _deploy(
    draft: StreamDraft,
    design: dict[str, Any],
    sql: str,
    target: Stream | None,
    *,
    user: Any,
    confirm_impact: bool,
) -> Deployment:
    d = design_doc
    if target is None:
        impact = dict(d.impact(None, design))
        stream = stream_create_sql(sql=sql, user=user, db=default_db_of(design))
    else:
        old = stream_design(stream=target)
        impact = dict(d.impact(old, design))
        if not d.design_changes(old, design):
            version = StreamVersion.objects.filter(stream=target).order_by("-number").first()
            if version is None:
                version = stream_version_create(stream=target, created_by=user, design=design)
            return Deployment(target, version, impact)
        if impact.get("kind") in RECONFIRM_KINDS and not confirm_impact:
            raise ImpactUnconfirmed(impact)
        stream = stream_redeploy(stream=target, sql=sql, user=user, db=default_db_of(design))
    version = StreamVersion.objects.filter(stream=stream).order_by("-number").first()
    if version is None:  # a registry that records no version
        version = stream_version_create(stream=stream, created_by=user)
    version.design, version.impact, version.created_by = design, impact, user
    version.save(update_fields=["design", "impact", "created_by"])
    draft_update(draft=draft, stream=stream)
    return Deployment(stream, version, impact)


# ---------------------------------------------------------------------- versions


class VersionNotFound(Exception):
    """No version with that number for the stream."""


def stream_version_diff(*, stream: Stream, from_number: int | None, to_number: int | None) -> dict[str, Any]:
    """Compare two versions of a stream (default: the latest and the one before it).

    Returns:
        ``{from, to, sql_diff (unified diff of the SQL texts), changes[{node, field, old, new}],
        impact{kind, statement}}``; ``impact`` is what deploying ``to`` over ``from`` does.

    Raises:
        VersionNotFound: a number that is not a version of the stream.
    """
    versions = stream_versions(stream=stream)
    latest = versions.first()
    if latest is None:
        raise VersionNotFound("the stream has no versions")
    to_n = to_number if to_number is not None else latest.number
    from_n = from_number if from_number is not None else max(1, to_n - 1)
    a = versions.filter(number=from_n).first()
    b = versions.filter(number=to_n).first()
    if a is None or b is None:
        raise VersionNotFound(f"no version {from_n if a is None else to_n} of stream {stream.name}")
    d = design_doc
    da, db_ = version_design(a), version_design(b)
    sql_diff = "".join(
        difflib.unified_diff(
            [line + "\n" for line in a.sql.splitlines()],
            [line + "\n" for line in b.sql.splitlines()],
            fromfile=f"v{a.number}",
            tofile=f"v{b.number}",
        )
    )
    changes = list(d.design_changes(da, db_)) if da is not None and db_ is not None else []
    impact = dict(d.impact(da, db_)) if db_ is not None else None
    return redact_json(
        {"from": a.number, "to": b.number, "sql_diff": sql_diff, "changes": changes, "impact": impact}
    )
