"""Typed statements produced by the TDengine SQL parser (``spark_workers.sql.parser``).

Expressions inside statements are ``sqlglot`` expression trees in tdweb's TDengine dialect
(``spark_workers.sql.dialect``):

- duration literals such as ``1h`` are ``exp.Interval`` nodes whose ``meta["td_duration"]`` keeps
  the literal as written (``"1h"``);
- ``now``/``now()`` is ``exp.CurrentTimestamp``; ``today()`` is ``exp.Anonymous("today")``;
- 3.3.7 placeholders are ``exp.Placeholder``-free identifiers: ``%%trows`` -> table ``__td_trows``,
  ``%%tbname`` -> ``__td_tbname``, ``%%1`` -> column ``__td_p1``; ``_twstart`` etc. stay columns.

Every node that users may get wrong keeps a ``Span`` (character offsets into the statement text)
so errors can point at it; an expression's position is in ``sqlglot``'s token metadata
(:func:`offset_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.tdtypes import TdType

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class Span:
    """Half-open character range ``[start, end)`` in the statement text."""

    start: int
    end: int


def offset_of(node: exp.Expr) -> int | None:
    """Character offset of a node in the statement, from sqlglot's token metadata."""
    for n in node.walk():
        meta = getattr(n, "meta", None) or {}
        if "start" in meta:
            return int(meta["start"])
        if isinstance(n, exp.Column) and n.this is not None:
            m = getattr(n.this, "meta", None) or {}
            if "start" in m:
                return int(m["start"])
    return None


@dataclass(frozen=True)
class TableName:
    """``[db.]name`` as written; ``db`` is None when the statement did not qualify it."""

    name: str
    db: str | None = None
    span: Span | None = None

    def __str__(self) -> str:
        return f"{self.db}.{self.name}" if self.db else self.name


@dataclass(frozen=True)
class ColumnDef:
    """A column or tag definition: ``name type [COMMENT '...'] [COMPOSITE KEY]``."""

    name: str
    type: TdType
    comment: str | None = None
    composite_key: bool = False
    span: Span | None = None


# --------------------------------------------------------------------------- databases, tables


@dataclass
class CreateDatabase:
    """``CREATE DATABASE [IF NOT EXISTS] db [option value ...]``.

    ``options`` maps upper-case option names to values (``{"PRECISION": "ms", "VGROUPS": 1,
    "KEEP": "3650d", "DURATION": "10d"}``): TDengine's db_options only (``parser.tables.CREATE_DB_OPTIONS``;
    any other word is a syntax error).
    """

    name: str
    if_not_exists: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    span: Span | None = None


@dataclass
class DropDatabase:
    """``DROP DATABASE [IF EXISTS] db [FORCE]``."""

    name: str
    if_exists: bool = False
    force: bool = False


@dataclass
class AlterDatabase:
    """``ALTER DATABASE db option value ...`` (TDengine SQL manual, "Manage Databases"):
    ``options`` maps upper-case option names to values as in :class:`CreateDatabase`; ``spans``
    gives each option's position (for errors)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    spans: dict[str, Span] = field(default_factory=dict)
    span: Span | None = None


@dataclass
class AlterTable:
    """``ALTER {STABLE | TABLE} [db.]t clause`` (TDengine SQL manual, "Manage Supertables",
    "Manage Tables").

    ``action`` is one of ``ADD COLUMN``, ``DROP COLUMN``, ``MODIFY COLUMN``, ``RENAME COLUMN``,
    ``ADD TAG``, ``DROP TAG``, ``MODIFY TAG``, ``RENAME TAG``, ``SET TAG``, ``OPTIONS``. ``column``
    is the definition ADD / MODIFY give (name and type); ``name`` the column or tag DROP / RENAME
    name, ``new_name`` RENAME's new name; ``tag_values`` SET TAG's ``(tag, value, item span,
    value span)`` items;
    ``options`` the table options (``COMMENT``, ``TTL``, ...) of ``OPTIONS``; ``stable`` is True
    for ALTER STABLE; ``clause`` the span of the clause after the table name.

    ``vtable`` is True for ``ALTER VTABLE`` (TDengine SQL manual, "Virtual Tables"), which also
    takes ``ALTER COLUMN col SET {[db.]table.col | NULL}`` (action ``ALTER COLUMN``, ``ref`` the
    new source, None for NULL) and ``ADD COLUMN col type [FROM ref]`` (``ref``).
    """

    table: TableName
    stable: bool
    action: str
    vtable: bool = False
    ref: ColumnRefName | None = None
    column: ColumnDef | None = None
    name: str | None = None
    new_name: str | None = None
    tag_values: list[tuple[str, Any, Span, Span]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    name_span: Span | None = None
    clause: Span | None = None
    option_spans: dict[str, Span] = field(default_factory=dict)


@dataclass
class UseDatabase:
    """``USE db`` (only meaningful in the shell; REST is stateless)."""

    name: str


@dataclass
class CreateTable:
    """``CREATE STABLE|TABLE [IF NOT EXISTS] t (cols) [TAGS (tags)]``.

    ``kind`` is ``"super"`` for CREATE STABLE and for CREATE TABLE with TAGS, else ``"normal"``.
    """

    table: TableName
    kind: str
    columns: list[ColumnDef]
    tags: list[ColumnDef] = field(default_factory=list)
    if_not_exists: bool = False
    comment: str | None = None
    virtual: bool = False  # ``VIRTUAL 1``: a virtual supertable (TDengine 3.3.6+)
    ttl: int | None = None  # ``TTL n`` days of a normal table (None: not given, 0)


@dataclass(frozen=True)
class ColumnRefName:
    """``[db.]table.column``: the source of a virtual table's column, names as written."""

    db: str | None
    table: str
    column: str
    span: Span | None = None


