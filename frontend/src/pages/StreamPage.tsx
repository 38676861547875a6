// One stream: header + actions, SQL, live progress charts (initial history from progress/, then
// stream.progress messages of /ws/streams/<id>/), delivery log, run history, output table.
import { Fragment, useCallback, useEffect, useMemo, useState, type ReactNode } from "react";
import type uPlot from "uplot";
import { errorText, getDeliveries, getProgress, getRows, getRuns, getStream, revealStreamSql } from "../api/client";
import { useLiveSocket } from "../api/live";
import type { Delivery, Paginated, Progress, RowsResult, Run, Stream, StreamDetail, StreamSocketMessage } from "../api/types";
import { Empty, ErrorBanner, LiveIndicator, Loading, Section, StatusBadge, useNow } from "../components/common";
import { useCoalesced } from "../components/hooks";
import { Pager } from "../components/Pager";
import { isLongWork, ProgressBar, workLabel } from "../components/ProgressBar";
import { RowsChart, RowsTable } from "../components/RowsView";
import { StreamActions } from "../components/StreamActions";
import { UPlotChart, type ChartSeries } from "../components/UPlotChart";
import { WhyNoOutput } from "../components/WhyNoOutput";
import { formatBytes, formatCount, formatDateTime, formatDuration, formatRate, formatTime, localOffsetLabel, truncate } from "../format";
import { nav, urls } from "../page";
import { appendProgress, catchUpFraction, eventLagMs, mergeDetail, progressSeries, splitTarget, wallLagMs } from "../streams";

const PROGRESS_LIMIT = 300;
const DELIVERY_PAGE = 100;
const RUN_PAGE = 50;

