// What a recalculation would change in its output (POST streams/{id}/recalculate/diff/, a dry
// run): the counts and the first rows, each with its old and new values.
import type { RecalcDiff, RecalcDiffRow } from "../api/types";
import { formatCell } from "../format";

function values(v: Record<string, unknown> | null | undefined): string {
  if (!v) return "—";
  return Object.entries(v)
    .map(([k, x]) => `${k}=${formatCell(x)}`)
    .join(", ");
}

function changedColumns(r: RecalcDiffRow): Set<string> {
  const out = new Set<string>();
  if (!r.old || !r.new) return out;
  for (const k of Object.keys(r.new)) if (JSON.stringify(r.new[k]) !== JSON.stringify(r.old[k])) out.add(k);
  return out;
}

/** The diff's summary line: "2 windows rewritten: 1 added, 1 changed, 0 removed, 0 unchanged". */
export function diffSummary(d: RecalcDiff): string {
  return `${d.windows} window${d.windows === 1 ? "" : "s"} rewritten: ${d.added} added, ${d.changed} changed, ${d.removed} removed, ${d.unchanged} unchanged`;
}

export function RecalcDiffView({ diff }: { diff: RecalcDiff }) {
  const listed = diff.rows.length;
  const total = diff.added + diff.changed + diff.removed;
  return (
    <div className="recalc-diff" data-testid="recalc-diff">
      <div className="small" data-testid="recalc-diff-summary">
        {diffSummary(diff)}
      </div>
      {listed === 0 ? (
        <div className="muted small">No output row would change.</div>
      ) : (
        <table className="table-compact small">
          <thead>
            <tr>
              <th>change</th>
              <th>table</th>
              <th>key</th>
              <th>old</th>
              <th>new</th>
            </tr>
          </thead>
          <tbody>
            {diff.rows.map((r, i) => {
              const changed = changedColumns(r);
              return (
                <tr key={i} className={`diff-${r.change}`} data-testid="recalc-diff-row">
                  <td>{r.change}</td>
                  <td className="mono">{r.table}</td>
                  <td className="mono">{values(r.key)}</td>
                  <td className="mono">{values(r.old)}</td>
                  <td className="mono" title={changed.size ? `changed: ${[...changed].join(", ")}` : undefined}>
                    {values(r.new)}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {diff.truncated && (
        <div className="muted small" data-testid="recalc-diff-more">
          …and {total - listed} more row{total - listed === 1 ? "" : "s"} not listed
        </div>
      )}
    </div>
  );
}
