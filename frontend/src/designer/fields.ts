// The fields the property forms show, per node kind, trigger type and syntax (docs/designer.md),
// with units and the documented defaults (seed 000 for legacy options, seed 002 for 3.3.7).
import type { StreamSyntax } from "../api/types";
import type { NodeKind } from "../api/designer";

export const DURATION_HELP = "units: a b u s m h d w n y";

export type FieldKind =
  /** TDengine duration literal, e.g. "10s". */
  | "duration"
  /** SQL expression text. */
  | "expr"
  | "text"
  /** true / false / not written. */
  | "flag"
  /** A whole number (kept as a JSON number; digits only). */
  | "int"
  /** A list of whole numbers, edited comma-separated. */
  | "intcsv"
  /** One of `choices`, or not written. */
  | "choice"
  /** Several of `choices` (a list). */
  | "multi"
  /** A list of texts, edited comma-separated. */
  | "csv";

export interface FieldSpec {
  name: string;
  label: string;
  kind: FieldKind;
  placeholder?: string;
  help?: string;
  choices?: string[];
  /** The documented default shown when the field is not written. */
  default?: string;
  /** Only valid in this syntax. */
  syntax?: StreamSyntax;
  required?: boolean;
}

const dur = (name: string, label: string, placeholder: string, extra: Partial<FieldSpec> = {}): FieldSpec => ({
  name,
  label,
  kind: "duration",
  placeholder,
  help: DURATION_HELP,
  ...extra,
});

export interface TriggerChoice {
  /** The `type`, or `ekuiper:<function>`. */
  value: string;
  label: string;
  syntax?: StreamSyntax;
}

export const TRIGGER_CHOICES: TriggerChoice[] = [
  { value: "interval", label: "INTERVAL (+SLIDING)" },
  { value: "sliding", label: "SLIDING", syntax: "3.3.7" },
  { value: "period", label: "PERIOD", syntax: "3.3.7" },
  { value: "session", label: "SESSION" },
  { value: "state", label: "STATE_WINDOW" },
  { value: "event", label: "EVENT_WINDOW" },
  { value: "count", label: "COUNT_WINDOW" },
  { value: "none", label: "No window (every written row)", syntax: "legacy" },
  { value: "ekuiper:tumbling", label: "eKuiper TUMBLINGWINDOW", syntax: "legacy" },
  { value: "ekuiper:hopping", label: "eKuiper HOPPINGWINDOW", syntax: "legacy" },
  { value: "ekuiper:sliding", label: "eKuiper SLIDINGWINDOW", syntax: "legacy" },
  { value: "ekuiper:session", label: "eKuiper SESSIONWINDOW", syntax: "legacy" },
  { value: "ekuiper:count", label: "eKuiper COUNTWINDOW", syntax: "legacy" },
];

export const EKUIPER_FUNCTIONS = ["tumbling", "hopping", "sliding", "session", "count"];
export const EKUIPER_UNITS = ["DD", "HH", "MI", "SS", "MS"];

