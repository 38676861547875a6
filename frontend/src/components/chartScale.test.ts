import { describe, expect, it } from "vitest";
import { MIN_X_SPAN_S, timeAxisRange, xScaleRange } from "./chartScale";

const T = Date.parse("2024-06-01T10:00:00Z") / 1000;

describe("timeAxisRange", () => {
  it("gives a single point a one-minute window centred on it, not years", () => {
    const [lo, hi] = timeAxisRange(T, T);
    expect(hi! - lo!).toBe(60);
    expect(lo).toBe(T - 30);
    expect(hi).toBe(T + 30);
  });

  it("widens points a few seconds apart to the minimum span, keeping them inside", () => {
    const [lo, hi] = timeAxisRange(T, T + 10);
    expect(hi! - lo!).toBe(MIN_X_SPAN_S);
    expect(lo! <= T && hi! >= T + 10).toBe(true);
    expect((lo! + hi!) / 2).toBe(T + 5);
  });

  it("keeps a wide range exactly (years of event time stay years)", () => {
    const start = Date.parse("2013-03-01T00:00:00Z") / 1000;
    const end = Date.parse("2017-02-28T23:00:00Z") / 1000;
    expect(timeAxisRange(start, end)).toEqual([start, end]);
    expect(timeAxisRange(T, T + 60)).toEqual([T, T + 60]);
  });

  it("honours another minimum span and passes empty data through", () => {
    expect(timeAxisRange(T, T, 3600)).toEqual([T - 1800, T + 1800]);
    expect(timeAxisRange(null, null)).toEqual([null, null]);
  });
});

describe("xScaleRange", () => {
  it("judges a single point by the data, not by uPlot's one-day widening", () => {
    // uPlot hands a single point's scale min = T, max = T + 86400
    expect(xScaleRange([T], T, T + 86400)).toEqual([T - 30, T + 30]);
    expect(xScaleRange([T, T + 20], T, T + 20)).toEqual([T - 20, T + 40]);
  });

  it("keeps uPlot's range for data wider than the minimum (a zoom included)", () => {
    const xs = [T, T + 3600, T + 7200];
    expect(xScaleRange(xs, T, T + 7200)).toEqual([T, T + 7200]);
    expect(xScaleRange(xs, T + 600, T + 1200)).toEqual([T + 600, T + 1200]);
    expect(xScaleRange([], null, null)).toEqual([null, null]);
  });
});
