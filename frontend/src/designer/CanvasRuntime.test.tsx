import "./testSetup";
import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { CatalogTable } from "../api/designer";
import type { Progress } from "../api/types";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { mockFetch } from "../test/mockFetch";
import { renderPage } from "../test/render";
import { applyProgress, initialRuntime, runtimeByNode } from "./runtime";
import { GENERATED_SUBTABLE, pickerEntries } from "./tablePicker";
import { EXAMPLE } from "./testFixtures";

const md5ish = (i: number) => `t_${i.toString(16).padStart(32, "0")}`;

function tbl(name: string, kind: string, stable: string | null = null): CatalogTable {
  return { name, kind, stable, columns: [{ name: "ts", type: "TIMESTAMP" }], tags: [] };
}

/** The demo-like database: 2 supertables, a normal table, 3 station subtables, 90 hashed output subtables. */
const TABLES: CatalogTable[] = [
  tbl("quality", "supertable"),
  tbl("pollution_episodes", "supertable"),
  tbl("notes", "normal"),
  ...["d1001", "d1002", "d1003"].map((n) => tbl(n, "subtable", "quality")),
  ...Array.from({ length: 90 }, (_, i) => tbl(md5ish(i + 1), "subtable", "pollution_episodes")),
];

function progress(batch: number, over: Partial<Progress> = {}): Progress {
  return {
    batch_id: batch,
    created_at: "2026-01-01T00:00:00Z",
    phase: "live",
    input_rows: 0,
    output_rows: 0,
    removed_windows: 0,
    rows_per_s: 0,
    duration_ms: 10,
    open_windows: 0,
    state_bytes: 0,
    watermark_ms: null,
    max_event_ms: null,
    notifications_sent: 0,
    notifications_failed: 0,
    expired_rows: 0,
    recalculated: 0,
    ...over,
  };
}

describe("trigger-table picker", () => {
  const pool = TABLES.map((t) => ({ db: "air", t }));

  it("lists supertables then normal tables, and no subtable until asked", () => {
    const shown = pickerEntries(pool, { showSubtables: false, search: "" }, false);
    expect(shown.map((e) => e.value)).toEqual(["pollution_episodes", "quality", "notes"]);
  });

  it("with subtables: the named ones before the generated output subtables", () => {
    const shown = pickerEntries(pool, { showSubtables: true, search: "" }, false).map((e) => e.value);
    expect(shown).toHaveLength(TABLES.length);
    const firstGenerated = shown.findIndex((n) => GENERATED_SUBTABLE.test(n));
    expect(shown.slice(firstGenerated).every((n) => GENERATED_SUBTABLE.test(n))).toBe(true);
    expect(shown.slice(3, firstGenerated)).toEqual(["d1001", "d1002", "d1003"]);
  });

  it("searches db.table, case-insensitively; db.table values while no database is chosen", () => {
    const two = [...pool, { db: "plant", t: tbl("Quality_lab", "normal") }];
    expect(pickerEntries(two, { showSubtables: false, search: "QUAL" }, true).map((e) => e.value)).toEqual(["air.quality", "plant.Quality_lab"]);
    expect(pickerEntries(two, { showSubtables: true, search: "d100" }, false).map((e) => e.label)).toEqual([
      "d1001 (subtable of quality)",
      "d1002 (subtable of quality)",
      "d1003 (subtable of quality)",
    ]);
  });

  it("in the properties panel: a short list, a toggle and a search box", async () => {
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/designer/catalog/": { databases: [{ name: "air", tables: TABLES }], functions: [], placeholders: {} },
      "GET /api/v1/designer/templates/": [],
      "POST /api/v1/designer/validate/": { valid: true, issues: [], sql: { "3.3.7": null, legacy: null }, not_expressible: {}, placeholders: [] },
      "GET /api/v1/designer/drafts/5/": { id: 5, name: "s", design: { ...EXAMPLE, nodes: { source: { db: "air", table: null, partition_by: [] } } }, stream_id: null },
    });
    renderPage("designer", { draftId: 5 });
    fireEvent.click(await screen.findByTestId("node-source"));
    const panel = await screen.findByTestId("props-source");
    const select = () => panel.querySelector<HTMLSelectElement>("select[name=table]")!;
    await waitFor(() => expect(select().options.length).toBe(4)); // (none) + 3
    fireEvent.click(within(panel).getByRole("checkbox", { name: /show subtables \(93\)/ }));
    expect(select().options.length).toBe(1 + TABLES.length);
    fireEvent.change(within(panel).getByRole("searchbox", { name: "Search tables" }), { target: { value: "d100" } });
    expect([...select().options].map((o) => o.value)).toEqual(["", "d1001", "d1002", "d1003"]);
  });
});

