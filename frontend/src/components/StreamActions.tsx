// Start / stop / pause / resume / recalculate a range / drop, each after a confirmation, and
// "Edit in designer" (POST streams/{id}/edit/ → the designer on the returned draft).
import { useState, type MouseEvent } from "react";
import { dropStream, editStream, errorText, recalculateStream, streamAction } from "../api/client";
import type { Stream, StreamAction, StreamStatus } from "../api/types";
import { msToUtcInput, utcInputToIso } from "../format";
import { nav, urls } from "../page";
import { ConfirmDialog } from "./ConfirmDialog";
import { ProgressBar } from "./ProgressBar";

/** Which lifecycle actions make sense in which state. */
export function actionsFor(status: StreamStatus): StreamAction[] {
  switch (status) {
    case "starting":
      return ["stop"];
    case "running":
    case "catching_up":
      return ["pause", "stop"];
    case "paused":
      return ["resume", "stop"];
    case "stopped":
    case "failed":
      return ["start"];
    default:
      return [];
  }
}

/** Recalculation re-runs windows of a range; it needs a stream that has a run. */
export function canRecalculate(status: StreamStatus): boolean {
  return status === "running" || status === "catching_up" || status === "paused";
}

type Pending = StreamAction | "drop" | "recalculate";

const CONFIRM: Record<Pending, { title: string; text: string; label: string; danger?: boolean }> = {
  start: { title: "Start stream", text: "Start stream {name}? It resumes from its checkpoint.", label: "Start" },
  resume: { title: "Resume stream", text: "Resume stream {name}? It continues consuming rows.", label: "Resume" },
  pause: { title: "Pause stream", text: "Pause stream {name}? It stops consuming rows until resumed.", label: "Pause" },
  stop: { title: "Stop stream", text: "Stop stream {name}? Its run ends; start it again to continue.", label: "Stop", danger: true },
  recalculate: {
    title: "Recalculate stream",
    text: "Recalculate the windows of stream {name} between these times? Their output rows are rewritten.",
    label: "Recalculate",
  },
  drop: {
    title: "Drop stream",
    text: "Drop stream {name}? This deletes the stream definition and cannot be undone.",
    label: "Drop",
    danger: true,
  },
};

export interface StreamActionsProps {
  stream: Stream;
  onUpdated: (s: Stream) => void;
  onDropped: (id: number) => void;
  onError: (text: string) => void;
  compact?: boolean;
}

const HOUR_MS = 3600_000;
const MINUTE_MS = 60_000;

/**
 * The recalculation dialog's default range, epoch ms: the stream's last hour of data — ending at
 * the latest event time its last micro-batch saw (else its watermark), rounded up to the minute —
 * or the last hour of the wall clock for a stream that has not seen a row yet.
 */
export function recalcDefaultRange(stream: Stream, now: number = Date.now()): { start: number; end: number } {
  const p = stream.last_progress;
  const latest = p?.max_event_ms ?? p?.watermark_ms ?? null;
  const end = latest !== null ? Math.ceil(latest / MINUTE_MS) * MINUTE_MS : Math.floor(now / MINUTE_MS) * MINUTE_MS;
  return { start: end - HOUR_MS, end };
}

export function StreamActions({ stream, onUpdated, onDropped, onError, compact }: StreamActionsProps) {
  const [confirming, setConfirming] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const [recalculating, setRecalculating] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [range, setRange] = useState({ start: "", end: "" });

  const run = async (what: Pending) => {
    setConfirming(null);
    setBusy(true);
    try {
      if (what === "drop") {
        await dropStream(stream.id);
        onDropped(stream.id);
      } else if (what === "recalculate") {
        setRecalculating(true);
        setNote(null);
        const res = await recalculateStream(stream.id, utcInputToIso(range.start)!, utcInputToIso(range.end)!);
        const { recalculation, ...updated } = res;
        onUpdated(updated);
        if (recalculation) setNote(`recalculated ${recalculation.windows} window${recalculation.windows === 1 ? "" : "s"}`);
      } else {
        onUpdated(await streamAction(stream.id, what));
      }
    } catch (e) {
      onError(`${what} ${stream.name}: ${errorText(e)}`);
    } finally {
      setBusy(false);
      setRecalculating(false);
    }
  };

  const ask = (what: Pending) => {
    if (what === "recalculate") {
      const r = recalcDefaultRange(stream);
      setRange({ start: msToUtcInput(r.start), end: msToUtcInput(r.end) });
    }
    setConfirming(what);
  };

  const edit = async (e: MouseEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const draft = await editStream(stream.id);
      nav.go(urls.designer(draft.id));
    } catch (err) {
      onError(`edit ${stream.name}: ${errorText(err)}`);
      setBusy(false);
    }
  };

  const acts = actionsFor(stream.status);
  const conf = confirming ? CONFIRM[confirming] : undefined;
  const startIso = utcInputToIso(range.start);
  const endIso = utcInputToIso(range.end);
  const rangeError =
    confirming !== "recalculate"
      ? null
      : !startIso || !endIso
        ? "Give a start and an end in UTC, ISO 8601: 2024-01-02T03:04:05Z."
        : startIso >= endIso
          ? "The start must be before the end."
          : null;

  return (
    <div className={`actions ${compact ? "actions-compact" : ""}`}>
      {acts.map((a) => (
        <button key={a} type="button" className={`btn-sm act-${a}`} disabled={busy} onClick={() => ask(a)}>
          {a}
        </button>
      ))}
      {canRecalculate(stream.status) && (
        <button type="button" className="btn-sm act-recalculate" disabled={busy} onClick={() => ask("recalculate")}>
          recalculate
        </button>
      )}
      {stream.status !== "dropped" && (
        <button type="button" className="btn-sm btn-danger-outline" disabled={busy} onClick={() => ask("drop")}>
          drop
        </button>
      )}
      {stream.status !== "dropped" && (
        <a className="edit-link" href={urls.designer()} onClick={(e) => void edit(e)} aria-disabled={busy} data-testid="edit-in-designer">
          Edit in designer
        </a>
      )}
      {recalculating && <ProgressBar fraction={null} label="recalculating…" small testId="recalc-progress" />}
      {note && (
        <span className="muted small" data-testid="recalc-result">
          {note}
        </span>
      )}
      {confirming && conf && (
        <ConfirmDialog
          title={conf.title}
          message={conf.text.replace("{name}", stream.name)}
          confirmLabel={conf.label}
          danger={conf.danger}
          confirmDisabled={!!rangeError}
          onConfirm={() => void run(confirming)}
          onCancel={() => setConfirming(null)}
        >
          {confirming === "recalculate" && (
            <div className="recalc-form">
              <label>
                From (UTC){" "}
                <input
                  type="text"
                  className="mono"
                  placeholder="2024-01-02T03:04:05Z"
                  aria-label="Recalculate from (UTC)"
                  value={range.start}
                  onChange={(e) => setRange((r) => ({ ...r, start: e.target.value }))}
                />
              </label>
              <label>
                to (UTC){" "}
                <input
                  type="text"
                  className="mono"
                  placeholder="2024-01-02T04:04:05Z"
                  aria-label="Recalculate to (UTC)"
                  value={range.end}
                  onChange={(e) => setRange((r) => ({ ...r, end: e.target.value }))}
                />
              </label>
              {rangeError && (
                <div className="field-error" data-testid="recalc-error">
                  {rangeError}
                </div>
              )}
            </div>
          )}
        </ConfirmDialog>
      )}
    </div>
  );
}
