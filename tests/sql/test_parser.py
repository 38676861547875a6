"""Unit tests of the TDengine statement parser (spark_workers.sql.parser): no Spark, no DB."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlglot import exp

from spark_workers.duration import Duration
from spark_workers.errors import Code, SqlError
from spark_workers.sql import ast, parse, parse_expression, parse_one
from spark_workers.sql.ast import Span, TableName
from spark_workers.tdtypes import TdType

CASES_DIR = Path("/work/shared/acceptance/cases")


def _acceptance_statements() -> list[tuple[str, str, str, str]]:
    """(case id, dialect, role, sql) for every statement of every acceptance case."""
    out = []
    for path in sorted(CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text())
        for role in ("setup", "streams", "teardown"):
            for sql in case.get(role) or []:
                out.append((case["id"], case["dialect"], role, sql))
        for step in case.get("steps") or []:
            for sql in step.get("sql") or []:
                out.append((case["id"], case["dialect"], "step", sql))
            check = step.get("check") or {}
            if check.get("query"):
                out.append((case["id"], case["dialect"], "check", check["query"]))
    return out


ACCEPTANCE = _acceptance_statements()

# Statements of the shared acceptance cases that use what tdweb does not parse yet (issue 13):
# they are expected to fail (strict: a statement that starts parsing fails the test until it is
# taken off this list).
NOT_YET: list[tuple[re.Pattern[str], str]] = []


def not_yet(sql: str) -> str | None:
    """Why ``sql`` is not expected to parse yet, or None."""
    return next((why for pattern, why in NOT_YET if pattern.search(sql)), None)


def acceptance_params(items: list[tuple[str, ...]], sql_index: int = -1) -> list[object]:
    """``items`` as pytest parameters, the ``NOT_YET`` ones marked strict xfail."""
    return [
        pytest.param(*item, marks=pytest.mark.xfail(strict=True, reason=why))
        if (why := not_yet(item[sql_index]))
        else (item if len(item) > 1 else item[0])
        for item in items
    ]


def error_of(sql: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        parse(sql)
    return info.value


def at(sql: str, needle: str, nth: int = 0) -> int:
    """Offset of the ``nth`` occurrence of ``needle`` in ``sql``."""
    pos = -1
    for _ in range(nth + 1):
        pos = sql.index(needle, pos + 1)
    return pos


def cut(text: str, span: Span | None) -> str:
    assert span is not None
    return text[span.start : span.end]


# --------------------------------------------------------------------------- acceptance cases


@pytest.mark.skipif(not CASES_DIR.exists(), reason="acceptance cases not mounted")
def test_acceptance_cases_are_present() -> None:
    assert len(ACCEPTANCE) > 100
    assert any(role == "streams" for _, _, role, _ in ACCEPTANCE)


@pytest.mark.skipif(not CASES_DIR.exists(), reason="acceptance cases not mounted")
@pytest.mark.parametrize(("case_id", "dialect", "role", "sql"), acceptance_params(ACCEPTANCE))
def test_every_acceptance_statement_parses(case_id: str, dialect: str, role: str, sql: str) -> None:
    stmts = parse(sql)
    if role == "streams":
        assert len(stmts) == 1
        expected = ast.CreateStream337 if dialect == "tdengine-3.3.7" else ast.CreateStreamLegacy
        assert isinstance(stmts[0], expected), case_id
    elif role == "check":
        assert isinstance(stmts[0], ast.Select | ast.Describe | ast.Show), case_id
    elif role == "step":
        assert all(isinstance(s, ast.Insert | ast.Delete | ast.RecalculateStream) for s in stmts), case_id
    else:
        assert stmts, case_id


# --------------------------------------------------------------------------- statement splitting


def test_parse_splits_statements_and_ignores_empty_ones() -> None:
    stmts = parse("use d; ;\n -- nothing\n; show databases;")
    assert stmts == [ast.UseDatabase(name="d"), ast.Show(what="databases")]


def test_errors_in_a_later_statement_point_into_the_whole_text() -> None:
    sql = "select 1;\n  select * fromm t"
    e = error_of(sql)
    assert e.message == "unexpected 'fromm'"
    assert e.offset == at(sql, "fromm")
    assert e.sql == sql
    assert e.position is not None and (e.position.line, e.position.column) == (2, 12)


def test_parse_one_rejects_several_statements_and_empty_text() -> None:
    with pytest.raises(SqlError) as info:
        parse_one("select 1; select 2")
    assert info.value.offset == 10
    with pytest.raises(SqlError) as info:
        parse_one("  ;  ")
    assert info.value.code == Code.INCOMPLETE_SQL


def test_trailing_semicolon_is_allowed() -> None:
    assert parse_one("drop database if exists acc_td001;") == ast.DropDatabase(
        name="acc_td001", if_exists=True
    )


# --------------------------------------------------------------------------- databases and tables


def test_create_database_options() -> None:
    s = parse_one(
        "CREATE DATABASE IF NOT EXISTS power VGROUPS 1 BUFFER 8 PRECISION 'ms' KEEP 3650d DURATION 10d "
        "REPLICA 1 WAL_LEVEL 1 CACHEMODEL 'none' wal_retention_period -1 TABLE_PREFIX 2"
    )
    assert isinstance(s, ast.CreateDatabase)
    assert s.name == "power" and s.if_not_exists
    assert s.options == {
        "VGROUPS": 1,
        "BUFFER": 8,
        "PRECISION": "ms",
        "KEEP": "3650d",
        "DURATION": "10d",
        "REPLICA": 1,
        "WAL_LEVEL": 1,
        "CACHEMODEL": "none",
        "WAL_RETENTION_PERIOD": -1,
        "TABLE_PREFIX": 2,
    }


def test_create_database_keep_list_and_duplicate_option() -> None:
    s = parse_one("create database d keep 1d,2d,3650d")
    assert isinstance(s, ast.CreateDatabase) and s.options == {"KEEP": "1d,2d,3650d"}
    sql = "create database d vgroups 1 VGROUPS 2"
    e = error_of(sql)
    assert e.message == "duplicate database option VGROUPS" and e.offset == at(sql, "VGROUPS")


def test_drop_and_use_database() -> None:
    assert parse_one("DROP DATABASE d") == ast.DropDatabase(name="d")
    assert parse_one("drop database if exists d force") == ast.DropDatabase(
        name="d", if_exists=True, force=True
    )
    assert parse_one("use `power`") == ast.UseDatabase(name="power")


def test_create_stable_columns_tags_and_comment() -> None:
    sql = (
        "create stable if not exists power.meters (ts timestamp, current float COMMENT 'amps', "
        "id int primary key, voltage INT UNSIGNED, phase BINARY(16), loc nchar(8), ok bool, v double, "
        "big bigint unsigned, s smallint, t tinyint, i integer) "
        "TAGS (groupId int, location varchar(24) comment 'where') comment 'meters'"
    )
    s = parse_one(sql)
    assert isinstance(s, ast.CreateTable)
    assert s.table == TableName(name="meters", db="power", span=Span(at(sql, "power"), at(sql, " (ts")))
    assert s.kind == "super" and s.if_not_exists and s.comment == "meters"
    assert [c.name for c in s.columns] == [
        "ts", "current", "id", "voltage", "phase", "loc", "ok", "v", "big", "s", "t", "i",
    ]  # fmt: skip
    assert [c.type for c in s.columns] == [
        TdType("TIMESTAMP"),
        TdType("FLOAT"),
        TdType("INT"),
        TdType("INT", unsigned=True),
        TdType("VARCHAR", 16),
        TdType("NCHAR", 8),
        TdType("BOOL"),
        TdType("DOUBLE"),
        TdType("BIGINT", unsigned=True),
        TdType("SMALLINT"),
        TdType("TINYINT"),
        TdType("INT"),
    ]
    assert s.columns[1].comment == "amps" and s.columns[2].composite_key
    assert cut(sql, s.columns[1].span) == "current float COMMENT 'amps'"
    assert [(t.name, t.type, t.comment) for t in s.tags] == [
        ("groupId", TdType("INT"), None),
        ("location", TdType("VARCHAR", 24), "where"),
    ]


def test_create_table_kind_depends_on_tags_and_composite_key() -> None:
    normal = parse_one("create table t1 (ts timestamp, a int, b int composite key)")
    assert isinstance(normal, ast.CreateTable) and normal.kind == "normal" and normal.tags == []
    assert normal.columns[2].composite_key
    sup = parse_one("create table if not exists stb (ts timestamp, k int) tags (a int)")
    assert isinstance(sup, ast.CreateTable) and sup.kind == "super" and [t.name for t in sup.tags] == ["a"]


def test_unknown_type_points_at_the_type() -> None:
    sql = "CREATE STABLE st (ts TIMESTAMP, v VARCHA(10)) TAGS (t INT)"
    e = error_of(sql)
    assert e.message == "unknown data type VARCHA"
    assert e.offset == at(sql, "VARCHA")
    assert e.code == Code.WRONG_VALUE_TYPE


def test_varchar_needs_a_length_and_stable_needs_tags() -> None:
    sql = "create stable st (ts timestamp, v varchar) tags (t int)"
    assert error_of(sql).offset == at(sql, "varchar")
    sql = "create stable st (ts timestamp, v int)"
    e = error_of(sql)
    assert e.code == Code.INCOMPLETE_SQL and "TAGS" in e.message


def test_missing_parenthesis_after_column_list() -> None:
    sql = "create table t (ts timestamp, a int b int)"
    e = error_of(sql)
    assert e.message == "syntax error: expected ')' after column list"
    assert e.offset == at(sql, "b int")
    sql = "create table t (ts timestamp, a int"
    e = error_of(sql)
    assert e.code == Code.INCOMPLETE_SQL and e.offset == len(sql)
    assert e.message.startswith("statement is incomplete")


def test_create_subtables() -> None:
    sql = "create table ct1 using stb tags(1000) IF NOT EXISTS db.ct2 using db.stb (a, b) tags (-2, 'x')"
    s = parse_one(sql)
    assert isinstance(s, ast.CreateSubtables) and len(s.items) == 2
    one, two = s.items
    assert one.table.name == "ct1" and one.using.name == "stb" and one.tag_names is None
    assert one.tag_values == [exp.Literal.number(1000)] and not one.if_not_exists
    assert cut(sql, one.span) == "ct1 using stb tags(1000)"
    assert two.table == TableName(name="ct2", db="db", span=two.table.span) and two.if_not_exists
    assert two.using.db == "db" and two.tag_names == ["a", "b"]
    assert two.tag_values == [exp.Neg(this=exp.Literal.number(2)), exp.Literal.string("x")]


def test_drop_tables() -> None:
    s = parse_one("drop table if exists t1, db.t2")
    assert isinstance(s, ast.DropTable) and s.if_exists and not s.super_only
    assert [str(t) for t in s.tables] == ["t1", "db.t2"]
    s = parse_one("DROP STABLE st")
    assert isinstance(s, ast.DropTable) and s.super_only and not s.if_exists and s.tables[0].name == "st"


# --------------------------------------------------------------------------- INSERT / DELETE


def test_insert_multi_table_with_auto_create_and_columns() -> None:
    sql = (
        "insert into ct1 using stb (a) tags(1) values ('2025-01-01 00:00:00', -111, 1.5e3) "
        "(1648791213000, NULL, true) ct2 (ts, k) values (now, now + 1s) (NOW() - 10m, today())"
    )
    s = parse_one(sql)
    assert isinstance(s, ast.Insert) and len(s.targets) == 2
    t1, t2 = s.targets
    assert t1.table.name == "ct1" and t1.columns is None
    assert t1.using is not None and t1.using.using.name == "stb" and t1.using.tag_names == ["a"]
    assert t1.using.tag_values == [exp.Literal.number(1)]
    assert t1.rows[0] == [
        exp.Literal.string("2025-01-01 00:00:00"),
        exp.Neg(this=exp.Literal.number(111)),
        exp.Literal.number("1.5e3"),
    ]
    assert t1.rows[1] == [exp.Literal.number(1648791213000), exp.Null(), exp.Boolean(this=True)]
    assert [cut(sql, sp) for sp in t1.row_spans[0]] == ["'2025-01-01 00:00:00'", "-111", "1.5e3"]
    assert t2.table.name == "ct2" and t2.columns == ["ts", "k"] and t2.using is None
    now, plus = t2.rows[0]
    assert isinstance(now, exp.CurrentTimestamp)
    assert isinstance(plus, exp.Add) and isinstance(plus.this, exp.CurrentTimestamp)
    assert isinstance(plus.expression, exp.Interval) and plus.expression.meta["td_duration"] == "1s"
    minus, today = t2.rows[1]
    assert isinstance(minus, exp.Sub) and minus.expression.meta["td_duration"] == "10m"
    assert today == exp.Anonymous(this="today")
    assert [cut(sql, sp) for sp in t2.row_spans[1]] == ["NOW() - 10m", "today()"]


@pytest.mark.parametrize("value", ["1", "1.5e3", "-5", "- 7", "'x'", '"y"', "null", "TRUE", "false", "0.25"])
def test_single_token_insert_values_match_sqlglot(value: str) -> None:
    s = parse_one(f"insert into t values ({value})")
    assert isinstance(s, ast.Insert)
    assert s.targets[0].rows[0][0] == parse_expression(value)  # parse_expression always uses sqlglot


def test_insert_rows_may_be_separated_by_commas() -> None:
    s = parse_one("insert into t values (1, 2), (3, 4)")
    assert isinstance(s, ast.Insert) and len(s.targets) == 1 and len(s.targets[0].rows) == 2


def test_insert_row_width_is_not_checked_by_the_parser() -> None:
    s = parse_one("insert into t (ts, a) values (1, 2, 3)")
    assert isinstance(s, ast.Insert) and s.targets[0].rows[0][2] == exp.Literal.number(3)


def test_insert_missing_comma_points_at_the_value() -> None:
    sql = "insert into t values (1 2)"
    e = error_of(sql)
    assert e.offset == at(sql, "2")
    assert e.message == "syntax error: expected ',' or ')' after value, got '2'"


def test_insert_missing_parenthesis() -> None:
    sql = "insert into t values (1, 2"
    e = error_of(sql)
    assert e.code == Code.INCOMPLETE_SQL and e.offset == len(sql)
    sql = "insert into t values (1, 2 (3, 4)"
    e = error_of(sql)
    assert e.offset == at(sql, "(3") and e.code == Code.SYNTAX_ERROR


def test_insert_values_must_be_constants() -> None:
    sql = "insert into t values (now, a)"
    e = error_of(sql)
    assert e.offset == at(sql, "a)") and "constant" in e.message
    sql = "insert into t values (1,)"
    assert error_of(sql).offset == at(sql, ")")


def test_delete() -> None:
    sql = "delete from db.t1 where ts >= 1648791213001 and ts <= now - 1d"
    s = parse_one(sql)
    assert isinstance(s, ast.Delete) and str(s.table) == "db.t1"
    assert isinstance(s.where, exp.And)
    assert parse_one("delete from t") == ast.Delete(table=TableName("t", None, Span(12, 13)), where=None,
                                                    span=Span(0, 13))  # fmt: skip


# --------------------------------------------------------------------------- SHOW / DESCRIBE


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("show databases", ast.Show(what="databases")),
        ("SHOW STABLES", ast.Show(what="stables")),
        ("show power.stables like 'me%'", ast.Show(what="stables", db="power", like="me%")),
        ('show tables like "ct%"', ast.Show(what="tables", like="ct%")),
        ("show d.tables", ast.Show(what="tables", db="d")),
        ("show streams", ast.Show(what="streams")),
        ("show d.streams", ast.Show(what="streams", db="d")),
        ("show d.vgroups", ast.Show(what="vgroups", db="d")),
        ("show create database d", ast.Show(what="create_database", db="d")),
    ],
)
def test_show(sql: str, expected: ast.Show) -> None:
    assert parse_one(sql) == expected


def test_show_create_and_tags_targets() -> None:
    s = parse_one("show create table d.t")
    assert isinstance(s, ast.Show) and s.what == "create_table" and str(s.target) == "d.t"
    s = parse_one("SHOW CREATE STABLE st")
    assert isinstance(s, ast.Show) and s.what == "create_stable" and str(s.target) == "st"
    s = parse_one("show tags from ct1")
    assert isinstance(s, ast.Show) and s.what == "tags" and str(s.target) == "ct1"


def test_show_unknown_kind() -> None:
    sql = "show foo"
    e = error_of(sql)
    assert e.offset == at(sql, "foo") and "STABLES" in e.message


def test_describe() -> None:
    s = parse_one("describe t")
    assert isinstance(s, ast.Describe) and s.table.name == "t" and s.table.db is None
    s = parse_one("desc acc_td019.res_ct1")
    assert isinstance(s, ast.Describe) and str(s.table) == "acc_td019.res_ct1"


# --------------------------------------------------------------------------- SELECT


def query_of(sql: str) -> ast.SelectQuery:
    s = parse_one(sql)
    assert isinstance(s, ast.Select)
    return s.query


def test_select_item_texts_and_interval() -> None:
    sql = "select _wstart, min(k), max(k), sum(k) as sum_alias, count(*) c2, `_wend` from ct1 interval(10m)"
    q = query_of(sql)
    assert q.item_texts == ["_wstart", "min(k)", "max(k)", "sum(k)", "count(*)", "`_wend`"]
    assert q.window == ast.IntervalWindow(interval=Duration(10, "m"), span=q.window.span)
    assert cut(sql, q.window.span) == "interval(10m)"
    assert q.select.find(exp.Interval) is None  # the window clause is not in the sqlglot tree
    assert q.text == sql and q.span == Span(0, len(sql))
    wend = q.select.selects[-1]
    assert isinstance(wend, exp.Column) and wend.this.quoted and wend.name == "_wend"


def test_select_partition_window_fill_and_standard_tail() -> None:
    sql = (
        "select _wstart, avg(voltage) from power.meters where ts > now - 1h "
        "partition by tbname tname, concat('tag-', groupid) as cc, location "
        "interval(1m, 10s) sliding (30s) fill(value, 0, -1) order by _wstart desc limit 2, 10"
    )
    q = query_of(sql)
    assert [(p.text, p.alias) for p in q.partition_by] == [
        ("tbname", "tname"),
        ("concat('tag-', groupid)", "cc"),
        ("location", None),
    ]
    assert [cut(sql, p.span) for p in q.partition_by] == [p.text for p in q.partition_by]
    assert isinstance(q.partition_by[1].expr, exp.Concat)
    assert q.window == ast.IntervalWindow(
        Duration(1, "m"), Duration(10, "s"), Duration(30, "s"), q.window.span
    )
    assert cut(sql, q.window.span) == "interval(1m, 10s) sliding (30s)"
    assert q.fill is not None and q.fill.mode == "VALUE"
    assert q.fill.values == (exp.Literal.number(0), exp.Neg(this=exp.Literal.number(1)))
    sel = q.select
    assert sel.args["order"].sql() == "ORDER BY _wstart DESC"
    assert sel.args["limit"].expression == exp.Literal.number(10)
    assert sel.args["offset"].expression == exp.Literal.number(2)
    where = sel.args["where"].this
    assert isinstance(where.expression, exp.Sub) and where.expression.expression.meta["td_duration"] == "1h"


def test_select_session_state_count_windows() -> None:
    q = query_of("select _wstart, count(*) from t1 session(ts,10s)")
    assert q.window == ast.SessionWindow(ts_column="ts", gap=Duration(10, "s"), span=q.window.span)
    q = query_of("select _wstart, count(*) from t1 state_window(a) ")
    assert (
        isinstance(q.window, ast.StateWindow)
        and q.window.expr == exp.column("a")
        and q.window.true_for is None
    )
    q = query_of("select count(*) from t1 state_window(case when a > 1 then 1 else 0 end) true_for(3s)")
    assert isinstance(q.window, ast.StateWindow) and isinstance(q.window.expr, exp.Case)
    assert q.window.true_for == Duration(3, "s")
    q = query_of("select count(*) from t1 partition by tbname count_window(10, 2, a, b)")
    assert q.window == ast.CountWindow(count=10, sliding=2, columns=("a", "b"), span=q.window.span)
    q = query_of("select count(*) from t1 count_window(3)")
    assert q.window == ast.CountWindow(count=3, span=q.window.span)


def test_select_event_window_both_forms() -> None:
    sql = "select _wstart as s, count(*) from t1 event_window start with a = 0 end with a = 9 limit 3"
    q = query_of(sql)
    assert isinstance(q.window, ast.EventWindow)
    assert q.window.start.sql() == "a = 0" and q.window.end.sql() == "a = 9"
    assert cut(sql, q.window.span) == "event_window start with a = 0 end with a = 9"
    assert q.select.args["limit"].expression == exp.Literal.number(3)
    q = query_of(
        "select count(*) from t event_window(start with case when a > 0 then 1 end = 1 end with b < 5) "
        "true_for(1m)"
    )
    assert isinstance(q.window, ast.EventWindow) and isinstance(q.window.start.this, exp.Case)
    assert q.window.end.sql() == "b < 5" and q.window.true_for == Duration(1, "m")


def test_placeholders_now_and_durations_in_queries() -> None:
    q = query_of(
        "select _twstart+0s, %%1, cast(_tlocaltime/1000000 as timestamp), today() "
        "from %%trows where tbname = %%tbname and ts > now() - 5m and ts < NOW"
    )
    table = q.select.args["from_"].this
    assert isinstance(table, exp.Table) and table.name == "__td_trows"
    first, second, cast, today = q.select.selects
    assert first.expression.meta["td_duration"] == "0s"
    assert first.expression.this == exp.Literal.string("0") and first.expression.unit.name == "SECOND"
    assert second == exp.column("__td_p1")
    assert isinstance(cast, exp.Cast) and cast.to.is_type(exp.DType.TIMESTAMP)
    assert today == exp.Anonymous(this="today")
    where = q.select.args["where"].this
    assert exp.column("__td_tbname") in list(where.find_all(exp.Column))
    assert len(list(where.find_all(exp.CurrentTimestamp))) == 2
    assert q.item_texts[:2] == ["_twstart+0s", "%%1"]


@pytest.mark.parametrize(
    ("literal", "unit"),
    [
        ("10b", "NANOSECOND"), ("5u", "MICROSECOND"), ("500a", "MILLISECOND"), ("1S", "SECOND"),
        ("2m", "MINUTE"), ("1h", "HOUR"), ("3d", "DAY"), ("1w", "WEEK"), ("1n", "MONTH"), ("1y", "YEAR"),
    ],
)  # fmt: skip
def test_duration_literals_become_intervals(literal: str, unit: str) -> None:
    e = parse_expression(f"ts + {literal}")
    assert isinstance(e, exp.Add) and isinstance(e.expression, exp.Interval)
    assert e.expression.unit.name == unit
    assert e.expression.this == exp.Literal.string(literal[:-1])
    assert e.expression.meta["td_duration"] == literal[:-1] + literal[-1].lower()


def test_quoted_names_are_not_durations_or_now() -> None:
    e = parse_expression("`10s` + `now`")
    assert e == exp.Add(this=exp.column("10s", quoted=True), expression=exp.column("now", quoted=True))


def test_ekuiper_windows_are_cut_from_group_by() -> None:
    q = query_of("SELECT count(*) FROM demo GROUP BY ID, TUMBLINGWINDOW(ss, 10)")
    assert q.window == ast.EkuiperWindow(function="tumbling", unit="SS", args=(10,), span=q.window.span)
    assert [g.sql() for g in q.select.args["group"].expressions] == ["ID"]
    q = query_of("SELECT count(*) FROM demo GROUP BY hoppingwindow(Mi, 10, 5), id")
    assert q.window == ast.EkuiperWindow(function="hopping", unit="MI", args=(10, 5), span=q.window.span)
    assert [g.sql() for g in q.select.args["group"].expressions] == ["id"]
    q = query_of("SELECT * FROM demo WHERE temperature > 20 GROUP BY COUNTWINDOW(5,1) HAVING COUNT(*) > 2")
    assert q.window == ast.EkuiperWindow(function="count", unit=None, args=(5, 1), span=q.window.span)
    assert q.select.args.get("group") is None and q.select.args["having"] is not None
    q = query_of("select count(*) from demo group by sessionwindow(mi, 2, 1)")
    assert q.window == ast.EkuiperWindow(function="session", unit="MI", args=(2, 1), span=q.window.span)


def test_ekuiper_filter_and_over_when() -> None:
    sql = (
        "SELECT * FROM demo GROUP BY SlidingWindow(ss,1) FILTER(where revenue > 100) OVER(when revenue > 200)"
    )
    q = query_of(sql)
    w = q.window
    assert isinstance(w, ast.EkuiperWindow) and w.function == "sliding" and w.args == (1,)
    assert w.filter is not None and w.filter.sql() == "revenue > 100"
    assert w.over_when is not None and w.over_when.sql() == "revenue > 200"
    assert cut(sql, w.span) == "SlidingWindow(ss,1) FILTER(where revenue > 100) OVER(when revenue > 200)"
    q = query_of("SELECT * FROM demo GROUP BY SLIDINGWINDOW(ss, 5, 5) OVER (WHEN a > 1) FILTER (WHERE b > 2)")
    assert q.window.args == (5, 5) and q.window.filter.sql() == "b > 2"


def test_ekuiper_errors() -> None:
    sql = "select count(*) from t group by tumblingwindow(xx, 10)"
    assert error_of(sql).offset == at(sql, "xx")
    sql = "select count(*) from t group by tumblingwindow(ss, 10) over (when a > 1)"
    assert error_of(sql).offset == at(sql, "over")
    sql = "select count(*) from t group by hoppingwindow(ss, 10)"
    assert "HOPPINGWINDOW" in error_of(sql).message


def test_standard_sql_stays_in_the_sqlglot_tree() -> None:
    q = query_of(
        "with x as (select a from t) select distinct a from x where a in (1, 2) group by a having count(*) "
        "> 1"
    )
    assert isinstance(q.select, exp.Select) and q.select.args["with_"] is not None
    assert q.select.args["distinct"] is not None and q.item_texts == ["a"]
    q = query_of("select a from t union all select b from u")
    assert isinstance(q.select, exp.Union) and q.item_texts == ["a"]
    q = query_of("select row_number() over (partition by a order by b) from t")
    assert q.partition_by == [] and isinstance(q.select.selects[0], exp.Window)
    q = query_of("select * from (select a from t) x where a > 1 interval(1s)")
    assert isinstance(q.window, ast.IntervalWindow)
    q = query_of("select `_wstart`,`min(k)`,`max(k)`,sum_alias from outstb")
    assert [c.name for c in q.select.selects] == ["_wstart", "min(k)", "max(k)", "sum_alias"]


def test_window_in_nested_query_is_not_supported() -> None:
    sql = "select count(*) from (select * from t partition by tbname interval(1s))"
    e = error_of(sql)
    assert e.code == Code.NOT_SUPPORTED
    assert e.message == (
        "PARTITION BY in a subquery: PARTITION BY and window clauses are supported in the "
        "outermost query only"
    )
    assert e.offset == at(sql, "partition")
    sql = "with x as (select _wstart from t interval(1s)) select * from x"
    assert error_of(sql).offset == at(sql, "interval")


def test_select_errors() -> None:
    sql = "select * fromm t"
    e = error_of(sql)
    assert e.message == "unexpected 'fromm'" and e.offset == 9 and e.code == Code.SYNTAX_ERROR
    assert 'near "fromm t"' in e.desc
    sql = "SELECT count(*) FROM t INTERVAL(10x)"
    e = error_of(sql)
    assert e.message.startswith("invalid duration '10x'") and e.offset == at(sql, "10x")
    sql = "select * from t where"
    e = error_of(sql)
    assert e.code == Code.INCOMPLETE_SQL and e.offset == len(sql)
    assert e.message.startswith("statement is incomplete")
    sql = "select * from t interval(1s) where a > 1"
    assert error_of(sql).offset == at(sql, "where")
    sql = "select * from t sliding(1s)"
    assert "INTERVAL" in error_of(sql).message
    sql = "select count(*) from t count_window(x)"
    e = error_of(sql)
    assert e.message == "COUNT_WINDOW expects an integer count" and e.offset == at(sql, "x)")
    sql = "select * from t where a = 'abc"
    assert error_of(sql).offset == at(sql, "'abc")
    sql = "select %%foo from t"
    assert error_of(sql).offset == at(sql, "%%foo")


# --------------------------------------------------------------------------- legacy streams (seed 000)


def test_legacy_stream_options_in_any_order_with_spans() -> None:
    sql = (
        "create stream if not exists power.s1 IGNORE EXPIRED 0 trigger max_delay 5s watermark 100s "
        "delete_mark 1d fill_history 1 async ignore update 0 into power.outstb as "
        "select _wstart, min(k), sum(k) as s from ct1 interval(10m)"
    )
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStreamLegacy)
    assert (s.name, s.db, s.if_not_exists) == ("s1", "power", True)
    o = s.options
    assert (o.trigger, o.max_delay, o.watermark) == ("MAX_DELAY", Duration(5, "s"), Duration(100, "s"))
    assert (o.ignore_expired, o.ignore_update, o.fill_history, o.fill_history_async) == (0, 0, 1, True)
    assert o.delete_mark == Duration(1, "d") and o.recalculate is None
    assert {k: cut(sql, v) for k, v in o.spans.items()} == {
        "ignore_expired": "IGNORE EXPIRED 0",
        "trigger": "trigger max_delay 5s",
        "max_delay": "5s",
        "watermark": "watermark 100s",
        "delete_mark": "delete_mark 1d",
        "fill_history": "fill_history 1 async",
        "ignore_update": "ignore update 0",
    }
    assert str(s.into) == "power.outstb" and s.columns is None and s.tags is None and s.subtable is None
    assert s.query.item_texts == ["_wstart", "min(k)", "sum(k)"]
    assert cut(sql, s.query.span) == s.query.text and s.query.text.startswith("select _wstart")
    assert s.text == sql and s.notify is None


def test_legacy_stream_defaults_are_none() -> None:
    s = parse_one("create stream s into o as select count(*) from t interval(1s)")
    assert isinstance(s, ast.CreateStreamLegacy)
    assert s.options == ast.LegacyStreamOptions()


def test_legacy_continuous_window_close_recalculate() -> None:
    s = parse_one("create stream s trigger continuous_window_close recalculate 1h into o as select 1 from t")
    assert isinstance(s, ast.CreateStreamLegacy)
    assert s.options.trigger == "CONTINUOUS_WINDOW_CLOSE" and s.options.recalculate == Duration(1, "h")


def test_legacy_stream_columns_tags_subtable() -> None:
    sql = (
        "CREATE STREAM streams2 trigger at_once INTO st1 (ts, c1 composite key, tag_tbname) "
        "TAGS(cc varchar(100) comment 'tag') SUBTABLE(CONCAT('new-', cc)) as "
        'select  _wstart, count(*) c1 from st partition by concat("tag-", tbname) as cc interval(10s)'
    )
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStreamLegacy)
    assert [(c.name, c.composite_key) for c in s.columns or []] == [
        ("ts", False),
        ("c1", True),
        ("tag_tbname", False),
    ]
    assert s.tags == [
        ast.OutputTagDef(name="cc", type=TdType("VARCHAR", 100), comment="tag", span=s.tags[0].span)
    ]
    assert isinstance(s.subtable, exp.Concat)
    assert s.query.partition_by[0].alias == "cc" and s.query.partition_by[0].text == 'concat("tag-", tbname)'


def test_legacy_stream_notify_after_the_query() -> None:
    sql = (
        "CREATE STREAM avg_current_stream FILL_HISTORY 1 INTO x AS SELECT _wstart, _wend, AVG(current) "
        "FROM meters INTERVAL (1m) NOTIFY ('ws://localhost:8080/notify', "
        "'wss://192.168.1.1:8080/notify?key=foo') "
        "ON ('WINDOW_OPEN', 'WINDOW_CLOSE') NOTIFY_HISTORY 0 ON_FAILURE PAUSE"
    )
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStreamLegacy) and s.notify is not None
    n = s.notify
    assert n.urls == ["ws://localhost:8080/notify", "wss://192.168.1.1:8080/notify?key=foo"]
    assert (n.events, n.history, n.on_failure) == (["WINDOW_OPEN", "WINDOW_CLOSE"], False, "PAUSE")
    assert cut(sql, n.span).startswith("NOTIFY (") and cut(sql, n.span).endswith("ON_FAILURE PAUSE")
    assert s.query.text.endswith("INTERVAL (1m)")
    assert s.query.window == ast.IntervalWindow(Duration(1, "m"), span=s.query.window.span)


def test_legacy_stream_errors() -> None:
    sql = "create stream s1 watermark 1s trigger at_once WATERMARK 2s into x as select * from t"
    e = error_of(sql)
    assert e.message == "duplicate stream option WATERMARK" and e.offset == at(sql, "WATERMARK")
    sql = "create stream s ignore expired 1 ignore expired 0 into x as select * from t"
    assert error_of(sql).offset == at(sql, "ignore", 1)
    sql = "create stream s trigger at_once as select * from t"
    assert error_of(sql).offset == at(sql, "as") and "INTO" in error_of(sql).message
    sql = "create stream s into o as select * from t notify ('ws://x') on ('WINDOW_OPENN')"
    assert error_of(sql).offset == at(sql, "'WINDOW_OPENN'")
    sql = "create stream s watermark 10x into o as select 1 from t"
    e = error_of(sql)
    assert e.message.startswith("invalid duration '10x'") and e.offset == at(sql, "10x")


def test_legacy_stream_seed_stray_paren() -> None:
    """Seed 000 "streams2" and seed 001 "output_tag" are printed with one ')' too many at the end
    (``interval(10s));``): accepted as written, the same statement as without it; an unmatched ')'
    anywhere else is still a syntax error at that ')'."""
    meant = (
        "CREATE STREAM streams2 trigger at_once INTO st1 TAGS(cc varchar(100)) as select _wstart, count(*) "
        'c1 from st partition by concat("tag-", tbname) as cc interval(10s)'
    )
    for printed in (meant + ");", meant + ")", meant + " ) ;"):
        s, t = parse_one(printed), parse_one(meant)
        assert isinstance(s, ast.CreateStreamLegacy) and isinstance(t, ast.CreateStreamLegacy)
        assert s.query == t.query and s.tags == t.tags and s.options == t.options and s.into == t.into
        assert cut(printed, s.query.span).endswith("interval(10s)") and s.query.text == t.query.text
    for bad, offset in (
        (meant + "));", len(meant)),  # two: the first is an error
        (meant + ") notify ('ws://x') on ('WINDOW_OPEN')", len(meant)),  # not the last token
        (meant.replace(" as cc", ") as cc"), meant.index(" as cc")),
        ("create stream s into o as select a from t) where a > 1", 41),
    ):
        e = error_of(bad)
        assert e.message == "syntax error: unmatched ')'" and e.offset == offset and bad[offset] == ")", bad
    # SELECT statements and 3.3.7 streams do not take it
    assert error_of("select _wstart, count(*) from st interval(10s))").message.startswith("syntax error")
    sql = "create stream s interval(1s) sliding(1s) from t into o as select _twstart, count(*) from %%trows)"
    assert error_of(sql).offset == len(sql) - 1


def test_seed_004_inteval() -> None:
    """Seed 004's sliding-window stream writes ``INTEVAL (5s) SLIDING (1s)``: read as INTERVAL where
    a query's window clause is, nowhere else (not a 3.3.7 trigger type, not a name elsewhere)."""
    sql = (
        "CREATE STREAM current_stream TRIGGER AT_ONCE INTO current_stream_output_stb AS "
        "_wstart as start, _wend as end, max(current) as max_current FROM meters WHERE voltage <= 220 "
        "INTEVAL (5s) SLIDING (1s);"
    )
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStreamLegacy) and s.query.implicit_select
    w = s.query.window
    assert w == ast.IntervalWindow(Duration(5, "s"), sliding=Duration(1, "s"), span=w.span)
    assert cut(sql, w.span) == "INTEVAL (5s) SLIDING (1s)"
    t = parse_one(sql.replace("INTEVAL", "INTERVAL"))
    assert isinstance(t, ast.CreateStreamLegacy) and t.query.window is not None
    assert (t.query.select, t.query.item_texts) == (s.query.select, s.query.item_texts)
    assert (t.query.window.interval, t.query.window.sliding) == (w.interval, w.sliding)  # type: ignore[union-attr]
    q = parse_one("select count(*) from t inteval(10s)")
    assert isinstance(q, ast.Select) and q.query.window == ast.IntervalWindow(
        Duration(10, "s"), span=q.query.window.span
    )
    sql = "create stream s inteval(1s) sliding(1s) from t into o as select _twstart, count(*) from %%trows"
    assert "expected stream options, INTO or a trigger type" in error_of(sql).message
    assert error_of(sql).offset == at(sql, "inteval")
    sql = "select count(*) from t inteval 10s"
    assert (error_of(sql).message, error_of(sql).offset) == ("unexpected 'inteval'", at(sql, "inteval"))
    # before FROM (a select-list item) it is a name like any other: a function call here
    q = parse_one("select inteval(a) from t")
    assert isinstance(q, ast.Select) and q.query.window is None
    assert isinstance(q.query.select.selects[0], exp.Anonymous)
    sql = "select a from (select a from t inteval(5s))"
    assert error_of(sql).code == Code.NOT_SUPPORTED and error_of(sql).offset == at(sql, "inteval")


