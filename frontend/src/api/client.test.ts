import { beforeEach, describe, expect, it } from "vitest";
import { mockFetch, reply } from "../test/mockFetch";
import {
  ApiError,
  ackNotification,
  createStream,
  dropStream,
  editStream,
  getDeliveries,
  getRows,
  listNotifications,
  listStreams,
  recalculateStream,
  runSql,
  setCsrfToken,
  streamAction,
} from "./client";

describe("api client", () => {
  beforeEach(() => setCsrfToken("csrf-abc"));

  it("GETs without a CSRF header and returns JSON", async () => {
    const m = mockFetch({ "GET /api/v1/streams/": { count: 0, results: [] } });
    await expect(listStreams()).resolves.toEqual({ count: 0, next: null, previous: null, results: [] });
    expect(m.calls[0].headers["X-CSRFToken"]).toBeUndefined();
  });

  it("sends X-CSRFToken and a JSON body on POST", async () => {
    const m = mockFetch({ "POST /api/v1/streams/7/actions/": { id: 7, status: "paused" } });
    await streamAction(7, "pause");
    expect(m.calls[0].headers["X-CSRFToken"]).toBe("csrf-abc");
    expect(m.calls[0].body).toEqual({ action: "pause" });
  });

  it("sends X-CSRFToken on DELETE and accepts 204", async () => {
    const m = mockFetch({ "DELETE /api/v1/streams/3/": reply(204) });
    await expect(dropStream(3)).resolves.toBeUndefined();
    expect(m.calls[0].headers["X-CSRFToken"]).toBe("csrf-abc");
  });

  it("omits db when not chosen", async () => {
    const m = mockFetch({ "POST /api/v1/streams/": reply(201, { id: 1 }) });
    await createStream({ sql: "x" });
    await createStream({ sql: "y", db: "power" });
    expect(m.calls[0].body).toEqual({ sql: "x" });
    expect(m.calls[1].body).toEqual({ sql: "y", db: "power" });
  });

  it("turns a 400 into an ApiError carrying code, desc and position", async () => {
    mockFetch({
      "POST /api/v1/streams/": reply(400, { code: 9728, desc: "unexpected 'FROM'", position: { offset: 40, line: 1, column: 41 } }),
    });
    const err = await createStream({ sql: "bad" }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(err.code).toBe(9728);
    expect(err.desc).toBe("unexpected 'FROM'");
    expect(err.position).toEqual({ offset: 40, line: 1, column: 41 });
  });

  it("uses DRF's detail as the error text", async () => {
    mockFetch({ "POST /api/v1/notifications/5/ack/": reply(403, { detail: "You do not have permission." }) });
    await expect(ackNotification(5)).rejects.toThrow("You do not have permission.");
  });

  it("returns TDengine error answers from the SQL endpoint instead of throwing", async () => {
    mockFetch({ "POST /api/v1/sql/": reply(400, { code: 9731, desc: "Table does not exist" }) });
    await expect(runSql("select * from nope", "power")).resolves.toEqual({ code: 9731, desc: "Table does not exist" });
  });

  it("builds notification and rows query strings", async () => {
    const m = mockFetch({
      "GET /api/v1/notifications/": { count: 0, next: null, previous: null, results: [] },
      "GET /api/v1/databases/power/tables/d%201/rows/": { columns: [], types: [], rows: [] },
    });
    await listNotifications({ stream: "s1", event_type: "WINDOW_CLOSE", unacknowledgedOnly: true, limit: 50, offset: 100 });
    const q = m.calls[0].query;
    expect(q.get("stream")).toBe("s1");
    expect(q.get("event_type")).toBe("WINDOW_CLOSE");
    expect(q.get("acknowledged")).toBe("false");
    expect(q.get("limit")).toBe("50");
    expect(q.get("offset")).toBe("100");
    await getRows("power", "d 1", { start: "2024-01-01T00:00:00.000Z" });
    expect(m.calls[1].query.get("limit")).toBe("200");
    expect(m.calls[1].query.get("start")).toBe("2024-01-01T00:00:00.000Z");
    expect(m.calls[1].query.has("end")).toBe(false);
  });

  it("sends stream filters and paging, and takes a bare array as one page", async () => {
    const m = mockFetch({
      "GET /api/v1/streams/": { count: 30, next: "http://x/?offset=20", previous: null, results: [] },
      "GET /api/v1/streams/4/deliveries/": [{ id: 1 }, { id: 2 }],
    });
    const p = await listStreams({ status: "failed", db: "power", search: "avg", limit: 10, offset: 20 });
    expect(p.count).toBe(30);
    const q = m.calls[0].query;
    expect([q.get("status"), q.get("db"), q.get("search"), q.get("limit"), q.get("offset")]).toEqual(["failed", "power", "avg", "10", "20"]);
    await listStreams();
    expect(m.calls[1].url).toBe("/api/v1/streams/");
    await expect(getDeliveries(4)).resolves.toEqual({ count: 2, next: null, previous: null, results: [{ id: 1 }, { id: 2 }] });
  });

  it("sends recalculate with its range and opens a stream in the designer", async () => {
    const m = mockFetch({
      "POST /api/v1/streams/3/actions/": { id: 3, status: "running" },
      "POST /api/v1/streams/3/edit/": reply(201, { id: 42 }),
    });
    await recalculateStream(3, "2024-01-01T00:00:00.000Z", "2024-01-02T00:00:00.000Z");
    expect(m.calls[0].body).toEqual({
      action: "recalculate",
      start: "2024-01-01T00:00:00.000Z",
      end: "2024-01-02T00:00:00.000Z",
      background: false,
    });
    await expect(editStream(3)).resolves.toEqual({ id: 42 });
    expect(m.calls[1].headers["X-CSRFToken"]).toBe("csrf-abc");
  });
});
