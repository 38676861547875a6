"""The designer's design document (spark_workers/streams/design/, docs/designer.md "Design")."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from spark_workers.errors import SqlError
from spark_workers.sql import ast
from spark_workers.sql.parser import parse_one
from spark_workers.sql.render import render
from spark_workers.streams.design import (
    DesignError,
    NotExpressible,
    check_design,
    convert_design,
    defaults,
    design_changes,
    design_from_sql,
    design_to_sql,
    field_spans,
    impact,
    locate_error,
    placeholders_for,
    sql_variants,
)

ACCEPTANCE = Path("/work/shared/acceptance/cases")
URL = "ws://127.0.0.1:8000/ws/notify/inbox?key=k1"


def _acceptance_streams() -> list[str]:
    """The streams of the shared acceptance cases that tdweb parses (``test_parser.NOT_YET``
    lists the others, expected to fail there)."""
    from tests.sql.test_parser import not_yet

    out: list[str] = []
    for f in sorted(ACCEPTANCE.glob("*.json")):
        out.extend(sql for sql in json.loads(f.read_text())["streams"] if not_yet(sql) is None)
    return out


def _demo_streams() -> list[str]:
    from streams_app.services.demo import stream_sql

    return stream_sql(notify_url=URL)


LEGACY_CASES = [
    # every window type
    "CREATE STREAM s1 INTO out1 AS SELECT _wstart, count(*) FROM t1 INTERVAL(10s)",
    "CREATE STREAM s1 INTO out1 AS SELECT _wstart, avg(a) FROM d.t1 INTERVAL(10s, 2s) SLIDING(5s)",
    "CREATE STREAM s1 INTO out1 AS SELECT _wstart, _wend, count(*) FROM t1 SESSION(ts, 10s)",
    "CREATE STREAM s1 INTO out1 AS SELECT _wstart, count(*) FROM t1 STATE_WINDOW(a) TRUE_FOR(3s)",
    "CREATE STREAM s1 INTO out1 AS SELECT _wstart, count(*) FROM t1 "
    "EVENT_WINDOW START WITH a > 5 AND b < 2 END WITH a <= 0 TRUE_FOR(1m)",
    "CREATE STREAM s1 INTO out1 AS SELECT _wstart, sum(a) FROM t1 COUNT_WINDOW(5, 2, a, b)",
    # eKuiper windows (seed 003)
    "CREATE STREAM s1 INTO out1 AS SELECT window_start(), count(*) FROM t1 GROUP BY TUMBLINGWINDOW(ss, 10)",
    "CREATE STREAM s1 INTO out1 AS SELECT count(*) FROM t1 GROUP BY c, HOPPINGWINDOW(mi, 5, 1)",
    "CREATE STREAM s1 INTO out1 AS SELECT count(*) FROM t1 GROUP BY SLIDINGWINDOW(ss, 10) OVER (WHEN a > 5)",
    "CREATE STREAM s1 INTO out1 AS SELECT count(*) FROM t1 GROUP BY SESSIONWINDOW(hh, 2, 1) "
    "FILTER (WHERE b = 1)",
    "CREATE STREAM s1 INTO out1 AS SELECT count(*) FROM t1 GROUP BY COUNTWINDOW(5, 2)",
    # options, WHERE, PARTITION BY, FILL, output, notify
    "CREATE STREAM IF NOT EXISTS d.s2 TRIGGER MAX_DELAY 10s WATERMARK 5s IGNORE EXPIRED 0 DELETE_MARK 1d "
    "FILL_HISTORY 1 ASYNC IGNORE UPDATE 0 EVENT_TIME 0 INTO d.out2 (c1, c2 COMPOSITE KEY, c3) "
    "TAGS (g INT, tn VARCHAR(64) COMMENT 'the subtable') SUBTABLE(CONCAT('o_', tn)) AS "
    "SELECT _wstart AS ws, MIN(k), max(k) + 1 FROM d.st WHERE k IS NOT NULL AND tbname <> 'x' "
    "PARTITION BY g, tbname AS tn INTERVAL(1m) FILL(VALUE, 0, 1)",
    "CREATE STREAM s3 TRIGGER CONTINUOUS_WINDOW_CLOSE RECALCULATE 1h INTO out3 AS "
    "SELECT _wstart, last(a) FROM t1 INTERVAL(1h)",
    "CREATE STREAM s4 TRIGGER FORCE_WINDOW_CLOSE INTO out4 AS SELECT _wstart, "
    "count(*) FROM t1 INTERVAL(1m) FILL(PREV)",
    "CREATE STREAM s5 TRIGGER WINDOW_CLOSE FILL_HISTORY 0 INTO out5 AS SELECT _WSTART, _wduration AS dur, "
    "count(*) FROM t1 SESSION(ts, 1m) "
    f"NOTIFY ('{URL}', 'wss://example.com/n') ON ('WINDOW_OPEN', 'WINDOW_CLOSE') "
    "NOTIFY_HISTORY 1 ON_FAILURE PAUSE",
    "CREATE STREAM s6 INTO out6 AS SELECT _wstart, count(*) FROM t1 PARTITION BY tbname STATE_WINDOW(a) "
    "HAVING count(*) > 1",
    # issue 13: no window (seed 000 non-window computations), a subquery or a join as FROM
    "CREATE STREAM etl INTO etl_out AS SELECT ts, a * 2 AS a2, tbname AS tn FROM st WHERE a > 1 "
    "PARTITION BY tbname",
    "CREATE STREAM s7 INTO out7 AS SELECT _wstart, count(*) FROM (SELECT ts, a FROM t1 WHERE a > 1) "
    "INTERVAL(10s)",
    "CREATE STREAM s8 INTO out8 AS SELECT _wstart, avg(y.b) FROM d.t1 AS x JOIN d.t2 AS y ON x.ts = y.ts "
    "WHERE x.a > 0 INTERVAL(1m) FILL(NULL)",
]

V337_CASES = [
    "CREATE STREAM s1 PERIOD(1m) FROM t1 INTO out1 AS SELECT _tlocaltime AS ts, count(*) FROM %%trows",
    "CREATE STREAM s1 PERIOD(10s, 1s) INTO out1 AS SELECT cast(_tlocaltime / 1000000 "
    "AS TIMESTAMP), count(*) FROM t1",
    "CREATE STREAM s1 SLIDING(1m, 10s) FROM t1 STREAM_OPTIONS(IGNORE_NODATA_TRIGGER) INTO out1 AS "
    "SELECT _tcurrent_ts, count(*) FROM t1 WHERE ts >= _tprev_ts AND ts < _tcurrent_ts",
    "CREATE STREAM s1 INTERVAL(10s, 1s) SLIDING(5s) FROM t1 "
    "STREAM_OPTIONS(IGNORE_NODATA_TRIGGER) INTO out1 AS "
    "SELECT _twstart, avg(a) FROM %%trows",
    "CREATE STREAM s1 SESSION(ts, 10s) FROM t1 INTO out1 AS SELECT _twstart, _twend, count(*) FROM %%trows",
    "CREATE STREAM s1 STATE_WINDOW(a) TRUE_FOR(2s) FROM st PARTITION BY tbname INTO out1 AS "
    "SELECT _twstart, count(*) FROM %%trows",
    "CREATE STREAM s1 EVENT_WINDOW(START WITH a > 1 END WITH a < 0) TRUE_FOR(1s) "
    "FROM st PARTITION BY tbname, g "
    "INTO out1 TAGS (tn VARCHAR(270) AS %%tbname, g INT COMMENT 'group' AS %%2) AS "
    "SELECT _twstart, _twrownum, max(a) FROM %%trows",
    "CREATE STREAM s1 COUNT_WINDOW(1) FROM t1 INTO out1 AS SELECT _twstart, sum(a) FROM %%trows",
    "CREATE STREAM IF NOT EXISTS d.s1 STATE_WINDOW(a) FROM d.st PARTITION BY tbname "
    "STREAM_OPTIONS(WATERMARK(10s) | EXPIRED_TIME(1d) | IGNORE_DISORDER | "
    "DELETE_RECALC | DELETE_OUTPUT_TABLE | "
    "FILL_HISTORY('2024-01-01 00:00:00') | CALC_NOTIFY_ONLY | LOW_LATENCY_CALC | PRE_FILTER(a > 0) | "
    "FORCE_OUTPUT | MAX_DELAY(5s) | EVENT_TYPE(WINDOW_OPEN|WINDOW_CLOSE)) "
    f"NOTIFY('{URL}', 'wss://x.example/y') ON (WINDOW_OPEN|WINDOW_CLOSE) WHERE a > 10 "
    "NOTIFY_OPTIONS(NOTIFY_HISTORY|ON_FAILURE_PAUSE) "
    "INTO d.out1 OUTPUT_SUBTABLE(CONCAT('o_', %%1)) (ts, n COMPOSITE KEY, m) AS "
    "SELECT _twstart, count(*), max(a) FROM %%trows",
    "CREATE STREAM s1 STATE_WINDOW(a) FROM t1 STREAM_OPTIONS(FILL_HISTORY_FIRST(now - 1d)) "
    f"NOTIFY('{URL}') ON (WINDOW_CLOSE)",
    "CREATE STREAM s1 EVENT_WINDOW(START WITH a > 1 END WITH a < 0) FROM st PARTITION BY tbname "
    "INTO out1 AS SELECT _twstart, avg(b) FROM %%tbname WHERE ts >= _twstart AND ts < _twend",
]


def _all_cases() -> list[str]:
    return LEGACY_CASES + V337_CASES + _acceptance_streams() + _demo_streams()


def _no_layout(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "layout"}


# --------------------------------------------------------------------------- round trips


def test_case_corpus_is_large_and_covers_both_syntaxes() -> None:
    cases = _all_cases()
    syntaxes = [design_from_sql(sql)["syntax"] for sql in cases]
    assert len(cases) >= 50
    assert syntaxes.count("legacy") >= 25 and syntaxes.count("3.3.7") >= 15
    kinds = {design_from_sql(sql)["nodes"]["trigger"]["type"] for sql in cases}
    assert kinds == {"interval", "sliding", "period", "session", "state", "event", "count", "ekuiper", "none"}


@pytest.mark.parametrize("sql", _all_cases())
def test_sql_design_sql_is_the_canonical_statement(sql: str) -> None:
    design = design_from_sql(sql)
    assert design_to_sql(design) == render(parse_one(sql))


@pytest.mark.parametrize("sql", _all_cases())
def test_design_sql_design_is_lossless(sql: str) -> None:
    design = design_from_sql(sql)
    again = design_from_sql(design_to_sql(design, design["syntax"]))
    assert _no_layout(again) == _no_layout(design)
    json.dumps(design)  # plain JSON


def test_legacy_query_is_split_into_nodes() -> None:
    d = design_from_sql(LEGACY_CASES[11])
    n = d["nodes"]
    assert (d["name"], d["db"], d["syntax"], d["if_not_exists"]) == ("s2", "d", "legacy", True)
    assert n["source"] == {
        "db": "d",
        "table": "st",
        "partition_by": [{"sql": "g", "alias": None}, {"sql": "tbname", "alias": "tn"}],
    }
    assert n["prefilter"] == {"condition": "NOT k IS NULL AND tbname <> 'x'"} or n["prefilter"][
        "condition"
    ].endswith("tbname <> 'x'")
    assert n["trigger"] == {
        "type": "interval",
        "interval": "1m",
        "offset": None,
        "sliding": None,
        "sliding_offset": None,
    }
    assert n["computation"] == {
        "query": "SELECT _twstart AS ws, MIN(k), max(k) + 1 FROM %%trows FILL(VALUE, 0, 1)"
    }
    o = n["options"]
    assert (o["trigger_mode"], o["max_delay"], o["watermark"], o["delete_mark"]) == (
        "MAX_DELAY",
        "10s",
        "5s",
        "1d",
    )
    assert (
        o["ignore_expired"],
        o["ignore_update"],
        o["fill_history"],
        o["fill_history_async"],
        o["event_time"],
    ) == (
        False,
        False,
        True,
        True,
        False,
    )
    assert n["output"] == {
        "db": "d",
        "table": "out2",
        "subtable": "CONCAT('o_', tn)",
        "columns": [
            {"name": "c1", "composite_key": False},
            {"name": "c2", "composite_key": True},
            {"name": "c3", "composite_key": False},
        ],
        "tags": [
            {"name": "g", "type": "INT", "comment": None, "expr": None},
            {"name": "tn", "type": "VARCHAR(64)", "comment": "the subtable", "expr": None},
        ],
    }
    assert n["notify"] is None


def test_placeholder_case_survives_and_ekuiper_window_leaves_group_by() -> None:
    d = design_from_sql(LEGACY_CASES[14])
    assert d["nodes"]["computation"]["query"] == "SELECT _TWSTART, _twduration AS dur, count(*) FROM %%trows"
    assert d["nodes"]["notify"] == {
        "urls": [URL, "wss://example.com/n"],
        "events": ["WINDOW_OPEN", "WINDOW_CLOSE"],
        "where": None,
        "history": True,
        "on_failure": "PAUSE",
    }
    ek = design_from_sql(LEGACY_CASES[7])
    assert ek["nodes"]["trigger"] == {
        "type": "ekuiper",
        "function": "hopping",
        "unit": "MI",
        "args": [5, 1],
        "over_when": None,
        "filter": None,
    }
    assert ek["nodes"]["computation"]["query"] == "SELECT count(*) FROM %%trows GROUP BY c"


def test_337_nodes() -> None:
    d = design_from_sql(V337_CASES[8])
    n = d["nodes"]
    assert n["source"]["partition_by"] == [{"sql": "tbname", "alias": None}]
    assert n["prefilter"] == {"condition": "a > 0"}
    assert n["trigger"] == {"type": "state", "expr": "a", "true_for": None}
    o = n["options"]
    assert o["trigger_mode"] is None and o["max_delay"] == "5s" and o["expired_time"] == "1d"
    assert o["fill_history"] is True and o["fill_history_start"] == "'2024-01-01 00:00:00'"
    assert o["event_type"] == ["WINDOW_OPEN", "WINDOW_CLOSE"] and o["force_output"] is True
    assert n["notify"]["where"] == "a > 10" and n["notify"]["history"] is True
    assert n["output"]["subtable"] == "CONCAT('o_', %%1)"
    notify_only = design_from_sql(V337_CASES[9])["nodes"]
    assert notify_only["computation"] is None and notify_only["output"] is None
    period = design_from_sql(V337_CASES[1])["nodes"]
    assert period["source"] is None and period["trigger"] == {
        "type": "period",
        "period": "10s",
        "offset": "1s",
    }


def test_design_from_sql_errors() -> None:
    with pytest.raises(SqlError) as bad:
        design_from_sql("CREATE STREAM s1 INTO o AS SELECT _wstart, count(*) FROM t1 INTERVAL(10x)")
    with pytest.raises(SqlError) as same:
        parse_one("CREATE STREAM s1 INTO o AS SELECT _wstart, count(*) FROM t1 INTERVAL(10x)")
    assert (bad.value.message, bad.value.offset) == (same.value.message, same.value.offset)
    with pytest.raises(SqlError, match="CREATE STREAM"):
        design_from_sql("SELECT * FROM t1")
    comma = "CREATE STREAM s1 INTO o AS SELECT _wstart, count(*) FROM t1, t2 INTERVAL(10s)"
    assert design_from_sql(comma)["nodes"]["source"]["from"] == "t1, t2"  # a join: source.from


def test_default_db_is_context_only() -> None:
    d = design_from_sql(LEGACY_CASES[0], default_db="air")
    assert d["default_db"] == "air" and d["db"] is None
    assert design_to_sql(d) == render(parse_one(LEGACY_CASES[0]))


# --------------------------------------------------------------------------- cross syntax


def _legacy_cross_cases() -> list[str]:
    out = []
    for sql in _all_cases():
        d = design_from_sql(sql)
        if d["syntax"] == "legacy":
            out.append(sql)
    return out


def test_legacy_to_337_keeps_trigger_source_partition_and_computation() -> None:
    converted = 0
    for sql in _legacy_cross_cases():
        d = design_from_sql(sql)
        try:
            text = design_to_sql(d, "3.3.7")
        except NotExpressible:
            continue
        converted += 1
        s = parse_one(text)
        assert isinstance(s, ast.CreateStream337)
        legacy = parse_one(sql)
        assert isinstance(legacy, ast.CreateStreamLegacy)
        q = legacy.query
        w = q.window
        t = s.trigger
        if isinstance(w, ast.IntervalWindow):
            assert isinstance(t, ast.SlidingTrigger)
            assert (t.interval, t.interval_offset, t.sliding) == (
                w.interval,
                w.offset,
                w.sliding or w.interval,
            )
            assert s.options.ignore_nodata_trigger  # legacy windows need rows
        else:
            assert t == dataclasses.replace(w, span=t.span)  # type: ignore[arg-type]
        assert s.from_table is not None and str(s.from_table) == str(
            ast.TableName(d["nodes"]["source"]["table"], d["nodes"]["source"]["db"])
        )
        assert [p.text for p in s.partition_by] == [p.text for p in q.partition_by]
        assert s.query is not None
        where = q.select.args.get("where")
        assert (s.options.pre_filter is None) == (where is None)
        if where is not None:
            assert s.options.pre_filter == where.this
        # the computation: same items (window pseudo-columns as placeholders), over %%trows
        items = [e.sql() for e in s.query.select.expressions]  # type: ignore[attr-defined]
        assert len(items) == len(q.select.expressions)  # type: ignore[attr-defined]
        assert "__td_trows" in s.query.select.sql()
        assert "_wstart" not in " ".join(i.split(" AS ")[0] for i in items).replace("_twstart", "")
        # legacy defaults written out: IGNORE EXPIRED 1 / IGNORE UPDATE 1 -> IGNORE_DISORDER
        o = d["nodes"]["options"]
        if d["nodes"]["trigger"]["type"] != "count" and o["ignore_expired"] in (None, True):
            assert s.options.ignore_disorder
    assert converted >= 5


def test_337_to_legacy_keeps_the_stream() -> None:
    d = design_from_sql(
        "CREATE STREAM s1 EVENT_WINDOW(START WITH a > 1 END WITH a < 0) FROM st PARTITION BY tbname "
        "STREAM_OPTIONS(PRE_FILTER(b > 0) | MAX_DELAY(10s)) NOTIFY('ws://h/n') ON (WINDOW_CLOSE) "
        "INTO out1 AS SELECT _twstart, count(*) FROM %%trows"
    )
    text = design_to_sql(d, "legacy")
    assert text == (
        "CREATE STREAM s1 TRIGGER MAX_DELAY 10s IGNORE EXPIRED 0 IGNORE UPDATE 0 INTO out1 "
        "TAGS (tag_tbname VARCHAR(270)) AS SELECT _wstart AS _twstart, count(*) FROM st WHERE b > 0 "
        "PARTITION BY tbname EVENT_WINDOW START WITH a > 1 END WITH a < 0 "
        "NOTIFY ('ws://h/n') ON ('WINDOW_CLOSE') ON_FAILURE DROP"
    )
    back = design_from_sql(text)
    assert back["nodes"]["trigger"] == d["nodes"]["trigger"]
    assert back["nodes"]["prefilter"] == d["nodes"]["prefilter"]
    assert back["nodes"]["source"] == d["nodes"]["source"]


def test_double_conversion_is_stable() -> None:
    sql = (
        "CREATE STREAM s1 FILL_HISTORY 1 INTO out1 TAGS (station VARCHAR(32)) AS SELECT "
        "_wstart AS ws, avg(a) AS x "
        "FROM st WHERE a > 0 PARTITION BY station SESSION(ts, 10m)"
    )
    d = design_from_sql(sql)
    v337 = design_to_sql(d, "3.3.7")
    assert (
        "TAGS (station VARCHAR(32) AS station)" in v337
        and "STREAM_OPTIONS(IGNORE_DISORDER | FILL_HISTORY" in v337
    )
    assert design_to_sql(design_from_sql(v337), "legacy") == render(parse_one(sql))


@pytest.mark.parametrize(
    ("sql", "syntax", "reason"),
    [
        (LEGACY_CASES[0].replace("INTO", "TRIGGER AT_ONCE INTO"), "3.3.7", "AT_ONCE has no 3.3.7 equivalent"),
        (LEGACY_CASES[12], "3.3.7", "CONTINUOUS_WINDOW_CLOSE has no 3.3.7 equivalent"),
        (LEGACY_CASES[13], "3.3.7", "FORCE_WINDOW_CLOSE"),
        (LEGACY_CASES[6], "3.3.7", "eKuiper window functions exist only in legacy"),
        (LEGACY_CASES[0].replace("INTERVAL(10s)", "INTERVAL(10s) FILL(NULL)"), "3.3.7", "FILL"),
        (LEGACY_CASES[0].replace("INTO", "DELETE_MARK 1d INTO"), "3.3.7", "DELETE_MARK"),
        (LEGACY_CASES[0].replace("INTO", "IGNORE UPDATE 0 INTO"), "3.3.7", "IGNORE_DISORDER"),
        (LEGACY_CASES[0].replace("INTO", "EVENT_TIME 0 INTO"), "3.3.7", "EVENT_TIME 0"),
        (
            "CREATE STREAM s1 INTO o AS SELECT _wstart, count(*) FROM st PARTITION BY tbname INTERVAL(1m)",
            "3.3.7",
            "groupId",
        ),
        (LEGACY_CASES[15], "3.3.7", "HAVING"),
        (
            "CREATE STREAM s1 INTO o TAGS (tn VARCHAR(270)) AS SELECT _wstart, count(*) FROM st "
            "PARTITION BY tbname AS tn INTERVAL(10s)",
            "3.3.7",
            "takes no aliases",
        ),
        (LEGACY_CASES[11], "3.3.7", "DELETE_MARK"),
        (LEGACY_CASES[11].replace(" DELETE_MARK 1d", ""), "3.3.7", "ASYNC"),
        (
            "CREATE STREAM s1 INTO o AS SELECT count(*) FROM t1 INTERVAL(1m)",
            "3.3.7",
            "start the select list with _wstart",
        ),
        (V337_CASES[0], "legacy", "PERIOD triggers exist only in 3.3.7 syntax"),
        (V337_CASES[2], "legacy", "SLIDING triggers exist only in 3.3.7 syntax"),
        (V337_CASES[5].replace("PARTITION BY tbname", "PARTITION BY tbname, g"), "legacy", "own types"),
        (
            V337_CASES[5].replace("INTO out1", "INTO out1 OUTPUT_SUBTABLE(CONCAT('a', tbname))"),
            "legacy",
            "OUTPUT_SUBTABLE",
        ),
        (V337_CASES[3].replace("SLIDING(5s)", "SLIDING(5s, 1s)"), "legacy", "SLIDING offset"),
        (
            V337_CASES[3].replace(" STREAM_OPTIONS(IGNORE_NODATA_TRIGGER)", ""),
            "legacy",
            "IGNORE_NODATA_TRIGGER",
        ),
        (V337_CASES[6], "legacy", "_twrownum"),
        (V337_CASES[7], "legacy", "COUNT_WINDOW(1)"),
        (V337_CASES[8], "legacy", "no legacy equivalent"),
        (V337_CASES[9], "legacy", "FILL_HISTORY_FIRST"),
        (
            "CREATE STREAM s1 STATE_WINDOW(a) FROM t1 NOTIFY('ws://h/n') ON (WINDOW_CLOSE)",
            "legacy",
            "needs a computation",
        ),
        (V337_CASES[10], "legacy", "FROM %%trows"),
        (V337_CASES[4].replace("FROM %%trows", "FROM %%trows, t2"), "legacy", "FROM %%trows"),
        (
            V337_CASES[4].replace("INTO", "STREAM_OPTIONS(EVENT_TYPE(WINDOW_OPEN)) INTO"),
            "legacy",
            "EVENT_TYPE",
        ),
        (V337_CASES[4].replace("INTO", "STREAM_OPTIONS(DELETE_RECALC) INTO"), "legacy", "DELETE_RECALC"),
        (
            V337_CASES[4].replace("INTO", "NOTIFY('ws://h/n') ON (WINDOW_CLOSE) WHERE a > 1 INTO"),
            "legacy",
            "WHERE",
        ),
        (V337_CASES[4].replace("INTO", "STREAM_OPTIONS(MAX_DELAY(3s)) INTO"), "legacy", "MAX_DELAY below 5s"),
    ],
)
def test_not_expressible(sql: str, syntax: str, reason: str) -> None:
    d = design_from_sql(sql)
    with pytest.raises(NotExpressible) as e:
        design_to_sql(d, syntax)
    assert reason in e.value.reason
    assert e.value.syntax == syntax
    sqls, reasons = sql_variants(d)
    assert sqls[syntax] is None and reason in reasons[syntax]
    assert sqls[d["syntax"]] == render(parse_one(sql))


def test_notify_defaults_are_written_out_across_syntaxes() -> None:
    d = design_from_sql(
        "CREATE STREAM s1 INTO o AS SELECT _wstart, count(*) FROM t1 SESSION(ts, 1m) "
        f"NOTIFY ('{URL}') ON ('WINDOW_CLOSE')"
    )
    s = parse_one(design_to_sql(d, "3.3.7"))
    assert isinstance(s, ast.CreateStream337) and s.notify is not None
    assert s.notify.on_failure == "PAUSE"  # legacy default PAUSE, 3.3.7 default DROP
    d337 = design_from_sql(
        f"CREATE STREAM s1 SESSION(ts, 1m) FROM t1 NOTIFY('{URL}') ON (WINDOW_CLOSE) INTO o AS "
        "SELECT _twstart, count(*) FROM %%trows"
    )
    legacy = parse_one(design_to_sql(d337, "legacy"))
    assert isinstance(legacy, ast.CreateStreamLegacy) and legacy.notify is not None
    assert legacy.notify.on_failure == "DROP"
    assert legacy.options.ignore_expired == 0 and legacy.options.ignore_update == 0  # 3.3.7 recalculates


def test_convert_leaves_the_input_alone() -> None:
    d = design_from_sql(LEGACY_CASES[1])
    before = copy.deepcopy(d)
    convert_design(d, "3.3.7")
    assert d == before


# --------------------------------------------------------------------------- checks


def _legacy_design() -> dict[str, Any]:
    return design_from_sql(
        f"CREATE STREAM s1 INTO out1 TAGS (tn VARCHAR(270)) AS SELECT _wstart, count(*) FROM st WHERE a > 0 "
        "PARTITION BY tbname "
        f"EVENT_WINDOW START WITH a > 5 END WITH a < 0 NOTIFY ('{URL}') ON ('WINDOW_CLOSE')"
    )


def _fields(issues: list[dict[str, Any]]) -> set[tuple[str | None, str | None]]:
    return {(i["node"], i["field"]) for i in issues}


def test_check_design_accepts_well_formed_designs() -> None:
    for sql in LEGACY_CASES + V337_CASES:
        assert check_design(design_from_sql(sql)) == [], sql


def test_check_design_places_field_issues() -> None:
    d = _legacy_design()
    n = d["nodes"]
    n["trigger"]["start"] = "a >"
    n["prefilter"]["condition"] = "a = = 1"
    n["computation"]["query"] = "SELECT _twstart, count(* FROM %%trows"
    n["notify"]["urls"] = ["http://x/y"]
    n["notify"]["events"] = ["WINDOW_OPEN", "ON_TIME"]
    n["options"]["bogus"] = 1
    n["options"]["watermark"] = "10 parsecs"
    issues = check_design(d)
    fields = _fields(issues)
    assert {
        ("trigger", "start"),
        ("prefilter", "condition"),
        ("computation", "query"),
        ("notify", "urls[0]"),
        ("options", "bogus"),
        ("options", "watermark"),
    } <= fields
    assert ("notify", "events[1]") in fields
    by = {(i["node"], i["field"]): i for i in issues}
    assert by[("prefilter", "condition")]["position"]["offset"] == 4  # the second '='
    assert by[("computation", "query")]["position"] is not None
    assert by[("trigger", "start")]["position"] is not None


def test_check_design_places_a_missing_node_on_that_node() -> None:
    """Issue 16 item 1: a 3.3.7 design still missing its Output (or Computation) node gets the issue on
    the node to add, not a statement-level one on the stream's name (seed 002 "Stream Processing
    Output": INTO unless CALC_NOTIFY_ONLY; INTO needs a computation; no computation must notify)."""
    base = design_from_sql(
        "CREATE STREAM d.s INTERVAL(1h) SLIDING(1h) FROM d.st INTO d.out AS "
        "SELECT _twstart AS w, count(*) AS n FROM %%trows"
    )
    assert check_design(base) == []
    no_out = copy.deepcopy(base)
    no_out["nodes"]["output"] = None
    assert _fields(check_design(no_out)) == {("output", "table")}
    no_comp = copy.deepcopy(base)
    no_comp["nodes"]["computation"] = None
    assert _fields(check_design(no_comp)) == {("computation", "query")}
    bare = copy.deepcopy(no_comp)
    bare["nodes"]["output"] = None
    assert _fields(check_design(bare)) == {("computation", "query")}
    notify_only = copy.deepcopy(no_out)
    notify_only["nodes"]["options"]["calc_notify_only"] = True
    notify_only["nodes"]["notify"] = {
        "urls": [URL],
        "events": ["WINDOW_CLOSE"],
        "where": None,
        "history": None,
        "on_failure": None,
    }
    assert check_design(notify_only) == []