# --------------------------------------------------------------------------- 3.3.7 streams (seed 002)


def stream337(sql: str) -> ast.CreateStream337:
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStream337)
    return s


def test_337_triggers() -> None:
    assert stream337("create stream s period(1h) into t as select 1").trigger == ast.PeriodTrigger(
        Duration(1, "h")
    )
    assert stream337("create stream s PERIOD(1d, 10m) notify('ws://x')").trigger == ast.PeriodTrigger(
        Duration(1, "d"), Duration(10, "m")
    )
    assert stream337("create stream s sliding(5m, 1m) from t").trigger == ast.SlidingTrigger(
        sliding=Duration(5, "m"), sliding_offset=Duration(1, "m")
    )
    assert stream337("create stream s interval(20s, 2s) sliding(10s) from t").trigger == ast.SlidingTrigger(
        sliding=Duration(10, "s"), interval=Duration(20, "s"), interval_offset=Duration(2, "s")
    )
    t = stream337("create stream s session(ts, 30s) from t").trigger
    assert isinstance(t, ast.SessionWindow) and (t.ts_column, t.gap) == ("ts", Duration(30, "s"))
    t = stream337("create stream s state_window(cint) true_for(10s) from ct1").trigger
    assert isinstance(t, ast.StateWindow) and t.expr == exp.column("cint") and t.true_for == Duration(10, "s")
    t = stream337("create stream s event_window(start with a > 1 end with a < 0) from t").trigger
    assert isinstance(t, ast.EventWindow) and t.start.sql() == "a > 1" and t.end.sql() == "a < 0"
    t = stream337("create stream s count_window(3, 3, cint) from ct1").trigger
    assert t == ast.CountWindow(count=3, sliding=3, columns=("cint",), span=t.span)


