import "./testSetup";
import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Design, ValidateAnswer } from "../api/designer";
import { mockFetch, reply, type Req } from "../test/mockFetch";
import { renderPage } from "../test/render";
import { NODE_KINDS } from "./graph";
import { EXAMPLE } from "./testFixtures";

function ph(name: string) {
  return { name, description: `the ${name} placeholder` };
}

const CATALOG = {
  databases: [
    {
      name: "air",
      tables: [
        { name: "quality", kind: "super", columns: [{ name: "ts", type: "TIMESTAMP" }, { name: "pm25", type: "FLOAT" }], tags: [{ name: "city", type: "VARCHAR(20)" }] },
      ],
    },
  ],
  functions: [
    { name: "avg", kind: "aggregate" },
    { name: "max", kind: "aggregate" },
  ],
  placeholders: {
    interval: [ph("_twstart"), ph("_twend"), ph("%%trows")],
    event: [ph("_twstart"), ph("%%trows")],
  },
  defaults: {
    "3.3.7": { options: { watermark: "0s", fill_history: false }, notify: { history: false, on_failure: "DROP" } },
    legacy: { options: { trigger_mode: "WINDOW_CLOSE", ignore_expired: true }, notify: { history: false, on_failure: "PAUSE" } },
  },
};

function ok(over: Partial<ValidateAnswer> = {}): ValidateAnswer {
  return {
    valid: true,
    issues: [],
    sql: { "3.3.7": "CREATE STREAM s INTERVAL(1m) SLIDING(1m) INTO o AS SELECT 1", legacy: null },
    not_expressible: { legacy: "INTERVAL without a query" },
    placeholders: [ph("_twstart"), ph("%%trows")],
    ...over,
  };
}

const TEMPLATE_DESIGN: Design = { ...JSON.parse(JSON.stringify(EXAMPLE)), name: "tpl_stream", layout: undefined };
delete (TEMPLATE_DESIGN as Partial<Design>).layout;

function setup(validate: (req: Req) => unknown = () => ok()) {
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/designer/catalog/": CATALOG,
    "GET /api/v1/designer/templates/": [{ id: "episodes", title: "Pollution episodes", description: "EVENT_WINDOW", sql: "CREATE STREAM …", design: TEMPLATE_DESIGN }],
    "GET /api/v1/me/": { username: "alice", is_staff: false, inboxes: [{ name: "alice", url: "ws://127.0.0.1:8000/ws/notify/abc" }] },
    "POST /api/v1/designer/validate/": validate,
  });
}

const validations = (m: ReturnType<typeof setup>) => m.callsTo("POST", "/api/v1/designer/validate/");

