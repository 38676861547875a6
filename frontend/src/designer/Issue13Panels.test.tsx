// The property forms of issue 13: FILL, legacy streams without a window, NOTIFY ON events per
// syntax (no WINDOW_INVALIDATION), NOTIFY WHERE, FORCE_OUTPUT and the other 3.3.7 options,
// COMPOSITE KEY output columns, virtual trigger tables.
import "./testSetup";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Design, ValidateAnswer } from "../api/designer";
import { mockFetch, type Req } from "../test/mockFetch";
import { renderPage } from "../test/render";
import { EXAMPLE } from "./testFixtures";

const CATALOG = {
  databases: [
    {
      name: "power",
      tables: [
        { name: "meters", kind: "supertable", columns: [{ name: "ts", type: "TIMESTAMP" }, { name: "current", type: "FLOAT" }], tags: [{ name: "location", type: "VARCHAR(24)" }] },
        { name: "vmeters", kind: "supertable", virtual: true, columns: [{ name: "ts", type: "TIMESTAMP" }, { name: "current", type: "FLOAT" }], tags: [{ name: "location", type: "VARCHAR(24)" }] },
      ],
    },
  ],
  functions: [{ name: "avg", kind: "aggregate" }],
  placeholders: {},
  defaults: {
    "3.3.7": { options: { force_output: false, expired_time: null }, notify: { history: false, on_failure: "DROP" } },
    legacy: { options: { trigger_mode: "WINDOW_CLOSE" }, notify: { history: false, on_failure: "PAUSE" } },
  },
};

const ok = (over: Partial<ValidateAnswer> = {}): ValidateAnswer => ({
  valid: true,
  issues: [],
  sql: { "3.3.7": "CREATE STREAM s …", legacy: null },
  not_expressible: {},
  placeholders: [],
  ...over,
});

function setup(design: Design, validate: (req: Req) => unknown = () => ok()) {
  const m = mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/designer/catalog/": CATALOG,
    "GET /api/v1/designer/templates/": [],
    "GET /api/v1/me/": { username: "alice", is_staff: false, inboxes: [] },
    "POST /api/v1/designer/validate/": validate,
  });
  m.on("GET /api/v1/designer/drafts/5/", { id: 5, name: design.name, design, stream_id: null });
  renderPage("designer", { draftId: 5 });
  return m;
}

const validations = (m: ReturnType<typeof mockFetch>) => m.callsTo("POST", "/api/v1/designer/validate/");
const clone = (d: Design): Design => JSON.parse(JSON.stringify(d));

function legacyInterval(): Design {
  const d = clone(EXAMPLE);
  d.syntax = "legacy";
  d.nodes.trigger = { type: "interval", interval: "1h", offset: null, sliding: null, sliding_offset: null };
  d.nodes.computation = { query: "SELECT _twstart AS ws, avg(pm25) AS a, max(pm25) AS m FROM %%trows" };
  d.nodes.notify = null;
  return d;
}

