// One line per group (subtable / tag value) in the row charts, instead of every group's rows joined
// into one zig-zag line (issue 16 item 5).
import type uPlot from "uplot";
import type { RowsResult } from "../api/types";
import { formatCell, toMs } from "../format";
import { PALETTE, type ChartSeries } from "./UPlotChart";

/** Most groups a chart draws; the rest are counted in a note. */
export const MAX_GROUPS = 8;

const DASHES: (number[] | undefined)[] = [undefined, [6, 3], [2, 3], [8, 3, 2, 3]];

function isStringType(t: string | undefined): boolean {
  return !!t && /^(varchar|nchar|binary|string)\b/i.test(t.trim());
}

/**
 * Indexes of the columns that name a row's group. With `tags` (a supertable's tag names): those
 * present in the result. Without: `tbname` and the text columns (a stream's output tags). A
 * subtable name (often a hash such as `t_79e19d85…`) is only used when no tag is there.
 */
export function groupColumns(r: Pick<RowsResult, "columns" | "types">, tags?: string[]): number[] {
  const lower = r.columns.map((c) => c.toLowerCase());
  const named = tags
    ? tags.map((t) => lower.indexOf(t.toLowerCase())).filter((i) => i >= 0)
    : r.types.map((t, i) => (isStringType(t) ? i : -1)).filter((i) => i >= 0);
  const tb = lower.indexOf("tbname");
  const byTag = named.filter((i) => i !== tb);
  if (byTag.length > 0) return byTag;
  return tb >= 0 ? [tb] : [];
}

/** "station=Dongsi" / "station=Dongsi, city=Beijing": a group's label from its key columns. */
export function groupLabel(columns: string[], groupCols: number[], row: unknown[]): string {
  return groupCols.map((i) => `${columns[i]}=${formatCell(row[i])}`).join(", ");
}

export interface GroupedChart {
  /** [x (epoch seconds, union of the shown groups' times), one series per (group, column)]; null = no row there. */
  data: uPlot.AlignedData;
  series: ChartSeries[];
  /** Groups in the result, and how many are drawn (≤ maxGroups: those with the most rows). */
  groups: number;
  shown: number;
}

function num(v: unknown): number | null {
  if (v === null || v === undefined || v === "") return null;
  const n = typeof v === "number" ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Rows bucketed by group label, each bucket as (time ms, row) pairs. */
function bucket(r: RowsResult, groupCols: number[], tc: number): Map<string, { t: number; row: unknown[] }[]> {
  const out = new Map<string, { t: number; row: unknown[] }[]>();
  for (const row of r.rows) {
    const t = toMs(row[tc] as string | number);
    if (!Number.isFinite(t)) continue;
    const key = groupLabel(r.columns, groupCols, row);
    const list = out.get(key) ?? [];
    list.push({ t, row });
    out.set(key, list);
  }
  return out;
}

/**
 * Chart data with one series per group and value column: the `maxGroups` groups with the most rows
 * (ties by label), drawn in label order; series are labelled by the group (and the column when
 * several are charted), coloured per group, dashed per column, and join their own points across
 * the other groups' times (spanGaps).
 */
export function groupedChartData(r: RowsResult, cols: number[], groupCols: number[], tc: number, maxGroups: number = MAX_GROUPS): GroupedChart {
  const buckets = bucket(r, groupCols, tc);
  const chosen = [...buckets.entries()]
    .sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    .slice(0, maxGroups)
    .sort((a, b) => a[0].localeCompare(b[0]));
  const xs = [...new Set(chosen.flatMap(([, pts]) => pts.map((p) => p.t)))].sort((a, b) => a - b);
  const at = new Map(xs.map((t, i) => [t, i]));
  const data: (number | null)[][] = [];
  const series: ChartSeries[] = [];
  chosen.forEach(([label, pts], g) => {
    cols.forEach((c, k) => {
      const ys: (number | null)[] = xs.map(() => null);
      for (const p of pts) ys[at.get(p.t)!] = num(p.row[c]);
      data.push(ys);
      series.push({
        label: cols.length === 1 ? label : `${r.columns[c]} · ${label}`,
        stroke: PALETTE[g % PALETTE.length],
        dash: DASHES[k % DASHES.length],
        spanGaps: true,
      });
    });
  });
  return { data: [xs.map((t) => t / 1000), ...data] as uPlot.AlignedData, series, groups: buckets.size, shown: chosen.length };
}
