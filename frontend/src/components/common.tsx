// Small shared pieces: status badge, live indicator, error banner, spinner, empty state.
import { useEffect, useState, type ReactNode } from "react";
import type { LiveStatus } from "../api/live";
import type { StreamStatus } from "../api/types";

export function StatusBadge({ status, testId = "status-badge" }: { status: StreamStatus | string; testId?: string }) {
  return (
    <span className={`badge status-${status}`} data-testid={testId} data-status={status}>
      {String(status).replace(/_/g, " ")}
    </span>
  );
}

export function LiveIndicator({ status, title }: { status: LiveStatus; title?: string }) {
  const label = status === "live" ? "live" : status === "connecting" ? "connecting" : "reconnecting";
  return (
    <span className={`live live-${status}`} title={title ?? `Live updates: ${label}`} data-testid="live-indicator">
      <span className="live-dot" />
      {label}
    </span>
  );
}

export function ErrorBanner({ error, onDismiss }: { error: ReactNode; onDismiss?: () => void }) {
  if (error === null || error === undefined || error === "" || error === false) return null;
  return (
    <div className="banner banner-error" role="alert">
      <span className="banner-text">{error}</span>
      {onDismiss && (
        <button type="button" className="banner-close" onClick={onDismiss} aria-label="Dismiss">
          ×
        </button>
      )}
    </div>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <div className="loading" role="status">
      <span className="spinner" /> {what}…
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="empty">{children}</div>;
}

/** Re-renders every `ms` and returns Date.now() (for wall-clock lag). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function Section({ title, actions, children, className }: { title: ReactNode; actions?: ReactNode; children: ReactNode; className?: string }) {
  return (
    <section className={`panel ${className ?? ""}`}>
      <header className="panel-head">
        <h2>{title}</h2>
        {actions && <div className="panel-actions">{actions}</div>}
      </header>
      <div className="panel-body">{children}</div>
    </section>
  );
}
