import { act, render } from "@testing-library/react";
import { App } from "../App";
import { setCsrfToken } from "../api/client";
import type { PageContext } from "../page";
import { FakeWebSocket } from "./fakeWebSocket";

export function renderPage(page: string, over: Partial<PageContext> = {}) {
  const ctx: PageContext = { page, streamId: null, draftId: null, username: "alice", isStaff: false, csrf: "tok123", ...over };
  setCsrfToken(ctx.csrf);
  return render(<App ctx={ctx} />);
}

/** Opens (if needed) the socket at `path` and delivers `msg` inside act(). */
export function serverPush(path: string, msg: unknown): void {
  const ws = FakeWebSocket.find(path);
  if (!ws) throw new Error(`no socket for ${path}; have ${FakeWebSocket.instances.map((w) => w.url).join(", ")}`);
  act(() => {
    if (ws.readyState !== FakeWebSocket.OPEN) ws.open();
    ws.receive(msg);
  });
}

export function openSocket(path: string): FakeWebSocket {
  const ws = FakeWebSocket.find(path);
  if (!ws) throw new Error(`no socket for ${path}`);
  act(() => ws.open());
  return ws;
}
