import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import FakeUPlot from "../test/fakeUplot";
import { FakeXhr } from "../test/fakeXhr";
import { makeImport } from "../test/fixtures";
import { IMPORT_POLL_MS } from "./TablesPage";
import { mockFetch, reply } from "../test/mockFetch";
import { renderPage } from "../test/render";

const TABLES = [
  { name: "meters", kind: "super", stable: null },
  { name: "d1001", kind: "sub", stable: "meters" },
  { name: "d1002", kind: "sub", stable: "meters" },
  { name: "log", kind: "normal", stable: null },
];

function setup() {
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/databases/": [{ name: "power", precision: "ms", ntables: 4, created_ms: 0 }],
    "GET /api/v1/databases/power/tables/": TABLES,
    "GET /api/v1/databases/power/tables/d1001/": {
      name: "d1001",
      kind: "sub",
      stable: "meters",
      columns: [
        { name: "ts", type: "TIMESTAMP", length: 8 },
        { name: "current", type: "FLOAT", length: 4 },
        { name: "voltage", type: "INT", length: 4 },
      ],
      tags: [{ name: "location", type: "VARCHAR", length: 64 }],
      tag_values: { location: "California.SanFrancisco" },
    },
    "GET /api/v1/databases/power/tables/d1001/rows/": {
      columns: ["ts", "current", "voltage", "note"],
      types: ["TIMESTAMP", "FLOAT", "INT", "VARCHAR"],
      rows: [
        ["2024-06-01T10:00:00.000Z", 10.5, 220, "x"],
        ["2024-06-01T10:00:01.000Z", 11.25, 221, null],
      ],
    },
  });
}

afterEach(() => window.history.replaceState(null, "", "/"));

