// Node palette: drag a kind onto the canvas, or click (Enter) to add it next to the others; the
// trigger types below add the trigger node with that type (or change the present trigger's type).
import type { DragEvent } from "react";
import type { NodeKind } from "../api/designer";
import type { StreamSyntax } from "../api/types";
import { TRIGGER_CHOICES } from "./fields";
import { KIND_HELP, KIND_LABEL, NODE_KINDS } from "./graph";

export const DRAG_MIME = "application/tdweb-node";

/** The drag data of a trigger type item: `trigger:<choice>` (a TRIGGER_CHOICES value). */
export const TRIGGER_DRAG_PREFIX = "trigger:";

export function Palette({
  present,
  onAdd,
  syntax = "3.3.7",
  onAddTrigger,
}: {
  present: Set<NodeKind>;
  onAdd: (kind: NodeKind) => void;
  syntax?: StreamSyntax;
  onAddTrigger?: (choice: string) => void;
}) {
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
      {onAddTrigger && (
        <>
          <h2>Triggers</h2>
          {TRIGGER_CHOICES.map((c) => {
            const other = c.syntax !== undefined && c.syntax !== syntax;
            return (
              <div
                key={c.value}
                role="button"
                tabIndex={0}
                className={`dz-palette-item dz-kind-trigger dz-palette-trigger${other ? " dz-other-syntax" : ""}`}
                data-testid={`palette-trigger-${c.value}`}
                draggable
                title={`${c.label}${c.syntax ? ` (${c.syntax} syntax)` : ""}: adds the trigger node with this type, or changes its type`}
                onDragStart={(e: DragEvent<HTMLDivElement>) => {
                  e.dataTransfer.setData(DRAG_MIME, TRIGGER_DRAG_PREFIX + c.value);
                  e.dataTransfer.effectAllowed = "move";
                }}
                onClick={() => onAddTrigger(c.value)}
                onKeyDown={(e) => {
                  if (e.key === "Enter" || e.key === " ") {
                    e.preventDefault();
                    onAddTrigger(c.value);
                  }
                }}
              >
                {c.label}
                {c.syntax ? <span className="muted small"> · {c.syntax}</span> : null}
              </div>
            );
          })}
        </>
      )}
    </nav>
  );
}
