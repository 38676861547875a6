// Types of the tdweb REST + WebSocket contract (backend: Django + DRF + Channels).
//
// REST bodies come from the OpenAPI schema (var/openapi.yml → src/api/schema.d.ts; regenerate
// with `npm run gen:api` after `manage.py spectacular --file var/openapi.yml`; `make checks` fails
// when it is stale). Written by hand here is only what the schema cannot say, each marked
// "hand-written:" with the reason:
//   - enums the serializers declare as plain CharFields (progress phase, table kind),
//   - JSONField bodies (last_progress, payload, spec, tag_values), `unknown` in the schema,
//   - unions of answer shapes (validate, SQL console), query filters, WebSocket messages.
// Times: ISO strings for created_at etc.; *_ms fields are epoch milliseconds.
import type { components } from "./schema";

type Schemas = components["schemas"];

/** `Base` with the keys of `Over` replaced by hand-written refinements. */
type Refine<Base, Over> = Omit<Base, keyof Over> & Over;

// --- streams -------------------------------------------------------------------------------

export type StreamStatus = Schemas["StatusEnum"];

export const STREAM_STATUSES: StreamStatus[] = [
  "starting",
  "running",
  "catching_up",
  "paused",
  "stopped",
  "failed",
  "dropped",
];

export type StreamSyntax = Schemas["SyntaxEnum"];

/** Lifecycle actions of POST streams/{id}/actions/ (recalculate and drop have their own calls). */
export type StreamAction = Exclude<Schemas["ActionEnum"], "recalculate" | "drop" | "cancel">;

/** hand-written: `phase` is a CharField. */
export type ProgressPhase = "history" | "live";

/** One micro-batch's progress (GET streams/{id}/progress/ and the stream.progress message). */
export type Progress = Refine<Schemas["Progress"], { phase: ProgressPhase | (string & {}) }>;

/**
 * Long work of a stream under way (FILL_HISTORY catch-up): `fraction` 0..1 or null when unknown,
 * `label` says what it is.
 */
export type StreamWork = Schemas["WorkProgress"];

interface StreamRefinements {
  /** hand-written: a JSONField (the last Progress), `unknown` in the schema. */
  last_progress: Progress | null;
}

export type Stream = Refine<Schemas["Stream"], StreamRefinements>;

export type StreamDetail = Refine<
  Schemas["StreamDetail"],
  StreamRefinements & {
    /** hand-written: the StreamSpec JSON (JSONField). */
    spec: Record<string, unknown>;
  }
>;

/** POST streams/{id}/actions/ answers the stream, with `recalculation` for recalculate. */
export type ActionResult = Refine<Schemas["ActionResult"], StreamRefinements>;

/** What a recalculation would change in its output (POST streams/{id}/recalculate/diff/). */
export type RecalcDiff = Schemas["Diff"];
export type RecalcDiffRow = Schemas["DiffRow"];

/** A designer draft (POST streams/{id}/edit/ answers a new one). */
export type Draft = Schemas["Draft"];

/** A DRF limit/offset page `{count, next, previous, results}` (the schema has one per list). */
export type Paginated<T> = Refine<Schemas["StreamPage"], { results: T[] }>;

export interface PageQuery {
  limit?: number;
  offset?: number;
}

/** hand-written: query string of GET streams/. */
export interface StreamFilter extends PageQuery {
  status?: string;
  db?: string;
  search?: string;
}

export type SqlPosition = Schemas["SqlPosition"];

/** 400 body of POST /api/v1/streams/ (and the failure half of validate). */
export type SqlErrorBody = Schemas["Error"];

/** hand-written: the schema has one object with optional fields; this is the real union. */
export type ValidateResult = { ok: true; statement: string } | ({ ok: false } & SqlErrorBody);

export type CreateStreamBody = Schemas["SqlInputRequest"];

export type Delivery = Schemas["Delivery"];

export type Run = Schemas["Run"];

/** "Why no output?" of GET streams/{id}/diagnosis/: watermark, open windows, dropped rows,
 * notification failures and the causes in plain words. */
export type Diagnosis = Schemas["Diagnosis"];
export type DiagnosisCause = Schemas["Cause"];
/** What a stream's WHERE / PRE_FILTER removed from the newest rows it read (null: no filter). */
export type FilterCheck = Schemas["FilterCheck"];

// --- dashboard -----------------------------------------------------------------------------

export type Dashboard = Schemas["Dashboard"];
export type DashboardSeries = Schemas["DashboardSeries"];

// --- databases / tables / ingestion --------------------------------------------------------

export type Database = Schemas["Database"];

/** hand-written: `kind` is a CharField. */
export type TableKind = "super" | "sub" | "normal";

export type TableEntry = Refine<Schemas["TableEntry"], { kind: TableKind }>;

export type Field = Schemas["Field"];

export type TableDetail = Refine<
  Schemas["TableDetail"],
  {
    kind: TableKind;
    /** hand-written: a JSONField of tag name → value. */
    tag_values: Record<string, unknown>;
  }
>;

export type RowsResult = Schemas["Rows"];

export interface RowsQuery {
  limit?: number;
  /** ISO timestamp */
  start?: string;
  /** ISO timestamp */
  end?: string;
}

/** A row import (POST databases/{db}/tables/{name}/rows/, GET imports/{id}/). */
export type ImportJob = Schemas["Import"];

/** 400 body of a failed import: which row (1-based, header not counted) and column. */
export type IngestError = Schemas["IngestError"];

/** TDengine REST answer of POST /api/v1/sql/. hand-written: a union the schema cannot say. */
export type SqlResult =
  | { code: 0; column_meta: [string, string, number][]; data: unknown[][]; rows: number }
  | { code: number; desc: string };

// --- notifications -------------------------------------------------------------------------

export type NotificationEventType = "WINDOW_OPEN" | "WINDOW_CLOSE" | "WINDOW_INVALIDATION" | "ON_TIME";

export const EVENT_TYPES: NotificationEventType[] = [
  "WINDOW_OPEN",
  "WINDOW_CLOSE",
  "WINDOW_INVALIDATION",
  "ON_TIME",
];

export type Notification = Refine<
  Schemas["Notification"],
  {
    /** hand-written: the full event JSON (JSONField). */
    payload: Record<string, unknown>;
  }
>;

/** One group of the inbox: a stream's events naming one tableName, with that table's tags. */
export type NotificationGroup = Schemas["NotificationGroup"];

export interface NotificationFilter extends PageQuery {
  stream?: string;
  event_type?: string;
  /** the group: its events' tableName */
  group?: string;
  /** true → acknowledged=false is sent (only unacknowledged). */
  unacknowledgedOnly?: boolean;
}

// --- WebSocket messages (not in the OpenAPI schema) -----------------------------------------

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
