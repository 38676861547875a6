// A fake WebSocket: tests open it, push server messages and drop it.
export class FakeWebSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  static instances: FakeWebSocket[] = [];

  readonly url: string;
  readyState = FakeWebSocket.CONNECTING;
  sent: string[] = [];
  closedByClient = false;
  onopen: ((ev: Event) => void) | null = null;
  onmessage: ((ev: MessageEvent) => void) | null = null;
  onclose: ((ev: CloseEvent) => void) | null = null;
  onerror: ((ev: Event) => void) | null = null;

  constructor(url: string) {
    this.url = url;
    FakeWebSocket.instances.push(this);
  }

  send(data: string): void {
    this.sent.push(data);
  }

  close(): void {
    this.closedByClient = true;
    this.readyState = FakeWebSocket.CLOSED;
    this.onclose?.(new CloseEvent("close", { code: 1000 }));
  }

  // --- test helpers ---

  /** Server accepts the connection. */
  open(): void {
    this.readyState = FakeWebSocket.OPEN;
    this.onopen?.(new Event("open"));
  }

  /** Server sends a JSON message. */
  receive(msg: unknown): void {
    this.onmessage?.(new MessageEvent("message", { data: JSON.stringify(msg) }));
  }

  /** Server (or network) drops the connection. */
  drop(): void {
    this.readyState = FakeWebSocket.CLOSED;
    this.onclose?.(new CloseEvent("close", { code: 1006 }));
  }

  /** The newest socket (not closed by the client) whose URL ends with `path`. */
  static find(path: string): FakeWebSocket | undefined {
    return FakeWebSocket.instances.filter((w) => !w.closedByClient && w.url.endsWith(path)).at(-1);
  }

  static reset(): void {
    FakeWebSocket.instances = [];
  }
}
