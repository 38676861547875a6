// Types of the tdweb REST + WebSocket contract (backend: Django + DRF + Channels).
// Times: ISO strings for created_at etc.; *_ms fields are epoch milliseconds.

export type StreamStatus =
  | "starting"
  | "running"
  | "catching_up"
  | "paused"
  | "stopped"
  | "failed"
  | "dropped";

export const STREAM_STATUSES: StreamStatus[] = [
  "starting",
  "running",
  "catching_up",
  "paused",
  "stopped",
  "failed",
  "dropped",
];

export type StreamSyntax = "legacy" | "3.3.7";

export type StreamAction = "pause" | "resume" | "stop" | "start";

export interface Progress {
  batch_id: number;
  created_at: string;
  phase: "history" | "live";
  input_rows: number;
  output_rows: number;
  rows_per_s: number;
  duration_ms: number;
  open_windows: number;
  state_bytes: number;
  watermark_ms: number | null;
  max_event_ms: number | null;
  notifications_sent: number;
  notifications_failed: number;
  expired_rows: number;
  recalculated: number;
  removed_windows: number;
}

export interface Stream {
  id: number;
  name: string;
  db: string | null;
  syntax: StreamSyntax;
  status: StreamStatus;
  sql: string;
  source: string;
  target: string | null;
  trigger: string;
  window: string;
  created_at: string;
  last_error: string;
  spark_ui_url: string | null;
  last_progress: Progress | null;
  /** The last 60 rows/s samples, oldest first (sparkline). */
  throughput: number[];
}

export interface StreamDetail extends Stream {
  spec: Record<string, unknown>;
}

export interface Paginated<T> {
  count: number;
  next?: string | null;
  previous?: string | null;
  results: T[];
}

export interface SqlPosition {
  /** 0-based character (code point) offset into the statement. */
  offset: number;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
}

/** 400 body of POST /api/v1/streams/ (and the failure half of validate). */
export interface SqlErrorBody {
  code: number;
  desc: string;
  position: SqlPosition | null;
}

export type ValidateResult =
  | { ok: true; statement: string }
  | ({ ok: false } & SqlErrorBody);

export interface CreateStreamBody {
  sql: string;
  db?: string;
}

export interface Delivery {
  id: number;
  created_at: string;
  url: string;
  message_id: string;
  events: number;
  ok: boolean;
  latency_ms: number;
  error: string;
  attempt: number;
}

export interface Run {
  id: number;
  started_at: string;
  ended_at: string | null;
  state: string;
  error: string;
  restarts: number;
}

export interface Database {
  name: string;
  precision: string;
  ntables: number;
  created_ms: number;
}

export type TableKind = "super" | "sub" | "normal";

export interface TableEntry {
  name: string;
  kind: TableKind;
  stable: string | null;
}

export interface Field {
  name: string;
  type: string;
  length: number;
}

export interface TableDetail {
  name: string;
  kind: TableKind;
  stable: string | null;
  columns: Field[];
  tags: Field[];
  tag_values: Record<string, unknown>;
}

export interface RowsResult {
  columns: string[];
  types: string[];
  rows: unknown[][];
}

export interface RowsQuery {
  limit?: number;
  /** ISO timestamp */
  start?: string;
  /** ISO timestamp */
  end?: string;
}

/** TDengine REST answer of POST /api/v1/sql/. */
export type SqlResult =
  | { code: 0; column_meta: [string, string, number][]; data: unknown[][]; rows: number }
  | { code: number; desc: string };

export type NotificationEventType = "WINDOW_OPEN" | "WINDOW_CLOSE" | "WINDOW_INVALIDATION" | "ON_TIME";

export const EVENT_TYPES: NotificationEventType[] = [
  "WINDOW_OPEN",
  "WINDOW_CLOSE",
  "WINDOW_INVALIDATION",
  "ON_TIME",
];

export interface Notification {
  id: number;
  stream_name: string;
  event_type: string;
  table_name: string;
  window_start: number | null;
  window_end: number | null;
  event_time: number;
  /** The full event JSON. */
  payload: Record<string, unknown>;
  acknowledged: boolean;
  created_at: string;
}

export interface NotificationFilter {
  stream?: string;
  event_type?: string;
  /** true → acknowledged=false is sent (only unacknowledged). */
  unacknowledgedOnly?: boolean;
  page?: number;
}

// --- WebSocket messages -------------------------------------------------------------------

export interface StreamStatusMessage {
  type: "stream.status";
  stream: Stream;
}

export interface StreamProgressMessage {
  type: "stream.progress";
  stream_id: number;
  progress: Progress;
}

export type StreamSocketMessage = StreamStatusMessage | StreamProgressMessage;

export type InboxSocketMessage =
  | { type: "notification"; notification: Notification }
  | { type: "unread"; count: number };
