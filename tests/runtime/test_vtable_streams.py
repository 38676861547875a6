"""Streams over virtual tables, through the whole pipeline without Spark (seed 000 "Support for
Virtual Tables in Stream Computing", seed 002 trigger tables): rows written to the referenced
tables reach the stream as the virtual table's rows, aligned on the timestamp across
micro-batches; the legacy syntax keeps seed 000's restrictions; a virtual child table created
after the task started does not take part."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from spark_workers.errors import Code, SqlError, TdError
from spark_workers.lake.store import Lake
from spark_workers.runtime.local import LocalRunner
from spark_workers.runtime.preview import preview_stream
from spark_workers.statements.executor import Executor
from spark_workers.streams.registry import MemoryRegistry

BASE_MS = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC

SETUP = [
    "create database vs precision 'ms'",
    "create table vs.stb (ts timestamp, c int) tags (g int)",
    "create table vs.vstb (ts timestamp, a int, b int) tags (g int) virtual 1",
    "create table vs.ct1 using vs.stb tags (1)",
    "create table vs.ct2 using vs.stb tags (2)",
    "create table vs.ct3 using vs.stb tags (3)",
    # vct1 aligns two tables; vct2 reads one
    "create vtable vs.vct1 (a from vs.ct1.c, b from vs.ct2.c) using vs.vstb tags (1)",
    "create vtable vs.vct2 (a from vs.ct3.c) using vs.vstb tags (2)",
]

# (table, second, value): written one statement (one micro-batch) at a time, so the two tables
# vct1 reads deliver the same timestamp in different micro-batches
WRITES = [
    ("ct1", 1, 1),
    ("ct3", 1, 100),
    ("ct2", 1, 10),
    ("ct1", 4, 4),
    ("ct2", 6, 60),
    ("ct3", 12, 120),
    ("ct1", 12, 12),
    ("ct2", 13, 130),
    ("ct1", 25, 25),
    ("ct2", 25, 250),
    ("ct3", 25, 250),
]


class Pipeline:
    def __init__(self, root: Path) -> None:
        self.lake = Lake(root)
        self.registry = MemoryRegistry()
        self.runners: dict[str, LocalRunner] = {}

    def sql(self, text: str) -> list[list[object]]:
        res = Executor(self.lake, self.registry, tz="UTC", default_db="vs").execute_one(text)
        for key in self.registry.streams:
            if key not in self.runners:
                self.runners[key] = LocalRunner.for_registered(self.lake, self.registry, key, buckets=2)
        for r in self.runners.values():
            r.run()
        return res.rows


def expected_windows(writes: list[tuple[str, int, int]], size_s: int) -> pd.DataFrame:
    """Independent computation: a legacy stream (IGNORE UPDATE 1, the only choice on a virtual
    table, seed 000) takes every row of a referenced table as incremental data, the child's
    other columns NULL ("merging the data might produce null values"); windows of ``size_s``
    seconds, closed when a later row of the same child reaches the next window."""
    df = pd.DataFrame(writes, columns=["t", "s", "v"])
    members = {"vct1": {"a": "ct1", "b": "ct2"}, "vct2": {"a": "ct3"}}
    out = []
    for name, cols in members.items():
        aligned = pd.concat(
            [df[df.t == table][["s", "v"]].rename(columns={"v": col}) for col, table in cols.items()]
        )
        aligned["w"] = aligned["s"] // size_s * size_s
        last = aligned["w"].max()
        for w, g in aligned[aligned["w"] < last].groupby("w"):
            out.append(
                {
                    "tbname": name,
                    "w": int(w),
                    "n": len(g),
                    "sa": g["a"].sum() if g["a"].notna().any() else None,
                    "sb": g["b"].sum() if "b" in g and g["b"].notna().any() else None,
                }
            )
    return pd.DataFrame(out).sort_values(["tbname", "w"]).reset_index(drop=True)


def test_legacy_stream_over_a_virtual_supertable_aligns_across_micro_batches(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    p.sql(
        "create stream vs_s into vs.out_s as select _wstart, count(*) n, sum(a) sa, sum(b) sb "
        "from vs.vstb partition by tbname interval(10s)"
    )
    for table, sec, v in WRITES:
        p.sql(f"insert into vs.{table} values ({BASE_MS + sec * 1000}, {v})")
    got = p.sql("select _wstart, n, sa, sb from vs.out_s order by n desc, _wstart")
    want = expected_windows(WRITES, 10).sort_values(["n", "w"], ascending=[False, True])
    assert [list(r) for r in got] == [
        [
            BASE_MS + r.w * 1000,
            r.n,
            None if pd.isna(r.sa) else int(r.sa),
            None if pd.isna(r.sb) else int(r.sb),
        ]
        for r in want.itertuples()
    ]
    assert len(got) == len(want) > 2


def test_337_stream_aligns_a_virtual_table_across_micro_batches(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    p.sql(
        "create stream vs.s_al interval(10s) sliding(10s) from vs.vct1 "
        "stream_options(ignore_nodata_trigger) into vs.out_al as "
        "select _twstart, count(*) n, sum(a) sa, sum(b) sb from %%trows"
    )
    for table, sec, v in WRITES:
        p.sql(f"insert into vs.{table} values ({BASE_MS + sec * 1000}, {v})")
    got = p.sql("select * from vs.out_al order by 1")
    # TDengine's alignment: vct1's rows are the outer merge on ts of ct1.c and ct2.c, even when
    # a timestamp's rows arrive in different micro-batches (an update of the aligned row)
    df = pd.DataFrame(WRITES, columns=["t", "s", "v"])
    a = df[df.t == "ct1"][["s", "v"]].rename(columns={"v": "a"})
    b = df[df.t == "ct2"][["s", "v"]].rename(columns={"v": "b"})
    al = a.merge(b, on="s", how="outer")
    al["w"] = al["s"] // 10 * 10
    want = [
        [BASE_MS + int(w) * 1000, len(g), int(g["a"].sum()), int(g["b"].sum())]
        for w, g in al[al["w"] < al["w"].max()].groupby("w")
    ]
    assert [list(r) for r in got] == want


def test_stream_on_a_virtual_child_table_with_a_computation_over_another(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    p.sql(
        "create stream vs.s337 state_window(a) from vs.vct2 into vs.out337 as "
        "select _twstart, _twrownum, count(b) nb, sum(b) sb from vs.vct1 "
        "where ts >= _twstart and ts <= _twend"
    )
    for sec, v in [(1, 5), (2, 5), (3, 6), (4, 6), (5, 7)]:
        p.sql(f"insert into vs.ct2 values ({BASE_MS + sec * 1000}, {sec * 10})")
        p.sql(f"insert into vs.ct3 values ({BASE_MS + sec * 1000}, {v})")
    got = p.sql("select * from vs.out337 order by 1")
    # windows of ct3's states [1..2], [3..4] (the last stays open); vct1.b is ct2's column
    assert [[r[0], r[1], r[2], r[3]] for r in got] == [
        [BASE_MS + 1000, 2, 2, 10 + 20],
        [BASE_MS + 3000, 2, 2, 30 + 40],
    ]


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        ("watermark 5s", "the watermark must be 0"),
        ("ignore update 0", "IGNORE UPDATE 0"),
        ("ignore expired 0", "IGNORE EXPIRED 0"),
        ("fill_history 1", "FILL_HISTORY 1"),
        ("trigger max_delay 5s", "MAX_DELAY"),
        ("trigger force_window_close", "FORCE_WINDOW_CLOSE"),
        ("trigger continuous_window_close", "CONTINUOUS_WINDOW_CLOSE"),
    ],
)
def test_legacy_restrictions_of_seed_000(tmp_path: Path, options: str, rule: str) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    sql = f"create stream bad {options} into vs.o as select _wstart, count(*) from vs.vct1 interval(10s)"
    with pytest.raises(SqlError) as info:
        p.sql(sql)
    assert info.value.code == Code.INVALID_OPERATION
    assert rule in info.value.message and "seed 000" in info.value.message
    with pytest.raises(SqlError) as info:
        p.sql("create stream bad into vs.o as select _wstart, count(*) from vs.vct1 count_window(3)")
    assert "COUNT_WINDOW" in info.value.message and "seed 000" in info.value.message
    # the same options are accepted on the physical table
    p.sql(sql.replace("vs.vct1", "vs.ct1").replace("fill_history 1", "fill_history 0"))


MANUAL = {  # the manual's alignment example: (second, value[, value2]) of t1, t2, t3
    "t1": [(1, 1), (4, 4)],
    "t2": [(2, 20), (4, 40), (5, 50)],
    "t3": [(3, 300, 3000), (5, 500, 5000)],
}


def _manual_tables(p: Pipeline) -> None:
    p.sql("create table vs.t1 (ts timestamp, value int)")
    p.sql("create table vs.t2 (ts timestamp, value int)")
    p.sql("create table vs.t3 (ts timestamp, value1 int, value2 int)")
    p.sql(
        "create vtable vs.v1 (ts timestamp, c1 int from vs.t1.value, c2 int from vs.t2.value, "
        "c3 int from vs.t3.value1, c4 int from vs.t3.value2)"
    )


def _write_manual(p: Pipeline, shift_s: int = 0) -> None:
    """One statement (micro-batch) per row, table after table: a timestamp's rows of t1, t2 and
    t3 arrive in different micro-batches."""
    for table, rows in MANUAL.items():
        for row in rows:
            vals = ", ".join(str(v) for v in row[1:])
            p.sql(f"insert into vs.{table} values ({BASE_MS + (row[0] + shift_s) * 1000}, {vals})")


def _manual_aligned(shift_s: int = 0) -> pd.DataFrame:
    frames = [
        pd.DataFrame(MANUAL["t1"], columns=["s", "c1"]),
        pd.DataFrame(MANUAL["t2"], columns=["s", "c2"]),
        pd.DataFrame(MANUAL["t3"], columns=["s", "c3", "c4"]),
    ]
    out = frames[0]
    for f in frames[1:]:
        out = out.merge(f, on="s", how="outer")
    out["s"] += shift_s
    return out.sort_values("s").reset_index(drop=True)


def test_a_virtual_table_over_several_tables_triggers_a_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spark_workers.lake.changes as changes

    monkeypatch.setattr(changes, "CLOCK_HOLD_MS", 0)  # offsets are commit times (lake/changes.py)
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    _manual_tables(p)
    p.sql(
        "create stream vs.s_many interval(10s) sliding(10s) from vs.v1 stream_options(ignore_nodata_trigger) "
        "into vs.out_many as select _twstart, count(*) n, sum(c1) s1, sum(c2) s2, sum(c3) s3, sum(c4) s4 "
        "from %%trows"
    )
    _write_manual(p)
    p.sql("insert into vs.t1 values (1735689625000, 0)")  # closes [0, 10s)
    got = p.sql("select * from vs.out_many")
    al = _manual_aligned()
    assert [list(r) for r in got] == [
        [BASE_MS, len(al), *[int(al[c].sum()) for c in ("c1", "c2", "c3", "c4")]]
    ]
    # as a computation's source too
    assert p.sql("select c1, c2 from vs.v1 where ts < 1735689610000 order by ts") == [
        [None if pd.isna(a) else int(a), None if pd.isna(b) else int(b)]
        for a, b, c in zip(al.c1, al.c2, al.c3, strict=True)
        if not (pd.isna(a) and pd.isna(b))
    ]


def test_fill_history_over_a_virtual_table_over_several_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spark_workers.lake.changes as changes

    monkeypatch.setattr(changes, "CLOCK_HOLD_MS", 0)
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    _manual_tables(p)
    _write_manual(p)  # history
    p.sql(
        "create stream vs.s_hist interval(10s) sliding(10s) from vs.v1 "
        "stream_options(ignore_nodata_trigger | fill_history) into vs.out_hist as "
        "select _twstart, count(*) n, sum(c2) s2, sum(c4) s4 from %%trows"
    )
    _write_manual(p, shift_s=20)  # live
    p.sql("insert into vs.t2 values (1735689650000, 0)")
    al = pd.concat([_manual_aligned(), _manual_aligned(20)])
    al["w"] = al["s"] // 10 * 10
    want = [
        [BASE_MS + int(w) * 1000, len(g), int(g["c2"].sum()), int(g["c4"].sum())] for w, g in al.groupby("w")
    ]
    assert [list(r) for r in p.sql("select * from vs.out_hist order by 1")] == want


def test_child_tables_created_after_the_task_started_do_not_take_part(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    p.sql(
        "create stream late into vs.out_late as select _wstart, count(*) n from vs.vstb "
        "partition by tbname interval(10s)"
    )
    p.sql("insert into vs.ct3 values (1735689601000, 1)")  # the task starts with vct1, vct2
    p.sql("create vtable vs.vct3 (a from vs.ct3.c) using vs.vstb tags (3)")
    p.sql("insert into vs.ct3 values (1735689621000, 2)")
    p.sql("insert into vs.ct3 values (1735689635000, 3)")
    got = p.sql("select _wstart, n, groupId from vs.out_late order by _wstart")
    # vct2 closes [0, 10) and [20, 30); vct3 (same rows from ct3) would close [20, 30) as well
    assert [r[:2] for r in got] == [[BASE_MS, 1], [BASE_MS + 20_000, 1]]
    assert len({r[2] for r in got}) == 1


def test_a_stream_cannot_write_into_a_virtual_table(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    with pytest.raises(SqlError) as info:
        p.sql("create stream w into vs.vstb as select _wstart, count(*) from vs.ct1 interval(10s)")
    assert info.value.code == Code.VTABLE_NOT_SUPPORT_STMT


def test_dropping_a_database_a_virtual_trigger_table_reads_needs_force(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    p.sql("create database other precision 'ms'")
    p.sql("create vtable other.v (ts timestamp, c int from vs.ct1.c)")
    p.sql(
        "create stream other.s interval(10s) sliding(10s) from other.v stream_options(ignore_nodata_trigger) "
        "into other.o as select _twstart, count(*) from %%trows"
    )
    with pytest.raises(TdError) as info:
        p.sql("drop database vs")
    assert "read by stream(s) s;" in info.value.message


def test_preview_over_a_virtual_supertable_matches_the_stream(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    for table, sec, v in WRITES:
        p.sql(f"insert into vs.{table} values ({BASE_MS + sec * 1000}, {v})")
    sql = (
        "create stream pv interval(10s) sliding(10s) from vs.vstb partition by tbname "
        "stream_options(ignore_nodata_trigger) into vs.out_pv as "
        "select _twstart, count(*) n, sum(a) sa, sum(b) sb from %%trows"
    )
    ans = preview_stream(p.lake, sql, start_ms=BASE_MS, end_ms=BASE_MS + 60_000)
    assert p.lake.catalog.table("vs", "out_pv") is None  # nothing written
    df = pd.DataFrame(WRITES, columns=["t", "s", "v"])
    want = []
    for name, cols in {"vct1": {"a": "ct1", "b": "ct2"}, "vct2": {"a": "ct3"}}.items():
        al = None
        for col, table in cols.items():
            part = df[df.t == table][["s", "v"]].rename(columns={"v": col})
            al = part if al is None else al.merge(part, on="s", how="outer")
        assert al is not None
        al["w"] = al["s"] // 10 * 10
        for w, g in al[al["w"] < al["w"].max()].groupby("w"):
            sb = int(g["b"].sum()) if "b" in g and g["b"].notna().any() else None
            want.append([name, BASE_MS + int(w) * 1000, len(g), int(g["a"].sum()), sb])
    assert ans["rows"]["columns"][0]["name"] == "group"
    got = [list(r[:5]) for r in ans["rows"]["data"]]
    assert sorted(got, key=lambda r: (str(r[0]), r[1])) == sorted(want, key=lambda r: (r[0], r[1]))
    assert ans["input_rows"] == len(WRITES)


SEED_002_EVENT_WINDOW = """CREATE STREAM `idmp`.`ana_temp` EVENT_WINDOW(start with `temp` > 80 end with `temp` <= 80 ) TRUE_FOR(10m) FROM `idmp`.`vt_envsens02_471544`
STREAM_OPTIONS( IGNORE_DISORDER)
INTO `idmp`.`ana_temp`
AS
SELECT _twstart+0s as output_timestamp, avg(`temp`) as `avgtemp` FROM idmp.`vt_engsens02_471544` where ts >= _twstart and ts <= _twend;"""  # noqa: E501


def test_seed_002_event_window_example_over_a_virtual_table(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    p.sql("create database idmp precision 'ms'")
    p.sql("create table idmp.envsens (ts timestamp, temp float)")
    # the example triggers on one virtual table and computes over another (as printed)
    for vt in ("vt_envsens02_471544", "vt_engsens02_471544"):
        p.sql(f"create vtable idmp.{vt} (ts timestamp, temp float from idmp.envsens.temp)")
    p.sql(SEED_002_EVENT_WINDOW)
    minutes = list(range(0, 60, 1))
    temps = [70.0] * 5 + [85.0 + (i % 3) for i in range(15)] + [75.0] * 5 + [90.0] * 5 + [70.0] * 30
    for m, t in zip(minutes, temps, strict=True):
        p.sql(f"insert into idmp.envsens values ({BASE_MS + m * 60_000}, {t})")
    got = p.sql("select output_timestamp, avgtemp from idmp.ana_temp order by 1")
    # independent: windows from a row > 80 to the next row <= 80 (inclusive), at least 10 minutes
    df = pd.DataFrame({"m": minutes, "t": temps})
    want, start = [], None
    for m, t in zip(df.m, df.t, strict=True):
        if start is None and t > 80:
            start = m
        elif start is not None and t <= 80:
            if m - start >= 10:
                rows = df[(df.m >= start) & (df.m <= m)]
                want.append([BASE_MS + start * 60_000, float(rows.t.mean())])
            start = None
    assert len(want) == 1
    assert [[r[0], r[1]] for r in got] == [[w[0], pytest.approx(w[1], rel=1e-6)] for w in want]


def test_tbname_placeholder_names_the_virtual_child_table(tmp_path: Path) -> None:
    p = Pipeline(tmp_path / "lake")
    for s in SETUP:
        p.sql(s)
    p.sql(
        "create stream vs.s_tb state_window(a) from vs.vstb partition by tbname into vs.out_tb "
        "output_subtable(concat('o_', tbname)) as "
        "select _twstart, count(*) n, sum(b) sb from %%tbname where ts >= _twstart and ts <= _twend"
    )
    for sec, a, b in [(1, 1, 10), (2, 1, 20), (3, 2, 30), (4, 2, 40), (5, 3, 50)]:
        p.sql(f"insert into vs.ct2 values ({BASE_MS + sec * 1000}, {b})")
        p.sql(f"insert into vs.ct1 values ({BASE_MS + sec * 1000}, {a})")
    # vct1's states of a (ct1) over [1..2] and [3..4]; %%tbname reads vct1, whose b is ct2's c
    assert p.sql("select * from vs.o_vct1 order by 1") == [
        [BASE_MS + 1000, 2, 30, "vct1"],
        [BASE_MS + 3000, 2, 70, "vct1"],
    ]
    assert p.lake.catalog.table("vs", "o_vct2") is None  # ct3 has no rows
