import { act, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { makeDashboard } from "../test/fixtures";
import { mockFetch, reply } from "../test/mockFetch";
import { renderPage } from "../test/render";
import { DASHBOARD_POLL_MS, statusOrder } from "./DashboardPage";

const T0 = Date.UTC(2026, 10, 26, 3, 0);

function makeSeries(range = "1h") {
  const t = [T0, T0 + 60_000, T0 + 120_000];
  return {
    since: new Date(T0).toISOString(),
    until: new Date(T0 + 180_000).toISOString(),
    bucket_s: 60,
    t,
    totals: { rows_per_s: [10, 0, 30], delivered: [1, 0, 2], failed: [0, 0, 1] },
    streams: [
      { id: 7, name: "pm25_daily", db: "air", status: "running", lag_ms: 3_600_000, rows_per_s: [10, 0, 30], lag_s: [3600, null, 3600], delivered: [1, 0, 2], failed: [0, 0, 1] },
      { id: 8, name: "idle", db: "", status: "paused", lag_ms: null, rows_per_s: [0, 0, 0], lag_s: [null, null, null], delivered: [0, 0, 0], failed: [0, 0, 0] },
    ],
    range,
  };
}

function setup(answers = [makeDashboard()]) {
  let i = 0;
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 4 },
    "GET /api/v1/dashboard/": () => answers[Math.min(i++, answers.length - 1)],
    "GET /api/v1/dashboard/series/": (req: { query: URLSearchParams }) => makeSeries(req.query.get("range") ?? ""),
  });
}

describe("DashboardPage", () => {
  it("renders the numbers of the server's answer with links to filtered lists", async () => {
    setup();
    renderPage("dashboard");
    expect(await screen.findByTestId("dash-total")).toHaveTextContent("5");
    expect(screen.getByTestId("dash-total")).toHaveAttribute("href", "/");

    const failed = screen.getByTestId("dash-status-failed");
    expect(failed).toHaveAttribute("href", "/?status=failed");
    expect(failed).toHaveTextContent("failed 1");
    expect(within(failed).getByTestId("status-badge")).toHaveClass("badge", "status-failed");
    expect(screen.getByTestId("dash-status-catching_up")).toHaveTextContent("catching up 1");
    expect(screen.getByTestId("dash-status-running")).toHaveTextContent("2");
    expect(screen.queryByTestId("dash-status-stopped")).toBeNull();

    expect(screen.getByTestId("dash-throughput")).toHaveTextContent("2.5k rows/s");
    expect(screen.getByTestId("dash-failed")).toHaveTextContent("1");
    expect(screen.getByTestId("dash-failed")).toHaveAttribute("href", "/?status=failed");
    expect(screen.getByTestId("dash-delivery-rate")).toHaveTextContent("90%");
    expect(screen.getByTestId("dash-notifications")).toHaveTextContent("90 sent · 10 failed");
    expect(screen.getByTestId("dash-deliveries-24h")).toHaveTextContent("19 of 20 attempts ok (95%)");
    await waitFor(() => expect(screen.getByTestId("dash-unread")).toHaveTextContent("4"));
    expect(screen.getByTestId("dash-unread")).toHaveAttribute("href", "/inbox/");

    const err = screen.getByTestId("dash-error");
    expect(within(err).getByRole("link", { name: "broken" })).toHaveAttribute("href", "/streams/7/");
    // first line shown, the whole error on hover
    const text = err.querySelector(".error-text")!;
    expect(text).toHaveTextContent(/^Spark job aborted: OOM$/);
    expect(text.getAttribute("title")).toBe("Spark job aborted: OOM\n  at stage 3");
  });

  it("shows a dash for the delivery rate without deliveries", async () => {
    setup([
      makeDashboard({
        notifications: { sent: 0, failed: 0, delivery_rate: null, last_24h: { attempts: 0, ok: 0, failed: 0, delivery_rate: null } },
        failures: { streams_failed: 0, recent_errors: [] },
      }),
    ]);
    renderPage("dashboard");
    expect(await screen.findByTestId("dash-delivery-rate")).toHaveTextContent("—");
    expect(screen.getByText("No errors.")).toBeInTheDocument();
  });

  it("polls every 5 s and adds a throughput sample per answer", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const m = setup([
      makeDashboard(),
      makeDashboard({ streams_total: 6, throughput_rows_per_s: 4000, streams_by_status: { running: 6 } }),
    ]);
    renderPage("dashboard");
    expect(await screen.findByTestId("dash-total")).toHaveTextContent("5");
    expect(screen.getAllByRole("img", { name: /throughput sparkline/ })[0]).toHaveAttribute("data-samples", "1");
    await act(async () => {
      await vi.advanceTimersByTimeAsync(DASHBOARD_POLL_MS);
    });
    await waitFor(() => expect(screen.getByTestId("dash-total")).toHaveTextContent("6"));
    expect(m.callsTo("GET", "/api/v1/dashboard/")).toHaveLength(2);
    expect(screen.getByTestId("dash-throughput")).toHaveTextContent("4k rows/s");
    expect(screen.getAllByRole("img", { name: /throughput sparkline/ })[0]).toHaveAttribute("data-samples", "2");
    expect(screen.queryByTestId("dash-status-failed")).toBeNull();
  });

  it("shows the server's error", async () => {
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/dashboard/": reply(503, { detail: "database unavailable" }),
    });
    renderPage("dashboard");
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not load the dashboard: database unavailable");
  });

  it("draws throughput, lag and deliveries over the picked range, and a streams table by name", async () => {
    const m = setup();
    renderPage("dashboard");
    const rows = await screen.findAllByTestId("dash-stream-row");
    expect(rows).toHaveLength(2);
    expect(within(rows[0]).getByRole("link", { name: "air.pm25_daily" })).toHaveAttribute("href", "/streams/7/");
    expect(within(rows[0]).getByTestId("dash-stream-lag")).toHaveTextContent("1 h");
    expect(rows[0]).toHaveTextContent("30 rows/s");
    expect(rows[0]).toHaveTextContent("3 ok · 1 failed");
    expect(within(rows[1]).getByTestId("dash-stream-lag")).toHaveTextContent("—");
    expect(m.callsTo("GET", "/api/v1/dashboard/series/")[0].query.get("range")).toBe("1h");
    await act(async () => screen.getByRole("radio", { name: "24h" }).click());
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/dashboard/series/").at(-1)!.query.get("range")).toBe("24h"));
    expect(screen.getByRole("radio", { name: "24h" })).toHaveAttribute("aria-checked", "true");
    expect(screen.getByTestId("dash-series-range")).toHaveTextContent("one point per 1 min");
  });

  it("orders known statuses first", () => {
    expect(statusOrder({ failed: 1, running: 2, weird: 1, paused: 0 })).toEqual(["running", "failed", "weird"]);
  });
});
