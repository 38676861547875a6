"""Unit tests of spark_workers.sql.render: canonical text and parse -> render -> parse round trips."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from sqlglot import exp

from spark_workers.sql import ast, expr_sql, parse, parse_expression, parse_one, render
from tests.sql.test_parser import ACCEPTANCE, acceptance_params

# Text-position fields: they describe where something was written, not what it means.
_POSITION_FIELDS = frozenset({"span", "spans", "text", "row_spans", "item_texts", "url_spans"})


def meaning(value: Any) -> Any:
    """A comparable form of a statement without spans and text fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            {
                f.name: meaning(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.name not in _POSITION_FIELDS
            },
        )
    if isinstance(value, list | tuple):
        return [meaning(v) for v in value]
    if isinstance(value, dict):
        return {k: meaning(v) for k, v in value.items()}
    if isinstance(value, exp.Expr):
        # sqlglot equality ignores meta; keep the duration literal so `1h` vs `60m` differ.
        literals = [n.meta_get("td_duration") for n in value.walk() if isinstance(n, exp.Interval)]
        return ("expr", value, literals)
    return value


def assert_round_trip(sql: str) -> str:
    stmt = parse_one(sql)
    text = render(stmt)
    again = parse_one(text)
    assert meaning(again) == meaning(stmt), f"{sql}\n -> {text}"
    assert render(again) == text  # canonical: rendering is a fixed point
    return text


