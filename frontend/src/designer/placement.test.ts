import { getSmoothStepPath, Position } from "@xyflow/react";
import { describe, expect, it } from "vitest";
import type { Design, NodeKind, XY } from "../api/designer";
import { autoLayout, impliedEdges, NODE_KINDS, newDesign, presentKinds, withAutoLayout } from "./graph";
import { addNodeByClick, contains, isTidy, MIN_READABLE_ZOOM, NODE_H, NODE_W, nodeRect, overlaps, placeInView, readableViewport, revealViewport, viewRect, type Rect } from "./placement";
import { EXAMPLE } from "./testFixtures";

/** Every subset of the node kinds (2^7). */
function subsets(): NodeKind[][] {
  const out: NodeKind[][] = [];
  for (let m = 1; m < 1 << NODE_KINDS.length; m++) out.push(NODE_KINDS.filter((_, i) => m & (1 << i)));
  return out;
}

/** The polyline of React Flow's own smoothstep path between a right source handle and a left target handle. */
function edgePoints(a: XY, b: XY): XY[] {
  const [path] = getSmoothStepPath({
    sourceX: a.x + NODE_W,
    sourceY: a.y + NODE_H / 2,
    sourcePosition: Position.Right,
    targetX: b.x,
    targetY: b.y + NODE_H / 2,
    targetPosition: Position.Left,
  });
  const nums = (path.match(/-?\d+(\.\d+)?/g) ?? []).map(Number);
  const pts: XY[] = [];
  for (let i = 0; i + 1 < nums.length; i += 2) pts.push({ x: nums[i], y: nums[i + 1] });
  return pts;
}

/** Whether the segment p→q passes through the inside of `r` (sampled every 0.5 units; r shrunk by 1). */
function crosses(p: XY, q: XY, r: Rect): boolean {
  const n = Math.max(1, Math.ceil(Math.hypot(q.x - p.x, q.y - p.y) * 2));
  for (let i = 0; i <= n; i++) {
    const x = p.x + ((q.x - p.x) * i) / n;
    const y = p.y + ((q.y - p.y) * i) / n;
    if (x > r.x + 1 && x < r.x + r.width - 1 && y > r.y + 1 && y < r.y + r.height - 1) return true;
  }
  return false;
}

function design(kinds: NodeKind[], layout: Record<string, XY> = {}): Design {
  const nodes: Record<string, unknown> = {};
  for (const k of kinds) nodes[k] = EXAMPLE.nodes[k];
  return { ...newDesign(), nodes: nodes as Design["nodes"], layout };
}

describe("tidy layout", () => {
  it("for every set of nodes: no two boxes overlap, the chain runs left to right, and no edge crosses a node", () => {
    for (const kinds of subsets()) {
      const pos = autoLayout(kinds);
      const boxes = kinds.map((k) => ({ k, r: nodeRect(pos[k]!) }));
      for (const a of boxes) for (const b of boxes) if (a.k !== b.k) expect(overlaps(a.r, b.r, 20), `${a.k}/${b.k} in ${kinds}`).toBe(false);
      for (const e of impliedEdges(kinds)) {
        const s = pos[e.source as NodeKind]!;
        const t = pos[e.target as NodeKind]!;
        expect(t.x, `${e.id} goes right`).toBeGreaterThan(s.x + NODE_W);
        const pts = edgePoints(s, t);
        expect(pts.length).toBeGreaterThan(1);
        for (const b of boxes)
          for (let i = 1; i < pts.length; i++) expect(crosses(pts[i - 1], pts[i], b.r), `${e.id} crosses ${b.k} in ${kinds}`).toBe(false);
      }
    }
  });

  it("a hand-made layout that stacks nodes makes an edge cross a node (the check can fail)", () => {
    const pos = { source: { x: 0, y: 0 }, trigger: { x: 500, y: 0 }, options: { x: 250, y: 0 } };
    const pts = edgePoints(pos.source, pos.trigger);
    expect(pts.slice(1).some((q, i) => crosses(pts[i], q, nodeRect(pos.options)))).toBe(true);
  });

  it("isTidy: the automatic layout is tidy, a moved node is not", () => {
    const d = withAutoLayout(design(["source", "trigger", "output"]));
    expect(isTidy(d)).toBe(true);
    expect(isTidy({ ...d, layout: { ...d.layout, trigger: { x: 7, y: 300 } } })).toBe(false);
  });
});

