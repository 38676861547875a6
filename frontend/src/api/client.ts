// Every REST call of the frontend. Session cookie auth; X-CSRFToken on unsafe methods.
import type {
  CreateStreamBody,
  Database,
  Delivery,
  Notification,
  NotificationFilter,
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

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
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

// --- streams ---------------------------------------------------------------------------------

export function listStreams(): Promise<Paginated<Stream>> {
  return request("GET", `${API_ROOT}/streams/`);
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

export async function dropStream(id: number): Promise<void> {
  await request<null>("DELETE", `${API_ROOT}/streams/${id}/`);
}

export function streamAction(id: number, action: StreamAction): Promise<Stream> {
  return request("POST", `${API_ROOT}/streams/${id}/actions/`, { action });
}

export function getProgress(id: number, limit = 300): Promise<Progress[]> {
  return request("GET", `${API_ROOT}/streams/${id}/progress/${qs({ limit })}`);
}

export function getDeliveries(id: number, limit = 100): Promise<Delivery[]> {
  return request("GET", `${API_ROOT}/streams/${id}/deliveries/${qs({ limit })}`);
}

export function getRuns(id: number): Promise<Run[]> {
  return request("GET", `${API_ROOT}/streams/${id}/runs/`);
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

export function listNotifications(f: NotificationFilter = {}): Promise<Paginated<Notification>> {
  return request(
    "GET",
    `${API_ROOT}/notifications/${qs({
      stream: f.stream,
      event_type: f.event_type,
      acknowledged: f.unacknowledgedOnly ? "false" : undefined,
      page: f.page && f.page > 1 ? f.page : undefined,
    })}`,
  );
}

export function ackNotification(id: number): Promise<Notification> {
  return request("POST", `${API_ROOT}/notifications/${id}/ack/`);
}

export function ackAllNotifications(): Promise<{ updated: number }> {
  return request("POST", `${API_ROOT}/notifications/ack-all/`);
}

export function unreadCount(): Promise<{ count: number }> {
  return request("GET", `${API_ROOT}/notifications/unread-count/`);
}
