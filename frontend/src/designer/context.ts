// What the canvas nodes read besides their own data: the server's issues per node, and the
// deployed stream's runtime state per node (runtime.ts).
import { createContext, useContext } from "react";
import type { DesignIssue, NodeKind } from "../api/designer";
import type { NodeRuntime } from "./runtime";

export interface DesignerView {
  issuesByNode: Record<string, DesignIssue[]>;
  runtime?: Partial<Record<NodeKind, NodeRuntime>>;
}

export const DesignerViewCtx = createContext<DesignerView>({ issuesByNode: {} });

export function useDesignerView(): DesignerView {
  return useContext(DesignerViewCtx);
}

/** Issues grouped by node (statement-level issues under ""). */
export function groupIssues(issues: DesignIssue[]): Record<string, DesignIssue[]> {
  const out: Record<string, DesignIssue[]> = {};
  for (const i of issues) (out[i.node ?? ""] ??= []).push(i);
  return out;
}