describe("DesignerPage", () => {
  it("starts with an empty canvas; a trigger added from the palette is validated and its SQL shown", async () => {
    const m = setup((req) =>
      req.body.design.nodes.trigger
        ? ok()
        : ok({ valid: false, issues: [{ node: null, field: null, message: "a stream needs a trigger", position: null }], sql: { "3.3.7": null, legacy: null }, not_expressible: {} }),
    );
    renderPage("designer");
    expect(screen.getByTestId("designer-canvas")).toBeInTheDocument();
    // the empty design is validated as is: no node at all
    await waitFor(() => expect(screen.getByTestId("issues-count")).toHaveTextContent("1 problem"));
    expect(validations(m)).toHaveLength(1);
    expect(validations(m)[0].body.design.nodes).toEqual({});
    for (const k of NODE_KINDS) expect(screen.queryByTestId(`node-${k}`)).toBeNull();
    expect(screen.getByTestId("sql-3.3.7")).not.toHaveTextContent("CREATE STREAM");
    // a trigger from the palette
    fireEvent.click(screen.getByTestId("palette-trigger"));
    expect(await screen.findByTestId("node-trigger")).toBeInTheDocument();
    expect(screen.getByTestId("palette-trigger")).toHaveAttribute("aria-disabled", "true");
    await waitFor(() => expect(screen.getByTestId("issues-count")).toHaveTextContent("valid"));
    expect(validations(m)).toHaveLength(2);
    expect(validations(m)[1].body.design.nodes.trigger.type).toBe("interval");
    expect(validations(m)[1].headers["X-CSRFToken"]).toBe("tok123");
    expect(screen.getByTestId("sql-3.3.7")).toHaveTextContent("CREATE STREAM s INTERVAL(1m)");
    expect(screen.getByTestId("sql-legacy")).toHaveTextContent("Not expressible: INTERVAL without a query");
  });

  it("adds nodes from the palette (one of each) and opens their form", async () => {
    const m = setup();
    renderPage("designer");
    await waitFor(() => expect(validations(m)).toHaveLength(1));
    fireEvent.click(screen.getByTestId("palette-trigger"));
    expect(await screen.findByTestId("node-trigger")).toBeInTheDocument();
    await waitFor(() => expect(validations(m)).toHaveLength(2));
    fireEvent.click(screen.getByTestId("palette-source"));
    expect(await screen.findByTestId("node-source")).toBeInTheDocument();
    expect(screen.getByTestId("palette-source")).toHaveAttribute("aria-disabled", "true");
    const props = screen.getByTestId("props-source");
    // database and table selects from the catalog
    await within(props).findByRole("option", { name: "air" });
    fireEvent.change(within(props).getByLabelText("Database"), { target: { value: "air" } });
    fireEvent.change(within(props).getByLabelText("Trigger table"), { target: { value: "quality" } });
    fireEvent.click(within(props).getByRole("button", { name: "+ tbname" }));
    expect(screen.getByTestId("summary-source")).toHaveTextContent("air.quality PARTITION BY tbname");
    // clicking a disabled palette item changes nothing
    fireEvent.click(screen.getByTestId("palette-source"));
    expect(screen.getAllByTestId("node-source")).toHaveLength(1);
    fireEvent.click(screen.getByTestId("palette-notify"));
    expect(await screen.findByTestId("props-notify")).toBeInTheDocument();
    await waitFor(() => {
      const last = validations(m).at(-1)!.body.design;
      expect(last.nodes.source).toEqual({ db: "air", table: "quality", partition_by: [{ sql: "tbname", alias: null }] });
      expect(last.nodes.notify.events).toEqual(["WINDOW_CLOSE"]);
      expect(Object.keys(last.layout)).toEqual(expect.arrayContaining(["trigger", "source", "notify"]));
    });
    // notify: My inbox fills the user's inbox URL
    fireEvent.click(within(screen.getByTestId("props-notify")).getByRole("button", { name: "My inbox" }));
    expect(await within(screen.getByTestId("props-notify")).findByDisplayValue("ws://127.0.0.1:8000/ws/notify/abc")).toBeInTheDocument();
  });

  it("adds a node dragged from the palette onto the canvas, and removes it", async () => {
    const m = setup();
    renderPage("designer");
    await waitFor(() => expect(validations(m)).toHaveLength(1));
    const store = new Map<string, string>();
    const dataTransfer = {
      setData: (k: string, v: string) => store.set(k, v),
      getData: (k: string) => store.get(k) ?? "",
      get types() {
        return [...store.keys()];
      },
      effectAllowed: "",
      dropEffect: "",
    };
    fireEvent.dragStart(screen.getByTestId("palette-output"), { dataTransfer });
    expect(store.get("application/tdweb-node")).toBe("output");
    const canvas = screen.getByTestId("designer-canvas");
    fireEvent.dragOver(canvas, { dataTransfer });
    fireEvent.drop(canvas, { dataTransfer, clientX: 400, clientY: 120 });
    expect(await screen.findByTestId("node-output")).toBeInTheDocument();
    const props = screen.getByTestId("props-output");
    fireEvent.change(within(props).getByLabelText("Output table"), { target: { value: "episodes" } });
    fireEvent.click(within(props).getByRole("button", { name: "+ tag" }));
    fireEvent.change(within(props).getByLabelText("Tag 1 name"), { target: { value: "city" } });
    fireEvent.change(within(props).getByLabelText("Tag 1 AS expression"), { target: { value: "%%1" } });
    await waitFor(() => {
      const d = validations(m).at(-1)!.body.design;
      expect(d.nodes.output).toMatchObject({ table: "episodes", tags: [{ name: "city", type: "VARCHAR(64)", expr: "%%1" }] });
      expect(d.layout.output).toEqual({ x: expect.any(Number), y: expect.any(Number) });
    });
    fireEvent.click(within(props).getByRole("button", { name: "Remove" }));
    await waitFor(() => expect(screen.queryByTestId("node-output")).toBeNull());
    expect(screen.getByTestId("palette-output")).toHaveAttribute("aria-disabled", "false");
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.output).toBeUndefined());
  });

  it("validates an edited field and shows the server's error on that node and field", async () => {
    const m = setup((req) =>
      req.body.design.nodes.prefilter?.condition === "pm25 >"
        ? ok({
            valid: false,
            issues: [{ node: "prefilter", field: "condition", message: "unexpected end of expression", position: { offset: 16, line: 1, column: 17 } }],
          })
        : ok(),
    );
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-trigger"));
    await screen.findByTestId("node-trigger");
    fireEvent.click(screen.getByTestId("palette-prefilter"));
    const props = await screen.findByTestId("props-prefilter");
    fireEvent.change(within(props).getByLabelText("Condition"), { target: { value: "pm25 >" } });
    await waitFor(() => expect(screen.getByTestId("error-prefilter-condition")).toHaveTextContent("unexpected end of expression"));
    expect(validations(m).at(-1)!.body.design.nodes.prefilter).toEqual({ condition: "pm25 >" });
    expect(screen.getByTestId("issues-count")).toHaveTextContent("1 problem");
    expect(screen.getByTestId("node-issues-prefilter")).toHaveTextContent("1");
    expect(screen.getByTestId("node-prefilter")).toHaveClass("has-issues");
    expect(screen.getByTestId("node-prefilter")).toHaveAttribute("title", "condition: unexpected end of expression");
    expect(screen.queryByTestId("node-issues-trigger")).toBeNull();
    // the position is marked in the rendered SQL of the design's syntax
    expect(screen.getByTestId("sql-issue-mark")).toHaveTextContent("INTERVAL");
    fireEvent.change(within(props).getByLabelText("Condition"), { target: { value: "pm25 > 1" } });
    await waitFor(() => expect(screen.queryByTestId("error-prefilter-condition")).toBeNull());
    expect(screen.getByTestId("issues-count")).toHaveTextContent("valid");
  });

  it("changes the trigger type and offers its placeholders in the computation editor", async () => {
    const m = setup((req) => ok({ placeholders: CATALOG.placeholders[req.body.design.nodes.trigger?.type as "event"] ?? [] }));
    // (placeholders come from validate; the catalog's per trigger type are the fallback)
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-trigger"));
    fireEvent.click(await screen.findByTestId("node-trigger"));
    const props = await screen.findByTestId("props-trigger");
    expect(within(props).getByLabelText("Interval")).toHaveAttribute("placeholder", "e.g. 10m");
    expect(within(props).getAllByText(/units: a b u s m h d w n y/).length).toBeGreaterThan(0);
    fireEvent.change(within(props).getByLabelText("Trigger type"), { target: { value: "event" } });
    fireEvent.change(within(props).getByLabelText("Start condition"), { target: { value: "pm25 > 150" } });
    fireEvent.change(within(props).getByLabelText("End condition"), { target: { value: "pm25 <= 75" } });
    expect(screen.getByTestId("summary-trigger")).toHaveTextContent("EVENT_WINDOW start pm25 > 150 / end pm25 <= 75");
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.trigger).toEqual({ type: "event", start: "pm25 > 150", end: "pm25 <= 75", true_for: null }));
    fireEvent.click(screen.getByTestId("palette-computation"));
    const comp = await screen.findByTestId("props-computation");
    await within(comp).findByTestId("placeholder-%%trows");
    const editor = within(comp).getByRole("textbox", { name: "Query" }) as HTMLTextAreaElement;
    fireEvent.change(editor, { target: { value: "SELECT ma" } });
    const list = await within(comp).findByTestId("suggestions");
    expect(within(list).getByText("max")).toBeInTheDocument();
    fireEvent.keyDown(editor, { key: "Tab" });
    expect(editor.value).toBe("SELECT max");
  });

  it("shows the options of the design's syntax with the server's defaults", async () => {
    const m = setup();
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-options"));
    let props = await screen.findByTestId("props-options");
    await waitFor(() => expect(within(props).getByLabelText("WATERMARK")).toBeInTheDocument());
    expect(within(props).getByLabelText("WATERMARK")).toHaveAttribute("placeholder", "e.g. 10s");
    await waitFor(() => expect(within(props).getByText(/default: 0s/)).toBeInTheDocument());
    fireEvent.change(within(props).getByLabelText("FILL_HISTORY"), { target: { value: "true" } });
    expect(within(props).queryByLabelText("TRIGGER")).toBeNull();
    // legacy: its own options (trigger_mode ...); the set 3.3.7 option stays visible to be cleared
    fireEvent.change(screen.getByLabelText("Syntax"), { target: { value: "legacy" } });
    props = screen.getByTestId("props-options");
    const mode = within(props).getByLabelText("TRIGGER");
    expect(within(mode).getByRole("option", { name: "not set (default WINDOW_CLOSE)" })).toBeInTheDocument();
    fireEvent.change(mode, { target: { value: "AT_ONCE" } });
    fireEvent.change(within(props).getByLabelText("IGNORE EXPIRED"), { target: { value: "false" } });
    expect(within(props).queryByLabelText("IGNORE_DISORDER")).toBeNull();
    await waitFor(() => {
      const d = validations(m).at(-1)!.body.design;
      expect(d.syntax).toBe("legacy");
      expect(d.nodes.options).toEqual({ fill_history: true, trigger_mode: "AT_ONCE", ignore_expired: false });
    });
  });

  it("builds the graph from pasted SQL, and shows a SQL error at its position", async () => {
    const m = setup();
    m.on("POST /api/v1/designer/compile/", (req: Req) =>
      req.body.sql.includes("SELEC ")
        ? reply(400, { code: 9728, desc: "syntax error near 'SELEC'", position: { offset: 24, line: 1, column: 25 } })
        : { design: EXAMPLE, sql: { "3.3.7": "CREATE STREAM …", legacy: null }, not_expressible: {} },
    );
    renderPage("designer");
    fireEvent.click(screen.getByRole("tab", { name: "Paste SQL" }));
    fireEvent.change(screen.getByTestId("paste-sql"), { target: { value: "CREATE STREAM x INTO o AS SELEC 1" } });
    fireEvent.click(screen.getByRole("button", { name: "Build graph" }));
    expect(await screen.findByTestId("paste-error")).toHaveTextContent("syntax error near 'SELEC'");
    expect(screen.getByTestId("error-caret")).toHaveTextContent("line 1, column 25");
    expect(screen.queryByTestId("node-notify")).toBeNull();

    fireEvent.change(screen.getByTestId("paste-sql"), { target: { value: "CREATE STREAM pollution_episodes …" } });
    fireEvent.click(screen.getByRole("button", { name: "Build graph" }));
    expect(await screen.findByTestId("node-notify")).toBeInTheDocument();
    for (const k of ["source", "prefilter", "trigger", "options", "computation", "output"]) expect(screen.getByTestId(`node-${k}`)).toBeInTheDocument();
    expect(screen.getByTestId("summary-trigger")).toHaveTextContent("EVENT_WINDOW start pm25 > 150 / end pm25 <= 75");
    expect(m.callsTo("POST", "/api/v1/designer/compile/").at(-1)!.body).toEqual({ sql: "CREATE STREAM pollution_episodes …" });
    expect(screen.getByLabelText("Stream name")).toHaveValue("pollution_episodes");
    await waitFor(() => {
      const d = validations(m).at(-1)!.body.design;
      expect({ ...d, layout: undefined }).toEqual({ ...EXAMPLE, layout: undefined });
      // laid out left to right
      expect(d.layout.source.x).toBeLessThan(d.layout.trigger.x);
      expect(d.layout.trigger.x).toBeLessThan(d.layout.output.x);
    });
  });

  it("replaces the design with a template after confirmation", async () => {
    const m = setup();
    renderPage("designer");
    const picker = screen.getByLabelText("Template");
    await within(picker).findByRole("option", { name: "Pollution episodes" });
    fireEvent.change(picker, { target: { value: "episodes" } });
    const dialog = await screen.findByRole("dialog");
    expect(dialog).toHaveTextContent("Pollution episodes");
    expect(screen.queryByTestId("node-notify")).toBeNull();
    fireEvent.click(within(dialog).getByRole("button", { name: "Replace" }));
    expect(await screen.findByTestId("node-notify")).toBeInTheDocument();
    expect(screen.getByLabelText("Stream name")).toHaveValue("tpl_stream");
    await waitFor(() => expect(validations(m).at(-1)!.body.design.name).toBe("tpl_stream"));
    // Undo brings the previous design back
    fireEvent.click(screen.getByRole("button", { name: "Undo" }));
    await waitFor(() => expect(screen.queryByTestId("node-notify")).toBeNull());
  });

  it("saves, deploys, confirms the impact on 409 and retries with confirm_impact", async () => {
    const m = setup();
    const statement = "The window state is reset and the output table is rebuilt from the start.";
    m.on("POST /api/v1/designer/drafts/", reply(201, { id: 7, name: "s1", design: EXAMPLE, stream_id: null }));
    m.on("PUT /api/v1/designer/drafts/7/", { id: 7, name: "s1", design: EXAMPLE, stream_id: null });
    m.on("POST /api/v1/designer/drafts/7/deploy/", (req: Req) =>
      req.body.confirm_impact
        ? reply(200, {
            stream: { id: 42, name: "s1", status: "running" },
            version: { number: 3, stream_id: 42, sql: "CREATE STREAM s1 …", design: EXAMPLE, created_at: "2026-01-01T00:00:00Z", created_by: "alice", impact: null },
            impact: { kind: "reset", statement },
          })
        : reply(409, { detail: "deploying this change needs confirm_impact: true", impact: { kind: "reset", statement } }),
    );
    renderPage("designer");
    fireEvent.change(screen.getByLabelText("Stream name"), { target: { value: "s1" } });
    await waitFor(() => expect(screen.getByTestId("deploy")).toBeEnabled()); // once validated
    fireEvent.click(screen.getByTestId("deploy"));
    const dialog = await screen.findByRole("dialog");
    expect(within(dialog).getByTestId("impact-statement")).toHaveTextContent(statement);
    expect(m.callsTo("POST", "/api/v1/designer/drafts/")[0].body).toMatchObject({ name: "s1", design: { name: "s1" } });
    expect(m.callsTo("POST", "/api/v1/designer/drafts/7/deploy/")[0].body).toEqual({});
    fireEvent.click(within(dialog).getByRole("button", { name: "Deploy anyway" }));
    const done = await screen.findByTestId("deployed");
    expect(done).toHaveTextContent(statement);
    expect(done).toHaveTextContent("version 3");
    expect(within(done).getByRole("link", { name: /Open the stream/ })).toHaveAttribute("href", "/streams/42/");
    const deploys = m.callsTo("POST", "/api/v1/designer/drafts/7/deploy/");
    expect(deploys).toHaveLength(2);
    expect(deploys[1].body).toEqual({ confirm_impact: true });
    expect(m.callsTo("POST", "/api/v1/designer/drafts/")).toHaveLength(1);
    expect(window.location.pathname).toBe("/designer/7/");
    // validation now runs against the deployed stream
    await waitFor(() => expect(validations(m).at(-1)!.body.stream_id).toBe(42));
    expect(screen.getByRole("tab", { name: "Versions" })).toBeInTheDocument();
  });

  it("ignores validation answers to older designs", async () => {
    const pending: { name: string; resolve: (v: unknown) => void }[] = [];
    const m = setup(
      (req) =>
        new Promise((resolve) => {
          pending.push({ name: req.body.design.name, resolve });
        }),
    );
    renderPage("designer");
    await waitFor(() => expect(pending).toHaveLength(1));
    await act(async () => pending[0].resolve(ok()));
    fireEvent.click(screen.getByTestId("palette-trigger"));
    expect(await screen.findByTestId("node-trigger")).toBeInTheDocument();
    await waitFor(() => expect(pending).toHaveLength(2));
    await act(async () => pending[1].resolve(ok()));
    fireEvent.change(screen.getByLabelText("Stream name"), { target: { value: "first" } });
    await waitFor(() => expect(pending).toHaveLength(3));
    fireEvent.change(screen.getByLabelText("Stream name"), { target: { value: "second" } });
    await waitFor(() => expect(pending).toHaveLength(4));
    expect(pending.map((p) => p.name)).toEqual(["", "", "first", "second"]);
    // the newer answer arrives first, the older one after it
    await act(async () =>
      pending[3].resolve(ok({ valid: false, issues: [{ node: "trigger", field: "interval", message: "newest", position: null }] })),
    );
    await waitFor(() => expect(screen.getByTestId("issues-count")).toHaveTextContent("1 problem"));
    await act(async () => pending[2].resolve(ok({ sql: { "3.3.7": "STALE", legacy: null } })));
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.getByTestId("issues-count")).toHaveTextContent("1 problem");
    expect(screen.getByTestId("sql-3.3.7")).not.toHaveTextContent("STALE");
    expect(screen.getByTestId("node-issues-trigger")).toHaveTextContent("1");
    expect(validations(m)).toHaveLength(4);
  });

  it("opens a draft, previews it and shows the versions of its stream", async () => {
    const m = setup();
    m.on("GET /api/v1/designer/drafts/5/", { id: 5, name: "pollution_episodes", design: EXAMPLE, stream_id: 9 });
    m.on("POST /api/v1/designer/preview/", {
      windows: [
        { group: "d1001", start: 1000, end: 61000, event: "WINDOW_CLOSE", trigger_id: "t1" },
        { group: "d1002", start: 5000, end: null, event: "WINDOW_OPEN", trigger_id: "t2" },
      ],
      rows: {
        columns: [
          { name: "wstart", type: "TIMESTAMP" },
          { name: "peak_pm25", type: "FLOAT" },
        ],
        data: [[1000, 180.5]],
      },
      notifications: [{ messageId: "m1", streams: [] }],
      input_rows: 1234,
      output_rows: 1,
      window_count: 2,
      notification_count: 1,
      elapsed_ms: 56,
      truncated: false,
      range: { start: 0, end: 61000 },
    });
    m.on("GET /api/v1/streams/9/versions/", {
      count: 2,
      next: null,
      previous: null,
      results: [
        { number: 2, stream_id: 9, sql: "CREATE STREAM b", design: EXAMPLE, created_at: "2026-01-02T00:00:00Z", created_by: "alice", impact: null },
        { number: 1, stream_id: 9, sql: "CREATE STREAM a", design: EXAMPLE, created_at: "2026-01-01T00:00:00Z", created_by: "alice", impact: null },
      ],
    });
    m.on("GET /api/v1/streams/9/versions/diff/", {
      from: 1,
      to: 2,
      sql_diff: "--- v1\n+++ v2\n@@ -1,2 +1,2 @@\n-  WATERMARK(5s)\n+  WATERMARK(10s)\n",
      changes: [{ node: "options", field: "watermark", old: "5s", new: "10s" }],
      impact: { kind: "recalculate", statement: "Windows since the change are recalculated." },
    });
    renderPage("designer", { draftId: 5 });
    expect(await screen.findByTestId("node-notify")).toBeInTheDocument();
    await waitFor(() => expect(validations(m).at(-1)?.body).toMatchObject({ stream_id: 9, design: { name: "pollution_episodes" } }));
    expect(validations(m)).toHaveLength(1);

    fireEvent.click(screen.getByRole("tab", { name: "Preview" }));
    fireEvent.change(screen.getByLabelText("Start"), { target: { value: "2026-01-01 00:00:00" } });
    fireEvent.click(screen.getByTestId("preview-run"));
    expect(await screen.findByTestId("preview-timeline")).toBeInTheDocument();
    expect(m.callsTo("POST", "/api/v1/designer/preview/")[0].body).toMatchObject({ start: "2026-01-01 00:00:00", end: null, design: { name: "pollution_episodes" } });
    expect(screen.getAllByTestId("timeline-lane").map((g) => g.getAttribute("data-group"))).toEqual(["d1001", "d1002"]);
    expect(document.querySelectorAll('rect[data-open="true"]')).toHaveLength(1);
    expect(screen.getByTestId("preview-stats")).toHaveTextContent("input rows 1234");
    expect(screen.getByTestId("preview-stats")).toHaveTextContent("elapsed 56 ms");
    expect(screen.getByTestId("preview-rows")).toHaveTextContent("180.5");
    expect(screen.getByTestId("preview-notifications")).toHaveTextContent('"messageId": "m1"');

    fireEvent.click(screen.getByRole("tab", { name: "Versions" }));
    await screen.findByTestId("versions");
    fireEvent.click(screen.getByRole("button", { name: "Compare" }));
    const diff = await screen.findByTestId("version-diff");
    expect(m.callsTo("GET", "/api/v1/streams/9/versions/diff/")[0].query.toString()).toBe("from=1&to=2");
    expect(within(diff).getByText("+ WATERMARK(10s)")).toHaveClass("dz-diff-add");
    expect(within(diff).getByText("- WATERMARK(5s)")).toHaveClass("dz-diff-del");
    expect(diff).toHaveTextContent("Windows since the change are recalculated.");
    expect(diff).toHaveTextContent("watermark");
  });
});
