// Design document <-> React Flow graph, as pure functions (docs/designer.md).
//
// The graph holds one node per present design node (id = kind, data.value = the design's node
// object untouched) and the implied edges. Everything else of the design (name, db, syntax,
// nodes written as null, layout entries of absent nodes, unknown keys) travels in `meta`, so
// graphToDesign(designToGraph(d)) deep-equals d.
import { MarkerType, type Edge, type Node } from "@xyflow/react";
import type { Design, DesignNodes, NodeKind, XY } from "../api/designer";
import type { StreamSyntax } from "../api/types";

/** All node kinds, in palette order. */
export const NODE_KINDS: NodeKind[] = ["source", "prefilter", "trigger", "options", "computation", "output", "notify"];

/** The main chain: source -> prefilter -> trigger -> options -> computation -> output. */
export const CHAIN: NodeKind[] = ["source", "prefilter", "trigger", "options", "computation", "output"];

export const KIND_LABEL: Record<NodeKind, string> = {
  source: "Trigger table / schedule",
  prefilter: "Pre-filter",
  trigger: "Trigger / window",
  options: "Options",
  computation: "Computation",
  output: "Output",
  notify: "Notification",
};

export const KIND_HELP: Record<NodeKind, string> = {
  source: "The table whose writes trigger the stream, and PARTITION BY",
  prefilter: "PRE_FILTER: rows kept before windowing",
  trigger: "Window or schedule: INTERVAL, SLIDING, PERIOD, SESSION, STATE, EVENT, COUNT, eKuiper, or none (legacy: every written row)",
  options: "STREAM_OPTIONS / legacy stream options",
  computation: "The query computed per window (placeholders such as %%trows)",
  output: "INTO table, SUBTABLE, TAGS and columns",
  notify: "NOTIFY urls ON events WHERE ...",
};

export type NodeValue = Record<string, unknown>;

export interface DesignNodeData extends Record<string, unknown> {
  kind: NodeKind;
  /** The design's node object, as is. */
  value: NodeValue;
  /** The position comes from (or goes to) design.layout. */
  placed: boolean;
}

export type DesignFlowNode = Node<DesignNodeData, "design">;

export interface GraphMeta {
  /** The design without `nodes` and `layout`. */
  rest: Omit<Design, "nodes" | "layout">;
  /** Node kinds written as `null`. */
  nullKinds: string[];
  /** Keys of `nodes` that are not node kinds. */
  extraNodes: Record<string, unknown>;
  /** Layout entries of nodes the graph does not have. */
  extraLayout: Record<string, XY>;
  hasLayout: boolean;
}

export interface DesignGraph {
  nodes: DesignFlowNode[];
  edges: Edge[];
  meta: GraphMeta;
}

export function isNodeKind(k: unknown): k is NodeKind {
  return typeof k === "string" && (NODE_KINDS as string[]).includes(k);
}

/** The kinds present in a design (non-null), in NODE_KINDS order. */
export function presentKinds(nodes: DesignNodes | Record<string, unknown>): NodeKind[] {
  return NODE_KINDS.filter((k) => nodes[k] !== undefined && nodes[k] !== null);
}

/** The implied edges between present kinds (docs/designer.md): the chain, and computation/trigger -> notify. */
export function impliedEdges(kinds: Iterable<NodeKind>): Edge[] {
  const have = new Set(kinds);
  const chain = CHAIN.filter((k) => have.has(k));
  const edges: Edge[] = [];
  for (let i = 1; i < chain.length; i++) edges.push(edge(chain[i - 1], chain[i]));
  if (have.has("notify")) {
    const from: NodeKind | null = have.has("computation") ? "computation" : have.has("trigger") ? "trigger" : chain.at(-1) ?? null;
    if (from) edges.push(edge(from, "notify"));
  }
  return edges;
}

function edge(a: NodeKind, b: NodeKind): Edge {
  return { id: `${a}->${b}`, source: a, target: b, type: "smoothstep", deletable: false, markerEnd: { type: MarkerType.ArrowClosed } };
}

