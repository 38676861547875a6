// A labelled progress bar (role=progressbar): determinate with a fraction, else indeterminate.
import type { ReactNode } from "react";
import type { StreamWork } from "../api/types";
import { formatDuration, formatRate, percent } from "../format";

export function ProgressBar({
  fraction,
  label,
  testId = "progress-bar",
  small,
  rowsPerS,
  etaS,
}: {
  /** 0..1, or null when unknown (indeterminate). */
  fraction: number | null | undefined;
  label?: ReactNode;
  testId?: string;
  small?: boolean;
  /** Throughput of the work (rows/s, WorkProgress.rows_per_s); shown when known. */
  rowsPerS?: number | null;
  /** Seconds left (WorkProgress.eta_s); shown when known. */
  etaS?: number | null;
}) {
  const pct = percent(fraction);
  const rate = rateText(rowsPerS, etaS);
  return (
    <div className={`progress-block ${small ? "progress-small" : ""}`} data-testid={testId}>
      {label !== undefined && (
        <div className="progress-label">
          {label}
          {pct !== null && <span className="progress-pct"> {pct}%</span>}
        </div>
      )}
      <div
        className={`progress ${pct === null ? "progress-indeterminate" : ""}`}
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct ?? undefined}
        aria-label={typeof label === "string" ? label : "progress"}
      >
        <div className="progress-fill" style={{ width: pct === null ? "30%" : `${Math.max(2, pct)}%` }} />
      </div>
      {rate && (
        <div className="progress-rate muted small" data-testid={`${testId}-rate`}>
          {rate}
        </div>
      )}
    </div>
  );
}

/** "1.2k rows/s · ETA 3 min 5 s" from a work's rate and seconds left; null when neither is known. */
export function rateText(rowsPerS: number | null | undefined, etaS: number | null | undefined): string | null {
  const parts: string[] = [];
  if (rowsPerS !== null && rowsPerS !== undefined && Number.isFinite(rowsPerS)) parts.push(formatRate(rowsPerS));
  if (etaS !== null && etaS !== undefined && Number.isFinite(etaS)) parts.push(etaS <= 0 ? "done" : `ETA ${formatDuration(etaS * 1000)}`);
  return parts.length ? parts.join(" · ") : null;
}

/** The label of a stream's long-running work: the server's label, else one from its phase. */
export function workLabel(w: StreamWork): string {
  if (w.label) return w.label;
  if (w.phase === "history") return "catching up on history";
  if (w.phase === "recalculation" || w.phase === "recalculate") return "recalculating";
  return w.phase;
}

/** Long work worth a bar: anything but the steady live phase. */
export function isLongWork(w: StreamWork | null | undefined): w is StreamWork {
  return !!w && w.phase !== "live";
}
