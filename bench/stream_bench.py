"""End-to-end stream benchmarks through Spark (lake write -> Spark query -> output table).

1. One figure per window type: a 1,000-device stream of that window (WINDOW_CLOSE, PARTITION BY
   tbname). A writer commits 100,000-row batches to the lake as fast as it can while the query
   runs; sustained rows/s = rows / (first write -> query caught up with the last version); the
   per-micro-batch latency is the duration of each micro-batch that had input. Where Spark has an
   equivalent (``window()`` for INTERVAL and eKuiper's tumbling/hopping windows,
   ``session_window()`` for SESSION), the same workload runs through Spark's native aggregation
   over the same ``tdlake`` source in the same run.
2. ``history``: the demo's ``pm25_daily`` stream catching up on the Beijing history
   (418,176 rows, FILL_HISTORY 1): rows/s = history rows / time to process the snapshot.

    .venv/bin/python bench/stream_bench.py [--only interval,session,...|history] [--rows 2000000]
        [--repeat 3]

Workload: ``m (ts, v double, st int) TAGS (dev int)``, one row per device per second; ``v`` is
normal(20, 5); ``st`` changes every 10 s; every device pauses 10 s each minute (so SESSION(5s)
windows hold 50 rows). Prints one line per figure and a JSON summary. Spark: local[*], shuffle
partitions 2, RocksDB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_workers.lake.store import Lake
from spark_workers.runtime.query import committed_version, start_query
from spark_workers.runtime.sink import BatchReport, OutputSink
from spark_workers.statements.executor import Executor
from spark_workers.streams.compile import compile_stream
from spark_workers.streams.registry import MemoryRegistry

AGGS = "avg(v) av, max(v) mv, count(*) n"
# window type -> (tdweb stream query, native Spark aggregation or None)
WORKLOADS: dict[str, tuple[str, str | None]] = {
    "interval": (f"select _wstart, {AGGS} from m partition by tbname interval(1m)", "window:1 minute"),
    "session": (f"select _wstart, {AGGS} from m partition by tbname session(ts, 5s)", "session:5 seconds"),
    "state": (f"select _wstart, {AGGS} from m partition by tbname state_window(st)", None),
    "event": (
        f"select _wstart, {AGGS} from m partition by tbname event_window start with v > 25 end with v < 20",
        None,
    ),
    "count": (f"select _wstart, {AGGS} from m partition by tbname count_window(60)", None),
    "ek_tumbling": (
        f"select window_start(), {AGGS} from m group by tbname, tumblingwindow(mi, 1)",
        "window:1 minute",
    ),
    "ek_hopping": (
        f"select window_start(), {AGGS} from m group by tbname, hoppingwindow(ss, 60, 30)",
        "window:60 seconds:30 seconds",
    ),
    "ek_session": (f"select window_start(), {AGGS} from m group by tbname, sessionwindow(mi, 2, 5)", None),
    "ek_count": (f"select window_start(), {AGGS} from m group by tbname, countwindow(60)", None),
    "ek_sliding": (
        f"select window_start(), {AGGS} from m group by tbname, slidingwindow(ss, 10) over (when v > 30)",
        None,
    ),
    # the aggregates of engine/extended.py: constant-size state, value buffers, a fused 3.3.7 %%trows
    "interval_var": (
        "select _wstart, var_pop(v) vp, stddev_pop(v) sp, count(*) n from m partition by tbname interval(1m)",
        None,
    ),
    "interval_approx": (
        "select _wstart, apercentile(v, 50) ap, hyperloglog(st) h, count(distinct st) cd "
        "from m partition by tbname interval(1m)",
        None,
    ),
    "v337_trows": (
        "create stream s interval(1m) sliding(1m) from m partition by tbname into o as "
        "select _twstart ws, twa(v) tw, irate(v) ir, elapsed(_c0, 1s) el, mode(st) mo from %%trows",
        None,
    ),
}


def setup_devices(
    root: Path | str, devices: int, catalog_url: str = ""
) -> tuple[Lake, MemoryRegistry, Executor]:
    """A lake at ``root`` (folder or ``s3://`` URL; catalog: SQLite, or ``catalog_url``) with
    database ``b``, supertable ``m`` and ``devices`` subtables ``d0..``."""
    lake = Lake(root, catalog_url or None)
    reg = MemoryRegistry()
    ex = Executor(lake, reg, default_db="b")
    ex.execute_one("create database b")
    ex.execute_one("create stable m (ts timestamp, v double, st int) tags (dev int)")
    for i in range(0, devices, 500):
        ex.execute_one(
            "create table " + " ".join(f"d{k} using m tags ({k})" for k in range(i, min(i + 500, devices)))
        )
    return lake, reg, ex


def writer(lake: Lake, devices: int, rows: int, rows_per_commit: int, out: dict) -> None:
    """Commit ``rows`` rows in ``rows_per_commit`` batches: every device one row per second, with a
    10 s pause each minute."""
    db = lake.catalog.require_database("b")
    table = lake.catalog.require_table("b", "m")
    names = np.array([f"d{i}" for i in range(devices)], dtype=object)
    per = rows_per_commit // devices
    written = 0
    second = 0
    t0 = 1_700_000_000_000
    out["start"] = time.perf_counter()
    rng = np.random.default_rng(1)
    while written < rows:
        secs = []
        while len(secs) < per:
            if second % 60 < 50:
                secs.append(second)
            second += 1
        s = np.array(secs, np.int64)
        ts = np.repeat(t0 + s * 1000, devices)
        data = pa.table(
            {
                "tbname": pa.array(np.tile(names, per), pa.string()),
                "ts": pa.array(ts, pa.int64()),
                "v": pa.array(rng.normal(20, 5, per * devices)),
                "st": pa.array(np.repeat((s // 10) % 3, devices).astype(np.int32)),
            }
        )
        lake.write(db, table, data)
        written += data.num_rows
    out["rows"] = written
    out["last_version"] = lake.version("b", "m")
    out["write_done"] = time.perf_counter()


def _wait(q, version: int) -> float:  # type: ignore[no-untyped-def]
    while (committed_version(q) or -1) < version:
        if q.exception():
            raise RuntimeError(str(q.exception()))
        time.sleep(0.05)
    return time.perf_counter()


def run_tdweb(  # type: ignore[no-untyped-def]
    spark,
    kind: str,
    devices: int,
    rows: int,
    rows_per_commit: int,
    *,
    lake_uri: str = "",
    catalog_url: str = "",
    before_write=None,
) -> dict:
    """One tdweb stream of window type ``kind`` under a writer (module docstring); the lake is a
    temporary folder unless ``lake_uri`` (``s3://...``) is given, the catalog SQLite unless
    ``catalog_url``; ``before_write()`` is called once the query runs, just before the writer
    starts (a bench counting requests resets its counters there). Returns the figures
    (``rows_per_s``, ``batches`` with input, ``triggers`` = all micro-batches, ``commits`` = writer
    commits, ...)."""
    root = Path(tempfile.mkdtemp(prefix=f"tdweb-bench-{kind}-"))
    try:
        lake, reg, ex = setup_devices(lake_uri or root / "lake", devices, catalog_url)
        query = WORKLOADS[kind][0]
        ex.execute_one(query if query.startswith("create stream") else f"create stream s into o as {query}")
        info = reg.get("s", None)
        assert info is not None
        sv, hv = reg.start_versions["s"]
        c = compile_stream(info.spec, lake, "UTC")
        reports: list[BatchReport] = []
        sink = OutputSink(c, lake, stream_key=f"bench_{kind}", progress=reports.append)
        q = start_query(
            spark,
            c,
            sink,
            stream_key=f"bench_{kind}",
            lake_root=lake.uri,
            tz="UTC",
            start_version=sv,
            history_version=hv,
            catalog_url=catalog_url,
        )
        time.sleep(3)  # the query is started (its first, empty, trigger is not measured)
        if before_write is not None:
            before_write()
        out: dict = {}
        writer(lake, devices, rows, rows_per_commit, out)
        done = _wait(q, out["last_version"])
        q.stop()
        durations = [r.duration_ms for r in reports if r.input_rows]
        windows = ex.execute_one("select count(*) from o").rows[0][0]
        return {
            "rows": out["rows"],
            "seconds": done - out["start"],
            "rows_per_s": out["rows"] / (done - out["start"]),
            "write_rows_per_s": out["rows"] / (out["write_done"] - out["start"]),
            "batches": len(durations),
            "triggers": len(reports),
            "commits": out["last_version"] - sv,
            "batch_ms_median": statistics.median(durations) if durations else None,
            "batch_ms_p95": float(np.percentile(durations, 95)) if durations else None,
            "windows_out": windows,
            "open_windows": reports[-1].open_windows if reports else None,
            "state_bytes": reports[-1].state_bytes if reports else None,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_native(spark, kind: str, devices: int, rows: int, rows_per_commit: int) -> dict:  # type: ignore[no-untyped-def]
    """The same workload with Spark's native ``window()`` / ``session_window()`` aggregation over
    the same tdlake source (append mode, 0 s watermark), its windows written to a lake table as
    tdweb's sink writes them."""
    from pyspark.sql import functions as F

    from spark_workers.runtime.query import source_format

    spec = WORKLOADS[kind][1]
    assert spec is not None
    root = Path(tempfile.mkdtemp(prefix=f"tdweb-bench-native-{kind}-"))
    try:
        lake, _reg, _ex = setup_devices(root / "lake", devices)
        sv = lake.version("b", "m")
        fmt = source_format(spark, f"native_{kind}")
        df = (
            spark.readStream.format(fmt)
            .option("lake", str(lake.root))
            .option("db", "b")
            .option("table", "m")
            .option("start_version", str(sv))
            .option("history_version", "")
            .load()
        )
        fn, *args = spec.split(":")
        win = F.window("ts", *args) if fn == "window" else F.session_window("ts", *args)
        agg = (
            df.withWatermark("ts", "0 seconds")
            .groupBy(win, "tbname")
            .agg(F.avg("v"), F.max("v"), F.count("*"))
        )
        counts = {"windows": 0}
        durations: list[float] = []
        _ex.execute_one("create stable o (ts timestamp, av double, mv double, n bigint) tags (dev int)")
        out_db = lake.catalog.require_database("b")
        out_table = lake.catalog.require_table("b", "o")

        def each(bdf, bid):  # type: ignore[no-untyped-def]
            # like tdweb's sink: the windows are written to an output table in the lake
            t0 = time.perf_counter()
            t = bdf.toArrow()
            counts["windows"] += t.num_rows
            if t.num_rows:
                start = t.column(0).combine_chunks().field("start").cast(pa.int64())
                data = pa.table(
                    {
                        "tbname": t.column(1).cast(pa.string()),  # one output subtable per device
                        "ts": pc.divide(start, 1000),
                        "av": t.column(2),
                        "mv": t.column(3),
                        "n": t.column(4),
                    }
                )
                lake.write(out_db, out_table, data)
            durations.append((time.perf_counter() - t0) * 1000)

        q = (
            agg.writeStream.outputMode("append")
            .foreachBatch(each)
            .option("checkpointLocation", str(root / "ck"))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        time.sleep(3)
        out: dict = {}
        writer(lake, devices, rows, rows_per_commit, out)
        done = _wait(q, out["last_version"])
        q.stop()
        return {
            "rows": out["rows"],
            "seconds": done - out["start"],
            "rows_per_s": out["rows"] / (done - out["start"]),
            "windows_out": counts["windows"],
            "batch_ms_median": statistics.median(durations) if durations else None,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_history(spark) -> dict:  # type: ignore[no-untyped-def]
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tdweb.settings")
    django.setup()
    from streams_app.services.demo import cutoff_ms, quality_rows, read_dataset, schema_sql

    root = Path(tempfile.mkdtemp(prefix="tdweb-bench-history-"))
    try:
        lake = Lake(root / "lake")
        reg = MemoryRegistry()
        ex = Executor(lake, reg)
        data = read_dataset()
        for stmt in schema_sql(data):
            ex.execute_one(stmt)
        hist = data[data["ts"] < cutoff_ms()]
        lake.write(
            lake.catalog.require_database("air"),
            lake.catalog.require_table("air", "quality"),
            quality_rows(hist),
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
    ap.add_argument("--only", help="comma-separated window types (see WORKLOADS), 'history' or 'native'")
    ap.add_argument("--no-native", action="store_true", help="skip the native Spark comparisons")
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rows-per-commit", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1, help="runs per window type (medians are reported)")
    args = ap.parse_args()
    from spark_workers.runtime.session import spark_session

    spark = spark_session(os.environ.get("SPARK_MASTER", "local[*]"))
    wanted = args.only.split(",") if args.only else ["history", *WORKLOADS]
    results: dict = {}
    # warm-up: the first query of a session starts the Python workers and compiles the JVM paths;
    # without it the first figure would carry that one-time cost
    run_tdweb(spark, "interval", 100, 100_000, 100_000)
    run_native(spark, "interval", 100, 100_000, 100_000)
    if "history" in wanted:
        r = results["history"] = run_history(spark)
        print(
            f"demo history catch-up (pm25_daily, FILL_HISTORY): {r['rows']:,} rows in {r['seconds']:.1f} s = "
            f"{r['rows_per_s']:,.0f} rows/s end to end ({r['batches']} micro-batches; "
            f"{r['rows_per_s_in_batches']:,.0f} rows/s inside them); {r['windows_out']:,} windows",
            flush=True,
        )
    for kind in [k for k in wanted if k in WORKLOADS]:
        native = bool(WORKLOADS[kind][1]) and not args.no_native
        runs, nruns = [], []
        for _ in range(args.repeat):  # tdweb and native alternate, so drift hits both alike
            r = run_tdweb(spark, kind, args.devices, args.rows, args.rows_per_commit)
            runs.append(r)
            print(
                f"tdweb {kind:<12} {args.devices} devices: {r['rows']:,} rows in {r['seconds']:.1f} s = "
                f"{r['rows_per_s']:,.0f} rows/s sustained; {r['batches']} batches, median "
                f"{r['batch_ms_median']:.0f} ms, p95 {r['batch_ms_p95']:.0f} ms; {r['windows_out']:,} "
                f"windows out; {r['state_bytes']:,} state bytes for {r['open_windows']:,} open windows",
                flush=True,
            )
            if native:
                n = run_native(spark, kind, args.devices, args.rows, args.rows_per_commit)
                nruns.append(n)
                fn = str(WORKLOADS[kind][1]).split(":")[0]
                print(
                    f"  Spark native {fn}(): {n['rows_per_s']:,.0f} rows/s sustained "
                    f"({n['seconds']:.1f} s, {n['windows_out']:,} windows); tdweb / native = "
                    f"{r['rows_per_s'] / n['rows_per_s']:.2f}",
                    flush=True,
                )
        med = statistics.median(r["rows_per_s"] for r in runs)
        results[kind] = {**runs[-1], "rows_per_s": med, "runs": [r["rows_per_s"] for r in runs]}
        summary = f"{kind}: median {med:,.0f} rows/s over {len(runs)} runs"
        if nruns:
            nmed = statistics.median(n["rows_per_s"] for n in nruns)
            results[f"{kind}_native"] = {
                **nruns[-1],
                "rows_per_s": nmed,
                "runs": [n["rows_per_s"] for n in nruns],
            }
            summary += f"; native median {nmed:,.0f} rows/s; tdweb / native = {med / nmed:.2f}"
        if args.repeat > 1:
            print(summary, flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
