// "Why no output?" is one click from the stream page (its button, or #why in the URL) and from
// the inbox (a link per notification's stream and one for the stream filter).
import { fireEvent, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { makeDetail, makeNotification, makeStream, page } from "../test/fixtures";
import { mockFetch } from "../test/mockFetch";
import { renderPage } from "../test/render";

const DIAGNOSIS = {
  stream_id: 4,
  name: "daily_avg",
  status: "running",
  trigger: "WINDOW_CLOSE",
  watermark_ms: null,
  watermark: null,
  latest_event_ms: null,
  latest_event_time: null,
  batches: 0,
  input_rows: 0,
  output_rows: 0,
  dropped: { expired: 0, filtered: 0, disordered: 0, late: 0, beyond_delete_mark: 0 },
  dropped_sample: [],
  open_windows: { count: 0, earliest_end: null, closes_when: null },
  notifications: { sent: 0, failed: 0, receivers: [] },
  groups: [],
  causes: [{ option: "FILL_HISTORY 0", text: "FILL_HISTORY 0: rows before the stream's creation are not computed" }],
};

function streamRoutes() {
  return {
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/streams/4/": makeDetail({ id: 4, name: "daily_avg" }),
    "GET /api/v1/streams/4/progress/": [],
    "GET /api/v1/streams/4/deliveries/": page([]),
    "GET /api/v1/streams/4/runs/": page([]),
    "GET /api/v1/streams/4/diagnosis/": DIAGNOSIS,
  };
}

afterEach(() => window.history.replaceState(null, "", "/"));

describe("Why no output? links", () => {
  it("the stream page opens the panel with one click", async () => {
    const m = mockFetch(streamRoutes());
    renderPage("stream", { streamId: 4 });
    fireEvent.click(await screen.findByRole("button", { name: "Why no output?" }));
    const causes = await screen.findByTestId("why-causes");
    expect(within(causes).getByText("FILL_HISTORY 0")).toBeInTheDocument();
    expect(m.callsTo("GET", "/api/v1/streams/4/diagnosis/")).toHaveLength(1);
  });

  it("the stream page opens it at once for #why", async () => {
    window.history.replaceState(null, "", "/streams/4/#why");
    mockFetch(streamRoutes());
    renderPage("stream", { streamId: 4 });
    expect(await screen.findByTestId("why-causes")).toHaveTextContent("rows before the stream's creation are not computed");
  });

  it("the inbox links each notification's stream and the filtered stream to it", async () => {
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 1 },
      "GET /api/v1/streams/": { count: 1, results: [makeStream({ id: 4, name: "daily_avg" })] },
      "GET /api/v1/notifications/groups/": [],
      "GET /api/v1/notifications/": page([makeNotification({ id: 2, stream_name: "daily_avg" }), makeNotification({ id: 3, stream_name: "gone" })]),
    });
    renderPage("inbox");
    const row = await screen.findByTestId("notification-2");
    expect(await within(row).findByTestId("why-link-daily_avg")).toHaveAttribute("href", "/streams/4/#why");
    expect(within(screen.getByTestId("notification-3")).queryByText("why?")).toBeNull(); // no such stream
    fireEvent.change(screen.getByLabelText("Stream filter"), { target: { value: "daily_avg" } });
    expect(await screen.findByText("Why no output from daily_avg?")).toHaveAttribute("href", "/streams/4/#why");
  });
});
