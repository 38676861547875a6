"""JSON tags (TDengine SQL manual, "JSON Type"; cases from TDengine's
tests/system-test/2-query/json_tag.py): one JSON tag, the only tag of its supertable, never a
column; a JSON object string; ``''``/blanks/``'null'``/``'{}'`` are a NULL tag; first of duplicate
keys wins, the empty key is dropped; keys are printable ASCII of at most 256 characters; values
are scalars. Expected texts are computed with Python's ``json``."""

from __future__ import annotations

import json

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def _canonical(obj: dict) -> str:  # type: ignore[type-arg]
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _ex(tmp_path):  # type: ignore[no-untyped-def]
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute("create database db; create stable s (ts timestamp, a int) tags (j json)")
    return ex


def _tag(obj: object) -> str:
    return "'" + json.dumps(obj, ensure_ascii=False).replace("'", "''") + "'"


TAGS = {
    "s1": {"tag1": "fff", "tag2": 5, "tag3": True},
    "s2": {"tag1": 5, "tag2": "beijing"},
    "s3": {"tag1": False, "tag2": "beijing"},
    "s4": {"tag1": None, "tag2": "shanghai", "tag3": "hello"},
    "s5": {"tag1": 1.232, "tag2": None},
    "s6": {"tag1": "收到货", "tag2": ""},
}


def _load(ex) -> None:  # type: ignore[no-untyped-def]
    for i, (name, obj) in enumerate(TAGS.items()):
        ex.execute(f"insert into {name} using s tags ({_tag(obj)}) values ({1000 + i}, {i})")


def test_json_tag_is_stored_canonical_and_answered_as_text(tmp_path):
    ex = _ex(tmp_path)
    _load(ex)
    res = ex.execute_one("select tbname, j from s order by tbname")
    assert res.rows == [[name, _canonical(obj)] for name, obj in sorted(TAGS.items())]
    assert res.columns[1].type.sql == "JSON"
    rest = res.to_rest("UTC")
    assert rest["column_meta"][1] == ["j", "JSON", 4095]
    assert [json.loads(r[1]) for r in rest["data"]] == [obj for _, obj in sorted(TAGS.items())]


def test_duplicate_and_empty_keys_follow_tdengine(tmp_path):
    ex = _ex(tmp_path)
    ex.execute(
        """create table s8 using s tags ('{"tag1":null, "tag1":true, "tag1":45, "1tag$":2, " ":90, "":32}')"""
    )
    ex.execute("insert into s8 values (1000, 1)")
    # json_tag.py: tdSql.checkData(0, 0, '{" ":90,"1tag$":2,"tag1":null}')
    assert ex.execute_one("select j from s8").rows == [['{" ":90,"1tag$":2,"tag1":null}']]


@pytest.mark.parametrize("value", ["''", "' '", "'\t'", "'null'", "'{}'", "NULL", """'{"":1}'"""])
def test_empty_values_are_a_null_tag(tmp_path, value):
    ex = _ex(tmp_path)
    ex.execute(f"insert into n1 using s tags ({value}) values (1000, 1)")
    assert ex.execute_one("select j from s").rows == [[None]]
    assert ex.execute_one("select count(*) from s where j is null").rows == [[1]]


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("""'"efwewf"'""", Code.INVALID_JSON),
        ("'3333'", Code.INVALID_JSON),
        ("76", Code.INVALID_JSON_TYPE),
        ("'33.33'", Code.INVALID_JSON),
        ("'false'", Code.INVALID_JSON),
        ("'[1,true]'", Code.INVALID_JSON),
        ("'{222}'", Code.INVALID_JSON),
        ("""'{"fe"}'""", Code.INVALID_JSON),
        ("""'{"tag1":[1,true]}'""", Code.INVALID_JSON_TYPE),
        ("""'{"tag1":{}}'""", Code.INVALID_JSON_TYPE),
        ("""'{"。loc":"fff"}'""", Code.INVALID_JSON),
        ("""'{"\t":"fff"}'""", Code.INVALID_JSON),
        ("""'{"试试":"fff"}'""", Code.INVALID_JSON),
        ("""'{"k":1.8e308}'""", Code.INVALID_JSON_TYPE),
        ("""'{"k":-1.8e308}'""", Code.INVALID_JSON_TYPE),
        ("""'{"%s":5}'""" % ("abcd" * 64 + "1"), Code.INVALID_JSON),  # key of 257 characters
        ("""'{"TSSSS":"%s"}'""" % ("abcd" * 1021), Code.VALUE_OUT_OF_RANGE),  # 4096 bytes
    ],
)
def test_bad_json_is_refused_at_its_position_and_creates_nothing(tmp_path, value, code):
    ex = _ex(tmp_path)
    ex.execute("""insert into s1 using s tags ('{"a":1}') values (1000, 1)""")
    sql = f"insert into s2 using s tags ({value}) values (2000, 2)"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == code
    assert err.value.offset == sql.index(value)
    assert ex.execute_one("select tbname, j, a from s").rows == [["s1", '{"a":1}', 1]]


