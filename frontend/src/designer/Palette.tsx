// Node palette: drag a kind onto the canvas, or click (Enter) to add it next to the others.
import type { DragEvent } from "react";
import type { NodeKind } from "../api/designer";
import { KIND_HELP, KIND_LABEL, NODE_KINDS } from "./graph";

export const DRAG_MIME = "application/tdweb-node";

export function Palette({ present, onAdd }: { present: Set<NodeKind>; onAdd: (kind: NodeKind) => void }) {
  return (
    <nav className="dz-palette" aria-label="Node palette">
      <h2>Nodes</h2>
      {NODE_KINDS.map((kind) => {
        const disabled = present.has(kind);
        const onDragStart = (e: DragEvent<HTMLDivElement>) => {
          e.dataTransfer.setData(DRAG_MIME, kind);
          e.dataTransfer.effectAllowed = "move";
        };
        return (
          <div
            key={kind}
            role="button"
            tabIndex={disabled ? -1 : 0}
            aria-disabled={disabled}
            className={`dz-palette-item dz-kind-${kind}${disabled ? " disabled" : ""}`}
            data-testid={`palette-${kind}`}
            draggable={!disabled}
            title={disabled ? `${KIND_LABEL[kind]} is already in the graph (one of each)` : `${KIND_HELP[kind]} — drag onto the canvas or click`}
            onDragStart={disabled ? undefined : onDragStart}
            onClick={() => !disabled && onAdd(kind)}
            onKeyDown={(e) => {
              if (!disabled && (e.key === "Enter" || e.key === " ")) {
                e.preventDefault();
                onAdd(kind);
              }
            }}
          >
            {KIND_LABEL[kind]}
          </div>
        );
      })}
      <p className="muted small dz-palette-note">One node of each kind; they connect left to right by themselves. Delete removes the selected node.</p>
    </nav>
  );
}
