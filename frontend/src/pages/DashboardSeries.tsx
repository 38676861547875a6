// The dashboard over time: throughput, event-time lag and notification delivery per stream with a
// time picker (GET dashboard/series/?range=...), and the streams table with status, lag and a
// throughput sparkline. Streams are labelled by name, never by an internal key.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type uPlot from "uplot";
import { errorText, getDashboardSeries } from "../api/client";
import type { DashboardSeries as Series } from "../api/types";
import { ErrorBanner, StatusBadge } from "../components/common";
import { Sparkline } from "../components/Sparkline";
import { UPlotChart, type ChartSeries } from "../components/UPlotChart";
import { formatCount, formatDuration, formatRate } from "../format";
import { urls } from "../page";

export const RANGES = ["15m", "1h", "6h", "24h", "7d"] as const;
/** Streams drawn one by one in the charts (the busiest); the total is always drawn. */
export const CHART_STREAMS = 5;

type Stream = Series["streams"][number];

function busiest(streams: Stream[]): Stream[] {
  const total = (s: Stream) => s.rows_per_s.reduce((a, b) => a + b, 0);
  return [...streams].sort((a, b) => total(b) - total(a)).slice(0, CHART_STREAMS);
}

function aligned(t: number[], rows: (number | null)[][]): uPlot.AlignedData {
  return [t.map((ms) => ms / 1000), ...rows] as uPlot.AlignedData;
}

export function DashboardSeries({ pollMs }: { pollMs: number }) {
  const [range, setRange] = useState<string>("1h");
  const [data, setData] = useState<Series | null>(null);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);

  const load = useCallback(() => {
    getDashboardSeries(range)
      .then((d) => alive.current && (setData(d), setError(null)))
      .catch((e) => alive.current && setError(`Could not load the time series: ${errorText(e)}`));
  }, [range]);

  useEffect(() => {
    alive.current = true;
    load();
    const t = setInterval(load, pollMs);
    return () => {
      alive.current = false;
      clearInterval(t);
    };
  }, [load, pollMs]);

  const shown = useMemo(() => (data ? busiest(data.streams) : []), [data]);
  const lines: ChartSeries[] = useMemo(() => [{ label: "all streams", width: 2.5 }, ...shown.map((s) => ({ label: s.name }))], [shown]);

  return (
    <section className="panel" data-testid="dash-series">
      <header className="panel-head">
        <h2>Over time</h2>
        <div className="panel-actions" role="radiogroup" aria-label="Time range">
          {RANGES.map((r) => (
            <button key={r} type="button" role="radio" aria-checked={r === range} className={`btn-sm ${r === range ? "active" : ""}`} onClick={() => setRange(r)}>
              {r}
            </button>
          ))}
        </div>
      </header>
      <div className="panel-body">
        <ErrorBanner error={error} onDismiss={() => setError(null)} />
        {data && (
          <>
            <div className="muted small" data-testid="dash-series-range">
              {data.since.slice(0, 19).replace("T", " ")} – {data.until.slice(0, 19).replace("T", " ")} UTC · one point per {formatDuration(data.bucket_s * 1000)}
            </div>
            <div className="dash-charts">
              <UPlotChart title="Throughput (rows/s)" syncKey="dash" data={aligned(data.t, [data.totals.rows_per_s, ...shown.map((s) => s.rows_per_s)])} series={lines} yFormat={(v) => formatCount(v)} />
              <UPlotChart
                title="Event-time lag (latest event − watermark, s)"
                syncKey="dash"
                data={aligned(data.t, shown.map((s) => s.lag_s))}
                series={shown.map((s) => ({ label: s.name }))}
                yFormat={(v) => formatDuration(v * 1000)}
              />
              <UPlotChart
                title="Notification deliveries"
                syncKey="dash"
                data={aligned(data.t, [data.totals.delivered, data.totals.failed])}
                series={[{ label: "delivered", stroke: "#2e9d5b" }, { label: "failed", stroke: "#c23b3b" }]}
                yFormat={(v) => formatCount(v)}
              />
            </div>
            <StreamsTable streams={data.streams} />
          </>
        )}
      </div>
    </section>
  );
}

function StreamsTable({ streams }: { streams: Stream[] }) {
  if (streams.length === 0) return <div className="empty">No streams yet.</div>;
  return (
    <table className="table" data-testid="dash-streams">
      <thead>
        <tr>
          <th>Stream</th>
          <th>Status</th>
          <th title="event-time lag of the last micro-batch: latest event − watermark">Lag</th>
          <th>Throughput</th>
          <th>Notifications</th>
        </tr>
      </thead>
      <tbody>
        {streams.map((s) => {
          const last = [...s.rows_per_s].reverse().find((v) => v > 0) ?? 0;
          const delivered = s.delivered.reduce((a, b) => a + b, 0);
          const failed = s.failed.reduce((a, b) => a + b, 0);
          return (
            <tr key={s.id} data-testid="dash-stream-row">
              <td>
                <a href={urls.stream(s.id)} className="stream-name">
                  {s.db ? `${s.db}.${s.name}` : s.name}
                </a>
              </td>
              <td>
                <StatusBadge status={s.status} />
              </td>
              <td data-testid="dash-stream-lag">{formatDuration(s.lag_ms)}</td>
              <td>
                <Sparkline values={s.rows_per_s} width={120} height={22} /> <span className="small">{formatRate(last)}</span>
              </td>
              <td className={failed ? "warn" : undefined}>
                {formatCount(delivered)} ok · {formatCount(failed)} failed
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