/** Whether connecting a -> b matches the fixed order (the only connections the designer accepts). */
export function isImpliedConnection(kinds: Iterable<NodeKind>, a: string, b: string): boolean {
  return impliedEdges(kinds).some((e) => e.source === a && e.target === b);
}

export const COLUMN_GAP = 250;
export const ROW_GAP = 150;

/** Left-to-right positions for `kinds`: the chain on one row, notify under the output column. */
export function autoLayout(kinds: Iterable<NodeKind>): Partial<Record<NodeKind, XY>> {
  const have = new Set(kinds);
  const out: Partial<Record<NodeKind, XY>> = {};
  let col = 0;
  const colOf: Partial<Record<NodeKind, number>> = {};
  for (const k of CHAIN) {
    if (!have.has(k)) continue;
    colOf[k] = col;
    out[k] = { x: col * COLUMN_GAP, y: 0 };
    col++;
  }
  if (have.has("notify")) {
    const from = colOf.computation ?? colOf.trigger ?? Math.max(-1, col - 1);
    out.notify = { x: (from + 1) * COLUMN_GAP, y: ROW_GAP };
  }
  return out;
}

/** The design with every present node laid out left to right (replaces design.layout). */
export function withAutoLayout(d: Design): Design {
  const pos = autoLayout(presentKinds(d.nodes));
  const layout: Record<string, XY> = {};
  for (const [k, v] of Object.entries(pos)) if (v) layout[k] = v;
  return { ...d, layout };
}

export function designToGraph(d: Design): DesignGraph {
  const { nodes, layout, ...rest } = d;
  const kinds = presentKinds(nodes);
  const auto = autoLayout(kinds);
  const lay = layout ?? {};
  const flowNodes: DesignFlowNode[] = kinds.map((kind) => {
    const placed = Object.prototype.hasOwnProperty.call(lay, kind);
    const position = placed ? { x: lay[kind].x, y: lay[kind].y } : { ...(auto[kind] ?? { x: 0, y: 0 }) };
    return {
      id: kind,
      type: "design",
      position,
      data: { kind, value: nodes[kind] as NodeValue, placed },
      deletable: true,
    };
  });
  const nullKinds = NODE_KINDS.filter((k) => Object.prototype.hasOwnProperty.call(nodes, k) && nodes[k] === null);
  const extraNodes: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(nodes)) if (!isNodeKind(k)) extraNodes[k] = v;
  const extraLayout: Record<string, XY> = {};
  for (const [k, v] of Object.entries(lay)) if (!kinds.includes(k as NodeKind)) extraLayout[k] = v;
  return {
    nodes: flowNodes,
    edges: impliedEdges(kinds),
    meta: { rest, nullKinds, extraNodes, extraLayout, hasLayout: layout !== undefined },
  };
}

export function graphToDesign(g: { nodes: DesignFlowNode[]; meta: GraphMeta }): Design {
  const { meta } = g;
  const nodes: Record<string, unknown> = { ...meta.extraNodes };
  const present = new Set(g.nodes.map((n) => n.data.kind));
  for (const k of meta.nullKinds) if (!present.has(k as NodeKind)) nodes[k] = null;
  const layout: Record<string, XY> = { ...meta.extraLayout };
  let placedAny = false;
  for (const n of g.nodes) {
    nodes[n.data.kind] = n.data.value;
    if (n.data.placed) {
      layout[n.data.kind] = { x: n.position.x, y: n.position.y };
      placedAny = true;
    }
  }
  const d = { ...meta.rest, nodes: nodes as unknown as DesignNodes } as Design;
  if (meta.hasLayout || placedAny) d.layout = layout;
  return d;
}

// --- new nodes and designs ----------------------------------------------------------------------

