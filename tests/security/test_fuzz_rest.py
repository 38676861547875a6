"""Property-based fuzzing of TDengine's REST protocol ``POST /rest/sql`` (issue 15, "Errors": no
DuckDB, Spark or Python message ever reaches a client).

Hypothesis generates statements of five families: valid queries built from tdweb's function
catalogue and clauses (aggregates, scalar functions, WHERE, PARTITION BY, INTERVAL / SESSION /
STATE_WINDOW / EVENT_WINDOW / COUNT_WINDOW, FILL, ORDER BY, LIMIT, SHOW, DESCRIBE), writes
(valid and invalid INSERTs), invalid queries (unknown functions, wrong argument types, misplaced
clauses, truncated statements), token soup and raw text (huge numbers, bad quotes, unicode).
Every statement goes through the whole Django stack (the test client: middleware, Basic
authentication, the view). For every answer:

- the HTTP status is never 5xx;
- an error answer has TDengine's shape ``{code, desc}`` with a code of TDengine's error table
  (``spark_workers.errors.Code``, never the catch-all internal error), and its ``desc`` carries
  none of DuckDB's, Spark's or Python's words;
- a refused statement changes no stored data: the catalog version and the Delta version of every
  seeded table are compared before and after each refused write, and after every batch.

Runs are repeatable (``derandomize=True``, no example database): CI sees the same statements.
``TDWEB_FUZZ_SCALE`` (< 1) shortens a local run; CI runs the full count (at least 10,000).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_workers.errors import Code
from tests.web.conftest import Rest, basic, root_sql

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:No directory at:UserWarning"),
]

SCALE = float(os.environ.get("TDWEB_FUZZ_SCALE", "1"))
PER_EXAMPLE = 10  # statements sent by one Hypothesis example
# Hypothesis examples per test: (100 + 350 + 200 + 350) x 10 = 10,000 statements; the valid
# queries (engine windows, DuckDB) cost the most per statement, so they get the fewest
EXAMPLES = {"valid": 100, "invalid": 350, "writes": 200, "soup": 350}
STATS: Counter[str] = Counter()
_STATS_LOCK = threading.Lock()

# DuckDB's, Spark's, Python's and the libraries' own words (none may reach a client)
TELLS = re.compile(
    r"Catalog Error|Binder Error|Parser Error|Conversion Error|Invalid Input Error|Out of Range Error|"
    r"Not implemented Error|INTERNAL Error|Dependency Error|Constraint Error|Serialization Error|"
    r"Invalid Error|Out of Memory Error|TransactionContext|duckdb|arg_max|arg_min|_null\b|"
    r"list_aggr|struct_pack|array_agg|string_agg|regexp_matches|strftime|epoch_ms|make_timestamp|"
    r"TIMESTAMPTZ|TIMESTAMP WITH TIME ZONE|\bHUGEINT\b|\bUBIGINT\b|\bVARCHAR\[\]|"
    r"Traceback|File \"|Exception|Error\(|NoneType|object has no attribute|not subscriptable|"
    r"unhashable|unsupported operand|takes \d+ positional|missing \d+ required|KeyError|TypeError|"
    r"ValueError|AttributeError|IndexError|AssertionError|RecursionError|ZeroDivisionError|"
    r"pyarrow|ArrowInvalid|ArrowNotImplemented|sqlglot|Token\(|TokenType\.|py4j|pyspark|java\.|"
    r"org\.apache|AnalysisException|deltalake|DeltaError|site-packages|\.py\b|<class |object at 0x",
)
KNOWN_CODES = frozenset(v for k, v in vars(Code).items() if k.isupper() and k != "INTERNAL")

DB = "fz"
TABLES = ("meters", "d1", "d2", "t")
NUMERIC = ("current", "voltage", "phase")
COLUMNS = ("ts", "current", "voltage", "phase", "note", "location", "groupid", "tbname")
AGGREGATES = ("count", "sum", "avg", "min", "max", "spread", "stddev", "first", "last", "last_row")
SCALAR_NUM = ("abs", "ceil", "floor", "round", "sqrt", "sin", "cos", "exp", "ln", "sign", "degrees")
SCALAR_STR = ("length", "char_length", "lower", "upper", "ltrim", "rtrim", "trim", "to_base64", "ascii")
UNKNOWN = (
    "percentile",
    "twa",
    "irate",
    "apercentile",
    "hyperloglog",
    "histogram",
    "elapsed",
    "mode",
    "nosuchfn",
    "list_aggr",
    "arg_max",
    "string_agg",
    "median",
    "quantile_cont",
    "regexp_matches",
    "epoch_ms",
    "strftime",
    "struct_pack",
    "array_agg",
    "read_csv_auto",
    "query",
    "getenv",
    "typeof",
)
WINDOWS = (
    "INTERVAL(5s)",
    "INTERVAL(10s) SLIDING(5s)",
    "INTERVAL(1m, 10s)",
    "SESSION(ts, 3s)",
    "STATE_WINDOW(voltage)",
    "EVENT_WINDOW START WITH voltage > 221 END WITH voltage < 221",
    "COUNT_WINDOW(3)",
    "COUNT_WINDOW(4, 2)",
)
FILLS = ("", "", "FILL(NULL)", "FILL(PREV)", "FILL(NEXT)", "FILL(LINEAR)", "FILL(VALUE, 0)", "FILL(NONE)")
LITERALS = (
    "0",
    "1",
    "-1",
    "2.5",
    "1e308",
    "-1.7976931348623157e309",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999999999999999999",
    "'a'",
    "'2024-01-01 00:00:05'",
    "NULL",
    "true",
    "false",
    "now",
    "now - 1h",
    "1704067205000",
    "''",
    "'白鹭'",
    "'\\x00'",
    "'it''s'",
    "'%'",
    "0x7f",
    "1d",
    "-0",
    "'1e5'",
    "'abc'",
)
KEYWORDS = (
    "SELECT",
    "FROM",
    "WHERE",
    "PARTITION",
    "BY",
    "GROUP",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "SLIMIT",
    "INTERVAL",
    "SLIDING",
    "SESSION",
    "STATE_WINDOW",
    "EVENT_WINDOW",
    "START",
    "WITH",
    "END",
    "COUNT_WINDOW",
    "FILL",
    "INSERT",
    "INTO",
    "VALUES",
    "USING",
    "TAGS",
    "CREATE",
    "TABLE",
    "STABLE",
    "DATABASE",
    "DROP",
    "SHOW",
    "DESCRIBE",
    "DELETE",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "LIKE",
    "MATCH",
    "BETWEEN",
    "IS",
    "NULL",
    "CAST",
    "UNION",
    "ALL",
    "DISTINCT",
    "JOIN",
    "ON",
    "HAVING",
    "ASC",
    "DESC",
    "*",
    ",",
    "(",
    ")",
    ";",
    "=",
    "<>",
    "+",
    "-",
    "/",
    "%",
    ".",
    "`",
    "'",
    '"',
    "?",
    "\\",
    "->",
    "::",
    "||",
)


# ---------------------------------------------------------------------- strategies


def _pick(xs: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(xs)


literal = _pick(LITERALS)
column = _pick(COLUMNS)
num_col = _pick(NUMERIC)
table = st.one_of(_pick(TABLES).map(lambda t: f"{DB}.{t}"), _pick(("meters", "d1", "t")))


@st.composite
def agg_expr(draw: Any) -> str:
    f = draw(_pick(AGGREGATES))
    if f == "count" and draw(st.booleans()):
        return "count(*)"
    arg = draw(st.one_of(num_col, num_col.map(lambda c: f"{c} * 2"), _pick(("ts", "note"))))
    return f"{f}({arg})"


@st.composite
def scalar_expr(draw: Any) -> str:
    if draw(st.booleans()):
        return f"{draw(_pick(SCALAR_NUM))}({draw(num_col)})"
    if draw(st.booleans()):
        return f"{draw(_pick(SCALAR_STR))}({draw(_pick(('note', 'location')))})"
    return draw(
        _pick(
            (
                "cast(voltage AS DOUBLE)",
                "cast(current AS BIGINT)",
                "concat(note, location)",
                "substr(location, 1, 3)",
                "timetruncate(ts, 1m)",
                "to_iso8601(ts)",
                "pow(current, 2)",
                "log(voltage, 10)",
                "mod(voltage, 7)",
                "to_unixtimestamp('2024-01-01 00:00:00')",
                "replace(note, 'a', 'b')",
                "greatest(current, phase)",
                "timediff(ts, now, 1s)",
                "position('a' IN note)",
                "concat_ws('-', note, location)",
                "voltage + current",
                "voltage % 3",
                "-current",
                "phase IS NULL",
                "note LIKE 'r%'",
            )
        )
    )


@st.composite
def condition(draw: Any) -> str:
    c = draw(_pick(NUMERIC))
    op = draw(_pick(("=", "<>", "<", "<=", ">", ">=")))
    parts = [f"{c} {op} {draw(_pick(('0', '10', '220.5', '221', '-1')))}"]
    if draw(st.booleans()):
        parts.append(
            draw(
                _pick(
                    (
                        "ts >= '2024-01-01 00:00:03'",
                        "ts < now",
                        "note IS NOT NULL",
                        "location LIKE 'C%'",
                        "groupid IN (2, 3)",
                        "voltage BETWEEN 219 AND 231",
                        "tbname = 'd1'",
                    )
                )
            )
        )
    return f" {draw(_pick(('AND', 'OR')))} ".join(parts)


@st.composite
def valid_select(draw: Any) -> str:
    """A query tdweb accepts (mostly: a few combinations are refused with TDengine's error)."""
    kind = draw(st.integers(0, 3))
    where = f" WHERE {draw(condition())}" if draw(st.booleans()) else ""
    src = draw(_pick(("meters", "d1", "d2")))
    if kind == 0:  # plain projection
        cols = draw(st.lists(st.one_of(column, scalar_expr()), min_size=1, max_size=3))
        order = draw(_pick(("", " ORDER BY ts", " ORDER BY ts DESC", " ORDER BY 1")))
        limit = draw(_pick(("", " LIMIT 3", " LIMIT 2 OFFSET 1", " LIMIT 0")))
        return f"SELECT {', '.join(cols)} FROM {DB}.{src}{where}{order}{limit}"
    if kind == 1:  # aggregate, maybe partitioned
        aggs = draw(st.lists(agg_expr(), min_size=1, max_size=3))
        part = draw(_pick(("", " PARTITION BY tbname", " PARTITION BY groupid", " GROUP BY location")))
        head = "tbname, " if part == " PARTITION BY tbname" else ""
        return f"SELECT {head}{', '.join(aggs)} FROM {DB}.{src}{where}{part}"
    # window query
    aggs = draw(st.lists(agg_expr(), min_size=1, max_size=3))
    win = draw(_pick(WINDOWS))
    part = " PARTITION BY tbname" if src == "meters" and draw(st.booleans()) else ""
    fill = draw(_pick(FILLS)) if win.startswith("INTERVAL") else ""
    pseudo = draw(_pick(("_wstart, ", "_wstart, _wend, ", "_wduration, ", "")))
    order = draw(_pick(("", " ORDER BY _wstart", " LIMIT 2")))
    source = f"{DB}.{src}" if part else f"{DB}.d1"
    return f"SELECT {pseudo}{', '.join(aggs)} FROM {source}{where}{part} {win} {fill}{order}"


meta_stmt = _pick(
    (
        "SHOW DATABASES",
        f"SHOW {DB}.STABLES",
        f"SHOW {DB}.TABLES",
        f"DESCRIBE {DB}.meters",
        f"DESCRIBE {DB}.t",
        "SHOW STREAMS",
        f"SHOW CREATE TABLE {DB}.meters",
        "SELECT server_status()",
        "SELECT database()",
        "SELECT server_version()",
        "SELECT client_version()",
        "SHOW FUNCTIONS",
        "SHOW VARIABLES",
        "SHOW USERS",
        f"SELECT * FROM information_schema.ins_tables WHERE db_name = '{DB}'",
        "SELECT * FROM information_schema.ins_databases",
        f"USE {DB}",
        "SHOW DNODES",
        "SHOW TABLE TAGS",
    )
)


@st.composite
def invalid_select(draw: Any) -> str:
    """Queries TDengine refuses: unknown functions, wrong argument types, misplaced clauses."""
    k = draw(st.integers(0, 5))
    if k == 0:  # unknown function
        f = draw(_pick(UNKNOWN))
        args = draw(st.lists(st.one_of(column, literal), min_size=0, max_size=3))
        return f"SELECT {f}({', '.join(args)}) FROM {draw(table)}"
    if k == 1:  # wrong argument type / count
        f = draw(
            st.one_of(
                _pick(AGGREGATES),
                _pick(SCALAR_NUM),
                _pick(SCALAR_STR),
                _pick(("substr", "pow", "timetruncate", "cast")),
            )
        )
        args = draw(st.lists(st.one_of(column, literal, st.just("*")), min_size=0, max_size=4))
        return f"SELECT {f}({', '.join(args)}) FROM {draw(table)}"
    if k == 2:  # clauses in the wrong order or place
        clauses = [
            f"WHERE {draw(condition())}",
            "PARTITION BY tbname",
            draw(_pick(WINDOWS)),
            "ORDER BY ts",
            "LIMIT 2",
            "FILL(PREV)",
            "GROUP BY groupid",
            "SLIMIT 1",
            "HAVING count(*) > 1",
        ]
        chosen = draw(st.permutations(clauses))[: draw(st.integers(2, 5))]
        return f"SELECT count(*) FROM {draw(table)} {' '.join(chosen)}"
    if k == 3:  # misuse: aggregates where they do not belong, nesting, windows without aggregates
        return draw(
            _pick(
                (
                    f"SELECT voltage FROM {DB}.d1 WHERE count(*) > 1",
                    f"SELECT sum(avg(voltage)) FROM {DB}.d1",
                    f"SELECT voltage FROM {DB}.d1 INTERVAL(5s)",
                    f"SELECT count(*) FROM {DB}.d1 SESSION(voltage, 1s)",
                    f"SELECT count(*) FROM {DB}.d1 STATE_WINDOW(current)",
                    f"SELECT count(*) FROM {DB}.d1 INTERVAL(0s)",
                    f"SELECT count(*) FROM {DB}.d1 COUNT_WINDOW(0)",
                    f"SELECT count(*) FROM {DB}.d1 INTERVAL(-5s)",
                    f"SELECT count(*) FROM {DB}.d1 INTERVAL(5x)",
                    f"SELECT note, count(*) FROM {DB}.meters",
                    f"SELECT * FROM {DB}.d1 ORDER BY nope",
                    f"SELECT nope FROM {DB}.d1",
                    f"SELECT voltage FROM {DB}.nope",
                    "SELECT voltage FROM nope.d1",
                    f"SELECT avg(note) FROM {DB}.d1",
                    f"SELECT sum(ts) FROM {DB}.d1",
                    f"SELECT abs(note) FROM {DB}.d1",
                    f"SELECT upper(voltage) FROM {DB}.d1",
                    f"SELECT substr(note, 'x') FROM {DB}.d1",
                    f"SELECT pow(note, location) FROM {DB}.d1",
                    f"SELECT voltage + note FROM {DB}.d1",
                    f"SELECT * FROM {DB}.d1 WHERE note > 5",
                    f"SELECT * FROM {DB}.d1 WHERE ts > 'not a time'",
                    f"SELECT cast(note AS INT) FROM {DB}.d1",
                    f"SELECT cast(voltage AS NOSUCHTYPE) FROM {DB}.d1",
                    f"SELECT timetruncate(note, 1m) FROM {DB}.d1",
                    f"SELECT * FROM {DB}.d1 LIMIT -1",
                    f"SELECT * FROM {DB}.d1 LIMIT 'a'",
                    f"SELECT _wstart FROM {DB}.d1",
                    f"SELECT count(*) FROM {DB}.d1 FILL(PREV)",
                    f"SELECT first(*) FROM {DB}.d1",
                    f"SELECT count(DISTINCT voltage) FROM {DB}.d1",
                    f"SELECT * FROM {DB}.d1 WHERE voltage IN ()",
                    f"SELECT * FROM {DB}.d1 JOIN {DB}.d2",
                    f"SELECT log(voltage, 0) FROM {DB}.d1",
                    f"SELECT 1/0 FROM {DB}.d1",
                    f"SELECT {'9' * 60} FROM {DB}.d1",
                    f"SELECT voltage * 1e308 * 1e308 FROM {DB}.d1",
                    f"SELECT cast(99999999999 AS INT) FROM {DB}.d1",
                    f"SELECT cast('abc' AS TIMESTAMP) FROM {DB}.d1",
                    f"SELECT to_timestamp('x', 'yyyy') FROM {DB}.d1",
                    f"SELECT repeat(note, 1000) FROM {DB}.d1",
                )
            )
        )
    if k == 4:  # a valid query cut short
        s = draw(valid_select())
        return s[: draw(st.integers(0, max(0, len(s) - 1)))]
    # a valid query with a token replaced by something else
    s = draw(valid_select())
    words = s.split(" ")
    i = draw(st.integers(0, len(words) - 1))
    words[i] = draw(st.one_of(_pick(KEYWORDS), literal, _pick(UNKNOWN).map(lambda f: f + "(voltage)")))
    return " ".join(words)


@st.composite
def write_stmt(draw: Any) -> tuple[str, str]:
    """``(statement, "write" or "write?")``: INSERTs, mostly invalid ones, and refused DDL."""
    k = draw(st.integers(0, 9))
    ts = 1704067300000 + draw(st.integers(0, 10**6))
    if k == 0:  # a valid insert
        return f"INSERT INTO {DB}.t VALUES ({ts}, {draw(st.integers(-100, 100))}, 'ok')", "write"
    bad_values = draw(
        _pick(
            (
                f"({ts}, 'abc', 'x')",
                f"({ts}, 1)",
                f"({ts}, 1, 'x', 4)",
                "('not a time', 1, 'x')",
                f"({ts}, 99999999999999999999, 'x')",
                f"({ts}, 1, '{'x' * 40}')",
                "(NULL, 1, 'x')",
                f"({ts}, 1.5e400, 'x')",
                f"({ts}, 1, x)",
                f"({ts}, percentile(1), 'x')",
                f"({ts}, 1, 'x'",
                f"({ts}, 1, 'x') ({ts}, 'bad', 'y')",
                f"({ts}, now(), 'x')",
                "()",
                f"({ts}, 2147483648, 'x')",
            )
        )
    )
    if k <= 6:
        return f"INSERT INTO {DB}.t VALUES {bad_values}", "write?"
    return (
        draw(
            _pick(
                (
                    f"INSERT INTO {DB}.nope VALUES ({ts}, 1)",
                    f"INSERT INTO {DB}.d1 VALUES ({ts}, 'x', 1, 2, 'n')",
                    f"INSERT INTO {DB}.d1 USING {DB}.meters TAGS ('x') VALUES ({ts}, 1, 2, 3, 'n')",
                    f"INSERT INTO {DB}.meters VALUES ({ts}, 1, 2, 3, 'n')",
                    f"CREATE TABLE {DB}.t (ts TIMESTAMP, v INT)",
                    f"CREATE STABLE {DB}.meters (ts TIMESTAMP, v INT) TAGS (g INT)",
                    f"DROP TABLE {DB}.nope",
                    f"CREATE TABLE {DB}.bad (v INT, ts TIMESTAMP)",
                    f"CREATE TABLE {DB}.bad (ts TIMESTAMP, v NOSUCH)",
                    f"DELETE FROM {DB}.t WHERE v = percentile(v)",
                    f"DELETE FROM {DB}.nope",
                    f"CREATE DATABASE {DB}",
                    f"INSERT INTO {DB}.t SELECT * FROM {DB}.nope",
                    f"ALTER TABLE {DB}.t ADD COLUMN v NOSUCH",
                    f"CREATE TABLE {DB}.bad USING {DB}.nope TAGS (1)",
                )
            )
        ),
        "write?",
    )


soup = st.lists(st.one_of(_pick(KEYWORDS), literal, column, _pick(UNKNOWN)), min_size=1, max_size=14).map(
    " ".join
)
raw = st.one_of(
    st.text(max_size=60),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40).map(lambda s: f"SELECT '{s}'"),
    st.text(alphabet="'\"`()\\;,", max_size=20).map(lambda s: f"SELECT {s} FROM {DB}.d1"),
    st.integers(min_value=-(10**40), max_value=10**40).map(lambda n: f"SELECT {n} FROM {DB}.d1 LIMIT {n}"),
    st.floats(allow_nan=True, allow_infinity=True).map(
        lambda x: f"SELECT * FROM {DB}.d1 WHERE current > {x}"
    ),
)


