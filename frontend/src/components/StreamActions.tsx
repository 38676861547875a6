// Pause / resume / stop / start / drop buttons with confirmation for the disruptive ones.
import { useState } from "react";
import { dropStream, errorText, streamAction } from "../api/client";
import type { Stream, StreamAction, StreamStatus } from "../api/types";
import { ConfirmDialog } from "./ConfirmDialog";

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

type Pending = StreamAction | "drop";

const CONFIRM: Partial<Record<Pending, { title: string; text: string; label: string; danger?: boolean }>> = {
  pause: { title: "Pause stream", text: "Pause stream {name}? It stops consuming rows until resumed.", label: "Pause" },
  stop: { title: "Stop stream", text: "Stop stream {name}? Its run ends; start it again to continue.", label: "Stop", danger: true },
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

export function StreamActions({ stream, onUpdated, onDropped, onError, compact }: StreamActionsProps) {
  const [confirming, setConfirming] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (what: Pending) => {
    setConfirming(null);
    setBusy(true);
    try {
      if (what === "drop") {
        await dropStream(stream.id);
        onDropped(stream.id);
      } else {
        onUpdated(await streamAction(stream.id, what));
      }
    } catch (e) {
      onError(`${what} ${stream.name}: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const click = (what: Pending) => {
    if (CONFIRM[what]) setConfirming(what);
    else void run(what);
  };

  const acts = actionsFor(stream.status);
  const conf = confirming ? CONFIRM[confirming] : undefined;
  return (
    <div className={`actions ${compact ? "actions-compact" : ""}`}>
      {acts.map((a) => (
        <button key={a} type="button" className={`btn-sm act-${a}`} disabled={busy} onClick={() => click(a)}>
          {a}
        </button>
      ))}
      {stream.status !== "dropped" && (
        <button type="button" className="btn-sm btn-danger-outline" disabled={busy} onClick={() => click("drop")}>
          drop
        </button>
      )}
      {confirming && conf && (
        <ConfirmDialog
          title={conf.title}
          message={conf.text.replace("{name}", stream.name)}
          confirmLabel={conf.label}
          danger={conf.danger}
          onConfirm={() => void run(confirming)}
          onCancel={() => setConfirming(null)}
        />
      )}
    </div>
  );
}
