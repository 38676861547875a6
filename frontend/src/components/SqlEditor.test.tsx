import { describe, expect, it } from "vitest";
import { codePointToIndex, errorRange } from "./SqlEditor";
import { chartableColumns, rowsToChartData } from "./RowsView";
import { sparklinePoints } from "./Sparkline";

describe("SqlEditor helpers", () => {
  it("maps server code-point offsets to UTF-16 indexes", () => {
    const s = "SELECT '😀' FROM t";
    // "FROM" is code point 11 (what Python reports) but UTF-16 index 12.
    expect(codePointToIndex(s, 11)).toBe(12);
    expect(s.slice(codePointToIndex(s, 11), codePointToIndex(s, 11) + 4)).toBe("FROM");
    expect(codePointToIndex("abc", 2)).toBe(2);
    expect(codePointToIndex("abc", 99)).toBe(3);
  });

  it("marks the word at the error, one char for punctuation, empty at the end", () => {
    expect(errorRange("SELECT x FROM t", 9)).toEqual([9, 13]);
    expect(errorRange("a , b", 2)).toEqual([2, 3]);
    expect(errorRange("abc", 3)).toEqual([3, 3]);
  });
});

describe("RowsView helpers", () => {
  it("charts numeric columns only when column 0 is a timestamp", () => {
    expect(chartableColumns({ types: ["TIMESTAMP", "FLOAT", "VARCHAR", "BIGINT UNSIGNED", "BOOL", "DOUBLE"] })).toEqual([1, 3, 5]);
    expect(chartableColumns({ types: ["INT", "FLOAT"] })).toEqual([]);
  });

  it("sorts rows by time and converts values", () => {
    const d = rowsToChartData(
      {
        columns: ["ts", "v"],
        types: ["TIMESTAMP", "BIGINT"],
        rows: [
          ["2024-01-01T00:00:02Z", "5"],
          ["2024-01-01T00:00:01Z", null],
        ],
      },
      [1],
    );
    expect(d[0]).toEqual([Date.parse("2024-01-01T00:00:01Z") / 1000, Date.parse("2024-01-01T00:00:02Z") / 1000]);
    expect(d[1]).toEqual([null, 5]);
  });
});

describe("sparkline", () => {
  it("scales points to the box with the max at the top", () => {
    expect(sparklinePoints([0, 10], 100, 22)).toBe("0.0,21.0 100.0,1.0");
    expect(sparklinePoints([], 100, 22)).toBe("");
  });
});