@dataclass
class VColumnDef:
    """One column of ``CREATE VTABLE``: ``name type [FROM ref]`` (virtual normal table),
    ``name FROM ref`` or a bare ``ref`` (virtual child table, by position)."""

    name: str | None
    type: TdType | None
    ref: ColumnRefName | None
    span: Span | None = None


@dataclass
class CreateVTable:
    """``CREATE VTABLE [IF NOT EXISTS] [db.]vt (col_defs) [USING vstb [(tags)] TAGS (values)]``
    (TDengine SQL manual, "Virtual Tables"): a virtual normal table, or with ``using`` a virtual
    child table of a virtual supertable."""

    table: TableName
    columns: list[VColumnDef]
    using: TableName | None = None
    tag_names: list[str] | None = None
    tag_values: list[exp.Expr] = field(default_factory=list)
    if_not_exists: bool = False
    span: Span | None = None


@dataclass
class SubtableDef:
    """One ``t USING stb [(tag, ...)] TAGS (v, ...)`` of a CREATE TABLE or INSERT."""

    table: TableName
    using: TableName
    tag_names: list[str] | None
    tag_values: list[exp.Expr]
    if_not_exists: bool = False
    span: Span | None = None
    comment: str | None = None  # table_options after TAGS: ``COMMENT 'text'``
    ttl: int | None = None  # and ``TTL n`` days (None: not given, 0)


@dataclass
class CreateSubtables:
    """``CREATE TABLE [IF NOT EXISTS] t1 USING stb TAGS (...) [t2 USING ...]``."""

    items: list[SubtableDef]


@dataclass
class DropTable:
    """``DROP TABLE|STABLE [IF EXISTS] [db.]t [, ...]``; ``super_only`` for DROP STABLE."""

    tables: list[TableName]
    if_exists: bool = False
    super_only: bool = False
    virtual: bool = False  # DROP VTABLE


@dataclass
class InsertTarget:
    """One target of an INSERT: table, optional auto-create clause, columns and rows.

    ``rows`` holds one list of value expressions per ``(...)`` group, constants only
    (literals, NULL, TRUE/FALSE, ``now``, ``now + 1s``, signed numbers).
    ``row_spans`` gives each value's span for error messages (same shape as ``rows``).
    ``query`` is the subquery of ``INSERT INTO t [(cols)] subquery`` (then ``rows`` is empty).
    ``columns`` may name ``tbname`` and tags when ``table`` is a supertable (TDengine SQL manual,
    "Insert", supertable syntax).
    """

    table: TableName
    rows: list[list[exp.Expr]]
    columns: list[str] | None = None
    using: SubtableDef | None = None
    row_spans: list[list[Span]] = field(default_factory=list)
    span: Span | None = None
    query: SelectQuery | None = None
    # the values as literal texts, column by column (one Arrow string array per position, each
    # as long as the rows), when ``sql/fast_insert.py`` read the statement (``rows`` is empty)
    values: list[pa.StringArray] | None = None


