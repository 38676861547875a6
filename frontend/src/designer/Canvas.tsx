// The React Flow canvas. The design is the only state: nodes are derived from it, moves and
// removals are written back into it (design.layout / design.nodes) through graphToDesign.
import {
  applyNodeChanges,
  Background,
  Controls,
  MiniMap,
  Panel,
  ReactFlow,
  useReactFlow,
  useStoreApi,
  type Connection,
  type Edge,
  type NodeChange,
} from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { useCallback, useEffect, useMemo, useState, type DragEvent } from "react";
import type { Design, NodeKind } from "../api/designer";
import { NODE_TYPES } from "./DesignNode";
import { designToGraph, graphToDesign, isImpliedConnection, isNodeKind, presentKinds, type DesignFlowNode } from "./graph";
import { DRAG_MIME, TRIGGER_DRAG_PREFIX } from "./Palette";
import { layoutBounds, nodeRect, readableViewport, revealViewport, viewRect, type Rect } from "./placement";

export interface CanvasProps {
  design: Design;
  selected: NodeKind | null;
  onDesign: (d: Design) => void;
  onSelect: (k: NodeKind | null) => void;
  /** A node kind dropped from the palette (`trigger`: the trigger type chosen, when one was). */
  onDropKind: (k: NodeKind, at: { x: number; y: number } | undefined, trigger?: string) => void;
  onHint: (text: string) => void;
  /** Lays every node out again (the "Tidy" button). */
  onTidy?: () => void;
  /** Changed: fit the graph in view (readable zoom). */
  fitKey?: number;
  /** Changed: pan so that node is in view (a node added by a click). */
  reveal?: { kind: NodeKind; seq: number } | null;
}

/**
 * The viewport helpers of the canvas: the visible flow rectangle (null before it is measured), a
 * fit-view that keeps text readable (placement.readableViewport), and panning a node into view.
 */
export function useCanvasView() {
  const store = useStoreApi();
  const { getViewport, setViewport } = useReactFlow();
  const visible = useCallback((): Rect | null => {
    const { width, height } = store.getState();
    return viewRect(getViewport(), width, height);
  }, [store, getViewport]);
  const fit = useCallback(
    (d: Design) => {
      const { width, height } = store.getState();
      const b = layoutBounds(d);
      if (b && width > 0 && height > 0) void setViewport(readableViewport(b, width, height));
    },
    [store, setViewport],
  );
  const reveal = useCallback(
    (d: Design, kind: NodeKind) => {
      const { width, height } = store.getState();
      const at = d.layout?.[kind];
      const vp = getViewport();
      if (!at) return;
      const next = revealViewport(vp, width, height, nodeRect(at));
      if (next !== vp) void setViewport(next);
    },
    [store, getViewport, setViewport],
  );
  return { visible, fit, reveal };
}

type Measured = Record<string, { width: number; height: number }>;

