import { render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { RowsResult } from "../api/types";
import FakeUPlot from "../test/fakeUplot";
import { mockFetch } from "../test/mockFetch";
import { groupColumns, MAX_GROUPS } from "./chartGroups";
import { RowsChart } from "./RowsView";

const iso = (s: number) => new Date(Date.parse("2024-06-01T00:00:00Z") + s * 1000).toISOString();
const sec = (s: number) => Date.parse("2024-06-01T00:00:00Z") / 1000 + s;

/** Expected per-group series computed independently: for each x, the group's value at x or null. */
function expectedSeries(rows: [number, string, number][], group: string, xs: number[]): (number | null)[] {
  return xs.map((x) => rows.find(([t, g]) => t === x && g === group)?.[2] ?? null);
}

function plotOf(title: string): FakeUPlot {
  return FakeUPlot.byTitle(title)!;
}

describe("RowsChart groups", () => {
  // two stations' windows interleaved, as a stream's output table returns them
  const raw: [number, string, number][] = [
    [0, "Dongsi", 1],
    [0, "Tiantan", 10],
    [3600, "Dongsi", 2],
    [7200, "Tiantan", 30],
    [10800, "Dongsi", 4],
  ];
  const result: RowsResult = {
    columns: ["_wstart", "avg_pm25", "tbname", "station"],
    types: ["TIMESTAMP", "DOUBLE", "VARCHAR", "VARCHAR"],
    rows: raw.map(([t, g, v]) => [iso(t), v, `t_79e19d85${g.length}abc`, g]),
  };

  it("draws one line per tag value, labelled by the tag, never by the hashed subtable name", () => {
    render(<RowsChart result={result} selectable={false} title="out" />);
    const p = plotOf("out");
    expect(p.labels).toEqual(["station=Dongsi", "station=Tiantan"]);
    expect(p.labels.join(" ")).not.toMatch(/t_79e19d85/);
    const xs = [...new Set(raw.map(([t]) => t))].sort((a, b) => a - b);
    expect(p.data[0]).toEqual(xs.map(sec));
    expect(p.data[1]).toEqual(expectedSeries(raw, "Dongsi", xs));
    expect(p.data[2]).toEqual(expectedSeries(raw, "Tiantan", xs));
    // a group's line joins its own points across the other group's times
    expect(p.opts.series[1].spanGaps).toBe(true);
    expect(p.opts.series[1].stroke).not.toBe(p.opts.series[2].stroke);
    expect(p.opts.axes[0].label).toBe("event time (_wstart)");
    expect(screen.queryByTestId("group-note")).toBeNull();
  });

  it("labels by column and group when several columns are charted", () => {
    const r: RowsResult = {
      columns: ["ts", "current", "voltage", "location"],
      types: ["TIMESTAMP", "FLOAT", "INT", "VARCHAR"],
      rows: [
        [iso(0), 1.5, 220, "SF"],
        [iso(0), 2.5, 230, "LA"],
      ],
    };
    render(<RowsChart result={r} selectable={false} title="two cols" />);
    const p = plotOf("two cols");
    expect(p.labels).toEqual(["current · location=LA", "voltage · location=LA", "current · location=SF", "voltage · location=SF"]);
    expect(p.data.slice(1)).toEqual([[2.5], [230], [1.5], [220]]);
    expect(p.opts.series[1].dash).not.toEqual(p.opts.series[2].dash);
  });

  it("uses the table's tags when given, numeric ones too, and does not chart a tag as a value", () => {
    const r: RowsResult = {
      columns: ["ts", "current", "location", "groupid"],
      types: ["TIMESTAMP", "FLOAT", "VARCHAR", "INT"],
      rows: [
        [iso(0), 1, "SF", 2],
        [iso(1), 2, "SF", 3],
        [iso(2), 3, "SF", 2],
      ],
    };
    render(<RowsChart result={r} selectable={false} title="tags" tags={["location", "groupId"]} />);
    const p = plotOf("tags");
    expect(p.labels).toEqual(["location=SF, groupid=2", "location=SF, groupid=3"]);
    expect(p.data.slice(1)).toEqual([
      [1, null, 3],
      [null, 2, null],
    ]);
  });

  it("draws one line per column when there are no groups (tags=[]), ignoring text columns", () => {
    const r: RowsResult = {
      columns: ["ts", "v", "note"],
      types: ["TIMESTAMP", "DOUBLE", "VARCHAR"],
      rows: [
        [iso(1), 2, "b"],
        [iso(0), 1, "a"],
      ],
    };
    render(<RowsChart result={r} selectable={false} title="plain" tags={[]} />);
    expect(plotOf("plain").labels).toEqual(["v"]);
    expect(plotOf("plain").data).toEqual([[sec(0), sec(1)], [1, 2]]);
  });

  it(`draws at most ${MAX_GROUPS} groups, those with the most rows, and says so`, () => {
    // group g<i> has i+1 rows: the two smallest (g0, g1) are the ones left out
    const n = MAX_GROUPS + 2;
    const rows: unknown[][] = [];
    for (let g = 0; g < n; g++) for (let k = 0; k <= g; k++) rows.push([iso(k), k, `g${g}`]);
    const r: RowsResult = { columns: ["ts", "v", "tbname"], types: ["TIMESTAMP", "BIGINT", "VARCHAR"], rows };
    render(<RowsChart result={r} selectable={false} title="many" />);
    const expected = Array.from({ length: n }, (_, g) => `tbname=g${g}`)
      .slice(n - MAX_GROUPS)
      .sort();
    expect(plotOf("many").labels).toEqual(expected);
    expect(screen.getByTestId("group-note")).toHaveTextContent(`${MAX_GROUPS} of ${n} groups shown`);
    expect(screen.getByTestId("group-note")).toHaveTextContent("one line per tbname");
  });
});

describe("RowsChart tagsOf (a stream's output table)", () => {
  const out: RowsResult = {
    columns: ["_wstart", "avg_temp", "station_id"],
    types: ["TIMESTAMP", "DOUBLE", "INT"],
    rows: [
      [iso(0), 20.5, 1],
      [iso(0), 18, 2],
      [iso(60), 21, 1],
    ],
  };

  it("reads the output supertable's tags and groups by them, a numeric tag included", async () => {
    const m = mockFetch({
      "GET /api/v1/databases/weather/tables/out/": {
        name: "out",
        db: "weather",
        kind: "super",
        stable: null,
        columns: [],
        tags: [{ name: "station_id", type: "INT", length: 4 }],
        tag_values: {},
      },
    });
    render(<RowsChart result={out} selectable={false} title="out" tagsOf={{ db: "weather", table: "out" }} />);
    await waitFor(() => expect(plotOf("out").labels).toEqual(["station_id=1", "station_id=2"]));
    expect(plotOf("out").data.slice(1)).toEqual([
      [20.5, 21],
      [18, null],
    ]);
    expect(m.callsTo("GET", "/api/v1/databases/weather/tables/out/")).toHaveLength(1);
  });

  it("falls back to one line per column when the table's schema cannot be read", async () => {
    const m = mockFetch({});
    render(<RowsChart result={out} selectable={false} title="out" tagsOf={{ db: "weather", table: "out" }} />);
    await waitFor(() => expect(m.callsTo("GET", "/api/v1/databases/weather/tables/out/")).toHaveLength(1));
    expect(plotOf("out").labels).toEqual(["avg_temp", "station_id"]);
  });
});

describe("groupColumns", () => {
  it("prefers tags to tbname and falls back to tbname alone", () => {
    const withTag = { columns: ["ts", "v", "tbname", "station"], types: ["TIMESTAMP", "DOUBLE", "VARCHAR", "NCHAR(16)"] };
    expect(groupColumns(withTag)).toEqual([3]);
    expect(groupColumns({ columns: ["ts", "v", "tbname"], types: ["TIMESTAMP", "DOUBLE", "VARCHAR"] })).toEqual([2]);
    expect(groupColumns({ columns: ["ts", "v"], types: ["TIMESTAMP", "DOUBLE"] })).toEqual([]);
    expect(groupColumns(withTag, [])).toEqual([2]);
  });
});