def test_check_design_durations_counts_and_types() -> None:
    d = design_from_sql(
        "CREATE STREAM s1 INTO o AS SELECT _wstart, count(*) FROM t1 INTERVAL(10s) SLIDING(5s)"
    )
    d["nodes"]["trigger"]["interval"] = "0s"
    d["nodes"]["trigger"]["sliding"] = "5 seconds"
    assert {("trigger", "interval"), ("trigger", "sliding")} <= _fields(check_design(d))
    c = design_from_sql(V337_CASES[7])
    assert check_design(c) == []
    c["syntax"] = "legacy"
    assert ("trigger", "count") in _fields(check_design(c))  # minimum 2 in legacy
    c["syntax"] = "3.3.7"
    c["nodes"]["trigger"]["count"] = "three"
    assert ("trigger", "count") in _fields(check_design(c))
    c["nodes"]["trigger"] = {"type": "tumbling"}
    assert ("trigger", "type") in _fields(check_design(c))
    p = design_from_sql(V337_CASES[0])
    p["syntax"] = "legacy"
    issues = check_design(p)
    assert any(i["field"] == "type" and "3.3.7" in i["message"] for i in issues)
    m = design_from_sql(V337_CASES[8])
    m["nodes"]["options"]["max_delay"] = "2s"
    assert ("options", "max_delay") in _fields(check_design(m))
    o = design_from_sql(V337_CASES[6])
    o["nodes"]["output"]["tags"][1]["type"] = "INTEGRAL"
    assert ("output", "tags[1].type") in _fields(check_design(o))


