import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { nav } from "../page";
import FakeUPlot from "../test/fakeUplot";
import { makeDelivery, makeDetail, makeProgress, makeRun, page } from "../test/fixtures";
import { mockFetch, reply } from "../test/mockFetch";
import { openSocket, renderPage, serverPush } from "../test/render";

function setup(detail = makeDetail({ id: 4, name: "daily_avg", spark_ui_url: "http://spark:4040/" })) {
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 0 },
    "GET /api/v1/streams/4/": detail,
    "GET /api/v1/streams/4/progress/": [
      makeProgress({ batch_id: 1, created_at: "2024-06-01T10:00:00Z", rows_per_s: 10 }),
      makeProgress({ batch_id: 2, created_at: "2024-06-01T10:00:10Z", rows_per_s: 20 }),
    ],
    "GET /api/v1/streams/4/deliveries/": page([
      makeDelivery({ id: 2, ok: false, error: "connection refused", attempt: 3 }),
      makeDelivery({ id: 1 }),
    ]),
    "GET /api/v1/streams/4/runs/": page([
      makeRun({ id: 9, state: "running", restarts: 2 }),
      makeRun({ id: 8, state: "failed", ended_at: "2024-06-01T07:59:00Z", error: "Py4JJavaError: stage failed\nCaused by: java.lang.OutOfMemoryError" }),
    ]),
    "GET /api/v1/databases/weather/tables/daily_avg_out/rows/": {
      columns: ["_wstart", "avg_temp", "station"],
      types: ["TIMESTAMP", "DOUBLE", "VARCHAR"],
      rows: [
        ["2024-06-02T00:00:00.000Z", 21.5, "a"],
        ["2024-06-01T00:00:00.000Z", 20.5, "a"],
      ],
    },
  });
}

