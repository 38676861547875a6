// Notification inbox: live list with filters (stream, event type, group), acknowledge one / all
// matching, groups labelled by their tags (the output subtable's tags, e.g. the PARTITION BY
// station) instead of the hashed tableName, times in UTC with the raw epoch value in a tooltip,
// expandable event JSON with its times made readable.
import { Fragment, useCallback, useEffect, useRef, useState } from "react";
import { ackAllNotifications, ackNotification, errorText, listNotificationGroups, listNotifications, listStreams } from "../api/client";
import { EVENT_TYPES, type Notification, type NotificationFilter, type NotificationGroup } from "../api/types";
import { ConfirmDialog } from "../components/ConfirmDialog";
import { useStreamIds, WhyNoOutputLink } from "../components/WhyNoOutput";
import { Empty, ErrorBanner, LiveIndicator, Loading } from "../components/common";
import { useCoalesced } from "../components/hooks";
import { formatDateTime, formatUtc, toEpochMs } from "../format";
import { useInbox } from "../inbox";

export function matchesFilter(n: Notification, f: NotificationFilter): boolean {
  if (f.stream && n.stream_name !== f.stream) return false;
  if (f.event_type && n.event_type !== f.event_type) return false;
  if (f.group && n.table_name !== f.group) return false;
  if (f.unacknowledgedOnly && n.acknowledged) return false;
  return true;
}

/** Notifications per request; "Load more" asks for the next ones by offset. */
export const PAGE_SIZE = 50;

/** "station=Aotizhongxin, kind=PM" from a group's tags; its tableName when they are unknown. */
export function groupLabel(tags: Record<string, unknown> | undefined, tableName: string): string {
  const entries = Object.entries(tags ?? {});
  if (entries.length === 0) return tableName || "—";
  return entries.map(([k, v]) => `${k}=${v === null || v === undefined ? "NULL" : String(v)}`).join(", ");
}

/** Keys of an event (seed 000/002 "Notification Content") and of its result that hold times. */
const EVENT_TIME_KEYS = ["eventTime", "windowStart", "windowEnd", "triggerTime"];
const RESULT_TIME_KEYS = /^(_wstart|_wend|_twstart|_twend|_tprev_ts|_tcurrent_ts|_tnext_ts|_tlocaltime|_irowts|_c0|ts)$/i;

/** The times of an event payload as `[field, raw value, "… UTC"]`, in the payload's order. */
export function payloadTimes(payload: Record<string, unknown>): [string, number, string][] {
  const out: [string, number, string][] = [];
  for (const k of EVENT_TIME_KEYS) {
    const v = payload[k];
    if (typeof v === "number") out.push([k, v, formatUtc(toEpochMs(v))]);
  }
  const result = payload.result;
  if (result && typeof result === "object") {
    for (const [k, v] of Object.entries(result as Record<string, unknown>)) {
      if (typeof v === "number" && RESULT_TIME_KEYS.test(k)) out.push([`result.${k}`, v, formatUtc(toEpochMs(v))]);
    }
  }
  return out;
}

/** An epoch value (any precision) as UTC text, the raw value in the tooltip. */
function UtcTime({ v }: { v: number | null | undefined }) {
  if (v === null || v === undefined) return <>—</>;
  return <span title={`raw: ${v}`}>{formatUtc(toEpochMs(v))}</span>;
}