def test_337_full_statement() -> None:
    sql = (
        "create stream if not exists db.s0_g state_window(cint) from stb partition by tbname, tint "
        "stream_options(watermark(10s) | expired_time(1d)|ignore_disorder|delete_recalc|delete_output_table"
        "|fill_history('2025-01-01 00:00:00')|calc_notify_only|low_latency_calc|pre_filter(cint < 5 and "
        "tint=2)"
        "|force_output|max_delay(3s)|event_type(window_open|window_close)|ignore_nodata_trigger) "
        "notify('ws://localhost:6042/a', \"wss://h:1/b\") on ('WINDOW_OPEN', window_close) where cnt_v > 1 "
        "notify_options(notify_history|on_failure_pause) "
        "into res_stb OUTPUT_SUBTABLE(CONCAT('res_stb_', tbname)) (firstts, lastts composite key, cnt_v) "
        "tags (tname varchar(270) comment 'n' as tbname, g int as %%2) "
        "as select first(_c0), last_row(_c0), count(cint) from %%trows"
    )
    s = stream337(sql)
    assert (s.name, s.db, s.if_not_exists) == ("s0_g", "db", True)
    assert s.from_table is not None and s.from_table.name == "stb"
    assert [p.text for p in s.partition_by] == ["tbname", "tint"]
    o = s.options
    assert (o.watermark, o.expired_time, o.max_delay) == (
        Duration(10, "s"),
        Duration(1, "d"),
        Duration(3, "s"),
    )
    assert o.ignore_disorder and o.delete_recalc and o.delete_output_table and o.fill_history
    assert not o.fill_history_first and o.fill_history_start == exp.Literal.string("2025-01-01 00:00:00")
    assert o.calc_notify_only and o.low_latency_calc and o.force_output and o.ignore_nodata_trigger
    assert o.pre_filter is not None and o.pre_filter.sql() == "cint < 5 AND tint = 2"
    assert o.event_type == ["WINDOW_OPEN", "WINDOW_CLOSE"]
    assert cut(sql, o.spans["watermark"]) == "watermark(10s)"
    assert cut(sql, o.spans["pre_filter"]) == "pre_filter(cint < 5 and tint=2)"
    assert len(o.spans) == 13
    n = s.notify
    assert n is not None and n.urls == ["ws://localhost:6042/a", "wss://h:1/b"]
    assert (
        n.events == ["WINDOW_OPEN", "WINDOW_CLOSE"] and n.where is not None and n.where.sql() == "cnt_v > 1"
    )
    assert (n.history, n.on_failure) == (True, "PAUSE")
    assert s.into is not None and s.into.name == "res_stb"
    assert isinstance(s.output_subtable, exp.Concat)
    assert [(c.name, c.composite_key) for c in s.columns or []] == [
        ("firstts", False), ("lastts", True), ("cnt_v", False),
    ]  # fmt: skip
    assert s.tags is not None and [(t.name, t.type, t.comment) for t in s.tags] == [
        ("tname", TdType("VARCHAR", 270), "n"),
        ("g", TdType("INT"), None),
    ]
    assert s.tags[0].expr == exp.column("tbname") and s.tags[1].expr == exp.column("__td_p2")
    assert s.query is not None and s.query.select.args["from_"].this.name == "__td_trows"
    assert s.text == sql


