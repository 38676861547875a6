// The tabs under the canvas: live SQL, paste SQL, preview on real data, versions of the stream.
import { useEffect, useState, type ReactNode } from "react";
import { ApiError, errorText } from "../api/client";
import {
  compileSql,
  diffVersions,
  listVersions,
  previewDesign,
  type CompileAnswer,
  type Design,
  type DesignIssue,
  type PreviewAnswer,
  type StreamVersion,
  type ValidateAnswer,
  type VersionDiff,
} from "../api/designer";
import type { SqlPosition, StreamSyntax } from "../api/types";
import { codePointToIndex, ErrorCaret, errorRange } from "../components/SqlEditor";
import { formatDateTime } from "../format";
import { KIND_LABEL, isNodeKind } from "./graph";
import { Timeline } from "./Timeline";

// --- SQL ----------------------------------------------------------------------------------------

function copy(text: string): void {
  void navigator.clipboard?.writeText(text).catch(() => {});
}

export function SqlTab({
  answer,
  syntax,
  deployed = false,
  checking,
  error,
  onSelectNode,
}: {
  answer: ValidateAnswer | null;
  syntax: StreamSyntax;
  /** The design is what the deployed stream runs (else its syntax is the one a deploy uses). */
  deployed?: boolean;
  checking: boolean;
  error: string | null;
  onSelectNode: (node: string) => void;
}) {
  const issues = answer?.issues ?? [];
  return (
    <div className="dz-sql-tab">
      {error && <div className="muted">Validation unavailable: {error}</div>}
      {checking && !answer && <div className="muted">Checking…</div>}
      {issues.length > 0 && (
        <ul className="dz-issues" aria-label="Problems">
          {issues.map((i, k) => (
            <IssueItem key={k} issue={i} onSelectNode={onSelectNode} />
          ))}
        </ul>
      )}
      {answer?.impact && answer.impact.kind !== "none" && (
        <div className="dz-impact" data-testid="validate-impact">
          <strong>Deploying over the running stream:</strong> {answer.impact.statement}
        </div>
      )}
      <div className="dz-sql-pair">
        {(["3.3.7", "legacy"] as StreamSyntax[]).map((s) => {
          const sql = answer?.sql?.[s] ?? null;
          const why = answer?.not_expressible?.[s];
          return (
            <section key={s} className={`dz-sql-block${s === syntax ? " chosen" : ""}`}>
              <header>
                <h3>
                  {s === "3.3.7" ? "TDengine 3.3.7" : "Legacy"} syntax{" "}
                  {s === syntax && (
                    <span className={`badge${deployed ? " ok" : ""}`} data-testid="sql-syntax-badge">
                      {deployed ? "deployed" : "deploys as"}
                    </span>
                  )}
                </h3>
                <button type="button" className="btn-sm" disabled={!sql} onClick={() => sql && copy(sql)} aria-label={`Copy ${s} SQL`}>
                  Copy
                </button>
              </header>
              <pre className="mono dz-sql" data-testid={`sql-${s}`}>
                {sql !== null ? (
                  s === syntax ? (
                    <MarkedSql sql={sql} issues={issues} />
                  ) : (
                    sql
                  )
                ) : why ? (
                  `Not expressible: ${why}`
                ) : answer ? (
                  "Not expressible."
                ) : (
                  "…"
                )}
              </pre>
            </section>
          );
        })}
      </div>
    </div>
  );
}

/** The SQL with the words at the issues' positions marked (positions are in this SQL). */
export function MarkedSql({ sql, issues }: { sql: string; issues: DesignIssue[] }) {
  const ranges = issues
    .filter((i) => i.position)
    .map((i) => ({ r: errorRange(sql, codePointToIndex(sql, i.position!.offset)), msg: i.message }))
    .sort((a, b) => a.r[0] - b.r[0]);
  const out: ReactNode[] = [];
  let at = 0;
  for (const { r, msg } of ranges) {
    const [s0, e0] = r;
    if (s0 < at) continue;
    out.push(sql.slice(at, s0));
    out.push(
      <mark key={s0} className="sql-error-inline" title={msg} data-testid="sql-issue-mark">
        {sql.slice(s0, e0) || " "}
      </mark>,
    );
    at = e0;
  }
  out.push(sql.slice(at));
  return <>{out}</>;
}

