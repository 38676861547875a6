import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Diagnosis } from "../api/types";
import { mockFetch, reply } from "../test/mockFetch";
import { WhyNoOutput } from "./WhyNoOutput";

function diagnosis(over: Partial<Diagnosis> = {}): Diagnosis {
  return {
    stream_id: 7,
    name: "exp_s",
    status: "running",
    trigger: "WINDOW_CLOSE",
    watermark_ms: 1704070800000,
    watermark: "2024-01-01T01:00:00Z",
    latest_event_ms: 1704070800000,
    latest_event_time: "2024-01-01T01:00:00Z",
    batches: 2,
    input_rows: 242,
    output_rows: 0,
    dropped: { expired: 240, filtered: 0, disordered: 240, late: 0, beyond_delete_mark: 0 },
    dropped_sample: ["2024-01-01T00:10:00Z", "2024-01-01T00:11:59Z"],
    open_windows: { count: 2, earliest_end: "2024-01-01T01:00:10Z", closes_when: "WINDOW_CLOSE: a row of this group at or after 2024-01-01T01:00:10Z" },
    notifications: {
      sent: 0,
      failed: 3,
      receivers: [{ url: "ws://127.0.0.1:18221/notify", attempts: 4, failed: 4, last_error: "connection refused", last_failed_at: "2026-11-26T03:52:13Z" }],
    },
    groups: [
      {
        group: "d1001",
        rows: 124,
        latest_event_ms: 1704070800000,
        latest_event_time: "2024-01-01T01:00:00Z",
        watermark_ms: 1704070800000,
        watermark: "2024-01-01T01:00:00Z",
        open_window_end_ms: 1704070810000,
        closes_when: "WINDOW_CLOSE: a row of this group at or after 2024-01-01T01:00:10Z",
      },
    ],
    filter_check: null,
    causes: [
      { option: "IGNORE_EXPIRED 1", text: "IGNORE_EXPIRED 1: all 240 rows were older than the watermark when they came" },
      { option: null, text: "the receiver ws://127.0.0.1:18221/notify refused the connection 4 times" },
    ],
    ...over,
  };
}

describe("WhyNoOutput", () => {
  it("asks the server only when opened, then shows the causes with their options and the figures", async () => {
    const m = mockFetch({ "GET /api/v1/streams/7/diagnosis/": diagnosis() });
    render(<WhyNoOutput streamId={7} />);
    expect(m.callsTo("GET", "/api/v1/streams/7/diagnosis/")).toHaveLength(0);
    fireEvent.click(screen.getByTestId("why-button"));
    const causes = await screen.findByTestId("why-causes");
    expect(m.callsTo("GET", "/api/v1/streams/7/diagnosis/")).toHaveLength(1);
    const items = within(causes).getAllByRole("listitem");
    expect(items).toHaveLength(2);
    // the option is its own badge and is not repeated in the sentence
    expect(within(items[0]).getByText("IGNORE_EXPIRED 1")).toHaveClass("badge");
    expect(items[0]).toHaveTextContent(/^IGNORE_EXPIRED 1 all 240 rows were older than the watermark when they came$/);
    expect(items[1]).toHaveTextContent("refused the connection 4 times");
    expect(screen.getByTestId("why-dropped")).toHaveTextContent("240 expired (older than the watermark), 240 out of order");
    expect(screen.getByTestId("why-dropped")).toHaveTextContent("sample: 2024-01-01T00:10:00Z, 2024-01-01T00:11:59Z");
    expect(screen.getByTestId("why-notifications")).toHaveTextContent("ws://127.0.0.1:18221/notify: 4 of 4 attempts failed (connection refused)");
    expect(within(screen.getByTestId("why-groups")).getByText("d1001")).toBeInTheDocument();
    expect(screen.getByTestId("why-facts")).toHaveTextContent("closes on WINDOW_CLOSE: a row of this group at or after 2024-01-01T01:00:10Z");
  });

  it("shows the rows the WHERE clause removed, with their sample", async () => {
    const where = "WHERE: all 60 rows examined did not pass the filter (v > 100): dropped before any window";
    mockFetch({
      "GET /api/v1/streams/7/diagnosis/": diagnosis({
        causes: [{ option: "WHERE", text: where }],
        filter_check: {
          clause: "WHERE",
          condition: "v > 100",
          examined: 60,
          failed: 60,
          complete: false,
          columns: ["v"],
          sample: [
            { ts_ms: 1704067239000, time: "2024-01-01T00:00:39Z", tbname: "t1", values: { v: 39 } },
            { ts_ms: 1704067224000, time: "2024-01-01T00:00:24Z", tbname: null, values: { v: null } },
          ],
        },
      }),
    });
    render(<WhyNoOutput streamId={7} initiallyOpen />);
    const causes = await screen.findByTestId("why-causes");
    expect(within(causes).getByText("WHERE")).toHaveClass("badge");
    expect(causes).toHaveTextContent("all 60 rows examined did not pass the filter (v > 100)");
    const f = screen.getByTestId("why-filter");
    expect(screen.getByText("Filtered by WHERE")).toBeInTheDocument();
    expect(f).toHaveTextContent("60 of 60 rows examined did not pass v > 100 (the newest rows read)");
    expect(f).toHaveTextContent("t1 2024-01-01T00:00:39Z (v=39)");
    expect(f).toHaveTextContent("2024-01-01T00:00:24Z (v=NULL)");
  });

  it("has no filter line for a stream without a filter", async () => {
    mockFetch({ "GET /api/v1/streams/7/diagnosis/": diagnosis() });
    render(<WhyNoOutput streamId={7} initiallyOpen />);
    await screen.findByTestId("why-causes");
    expect(screen.queryByTestId("why-filter")).toBeNull();
  });

  it("opens at once from the inbox link and refreshes on demand", async () => {
    const m = mockFetch({ "GET /api/v1/streams/7/diagnosis/": diagnosis({ causes: [], dropped: { expired: 0, filtered: 0, disordered: 0, late: 0, beyond_delete_mark: 0 }, dropped_sample: [] }) });
    render(<WhyNoOutput streamId={7} initiallyOpen />);
    expect(await screen.findByText(/Nothing recorded explains a silence/)).toBeInTheDocument();
    expect(screen.getByTestId("why-dropped")).toHaveTextContent(/^none$/);
    fireEvent.click(screen.getByRole("button", { name: "Refresh" }));
    await screen.findByText(/Nothing recorded explains a silence/);
    expect(m.callsTo("GET", "/api/v1/streams/7/diagnosis/").length).toBe(2);
  });

  it("says why when the stream cannot be diagnosed", async () => {
    mockFetch({ "GET /api/v1/streams/7/diagnosis/": reply(404, { detail: "no such stream" }) });
    render(<WhyNoOutput streamId={7} initiallyOpen />);
    expect(await screen.findByText(/Could not diagnose the stream/)).toBeInTheDocument();
  });
});
