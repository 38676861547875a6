// Header (product, nav, inbox badge, live state, user, sign-out) around every page.
import type { ReactNode } from "react";
import { useInbox } from "../inbox";
import { urls, usePage } from "../page";
import { LiveIndicator } from "./common";

const NAV: { page: string[]; label: string; href: string }[] = [
  { page: ["dashboard"], label: "Dashboard", href: urls.dashboard() },
  { page: ["streams", "stream"], label: "Streams", href: urls.streams() },
  { page: ["designer"], label: "Designer", href: urls.designer() },
  { page: ["create"], label: "New stream (SQL)", href: urls.create() },
  { page: ["tables"], label: "Tables & SQL console", href: urls.tables() },
  { page: ["inbox"], label: "Inbox", href: urls.inbox() },
];

export function Layout({ children }: { children: ReactNode }) {
  const ctx = usePage();
  const inbox = useInbox();
  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" href={urls.streams()}>
          tdweb
        </a>
        <nav className="nav">
          {NAV.map((n) => (
            <a key={n.label} href={n.href} className={n.page.includes(ctx.page) ? "active" : undefined}>
              {n.label}
              {n.label === "Inbox" && !!inbox.unread && (
                <span className="nav-badge" data-testid="inbox-badge" title={`${inbox.unread} unread notifications`}>
                  {inbox.unread > 999 ? "999+" : inbox.unread}
                </span>
              )}
            </a>
          ))}
        </nav>
        <div className="topbar-right">
          <LiveIndicator status={inbox.status} title="Inbox live updates" />
          {ctx.isStaff && (
            <a className="admin-link" href="/admin/">
              admin
            </a>
          )}
          <span className="user">{ctx.username || "anonymous"}</span>
          <form method="post" action={urls.logout()} className="logout-form">
            <input type="hidden" name="csrfmiddlewaretoken" value={ctx.csrf} />
            <button type="submit" className="link-button">
              Sign out
            </button>
          </form>
        </div>
      </header>
      <main className="content">{children}</main>
    </div>
  );
}
