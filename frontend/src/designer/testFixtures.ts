// Designs shared by the designer tests.
import type { Design } from "../api/designer";

/** The example design of docs/designer.md. */
export const EXAMPLE: Design = {
  schema_version: 1,
  name: "pollution_episodes",
  db: "air",
  syntax: "3.3.7",
  if_not_exists: true,
  nodes: {
    source: { db: "air", table: "quality", partition_by: [{ sql: "tbname", alias: null }] },
    prefilter: { condition: "pm25 IS NOT NULL" },
    trigger: { type: "event", start: "pm25 > 150", end: "pm25 <= 75", true_for: null },
    options: { fill_history: true, watermark: "10s" },
    computation: { query: "SELECT _twstart AS wstart, max(pm25) AS peak_pm25 FROM %%trows" },
    output: { db: "air", table: "pollution_episodes", subtable: null, columns: [], tags: [] },
    notify: { urls: ["ws://127.0.0.1:8000/ws/notify/x"], events: ["WINDOW_OPEN", "WINDOW_CLOSE"], where: null, history: null, on_failure: null },
  },
  layout: { source: { x: 0, y: 0 } },
};