# ---------------------------------------------------------------------- the checks


def _state(lake: Any) -> tuple[Any, ...]:
    """What a refused statement must not change: the catalog's version and each table's Delta
    version (cheap: no data is read)."""
    return (lake.catalog.version(), *(lake.version(DB, s) for s in ("meters", "t")))


def _check(rest: Rest, sql: str, problems: list[str]) -> dict[str, Any] | None:
    """Send ``sql``; record every broken rule in ``problems``; return the answer (None for 5xx)."""
    r = rest.client.post(
        "/rest/sql", data=sql.encode(), content_type="text/plain", HTTP_AUTHORIZATION=rest.auth
    )
    with _STATS_LOCK:
        STATS["sent"] += 1
    if r.status_code >= 500:
        problems.append(f"HTTP {r.status_code} for {sql!r}")
        return None
    if r.status_code != 200:  # e.g. 401: the statement was never run
        problems.append(f"HTTP {r.status_code} for {sql!r}: {r.content[:200]!r}")
    body = json.loads(r.content)
    if body.get("code") == 0:
        with _STATS_LOCK:
            STATS["ok"] += 1
        return body
    with _STATS_LOCK:
        STATS["refused"] += 1
    if set(body) != {"code", "desc"} or not isinstance(body["desc"], str):
        problems.append(f"not TDengine's error shape for {sql!r}: {body}")
        return body
    if body["code"] not in KNOWN_CODES:
        problems.append(f"code {body['code']:#06x} (not a mapped TDengine code) for {sql!r}: {body['desc']}")
    shown = re.sub(r'near "(?:[^"\\]|\\.)*"\)?$', "", body["desc"])  # the user's own text quoted back
    leaks = [m.group(0) for m in TELLS.finditer(shown) if m.group(0).lower() not in sql.lower()]
    if leaks:
        problems.append(f"internal text {leaks} for {sql!r}: {body['desc']}")
    return body