describe("TablesPage", () => {
  it("loads tables lazily and browses supertables → subtables", async () => {
    const m = setup();
    renderPage("tables");
    const db = await screen.findByRole("button", { name: /power/ });
    expect(m.callsTo("GET", "/api/v1/databases/power/tables/")).toHaveLength(0);
    fireEvent.click(db);
    expect(await screen.findByRole("button", { name: /^S meters/ })).toBeInTheDocument();
    expect(screen.getByRole("button", { name: /log/ })).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: /d1001/ })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Expand meters" }));
    expect(screen.getByRole("button", { name: /d1001/ })).toBeInTheDocument();
    expect(m.callsTo("GET", "/api/v1/databases/power/tables/")).toHaveLength(1);
  });

  it("shows schema, tag values, rows and a chart of numeric columns", async () => {
    const m = setup();
    renderPage("tables");
    fireEvent.click(await screen.findByRole("button", { name: /power/ }));
    fireEvent.click(await screen.findByRole("button", { name: "Expand meters" }));
    fireEvent.click(screen.getByRole("button", { name: /d1001/ }));
    expect(await screen.findByText("California.SanFrancisco")).toBeInTheDocument();
    expect(screen.getByText("subtable of meters")).toBeInTheDocument();
    expect(window.location.search).toBe("?db=power&table=d1001");

    await screen.findByText("11.25");
    expect(m.callsTo("GET", "/api/v1/databases/power/tables/d1001/rows/")[0].query.get("limit")).toBe("200");
    const plot = FakeUPlot.instances.filter((p) => !p.destroyed).at(-1)!;
    expect(plot.labels).toEqual(["current", "voltage"]);
    expect(plot.data[0]).toEqual([Date.parse("2024-06-01T10:00:00Z") / 1000, Date.parse("2024-06-01T10:00:01Z") / 1000]);
    expect(plot.data[2]).toEqual([220, 221]);

    // Unticking a column rebuilds the chart without it.
    const picker = screen.getByRole("group", { name: "Columns to chart" });
    fireEvent.click(within(picker).getByRole("checkbox", { name: "current" }));
    const plot2 = FakeUPlot.instances.filter((p) => !p.destroyed).at(-1)!;
    expect(plot2.labels).toEqual(["voltage"]);
    expect(plot2.data[1]).toEqual([220, 221]);
  });

  it("charts a supertable one line per subtable, labelled by its tags", async () => {
    const m = setup();
    m.on("GET /api/v1/databases/power/tables/meters/", {
      name: "meters",
      kind: "super",
      stable: null,
      columns: [
        { name: "ts", type: "TIMESTAMP", length: 8 },
        { name: "current", type: "FLOAT", length: 4 },
      ],
      tags: [
        { name: "location", type: "VARCHAR", length: 64 },
        { name: "groupid", type: "INT", length: 4 },
      ],
      tag_values: {},
    });
    // SELECT * of a supertable: columns then tags, the two subtables' rows interleaved by time
    m.on("GET /api/v1/databases/power/tables/meters/rows/", {
      columns: ["ts", "current", "location", "groupid"],
      types: ["TIMESTAMP", "FLOAT", "VARCHAR", "INT"],
      rows: [
        ["2024-06-01T10:00:00.000Z", 10.5, "California.SanFrancisco", 2],
        ["2024-06-01T10:00:00.500Z", 7.25, "California.LosAngeles", 3],
        ["2024-06-01T10:00:01.000Z", 11.5, "California.SanFrancisco", 2],
      ],
    });
    window.history.replaceState(null, "", "/tables/?db=power&table=meters");
    renderPage("tables");
    await screen.findByText("7.25");
    await waitFor(() =>
      expect(FakeUPlot.instances.filter((p) => !p.destroyed).at(-1)!.labels).toEqual([
        "location=California.LosAngeles, groupid=3",
        "location=California.SanFrancisco, groupid=2",
      ]),
    );
    const plot = FakeUPlot.instances.filter((p) => !p.destroyed).at(-1)!;
    // groupid is a tag: a group key, not a line of its own
    expect(within(screen.getByRole("group", { name: "Columns to chart" })).queryByRole("checkbox", { name: "groupid" })).toBeNull();
    const t0 = Date.parse("2024-06-01T10:00:00Z") / 1000;
    expect(plot.data[0]).toEqual([t0, t0 + 0.5, t0 + 1]);
    expect(plot.data[1]).toEqual([null, 7.25, null]);
    expect(plot.data[2]).toEqual([10.5, null, 11.5]);
  });

  it("reloads rows for a time range", async () => {
    const m = setup();
    window.history.replaceState(null, "", "/tables/?db=power&table=d1001");
    renderPage("tables");
    await screen.findByText("11.25");
    fireEvent.change(screen.getByLabelText("Start time"), { target: { value: "2024-06-01T15:30" } });
    fireEvent.click(screen.getByRole("button", { name: "Load" }));
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/databases/power/tables/d1001/rows/")).toHaveLength(2));
    // 15:30 in UTC+05:30 is 10:00 UTC
    expect(m.callsTo("GET", "/api/v1/databases/power/tables/d1001/rows/")[1].query.get("start")).toBe("2024-06-01T10:00:00.000Z");
  });

  it("runs SQL in the console and shows results", async () => {
    const m = setup();
    m.on("POST /api/v1/sql/", {
      code: 0,
      column_meta: [
        ["ts", "TIMESTAMP", 8],
        ["c", "BIGINT", 8],
      ],
      data: [["2024-06-01T10:00:00.000Z", 12345]],
      rows: 1,
    });
    renderPage("tables");
    const input = screen.getByRole("textbox", { name: "SQL console" });
    fireEvent.change(input, { target: { value: "select ts, count(*) c from meters" } });
    fireEvent.keyDown(input, { key: "Enter", ctrlKey: true });
    const res = await screen.findByTestId("console-result");
    expect(within(res).getByText("12345")).toBeInTheDocument();
    expect(within(res).getByText(/1 row/)).toBeInTheDocument();
    expect(m.callsTo("POST", "/api/v1/sql/")[0].body).toEqual({ sql: "select ts, count(*) c from meters" });
  });

  it("shows the desc of a failed SQL statement", async () => {
    const m = setup();
    m.on("POST /api/v1/sql/", reply(200, { code: 9731, desc: "Table does not exist" }));
    renderPage("tables");
    const input = screen.getByRole("textbox", { name: "SQL console" });
    fireEvent.change(input, { target: { value: "select * from nope" } });
    fireEvent.click(screen.getByRole("button", { name: "Run" }));
    expect(await screen.findByTestId("console-error")).toHaveTextContent("Table does not exist");
  });

  it("imports a CSV file: upload progress, then the job's rows, then the result", async () => {
    FakeXhr.instances = [];
    vi.stubGlobal("XMLHttpRequest", FakeXhr);
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const m = setup();
    let polls = 0;
    m.on("GET /api/v1/imports/11/", () =>
      ++polls === 1 ? makeImport({ rows_done: 60, fraction: 0.6 }) : makeImport({ state: "done", rows_done: 100, fraction: 1 }),
    );
    window.history.replaceState(null, "", "/tables/?db=power&table=d1001");
    renderPage("tables");
    await screen.findByText("11.25");
    const importBtn = screen.getByRole("button", { name: "Import" });
    expect(importBtn).toBeDisabled();
    const file = new File(["ts,current\n2024-06-01T10:00:00Z,1.5\n"], "rows.csv", { type: "text/csv" });
    fireEvent.change(screen.getByLabelText("CSV file"), { target: { files: [file] } });
    fireEvent.click(importBtn);

    const xhr = FakeXhr.last();
    expect(xhr.method).toBe("POST");
    expect(xhr.url).toBe("/api/v1/databases/power/tables/d1001/rows/");
    expect(xhr.headers["X-CSRFToken"]).toBe("tok123");
    expect((xhr.body!.get("file") as File).name).toBe("rows.csv");

    xhr.progress(250, 1000);
    const bar = () => within(screen.getByTestId("import-progress")).getByRole("progressbar");
    expect(bar()).toHaveAttribute("aria-valuenow", "25");
    expect(screen.getByTestId("import-progress")).toHaveTextContent("Uploading rows.csv: 250 B of 1000 B");
    xhr.progress(1000, 1000);
    expect(bar()).toHaveAttribute("aria-valuenow", "100");

    await xhr.respond(201, makeImport({ rows_done: 10, fraction: 0.1 }));
    expect(bar()).toHaveAttribute("aria-valuenow", "10");
    expect(screen.getByTestId("import-progress")).toHaveTextContent("Importing: 10 of 100 rows");
    await act(async () => {
      await vi.advanceTimersByTimeAsync(IMPORT_POLL_MS);
    });
    await waitFor(() => expect(bar()).toHaveAttribute("aria-valuenow", "60"));
    await act(async () => {
      await vi.advanceTimersByTimeAsync(IMPORT_POLL_MS);
    });
    expect(await screen.findByTestId("import-result")).toHaveTextContent("Imported 100 rows into power.d1001 from rows.csv.");
    expect(screen.queryByTestId("import-progress")).toBeNull();
    // the preview is reloaded with the new rows
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/databases/power/tables/d1001/rows/")).toHaveLength(2));
  });

  it("shows the row and column of a rejected CSV file", async () => {
    FakeXhr.instances = [];
    vi.stubGlobal("XMLHttpRequest", FakeXhr);
    setup();
    window.history.replaceState(null, "", "/tables/?db=power&table=d1001");
    renderPage("tables");
    await screen.findByText("11.25");
    fireEvent.change(screen.getByLabelText("CSV file"), { target: { files: [new File(["x"], "bad.csv")] } });
    fireEvent.click(screen.getByRole("button", { name: "Import" }));
    await FakeXhr.last().respond(400, {
      code: 1,
      desc: "row 17, column current: 'abc' is not a FLOAT",
      row: 17,
      column: "current",
      import_id: null,
    });
    const err = await screen.findByTestId("import-error");
    expect(err).toHaveTextContent("Import failed at row 17, column current: row 17, column current: 'abc' is not a FLOAT");
    expect(within(err).getByTestId("import-error-row")).toHaveTextContent("row 17");
    expect(within(err).getByTestId("import-error-column")).toHaveTextContent("column current");
    expect(screen.getByRole("button", { name: "Import" })).toBeEnabled();
  });
});
