// Preview timeline: one lane per group, a bar per window from start to end; open windows hatched.
import type { PreviewWindow } from "../api/designer";
import { PALETTE } from "../components/UPlotChart";

/**
 * Epoch ms of a window bound: a number (ms) or a timestamp text (ISO, or "YYYY-MM-DD hh:mm:ss"
 * which, without a zone, is read as UTC like every time inside the program).
 */
export function toMs(v: unknown): number | null {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v !== "string" || !v.trim()) return null;
  const t = v.trim();
  if (/^\d+$/.test(t)) return Number(t);
  let iso = /^\d{4}-\d\d-\d\d \d/.test(t) ? t.replace(" ", "T") : t;
  if (/T[\d:.]+$/.test(iso)) iso += "Z";
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : null;
}

export function windowGroup(w: PreviewWindow): string {
  const g = w.group;
  if (g === null || g === undefined || g === "") return "(all)";
  return typeof g === "object" ? JSON.stringify(g) : String(g);
}

export interface Lane {
  group: string;
  bars: { start: number; end: number; open: boolean; w: PreviewWindow }[];
}

/**
 * Lanes in first-seen group order. A window is open when its last event is WINDOW_OPEN or it has
 * no end yet; without an end it runs to the latest time of the preview.
 */
export function timelineLanes(windows: PreviewWindow[]): { lanes: Lane[]; min: number; max: number } {
  const lanes = new Map<string, Lane>();
  let min = Infinity;
  let max = -Infinity;
  for (const w of windows) {
    const s = toMs(w.start);
    const e = toMs(w.end);
    if (s === null) continue;
    min = Math.min(min, s);
    max = Math.max(max, s, e ?? s);
  }
  for (const w of windows) {
    const s = toMs(w.start);
    if (s === null) continue;
    const e = toMs(w.end);
    const open = w.event === "WINDOW_OPEN" || e === null;
    const g = windowGroup(w);
    if (!lanes.has(g)) lanes.set(g, { group: g, bars: [] });
    lanes.get(g)!.bars.push({ start: s, end: e ?? max, open, w });
  }
  return { lanes: [...lanes.values()], min: Number.isFinite(min) ? min : 0, max: Number.isFinite(max) ? max : 0 };
}

const fmt = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace(".000Z", "Z");

export function Timeline({ windows }: { windows: PreviewWindow[] }) {
  const { lanes, min, max } = timelineLanes(windows);
  if (!lanes.length) return <div className="muted">No windows.</div>;
  const W = 1000;
  const H = 18;
  const GAP = 6;
  const span = Math.max(1, max - min);
  const x = (t: number) => ((t - min) / span) * W;
  const height = lanes.length * (H + GAP);
  return (
    <div className="dz-timeline" data-testid="preview-timeline">
      <div className="dz-timeline-labels">
        {lanes.map((l) => (
          <div key={l.group} className="dz-lane-label mono" style={{ height: H, marginBottom: GAP }} title={l.group}>
            {l.group}
          </div>
        ))}
      </div>
      <div className="dz-timeline-plot">
        <svg viewBox={`0 0 ${W} ${height}`} preserveAspectRatio="none" width="100%" height={height} role="img" aria-label="Windows per group">
          <defs>
            <pattern id="dz-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
              <rect width="6" height="6" fill="#fff" />
              <line x1="0" y1="0" x2="0" y2="6" stroke="#d9822b" strokeWidth="3" />
            </pattern>
          </defs>
          {lanes.map((l, li) => (
            <g key={l.group} data-testid="timeline-lane" data-group={l.group}>
              {l.bars.map((b, bi) => (
                <rect
                  key={bi}
                  x={x(b.start)}
                  y={li * (H + GAP)}
                  width={Math.max(2, x(b.end) - x(b.start))}
                  height={H}
                  fill={b.open ? "url(#dz-hatch)" : PALETTE[li % PALETTE.length]}
                  stroke={b.open ? "#d9822b" : "none"}
                  data-open={b.open ? "true" : "false"}
                  className="dz-bar"
                >
                  <title>{`${l.group}: ${fmt(b.start)} → ${b.open ? "open" : fmt(b.end)}`}</title>
                </rect>
              ))}
            </g>
          ))}
        </svg>
        <div className="dz-timeline-axis small muted">
          <span>{fmt(min)}</span>
          <span>{fmt(max)}</span>
        </div>
      </div>
    </div>
  );
}
