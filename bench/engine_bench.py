"""Engine-only benchmark (no Spark): INTERVAL(1m) over 1,000 devices, vectorized kernel.

Measures rows/s of ``IntervalEngine.step`` (the code that runs inside applyInPandasWithState) for
micro-batches of in-order rows, and the engine state size per open (group, window), for growing
rows per window (it must not grow with them), for INTERVAL and for every data-defined window
(SESSION, STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW, eKuiper SESSIONWINDOW / COUNTWINDOW).

    .venv/bin/python bench/engine_bench.py [--devices 1000] [--batch-rows 100000] [--batches 20]
        [--state-devices 100]
    .venv/bin/python bench/engine_bench.py --segments state,session,event,count [--batches 10]

``--segments``: ``SegmentEngine.step`` throughput on stream_bench.py's workload (one row per
device per second, a 10 s pause each minute, ``st`` changing every 10 s): STATE_WINDOW(st),
SESSION(ts, 5s), EVENT_WINDOW start with v > 25 end with v < 20, COUNT_WINDOW(60); WINDOW_CLOSE,
state serialized after every micro-batch as in Spark.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from spark_workers.engine.aggregates import AggSpec
from spark_workers.engine.rows import RowBatch
from spark_workers.engine.segments import SegmentEngine, SegmentSpec
from spark_workers.engine.stream import IntervalEngine, StreamRules
from spark_workers.engine.windows import IntervalAssigner

AGGS = [
    AggSpec("avg", "v", "a0", "float"),
    AggSpec("max", "v", "a1", "float"),
    AggSpec("count", None, "a2", "int"),
]
# --aggs: the aggregate sets of the throughput figure (engine/extended.py for all but "basic")
AGG_SETS = {
    "basic": AGGS,
    "var": [AggSpec("var_pop", "v", "a0"), AggSpec("stddev", "v", "a1"), AggSpec("count", None, "a2", "int")],
    "approx": [
        AggSpec("apercentile", "v", "a0", params=(50.0,)),
        AggSpec("hyperloglog", "s", "a1", "int"),
        AggSpec("count_distinct", "s", "a2", "int"),
    ],
    "trows": [
        AggSpec("twa", "v", "a0"),
        AggSpec("irate", "v", "a1", params=(1000.0,)),
        AggSpec("elapsed", "t", "a2", "ts", params=(1000.0,)),
        AggSpec("mode", "s", "a3", "int"),
    ],
}


def batch(devices: int, start_ts: int, rows: int, step_ms: int) -> RowBatch:
    per = rows // devices
    ts = np.repeat(start_ts + np.arange(per, dtype=np.int64) * step_ms, devices)
    g = np.tile(np.array([f'["d{i}"]' for i in range(devices)], dtype=object), per)
    v = np.random.default_rng(start_ts).normal(20.0, 5.0, per * devices)
    ok = np.ones(v.shape[0], bool)
    st = (ts // 10_000 % 4).astype(np.int64)  # a state that changes every 10 s
    return RowBatch(g, ts, {"v": (v, ok), "s": (st, ok), "t": (ts, ok)})


def throughput(devices: int, batch_rows: int, batches: int, aggs: list[AggSpec] = AGGS) -> dict[str, float]:
    eng = IntervalEngine(IntervalAssigner(60_000, 60_000), aggs, StreamRules(mode="WINDOW_CLOSE"))
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
        st = type(st).from_bytes(aggs, blob)
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


SEGMENT_KINDS = {
    # windows that stay open however many rows arrive: the state must not grow with the rows
    "SESSION": SegmentSpec("session", gap=10**12),
    "STATE_WINDOW": SegmentSpec("state"),
    "EVENT_WINDOW": SegmentSpec("event", emit_open=False),
    "COUNT_WINDOW": SegmentSpec("count", count=10**9),
    "SESSIONWINDOW": SegmentSpec("ek_session", gap=10**12, max_duration=10**13, emit_open=False),
    "COUNTWINDOW": SegmentSpec("ek_count", count=10**9, emit_open=False),
}


def segment_batch(devices: int, ts: int, kind: str) -> RowBatch:
    rb = batch(devices, ts, devices, 1)
    ones = np.ones(devices, bool)
    if kind == "state":
        rb.extra["state"] = (np.full(devices, 7, np.int64), ones)
    elif kind == "event":
        rb.extra["start"] = (np.full(devices, ts == 1_000), ones)  # opened by the first row only
        rb.extra["end"] = (np.zeros(devices, bool), ones)
    return rb


def segment_state_per_window(devices: int) -> list[dict[str, float | str]]:
    out: list[dict[str, float | str]] = []
    for name, spec in SEGMENT_KINDS.items():
        for rows_per_window in (1, 10, 100, 1000):
            eng = SegmentEngine(spec, AGGS, StreamRules(mode="WINDOW_CLOSE"))
            st = eng.new_state()
            for k in range(rows_per_window):
                eng.step(st, segment_batch(devices, 1_000 + k, spec.kind))
            opened = sum(len(g.unfinished()) for g in st.groups)
            size = len(st.to_bytes())
            out.append(
                {
                    "window": name,
                    "rows_per_window": rows_per_window,
                    "open_windows": opened,
                    "state_bytes": size,
                    "bytes_per_open_window": size / max(1, opened),
                }
            )
    return out


SEGMENT_WORKLOADS = {
    "state": SegmentSpec("state"),
    "session": SegmentSpec("session", gap=5_000),
    "event": SegmentSpec("event", emit_open=False),
    "count": SegmentSpec("count", count=60),
}


def workload_batch(devices: int, second: int, rows: int, rng: np.random.Generator) -> tuple[RowBatch, int]:
    """stream_bench.py's rows: every device one row per second, a 10 s pause each minute.
    Returns the batch and the next second."""
    secs: list[int] = []
    while len(secs) < rows // devices:
        if second % 60 < 50:
            secs.append(second)
        second += 1
    s = np.array(secs, np.int64)
    n = s.size * devices
    ts = np.repeat(1_700_000_000_000 + s * 1000, devices)
    keys = np.array([f'["d{i}"]' for i in range(devices)], dtype=object)
    codes = np.tile(np.arange(devices), s.size)
    v = rng.normal(20.0, 5.0, n)
    ok = np.ones(n, bool)
    rb = RowBatch(keys[codes], ts, {"v": (v, ok)}, gcodes=(codes, keys))  # as runtime/kernel.py builds it
    rb.extra["state"] = (np.repeat((s // 10) % 3, devices).astype(np.int64), ok)
    rb.extra["start"] = (v > 25, ok)
    rb.extra["end"] = (v < 20, ok)
    return rb, second


def segment_throughput(kind: str, devices: int, batch_rows: int, batches: int) -> dict[str, float]:
    """Rows/s of ``SegmentEngine.step`` (plus the state's serialization) for one workload."""
    eng = SegmentEngine(SEGMENT_WORKLOADS[kind], AGGS, StreamRules(mode="WINDOW_CLOSE"))
    st = eng.new_state()
    rng = np.random.default_rng(1)
    second, total, busy, windows = 0, 0, 0.0, 0
    for _ in range(batches):
        rb, second = workload_batch(devices, second, batch_rows, rng)
        t0 = time.perf_counter()
        out = eng.step(st, rb)
        st = type(st).from_bytes(AGGS, st.to_bytes())
        busy += time.perf_counter() - t0
        total += len(rb)
        windows += len(out.upserts)
    return {"rows": total, "seconds": busy, "rows_per_s": total / busy, "windows": windows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--state-devices", type=int, default=100, help="groups in the state-size runs")
    ap.add_argument(
        "--aggs", default="basic", help=f"aggregate set of the throughput run: {', '.join(AGG_SETS)}"
    )
    ap.add_argument("--throughput-only", action="store_true", help="skip the state-size runs")
    ap.add_argument("--segments", default="", help="data-defined windows instead: state,session,event,count")
    args = ap.parse_args()
    if args.segments:
        figs = {}
        for kind in args.segments.split(","):
            r = segment_throughput(kind, args.devices, args.batch_rows, args.batches)
            figs[kind] = r
            print(
                f"engine {kind}, {args.devices} devices, {args.batch_rows:,} rows/batch: "
                f"{r['rows_per_s']:,.0f} rows/s ({r['rows']:,} rows, {r['windows']:,} windows written, "
                f"{r['seconds']:.2f} s)"
            )
        print(json.dumps({"segments": figs}))
        return
    res = throughput(args.devices, args.batch_rows, args.batches, AGG_SETS[args.aggs])
    print(
        f"engine INTERVAL(1m) [{args.aggs}], {args.devices} devices, {args.batch_rows:,} rows/batch: "
        f"{res['rows_per_s']:,.0f} rows/s ({res['rows']:,} rows in {res['seconds']:.2f} s, "
        "state serialized per batch)"
    )
    if args.throughput_only:
        print(json.dumps({"throughput": res}))
        return
    states = state_per_window(args.state_devices)
    for r in states:
        print(
            f"state with {r['rows_per_window']:>5} rows/window: {r['open_windows']} open windows, "
            f"{r['state_bytes']:,} bytes = {r['bytes_per_open_window']:.1f} bytes per open window"
        )
    segs = segment_state_per_window(args.state_devices)
    for seg in segs:
        print(
            f"{seg['window']:<14} state with {seg['rows_per_window']:>5} rows/window: "
            f"{seg['open_windows']} open windows, {seg['bytes_per_open_window']:.1f} bytes per open window"
        )
    print(json.dumps({"throughput": res, "state": states, "segments": segs}))


if __name__ == "__main__":
    main()
