"""``manage.py tdsql``: the TDengine SQL shell (-e, -f, interactive)."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from streams_app.models import Stream

pytestmark = pytest.mark.django_db


def _run(*args: str, stdin: str | None = None, monkeypatch=None) -> tuple[str, str, int]:  # type: ignore[no-untyped-def]
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = 0
    try:
        call_command("tdsql", *args, stdout=out, stderr=err)
    except SystemExit as e:
        code = int(e.code or 0)
    return out.getvalue(), err.getvalue(), code


def test_execute_prints_a_result_table(power) -> None:
    out, err, code = _run("-e", "SELECT ts, current, voltage, location FROM power.d1001 WHERE voltage > 219")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [c.strip() for c in lines[0].split("|")] == ["ts", "current", "voltage", "location"]
    assert set(lines[1]) == {"="} and len(lines[1]) == len(lines[0])
    rows = [[c.strip() for c in ln.split("|")] for ln in lines[2:4]]
    assert rows == [
        ["2024-01-01 00:00:00.000", "10.5", "220", "California.SanFrancisco"],
        ["2024-01-01 00:00:05.000", "11.0", "221", "California.SanFrancisco"],
    ]
    assert re.fullmatch(r"Query OK, 2 row\(s\) in set \(\d+\.\d{6}s\)", lines[4])
    # columns line up: every row has its separators where the header has them
    assert {ln.index("|") for ln in lines[2:4]} == {lines[0].index("|")}


def test_execute_with_default_database_and_nulls(power) -> None:
    out, _, code = _run(
        "-d",
        "power",
        "-e",
        "INSERT INTO d1002 (ts, current) VALUES ('2024-01-01 00:01:00', 1.0); "
        "SELECT voltage FROM d1002 WHERE ts = '2024-01-01 00:01:00'",
    )
    assert code == 0
    assert re.search(r"Query OK, 1 row\(s\) affected \(\d+\.\d+s\)", out)
    assert out.splitlines()[-2].strip() == "NULL"


def test_failing_statement_exits_1_with_the_positioned_error(power) -> None:
    out, err, code = _run("-e", "SELECT ts,\n  nope FROM power.meters")
    assert code == 1 and out == ""
    assert "DB error: invalid column name nope" in err
    assert "(line 2, column 3" in err and "[0x2602]" in err


def test_syntax_error_exits_1(power) -> None:
    _, err, code = _run("-e", "SELEC 1")
    assert code == 1 and "line 1, column 1" in err and "[0x2600]" in err


def test_file_of_statements(power, tmp_path) -> None:
    f = tmp_path / "setup.sql"
    f.write_text(
        "CREATE DATABASE IF NOT EXISTS farm;\n"
        "CREATE STABLE farm.sensors (ts TIMESTAMP, temp DOUBLE) TAGS (barn INT);\n"
        "-- two subtables in one statement\n"
        "INSERT INTO farm.b1 USING farm.sensors TAGS (1) VALUES ('2024-05-01 10:00:00', 20.5)\n"
        "  farm.b2 USING farm.sensors TAGS (2) VALUES ('2024-05-01 10:00:00', 18.0);\n"
        "SELECT barn, temp FROM farm.sensors ORDER BY barn;\n",
        encoding="utf-8",
    )
    out, err, code = _run("-f", str(f))
    assert code == 0, err
    assert out.count("Query OK, 0 row(s) affected") == 2 and "Query OK, 2 row(s) affected" in out
    table = out.split("Query OK, 2 row(s) affected")[1]
    assert [[c.strip() for c in ln.split("|")] for ln in table.splitlines()[3:5]] == [
        ["1", "20.5"],
        ["2", "18.0"],
    ]


def test_file_stops_at_the_first_failure(power, tmp_path) -> None:
    f = tmp_path / "bad.sql"
    f.write_text(
        "CREATE DATABASE one;\nCREATE TABLE one.t (ts TIMESTAMP, v INT);\n"
        "INSERT INTO one.t VALUES (now, 'x');\nCREATE DATABASE two;\n",
        encoding="utf-8",
    )
    out, err, code = _run("-f", str(f))
    assert code == 1 and "invalid value 'x' for column v INT" in err
    assert out.count("Query OK") == 2
    out, _, _ = _run("-e", "SHOW DATABASES")
    assert "one" in out and "two" not in out


def test_file_error_is_positioned_in_the_file(power, tmp_path) -> None:
    f = tmp_path / "bad.sql"
    f.write_text("CREATE DATABASE one;\nINSERT INTO power.d1001 VALUES (now, 'x', 1, 1);\n", encoding="utf-8")
    _, err, code = _run("-f", str(f))
    assert code == 1 and "line 2, column 38" in err


def test_create_stream_from_the_shell_is_owned_by_the_admin(power, admin) -> None:
    _, err, code = _run(
        "-e", "CREATE STREAM sh INTO power.sh_out AS SELECT _wstart, count(*) FROM power.meters INTERVAL(1m)"
    )
    assert code == 0, err
    assert Stream.objects.get().owner == admin


def test_interactive_multi_line_statement(power, monkeypatch, capsys) -> None:
    stdin = (
        "SELECT tbname,\n"
        "       count(*)\n"
        "  FROM power.meters\n"
        "  PARTITION BY tbname;\n"
        "SELECT nope FROM power.meters;\n"
        "SHOW power.STABLES;\n"
        "quit\n"
    )
    out, err, code = _run(stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0
    assert out.startswith("tdweb TDengine SQL shell")
    assert sorted(ln.replace(" ", "") for ln in out.splitlines() if ln.startswith("d100")) == [
        "d1001|3",
        "d1002|3",
    ]
    assert "Query OK, 2 row(s) in set" in out
    assert "invalid column name nope" in err  # an error does not end the session
    assert "meters" in out.split("stable_name")[1]
    prompts = capsys.readouterr().out  # input() writes its prompts to sys.stdout
    assert prompts.count("taos> ") == 4 and prompts.count("   -> ") == 3


def test_interactive_ends_at_eof(power, monkeypatch) -> None:
    out, _, code = _run(stdin="SHOW DATABASES;\n", monkeypatch=monkeypatch)
    # information_schema, performance_schema, power
    assert code == 0 and "power" in out and "Query OK, 3 row(s) in set" in out