export function StreamPage({ id }: { id: number }) {
  const [stream, setStream] = useState<StreamDetail | null>(null);
  const [progress, setProgress] = useState<Progress[]>([]);
  const [deliveries, setDeliveries] = useState<Paginated<Delivery> | null>(null);
  const [deliveryOffset, setDeliveryOffset] = useState(0);
  const [runs, setRuns] = useState<Paginated<Run> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notFound, setNotFound] = useState<string | null>(null);
  const [outputVersion, setOutputVersion] = useState(0);
  const now = useNow(1000);

  const loadDeliveries = useCallback(() => {
    getDeliveries(id, { limit: DELIVERY_PAGE, offset: deliveryOffset })
      .then(setDeliveries)
      .catch((e) => setError(`Could not load deliveries: ${errorText(e)}`));
  }, [id, deliveryOffset]);
  const loadRuns = useCallback(() => {
    getRuns(id, { limit: RUN_PAGE })
      .then(setRuns)
      .catch((e) => setError(`Could not load runs: ${errorText(e)}`));
  }, [id]);

  useEffect(() => {
    getStream(id)
      .then(setStream)
      .catch((e) => setNotFound(`Could not load stream ${id}: ${errorText(e)}`));
    getProgress(id, PROGRESS_LIMIT)
      .then((p) => setProgress((live) => live.reduce((acc, x) => appendProgress(acc, x), p)))
      .catch((e) => setError(`Could not load progress: ${errorText(e)}`));
  }, [id]);
  useEffect(loadDeliveries, [loadDeliveries]);
  useEffect(loadRuns, [loadRuns]);

  const refreshDeliveries = useCoalesced(loadDeliveries, 2000);
  const refreshRuns = useCoalesced(loadRuns, 1000);
  const refreshOutput = useCoalesced(() => setOutputVersion((v) => v + 1), 5000);

  const live = useLiveSocket<StreamSocketMessage>(`/ws/streams/${id}/`, (msg) => {
    if (msg.type === "stream.status") {
      if (msg.stream.id !== id) return;
      setStream((s) => (s ? mergeDetail(s, msg.stream) : s));
      refreshRuns();
    } else if (msg.type === "stream.progress") {
      if (msg.stream_id !== id) return;
      const p = msg.progress;
      setProgress((l) => appendProgress(l, p));
      setStream((s) => (s ? { ...s, last_progress: p } : s));
      if ((p.notifications_sent || p.notifications_failed) && deliveryOffset === 0) refreshDeliveries();
      if (p.output_rows) refreshOutput();
    }
  });

  const onUpdated = useCallback((s: Stream) => setStream((d) => (d ? mergeDetail(d, s) : d)), []);
  const onDropped = useCallback(() => nav.go(urls.streams()), []);

  if (notFound) return <ErrorBanner error={notFound} />;
  if (!stream) return <Loading what="Loading stream" />;

  const p = stream.last_progress ?? progress[progress.length - 1] ?? null;
  const target = splitTarget(stream.target, stream.db);

  return (
    <div className="page page-stream">
      <div className="page-head">
        <a href={urls.streams()} className="crumb">
          Streams
        </a>
        <span className="crumb-sep">/</span>
        <h1 data-testid="stream-name">{stream.name}</h1>
        <StatusBadge status={stream.status} />
        <LiveIndicator status={live} />
        <div className="spacer" />
        {stream.spark_ui_url && (
          <a className="button" href={stream.spark_ui_url} target="_blank" rel="noreferrer">
            Spark UI ↗
          </a>
        )}
        <StreamActions stream={stream} onUpdated={onUpdated} onDropped={onDropped} onError={setError} />
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      {stream.last_error && (
        <div className={`banner ${stream.status === "failed" ? "banner-error" : "banner-warn"}`} data-testid="last-error">
          <strong>Last error:</strong> <span className="mono pre-wrap">{stream.last_error}</span>
        </div>
      )}

      <div className="facts">
        <Fact label="Database">{stream.db ?? "—"}</Fact>
        <Fact label="Syntax">{stream.syntax}</Fact>
        <Fact label="Source">{stream.source || "—"}</Fact>
        <Fact label="Target">{stream.target ?? "—"}</Fact>
        <Fact label="Trigger">{stream.trigger || "—"}</Fact>
        <Fact label="Window">{stream.window || "—"}</Fact>
        <Fact label="Created">{formatDateTime(stream.created_at)}</Fact>
        <Fact label="Throughput">{formatRate(p?.rows_per_s ?? null)}</Fact>
        <Fact label="Event-time lag">{formatDuration(eventLagMs(p))}</Fact>
        <Fact label="Wall-clock lag">{formatDuration(wallLagMs(p, now))}</Fact>
        <Fact label="Watermark">{p?.watermark_ms != null ? formatDateTime(p.watermark_ms, true) : "—"}</Fact>
        <Fact label="Last batch">{p ? `#${p.batch_id} · ${formatTime(p.created_at)}` : "—"}</Fact>
      </div>

      <WhyNoOutput streamId={id} initiallyOpen={window.location.hash === "#why"} />

      {stream.history_cancelled && (
        <div className="muted small" data-testid="history-cancelled">
          {stream.history_cancelled.label}
        </div>
      )}

      {isLongWork(stream.progress) ? (
        <div className="catchup" data-testid="catchup">
          <ProgressBar fraction={stream.progress.fraction} label={workLabel(stream.progress)} rowsPerS={stream.progress.rows_per_s} etaS={stream.progress.eta_s} />
        </div>
      ) : (
        p?.phase === "history" && <CatchUp progress={progress} latest={p} now={now} />
      )}

      <StreamSql stream={stream} onError={setError} />

      <ProgressCharts progress={progress} />

      <Section
        title={`Delivery log${deliveries ? ` (${deliveries.count})` : ""}`}
        actions={
          <button className="btn-sm" onClick={loadDeliveries}>
            Refresh
          </button>
        }
      >
        <DeliveryTable deliveries={deliveries?.results ?? null} />
        {deliveries && deliveries.count > DELIVERY_PAGE && (
          <Pager offset={deliveryOffset} size={DELIVERY_PAGE} count={deliveries.count} shown={deliveries.results.length} onOffset={setDeliveryOffset} testId="deliveries-pager" prevLabel="‹ Newer" nextLabel="Older ›" />
        )}
      </Section>

      <Section
        title={`Run history${runs ? ` (${runs.count})` : ""}`}
        actions={
          <button className="btn-sm" onClick={loadRuns}>
            Refresh
          </button>
        }
      >
        <RunTable runs={runs?.results ?? null} now={now} />
      </Section>

      <Section
        title={
          <>
            Output table{" "}
            {target ? (
              <a className="mono" href={urls.tables(target.db, target.table)} data-testid="target-link">
                {target.db}.{target.table}
              </a>
            ) : (
              <span className="muted">{stream.target ?? "none"}</span>
            )}
          </>
        }
      >
        {target ? <OutputPreview db={target.db} table={target.table} version={outputVersion} /> : <Empty>This stream has no output table.</Empty>}
      </Section>
    </div>
  );
}

/** What the API shows in place of a NOTIFY URL's secret (spark_workers.access.REDACTED). */
export const REDACTED = "******";

/**
 * The stream's SQL as the API gives it, NOTIFY URL secrets (the inbox key) redacted; when it has
 * some, "Show secrets" and "Copy with secrets" ask for the real SQL (its owner only: the API
 * answers 403 to anyone else).
 */