def test_design_to_sql_raises_design_error_with_position() -> None:
    d = _legacy_design()
    d["nodes"]["trigger"]["end"] = "a < 0 AND AND b"
    with pytest.raises(DesignError) as e:
        design_to_sql(d)
    assert (e.value.node, e.value.field) == ("trigger", "end")
    assert e.value.position == d["nodes"]["trigger"]["end"].index("AND AND") + 4
    d["nodes"]["trigger"]["end"] = "a < 0"
    d["nodes"]["trigger"]["true_for"] = "5 minutes"
    with pytest.raises(DesignError) as e2:
        design_to_sql(d)
    assert (e2.value.node, e2.value.field) == ("trigger", "true_for")


# --------------------------------------------------------------------------- locate_error


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from spark_workers.lake.store import Lake
    from spark_workers.statements.executor import Executor
    from spark_workers.streams.registry import MemoryRegistry

    ex = Executor(Lake(tmp_path_factory.mktemp("lake")), MemoryRegistry(), tz="UTC", default_db="d")
    ex.execute("create database d; create stable st (ts timestamp, a int, b double) tags (g int)")
    ex.execute("create table t1 using st tags (1)")
    return ex


def _validation_error(ex: Any, sql: str) -> SqlError:
    with pytest.raises(SqlError) as e:
        ex.execute(sql)
    return e.value