# Stream statements from the seeds (000 legacy, 001 developer guide, 002 3.3.7) and variations.
SEED_STREAMS = [
    "CREATE STREAM avg_vol_s INTO avg_vol AS SELECT _wstart, count(*), avg(voltage) FROM meters "
    "PARTITION BY tbname INTERVAL(1m) SLIDING(30s);",
    "CREATE STREAM streams0 INTO streamt0 AS SELECT _wstart, count(*), avg(voltage) from meters "
    "PARTITION BY tbname EVENT_WINDOW START WITH voltage < 0 END WITH voltage > 9;",
    "CREATE STREAM streams1 IGNORE EXPIRED 1 WATERMARK 100s INTO streamt1 AS SELECT _wstart, count(*), "
    "avg(voltage) from meters PARTITION BY tbname COUNT_WINDOW(10);",
    "CREATE STREAM avg_vol_s INTO avg_vol SUBTABLE(CONCAT('new-', tname)) AS SELECT _wstart, count(*), "
    "avg(voltage) FROM meters PARTITION BY tbname tname INTERVAL(1m);",
    "create stream if not exists s1 fill_history 1 into st1  as select count(*) from t1 where ts > "
    "'2020-01-30' "
    "and ts < '2023-01-01' interval(10s)",
    "create stream if not exists count_history_s fill_history 1 async into count_history as select count(*) "
    "from power.meters interval(10s)",
    "CREATE STREAM output_tag trigger at_once INTO output_tag_s TAGS(alias_tag varchar(100)) as select "
    "_wstart, "
    'count(*) from power.meters partition by concat("tag-", tbname) as alias_tag interval(10s)',
    "CREATE STREAM avg_current_stream FILL_HISTORY 1 INTO avg_current AS SELECT _wstart, _wend, AVG(current) "
    "FROM meters INTERVAL (1m) NOTIFY ('ws://localhost:8080/notify', "
    "'wss://192.168.1.1:8080/notify?key=foo') "
    "ON ('WINDOW_OPEN', 'WINDOW_CLOSE') NOTIFY_HISTORY 0 ON_FAILURE PAUSE",
    "create stream s trigger max_delay 5s delete_mark 1d ignore update 0 into o (a, b composite key) as "
    "select _wstart, last(x) from t session(ts, 10s)",
    "create stream s trigger continuous_window_close recalculate 1h into o as select _wstart, sum(x) from t "
    "interval(1m) fill(value, 0)",
    "create stream s trigger force_window_close into o as select _wstart, sum(x) from t state_window(st) "
    "true_for(2s)",
    "CREATE stream sm1 count_window(1) FROM tb1 INTO tb3 AS SELECT _twstart, avg(col1) FROM tb2 "
    "WHERE _c0 >= _twend - 5m AND _c0 <= _twend;",
    "CREATE stream sm2 count_window(10, 1, col1) FROM tb1 STREAM_OPTIONS(CALC_NOTIFY_ONLY | PRE_FILTER(col1 "
    "> 0)) "
    'NOTIFY("ws://localhost:8080/notify") ON (WINDOW_CLOSE) AS SELECT avg(col1) FROM %%trows;',
    "CREATE STREAM `idmp`.`ana_temp` EVENT_WINDOW(start with `temp` > 80 end with `temp` <= 80 ) "
    "TRUE_FOR(10m) "
    "FROM `idmp`.`vt_envsens02_471544` STREAM_OPTIONS( IGNORE_DISORDER) INTO `idmp`.`ana_temp` AS "
    "SELECT _twstart+0s as output_timestamp, avg(`temp`) as `avgtemp` FROM idmp.`vt_engsens02_471544` "
    "where ts >= _twstart and ts <= _twend;",
    "CREATE stream sm1 INTERVAL(5m) SLIDING(5m) FROM stb1 PARTITION BY tbname INTO stb2 AS SELECT _twstart, "
    "avg(col1) FROM %%tbname WHERE _c0 >= _twstart AND _c0 <= _twend;",
    "CREATE stream sm2 INTERVAL(5m) SLIDING(5m) FROM stb1 PARTITION BY tbname STREAM_OPTIONS(MAX_DELAY(1m) | "
    "FILL_HISTORY_FIRST) INTO stb2 AS SELECT _twstart, avg(col1) FROM %%tbname WHERE _c0 >= _twstart AND "
    "_c0 <= _twend;",
    "CREATE STREAM avg_stream INTERVAL(1m) SLIDING(1m) FROM meters NOTIFY ('ws://localhost:8080/notify', "
    "'wss://192.168.1.1:8080/notify?key=foo') ON ('WINDOW_OPEN', 'WINDOW_CLOSE') "
    "NOTIFY_OPTIONS(NOTIFY_HISTORY | ON_FAILURE_PAUSE) INTO avg_stb AS SELECT _twstart, _twend, AVG(current) "
    "FROM %%trows;",
    "CREATE stream sm1 PERIOD(1h) INTO tb2 AS SELECT cast(_tlocaltime/1000000 AS TIMESTAMP), count(*) FROM "
    "tb1;",
    'CREATE stream sm1 PERIOD(1h) NOTIFY("ws://localhost:8080/notify");',
    "create stream s sliding(1h, 5m) from t partition by tbname, region stream_options(watermark(10s)|"
    "expired_time(1d)|delete_recalc|fill_history_first(now - 1d)|low_latency_calc|force_output|"
    "ignore_nodata_trigger|event_type(window_open)) notify('ws://x') on (on_time) where avg_v > 10 into o "
    "output_subtable(concat('o_', %%1)) (ts, v composite key) tags (r varchar(16) comment 'region' as %%2) "
    "as select _tcurrent_ts, avg(v) avg_v from %%tbname where ts >= _tprev_ts and ts < _tcurrent_ts",
    "create stream s session(ts, 10s) from t into o as select _twstart, count(*) from %%trows",
    "create stream s0_g state_window(cint) from stb partition by tbname, tint stream_options(watermark(10s)) "
    "into res_stb OUTPUT_SUBTABLE(CONCAT('res_stb_', tbname)) (firstts, lastts, cnt_v, sum_v, avg_v) as "
    "select first(_c0), last_row(_c0), count(cint), sum(cint), avg(cint) from %%trows",
    "create stream s1 trigger window_close watermark 1s ignore expired 1 into out1 as select window_start() "
    "as ws, "
    "window_end() as we, color, ts from demoE where size > 2 group by tumblingwindow(ss, 1)",
    "create stream s1 into out1 as select count(*) from demo group by id, slidingwindow(ss, 5, 1) "
    "filter (where revenue > 100) over (when revenue > 200)",
    "create stream s1 into out1 as select * from demo group by countwindow(3, 1) filter (where a > 1) having "
    "count(*) > 2",
]


