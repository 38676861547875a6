import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach, beforeEach, vi } from "vitest";
import FakeUPlot from "./fakeUplot";
import { FakeWebSocket } from "./fakeWebSocket";

beforeEach(() => {
  FakeWebSocket.reset();
  FakeUPlot.instances = [];
  vi.stubGlobal("WebSocket", FakeWebSocket);
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  vi.useRealTimers();
});