@pytest.mark.parametrize(
    ("edit", "node", "field", "starts"),
    [
        (lambda n: n["trigger"].update(start="nosuch > 5"), "trigger", "start", "nosuch"),
        (lambda n: n["trigger"].update(end="a < 0 OR zz = 1"), "trigger", "end", "zz"),
        (lambda n: n["prefilter"].update(condition="b > 0 AND qq IS NULL"), "prefilter", "condition", "qq"),
        (
            lambda n: n["computation"].update(query="SELECT _twstart, count(*), max(missing) FROM %%trows"),
            "computation",
            "query",
            "missing",
        ),
    ],
)
def test_locate_error_maps_real_validation_errors(
    executor: Any, edit: Any, node: str, field: str, starts: str
) -> None:
    d = _legacy_design()
    edit(d["nodes"])
    sql = design_to_sql(d, "legacy")
    err = _validation_error(executor, sql)
    issue = locate_error(d, "legacy", err)
    assert (issue["node"], issue["field"]) == (node, field), (err.message, err.offset, sql)
    assert issue["message"] == err.message
    text = d["nodes"][node][field]
    if err.offset is not None and issue["position"] is not None:
        assert text[issue["position"]["offset"] :].startswith(starts)


def test_locate_error_maps_a_max_delay_error(executor: Any) -> None:
    d = _legacy_design()
    d["nodes"]["options"].update(trigger_mode="MAX_DELAY", max_delay="1s")
    err = _validation_error(executor, design_to_sql(d))
    issue = locate_error(d, "legacy", err)
    assert (issue["node"], issue["field"]) == ("options", "max_delay")
    assert issue["position"]["offset"] == 0


