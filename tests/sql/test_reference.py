"""docs/sql.md and the SQL reference catalogue (spark_workers/sql/reference.py) against the code.

(a) docs/sql.md is the generator's output; (b) every function marked supported / difference runs
in every context its entry claims (its probe statement through one DuckDB-backed executor over the
probe tables; streams are created in a memory registry, no Spark), and every supported statement
form runs, in the catalogue's order, in a scratch database; (c) every refusal fails with the code
it names and a message naming what is refused; (d) every function name the implementation
recognises is in the catalogue. The Where column is exact both ways (a context an entry leaves out
is refused today), and every noted difference is checked against its behaviour.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_workers.access import MemoryUserDirectory
from spark_workers.engine.aggregates import AGGREGATES
from spark_workers.errors import TdError
from spark_workers.lake.store import Lake
from spark_workers.query.system_functions import SYSTEM_FUNCTIONS
from spark_workers.sql import reference, sandbox
from spark_workers.sql.functions import FUNCTIONS
from spark_workers.sql.reference import CONTEXTS, ENTRIES, Entry, Refused
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "sql.md"
FUNCTIONS_AND_COLUMNS = [e for e in ENTRIES if not e.statement]
STATEMENTS = [e for e in ENTRIES if e.statement]


def _executor(tmp: Path) -> Executor:
    ex = Executor(Lake(tmp / "lake"), MemoryRegistry(), users=MemoryUserDirectory())
    for sql in reference.PROBE_SETUP:
        ex.execute_one(sql)
    return ex


@pytest.fixture(scope="module")
def ex(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    return _executor(tmp_path_factory.mktemp("reference"))


def _squash(text: str) -> str:
    return re.sub(r"[\s_]", "", text).lower()


def _refusal(ex: Executor, entry: Entry, sql: str) -> TdError:
    try:
        ex.execute_one(sql)
    except TdError as e:
        return e
    pytest.fail(f"{entry.name} is marked refused but {sql!r} runs: flip its entry to the contexts it runs in")


# ---------------------------------------------------------------- (a) the page is generated


def test_docs_sql_md_is_the_generators_output() -> None:
    assert DOCS.read_text() == reference.render_markdown(), (
        "docs/sql.md differs from the catalogue: run `make sql-docs`"
    )


def test_the_catalogue_is_well_formed() -> None:
    names = [(e.statement, e.name.lower()) for e in ENTRIES]
    assert len(names) == len(set(names)), "an entry is listed twice"
    cats = {k for k, _ in reference.FUNCTION_CATEGORIES} | {k for k, _ in reference.STATEMENT_CATEGORIES}
    for e in ENTRIES:
        assert e.category in cats, e
        assert set(e.contexts) <= set(CONTEXTS), e
        assert isinstance(e.where, Refused) or e.contexts, f"{e.name}: supported nowhere"
        # a statement runs ad hoc, and in another context only with its own probe there
        assert not e.statement or set(e.contexts) <= {"A", *e.probes}, e
    counts = reference.counts()
    assert sum(counts.values()) == len(ENTRIES)
    assert f"{counts['refused']} refused" in reference.render_markdown()


# ------------------------------------------------------- (b) supported entries really run


@pytest.mark.parametrize(
    ("entry", "ctx", "n"),
    [
        pytest.param(e, c, i * 4 + j, id=f"{e.name}-{CONTEXTS[c]}")
        for i, e in enumerate(FUNCTIONS_AND_COLUMNS)
        for j, c in enumerate(e.contexts)
    ],
)
def test_function_runs_where_its_entry_says(ex: Executor, entry: Entry, ctx: str, n: int) -> None:
    sql = entry.probe_for(ctx, n)
    try:
        ex.execute_one(sql)
    except TdError as e:
        pytest.fail(f"{entry.name} is marked {entry.status} in {CONTEXTS[ctx]}, but {sql!r} fails: {e.desc}")


def _statement_problem(ex: Executor, e: Entry) -> str | None:
    """What is wrong with a statement entry's status (None: nothing)."""
    *setup, form = e.statements()
    for sql in setup:
        ex.execute_one(sql)
    try:
        ex.execute_one(form)
    except TdError as err:
        if not isinstance(e.where, Refused):
            return f"{e.name}: marked {e.status} but {form!r} fails: {err.desc}"
        if err.code != e.where.code:
            return f"{e.name}: refused with {err.code:#06x}, the catalogue says {e.where.code:#06x}"
        if e.where.named and _squash(e.token) not in _squash(err.desc):
            return f"{e.name}: the refusal {err.desc!r} does not name {e.token!r}"
        return None
    if isinstance(e.where, Refused):
        return f"{e.name}: marked refused but {form!r} runs (flip it to supported)"
    return None


@pytest.mark.parametrize(
    ("entry", "ctx", "n"),
    [
        pytest.param(e, c, 100_000 + i * 4 + j, id=f"{e.name}-{CONTEXTS[c]}")
        for i, e in enumerate(STATEMENTS)
        for j, c in enumerate(e.contexts)
        if c != "A"
    ],
)
def test_statement_runs_in_its_other_contexts(ex: Executor, entry: Entry, ctx: str, n: int) -> None:
    """A statement form an entry says also runs in a stream (the joins in a 3.3.7 computation):
    its probe there creates the stream."""
    sql = entry.probe_for(ctx, n)
    try:
        ex.execute_one(sql)
    except TdError as e:
        pytest.fail(f"{entry.name} is marked {entry.status} in {CONTEXTS[ctx]}, but {sql!r} fails: {e.desc}")