def test_337_notify_only_and_defaults() -> None:
    s = stream337('CREATE stream sm1 PERIOD(1h) NOTIFY("ws://localhost:8080/notify");')
    assert s.into is None and s.query is None and s.columns is None and s.tags is None
    assert s.options == ast.StreamOptions337() and s.partition_by == []
    assert (
        s.notify is not None
        and s.notify.events == []
        and s.notify.history is None
        and s.notify.on_failure is None
    )


def test_337_acceptance_event_window_stream() -> None:
    sql = next(q for cid, _, role, q in ACCEPTANCE if cid == "td-038" and role == "streams")
    s = stream337(sql)
    assert (s.db, s.name, s.if_not_exists) == ("acc_td038", "s1", True)
    assert isinstance(s.trigger, ast.EventWindow) and s.trigger.true_for == Duration(5, "s")
    assert s.options.ignore_disorder and s.options.event_type == ["WINDOW_OPEN", "WINDOW_CLOSE"]
    assert s.notify is not None and s.notify.events == ["WINDOW_OPEN", "WINDOW_CLOSE"]
    assert s.query is not None and s.query.select.args["from_"].this.name == "__td_tbname"


def test_true_for_takes_a_bare_integer_as_milliseconds_and_a_quoted_duration() -> None:
    for text, want in (
        ("2999", Duration(2999, "a")),
        ("'3001a'", Duration(3001, "a")),
        ("3s", Duration(3, "s")),
    ):
        s = parse_one(f"create stream s state_window(a) true_for({text}) from t into o as select 1")
        assert isinstance(s, ast.CreateStream337) and isinstance(s.trigger, ast.StateWindow)
        assert s.trigger.true_for == want
    sql = "select count(*) from t event_window start with a > 1 end with a < 1 true_for('3x')"
    assert error_of(sql).offset == at(sql, "'3x'")


