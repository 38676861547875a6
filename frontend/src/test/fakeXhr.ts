// A fake XMLHttpRequest for uploads: tests drive upload progress and the answer.
import { act } from "@testing-library/react";

export class FakeXhr {
  static instances: FakeXhr[] = [];
  method = "";
  url = "";
  headers: Record<string, string> = {};
  body: FormData | null = null;
  status = 0;
  statusText = "";
  responseText = "";
  withCredentials = false;
  aborted = false;
  upload: { onprogress: ((e: ProgressEvent) => void) | null } = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;

  constructor() {
    FakeXhr.instances.push(this);
  }

  open(method: string, url: string): void {
    this.method = method;
    this.url = url;
  }

  setRequestHeader(k: string, v: string): void {
    this.headers[k] = v;
  }

  send(body: FormData): void {
    this.body = body;
  }

  abort(): void {
    this.aborted = true;
    this.onabort?.();
  }

  // --- test helpers (inside act) ---

  progress(loaded: number, total: number): void {
    act(() => this.upload.onprogress?.({ loaded, total, lengthComputable: true } as ProgressEvent));
  }

  async respond(status: number, body: unknown): Promise<void> {
    await act(async () => {
      this.status = status;
      this.responseText = body === null ? "" : JSON.stringify(body);
      this.onload?.();
    });
  }

  static last(): FakeXhr {
    const x = FakeXhr.instances.at(-1);
    if (!x) throw new Error("no XMLHttpRequest was opened");
    return x;
  }
}
