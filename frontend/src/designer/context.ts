// What the canvas nodes read besides their own data: the server's issues per node.
import { createContext, useContext } from "react";
import type { DesignIssue } from "../api/designer";

export interface DesignerView {
  issuesByNode: Record<string, DesignIssue[]>;
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