def test_key_of_256_characters_is_accepted(tmp_path):
    ex = _ex(tmp_path)
    key = "abcd" * 64
    ex.execute(f"""create table k1 using s tags ('{{"{key}":5}}')""")
    ex.execute("insert into k1 values (1000, 1)")
    assert ex.execute_one("select j from s").rows == [[_canonical({key: 5})]]


@pytest.mark.parametrize(
    ("ddl", "token", "code"),
    [
        ("create stable u (ts timestamp, a int) tags (j json, t int)", "j json", Code.ONLY_ONE_JSON_TAG),
        ("create stable u (ts timestamp, a int) tags (t int, j json)", "j json", Code.ONLY_ONE_JSON_TAG),
        ("create stable u (ts timestamp, data json) tags (t int)", "data json", Code.INVALID_COL_JSON),
        ("create table u (ts timestamp, data json)", "data json", Code.INVALID_COL_JSON),
    ],
)
def test_json_placement_rules(tmp_path, ddl, token, code):
    ex = _ex(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute(ddl)
    assert err.value.code == code
    assert err.value.offset == ddl.index(token)


# ---------------------------------------------------------------------- -> and CONTAINS

# one row per subtable; TDengine's rendering of j->'k' computed from the Python value
OPS_TAGS = {
    "t1": {"tag1": "femail", "tag2": 35, "tag3": True},
    "t2": {"tag1": 5, "tag2": "beijing"},
    "t3": {"tag1": False, "tag2": "beijing"},
    "t4": {"tag1": None, "tag2": "shanghai", "tag3": "hello"},
    "t5": {"tag1": 1.232, "tag2": None},
    "t6": {"tag1": 11, "tag2": ""},
    "t7": {"tag1": "收到货", "tag2": ""},
}
MISSING = object()


def _render(v: object) -> str | None:
    if v is MISSING:
        return None
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return f"{float(v):.9f}"
    return json.dumps(v, ensure_ascii=False)


def _ops(tmp_path):  # type: ignore[no-untyped-def]
    ex = _ex(tmp_path)
    for i, (name, obj) in enumerate(OPS_TAGS.items()):
        ex.execute(f"insert into {name} using s tags ({_tag(obj)}) values ({1000 + i}, {i})")
    ex.execute("insert into t9 using s tags ('') values (9000, 9)")
    return ex


def _expected_count(key: str, pred) -> int:  # type: ignore[no-untyped-def]
    return sum(1 for obj in OPS_TAGS.values() if key in obj and pred(obj[key])) + 0


def test_arrow_renders_values_as_tdengine_and_is_typed_json(tmp_path):
    ex = _ops(tmp_path)
    res = ex.execute_one("select tbname, j->'tag1', j contains 'tag3' from s order by tbname")
    assert res.columns[1].name == "j->'tag1'" and res.columns[1].type.sql == "JSON"
    expected = [[n, _render(o.get("tag1", MISSING)), "tag3" in o] for n, o in sorted(OPS_TAGS.items())]
    assert res.rows == [*expected, ["t9", None, False]]


def _num(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    return None


@pytest.mark.parametrize(
    ("where", "key", "pred"),
    [
        ("j->'tag2' = 'beijing'", "tag2", lambda v: v == "beijing"),
        ("j->'tag2' > 'beijing'", "tag2", lambda v: isinstance(v, str) and v > "beijing"),
        # != also holds for values of another type (numbers against a string), not for null
        (
            "j->'tag2' != 'beijing'",
            "tag2",
            lambda v: v is not None and (not isinstance(v, str) or v != "beijing"),
        ),
        ("j->'tag1' = 5", "tag1", lambda v: _num(v) == 5),
        ("j->'tag1' < 54", "tag1", lambda v: _num(v) is not None and _num(v) < 54),  # false counts as 0
        ("j->'tag1' != 5", "tag1", lambda v: v is not None and (_num(v) is None or _num(v) != 5)),
        ("j->'tag1' >= 1.232", "tag1", lambda v: _num(v) is not None and _num(v) >= 1.232),
        ("j->'tag1' != false", "tag1", lambda v: _num(v) is not None and _num(v) != 0),
        ("j->'tag1' = true", "tag1", lambda v: _num(v) == 1),
        ("j->'tag1' like 'fe%'", "tag1", lambda v: isinstance(v, str) and v.startswith("fe")),
        ("j contains 'tag3'", "tag3", lambda v: True),
    ],
)
def test_filters_on_json_values(tmp_path, where, key, pred):
    ex = _ops(tmp_path)
    assert ex.execute_one(f"select count(*) from s where {where}").rows == [[_expected_count(key, pred)]]


def test_is_null_covers_missing_keys_json_null_and_null_tags(tmp_path):
    ex = _ops(tmp_path)
    n_tag1 = sum(1 for o in OPS_TAGS.values() if o.get("tag1", None) is None) + 1  # + the NULL tag
    assert ex.execute_one("select count(*) from s where j->'tag1' is null").rows == [[n_tag1]]
    assert ex.execute_one("select count(*) from s where j->'tag4' is null").rows == [[len(OPS_TAGS) + 1]]
    assert ex.execute_one("select count(*) from s where j->'tag1' is not null").rows == [
        [len(OPS_TAGS) + 1 - n_tag1]
    ]


def test_group_by_a_json_value(tmp_path):
    ex = _ops(tmp_path)
    got = ex.execute_one("select j->'tag2', count(*) from s group by j->'tag2'").rows
    expected: dict[str | None, int] = {}
    for o in [*OPS_TAGS.values(), {}]:
        r = _render(o.get("tag2", MISSING))
        expected[r] = expected.get(r, 0) + 1
    assert {r[0]: r[1] for r in got} == expected


@pytest.mark.parametrize(
    ("sql", "token", "code"),
    [
        ("select a->'x' from s", "a->'x'", Code.WRONG_VALUE_TYPE),
        ("select j->5 from s", "5", Code.WRONG_VALUE_TYPE),
        ("select count(*) from s where j->'tag1' = a", "a", Code.WRONG_VALUE_TYPE),
    ],
)
def test_arrow_errors(tmp_path, sql, token, code):
    ex = _ops(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == code
    assert err.value.offset == sql.rindex(token)


@pytest.mark.parametrize(
    "sql", ["select avg(j->'tag1') from s", "select ceil(j->'tag1') from s", "select avg(j) from s"]
)
def test_numeric_functions_refuse_json_values(tmp_path, sql):
    # json_tag.py: tdSql.error("select avg(jtag->'tag1') from jsons1"), ceil(...) likewise
    ex = _ops(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == Code.FUNC_PARA_TYPE
