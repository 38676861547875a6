// One /ws/inbox/ socket per page: drives the header badge and feeds the inbox page.
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { unreadCount } from "./api/client";
import { useLiveSocket, type LiveStatus } from "./api/live";
import type { InboxSocketMessage, Notification } from "./api/types";

export interface InboxState {
  unread: number | null;
  status: LiveStatus;
  setUnread: (n: number | ((prev: number) => number)) => void;
  refreshUnread: () => void;
  /** Called with every notification pushed by the server; returns the unsubscribe function. */
  subscribe: (fn: (n: Notification) => void) => () => void;
}

const InboxCtx = createContext<InboxState>({
  unread: null,
  status: "connecting",
  setUnread: () => {},
  refreshUnread: () => {},
  subscribe: () => () => {},
});

export function useInbox(): InboxState {
  return useContext(InboxCtx);
}

export function InboxProvider({ children }: { children: ReactNode }) {
  const [unread, setUnreadState] = useState<number | null>(null);
  const subscribers = useRef(new Set<(n: Notification) => void>());

  const refreshUnread = useCallback(() => {
    unreadCount()
      .then((r) => setUnreadState(r.count))
      .catch(() => {
        /* the badge just stays as it is */
      });
  }, []);

  useEffect(() => {
    refreshUnread();
  }, [refreshUnread]);

  const status = useLiveSocket<InboxSocketMessage>("/ws/inbox/", (msg) => {
    if (msg.type === "unread") {
      setUnreadState(msg.count);
    } else if (msg.type === "notification") {
      // An "unread" message, when the server sends one, overrides this estimate.
      if (!msg.notification.acknowledged) setUnreadState((c) => (c ?? 0) + 1);
      subscribers.current.forEach((fn) => fn(msg.notification));
    }
  });

  const setUnread = useCallback((n: number | ((prev: number) => number)) => {
    setUnreadState((prev) => Math.max(0, typeof n === "function" ? n(prev ?? 0) : n));
  }, []);

  const subscribe = useCallback((fn: (n: Notification) => void) => {
    subscribers.current.add(fn);
    return () => {
      subscribers.current.delete(fn);
    };
  }, []);

  const value = useMemo(
    () => ({ unread, status, setUnread, refreshUnread, subscribe }),
    [unread, status, setUnread, refreshUnread, subscribe],
  );
  return <InboxCtx.Provider value={value}>{children}</InboxCtx.Provider>;
}