def _error_at(sql: str, needle: str, nth: int = 0) -> SqlError:
    at = -1
    for _ in range(nth + 1):
        at = sql.index(needle, at + 1)
    return SqlError("boom", sql=sql, offset=at)


def test_locate_error_in_every_337_node() -> None:
    d = design_from_sql(V337_CASES[8])
    sql = design_to_sql(d)
    cases = [
        ("count(*), max(a)", ("computation", "query"), "count(*), max(a)"),
        ("a > 10", ("notify", "where"), "a > 10"),
        ("a > 0", ("prefilter", "condition"), "a > 0"),
        ("CONCAT('o_'", ("output", "subtable"), "CONCAT('o_'"),
        ("out1", ("output", "table"), "out1"),
        ("x.example", ("notify", "urls[1]"), "x.example"),
        ("10s", ("options", "watermark"), "10s"),
        ("5s", ("options", "max_delay"), "5s"),
        ("'2024", ("options", "fill_history_start"), "'2024"),
        ("n COMPOSITE", ("output", "columns[1]"), "n"),
        ("tbname STREAM", ("source", "partition_by[0]"), "tbname"),
        ("STATE_WINDOW(a)", ("trigger", "type"), ""),
        ("a) FROM", ("trigger", "expr"), "a"),
        ("st PARTITION", ("source", "table"), "st"),
    ]
    for needle, where, starts in cases:
        issue = locate_error(d, "3.3.7", _error_at(sql, needle))
        assert (issue["node"], issue["field"]) == where, needle
        text = _field_text(d, issue) if starts else ""
        assert text[issue["position"]["offset"] :].startswith(starts), needle
    ev = design_from_sql(V337_CASES[6])
    ev_sql = design_to_sql(ev)
    issue = locate_error(ev, "3.3.7", _error_at(ev_sql, "0) TRUE_FOR"))
    assert (issue["node"], issue["field"], issue["position"]["offset"]) == ("trigger", "end", 4)
    issue = locate_error(ev, "3.3.7", _error_at(ev_sql, "%%2"))
    assert (issue["node"], issue["field"], issue["position"]["offset"]) == ("output", "tags[1].expr", 0)
    issue = locate_error(ev, "3.3.7", _error_at(ev_sql, "1s"))
    assert (issue["node"], issue["field"]) == ("trigger", "true_for")