/** The object a new node of `kind` starts with (every field not written). */
export function emptyNode(kind: NodeKind, syntax: StreamSyntax = "3.3.7"): NodeValue {
  switch (kind) {
    case "source":
      return { db: null, table: null, partition_by: [] };
    case "prefilter":
      return { condition: null };
    case "trigger":
      return { type: "interval", interval: null, offset: null, sliding: null, sliding_offset: null };
    case "options":
      return {};
    case "computation":
      // legacy: addNode appends the trigger table (the query's FROM)
      return { query: syntax === "legacy" ? "SELECT _wstart, count(*) AS n FROM " : defaultQuery("interval") };
    case "output":
      return { db: null, table: null, subtable: null, columns: [], tags: [] };
    case "notify":
      return { urls: [], events: ["WINDOW_CLOSE"], where: null, history: null, on_failure: null };
  }
}

/**
 * The 3.3.7 computation a new Computation node starts with, by trigger type: its first column is
 * the trigger's time placeholder (seed 002 Placeholders: _twstart for windows, _tcurrent_ts for
 * SLIDING, _tlocaltime for PERIOD), so that it validates as is.
 */
export function defaultQuery(triggerType: string): string {
  const ts = triggerType === "sliding" ? "_tcurrent_ts AS ts" : triggerType === "period" ? "_tlocaltime AS ts" : "_twstart AS wstart";
  return `SELECT ${ts}, count(*) AS n FROM %%trows`;
}

/** The design after its trigger changed from `before`: a computation still at its starting query follows the new type. */
export function followTrigger(d: Design, before: NodeValue | null | undefined): Design {
  const comp = d.nodes.computation as NodeValue | null | undefined;
  const oldType = String(before?.type ?? "interval");
  const newType = String(d.nodes.trigger?.type ?? "interval");
  if (d.syntax !== "3.3.7" || !comp || oldType === newType || comp.query !== defaultQuery(oldType)) return d;
  return setNode(d, "computation", { ...comp, query: defaultQuery(newType) });
}

/** A new design: an empty canvas (the user drags its nodes from the palette). */
export function newDesign(): Design {
  return {
    schema_version: 1,
    name: "",
    db: null,
    syntax: "3.3.7",
    if_not_exists: true,
    nodes: {},
    layout: {},
  };
}

/**
 * Adds a node of `kind` (a singleton: no-op when present) at `at`, or at the position the
 * automatic layout gives it next to the existing nodes.
 */
export function addNode(d: Design, kind: NodeKind, at?: XY): Design {
  if (d.nodes[kind] !== undefined && d.nodes[kind] !== null) return d;
  const value = emptyNode(kind, d.syntax);
  if (kind === "computation" && d.syntax !== "legacy") value.query = defaultQuery(String(d.nodes.trigger?.type ?? "interval"));
  const src = d.nodes.source;
  if (kind === "computation" && d.syntax === "legacy") value.query = `${String(value.query)}${src?.table ? String(src.table) : "<table>"}`;
  const nodes = { ...d.nodes, [kind]: value } as DesignNodes;
  const kinds = presentKinds(nodes);
  const pos = at ?? freeSpot(d, kind, kinds);
  return { ...d, nodes, layout: { ...(d.layout ?? {}), [kind]: { x: Math.round(pos.x), y: Math.round(pos.y) } } };
}

function freeSpot(d: Design, kind: NodeKind, kinds: NodeKind[]): XY {
  const auto = autoLayout(kinds)[kind] ?? { x: 0, y: 0 };
  const lay = d.layout ?? {};
  const taken = Object.entries(lay).filter(([k]) => kinds.includes(k as NodeKind) && k !== kind);
  let p = { ...auto };
  for (let i = 0; i < 20 && taken.some(([, v]) => Math.abs(v.x - p.x) < 120 && Math.abs(v.y - p.y) < 60); i++) {
    p = { x: p.x, y: p.y + ROW_GAP };
  }
  return p;
}

export function removeNode(d: Design, kind: NodeKind): Design {
  const nodes = { ...d.nodes } as Record<string, unknown>;
  delete nodes[kind];
  const layout = { ...(d.layout ?? {}) };
  delete layout[kind];
  return { ...d, nodes: nodes as unknown as DesignNodes, layout };
}

export function setNode(d: Design, kind: NodeKind, value: NodeValue): Design {
  return { ...d, nodes: { ...d.nodes, [kind]: value } as DesignNodes };
}

