// The designer guides a newcomer (issue 16, item 1): Deploy waits for a valid design, errors sit on
// their node and field (also on a node not on the canvas), placeholders read as examples, the SQL
// tab does not call a draft deployed, a failed preview names the field, forbidden options are hidden.
import "./testSetup";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { DesignIssue, ValidateAnswer } from "../api/designer";
import { mockFetch, reply, type Req } from "../test/mockFetch";
import { renderPage } from "../test/render";

const OPTIONS_337 = ["watermark", "expired_time", "fill_history", "calc_notify_only", "event_type", "max_delay"];
const CATALOG = {
  databases: [
    {
      name: "air",
      tables: [{ name: "quality", kind: "super", columns: [{ name: "ts", type: "TIMESTAMP" }, { name: "pm25", type: "FLOAT" }], tags: [] }],
    },
  ],
  functions: [{ name: "count", kind: "aggregate" }],
  placeholders: { interval: [{ name: "_twstart", description: "window start" }] },
  defaults: { "3.3.7": { options: { watermark: "0s" }, notify: { history: false, on_failure: "DROP" } } },
  // the server's answer: IGNORE_NODATA_TRIGGER (and others) are not offered with a STATE_WINDOW
  options: { "3.3.7": { interval: [...OPTIONS_337, "ignore_nodata_trigger"], state: OPTIONS_337 } },
};

function answer(valid: boolean, issues: DesignIssue[] = []): ValidateAnswer {
  return {
    valid,
    issues,
    sql: { "3.3.7": valid ? "CREATE STREAM s INTERVAL(1h) SLIDING(1h) FROM air.quality INTO o AS SELECT _twstart, count(*) FROM %%trows" : null, legacy: null },
    not_expressible: {},
    placeholders: [],
  };
}

function setup(validate: (req: Req) => unknown) {
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/designer/catalog/": CATALOG,
    "GET /api/v1/designer/templates/": [],
    "POST /api/v1/designer/validate/": validate,
  });
}

const REQUIRED: DesignIssue = { node: null, field: "name", message: "the stream name is required", position: null };