describe("runtime state on the canvas", () => {
  it("counts from the stream's counters plus live batches; a repeated batch is not counted twice", () => {
    let s = initialRuntime("running", { rows_in: 700, windows_out: 40, notifications_sent: 40, notifications_failed: 0 }, progress(7));
    s = applyProgress(s, progress(8, { input_rows: 250, output_rows: 5, open_windows: 3, notifications_sent: 4, notifications_failed: 1 }));
    s = applyProgress(s, progress(8, { input_rows: 250, output_rows: 5, open_windows: 3, notifications_sent: 4, notifications_failed: 1 }));
    s = applyProgress(s, progress(6, { input_rows: 999 })); // older than the newest: ignored
    const rt = runtimeByNode(s);
    expect(rt.source).toMatchObject({ dot: "ok", text: "950 rows in" });
    expect(rt.trigger).toMatchObject({ dot: "ok", text: "3 open · 45 results" });
    expect(rt.output).toMatchObject({ dot: "ok", text: "45 rows written" });
    expect(rt.notify).toMatchObject({ dot: "bad", text: "44 sent · 1 failed" });
    // an idle batch: grey dots, the notification stays red until a batch notifies without failures
    s = applyProgress(s, progress(9));
    expect(runtimeByNode(s).source!.dot).toBe("idle");
    expect(runtimeByNode(s).notify!.dot).toBe("bad");
    s = applyProgress(s, progress(10, { notifications_sent: 2 }));
    expect(runtimeByNode(s).notify!.dot).toBe("ok");
    expect(runtimeByNode({ ...s, status: "failed" }).output!.dot).toBe("bad");
    expect(runtimeByNode(null)).toEqual({});
  });

  it("a deployed stream's nodes show status dots and counts from stream.progress messages", async () => {
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/designer/catalog/": { databases: [], functions: [], placeholders: {} },
      "GET /api/v1/designer/templates/": [],
      "POST /api/v1/designer/validate/": { valid: true, issues: [], sql: { "3.3.7": null, legacy: null }, not_expressible: {}, placeholders: [] },
      "GET /api/v1/designer/drafts/5/": { id: 5, name: "s", design: EXAMPLE, stream_id: 9 },
      "GET /api/v1/streams/9/": {
        id: 9,
        name: "pollution_episodes",
        status: "running",
        counters: { rows_in: 100, windows_out: 2, notifications_sent: 2, notifications_failed: 0 },
        last_progress: progress(3, { open_windows: 1 }),
      },
    });
    renderPage("designer", { draftId: 5 });
    await waitFor(() => expect(screen.getByTestId("status-source")).toHaveTextContent("100 rows in"));
    expect(screen.getByTestId("status-trigger")).toHaveTextContent("1 open · 2 results");
    const ws = FakeWebSocket.find("/ws/streams/9/")!;
    expect(ws).toBeDefined();
    act(() => {
      ws.open();
      ws.receive({ type: "stream.progress", stream_id: 9, progress: progress(4, { input_rows: 20, output_rows: 1, open_windows: 2, notifications_sent: 0, notifications_failed: 3 }) });
    });
    expect(screen.getByTestId("status-source")).toHaveTextContent("120 rows in");
    expect(screen.getByTestId("status-output")).toHaveTextContent("3 rows written");
    expect(screen.getByTestId("status-notify")).toHaveTextContent("2 sent · 3 failed");
    expect(screen.getByTestId("dot-notify")).toHaveAttribute("data-dot", "bad");
    expect(screen.getByTestId("dot-source")).toHaveAttribute("data-dot", "ok");
    // nodes without a runtime count show none
    expect(screen.queryByTestId("status-options")).toBeNull();
  });

  it("an undeployed design shows no runtime line and opens no stream socket", async () => {
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/designer/catalog/": { databases: [], functions: [], placeholders: {} },
      "GET /api/v1/designer/templates/": [],
      "POST /api/v1/designer/validate/": { valid: true, issues: [], sql: { "3.3.7": null, legacy: null }, not_expressible: {}, placeholders: [] },
      "GET /api/v1/designer/drafts/5/": { id: 5, name: "s", design: EXAMPLE, stream_id: null },
    });
    renderPage("designer", { draftId: 5 });
    await screen.findByTestId("node-source");
    expect(screen.queryByTestId("status-source")).toBeNull();
    expect(FakeWebSocket.find("/ws/streams/")).toBeUndefined();
  });
});

describe("canvas tools", () => {
  it("Tidy lays a hand-arranged design out left to right again", async () => {
    const messy = { ...EXAMPLE, layout: { source: { x: 600, y: 300 }, trigger: { x: 0, y: 0 }, output: { x: 10, y: 20 } } };
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/designer/catalog/": { databases: [], functions: [], placeholders: {} },
      "GET /api/v1/designer/templates/": [],
      "POST /api/v1/designer/validate/": { valid: true, issues: [], sql: { "3.3.7": null, legacy: null }, not_expressible: {}, placeholders: [] },
      "GET /api/v1/designer/drafts/5/": { id: 5, name: "s", design: messy, stream_id: null },
    });
    renderPage("designer", { draftId: 5 });
    await screen.findByTestId("node-source");
    const x = (kind: string) => {
      const el = screen.getByTestId(`node-${kind}`).closest<HTMLElement>(".react-flow__node")!;
      const m = /translate\((-?[\d.]+)px, ?(-?[\d.]+)px\)/.exec(el.style.transform)!;
      return { x: Number(m[1]), y: Number(m[2]) };
    };
    expect(x("source").x).toBeGreaterThan(x("trigger").x);
    fireEvent.click(screen.getByTestId("canvas-tidy"));
    const order = ["source", "prefilter", "trigger", "options", "computation", "output"];
    const xs = order.map((k) => x(k).x);
    expect([...xs].sort((a, b) => a - b)).toEqual(xs);
    expect(new Set(xs).size).toBe(order.length);
    expect(order.every((k) => x(k).y === 0)).toBe(true);
    expect(x("notify").y).toBeGreaterThan(0);
  });
});
