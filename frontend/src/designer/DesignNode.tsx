// The custom React Flow node: kind, one-line summary, error badge (count; messages as tooltip),
// and for a deployed stream a status dot with live counts (runtime.ts).
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import { useDesignerView } from "./context";
import { KIND_LABEL, nodeSummary, type DesignFlowNode } from "./graph";

export const DesignNode = memo(function DesignNode({ data, selected }: NodeProps<DesignFlowNode>) {
  const { issuesByNode, runtime } = useDesignerView();
  const rt = runtime?.[data.kind];
  const issues = issuesByNode[data.kind] ?? [];
  const summary = nodeSummary(data.kind, data.value);
  const tip = issues.map((i) => (i.field ? `${i.field}: ${i.message}` : i.message)).join("\n");
  return (
    <div
      className={`dz-node dz-node-${data.kind}${selected ? " selected" : ""}${issues.length ? " has-issues" : ""}`}
      data-testid={`node-${data.kind}`}
      title={tip || undefined}
    >
      {data.kind !== "source" && <Handle type="target" position={Position.Left} />}
      <div className="dz-node-kind">
        {KIND_LABEL[data.kind]}
        {issues.length > 0 && (
          <span className="dz-node-badge" data-testid={`node-issues-${data.kind}`} title={tip} aria-label={`${issues.length} problems`}>
            {issues.length}
          </span>
        )}
      </div>
      <div className="dz-node-summary mono" data-testid={`summary-${data.kind}`} title={summary}>
        {summary || "\u00a0"}
      </div>
      {rt && (
        <div className="dz-node-status small" data-testid={`status-${data.kind}`} title={rt.title}>
          <span className={`dz-dot dz-dot-${rt.dot}`} data-testid={`dot-${data.kind}`} data-dot={rt.dot} aria-label={`status: ${rt.dot}`} />
          {rt.text}
        </div>
      )}
      {data.kind !== "notify" && data.kind !== "output" && <Handle type="source" position={Position.Right} />}
    </div>
  );
});

export const NODE_TYPES = { design: DesignNode };