export function Canvas({ design, selected, onDesign, onSelect, onDropKind, onHint, onTidy, fitKey = 0, reveal = null }: CanvasProps) {
  const { screenToFlowPosition } = useReactFlow();
  const view = useCanvasView();
  useEffect(() => {
    if (fitKey) requestAnimationFrame(() => view.fit(design));
    // on a new fitKey only, with the design of that moment
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [fitKey]);
  useEffect(() => {
    if (reveal) requestAnimationFrame(() => view.reveal(design, reveal.kind));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [reveal]);
  const [measured, setMeasured] = useState<Measured>({});
  const graph = useMemo(() => designToGraph(design), [design]);
  const nodes = useMemo<DesignFlowNode[]>(
    () => graph.nodes.map((n) => ({ ...n, selected: n.id === selected, measured: measured[n.id] })),
    [graph, selected, measured],
  );

  const onNodesChange = useCallback(
    (changes: NodeChange<DesignFlowNode>[]) => {
      const next = applyNodeChanges(changes, nodes);
      const dims = changes.filter((c) => c.type === "dimensions" && c.dimensions);
      if (dims.length) {
        setMeasured((m) => {
          const out = { ...m };
          for (const c of dims) if (c.type === "dimensions" && c.dimensions) out[c.id] = { width: c.dimensions.width, height: c.dimensions.height };
          return out;
        });
      }
      const picked = changes.find((c) => c.type === "select" && c.selected);
      if (picked && picked.type === "select" && isNodeKind(picked.id)) onSelect(picked.id);
      else if (changes.some((c) => c.type === "select" && !c.selected && c.id === selected)) onSelect(null);
      const moved = new Set(changes.filter((c) => c.type === "position" && c.position).map((c) => (c as { id: string }).id));
      const removed = changes.some((c) => c.type === "remove");
      if (moved.size || removed) {
        const placed = next.map((n) => (moved.has(n.id) ? { ...n, data: { ...n.data, placed: true } } : n));
        onDesign(graphToDesign({ nodes: placed, meta: graph.meta }));
        if (removed && changes.some((c) => c.type === "remove" && c.id === selected)) onSelect(null);
      }
    },
    [nodes, graph.meta, onDesign, onSelect, selected],
  );

  const kinds = useMemo(() => presentKinds(design.nodes), [design.nodes]);
  const isValidConnection = useCallback((c: Connection | Edge) => isImpliedConnection(kinds, c.source, c.target), [kinds]);
  const onConnect = useCallback(
    (c: Connection) => {
      if (!isImpliedConnection(kinds, c.source, c.target)) onHint("The order is fixed: source → pre-filter → trigger → options → computation → output, and → notification.");
    },
    [kinds, onHint],
  );

  const onDragOver = (e: DragEvent<HTMLDivElement>) => {
    if (!e.dataTransfer.types.includes(DRAG_MIME)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "move";
  };
  const onDrop = (e: DragEvent<HTMLDivElement>) => {
    const data = e.dataTransfer.getData(DRAG_MIME);
    const trigger = data.startsWith(TRIGGER_DRAG_PREFIX) ? data.slice(TRIGGER_DRAG_PREFIX.length) : undefined;
    const kind = trigger !== undefined ? "trigger" : data;
    if (!isNodeKind(kind)) return;
    e.preventDefault();
    const at = screenToFlowPosition({ x: e.clientX, y: e.clientY });
    // Without a measured viewport (not yet laid out) the position is NaN: place it automatically.
    onDropKind(kind, Number.isFinite(at.x) && Number.isFinite(at.y) ? at : undefined, trigger);
  };

  return (
    <div className="dz-canvas" data-testid="designer-canvas" onDragOver={onDragOver} onDrop={onDrop}>
      <ReactFlow<DesignFlowNode>
        nodes={nodes}
        edges={graph.edges}
        nodeTypes={NODE_TYPES}
        onNodesChange={onNodesChange}
        onConnect={onConnect}
        isValidConnection={isValidConnection}
        onPaneClick={() => onSelect(null)}
        onNodeClick={(_, n) => onSelect(n.data.kind)}
        deleteKeyCode={["Delete", "Backspace"]}
        defaultViewport={{ x: 40, y: 60, zoom: 1 }}
        minZoom={0.3}
        maxZoom={2}
        defaultEdgeOptions={{ type: "smoothstep" }}
      >
        <Background gap={16} size={1} />
        <Controls showInteractive={false} showFitView={false} />
        <Panel position="top-right" className="dz-canvas-tools">
          <button type="button" className="btn-sm" data-testid="canvas-fit" title="Show the whole stream at a readable zoom (pan for the rest)" onClick={() => view.fit(design)}>
            Fit
          </button>
          {onTidy && (
            <button type="button" className="btn-sm" data-testid="canvas-tidy" title="Lay the nodes out left to right in pipeline order, edges clear of nodes" onClick={onTidy}>
              Tidy
            </button>
          )}
        </Panel>
        <MiniMap pannable zoomable nodeStrokeWidth={2} />
      </ReactFlow>
    </div>
  );
}