function filterText(f: NotificationFilter, groups: NotificationGroup[]): string {
  const parts: string[] = [];
  if (f.stream) parts.push(`stream ${f.stream}`);
  if (f.event_type) parts.push(f.event_type);
  if (f.group) {
    const g = groups.find((x) => x.table_name === f.group && (!f.stream || x.stream_name === f.stream));
    parts.push(`group ${groupLabel(g?.tags, f.group)}`);
  }
  return parts.join(", ");
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
  const [groups, setGroups] = useState<NotificationGroup[]>([]);
  const [byGroup, setByGroup] = useState(false);
  const [expanded, setExpanded] = useState<Set<number>>(new Set());
  const [confirmAll, setConfirmAll] = useState<NotificationFilter | null>(null);
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

  // The groups of what the other filters select (the group filter's choices and the grouped view).
  const groupsFilter = { stream: filter.stream, event_type: filter.event_type, unacknowledgedOnly: filter.unacknowledgedOnly };
  const groupsKey = JSON.stringify(groupsFilter);
  const loadGroups = useCallback(() => {
    listNotificationGroups(JSON.parse(groupsKey) as NotificationFilter)
      .then(setGroups)
      .catch(() => {
        /* the group filter just has no choices */
      });
  }, [groupsKey]);
  useEffect(loadGroups, [loadGroups]);
  const refreshGroups = useCoalesced(loadGroups, 2000);

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
        refreshGroups();
        if (!matchesFilter(n, filter) || !itemsRef.current) return;
        if (itemsRef.current.some((x) => x.id === n.id)) {
          setItems((l) => (l ? l.map((x) => (x.id === n.id ? n : x)) : l));
        } else {
          setItems((l) => (l ? [n, ...l] : l));
          setCount((c) => c + 1);
        }
        if (n.stream_name) setStreamNames((s) => (s.includes(n.stream_name) ? s : [...s, n.stream_name].sort()));
      }),
    [inbox, filter, refreshGroups],
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
        refreshGroups();
      } catch (e) {
        setError(`Could not acknowledge: ${errorText(e)}`);
      }
    },
    [inbox, refreshGroups],
  );

  const ackMatching = async (f: NotificationFilter) => {
    setConfirmAll(null);
    try {
      await ackAllNotifications(f);
      const match = { stream: f.stream, event_type: f.event_type, group: f.group };
      setItems((l) => (l ? l.map((x) => (matchesFilter(x, match) ? { ...x, acknowledged: true } : x)) : l));
      if (!f.stream && !f.event_type && !f.group) inbox.setUnread(0);
      inbox.refreshUnread();
      loadGroups();
    } catch (e) {
      setError(`Could not acknowledge: ${errorText(e)}`);
    }
  };

  const toggle = (id: number) =>
    setExpanded((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });

  const filtered = !!(filter.stream || filter.event_type || filter.group);
  const showGroup = (g: NotificationGroup) => {
    setByGroup(false);
    setFilter((f) => ({ ...f, stream: g.stream_name, group: g.table_name || undefined }));
  };

  return (
    <div className="page page-inbox">
      <div className="page-head">
        <h1>Inbox</h1>
        <LiveIndicator status={inbox.status} />
        <span className="muted">{inbox.unread !== null ? `${inbox.unread} unread` : ""}</span>
        <div className="spacer" />
        <button type="button" disabled={inbox.unread === 0} onClick={() => setConfirmAll({ stream: filter.stream, event_type: filter.event_type, group: filter.group })}>
          {filtered ? "Acknowledge all matching" : "Acknowledge all"}
        </button>
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      <InboxFilters filter={filter} setFilter={setFilter} streamNames={streamNames} groups={groups} byGroup={byGroup} setByGroup={setByGroup} shown={items ? `${items.length} of ${count}` : null} streamIds={streamIds} />
      {byGroup ? (
        <GroupsTable groups={groups} onShow={showGroup} onAck={(g) => setConfirmAll({ stream: g.stream_name, event_type: filter.event_type, group: g.table_name })} />
      ) : (
        <>
          {items === null && !error && <Loading what="Loading notifications" />}
          {items && items.length === 0 && <Empty>No notifications{filtered || filter.unacknowledgedOnly ? " match these filters" : " yet"}.</Empty>}
          {items && items.length > 0 && <InboxTable items={items} expanded={expanded} toggle={toggle} ack={(n) => void ack(n)} streamIds={streamIds} />}
          {hasMore && (
            <div className="more">
              <button type="button" disabled={loadingMore} onClick={loadMore}>
                {loadingMore ? "Loading…" : "Load more"}
              </button>
            </div>
          )}
        </>
      )}
      {confirmAll && (
        <ConfirmDialog
          title={confirmAll.stream || confirmAll.event_type || confirmAll.group ? "Acknowledge all matching" : "Acknowledge all"}
          message={
            confirmAll.stream || confirmAll.event_type || confirmAll.group
              ? `Acknowledge every unread notification of ${filterText(confirmAll, groups)}?`
              : `Acknowledge all ${inbox.unread ?? ""} unread notifications?`
          }
          confirmLabel={confirmAll.stream || confirmAll.event_type || confirmAll.group ? "Acknowledge all matching" : "Acknowledge all"}
          onConfirm={() => void ackMatching(confirmAll)}
          onCancel={() => setConfirmAll(null)}
        />
      )}
    </div>
  );
}

interface FiltersProps {
  filter: NotificationFilter;
  setFilter: (f: (prev: NotificationFilter) => NotificationFilter) => void;
  streamNames: string[];
  groups: NotificationGroup[];
  byGroup: boolean;
  setByGroup: (v: boolean) => void;
  shown: string | null;
  /** stream ids by name: the filtered stream's "why no output?" link */
  streamIds: Record<string, number>;
}

