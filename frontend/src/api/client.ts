// Every REST call of the frontend. Session cookie auth; X-CSRFToken on unsafe methods.
import type {
  ActionResult,
  RecalcDiff,
  CreateStreamBody,
  Dashboard,
  DashboardSeries,
  Database,
  Delivery,
  Diagnosis,
  Draft,
  ImportJob,
  Notification,
  NotificationFilter,
  NotificationGroup,
  PageQuery,
  Paginated,
  Progress,
  RowsQuery,
  RowsResult,
  Run,
  SqlPosition,
  SqlResult,
  Stream,
  StreamAction,
  StreamDetail,
  StreamFilter,
  TableDetail,
  TableEntry,
  ValidateResult,
} from "./types";

export const API_ROOT = "/api/v1";

let csrfToken = "";

/** Set once at start-up from #root[data-csrf]. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export function getCsrfToken(): string {
  return csrfToken;
}

/** An HTTP error with the server's `desc` (TDengine style) or `detail` (DRF style). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: number | null;
  readonly desc: string;
  readonly position: SqlPosition | null;
  readonly body: unknown;

  constructor(status: number, desc: string, body: unknown = null) {
    super(desc);
    this.name = "ApiError";
    this.status = status;
    this.desc = desc;
    this.body = body;
    const b = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
    this.code = typeof b.code === "number" ? b.code : null;
    this.position = isPosition(b.position) ? b.position : null;
  }
}

function isPosition(p: unknown): p is SqlPosition {
  return !!p && typeof p === "object" && typeof (p as SqlPosition).offset === "number";
}

/** The text to show for a failed request: the server's desc/detail when there is one. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.desc;
  if (err instanceof Error) return err.message;
  return String(err);
}

function describe(status: number, statusText: string, body: unknown): string {
  if (body && typeof body === "object") {
    const b = body as Record<string, unknown>;
    if (typeof b.desc === "string" && b.desc) return b.desc;
    if (typeof b.detail === "string" && b.detail) return b.detail;
    if (typeof b.message === "string" && b.message) return b.message;
    // DRF field errors: {"sql": ["This field is required."]}
    const parts = Object.entries(b)
      .filter(([, v]) => Array.isArray(v) || typeof v === "string")
      .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(" ") : v}`);
    if (parts.length) return parts.join("; ");
  }
  if (typeof body === "string" && body.trim() && body.length < 300) return body.trim();
  return `HTTP ${status}${statusText ? ` ${statusText}` : ""}`;
}

interface RawResponse {
  status: number;
  ok: boolean;
  body: unknown;
}

async function raw(method: string, path: string, body?: unknown): Promise<RawResponse> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, `Network error: ${e instanceof Error ? e.message : String(e)}`);
  }
  let parsed: unknown = null;
  if (res.status !== 204) {
    const text = await res.text();
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
  }
  return { status: res.status, ok: res.ok, body: parsed };
}

/** A JSON call to the API (session cookie, CSRF header); a non-2xx answer throws ApiError. */
export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await raw(method, path, body);
  if (!r.ok) throw new ApiError(r.status, describe(r.status, "", r.body), r.body);
  return r.body as T;
}

function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    u.set(k, String(v));
  }
  const s = u.toString();
  return s ? `?${s}` : "";
}

const enc = encodeURIComponent;

// --- pagination ------------------------------------------------------------------------------

/**
 * A list answer as a page. The paginated endpoints answer `{count, next, previous, results}`;
 * a bare array (what those endpoints answered before pagination) is taken as one whole page.
 */
export function asPage<T>(body: Paginated<T> | T[] | null): Paginated<T> {
  if (Array.isArray(body)) return { count: body.length, next: null, previous: null, results: body } as Paginated<T>;
  if (!body) return { count: 0, next: null, previous: null, results: [] } as unknown as Paginated<T>;
  return { ...body, next: body.next ?? null, previous: body.previous ?? null, results: body.results ?? [] };
}

async function page<T>(path: string): Promise<Paginated<T>> {
  return asPage(await request<Paginated<T> | T[]>("GET", path));
}

// --- streams ---------------------------------------------------------------------------------

/** GET streams/ with optional status / db / search filters and limit/offset paging. */
export function listStreams(f: StreamFilter = {}): Promise<Paginated<Stream>> {
  return page(
    `${API_ROOT}/streams/${qs({ status: f.status, db: f.db, search: f.search, limit: f.limit, offset: f.offset || undefined })}`,
  );
}

