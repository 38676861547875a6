"""``manage.py tdsql``: a TDengine SQL shell on the same code path as ``/rest/sql``.

    python manage.py tdsql                      # interactive (taos> prompt; statements end with ;)
    python manage.py tdsql -e "SHOW DATABASES"  # one text, then exit
    python manage.py tdsql -f file.sql [-d db]  # a file of statements

Exit status is 1 when a statement failed (its error is printed with the SQL position).
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from spark_workers import timestamps
from spark_workers.errors import SqlError, TdError
from spark_workers.query.results import ResultSet
from spark_workers.sql.parser import parse_located
from streams_app.services.sql import executor_for

PROMPT, MORE = "taos> ", "   -> "


def format_result(res: ResultSet, tz: str, elapsed_s: float) -> str:
    """A result as the taos CLI prints it."""
    if res.affected_rows is not None and [c.name for c in res.columns] == ["affected_rows"]:
        return f"Query OK, {res.affected_rows} row(s) affected ({elapsed_s:.6f}s)"

    def cell(v: Any, c: Any) -> str:
        if v is None:
            return "NULL"
        if c.type.name == "TIMESTAMP":
            return timestamps.render_plain(int(v), c.precision, tz)
        return str(v)

    names = [c.name for c in res.columns]
    rows = [[cell(v, c) for v, c in zip(r, res.columns, strict=True)] for r in res.rows]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    lines = [
        " | ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)),
        "=" * (sum(widths) + 3 * max(0, len(widths) - 1)),
    ]
    lines += [" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    lines.append(f"Query OK, {len(rows)} row(s) in set ({elapsed_s:.6f}s)")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "TDengine SQL shell (interactive, -e SQL, -f file.sql)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("-e", "--execute", help="SQL text to run")
        parser.add_argument("-f", "--file", help="file of SQL statements to run")
        parser.add_argument("-d", "--database", help="default database (like USE db)")
        parser.add_argument("-u", "--user", default=None, help="run as this user (default: the admin)")

    def handle(self, *args: object, **opts: Any) -> None:
        User = get_user_model()
        user = User.objects.filter(username=opts["user"] or settings.TDWEB_ADMIN_USER).first()
        self.ex = executor_for(db=opts["database"], user=user)
        self.tz = settings.TDWEB_TIMEZONE
        if opts["execute"] is not None or opts["file"]:
            text = (
                opts["execute"]
                if opts["execute"] is not None
                else Path(opts["file"]).read_text(encoding="utf-8")
            )
            if not self.run_text(text):
                sys.exit(1)
            return
        self.interactive()

    def run_text(self, text: str) -> bool:
        """Run every statement of ``text``; False after the first failure."""
        try:
            stmts = parse_located(text)
        except TdError as e:
            self.stderr.write(f"DB error: {e.desc} [0x{e.code:04X}]")
            return False
        for stmt, start, own_text in stmts:
            t0 = time.perf_counter()
            try:
                res = self.ex.run_statement(stmt, own_text)
            except TdError as e:
                err = e.shifted(text, start) if isinstance(e, SqlError) else e
                self.stderr.write(f"DB error: {err.desc} [0x{err.code:04X}]")
                return False
            self.stdout.write(format_result(res, self.tz, time.perf_counter() - t0))
        return True

    def interactive(self) -> None:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history)
        self.stdout.write("tdweb TDengine SQL shell. End statements with ';'. Type 'quit' to leave.")
        buf: list[str] = []
        while True:
            try:
                line = input(MORE if buf else PROMPT)
            except (EOFError, KeyboardInterrupt):
                self.stdout.write("")
                return
            if not buf and line.strip().lower().rstrip(";") in ("quit", "exit", "q"):
                return
            buf.append(line)
            if line.rstrip().endswith(";"):
                self.run_text("\n".join(buf))
                buf = []
