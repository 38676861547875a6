// Route-table fetch mock that records every request.
import { vi } from "vitest";

export interface Req {
  method: string;
  url: string;
  path: string;
  query: URLSearchParams;
  body: any;
  headers: Record<string, string>;
}

export interface Reply {
  __reply: true;
  status: number;
  body: unknown;
}

export function reply(status: number, body: unknown = null): Reply {
  return { __reply: true, status, body };
}

type Route = unknown | ((req: Req) => unknown | Promise<unknown>);

export interface FetchMock {
  calls: Req[];
  /** Add/replace routes; key "METHOD /path/" (no query string). */
  on(key: string, route: Route): void;
  callsTo(method: string, path: string): Req[];
}

function isReply(v: unknown): v is Reply {
  return !!v && typeof v === "object" && (v as Reply).__reply === true;
}

export function mockFetch(routes: Record<string, Route> = {}): FetchMock {
  const table = new Map<string, Route>(Object.entries(routes));
  const calls: Req[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.toString() : input.url;
    const u = new URL(url, "http://localhost");
    const method = (init.method ?? "GET").toUpperCase();
    const headers = { ...((init.headers as Record<string, string>) ?? {}) };
    const body = typeof init.body === "string" ? JSON.parse(init.body) : undefined;
    const req: Req = { method, url, path: u.pathname, query: u.searchParams, body, headers };
    calls.push(req);
    const route = table.get(`${method} ${u.pathname}`);
    if (route === undefined) return new Response(JSON.stringify({ detail: `no mock for ${method} ${u.pathname}` }), { status: 404 });
    let out = typeof route === "function" ? await (route as (r: Req) => unknown)(req) : route;
    if (!isReply(out)) out = reply(200, out);
    const r = out as Reply;
    if (r.status === 204 || r.body === null) return new Response(null, { status: r.status });
    return new Response(JSON.stringify(r.body), { status: r.status, headers: { "Content-Type": "application/json" } });
  });
  vi.stubGlobal("fetch", fn);
  return {
    calls,
    on: (key, route) => table.set(key, route),
    callsTo: (method, path) => calls.filter((c) => c.method === method && c.path === path),
  };
}