def test_notify_urls_keep_their_spans_in_either_quotes() -> None:
    sql = """create stream s period(1h) notify('ws://a:1/x', "wss://b:2/y?key=k") where n > 1"""
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStream337) and s.notify is not None
    assert s.notify.urls == ["ws://a:1/x", "wss://b:2/y?key=k"]
    assert [cut(sql, sp) for sp in s.notify.url_spans] == ["'ws://a:1/x'", '"wss://b:2/y?key=k"']
    assert s.notify.where is not None and s.notify.where.sql() == "n > 1"


def test_337_errors() -> None:
    sql = (
        "CREATE stream sm2 count_window(10, 1, col1) FROM tb1 STREAM_OPTIONS(CALC_ONTIFY_ONLY | "
        "PRE_FILTER(col1 > 0)) "
        "AS SELECT avg(col1) FROM %%trows"
    )
    # seed 002 prints the option so in its example: the same option as CALC_NOTIFY_ONLY
    s = parse_one(sql)
    assert isinstance(s, ast.CreateStream337) and s.options.calc_notify_only
    assert cut(sql, s.options.spans["calc_notify_only"]) == "CALC_ONTIFY_ONLY"
    sql = sql.replace("CALC_ONTIFY_ONLY", "CALC_NOTIFY_ONLYY")
    e = error_of(sql)
    assert e.message == "unknown stream option CALC_NOTIFY_ONLYY" and e.offset == at(sql, "CALC_NOTIFY_ONLYY")
    sql = "create stream s count_window(1) from t stream_options(calc_notify_only|calc_ontify_only)"
    e = error_of(sql)
    assert e.message == "duplicate stream option CALC_ONTIFY_ONLY" and e.offset == at(sql, "calc_ontify")
    sql = "create stream s period(1h) stream_options(watermark(1s)|WATERMARK(2s)) into x as select 1"
    e = error_of(sql)
    assert e.message == "duplicate stream option WATERMARK" and e.offset == at(sql, "WATERMARK")
    sql = "create stream s interval(1h) from t into o as select 1"
    assert error_of(sql).offset == at(sql, "from")
    sql = "create stream s count_window(x) from t"
    assert error_of(sql).message == "COUNT_WINDOW expects an integer count"
    sql = "create stream s state_window(a) from t stream_options(pre_filter(a >)) into o as select 1"
    assert error_of(sql).offset == at(sql, "))")
    sql = "create stream s foo into o as select 1"
    assert error_of(sql).offset == at(sql, "foo")
    sql = "create stream s period(1h) into o tags (a int) as select 1"
    assert "AS expr" in error_of(sql).message


