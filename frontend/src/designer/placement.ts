// Where nodes go on the canvas, as pure functions: the tidy (layered) layout, the slot a node added
// by a click takes inside the visible viewport, and a fit-view that keeps text readable.
//
// The tidy layout is graph.autoLayout: one column per present node in pipeline order (trigger
// table → pre-filter → window → options → computation → output) on one row, the notification
// under the column that follows its source. Every edge then runs from a node's right handle to the
// next column's left handle, its vertical step in the gap between columns (edges clear of nodes).
import type { Design, NodeKind, XY } from "../api/designer";
import { addNode, autoLayout, CHAIN, COLUMN_GAP, presentKinds, ROW_GAP, withAutoLayout } from "./graph";

/** A node's box on the canvas (flow units): .dz-node is 210px wide + borders; height with the runtime line. */
export const NODE_W = 214;
export const NODE_H = 80;

/** Below this zoom the 11px node summaries are unreadable: fit-view stops here and the user pans. */
export const MIN_READABLE_ZOOM = 0.85;

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Viewport {
  x: number;
  y: number;
  zoom: number;
}

export function nodeRect(p: XY): Rect {
  return { x: p.x, y: p.y, width: NODE_W, height: NODE_H };
}

/** Whether two boxes share interior area (touching edges do not count); `gap` widens `a` on every side. */
export function overlaps(a: Rect, b: Rect, gap = 0): boolean {
  return a.x - gap < b.x + b.width && b.x < a.x + a.width + gap && a.y - gap < b.y + b.height && b.y < a.y + a.height + gap;
}

export function contains(outer: Rect, inner: Rect): boolean {
  return inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.width <= outer.x + outer.width && inner.y + inner.height <= outer.y + outer.height;
}

/** The flow-coordinate rectangle a viewport of `width` × `height` pixels shows; null before the canvas is measured. */
export function viewRect(vp: Viewport, width: number, height: number): Rect | null {
  if (!(width > 0 && height > 0 && vp.zoom > 0) || ![vp.x, vp.y].every(Number.isFinite)) return null;
  return { x: -vp.x / vp.zoom, y: -vp.y / vp.zoom, width: width / vp.zoom, height: height / vp.zoom };
}

/** Whether every present node sits where the tidy layout puts it (a node without a position counts as tidy). */
export function isTidy(d: Design): boolean {
  const kinds = presentKinds(d.nodes);
  const auto = autoLayout(kinds);
  const lay = d.layout ?? {};
  return kinds.every((k) => !lay[k] || (lay[k].x === auto[k]?.x && lay[k].y === auto[k]?.y));
}

/** The present node a new `kind` follows in pipeline order (notify: the node its edge comes from). */
function predecessor(kinds: NodeKind[], kind: NodeKind): NodeKind | undefined {
  if (kind === "notify") return (["computation", "trigger"] as NodeKind[]).find((k) => kinds.includes(k)) ?? CHAIN.filter((k) => kinds.includes(k)).at(-1);
  const before = CHAIN.slice(0, CHAIN.indexOf(kind));
  return before.filter((k) => kinds.includes(k)).at(-1);
}

/** Candidate slots, best first: right of the predecessor (notify: below-right), then a grid over the view. */
function candidates(d: Design, kind: NodeKind, view: Rect): XY[] {
  const kinds = presentKinds(d.nodes).filter((k) => k !== kind);
  const pred = predecessor(kinds, kind);
  const at = pred ? d.layout?.[pred] : undefined;
  const out: XY[] = [];
  if (at) {
    const dy0 = kind === "notify" ? ROW_GAP : 0;
    for (let i = 0; i < 4; i++) out.push({ x: at.x + COLUMN_GAP, y: at.y + dy0 + i * ROW_GAP });
  }
  const margin = 24;
  for (let y = view.y + margin; y + NODE_H <= view.y + view.height; y += ROW_GAP / 2) {
    for (let x = view.x + margin; x + NODE_W <= view.x + view.width; x += COLUMN_GAP / 2) out.push({ x, y });
  }
  return out;
}