@pytest.mark.parametrize("sql", SEED_STREAMS)
def test_seed_streams_round_trip(sql: str) -> None:
    stmt = parse_one(sql)
    assert isinstance(stmt, ast.CreateStreamLegacy | ast.CreateStream337)
    assert_round_trip(sql)


@pytest.mark.parametrize(
    "sql", acceptance_params([(sql,) for sql in sorted({sql for *_, sql in ACCEPTANCE})])
)
def test_acceptance_statements_round_trip(sql: str) -> None:
    for stmt in parse(sql):
        text = render(stmt)
        assert meaning(parse_one(text)) == meaning(stmt), text


@pytest.mark.parametrize(
    "sql",
    [
        "create database if not exists d vgroups 1 precision 'ms' keep 3650d,3650d,3650d cachemodel 'none'",
        "drop database if exists d force",
        "use d",
        "create stable if not exists d.st (ts timestamp, v varchar(16) comment 'it''s', u int unsigned, "
        "k int composite key) tags (loc nchar(8)) comment 'meters'",
        "create table t1 (ts timestamp, a double)",
        "create table t1 using st (ta, tb) tags (1, 'x') if not exists t2 using st tags (-2, null)",
        "create table t1 using st tags (1) comment 'c' ttl 3 t2 using st tags (2) ttl 0",
        "create table t1 (ts timestamp, a double) comment 'n' ttl 10",
        "insert into d.t1 using d.st tags (1) ttl 2 values (now, -1)",
        "drop table if exists t1, d.t2",
        "drop stable st",
        "insert into d.t1 using d.st (ta) tags (1) (ts, v) values (now, -1) (now + 1s, 2.5) t2 values "
        "('2025-01-01', true, null, today())",
        "delete from t where ts >= 1648791213001 and ts <= now - 1d",
        "show databases",
        "show d.stables like 'st%'",
        "show tables",
        "show d.streams",
        "show vgroups",
        "show create table d.t",
        "show create stable st",
        "show create database d",
        "show tags from d.ct1",
        "desc d.t",
        "pause stream if exists s",
        "resume stream if exists ignore untreated s",
        "start stream ignore untreated d.s",
        "stop stream d.s",
        "drop stream if exists d.s",
        "recalculate stream d.s from '2025-01-01 00:00:00' to now",
        "select _wstart, max(a) from t where ts > now - 1d partition by tbname interval(1m, 10s) "
        "sliding(30s) "
        "fill(prev) order by _wstart desc limit 2, 10",
        "select count(*) from t event_window start with case when a > 1 then 1 else 0 end = 1 end with a > 9 "
        "true_for(1s) having count(*) > 1 limit 5",
        "select a, count(*) from t group by a having count(*) > 1 order by a",
        "with x as (select a from t) select * from x union all select b from u",
        "select `select`, `min(k)` from `my table`",
        # virtual tables (TDengine SQL manual, "Virtual Tables")
        "create stable vst (ts timestamp, c int) tags (g int) comment 'v' virtual 1",
        "create vtable if not exists d.v1 (ts timestamp, c1 int from d.t1.c, c2 float from t2.x, c3 int)",
        "create vtable vc1 (c from d.ct1.c, t.x) using d.vst (g) tags (1)",
        "drop vtable if exists d.v1",
        "show child d.vtables like 'v%'",
        "show normal vtables",
        "show create vtable d.v1",
    ],
)
def test_other_statements_round_trip(sql: str) -> None:
    assert_round_trip(sql)