/** Fields per trigger type (the trigger table of docs/designer.md). */
export const TRIGGER_FIELDS: Record<string, FieldSpec[]> = {
  interval: [
    dur("interval", "Interval", "10m", { required: true }),
    dur("offset", "Interval offset", "0s", { default: "0" }),
    dur("sliding", "Sliding", "5m", { default: "= interval" }),
    dur("sliding_offset", "Sliding offset", "0s", { syntax: "3.3.7", default: "0" }),
  ],
  sliding: [dur("sliding", "Sliding", "10s", { required: true }), dur("sliding_offset", "Sliding offset", "0s", { default: "0" })],
  period: [dur("period", "Period", "1h", { required: true }), dur("offset", "Offset", "0s", { default: "0" })],
  session: [
    { name: "ts_column", label: "Timestamp column", kind: "text", placeholder: "ts", required: true },
    dur("gap", "Gap", "10m", { required: true }),
  ],
  state: [
    { name: "expr", label: "State expression", kind: "expr", placeholder: "status", required: true },
    dur("true_for", "TRUE_FOR", "5m", { default: "none" }),
  ],
  event: [
    { name: "start", label: "Start condition", kind: "expr", placeholder: "pm25 > 150", required: true },
    { name: "end", label: "End condition", kind: "expr", placeholder: "pm25 <= 75", required: true },
    dur("true_for", "TRUE_FOR", "5m", { default: "none" }),
  ],
  count: [
    { name: "count", label: "Count", kind: "int", placeholder: "100", required: true, help: "rows per window; at least 1 (3.3.7), 2 (legacy)" },
    { name: "sliding", label: "Sliding (rows)", kind: "int", placeholder: "10", default: "= count" },
    { name: "columns", label: "Columns", kind: "csv", placeholder: "c1, c2", help: "comma separated; rows where all are NULL are not counted" },
  ],
  /** Legacy stream without a window: each written row computed at once (seed 000, seed 004 power_stream). */
  none: [],
  ekuiper: [
    { name: "function", label: "Window function", kind: "choice", choices: EKUIPER_FUNCTIONS, required: true },
    { name: "unit", label: "Time unit", kind: "choice", choices: EKUIPER_UNITS, help: "DD HH MI SS MS (not for COUNTWINDOW)" },
    { name: "args", label: "Arguments", kind: "intcsv", placeholder: "10, 5", help: "whole numbers, comma separated: size[, hop / interval]" },
    { name: "over_when", label: "OVER (WHEN …)", kind: "expr", placeholder: "revenue > 200" },
    { name: "filter", label: "FILTER (WHERE …)", kind: "expr", placeholder: "revenue > 100" },
  ],
};

/** Stream options per syntax (seed 002 STREAM_OPTIONS; seed 000 legacy stream_options). */
export const OPTION_FIELDS: Record<StreamSyntax, FieldSpec[]> = {
  "3.3.7": [
    dur("watermark", "WATERMARK", "10s", { default: "0" }),
    { ...dur("expired_time", "EXPIRED_TIME", "1d", { default: "never" }), help: "units: a s m h d" },
    { name: "ignore_disorder", label: "IGNORE_DISORDER", kind: "flag", default: "false" },
    { name: "delete_recalc", label: "DELETE_RECALC", kind: "flag", default: "false" },
    { name: "delete_output_table", label: "DELETE_OUTPUT_TABLE", kind: "flag", default: "false" },
    { name: "fill_history", label: "FILL_HISTORY", kind: "flag", default: "false" },
    { name: "fill_history_first", label: "FILL_HISTORY_FIRST", kind: "flag", default: "false" },
    {
      name: "fill_history_start",
      label: "FILL_HISTORY start time",
      kind: "expr",
      placeholder: "'2025-01-01 00:00:00'",
      default: "the earliest row",
    },
    { name: "calc_notify_only", label: "CALC_NOTIFY_ONLY", kind: "flag", default: "false" },
    { name: "low_latency_calc", label: "LOW_LATENCY_CALC", kind: "flag", default: "false" },
    { name: "force_output", label: "FORCE_OUTPUT", kind: "flag", default: "false" },
    { ...dur("max_delay", "MAX_DELAY", "5s", { default: "none" }), help: "units: s m h d; at least 3s" },
    { name: "event_type", label: "EVENT_TYPE", kind: "multi", choices: ["WINDOW_OPEN", "WINDOW_CLOSE"], default: "WINDOW_CLOSE" },
    { name: "ignore_nodata_trigger", label: "IGNORE_NODATA_TRIGGER", kind: "flag", default: "false" },
  ],
  legacy: [
    {
      name: "trigger_mode",
      label: "TRIGGER",
      kind: "choice",
      choices: ["AT_ONCE", "WINDOW_CLOSE", "MAX_DELAY", "FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE"],
      default: "WINDOW_CLOSE",
    },
    dur("max_delay", "MAX_DELAY time", "5s", { default: "none", help: `${DURATION_HELP}; only with TRIGGER MAX_DELAY, at least 5s` }),
    dur("recalculate", "Recalculation period", "1h", { default: "60m", help: `${DURATION_HELP}; only with TRIGGER CONTINUOUS_WINDOW_CLOSE` }),
    dur("watermark", "WATERMARK", "10s", { default: "0" }),
    { name: "ignore_expired", label: "IGNORE EXPIRED", kind: "flag", default: "true" },
    dur("delete_mark", "DELETE_MARK", "1d", { default: "3650d" }),
    { name: "fill_history", label: "FILL_HISTORY", kind: "flag", default: "false" },
    { name: "fill_history_async", label: "ASYNC (fill history)", kind: "flag", default: "false", help: "only with FILL_HISTORY 1" },
    { name: "ignore_update", label: "IGNORE UPDATE", kind: "flag", default: "true" },
    { name: "event_time", label: "EVENT_TIME (tdweb)", kind: "flag", default: "true", help: "off = windows follow the arrival time" },
  ],
};

