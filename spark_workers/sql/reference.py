"""The SQL reference: every function and statement form of TDengine's SQL manual, with what tdweb
does with it today; ``python -m spark_workers.sql.reference`` writes ``docs/sql.md`` from it.

Sources: TDengine 3.3 SQL manual, "Functions" (single-row math, string, encoding, hashing,
masking, encryption, conversion, time and date; aggregate; control flow; selection; time-series
specific; system information; geometry), "Time-Series Extensions" and "Query Data" (the
pseudo-columns ``_wstart``... and the window clauses), every statement page (databases, tables,
supertables, virtual tables, INSERT, SELECT, DELETE, SHOW, DESCRIBE, users, permissions, streams
in both syntaxes, topics, TSMAs, indexes, UDFs, views, nodes, KILL...), and seed 002 for the
3.3.7 placeholders (``_twstart``, ``%%trows``...).

Each :class:`Entry` says whether the feature is ``supported``, supported with a noted
``difference``, or ``refused`` (the error code a client gets and why), and where it runs:

- ``A``: an ad-hoc query (``SELECT ... FROM t``) through the executor (REST, shell, console);
- ``W``: a window query (``... INTERVAL(5s)``);
- ``L``: a legacy stream (``CREATE STREAM ... AS SELECT``, seed 000);
- ``C``: a 3.3.7 stream computation (``CREATE STREAM ... FROM t INTO o AS SELECT``, seed 002).

Statuses are what the code does today: ``tests/sql/test_reference.py`` runs every entry's probe
in every context it claims (and checks every refusal's code), and ``docs/sql.md`` must equal
:func:`render_markdown`'s output. To change an entry's status, change its one line: the
``where`` argument (``"AW"``, ``"AWLC"``...) or :class:`Refused` ``(code, reason)``, and ``diff=``
for a difference; then ``make sql-docs``. ``python -m tests.sql.reference_status`` lists the
entries whose observed status differs from their line.

Probe tables (created by :data:`PROBE_SETUP` in the database ``ref``): ``t`` (``ts``, ``v``
DOUBLE, ``i`` INT, ``s`` VARCHAR(32), ``b`` BOOL; 12 rows one second apart) and the supertable
``st`` (``ts``, ``v``, ``i``; tag ``g``) with the subtable ``st1``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from spark_workers.errors import Code
from spark_workers.sql.sandbox import STREAM_FORBIDDEN

CONTEXTS = {"A": "ad-hoc", "W": "window", "L": "legacy stream", "C": "3.3.7 computation"}
"""Where an entry runs: letter -> the name docs/sql.md shows."""

BASE_MS = 1_700_000_000_000
"""First timestamp of the probe rows (2023-11-14 22:13:20 UTC), in ms."""

PROBE_SETUP: tuple[str, ...] = (
    "create database ref precision 'ms'",
    "use ref",
    "create table t (ts timestamp, v double, i int, s varchar(32), b bool)",
    "create stable st (ts timestamp, v double, i int) tags (g int)",
    "create table st1 using st tags (1)",
    "insert into t values "
    + " ".join(
        f"({BASE_MS + k * 1000}, {k * 1.5}, {k}, 's{k}', {str(k % 2 == 0).lower()})" for k in range(12)
    ),
    "insert into st1 values " + " ".join(f"({BASE_MS + k * 1000}, {k * 1.5}, {k})" for k in range(12)),
)
"""Statements that create the probe tables (run in order on a fresh lake)."""

# Probe statements of a function call ``{c}`` per context and kind; ``{s}`` / ``{o}``: a fresh
# stream / output table name.
_ROW_PROBES = {
    "A": "select {c} from t",
    "W": "select _wstart, first({c}) from t interval(5s)",
    "L": "create stream {s} into {o} as select ts, {c} as x from t",
    "C": "create stream {s} count_window(1) from t into {o} as select ts, {c} as x from %%trows",
}
_AGG_PROBES = {
    "A": "select {c} from t",
    "W": "select _wstart, {c} from t interval(5s)",
    "L": "create stream {s} into {o} as select _wstart, {c} as x from t interval(5s)",
    "C": "create stream {s} interval(5s) sliding(5s) from t into {o} as select _twstart, {c} as x "
    "from t where ts >= _twstart and ts < _twend",
}

SUPPORTED = "supported"
DIFFERENCE = "difference"
REFUSED = "refused"


@dataclass(frozen=True)
class Refused:
    """A refusal: the TDengine error code a client gets (``spark_workers.errors.Code``) and why.

    Attributes:
        code: the error code of the answer.
        reason: why, as docs/sql.md shows it.
        token: a word the error message contains that names what is refused (default: the
            function's name; compared without case, spaces and underscores).
        named: False when today's message does not name it (a parser error at a later word);
            docs/sql.md says so.
        ctx: the context the refusal is checked in (default: the entry's first probe context).
    """

    code: int
    reason: str
    token: str = ""
    named: bool = True
    ctx: str = ""


@dataclass(frozen=True)
class Entry:
    """One function or statement form of the manual.

    Attributes:
        name: as the manual writes it (``PERCENTILE``, ``CREATE DATABASE``).
        category: the manual's section (``math``, ``aggregate``... ``database``, ``select``...).
        probe: for a function, the call over the probe tables (``percentile(v, 50)``); for a
            statement, the statement text (setup statements first, separated by ``"; "``).
        where: the contexts it runs in (letters of :data:`CONTEXTS`), or a :class:`Refused`.
        diff: the difference from TDengine, when it is supported with one.
        note: anything else the reader should know.
        row: for a function: a row function (probed inside ``first()`` in windows, as a
            projection in streams) rather than an aggregate / selection / time-series one.
        probes: context letter -> probe statement, where the kind's template does not fit
            (``{s}`` / ``{o}`` stand for a fresh stream / output table name).
        statement: a statement form (its probe runs as written) rather than a function.
        aliases: the names the implementation knows the function by, where they are not TDengine's
            (the engine's ``count_distinct``).
    """

    name: str
    category: str
    probe: str
    where: str | Refused
    diff: str = ""
    note: str = ""
    row: bool = False
    probes: dict[str, str] = field(default_factory=dict)
    statement: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        """``supported``, ``difference`` or ``refused``."""
        if isinstance(self.where, Refused):
            return REFUSED
        return DIFFERENCE if self.diff else SUPPORTED

    @property
    def contexts(self) -> str:
        """The context letters it runs in ("" when refused)."""
        return "" if isinstance(self.where, Refused) else self.where

    @property
    def refusal_ctx(self) -> str:
        """The context a refusal is checked in: the refusal's own, else ``A`` or the first probe's."""
        if isinstance(self.where, Refused) and self.where.ctx:
            return self.where.ctx
        if self.statement or not self.probes or "A" in self.probes:
            return "A"
        return next(iter(self.probes))

    @property
    def token(self) -> str:
        """What a refusal's message must contain (see :attr:`Refused.token`)."""
        if isinstance(self.where, Refused) and self.where.token:
            return self.where.token
        return self.name

    def statements(self) -> list[str]:
        """A statement entry's probe as separate statements (the last is the form itself)."""
        return self.probe.split("; ")

    def probe_for(self, ctx: str, n: int) -> str:
        """The statement that checks the entry in context ``ctx``; ``n`` makes stream and output
        names unique (``ref_s{n}``, ``ref_o{n}``)."""
        if ctx in self.probes:
            text = self.probes[ctx]
        elif self.statement:
            text = self.probe
        else:
            text = (_ROW_PROBES if self.row else _AGG_PROBES)[ctx].replace("{c}", self.probe)
        return text.replace("{s}", f"ref_s{n}").replace("{o}", f"ref_o{n}")


def _nyi(what: str = "not implemented yet") -> Refused:
    return Refused(Code.NOT_SUPPORTED, what)


def F(name: str, category: str, probe: str, where: str | Refused, **kw: object) -> Entry:
    """A function entry (row functions: categories in :data:`ROW_CATEGORIES`)."""
    return Entry(name, category, probe, where, row=category in ROW_CATEGORIES, **kw)  # type: ignore[arg-type]


def S(name: str, category: str, probe: str, where: str | Refused, **kw: object) -> Entry:
    """A statement entry (``where`` is ``"A"`` when the executor runs it)."""
    return Entry(name, category, probe, where, statement=True, **kw)  # type: ignore[arg-type]


ROW_CATEGORIES = frozenset(
    {"math", "string", "encoding", "hashing", "masking", "encryption", "conversion", "time", "control flow",
     "operator", "system", "geometry"}
)  # fmt: skip

FUNCTION_CATEGORIES = (
    ("math", "Mathematical functions"),
    ("string", "String functions"),
    ("encoding", "Encoding functions"),
    ("hashing", "Hashing functions"),
    ("masking", "Data masking functions"),
    ("encryption", "Encryption functions"),
    ("conversion", "Conversion functions"),
    ("time", "Time and date functions"),
    ("aggregate", "Aggregate functions"),
    ("control flow", "Control flow functions"),
    ("selection", "Selection functions"),
    ("time-series", "Time-series specific functions"),
    ("system", "System information functions"),
    ("geometry", "Geometry functions"),
    ("pseudo-column", "Pseudo-columns"),
    ("placeholder", "3.3.7 stream placeholders"),
    ("ekuiper", "eKuiper window functions (tdweb extension)"),
    ("operator", "Operators"),
)
"""Function categories in the order of the manual, with their docs/sql.md headings."""

_ALL = "AWLC"


def _syntax_in_window(token: str, reason: str) -> Refused:
    """An operator the parser does not read; checked in a window query, whose error names it."""
    return Refused(Code.SYNTAX_ERROR, f"{reason} (not parsed)", token=token, ctx="W")


_NYI = _nyi()
_UNKNOWN = Refused(Code.INVALID_FUNCTION_NAME, "not implemented (an unknown function name)")
_V338 = "new in TDengine 3.3.8"
_SESSION = "answers about the client's session: refused in streams (0x0100)"
_MINMAX_STR = "window queries refuse strings (0x2800: the window engine compares numbers only)"
_MULTI_W = (
    "window queries compute it per window over the window's rows (its rows for each window, with "
    "_wstart...); it mixes with no other aggregate and takes no FILL (TDengine, 0x264F); SLIMIT and "
    "HAVING with it are not implemented yet (0x0100), nor a 3.3.7 computation's own window clause"
)
_PERCENTILE_W = (
    "several p (a JSON array text) in windows too: window queries compute it over each window's "
    "rows (not in a 3.3.7 computation's own window clause)"
)

FUNCTION_ENTRIES: tuple[Entry, ...] = (
    # math
    F("ABS", "math", "abs(v)", _ALL),
    F("ACOS", "math", "acos(v / 100)", _ALL),
    F("ASIN", "math", "asin(v / 100)", _ALL),
    F("ATAN", "math", "atan(v)", _ALL),
    F("CEIL", "math", "ceil(v)", _ALL),
    F("COS", "math", "cos(v)", _ALL),
    F("FLOOR", "math", "floor(v)", _ALL),
    F("GREATEST", "math", "greatest(v, i)", _ALL),
    F("LEAST", "math", "least(v, i)", _ALL),
    F("LOG", "math", "log(v + 1, 2)", _ALL),
    F("POW", "math", "pow(v, 2)", _ALL),
    F("POWER", "math", "power(v, 2)", _ALL),
    F("ROUND", "math", "round(v, 1)", _ALL),
    F("SIN", "math", "sin(v)", _ALL),
    F("SQRT", "math", "sqrt(v)", _ALL),
    F("TAN", "math", "tan(v)", _ALL),
    F("PI", "math", "pi()", _ALL),
    F("TRUNCATE", "math", "truncate(v, 1)", _ALL),
    F("EXP", "math", "exp(v)", _ALL),
    F("LN", "math", "ln(v + 1)", _ALL),
    F("MOD", "math", "mod(i, 3)", _ALL),
    F(
        "RAND",
        "math",
        "rand()",
        _ALL,
        diff="RAND(seed) is refused (0x0100): a seeded sequence cannot match TDengine's",
    ),
    F("SIGN", "math", "sign(v)", _ALL),
    F("DEGREES", "math", "degrees(v)", _ALL),
    F("RADIANS", "math", "radians(v)", _ALL),
    F("CRC32", "math", "crc32(s)", _ALL),
    # string
    F("CHAR_LENGTH", "string", "char_length(s)", _ALL),
    F("CONCAT", "string", "concat(s, 'x')", _ALL),
    F("CONCAT_WS", "string", "concat_ws('-', s, 'x')", _ALL),
    F("FIND_IN_SET", "string", "find_in_set('s1', 's0,s1')", _UNKNOWN),
    F("LENGTH", "string", "length(s)", _ALL),
    F("LIKE_IN_SET", "string", "like_in_set(s, 's1%,x')", _UNKNOWN),
    F("LOWER", "string", "lower(s)", _ALL),
    F("LTRIM", "string", "ltrim(s)", _ALL),
    F("REGEXP_IN_SET", "string", "regexp_in_set('s.*', s)", _UNKNOWN),
    F("RTRIM", "string", "rtrim(s)", _ALL),
    F(
        "TRIM",
        "string",
        "trim(s)",
        _ALL,
        diff="TRIM(LEADING r FROM s) removes every leading copy of r (the manual's rule); TDengine 3.3 "
        "keeps the last copy when s is only copies of r",
    ),
    F("SUBSTR", "string", "substr(s, 2)", _ALL),
    F("SUBSTRING", "string", "substring(s, 1, 2)", _ALL),
    F("SUBSTRING_INDEX", "string", "substring_index(s, '1', 1)", _ALL),
    F("UPPER", "string", "upper(s)", _ALL),
    F("CHAR", "string", "char(77)", _ALL),
    F("ASCII", "string", "ascii(s)", _ALL),
    F("POSITION", "string", "position('1' in s)", _ALL),
    F("REPLACE", "string", "replace(s, 's', 'x')", _ALL),
    F("REPEAT", "string", "repeat(s, 2)", _ALL),
    # encoding, hashing, masking, encryption
    F("TO_BASE64", "encoding", "to_base64(s)", _ALL),
    F("FROM_BASE64", "encoding", "from_base64('SGVsbG8=')", _UNKNOWN),
    F("MD5", "hashing", "md5(s)", _UNKNOWN),
    F("SHA1", "hashing", "sha1(s)", _UNKNOWN),
    F("SHA", "hashing", "sha(s)", _UNKNOWN),
    F("SHA2", "hashing", "sha2(s, 256)", _UNKNOWN),
    F("MASK_FULL", "masking", "mask_full(s, 'X')", _UNKNOWN),
    F("MASK_PARTIAL", "masking", "mask_partial(s, 1, 1, '*')", _UNKNOWN),
    F("MASK_NONE", "masking", "mask_none(s)", _UNKNOWN),
    F(
        "SM4_ENCRYPT",
        "encryption",
        "sm4_encrypt(s, 'mykeystring')",
        _UNKNOWN,
        note="TDengine Enterprise only",
    ),
    F(
        "SM4_DECRYPT",
        "encryption",
        "sm4_decrypt(s, 'mykeystring')",
        _UNKNOWN,
        note="TDengine Enterprise only",
    ),
    F("AES_ENCRYPT", "encryption", "aes_encrypt(s, 'mykeystring')", _UNKNOWN),
    F("AES_DECRYPT", "encryption", "aes_decrypt(s, 'mykeystring')", _UNKNOWN),
    # conversion
    F(
        "CAST",
        "conversion",
        "cast(v as int)",
        _ALL,
        diff="a value that does not convert gives NULL (TDengine: 0 or a wrapped-around integer); "
        "CAST(x AS BINARY(n)) keeps n characters, not n bytes",
    ),
    F("TO_ISO8601", "conversion", "to_iso8601(ts)", _ALL),
    F(
        "TO_JSON",
        "conversion",
        "to_json('{\"k\": 1}')",
        Refused(Code.NOT_SUPPORTED, "tdweb has no JSON type"),
    ),
    F("TO_UNIXTIMESTAMP", "conversion", "to_unixtimestamp('2023-11-14 22:13:20')", _ALL),
    F("TO_CHAR", "conversion", "to_char(ts, 'yyyy-mm-dd')", _ALL),
    F(
        "TO_TIMESTAMP",
        "conversion",
        "to_timestamp('2023-11-14', 'yyyy-mm-dd')",
        _ALL,
        diff="a string that does not match the format gives NULL (TDengine: an error)",
    ),
    # time and date
    F("NOW", "time", "now()", _ALL),
    F("TIMEDIFF", "time", "timediff(ts, '2023-11-14 22:13:20', 1s)", _ALL),
    F(
        "TIMETRUNCATE",
        "time",
        "timetruncate(ts, 1h)",
        _ALL,
        diff="timestamps before 1970 are floored (TDengine's C division rounds them up)",
    ),
    F("TIMEZONE", "time", "timezone()", _ALL),
    F("TODAY", "time", "today()", _ALL),
    F("WEEK", "time", "week(ts)", _ALL),
    F("WEEKOFYEAR", "time", "weekofyear(ts)", _ALL),
    F("WEEKDAY", "time", "weekday(ts)", _ALL),
    F("DAYOFWEEK", "time", "dayofweek(ts)", _ALL),
    F("DATE", "time", "date(ts)", _UNKNOWN, note=_V338),
    # aggregate
    F("APERCENTILE", "aggregate", "apercentile(v, 50)", "AWLC"),
    F("AVG", "aggregate", "avg(v)", _ALL),
    F("COUNT", "aggregate", "count(v)", _ALL),
    F("COUNT(*)", "aggregate", "count(*)", _ALL),
    F("COUNT(DISTINCT)", "aggregate", "count(distinct i)", "AWLC", aliases=("count_distinct",)),
    F("ELAPSED", "aggregate", "elapsed(ts, 1s)", "AWC"),
    F("LEASTSQUARES", "aggregate", "leastsquares(v, 1, 1)", "AWC"),
    F("SPREAD", "aggregate", "spread(v)", _ALL),
    F("STDDEV", "aggregate", "stddev(v)", _ALL),
    F("STDDEV_POP", "aggregate", "stddev_pop(v)", _ALL),
    F("STD", "aggregate", "std(v)", _ALL, note="STDDEV's alias since TDengine 3.3.8"),
    F("STDDEV_SAMP", "aggregate", "stddev_samp(v)", _UNKNOWN, note=_V338),
    F(
        "VARIANCE",
        "aggregate",
        "variance(v)",
        Refused(
            Code.INVALID_FUNCTION_NAME,
            "not in TDengine 3.3.7 (3.3.8 adds it as VAR_POP's alias); use VAR_POP",
        ),
    ),
    F("VAR_POP", "aggregate", "var_pop(v)", "AWLC"),
    F("VAR_SAMP", "aggregate", "var_samp(v)", _UNKNOWN, note=_V338),
    F(
        "GROUP_CONCAT",
        "aggregate",
        "group_concat(s, ',')",
        Refused(Code.SYNTAX_ERROR, "not implemented yet (the parser does not read it)"),
        note=_V338,
    ),
    F("SUM", "aggregate", "sum(v)", _ALL),
    F("HYPERLOGLOG", "aggregate", "hyperloglog(v)", "AWLC"),
    F("HISTOGRAM", "aggregate", "histogram(v, 'user_input', '[1, 3, 5, 7]', 0)", "AW", note=_MULTI_W),
    F("PERCENTILE", "aggregate", "percentile(v, 50)", "AW", note=_PERCENTILE_W),
    # control flow
    F("IF", "control flow", "if(v > 1, 1, 0)", _UNKNOWN),
    F("IFNULL", "control flow", "ifnull(v, 0)", _UNKNOWN),
    F("NVL", "control flow", "nvl(v, 0)", _UNKNOWN),
    F("NULLIF", "control flow", "nullif(v, 0)", _UNKNOWN),
    F("NVL2", "control flow", "nvl2(v, 1, 0)", _UNKNOWN),
    # selection
    F("BOTTOM", "selection", "bottom(v, 2)", "AWC", note=_MULTI_W),
    F("FIRST", "selection", "first(v)", _ALL),
    F("LAST", "selection", "last(v)", _ALL),
    F("LAST_ROW", "selection", "last_row(v)", _ALL),
    F("MAX", "selection", "max(v)", _ALL, diff=_MINMAX_STR),
    F("MIN", "selection", "min(v)", _ALL, diff=_MINMAX_STR),
    F("MODE", "selection", "mode(v)", "AWC"),
    F("SAMPLE", "selection", "sample(v, 2)", "AWC", note=_MULTI_W),
    F("TAIL", "selection", "tail(v, 2)", "AC"),
    F("TOP", "selection", "top(v, 2)", "AWC", note=_MULTI_W),
    F(
        "UNIQUE",
        "selection",
        "unique(v)",
        "AC",
    ),
    F("COLS", "selection", "cols(max(v), ts)", "AC"),
    # time-series specific
    F("CSUM", "time-series", "csum(v)", "AC"),
    F("DERIVATIVE", "time-series", "derivative(v, 1s, 0)", "AC"),
    F("DIFF", "time-series", "diff(v)", "AC"),
    F(
        "INTERP",
        "time-series",
        "interp(v)",
        "AW",
        probes={
            "A": "select _irowts, interp(v) from t range('2023-11-14 22:13:20', '2023-11-14 22:13:30') "
            "every(1s) fill(linear)",
            "W": "select _irowts, interp(v) from t range('2023-11-14 22:13:20', '2023-11-14 22:13:30') "
            "every(1s) fill(prev)",
            "L": "create stream {s} into {o} as select _irowts, interp(v) as x from t every(1s) fill(prev)",
            "C": "create stream {s} period(5s) from t into {o} as select _irowts, interp(v) as x from t "
            "range(_twstart, _twend) every(1s) fill(prev)",
        },
    ),
    F("IRATE", "time-series", "irate(v)", "AWC"),
    F("FILL_FORWARD", "time-series", "fill_forward(v)", _UNKNOWN),
    F("MAVG", "time-series", "mavg(v, 2)", "AC"),
    F("STATECOUNT", "time-series", "statecount(v, 'GT', 1)", "AC"),
    F("STATEDURATION", "time-series", "stateduration(v, 'GT', 1, 1s)", "AC"),
    F("TWA", "time-series", "twa(v)", "AWC"),
    # system information
    F("DATABASE", "system", "database()", "AW", note=_SESSION),
    F("CLIENT_VERSION", "system", "client_version()", "AW", note=_SESSION),
    F("SERVER_VERSION", "system", "server_version()", "AW", note=_SESSION),
    F("SERVER_STATUS", "system", "server_status()", "AW", note=_SESSION),
    F("CURRENT_USER", "system", "current_user()", "AW", note=_SESSION),
    F("USER", "system", "user()", "AW", note=_SESSION),
    # geometry
    F("ST_GeomFromText", "geometry", "st_geomfromtext('POINT(1 1)')", "AC"),
    F("ST_AsText", "geometry", "st_astext(st_geomfromtext('POINT(1 1)'))", "AWLC"),
    F("ST_MakePoint", "geometry", "st_makepoint(1, 2)", "AC"),
    F(
        "ST_Intersects",
        "geometry",
        "st_intersects(st_geomfromtext('POINT(1 1)'), st_makepoint(1, 1))",
        "AWLC",
    ),
    F(
        "ST_Equals",
        "geometry",
        "st_equals(st_geomfromtext('POINT(1 1)'), st_makepoint(1, 1))",
        "AWLC",
    ),
    F(
        "ST_Touches",
        "geometry",
        "st_touches(st_geomfromtext('POINT(1 1)'), st_makepoint(1, 1))",
        "AWLC",
    ),
    F(
        "ST_Covers",
        "geometry",
        "st_covers(st_geomfromtext('POINT(1 1)'), st_makepoint(1, 1))",
        "AWLC",
    ),
    F(
        "ST_Contains",
        "geometry",
        "st_contains(st_geomfromtext('POINT(1 1)'), st_makepoint(1, 1))",
        "AWLC",
    ),
    F(
        "ST_ContainsProperly",
        "geometry",
        "st_containsproperly(st_geomfromtext('POINT(1 1)'), st_makepoint(1, 1))",
        "AWLC",
    ),
    # operators (SQL manual, "Operators")
    F("+ - * /", "operator", "v * 2 + i / 2 - 1", _ALL),
    F("%", "operator", "i % 3", _ALL),
    F("unary -", "operator", "-v", _ALL),
    F("& |", "operator", "(i & 6) | 1", _ALL),
    F("= <> != > < >= <=", "operator", "v > 1 and i <> 2 and i != 3 and v <= 9 and i >= 0 and i = i", _ALL),
    F("IS [NOT] NULL", "operator", "s is not null", _ALL),
    F("[NOT] BETWEEN ... AND", "operator", "i not between 2 and 4", _ALL),
    F("[NOT] IN", "operator", "i in (1, 2, 3)", _ALL),
    F("[NOT] LIKE", "operator", "s not like 's1%'", _ALL),
    F("MATCH / NMATCH", "operator", "s match '^s1'", "AWLC"),
    F("AND / OR / NOT", "operator", "not (b and i > 2 or i < 1)", _ALL),
    F("CASE WHEN", "operator", "case when v > 3 then 'hi' else 'lo' end", _ALL),
)
"""Every function of the manual's "Functions" page (and ST_MakePoint of the geometry input
functions), in the manual's order."""

_W_PSEUDO = "select _wstart, {p}, count(*) from t interval(5s)"
_L_PSEUDO = "create stream {s} into {o} as select _wstart, {p} as x, count(*) as n from t interval(5s)"
_INTERP = "from t range('2023-11-14 22:13:20', '2023-11-14 22:13:30') every(1s) fill(prev)"
_C_WINDOW = "create stream {s} interval(5s) sliding(5s) from t into {o} as select "
_C_PERIOD = "create stream {s} period(5s) into {o} as select "
_C_SLIDING = "create stream {s} sliding(5s) from t into {o} as select "
_C_ROWS = "create stream {s} count_window(2) from st partition by tbname into {o} as select "
_C_JOIN = "create stream {s} interval(5s) sliding(5s) from t into {o} as select a.ts, "
_C_JOIN_WHERE = " where a.ts >= _twstart and a.ts < _twend"


def _join_tables(kind: str) -> str:
    """The note of ASOF / WINDOW JOIN: TDengine's rule on their sides (SQL manual, "Join Queries")."""
    return (
        f'between tables: a subquery side is refused with 0x2664, as the manual says: "Only supports {kind} '
        'Join between tables, not between subqueries"'
    )


_INTERP_NYI = Refused(
    Code.SYNTAX_ERROR, "INTERP is not implemented yet: RANGE/EVERY are not parsed", named=False
)


def _pseudo(name: str, where: str | Refused, **probes: str) -> Entry:
    return Entry(name, "pseudo-column", name.lower(), where, probes=probes)


def _placeholder(name: str, probe: str, where: str = "C", **kw: object) -> Entry:
    return Entry(name, "placeholder", name.lower(), where, probes={"C": probe}, **kw)  # type: ignore[arg-type]


PSEUDO_ENTRIES: tuple[Entry, ...] = (
    _pseudo("_WSTART", "WL", W=_W_PSEUDO.replace("{p}", "_wstart"), L=_L_PSEUDO.replace("{p}", "_wstart")),
    _pseudo("_WEND", "WL", W=_W_PSEUDO.replace("{p}", "_wend"), L=_L_PSEUDO.replace("{p}", "_wend")),
    _pseudo(
        "_WDURATION", "WL", W=_W_PSEUDO.replace("{p}", "_wduration"), L=_L_PSEUDO.replace("{p}", "_wduration")
    ),
    _pseudo(
        "_QSTART",
        "A",
        A=f"select _qstart, _qend, count(*) from t where ts >= {BASE_MS} and ts < {BASE_MS + 10_000}",
    ),
    _pseudo(
        "_QEND",
        "AW",
        A=f"select _qend, count(*) from t where ts >= {BASE_MS} and ts < {BASE_MS + 10_000}",
        W=f"select _wstart, _qend, count(*) from t where ts >= {BASE_MS} and ts < {BASE_MS + 10_000} "
        "interval(5s)",
    ),
    _pseudo(
        "_QDURATION",
        "AW",
        A=f"select _qduration, count(*) from t where ts >= {BASE_MS} and ts < {BASE_MS + 10_000}",
        W=f"select _wstart, _qduration, count(*) from t where ts >= {BASE_MS} and ts < {BASE_MS + 10_000} "
        "interval(5s)",
    ),
    _pseudo("_IROWTS", "A", A=f"select _irowts, interp(v) {_INTERP}"),
    _pseudo("_IROWTS_ORIGIN", "A", A=f"select _irowts_origin, interp(v) {_INTERP}"),
    _pseudo(
        "_ISFILLED",
        "A",
        A=f"select _isfilled, interp(v) {_INTERP}",
        W=f"select _wstart, _isfilled, count(*) from t where ts >= {BASE_MS} and ts < {BASE_MS + 30_000} "
        "interval(5s) fill(null)",
    ),
    _pseudo(
        "_ROWTS", "AL", A="select _rowts, v from t", L="create stream {s} into {o} as select _rowts, v from t"
    ),
    _pseudo("_C0", "AL", A="select _c0, v from t", L="create stream {s} into {o} as select _c0, v from t"),
    _pseudo(
        "TBNAME",
        "AWLC",
        A="select tbname, v from st",
        W="select tbname, _wstart, count(*) from st partition by tbname interval(5s)",
        L="create stream {s} into {o} as select _wstart, count(*) as n from st partition by tbname "
        "interval(5s)",
        C=_C_ROWS + "_twstart, count(*) as n from %%trows",
    ),
)
"""The manual's pseudo-columns (Time-Series Extensions, Query Data, INTERP)."""

PLACEHOLDER_ENTRIES: tuple[Entry, ...] = (
    _placeholder(
        "_TWSTART", _C_WINDOW + "_twstart, count(*) as n from t where ts >= _twstart and ts < _twend"
    ),
    _placeholder("_TWEND", _C_WINDOW + "_twstart, _twend as e, count(*) as n from %%trows"),
    _placeholder("_TWDURATION", _C_WINDOW + "_twstart, _twduration as d, count(*) as n from %%trows"),
    _placeholder("_TWROWNUM", _C_WINDOW + "_twstart, _twrownum as r from %%trows"),
    _placeholder("_TCURRENT_TS", _C_SLIDING + "_tcurrent_ts, count(*) as n from %%trows"),
    _placeholder("_TPREV_TS", _C_SLIDING + "_tcurrent_ts, _tprev_ts as p, count(*) as n from %%trows"),
    _placeholder("_TNEXT_TS", _C_SLIDING + "_tcurrent_ts, _tnext_ts as nx, count(*) as n from %%trows"),
    _placeholder("_TLOCALTIME", _C_PERIOD + "_tlocaltime, count(*) as n from ref.t"),
    _placeholder("_TPREV_LOCALTIME", _C_PERIOD + "_tprev_localtime, count(*) as n from ref.t"),
    _placeholder("_TNEXT_LOCALTIME", _C_PERIOD + "_tnext_localtime, count(*) as n from ref.t"),
    _placeholder("_TGRPID", _C_ROWS + "_twstart, _tgrpid as g, count(*) as n from %%trows"),
    _placeholder("%%TROWS", _C_WINDOW + "_twstart, avg(v) as a from %%trows"),
    _placeholder("%%TBNAME", _C_ROWS + "_twstart, avg(v) as a from %%tbname"),
    _placeholder("%%1", _C_ROWS + "_twstart, avg(v) as a from %%tbname where g = %%1"),
)
"""Seed 002's placeholders of a 3.3.7 computation."""

EKUIPER_ENTRIES: tuple[Entry, ...] = (
    Entry(
        "window_start()",
        "ekuiper",
        "window_start()",
        "L",
        probes={
            "L": "create stream {s} into {o} as select window_start() as ws, count(*) as n from t "
            "group by tumblingwindow(ss, 5)"
        },
    ),
    Entry(
        "window_end()",
        "ekuiper",
        "window_end()",
        "L",
        probes={
            "L": "create stream {s} into {o} as select window_end() as we, count(*) as n from t "
            "group by tumblingwindow(ss, 5)"
        },
    ),
)
"""Seed 003's eKuiper window functions (tdweb's extension for eKuiper-style streams)."""

_A = "A"
_STREAM_CHECK = (
    "checked by creating the stream in a memory registry (validation and compilation); running it "
    "needs Spark (tests/spark)"
)
_NO_VNODES = "not implemented: the lake has no vnodes (its files are compacted by the lake.compact task)"
_NO_TMQ = "not implemented: no data subscription (TMQ)"
_NO_NODES = "not implemented: tdweb is not a TDengine cluster (no dnodes)"
_NO_INDEX = "not implemented: no tag indexes"
_NO_ROWS = "TDengine's columns, no rows"
_NO_UDF = "not implemented: tdweb runs no user code (UDF)"


def _syntax(token: str, reason: str = "not implemented yet") -> Refused:
    """A statement the parser does not read: TDengine's syntax error, naming ``token``."""
    return Refused(Code.SYNTAX_ERROR, f"{reason} (not parsed)", token=token)


_KEEP_NOTE = (
    "KEEP (1 to 3 values, days or m/h/d; retention is the last) and KEEP_TIME_OFFSET are enforced: "
    "queries return no row older than now - KEEP, INSERT of one is 0x060B, and the retention job "
    "(after ALTER and hourly, task lake.retain) deletes them from the Delta tables (KEEP_TIME_OFFSET "
    "hours later); a database created without KEEP keeps every row. CACHEMODEL is stored and shown "
    "(SHOW CREATE DATABASE, ins_databases) and has no effect on results (TDengine's last-row cache "
    "only makes LAST / LAST_ROW faster; tdweb has none). BUFFER, CACHESIZE, PAGES, WAL_*, "
    "STT_TRIGGER, MINROWS, SS_*, COMPACT_* are refused (0x0100) naming the option and what tdweb "
    "lacks for it; REPLICA other than 1 is 0x0200"
)


def _unsupported(token: str, reason: str = "not implemented yet") -> Refused:
    """A statement refused by name (``Code.NOT_SUPPORTED`` at its first word), naming ``token``."""
    return Refused(Code.NOT_SUPPORTED, reason, token=token)


STATEMENT_ENTRIES: tuple[Entry, ...] = (
    # databases
    S(
        "CREATE DATABASE",
        "database",
        "create database if not exists ref_db2 precision 'us' keep 3650",
        _A,
        note="KEEP is enforced (see ALTER DATABASE); the other storage options are stored and shown",
    ),
    S("USE", "database", "use ref", _A),
    S("ALTER DATABASE", "database", "alter database ref_db2 keep 7300", _A, note=_KEEP_NOTE),
    S("FLUSH DATABASE", "database", "flush database ref_db2", _unsupported("flush", _NO_VNODES)),
    S("TRIM DATABASE", "database", "trim database ref_db2", _unsupported("trim", _NO_VNODES)),
    S("COMPACT DATABASE", "database", "compact database ref_db2", _unsupported("compact", _NO_VNODES)),
    S("DROP DATABASE", "database", "drop database if exists ref_db2", _A),
    S(
        "REDISTRIBUTE VGROUP",
        "database",
        "redistribute vgroup 2 dnode 1",
        _unsupported("redistribute", _NO_VNODES),
    ),
    S("BALANCE VGROUP", "database", "balance vgroup", _unsupported("balance", _NO_VNODES)),
    S("BALANCE VGROUP LEADER", "database", "balance vgroup leader", _unsupported("balance", _NO_VNODES)),
    S("SPLIT VGROUP", "database", "split vgroup 2", _unsupported("split", _NO_VNODES)),
    S("SHOW COMPACTS", "database", "show compacts", _A, note=_NO_ROWS),
    S("KILL COMPACT", "database", "kill compact 1", _unsupported("kill", _NO_VNODES)),
    S("SHOW db.DISK_INFO", "database", "show ref.disk_info", _unsupported("disk_info", _NO_VNODES)),
    S("SSMIGRATE DATABASE", "database", "ssmigrate database ref", _unsupported("ssmigrate", _NO_VNODES)),
    # tables
    S("CREATE TABLE", "table", "create table if not exists ref.nt (ts timestamp, a int, c varchar(8))", _A),
    S(
        "CREATE TABLE (composite key)",
        "table",
        "create table ref.ck (ts timestamp, k int primary key, a int)",
        _A,
    ),
    S("CREATE TABLE ... USING (subtable)", "table", "create table ref.st2 using ref.st tags (2)", _A),
    S(
        "CREATE TABLE ... USING (several subtables)",
        "table",
        "create table ref.st3 using ref.st tags (3) ref.st4 using ref.st (g) tags (4)",
        _A,
    ),
    S(
        "CREATE TABLE (COMMENT / TTL options)",
        "table",
        "create table ref.opt (ts timestamp, a int) comment 'c' ttl 10",
        _A,
        note="TTL in days on normal and child tables (also after USING ... TAGS and in INSERT ... "
        "USING); the hourly lake.retain job drops a table once expired, except one a stream uses; "
        "a supertable takes TTL 0 only (0x261A)",
    ),
    S(
        "CREATE TABLE ... USING ... TTL (subtable options)",
        "table",
        "create table ref.tl1 using ref.st tags (7) ttl 3 ref.tl2 using ref.st tags (8) comment 'x'",
        _A,
    ),
    S(
        "CREATE TABLE (NCHAR, unsigned, BOOL)",
        "table",
        "create table ref.ty1 (ts timestamp, n nchar(8), u int unsigned, f bool)",
        _A,
    ),
    S(
        "CREATE TABLE (JSON tag)",
        "table",
        "create stable ref.js (ts timestamp, a int) tags (j json)",
        "A",
    ),
    S(
        "CREATE TABLE (VARBINARY)",
        "table",
        "create table ref.vb (ts timestamp, b varbinary(16))",
        "A",
    ),
    S(
        "CREATE TABLE (GEOMETRY)",
        "table",
        "create table ref.geo (ts timestamp, g geometry(64))",
        "A",
    ),
    S(
        "CREATE TABLE (DECIMAL)",
        "table",
        "create table ref.dec (ts timestamp, d decimal(10, 2))",
        "A",
    ),
    S(
        "CREATE TABLE (column ENCODE / COMPRESS)",
        "table",
        "create table ref.cmp (ts timestamp, a int encode 'simple8b' compress 'lz4' level 'medium')",
        _syntax(
            "encode",
            "column compression options are not implemented (Delta files are compressed by the lake)",
        ),
    ),
    S(
        "CREATE TABLE ... USING ... FILE",
        "table",
        "create table using ref.st (tbname, g) file '/tmp/ref_tags.csv'",
        _syntax("file", "not implemented: the server cannot read a client's file"),
    ),
    S("ALTER TABLE ADD COLUMN", "table", "alter table ref.nt add column d double", "A"),
    S("ALTER TABLE MODIFY COLUMN", "table", "alter table ref.nt modify column c varchar(16)", "A"),
    S("ALTER TABLE RENAME COLUMN", "table", "alter table ref.nt rename column d dd", "A"),
    S("ALTER TABLE DROP COLUMN", "table", "alter table ref.nt drop column dd", "A"),
    S("ALTER TABLE SET TAG", "table", "alter table ref.st2 set tag g = 20", "A"),
    S(
        "ALTER TABLE COMMENT / TTL",
        "table",
        "alter table ref.nt comment 'probe' ttl 30",
        "A",
        note="TTL of normal and child tables (ALTER STABLE ... TTL n > 0: 0x2649); table KEEP is refused",
    ),
    S(
        "DROP TABLE",
        "table",
        "create table ref.gone (ts timestamp, a int); drop table if exists ref.gone",
        _A,
    ),
    # supertables
    S(
        "CREATE STABLE",
        "supertable",
        "create stable ref.sst (ts timestamp, a int, c varchar(8)) tags (k varchar(8))",
        _A,
    ),
    S("ALTER STABLE ADD COLUMN", "supertable", "alter stable ref.sst add column b double", "A"),
    S("ALTER STABLE DROP COLUMN", "supertable", "alter stable ref.sst drop column b", "A"),
    S(
        "ALTER STABLE MODIFY COLUMN",
        "supertable",
        "alter stable ref.sst modify column c varchar(16)",
        "A",
    ),
    S("ALTER STABLE ADD TAG", "supertable", "alter stable ref.sst add tag k2 int", "A"),
    S("ALTER STABLE RENAME TAG", "supertable", "alter stable ref.sst rename tag k2 k3", "A"),
    S("ALTER STABLE MODIFY TAG", "supertable", "alter stable ref.sst modify tag k varchar(16)", "A"),
    S("ALTER STABLE DROP TAG", "supertable", "alter stable ref.sst drop tag k3", "A"),
    S(
        "DROP STABLE",
        "supertable",
        "create stable ref.gst (ts timestamp, a int) tags (k int); drop stable ref.gst",
        _A,
    ),
    # virtual tables
    S("CREATE VTABLE", "virtual table", "create vtable ref.vt (ts timestamp, x double from ref.t.v)", _A),
    S(
        "CREATE STABLE ... VIRTUAL 1",
        "virtual table",
        "create stable ref.vst (ts timestamp, x double) tags (k int) virtual 1",
        _A,
    ),
    S(
        "CREATE VTABLE ... USING",
        "virtual table",
        "create vtable ref.vc1 (x from ref.t.v) using ref.vst tags (1)",
        _A,
    ),
    S(
        "ALTER VTABLE",
        "virtual table",
        "alter vtable ref.vt add column y int",
        _A,
        note="ADD / DROP / MODIFY / RENAME COLUMN, ALTER COLUMN ... SET {ref | NULL}, SET TAG; a "
        "virtual supertable takes ALTER STABLE; refused (0x0200) while a stream reads the table",
    ),
    S("DROP VTABLE", "virtual table", "drop vtable ref.vc1", _A),
    # INSERT
    S(
        "INSERT VALUES",
        "insert",
        f"insert into ref.nt values ({BASE_MS}, 1, 'a') ({BASE_MS + 1000}, 2, 'b')",
        _A,
    ),
    S("INSERT (column list)", "insert", f"insert into ref.nt (ts, a) values ({BASE_MS + 2000}, 3)", _A),
    S(
        "INSERT several tables",
        "insert",
        f"insert into ref.st2 values ({BASE_MS}, 1.0, 1) ref.st3 values ({BASE_MS}, 2.0, 2)",
        _A,
    ),
    S(
        "INSERT ... USING ... TAGS (automatic subtable)",
        "insert",
        f"insert into ref.st5 using ref.st tags (5) values ({BASE_MS}, 1.0, 1)",
        _A,
    ),
    S(
        "INSERT into a supertable (tbname)",
        "insert",
        f"insert into ref.st (tbname, g, ts, v, i) values ('st6', 6, {BASE_MS}, 1.0, 1)",
        _A,
    ),
    S("INSERT ... SELECT", "insert", "insert into ref.nt (ts, a) select ts, i from ref.t", _A),
    S(
        "INSERT ... FILE",
        "insert",
        "insert into ref.nt file '/tmp/ref.csv'",
        _unsupported("file", "not implemented: the server cannot read a client's file (use the import API)"),
    ),
    # SELECT
    S("SELECT", "select", "select * from ref.t", _A),
    S("SELECT DISTINCT", "select", "select distinct b from ref.t", _A),
    S("WHERE", "select", "select v from ref.t where i > 3 and s like 's%'", _A),
    S("PARTITION BY", "select", "select tbname, count(*) from ref.st partition by tbname", _A),
    S("GROUP BY / HAVING", "select", "select b, count(*) from ref.t group by b having count(*) > 1", _A),
    S("ORDER BY / LIMIT / OFFSET", "select", "select v from ref.t order by v desc limit 3 offset 1", _A),
    S(
        "SLIMIT / SOFFSET",
        "select",
        "select count(*) from ref.st partition by tbname slimit 1 soffset 0",
        "A",
    ),
    S("INTERVAL", "select", "select _wstart, avg(v) from ref.t interval(5s)", _A),
    S("INTERVAL ... SLIDING", "select", "select _wstart, avg(v) from ref.t interval(5s) sliding(2s)", _A),
    S("INTERVAL (offset)", "select", "select _wstart, avg(v) from ref.t interval(5s, 1s)", _A),
    S(
        "FILL(LINEAR)",
        "select",
        f"select _wstart, avg(v) from ref.t where ts >= {BASE_MS} and ts < {BASE_MS + 30_000} "
        "interval(5s) fill(linear)",
        _A,
    ),
    S("STATE_WINDOW", "select", "select _wstart, count(*) from ref.t state_window(b)", _A),
    S("SESSION", "select", "select _wstart, count(*) from ref.t session(ts, 2s)", _A),
    S(
        "EVENT_WINDOW",
        "select",
        "select _wstart, count(*) from ref.t event_window start with i > 2 end with i > 5",
        _A,
    ),
    S("COUNT_WINDOW", "select", "select _wstart, count(*) from ref.t count_window(4)", _A),
    S(
        "INTERP ... RANGE / EVERY / FILL",
        "select",
        "select _irowts, interp(v) from ref.t range('2023-11-14 22:13:20', '2023-11-14 22:13:30') "
        "every(1s) fill(linear)",
        "A",
    ),
    S(
        "JOIN (inner)",
        "select",
        "select a.v, b.v from ref.t a join ref.st1 b on a.ts = b.ts",
        "AC",
        probes={"C": _C_JOIN + "b.v from ref.t a join ref.st1 b on a.ts = b.ts" + _C_JOIN_WHERE},
    ),
    S(
        "LEFT / RIGHT / FULL OUTER JOIN",
        "select",
        "select a.v, b.v from ref.t a left join ref.st1 b on a.ts = b.ts",
        "AC",
        probes={"C": _C_JOIN + "b.v from ref.t a left join ref.st1 b on a.ts = b.ts" + _C_JOIN_WHERE},
    ),
    S(
        "SEMI / ANTI JOIN",
        "select",
        "select a.v from ref.t a left semi join ref.st1 b on a.ts = b.ts",
        "AC",
        probes={"C": _C_JOIN + "a.v from ref.t a left anti join ref.st1 b on a.ts = b.ts" + _C_JOIN_WHERE},
    ),
    S(
        "ASOF JOIN",
        "select",
        "select a.v, b.v from ref.t a left asof join ref.st1 b on a.ts >= b.ts",
        "AC",
        probes={"C": _C_JOIN + "b.v from ref.t a left asof join ref.st1 b on a.ts >= b.ts" + _C_JOIN_WHERE},
        note=_join_tables("ASOF"),
    ),
    S(
        "WINDOW JOIN",
        "select",
        "select a.v, b.v from ref.t a left window join ref.st1 b window_offset(-1s, 1s)",
        "AC",
        probes={
            "C": _C_JOIN
            + "count(b.v) from ref.t a left window join ref.st1 b window_offset(-1s, 1s)"
            + _C_JOIN_WHERE
        },
        note=_join_tables("Window"),
    ),
    S("UNION ALL", "select", "select v from ref.t union all select v from ref.st1", _A),
    S("UNION", "select", "select i from ref.t union select i from ref.st1", _A),
    S(
        "Subquery in FROM",
        "select",
        "select max(v) from (select ts, v from ref.t where i > 2)",
        _A,
        diff="merged into the outer query: GROUP BY, HAVING, aggregates, DISTINCT, LIMIT, joins and set "
        "operations inside are refused; an ad-hoc query reading a computed column of the subquery "
        "(SELECT x FROM (SELECT v * 2 AS x ...)) fails with 0x2602",
    ),
    S(
        "Subquery in WHERE",
        "select",
        "select v from ref.t where i in (select i from ref.st1 where i > 5)",
        _A,
    ),
    S("CASE WHEN", "select", "select case when v > 3 then 'hi' else 'lo' end from ref.t", _A),
    S(
        "LIKE / MATCH / NMATCH",
        "select",
        "select s from ref.t where s like 's1%' and s match '^s' and s nmatch 'x'",
        "A",
    ),
    S(
        "IN / BETWEEN / IS NULL",
        "select",
        "select v from ref.t where i in (1, 2) or i between 5 and 6 or s is null",
        _A,
    ),
    S(
        "JSON tag -> / CONTAINS",
        "select",
        "select j->'k' from ref.js where j contains 'k'",
        "A",
    ),
    S("information_schema", "select", "select name from information_schema.ins_databases", _A),
    S("performance_schema", "select", "select * from performance_schema.perf_connections", _A),
    S(
        "SELECT TAGS",
        "select",
        "select tags g from ref.st",
        Refused(Code.INVALID_COLUMN, "not implemented yet", token="tags"),
    ),
    S(
        "FILL(PREV / NEXT / NULL / VALUE)",
        "select",
        f"select _wstart, avg(v) from ref.t where ts >= {BASE_MS} and ts < {BASE_MS + 30_000} interval(5s) "
        "fill(prev)",
        _A,
    ),
    S(
        "FILL(NEAR)",
        "select",
        f"select _wstart, avg(v) from ref.t where ts >= {BASE_MS} and ts < {BASE_MS + 30_000} interval(5s) "
        "fill(near)",
        Refused(Code.NOT_SUPPORTED, "FILL(NEAR) is INTERP's; window queries refuse it"),
    ),
    S(
        "STATE_WINDOW ... TRUE_FOR",
        "select",
        "select _wstart, count(*) from ref.t state_window(b) true_for(1s)",
        _A,
    ),
    S("Calendar INTERVAL (n / y)", "select", "select _wstart, count(*) from ref.t interval(1n)", _A),
    S(
        "PARTITION BY ... INTERVAL",
        "select",
        "select _wstart, count(*) from ref.st partition by tbname interval(5s)",
        _A,
    ),
    S("GROUP BY tbname", "select", "select tbname, count(*) from ref.st group by tbname", _A),
    S(
        "LAST(*) / LAST_ROW(*)",
        "select",
        "select last(*), last_row(*) from ref.t",
        "A",
    ),
    S("EXPLAIN", "select", "explain select * from ref.t", _unsupported("explain")),
    # DELETE
    S("DELETE", "delete", f"delete from ref.nt where ts >= {BASE_MS} and ts < {BASE_MS + 1000}", _A),
    S("DELETE from a supertable", "delete", f"delete from ref.st where ts < {BASE_MS + 1000} and g = 6", _A),
    # SHOW and DESCRIBE
    S("SHOW DATABASES", "show", "show databases", _A),
    S("SHOW TABLES", "show", "show ref.tables", _A),
    S("SHOW STABLES", "show", "show ref.stables", _A),
    S("SHOW VTABLES", "show", "show ref.vtables", _A),
    S("SHOW CREATE DATABASE", "show", "show create database ref", _A),
    S("SHOW CREATE TABLE", "show", "show create table ref.t", _A),
    S("SHOW CREATE STABLE", "show", "show create stable ref.st", _A),
    S("SHOW TAGS", "show", "show tags from ref.st1", _A),
    S("SHOW TABLE TAGS", "show", "show table tags from ref.st", _A),
    S("SHOW STREAMS", "show", "show ref.streams", _A),
    S("SHOW USERS", "show", "show users", _A),
    S("SHOW USER PRIVILEGES", "show", "show user privileges", _A),
    S("SHOW FUNCTIONS", "show", "show functions", _A),
    S("SHOW TOPICS", "show", "show topics", _A, note=_NO_ROWS),
    S("SHOW VGROUPS", "show", "show ref.vgroups", _A),
    S("SHOW DNODES", "show", "show dnodes", _A),
    S("SHOW CLUSTER", "show", "show cluster", _A),
    S("SHOW QUERIES", "show", "show queries", _A),
    S("SHOW CONNECTIONS", "show", "show connections", _A),
    S("SHOW VARIABLES", "show", "show variables", _A),
    S("SHOW INDEXES", "show", "show indexes from st from ref", _A, note=_NO_ROWS),
    S("SHOW TSMAS", "show", "show ref.tsmas", _syntax("tsmas")),
    S(
        "SHOW VIEWS",
        "show",
        "show views",
        _A,
        diff="SHOW db_name.VIEWS is refused (0x2600); no rows (CREATE VIEW is refused)",
    ),
    S("SHOW USER / SYSTEM DATABASES", "show", "show user databases", _A),
    S("SHOW NORMAL / CHILD TABLES", "show", "show child ref.tables", _syntax("child")),
    S("SHOW ... LIKE", "show", "show ref.tables like 'st%'", _A),
    S("SHOW APPS", "show", "show apps", _A),
    S("SHOW CLUSTER ALIVE", "show", "show cluster alive", _A),
    S("SHOW CLUSTER MACHINES", "show", "show cluster machines", _syntax("machines", _NO_NODES)),
    S("SHOW CONSUMERS", "show", "show consumers", _A),
    S("SHOW SUBSCRIPTIONS", "show", "show subscriptions", _A, note=_NO_ROWS),
    S(
        "SHOW LICENCES / GRANTS",
        "show",
        "show grants",
        _unsupported("grants", "not implemented: tdweb has no licences"),
    ),
    S("SHOW SCORES", "show", "show scores", _syntax("scores", "not implemented: tdweb has no licences")),
    S("SHOW LOCAL VARIABLES", "show", "show local variables", _A),
    S("SHOW CLUSTER VARIABLES", "show", "show cluster variables", _A),
    S("SHOW DNODE VARIABLES", "show", "show dnode 1 variables", _A),
    S("SHOW MNODES", "show", "show mnodes", _A),
    S("SHOW SNODES", "show", "show snodes", _A),
    S("SHOW QNODES", "show", "show qnodes", _A),
    S("SHOW VNODES", "show", "show vnodes", _A),
    S("SHOW TRANSACTIONS", "show", "show transactions", _A),
    S(
        "SHOW TABLE DISTRIBUTED",
        "show",
        "show table distributed ref.t",
        _unsupported("distributed", _NO_VNODES),
    ),
    S("SHOW CREATE VTABLE", "show", "show create vtable ref.vt", _A),
    S("DESC", "show", "desc ref.st", _A),
    S("DESCRIBE", "show", "describe ref.t", _A),
    # users and permissions
    S("CREATE USER", "user", "create user ref_u pass 'Ref_pass1'", _A),
    S("ALTER USER", "user", "alter user ref_u pass 'Ref_pass2'", _A),
    S("GRANT", "user", "grant read on ref.* to ref_u", _A),
    S("REVOKE", "user", "revoke read on ref.* from ref_u", _A),
    S("DROP USER", "user", "drop user ref_u", _A),
    S(
        "CREATE USER ... SYSINFO / CREATEDB",
        "user",
        "create user ref_u2 pass 'Ref_pass1' sysinfo 0 createdb 1",
        _A,
    ),
    S("ALTER USER ENABLE / SYSINFO / CREATEDB", "user", "alter user ref_u2 enable 0", _A),
    S(
        "GRANT ... ON table WITH tag condition",
        "user",
        "grant read on ref.st with g = 1 to ref_u2",
        Refused(
            Code.NOT_SUPPORTED,
            "tag-based authorization of subtables is not implemented: grant on the supertable",
            token="with",
        ),
    ),
    S("GRANT SUBSCRIBE", "user", "grant subscribe on ref_tp to ref_u2", _syntax("subscribe", _NO_TMQ)),
    # streams
    S(
        "CREATE STREAM (legacy syntax)",
        "stream",
        "create stream ref_ls trigger window_close into ref.ls_out as select _wstart, avg(v) from ref.t "
        "interval(5s)",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM (3.3.7 syntax)",
        "stream",
        "create stream ref.ref_ns interval(5s) sliding(5s) from ref.t into ref.ns_out as select _twstart, "
        "avg(v) from %%trows",
        _A,
        note=_STREAM_CHECK,
    ),
    S("PAUSE STREAM", "stream", "pause stream ref_ls", _A),
    S("RESUME STREAM", "stream", "resume stream ref_ls", _A),
    S("STOP STREAM", "stream", "stop stream ref.ref_ns", _A),
    S("START STREAM", "stream", "start stream ref.ref_ns", _A),
    S(
        "RECALCULATE STREAM",
        "stream",
        "recalculate stream ref.ref_ns from '2023-11-14 22:13:20' to '2023-11-14 22:13:30'",
        _A,
        note="checked with the local (DuckDB) runner",
    ),
    S("DROP STREAM", "stream", "drop stream if exists ref_ls", _A),
    S(
        "CREATE STREAM TRIGGER AT_ONCE / MAX_DELAY",
        "stream",
        "create stream ref_l2 trigger max_delay 5s watermark 1s ignore expired 0 into ref.l2_out as select "
        "_wstart, count(*) from ref.t interval(5s)",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM TRIGGER FORCE_WINDOW_CLOSE",
        "stream",
        "create stream ref_l3 trigger force_window_close into ref.l3_out as select _wstart, count(*) from "
        "ref.t "
        "interval(5s)",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM FILL_HISTORY / DELETE_MARK / IGNORE UPDATE",
        "stream",
        "create stream ref_l4 fill_history 1 delete_mark 1d ignore update 1 into ref.l4_out as select "
        "_wstart, count(*) from ref.t interval(5s)",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM ... TAGS / SUBTABLE",
        "stream",
        "create stream ref_l5 into ref.l5_out tags (gg int) subtable(concat('o_', cast(gg as varchar(8)))) "
        "as "
        "select _wstart, count(*) from ref.st partition by g as gg interval(5s)",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM ... NOTIFY (legacy)",
        "stream",
        "create stream ref_l6 into ref.l6_out as select _wstart, count(*) from ref.t interval(5s) "
        "notify ('ws://localhost:8080/notify') on ('window_open', 'window_close')",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM PERIOD trigger",
        "stream",
        "create stream ref.ref_n2 period(10s) into ref.n2_out as select cast(_tlocaltime / 1000000 as "
        "timestamp) "
        "as ts, count(*) as n from ref.t",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM SLIDING trigger",
        "stream",
        "create stream ref.ref_n3 sliding(5s) from ref.t into ref.n3_out as select _tcurrent_ts, count(*) "
        "as n "
        "from %%trows",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM SESSION / STATE_WINDOW / EVENT_WINDOW / COUNT_WINDOW trigger",
        "stream",
        "create stream ref.ref_n4 state_window(b) from ref.t into ref.n4_out as select _twstart, count(*) "
        "as n "
        "from %%trows",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM ... PARTITION BY / STREAM_OPTIONS",
        "stream",
        "create stream ref.ref_n5 interval(5s) sliding(5s) from ref.st partition by tbname "
        "stream_options(fill_history | low_latency_calc) into ref.n5_out as select _twstart, avg(v) as a "
        "from %%tbname where ts >= _twstart and ts < _twend",
        _A,
        note=_STREAM_CHECK,
    ),
    S(
        "CREATE STREAM ... NOTIFY (3.3.7)",
        "stream",
        "create stream ref.ref_n6 interval(5s) sliding(5s) from ref.t notify('ws://localhost:8080/notify') "
        "on (window_open|window_close) into ref.n6_out as select _twstart, count(*) as n from %%trows",
        _A,
        note=_STREAM_CHECK,
    ),
    # data subscription, TSMA, indexes, UDF, views
    S("CREATE TOPIC", "topic", "create topic ref_tp as select v from ref.t", _unsupported("topic", _NO_TMQ)),
    S("DROP TOPIC", "topic", "drop topic ref_tp", _unsupported("topic", _NO_TMQ)),
    S("DROP CONSUMER GROUP", "topic", "drop consumer group cg on ref_tp", _unsupported("consumer", _NO_TMQ)),
    S(
        "CREATE TSMA",
        "tsma",
        "create tsma ref_tsma on ref.t function(avg(v)) interval(5s)",
        _unsupported("tsma"),
    ),
    S("DROP TSMA", "tsma", "drop tsma ref.ref_tsma", _unsupported("tsma")),
    S("CREATE INDEX", "index", "create index ref_idx on ref.st (g)", _unsupported("index", _NO_INDEX)),
    S("DROP INDEX", "index", "drop index ref.ref_idx", _unsupported("index", _NO_INDEX)),
    S(
        "CREATE FUNCTION",
        "udf",
        "create function myfun as '/tmp/libmyfun.so' outputtype int",
        _unsupported("function", _NO_UDF),
    ),
    S("DROP FUNCTION", "udf", "drop function myfun", _unsupported("function", _NO_UDF)),
    S("CREATE VIEW", "view", "create view ref.v1 as select v from ref.t", _unsupported("view")),
    S("DROP VIEW", "view", "drop view ref.v1", _unsupported("view")),
    # cluster administration
    S("CREATE DNODE", "node", "create dnode 'localhost:6030'", _unsupported("dnode", _NO_NODES)),
    S("ALTER DNODE", "node", "alter dnode 1 'debugFlag' '143'", _unsupported("alter", _NO_NODES)),
    S("ALTER LOCAL", "node", "alter local 'debugFlag' '143'", _unsupported("alter", _NO_NODES)),
    S("KILL QUERY", "node", "kill query '1:1'", _unsupported("kill")),
    S("KILL CONNECTION", "node", "kill connection 1", _unsupported("kill")),
    S("KILL TRANSACTION", "node", "kill transaction 1", _unsupported("kill")),
    S(
        "RESET QUERY CACHE",
        "node",
        "reset query cache",
        _syntax("reset", "not implemented: tdweb keeps no query cache"),
    ),
)
"""Every statement form of the manual, in the order the probes run (each may use what the
previous ones created)."""

STATEMENT_CATEGORIES = (
    ("database", "Databases"),
    ("table", "Tables"),
    ("supertable", "Supertables"),
    ("virtual table", "Virtual tables"),
    ("insert", "INSERT"),
    ("select", "SELECT"),
    ("delete", "DELETE"),
    ("show", "SHOW and DESCRIBE"),
    ("user", "Users and permissions"),
    ("stream", "Streams"),
    ("topic", "Data subscription (topics)"),
    ("tsma", "TSMA"),
    ("index", "Tag indexes"),
    ("udf", "User-defined functions"),
    ("view", "Views"),
    ("node", "Cluster administration"),
)
"""Statement categories in the order of the manual, with their docs/sql.md headings."""

ENTRIES: tuple[Entry, ...] = (
    FUNCTION_ENTRIES + PSEUDO_ENTRIES + PLACEHOLDER_ENTRIES + EKUIPER_ENTRIES + STATEMENT_ENTRIES
)
"""The whole catalogue."""


_SEED_000 = "legacy streams refuse it (seed 000's list, 0x2800)"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(e: Entry) -> str:
    if isinstance(e.where, Refused):
        status = f"refused `{e.where.code:#06x}`"
        notes = e.where.reason + ("" if e.where.named else "; the error does not name it yet")
    else:
        status = e.status
        notes = e.diff
    forbidden = "" if e.statement or e.name.lower() not in STREAM_FORBIDDEN else _SEED_000
    notes = "; ".join(x for x in (notes, e.note, forbidden) if x)
    where = ", ".join(CONTEXTS[c] for c in e.contexts) or "—"
    return f"| `{_cell(e.name)}` | {status} | {where} | {_cell(notes)} |"


def _tables(entries: Iterable[Entry], categories: tuple[tuple[str, str], ...], level: str) -> list[str]:
    out: list[str] = []
    entries = list(entries)
    for key, title in categories:
        rows = [e for e in entries if e.category == key]
        out += ["", f"{level} {title}", "", "| Name | Status | Where | Notes |", "| --- | --- | --- | --- |"]
        out += [_row(e) for e in rows]
    return out


def counts(entries: Iterable[Entry] = ENTRIES) -> dict[str, int]:
    """Number of entries per status: ``{"supported": n, "difference": n, "refused": n}``."""
    out = {SUPPORTED: 0, DIFFERENCE: 0, REFUSED: 0}
    for e in entries:
        out[e.status] += 1
    return out


_INTRO = """\
# SQL reference

<!-- generated by `make sql-docs` (python -m spark_workers.sql.reference) from
spark_workers/sql/reference.py: do not edit by hand; tests/sql/test_reference.py fails when the two
differ -->

tdweb speaks TDengine's SQL (3.3; the 3.3.7 stream syntax of seed 002) over TDengine's REST
protocol, the shell and the web console. This page lists every function and statement form of
TDengine's SQL manual and what tdweb does with it today:

- **supported**: it runs as in TDengine;
- **difference**: it runs, with the difference noted;
- **refused**: the statement fails with the TDengine error code shown (and the reason); nothing
  is accepted and ignored.

**Where** says in which contexts a function runs: an **ad-hoc** query (`SELECT ... FROM t`), a
**window** query (`... INTERVAL(5s)`), a **legacy stream** (`CREATE STREAM ... AS SELECT`, seed
000) and a **3.3.7 computation** (`CREATE STREAM ... FROM t INTO o AS SELECT`, seed 002); for a
statement, **ad-hoc** means the executor behind REST, the shell and the console runs it.

Every row is checked by `tests/sql/test_reference.py`: each supported function runs in each
context its row names and each supported statement runs, in order, in a scratch database; each
refusal is checked for its code; `tests/web/test_rest_statement_forms.py` runs every supported
statement form over the REST protocol with the `taosrest` client. After a change to the SQL,
`PYTHONPATH=. python -m tests.sql.reference_status` lists the rows whose status changed.
"""


def render_markdown(entries: tuple[Entry, ...] = ENTRIES) -> str:
    """docs/sql.md: the introduction, the counts, then one table per category (functions, then
    statements) with the columns Name | Status | Where | Notes."""
    n = counts(entries)
    lines = [_INTRO]
    lines.append(
        f"Today: {n[SUPPORTED]} supported, {n[DIFFERENCE]} supported with a difference, "
        f"{n[REFUSED]} refused ({len(entries)} entries)."
    )
    lines += ["", "## Functions"]
    lines += _tables((e for e in entries if not e.statement), FUNCTION_CATEGORIES, "###")
    lines += ["", "## Statements"]
    lines += _tables((e for e in entries if e.statement), STATEMENT_CATEGORIES, "###")
    return "\n".join(lines) + "\n"


def main() -> None:
    """``python -m spark_workers.sql.reference``: write docs/sql.md's text to standard output."""
    sys.stdout.write(render_markdown())


if __name__ == "__main__":
    main()
