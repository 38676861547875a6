// Dashboard: streams by status, total throughput, failures, notification delivery, unread inbox,
// and the same over time with a time picker (DashboardSeries).
// GET dashboard/ every 5 s (there is no dashboard channel); the unread count follows /ws/inbox/.
import { useCallback, useEffect, useRef, useState } from "react";
import { errorText, getDashboard } from "../api/client";
import { STREAM_STATUSES, type Dashboard } from "../api/types";
import { ErrorBanner, Loading, StatusBadge } from "../components/common";
import { Sparkline } from "../components/Sparkline";
import { DashboardSeries } from "./DashboardSeries";
import { formatAgo, formatCount, formatDateTime, formatRate, formatTime, percent, truncate } from "../format";
import { useInbox } from "../inbox";
import { urls } from "../page";

export const DASHBOARD_POLL_MS = 5000;
/** Throughput samples kept for the sparkline (one per poll: 5 min). */
export const THROUGHPUT_SAMPLES = 60;

/** Statuses in display order: the known ones first, then whatever else the server counts. */
export function statusOrder(byStatus: Record<string, number>): string[] {
  const known = STREAM_STATUSES.filter((s) => byStatus[s]);
  const other = Object.keys(byStatus)
    .filter((s) => byStatus[s] && !(STREAM_STATUSES as string[]).includes(s))
    .sort();
  return [...known, ...other];
}

export function DashboardPage() {
  const inbox = useInbox();
  const [dash, setDash] = useState<Dashboard | null>(null);
  const [samples, setSamples] = useState<number[]>([]);
  const [updatedAt, setUpdatedAt] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);

  const load = useCallback(() => {
    getDashboard()
      .then((d) => {
        if (!alive.current) return;
        setDash(d);
        setSamples((s) => [...s, d.throughput_rows_per_s].slice(-THROUGHPUT_SAMPLES));
        setUpdatedAt(Date.now());
        setError(null);
      })
      .catch((e) => alive.current && setError(`Could not load the dashboard: ${errorText(e)}`));
  }, []);

  useEffect(() => {
    alive.current = true;
    load();
    const t = setInterval(load, DASHBOARD_POLL_MS);
    return () => {
      alive.current = false;
      clearInterval(t);
    };
  }, [load]);

  const unread = inbox.unread ?? dash?.inbox_unread ?? null;
  const n = dash?.notifications;
  const rate = percent(n?.delivery_rate);
  const rate24 = percent(n?.last_24h.delivery_rate);

  return (
    <div className="page page-dashboard">
      <div className="page-head">
        <h1>Dashboard</h1>
        <span className="muted small" data-testid="dash-updated" title={updatedAt ? formatDateTime(updatedAt) : undefined}>
          {updatedAt ? `updated ${formatTime(updatedAt).slice(11)} · every ${DASHBOARD_POLL_MS / 1000} s` : ""}
        </span>
        <div className="spacer" />
        <a className="button" href={urls.streams()}>
          All streams
        </a>
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      {dash === null && !error && <Loading what="Loading the dashboard" />}
      {dash && (
        <>
          <div className="dashboard dash-grid" data-testid="dashboard">
            <div className="stat">
              <div className="stat-label">Streams</div>
              <div className="stat-value">
                <a href={urls.streams()} data-testid="dash-total">
                  {dash.streams_total}
                </a>
              </div>
              <div className="stat-sub status-chips">
                {statusOrder(dash.streams_by_status).map((s) => (
                  <a key={s} className="status-chip" href={urls.streams({ status: s })} data-testid={`dash-status-${s}`} title={`Show ${s.replace(/_/g, " ")} streams`}>
                    <StatusBadge status={s} /> <span className="chip-count">{dash.streams_by_status[s]}</span>
                  </a>
                ))}
                {dash.streams_total === 0 && (
                  <span className="muted">
                    none yet — <a href={urls.create()}>create one</a>
                  </span>
                )}
              </div>
            </div>

            <div className="stat">
              <div className="stat-label">Total throughput</div>
              <div className="stat-value" data-testid="dash-throughput">
                {formatRate(dash.throughput_rows_per_s)}
              </div>
              <div className="stat-sub">
                <Sparkline values={samples} width={180} height={28} />
                <div>rows processed over the last minute</div>
              </div>
            </div>

            <div className={`stat ${dash.failures.streams_failed ? "stat-bad" : ""}`}>
              <div className="stat-label">Failures</div>
              <div className="stat-value">
                <a href={urls.streams({ status: "failed" })} data-testid="dash-failed" title="Show failed streams">
                  {dash.failures.streams_failed}
                </a>
              </div>
              <div className="stat-sub">streams in state failed</div>
            </div>

            <div className={`stat ${n && n.failed ? "stat-warn" : ""}`}>
              <div className="stat-label">Notification delivery</div>
              <div className="stat-value" data-testid="dash-delivery-rate">
                {rate === null ? "—" : `${rate}%`}
              </div>
              <div className="stat-sub">
                <span data-testid="dash-notifications">
                  {formatCount(n?.sent)} sent · {formatCount(n?.failed)} failed
                </span>
                {n && (
                  <div data-testid="dash-deliveries-24h">
                    last 24 h: {n.last_24h.ok} of {n.last_24h.attempts} attempts ok{rate24 === null ? "" : ` (${rate24}%)`}
                  </div>
                )}
              </div>
            </div>

            <div className={`stat ${unread ? "stat-warn" : ""}`}>
              <div className="stat-label">Inbox</div>
              <div className="stat-value">
                <a href={urls.inbox()} data-testid="dash-unread">
                  {unread ?? "—"}
                </a>
              </div>
              <div className="stat-sub">unread notifications</div>
            </div>
          </div>

          <DashboardSeries pollMs={DASHBOARD_POLL_MS} />

          <section className="panel">
            <header className="panel-head">
              <h2>Recent errors</h2>
              <div className="panel-actions">
                <a href={urls.streams({ status: "failed" })}>failed streams →</a>
              </div>
            </header>
            <div className="panel-body">
              {dash.failures.recent_errors.length === 0 ? (
                <div className="empty">No errors.</div>
              ) : (
                <ul className="error-list" data-testid="dash-errors">
                  {dash.failures.recent_errors.map((e, i) => (
                    <li key={`${e.stream_id}-${i}`} data-testid="dash-error">
                      <a href={urls.stream(e.stream_id)} className="stream-name">
                        {e.name}
                      </a>{" "}
                      <span className="muted small" title={formatDateTime(e.at)}>
                        {formatAgo(e.at)}
                      </span>
                      <div className="mono error-text" title={e.error}>
                        {truncate(e.error.split("\n")[0], 160)}
                      </div>
                    </li>
                  ))}
                </ul>
              )}
            </div>
          </section>
        </>
      )}
    </div>
  );
}
