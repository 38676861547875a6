// What Django tells the bundle through #root's data-* attributes.
import { createContext, useContext } from "react";

export type PageName = "dashboard" | "streams" | "stream" | "create" | "designer" | "tables" | "inbox";

export const PAGES: PageName[] = ["dashboard", "streams", "stream", "create", "designer", "tables", "inbox"];

export interface PageContext {
  page: PageName | string;
  streamId: number | null;
  /** The draft the designer opens (data-draft-id), or null for a new design. */
  draftId: number | null;
  username: string;
  isStaff: boolean;
  csrf: string;
}

export function readPageContext(el: HTMLElement): PageContext {
  const d = el.dataset;
  const id = d.streamId ? Number.parseInt(d.streamId, 10) : NaN;
  return {
    page: (d.page ?? "streams").trim() || "streams",
    streamId: Number.isFinite(id) ? id : null,
    draftId: d.draftId && Number.isFinite(Number.parseInt(d.draftId, 10)) ? Number.parseInt(d.draftId, 10) : null,
    username: d.username ?? "",
    isStaff: d.isStaff === "true",
    csrf: d.csrf ?? "",
  };
}

export const PageCtx = createContext<PageContext>({
  page: "streams",
  streamId: null,
  draftId: null,
  username: "",
  isStaff: false,
  csrf: "",
});

export function usePage(): PageContext {
  return useContext(PageCtx);
}

/** Page URLs served by Django. */
export const urls = {
  /** The streams list, optionally filtered (?status=&db=&search=). */
  streams: (f: { status?: string; db?: string; search?: string } = {}) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
    const s = q.toString();
    return `/${s ? `?${s}` : ""}`;
  },
  stream: (id: number) => `/streams/${id}/`,
  /** The stream page with its "Why no output?" panel open. */
  streamWhy: (id: number) => `/streams/${id}/#why`,
  create: () => "/streams/new/",
  dashboard: () => "/dashboard/",
  designer: (draftId?: number | null) => (draftId ? `/designer/${draftId}/` : "/designer/"),
  tables: (db?: string, table?: string) => {
    const q = new URLSearchParams();
    if (db) q.set("db", db);
    if (table) q.set("table", table);
    const s = q.toString();
    return `/tables/${s ? `?${s}` : ""}`;
  },
  inbox: () => "/inbox/",
  logout: () => "/accounts/logout/",
};

/** Full-page navigation (pages are separate Django views). */
export const nav = {
  go(url: string): void {
    window.location.assign(url);
  },
};