/**
 * The slot of a node of `kind` added by a click: the first candidate wholly inside `view` that
 * overlaps no present node (24 flow units apart); the view's top-left corner when none is free.
 */
export function placeInView(d: Design, kind: NodeKind, view: Rect): XY {
  const others = presentKinds(d.nodes)
    .filter((k) => k !== kind && d.layout?.[k])
    .map((k) => nodeRect(d.layout![k]));
  const free = candidates(d, kind, view).find((p) => contains(view, nodeRect(p)) && !others.some((o) => overlaps(nodeRect(p), o, 24)));
  const p = free ?? { x: view.x + 24, y: view.y + 24 };
  return { x: Math.round(p.x), y: Math.round(p.y) };
}

/**
 * The design with a node of `kind` added by a click. A tidy design stays tidy (every node takes
 * its layered slot; the caller pans to show the new node); otherwise the node takes a free slot
 * inside `view` (null: the canvas is not measured, the automatic slot).
 */
export function addNodeByClick(d: Design, kind: NodeKind, view: Rect | null): Design {
  if (d.nodes[kind] !== undefined && d.nodes[kind] !== null) return d;
  if (isTidy(d)) return withAutoLayout(addNode(d, kind, { x: 0, y: 0 }));
  return addNode(d, kind, view ? placeInView(d, kind, view) : undefined);
}

/** The bounding box of the present nodes' positions (null when none). */
export function layoutBounds(d: Design): Rect | null {
  const ps = presentKinds(d.nodes)
    .map((k) => d.layout?.[k])
    .filter((p): p is XY => !!p);
  if (!ps.length) return null;
  const x = Math.min(...ps.map((p) => p.x));
  const y = Math.min(...ps.map((p) => p.y));
  return { x, y, width: Math.max(...ps.map((p) => p.x)) + NODE_W - x, height: Math.max(...ps.map((p) => p.y)) + NODE_H - y };
}

/**
 * Fit-view that keeps text readable: the zoom that fits `bounds` in `width` × `height` pixels
 * (`padding` px around), clamped to [minZoom, maxZoom]; on an axis where the graph is still larger
 * than the view, the view shows its start (left / top: the trigger table) and the user pans.
 */
export function readableViewport(bounds: Rect, width: number, height: number, padding = 30, minZoom = MIN_READABLE_ZOOM, maxZoom = 1): Viewport {
  const fit = Math.min((width - 2 * padding) / bounds.width, (height - 2 * padding) / bounds.height);
  const zoom = Math.min(maxZoom, Math.max(minZoom, Number.isFinite(fit) ? fit : maxZoom));
  const axis = (start: number, size: number, room: number) => (size * zoom <= room - 2 * padding ? (room - size * zoom) / 2 - start * zoom : padding - start * zoom);
  return { x: axis(bounds.x, bounds.width, width), y: axis(bounds.y, bounds.height, height), zoom };
}

/** The viewport moved (same zoom) just enough that `r` is inside it with `margin` px; `vp` when already so. */
export function revealViewport(vp: Viewport, width: number, height: number, r: Rect, margin = 24): Viewport {
  const view = viewRect(vp, width, height);
  if (!view) return vp;
  const m = margin / vp.zoom;
  const shift = (start: number, size: number, vStart: number, vSize: number) => {
    if (size + 2 * m > vSize || start - m < vStart) return vStart - (start - m);
    if (start + size + m > vStart + vSize) return vStart + vSize - (start + size + m);
    return 0;
  };
  const dx = shift(r.x, r.width, view.x, view.width);
  const dy = shift(r.y, r.height, view.y, view.height);
  return dx || dy ? { x: vp.x + dx * vp.zoom, y: vp.y + dy * vp.zoom, zoom: vp.zoom } : vp;
}
