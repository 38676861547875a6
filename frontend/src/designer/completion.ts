// Suggestions for the computation editor: the word under the caret completed from the catalog
// (databases, tables, columns and tags, functions) and the placeholders of the trigger.
import type { Catalog, Placeholder } from "../api/designer";

export interface Suggestion {
  text: string;
  kind: "placeholder" | "column" | "tag" | "table" | "database" | "function" | "keyword";
}

export interface CompletionContext {
  catalog: Catalog | null;
  placeholders: Placeholder[];
  /** The database unqualified table names resolve in. */
  db: string | null;
  /** The trigger table, whose columns and tags come first. */
  table: string | null;
}

const KEYWORDS = ["SELECT", "FROM", "WHERE", "GROUP BY", "PARTITION BY", "ORDER BY", "HAVING", "AS", "AND", "OR", "NOT", "NULL", "IS", "LIMIT"];

/** The word ending at `caret` (letters, digits, _, %, .), and where it starts. */
export function wordAt(text: string, caret: number): { prefix: string; start: number } {
  const m = /[A-Za-z0-9_%.]*$/.exec(text.slice(0, caret));
  const prefix = m ? m[0] : "";
  return { prefix, start: caret - prefix.length };
}

/** Up to `limit` suggestions completing `prefix` (case-insensitive), without the prefix itself. */
export function suggest(prefix: string, ctx: CompletionContext, limit = 10): Suggestion[] {
  if (!prefix || !/^[A-Za-z_%]/.test(prefix)) return [];
  const cat = ctx.catalog;
  const all: Suggestion[] = [];
  const dot = prefix.lastIndexOf(".");
  if (dot >= 0) {
    // db.table or table.column
    const q = prefix.slice(0, dot).toLowerCase();
    const db = cat?.databases.find((d) => d.name.toLowerCase() === q);
    if (db) for (const t of db.tables) all.push({ text: `${prefix.slice(0, dot)}.${t.name}`, kind: "table" });
    for (const d of cat?.databases ?? []) {
      const t = d.tables.find((x) => x.name.toLowerCase() === q);
      if (!t) continue;
      for (const c of t.columns) all.push({ text: `${prefix.slice(0, dot)}.${c.name}`, kind: "column" });
      for (const c of t.tags) all.push({ text: `${prefix.slice(0, dot)}.${c.name}`, kind: "tag" });
    }
    return rank(all, prefix, limit);
  }
  for (const p of ctx.placeholders) all.push({ text: p.name, kind: "placeholder" });
  const dbs = cat?.databases ?? [];
  const home = dbs.find((d) => d.name === ctx.db);
  const table = ctx.table ? (home ?? dbs.find((d) => d.tables.some((t) => t.name === ctx.table)))?.tables.find((t) => t.name === ctx.table) : undefined;
  if (table) {
    for (const c of table.columns) all.push({ text: c.name, kind: "column" });
    for (const c of table.tags) all.push({ text: c.name, kind: "tag" });
  }
  for (const t of home?.tables ?? []) all.push({ text: t.name, kind: "table" });
  for (const f of cat?.functions ?? []) all.push({ text: f.name, kind: "function" });
  for (const d of dbs) all.push({ text: d.name, kind: "database" });
  for (const k of KEYWORDS) all.push({ text: k, kind: "keyword" });
  return rank(all, prefix, limit);
}

function rank(all: Suggestion[], prefix: string, limit: number): Suggestion[] {
  const p = prefix.toLowerCase();
  const seen = new Set<string>();
  const out: Suggestion[] = [];
  for (const s of all) {
    const t = s.text.toLowerCase();
    if (!t.startsWith(p) || t === p || seen.has(t)) continue;
    seen.add(t);
    out.push(s);
    if (out.length >= limit) break;
  }
  return out;
}