function InboxFilters({ filter, setFilter, streamNames, groups, byGroup, setByGroup, shown, streamIds }: FiltersProps) {
  const groupChoices = groups.filter((g) => g.table_name);
  const selectedMissing = filter.group && !groupChoices.some((g) => g.table_name === filter.group);
  return (
    <div className="filters">
      <label>
        Stream{" "}
        <select aria-label="Stream filter" value={filter.stream ?? ""} onChange={(e) => setFilter((f) => ({ ...f, stream: e.target.value || undefined, group: undefined }))}>
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
        <select aria-label="Event type filter" value={filter.event_type ?? ""} onChange={(e) => setFilter((f) => ({ ...f, event_type: e.target.value || undefined }))}>
          <option value="">all</option>
          {EVENT_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <label>
        Group{" "}
        <select aria-label="Group filter" value={filter.group ?? ""} onChange={(e) => setFilter((f) => ({ ...f, group: e.target.value || undefined }))}>
          <option value="">all</option>
          {selectedMissing && <option value={filter.group}>{filter.group}</option>}
          {groupChoices.map((g) => (
            <option key={`${g.stream_name}\u0000${g.table_name}`} value={g.table_name} title={g.table_name}>
              {groupLabel(g.tags, g.table_name)}
              {filter.stream ? "" : ` · ${g.stream_name}`} ({g.unread} unread)
            </option>
          ))}
        </select>
      </label>
      <label>
        <input type="checkbox" checked={!!filter.unacknowledgedOnly} onChange={(e) => setFilter((f) => ({ ...f, unacknowledgedOnly: e.target.checked || undefined }))} /> unacknowledged only
      </label>
      <label>
        <input type="checkbox" checked={byGroup} onChange={(e) => setByGroup(e.target.checked)} /> group by tags
      </label>
      {shown && !byGroup && <span className="muted small">{shown}</span>}
    </div>
  );
}

function GroupsTable({ groups, onShow, onAck }: { groups: NotificationGroup[]; onShow: (g: NotificationGroup) => void; onAck: (g: NotificationGroup) => void }) {
  if (groups.length === 0) return <Empty>No groups match these filters.</Empty>;
  return (
    <div className="table-wrap">
      <table className="grid inbox-groups" data-testid="inbox-groups">
        <thead>
          <tr>
            <th>Group (tags)</th>
            <th>Stream</th>
            <th className="num">Unread</th>
            <th className="num">Total</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => (
            <tr key={`${g.stream_name}\u0000${g.table_name}`} data-testid={`group-${g.stream_name}-${g.table_name}`}>
              <td title={g.table_name ? `tableName: ${g.table_name}` : undefined}>{groupLabel(g.tags, g.table_name)}</td>
              <td>{g.stream_name}</td>
              <td className="num">{g.unread}</td>
              <td className="num">{g.total}</td>
              <td className="nowrap">
                <button type="button" className="btn-sm" onClick={() => onShow(g)}>
                  Show
                </button>{" "}
                <button type="button" className="btn-sm" disabled={g.unread === 0} onClick={() => onAck(g)}>
                  Acknowledge {g.unread}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface TableProps {
  items: Notification[];
  expanded: Set<number>;
  toggle: (id: number) => void;
  ack: (n: Notification) => void;
  /** stream ids by name: each stream's "why no output?" link */
  streamIds: Record<string, number>;
}

function InboxTable({ items, expanded, toggle, ack, streamIds }: TableProps) {
  return (
    <div className="table-wrap">
      <table className="grid inbox-table">
        <thead>
          <tr>
            <th>Event time (UTC)</th>
            <th>Stream</th>
            <th>Event</th>
            <th>Group</th>
            <th>Window start (UTC)</th>
            <th>Window end (UTC)</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {items.map((n) => (
            <Fragment key={n.id}>
              <tr className={`inbox-row ${n.acknowledged ? "row-dim" : "row-unread"}`} data-testid={`notification-${n.id}`} onClick={() => toggle(n.id)} aria-expanded={expanded.has(n.id)}>
                <td className="nowrap" title={`received ${formatDateTime(n.created_at)}`}>
                  <span className="caret">{expanded.has(n.id) ? "▾" : "▸"}</span> <UtcTime v={n.event_time} />
                </td>
                <td>
                  <span>{n.stream_name}</span> <WhyNoOutputLink id={streamIds[n.stream_name]} name={n.stream_name} compact />
                </td>
                <td>
                  <span className={`badge ev ev-${n.event_type.toLowerCase()}`}>{n.event_type}</span>
                </td>
                <td className={Object.keys(n.group_tags ?? {}).length ? "" : "mono"} title={n.table_name ? `tableName: ${n.table_name}` : undefined} data-testid={`group-of-${n.id}`}>
                  {groupLabel(n.group_tags, n.table_name)}
                </td>
                <td className="nowrap">
                  <UtcTime v={n.window_start} />
                </td>
                <td className="nowrap">
                  <UtcTime v={n.window_end} />
                </td>
                <td onClick={(e) => e.stopPropagation()}>
                  {n.acknowledged ? (
                    <span className="muted small">acknowledged</span>
                  ) : (
                    <button type="button" className="btn-sm" onClick={() => ack(n)}>
                      Acknowledge
                    </button>
                  )}
                </td>
              </tr>
              {expanded.has(n.id) && (
                <tr className="inbox-detail">
                  <td colSpan={7}>
                    <PayloadTimes payload={n.payload} id={n.id} />
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
  );
}

function PayloadTimes({ payload, id }: { payload: Record<string, unknown>; id: number }) {
  const times = payloadTimes(payload);
  if (times.length === 0) return null;
  return (
    <dl className="payload-times" data-testid={`payload-times-${id}`}>
      {times.map(([k, raw, text]) => (
        <Fragment key={k}>
          <dt className="mono">{k}</dt>
          <dd title={`raw: ${raw}`}>
            {text} <span className="muted small mono">({raw})</span>
          </dd>
        </Fragment>
      ))}
    </dl>
  );
}
