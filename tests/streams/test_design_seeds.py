"""Every CREATE STREAM statement printed in seeds 000, 001, 002 and 004 imports into a design and
renders back to the same statement (issue 13; ``docs/designer.md`` "Design").

Each statement is copied from its seed as printed; the test checks that it is still in the seed
(spaces aside). A few printed statements carry a typo of the seed itself (a missing ``SELECT``,
``CALC_ONTIFY_ONLY``, a ``;`` inside the statement); for those the round trip runs on the statement
as meant, with only the typo corrected, and the test checks that the correction is the only
difference (``_CORRECTIONS``). The unmatched ``)`` of seeds 000/001 and seed 004's ``INTEVAL`` are
read as written by the parser: the round trip runs on them as printed and the design renders them
corrected (``_READ_AS_WRITTEN``).

"Equivalent" is checked on the parse trees: the statement the design renders parses to the same
tree as the seed's statement (spans aside), and importing the rendered statement gives the same
design again.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from spark_workers.sql.parser import parse_one
from spark_workers.streams.design import design_from_sql, design_to_sql

SEEDS = Path("/work/shared/seeds")
SEED_FILES = {
    "000": "000_5f0c346dc97ce9a3.txt",
    "001": "001_1edf7d5d9aa43797.txt",
    "002": "002_79f67eb30730d5ad.txt",
    "004": "004_d241c3c75c4437ef.txt",
}

# (seed, statement as printed)
SEED_STREAMS: list[tuple[str, str]] = [
    (
        "000",
        "CREATE STREAM avg_vol_s INTO avg_vol AS\nSELECT _wstart, count(*), avg(voltage) FROM meters "
        "PARTITION BY tbname INTERVAL(1m) SLIDING(30s);",
    ),
    (
        "000",
        "CREATE STREAM streams0 INTO streamt0 AS\nSELECT _wstart, count(*), avg(voltage) from meters "
        "PARTITION BY tbname EVENT_WINDOW START WITH voltage < 0 END WITH voltage > 9;",
    ),
    (
        "000",
        "CREATE STREAM streams1 IGNORE EXPIRED 1 WATERMARK 100s INTO streamt1 AS\nSELECT _wstart, "
        "count(*), avg(voltage) from meters PARTITION BY tbname COUNT_WINDOW(10);",
    ),
    (
        "000",
        "CREATE STREAM avg_vol_s INTO avg_vol SUBTABLE(CONCAT('new-', tname)) AS SELECT _wstart, "
        "count(*), avg(voltage) FROM meters PARTITION BY tbname tname INTERVAL(1m);",
    ),
    (
        "000",
        "create stream if not exists s1 fill_history 1 into st1  as select count(*) from t1 interval(10s)",
    ),
    (
        "000",
        "create stream if not exists s1 fill_history 1 into st1  as select count(*) from t1 "
        "where ts > '2020-01-30' interval(10s)",
    ),
    (
        "000",
        "create stream if not exists s1 fill_history 1 into st1  as select count(*) from t1 "
        "where ts > '2020-01-30' and ts < '2023-01-01' interval(10s)",
    ),
    (
        "000",
        "CREATE STREAM streams2 trigger at_once INTO st1 TAGS(cc varchar(100)) as select  _wstart, "
        'count(*) c1 from st partition by concat("tag-", tbname) as cc interval(10s));',
    ),
    (
        "000",
        "CREATE STREAM avg_current_stream FILL_HISTORY 1\n    AS SELECT _wstart, _wend, AVG(current) "
        "FROM meters\n    INTERVAL (1m)\n    NOTIFY ('ws://localhost:8080/notify', "
        "'wss://192.168.1.1:8080/notify?key=foo')\n    ON ('WINDOW_OPEN', 'WINDOW_CLOSE');\n"
        "    NOTIFY_HISTORY 0\n    ON_FAILURE PAUSE;",
    ),
    (
        "001",
        "CREATE STREAM avg_vol_s INTO avg_vol AS\nSELECT _wstart, count(*), avg(voltage) FROM "
        "power.meters PARTITION BY tbname INTERVAL(1m) SLIDING(30s);",
    ),
    (
        "001",
        "CREATE STREAM avg_vol_s INTO avg_vol SUBTABLE(CONCAT('new-', tname)) AS SELECT _wstart, "
        "count(*), avg(voltage) FROM meters PARTITION BY tbname tname INTERVAL(1m);",
    ),
    (
        "001",
        "create stream if not exists count_history_s fill_history 1 into count_history as select "
        "count(*) from power.meters interval(10s)",
    ),
    (
        "001",
        "create stream if not exists count_history_s fill_history 1 into count_history  as select "
        "count(*) from power.meters where ts > '2020-01-30' interval(10s)",
    ),
    (
        "001",
        "create stream if not exists count_history_s fill_history 1 into count_history as select "
        "count(*) from power.meters where ts > '2020-01-30' and ts < '2023-01-01' interval(10s)",
    ),
    (
        "001",
        "CREATE STREAM output_tag trigger at_once INTO output_tag_s TAGS(alias_tag varchar(100)) as "
        'select _wstart, count(*) from power.meters partition by concat("tag-", tbname) as alias_tag '
        "interval(10s));",
    ),
    (
        "001",
        "create stream streams1 into test1.streamst as select  _wstart, count(a) c1  from test.st "
        "interval(1s) ;",
    ),
    (
        "002",
        "CREATE stream sm1 count_window(1) FROM tb1\nINTO tb3 AS\nSELECT _twstart, avg(col1) FROM tb2\n"
        "WHERE _c0 >= _twend - 5m AND _c0 <= _twend;",
    ),
    (
        "002",
        "CREATE stream sm2 count_window(10, 1, col1) FROM tb1\nSTREAM_OPTIONS(CALC_ONTIFY_ONLY | "
        'PRE_FILTER(col1 > 0))\nNOTIFY("ws://localhost:8080/notify") ON (WINDOW_CLOSE)\nAS\n'
        "SELECT avg(col1) FROM %%trows;",
    ),
    (
        "002",
        "CREATE STREAM `idmp`.`ana_temp` EVENT_WINDOW(start with `temp` > 80 end with `temp` <= 80 ) "
        "TRUE_FOR(10m) FROM `idmp`.`vt_envsens02_471544`\nSTREAM_OPTIONS( IGNORE_DISORDER)\n"
        "INTO `idmp`.`ana_temp`\nAS\nSELECT _twstart+0s as output_timestamp, avg(`temp`) as `avgtemp` "
        "FROM idmp.`vt_engsens02_471544` where ts >= _twstart and ts <= _twend;",
    ),
    (
        "002",
        "CREATE stream sm1 INTERVAL(5m) SLIDING(5m) FROM stb1 PARTITION BY tbname\nINTO stb2\nAS\n"
        "SELECT _twstart, avg(col1) FROM %%tbname\nWHERE _c0 >= _twstart AND _c0 <= _twend;",
    ),
    (
        "002",
        "CREATE stream sm2 INTERVAL(5m) SLIDING(5m) FROM stb1 PARTITION BY tbname\n"
        "STREAM_OPTIONS(MAX_DELAY(1m) | FILL_HISTORY_FIRST)\nINTO stb2\nAS\n"
        "SELECT _twstart, avg(col1) FROM %%tbname WHERE _c0 >= _twstart AND _c0 <= _twend;",
    ),
    (
        "002",
        "CREATE STREAM avg_stream INTERVAL(1m) SLIDING(1m) FROM meters\nNOTIFY "
        "('ws://localhost:8080/notify', 'wss://192.168.1.1:8080/notify?key=foo') ON ('WINDOW_OPEN', "
        "'WINDOW_CLOSE') NOTIFY_OPTIONS(NOTIFY_HISTORY | ON_FAILURE_PAUSE)\nINTO avg_stb\nAS\n"
        "SELECT _twstart, _twend, AVG(current) FROM %%trows;",
    ),
    (
        "002",
        "CREATE stream sm1 PERIOD(1h)\nINTO tb2\nAS\nSELECT cast(_tlocaltime/1000000 AS TIMESTAMP), "
        "count(*) FROM tb1;",
    ),
    ("002", 'CREATE stream sm1 PERIOD(1h)\nNOTIFY("ws://localhost:8080/notify");'),
    (
        "004",
        "CREATE STREAM power_stream\n  INTO power_stream_output_stb AS\n"
        '    concat_ws(".", location, TBNAME) AS meter_location,\n'
        "    current * voltage * cos(phase) AS active_power,\n"
        "    current * voltage * sin(phase) AS reactive_power\n  FROM meters \n  WHERE voltage > 100",
    ),
    (
        "004",
        "CREATE STREAM current_stream\n            TRIGGER AT_ONCE\n"
        "            INTO current_stream_output_stb AS\n                    _wstart as start,\n"
        "                    _wend as end,\n                    max(current) as max_current\n"
        "            FROM meters\n            WHERE voltage <= 220\n           INTEVAL (5s) SLIDING (1s);",
    ),
    (
        "004",
        "CREATE STREAM current_stream\n          WATERMARK 60s\n"
        "          INTO current_stream_output_stb AS\n                    _wstart as start,\n"
        "                    _wend as end,\n                    avg(current) as avg_current\n"
        "           FROM meters\n           SESSION(ts, 30s)",
    ),
]

# the seed's own typos: (a fragment of the printed statement, what it means); the statement as
# meant is the printed one with exactly these replacements
_CORRECTIONS: list[tuple[str, str]] = [
    ("'WINDOW_CLOSE');\n    NOTIFY_HISTORY", "'WINDOW_CLOSE')\n    NOTIFY_HISTORY"),  # 000 notifications
    ("CALC_ONTIFY_ONLY", "CALC_NOTIFY_ONLY"),  # 002 count window example
    ("INTO power_stream_output_stb AS\n", "INTO power_stream_output_stb AS SELECT\n"),  # 004
    (
        "current_stream_output_stb AS\n                    _wstart",
        "current_stream_output_stb AS SELECT\n _wstart",
    ),
]
# the seed's typos the parser reads as written (issue 13: a printed statement runs as written), so
# the round trip runs on them as printed: (fragment as printed, what it means, what the rendered
# statement never holds). The design renders them corrected.
_READ_AS_WRITTEN: list[tuple[str, str, str]] = [
    ("interval(10s));", "interval(10s);", "(10s))"),  # 000 "streams2", 001 "output_tag": one ")" too many
    ("INTEVAL (5s)", "INTERVAL (5s)", "INTEVAL"),  # 004 sliding window example (current_stream)
]

# statements the parser of this branch cannot read yet because another issue-13 area adds it
# (flipped by the lead after merging): fragment -> reason
_NOT_YET: dict[str, str] = {}


def _parsed_here(sql: str) -> bool:
    return not any(frag in sql for frag in _NOT_YET)


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _as_meant(sql: str) -> str:
    for printed, meant in _CORRECTIONS:
        sql = sql.replace(printed, meant)
    return sql


def _params() -> list[Any]:
    out = []
    for i, (seed, sql) in enumerate(SEED_STREAMS):
        reason = next((why for frag, why in _NOT_YET.items() if frag in sql), None)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(seed, sql, id=f"seed{seed}-{i}", marks=marks))
    return out


def _without_spans(node: Any) -> Any:
    """A statement tree with every ``span`` (and the query text as written) dropped, for comparing
    trees parsed from different texts."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return (
            type(node).__name__,
            {
                f.name: _without_spans(getattr(node, f.name))
                for f in dataclasses.fields(node)
                if f.name not in ("span", "spans", "text") and not f.name.endswith("_spans")
            },
        )
    if isinstance(node, exp.Expr):
        return node.sql()
    if isinstance(node, list | tuple):
        return [_without_spans(x) for x in node]
    if isinstance(node, dict):
        return {k: _without_spans(v) for k, v in node.items()}
    return node


