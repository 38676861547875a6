"""Bounded work for SQL statements: memory, time, result size, statements per request, nesting.

One statement must never take the service down (docs/decisions.md, "SQL sandbox and limits"):
DuckDB runs with a memory limit and no spilling, a statement is interrupted at its deadline, a
result is fetched batch by batch and refused as soon as it passes a cap, a request holds at most
so many statements, and expressions nest at most so deep (checked on the tokens, before
``sqlglot``'s recursive descent could hit Python's recursion limit).

The web process configures the limits once from Django settings (``TDWEB_SQL_*``, see
``tdweb/settings.py``) with :func:`configure_limits`; every other process (stream workers, the
shell, tests) runs with the defaults of :class:`Limits`. Nothing here imports Django.

Errors use TDengine's codes (``taoserror.h``): memory ``0x073A`` (Query memory exhausted),
timeout ``0x012C`` (Operation timeout), result size ``0x0711`` (Result set too large, 2.x),
statements and text length ``0x0219`` (SQL statement too long); each message names the limit and
the setting that raises it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from spark_workers.errors import Code, SqlError

GIB = 1 << 30
MIB = 1 << 20
MAX_TIMEOUT_S = 300.0
# sqlglot's recursive descent needs ~28 Python frames per nesting level (measured on function
# calls nested 64 deep: 1,814 frames; parentheses 1,640; CASE 1,515), plus the caller's stack.
# Python's default recursion limit (1,000) leaves room for 28 levels of parentheses below 250
# frames of a caller's stack (a web request's is about 100); the limit is not raised: doing so
# makes CPython 3.11.7 fail later compile() calls ("AST constructor recursion depth mismatch",
# CPython gh-106905, fixed in 3.11.8) — docs/decisions.md "SQL sandbox and limits".
MAX_DEPTH_LIMIT = 28


def machine_memory_bytes() -> int:
    """Physical memory of the machine, or the cgroup (container) limit when that is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def default_memory_limit() -> int:
    """Per-statement DuckDB memory: min(4 GiB, 25 % of the machine's memory), in bytes."""
    return min(4 * GIB, machine_memory_bytes() // 4)


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|bytes?|kb|kib|mb|mib|gb|gib|tb|tib)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": 1000, "kib": 1 << 10, "mb": 1000**2, "mib": MIB}
_UNITS |= {"gb": 1000**3, "gib": GIB, "tb": 1000**4, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of a size written like DuckDB's settings: ``"512MB"``, ``"4GiB"``, ``"1073741824"``.

    Raises:
        ValueError: not a size.
    """
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (write e.g. 512MiB or 4GiB)")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])


def format_size(n: int) -> str:
    """``4.0 GiB``, ``512.0 MiB``, ``64.0 KiB`` or ``100 bytes``."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class Limits:
    """What one SQL statement may use (settings ``TDWEB_SQL_*``; defaults in brackets).

    Attributes:
        memory_limit_bytes: DuckDB ``memory_limit`` of each statement's database
            (``TDWEB_SQL_MEMORY_LIMIT``) [min(4 GiB, 25 % of RAM)]; nothing spills to disk.
        timeout_s: wall time of a statement, at most 300 (``TDWEB_SQL_TIMEOUT_S``) [60].
        max_rows: rows of a result (``TDWEB_SQL_MAX_ROWS``) [1,000,000].
        max_result_bytes: size of a result as the REST answer writes it (strings their bytes,
            timestamps 32 characters, other values 24) (``TDWEB_SQL_MAX_RESULT_BYTES``) [64 MiB].
        max_window_rows: rows a window query feeds from DuckDB into the window engine
            (``TDWEB_SQL_MAX_WINDOW_ROWS``) [10,000,000]; their Arrow size is also capped at
            ``memory_limit_bytes``.
        max_statements: statements in one request (``TDWEB_SQL_MAX_STATEMENTS``) [100].
        max_depth: nesting of parentheses, CASE and unary operators (``TDWEB_SQL_MAX_DEPTH``) [24,
            at most 28: what Python's default recursion limit leaves room for].
        max_sql_chars: characters of one request's SQL text (``TDWEB_SQL_MAX_LENGTH``) [1 MiB,
            TDengine's ``maxSQLLength``].
        concurrency: statements running DuckDB at once in a process (``TDWEB_SQL_CONCURRENCY``)
            [2]; DuckDB's memory is at most ``concurrency * memory_limit_bytes``.

    Raises:
        ValueError: a limit is not positive, the timeout is above 300 s or the depth above 28.
    """

    memory_limit_bytes: int = field(default_factory=default_memory_limit)
    timeout_s: float = 60.0
    max_rows: int = 1_000_000
    max_result_bytes: int = 64 * MIB
    max_window_rows: int = 10_000_000
    max_statements: int = 100
    max_depth: int = 24
    max_sql_chars: int = 1 << 20
    concurrency: int = 2

    def __post_init__(self) -> None:
        for name in (
            "memory_limit_bytes",
            "max_rows",
            "max_result_bytes",
            "max_window_rows",
            "max_statements",
            "max_depth",
            "max_sql_chars",
            "concurrency",
        ):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"SQL limit {name} must be positive")
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"TDWEB_SQL_TIMEOUT_S must be above 0 and at most {MAX_TIMEOUT_S:g} s")
        if self.max_depth > MAX_DEPTH_LIMIT:
            raise ValueError(f"TDWEB_SQL_MAX_DEPTH must be at most {MAX_DEPTH_LIMIT}")

    @classmethod
    def from_settings(
        cls,
        *,
        memory_limit: str = "",
        timeout_s: float = 60.0,
        max_rows: int = 1_000_000,
        max_result_bytes: int = 64 * MIB,
        max_window_rows: int = 10_000_000,
        max_statements: int = 100,
        max_depth: int = 24,
        max_sql_chars: int = 1 << 20,
        concurrency: int = 2,
    ) -> Limits:
        """Limits from the settings' values (``memory_limit`` as text; empty = the default)."""
        return cls(
            memory_limit_bytes=parse_size(memory_limit) if memory_limit.strip() else default_memory_limit(),
            timeout_s=float(timeout_s),
            max_rows=int(max_rows),
            max_result_bytes=int(max_result_bytes),
            max_window_rows=int(max_window_rows),
            max_statements=int(max_statements),
            max_depth=int(max_depth),
            max_sql_chars=int(max_sql_chars),
            concurrency=int(concurrency),
        )


