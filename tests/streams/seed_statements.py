"""Every CREATE STREAM statement printed in seeds 000, 001, 002 and 004, extracted from the seed files.

The seeds are the product's specification (``../shared/seeds``); issue 13's first acceptance item
runs each of their CREATE STREAM examples as written (``test_seed_statements.py``). The statements
are read from the files, not copied, so none can be skipped without a failing count.

A statement starts at a line whose first word pair is ``CREATE STREAM`` (any case, any indent) and
that is not the syntax template (the line that holds ``[IF NOT EXISTS]``); it ends at the first
line that ends with ``;`` (TDengine's statement terminator), at a blank line, at a Markdown fence or
at the end of the file, whichever comes first. Its lines are joined with one space, each stripped
of its indent; nothing else of the text is changed (typos and stray parentheses included).

Run ``python -m tests.streams.seed_statements`` to print the table of ``docs/seeds.md`` (with each
statement's status in ``test_seed_statements.py``) and the count that runs.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"

# the seeds whose CREATE STREAM statements the acceptance item names (003 is eKuiper's, without any)
SEED_FILES = {
    "000": "000_5f0c346dc97ce9a3.txt",
    "001": "001_1edf7d5d9aa43797.txt",
    "002": "002_79f67eb30730d5ad.txt",
    "004": "004_d241c3c75c4437ef.txt",
}

_START = re.compile(r"^\s*create\s+stream\b", re.IGNORECASE)


@dataclass(frozen=True)
class SeedStatement:
    """One printed statement.

    Attributes:
        id: ``s<seed>-<n>``, n counting from 1 in the order of the file (e.g. ``s002-3``).
        seed: the seed number (``"000"`` … ``"004"``); line: its first line in the file (from 1).
        text: the statement's lines joined with single spaces, each stripped of its indent.
        first_line: its first printed line, stripped (what the docs table shows).
    """

    id: str
    seed: str
    line: int
    text: str
    first_line: str


def statements_in(seed: str, text: str) -> list[SeedStatement]:
    """The CREATE STREAM statements printed in one seed's text, in file order.

    Args:
        seed: the seed number, used in the ids; text: the file's text.

    Returns:
        One ``SeedStatement`` per printed statement (the syntax template excluded).
    """
    lines = text.splitlines()
    out: list[SeedStatement] = []
    i = 0
    while i < len(lines):
        if not _START.match(lines[i]) or "[IF NOT EXISTS]" in lines[i].upper():
            i += 1
            continue
        start = i
        parts: list[str] = []
        while i < len(lines):
            line = lines[i].strip()
            if not line or line.startswith("```"):
                break
            parts.append(line)
            i += 1
            if line.endswith(";"):
                break
        out.append(
            SeedStatement(f"s{seed}-{len(out) + 1}", seed, start + 1, " ".join(parts), lines[start].strip())
        )
    return out


def seed_statements(root: Path = SEEDS) -> list[SeedStatement]:
    """Every CREATE STREAM statement of seeds 000, 001, 002 and 004 (in that order).

    Raises:
        FileNotFoundError: the seeds are not at ``root``.
    """
    out: list[SeedStatement] = []
    for seed, name in SEED_FILES.items():
        out += statements_in(seed, (root / name).read_text(encoding="utf-8"))
    return out


def status_of(sid: str) -> str:
    """``runs`` or the xfail reason of ``test_seed_statements.py`` (``issue13-<area>: what``)."""
    from tests.streams.test_seed_statements import MARKS

    mark = MARKS.get(sid)
    return "runs" if mark is None else f"xfail {mark.kwargs['reason']}"


def table() -> str:
    """The Markdown table of docs/seeds.md: id, seed, line, first line, status."""
    out = ["| id | seed | line | first line | status |", "| --- | --- | --- | --- | --- |"]
    for st in seed_statements():
        first = st.first_line.replace("|", "\\|").replace("``", "` `")
        out.append(f"| {st.id} | {st.seed} | {st.line} | `` {first} `` | {status_of(st.id)} |")
    return "\n".join(out) + "\n"


def main() -> None:
    """Print the table, then the count of statements that run."""
    sts = seed_statements()
    running = sum(status_of(st.id) == "runs" for st in sts)
    sys.stdout.write(table())
    sys.stdout.write(f"\n{running} of {len(sts)} statements run as written and match.\n")


if __name__ == "__main__":
    main()
