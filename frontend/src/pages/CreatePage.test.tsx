import { act, fireEvent, screen, waitFor } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { nav } from "../page";
import { makeStream } from "../test/fixtures";
import { mockFetch, reply, type Req } from "../test/mockFetch";
import { renderPage } from "../test/render";
import { SNIPPETS } from "./CreatePage";

const BAD = "CREATE STREAM x INTO o AS SELEC _wstart FROM t";

function setup(validate: (req: Req) => unknown = () => ({ ok: true, statement: "CREATE STREAM" })) {
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/databases/": [
      { name: "power", precision: "ms", ntables: 12, created_ms: 0 },
      { name: "weather", precision: "us", ntables: 3, created_ms: 0 },
    ],
    "POST /api/v1/sql/validate/": validate,
  });
}

const editor = () => screen.getByRole("textbox", { name: "SQL" }) as HTMLTextAreaElement;

describe("CreatePage", () => {
  it("validates while typing, debounced, and marks the error position", async () => {
    const m = setup((req) =>
      req.body.sql === BAD
        ? { ok: false, code: 9728, desc: "unexpected 'FROM'", position: { offset: 40, line: 1, column: 41 } }
        : { ok: true, statement: "CREATE STREAM" },
    );
    vi.useFakeTimers({ shouldAdvanceTime: false });
    renderPage("create");
    await act(async () => {
      await vi.advanceTimersByTimeAsync(0);
    });
    fireEvent.change(editor(), { target: { value: "CREATE" } });
    fireEvent.change(editor(), { target: { value: BAD } });
    await act(async () => {
      await vi.advanceTimersByTimeAsync(399);
    });
    expect(m.callsTo("POST", "/api/v1/sql/validate/")).toHaveLength(0);
    await act(async () => {
      await vi.advanceTimersByTimeAsync(1);
    });
    vi.useRealTimers();
    const calls = m.callsTo("POST", "/api/v1/sql/validate/");
    expect(calls).toHaveLength(1);
    expect(calls[0].body).toEqual({ sql: BAD });
    expect(calls[0].headers["X-CSRFToken"]).toBe("tok123");
    expect(await screen.findByTestId("error-desc")).toHaveTextContent("unexpected 'FROM'");
    expect(screen.getByTestId("error-mark")).toHaveTextContent("FROM");
    const caret = screen.getByTestId("error-caret").textContent!;
    expect(caret).toContain("line 1, column 41");
    expect(caret.split("\n")[2]).toBe(`${" ".repeat(40)}^`);
  });

  it("sends the chosen database and shows a valid statement", async () => {
    const m = setup();
    renderPage("create");
    await screen.findByRole("option", { name: /power/ });
    fireEvent.change(screen.getByRole("combobox", { name: "Database" }), { target: { value: "power" } });
    fireEvent.change(editor(), { target: { value: "CREATE STREAM s INTO o AS SELECT _wstart, count(*) FROM m INTERVAL(1m)" } });
    await waitFor(() => expect(screen.getByText(/Valid/)).toBeInTheDocument(), { timeout: 2000 });
    expect(m.callsTo("POST", "/api/v1/sql/validate/").at(-1)!.body.db).toBe("power");
    expect(screen.queryByTestId("error-mark")).toBeNull();
  });

  it("inserts example snippets", async () => {
    setup();
    renderPage("create");
    fireEvent.click(screen.getByRole("button", { name: "Daily average per station" }));
    expect(editor().value).toBe(SNIPPETS[0].sql(""));
    expect(editor().value).toContain("INTERVAL(1d)");
    fireEvent.change(editor(), { target: { value: "" } });
    fireEvent.click(screen.getByRole("button", { name: "6-hour alerts (NOTIFY)" }));
    expect(editor().value).toContain("ON ('WINDOW_CLOSE')");
    expect(editor().value).toContain("INTERVAL(6h)");
  });

  it("creates the stream and navigates to it", async () => {
    const m = setup();
    m.on("POST /api/v1/streams/", reply(201, makeStream({ id: 42 })));
    const go = vi.spyOn(nav, "go").mockImplementation(() => {});
    renderPage("create");
    fireEvent.change(editor(), { target: { value: "CREATE STREAM s INTO o AS SELECT 1" } });
    fireEvent.click(screen.getByRole("button", { name: "Create stream" }));
    await waitFor(() => expect(go).toHaveBeenCalledWith("/streams/42/"));
    expect(m.callsTo("POST", "/api/v1/streams/")[0].body).toEqual({ sql: "CREATE STREAM s INTO o AS SELECT 1" });
  });

  it("shows a 400 at its position", async () => {
    const m = setup();
    const sql = "CREATE STREAM s INTO o\nAS SELECT _wstart, avg(x) FROM nope INTERVAL(1m)";
    m.on("POST /api/v1/streams/", reply(400, { code: 9731, desc: "Table does not exist: nope", position: { offset: 54, line: 2, column: 32 } }));
    const go = vi.spyOn(nav, "go").mockImplementation(() => {});
    renderPage("create");
    fireEvent.change(editor(), { target: { value: sql } });
    fireEvent.keyDown(editor(), { key: "Enter", ctrlKey: true });
    expect(await screen.findByText("Table does not exist: nope")).toBeInTheDocument();
    expect(screen.getByText("Create failed")).toBeInTheDocument();
    expect(screen.getByTestId("error-mark")).toHaveTextContent("nope");
    expect(screen.getByTestId("error-caret")).toHaveTextContent("line 2, column 32");
    expect(go).not.toHaveBeenCalled();
  });
});