/** The events of NOTIFY ... ON (...) per syntax (seed 000: WINDOW_OPEN, WINDOW_CLOSE; seed 002 adds
 * ON_TIME for PERIOD and SLIDING triggers). */
export const NOTIFY_EVENTS: Record<StreamSyntax, string[]> = {
  "3.3.7": ["WINDOW_OPEN", "WINDOW_CLOSE", "ON_TIME"],
  legacy: ["WINDOW_OPEN", "WINDOW_CLOSE"],
};

/** WINDOW_INVALIDATION is an event type of the messages, not of ON (seed 000/002 "Common Fields"). */
export const INVALIDATION_NOTE =
  "WINDOW_INVALIDATION is not an ON event: a stream notifying WINDOW_OPEN or WINDOW_CLOSE also receives it (windowStart, windowEnd) for a generated window that late rows, updates or deletions remove or recompute.";

/** The events the form offers: the syntax's, then any other the design has (to be unchecked). */
export function notifyEventChoices(syntax: StreamSyntax, events: string[]): string[] {
  const own = NOTIFY_EVENTS[syntax] ?? NOTIFY_EVENTS["3.3.7"];
  return [...own, ...events.filter((e) => !own.includes(e))];
}

export const NOTIFY_DEFAULTS: Record<StreamSyntax, { history: string; on_failure: string }> = {
  "3.3.7": { history: "false", on_failure: "DROP" },
  legacy: { history: "false", on_failure: "PAUSE" },
};

/** The field names the forms of `kind` render (issues on other fields are shown at the top). */
export function formFields(kind: NodeKind, value: Record<string, unknown> | null | undefined, syntax: StreamSyntax): string[] {
  switch (kind) {
    case "source":
      return ["db", "table", "from", "partition_by"];
    case "prefilter":
      return ["condition"];
    case "trigger":
      return ["type", ...(TRIGGER_FIELDS[String(value?.type ?? "")] ?? []).map((f) => f.name)];
    case "options":
      return optionKeysShown(value ?? {}, syntax);
    case "computation":
      return ["query"];
    case "output":
      return ["db", "table", "subtable", "tags", "columns"];
    case "notify":
      return ["urls", "events", "where", "history", "on_failure"];
  }
}

/** Whether an option value is "not written" (the server's empty options are null, false or []). */
export function isUnset(v: unknown): boolean {
  return v === null || v === undefined || v === false || (Array.isArray(v) && v.length === 0);
}

/** The option keys the form shows: the syntax's own, and any other key that is set. */
export function optionKeysShown(value: Record<string, unknown>, syntax: StreamSyntax): string[] {
  const own = OPTION_FIELDS[syntax].map((f) => f.name);
  return [...own, ...Object.keys(value).filter((k) => !own.includes(k) && !isUnset(value[k]))];
}

/** `field` is the form field an issue names, or one of its list items (`tags[1].expr`, `partition_by.0`). */
export function fieldRoot(field: string): string {
  return field.split(/[.[]/)[0];
}
