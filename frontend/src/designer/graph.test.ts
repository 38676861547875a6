import { describe, expect, it } from "vitest";
import type { Design } from "../api/designer";
import {
  addNode,
  autoLayout,
  designToGraph,
  graphToDesign,
  impliedEdges,
  isImpliedConnection,
  nodeSummary,
  removeNode,
  withAutoLayout,
} from "./graph";
import { suggest, wordAt } from "./completion";
import { changeTriggerType } from "./PropertyPanel";
import { timelineLanes, toMs } from "./Timeline";
import { EXAMPLE } from "./testFixtures";

const clone = <T,>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

describe("graph <-> design", () => {
  it("round-trips the example design exactly (partial layout, nulls)", () => {
    const d = clone(EXAMPLE);
    const g = designToGraph(d);
    expect(g.nodes.map((n) => n.id)).toEqual(["source", "prefilter", "trigger", "options", "computation", "output", "notify"]);
    expect(graphToDesign(g)).toEqual(d);
  });

  it("round-trips designs without layout, with null nodes, unknown keys and layout of absent nodes", () => {
    const cases: Design[] = [
      { schema_version: 1, name: "a", db: null, syntax: "legacy", if_not_exists: false, nodes: { trigger: { type: "interval", interval: "1m" } } },
      {
        schema_version: 1,
        name: "b",
        db: "x",
        syntax: "3.3.7",
        if_not_exists: true,
        nodes: { source: null, trigger: { type: "period", period: "1h", offset: null }, notify: null, future_node: { a: 1 } },
        layout: { trigger: { x: 5, y: 6 }, output: { x: 1, y: 2 } },
        extra_key: [1, 2],
      },
      withAutoLayout(clone(EXAMPLE)),
      { ...clone(EXAMPLE), layout: {} },
    ];
    for (const d of cases) expect(graphToDesign(designToGraph(clone(d)))).toEqual(d);
  });

  it("writes moved nodes into the layout and drops removed ones", () => {
    const g = designToGraph(clone(EXAMPLE));
    const nodes = g.nodes
      .filter((n) => n.id !== "prefilter")
      .map((n) => (n.id === "trigger" ? { ...n, position: { x: 300, y: 40 }, data: { ...n.data, placed: true } } : n));
    const d = graphToDesign({ nodes, meta: g.meta });
    expect(d.nodes.prefilter).toBeUndefined();
    expect(d.layout).toEqual({ source: { x: 0, y: 0 }, trigger: { x: 300, y: 40 } });
  });

  it("implies the edges of docs/designer.md, skipping absent nodes", () => {
    const ids = (k: Parameters<typeof impliedEdges>[0]) => impliedEdges(k).map((e) => e.id);
    expect(ids(["source", "prefilter", "trigger", "options", "computation", "output", "notify"])).toEqual([
      "source->prefilter",
      "prefilter->trigger",
      "trigger->options",
      "options->computation",
      "computation->output",
      "computation->notify",
    ]);
    expect(ids(["source", "trigger", "notify"])).toEqual(["source->trigger", "trigger->notify"]);
    expect(isImpliedConnection(["source", "trigger"], "source", "trigger")).toBe(true);
    expect(isImpliedConnection(["source", "trigger"], "trigger", "source")).toBe(false);
  });

  it("lays out left to right with notify under the output column", () => {
    const l = autoLayout(["trigger", "source", "computation", "notify"]);
    expect(l.source!.x).toBeLessThan(l.trigger!.x);
    expect(l.trigger!.x).toBeLessThan(l.computation!.x);
    expect(l.notify!.x).toBeGreaterThan(l.computation!.x);
    expect(l.notify!.y).toBeGreaterThan(l.computation!.y);
  });

  it("adds singleton nodes and removes them", () => {
    const d = clone(EXAMPLE);
    expect(addNode(d, "trigger")).toBe(d);
    const e = addNode(removeNode(d, "notify"), "notify", { x: 10.4, y: 20.6 });
    expect(e.nodes.notify).toEqual({ urls: [], events: ["WINDOW_CLOSE"], where: null, history: null, on_failure: null });
    expect(e.layout!.notify).toEqual({ x: 10, y: 21 });
  });

  it("summarises nodes in one line", () => {
    expect(nodeSummary("trigger", EXAMPLE.nodes.trigger)).toBe("EVENT_WINDOW start pm25 > 150 / end pm25 <= 75");
    expect(nodeSummary("trigger", { type: "interval", interval: "1m", sliding: "30s" })).toBe("INTERVAL(1m) SLIDING(30s)");
    expect(nodeSummary("trigger", { type: "ekuiper", function: "hopping", unit: "ss", args: ["10", "5"] })).toBe("HOPPINGWINDOW(ss, 10, 5)");
    expect(nodeSummary("source", EXAMPLE.nodes.source)).toBe("air.quality PARTITION BY tbname");
    expect(nodeSummary("options", EXAMPLE.nodes.options)).toBe("FILL_HISTORY, WATERMARK 10s");
    expect(nodeSummary("notify", EXAMPLE.nodes.notify)).toBe("1 URL ON WINDOW_OPEN, WINDOW_CLOSE");
  });

  it("changes the trigger type keeping same-named fields", () => {
    expect(changeTriggerType({ type: "interval", interval: "1m", sliding: "10s" }, "sliding")).toEqual({ type: "sliding", sliding: "10s", sliding_offset: null });
    expect(changeTriggerType({ type: "event", start: "a" }, "ekuiper:hopping")).toEqual({
      type: "ekuiper",
      function: "hopping",
      unit: null,
      args: null,
      over_when: null,
      filter: null,
    });
  });
});