function IssueItem({ issue, onSelectNode }: { issue: DesignIssue; onSelectNode: (n: string) => void }) {
  const where = issue.node ? `${isNodeKind(issue.node) ? KIND_LABEL[issue.node] : issue.node}${issue.field ? ` · ${issue.field}` : ""}` : "statement";
  return (
    <li>
      {issue.node ? (
        <button type="button" className="linkish" onClick={() => onSelectNode(issue.node!)}>
          {where}
        </button>
      ) : (
        <span className="muted">{where}</span>
      )}
      : {issue.message}
      {issue.position && (
        <span className="muted small">
          {" "}
          (line {issue.position.line}, column {issue.position.column})
        </span>
      )}
    </li>
  );
}

// --- Paste SQL ----------------------------------------------------------------------------------

export function PasteTab({ db, onCompiled }: { db: string | null; onCompiled: (a: CompileAnswer) => void }) {
  const [sql, setSql] = useState("");
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<{ desc: string; position: SqlPosition | null; sql: string } | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const build = async () => {
    if (!sql.trim()) return;
    setBusy(true);
    setErr(null);
    setDone(null);
    try {
      const a = await compileSql(sql, db);
      onCompiled(a);
      const n = Object.values(a.design.nodes).filter((x) => x !== null && x !== undefined).length;
      setDone(`Built ${n} node${n === 1 ? "" : "s"} (${a.design.syntax} syntax).`);
    } catch (e) {
      setErr({ desc: errorText(e), position: e instanceof ApiError ? e.position : null, sql });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="dz-paste">
      <label htmlFor="dz-paste-sql">CREATE STREAM statement (3.3.7 or legacy syntax)</label>
      <textarea
        id="dz-paste-sql"
        data-testid="paste-sql"
        className="mono"
        rows={8}
        spellCheck={false}
        value={sql}
        placeholder="CREATE STREAM s INTERVAL(1m) SLIDING(1m) FROM db.t PARTITION BY tbname INTO out AS SELECT _twstart, avg(x) FROM %%trows"
        onChange={(e) => setSql(e.target.value)}
      />
      <div className="dz-row">
        <button type="button" className="btn-primary" disabled={busy || !sql.trim()} onClick={() => void build()}>
          {busy ? "Building…" : "Build graph"}
        </button>
        <span className="muted small">Replaces the graph.</span>
        {done && <span className="sql-ok">✓ {done}</span>}
      </div>
      {err && (
        <div className="sql-error" role="alert" data-testid="paste-error">
          <div>{err.desc}</div>
          {err.position && <ErrorCaret text={err.sql} line={err.position.line} column={err.position.column} />}
        </div>
      )}
    </div>
  );
}

// --- Preview ------------------------------------------------------------------------------------

/** An issue as a sentence naming its node and field: "Trigger / window: sliding is required". */
export function issueText(i: { node?: string | null; field?: string | null; message: string }): string {
  const where = i.node ? (isNodeKind(i.node) ? KIND_LABEL[i.node] : i.node) : i.field === "start" || i.field === "end" ? "Preview range" : "Stream";
  if (!i.field) return `${where}: ${i.message}`;
  // "is required", "must be ...": the field is the sentence's subject
  return /^(is|must|are)\b/.test(i.message) ? `${where}: ${i.field} ${i.message}` : `${where} · ${i.field}: ${i.message}`;
}

/** A failed preview: the design's issues named by node and field (the server's designer shape). */
export function previewErrorText(e: unknown): string {
  if (e instanceof ApiError && e.body && typeof e.body === "object") {
    const b = e.body as { node?: string | null; field?: string | null; issues?: DesignIssue[] };
    if (Array.isArray(b.issues) && b.issues.length) return b.issues.map(issueText).join("\n");
    if (b.field || b.node) return issueText({ node: b.node, field: b.field, message: e.desc });
  }
  return errorText(e);
}


export function PreviewTab({ design }: { design: Design }) {
  const [start, setStart] = useState("");
  const [end, setEnd] = useState("");
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<PreviewAnswer | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const run = async () => {
    setBusy(true);
    setErr(null);
    try {
      setAnswer(await previewDesign({ design, start: start.trim() || null, end: end.trim() || null, limit: 1000 }));
    } catch (e) {
      setErr(previewErrorText(e));
    } finally {
      setBusy(false);
    }
  };
  const rows = answer?.rows ?? { columns: [], data: [] };
  return (
    <div className="dz-preview">
      <div className="dz-row">
        <label>
          Start{" "}
          <input name="start" className="mono" value={start} placeholder="blank: 30 days before the last row" onChange={(e) => setStart(e.target.value)} />
        </label>
        <label>
          End{" "}
          <input name="end" className="mono" value={end} placeholder="blank: the last row" onChange={(e) => setEnd(e.target.value)} />
        </label>
        <button type="button" className="btn-primary" data-testid="preview-run" disabled={busy} onClick={() => void run()}>
          {busy ? "Running…" : "Run"}
        </button>
        <span className="muted small">times: ISO or 'YYYY-MM-DD hh:mm:ss'</span>
      </div>
      {err && (
        <div className="sql-error" role="alert" data-testid="preview-error" style={{ whiteSpace: "pre-line" }}>
          {err}
        </div>
      )}
      {answer && (
        <>
          {answer.range && (
            <div className="muted small" data-testid="preview-range">
              ran over {answer.range.start !== null ? formatDateTime(answer.range.start, true) : "the first row"} → {answer.range.end !== null ? formatDateTime(answer.range.end, true) : "the last row"}
            </div>
          )}
          {answer.deploy && (
            <div className="dz-impact" data-testid="preview-deploy">
              <strong>Deploying:</strong> {answer.deploy.output_rows} output rows and {answer.deploy.notifications} notifications for these stored rows.
              {answer.deploy.notes.map((n, i) => (
                <div key={i} className="small">
                  {n}
                </div>
              ))}
            </div>
          )}
          <div className="dz-stats" data-testid="preview-stats">
            <span>
              input rows <strong>{answer.input_rows}</strong>
            </span>
            <span>
              windows <strong>{answer.window_count ?? answer.windows.length}</strong>
            </span>
            <span>
              output rows <strong>{answer.output_rows ?? rows.data.length}</strong>
            </span>
            <span title="what the same rows arriving live would send; see “Deploying” for what a deploy sends">
              notifications (rows arriving live) <strong>{answer.notification_count ?? answer.notifications.length}</strong>
            </span>
            <span>
              elapsed <strong>{answer.elapsed_ms} ms</strong>
            </span>
            {answer.truncated && <span className="badge bad">truncated</span>}
          </div>
          <h3>Windows</h3>
          <Timeline windows={answer.windows} />
          <h3>Computed rows</h3>
          <div className="table-scroll dz-preview-rows">
            <table className="grid" data-testid="preview-rows">
              <thead>
                <tr>
                  {rows.columns.map((c, i) => (
                    <th key={i}>
                      {c.name}
                      <span className="col-type">{c.type}</span>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.data.map((r, i) => (
                  <tr key={i}>
                    {r.map((v, j) => (
                      <td key={j} className="mono">
                        {v === null ? (
                          <span className="muted">NULL</span>
                        ) : typeof v === "number" && rows.columns[j]?.type === "TIMESTAMP" ? (
                          <span title={String(v)}>{formatDateTime(v, true)}</span>
                        ) : typeof v === "object" ? (
                          JSON.stringify(v)
                        ) : (
                          String(v)
                        )}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <h3>Notifications</h3>
          {answer.notifications.length ? (
            <ol className="dz-notifications" data-testid="preview-notifications">
              {answer.notifications.map((n, i) => (
                <li key={i}>
                  <pre className="mono">{JSON.stringify(n, null, 2)}</pre>
                </li>
              ))}
            </ol>
          ) : (
            <div className="muted">None.</div>
          )}
        </>
      )}
    </div>
  );
}

// --- Versions -----------------------------------------------------------------------------------

export function diffLines(d: string | string[]): string[] {
  const lines = Array.isArray(d) ? d : d.split("\n");
  return lines.length && lines[lines.length - 1] === "" ? lines.slice(0, -1) : lines;
}

function show(v: unknown): string {
  return v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v);
}

export function VersionsTab({ streamId, onOpen }: { streamId: number; onOpen: (v: StreamVersion) => void }) {
  const [versions, setVersions] = useState<StreamVersion[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const [diff, setDiff] = useState<VersionDiff | null>(null);
  useEffect(() => {
    listVersions(streamId)
      .then((vs) => {
        setVersions(vs);
        const nums = vs.map((v) => v.number).sort((a, b) => a - b);
        if (nums.length >= 2) {
          setFrom(nums[nums.length - 2]);
          setTo(nums[nums.length - 1]);
        }
      })
      .catch((e) => setErr(errorText(e)));
  }, [streamId]);
  const compare = async () => {
    if (from === null || to === null) return;
    setErr(null);
    try {
      setDiff(await diffVersions(streamId, from, to));
    } catch (e) {
      setErr(errorText(e));
    }
  };
  if (err && !versions) return <div className="sql-error">{err}</div>;
  if (!versions) return <div className="muted">Loading versions…</div>;
  return (
    <div className="dz-versions">
      <table className="grid" data-testid="versions">
        <thead>
          <tr>
            <th>version</th>
            <th>created</th>
            <th>by</th>
            <th>from</th>
            <th>to</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.number}>
              <td>v{v.number}</td>
              <td>{formatDateTime(v.created_at)}</td>
              <td>{show(v.created_by)}</td>
              <td>
                <input type="radio" name="from" aria-label={`Compare from v${v.number}`} checked={from === v.number} onChange={() => setFrom(v.number)} />
              </td>
              <td>
                <input type="radio" name="to" aria-label={`Compare to v${v.number}`} checked={to === v.number} onChange={() => setTo(v.number)} />
              </td>
              <td>
                <button type="button" className="btn-sm" disabled={!v.design} onClick={() => onOpen(v)}>
                  Open in designer
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="dz-row">
        <button type="button" className="btn-sm" disabled={from === null || to === null || from === to} onClick={() => void compare()}>
          Compare
        </button>
        {err && <span className="dz-field-error">{err}</span>}
      </div>
      {diff && (
        <div className="dz-diff" data-testid="version-diff">
          <h3>
            v{diff.from} → v{diff.to}
          </h3>
          {diff.impact && <div className="dz-impact">{diff.impact.statement}</div>}
          <pre className="mono dz-diff-sql">
            {diffLines(diff.sql_diff).map((l, i) => (
              <div key={i} className={l.startsWith("+") && !l.startsWith("+++") ? "dz-diff-add" : l.startsWith("-") && !l.startsWith("---") ? "dz-diff-del" : l.startsWith("@@") ? "dz-diff-hunk" : ""}>
                {l || "\u00a0"}
              </div>
            ))}
          </pre>
          {diff.changes.length > 0 && (
            <table className="grid">
              <thead>
                <tr>
                  <th>node</th>
                  <th>field</th>
                  <th>old</th>
                  <th>new</th>
                </tr>
              </thead>
              <tbody>
                {diff.changes.map((c, i) => (
                  <tr key={i}>
                    <td>{c.node ?? "stream"}</td>
                    <td className="mono">{c.field ?? ""}</td>
                    <td className="mono dz-diff-del">{show(c.old)}</td>
                    <td className="mono dz-diff-add">{show(c.new)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </div>
  );
}