describe("StreamPage", () => {
  it("shows header, SQL, Spark UI link, deliveries, runs and the output table", async () => {
    const m = setup();
    renderPage("stream", { streamId: 4 });
    expect(await screen.findByTestId("stream-name")).toHaveTextContent("daily_avg");
    expect(screen.getByTestId("stream-sql")).toHaveTextContent("CREATE STREAM daily_avg");
    expect(screen.getByRole("link", { name: /Spark UI/ })).toHaveAttribute("href", "http://spark:4040/");
    expect(m.callsTo("GET", "/api/v1/streams/4/progress/")[0].query.get("limit")).toBe("300");
    expect(m.callsTo("GET", "/api/v1/streams/4/deliveries/")[0].query.get("limit")).toBe("100");

    const deliveries = await screen.findByTestId("deliveries");
    expect(within(deliveries).getByText("connection refused")).toBeInTheDocument();
    expect(within(deliveries).getAllByText("failed")).toHaveLength(1);
    expect(await screen.findByTestId("runs")).toBeInTheDocument();
    expect(within(screen.getByTestId("run-9")).getByText("2")).toBeInTheDocument();

    expect(screen.getByTestId("target-link")).toHaveAttribute("href", "/tables/?db=weather&table=daily_avg_out");
    await waitFor(() => expect(FakeUPlot.byTitle("weather.daily_avg_out (latest 2 rows)")).toBeDefined());
    const out = FakeUPlot.byTitle("weather.daily_avg_out (latest 2 rows)")!;
    // one line per output group, labelled by its tag (the station), not one line for all rows
    expect(out.labels).toEqual(["station=a"]);
    expect(out.opts.axes[0].label).toBe("event time (_wstart)");
    // sorted by time for the chart
    expect(out.data[1]).toEqual([20.5, 21.5]);
  });

  it("feeds initial progress and live messages into the charts", async () => {
    setup();
    renderPage("stream", { streamId: 4 });
    await screen.findByTestId("stream-name");
    // processed rows/s straight from the records; arrived rows/s = input rows / time between batches
    await waitFor(() => expect(FakeUPlot.byTitle("Processing rows/s")?.data[1]).toEqual([10, 20]));
    expect(FakeUPlot.byTitle("Input rows/s")!.data[1]).toEqual([null, 10]);
    const charts = screen.getByTestId("progress-charts");
    expect(charts.querySelectorAll(".fake-uplot")).toHaveLength(8);
    expect(FakeUPlot.byTitle("Processing rows/s")!.labels).toEqual(["processed rows/s", "output rows/s"]);
    // 2 output rows in 120 ms
    expect(FakeUPlot.byTitle("Processing rows/s")!.data[2]).toEqual([2 / 0.12, 2 / 0.12]);
    expect(FakeUPlot.byTitle("Notifications")!.labels).toEqual(["sent", "failed"]);
    expect(FakeUPlot.byTitle("Recalculations")!.labels).toEqual(["recalculated", "expired rows"]);
    // lags in seconds behind each batch's wall-clock time, not two clocks with time-of-day labels
    const wm = FakeUPlot.byTitle("Lag behind wall clock")!;
    expect(wm.labels).toEqual(["watermark lag (wall clock − watermark)", "event lag (wall clock − newest event time)"]);
    // batches at 10:00:00 and 10:00:10, watermark 09:59:50 and newest event 09:59:55 in both
    expect(wm.data[1]).toEqual([10, 20]);
    expect(wm.data[2]).toEqual([5, 15]);
    expect(wm.opts.axes[1].values(null, [90])).toEqual(["1 min 30 s"]);
    expect(wm.opts.axes[0].label).toBe("batch time (wall clock)");

    openSocket("/ws/streams/4/");
    serverPush("/ws/streams/4/", {
      type: "stream.progress",
      stream_id: 4,
      progress: makeProgress({ batch_id: 3, created_at: "2024-06-01T10:00:20Z", rows_per_s: 35, input_rows: 300, state_bytes: 9999 }),
    });
    const rate = FakeUPlot.byTitle("Processing rows/s")!;
    expect(rate.data[0]).toHaveLength(3);
    expect(rate.data[1]).toEqual([10, 20, 35]);
    expect(FakeUPlot.byTitle("Input rows/s")!.data[1]).toEqual([null, 10, 30]);
    expect(FakeUPlot.byTitle("State size")!.data[1]).toEqual([2048, 2048, 9999]);
    expect(screen.getByText("35 rows/s")).toBeInTheDocument();

    // Messages for other streams are ignored.
    serverPush("/ws/streams/4/", { type: "stream.progress", stream_id: 5, progress: makeProgress({ batch_id: 4 }) });
    expect(FakeUPlot.byTitle("Processing rows/s")!.data[0]).toHaveLength(3);
  });

  it("expands a run's error log", async () => {
    setup();
    renderPage("stream", { streamId: 4 });
    const run = await screen.findByTestId("run-8");
    expect(screen.queryByTestId("run-error-8")).toBeNull();
    const toggle = within(run).getByRole("button", { name: /Py4JJavaError: stage failed/ });
    expect(toggle).not.toHaveTextContent("OutOfMemoryError");
    fireEvent.click(toggle);
    expect(screen.getByTestId("run-error-8")).toHaveTextContent("Caused by: java.lang.OutOfMemoryError");
    expect(toggle).toHaveAttribute("aria-expanded", "true");
    fireEvent.click(toggle);
    expect(screen.queryByTestId("run-error-8")).toBeNull();
  });

  it("pages through the delivery log", async () => {
    const m = setup();
    m.on("GET /api/v1/streams/4/deliveries/", (req: { query: URLSearchParams }) =>
      req.query.get("offset") === "100"
        ? page([makeDelivery({ id: 5, error: "older failure", ok: false })], 101)
        : page([makeDelivery({ id: 6 })], 101),
    );
    renderPage("stream", { streamId: 4 });
    const pager = await screen.findByTestId("deliveries-pager");
    expect(screen.getByText(/Delivery log \(101\)/)).toBeInTheDocument();
    expect(m.callsTo("GET", "/api/v1/streams/4/deliveries/")[0].query.get("limit")).toBe("100");
    fireEvent.click(within(pager).getByRole("button", { name: /Older/ }));
    expect(await screen.findByText("older failure")).toBeInTheDocument();
    expect(m.callsTo("GET", "/api/v1/streams/4/deliveries/").at(-1)!.query.get("offset")).toBe("100");
    expect(within(pager).getByRole("button", { name: /Older/ })).toBeDisabled();
  });

  it("shows the server's catch-up progress", async () => {
    setup(
      makeDetail({
        id: 4,
        status: "catching_up",
        progress: { phase: "history", fraction: 0.6, label: "catching up on history: 60% (6 of 10 rows)", rows_done: 6, rows_total: 10 },
      }),
    );
    renderPage("stream", { streamId: 4 });
    const box = await screen.findByTestId("catchup");
    expect(within(box).getByRole("progressbar")).toHaveAttribute("aria-valuenow", "60");
    expect(within(box).getByTestId("progress-bar")).toHaveTextContent("catching up on history: 60% (6 of 10 rows)");
    expect(screen.getByTestId("status-badge")).toHaveTextContent("catching up");
  });

  it("updates the status badge from stream.status and shows the last error", async () => {
    setup();
    renderPage("stream", { streamId: 4 });
    await screen.findByTestId("stream-name");
    serverPush("/ws/streams/4/", {
      type: "stream.status",
      stream: { ...makeDetail({ id: 4, name: "daily_avg", status: "failed", last_error: "Spark job aborted" }), spec: undefined },
    });
    expect(screen.getByTestId("last-error")).toHaveTextContent("Spark job aborted");
    expect(screen.getAllByText("failed")[0]).toHaveClass("status-failed");
    expect(screen.getByRole("button", { name: "start" })).toBeInTheDocument();
  });

  it("shows a catch-up bar while replaying history", async () => {
    const now = Date.now();
    const m = setup(
      makeDetail({ id: 4, status: "catching_up", last_progress: makeProgress({ phase: "history", max_event_ms: now - 3600_000 }) }),
    );
    m.on("GET /api/v1/streams/4/progress/", [
      makeProgress({ batch_id: 1, phase: "history", max_event_ms: now - 4 * 3600_000 }),
      makeProgress({ batch_id: 2, phase: "history", max_event_ms: now - 3600_000 }),
    ]);
    renderPage("stream", { streamId: 4 });
    const bar = await screen.findByTestId("catchup");
    expect(bar).toHaveTextContent("Catching up on history");
    expect(bar).toHaveTextContent("1 h behind");
    await waitFor(() => expect(within(bar).getByRole("progressbar")).toHaveAttribute("aria-valuenow", "75"));
  });

  it("navigates to the list after dropping", async () => {
    const m = setup();
    m.on("DELETE /api/v1/streams/4/", reply(204));
    const go = vi.spyOn(nav, "go").mockImplementation(() => {});
    renderPage("stream", { streamId: 4 });
    await screen.findByTestId("stream-name");
    fireEvent.click(screen.getByRole("button", { name: "drop" }));
    fireEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Drop" }));
    await waitFor(() => expect(go).toHaveBeenCalledWith("/"));
  });

  it("keeps the NOTIFY key redacted until its owner asks to show or copy it", async () => {
    const redacted = "CREATE STREAM s INTO o AS SELECT 1 FROM t\n  NOTIFY ('ws://h/ws/notify/inbox?key=******')";
    const real = redacted.replace("******", "k3y");
    const m = setup(makeDetail({ id: 4, name: "s", sql: redacted }));
    m.on("POST /api/v1/streams/4/sql/reveal/", { sql: real });
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    renderPage("stream", { streamId: 4 });
    const sql = await screen.findByTestId("stream-sql");
    expect(sql).toHaveTextContent("key=******");
    expect(sql).not.toHaveTextContent("k3y");
    expect(m.callsTo("POST", "/api/v1/streams/4/sql/reveal/")).toHaveLength(0); // not without asking
    fireEvent.click(screen.getByRole("button", { name: "Show secrets" }));
    await waitFor(() => expect(screen.getByTestId("stream-sql")).toHaveTextContent("key=k3y"));
    fireEvent.click(screen.getByRole("button", { name: "Hide secrets" }));
    expect(screen.getByTestId("stream-sql")).toHaveTextContent("key=******");
    fireEvent.click(screen.getByRole("button", { name: "Copy with secrets" }));
    await waitFor(() => expect(writeText).toHaveBeenCalledWith(real));
    expect(screen.getByTestId("stream-sql")).not.toHaveTextContent("k3y"); // copied, not shown
  });

  it("says why the secrets cannot be shown to someone else", async () => {
    const m = setup(makeDetail({ id: 4, name: "s", sql: "CREATE STREAM s NOTIFY ('ws://h/x?key=******')" }));
    m.on("POST /api/v1/streams/4/sql/reveal/", reply(403, { code: 0x2644, desc: "Permission denied or target object not exist: the NOTIFY secrets of stream s are shown to its owner only" }));
    renderPage("stream", { streamId: 4 });
    fireEvent.click(await screen.findByRole("button", { name: "Show secrets" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("shown to its owner only");
    expect(screen.getByTestId("stream-sql")).toHaveTextContent("key=******");
  });

  it("offers no secrets to show when the SQL has none", async () => {
    setup();
    renderPage("stream", { streamId: 4 });
    await screen.findByTestId("stream-sql");
    expect(screen.queryByRole("button", { name: "Show secrets" })).toBeNull();
  });

  it("shows an error when the stream does not exist", async () => {
    mockFetch({ "GET /api/v1/streams/4/": reply(404, { detail: "Not found." }) });
    renderPage("stream", { streamId: 4 });
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not load stream 4: Not found.");
  });
});