@dataclass
class Insert:
    """``INSERT INTO t [USING ...] [(cols)] VALUES (...)... [t2 ...]`` (multi-table insert)."""

    targets: list[InsertTarget]


@dataclass
class Delete:
    """``DELETE FROM t [WHERE cond]``; TDengine only allows conditions on the timestamp column."""

    table: TableName
    where: exp.Expr | None
    span: Span | None = None


@dataclass
class Show:
    """``SHOW [db.]DATABASES|STABLES|TABLES|STREAMS|VGROUPS ... [LIKE 'pattern']``.

    ``what`` is lower case: ``databases``, ``stables``, ``tables``, ``streams``,
    ``create_table`` (SHOW CREATE TABLE t), ``create_stable``, ``create_database``,
    ``create_stream`` (``target`` the stream), ``tags``, ``users``, ``user_privileges``,
    ``vtables`` (``SHOW [NORMAL | CHILD] [db.]VTABLES``, ``vkind`` ``normal``/``child``/None),
    ``create_vtable``, ``dnodes``, ``functions``, ``variables`` (SHOW [CLUSTER] VARIABLES),
    ``local_variables``, ``dnode_variables`` (``dnode`` its id), ``connections``, ``queries``,
    ``apps``, ``consumers``, ``transactions``, ``alive`` (SHOW CLUSTER ALIVE, SHOW db.ALIVE),
    ``databases`` with ``vkind`` ``user`` / ``system`` (SHOW USER | SYSTEM DATABASES),
    ``table_tags`` (SHOW TABLE TAGS [items] FROM t: ``items`` the ``(name, alias, offset)``
    written, None for tbname and every tag).
    """

    what: str
    db: str | None = None
    like: str | None = None
    target: TableName | None = None
    vkind: str | None = None
    items: list[tuple[str, str | None, int | None]] | None = None
    dnode: int | None = None


@dataclass
class Describe:
    """``DESCRIBE|DESC [db.]t``."""

    table: TableName


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class PartitionItem:
    """One ``PARTITION BY`` element: expression, optional alias, and its text as written."""

    expr: exp.Expr
    alias: str | None
    text: str
    span: Span | None = None


@dataclass(frozen=True)
class IntervalWindow:
    """``INTERVAL(interval[, offset]) [SLIDING(sliding)]`` (seed 000, window_clause)."""

    interval: Duration
    offset: Duration | None = None
    sliding: Duration | None = None
    span: Span | None = None
    kind: str = "interval"


@dataclass(frozen=True)
class SessionWindow:
    """``SESSION(ts_col, tol_val)``."""

    ts_column: str
    gap: Duration
    span: Span | None = None
    kind: str = "session"


@dataclass(frozen=True)
class StateWindow:
    """``STATE_WINDOW(col) [TRUE_FOR(d)]``."""

    expr: exp.Expr
    true_for: Duration | None = None
    span: Span | None = None
    kind: str = "state"


@dataclass(frozen=True)
class EventWindow:
    """``EVENT_WINDOW START WITH c1 END WITH c2 [TRUE_FOR(d)]`` (3.3.7 wraps it in parentheses)."""

    start: exp.Expr
    end: exp.Expr
    true_for: Duration | None = None
    span: Span | None = None
    kind: str = "event"


@dataclass(frozen=True)
class CountWindow:
    """``COUNT_WINDOW(count_val[, sliding_val][, col, ...])``."""

    count: int
    sliding: int | None = None
    columns: tuple[str, ...] = ()
    span: Span | None = None
    kind: str = "count"


@dataclass(frozen=True)
class EkuiperWindow:
    """An eKuiper window function in GROUP BY (seed 003).

    ``function`` is ``tumbling``, ``hopping``, ``sliding``, ``session`` or ``count``; ``unit`` is
    ``DD``/``HH``/``MI``/``SS``/``MS``; ``args`` are the integer arguments after the unit (for
    count windows, all arguments); ``over_when`` is SLIDINGWINDOW's ``OVER (WHEN cond)``;
    ``filter`` is ``FILTER (WHERE cond)``.
    """

    function: str
    unit: str | None
    args: tuple[int, ...]
    over_when: exp.Expr | None = None
    filter: exp.Expr | None = None
    span: Span | None = None
    kind: str = "ekuiper"


