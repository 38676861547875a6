import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { backoffDelay, LiveSocket, type LiveStatus, wsUrl } from "./live";

describe("wsUrl", () => {
  it("follows the page protocol", () => {
    expect(wsUrl("/ws/inbox/", { protocol: "http:", host: "h:8000" })).toBe("ws://h:8000/ws/inbox/");
    expect(wsUrl("/ws/inbox/", { protocol: "https:", host: "h" })).toBe("wss://h/ws/inbox/");
  });
});

describe("backoffDelay", () => {
  it("doubles up to the cap", () => {
    expect([0, 1, 2, 3, 10].map((a) => backoffDelay(a, 1000, 30000))).toEqual([1000, 2000, 4000, 8000, 30000]);
  });
});

describe("LiveSocket", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("parses JSON messages, reports status and reconnects with back-off", () => {
    const msgs: unknown[] = [];
    const statuses: LiveStatus[] = [];
    const s = new LiveSocket("/ws/streams/", (m) => msgs.push(m), (st) => statuses.push(st), { minDelayMs: 100, maxDelayMs: 1000 });
    s.start();
    expect(FakeWebSocket.instances).toHaveLength(1);
    const ws1 = FakeWebSocket.instances[0];
    expect(ws1.url).toBe(`ws://${window.location.host}/ws/streams/`);
    ws1.open();
    ws1.receive({ type: "unread", count: 3 });
    expect(msgs).toEqual([{ type: "unread", count: 3 }]);
    expect(statuses).toEqual(["connecting", "live"]);

    ws1.drop();
    expect(statuses.at(-1)).toBe("reconnecting");
    vi.advanceTimersByTime(99);
    expect(FakeWebSocket.instances).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(FakeWebSocket.instances).toHaveLength(2);

    // Second failure waits twice as long.
    FakeWebSocket.instances[1].drop();
    vi.advanceTimersByTime(199);
    expect(FakeWebSocket.instances).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(FakeWebSocket.instances).toHaveLength(3);

    // A successful open resets the back-off.
    FakeWebSocket.instances[2].open();
    expect(statuses.at(-1)).toBe("live");
    FakeWebSocket.instances[2].drop();
    vi.advanceTimersByTime(100);
    expect(FakeWebSocket.instances).toHaveLength(4);
    s.close();
  });

  it("ignores malformed messages and stops reconnecting after close()", () => {
    const msgs: unknown[] = [];
    const s = new LiveSocket("/ws/inbox/", (m) => msgs.push(m), undefined, { minDelayMs: 10 });
    s.start();
    const ws = FakeWebSocket.instances[0];
    ws.open();
    ws.onmessage?.(new MessageEvent("message", { data: "not json" }));
    expect(msgs).toEqual([]);
    s.close();
    expect(ws.closedByClient).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(FakeWebSocket.instances).toHaveLength(1);
  });
});
