import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { nav } from "../page";
import { makeProgress, makeStream, page } from "../test/fixtures";
import { mockFetch, reply } from "../test/mockFetch";
import { renderPage, serverPush, openSocket } from "../test/render";
import { STREAMS_PAGE_SIZE } from "./StreamsPage";

afterEach(() => window.history.replaceState(null, "", "/"));

const base = {
  "GET /api/v1/notifications/unread-count/": { count: 0 },
  "GET /api/v1/databases/": [],
};

function setup(streams = [makeStream({ id: 1, name: "daily_avg" }), makeStream({ id: 2, name: "alerts", status: "paused", throughput: [] })]) {
  return mockFetch({ ...base, "GET /api/v1/databases/": [], "GET /api/v1/streams/": page(streams) });
}

describe("StreamsPage", () => {
  it("lists streams with status badge, source → target, lag, sparkline and last error", async () => {
    setup([
      makeStream({ id: 1, name: "daily_avg", lag_ms: 5000, last_progress: makeProgress({ rows_per_s: 1500 }) }),
      makeStream({ id: 2, name: "broken", status: "failed", last_error: "x".repeat(100), last_progress: null, lag_ms: null }),
    ]);
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    expect(within(row).getByRole("link", { name: "daily_avg" })).toHaveAttribute("href", "/streams/1/");
    expect(within(row).getByTestId("status-badge")).toHaveClass("badge", "status-running");
    expect(within(row).getByText("weather.readings → weather.daily_avg_out")).toBeInTheDocument();
    expect(within(row).getByTestId("lag")).toHaveTextContent("5.0 s");
    expect(within(row).getByTestId("rate")).toHaveTextContent("1.5k rows/s");
    expect(within(row).getByRole("img")).toHaveAttribute("data-samples", "3");
    const bad = screen.getByTestId("stream-row-2");
    expect(within(bad).getByTestId("lag")).toHaveTextContent("—");
    const errCell = within(bad).getByTitle("x".repeat(100));
    expect(errCell.textContent).toHaveLength(60);
    expect(screen.getByTestId("pager-range")).toHaveTextContent("1–2 of 2");
  });

  it("shows catching up with a progress bar of the server's fraction", async () => {
    setup([
      makeStream({
        id: 1,
        status: "catching_up",
        progress: { phase: "history", fraction: 0.42, label: "catching up on history: 42% (42 of 100 rows)", rows_done: 42, rows_total: 100 },
      }),
      makeStream({ id: 2, name: "other", progress: { phase: "history", fraction: null, label: "", rows_done: null, rows_total: null } }),
    ]);
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    expect(within(row).getByTestId("status-badge")).toHaveTextContent("catching up");
    const bar = within(row).getByRole("progressbar");
    expect(bar).toHaveAttribute("aria-valuenow", "42");
    expect(within(row).getByTestId("progress-bar")).toHaveTextContent("catching up on history: 42% (42 of 100 rows)");
    // unknown fraction: an indeterminate bar with a label from the phase
    const other = within(screen.getByTestId("stream-row-2")).getByRole("progressbar");
    expect(other).not.toHaveAttribute("aria-valuenow");
    expect(other).toHaveClass("progress-indeterminate");
    expect(screen.getByTestId("stream-row-2")).toHaveTextContent("catching up on history");
  });

  it("sends status, database and search filters and keeps them in the URL", async () => {
    const m = setup();
    m.on("GET /api/v1/databases/", [{ name: "weather", precision: "ms", ntables: 1, created_ms: 0 }, { name: "power", precision: "ms", ntables: 1, created_ms: 0 }]);
    window.history.replaceState(null, "", "/?status=paused");
    renderPage("streams");
    await screen.findByTestId("stream-row-1");
    expect(m.callsTo("GET", "/api/v1/streams/")[0].query.get("status")).toBe("paused");
    expect(screen.getByRole("combobox", { name: "Status filter" })).toHaveValue("paused");

    await screen.findByRole("option", { name: "power" });
    fireEvent.change(screen.getByRole("combobox", { name: "Database filter" }), { target: { value: "power" } });
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/streams/").at(-1)!.query.get("db")).toBe("power"));
    fireEvent.change(screen.getByRole("searchbox", { name: "Search streams" }), { target: { value: " avg " } });
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/streams/").at(-1)!.query.get("search")).toBe("avg"));
    const q = m.callsTo("GET", "/api/v1/streams/").at(-1)!.query;
    expect(q.get("status")).toBe("paused");
    expect(q.get("limit")).toBe(String(STREAMS_PAGE_SIZE));
    expect(window.location.search).toBe("?status=paused&db=power&search=avg");

    fireEvent.click(screen.getByRole("button", { name: "clear filters" }));
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/streams/").at(-1)!.query.has("status")).toBe(false));
    expect(window.location.search).toBe("");
  });

  it("pages with limit/offset", async () => {
    const m = mockFetch({
      ...base,
      "GET /api/v1/streams/": (req: { query: URLSearchParams }) => {
        const off = Number(req.query.get("offset") ?? 0);
        const ids = off === 0 ? [1, 2] : [3];
        return page(ids.map((id) => makeStream({ id, name: `s${id}` })), 27);
      },
    });
    renderPage("streams");
    await screen.findByTestId("stream-row-1");
    const pager = screen.getByTestId("pager");
    expect(within(pager).getByTestId("pager-range")).toHaveTextContent("1–2 of 27");
    expect(within(pager).getByRole("button", { name: /Previous/ })).toBeDisabled();
    fireEvent.click(within(pager).getByRole("button", { name: /Next/ }));
    await screen.findByTestId("stream-row-3");
    expect(screen.queryByTestId("stream-row-1")).toBeNull();
    expect(m.callsTo("GET", "/api/v1/streams/").at(-1)!.query.get("offset")).toBe(String(STREAMS_PAGE_SIZE));
    expect(screen.getByTestId("pager-range")).toHaveTextContent(`${STREAMS_PAGE_SIZE + 1}–${STREAMS_PAGE_SIZE + 1} of 27`);
    expect(within(pager).getByRole("button", { name: /Next/ })).toBeDisabled();
    fireEvent.click(within(pager).getByRole("button", { name: /Previous/ }));
    await screen.findByTestId("stream-row-1");
    expect(m.callsTo("GET", "/api/v1/streams/").at(-1)!.query.has("offset")).toBe(false);
  });

  it("recalculates a range after showing its diff, in the background, cancellable", async () => {
    const m = setup();
    const diff = {
      windows: 3,
      added: 1,
      changed: 1,
      removed: 0,
      unchanged: 1,
      truncated: true,
      rows: [{ change: "changed", table: "t_1", key: { _wstart: 1717232400000 }, old: { c: 2, s: 3 }, new: { c: 3, s: 4 } }],
    };
    m.on("POST /api/v1/streams/1/recalculate/diff/", reply(200, diff));
    const queued = { phase: "recalculation", fraction: 0, label: "recalculating: queued", rows_done: 0, rows_total: null, state: "queued" as const, job_id: 7 };
    m.on("POST /api/v1/streams/1/actions/", (req: { body: unknown }) =>
      (req.body as { action: string }).action === "cancel"
        ? { ...makeStream({ id: 1 }), recalculation: { job: { ...queued, state: "running" } } }
        : { ...makeStream({ id: 1, progress: queued }), recalculation: { job: queued } },
    );
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    fireEvent.click(within(row).getByRole("button", { name: "recalculate" }));
    const dialog = screen.getByRole("dialog");
    expect(dialog).toHaveTextContent("Recalculate the windows of stream daily_avg");
    const from = within(dialog).getByLabelText("Recalculate from (UTC)");
    const to = within(dialog).getByLabelText("Recalculate to (UTC)");
    // default: the stream's last hour of data (its latest event 2024-06-01T09:59:55Z, to the
    // minute above), in ISO 8601 UTC, whatever the browser's zone (UTC+05:30 here)
    expect(from).toHaveValue("2024-06-01T09:00:00Z");
    expect(to).toHaveValue("2024-06-01T10:00:00Z");
    // the default range's changes are asked for at once
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/streams/1/recalculate/diff/")).toHaveLength(1));
    // a US-style date is not taken
    fireEvent.change(from, { target: { value: "06/01/2024 09:00 AM" } });
    expect(within(dialog).getByTestId("recalc-error")).toHaveTextContent("UTC, ISO 8601");
    // an end before the start cannot be sent
    fireEvent.change(from, { target: { value: "2024-06-01T10:00:00Z" } });
    fireEvent.change(to, { target: { value: "2024-06-01 09:30" } });
    expect(within(dialog).getByTestId("recalc-error")).toHaveTextContent("The start must be before the end.");
    expect(within(dialog).getByRole("button", { name: "Recalculate" })).toBeDisabled();
    fireEvent.change(to, { target: { value: "2024-06-02 00:00:00" } });
    // a new range: its changes must be seen before it can be confirmed
    expect(within(dialog).queryByTestId("recalc-diff")).toBeNull();
    expect(within(dialog).getByRole("button", { name: "Recalculate" })).toBeDisabled();
    fireEvent.click(within(dialog).getByTestId("recalc-preview"));
    const shown = await within(dialog).findByTestId("recalc-diff");
    expect(m.callsTo("POST", "/api/v1/streams/1/recalculate/diff/").at(-1)!.body).toEqual({
      start: "2024-06-01T10:00:00.000Z",
      end: "2024-06-02T00:00:00.000Z",
      limit: 50,
    });
    expect(within(shown).getByTestId("recalc-diff-summary")).toHaveTextContent("3 windows rewritten: 1 added, 1 changed, 0 removed, 1 unchanged");
    const diffRow = within(shown).getByTestId("recalc-diff-row");
    expect(diffRow).toHaveTextContent("changed");
    expect(diffRow).toHaveTextContent("c=2, s=3");
    expect(diffRow).toHaveTextContent("c=3, s=4");
    expect(within(shown).getByTestId("recalc-diff-more")).toHaveTextContent("1 more row not listed");
    fireEvent.click(within(dialog).getByRole("button", { name: "Recalculate" }));
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/streams/1/actions/")).toHaveLength(1));
    // the times typed, read as UTC, as a background job
    expect(m.callsTo("POST", "/api/v1/streams/1/actions/")[0].body).toEqual({
      action: "recalculate",
      start: "2024-06-01T10:00:00.000Z",
      end: "2024-06-02T00:00:00.000Z",
      background: true,
    });
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(await within(row).findByTestId("recalc-result")).toHaveTextContent("recalculation started");
    // its progress arrives with the stream: fraction, rows/s, ETA; it can be cancelled
    const running = { ...queued, state: "running" as const, fraction: 0.45, rows_done: 50, rows_total: 100, rows_per_s: 1500, eta_s: 65, label: "recalculating: 45% (50 of 100 rows)" };
    serverPush("/ws/streams/", { type: "stream.status", stream: makeStream({ id: 1, name: "daily_avg", progress: running }) });
    expect(within(row).getByRole("progressbar")).toHaveAttribute("aria-valuenow", "45");
    expect(within(row).getByTestId("progress-bar-rate")).toHaveTextContent("1.5k rows/s · ETA 1 min 5 s");
    expect(within(row).queryByRole("button", { name: "recalculate" })).toBeNull();
    fireEvent.click(within(row).getByTestId("recalc-cancel"));
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/streams/1/actions/")).toHaveLength(2));
    expect(m.callsTo("POST", "/api/v1/streams/1/actions/")[1].body).toEqual({ action: "cancel" });
    expect(await within(row).findByTestId("recalc-result")).toHaveTextContent("recalculation cancelled");
  });

  it("opens the stream in the designer through a new draft", async () => {
    const m = setup();
    m.on("POST /api/v1/streams/1/edit/", reply(201, { id: 42, name: "daily_avg", design: {}, stream_id: 1, owner: "alice", created_at: "", updated_at: "" }));
    const go = vi.spyOn(nav, "go").mockImplementation(() => {});
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    fireEvent.click(within(row).getByRole("link", { name: "Edit in designer" }));
    await waitFor(() => expect(go).toHaveBeenCalledWith("/designer/42/"));
    expect(m.callsTo("POST", "/api/v1/streams/1/edit/")[0].headers["X-CSRFToken"]).toBe("tok123");
  });

  it("shows the empty state", async () => {
    setup([]);
    renderPage("streams");
    expect(await screen.findByText(/No streams yet/)).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "create one" })).toHaveAttribute("href", "/streams/new/");
  });

  it("shows the server's desc when loading fails", async () => {
    mockFetch({ ...base, "GET /api/v1/streams/": reply(500, { desc: "catalog unavailable" }) });
    renderPage("streams");
    expect(await screen.findByRole("alert")).toHaveTextContent("catalog unavailable");
  });

  it("applies live status and progress messages from /ws/streams/", async () => {
    setup();
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    openSocket("/ws/streams/");
    expect(screen.getAllByTestId("live-indicator")[1]).toHaveTextContent("live");

    serverPush("/ws/streams/", { type: "stream.status", stream: makeStream({ id: 1, name: "daily_avg", status: "failed", last_error: "boom" }) });
    expect(within(row).getByText("failed")).toHaveClass("status-failed");
    expect(within(row).getByText("boom")).toBeInTheDocument();

    const spark = within(row).getByRole("img");
    expect(spark).toHaveAttribute("data-samples", "3");
    serverPush("/ws/streams/", { type: "stream.progress", stream_id: 1, progress: makeProgress({ batch_id: 2, rows_per_s: 777 }) });
    expect(within(row).getByTestId("rate")).toHaveTextContent("777 rows/s");
    expect(within(row).getByRole("img")).toHaveAttribute("data-samples", "4");

    // A new stream created elsewhere shows up.
    serverPush("/ws/streams/", { type: "stream.status", stream: makeStream({ id: 3, name: "fresh", status: "starting" }) });
    expect(screen.getByTestId("stream-row-3")).toHaveTextContent("fresh");
    expect(screen.getByTestId("pager-range")).toHaveTextContent("1–3 of 3");
  });

  it("keeps live streams to the filter", async () => {
    setup();
    window.history.replaceState(null, "", "/?status=running");
    renderPage("streams");
    await screen.findByTestId("stream-row-1");
    serverPush("/ws/streams/", { type: "stream.status", stream: makeStream({ id: 5, name: "paused_one", status: "paused" }) });
    expect(screen.queryByTestId("stream-row-5")).toBeNull();
    serverPush("/ws/streams/", { type: "stream.status", stream: makeStream({ id: 1, name: "daily_avg", status: "failed" }) });
    expect(screen.queryByTestId("stream-row-1")).toBeNull();
  });

  it("pauses after confirmation and shows the returned state", async () => {
    const m = setup();
    m.on("POST /api/v1/streams/1/actions/", (req: { body: { action: string } }) => makeStream({ id: 1, status: req.body.action === "pause" ? "paused" : "running" }));
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    fireEvent.click(within(row).getByRole("button", { name: "pause" }));
    const dialog = screen.getByRole("dialog");
    expect(dialog).toHaveTextContent("Pause stream daily_avg?");
    expect(m.callsTo("POST", "/api/v1/streams/1/actions/")).toHaveLength(0);
    fireEvent.click(within(dialog).getByRole("button", { name: "Pause" }));
    await waitFor(() => expect(within(row).getByText("paused")).toBeInTheDocument());
    const call = m.callsTo("POST", "/api/v1/streams/1/actions/")[0];
    expect(call.body).toEqual({ action: "pause" });
    expect(call.headers["X-CSRFToken"]).toBe("tok123");
    expect(within(row).getByRole("button", { name: "resume" })).toBeInTheDocument();
  });

  it("skips the rest of a catch-up's history after confirmation, and only while it catches up", async () => {
    const progress = { phase: "history", fraction: 0.42, label: "catching up on history: 42% (42 of 100 rows)", rows_done: 42, rows_total: 100 };
    const cancelled = { at: "2024-06-01T08:00:00Z", rows_done: 42, rows_total: 100, fraction: 0.42, label: "history catch-up cancelled at 42% (42 of 100 rows); the rest of the snapshot is skipped" };
    const m = setup([makeStream({ id: 1, status: "catching_up", progress }), makeStream({ id: 2, name: "live_one" })]);
    m.on("POST /api/v1/streams/1/actions/", () => makeStream({ id: 1, status: "catching_up", progress, history_cancelled: cancelled }));
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    expect(within(screen.getByTestId("stream-row-2")).queryByTestId("history-cancel")).toBeNull();
    fireEvent.click(within(row).getByTestId("history-cancel"));
    const dialog = screen.getByRole("dialog");
    expect(dialog).toHaveTextContent("The windows and notifications it has produced stay");
    expect(m.callsTo("POST", "/api/v1/streams/1/actions/")).toHaveLength(0);
    fireEvent.click(within(dialog).getByRole("button", { name: "Skip the rest" }));
    await waitFor(() => expect(within(row).queryByTestId("history-cancel")).toBeNull());
    expect(m.callsTo("POST", "/api/v1/streams/1/actions/")[0].body).toEqual({ action: "cancel_history" });
  });

  it("resumes only after confirmation", async () => {
    const m = setup();
    m.on("POST /api/v1/streams/2/actions/", makeStream({ id: 2, name: "alerts", status: "running" }));
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-2");
    fireEvent.click(within(row).getByRole("button", { name: "resume" }));
    const dialog = screen.getByRole("dialog");
    expect(dialog).toHaveTextContent("Resume stream alerts?");
    expect(m.callsTo("POST", "/api/v1/streams/2/actions/")).toHaveLength(0);
    fireEvent.click(within(dialog).getByRole("button", { name: "Resume" }));
    await waitFor(() => expect(within(row).getByTestId("status-badge")).toHaveTextContent("running"));
    expect(m.callsTo("POST", "/api/v1/streams/2/actions/")[0].body).toEqual({ action: "resume" });
    expect(screen.queryByRole("dialog")).toBeNull();
  });

  it("drops a stream only after confirming", async () => {
    const m = setup();
    m.on("DELETE /api/v1/streams/1/", reply(204));
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    fireEvent.click(within(row).getByRole("button", { name: "drop" }));
    fireEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Cancel" }));
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(m.callsTo("DELETE", "/api/v1/streams/1/")).toHaveLength(0);

    fireEvent.click(within(row).getByRole("button", { name: "drop" }));
    fireEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Drop" }));
    await waitFor(() => expect(screen.queryByTestId("stream-row-1")).toBeNull());
    expect(m.callsTo("DELETE", "/api/v1/streams/1/")).toHaveLength(1);
  });

  it("shows an action failure in a banner", async () => {
    const m = setup();
    m.on("POST /api/v1/streams/1/actions/", reply(409, { code: 1009, desc: "stream is already stopping" }));
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    fireEvent.click(within(row).getByRole("button", { name: "stop" }));
    fireEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Stop" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("stop daily_avg: stream is already stopping");
  });
});