@pytest.mark.skipif(not SEEDS.exists(), reason="seeds not mounted")
def test_every_statement_is_printed_in_its_seed() -> None:
    texts = {k: _normalized((SEEDS / f).read_text()) for k, f in SEED_FILES.items()}
    for seed, sql in SEED_STREAMS:
        assert _normalized(sql) in texts[seed], sql
    # every CREATE STREAM example of the seeds is in the list (the syntax summaries aside)
    printed = sum(
        len(re.findall(r"create stream (?!\[|statement)", texts[k], re.IGNORECASE)) for k in SEED_FILES
    )
    assert printed == len(SEED_STREAMS)


def test_corrections_change_only_the_typos() -> None:
    for printed, meant in _CORRECTIONS:
        assert any(printed in sql for _, sql in SEED_STREAMS), printed
        assert printed != meant
    corrected = [sql for _, sql in SEED_STREAMS if _as_meant(sql) != sql]
    # avg_current_stream, sm2, power_stream and both current_stream
    assert len(corrected) == 5
    for printed, meant, _ in _READ_AS_WRITTEN:
        assert any(printed in sql for _, sql in SEED_STREAMS), printed
        assert printed != meant
    # streams2, output_tag and the first current_stream
    assert sum(any(p in sql for p, _, _ in _READ_AS_WRITTEN) for _, sql in SEED_STREAMS) == 3