_lock = threading.Lock()
_limits = Limits()
_slots = threading.BoundedSemaphore(_limits.concurrency)


def configure_limits(limits: Limits) -> None:
    """Set the process's limits (the web process, from settings; tests). Statements already
    running keep the limits they started with."""
    global _limits, _slots
    with _lock:
        if limits == _limits:
            return
        if limits.concurrency != _limits.concurrency:
            _slots = threading.BoundedSemaphore(limits.concurrency)
        _limits = limits


def current_limits() -> Limits:
    """The process's limits (defaults until :func:`configure_limits` is called)."""
    return _limits


# ---------------------------------------------------------------------- errors


def timeout_error(limits: Limits, sql: str | None = None) -> SqlError:
    """``0x012C`` Operation timeout, naming the limit and its setting."""
    return SqlError(
        f"Operation timeout: the statement ran longer than {limits.timeout_s:g} s (TDWEB_SQL_TIMEOUT_S)",
        sql=sql,
        code=Code.TIMEOUT,
    )


def memory_error(limits: Limits, sql: str | None = None) -> SqlError:
    """``0x073A`` Query memory exhausted, naming the limit and its setting."""
    return SqlError(
        f"Query memory exhausted: the statement needs more than {format_size(limits.memory_limit_bytes)} "
        "(TDWEB_SQL_MEMORY_LIMIT)",
        sql=sql,
        code=Code.QUERY_MEM_EXHAUSTED,
    )


# ---------------------------------------------------------------------- a statement's budget


@dataclass(frozen=True)
class Budget:
    """The limits and deadline of the statement running in this context.

    Attributes:
        limits: the limits it started with.
        deadline: ``time.monotonic()`` value at which it is interrupted.
    """

    limits: Limits
    deadline: float

    def remaining_s(self) -> float:
        """Seconds left (negative once the deadline has passed)."""
        return self.deadline - time.monotonic()

    def check(self, sql: str | None = None) -> None:
        """Raise the timeout error once the deadline has passed (between the Python stages of a
        window query)."""
        if self.remaining_s() <= 0:
            raise timeout_error(self.limits, sql)


_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("tdweb_sql_budget", default=None)


def active_budget() -> Budget | None:
    """The budget of the statement running in this context, or None (stream micro-batches)."""
    return _budget.get()


@contextlib.contextmanager
def statement_budget(sql: str | None = None) -> Iterator[Budget]:
    """Run a statement within the limits: take one of ``concurrency`` slots (waiting at most the
    timeout) and set its deadline. Nested use shares the outer budget.

    Raises:
        SqlError: ``0x012C`` when no slot frees up within the timeout.
    """
    outer = _budget.get()
    if outer is not None:
        yield outer
        return
    limits = _limits
    slots = _slots
    if not slots.acquire(timeout=limits.timeout_s):
        raise SqlError(
            f"Operation timeout: {limits.concurrency} statements were running for {limits.timeout_s:g} s "
            "(TDWEB_SQL_CONCURRENCY, TDWEB_SQL_TIMEOUT_S); try again later",
            sql=sql,
            code=Code.TIMEOUT,
        )
    budget = Budget(limits, time.monotonic() + limits.timeout_s)
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)
        slots.release()
