"""``+`` / ``-`` with timestamps, and comparisons of timestamps with integer expressions, typed as
TDengine types them (``parTranslater.c``, ``translateArithmeticOperator``): timestamp ± integer is
a TIMESTAMP counting the integer in the database precision; timestamp - timestamp and timestamp ±
float or string are ``0x2605``. Expected values are epoch arithmetic done here in Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_workers.errors import Code, TdError
from spark_workers.lake.store import Lake
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

BASE = {"ms": 1_668_073_288_000, "us": 1_668_073_288_000_000, "ns": 1_668_073_288_000_000_000}


@pytest.fixture
def ex(tmp_path: Path) -> Executor:
    e = Executor(Lake(tmp_path / "lake"), MemoryRegistry())
    for p, base in BASE.items():
        e.execute_one(f"create database d{p} precision '{p}'")
        e.execute_one(f"create table d{p}.t (ts timestamp, a int, f double)")
        e.execute_one(f"insert into d{p}.t values ({base}, 1, 0.5) ({base + 3000}, -2, 1.5)")
    return e


@pytest.mark.parametrize("precision", ["ms", "us", "ns"])
def test_timestamp_plus_or_minus_an_integer_counts_database_units(ex: Executor, precision: str) -> None:
    base = BASE[precision]
    got = ex.execute_one(f"select ts + 1500, ts - a, 7 + ts, ts + true from d{precision}.t").rows
    assert got == [
        [base + 1500, base - 1, base + 7, base + 1],
        [base + 3000 + 1500, base + 3000 + 2, base + 3000 + 7, base + 3000 + 1],
    ]


def test_comparing_a_timestamp_with_an_integer_expression_reads_an_epoch(ex: Executor) -> None:
    base = BASE["ms"]
    rows = ex.execute_one(f"select a from dms.t where ts > {base} + 1000").rows
    assert rows == [[-2]]
    rows = ex.execute_one(f"select a from dms.t where ts - 3000 = {base}").rows
    assert rows == [[-2]]
    rows = ex.execute_one(f"select a from dms.t where {base} + 2999 >= ts").rows
    assert rows == [[1]]
    ns = BASE["ns"]  # nanosecond epochs compare exactly (not through microseconds)
    assert ex.execute_one(f"select a from dns.t where ts > {ns} + 2999").rows == [[-2]]
    assert ex.execute_one(f"select a from dns.t where ts > {ns} + 3000 - 1").rows == [[-2]]
    assert ex.execute_one(f"select a from dns.t where ts >= {ns} + 3001").rows == []


@pytest.mark.parametrize(
    ("expr", "near"),
    [("ts - ts", "ts from"), ("ts + f", "f from"), ("ts - 1.5", "1.5 from"), ("now() - ts", "ts from")],
)
def test_timestamp_with_a_timestamp_float_or_string_is_a_wrong_value_type(
    ex: Executor, expr: str, near: str
) -> None:
    with pytest.raises(TdError) as err:
        ex.execute_one(f"select {expr} from dms.t")
    assert err.value.code == Code.WRONG_VALUE_TYPE
    assert f'near "{near}' in err.value.desc


@pytest.mark.parametrize("precision", ["ms", "us", "ns"])
def test_an_aggregate_of_a_timestamp_is_a_timestamp(ex: Executor, precision: str) -> None:
    """``last(ts)``, ``max(ts)``... hold one of the column's timestamps: CAST to BIGINT gives its
    epoch in the database precision and ``+`` / ``-`` an integer counts its units, in plain,
    PARTITION BY and window queries alike (was NULL)."""
    base, t = BASE[precision], f"d{precision}.t"
    last = base + 3000
    plain = (
        f"select cast(last(ts) as bigint), cast(max(ts) as bigint), cast(first(ts) as bigint), "
        f"last(ts) - 5 from {t}"
    )
    assert ex.execute_one(plain).rows == [[last, last, base, last - 5]]
    grouped = f"select cast(last(ts) as bigint), tbname from {t} partition by tbname"
    assert ex.execute_one(grouped).rows == [[last, "t"]]
    window = f"select cast(last(ts) as bigint), cast(min(ts) as bigint), last(ts) + 1 from {t} interval(1d)"
    assert [r[:3] for r in ex.execute_one(window).rows] == [[last, base, last + 1]]