// generous: these render the whole page, slow on a loaded machine
describe("issue 13 property forms", { timeout: 20_000 }, () => {
  it("sets a FILL mode and a VALUE list on the computation's query, and shows the server's FILL error", async () => {
    const m = setup(legacyInterval(), (req) =>
      /FILL\(VALUE\)/.test(req.body.design.nodes.computation.query)
        ? ok({ valid: false, issues: [{ node: "computation", field: "query", message: "FILL(VALUE, ...) needs a value per filled column", position: null }] })
        : ok(),
    );
    fireEvent.click(await screen.findByTestId("node-computation"));
    const props = await screen.findByTestId("props-computation");
    const mode = within(props).getByLabelText("FILL");
    expect(within(mode).getAllByRole("option").map((o) => o.textContent)).toEqual([
      "not set (windows without rows are not output)",
      "NONE",
      "NULL",
      "NULL_F",
      "VALUE",
      "VALUE_F",
      "PREV",
      "NEXT",
      "LINEAR",
    ]);
    fireEvent.change(mode, { target: { value: "VALUE" } });
    await waitFor(() => expect(screen.getByTestId("error-computation-query")).toHaveTextContent("needs a value per filled column"));
    fireEvent.change(within(props).getByLabelText("FILL values"), { target: { value: "0, -1" } });
    await waitFor(() =>
      expect(validations(m).at(-1)!.body.design.nodes.computation.query).toBe("SELECT _twstart AS ws, avg(pm25) AS a, max(pm25) AS m FROM %%trows FILL(VALUE, 0, -1)"),
    );
    expect(screen.queryByTestId("error-computation-query")).toBeNull();
    fireEvent.change(within(props).getByLabelText("FILL"), { target: { value: "PREV" } });
    expect(within(props).queryByLabelText("FILL values")).toBeNull();
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.computation.query).toMatch(/FROM %%trows FILL\(PREV\)$/));
    fireEvent.change(within(props).getByLabelText("FILL"), { target: { value: "" } });
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.computation.query).toMatch(/FROM %%trows$/));
  });

  it("offers a legacy trigger without a window", async () => {
    const m = setup(legacyInterval());
    fireEvent.click(await screen.findByTestId("node-trigger"));
    const props = await screen.findByTestId("props-trigger");
    fireEvent.change(within(props).getByLabelText("Trigger type"), { target: { value: "none" } });
    expect(screen.getByTestId("summary-trigger")).toHaveTextContent("no window: every written row");
    expect(within(props).queryByLabelText("Interval")).toBeNull();
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.trigger).toEqual({ type: "none" }));
  });

  it("offers the ON events of the design's syntax, never WINDOW_INVALIDATION, and a NOTIFY WHERE", async () => {
    const m = setup(clone(EXAMPLE));
    fireEvent.click(await screen.findByTestId("node-notify"));
    let props = await screen.findByTestId("props-notify");
    const boxes = () => within(screen.getByTestId("props-notify")).getAllByRole("checkbox").map((b) => (b as HTMLInputElement).value);
    expect(boxes()).toEqual(["WINDOW_OPEN", "WINDOW_CLOSE", "ON_TIME"]);
    expect(within(props).queryByText("WINDOW_INVALIDATION")).toBeNull();
    expect(screen.getByTestId("notify-invalidation-note")).toHaveTextContent("not an ON event");
    fireEvent.change(within(props).getByLabelText("WHERE"), { target: { value: "peak_pm25 > 200" } });
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.notify.where).toBe("peak_pm25 > 200"));
    fireEvent.change(screen.getByLabelText("Syntax"), { target: { value: "legacy" } });
    props = screen.getByTestId("props-notify");
    expect(boxes()).toEqual(["WINDOW_OPEN", "WINDOW_CLOSE"]);
  });

  it("keeps an event the syntax has not, to be unchecked", async () => {
    const d = clone(EXAMPLE);
    d.nodes.notify = { ...d.nodes.notify!, events: ["WINDOW_CLOSE", "WINDOW_INVALIDATION"] };
    const m = setup(d, () => ok({ valid: false, issues: [{ node: "notify", field: "events[1]", message: "WINDOW_INVALIDATION is not an ON event", position: null }] }));
    fireEvent.click(await screen.findByTestId("node-notify"));
    const props = await screen.findByTestId("props-notify");
    await waitFor(() => expect(screen.getByTestId("error-notify-events")).toHaveTextContent("WINDOW_INVALIDATION is not an ON event"));
    const inval = within(props).getByRole("checkbox", { name: "WINDOW_INVALIDATION" });
    expect(inval).toBeChecked();
    fireEvent.click(inval);
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.notify.events).toEqual(["WINDOW_CLOSE"]));
  });

  it("sets FORCE_OUTPUT, EXPIRED_TIME, DELETE_OUTPUT_TABLE, FILL_HISTORY_FIRST with a start time", async () => {
    const m = setup(clone(EXAMPLE));
    fireEvent.click(await screen.findByTestId("node-options"));
    const props = await screen.findByTestId("props-options");
    fireEvent.change(within(props).getByLabelText("FORCE_OUTPUT"), { target: { value: "true" } });
    fireEvent.change(within(props).getByLabelText("EXPIRED_TIME"), { target: { value: "1d" } });
    fireEvent.change(within(props).getByLabelText("DELETE_OUTPUT_TABLE"), { target: { value: "true" } });
    fireEvent.change(within(props).getByLabelText("FILL_HISTORY"), { target: { value: "" } });
    fireEvent.change(within(props).getByLabelText("FILL_HISTORY_FIRST"), { target: { value: "true" } });
    fireEvent.change(within(props).getByLabelText("FILL_HISTORY start time"), { target: { value: "'2024-01-01 00:00:00'" } });
    await waitFor(() =>
      expect(validations(m).at(-1)!.body.design.nodes.options).toMatchObject({
        force_output: true,
        expired_time: "1d",
        delete_output_table: true,
        fill_history: null,
        fill_history_first: true,
        fill_history_start: "'2024-01-01 00:00:00'",
      }),
    );
  });

  it("marks an output column as COMPOSITE KEY and lists virtual supertables as trigger tables", async () => {
    const d = clone(EXAMPLE);
    d.db = "power";
    d.nodes.source = { db: "power", table: "meters", partition_by: [{ sql: "tbname", alias: null }] };
    const m = setup(d);
    fireEvent.click(await screen.findByTestId("node-source"));
    const src = await screen.findByTestId("props-source");
    const table = within(src).getByLabelText("Trigger table");
    await within(table).findByRole("option", { name: "vmeters (virtual supertable)" });
    fireEvent.change(table, { target: { value: "vmeters" } });
    fireEvent.click(screen.getByTestId("node-output"));
    const out = await screen.findByTestId("props-output");
    fireEvent.click(within(out).getByRole("button", { name: "+ column" }));
    fireEvent.change(within(out).getByLabelText("Column 1 name"), { target: { value: "ts" } });
    fireEvent.click(within(out).getByRole("button", { name: "+ column" }));
    fireEvent.change(within(out).getByLabelText("Column 2 name"), { target: { value: "k" } });
    fireEvent.click(within(out).getAllByRole("checkbox", { name: "COMPOSITE KEY" })[1]);
    await waitFor(() => {
      const nodes = validations(m).at(-1)!.body.design.nodes;
      expect(nodes.source.table).toBe("vmeters");
      expect(nodes.output.columns).toEqual([
        { name: "ts", composite_key: false },
        { name: "k", composite_key: true },
      ]);
    });
  });
});