def _run(rest: Rest, lake: Any, statements: list[tuple[str, str]], problems: list[str]) -> None:
    """Send a batch of ``(statement, effect)``. Effects: ``read`` (must change no data),
    ``write`` (a valid write), ``write?`` (a write that should be refused: the state is compared
    around it), ``any`` (text of unknown effect). The state after the batch must equal the state
    before unless a ``write`` or ``any`` statement was accepted. Reads are sent two at a time
    (the web server runs each request in its own thread as well); the others one by one."""
    before = _state(lake)
    changed = False
    reads = [sql for sql, effect in statements if effect == "read"]
    list(_POOL.map(lambda sql: _check(_client(rest), sql, problems), reads))
    for sql, effect in statements:
        if effect == "read":
            continue
        mark = _state(lake) if effect == "write?" else None
        body = _check(rest, sql, problems)
        if body is not None and body.get("code") == 0:
            changed = True
            continue
        if mark is not None and _state(lake) != mark:
            problems.append(f"refused statement changed stored data: {sql!r}")
    if not changed and _state(lake) != before:
        problems.append(f"a batch of refused or read-only statements changed stored data: {statements}")


_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fuzz-rest")
_CLIENTS = threading.local()


def _client(rest: Rest) -> Rest:
    """This thread's own test client (a Django test ``Client`` is not shared between threads)."""
    c = getattr(_CLIENTS, "rest", None)
    if c is None or c.auth != rest.auth:
        c = _CLIENTS.rest = Rest(Client(), rest.auth)
    return c