function StreamSql({ stream, onError }: { stream: StreamDetail; onError: (e: string) => void }) {
  const [revealed, setRevealed] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const hasSecrets = stream.sql.includes(REDACTED);
  useEffect(() => setRevealed(null), [stream.sql]);
  const reveal = async (): Promise<string | null> => {
    try {
      return (await revealStreamSql(stream.id)).sql;
    } catch (e) {
      onError(`Could not show the secrets of ${stream.name}: ${errorText(e)}`);
      return null;
    }
  };
  const toggle = async () => {
    if (revealed !== null) return setRevealed(null);
    setRevealed(await reveal());
  };
  const copy = async () => {
    const sql = revealed ?? (await reveal());
    if (sql === null) return;
    try {
      await navigator.clipboard.writeText(sql);
      setCopied(true);
    } catch (e) {
      onError(`Could not copy: ${errorText(e)}`);
    }
  };
  const actions = hasSecrets ? (
    <div className="sql-secrets">
      <button type="button" className="btn-sm" onClick={() => void toggle()} data-testid="sql-reveal">
        {revealed !== null ? "Hide secrets" : "Show secrets"}
      </button>
      <button type="button" className="btn-sm" onClick={() => void copy()}>
        Copy with secrets
      </button>
      {copied && <span className="muted small">copied</span>}
    </div>
  ) : undefined;
  return (
    <Section title="SQL" actions={actions}>
      <pre className="sql" data-testid="stream-sql">
        {revealed ?? stream.sql}
      </pre>
    </Section>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="fact">
      <div className="fact-label">{label}</div>
      <div className="fact-value">{children}</div>
    </div>
  );
}

function CatchUp({ progress, latest, now }: { progress: Progress[]; latest: Progress; now: number }) {
  const frac = catchUpFraction(progress, now);
  return (
    <div className="catchup" data-testid="catchup">
      <div className="catchup-label">
        Catching up on history: events processed up to{" "}
        <strong>{latest.max_event_ms != null ? formatDateTime(latest.max_event_ms) : "—"}</strong>
        {latest.max_event_ms != null && <> ({formatDuration(now - latest.max_event_ms)} behind)</>}
        {frac !== null && <> · ≈{Math.round(frac * 100)}%</>}
      </div>
      <ProgressBar fraction={frac} />
    </div>
  );
}

interface ChartDef {
  title: string;
  series: ChartSeries[];
  cols: (keyof ReturnType<typeof progressSeries>)[];
  fmt?: (v: number) => string;
}

const CHARTS: ChartDef[] = [
  { title: "Input rows/s", series: [{ label: "arrived rows/s" }], cols: ["inputRate"], fmt: (v) => formatCount(v) },
  {
    title: "Processing rows/s",
    series: [{ label: "processed rows/s" }, { label: "output rows/s", stroke: "#2e9d5b" }],
    cols: ["rowsPerS", "outputRate"],
    fmt: (v) => formatCount(v),
  },
  { title: "Batch duration (ms)", series: [{ label: "duration ms", stroke: "#d9822b" }], cols: ["durationMs"], fmt: (v) => formatCount(v) },
  {
    // lags, not two clocks on one axis (issue 16 item 5): seconds behind the batch's wall clock
    title: "Lag behind wall clock",
    series: [
      { label: "watermark lag (wall clock − watermark)", stroke: "#7b57b5" },
      { label: "event lag (wall clock − newest event time)", stroke: "#5d6b7a" },
    ],
    cols: ["watermarkLagS", "eventLagS"],
    fmt: (v) => formatDuration(v * 1000),
  },
  { title: "Open windows", series: [{ label: "open windows", stroke: "#2e9d5b" }], cols: ["openWindows"], fmt: (v) => formatCount(v) },
  { title: "State size", series: [{ label: "state", stroke: "#a5701c" }], cols: ["stateBytes"], fmt: (v) => formatBytes(v) },
  {
    title: "Recalculations",
    series: [{ label: "recalculated", stroke: "#d9822b" }, { label: "expired rows", stroke: "#5d6b7a" }],
    cols: ["recalculated", "expired"],
    fmt: (v) => formatCount(v),
  },
  {
    title: "Notifications",
    series: [{ label: "sent", stroke: "#2e9d5b" }, { label: "failed", stroke: "#c23b3b" }],
    cols: ["notifSent", "notifFailed"],
    fmt: (v) => formatCount(v),
  },
];

function ProgressCharts({ progress }: { progress: Progress[] }) {
  const s = useMemo(() => progressSeries(progress), [progress]);
  return (
    <Section title={`Progress (${progress.length} batches, times ${localOffsetLabel()})`}>
      <div className="chart-grid" data-testid="progress-charts">
        {CHARTS.map((c) => (
          <ProgressChart key={c.title} def={c} s={s} />
        ))}
      </div>
    </Section>
  );
}