/** 201 → Stream; 400 → ApiError with code/desc/position. */
export function createStream(body: CreateStreamBody): Promise<Stream> {
  return request("POST", `${API_ROOT}/streams/`, body.db ? body : { sql: body.sql });
}

export async function validateSql(sql: string, db?: string): Promise<ValidateResult> {
  return request("POST", `${API_ROOT}/sql/validate/`, db ? { sql, db } : { sql });
}

export function getStream(id: number): Promise<StreamDetail> {
  return request("GET", `${API_ROOT}/streams/${id}/`);
}

/** "Why no output?" for a stream (404 for a stream the user may not see). */
export function getDiagnosis(id: number): Promise<Diagnosis> {
  return request("GET", `${API_ROOT}/streams/${id}/diagnosis/`);
}

/** A stream's SQL with its NOTIFY secrets (owner or superuser only; 403 otherwise). */
export function revealStreamSql(id: number): Promise<{ sql: string }> {
  return request("POST", `${API_ROOT}/streams/${id}/sql/reveal/`);
}

export async function dropStream(id: number): Promise<void> {
  await request<null>("DELETE", `${API_ROOT}/streams/${id}/`);
}

export function streamAction(id: number, action: StreamAction): Promise<Stream> {
  return request("POST", `${API_ROOT}/streams/${id}/actions/`, { action });
}

/** Recalculates the stream's windows in [start, end] (ISO timestamps). */
/** RECALCULATE STREAM over [start, end]; `background`: queue a job (progress arrives with the
 * stream's status, `progress.phase === "recalculation"`) and answer at once. */
export function recalculateStream(id: number, start: string, end: string, background = false): Promise<ActionResult> {
  return request("POST", `${API_ROOT}/streams/${id}/actions/`, { action: "recalculate", start, end, background });
}

/** Stops the stream's running background recalculation before it commits (404 when none). */
export function cancelRecalculation(id: number): Promise<ActionResult> {
  return request("POST", `${API_ROOT}/streams/${id}/actions/`, { action: "cancel" });
}

/** Ends the FILL_HISTORY catch-up: what it produced stays, the rest of the snapshot is skipped. */
export function cancelHistory(id: number): Promise<Stream> {
  return request("POST", `${API_ROOT}/streams/${id}/actions/`, { action: "cancel_history" });
}

/** The output rows a recalculation over [start, end] would change, computed without writing. */
export function recalculationDiff(id: number, start: string, end: string, limit = 50): Promise<RecalcDiff> {
  return request("POST", `${API_ROOT}/streams/${id}/recalculate/diff/`, { start, end, limit });
}

/** Opens the stream in the designer: answers the draft to edit. */
export function editStream(id: number): Promise<Draft> {
  return request("POST", `${API_ROOT}/streams/${id}/edit/`);
}

export function getProgress(id: number, limit = 300): Promise<Progress[]> {
  return request("GET", `${API_ROOT}/streams/${id}/progress/${qs({ limit })}`);
}

/** The delivery log, newest first. */
export function getDeliveries(id: number, q: PageQuery = {}): Promise<Paginated<Delivery>> {
  return page(`${API_ROOT}/streams/${id}/deliveries/${qs({ limit: q.limit ?? 100, offset: q.offset || undefined })}`);
}

/** Run history, newest first. */
export function getRuns(id: number, q: PageQuery = {}): Promise<Paginated<Run>> {
  return page(`${API_ROOT}/streams/${id}/runs/${qs({ limit: q.limit ?? 50, offset: q.offset || undefined })}`);
}

export function getDashboard(): Promise<Dashboard> {
  return request("GET", `${API_ROOT}/dashboard/`);
}

/** Time series of throughput, lag and deliveries over `range` (15m, 1h, 6h, 24h, 7d) ending now. */
export function getDashboardSeries(range: string): Promise<DashboardSeries> {
  return request("GET", `${API_ROOT}/dashboard/series/?range=${encodeURIComponent(range)}`);
}

// --- databases / tables ----------------------------------------------------------------------

export function listDatabases(): Promise<Database[]> {
  return request("GET", `${API_ROOT}/databases/`);
}

export function listTables(db: string): Promise<TableEntry[]> {
  return request("GET", `${API_ROOT}/databases/${enc(db)}/tables/`);
}

export function getTable(db: string, name: string): Promise<TableDetail> {
  return request("GET", `${API_ROOT}/databases/${enc(db)}/tables/${enc(name)}/`);
}

export function getRows(db: string, name: string, q: RowsQuery = {}): Promise<RowsResult> {
  return request(
    "GET",
    `${API_ROOT}/databases/${enc(db)}/tables/${enc(name)}/rows/${qs({ limit: q.limit ?? 200, start: q.start, end: q.end })}`,
  );
}

