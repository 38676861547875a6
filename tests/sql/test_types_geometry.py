"""GEOMETRY(n) columns and tags (TDengine SQL manual, "Data Types"): Well-Known Text in,
Well-Known Binary stored and answered (REST: hex text). Expected WKB is built by hand with
``struct`` from the OGC Simple Features layout (byte order 1, type, coordinates as doubles)."""

from __future__ import annotations

import struct

import pytest

from spark_workers.errors import Code, SqlError
from spark_workers.lake.store import Lake
from spark_workers.sql.typed_values import wkb_to_wkt, wkt_to_wkb
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry


def _point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _line(*pts: tuple[float, float]) -> bytes:
    return struct.pack("<BII", 1, 2, len(pts)) + b"".join(struct.pack("<dd", *p) for p in pts)


def _polygon(*rings: list[tuple[float, float]]) -> bytes:
    out = struct.pack("<BII", 1, 3, len(rings))
    for r in rings:
        out += struct.pack("<I", len(r)) + b"".join(struct.pack("<dd", *p) for p in r)
    return out


def _ex(tmp_path):  # type: ignore[no-untyped-def]
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute("create database db; create table t (ts timestamp, g geometry(128), n int)")
    return ex


SQUARE = [(0.0, 0.0), (0.0, 2.0), (2.0, 2.0), (2.0, 0.0), (0.0, 0.0)]


def test_wkt_is_stored_as_wkb_and_answered_as_hex(tmp_path):
    ex = _ex(tmp_path)
    ex.execute(
        "insert into t values (1000, 'POINT(1.0 2.5)', 1) (2000, 'linestring (0 0, -1.5 3)', 2) "
        "(3000, 'POLYGON((0 0, 0 2, 2 2, 2 0, 0 0))', 3) (4000, null, 4)"
    )
    res = ex.execute_one("select g from t order by ts")
    expected = [_point(1.0, 2.5), _line((0, 0), (-1.5, 3)), _polygon(SQUARE), None]
    assert [r[0] for r in res.rows] == expected
    rest = res.to_rest("UTC")
    assert rest["column_meta"] == [["g", "GEOMETRY", 128]]
    assert [r[0] for r in rest["data"]] == [None if b is None else b.hex() for b in expected]


def _six(*coords: float) -> str:
    return " ".join(f"{c:.6f}" for c in coords)


@pytest.mark.parametrize(
    ("wkt", "expected"),
    [
        # TDengine's geometry.py: ST_AsText gives back 'POINT (1.000000 1.500000)' as inserted
        ("POINT (1.000000 1.500000)", "POINT (1.000000 1.500000)"),
        ("point(-0.5 1e2)", f"POINT ({_six(-0.5, 100)})"),
        ("LINESTRING(1 1, 2 2, 5 5)", f"LINESTRING ({_six(1, 1)}, {_six(2, 2)}, {_six(5, 5)})"),
        (
            "POLYGON((3 6, 5 6, 5 8, 3 8, 3 6))",
            f"POLYGON (({_six(3, 6)}, {_six(5, 6)}, {_six(5, 8)}, {_six(3, 8)}, {_six(3, 6)}))",
        ),
        ("MULTIPOINT((1 1), (2 2))", f"MULTIPOINT (({_six(1, 1)}), ({_six(2, 2)}))"),
        ("MULTIPOINT(1 1, 2 2)", f"MULTIPOINT (({_six(1, 1)}), ({_six(2, 2)}))"),
        (
            "GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))",
            f"GEOMETRYCOLLECTION (POINT ({_six(1, 1)}), LINESTRING ({_six(0, 0)}, {_six(1, 1)}))",
        ),
    ],
)
def test_wkt_round_trip(wkt, expected):
    assert wkb_to_wkt(wkt_to_wkb(wkt)) == expected


@pytest.mark.parametrize(
    "value",
    [
        "'POINT(1)'",
        "'POINT(1 2'",
        "'CIRCLE(1 2)'",
        "'POINT(1 2) x'",
        "5",
        # TDengine's geometry.py: a misspelt name, a trailing comma, an unclosed ring, not WKT
        "'POIN(1.0 1.5)'",
        "'LINESTRING(1.0 1.0, 2.0 2.0, 5.0 5.0,)'",
        "'POLYGON((3.0 6.0, 5.0 6.0, 5.0 8.0, 3.0 8.0))'",
        "'XXX'",
        "'LINESTRING(1 1)'",
    ],
)
def test_bad_value_is_refused_at_its_position_and_writes_nothing(tmp_path, value):
    ex = _ex(tmp_path)
    ex.execute("insert into t values (1000, 'POINT(0 0)', 1)")
    sql = f"insert into t values (2000, 'POINT(3 3)', 2) (3000, {value}, 3)"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code in (Code.SYNTAX_ERROR, Code.WRONG_VALUE_TYPE)
    assert err.value.offset == sql.index(value)
    assert ex.execute_one("select g, n from t").rows == [[_point(0, 0), 1]]


