// Notification inbox: live list with filters, acknowledge one / all, expandable event JSON.
import { Fragment, useCallback, useEffect, useRef, useState } from "react";
import { ackAllNotifications, ackNotification, errorText, listNotifications, listStreams } from "../api/client";
import { EVENT_TYPES, type Notification, type NotificationFilter } from "../api/types";
import { ConfirmDialog } from "../components/ConfirmDialog";
import { useStreamIds, WhyNoOutputLink } from "../components/WhyNoOutput";
import { Empty, ErrorBanner, LiveIndicator, Loading } from "../components/common";
import { formatDateTime, formatTime, localOffsetLabel, toEpochMs } from "../format";
import { useInbox } from "../inbox";

export function matchesFilter(n: Notification, f: NotificationFilter): boolean {
  if (f.stream && n.stream_name !== f.stream) return false;
  if (f.event_type && n.event_type !== f.event_type) return false;
  if (f.unacknowledgedOnly && n.acknowledged) return false;
  return true;
}

/** Notifications per request; "Load more" asks for the next ones by offset. */
export const PAGE_SIZE = 50;

function formatWindowBound(v: number | null): string {
  return v === null || v === undefined ? "—" : formatTime(toEpochMs(v));
}

export function InboxPage() {
  const inbox = useInbox();
  const [filter, setFilter] = useState<NotificationFilter>({});
  const [items, setItems] = useState<Notification[] | null>(null);
  const [count, setCount] = useState(0);
  const [hasMore, setHasMore] = useState(false);
  const [loadingMore, setLoadingMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [streamNames, setStreamNames] = useState<string[]>([]);
  const [expanded, setExpanded] = useState<Set<number>>(new Set());
  const [confirmAll, setConfirmAll] = useState(false);
  const streamIds = useStreamIds();
  const itemsRef = useRef(items);
  itemsRef.current = items;

  useEffect(() => {
    listStreams({ limit: 500 })
      .then((r) => setStreamNames(Array.from(new Set(r.results.map((s) => s.name))).sort()))
      .catch(() => {
        /* the stream filter just has no suggestions */
      });
  }, []);

  useEffect(() => {
    let cancelled = false;
    setItems(null);
    listNotifications({ ...filter, limit: PAGE_SIZE })
      .then((r) => {
        if (cancelled) return;
        setItems(r.results);
        setCount(r.count);
        setHasMore(!!r.next);
        setError(null);
      })
      .catch((e) => !cancelled && setError(`Could not load notifications: ${errorText(e)}`));
    return () => {
      cancelled = true;
    };
  }, [filter]);

  // New notifications from /ws/inbox/ go on top.
  useEffect(
    () =>
      inbox.subscribe((n) => {
        if (!matchesFilter(n, filter) || !itemsRef.current) return;
        if (itemsRef.current.some((x) => x.id === n.id)) {
          setItems((l) => (l ? l.map((x) => (x.id === n.id ? n : x)) : l));
        } else {
          setItems((l) => (l ? [n, ...l] : l));
          setCount((c) => c + 1);
        }
        if (n.stream_name) setStreamNames((s) => (s.includes(n.stream_name) ? s : [...s, n.stream_name].sort()));
      }),
    [inbox, filter],
  );

  const loadMore = () => {
    setLoadingMore(true);
    listNotifications({ ...filter, limit: PAGE_SIZE, offset: items?.length ?? 0 })
      .then((r) => {
        setItems((l) => {
          const have = new Set((l ?? []).map((x) => x.id));
          return [...(l ?? []), ...r.results.filter((x) => !have.has(x.id))];
        });
        setHasMore(!!r.next);
        setCount(r.count);
      })
      .catch((e) => setError(`Could not load more: ${errorText(e)}`))
      .finally(() => setLoadingMore(false));
  };

  const ack = useCallback(
    async (n: Notification) => {
      try {
        const updated = await ackNotification(n.id);
        setItems((l) => (l ? l.map((x) => (x.id === n.id ? { ...x, ...updated, acknowledged: true } : x)) : l));
        // The server pushes the new count to every browser (this one too, maybe before this
        // answer): ask for it instead of decrementing a count that may already include the ack.
        if (!n.acknowledged) inbox.refreshUnread();
      } catch (e) {
        setError(`Could not acknowledge: ${errorText(e)}`);
      }
    },
    [inbox],
  );

  const ackAll = async () => {
    setConfirmAll(false);
    try {
      await ackAllNotifications();
      setItems((l) => (l ? l.map((x) => ({ ...x, acknowledged: true })) : l));
      inbox.setUnread(0);
      inbox.refreshUnread();
    } catch (e) {
      setError(`Could not acknowledge all: ${errorText(e)}`);
    }
  };

  const toggle = (id: number) =>
    setExpanded((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });

  return (
    <div className="page page-inbox">
      <div className="page-head">
        <h1>Inbox</h1>
        <LiveIndicator status={inbox.status} />
        <span className="muted">{inbox.unread !== null ? `${inbox.unread} unread` : ""}</span>
        <div className="spacer" />
        <button type="button" disabled={inbox.unread === 0} onClick={() => setConfirmAll(true)}>
          Acknowledge all
        </button>
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      <div className="filters">
        <label>
          Stream{" "}
          <select aria-label="Stream filter" value={filter.stream ?? ""} onChange={(e) => setFilter((f) => ({ ...f, stream: e.target.value || undefined }))}>
            <option value="">all</option>
            {streamNames.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {filter.stream && <WhyNoOutputLink id={streamIds[filter.stream]} name={filter.stream} />}
        <label>
          Event type{" "}
          <select
            aria-label="Event type filter"
            value={filter.event_type ?? ""}
            onChange={(e) => setFilter((f) => ({ ...f, event_type: e.target.value || undefined }))}
          >
            <option value="">all</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          <input
            type="checkbox"
            checked={!!filter.unacknowledgedOnly}
            onChange={(e) => setFilter((f) => ({ ...f, unacknowledgedOnly: e.target.checked || undefined }))}
          />{" "}
          unacknowledged only
        </label>
        {items && (
          <span className="muted small">
            {items.length} of {count}
          </span>
        )}
      </div>
      {items === null && !error && <Loading what="Loading notifications" />}
      {items && items.length === 0 && <Empty>No notifications{filter.stream || filter.event_type || filter.unacknowledgedOnly ? " match these filters" : " yet"}.</Empty>}
      {items && items.length > 0 && (
        <div className="table-wrap">
          <table className="grid inbox-table">
            <thead>
              <tr>
                <th>Event time ({localOffsetLabel()})</th>
                <th>Stream</th>
                <th>Event</th>
                <th>Table</th>
                <th>Window start</th>
                <th>Window end</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {items.map((n) => (
                <Fragment key={n.id}>
                  <tr
                    className={`inbox-row ${n.acknowledged ? "row-dim" : "row-unread"}`}
                    data-testid={`notification-${n.id}`}
                    onClick={() => toggle(n.id)}
                    aria-expanded={expanded.has(n.id)}
                  >
                    <td className="nowrap" title={`received ${formatDateTime(n.created_at)}`}>
                      <span className="caret">{expanded.has(n.id) ? "▾" : "▸"}</span> {n.event_time === null ? "—" : formatTime(toEpochMs(n.event_time))}
                    </td>
                    <td>
                      <span>{n.stream_name}</span> <WhyNoOutputLink id={streamIds[n.stream_name]} name={n.stream_name} compact />
                    </td>
                    <td>
                      <span className={`badge ev ev-${n.event_type.toLowerCase()}`}>{n.event_type}</span>
                    </td>
                    <td className="mono">{n.table_name}</td>
                    <td className="nowrap">{formatWindowBound(n.window_start)}</td>
                    <td className="nowrap">{formatWindowBound(n.window_end)}</td>
                    <td onClick={(e) => e.stopPropagation()}>
                      {n.acknowledged ? (
                        <span className="muted small">acknowledged</span>
                      ) : (
                        <button type="button" className="btn-sm" onClick={() => void ack(n)}>
                          Acknowledge
                        </button>
                      )}
                    </td>
                  </tr>
                  {expanded.has(n.id) && (
                    <tr className="inbox-detail">
                      <td colSpan={7}>
                        <pre className="json" data-testid={`payload-${n.id}`}>
                          {JSON.stringify(n.payload, null, 2)}
                        </pre>
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {hasMore && (
        <div className="more">
          <button type="button" disabled={loadingMore} onClick={loadMore}>
            {loadingMore ? "Loading…" : "Load more"}
          </button>
        </div>
      )}
      {confirmAll && (
        <ConfirmDialog
          title="Acknowledge all"
          message={`Acknowledge all ${inbox.unread ?? ""} unread notifications?`}
          confirmLabel="Acknowledge all"
          onConfirm={() => void ackAll()}
          onCancel={() => setConfirmAll(false)}
        />
      )}
    </div>
  );
}
