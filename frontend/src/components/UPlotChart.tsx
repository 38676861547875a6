// Thin React wrapper around uPlot: the plot is built once per series layout and fed new data
// with setData(), so live updates do not rebuild the canvas.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { MIN_X_SPAN_S, xScaleRange } from "./chartScale";

export const PALETTE = ["#2f6fb3", "#d9822b", "#2e9d5b", "#c23b3b", "#7b57b5", "#1a9aa0", "#a5701c", "#5d6b7a"];

export interface ChartSeries {
  label: string;
  stroke?: string;
  /** Own y scale name (for series with different units); default "y". */
  scale?: string;
  dash?: number[];
  /** Draw as points+steps etc. are out of scope: lines only. */
  width?: number;
  /** Join points across nulls (series of one group on an x shared with other groups). */
  spanGaps?: boolean;
}

export interface UPlotChartProps {
  /** [x (epoch seconds), ...series]; null = gap. */
  data: uPlot.AlignedData;
  series: ChartSeries[];
  title?: string;
  height?: number;
  /** Formats y values on the axis and in the legend. */
  yFormat?: (v: number) => string;
  /** Charts with the same key share the cursor. */
  syncKey?: string;
  className?: string;
  /** What the x axis is ("batch time (wall clock)", "event time (_wstart)"); axis and legend label. */
  xLabel?: string;
  /** Narrowest x span shown, seconds (a single point gets this window around it). */
  minXSpanS?: number;
}

function fmtOrDash(f: ((v: number) => string) | undefined) {
  return (_u: uPlot, v: number | null) => (v === null || v === undefined ? "—" : f ? f(v) : String(+v.toFixed(3)));
}

type Layout = Pick<UPlotChartProps, "series" | "title" | "syncKey" | "xLabel"> & { width: number; height: number; minXSpanS: number };

/** uPlot options for a layout; `fmt` is read at draw time so a new formatter needs no rebuild. */
function chartOptions({ series, title, width, height, syncKey, xLabel, minXSpanS }: Layout, fmt: { current?: (v: number) => string }): uPlot.Options {
  const scales = Array.from(new Set(series.map((s) => s.scale ?? "y")));
  return {
    title,
    width,
    height,
    cursor: syncKey ? { sync: { key: syncKey } } : {},
    scales: { x: { time: true, range: (u: uPlot, min: number | null, max: number | null) => xScaleRange(u.data?.[0], min, max, minXSpanS) } },
    legend: { live: true },
    series: [
      { label: xLabel ?? "time" },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: s.stroke ?? PALETTE[i % PALETTE.length],
        width: s.width ?? 1.5,
        scale: s.scale ?? "y",
        dash: s.dash,
        spanGaps: s.spanGaps ?? false,
        points: { show: false },
        value: fmtOrDash((v) => (fmt.current ? fmt.current(v) : String(+v.toFixed(3)))),
      })),
    ],
    axes: [
      { stroke: "#555", grid: { stroke: "#eee" }, ticks: { stroke: "#ddd" }, label: xLabel, labelSize: xLabel ? 20 : 0 },
      ...scales.map((sc, i) => ({
        scale: sc,
        side: i === 0 ? 3 : 1,
        stroke: "#555",
        grid: { show: i === 0, stroke: "#eee" },
        ticks: { stroke: "#ddd" },
        size: 60,
        values: (_u: uPlot, splits: number[]) =>
          splits.map((v) => (v === null || v === undefined ? "" : fmt.current ? fmt.current(v) : String(+v.toFixed(3)))),
      })),
    ],
  };
}

export function UPlotChart({ data, series, title, height = 160, yFormat, syncKey, className, xLabel, minXSpanS = MIN_X_SPAN_S }: UPlotChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const latest = useRef(data);
  latest.current = data;
  const fmt = useRef(yFormat);
  fmt.current = yFormat;

  const layoutKey = JSON.stringify([series, title ?? "", height, syncKey ?? "", xLabel ?? "", minXSpanS]);

  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const width = Math.max(200, el.clientWidth || 600);
    const opts = chartOptions({ series, title, width, height, syncKey, xLabel, minXSpanS }, fmt);
    const p = new uPlot(opts, latest.current, el);
    plot.current = p;
    let ro: ResizeObserver | null = null;
    if (typeof ResizeObserver !== "undefined") {
      ro = new ResizeObserver(() => {
        const w = Math.max(200, el.clientWidth);
        if (w && plot.current) plot.current.setSize({ width: w, height });
      });
      ro.observe(el);
    }
    return () => {
      ro?.disconnect();
      p.destroy();
      plot.current = null;
    };
    // layoutKey covers series/title/height/syncKey/xLabel/minXSpanS
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [layoutKey]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  const empty = !data[0] || data[0].length === 0;
  return (
    <div className={`chart ${className ?? ""}`}>
      <div ref={box} className="chart-canvas" />
      {empty && <div className="chart-empty">No data yet</div>}
    </div>
  );
}
