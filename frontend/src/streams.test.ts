import { describe, expect, it } from "vitest";
import { makeProgress, makeStream } from "./test/fixtures";
import {
  appendProgress,
  applyProgress,
  applyStatus,
  catchUpFraction,
  eventLagMs,
  progressSeries,
  splitTarget,
  THROUGHPUT_SAMPLES,
  wallLagMs,
} from "./streams";

describe("stream list updates", () => {
  it("replaces a stream on stream.status and adds unknown ones", () => {
    const list = [makeStream({ id: 1 }), makeStream({ id: 2, name: "b" })];
    const next = applyStatus(list, makeStream({ id: 2, name: "b", status: "paused" }));
    expect(next.map((s) => s.status)).toEqual(["running", "paused"]);
    expect(applyStatus(list, makeStream({ id: 9 })).map((s) => s.id)).toEqual([1, 2, 9]);
  });

  it("appends a throughput sample per batch and keeps the last 60", () => {
    const s = makeStream({ id: 1, throughput: Array.from({ length: 60 }, (_, i) => i), last_progress: makeProgress({ batch_id: 5 }) });
    const [u] = applyProgress([s], 1, makeProgress({ batch_id: 6, rows_per_s: 999 }));
    expect(u.throughput).toHaveLength(THROUGHPUT_SAMPLES);
    expect(u.throughput.at(-1)).toBe(999);
    expect(u.throughput[0]).toBe(1);
    expect(u.last_progress?.batch_id).toBe(6);
    // The same batch again replaces its sample instead of adding one.
    const [v] = applyProgress([u], 1, makeProgress({ batch_id: 6, rows_per_s: 5 }));
    expect(v.throughput).toHaveLength(60);
    expect(v.throughput.at(-1)).toBe(5);
  });

  it("ignores progress for streams not in the list", () => {
    const list = [makeStream({ id: 1 })];
    expect(applyProgress(list, 2, makeProgress())).toBe(list);
  });
});

describe("progress helpers", () => {
  it("computes lags", () => {
    const p = makeProgress({ watermark_ms: 1000, max_event_ms: 6000 });
    expect(eventLagMs(p)).toBe(5000);
    expect(wallLagMs(p, 10_000)).toBe(4000);
    expect(eventLagMs(makeProgress({ watermark_ms: null }))).toBeNull();
    expect(wallLagMs(null, 1)).toBeNull();
  });

  it("appends, dedupes and caps progress", () => {
    let l = [makeProgress({ batch_id: 1 }), makeProgress({ batch_id: 2 })];
    l = appendProgress(l, makeProgress({ batch_id: 2, input_rows: 7 }));
    expect(l.map((p) => p.batch_id)).toEqual([1, 2]);
    expect(l[1].input_rows).toBe(7);
    l = appendProgress(l, makeProgress({ batch_id: 1 }));
    expect(l).toHaveLength(2);
    l = appendProgress(l, makeProgress({ batch_id: 3 }), 2);
    expect(l.map((p) => p.batch_id)).toEqual([2, 3]);
  });

  it("builds uPlot columns with x in seconds and lag in seconds", () => {
    const s = progressSeries([
      makeProgress({ created_at: "2024-06-01T10:00:00Z", watermark_ms: Date.parse("2024-06-01T09:59:30Z") }),
      makeProgress({ created_at: "2024-06-01T10:00:10Z", watermark_ms: null, state_bytes: 4096 }),
    ]);
    expect(s.x).toEqual([Date.parse("2024-06-01T10:00:00Z") / 1000, Date.parse("2024-06-01T10:00:10Z") / 1000]);
    expect(s.watermarkLagS).toEqual([30, null]);
    expect(s.stateBytes).toEqual([2048, 4096]);
    // arrival: 100 input rows over the 10 s since the previous batch; none for the first
    expect(s.inputRate).toEqual([null, 10]);
    // output: 2 rows in a 120 ms batch
    expect(s.outputRate).toEqual([2 / 0.12, 2 / 0.12]);
    expect(s.watermarkS).toEqual([Date.parse("2024-06-01T09:59:30Z") / 1000, null]);
    expect(s.wallS).toEqual(s.x);
  });

  it("estimates catch-up progress from history batches", () => {
    const now = 10_000;
    const l = [
      makeProgress({ phase: "history", max_event_ms: 0 }),
      makeProgress({ phase: "history", max_event_ms: 2500 }),
    ];
    expect(catchUpFraction(l, now)).toBeCloseTo(0.25);
    expect(catchUpFraction(l.slice(0, 1), now)).toBeNull();
  });
});

describe("splitTarget", () => {
  it("splits db.table and falls back to the stream db", () => {
    expect(splitTarget("power.avg_out", null)).toEqual({ db: "power", table: "avg_out" });
    expect(splitTarget("`power`.`avg_out`", null)).toEqual({ db: "power", table: "avg_out" });
    expect(splitTarget("avg_out", "power")).toEqual({ db: "power", table: "avg_out" });
    expect(splitTarget("avg_out", null)).toBeNull();
    expect(splitTarget(null, "power")).toBeNull();
  });
});
