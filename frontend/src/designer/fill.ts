// The FILL clause of a computation query, read and rewritten in place for the property form
// (docs/designer.md "The computation": FILL stays in the computation's query). The server checks
// the clause (modes, VALUE lists, FORCE_WINDOW_CLOSE's modes: seed 000 "Trigger Modes").

/** TDengine's FILL modes, in the order the form offers them. */
export const FILL_MODES = ["NONE", "NULL", "NULL_F", "VALUE", "VALUE_F", "PREV", "NEXT", "LINEAR"];

/** The modes that take a value per filled column. */
export const FILL_VALUE_MODES = ["VALUE", "VALUE_F"];

export interface FillClause {
  /** One of FILL_MODES (upper case). */
  mode: string;
  /** The values of VALUE / VALUE_F, as written. */
  values: string[];
}

interface Top {
  /** Offsets of the query's characters outside quotes and parentheses. */
  at: (i: number) => boolean;
}

/** Which characters of `q` are at the top level (not inside quotes or parentheses). */
function topLevel(q: string): Top {
  const top: boolean[] = new Array(q.length).fill(false);
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < q.length; i++) {
    const c = q[i];
    if (quote) {
      if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"' || c === "`") {
      quote = c;
      continue;
    }
    if (c === "(") {
      if (depth === 0) top[i] = true;
      depth++;
      continue;
    }
    if (c === ")") {
      depth = Math.max(0, depth - 1);
      if (depth === 0) top[i] = true;
      continue;
    }
    if (depth === 0) top[i] = true;
  }
  return { at: (i) => top[i] ?? false };
}

/** Split `s` on commas outside quotes and parentheses. */
function splitArgs(s: string): string[] {
  const t = topLevel(s);
  const out: string[] = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "," && t.at(i)) {
      out.push(s.slice(from, i));
      from = i + 1;
    }
  }
  out.push(s.slice(from));
  return out.map((x) => x.trim());
}

/** Where the top-level `FILL(...)` of `q` is: [start, end) including the parenthesis, or null. */
function fillRange(q: string): [number, number] | null {
  const t = topLevel(q);
  const re = /\bFILL\s*\(/gi;
  let m: RegExpExecArray | null;
  while ((m = re.exec(q))) {
    if (!t.at(m.index)) continue;
    const open = m.index + m[0].length - 1;
    let depth = 0;
    for (let i = open; i < q.length; i++) {
      if (!t.at(i) && i !== open) continue;
      if (q[i] === "(") depth++;
      if (q[i] === ")" && --depth === 0) return [m.index, i + 1];
    }
    return null;
  }
  return null;
}

/** The FILL clause of a computation query (top level, outside strings), or null without one. */
export function fillOf(query: string | null | undefined): FillClause | null {
  const q = query ?? "";
  const r = fillRange(q);
  if (!r) return null;
  const inner = q.slice(q.indexOf("(", r[0]) + 1, r[1] - 1);
  const [mode, ...values] = splitArgs(inner);
  return { mode: mode.toUpperCase(), values: values.filter((v) => v !== "") };
}

/** FILL(mode[, v...]) as TDengine writes it. */
export function fillSql(f: FillClause): string {
  return `FILL(${[f.mode, ...(FILL_VALUE_MODES.includes(f.mode) ? f.values : [])].join(", ")})`;
}

/** `query` with its FILL clause replaced by `fill` (null: removed); a new clause goes before
 * GROUP BY / HAVING / ORDER BY / LIMIT, else at the end (before a final `;`). */
export function withFill(query: string | null | undefined, fill: FillClause | null): string {
  let q = query ?? "";
  const r = fillRange(q);
  if (r) {
    let a = r[0];
    while (a > 0 && /\s/.test(q[a - 1])) a--;
    q = q.slice(0, a) + q.slice(r[1]);
  }
  if (!fill) return q;
  const clause = fillSql(fill);
  const t = topLevel(q);
  const re = /\s+(GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT|SLIMIT)\b/gi;
  let m: RegExpExecArray | null;
  while ((m = re.exec(q))) {
    if (t.at(m.index + m[0].search(/\S/))) return `${q.slice(0, m.index)} ${clause}${q.slice(m.index)}`;
  }
  const end = q.replace(/[\s;]+$/, "").length;
  return `${q.slice(0, end)} ${clause}${q.slice(end)}`;
}
