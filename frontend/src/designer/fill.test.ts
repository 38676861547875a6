import { describe, expect, it } from "vitest";
import { FILL_MODES, fillOf, fillSql, withFill } from "./fill";

describe("FILL clause of a computation", () => {
  it("offers every TDengine FILL mode", () => {
    expect([...FILL_MODES].sort()).toEqual(["LINEAR", "NEXT", "NONE", "NULL", "NULL_F", "PREV", "VALUE", "VALUE_F"]);
  });

  it("reads the top-level FILL clause, not one in a string or a subquery", () => {
    expect(fillOf("SELECT _twstart, avg(a) FROM %%trows")).toBeNull();
    expect(fillOf("SELECT _twstart, avg(a) FROM %%trows fill(prev)")).toEqual({ mode: "PREV", values: [] });
    expect(fillOf("SELECT _twstart, avg(a), max(b) FROM %%trows FILL(VALUE, 0, -1.5) GROUP BY c")).toEqual({ mode: "VALUE", values: ["0", "-1.5"] });
    expect(fillOf("SELECT 'FILL(PREV)' AS t FROM %%trows")).toBeNull();
    expect(fillOf("SELECT * FROM (SELECT _wstart, avg(a) FROM t INTERVAL(1m) FILL(NEXT)) x")).toBeNull();
    expect(fillOf("SELECT avg(a) FROM %%trows FILL(VALUE_F, concat('a', 'b'), 2)")).toEqual({ mode: "VALUE_F", values: ["concat('a', 'b')", "2"] });
  });

  it("writes a new clause before GROUP BY / ORDER BY / LIMIT, else at the end before ';'", () => {
    expect(withFill("SELECT _twstart, avg(a) FROM %%trows", { mode: "PREV", values: [] })).toBe("SELECT _twstart, avg(a) FROM %%trows FILL(PREV)");
    expect(withFill("SELECT _twstart, avg(a) FROM %%trows;\n", { mode: "NULL", values: [] })).toBe("SELECT _twstart, avg(a) FROM %%trows FILL(NULL);\n");
    expect(withFill("SELECT c, avg(a) FROM %%trows GROUP BY c ORDER BY c", { mode: "VALUE", values: ["0"] })).toBe(
      "SELECT c, avg(a) FROM %%trows FILL(VALUE, 0) GROUP BY c ORDER BY c",
    );
    expect(withFill("SELECT avg(a) FROM (SELECT a FROM t ORDER BY ts) LIMIT 5", { mode: "NONE", values: [] })).toBe(
      "SELECT avg(a) FROM (SELECT a FROM t ORDER BY ts) FILL(NONE) LIMIT 5",
    );
  });

  it("replaces or removes the clause it read, keeping the rest as written", () => {
    const q = "SELECT _twstart, avg(a) FROM %%trows FILL(VALUE, 1) GROUP BY c";
    expect(withFill(q, { mode: "LINEAR", values: ["9"] })).toBe("SELECT _twstart, avg(a) FROM %%trows FILL(LINEAR) GROUP BY c");
    expect(withFill(q, null)).toBe("SELECT _twstart, avg(a) FROM %%trows GROUP BY c");
    expect(fillOf(withFill(q, { mode: "VALUE_F", values: ["1", "2"] }))).toEqual({ mode: "VALUE_F", values: ["1", "2"] });
    expect(fillSql({ mode: "PREV", values: ["1"] })).toBe("FILL(PREV)");
  });
});
