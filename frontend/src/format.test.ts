import { describe, expect, it } from "vitest";
import {
  formatAgo,
  formatUtc,
  msToUtcInput,
  utcInputToIso,
  formatBytes,
  formatCount,
  formatDateTime,
  formatDuration,
  formatRate,
  formatTime,
  formatUtcOffset,
  localOffsetLabel,
  toEpochMs,
  toMs,
  truncate,
} from "./format";

// vite.config.ts runs tests with TZ=Asia/Kolkata (UTC+05:30, no DST).
describe("dates", () => {
  it("runs in the pinned test time zone", () => {
    expect(new Date(0).getTimezoneOffset()).toBe(-330);
  });

  it("formats ISO strings in local time with the UTC offset", () => {
    expect(formatDateTime("2024-06-01T10:00:00Z")).toBe("2024-06-01 15:30:00 UTC+05:30");
  });

  it("formats epoch ms, optionally with milliseconds", () => {
    const ms = Date.UTC(2024, 0, 31, 23, 45, 1, 7);
    expect(formatDateTime(ms)).toBe("2024-02-01 05:15:01 UTC+05:30");
    expect(formatDateTime(ms, true)).toBe("2024-02-01 05:15:01.007 UTC+05:30");
  });

  it("formatTime drops the offset", () => {
    expect(formatTime("2024-06-01T10:00:00Z")).toBe("2024-06-01 15:30:00");
  });

  it("shows a dash for missing values and echoes unparseable ones", () => {
    expect(formatDateTime(null)).toBe("—");
    expect(formatDateTime("")).toBe("—");
    expect(formatDateTime("not a date")).toBe("not a date");
  });

  it("parses ISO strings with micro/nanosecond fractions", () => {
    expect(toMs("2024-06-01T10:00:00.123456789Z")).toBe(Date.UTC(2024, 5, 1, 10, 0, 0, 123));
    expect(toMs("2024-06-01T10:00:00.5+08:00")).toBe(Date.UTC(2024, 5, 1, 2, 0, 0, 500));
  });

  it("formats UTC offsets east and west", () => {
    expect(formatUtcOffset(-330)).toBe("UTC+05:30");
    expect(formatUtcOffset(0)).toBe("UTC+00:00");
    expect(formatUtcOffset(300)).toBe("UTC-05:00");
    expect(localOffsetLabel()).toBe("UTC+05:30");
  });

  it("normalises epoch numbers of any precision to ms", () => {
    const ms = Date.UTC(2024, 5, 1);
    expect(toEpochMs(ms)).toBe(ms);
    expect(toEpochMs(ms * 1000)).toBe(ms);
    expect(toEpochMs(ms * 1_000_000)).toBe(ms);
    expect(toEpochMs(ms / 1000)).toBe(ms);
  });

  it("formats relative times", () => {
    const now = Date.UTC(2024, 5, 1, 12);
    expect(formatAgo(now - 90_000, now)).toBe("1 min 30 s ago");
    expect(formatAgo(now + 5000, now)).toBe("in 5.0 s");
    expect(formatAgo(now, now)).toBe("just now");
  });
});

describe("sizes and rates", () => {
  it("formats bytes in binary units", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(3 * 1024 * 1024)).toBe("3.0 MiB");
    expect(formatBytes(200 * 1024 ** 3)).toBe("200 GiB");
    expect(formatBytes(null)).toBe("—");
  });

  it("formats counts compactly", () => {
    expect(formatCount(950)).toBe("950");
    expect(formatCount(1000)).toBe("1k");
    expect(formatCount(12345)).toBe("12.3k");
    expect(formatCount(123456)).toBe("123k");
    expect(formatCount(4_500_000)).toBe("4.5M");
    expect(formatCount(3.14159)).toBe("3.14");
  });

  it("formats rows per second", () => {
    expect(formatRate(0)).toBe("0 rows/s");
    expect(formatRate(2.5)).toBe("2.50 rows/s");
    expect(formatRate(15320)).toBe("15.3k rows/s");
    expect(formatRate(null)).toBe("—");
  });

  it("formats durations in human units", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(4200)).toBe("4.2 s");
    expect(formatDuration(42_000)).toBe("42 s");
    expect(formatDuration(185_000)).toBe("3 min 5 s");
    expect(formatDuration(2 * 3600_000 + 10 * 60_000)).toBe("2 h 10 min");
    expect(formatDuration(3 * 86400_000 + 4 * 3600_000)).toBe("3 d 4 h");
    expect(formatDuration(-1500)).toBe("-1.5 s");
    expect(formatDuration(null)).toBe("—");
  });

  it("truncates with an ellipsis", () => {
    expect(truncate("short", 10)).toBe("short");
    expect(truncate("a long error message", 8)).toBe("a long …");
  });
});

describe("UTC times (inbox, recalculation dialog)", () => {
  it("formats epoch ms as UTC whatever the browser's zone", () => {
    const ms = Date.UTC(2013, 2, 1, 6, 0, 0); // 2013-03-01T06:00:00Z
    expect(formatUtc(ms)).toBe("2013-03-01 06:00:00 UTC");
    expect(formatUtc(ms + 5)).toBe("2013-03-01 06:00:00.005 UTC");
    expect(formatUtc(ms, true)).toBe("2013-03-01 06:00:00.000 UTC");
    expect(formatUtc(null)).toBe("—");
  });

  it("round-trips an ISO UTC input and refuses what is not one", () => {
    const ms = Date.UTC(2024, 5, 1, 9, 0, 7);
    expect(msToUtcInput(ms + 999)).toBe("2024-06-01T09:00:07Z");
    expect(utcInputToIso(msToUtcInput(ms))).toBe(new Date(ms).toISOString());
    expect(utcInputToIso("2024-06-01 09:00")).toBe("2024-06-01T09:00:00.000Z");
    expect(utcInputToIso("2024-06-01T09:00:07.25 UTC")).toBe("2024-06-01T09:00:07.250Z");
    expect(utcInputToIso("06/01/2024 09:00 AM")).toBeUndefined();
    expect(utcInputToIso("2024-06-01T09:00:00+05:30")).toBeUndefined(); // another zone
    expect(utcInputToIso("2024-02-30T00:00:00Z")).toBeUndefined();
    expect(utcInputToIso("")).toBeUndefined();
  });
});
