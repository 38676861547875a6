// Runtime state of a deployed stream on the designer's canvas (Node-RED-like status dots): the
// stream's running counters (GET /api/v1/streams/<id>/, `counters`) plus the micro-batches that
// arrived since over /ws/streams/<id>/ (`stream.progress`), shown on the node they concern.
import { useEffect, useState } from "react";
import { getStream } from "../api/client";
import type { NodeKind } from "../api/designer";
import { useLiveSocket } from "../api/live";
import type { Progress, StreamSocketMessage } from "../api/types";
import { formatCount } from "../format";

/** A stream's running totals (StreamCountersSerializer). */
export interface Counters {
  rows_in: number;
  /** rows written to the output table (one per closed window and group; AT_ONCE: one per update) */
  windows_out: number;
  notifications_sent: number;
  notifications_failed: number;
}

export interface RuntimeState {
  status: string | null;
  /** The totals at load, plus the batches received since. */
  counters: Counters;
  /** The newest micro-batch (open windows, last batch's counts); null before any. */
  last: Progress | null;
  /** The newest batch that sent or failed notifications. */
  lastNotify: Progress | null;
  expired: number;
}

export type Dot = "ok" | "idle" | "warn" | "bad";

export interface NodeRuntime {
  dot: Dot;
  text: string;
  title: string;
}

const ZERO: Counters = { rows_in: 0, windows_out: 0, notifications_sent: 0, notifications_failed: 0 };

export function initialRuntime(status: string | null, counters: Partial<Counters> | null | undefined, last: Progress | null): RuntimeState {
  return { status, counters: { ...ZERO, ...(counters ?? {}) }, last, lastNotify: null, expired: 0 };
}

/** The state after one `stream.progress` batch (a repeated batch id replaces `last` without counting twice). */
export function applyProgress(s: RuntimeState, p: Progress): RuntimeState {
  if (s.last && p.batch_id <= s.last.batch_id) return p.batch_id === s.last.batch_id ? { ...s, last: p } : s;
  const c = s.counters;
  const notified = p.notifications_sent + p.notifications_failed > 0;
  return {
    ...s,
    last: p,
    lastNotify: notified ? p : s.lastNotify,
    expired: s.expired + p.expired_rows,
    counters: {
      rows_in: c.rows_in + p.input_rows,
      windows_out: c.windows_out + p.output_rows,
      notifications_sent: c.notifications_sent + p.notifications_sent,
      notifications_failed: c.notifications_failed + p.notifications_failed,
    },
  };
}

function moving(n: number | undefined): Dot {
  return n ? "ok" : "idle";
}

/**
 * What each node shows: trigger table: rows in; window: windows open (the newest batch) / results
 * (output rows written: a closed window's, or an AT_ONCE update's); output: rows written; notification: sent / failed (red when the newest batch
 * that notified had failures). Green: the newest batch moved that count; grey: idle; every dot
 * red when the stream failed.
 */
export function runtimeByNode(s: RuntimeState | null): Partial<Record<NodeKind, NodeRuntime>> {
  if (!s) return {};
  const c = s.counters;
  const last = s.last;
  const failedStream = s.status === "failed";
  const f = formatCount;
  const out: Partial<Record<NodeKind, NodeRuntime>> = {
    source: { dot: moving(last?.input_rows), text: `${f(c.rows_in)} rows in`, title: `rows read from the trigger table; last batch: ${last?.input_rows ?? 0}` },
    trigger: {
      dot: last?.expired_rows ? "warn" : moving((last?.open_windows ?? 0) + (last?.output_rows ?? 0)),
      text: `${f(last?.open_windows ?? 0)} open · ${f(c.windows_out)} results${s.expired ? ` · ${f(s.expired)} expired` : ""}`,
      title:
        "windows open after the last batch; window results written (one output row per window and group when it closes, one per update under AT_ONCE or MAX_DELAY); rows dropped as expired since this page opened",
    },
    output: { dot: moving(last?.output_rows), text: `${f(c.windows_out)} rows written`, title: `rows written to the output table; last batch: ${last?.output_rows ?? 0}` },
    notify: {
      dot: s.lastNotify?.notifications_failed ? "bad" : moving(last?.notifications_sent),
      text: `${f(c.notifications_sent)} sent · ${f(c.notifications_failed)} failed`,
      title: s.lastNotify?.notifications_failed ? "the last notifications failed (see the stream's delivery log)" : "notifications delivered / failed",
    },
  };
  if (failedStream) for (const k of Object.keys(out) as NodeKind[]) out[k] = { ...out[k]!, dot: "bad", title: `the stream failed · ${out[k]!.title}` };
  return out;
}

/**
 * The runtime state of stream `streamId` for the canvas (null: no stream, or not loaded yet):
 * its counters from GET /api/v1/streams/<id>/, then live `stream.progress` / `stream.status`
 * messages of /ws/streams/<id>/ (the socket the stream page uses).
 */
export function useStreamRuntime(streamId: number | null): RuntimeState | null {
  const [rt, setRt] = useState<RuntimeState | null>(null);
  useEffect(() => {
    setRt(null);
    if (streamId === null) return undefined;
    let live = true;
    getStream(streamId)
      .then((s) => {
        if (!live) return;
        const base = initialRuntime(s.status, s.counters, s.last_progress ?? null);
        // batches received before the answer: the server's counters hold them already
        setRt((prev) => (prev?.last && (!base.last || prev.last.batch_id > base.last.batch_id) ? { ...base, last: prev.last, lastNotify: prev.lastNotify, expired: prev.expired } : base));
      })
      .catch(() => undefined); // no runtime line: the designer works without it
    return () => {
      live = false;
    };
  }, [streamId]);
  useLiveSocket<StreamSocketMessage>(streamId !== null ? `/ws/streams/${streamId}/` : null, (msg) => {
    if (msg.type === "stream.progress" && msg.stream_id === streamId) setRt((s) => applyProgress(s ?? initialRuntime(null, null, null), msg.progress));
    else if (msg.type === "stream.status" && msg.stream.id === streamId) setRt((s) => (s ? { ...s, status: msg.stream.status } : s));
  });
  return rt;
}