describe("completion", () => {
  const catalog = {
    databases: [{ name: "air", tables: [{ name: "quality", kind: "super", columns: [{ name: "pm25", type: "FLOAT" }, { name: "ts", type: "TIMESTAMP" }], tags: [{ name: "city", type: "VARCHAR(20)" }] }] }],
    functions: [
      { name: "avg", kind: "aggregate" },
      { name: "max", kind: "aggregate" },
      { name: "min", kind: "aggregate" },
    ],
    placeholders: {},
  };
  const ph = (name: string) => ({ name, description: "" });
  const ctx = { catalog, placeholders: [ph("%%trows"), ph("_twstart")], db: "air", table: "quality" };
  it("finds the word under the caret", () => {
    expect(wordAt("SELECT ma", 9)).toEqual({ prefix: "ma", start: 7 });
    expect(wordAt("FROM %%tr", 9)).toEqual({ prefix: "%%tr", start: 5 });
  });
  it("suggests columns, functions, placeholders and qualified names", () => {
    expect(suggest("pm", ctx).map((s) => s.text)).toEqual(["pm25"]);
    expect(suggest("ma", ctx).map((s) => s.text)).toEqual(["max"]);
    expect(suggest("%%t", ctx).map((s) => s.text)).toEqual(["%%trows"]);
    expect(suggest("air.q", ctx).map((s) => s.text)).toEqual(["air.quality"]);
    expect(suggest("quality.c", ctx).map((s) => s.text)).toEqual(["quality.city"]);
    expect(suggest("", ctx)).toEqual([]);
  });
});

describe("timeline", () => {
  it("groups windows into lanes; open windows run to the latest time", () => {
    const { lanes, min, max } = timelineLanes([
      { group: "d1", start: 1000, end: 2000 },
      { group: "d2", start: 1500, end: null, event: "WINDOW_OPEN" },
      { group: "d1", start: 3000, end: 4000 },
    ]);
    expect(lanes.map((l) => l.group)).toEqual(["d1", "d2"]);
    expect(min).toBe(1000);
    expect(max).toBe(4000);
    expect(lanes[1].bars[0]).toMatchObject({ start: 1500, end: 4000, open: true });
    expect(toMs("2025-01-01T00:00:00Z")).toBe(Date.UTC(2025, 0, 1));
    expect(toMs("1970-01-01 00:00:01.500")).toBe(1500);
  });
});
