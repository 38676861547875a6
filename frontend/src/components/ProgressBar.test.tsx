import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ProgressBar, rateText, workLabel } from "./ProgressBar";
import { RecalcDiffView } from "./RecalcDiffView";

describe("ProgressBar", () => {
  it("shows the fraction, rows/s and the ETA of the work", () => {
    render(<ProgressBar fraction={0.25} label="recalculating" rowsPerS={2500} etaS={3725} />);
    expect(screen.getByRole("progressbar")).toHaveAttribute("aria-valuenow", "25");
    expect(screen.getByTestId("progress-bar")).toHaveTextContent("recalculating 25%");
    // 3725 s = 1 h 2 min 5 s, shown to the minute
    expect(screen.getByTestId("progress-bar-rate")).toHaveTextContent("2.5k rows/s · ETA 1 h 2 min");
  });

  it("says done at ETA 0 and shows nothing without a rate or an ETA", () => {
    expect(rateText(10, 0)).toBe("10 rows/s · done");
    expect(rateText(null, 42)).toBe("ETA 42 s");
    expect(rateText(null, null)).toBeNull();
    render(<ProgressBar fraction={null} label="catching up" />);
    expect(screen.queryByTestId("progress-bar-rate")).toBeNull();
  });

  it("labels a recalculation from its phase", () => {
    expect(workLabel({ phase: "recalculation", fraction: 0.5, label: "", rows_done: 1, rows_total: 2 })).toBe("recalculating");
  });
});

describe("RecalcDiffView", () => {
  it("lists added and changed rows with old and new values and the rows not listed", () => {
    render(
      <RecalcDiffView
        diff={{
          windows: 5,
          added: 1,
          changed: 2,
          removed: 0,
          unchanged: 2,
          truncated: true,
          rows: [
            { change: "added", table: "out_a", key: { ts: 1000 }, old: null, new: { c: 1 } },
            { change: "changed", table: "out_b", key: { ts: 2000 }, old: { c: 1, s: null }, new: { c: 2, s: 7.5 } },
          ],
        }}
      />,
    );
    expect(screen.getByTestId("recalc-diff-summary")).toHaveTextContent("5 windows rewritten: 1 added, 2 changed, 0 removed, 2 unchanged");
    const rows = screen.getAllByTestId("recalc-diff-row");
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent("addedout_ats=1000—c=1");
    expect(rows[1]).toHaveTextContent("changedout_bts=2000c=1, s=NULLc=2, s=7.5");
    expect(rows[1].querySelector("td[title]")).toHaveAttribute("title", "changed: c, s");
    expect(screen.getByTestId("recalc-diff-more")).toHaveTextContent("1 more row not listed");
  });

  it("says so when nothing would change", () => {
    render(<RecalcDiffView diff={{ windows: 2, added: 0, changed: 0, removed: 0, unchanged: 2, truncated: false, rows: [] }} />);
    expect(screen.getByTestId("recalc-diff")).toHaveTextContent("No output row would change.");
    expect(screen.queryByTestId("recalc-diff-more")).toBeNull();
  });
});