def test_wkb_longer_than_the_declared_length_is_refused(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create table small (ts timestamp, g geometry(21))")
    ex.execute("insert into small values (1000, 'POINT(1 1)')")  # 21 bytes
    with pytest.raises(SqlError) as err:
        ex.execute("insert into small values (2000, 'LINESTRING(0 0, 1 1)')")  # 41 bytes
    assert err.value.code == Code.VALUE_OUT_OF_RANGE
    assert ex.execute_one("select g from small").rows == [[_point(1, 1)]]


def test_geometry_tag(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create stable s (ts timestamp, a int) tags (loc geometry(64))")
    ex.execute("insert into s1 using s tags ('POINT(3 4)') values (1000, 1)")
    assert ex.execute_one("select tbname, loc from s").rows == [["s1", _point(3, 4)]]


# ---------------------------------------------------------------------- geometry functions


def test_st_astext_gives_back_the_inserted_text(tmp_path):
    # TDengine's geometry.py: select c3, ST_AsText(c4) ... checkEqual(c3, ST_AsText(c4))
    ex = Executor(Lake(tmp_path / "lake"), MemoryRegistry(), tz="UTC", default_db="db")
    ex.execute("create database db; create table t1 (ts timestamp, c3 varchar(256), c4 geometry(512))")
    point = "'POINT (1.000000 1.500000)'"
    line = "'LINESTRING (1.000000 1.000000, 2.000000 2.000000, 5.000000 5.000000)'"
    poly = (
        "'POLYGON ((3.000000 6.000000, 5.000000 6.000000, 5.000000 8.000000, "
        "3.000000 8.000000, 3.000000 6.000000))'"
    )
    ex.execute(
        f"insert into t1 values (1000, {point}, {point}) (2000, {line}, {line}) (3000, {poly}, {poly}) "
        "(4000, NULL, NULL)"
    )
    rows = ex.execute_one("select c3, ST_AsText(c4) from t1").rows
    assert len(rows) == 4 and all(r[0] == r[1] for r in rows)


def test_st_geomfromtext_and_st_makepoint_build_wkb(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create table w (ts timestamp, s varchar(64), x double, y int)")
    ex.execute("insert into w values (1000, 'LINESTRING(0 0, -1.5 3)', 2.5, -4) (2000, null, null, null)")
    res = ex.execute_one(
        "select st_geomfromtext(s), st_makepoint(x, y), st_astext(st_makepoint(x, 7)) from w order by ts"
    )
    assert res.rows == [
        [_line((0, 0), (-1.5, 3)), _point(2.5, -4), f"POINT ({2.5:.6f} {7:.6f})"],
        [None, None, None],
    ]
    assert [c.type.name for c in res.columns] == ["GEOMETRY", "GEOMETRY", "VARCHAR"]
    assert res.to_rest("UTC")["data"][0][:2] == [_line((0, 0), (-1.5, 3)).hex(), _point(2.5, -4).hex()]


@pytest.mark.parametrize(
    ("sql", "token", "code"),
    [
        ("select st_astext(n) from t", "st_astext", Code.FUNC_PARA_TYPE),
        ("select st_geomfromtext(n) from t", "st_geomfromtext", Code.FUNC_PARA_TYPE),
        ("select st_intersects(n, g) from t", "st_intersects", Code.FUNC_PARA_TYPE),
        ("select st_contains(g) from t", "st_contains", Code.FUNC_PARA_NUM),
    ],
)
def test_geometry_function_errors(tmp_path, sql, token, code):
    ex = _ex(tmp_path)
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == code
    assert err.value.offset == sql.index(token)


def test_bad_wkt_in_a_column_fails_the_query_without_internal_text(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("create table w (ts timestamp, s varchar(64))")
    ex.execute("insert into w values (1000, 'nonsense')")
    with pytest.raises(SqlError) as err:
        ex.execute("select st_geomfromtext(s) from w")
    assert err.value.code == Code.WRONG_VALUE_TYPE
    assert "Python" not in err.value.message and "UDF" not in err.value.message


def test_where_compares_with_the_wkb_of_a_wkt_constant(tmp_path):
    ex = _ex(tmp_path)
    ex.execute("insert into t values (1000, 'POINT(1 1)', 1) (2000, 'POINT(2 2)', 2) (3000, null, 3)")
    assert ex.execute_one("select n from t where g = 'POINT(1.0 1.0)'").rows == [[1]]
    sql = "select n from t where g = 'POINT(1'"
    with pytest.raises(SqlError) as err:
        ex.execute(sql)
    assert err.value.code == Code.SYNTAX_ERROR
    assert err.value.offset == sql.index("'POINT(1'")


def test_spatial_predicates_follow_their_definitions(tmp_path):
    """ST_Intersects / Equals / Touches / Covers / Contains / ContainsProperly (TDengine SQL manual,
    "Geometry Functions"; GEOS through shapely) on cases whose answer follows from the
    definitions: a point inside the square, one on its edge, one outside; NULL gives NULL."""
    ex = _ex(tmp_path)
    ex.execute(
        "insert into t values (1000, 'POINT(1 1)', 1) (2000, 'POINT(2 1)', 2) (3000, 'POINT(5 5)', 3) "
        "(4000, null, 4)"
    )
    sq = "st_geomfromtext('POLYGON((0 0, 0 2, 2 2, 2 0, 0 0))')"
    rows = ex.execute_one(
        f"select n, st_intersects(g, {sq}), st_contains({sq}, g), st_containsproperly({sq}, g), "
        f"st_covers({sq}, g), st_touches(g, {sq}), st_equals(g, st_makepoint(1, 1)) from t order by ts"
    ).rows
    inside, edge = (True, True, True, True, False, True), (True, False, False, True, True, False)
    assert rows == [
        [1, *inside],
        [2, *edge],
        [3, False, False, False, False, False, False],
        [4, None, None, None, None, None, None],
    ]