def _field_text(d: dict[str, Any], issue: dict[str, Any]) -> str:
    node = d["nodes"][issue["node"]]
    field = issue["field"]
    if "[" in field:
        name, rest = field.split("[", 1)
        idx = int(rest.split("]")[0])
        item = node[name][idx]
        sub = rest.split("]", 1)[1].lstrip(".")
        if isinstance(item, dict):
            return str(item.get(sub) if sub else item.get("sql", item.get("name")))
        return str(item)
    return str(node[field])


def test_locate_error_rebases_into_the_legacy_computation() -> None:
    d = design_from_sql(LEGACY_CASES[11])
    sql, _spans = field_spans(d, "legacy")
    assert sql == design_to_sql(d)
    comp = d["nodes"]["computation"]["query"]
    for needle in ("max(k) + 1", "FILL(VALUE", "MIN(k)", "ws,"):
        issue = locate_error(d, "legacy", _error_at(sql, needle))
        assert (issue["node"], issue["field"]) == ("computation", "query")
        assert comp[issue["position"]["offset"] :].startswith(needle), needle
    for needle, where in (
        ("1m)", ("trigger", "interval")),
        ("tbname AS tn", ("source", "partition_by[1]")),
        ("tbname <>", ("prefilter", "condition")),
        ("st WHERE", ("source", "table")),
        ("VARCHAR(64)", ("output", "tags[1].type")),
        ("tn VARCHAR", ("output", "tags[1]")),
        ("c2 COMPOSITE", ("output", "columns[1]")),
        ("1d", ("options", "delete_mark")),
        ("10s", ("options", "max_delay")),
    ):
        issue = locate_error(d, "legacy", _error_at(sql, needle))
        assert (issue["node"], issue["field"]) == where, needle
    ek = design_from_sql(LEGACY_CASES[9])
    ek_sql = design_to_sql(ek)
    issue = locate_error(ek, "legacy", _error_at(ek_sql, "b = 1"))
    assert (issue["node"], issue["field"], issue["position"]["offset"]) == ("trigger", "filter", 0)
    issue = locate_error(ek, "legacy", _error_at(ek_sql, "2, 1"))
    assert (issue["node"], issue["field"]) == ("trigger", "args[0]")


def test_locate_error_without_offset_or_outside_fields() -> None:
    d = _legacy_design()
    assert locate_error(d, "legacy", SqlError("no place"))["node"] is None
    issue = locate_error(d, "legacy", SqlError("stream", sql=design_to_sql(d), offset=3))
    assert issue["node"] is None and issue["position"]["offset"] == 3


# --------------------------------------------------------------------------- palette, defaults


def test_placeholders_follow_seed_002() -> None:
    def names(t: str, p: bool) -> list[str]:
        return [x["name"] for x in placeholders_for(t, p)]

    assert names("event", False)[:4] == ["_twstart", "_twend", "_twduration", "_twrownum"]
    assert "%%tbname" not in names("event", False) and "%%tbname" in names("event", True)
    assert "_tcurrent_ts" in names("sliding", False) and "_twstart" not in names("sliding", False)
    assert "_tnext_localtime" in names("period", False) and "_tprev_ts" not in names("period", False)
    assert names("ekuiper", True) == ["_twstart", "_twend", "_twduration", "%%trows"]
    assert placeholders_for("nope", False) == []
    assert all(x["description"] for x in placeholders_for("interval", True))


def test_defaults_differ_where_architecture_says() -> None:
    legacy, v337 = defaults("legacy"), defaults("3.3.7")
    assert legacy["options"]["ignore_update"] is True and legacy["options"]["trigger_mode"] == "WINDOW_CLOSE"
    assert (legacy["notify"]["on_failure"], v337["notify"]["on_failure"]) == ("PAUSE", "DROP")
    assert (legacy["count_window_min"], v337["count_window_min"]) == (2, 1)
    assert (legacy["max_delay_min"], v337["max_delay_min"]) == ("5s", "3s")
    assert "ignore_disorder" in v337["options"] and "ignore_disorder" not in legacy["options"]
    with pytest.raises(ValueError):
        defaults("2.6")


# --------------------------------------------------------------------------- changes, impact


def test_design_changes_ignore_layout() -> None:
    old = _legacy_design()
    new = copy.deepcopy(old)
    new["layout"] = {"source": {"x": 10, "y": 5}}
    assert design_changes(old, new) == []
    new["nodes"]["trigger"]["start"] = "a > 6"
    new["nodes"]["notify"] = None
    assert design_changes(old, new) == [
        {"node": "trigger", "field": "start", "old": "a > 5", "new": "a > 6"},
        {"node": "notify", "field": None, "old": old["nodes"]["notify"], "new": None},
    ]


