// Start / stop / pause / resume / recalculate a range / drop, each after a confirmation, and
// "Edit in designer" (POST streams/{id}/edit/ → the designer on the returned draft). A
// recalculation first shows what it would change (a dry-run diff), then runs as a background job
// whose progress arrives with the stream (progress.phase "recalculation"); it can be cancelled.
// A FILL_HISTORY catch-up can be cancelled too ("skip rest of history"): what it wrote stays.
import { useState, type MouseEvent } from "react";
import {
  cancelHistory,
  cancelRecalculation,
  dropStream,
  editStream,
  errorText,
  recalculateStream,
  recalculationDiff,
  streamAction,
} from "../api/client";
import type { RecalcDiff, Stream, StreamAction, StreamStatus } from "../api/types";
import { msToUtcInput, utcInputToIso } from "../format";
import { nav, urls } from "../page";
import { ConfirmDialog } from "./ConfirmDialog";
import { RecalcDiffView } from "./RecalcDiffView";

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

type Pending = StreamAction | "drop" | "recalculate" | "cancel_history";

/** A FILL_HISTORY catch-up is under way and can be cancelled. */
export function canCancelHistory(stream: Stream): boolean {
  return stream.status === "catching_up" && stream.progress?.phase === "history" && !stream.history_cancelled;
}