describe("nodes added by a click", () => {
  it("a tidy design stays tidy: a node added in the middle takes its column and later nodes move right", () => {
    const d = withAutoLayout(design(["source", "trigger", "computation", "output"]));
    const next = addNodeByClick(d, "options", { x: -1000, y: -1000, width: 300, height: 200 });
    expect(isTidy(next)).toBe(true);
    const xs = ["source", "trigger", "options", "computation", "output"].map((k) => next.layout![k].x);
    expect([...xs].sort((a, b) => a - b)).toEqual(xs);
    expect(new Set(xs).size).toBe(5);
  });

  it("lands inside the visible viewport, on no other node, when the design was arranged by hand", () => {
    const d = design(["source", "trigger"], { source: { x: 0, y: 0 }, trigger: { x: 40, y: 400 } });
    const view = viewRect({ x: -2000, y: -1500, zoom: 1 }, 900, 500)!; // the user panned far away
    expect(view).toEqual({ x: 2000, y: 1500, width: 900, height: 500 });
    const at = placeInView(d, "computation", view);
    expect(contains(view, nodeRect(at))).toBe(true);
    const next = addNodeByClick(d, "computation", view);
    expect(next.layout!.computation).toEqual(at);
    expect(presentKinds(next.nodes)).toContain("computation");
  });

  it("prefers the slot right of its predecessor when that is in view and free", () => {
    const d = design(["source", "trigger"], { source: { x: 0, y: 0 }, trigger: { x: 40, y: 400 } });
    const view = { x: -50, y: -50, width: 1200, height: 800 };
    const at = placeInView(d, "computation", view);
    expect(at).toEqual({ x: 40 + 250, y: 400 });
    // the slot is taken: the next free one, still in view, on no node
    const busy = design(["source", "trigger", "output"], { source: { x: 0, y: 0 }, trigger: { x: 40, y: 400 }, output: { x: 290, y: 400 } });
    const at2 = placeInView(busy, "computation", view);
    expect(contains(view, nodeRect(at2))).toBe(true);
    for (const k of ["source", "trigger", "output"]) expect(overlaps(nodeRect(at2), nodeRect(busy.layout![k]))).toBe(false);
  });
});

describe("fit view", () => {
  const six = layoutOf(["source", "trigger", "options", "computation", "output", "notify"]);

  function layoutOf(kinds: NodeKind[]): Rect {
    const pos = Object.values(autoLayout(kinds)) as XY[];
    const x = Math.min(...pos.map((p) => p.x));
    const y = Math.min(...pos.map((p) => p.y));
    return { x, y, width: Math.max(...pos.map((p) => p.x)) + NODE_W - x, height: Math.max(...pos.map((p) => p.y)) + NODE_H - y };
  }

  it("a 6-node stream on an 800px canvas stays readable and shows its start (the trigger table)", () => {
    const vp = readableViewport(six, 800, 500);
    // the plain fit would be (800 - 60) / width ≈ 0.6: 11px text at 6.7px
    expect((800 - 60) / six.width).toBeLessThan(MIN_READABLE_ZOOM);
    expect(vp.zoom).toBe(MIN_READABLE_ZOOM);
    const view = viewRect(vp, 800, 500)!;
    expect(contains(view, nodeRect({ x: six.x, y: six.y }))).toBe(true);
  });

  it("a small graph is centred, never zoomed past 1", () => {
    const small = layoutOf(["source", "trigger"]);
    const vp = readableViewport(small, 1200, 600);
    expect(vp.zoom).toBe(1);
    const view = viewRect(vp, 1200, 600)!;
    expect(view.x + view.width / 2).toBeCloseTo(small.x + small.width / 2);
  });

  it("revealViewport pans just enough to show a node", () => {
    const vp = { x: 0, y: 0, zoom: 1 };
    const r = nodeRect({ x: 1000, y: 100 });
    const moved = revealViewport(vp, 800, 500, r);
    expect(contains(viewRect(moved, 800, 500)!, r)).toBe(true);
    expect(revealViewport(vp, 800, 500, nodeRect({ x: 100, y: 100 }))).toBe(vp);
  });
});