describe("legacy FROM a subquery or a join", { timeout: 20_000 }, () => {
  it("shows and edits source.from, with its server error", async () => {
    const d = legacyInterval();
    d.nodes.source = { db: null, table: null, from: "(SELECT ts, pm25 FROM air.quality WHERE pm25 > 0)", partition_by: [] };
    const m = setup(d, (req) =>
      req.body.design.nodes.source.from.endsWith("WHERE)")
        ? ok({ valid: false, issues: [{ node: "source", field: "from", message: "syntax error near ')'", position: { offset: 42, line: 1, column: 43 } }] })
        : ok(),
    );
    expect(await screen.findByTestId("summary-source")).toHaveTextContent("FROM (SELECT ts, pm25 FROM air.quality");
    fireEvent.click(screen.getByTestId("node-source"));
    const props = await screen.findByTestId("props-source");
    const from = within(props).getByLabelText("FROM subquery or join (legacy)");
    expect(from).toHaveValue("(SELECT ts, pm25 FROM air.quality WHERE pm25 > 0)");
    fireEvent.change(from, { target: { value: "(SELECT ts, pm25 FROM air.quality WHERE)" } });
    await waitFor(() => expect(screen.getByTestId("error-source-from")).toHaveTextContent("syntax error near ')'"));
    expect(validations(m).at(-1)!.body.design.nodes.source.from).toBe("(SELECT ts, pm25 FROM air.quality WHERE)");
  });
});

describe("trigger palette", { timeout: 20_000 }, () => {
  it("adds the trigger with a type from the palette, or changes the present trigger's type", async () => {
    const m = setup(legacyInterval());
    expect(await screen.findByTestId("palette-trigger-none")).toHaveTextContent("No window (every written row) · legacy");
    expect(screen.getByTestId("palette-trigger-period")).toHaveClass("dz-other-syntax");
    expect(screen.getByTestId("palette-trigger-count")).not.toHaveClass("dz-other-syntax");
    fireEvent.click(screen.getByTestId("palette-trigger-count"));
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.trigger).toEqual({ type: "count", count: null, sliding: null, columns: null }));
    expect(await screen.findByTestId("props-trigger")).toBeInTheDocument();
    expect(screen.getByTestId("summary-trigger")).toHaveTextContent("COUNT_WINDOW(?)");
  });

  it("drops a trigger type onto an empty canvas as a new trigger node", async () => {
    const d = legacyInterval();
    delete (d.nodes as Record<string, unknown>).trigger;
    const m = setup(d);
    await screen.findByTestId("node-source");
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
    fireEvent.dragStart(screen.getByTestId("palette-trigger-event"), { dataTransfer });
    expect(store.get("application/tdweb-node")).toBe("trigger:event");
    fireEvent.dragOver(screen.getByTestId("designer-canvas"), { dataTransfer });
    fireEvent.drop(screen.getByTestId("designer-canvas"), { dataTransfer, clientX: 300, clientY: 100 });
    expect(await screen.findByTestId("node-trigger")).toBeInTheDocument();
    await waitFor(() => expect(validations(m).at(-1)!.body.design.nodes.trigger).toEqual({ type: "event", start: null, end: null, true_for: null }));
  });
});

describe("notify form", { timeout: 20_000 }, () => {
  it("My inbox resolving after a checkbox click keeps the click", async () => {
    let release: (v: unknown) => void = () => {};
    const me = new Promise((r) => (release = r));
    const m = mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/designer/catalog/": { databases: [], functions: [], placeholders: {}, defaults: {} },
      "GET /api/v1/designer/templates/": [],
      "GET /api/v1/me/": () => me,
      "POST /api/v1/designer/validate/": { valid: true, issues: [], sql: { "3.3.7": "x", legacy: null }, not_expressible: {}, placeholders: [] },
    });
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-notify"));
    const props = await screen.findByTestId("props-notify");
    fireEvent.click(within(props).getByRole("button", { name: "My inbox" }));
    fireEvent.click(within(props).getByRole("checkbox", { name: "WINDOW_OPEN" }));
    release({ username: "alice", is_staff: false, inboxes: [{ name: "alice", url: "ws://h/ws/notify/abc" }] });
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/designer/validate/").at(-1)!.body.design.nodes.notify).toMatchObject({ urls: ["ws://h/ws/notify/abc"], events: ["WINDOW_OPEN", "WINDOW_CLOSE"] }));
  });
});