const CONFIRM: Record<Pending, { title: string; text: string; label: string; danger?: boolean }> = {
  start: { title: "Start stream", text: "Start stream {name}? It resumes from its checkpoint.", label: "Start" },
  resume: { title: "Resume stream", text: "Resume stream {name}? It continues consuming rows.", label: "Resume" },
  pause: { title: "Pause stream", text: "Pause stream {name}? It stops consuming rows until resumed.", label: "Pause" },
  stop: { title: "Stop stream", text: "Stop stream {name}? Its run ends; start it again to continue.", label: "Stop", danger: true },
  recalculate: {
    title: "Recalculate stream",
    text: "Recalculate the windows of stream {name} between these times? Their output rows are rewritten: look at the changes first.",
    label: "Recalculate",
  },
  cancel_history: {
    title: "Skip the rest of the history",
    text: "Stop the FILL_HISTORY catch-up of stream {name}? The windows and notifications it has produced stay; the history rows not read yet are skipped for good, and the stream goes on with the rows written since it was created.",
    label: "Skip the rest",
    danger: true,
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

/** A background recalculation of the stream still queued or running (its job), else null. */
export function runningRecalculation(stream: Stream): { job_id?: number; state?: string } | null {
  const w = stream.progress;
  return w && w.phase === "recalculation" && (w.state === "queued" || w.state === "running") ? w : null;
}

/** The dry run of the range in the dialog: which range (`start/end`, ISO) it is of, and its answer. */
interface Preview {
  key: string;
  diff: RecalcDiff | null;
  error?: string;
}

function useRecalcPreview(streamId: number) {
  const [diff, setDiff] = useState<Preview | null>(null);
  const preview = async (start: string, end: string) => {
    const key = `${start}/${end}`;
    setDiff({ key, diff: null });
    try {
      const d = await recalculationDiff(streamId, start, end);
      setDiff((cur) => (cur?.key === key ? { key, diff: d } : cur));
    } catch (e) {
      setDiff((cur) => (cur?.key === key ? { key, diff: null, error: errorText(e) } : cur));
    }
  };
  return { diff, setDiff, preview };
}

/** The recalculation dialog's range inputs (UTC, ISO 8601) and the changes of that range. */
function RecalcForm({
  range,
  setRange,
  rangeError,
  shown,
  onPreview,
}: {
  range: { start: string; end: string };
  setRange: (f: (r: { start: string; end: string }) => { start: string; end: string }) => void;
  rangeError: string | null;
  shown: Preview | null;
  onPreview: () => void;
}) {
  return (
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
      {!rangeError && (
        <button type="button" className="btn-sm" data-testid="recalc-preview" disabled={!!shown && !shown.diff && !shown.error} onClick={onPreview}>
          {shown?.diff ? "Show changes again" : "Show changes"}
        </button>
      )}
      {shown && !shown.diff && !shown.error && <div className="muted small">computing the changes…</div>}
      {shown?.error && (
        <div className="field-error" data-testid="recalc-diff-error">
          {shown.error}
        </div>
      )}
      {shown?.diff && <RecalcDiffView diff={shown.diff} />}
    </div>
  );
}

export function StreamActions({ stream, onUpdated, onDropped, onError, compact }: StreamActionsProps) {
  const [confirming, setConfirming] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [range, setRange] = useState({ start: "", end: "" });
  const { diff, setDiff, preview } = useRecalcPreview(stream.id);
  const recalcJob = runningRecalculation(stream);

  const cancelRecalc = async () => {
    try {
      const { recalculation, ...updated } = await cancelRecalculation(stream.id);
      void recalculation;
      onUpdated(updated);
      setNote("recalculation cancelled: the output is unchanged");
    } catch (e) {
      onError(`cancel recalculation of ${stream.name}: ${errorText(e)}`);
    }
  };

  const run = async (what: Pending) => {
    setConfirming(null);
    setBusy(true);
    try {
      if (what === "drop") {
        await dropStream(stream.id);
        onDropped(stream.id);
      } else if (what === "recalculate") {
        setNote(null);
        const res = await recalculateStream(stream.id, utcInputToIso(range.start)!, utcInputToIso(range.end)!, true);
        const { recalculation, ...updated } = res;
        void recalculation;
        onUpdated(updated);
        setNote("recalculation started");
      } else if (what === "cancel_history") {
        onUpdated(await cancelHistory(stream.id));
        setNote("history catch-up cancelled: the stream goes on with live rows");
      } else {
        onUpdated(await streamAction(stream.id, what));
      }
    } catch (e) {
      onError(`${what} ${stream.name}: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const ask = (what: Pending) => {
    if (what === "recalculate") {
      const r = recalcDefaultRange(stream);
      const start = msToUtcInput(r.start);
      const end = msToUtcInput(r.end);
      setRange({ start, end });
      setDiff(null);
      void preview(utcInputToIso(start)!, utcInputToIso(end)!); // the default range's changes at once
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
  const diffKey = `${startIso}/${endIso}`;
  const shown = diff && diff.key === diffKey ? diff : null;
  const needsPreview = confirming === "recalculate" && !shown?.diff;

  return (
    <div className={`actions ${compact ? "actions-compact" : ""}`}>
      {acts.map((a) => (
        <button key={a} type="button" className={`btn-sm act-${a}`} disabled={busy} onClick={() => ask(a)}>
          {a}
        </button>
      ))}
      {canRecalculate(stream.status) && !recalcJob && (
        <button type="button" className="btn-sm act-recalculate" disabled={busy} onClick={() => ask("recalculate")}>
          recalculate
        </button>
      )}
      {recalcJob && (
        <button type="button" className="btn-sm btn-danger-outline" data-testid="recalc-cancel" onClick={() => void cancelRecalc()}>
          cancel recalculation
        </button>
      )}
      {canCancelHistory(stream) && (
        <button type="button" className="btn-sm btn-danger-outline" data-testid="history-cancel" disabled={busy} onClick={() => ask("cancel_history")}>
          skip rest of history
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
          confirmDisabled={!!rangeError || needsPreview}
          onConfirm={() => void run(confirming)}
          onCancel={() => setConfirming(null)}
        >
          {confirming === "recalculate" && (
            <RecalcForm range={range} setRange={setRange} rangeError={rangeError} shown={shown} onPreview={() => void preview(startIso!, endIso!)} />
          )}
        </ConfirmDialog>
      )}
    </div>
  );
}
