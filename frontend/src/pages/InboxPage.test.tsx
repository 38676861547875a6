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
  });
}

describe("InboxPage", () => {
  it("lists notifications with formatted windows and expands the JSON", async () => {
    setup();
    renderPage("inbox");
    const row = await screen.findByTestId("notification-2");
    expect(within(row).getByText("alerts_6h")).toBeInTheDocument();
    expect(within(row).getByText("WINDOW_CLOSE")).toHaveClass("badge");
    // 00:00Z and 06:00Z in UTC+05:30
    expect(within(row).getByText("2024-06-01 05:30:00")).toBeInTheDocument();
    expect(within(row).getByText("2024-06-01 11:30:00")).toBeInTheDocument();
    expect(within(screen.getByTestId("notification-1")).getByText("acknowledged")).toBeInTheDocument();

    expect(screen.queryByTestId("payload-2")).toBeNull();
    fireEvent.click(row);
    expect(screen.getByTestId("payload-2")).toHaveTextContent('"max(temperature)": 41.5');
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
