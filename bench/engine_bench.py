"""Engine-only benchmark (no Spark): INTERVAL(1m) over 1,000 devices, vectorized kernel.

Measures rows/s of ``IntervalEngine.step`` (the code that runs inside applyInPandasWithState) for
micro-batches of in-order rows, and the engine state size per open (group, window), for growing
rows per window (it must not grow with them).

    .venv/bin/python bench/engine_bench.py [--devices 1000] [--batch-rows 100000] [--batches 20]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.rows import RowBatch
from spark_workers.engine.stream import IntervalEngine, StreamRules
from spark_workers.engine.windows import IntervalAssigner

AGGS = [
    AggSpec("avg", "v", "a0", "float"),
    AggSpec("max", "v", "a1", "float"),
    AggSpec("count", None, "a2", "int"),
]


def batch(devices: int, start_ts: int, rows: int, step_ms: int) -> RowBatch:
    per = rows // devices
    ts = np.repeat(start_ts + np.arange(per, dtype=np.int64) * step_ms, devices)
    g = np.tile(np.array([f'["d{i}"]' for i in range(devices)], dtype=object), per)
    v = np.random.default_rng(start_ts).normal(20.0, 5.0, per * devices)
    return RowBatch(g, ts, {"v": (v, np.ones(v.shape[0], bool))})


def throughput(devices: int, batch_rows: int, batches: int) -> dict[str, float]:
    eng = IntervalEngine(IntervalAssigner(60_000, 60_000), AGGS, StreamRules(mode="WINDOW_CLOSE"))
    st = eng.new_state()
    step_ms = 1_000  # one row per device per second
    per = batch_rows // devices
    ts0 = 1_700_000_000_000
    total, busy = 0, 0.0
    for b in range(batches):
        rb = batch(devices, ts0 + b * per * step_ms, batch_rows, step_ms)
        t0 = time.perf_counter()
        eng.step(st, rb)
        blob = st.to_bytes()  # as in Spark: state is serialized after every micro-batch
        st = type(st).from_bytes(AGGS, blob)
        busy += time.perf_counter() - t0
        total += len(rb)
    return {"rows": total, "seconds": busy, "rows_per_s": total / busy}


def state_per_window(devices: int) -> list[dict[str, float]]:
    out = []
    for rows_per_window in (1, 10, 100, 1000):
        eng = IntervalEngine(IntervalAssigner(10**12, 10**12), AGGS, StreamRules(mode="WINDOW_CLOSE"))
        st = eng.new_state()
        for k in range(rows_per_window):
            eng.step(st, batch(devices, 1_000 + k, devices, 1))
        out.append(
            {
                "rows_per_window": rows_per_window,
                "open_windows": len(st.open),
                "state_bytes": len(st.to_bytes()),
                "bytes_per_open_window": len(st.to_bytes()) / max(1, len(st.open)),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=20)
    args = ap.parse_args()
    res = throughput(args.devices, args.batch_rows, args.batches)
    print(
        f"engine INTERVAL(1m), {args.devices} devices, {args.batch_rows:,} rows/batch: "
        f"{res['rows_per_s']:,.0f} rows/s ({res['rows']:,} rows in {res['seconds']:.2f} s, "
        "state serialized per batch)"
    )
    for r in state_per_window(args.devices):
        print(
            f"state with {r['rows_per_window']:>5} rows/window: {r['open_windows']} open windows, "
            f"{r['state_bytes']:,} bytes = {r['bytes_per_open_window']:.1f} bytes per open window"
        )
    print(json.dumps({"throughput": res, "state": state_per_window(args.devices)}))


if __name__ == "__main__":
    main()