/** The design without `layout` (what validation depends on). */
export function semanticKey(d: Design): string {
  const { layout: _layout, ...rest } = d;
  return JSON.stringify(rest);
}

// --- one-line summaries -------------------------------------------------------------------------

function s(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) return v.map(s).join(", ");
  return String(v);
}

function args(...xs: unknown[]): string {
  return xs.filter((x) => x !== null && x !== undefined && x !== "").map(s).join(", ");
}

export function triggerSummary(t: NodeValue): string {
  const trueFor = t.true_for ? ` TRUE_FOR(${s(t.true_for)})` : "";
  switch (t.type) {
    case "interval":
      return `INTERVAL(${args(t.interval, t.offset) || "?"})${t.sliding ? ` SLIDING(${args(t.sliding, t.sliding_offset)})` : ""}`;
    case "sliding":
      return `SLIDING(${args(t.sliding, t.sliding_offset) || "?"})`;
    case "period":
      return `PERIOD(${args(t.period, t.offset) || "?"})`;
    case "session":
      return `SESSION(${args(t.ts_column, t.gap) || "?"})`;
    case "state":
      return `STATE_WINDOW(${s(t.expr) || "?"})${trueFor}`;
    case "event":
      return `EVENT_WINDOW start ${s(t.start) || "?"} / end ${s(t.end) || "?"}${trueFor}`;
    case "count":
      return `COUNT_WINDOW(${args(t.count, t.sliding, ...(Array.isArray(t.columns) ? t.columns : [t.columns])) || "?"})`;
    case "ekuiper": {
      const fn = `${s(t.function || "?").toUpperCase()}WINDOW(${args(t.unit, ...(Array.isArray(t.args) ? t.args : [t.args]))})`;
      return `${fn}${t.over_when ? ` OVER(WHEN ${s(t.over_when)})` : ""}${t.filter ? ` FILTER(WHERE ${s(t.filter)})` : ""}`;
    }
    case "none":
      return "no window: every written row";
    default:
      return s(t.type) || "no type";
  }
}

function firstLine(text: unknown, max = 60): string {
  const line = s(text).replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function nodeSummary(kind: NodeKind, v: NodeValue | null | undefined): string {
  if (!v) return "";
  switch (kind) {
    case "source": {
      const table = v.from ? `FROM ${firstLine(v.from, 40)}` : v.table ? `${v.db ? `${s(v.db)}.` : ""}${s(v.table)}` : "no trigger table";
      const parts = Array.isArray(v.partition_by) ? (v.partition_by as { sql?: string }[]).map((p) => s(p?.sql)).filter(Boolean) : [];
      return parts.length ? `${table} PARTITION BY ${parts.join(", ")}` : table;
    }
    case "prefilter":
      return firstLine(v.condition) || "no condition";
    case "trigger":
      return triggerSummary(v);
    case "options": {
      const set = Object.entries(v).filter(([, x]) => x !== null && x !== undefined && x !== false && !(Array.isArray(x) && !x.length));
      if (!set.length) return "defaults";
      return firstLine(set.map(([k, x]) => (x === true ? k.toUpperCase() : `${k.toUpperCase()} ${s(x)}`)).join(", "));
    }
    case "computation":
      return firstLine(v.query) || "no query";
    case "output": {
      const t = v.table ? `${v.db ? `${s(v.db)}.` : ""}${s(v.table)}` : "no table";
      const tags = Array.isArray(v.tags) && v.tags.length ? ` · ${v.tags.length} tag${v.tags.length > 1 ? "s" : ""}` : "";
      return `INTO ${t}${v.subtable ? ` SUBTABLE(${firstLine(v.subtable, 30)})` : ""}${tags}`;
    }
    case "notify": {
      const n = Array.isArray(v.urls) ? v.urls.length : 0;
      const ev = Array.isArray(v.events) && v.events.length ? ` ON ${(v.events as string[]).join(", ")}` : "";
      return `${n} URL${n === 1 ? "" : "s"}${ev}`;
    }
  }
}
