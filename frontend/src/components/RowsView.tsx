// Table rows (from the rows endpoint or the SQL console) as a grid and as a time-series chart.
import { useEffect, useMemo, useState } from "react";
import type uPlot from "uplot";
import { getTable } from "../api/client";
import type { RowsResult } from "../api/types";
import { formatCell, toMs } from "../format";
import { groupColumns, groupedChartData, type GroupedChart } from "./chartGroups";
import { UPlotChart, type ChartSeries } from "./UPlotChart";

export function isTimestampType(t: string | undefined): boolean {
  return !!t && /^timestamp/i.test(t.trim());
}

export function isNumericType(t: string | undefined): boolean {
  return !!t && /^(tinyint|smallint|int|integer|bigint|float|double|decimal)\b/i.test(t.trim());
}

/** Index of the first TIMESTAMP column (the chart's x), or -1. */
export function timeColumn(r: Pick<RowsResult, "types">): number {
  return r.types.findIndex((t) => isTimestampType(t));
}

/** Indexes of the numeric columns, when there is a TIMESTAMP column to plot them over; else []. */
export function chartableColumns(r: Pick<RowsResult, "types">): number[] {
  const tc = timeColumn(r);
  if (tc < 0) return [];
  return r.types.map((t, i) => (i !== tc && isNumericType(t) ? i : -1)).filter((i) => i >= 0);
}

function num(v: unknown): number | null {
  if (v === null || v === undefined || v === "") return null;
  const n = typeof v === "number" ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

/** uPlot data for the chosen columns; rows sorted by time (x in epoch seconds). */
export function rowsToChartData(r: RowsResult, cols: number[], tc: number = Math.max(0, timeColumn(r))): uPlot.AlignedData {
  const pts = r.rows
    .map((row) => ({ t: toMs(row[tc] as string | number), row }))
    .filter((p) => Number.isFinite(p.t))
    .sort((a, b) => a.t - b.t);
  return [pts.map((p) => p.t / 1000), ...cols.map((c) => pts.map((p) => num(p.row[c])))] as uPlot.AlignedData;
}

/**
 * Tag names of `db.table` for grouping its rows: a supertable's tags, [] for other tables, and
 * undefined while loading or when the table cannot be read (then the chart guesses: tbname and text
 * columns). `from` undefined: no request.
 */
export function useTableTags(from: { db: string; table: string } | undefined): string[] | undefined {
  const [tags, setTags] = useState<string[] | undefined>(undefined);
  const db = from?.db;
  const table = from?.table;
  useEffect(() => {
    setTags(undefined);
    if (!db || !table) return undefined;
    let cancelled = false;
    getTable(db, table)
      .then((d) => !cancelled && setTags(d.kind === "super" ? d.tags.map((t) => t.name) : []))
      .catch(() => undefined);
    return () => {
      cancelled = true;
    };
  }, [db, table]);
  return tags;
}

/** The series to draw: one per group when the rows carry a group key, else one per column. */
function useChartSeries(result: RowsResult, cols: number[], groupCols: number[]): GroupedChart {
  const key = result.columns.join("\u0001");
  return useMemo(() => {
    const tc = Math.max(0, timeColumn(result));
    if (groupCols.length > 0) return groupedChartData(result, cols, groupCols, tc);
    const series: ChartSeries[] = cols.map((c) => ({ label: result.columns[c] }));
    return { data: rowsToChartData(result, cols, tc), series, groups: 0, shown: 0 };
  }, [result, key, cols.join(","), groupCols.join(",")]); // eslint-disable-line react-hooks/exhaustive-deps
}

export function RowsChart({
  result,
  selectable = true,
  height = 220,
  title,
  tags,
  tagsOf,
}: {
  result: RowsResult;
  selectable?: boolean;
  height?: number;
  title?: string;
  /** Tag names of the table (a supertable's); undefined: group by tbname and text columns; []: by tbname only, if present. */
  tags?: string[];
  /** Without `tags`: read them from this table's schema (a stream's output table). */
  tagsOf?: { db: string; table: string };
}) {
  const fetched = useTableTags(tags ? undefined : tagsOf);
  const groupBy = tags ?? fetched;
  const groupCols = useMemo(() => groupColumns(result, groupBy), [result, groupBy?.join("\u0001")]); // eslint-disable-line react-hooks/exhaustive-deps
  const candidates = useMemo(() => chartableColumns(result).filter((c) => !groupCols.includes(c)), [result, groupCols]);
  const key = result.columns.join("\u0001");
  const [picked, setPicked] = useState<number[]>(candidates.slice(0, 4));
  useEffect(() => {
    setPicked(candidates.slice(0, 4));
    // new column set → new default selection
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  const cols = selectable ? picked.filter((c) => candidates.includes(c)) : candidates;
  const chart = useChartSeries(result, cols, groupCols);
  const tc = timeColumn(result);

  if (candidates.length === 0) return null;
  return (
    <div className="rows-chart">
      {selectable && (
        <div className="column-picker" role="group" aria-label="Columns to chart">
          {candidates.map((c) => (
            <label key={c}>
              <input
                type="checkbox"
                checked={picked.includes(c)}
                onChange={(e) =>
                  setPicked((p) => (e.target.checked ? [...p, c].sort((a, b) => a - b) : p.filter((x) => x !== c)))
                }
              />{" "}
              {result.columns[c]}
            </label>
          ))}
        </div>
      )}
      {cols.length > 0 ? (
        <UPlotChart title={title} data={chart.data} series={chart.series} height={height} xLabel={`event time (${result.columns[tc] ?? "ts"})`} />
      ) : (
        <div className="muted small">Pick a column to chart.</div>
      )}
      {cols.length > 0 && chart.groups > chart.shown && (
        <div className="muted small" data-testid="group-note">
          {chart.shown} of {chart.groups} groups shown (those with the most rows), one line per {groupCols.map((i) => result.columns[i]).join(", ")}.
        </div>
      )}
    </div>
  );
}

export function RowsTable({
  columns,
  types,
  rows,
  maxRows = 500,
}: {
  columns: string[];
  types?: string[];
  rows: unknown[][];
  maxRows?: number;
}) {
  if (columns.length === 0) return <div className="muted">No columns.</div>;
  const shown = rows.slice(0, maxRows);
  return (
    <div className="table-wrap table-scroll">
      <table className="grid rows-table">
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={`${c}-${i}`} title={types?.[i]}>
                {c}
                {types?.[i] && <span className="col-type">{types[i].toLowerCase()}</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {shown.length === 0 ? (
            <tr>
              <td colSpan={columns.length} className="muted">
                No rows.
              </td>
            </tr>
          ) : (
            shown.map((r, i) => (
              <tr key={i}>
                {r.map((v, j) => (
                  <td key={j} className={v === null ? "null mono" : "mono"}>
                    {formatCell(v)}
                  </td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
      {rows.length > shown.length && (
        <div className="muted small">
          Showing {shown.length} of {rows.length} rows.
        </div>
      )}
    </div>
  );
}