Window = IntervalWindow | SessionWindow | StateWindow | EventWindow | CountWindow | EkuiperWindow


@dataclass(frozen=True)
class Fill:
    """``FILL(NONE|NULL|PREV|NEXT|LINEAR|VALUE, v...)``."""

    mode: str
    values: tuple[exp.Expr, ...] = ()
    span: Span | None = None


@dataclass(frozen=True)
class InterpClause:
    """INTERP's clause: ``RANGE(start[, end][, surrounding]) [EVERY(every)]`` (TDengine SQL manual,
    "Data Querying", interp_clause; FILL stays in ``SelectQuery.fill``).

    ``end`` is None for a single point ``RANGE(ts)``; ``surrounding`` is the 3.3.4.9+ time range
    around the points where FILL PREV/NEXT/NEAR look for rows; ``every`` None when not written.
    """

    start: exp.Expr
    end: exp.Expr | None = None
    surrounding: Duration | None = None
    every: Duration | None = None
    range_span: Span | None = None
    every_span: Span | None = None


@dataclass(frozen=True)
class JoinSpec:
    """TDengine's join words that standard SQL lacks, kept in ``meta["td_join"]`` of the
    ``exp.Join`` they belong to (TDengine SQL manual, "Join Queries").

    Attributes:
        kind: ``"semi"``, ``"anti"``, ``"asof"``, ``"window"``, or ``""`` (inner/outer joins).
        side: ``"LEFT"``, ``"RIGHT"``, ``"FULL"`` or ``""``.
        jlimit: ``JLIMIT n`` as written (None when absent; checked against [0, 1024] later).
        window_offset: ``WINDOW_OFFSET(start, end)``, signed durations.
        span: the join keywords (``LEFT ASOF JOIN``).
        jlimit_span / offset_span: where ``JLIMIT`` and ``WINDOW_OFFSET`` were written.
    """

    kind: str
    side: str
    jlimit: int | None = None
    window_offset: tuple[Duration, Duration] | None = None
    span: Span | None = None
    jlimit_span: Span | None = None
    offset_span: Span | None = None


TD_JOIN = "td_join"  # the meta key of an ``exp.Join``'s JoinSpec (as JSON: stored trees stay JSON)


def join_meta(spec: JoinSpec) -> dict[str, Any]:
    """A JoinSpec as the JSON value kept in ``exp.Join.meta[TD_JOIN]`` (``sqlglot.serde`` keeps
    meta with a stored stream's trees)."""

    def span(sp: Span | None) -> list[int] | None:
        return [sp.start, sp.end] if sp is not None else None

    offset = [str(d) for d in spec.window_offset] if spec.window_offset is not None else None
    return {
        "kind": spec.kind,
        "side": spec.side,
        "jlimit": spec.jlimit,
        "window_offset": offset,
        "span": span(spec.span),
        "jlimit_span": span(spec.jlimit_span),
        "offset_span": span(spec.offset_span),
    }


def join_spec(node: exp.Join) -> JoinSpec:
    """The join's TDengine words (an inner/outer join's when the parser left none)."""
    m = node.meta.get(TD_JOIN) if node.meta else None
    if not isinstance(m, dict):
        return JoinSpec(kind="", side=str(node.args.get("side") or "").upper())

    def span(v: list[int] | None) -> Span | None:
        return Span(int(v[0]), int(v[1])) if v else None

    wo = m.get("window_offset")
    return JoinSpec(
        kind=str(m.get("kind") or ""),
        side=str(m.get("side") or ""),
        jlimit=m.get("jlimit"),
        window_offset=(_signed(wo[0]), _signed(wo[1])) if wo else None,
        span=span(m.get("span")),
        jlimit_span=span(m.get("jlimit_span")),
        offset_span=span(m.get("offset_span")),
    )


def _signed(text: str) -> Duration:
    d = Duration.parse(text.lstrip("-"))
    return Duration(-d.value, d.unit) if text.startswith("-") else d