def test_impact_kinds() -> None:
    old = _legacy_design()
    assert impact(old, copy.deepcopy(old))["kind"] == "none"
    created = impact(None, old)
    assert created["kind"] == "none" and "new stream" in created["statement"].lower()

    notify = copy.deepcopy(old)
    notify["nodes"]["notify"]["events"] = ["WINDOW_OPEN", "WINDOW_CLOSE"]
    assert impact(old, notify)["kind"] == "notify_only"

    comp = copy.deepcopy(old)
    comp["nodes"]["computation"]["query"] = "SELECT _twstart, count(*), max(a) FROM %%trows"
    r = impact(old, comp)
    assert r["kind"] == "recalculate" and "RECALCULATE STREAM s1 FROM" in r["statement"]
    assert "stay as they are" in r["statement"]

    out = copy.deepcopy(old)
    out["nodes"]["output"]["table"] = "out2"
    assert impact(old, out)["kind"] == "recalculate"

    for node, field, value in (
        ("trigger", "end", "a < -1"),
        ("prefilter", "condition", "a > 1"),
        ("options", "watermark", "10s"),
        ("source", "partition_by", [{"sql": "g", "alias": None}]),
    ):
        changed = copy.deepcopy(old)
        changed["nodes"][node][field] = value
        r = impact(old, changed)
        assert r["kind"] == "reset", (node, field)
        assert "from the rows written" in r["statement"]
    hist = copy.deepcopy(old)
    hist["nodes"]["options"]["fill_history"] = True
    assert "FILL_HISTORY" in impact(old, hist)["statement"] and impact(old, hist)["kind"] == "reset"


# --------------------------------------------------------------------------- issue 13


def test_legacy_stream_without_window_has_trigger_none_and_no_337_form() -> None:
    sql = "CREATE STREAM etl INTO out_stb AS SELECT ts, a * 2 AS a2 FROM st WHERE a > 1"
    d = design_from_sql(sql)
    assert d["nodes"]["trigger"] == {"type": "none"}
    assert d["nodes"]["computation"] == {"query": "SELECT ts, a * 2 AS a2 FROM %%trows"}
    assert design_to_sql(d) == render(parse_one(sql))
    sqls, reasons = sql_variants(d)
    assert sqls["3.3.7"] is None and "without a window" in reasons["3.3.7"]
    assert check_design(d) == []
    as_337 = {**d, "syntax": "3.3.7"}
    assert [(i["node"], i["field"]) for i in check_design(as_337)] == [("trigger", "type")]
    assert [p["name"] for p in placeholders_for("none", True)] == ["%%trows"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "CREATE STREAM s TRIGGER FORCE_WINDOW_CLOSE INTO o AS SELECT _wstart, avg(a) FROM t "
            "INTERVAL(1m) FILL(LINEAR)",
            "TRIGGER FORCE_WINDOW_CLOSE takes FILL PREV, NULL, NONE, VALUE only (seed 000, Trigger Modes), "
            "not FILL(LINEAR)",
        ),
        (
            "CREATE STREAM s INTO o AS SELECT _wstart, avg(a) FROM t INTERVAL(1m) FILL(VALUE)",
            "FILL(VALUE, ...) needs a value per filled column",
        ),
        (
            "CREATE STREAM s INTO o AS SELECT _wstart, avg(a) FROM t INTERVAL(1m) FILL(PREV, 1)",
            "FILL(PREV) takes no values",
        ),
        (
            "CREATE STREAM s INTO o AS SELECT _wstart, avg(a) FROM t SESSION(ts, 1m) FILL(NULL)",
            "FILL fills the INTERVAL windows without rows: it needs an INTERVAL trigger",
        ),
    ],
)
def test_fill_is_checked_on_the_computation(sql: str, message: str) -> None:
    d = design_from_sql(sql)
    issues = check_design(d)
    assert [(i["node"], i["field"], i["message"]) for i in issues] == [("computation", "query", message)]
    query = d["nodes"]["computation"]["query"]
    assert query[issues[0]["position"]["offset"] :].startswith("FILL(")


@pytest.mark.parametrize("mode", ["NONE", "NULL", "NULL_F", "PREV", "NEXT", "LINEAR"])
def test_every_fill_mode_round_trips(mode: str) -> None:
    sql = f"CREATE STREAM s INTO o AS SELECT _wstart, avg(a) FROM t INTERVAL(1m) FILL({mode})"
    d = design_from_sql(sql)
    assert d["nodes"]["computation"]["query"].endswith(f"FROM %%trows FILL({mode})")
    assert check_design(d) == [] and design_to_sql(d) == render(parse_one(sql))


@pytest.mark.parametrize("mode", ["VALUE", "VALUE_F"])
def test_fill_value_lists_round_trip(mode: str) -> None:
    sql = (
        f"CREATE STREAM s INTO o AS SELECT _wstart, avg(a), max(b) FROM t INTERVAL(1m) FILL({mode}, 0, -1.5)"
    )
    d = design_from_sql(sql)
    assert d["nodes"]["computation"]["query"].endswith(f"FILL({mode}, 0, -1.5)")
    assert check_design(d) == [] and design_to_sql(d) == render(parse_one(sql))


def test_337_options_of_issue_13_render_and_check_clean() -> None:
    sql = (
        "CREATE STREAM s1 INTERVAL(1h) SLIDING(10m, 1m) FROM vst PARTITION BY tbname "
        "STREAM_OPTIONS(EXPIRED_TIME(1d) | DELETE_OUTPUT_TABLE | FILL_HISTORY_FIRST('2024-01-01') | "
        "FORCE_OUTPUT | LOW_LATENCY_CALC) "
        f"NOTIFY('{URL}') ON (WINDOW_OPEN|WINDOW_CLOSE) WHERE avg_a > 10 "
        "INTO out1 (ws, k COMPOSITE KEY, avg_a) AS SELECT _twstart, count(*), avg(a) FROM %%trows"
    )
    d = design_from_sql(sql)
    o = d["nodes"]["options"]
    assert (o["expired_time"], o["delete_output_table"], o["fill_history_first"], o["force_output"]) == (
        "1d",
        True,
        True,
        True,
    )
    assert o["fill_history_start"] == "'2024-01-01'" and o["fill_history"] is None
    assert d["nodes"]["trigger"]["sliding_offset"] == "1m"
    assert d["nodes"]["notify"]["where"] == "avg_a > 10"
    assert d["nodes"]["output"]["columns"][1] == {"name": "k", "composite_key": True}
    assert check_design(d) == []
    assert design_to_sql(d) == render(parse_one(sql))