def test_statement_forms_run_in_order_and_refusals_name_their_code(tmp_path: Path) -> None:
    """Statements run in the catalogue's order (each may use what the ones before created);
    a refused form's setup statements must run and the form itself must fail with its code."""
    ex = _executor(tmp_path)
    problems = [p for p in (_statement_problem(ex, e) for e in STATEMENTS) if p]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("entry", "ctx", "n"),
    [
        pytest.param(e, c, 2000 + i * 4 + j, id=f"{e.name}-{CONTEXTS[c]}")
        for i, e in enumerate(FUNCTIONS_AND_COLUMNS)
        for j, c in enumerate(e.probes or CONTEXTS)
        if c not in e.contexts
    ],
)
def test_function_fails_where_its_entry_does_not_say(ex: Executor, entry: Entry, ctx: str, n: int) -> None:
    """The Where column is exact both ways: a context it leaves out is refused today (when that
    changes, add the context to the entry)."""
    sql = entry.probe_for(ctx, n)
    try:
        ex.execute_one(sql)
    except TdError:
        return
    pytest.fail(f"{entry.name} runs in {CONTEXTS[ctx]} ({sql!r}): add {ctx!r} to its entry")


# ------------------------------------------------------------- (c) refusals name their code


@pytest.mark.parametrize(
    ("entry", "n"),
    [
        pytest.param(e, 1000 + i, id=e.name)
        for i, e in enumerate(FUNCTIONS_AND_COLUMNS)
        if isinstance(e.where, Refused)
    ],
)
def test_refused_function_fails_with_its_code_naming_it(ex: Executor, entry: Entry, n: int) -> None:
    assert isinstance(entry.where, Refused)
    err = _refusal(ex, entry, entry.probe_for(entry.refusal_ctx, n))
    assert err.code == entry.where.code, f"{entry.name}: {err.code:#06x} {err.desc}"
    if entry.where.named:
        assert _squash(entry.token) in _squash(err.desc), err.desc


# --------------------------------------------------------- (d) every known name is listed


def test_every_function_name_the_implementation_knows_is_in_the_catalogue() -> None:
    listed = {_squash(n) for e in ENTRIES if not e.statement for n in (e.name, *e.aliases)}
    known = (
        set(FUNCTIONS)
        | set(AGGREGATES)
        | sandbox.STREAM_FORBIDDEN
        | sandbox.TDENGINE_NOT_IMPLEMENTED
        | sandbox.SESSION_FUNCTIONS
        | {f"{name}()" for name in sandbox.EKUIPER_PSEUDO_FUNCTIONS}
        | set(SYSTEM_FUNCTIONS)
    )
    missing = sorted(name for name in known if _squash(name) not in listed)
    assert not missing, f"functions the code knows but docs/sql.md does not list: {missing}"


# ------------------------------------------------- differences: the noted behaviour holds

# entry name -> a statement showing the difference and the error code it gets (None: it runs
# and answers NULL, where TDengine answers a value or an error)
DIFFERENCES: dict[str, tuple[str, int | None]] = {
    "RAND": ("select rand(1) from t", 0x0100),
    "MAX": ("select _wstart, max(s) from t interval(5s)", 0x2800),
    "MIN": ("select _wstart, min(s) from t interval(5s)", 0x2800),
    "CAST": ("select cast('abc' as int) from t limit 1", None),
    "TO_TIMESTAMP": ("select to_timestamp('x', 'yyyy') from t limit 1", None),
    "TRIM": ("select trim(leading 'ab' from 'abab') from t limit 1", None),
    "TIMETRUNCATE": ("select timetruncate(-1500, 1s) from t limit 1", None),
    "Subquery in FROM": ("select x from (select v * 2 as x from t)", 0x2602),
    "SHOW VIEWS": ("show ref.views", 0x2600),
}
_DIFFERENT_VALUES = {
    "CAST": None,  # TDengine: 0
    "TO_TIMESTAMP": None,  # TDengine: an error
    "TRIM": "",  # TDengine 3.3: 'ab'
    "TIMETRUNCATE": -2000,  # floored: -1500 ms -> -2000 ms (TDengine: -1000)
}


def test_every_difference_has_a_check() -> None:
    noted = {e.name for e in ENTRIES if e.status == reference.DIFFERENCE}
    assert noted == set(DIFFERENCES), "add the new difference's check to DIFFERENCES (or drop the old one)"


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_noted_difference_holds(ex: Executor, name: str) -> None:
    sql, code = DIFFERENCES[name]
    if code is not None:
        assert _refusal(ex, next(e for e in ENTRIES if e.name == name), sql).code == code
        return
    value = ex.execute_one(sql).rows[0][0]
    if name == "TIMETRUNCATE":  # a TIMESTAMP: compare epoch ms
        value = round(value.timestamp() * 1000) if hasattr(value, "timestamp") else value
    assert value == _DIFFERENT_VALUES[name], (name, value)