@dataclass
class SelectQuery:
    """A TDengine SELECT split into its standard part and TDengine's clauses.

    Attributes:
        select: the standard part as a ``sqlglot`` ``exp.Select`` (or ``exp.Union``), with
            PARTITION BY, the window clause, FILL and eKuiper window functions removed.
        partition_by: PARTITION BY items, in order.
        window: the window clause, or None.
        fill: FILL clause, or None.
        item_texts: the text of each select-list item as written, without its alias
            (legacy output tables name un-aliased columns after it, e.g. ``min(k)``).
        text: the whole query text.
        span: where the query is inside the statement text.
        implicit_select: written without the SELECT keyword (seed 004's streams); ``text`` lacks it.
        interp: INTERP's RANGE / EVERY clause, or None.
        slimit / soffset: ``SLIMIT n [SOFFSET m]`` (``SLIMIT m, n`` too): how many groups of
            PARTITION BY / GROUP BY are output, None when not written; ``slimit_span`` where.
    """

    select: exp.Expr
    partition_by: list[PartitionItem] = field(default_factory=list)
    window: Window | None = None
    fill: Fill | None = None
    item_texts: list[str] = field(default_factory=list)
    text: str = ""
    span: Span | None = None
    implicit_select: bool = False
    interp: InterpClause | None = None
    slimit: int | None = None
    soffset: int | None = None
    slimit_span: Span | None = None


@dataclass
class Select:
    """A query statement."""

    query: SelectQuery


# --------------------------------------------------------------------------- streams


@dataclass
class NotifyDef:
    """Notification definition (seed 000 legacy form and seed 002 form).

    ``events`` are upper case (``WINDOW_OPEN``, ``WINDOW_CLOSE``, ``ON_TIME``); ``on_failure``
    is ``"DROP"``, ``"PAUSE"`` or None when not written (defaults differ by syntax, see
    ARCHITECTURE.md). ``history`` is None when not written.
    """

    urls: list[str]
    events: list[str] = field(default_factory=list)
    where: exp.Expr | None = None
    history: bool | None = None
    on_failure: str | None = None
    span: Span | None = None
    url_spans: list[Span] = field(default_factory=list, compare=False)


@dataclass
class OutputColumn:
    """One name of the ``(col, col [COMPOSITE KEY], ...)`` output column list."""

    name: str
    composite_key: bool = False
    span: Span | None = None


@dataclass
class OutputTagDef:
    """3.3.7 ``TAGS (name type [COMMENT '...'] AS expr)`` element; legacy tags have no expr, and a
    legacy tag may be a name alone (``TAGS (ta)``: ``type`` None, the tag of that name of the
    existing output supertable, or the type of the PARTITION BY item it names)."""

    name: str
    type: TdType | None
    expr: exp.Expr | None = None
    comment: str | None = None
    span: Span | None = None


@dataclass
class LegacyStreamOptions:
    """Legacy ``stream_options`` (seed 000). None means "not written" (defaults applied later)."""

    trigger: str | None = None  # AT_ONCE, WINDOW_CLOSE, MAX_DELAY, FORCE_WINDOW_CLOSE,
    max_delay: Duration | None = None  # CONTINUOUS_WINDOW_CLOSE
    recalculate: Duration | None = None
    watermark: Duration | None = None
    ignore_expired: int | None = None
    delete_mark: Duration | None = None
    fill_history: int | None = None
    fill_history_async: bool = False
    ignore_update: int | None = None
    # tdweb extension: EVENT_TIME 0 windows follow the arrival (processing) time, as eKuiper's
    # processing-time mode (seed 003 "Timestamp Management"); 1 (default) the table's timestamp
    event_time: int | None = None
    spans: dict[str, Span] = field(default_factory=dict)


@dataclass
class CreateStreamLegacy:
    """Legacy ``CREATE STREAM ... INTO stb ... AS subquery [notification_definition]`` (seed 000)."""

    name: str
    db: str | None
    if_not_exists: bool
    options: LegacyStreamOptions
    into: TableName | None  # None: notify only (seed 000 "Stream Computing Event Notifications")
    columns: list[OutputColumn] | None
    tags: list[OutputTagDef] | None
    subtable: exp.Expr | None
    query: SelectQuery
    notify: NotifyDef | None = None
    text: str = ""
    span: Span | None = None


@dataclass(frozen=True)
class PeriodTrigger:
    """``PERIOD(period[, offset])`` (seed 002)."""

    period: Duration
    offset: Duration | None = None
    kind: str = "period"