def _fuzz(rest: Rest, lake: Any, family: st.SearchStrategy[list[tuple[str, str]]], name: str) -> None:
    """Run ``EXAMPLES[name]`` (times ``SCALE``) Hypothesis examples of ``PER_EXAMPLE`` statements
    each, collecting every problem (no shrinking: the list names each offending statement),
    then fail listing them."""
    sent_before = STATS["sent"]
    problems: list[str] = []
    examples = max(1, int(EXAMPLES[name] * SCALE))

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(family)
    def run(statements: list[tuple[str, str]]) -> None:
        _run(rest, lake, statements, problems)

    ok_before = STATS["ok"]
    run()
    # the statements reached the SQL layer: a family that generates valid statements had some run
    assert name in ("invalid", "soup") or STATS["ok"] - ok_before >= examples, dict(STATS)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])
    assert STATS["sent"] - sent_before >= examples * PER_EXAMPLE


def _batch(*parts: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[list[tuple[str, str]]]:
    return st.lists(st.one_of(*parts), min_size=PER_EXAMPLE, max_size=PER_EXAMPLE)


def _read(s: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    """Statements that must not change data (SHOW, DESCRIBE, USE, SELECT)."""
    return s.map(lambda x: (x, "read"))


def _any(s: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    """Text of unknown effect: if accepted it may have changed data."""
    return s.map(lambda x: (x, "any"))


@pytest.fixture
def world(admin, lake, client) -> tuple[Rest, Any]:  # type: ignore[no-untyped-def]
    """Database ``fz``: supertable ``meters`` (two subtables x 12 rows, a VARCHAR column with
    NULLs), normal table ``t``; the REST client signed in as ``root``."""
    root_sql(f"CREATE DATABASE {DB}")
    root_sql(
        f"CREATE STABLE {DB}.meters (ts TIMESTAMP, current FLOAT, voltage INT, phase FLOAT, "
        "note VARCHAR(16)) TAGS (location VARCHAR(32), groupid INT)"
    )
    root_sql(f"CREATE TABLE {DB}.t (ts TIMESTAMP, v INT, s VARCHAR(8))")
    for name, loc, g in (("d1", "California.SanFrancisco", 2), ("d2", "California.LosAngeles", 3)):
        rows = " ".join(
            f"({1704067200000 + i * 1000 + g}, {10 + i * 0.5 + g}, {218 + (i * 7 + g) % 6}, "
            f"{'NULL' if i % 5 == 0 else i / 10}, {'NULL' if i % 4 == 1 else repr('r' + str(i % 3))})"
            for i in range(12)
        )
        root_sql(f"INSERT INTO {DB}.{name} USING {DB}.meters TAGS ('{loc}', {g}) VALUES {rows}")
    root_sql(f"INSERT INTO {DB}.t VALUES (1704067200000, 1, 'a') (1704067201000, NULL, 'b')")
    return Rest(client, basic()), lake


# ---------------------------------------------------------------------- the tests


def test_fuzz_valid_queries(world) -> None:
    """Mostly valid queries of the catalogue's functions and every window clause."""
    _fuzz(*world, _batch(_read(valid_select()), _read(meta_stmt)), "valid")


def test_fuzz_invalid_queries(world) -> None:
    """Unknown functions, wrong argument types, misplaced clauses, cut-short statements."""
    _fuzz(*world, _batch(_read(invalid_select())), "invalid")


def test_fuzz_writes(world) -> None:
    """INSERTs (a few valid, most refused) between queries: a refused write changes nothing."""
    _fuzz(*world, _batch(write_stmt(), _read(valid_select()), _read(invalid_select())), "writes")


def test_fuzz_soup_and_raw_text(world) -> None:
    """Token soup, raw unicode, bad quotes, huge numbers, NaN and infinities."""
    _fuzz(*world, _batch(_any(soup), _any(raw)), "soup")


def test_fuzz_counts() -> None:
    """Report the figures of the run (``pytest -s``); the per-test assertions guarantee the count."""
    print(f"\nfuzz_rest: {dict(STATS)} at scale {SCALE}")
    assert PER_EXAMPLE * sum(EXAMPLES.values()) >= 10_000
