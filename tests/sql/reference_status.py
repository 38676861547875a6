"""What the SQL reference's entries do today, next to what spark_workers/sql/reference.py says:
``PYTHONPATH=. python -m tests.sql.reference_status`` prints one line per entry whose contexts or
refusal code differ from the catalogue (the line to change), e.g.

    PERCENTILE: catalogue refused 0x0100, observed "AW" (L 0x2800, C 0x0100)

then ``make sql-docs``. The same probes as tests/sql/test_reference.py (one DuckDB-backed executor,
streams in a memory registry, no Spark); statements run in the catalogue's order.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from spark_workers.access import MemoryUserDirectory
from spark_workers.errors import TdError
from spark_workers.lake.store import Lake
from spark_workers.sql import reference
from spark_workers.sql.reference import CONTEXTS, Entry, Refused
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def _run(ex: Executor, sql: str) -> int | None:
    """None when ``sql`` runs, else its error code (-1: an internal error, printed: a bug)."""
    try:
        ex.execute_one(sql)
    except TdError as e:
        return e.code
    except Exception as e:  # a bug: not a TDengine error
        print(f"INTERNAL ERROR {type(e).__name__}: {e} in {sql!r}")
        return -1
    return None


def _observed(ex: Executor, e: Entry, n: int) -> tuple[str, dict[str, int]]:
    if e.statement:
        *setup, form = e.statements()
        codes = [_run(ex, sql) for sql in setup] + [_run(ex, form)]
        ok, errors = ("A", {}) if codes[-1] is None else ("", {"A": codes[-1]})
        for c in (c for c in e.probes if c != "A"):  # a statement's other contexts (the joins)
            code = _run(ex, e.probe_for(c, 100_000 + n * 4 + "AWLC".index(c)))
            ok, errors = (ok + c, errors) if code is None else (ok, {**errors, c: code})
        return ok, errors
    ok, errors = "", {}
    for c in e.probes or CONTEXTS:
        code = _run(ex, e.probe_for(c, n * 4 + "AWLC".index(c)))
        if code is None:
            ok += c
        else:
            errors[c] = code
    return ok, errors


def main() -> None:
    """Print the entries whose observed status differs from the catalogue."""
    ex = Executor(Lake(Path(tempfile.mkdtemp()) / "lake"), MemoryRegistry(), users=MemoryUserDirectory())
    for sql in reference.PROBE_SETUP:
        ex.execute_one(sql)
    for n, e in enumerate(reference.ENTRIES):
        ok, errors = _observed(ex, e, n)
        said = "" if isinstance(e.where, Refused) else e.where
        code_ok = not isinstance(e.where, Refused) or errors.get(e.refusal_ctx) == e.where.code
        if ok == said and code_ok:
            continue
        was = f"refused {e.where.code:#06x}" if isinstance(e.where, Refused) else f'"{e.where}"'
        codes = ", ".join(f"{c} {code:#06x}" if code >= 0 else f"{c} internal" for c, code in errors.items())
        print(f'{e.name}: catalogue {was}, observed "{ok}"' + (f" ({codes})" if codes else ""))


if __name__ == "__main__":
    main()