@dataclass(frozen=True)
class SlidingTrigger:
    """``[INTERVAL(i[, o])] SLIDING(s[, offset])`` (seed 002); ``interval`` None = sliding trigger."""

    sliding: Duration
    interval: Duration | None = None
    interval_offset: Duration | None = None
    sliding_offset: Duration | None = None
    kind: str = "sliding"


Trigger337 = PeriodTrigger | SlidingTrigger | SessionWindow | StateWindow | EventWindow | CountWindow


@dataclass
class StreamOptions337:
    """``STREAM_OPTIONS(opt | ...)`` of seed 002; flags are False and values None when absent."""

    watermark: Duration | None = None
    expired_time: Duration | None = None
    ignore_disorder: bool = False
    delete_recalc: bool = False
    delete_output_table: bool = False
    fill_history: bool = False
    fill_history_first: bool = False
    fill_history_start: exp.Expr | None = None
    calc_notify_only: bool = False
    low_latency_calc: bool = False
    pre_filter: exp.Expr | None = None
    force_output: bool = False
    max_delay: Duration | None = None
    event_type: list[str] = field(default_factory=list)
    ignore_nodata_trigger: bool = False
    spans: dict[str, Span] = field(default_factory=dict)


@dataclass
class CreateStream337:
    """TDengine 3.3.7 ``CREATE STREAM`` (seed 002)."""

    name: str
    db: str | None
    if_not_exists: bool
    trigger: Trigger337
    from_table: TableName | None
    partition_by: list[PartitionItem]
    options: StreamOptions337
    notify: NotifyDef | None
    into: TableName | None
    output_subtable: exp.Expr | None
    columns: list[OutputColumn] | None
    tags: list[OutputTagDef] | None
    query: SelectQuery | None
    text: str = ""
    span: Span | None = None


@dataclass
class StreamCommand:
    """DROP / PAUSE / RESUME / START / STOP STREAM.

    ``action`` is ``drop``, ``pause``, ``resume``, ``start`` or ``stop``; ``ignore_untreated`` for
    RESUME/START ... IGNORE UNTREATED.
    """

    action: str
    name: str
    db: str | None = None
    if_exists: bool = False
    ignore_untreated: bool = False


@dataclass
class RecalculateStream:
    """``RECALCULATE STREAM [db.]s FROM t1 [TO t2]`` (seed 002); times are constant expressions."""

    name: str
    db: str | None
    start: exp.Expr
    end: exp.Expr | None = None


# --------------------------------------------------------------------------- users and privileges


@dataclass
class CreateUser:
    """``CREATE USER name PASS 'password' [SYSINFO {1|0}] [CREATEDB {1|0}]`` (TDengine SQL manual,
    "Users"; defaults SYSINFO 1, CREATEDB 0)."""

    name: str
    password: str
    sysinfo: bool = True
    createdb: bool = False
    span: Span | None = None


@dataclass
class AlterUser:
    """``ALTER USER name {PASS 'password' | SYSINFO {1|0} | CREATEDB {1|0} | ENABLE {1|0}} ...``;
    a None field is left as it is."""

    name: str
    password: str | None = None
    sysinfo: bool | None = None
    createdb: bool | None = None
    enable: bool | None = None
    span: Span | None = None


@dataclass
class DropUser:
    """``DROP USER name``."""

    name: str
    span: Span | None = None


@dataclass
class GrantStatement:
    """``GRANT privileges ON priv_level TO user`` / ``REVOKE privileges ON priv_level FROM user``
    (TDengine SQL manual, "Permissions"): ``privileges`` ⊆ {``read``, ``write``} (ALL = both);
    ``db`` is ``*`` for ``*.*``; ``table`` None for ``db.*``."""

    revoke: bool
    privileges: tuple[str, ...]
    db: str
    table: str | None
    user: str
    span: Span | None = None


Statement = (
    CreateDatabase
    | DropDatabase
    | AlterDatabase
    | AlterTable
    | UseDatabase
    | CreateTable
    | CreateSubtables
    | CreateVTable
    | DropTable
    | Insert
    | Delete
    | Show
    | Describe
    | Select
    | CreateStreamLegacy
    | CreateStream337
    | StreamCommand
    | RecalculateStream
    | CreateUser
    | AlterUser
    | DropUser
    | GrantStatement
)