describe("designer guidance", () => {
  it("keeps Deploy disabled while the design has problems", async () => {
    setup((req) => (req.body.design.name ? answer(true) : answer(false, [REQUIRED])));
    renderPage("designer");
    await waitFor(() => expect(screen.getByTestId("issues-count")).toHaveTextContent("1 problem"));
    expect(screen.getByTestId("deploy")).toBeDisabled();
    expect(screen.getByTestId("deploy")).toHaveAttribute("title", expect.stringMatching(/Fix the 1 problem first/));
    // the statement's issue is shown with its field
    expect(screen.getByTestId("error-stream-name")).toHaveTextContent("Stream · name: the stream name is required");
    fireEvent.change(screen.getByLabelText("Stream name"), { target: { value: "s1" } });
    expect(screen.getByTestId("deploy")).toBeDisabled(); // still checking the new design
    await waitFor(() => expect(screen.getByTestId("deploy")).toBeEnabled());
    expect(screen.getByTestId("issues-count")).toHaveTextContent("valid");
  });

  it("shows an error on its node and field, and one of a node not on the canvas with a button adding it", async () => {
    const onTrigger: DesignIssue = { node: "trigger", field: "interval", message: "must be a positive duration", position: null };
    const onOptions: DesignIssue = { node: "options", field: "ignore_nodata_trigger", message: "IGNORE_NODATA_TRIGGER applies to SLIDING, INTERVAL and PERIOD triggers only (seed 002)", position: null };
    setup(() => answer(false, [onTrigger, onOptions]));
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-trigger"));
    const props = await screen.findByTestId("props-trigger");
    await waitFor(() => expect(within(props).getByTestId("error-trigger-interval")).toHaveTextContent("must be a positive duration"));
    expect(screen.getByTestId("node-issues-trigger")).toHaveTextContent("1");
    // the Options node is not on the canvas: its issue is listed with the field and an Add button
    const side = screen.getByRole("complementary", { name: "Properties" });
    const absent = within(side).getByTestId("error-options-ignore_nodata_trigger");
    expect(absent).toHaveTextContent("Options · ignore_nodata_trigger: IGNORE_NODATA_TRIGGER applies");
    fireEvent.click(within(absent).getByRole("button", { name: "Add Options" }));
    const options = await screen.findByTestId("props-options");
    expect(within(options).getByTestId("error-options-ignore_nodata_trigger")).toHaveTextContent("IGNORE_NODATA_TRIGGER applies");
  });

  it("styles placeholders as examples, never as values", async () => {
    setup(() => answer(false, [REQUIRED]));
    renderPage("designer");
    const name = screen.getByLabelText("Stream name");
    expect(name).toHaveValue("");
    expect(name.getAttribute("placeholder")).toMatch(/^e\.g\. /);
    expect(screen.getByLabelText("Database").getAttribute("placeholder")).toMatch(/^e\.g\. /);
    fireEvent.click(screen.getByTestId("palette-trigger"));
    const props = await screen.findByTestId("props-trigger");
    for (const label of ["Interval", "Interval offset", "Sliding"]) {
      const input = within(props).getByLabelText(label);
      expect(input).toHaveValue("");
      expect(input.getAttribute("placeholder")).toMatch(/^e\.g\. /);
    }
    // and the stylesheet draws placeholders lighter and in italics
    const css = readFileSync(resolve(__dirname, "../styles.css"), "utf8");
    const rule = /input::placeholder[^{]*\{([^}]*)\}/.exec(css);
    expect(rule?.[1]).toMatch(/font-style:\s*italic/);
    expect(rule?.[1]).toMatch(/color:/);
  });

  it("does not call an undeployed draft deployed", async () => {
    setup(() => answer(true));
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-trigger"));
    const badge = await screen.findByTestId("sql-syntax-badge");
    await waitFor(() => expect(screen.getByTestId("sql-3.3.7")).toHaveTextContent("CREATE STREAM"));
    expect(badge).toHaveTextContent("deploys as");
    expect(screen.queryByText(/^deployed$/i)).toBeNull();
  });

  it("names the field of a failed preview: 'sliding is required', not a bare 'is required'", async () => {
    const m = setup(() => answer(true));
    const issue = { node: "trigger", field: "sliding", message: "is required", position: null };
    m.on("POST /api/v1/designer/preview/", reply(400, { code: 9797, desc: "is required", position: null, node: "trigger", field: "sliding", issues: [issue] }));
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-trigger"));
    fireEvent.click(screen.getByRole("tab", { name: "Preview" }));
    fireEvent.click(screen.getByTestId("preview-run"));
    const err = await screen.findByTestId("preview-error");
    expect(err).toHaveTextContent("Trigger / window: sliding is required");
  });

  it("offers only the options the seeds allow with the chosen trigger", async () => {
    setup(() => answer(true));
    renderPage("designer");
    fireEvent.click(screen.getByTestId("palette-trigger"));
    await screen.findByTestId("props-trigger");
    fireEvent.click(screen.getByTestId("palette-options"));
    let props = await screen.findByTestId("props-options");
    await waitFor(() => expect(within(props).getByLabelText("IGNORE_NODATA_TRIGGER")).toBeInTheDocument());
    // a STATE_WINDOW trigger: not offered
    fireEvent.click(screen.getByTestId("node-trigger"));
    fireEvent.change(within(await screen.findByTestId("props-trigger")).getByLabelText("Trigger type"), { target: { value: "state" } });
    fireEvent.click(screen.getByTestId("node-options"));
    props = await screen.findByTestId("props-options");
    expect(within(props).queryByLabelText("IGNORE_NODATA_TRIGGER")).toBeNull();
    expect(within(props).queryByLabelText("DELETE_RECALC")).toBeNull();
    expect(within(props).getByLabelText("WATERMARK")).toBeInTheDocument();
    expect(within(props).getByTestId("options-hidden")).toHaveTextContent("not offered");
  });
});

describe("the starting computation follows the trigger", () => {
  it("uses the trigger's time placeholder, and changes with the trigger while untouched", async () => {
    const { addNode, followTrigger, newDesign, setNode } = await import("./graph");
    let d = addNode(newDesign(), "trigger");
    d = setNode(d, "trigger", { type: "sliding", sliding: "1h", sliding_offset: null });
    d = addNode(d, "computation");
    expect(d.nodes.computation?.query).toBe("SELECT _tcurrent_ts AS ts, count(*) AS n FROM %%trows");
    const back = followTrigger(setNode(d, "trigger", { type: "interval", interval: "1h" }), d.nodes.trigger);
    expect(back.nodes.computation?.query).toBe("SELECT _twstart AS wstart, count(*) AS n FROM %%trows");
    // a query the user wrote is kept
    const mine = setNode(back, "computation", { query: "SELECT _twstart, avg(pm25) FROM %%trows" });
    expect(followTrigger(setNode(mine, "trigger", { type: "period", period: "1h" }), mine.nodes.trigger).nodes.computation?.query).toBe(
      "SELECT _twstart, avg(pm25) FROM %%trows",
    );
  });
});
