import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { makeProgress, makeStream } from "../test/fixtures";
import { mockFetch, reply } from "../test/mockFetch";
import { renderPage, serverPush, openSocket } from "../test/render";

const base = {
  "GET /api/v1/notifications/unread-count/": { count: 0 },
};

function setup(streams = [makeStream({ id: 1, name: "daily_avg" }), makeStream({ id: 2, name: "alerts", status: "paused", throughput: [] })]) {
  return mockFetch({ ...base, "GET /api/v1/streams/": { count: streams.length, results: streams } });
}

describe("StreamsPage", () => {
  it("lists streams with status, source → target, lag and the dashboard", async () => {
    setup([
      makeStream({ id: 1, name: "daily_avg", last_progress: makeProgress({ rows_per_s: 1500, watermark_ms: 0, max_event_ms: 5000 }) }),
      makeStream({ id: 2, name: "broken", status: "failed", last_error: "x".repeat(100), last_progress: null }),
    ]);
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-1");
    expect(within(row).getByRole("link", { name: "daily_avg" })).toHaveAttribute("href", "/streams/1/");
    expect(within(row).getByText("running")).toHaveClass("badge", "status-running");
    expect(within(row).getByText("weather.readings → weather.daily_avg_out")).toBeInTheDocument();
    expect(within(row).getByText("5.0 s")).toBeInTheDocument(); // max_event − watermark
    expect(within(row).getByTestId("rate")).toHaveTextContent("1.5k rows/s");
    const bad = screen.getByTestId("stream-row-2");
    const errCell = within(bad).getByTitle("x".repeat(100));
    expect(errCell.textContent).toHaveLength(60);
    expect(screen.getByTestId("dash-total")).toHaveTextContent("2");
    expect(screen.getByTestId("dash-throughput")).toHaveTextContent("1.5k rows/s");
    expect(screen.getByTestId("dash-failed")).toHaveTextContent("1");
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
    expect(screen.getByTestId("dash-failed")).toHaveTextContent("1");

    const spark = within(row).getByRole("img");
    expect(spark).toHaveAttribute("data-samples", "3");
    serverPush("/ws/streams/", { type: "stream.progress", stream_id: 1, progress: makeProgress({ batch_id: 2, rows_per_s: 777 }) });
    expect(within(row).getByTestId("rate")).toHaveTextContent("777 rows/s");
    expect(within(row).getByRole("img")).toHaveAttribute("data-samples", "4");

    // A new stream created elsewhere shows up.
    serverPush("/ws/streams/", { type: "stream.status", stream: makeStream({ id: 3, name: "fresh", status: "starting" }) });
    expect(screen.getByTestId("stream-row-3")).toHaveTextContent("fresh");
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

  it("resumes without confirmation", async () => {
    const m = setup();
    m.on("POST /api/v1/streams/2/actions/", makeStream({ id: 2, name: "alerts", status: "running" }));
    renderPage("streams");
    const row = await screen.findByTestId("stream-row-2");
    fireEvent.click(within(row).getByRole("button", { name: "resume" }));
    await waitFor(() => expect(within(row).getByText("running")).toBeInTheDocument());
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