def test_notify_events_offered_are_the_on_clause_events() -> None:
    d = design_from_sql(V337_CASES[9])
    d["nodes"]["notify"]["events"] = ["WINDOW_CLOSE", "WINDOW_INVALIDATION"]
    issues = check_design(d)
    assert [(i["node"], i["field"]) for i in issues] == [("notify", "events[1]")]
    assert issues[0]["message"].startswith("WINDOW_INVALIDATION is not an ON event")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "CREATE STREAM s STATE_WINDOW(a) FROM t STREAM_OPTIONS(FILL_HISTORY | FILL_HISTORY_FIRST) "
            "INTO o AS SELECT _twstart, count(*) FROM %%trows",
            [("options", "fill_history_first", "cannot be used together with FILL_HISTORY (seed 002)")],
        ),
        (
            "CREATE STREAM s PERIOD(1h) FROM t STREAM_OPTIONS(FILL_HISTORY) INTO o AS "
            "SELECT _tlocaltime, count(*) FROM %%trows",
            [("options", "fill_history", "FILL_HISTORY is not supported with a PERIOD trigger (seed 002)")],
        ),
        (
            "CREATE STREAM s STATE_WINDOW(a) FROM t INTO o OUTPUT_SUBTABLE('x') TAGS (g INT AS 1) AS "
            "SELECT _twstart, count(*) FROM %%trows",
            [
                ("output", "subtable", "OUTPUT_SUBTABLE needs a trigger grouping, PARTITION BY (seed 002)"),
                ("output", "tags", "TAGS need a trigger grouping, PARTITION BY (seed 002)"),
            ],
        ),
        (
            f"CREATE STREAM s STATE_WINDOW(a) FROM t NOTIFY('{URL}') INTO o AS "
            "SELECT _twstart, count(*) FROM %%trows",
            [
                (
                    "notify",
                    "events",
                    "NOTIFY of a window trigger needs ON (WINDOW_OPEN|WINDOW_CLOSE) (seed 002)",
                )
            ],
        ),
        (
            f"CREATE STREAM s PERIOD(1h) NOTIFY('{URL}') ON (WINDOW_CLOSE)",
            [("notify", "events", "a PERIOD trigger notifies ON_TIME events, not WINDOW_CLOSE (seed 002)")],
        ),
    ],
)
def test_seed_002_rules_between_nodes(sql: str, expected: list[tuple[str, str, str]]) -> None:
    issues = check_design(design_from_sql(sql))
    assert [(i["node"], i["field"], i["message"]) for i in issues] == expected


def test_legacy_query_over_a_subquery_or_a_join_keeps_every_clause() -> None:
    sub = design_from_sql(LEGACY_CASES[-2])["nodes"]
    assert sub["source"] == {
        "db": None,
        "table": None,
        "from": "(SELECT ts, a FROM t1 WHERE a > 1)",  # the subquery's WHERE stays
        "partition_by": [],
    }
    assert sub["computation"] == {"query": "SELECT _twstart, count(*) FROM %%trows"}
    join = design_from_sql(LEGACY_CASES[-1])
    n = join["nodes"]
    assert n["source"]["from"] == "d.t1 AS x JOIN d.t2 AS y ON x.ts = y.ts"
    assert n["prefilter"] == {"condition": "x.a > 0"}
    assert n["computation"] == {"query": "SELECT _twstart, avg(y.b) FROM %%trows FILL(NULL)"}
    sqls, reasons = sql_variants(join)
    assert sqls["3.3.7"] is None and reasons["3.3.7"].startswith("a 3.3.7 trigger table is one table")
    assert check_design(join) == []
    join["nodes"]["source"]["from"] = "d.t1 AS x JOIN"
    [bad] = check_design(join)
    assert (bad["node"], bad["field"]) == ("source", "from")
    sql, spans = field_spans(design_from_sql(LEGACY_CASES[-1]), "legacy")
    [span] = [sp for sp in spans if (sp.node, sp.field) == ("source", "from")]
    assert sql[span.start : span.end] == "d.t1 AS x JOIN d.t2 AS y ON x.ts = y.ts"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "CREATE STREAM s PERIOD(5a) INTO o AS SELECT now, count(*) FROM t",
            [("trigger", "period", "the period is within [10a, 3650d] (seed 002)")],
        ),
        (
            "CREATE STREAM s PERIOD(1w) INTO o AS SELECT now, count(*) FROM t",
            [("trigger", "period", "PERIOD takes the units a, s, m, h, d (seed 002), not w")],
        ),
        (
            "CREATE STREAM s PERIOD(2d, 24h) INTO o AS SELECT cast(_tlocaltime / 1000000 AS TIMESTAMP), "
            "count(*) FROM t",
            [("trigger", "offset", "the PERIOD offset is below one day (seed 002)")],
        ),
        (
            "CREATE STREAM s SLIDING(1h, 1d) FROM t INTO o AS SELECT _tcurrent_ts, count(*) FROM %%trows",
            [("trigger", "sliding_offset", "SLIDING_OFFSET takes the units a, s, m, h (seed 002), not d")],
        ),
        (
            "CREATE STREAM s STATE_WINDOW(a) FROM t STREAM_OPTIONS(EXPIRED_TIME(1w)) INTO o AS "
            "SELECT _twstart, count(*) FROM %%trows",
            [("options", "expired_time", "EXPIRED_TIME takes the units a, s, m, h, d (seed 002), not w")],
        ),
        (
            "CREATE STREAM s STATE_WINDOW(a) FROM t INTO o (ws, n COMPOSITE KEY, m COMPOSITE KEY) AS "
            "SELECT _twstart, count(*), max(b) FROM %%trows",
            [
                (
                    "output",
                    "columns[2].composite_key",
                    "COMPOSITE KEY marks the second column, the key with the first (seed 000, seed 002)",
                )
            ],
        ),
    ],
)
def test_seed_002_units_ranges_and_composite_key(sql: str, expected: list[tuple[str, str, str]]) -> None:
    issues = check_design(design_from_sql(sql))
    assert [(i["node"], i["field"], i["message"]) for i in issues] == expected


def test_interval_sliding_not_written_is_the_interval() -> None:
    """The designer's default "sliding: = interval" is what the SQL says (seed 002 writes SLIDING
    always), and a design with only the required fields has no issue."""
    design = {
        "schema_version": 1,
        "name": "s1",
        "db": "d",
        "syntax": "3.3.7",
        "nodes": {
            "source": {"db": None, "table": "t1", "partition_by": []},
            "trigger": {"type": "interval", "interval": "10m", "offset": None, "sliding": None},
            "computation": {"query": "SELECT _twstart, count(*) FROM %%trows"},
            "output": {"db": None, "table": "out1", "columns": [], "tags": []},
        },
    }
    assert check_design(design) == []
    sql = design_to_sql(design)
    stmt = parse_one(sql)
    assert isinstance(stmt, ast.CreateStream337) and isinstance(stmt.trigger, ast.SlidingTrigger)
    assert str(stmt.trigger.sliding) == str(stmt.trigger.interval) == "10m"
    # and the SQL reads back as the same trigger with the sliding written
    assert design_from_sql(sql)["nodes"]["trigger"]["sliding"] == "10m"
