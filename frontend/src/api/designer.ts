// REST calls and types of the visual stream designer (docs/designer.md, "REST endpoints").
// Uses the shared helpers of ./client (CSRF token, ApiError); its request() is private, so the
// same fetch wrapper is repeated here rather than changing client.ts.
import { API_ROOT, ApiError, request } from "./client";
import type { SqlPosition, StreamSyntax } from "./types";

// --- the design document (schema_version 1) ---------------------------------------------------

/** Node ids are the node types (docs/designer.md). */
export type NodeKind = "source" | "prefilter" | "trigger" | "options" | "computation" | "output" | "notify";

export interface PartitionItem {
  sql: string;
  alias: string | null;
}

export interface SourceNode {
  db: string | null;
  table: string | null;
  /** Legacy only: what the query's FROM reads when it is a subquery or a join (instead of `table`). */
  from?: string | null;
  partition_by: PartitionItem[];
  [extra: string]: unknown;
}

export interface PrefilterNode {
  condition: string | null;
  [extra: string]: unknown;
}

export type TriggerType = "interval" | "sliding" | "period" | "session" | "state" | "event" | "count" | "ekuiper";

/** `type` plus the fields of the type (see the trigger table of docs/designer.md); text as written, null = not written. */
export interface TriggerNode {
  type: TriggerType | string;
  [field: string]: unknown;
}

/** Stream options; the keys depend on the syntax (null = not written, the syntax's default applies). */
export type OptionsNode = Record<string, unknown>;

export interface ComputationNode {
  query: string | null;
  [extra: string]: unknown;
}

export interface OutputTag {
  name: string;
  type: string;
  comment: string | null;
  expr: string | null;
  [extra: string]: unknown;
}

/** An output column: `{name, composite_key}`; a bare name string is accepted as well. */
export type OutputColumn = { name: string; composite_key?: boolean; [extra: string]: unknown } | string;

export interface OutputNode {
  db: string | null;
  table: string | null;
  subtable: string | null;
  columns: OutputColumn[];
  tags: OutputTag[];
  [extra: string]: unknown;
}

export interface NotifyNode {
  urls: string[];
  events: string[];
  where: string | null;
  history: boolean | null;
  on_failure: "DROP" | "PAUSE" | string | null;
  [extra: string]: unknown;
}

export interface DesignNodes {
  source?: SourceNode | null;
  prefilter?: PrefilterNode | null;
  trigger?: TriggerNode | null;
  options?: OptionsNode | null;
  computation?: ComputationNode | null;
  output?: OutputNode | null;
  notify?: NotifyNode | null;
  [extra: string]: unknown;
}

export interface XY {
  x: number;
  y: number;
}

export interface Design {
  schema_version: 1;
  name: string;
  db: string | null;
  /** The database unqualified names refer to (kept from compile; not written into the SQL). */
  default_db?: string | null;
  syntax: StreamSyntax;
  if_not_exists: boolean;
  nodes: DesignNodes;
  layout?: Record<string, XY>;
  [extra: string]: unknown;
}

// --- answers ------------------------------------------------------------------------------------

export interface DesignIssue {
  node: NodeKind | string | null;
  field: string | null;
  message: string;
  position: SqlPosition | null;
}

/** Rendered SQL per syntax; null when the design is not expressible in that syntax. */
export interface SqlBySyntax {
  "3.3.7": string | null;
  legacy: string | null;
}

export type ImpactKind = "none" | "notify_only" | "recalculate" | "reset";

export interface Impact {
  kind: ImpactKind | string;
  statement: string;
}

export interface CompileAnswer {
  design: Design;
  sql: SqlBySyntax;
  not_expressible: Partial<Record<StreamSyntax, string>>;
}

export interface ValidateBody {
  design: Design;
  stream_id?: number;
}

export interface Placeholder {
  name: string;
  description: string;
}

export interface ValidateAnswer {
  valid: boolean;
  issues: DesignIssue[];
  sql: SqlBySyntax;
  not_expressible: Partial<Record<StreamSyntax, string>>;
  /** Placeholders the computation may use with the design's trigger. */
  placeholders: Placeholder[];
  /** With stream_id: what redeploying does. */
  impact?: Impact | null;
}

export interface PreviewBody {
  design: Design;
  /** Epoch ms or ISO 8601 (without a zone: the server's TDWEB_TIMEZONE); null = open. Inclusive. */
  start: string | number | null;
  /** Exclusive; null = open. */
  end: string | number | null;
  limit?: number;
}

/** One window of the preview: its group, bounds (epoch ms; end null while open) and last event. */
export interface PreviewWindow {
  group: string;
  start: number;
  end: number | null;
  /** WINDOW_OPEN | WINDOW_CLOSE | WINDOW_INVALIDATION | ON_TIME: the window's last event. */
  event?: string;
  trigger_id?: string;
  [extra: string]: unknown;
}

export interface PreviewAnswer {
  windows: PreviewWindow[];
  rows: { columns: { name: string; type: string }[]; data: unknown[][] };
  notifications: Record<string, unknown>[];
  input_rows: number;
  output_rows?: number;
  window_count?: number;
  notification_count?: number;
  elapsed_ms: number;
  truncated: boolean;
  range?: { start: number | null; end: number | null };
  /** What deploying does with these stored rows (FILL_HISTORY, NOTIFY_HISTORY respected). */
  deploy?: { fill_history: boolean; notify_history: boolean; output_rows: number; notifications: number; notes: string[] };
}

