import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { makeNotification, makeStream } from "../test/fixtures";
import { mockFetch } from "../test/mockFetch";
import { renderPage, serverPush } from "../test/render";
import { PAGE_SIZE } from "./InboxPage";

function setup() {
  return mockFetch({
    "GET /api/v1/notifications/unread-count/": { count: 2 },
    "GET /api/v1/streams/": { count: 2, results: [makeStream({ id: 1, name: "alerts_6h" }), makeStream({ id: 2, name: "daily_avg" })] },
    "GET /api/v1/notifications/": (req: { query: URLSearchParams }) => ({
      count: 2,
      next: null,
      previous: null,
      results: req.query.get("event_type") === "WINDOW_OPEN"
        ? []
        : [makeNotification({ id: 2, table_name: "t_2" }), makeNotification({ id: 1, table_name: "t_1", acknowledged: true })],
    }),
    "POST /api/v1/notifications/2/ack/": makeNotification({ id: 2, table_name: "t_2", acknowledged: true }),
    "POST /api/v1/notifications/ack-all/": { updated: 2 },
    "GET /api/v1/notifications/groups/": [
      { stream_name: "alerts_6h", table_name: "t_2", tags: { station: "Aotizhongxin" }, total: 1, unread: 1, latest_id: 2 },
      { stream_name: "alerts_6h", table_name: "t_1", tags: {}, total: 1, unread: 0, latest_id: 1 },
    ],
  });
}

