// Reconnecting JSON WebSocket (Channels). ws:// or wss:// follows location.protocol.
import { useEffect, useRef, useState } from "react";

export type LiveStatus = "connecting" | "live" | "reconnecting";

export function wsUrl(path: string, loc: Pick<Location, "protocol" | "host"> = window.location): string {
  const proto = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${proto}//${loc.host}${path}`;
}

export interface LiveSocketOptions {
  /** First reconnect delay (ms); doubles per failed attempt. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

/** Reconnect delay after `attempt` consecutive failures (0-based). */
export function backoffDelay(attempt: number, minMs = 1000, maxMs = 30000): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(attempt, 20));
}

export class LiveSocket<M = unknown> {
  private ws: WebSocket | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private attempt = 0;
  private closed = false;
  private readonly minDelay: number;
  private readonly maxDelay: number;

  constructor(
    private readonly path: string,
    private readonly onMessage: (msg: M) => void,
    private readonly onStatus: (s: LiveStatus) => void = () => {},
    opts: LiveSocketOptions = {},
  ) {
    this.minDelay = opts.minDelayMs ?? 1000;
    this.maxDelay = opts.maxDelayMs ?? 30000;
  }

  start(): void {
    this.closed = false;
    this.connect();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close();
      } catch {
        /* already closed */
      }
    }
  }

  private connect(): void {
    if (this.closed) return;
    this.onStatus(this.attempt === 0 ? "connecting" : "reconnecting");
    let ws: WebSocket;
    try {
      ws = new WebSocket(wsUrl(this.path));
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.onStatus("live");
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (typeof ev.data !== "string") return;
      let msg: M;
      try {
        msg = JSON.parse(ev.data) as M;
      } catch {
        return;
      }
      this.onMessage(msg);
    };
    ws.onerror = () => {
      /* a close event follows */
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    this.onStatus("reconnecting");
    const delay = backoffDelay(this.attempt, this.minDelay, this.maxDelay);
    this.attempt += 1;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }
}

/**
 * Subscribes to a JSON WebSocket for the component's lifetime; `onMessage` may change between
 * renders without reconnecting. `path` null → no socket.
 */
export function useLiveSocket<M>(path: string | null, onMessage: (msg: M) => void): LiveStatus {
  const [status, setStatus] = useState<LiveStatus>("connecting");
  const handler = useRef(onMessage);
  handler.current = onMessage;
  useEffect(() => {
    if (!path) return undefined;
    const sock = new LiveSocket<M>(path, (m) => handler.current(m), setStatus);
    sock.start();
    return () => sock.close();
  }, [path]);
  return status;
}
