"""Preview benchmark: the demo's ``pollution_episodes`` stream (TDengine 3.3.7 EVENT_WINDOW,
PARTITION BY tbname, NOTIFY on WINDOW_OPEN|WINDOW_CLOSE) previewed over one year of the Beijing
air-quality dataset with ``spark_workers.runtime.preview.preview_stream`` (no Spark).

The whole dataset (420,768 rows, 12 stations) is loaded into a temporary lake with the demo's own
loaders (``streams_app.services.demo``), in 100,000-row commits; then the preview runs ``--repeat``
times over ``[--start, --end)`` (local dates in Asia/Shanghai, default the year 2016). Prints rows
in, windows (closed / still open), output rows, notification events and the elapsed seconds of
each run (wall clock around ``preview_stream``, so including the copy into the scratch lake).

    .venv/bin/python bench/preview_bench.py [--start 2016-01-01] [--end 2017-01-01] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STREAM = (
    "CREATE STREAM IF NOT EXISTS air.pollution_episodes EVENT_WINDOW(START WITH pm25 > 150 END WITH "
    "pm25 <= 75) FROM air.quality PARTITION BY tbname STREAM_OPTIONS(FILL_HISTORY) "
    "NOTIFY('ws://127.0.0.1:9/ws/notify/bench') ON (WINDOW_OPEN|WINDOW_CLOSE) INTO air.pollution_episodes AS "
    "SELECT _twstart AS wstart, _twend AS wend, _twrownum AS nrows, max(pm25) AS peak_pm25 FROM %%trows"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", default="2016-01-01")
    ap.add_argument("--end", default="2017-01-01")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tdweb.settings")
    django.setup()
    from spark_workers.lake.store import Lake
    from spark_workers.runtime.preview import preview_stream
    from spark_workers.statements.executor import Executor
    from spark_workers.streams.registry import MemoryRegistry
    from streams_app.services.demo import LOCAL_TZ, quality_rows, read_dataset, schema_sql

    start_ms = int(pd.Timestamp(args.start, tz=LOCAL_TZ).value // 1_000_000)
    end_ms = int(pd.Timestamp(args.end, tz=LOCAL_TZ).value // 1_000_000)
    with tempfile.TemporaryDirectory(prefix="tdweb-preview-bench-") as tmp:
        t0 = time.perf_counter()
        lake = Lake(Path(tmp) / "lake")
        data = read_dataset()
        ex = Executor(lake, MemoryRegistry(), tz="UTC")
        for stmt in schema_sql(data):
            ex.execute_one(stmt)
        db = lake.catalog.require_database("air")
        table = lake.catalog.require_table("air", "quality")
        for i in range(0, len(data), 100_000):
            lake.write(db, table, quality_rows(data.iloc[i : i + 100_000]))
        print(f"loaded {len(data):,} rows in {time.perf_counter() - t0:.1f} s", flush=True)

        runs = []
        res: dict[str, object] = {}
        for _ in range(args.repeat):
            t1 = time.perf_counter()
            res = preview_stream(lake, STREAM, start_ms=start_ms, end_ms=end_ms, limit=1000, tz="UTC")
            runs.append(time.perf_counter() - t1)
        windows = res["windows"]
        assert isinstance(windows, list)
        closed = sum(1 for w in windows if w["event"] == "WINDOW_CLOSE")
        summary = {
            "range": f"[{args.start}, {args.end}) {LOCAL_TZ}",
            "rows_in": res["input_rows"],
            "windows": res["window_count"],
            "windows_closed": closed,
            "windows_open": len(windows) - closed,
            "output_rows": res["output_rows"],
            "notification_events": res["notification_count"],
            "elapsed_s": [round(r, 2) for r in runs],
            "elapsed_s_median": round(statistics.median(runs), 2),
            "rows_per_s": round(int(res["input_rows"]) / statistics.median(runs)),  # type: ignore[call-overload]
        }
        print(
            f"pollution_episodes preview: {summary['rows_in']:,} rows in, {summary['windows']:,} windows "
            f"({closed:,} closed, {summary['windows_open']} open), {summary['output_rows']:,} output rows, "
            f"{summary['notification_events']:,} notification events, "
            f"{summary['elapsed_s_median']} s (median of {args.repeat})"
        )
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
