"""Lake write throughput under the row key (no Spark): ``Lake.write`` of a table keyed by
(tbname, ts) against the same table keyed by (tbname, ts, key) (a ``PRIMARY KEY`` column,
``lake/keys.py``).

    .venv/bin/python bench/lake_write_bench.py [--rows 1000000] [--batch 100000] [--repeat 3]

Workload: ``m (ts, k int [PRIMARY KEY], v double) TAGS (dev int)``, 100 subtables, rows in time
order written in ``--batch``-row INSERT-sized writes (the append path: every row later than the
table's rows), then one ``--batch``-row write over rows already stored (the MERGE path: half
updates of stored rows, half new rows among them). Both tables store two rows per (device,
second): the keyed one two keys at one timestamp, the other two timestamps.
Prints rows/s per path and table, the median of ``--repeat`` runs (the tables alternate).

    .venv/bin/python bench/lake_write_bench.py --fleet [--rounds 60]

``--fleet``: 20 subtables written one after the other in 10-row writes, each subtable a few
rounds ahead of or behind the others (a fleet whose devices report at their own pace, as
``bench/rest_ingest_bench.py``'s small writes without its lock-step): prints how many writes took
the append and the merge path and their median time (``Lake._append_safe``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_workers.lake.catalog import Column, Table
from spark_workers.lake.store import Lake
from spark_workers.tdtypes import TdType

T0 = 1_735_689_600_000
DEVICES = 100


def _table(lake: Lake, name: str, keyed: bool) -> tuple:
    db = lake.catalog.require_database("b")
    cols = (
        Column("ts", TdType.parse("TIMESTAMP"), "ts"),
        Column("k", TdType.parse("INT"), "k", composite_key=keyed),
        Column("v", TdType.parse("DOUBLE"), "v"),
    )
    st = Table("b", name, "super", cols, (Column("dev", TdType.parse("INT"), "dev"),))
    lake.create_table(db, st)
    lake.catalog.create_subtables(
        [Table("b", f"{name}_{i}", "sub", (), (), name, {"dev": i}) for i in range(DEVICES)], now_ms=0
    )
    return db, st


def _rows(name: str, start: int, n: int, keyed: bool, keys: tuple[int, int] = (0, 1)) -> pa.Table:
    """``n`` rows from row ``start`` on: per second, every device, two rows — two keys at one
    timestamp when ``keyed``, else two timestamps (ms ``250 * key``), so both tables store every
    row."""
    i = np.arange(start, start + n)
    per_second = DEVICES * 2
    sec, rest = np.divmod(i, per_second)
    dev, which = np.divmod(rest, 2)
    k = np.where(which == 0, keys[0], keys[1])
    return pa.table(
        {
            "tbname": pa.array([f"{name}_{d}" for d in dev]),
            "ts": pa.array(T0 + sec * 1000 + (0 if keyed else 250 * k), pa.int64()),
            "k": pa.array(k, pa.int32()),
            "v": pa.array(np.random.default_rng(start).normal(20, 5, n)),
        }
    )


def run(rows: int, batch: int, keyed: bool) -> tuple[float, float]:
    """(append rows/s, merge rows/s) for one fresh lake."""
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(tmp)
        lake.catalog.create_database("b", precision="ms", options={"DURATION": "1d"})
        name = "mk" if keyed else "m"
        db, st = _table(lake, name, keyed)
        t0 = time.perf_counter()
        for s in range(0, rows, batch):
            lake.write(db, st, _rows(name, s, min(batch, rows - s), keyed))
        append = rows / (time.perf_counter() - t0)
        # half of the batch updates stored keys, half writes new keys at stored timestamps
        over = pa.concat_tables(
            [_rows(name, 0, batch // 2, keyed), _rows(name, 0, batch // 2, keyed, keys=(2, 3))]
        ).combine_chunks()
        t0 = time.perf_counter()
        lake.write(db, st, over)
        merge = over.num_rows / (time.perf_counter() - t0)
    return append, merge


def fleet(rounds: int) -> dict[str, tuple[int, float]]:
    """Per write path: (writes, median ms) of the ``--fleet`` workload."""
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(tmp)
        lake.catalog.create_database("b", precision="ms", options={"DURATION": "1d"})
        db, st = _table(lake, "m", False)
        took: dict[str, list[float]] = {}
        for i in range(rounds):
            for c in range(20):
                ts = T0 + (i + c % 3) * 10 + np.arange(10)  # devices c % 3 rounds apart
                t = pa.table(
                    {
                        "tbname": pa.array([f"m_{c}"] * 10),
                        "ts": pa.array(ts, pa.int64()),
                        "k": pa.array(np.zeros(10, np.int32)),
                        "v": pa.array(np.ones(10)),
                    }
                )
                t0 = time.perf_counter()
                mode = lake.write(db, st, t).mode
                took.setdefault(mode, []).append(time.perf_counter() - t0)
        return {m: (len(v), 1000 * statistics.median(v)) for m, v in took.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fleet", action="store_true", help="interleaved 10-row writes of 20 subtables")
    ap.add_argument("--rounds", type=int, default=60)
    a = ap.parse_args()
    if a.fleet:
        for mode, (n, ms) in sorted(fleet(a.rounds).items()):
            print(f"fleet: {n} writes took the {mode} path, median {ms:.1f} ms")
        return
    runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for _ in range(a.repeat):  # the two tables alternate, so they share the machine's load
        for keyed in (False, True):
            runs[keyed].append(run(a.rows, a.batch, keyed))
    for keyed in (False, True):
        append = statistics.median(r[0] for r in runs[keyed])
        merge = statistics.median(r[1] for r in runs[keyed])
        label = "(tbname, ts, key)" if keyed else "(tbname, ts)     "
        print(f"row key {label}: append {append:,.0f} rows/s, merge {merge:,.0f} rows/s")


if __name__ == "__main__":
    main()
