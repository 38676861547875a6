// Streams list: filters (status, database, search) and limit/offset pages, live via /ws/streams/.
import { useCallback, useEffect, useRef, useState } from "react";
import { errorText, listDatabases, listStreams } from "../api/client";
import { useLiveSocket } from "../api/live";
import { STREAM_STATUSES, type Stream, type StreamFilter, type StreamSocketMessage } from "../api/types";
import { Empty, ErrorBanner, LiveIndicator, Loading, StatusBadge, useNow } from "../components/common";
import { useDebouncedEffect } from "../components/hooks";
import { Pager } from "../components/Pager";
import { isLongWork, ProgressBar, workLabel } from "../components/ProgressBar";
import { Sparkline } from "../components/Sparkline";
import { StreamActions } from "../components/StreamActions";
import { formatAgo, formatDateTime, formatDuration, formatRate, truncate } from "../format";
import { urls } from "../page";
import { applyProgress, applyStatus, eventLagMs, wallLagMs } from "../streams";

export const STREAMS_PAGE_SIZE = 25;

type Filters = Required<Pick<StreamFilter, "status" | "db" | "search">>;

function readFilters(): Filters {
  const q = new URLSearchParams(window.location.search);
  return { status: q.get("status") ?? "", db: q.get("db") ?? "", search: q.get("search") ?? "" };
}

/** Whether a stream pushed by the socket belongs in the filtered list. */
export function matchesStreamFilter(s: Stream, f: Partial<Filters>): boolean {
  if (f.status && s.status !== f.status) return false;
  if (f.db && s.db !== f.db) return false;
  if (f.search && !s.name.toLowerCase().includes(f.search.toLowerCase())) return false;
  return true;
}