@pytest.mark.parametrize(
    "sql", [sql for _, sql in SEED_STREAMS if any(p in sql for p, _, _ in _READ_AS_WRITTEN)]
)
def test_seed_typos_read_as_written_render_corrected(sql: str) -> None:
    """A statement with a typo the parser reads as written imports into the same design as the
    statement with the typo corrected, and renders without it."""
    printed = _as_meant(sql)
    meant = printed
    for typo, fix, _ in _READ_AS_WRITTEN:
        meant = meant.replace(typo, fix)
    design = design_from_sql(printed)
    assert {k: v for k, v in design.items() if k != "layout"} == {
        k: v for k, v in design_from_sql(meant).items() if k != "layout"
    }
    rendered = design_to_sql(design)
    assert rendered == design_to_sql(design_from_sql(meant))
    for typo, _, never in _READ_AS_WRITTEN:
        assert typo not in printed or never not in rendered, rendered


@pytest.mark.parametrize(("seed", "sql"), _params())
def test_seed_statement_round_trips_through_a_design(seed: str, sql: str) -> None:
    meant = _as_meant(sql)
    design = design_from_sql(meant)
    rendered = design_to_sql(design)
    original, again = parse_one(meant), parse_one(rendered)
    assert isinstance(again, type(original))
    assert _without_spans(again) == _without_spans(original)
    assert {k: v for k, v in design_from_sql(rendered).items() if k != "layout"} == {
        k: v for k, v in design.items() if k != "layout"
    }
    expected_syntax = "3.3.7" if seed == "002" else "legacy"
    assert design["syntax"] == expected_syntax


def test_seed_designs_use_every_trigger_the_seeds_print() -> None:
    kinds = {
        design_from_sql(_as_meant(sql))["nodes"]["trigger"]["type"]
        for _, sql in SEED_STREAMS
        if _parsed_here(sql)
    }
    assert kinds == {"interval", "period", "session", "event", "count", "none"}


def test_power_stream_is_a_legacy_stream_without_window() -> None:
    sql = _as_meant(next(s for _, s in SEED_STREAMS if "power_stream" in s))
    n = design_from_sql(sql)["nodes"]
    assert n["trigger"] == {"type": "none"}
    assert n["source"] == {"db": None, "table": "meters", "partition_by": []}
    assert n["prefilter"] == {"condition": "voltage > 100"}
    assert n["computation"]["query"].endswith("FROM %%trows")
    assert "concat_ws" in n["computation"]["query"] and "WHERE" not in n["computation"]["query"]
