// Streams list + dashboard summary, live via /ws/streams/.
import { useCallback, useEffect, useMemo, useState } from "react";
import { errorText, listStreams } from "../api/client";
import { useLiveSocket } from "../api/live";
import { STREAM_STATUSES, type Stream, type StreamSocketMessage } from "../api/types";
import { Empty, ErrorBanner, LiveIndicator, Loading, StatusBadge, useNow } from "../components/common";
import { Sparkline } from "../components/Sparkline";
import { StreamActions } from "../components/StreamActions";
import { formatAgo, formatCount, formatDateTime, formatDuration, formatRate, truncate } from "../format";
import { urls } from "../page";
import { applyProgress, applyStatus, dashboard, eventLagMs, wallLagMs } from "../streams";

export function StreamsPage() {
  const [streams, setStreams] = useState<Stream[] | null>(null);
  const [total, setTotal] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const now = useNow(1000);

  const load = useCallback(() => {
    listStreams()
      .then((r) => {
        setStreams(r.results);
        setTotal(r.count);
        setError(null);
      })
      .catch((e) => setError(`Could not load streams: ${errorText(e)}`));
  }, []);

  useEffect(load, [load]);

  const live = useLiveSocket<StreamSocketMessage>("/ws/streams/", (msg) => {
    if (msg.type === "stream.status") setStreams((l) => (l ? applyStatus(l, msg.stream) : l));
    else if (msg.type === "stream.progress") setStreams((l) => (l ? applyProgress(l, msg.stream_id, msg.progress) : l));
  });

  const onUpdated = useCallback((s: Stream) => setStreams((l) => (l ? applyStatus(l, s) : l)), []);
  const onDropped = useCallback((id: number) => setStreams((l) => (l ? l.filter((s) => s.id !== id) : l)), []);

  const dash = useMemo(() => dashboard(streams ?? []), [streams]);

  return (
    <div className="page page-streams">
      <div className="page-head">
        <h1>Streams</h1>
        <LiveIndicator status={live} />
        <div className="spacer" />
        <a className="button btn-primary" href={urls.create()}>
          + Create stream
        </a>
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      {streams === null && !error && <Loading what="Loading streams" />}
      {streams !== null && (
        <>
          <div className="dashboard" data-testid="dashboard">
            <div className="stat">
              <div className="stat-label">Streams</div>
              <div className="stat-value" data-testid="dash-total">{dash.total}</div>
              <div className="stat-sub status-counts">
                {STREAM_STATUSES.filter((s) => dash.byStatus[s]).map((s) => (
                  <span key={s} className="status-count">
                    <StatusBadge status={s} /> {dash.byStatus[s]}
                  </span>
                ))}
              </div>
            </div>
            <div className="stat">
              <div className="stat-label">Total throughput</div>
              <div className="stat-value" data-testid="dash-throughput">{formatRate(dash.throughput)}</div>
              <div className="stat-sub">latest batch of active streams</div>
            </div>
            <div className={`stat ${dash.failed ? "stat-bad" : ""}`}>
              <div className="stat-label">Failures</div>
              <div className="stat-value" data-testid="dash-failed">{dash.failed}</div>
              <div className="stat-sub">streams in state failed</div>
            </div>
            <div className={`stat ${dash.notificationsFailed ? "stat-warn" : ""}`}>
              <div className="stat-label">Notifications sent / failed</div>
              <div className="stat-value" data-testid="dash-notifications">
                {formatCount(dash.notificationsSent)} / {formatCount(dash.notificationsFailed)}
              </div>
              <div className="stat-sub">latest batch of each stream</div>
            </div>
          </div>
          {streams.length === 0 ? (
            <Empty>
              No streams yet — <a href={urls.create()}>create one</a>.
            </Empty>
          ) : (
            <div className="table-wrap">
              <table className="grid streams-table">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Status</th>
                    <th>Source → target</th>
                    <th>Trigger / window</th>
                    <th>Throughput</th>
                    <th title="event-time lag (max event − watermark) / wall-clock lag (now − max event)">Lag (event / wall)</th>
                    <th>Last error</th>
                    <th>Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {streams.map((s) => (
                    <StreamRow key={s.id} s={s} now={now} onUpdated={onUpdated} onDropped={onDropped} onError={setError} />
                  ))}
                </tbody>
              </table>
              {total > streams.length && (
                <div className="muted small table-note">
                  Showing {streams.length} of {total} streams.
                </div>
              )}
            </div>
          )}
        </>
      )}
    </div>
  );
}

function StreamRow({
  s,
  now,
  onUpdated,
  onDropped,
  onError,
}: {
  s: Stream;
  now: number;
  onUpdated: (s: Stream) => void;
  onDropped: (id: number) => void;
  onError: (t: string) => void;
}) {
  const p = s.last_progress;
  const ev = eventLagMs(p);
  const wall = wallLagMs(p, now);
  return (
    <tr data-testid={`stream-row-${s.id}`} className={s.status === "dropped" ? "row-dim" : undefined}>
      <td>
        <a href={urls.stream(s.id)} className="stream-name">
          {s.name}
        </a>
        <div className="sub" title={formatDateTime(s.created_at)}>
          {s.db ? `${s.db} · ` : ""}
          {s.syntax} · {formatAgo(s.created_at, now)}
        </div>
      </td>
      <td>
        <StatusBadge status={s.status} />
        {p?.phase === "history" && <div className="sub">replaying history</div>}
      </td>
      <td className="mono">
        {s.source || "—"} → {s.target ?? "—"}
      </td>
      <td>
        <div>{s.trigger || "—"}</div>
        <div className="sub mono">{s.window || ""}</div>
      </td>
      <td className="throughput-cell">
        <Sparkline values={s.throughput ?? []} />
        <div className="sub" data-testid="rate">{formatRate(p?.rows_per_s ?? null)}</div>
      </td>
      <td className="lag-cell">
        <span title="max event − watermark">{formatDuration(ev)}</span>
        {" / "}
        <span title="wall clock − max event">{formatDuration(wall)}</span>
      </td>
      <td className="error-cell" title={s.last_error || undefined}>
        {s.last_error ? truncate(s.last_error, 60) : <span className="muted">—</span>}
      </td>
      <td>
        <StreamActions stream={s} onUpdated={onUpdated} onDropped={onDropped} onError={onError} compact />
      </td>
    </tr>
  );
}
