import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import FakeUPlot from "../test/fakeUplot";
import { UPlotChart } from "./UPlotChart";

const T = Date.parse("2024-06-01T10:00:00Z") / 1000;

describe("UPlotChart", () => {
  it("draws one batch over a small window of its own time, and names the x axis", () => {
    render(<UPlotChart title="one batch" data={[[T], [5]]} series={[{ label: "rows/s" }]} xLabel="batch time (wall clock)" />);
    const p = FakeUPlot.byTitle("one batch")!;
    // for a single point uPlot calls the x scale's range with [T, T + one day]
    const [lo, hi] = p.opts.scales.x.range({ data: p.data }, T, T + 86400);
    expect(lo).toBeLessThan(T);
    expect(hi).toBeGreaterThan(T);
    expect(hi - lo).toBeLessThanOrEqual(60);
    expect(p.opts.axes[0].label).toBe("batch time (wall clock)");
    expect(p.opts.series[0].label).toBe("batch time (wall clock)");
  });

  it("joins a series across nulls only when asked", () => {
    render(
      <UPlotChart
        title="gaps"
        data={[[T, T + 1, T + 2], [1, null, 3], [null, 2, null]]}
        series={[{ label: "a", spanGaps: true }, { label: "b" }]}
      />,
    );
    const p = FakeUPlot.byTitle("gaps")!;
    expect(p.opts.series.slice(1).map((s: { spanGaps: boolean }) => s.spanGaps)).toEqual([true, false]);
    expect(p.opts.axes[0].label).toBeUndefined();
  });
});