export interface CatalogColumn {
  name: string;
  type: string;
}

export interface CatalogTable {
  name: string;
  /** supertable | subtable | normal */
  kind: string;
  /** A subtable's supertable. */
  stable?: string | null;
  /** A virtual table (CREATE VTABLE / a virtual supertable, seed 000 "Virtual Tables"). */
  virtual?: boolean;
  columns: CatalogColumn[];
  tags: CatalogColumn[];
}

export interface CatalogDatabase {
  name: string;
  precision?: string;
  tables: CatalogTable[];
}

export interface CatalogFunction {
  name: string;
  kind: "aggregate" | "scalar" | string;
}

/** What null fields mean in one syntax (spark_workers.sql.design.defaults). */
export interface SyntaxDefaults {
  options: Record<string, unknown>;
  notify: Record<string, unknown>;
  count_window_min?: number;
  max_delay_min?: string;
}

export interface Catalog {
  databases: CatalogDatabase[];
  functions: CatalogFunction[];
  /** trigger type -> its placeholders */
  placeholders: Record<string, Placeholder[]>;
  defaults?: Partial<Record<StreamSyntax, SyntaxDefaults>>;
  /** syntax -> trigger type -> the option keys the seeds allow with it (others are not offered). */
  options?: Partial<Record<StreamSyntax, Record<string, string[]>>>;
}

export interface Template {
  id: string | number;
  title: string;
  description: string;
  sql: string;
  design: Design;
}

export interface DraftBody {
  name: string;
  design: Design;
  stream_id?: number | null;
}

export interface Draft {
  id: number;
  name: string;
  design: Design;
  /** The deployed stream the draft edits, or null for a new stream. */
  stream_id: number | null;
  owner?: string;
  created_at?: string;
  updated_at?: string;
}

export interface StreamVersion {
  number: number;
  stream_id?: number | null;
  sql: string;
  design: Design | null;
  created_at: string;
  created_by: string | null;
  impact?: Impact | null;
}

export interface DeployAnswer {
  /** The deployed stream (the Stream of GET streams/{id}/). */
  stream: { id: number; name?: string; [k: string]: unknown };
  version: StreamVersion;
  impact: Impact | null;
}

export interface FieldChange {
  node: string | null;
  field: string | null;
  old: unknown;
  new: unknown;
}

export interface VersionDiff {
  from: number;
  to: number;
  /** Unified diff of the SQL texts. */
  sql_diff: string;
  changes: FieldChange[];
  impact: Impact | null;
}

export interface Me {
  username: string;
  is_staff: boolean;
  inboxes: { name: string; url: string }[];
}

// --- calls --------------------------------------------------------------------------------------

const call = request;

const D = `${API_ROOT}/designer`;

/** 400 → ApiError whose `position` locates the SQL error. */
export function compileSql(sql: string, db?: string | null): Promise<CompileAnswer> {
  return call("POST", `${D}/compile/`, db ? { sql, db } : { sql });
}

export function validateDesign(body: ValidateBody): Promise<ValidateAnswer> {
  return call("POST", `${D}/validate/`, body);
}

export function previewDesign(body: PreviewBody): Promise<PreviewAnswer> {
  return call("POST", `${D}/preview/`, body);
}

export function getCatalog(db?: string | null): Promise<Catalog> {
  return call("GET", `${D}/catalog/${db ? `?db=${encodeURIComponent(db)}` : ""}`);
}

export function listTemplates(): Promise<Template[]> {
  return call("GET", `${D}/templates/`);
}

export function getDraft(id: number): Promise<Draft> {
  return call("GET", `${D}/drafts/${id}/`);
}

export function createDraft(body: DraftBody): Promise<Draft> {
  return call("POST", `${D}/drafts/`, body);
}

export function updateDraft(id: number, body: DraftBody): Promise<Draft> {
  return call("PUT", `${D}/drafts/${id}/`, body);
}

/** 409 → ApiError whose body carries the `impact` to confirm. */
export function deployDraft(id: number, confirmImpact = false): Promise<DeployAnswer> {
  return call("POST", `${D}/drafts/${id}/deploy/`, confirmImpact ? { confirm_impact: true } : {});
}

/** Every version of the stream's name, newest first (one page of up to 500). */
export async function listVersions(streamId: number): Promise<StreamVersion[]> {
  const body = await call<StreamVersion[] | { results: StreamVersion[] }>("GET", `${API_ROOT}/streams/${streamId}/versions/?limit=500`);
  return Array.isArray(body) ? body : (body?.results ?? []);
}

export function diffVersions(streamId: number, from: number, to: number): Promise<VersionDiff> {
  return call("GET", `${API_ROOT}/streams/${streamId}/versions/diff/?from=${from}&to=${to}`);
}

export function getMe(): Promise<Me> {
  return call("GET", `${API_ROOT}/me/`);
}

/** The impact carried by a 409 answer of deploy (`{impact}` or `{detail, impact}`), if any. */
export function impactOf(err: unknown): Impact | null {
  if (!(err instanceof ApiError) || !err.body || typeof err.body !== "object") return null;
  const b = err.body as Record<string, unknown>;
  const i = (b.impact ?? b) as Record<string, unknown>;
  return typeof i.statement === "string" ? { kind: String(i.kind ?? ""), statement: i.statement } : null;
}