/** Inserts JSON rows `[{column: value}]` into a table (POST rows/); the answer is the finished import job. */
export function insertRows(db: string, name: string, rows: Record<string, unknown>[]): Promise<ImportJob> {
  return request("POST", `${API_ROOT}/databases/${enc(db)}/tables/${enc(name)}/rows/`, { rows });
}

export interface UploadProgress {
  loaded: number;
  /** null when the browser cannot tell the total size. */
  total: number | null;
}

export interface Upload<T> {
  done: Promise<T>;
  abort: () => void;
}

/**
 * Uploads a CSV file as multipart `file` to the rows endpoint. XMLHttpRequest (not fetch) for its
 * upload progress events; `onProgress` gets bytes sent. The answer is the import job (poll
 * getImport while its state is "running"). Errors reject with ApiError like `request`; a bad
 * value answers 400 with an IngestError body (`row`, `column`) in `ApiError.body`.
 */
export function uploadCsv(
  db: string,
  name: string,
  file: File,
  onProgress: (p: UploadProgress) => void = () => {},
): Upload<ImportJob> {
  const xhr = new XMLHttpRequest();
  const done = new Promise<ImportJob>((resolve, reject) => {
    xhr.open("POST", `${API_ROOT}/databases/${enc(db)}/tables/${enc(name)}/rows/`);
    xhr.withCredentials = true;
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", csrfToken);
    xhr.upload.onprogress = (e: ProgressEvent) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : null });
    xhr.onload = () => {
      let body: unknown = null;
      if (xhr.responseText) {
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          body = xhr.responseText;
        }
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as ImportJob);
      else reject(new ApiError(xhr.status, describe(xhr.status, xhr.statusText, body), body));
    };
    xhr.onerror = () => reject(new ApiError(0, "Network error: the upload failed"));
    xhr.onabort = () => reject(new ApiError(0, "Upload cancelled"));
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}

export function getImport(id: number): Promise<ImportJob> {
  return request("GET", `${API_ROOT}/imports/${id}/`);
}

/**
 * Runs SQL through the TDengine-style REST endpoint. A TDengine error answer
 * (`{code != 0, desc}`) is returned, not thrown, whatever the HTTP status;
 * other failures (403, 500 without desc, network) throw ApiError.
 */
export async function runSql(sql: string, db?: string): Promise<SqlResult> {
  const r = await raw("POST", `${API_ROOT}/sql/`, db ? { sql, db } : { sql });
  const b = r.body as Record<string, unknown> | null;
  if (b && typeof b === "object" && typeof b.code === "number") {
    if (b.code !== 0) return { code: b.code, desc: typeof b.desc === "string" ? b.desc : `error ${b.code}` };
    if (r.ok) return b as unknown as SqlResult;
  }
  if (!r.ok) throw new ApiError(r.status, describe(r.status, "", r.body), r.body);
  return b as unknown as SqlResult;
}

// --- notifications ---------------------------------------------------------------------------

/** The inbox filters as query parameters (the list's, ack-all's and the groups'). */
function notificationQuery(f: NotificationFilter, withAcknowledged: boolean): Record<string, string | undefined> {
  return {
    stream: f.stream,
    event_type: f.event_type,
    group: f.group,
    acknowledged: withAcknowledged && f.unacknowledgedOnly ? "false" : undefined,
  };
}

export function listNotifications(f: NotificationFilter = {}): Promise<Paginated<Notification>> {
  return page(`${API_ROOT}/notifications/${qs({ ...notificationQuery(f, true), limit: f.limit, offset: f.offset || undefined })}`);
}

/** The groups (stream, tableName, tags, unread/total) of the notifications matching `f`. */
export function listNotificationGroups(f: NotificationFilter = {}): Promise<NotificationGroup[]> {
  return request("GET", `${API_ROOT}/notifications/groups/${qs(notificationQuery(f, true))}`);
}

export function ackNotification(id: number): Promise<Notification> {
  return request("POST", `${API_ROOT}/notifications/${id}/ack/`);
}

/** Acknowledge every unread notification matching `f` (stream, event type, group; none: all). */
export function ackAllNotifications(f: NotificationFilter = {}): Promise<{ updated: number }> {
  return request("POST", `${API_ROOT}/notifications/ack-all/${qs(notificationQuery(f, false))}`);
}

export function unreadCount(): Promise<{ count: number }> {
  return request("GET", `${API_ROOT}/notifications/unread-count/`);
}