export function StreamsPage() {
  const [filters, setFilters] = useState<Filters>(readFilters);
  const [searchText, setSearchText] = useState(filters.search);
  const [offset, setOffset] = useState(0);
  const [streams, setStreams] = useState<Stream[] | null>(null);
  const [total, setTotal] = useState(0);
  const [dbs, setDbs] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const now = useNow(1000);

  const load = useCallback(() => {
    listStreams({ ...filters, limit: STREAMS_PAGE_SIZE, offset })
      .then((r) => {
        setStreams(r.results);
        setTotal(r.count);
        setError(null);
      })
      .catch((e) => setError(`Could not load streams: ${errorText(e)}`));
  }, [filters, offset]);

  useEffect(load, [load]);

  useEffect(() => {
    listDatabases()
      .then((l) => setDbs(l.map((d) => d.name).sort()))
      .catch(() => {
        /* the database filter just has no choices */
      });
  }, []);

  // Filters live in the URL so the dashboard can link to a filtered list.
  useEffect(() => {
    window.history.replaceState(null, "", urls.streams(filters));
  }, [filters]);

  const setFilter = (k: keyof Filters, v: string) => {
    if (filters[k] === v) return;
    setFilters({ ...filters, [k]: v });
    setOffset(0);
  };
  useDebouncedEffect(searchText, 300, (v) => setFilter("search", v.trim()));

  const streamsRef = useRef(streams);
  streamsRef.current = streams;
  const live = useLiveSocket<StreamSocketMessage>("/ws/streams/", (msg) => {
    if (msg.type === "stream.progress") {
      setStreams((l) => (l ? applyProgress(l, msg.stream_id, msg.progress) : l));
      return;
    }
    if (msg.type !== "stream.status" || !streamsRef.current) return;
    const s = msg.stream;
    const have = streamsRef.current.some((x) => x.id === s.id);
    if (!matchesStreamFilter(s, filters)) {
      if (have) {
        setStreams((l) => (l ? l.filter((x) => x.id !== s.id) : l));
        setTotal((t) => Math.max(0, t - 1));
      }
    } else if (have) {
      setStreams((l) => (l ? applyStatus(l, s) : l));
    } else if (offset === 0) {
      // A stream created elsewhere shows up on top of the first page.
      setStreams((l) => (l ? [s, ...l] : l));
      setTotal((t) => t + 1);
    }
  });

  const onUpdated = useCallback((s: Stream) => setStreams((l) => (l ? applyStatus(l, s) : l)), []);
  const onDropped = useCallback((id: number) => {
    setStreams((l) => (l ? l.filter((s) => s.id !== id) : l));
    setTotal((t) => Math.max(0, t - 1));
  }, []);

  const filtered = !!(filters.status || filters.db || filters.search);

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
      <div className="filters" data-testid="stream-filters">
        <label>
          Status{" "}
          <select aria-label="Status filter" value={filters.status} onChange={(e) => setFilter("status", e.target.value)}>
            <option value="">all</option>
            {STREAM_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace(/_/g, " ")}
              </option>
            ))}
          </select>
        </label>
        <label>
          Database{" "}
          <select aria-label="Database filter" value={filters.db} onChange={(e) => setFilter("db", e.target.value)}>
            <option value="">all</option>
            {(filters.db && !dbs.includes(filters.db) ? [filters.db, ...dbs] : dbs).map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <input
          type="search"
          className="search-input"
          aria-label="Search streams"
          placeholder="Search by name"
          value={searchText}
          onChange={(e) => setSearchText(e.target.value)}
        />
        {filtered && (
          <button
            type="button"
            className="link-button"
            onClick={() => {
              setSearchText("");
              setFilters({ status: "", db: "", search: "" });
              setOffset(0);
            }}
          >
            clear filters
          </button>
        )}
      </div>
      {streams === null && !error && <Loading what="Loading streams" />}
      {streams !== null &&
        (streams.length === 0 && offset === 0 ? (
          filtered ? (
            <Empty>No streams match these filters.</Empty>
          ) : (
            <Empty>
              No streams yet — <a href={urls.create()}>create one</a>.
            </Empty>
          )
        ) : (
          <div className="table-wrap">
            <table className="grid streams-table" data-testid="streams-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Status</th>
                  <th>Source → target</th>
                  <th>Trigger / window</th>
                  <th>Throughput</th>
                  <th title="event-time lag (max event − watermark); below: wall clock − max event">Lag</th>
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
            <Pager offset={offset} size={STREAMS_PAGE_SIZE} count={total} shown={streams.length} onOffset={setOffset} />
          </div>
        ))}
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
  const lag = s.lag_ms ?? eventLagMs(p);
  const wall = wallLagMs(p, now);
  const work = isLongWork(s.progress) ? s.progress : null;
  return (
    <tr data-testid={`stream-row-${s.id}`} data-status={s.status} className={s.status === "dropped" ? "row-dim" : undefined}>
      <td>
        <a href={urls.stream(s.id)} className="stream-name">
          {s.name}
        </a>
        <div className="sub" title={formatDateTime(s.created_at)}>
          {s.db ? `${s.db} · ` : ""}
          {s.syntax} · {formatAgo(s.created_at, now)}
        </div>
      </td>
      <td className="status-cell">
        <StatusBadge status={s.status} />
        {work ? (
          <ProgressBar fraction={work.fraction} label={workLabel(work)} small rowsPerS={work.rows_per_s} etaS={work.eta_s} />
        ) : (
          p?.phase === "history" && <div className="sub">replaying history</div>
        )}
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
        <div className="sub" data-testid="rate">
          {formatRate(p?.rows_per_s ?? null)}
        </div>
      </td>
      <td className="lag-cell">
        <span title="event-time lag: max event − watermark" data-testid="lag">
          {formatDuration(lag)}
        </span>
        <div className="sub" title="wall clock − max event">
          {wall === null ? "" : `wall ${formatDuration(wall)}`}
        </div>
      </td>
      <td className="error-cell" title={s.last_error || undefined} data-testid="last-error">
        {s.last_error ? truncate(s.last_error, 60) : <span className="muted">—</span>}
      </td>
      <td>
        <StreamActions stream={s} onUpdated={onUpdated} onDropped={onDropped} onError={onError} compact />
      </td>
    </tr>
  );
}
