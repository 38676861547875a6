"""End-to-end stream benchmarks through Spark (lake write -> Spark query -> output table).

1. ``interval``: a 1,000-device synthetic ``INTERVAL(1m)`` stream (avg, max, count PARTITION BY
   tbname, WINDOW_CLOSE). A writer commits batches to the lake as fast as it can while the query
   runs; sustained rows/s = rows / (first write -> query caught up with the last version).
   The same workload is also run with Spark's native ``window()`` aggregation over the same
   source, for reference.
2. ``history``: the demo's ``pm25_daily`` stream catching up on the Beijing history
   (418,176 rows, FILL_HISTORY 1): rows/s = history rows / time to process the snapshot.

    .venv/bin/python bench/stream_bench.py [--only interval|history|native] [--rows 2000000]

Prints one line per figure and a JSON summary. Spark: local[*], shuffle partitions 2, RocksDB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_workers.lake.store import Lake
from spark_workers.runtime.query import committed_version, start_query
from spark_workers.runtime.sink import BatchReport, OutputSink
from spark_workers.sql.executor import Executor
from spark_workers.sql.results import MemoryRegistry
from spark_workers.sql.streams import compile_stream


def setup_devices(root: Path, devices: int) -> tuple[Lake, MemoryRegistry, Executor]:
    lake = Lake(root)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, default_db="b")
    ex.execute_one("create database b")
    ex.execute_one("create stable m (ts timestamp, v double) tags (dev int)")
    for i in range(0, devices, 500):
        ex.execute_one(
            "create table " + " ".join(f"d{k} using m tags ({k})" for k in range(i, min(i + 500, devices)))
        )
    return lake, reg, ex


def writer(lake: Lake, devices: int, rows: int, rows_per_commit: int, out: dict) -> None:
    db = lake.catalog.require_database("b")
    table = lake.catalog.require_table("b", "m")
    names = np.array([f"d{i}" for i in range(devices)], dtype=object)
    per = rows_per_commit // devices
    written = 0
    t = 1_700_000_000_000
    out["start"] = time.perf_counter()
    rng = np.random.default_rng(1)
    while written < rows:
        ts = np.repeat(t + np.arange(per, dtype=np.int64) * 1000, devices)
        data = pa.table(
            {
                "tbname": pa.array(np.tile(names, per), pa.string()),
                "ts": pa.array(ts, pa.int64()),
                "v": pa.array(rng.normal(20, 5, per * devices)),
            }
        )
        lake.write(db, table, data)
        written += data.num_rows
        t += per * 1000
    out["rows"] = written
    out["last_version"] = lake.version("b", "m")
    out["write_done"] = time.perf_counter()


def run_interval(spark, devices: int, rows: int, rows_per_commit: int) -> dict:  # type: ignore[no-untyped-def]
    root = Path(tempfile.mkdtemp(prefix="tdweb-bench-"))
    try:
        lake, reg, ex = setup_devices(root / "lake", devices)
        ex.execute_one(
            "create stream s into o as select _wstart, avg(v), max(v), count(*) from m "
            "partition by tbname interval(1m)"
        )
        info = reg.get("s", None)
        assert info is not None
        sv, hv = reg.start_versions["s"]
        c = compile_stream(info.spec, lake, "UTC")
        reports: list[BatchReport] = []
        sink = OutputSink(c, lake, stream_key="bench", progress=reports.append)
        q = start_query(
            spark,
            c,
            sink,
            stream_key="bench",
            lake_root=str(lake.root),
            tz="UTC",
            start_version=sv,
            history_version=hv,
        )
        time.sleep(3)  # the query is started (its first, empty, trigger is not measured)
        out: dict = {}
        w = threading.Thread(target=writer, args=(lake, devices, rows, rows_per_commit, out))
        w.start()
        w.join()
        while (committed_version(q) or -1) < out["last_version"]:
            if q.exception():
                raise RuntimeError(str(q.exception()))
            time.sleep(0.2)
        done = time.perf_counter()
        q.stop()
        durations = [r.duration_ms for r in reports if r.input_rows]
        windows = ex.execute_one("select count(*) from o").rows[0][0]
        return {
            "rows": out["rows"],
            "seconds": done - out["start"],
            "rows_per_s": out["rows"] / (done - out["start"]),
            "write_rows_per_s": out["rows"] / (out["write_done"] - out["start"]),
            "batches": len(durations),
            "batch_ms_median": statistics.median(durations) if durations else None,
            "batch_ms_p95": float(np.percentile(durations, 95)) if durations else None,
            "windows_out": windows,
            "open_windows": reports[-1].open_windows if reports else None,
            "state_bytes": reports[-1].state_bytes if reports else None,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_native(spark, devices: int, rows: int, rows_per_commit: int) -> dict:  # type: ignore[no-untyped-def]
    """The same workload with Spark's native window() aggregation over the same tdlake source."""
    from pyspark.sql import functions as F

    from spark_workers.runtime.query import source_format

    root = Path(tempfile.mkdtemp(prefix="tdweb-bench-native-"))
    try:
        lake, _reg, _ex = setup_devices(root / "lake", devices)
        sv = lake.version("b", "m")
        fmt = source_format(spark, "native")
        df = (
            spark.readStream.format(fmt)
            .option("lake", str(lake.root))
            .option("db", "b")
            .option("table", "m")
            .option("start_version", str(sv))
            .option("history_version", "")
            .load()
        )
        agg = (
            df.withWatermark("ts", "0 seconds")
            .groupBy(F.window("ts", "1 minute"), "tbname")
            .agg(F.avg("v"), F.max("v"), F.count("*"))
        )
        counts = {"windows": 0}

        def each(bdf, bid):  # type: ignore[no-untyped-def]
            counts["windows"] += len(bdf.toArrow())

        ck = root / "ck"
        q = (
            agg.writeStream.outputMode("append")
            .foreachBatch(each)
            .option("checkpointLocation", str(ck))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        time.sleep(3)
        out: dict = {}
        writer(lake, devices, rows, rows_per_commit, out)
        while (committed_version(q) or -1) < out["last_version"]:
            if q.exception():
                raise RuntimeError(str(q.exception()))
            time.sleep(0.2)
        done = time.perf_counter()
        q.stop()
        return {
            "rows": out["rows"],
            "seconds": done - out["start"],
            "rows_per_s": out["rows"] / (done - out["start"]),
            "windows_out": counts["windows"],
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_history(spark) -> dict:  # type: ignore[no-untyped-def]
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tdweb.settings")
    django.setup()
    from streams_app.services.demo import COLUMNS, cutoff_ms, read_dataset

    root = Path(tempfile.mkdtemp(prefix="tdweb-bench-history-"))
    try:
        lake = Lake(root / "lake")
        reg = MemoryRegistry()
        ex = Executor(lake, reg)
        data = read_dataset()
        ex.execute_one("create database air precision 'ms'")
        cols = ", ".join(f"{c} {'VARCHAR(8)' if c == 'wd' else 'DOUBLE'}" for c, _ in COLUMNS)
        ex.execute_one(f"create stable air.quality (ts timestamp, {cols}) tags (station varchar(32))")
        st = data.drop_duplicates("station")
        ex.execute_one(
            "create table "
            + " ".join(
                f"air.{s} using air.quality tags ('{n}')"
                for s, n in zip(st["station"], st["station_name"], strict=True)
            )
        )
        hist = data[data["ts"] < cutoff_ms()]
        arrays = {
            "tbname": pa.array(hist["station"].to_numpy(), pa.string()),
            "ts": pa.array(hist["ts"].to_numpy(), pa.int64()),
        }
        for c, _ in COLUMNS:
            arrays[c] = pa.array(
                hist[c].to_numpy(), pa.string() if c == "wd" else pa.float64(), from_pandas=True
            )
        lake.write(
            lake.catalog.require_database("air"),
            lake.catalog.require_table("air", "quality"),
            pa.table(arrays),
        )
        ex.execute_one(
            "CREATE STREAM pm25_daily FILL_HISTORY 1 INTO air.pm25_daily TAGS (station VARCHAR(32)) AS "
            "SELECT _wstart AS wstart, avg(pm25) AS avg_pm25, max(pm25) AS max_pm25, count(*) AS n "
            "FROM air.quality PARTITION BY station INTERVAL(1d)"
        )
        info = reg.get("pm25_daily", None)
        assert info is not None
        sv, hv = reg.start_versions["pm25_daily"]
        c = compile_stream(info.spec, lake, "UTC")
        reports: list[BatchReport] = []
        sink = OutputSink(c, lake, stream_key="hist", progress=reports.append)
        t0 = time.perf_counter()
        q = start_query(
            spark,
            c,
            sink,
            stream_key="hist",
            lake_root=str(lake.root),
            tz="UTC",
            start_version=sv,
            history_version=hv,
        )
        while committed_version(q) is None:  # None while inside the history snapshot
            if q.exception():
                raise RuntimeError(str(q.exception()))
            time.sleep(0.2)
        done = time.perf_counter()
        q.stop()
        hist_batches = [r for r in reports if r.phase == "history"]
        proc = sum(r.duration_ms for r in hist_batches) / 1000
        return {
            "rows": len(hist),
            "seconds": done - t0,
            "rows_per_s": len(hist) / (done - t0),
            "rows_per_s_in_batches": len(hist) / proc if proc else None,
            "batches": len(hist_batches),
            "windows_out": ex.execute_one("select count(*) from air.pm25_daily").rows[0][0],
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=["interval", "native", "history"])
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rows-per-commit", type=int, default=100_000)
    args = ap.parse_args()
    from spark_workers.runtime.session import spark_session

    spark = spark_session(os.environ.get("SPARK_MASTER", "local[*]"))
    results = {}
    if args.only in (None, "history"):
        r = results["history"] = run_history(spark)
        print(
            f"demo history catch-up (pm25_daily, FILL_HISTORY): {r['rows']:,} rows in {r['seconds']:.1f} s = "
            f"{r['rows_per_s']:,.0f} rows/s end to end ({r['batches']} micro-batches; "
            f"{r['rows_per_s_in_batches']:,.0f} rows/s inside them); {r['windows_out']:,} windows",
            flush=True,
        )
    if args.only in (None, "interval"):
        r = results["interval"] = run_interval(spark, args.devices, args.rows, args.rows_per_commit)
        print(
            f"tdweb INTERVAL(1m), {args.devices} devices: {r['rows']:,} rows in {r['seconds']:.1f} s = "
            f"{r['rows_per_s']:,.0f} rows/s sustained "
            f"(lake write alone {r['write_rows_per_s']:,.0f} rows/s); "
            f"{r['batches']} batches, median {r['batch_ms_median']:.0f} ms, p95 {r['batch_ms_p95']:.0f} ms; "
            f"{r['windows_out']:,} windows out; "
            f"{r['state_bytes']:,} state bytes for {r['open_windows']} open windows",
            flush=True,
        )
    if args.only in (None, "native"):
        r = results["native"] = run_native(spark, args.devices, args.rows, args.rows_per_commit)
        print(
            f"Spark native window() INTERVAL(1m), {args.devices} devices: "
            f"{r['rows']:,} rows in {r['seconds']:.1f} s "
            f"= {r['rows_per_s']:,.0f} rows/s sustained; {r['windows_out']:,} windows out",
            flush=True,
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
