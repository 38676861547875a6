// Formatting helpers. Dates are shown in the browser's local time with the UTC offset.

const pad = (n: number, w = 2) => String(Math.trunc(Math.abs(n))).padStart(w, "0");

/** "UTC+05:30" for a Date.getTimezoneOffset() value (minutes *west* of UTC, e.g. -330). */
export function formatUtcOffset(tzOffsetMinutes: number): string {
  const east = -tzOffsetMinutes;
  const sign = east < 0 ? "-" : "+";
  const a = Math.abs(east);
  return `UTC${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

/**
 * Epoch number in ms, s, µs or ns → epoch ms, guessed from its magnitude (TDengine event JSON
 * carries window bounds in the database precision). Anything 2001..2286 in ms stays as is.
 */
export function toEpochMs(v: number): number {
  const a = Math.abs(v);
  if (a >= 1e17) return Math.trunc(v / 1e6); // ns
  if (a >= 1e14) return Math.trunc(v / 1e3); // µs
  if (a > 0 && a < 1e10) return v * 1000; // s
  return v;
}

/** ISO string (any number of fraction digits), epoch ms, or Date → epoch ms (NaN if unparseable). */
export function toMs(t: string | number | Date | null | undefined): number {
  if (t === null || t === undefined || t === "") return NaN;
  if (t instanceof Date) return t.getTime();
  if (typeof t === "number") return t;
  // Trim sub-millisecond digits, which not every engine accepts.
  const s = t.trim().replace(/(\.\d{3})\d+/, "$1");
  // "2024-01-02 03:04:05" (no T, no zone) is local time, like TDengine's shell output.
  const norm = /^\d{4}-\d{2}-\d{2} \d/.test(s) ? s.replace(" ", "T") : s;
  return Date.parse(norm);
}

/** "2024-01-02 08:34:05 UTC+05:30" in local time. `withMs` adds ".123". "—" when empty. */
export function formatDateTime(t: string | number | Date | null | undefined, withMs = false): string {
  const ms = toMs(t);
  if (!Number.isFinite(ms)) return t === null || t === undefined || t === "" ? "—" : String(t);
  const d = new Date(ms);
  const base =
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return `${base}${withMs ? `.${pad(d.getMilliseconds(), 3)}` : ""} ${formatUtcOffset(d.getTimezoneOffset())}`;
}

/** Local time without the offset, for dense table cells (the header says the offset). */
export function formatTime(t: string | number | Date | null | undefined): string {
  const s = formatDateTime(t);
  return s.replace(/ UTC[+-]\d\d:\d\d$/, "");
}

/** The browser's current UTC offset, e.g. "UTC+05:30". */
export function localOffsetLabel(at: Date = new Date()): string {
  return formatUtcOffset(at.getTimezoneOffset());
}

/** Bytes in binary units: "0 B", "512 B", "1.5 KiB", "3.0 MiB". */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const sign = n < 0 ? "-" : "";
  return i === 0 ? `${sign}${Math.round(v)} B` : `${sign}${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** Compact count: 950 → "950", 12345 → "12.3k", 4_500_000 → "4.5M". */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const a = Math.abs(n);
  const sign = n < 0 ? "-" : "";
  const fmt = (v: number, suffix: string) => `${sign}${v < 10 ? v.toFixed(1) : v < 100 ? v.toFixed(1) : Math.round(v)}${suffix}`;
  if (a >= 1e9) return fmt(a / 1e9, "G").replace(".0G", "G");
  if (a >= 1e6) return fmt(a / 1e6, "M").replace(".0M", "M");
  if (a >= 1e3) return fmt(a / 1e3, "k").replace(".0k", "k");
  if (Number.isInteger(n)) return String(n);
  return `${sign}${a < 10 ? a.toFixed(2) : a.toFixed(1)}`;
}

/** Rows per second: "0 rows/s", "3.25 rows/s", "12.3k rows/s". */
export function formatRate(rowsPerSec: number | null | undefined): string {
  if (rowsPerSec === null || rowsPerSec === undefined || !Number.isFinite(rowsPerSec)) return "—";
  return `${formatCount(rowsPerSec)} rows/s`;
}

/** Human duration: "850 ms", "4.2 s", "3 min 5 s", "2 h 10 min", "3 d 4 h". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const sign = ms < 0 ? "-" : "";
  const a = Math.abs(ms);
  if (a < 1000) return `${sign}${Math.round(a)} ms`;
  const s = a / 1000;
  if (s < 60) return `${sign}${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const totalS = Math.round(s);
  const m = Math.floor(totalS / 60);
  if (m < 60) {
    const rs = totalS % 60;
    return `${sign}${m} min${rs ? ` ${rs} s` : ""}`;
  }
  const totalM = Math.round(s / 60);
  const h = Math.floor(totalM / 60);
  if (h < 24) {
    const rm = totalM % 60;
    return `${sign}${h} h${rm ? ` ${rm} min` : ""}`;
  }
  const totalH = Math.round(s / 3600);
  const d = Math.floor(totalH / 24);
  const rh = totalH % 24;
  return `${sign}${d} d${rh ? ` ${rh} h` : ""}`;
}

/** "3 min ago" / "in 5 s" relative to `now`. */
export function formatAgo(t: string | number | null | undefined, now: number = Date.now()): string {
  const ms = toMs(t);
  if (!Number.isFinite(ms)) return "—";
  const d = now - ms;
  if (Math.abs(d) < 1000) return "just now";
  return d >= 0 ? `${formatDuration(d)} ago` : `in ${formatDuration(-d)}`;
}

export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${s.slice(0, Math.max(0, max - 1))}…`;
}

/** Any cell value (REST rows) → display string. */
export function formatCell(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** datetime-local value ("2024-01-02T03:04") in local time → ISO UTC string (undefined if empty/invalid). */
export function localInputToIso(v: string): string | undefined {
  if (!v) return undefined;
  const ms = new Date(v).getTime();
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

/** Epoch ms → datetime-local value ("2024-01-02T03:04:05") in local time. */
export function msToLocalInput(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}` +
    `T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** A 0..1 fraction as a whole percentage, clamped; null stays null. */
export function percent(fraction: number | null | undefined): number | null {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return null;
  return Math.round(Math.max(0, Math.min(1, fraction)) * 100);
}

/**
 * Epoch ms → "2024-01-02 03:04:05 UTC" (".123" before " UTC" when the time has milliseconds, or
 * always with `withMs`). "—" for null/undefined/NaN.
 */
export function formatUtc(ms: number | null | undefined, withMs = false): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const iso = new Date(ms).toISOString(); // 2024-01-02T03:04:05.123Z
  const frac = iso.slice(19, 23);
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${withMs || frac !== ".000" ? frac : ""} UTC`;
}

/** Epoch ms → an ISO 8601 UTC input value "2024-01-02T03:04:05Z" (whole seconds). */
export function msToUtcInput(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

const UTC_INPUT = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?\s*(?:Z|UTC|\+00:?00)?$/i;

/**
 * A UTC time typed as ISO 8601 ("2024-01-02T03:04:05Z", "2024-01-02 03:04", with or without "Z",
 * " UTC" or "+00:00") → the ISO string the API takes ("2024-01-02T03:04:05.000Z"); undefined when
 * it is not such a time (another offset, a US date, a day that does not exist).
 */
export function utcInputToIso(v: string): string | undefined {
  const m = UTC_INPUT.exec(v.trim());
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? "0"].map(Number);
  const ms = m[7] ? Math.round(Number(m[7]) * 1000) : 0;
  const t = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  const back = new Date(t);
  if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return undefined;
  return back.toISOString();
}