# --------------------------------------------------------------------------- stream commands


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "drop stream if exists `acc_td038`.`s1`",
            ast.StreamCommand("drop", "s1", "acc_td038", if_exists=True),
        ),
        ("drop stream s1", ast.StreamCommand("drop", "s1")),
        ("pause stream if exists s", ast.StreamCommand("pause", "s", if_exists=True)),
        ("resume stream if exists ignore untreated s", ast.StreamCommand("resume", "s", None, True, True)),
        ("RESUME STREAM s", ast.StreamCommand("resume", "s")),
        ("start stream ignore untreated d.s", ast.StreamCommand("start", "s", "d", ignore_untreated=True)),
        ("stop stream if exists d.s", ast.StreamCommand("stop", "s", "d", if_exists=True)),
    ],
)
def test_stream_commands(sql: str, expected: ast.StreamCommand) -> None:
    assert parse_one(sql) == expected


def test_recalculate_stream() -> None:
    s = parse_one("recalculate stream d.s from '2025-01-01 00:00:00' to now")
    assert s == ast.RecalculateStream(
        "s", "d", exp.Literal.string("2025-01-01 00:00:00"), exp.CurrentTimestamp()
    )
    s = parse_one("RECALCULATE STREAM s FROM 1700000000000")
    assert s == ast.RecalculateStream("s", None, exp.Literal.number(1700000000000), None)


def test_unknown_statement() -> None:
    e = error_of("selec * from t")
    assert e.offset == 0 and e.message.startswith("unexpected 'selec'")
    sql = "drop table t extra"
    e = error_of(sql)
    assert e.message == "unexpected 'extra'" and e.offset == at(sql, "extra")