describe("InboxPage", () => {
  it("lists notifications with formatted windows and expands the JSON", async () => {
    setup();
    renderPage("inbox");
    const row = await screen.findByTestId("notification-2");
    expect(within(row).getByText("alerts_6h")).toBeInTheDocument();
    expect(within(row).getByText("WINDOW_CLOSE")).toHaveClass("badge");
    // 00:00Z and 06:00Z shown in UTC (the test browser is in UTC+05:30), the raw value in a tooltip
    const start = within(row).getByText("2024-06-01 00:00:00 UTC");
    expect(start).toHaveAttribute("title", `raw: ${Date.parse("2024-06-01T00:00:00Z")}`);
    expect(within(row).getByText("2024-06-01 06:00:00 UTC")).toBeInTheDocument();
    expect(within(row).getByText("2024-06-01 06:00:01 UTC")).toBeInTheDocument();
    expect(within(screen.getByTestId("notification-1")).getByText("acknowledged")).toBeInTheDocument();

    expect(screen.queryByTestId("payload-2")).toBeNull();
    fireEvent.click(row);
    expect(screen.getByTestId("payload-2")).toHaveTextContent('"max(temperature)": 41.5');
  });

  it("shows a group by its tags, its tableName in a tooltip, and the payload's times in UTC", async () => {
    const wstart = Date.parse("2013-03-01T00:00:00Z");
    mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 2 },
      "GET /api/v1/streams/": { count: 0, results: [] },
      "GET /api/v1/notifications/groups/": [],
      "GET /api/v1/notifications/": {
        count: 2,
        next: null,
        previous: null,
        results: [
          makeNotification({
            id: 2,
            table_name: "t_79e19d85aa",
            group_tags: { station: "Aotizhongxin" },
            payload: { tableName: "t_79e19d85aa", eventType: "WINDOW_CLOSE", windowStart: wstart, windowEnd: wstart + 6 * 3600_000, result: { _wstart: wstart, "avg(pm25)": 9 } },
          }),
          makeNotification({ id: 1, table_name: "t_hash_only" }),
        ],
      },
    });
    renderPage("inbox");
    const group = await screen.findByTestId("group-of-2");
    expect(group).toHaveTextContent("station=Aotizhongxin");
    expect(group).not.toHaveTextContent("t_79e19d85aa");
    expect(group).toHaveAttribute("title", "tableName: t_79e19d85aa");
    expect(screen.getByTestId("group-of-1")).toHaveTextContent("t_hash_only"); // tags unknown
    fireEvent.click(screen.getByTestId("notification-2"));
    const times = screen.getByTestId("payload-times-2");
    expect(within(times).getByText("windowStart")).toBeInTheDocument();
    expect(times).toHaveTextContent(`2013-03-01 00:00:00 UTC (${wstart})`);
    expect(times).toHaveTextContent(`result._wstart2013-03-01 00:00:00 UTC (${wstart})`);
    expect(times).toHaveTextContent("2013-03-01 06:00:00 UTC");
  });

  it("acknowledges all notifications matching the filters, through the API's filters", async () => {
    const m = setup();
    renderPage("inbox");
    await screen.findByTestId("notification-2");
    await screen.findByRole("option", { name: /station=Aotizhongxin/ });
    fireEvent.change(screen.getByRole("combobox", { name: "Stream filter" }), { target: { value: "alerts_6h" } });
    fireEvent.change(screen.getByRole("combobox", { name: "Event type filter" }), { target: { value: "WINDOW_CLOSE" } });
    await screen.findByRole("option", { name: /station=Aotizhongxin \(1 unread\)/ });
    fireEvent.change(screen.getByRole("combobox", { name: "Group filter" }), { target: { value: "t_2" } });
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/notifications/").at(-1)!.query.get("group")).toBe("t_2"));
    fireEvent.click(await screen.findByRole("button", { name: "Acknowledge all matching" }));
    const dialog = screen.getByRole("dialog");
    expect(dialog).toHaveTextContent("stream alerts_6h, WINDOW_CLOSE, group station=Aotizhongxin");
    fireEvent.click(within(dialog).getByRole("button", { name: "Acknowledge all matching" }));
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/notifications/ack-all/")).toHaveLength(1));
    const q = m.callsTo("POST", "/api/v1/notifications/ack-all/")[0].query;
    expect(Object.fromEntries(q)).toEqual({ stream: "alerts_6h", event_type: "WINDOW_CLOSE", group: "t_2" });
  });

  it("groups the inbox by tags and acknowledges one group", async () => {
    const m = setup();
    renderPage("inbox");
    await screen.findByTestId("notification-2");
    fireEvent.click(screen.getByRole("checkbox", { name: /group by tags/ }));
    const g = await screen.findByTestId("group-alerts_6h-t_2");
    expect(g).toHaveTextContent("station=Aotizhongxin");
    expect(within(screen.getByTestId("group-alerts_6h-t_1")).getByRole("button", { name: "Acknowledge 0" })).toBeDisabled();
    fireEvent.click(within(g).getByRole("button", { name: "Acknowledge 1" }));
    fireEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Acknowledge all matching" }));
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/notifications/ack-all/")).toHaveLength(1));
    expect(Object.fromEntries(m.callsTo("POST", "/api/v1/notifications/ack-all/")[0].query)).toEqual({ stream: "alerts_6h", group: "t_2" });
    fireEvent.click(within(g).getByRole("button", { name: "Show" }));
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/notifications/").at(-1)!.query.get("group")).toBe("t_2"));
    expect(screen.getByRole("combobox", { name: "Stream filter" })).toHaveValue("alerts_6h");
  });

  it("prepends live notifications and updates the badge", async () => {
    setup();
    renderPage("inbox");
    await screen.findByTestId("notification-2");
    await waitFor(() => expect(screen.getByTestId("inbox-badge")).toHaveTextContent("2"));
    serverPush("/ws/inbox/", { type: "notification", notification: makeNotification({ id: 3, table_name: "t_new", event_type: "WINDOW_OPEN" }) });
    const rows = screen.getAllByTestId(/^notification-/);
    expect(rows[0]).toHaveAttribute("data-testid", "notification-3");
    expect(rows[0]).toHaveTextContent("t_new");
    expect(screen.getByTestId("inbox-badge")).toHaveTextContent("3");
    serverPush("/ws/inbox/", { type: "unread", count: 7 });
    expect(screen.getByTestId("inbox-badge")).toHaveTextContent("7");
  });

  it("refetches with filters and only shows matching live notifications", async () => {
    const m = setup();
    renderPage("inbox");
    await screen.findByTestId("notification-2");
    await screen.findByRole("option", { name: "daily_avg" });
    fireEvent.change(screen.getByRole("combobox", { name: "Stream filter" }), { target: { value: "daily_avg" } });
    fireEvent.change(screen.getByRole("combobox", { name: "Event type filter" }), { target: { value: "WINDOW_OPEN" } });
    fireEvent.click(screen.getByRole("checkbox", { name: /unacknowledged only/ }));
    await screen.findByText(/No notifications match these filters/);
    const q = m.callsTo("GET", "/api/v1/notifications/").at(-1)!.query;
    expect(q.get("stream")).toBe("daily_avg");
    expect(q.get("event_type")).toBe("WINDOW_OPEN");
    expect(q.get("acknowledged")).toBe("false");

    serverPush("/ws/inbox/", { type: "notification", notification: makeNotification({ id: 8, stream_name: "alerts_6h", event_type: "WINDOW_OPEN" }) });
    expect(screen.queryByTestId("notification-8")).toBeNull();
    serverPush("/ws/inbox/", { type: "notification", notification: makeNotification({ id: 9, stream_name: "daily_avg", event_type: "WINDOW_OPEN" }) });
    expect(screen.getByTestId("notification-9")).toBeInTheDocument();
  });

  it("acknowledges one notification", async () => {
    const m = setup();
    renderPage("inbox");
    const row = await screen.findByTestId("notification-2");
    await waitFor(() => expect(screen.getByTestId("inbox-badge")).toHaveTextContent("2"));
    m.on("GET /api/v1/notifications/unread-count/", { count: 1 });
    fireEvent.click(within(row).getByRole("button", { name: "Acknowledge" }));
    await waitFor(() => expect(within(row).getByText("acknowledged")).toBeInTheDocument());
    expect(m.callsTo("POST", "/api/v1/notifications/2/ack/")[0].headers["X-CSRFToken"]).toBe("tok123");
    await waitFor(() => expect(screen.getByTestId("inbox-badge")).toHaveTextContent("1"));
    // expanding did not happen through the button click
    expect(screen.queryByTestId("payload-2")).toBeNull();
  });

  it("does not count an acknowledgement twice when the server pushed the new count first", async () => {
    const m = setup();
    renderPage("inbox");
    const row = await screen.findByTestId("notification-2");
    await waitFor(() => expect(screen.getByTestId("inbox-badge")).toHaveTextContent("2"));
    m.on("GET /api/v1/notifications/unread-count/", { count: 1 });
    serverPush("/ws/inbox/", { type: "unread", count: 1 }); // the push of this ack, before its answer
    fireEvent.click(within(row).getByRole("button", { name: "Acknowledge" }));
    await waitFor(() => expect(within(row).getByText("acknowledged")).toBeInTheDocument());
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/notifications/unread-count/").length).toBeGreaterThan(1));
    await waitFor(() => expect(screen.getByTestId("inbox-badge")).toHaveTextContent("1"));
  });

  it("acknowledges all after confirmation", async () => {
    const m = setup();
    renderPage("inbox");
    await screen.findByTestId("notification-2");
    await waitFor(() => expect(screen.getByTestId("inbox-badge")).toBeInTheDocument());
    m.on("GET /api/v1/notifications/unread-count/", { count: 0 });
    fireEvent.click(screen.getByRole("button", { name: "Acknowledge all" }));
    fireEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Acknowledge all" }));
    await waitFor(() => expect(m.callsTo("POST", "/api/v1/notifications/ack-all/")).toHaveLength(1));
    expect(m.callsTo("POST", "/api/v1/notifications/ack-all/")[0].query.toString()).toBe(""); // no filter: all
    await waitFor(() => expect(screen.queryByTestId("inbox-badge")).toBeNull());
    expect(screen.queryByRole("button", { name: "Acknowledge" })).toBeNull();
  });

  it("loads older notifications by offset", async () => {
    const m = mockFetch({
      "GET /api/v1/notifications/unread-count/": { count: 0 },
      "GET /api/v1/streams/": { count: 0, next: null, previous: null, results: [] },
      "GET /api/v1/notifications/": (req: { query: URLSearchParams }) =>
        req.query.get("offset") === "2"
          ? { count: 3, next: null, previous: "x", results: [makeNotification({ id: 1, table_name: "t_old" })] }
          : { count: 3, next: "x", previous: null, results: [makeNotification({ id: 3 }), makeNotification({ id: 2 })] },
    });
    renderPage("inbox");
    await screen.findByTestId("notification-3");
    expect(m.callsTo("GET", "/api/v1/notifications/")[0].query.get("limit")).toBe(String(PAGE_SIZE));
    expect(screen.getByText("2 of 3")).toBeInTheDocument();
    fireEvent.click(screen.getByRole("button", { name: "Load more" }));
    expect(await screen.findByTestId("notification-1")).toHaveTextContent("t_old");
    expect(m.callsTo("GET", "/api/v1/notifications/").at(-1)!.query.get("offset")).toBe("2");
    expect(screen.getByText("3 of 3")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
  });
});
