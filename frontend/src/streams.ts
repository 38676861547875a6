// Pure helpers for stream lists and progress series (live-updated by WebSocket messages).
import type { Progress, Stream, StreamDetail } from "./api/types";
import { toMs } from "./format";

export const THROUGHPUT_SAMPLES = 60;

/** A stream.status message: replace (keeping fields the message lacks, e.g. spec) or add. */
export function applyStatus<S extends Stream>(list: S[], s: Stream): S[] {
  const i = list.findIndex((x) => x.id === s.id);
  if (i < 0) return [...list, s as S];
  const next = list.slice();
  next[i] = { ...list[i], ...s };
  return next;
}

/** A stream.progress message: new last_progress plus one more throughput sample. */
export function applyProgress<S extends Stream>(list: S[], streamId: number, p: Progress): S[] {
  const i = list.findIndex((x) => x.id === streamId);
  if (i < 0) return list;
  const next = list.slice();
  next[i] = withProgress(list[i], p);
  return next;
}

export function withProgress<S extends Stream>(s: S, p: Progress): S {
  const same = s.last_progress && s.last_progress.batch_id === p.batch_id;
  const tp = same ? [...s.throughput.slice(0, -1), p.rows_per_s] : [...(s.throughput ?? []), p.rows_per_s];
  return { ...s, last_progress: p, throughput: tp.slice(-THROUGHPUT_SAMPLES) };
}

export function mergeDetail(d: StreamDetail, s: Stream): StreamDetail {
  return { ...d, ...s, spec: (s as Partial<StreamDetail>).spec ?? d.spec };
}

/** Append (or replace, same batch_id) a progress record; keeps at most `cap`, oldest first. */
export function appendProgress(list: Progress[], p: Progress, cap = 1000): Progress[] {
  const last = list[list.length - 1];
  if (last && last.batch_id === p.batch_id) return [...list.slice(0, -1), p];
  if (last && p.batch_id < last.batch_id && list.some((x) => x.batch_id === p.batch_id)) return list;
  const next = [...list, p];
  return next.length > cap ? next.slice(next.length - cap) : next;
}

/** Event-time lag: max_event_ms − watermark_ms. */
export function eventLagMs(p: Progress | null | undefined): number | null {
  if (!p || p.max_event_ms === null || p.watermark_ms === null) return null;
  return p.max_event_ms - p.watermark_ms;
}

/** Wall-clock lag: now − max_event_ms. */
export function wallLagMs(p: Progress | null | undefined, now: number): number | null {
  if (!p || p.max_event_ms === null) return null;
  return now - p.max_event_ms;
}

/** "db.table" → {db, table}; a bare name uses the stream's database. */
export function splitTarget(target: string | null, defaultDb: string | null): { db: string; table: string } | null {
  if (!target) return null;
  const t = target.replace(/`/g, "");
  const dot = t.indexOf(".");
  if (dot > 0) return { db: t.slice(0, dot), table: t.slice(dot + 1) };
  return defaultDb ? { db: defaultDb, table: t } : null;
}

/** uPlot-ready columns from progress records (x in epoch seconds). */
export interface ProgressSeries {
  x: number[];
  /** Arrival rate: input rows over the wall-clock time since the previous batch (null for the first). */
  inputRate: (number | null)[];
  /** Processing rate: input rows over the batch's duration (Progress.rows_per_s). */
  rowsPerS: number[];
  /** Output rows over the batch's duration. */
  outputRate: (number | null)[];
  /** Watermark and wall clock (batch time) in epoch seconds. */
  watermarkS: (number | null)[];
  wallS: number[];
  durationMs: number[];
  watermarkLagS: (number | null)[];
  eventLagS: (number | null)[];
  openWindows: number[];
  stateBytes: number[];
  inputRows: number[];
  outputRows: number[];
  notifSent: number[];
  notifFailed: number[];
  recalculated: number[];
  expired: number[];
}

export function progressSeries(list: Progress[]): ProgressSeries {
  const s: ProgressSeries = {
    x: [],
    inputRate: [],
    rowsPerS: [],
    outputRate: [],
    watermarkS: [],
    wallS: [],
    durationMs: [],
    watermarkLagS: [],
    eventLagS: [],
    openWindows: [],
    stateBytes: [],
    inputRows: [],
    outputRows: [],
    notifSent: [],
    notifFailed: [],
    recalculated: [],
    expired: [],
  };
  let prevX = -Infinity;
  let prevT: number | null = null;
  for (const p of list) {
    const t = toMs(p.created_at);
    if (!Number.isFinite(t)) continue;
    // uPlot needs ascending x.
    const x = Math.max(t / 1000, prevX);
    prevX = x;
    s.x.push(x);
    s.inputRate.push(prevT !== null && t > prevT ? p.input_rows / ((t - prevT) / 1000) : null);
    prevT = t;
    s.rowsPerS.push(p.rows_per_s);
    s.outputRate.push(p.duration_ms > 0 ? p.output_rows / (p.duration_ms / 1000) : null);
    s.watermarkS.push(p.watermark_ms === null ? null : p.watermark_ms / 1000);
    s.wallS.push(t / 1000);
    s.durationMs.push(p.duration_ms);
    s.watermarkLagS.push(p.watermark_ms === null ? null : (t - p.watermark_ms) / 1000);
    s.eventLagS.push(p.max_event_ms === null ? null : (t - p.max_event_ms) / 1000);
    s.openWindows.push(p.open_windows);
    s.stateBytes.push(p.state_bytes);
    s.inputRows.push(p.input_rows);
    s.outputRows.push(p.output_rows);
    s.notifSent.push(p.notifications_sent);
    s.notifFailed.push(p.notifications_failed);
    s.recalculated.push(p.recalculated);
    s.expired.push(p.expired_rows);
  }
  return s;
}

/**
 * Catch-up estimate while phase == "history": how far max_event_ms has advanced from the first
 * history batch seen towards now. Null when it cannot be estimated.
 */
export function catchUpFraction(list: Progress[], now: number): number | null {
  const hist = list.filter((p) => p.phase === "history" && p.max_event_ms !== null);
  if (hist.length < 2) return null;
  const first = hist[0].max_event_ms as number;
  const last = hist[hist.length - 1].max_event_ms as number;
  const span = now - first;
  if (span <= 0) return null;
  return Math.max(0, Math.min(1, (last - first) / span));
}