function ProgressChart({ def, s }: { def: ChartDef; s: ReturnType<typeof progressSeries> }) {
  const data = useMemo(() => [s.x, ...def.cols.map((c) => s[c])] as uPlot.AlignedData, [s, def]);
  return <UPlotChart title={def.title} series={def.series} data={data} yFormat={def.fmt} syncKey="stream-progress" height={150} xLabel="batch time (wall clock)" />;
}

function DeliveryTable({ deliveries }: { deliveries: Delivery[] | null }) {
  if (deliveries === null) return <Loading what="Loading deliveries" />;
  if (deliveries.length === 0) return <Empty>No notification deliveries yet.</Empty>;
  return (
    <div className="table-wrap table-scroll">
      <table className="grid" data-testid="deliveries">
        <thead>
          <tr>
            <th>Time ({localOffsetLabel()})</th>
            <th>Result</th>
            <th>URL</th>
            <th>Message</th>
            <th className="num">Events</th>
            <th className="num">Latency</th>
            <th className="num">Attempt</th>
            <th>Error</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr key={d.id} className={d.ok ? undefined : "row-bad"}>
              <td className="nowrap">{formatTime(d.created_at)}</td>
              <td>{d.ok ? <span className="badge ok">ok</span> : <span className="badge bad">failed</span>}</td>
              <td className="mono" title={d.url}>
                {truncate(d.url, 40)}
              </td>
              <td className="mono" title={d.message_id}>
                {truncate(d.message_id, 12)}
              </td>
              <td className="num">{d.events}</td>
              <td className="num">{formatDuration(d.latency_ms)}</td>
              <td className="num">{d.attempt}</td>
              <td title={d.error || undefined}>{d.error ? truncate(d.error, 60) : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RunTable({ runs, now }: { runs: Run[] | null; now: number }) {
  const [open, setOpen] = useState<Set<number>>(new Set());
  if (runs === null) return <Loading what="Loading runs" />;
  if (runs.length === 0) return <Empty>The stream has not run yet.</Empty>;
  const toggle = (id: number) =>
    setOpen((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  return (
    <div className="table-wrap">
      <table className="grid" data-testid="runs">
        <thead>
          <tr>
            <th>Started ({localOffsetLabel()})</th>
            <th>Ended</th>
            <th>Duration</th>
            <th>State</th>
            <th>Worker</th>
            <th className="num">Restarts</th>
            <th>Error</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => {
            const start = Date.parse(r.started_at);
            const end = r.ended_at ? Date.parse(r.ended_at) : now;
            const expanded = open.has(r.id);
            return (
              <Fragment key={r.id}>
                <tr data-testid={`run-${r.id}`} className={r.error ? "row-bad" : undefined}>
                  <td className="nowrap">{formatTime(r.started_at)}</td>
                  <td className="nowrap">{r.ended_at ? formatTime(r.ended_at) : <span className="muted">running</span>}</td>
                  <td>{formatDuration(end - start)}</td>
                  <td>
                    <StatusBadge status={r.state} testId="run-state" />
                  </td>
                  <td className="mono">{r.worker || "—"}</td>
                  <td className="num">{r.restarts}</td>
                  <td title={r.error || undefined}>
                    {r.error ? (
                      <button type="button" className="link-button run-error-toggle" aria-expanded={expanded} onClick={() => toggle(r.id)}>
                        {expanded ? "▾" : "▸"} {truncate(r.error.split("\n")[0], 80)}
                      </button>
                    ) : (
                      ""
                    )}
                  </td>
                </tr>
                {expanded && (
                  <tr className="run-log">
                    <td colSpan={7}>
                      <pre className="log" data-testid={`run-error-${r.id}`}>
                        {r.error}
                      </pre>
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function OutputPreview({ db, table, version }: { db: string; table: string; version: number }) {
  const [rows, setRows] = useState<RowsResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let cancelled = false;
    getRows(db, table, { limit: 200 })
      .then((r) => {
        if (!cancelled) {
          setRows(r);
          setError(null);
        }
      })
      .catch((e) => !cancelled && setError(errorText(e)));
    return () => {
      cancelled = true;
    };
  }, [db, table, version]);
  if (error) return <div className="muted">Output table not readable yet: {error}</div>;
  if (!rows) return <Loading what="Loading output rows" />;
  if (rows.rows.length === 0) return <Empty>No output rows yet.</Empty>;
  return (
    <div className="output-preview">
      <RowsChart result={rows} selectable={false} height={180} title={`${db}.${table} (latest ${rows.rows.length} rows)`} tagsOf={{ db, table }} />
      <details>
        <summary>Rows ({rows.rows.length})</summary>
        <RowsTable columns={rows.columns} types={rows.types} rows={rows.rows} maxRows={50} />
      </details>
    </div>
  );
}
