import { screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { mockFetch } from "../test/mockFetch";
import { openSocket, renderPage, serverPush } from "../test/render";

describe("Layout", () => {
  it("renders the product name, nav, user and a CSRF-protected sign-out form", async () => {
    mockFetch({ "GET /api/v1/notifications/unread-count/": { count: 0 }, "GET /api/v1/databases/": [] });
    const { container } = renderPage("tables", { username: "bob", isStaff: true, csrf: "xyz" });
    expect(screen.getByRole("link", { name: "tdweb" })).toHaveAttribute("href", "/");
    // the nav says where each SQL surface is: stream creation and the query console
    expect(screen.getByRole("link", { name: "Tables & SQL console" })).toHaveClass("active");
    expect(screen.getByRole("link", { name: "New stream (SQL)" })).toHaveAttribute("href", "/streams/new/");
    expect(screen.getByRole("link", { name: "Inbox" })).toHaveAttribute("href", "/inbox/");
    expect(screen.getByText("bob")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "admin" })).toBeInTheDocument();
    const form = container.querySelector("form.logout-form") as HTMLFormElement;
    expect(form.method).toBe("post");
    expect(form.getAttribute("action")).toBe("/accounts/logout/");
    expect((form.querySelector("input[name=csrfmiddlewaretoken]") as HTMLInputElement).value).toBe("xyz");
  });

  it("shows the unread badge and keeps it live on any page", async () => {
    mockFetch({ "GET /api/v1/notifications/unread-count/": { count: 4 }, "GET /api/v1/databases/": [] });
    renderPage("create");
    expect(await screen.findByTestId("inbox-badge")).toHaveTextContent("4");
    const ws = openSocket("/ws/inbox/");
    expect(ws.url).toMatch(/^ws:\/\/.*\/ws\/inbox\/$/);
    expect(screen.getAllByTestId("live-indicator")[0]).toHaveTextContent("live");
    serverPush("/ws/inbox/", { type: "unread", count: 0 });
    await waitFor(() => expect(screen.queryByTestId("inbox-badge")).toBeNull());
    serverPush("/ws/inbox/", { type: "unread", count: 12 });
    expect(screen.getByTestId("inbox-badge")).toHaveTextContent("12");
  });

  it("shows reconnecting when the socket drops", async () => {
    mockFetch({ "GET /api/v1/notifications/unread-count/": { count: 0 }, "GET /api/v1/databases/": [] });
    renderPage("create");
    const ws = openSocket("/ws/inbox/");
    const { act } = await import("@testing-library/react");
    act(() => ws.drop());
    expect(screen.getAllByTestId("live-indicator")[0]).toHaveTextContent("reconnecting");
  });

  it("reports an unknown page", () => {
    mockFetch({ "GET /api/v1/notifications/unread-count/": { count: 0 } });
    renderPage("nope");
    expect(screen.getByRole("alert")).toHaveTextContent('Unknown page "nope"');
  });
});