def test_canonical_legacy_stream_text() -> None:
    sql = (
        "create stream if not exists power.s1 watermark 100s trigger at_once into outstb (ts, c composite "
        "key) "
        "tags (g int comment 'grp') subtable(concat('t_', tname)) as select _wstart, min(k), sum(k) as s "
        "from ct1 partition by tbname tname interval(10m) notify ('ws://h/n') on ('WINDOW_CLOSE') "
        "on_failure drop"
    )
    assert render(parse_one(sql)) == (
        "CREATE STREAM IF NOT EXISTS power.s1 TRIGGER AT_ONCE WATERMARK 100s INTO outstb (ts, c COMPOSITE "
        "KEY) "
        "TAGS (g INT COMMENT 'grp') SUBTABLE(CONCAT('t_', tname)) AS SELECT _wstart, min(k), sum(k) AS s "
        "FROM ct1 PARTITION BY tbname AS tname INTERVAL(10m) NOTIFY ('ws://h/n') ON ('WINDOW_CLOSE') "
        "ON_FAILURE DROP"
    )


def test_canonical_337_stream_text() -> None:
    sql = (
        "create stream s event_window(start with a > 1 end with a < 0) true_for(5s) from t partition by "
        "tbname "
        "stream_options(event_type(window_open|window_close)|ignore_disorder) notify('ws://x') "
        "on(window_open|window_close) into o output_subtable(concat('o_', tbname)) "
        "as select _c0, `c0` from %%tbname where ts >= _twstart and ts < _twend"
    )
    assert render(parse_one(sql)) == (
        "CREATE STREAM s EVENT_WINDOW(START WITH a > 1 END WITH a < 0) TRUE_FOR(5s) FROM t PARTITION BY "
        "tbname "
        "STREAM_OPTIONS(IGNORE_DISORDER | EVENT_TYPE(WINDOW_OPEN|WINDOW_CLOSE)) NOTIFY('ws://x') "
        "ON (WINDOW_OPEN|WINDOW_CLOSE) INTO o OUTPUT_SUBTABLE(CONCAT('o_', tbname)) "
        "AS SELECT _c0, `c0` FROM %%tbname WHERE ts >= _twstart AND ts < _twend"
    )


def test_expr_sql_prints_tdengine_literals() -> None:
    e = parse_expression(
        "ts >= NOW() - 1h and ts < now + 500a and x = %%2 and cast(y as timestamp) > '2025-01-01'"
    )
    assert (
        expr_sql(e)
        == "ts >= now - 1h AND ts < now + 500a AND x = %%2 AND CAST(y AS TIMESTAMP) > '2025-01-01'"
    )
    assert expr_sql(exp.column("__td_tbname")) == "%%tbname"
    assert expr_sql(exp.table_("__td_trows")) == "%%trows"
    assert (
        expr_sql(exp.column("__td_trows", quoted=True)) == "`__td_trows`"
    )  # a real column, not a placeholder
    interval = exp.Interval(this=exp.Literal.string("2"), unit=exp.Var(this="HOUR"))  # no meta: built by code
    assert expr_sql(interval) == "2h"
    assert expr_sql(parse_expression("cast(a as bigint) + cast(b as varchar(8)) + cast(c as nchar(2))")) == (
        "CAST(a AS BIGINT) + CAST(b AS VARCHAR(8)) + CAST(c AS NCHAR(2))"
    )


def test_item_texts_survive_a_round_trip_unless_the_tree_changed() -> None:
    stmt = parse_one(
        "create stream s into o as select _wstart, min(k), max(k)+1, count(*) c from t interval(1s)"
    )
    assert isinstance(stmt, ast.CreateStreamLegacy)
    again = parse_one(render(stmt))
    assert isinstance(again, ast.CreateStreamLegacy)
    assert again.query.item_texts == ["_wstart", "min(k)", "max(k)+1", "count(*)"]
    stmt.query.select.selects[1].replace(exp.Max(this=exp.column("k")))  # edited by code: old text is stale
    text = render(stmt)
    assert "MAX(k), max(k)+1" in text
    assert parse_one(text).query.item_texts[1] == "MAX(k)"


def test_render_rejects_non_statements() -> None:
    with pytest.raises(TypeError):
        render("select 1")  # type: ignore[arg-type]
