// Tables browser (databases → supertables → subtables, normal tables), schema, data preview with
// chart, CSV import with progress, and an SQL console.
import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { ApiError, errorText, getImport, getRows, getTable, listDatabases, listTables, runSql, uploadCsv } from "../api/client";
import type { Database, ImportJob, IngestError, RowsResult, SqlResult, TableDetail, TableEntry } from "../api/types";
import { Empty, ErrorBanner, Loading, Section } from "../components/common";
import { RowsChart, RowsTable } from "../components/RowsView";
import { ProgressBar } from "../components/ProgressBar";
import { formatBytes, formatCell, formatCount, formatDateTime, localInputToIso, localOffsetLabel } from "../format";
import { urls } from "../page";

interface Selection {
  db: string;
  table: string;
}

type Loadable<T> = { state: "loading" } | { state: "ok"; value: T } | { state: "error"; text: string };

const SUBTABLE_PAGE = 200;

function readSelection(): Selection | null {
  const q = new URLSearchParams(window.location.search);
  const db = q.get("db");
  const table = q.get("table");
  return db && table ? { db, table } : null;
}

export function TablesPage() {
  const [dbs, setDbs] = useState<Database[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tables, setTables] = useState<Record<string, Loadable<TableEntry[]>>>({});
  const [openDbs, setOpenDbs] = useState<Set<string>>(() => new Set(readSelection() ? [readSelection()!.db] : []));
  const [openStables, setOpenStables] = useState<Set<string>>(new Set());
  const [selected, setSelected] = useState<Selection | null>(readSelection);
  const [consoleDb, setConsoleDb] = useState<string>(() => readSelection()?.db ?? "");

  useEffect(() => {
    listDatabases()
      .then(setDbs)
      .catch((e) => setError(`Could not load databases: ${errorText(e)}`));
  }, []);

  const loadTables = useCallback((db: string) => {
    setTables((t) => ({ ...t, [db]: { state: "loading" } }));
    listTables(db)
      .then((value) => setTables((t) => ({ ...t, [db]: { state: "ok", value } })))
      .catch((e) => setTables((t) => ({ ...t, [db]: { state: "error", text: errorText(e) } })));
  }, []);

  // Lazy: a database's tables are fetched the first time it is expanded.
  useEffect(() => {
    openDbs.forEach((db) => {
      if (!tables[db]) loadTables(db);
    });
  }, [openDbs, tables, loadTables]);

  // Expand the supertable of a preselected subtable once its database is loaded.
  useEffect(() => {
    if (!selected) return;
    const t = tables[selected.db];
    if (t?.state !== "ok") return;
    const e = t.value.find((x) => x.name === selected.table);
    if (e?.kind === "sub" && e.stable) {
      const key = `${selected.db}\u0000${e.stable}`;
      setOpenStables((s) => (s.has(key) ? s : new Set(s).add(key)));
    }
  }, [selected, tables]);

  const toggle = <T,>(set: Set<T>, v: T) => {
    const n = new Set(set);
    if (n.has(v)) n.delete(v);
    else n.add(v);
    return n;
  };

  const select = (sel: Selection) => {
    setSelected(sel);
    setConsoleDb(sel.db);
    const url = urls.tables(sel.db, sel.table);
    window.history.replaceState(null, "", url);
  };

  return (
    <div className="page page-tables">
      <div className="page-head">
        <h1>Tables</h1>
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      <div className="tables-layout">
        <aside className="tree" aria-label="Databases">
          {dbs === null && !error && <Loading what="Loading databases" />}
          {dbs && dbs.length === 0 && <Empty>No databases.</Empty>}
          <ul className="tree-root">
            {(dbs ?? []).map((d) => (
              <li key={d.name}>
                <button
                  type="button"
                  className="tree-node tree-db"
                  aria-expanded={openDbs.has(d.name)}
                  onClick={() => setOpenDbs((s) => toggle(s, d.name))}
                  title={`precision ${d.precision}, created ${formatDateTime(d.created_ms)}`}
                >
                  <span className="caret">{openDbs.has(d.name) ? "▾" : "▸"}</span> {d.name}
                  <span className="tree-count">{d.ntables}</span>
                </button>
                {openDbs.has(d.name) && (
                  <DbTree
                    db={d.name}
                    entry={tables[d.name]}
                    openStables={openStables}
                    onToggleStable={(st) => setOpenStables((s) => toggle(s, `${d.name}\u0000${st}`))}
                    selected={selected}
                    onSelect={select}
                    onRetry={() => loadTables(d.name)}
                  />
                )}
              </li>
            ))}
          </ul>
        </aside>
        <div className="tables-main">
          {selected ? (
            <TableView key={`${selected.db}.${selected.table}`} db={selected.db} table={selected.table} />
          ) : (
            <Empty>Pick a table on the left.</Empty>
          )}
        </div>
      </div>
      <SqlConsole db={consoleDb} dbs={dbs ?? []} onDbChange={setConsoleDb} />
    </div>
  );
}

function DbTree({
  db,
  entry,
  openStables,
  onToggleStable,
  selected,
  onSelect,
  onRetry,
}: {
  db: string;
  entry: Loadable<TableEntry[]> | undefined;
  openStables: Set<string>;
  onToggleStable: (stable: string) => void;
  selected: Selection | null;
  onSelect: (s: Selection) => void;
  onRetry: () => void;
}) {
  const groups = useMemo(() => {
    if (entry?.state !== "ok") return null;
    const supers = entry.value.filter((t) => t.kind === "super").map((t) => t.name);
    const subs = new Map<string, string[]>();
    for (const t of entry.value) {
      if (t.kind !== "sub") continue;
      const k = t.stable ?? "";
      if (!subs.has(k)) subs.set(k, []);
      subs.get(k)!.push(t.name);
      if (k && !supers.includes(k)) supers.push(k);
    }
    const normals = entry.value.filter((t) => t.kind === "normal").map((t) => t.name);
    return { supers: supers.sort(), subs, normals: normals.sort() };
  }, [entry]);

  if (!entry || entry.state === "loading") return <div className="tree-note">Loading…</div>;
  if (entry.state === "error")
    return (
      <div className="tree-note tree-error">
        {entry.text}{" "}
        <button type="button" className="link-button" onClick={onRetry}>
          retry
        </button>
      </div>
    );
  if (!groups) return null;
  const isSel = (t: string) => selected?.db === db && selected.table === t;
  if (groups.supers.length === 0 && groups.normals.length === 0) return <div className="tree-note">No tables.</div>;
  return (
    <ul className="tree-children">
      {groups.supers.map((st) => {
        const open = openStables.has(`${db}\u0000${st}`);
        const subs = groups.subs.get(st) ?? [];
        return (
          <li key={`s-${st}`}>
            <div className="tree-row">
              <button type="button" className="tree-caret" aria-label={`${open ? "Collapse" : "Expand"} ${st}`} aria-expanded={open} onClick={() => onToggleStable(st)}>
                {open ? "▾" : "▸"}
              </button>
              <button type="button" className={`tree-node tree-super ${isSel(st) ? "selected" : ""}`} onClick={() => onSelect({ db, table: st })}>
                <span className="kind kind-super">S</span> {st}
                <span className="tree-count">{subs.length}</span>
              </button>
            </div>
            {open && <SubtableList db={db} names={subs} isSel={isSel} onSelect={onSelect} />}
          </li>
        );
      })}
      {groups.normals.map((t) => (
        <li key={`n-${t}`}>
          <button type="button" className={`tree-node tree-normal ${isSel(t) ? "selected" : ""}`} onClick={() => onSelect({ db, table: t })}>
            <span className="kind kind-normal">T</span> {t}
          </button>
        </li>
      ))}
    </ul>
  );
}

function SubtableList({
  db,
  names,
  isSel,
  onSelect,
}: {
  db: string;
  names: string[];
  isSel: (t: string) => boolean;
  onSelect: (s: Selection) => void;
}) {
  const [shown, setShown] = useState(SUBTABLE_PAGE);
  const sorted = useMemo(() => names.slice().sort(), [names]);
  if (sorted.length === 0) return <div className="tree-note">No subtables.</div>;
  return (
    <ul className="tree-children">
      {sorted.slice(0, shown).map((t) => (
        <li key={t}>
          <button type="button" className={`tree-node tree-sub ${isSel(t) ? "selected" : ""}`} onClick={() => onSelect({ db, table: t })}>
            <span className="kind kind-sub">t</span> {t}
          </button>
        </li>
      ))}
      {sorted.length > shown && (
        <li>
          <button type="button" className="link-button tree-more" onClick={() => setShown((n) => n + SUBTABLE_PAGE)}>
            show more ({sorted.length - shown} left)
          </button>
        </li>
      )}
    </ul>
  );
}

export { localInputToIso };

function TableView({ db, table }: { db: string; table: string }) {
  const [detail, setDetail] = useState<Loadable<TableDetail>>({ state: "loading" });
  const [rows, setRows] = useState<Loadable<RowsResult> | null>(null);
  const [start, setStart] = useState("");
  const [end, setEnd] = useState("");
  const [limit, setLimit] = useState(200);

  useEffect(() => {
    getTable(db, table)
      .then((value) => setDetail({ state: "ok", value }))
      .catch((e) => setDetail({ state: "error", text: errorText(e) }));
  }, [db, table]);

  const loadRows = useCallback(() => {
    setRows({ state: "loading" });
    getRows(db, table, { limit, start: localInputToIso(start), end: localInputToIso(end) })
      .then((value) => setRows({ state: "ok", value }))
      .catch((e) => setRows({ state: "error", text: errorText(e) }));
  }, [db, table, limit, start, end]);

  // First preview on selection; later ones on "Load".
  useEffect(() => {
    loadRows();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [db, table]);

  return (
    <div className="table-view">
      <h2 className="table-title">
        <span className="mono">
          {db}.{table}
        </span>{" "}
        {detail.state === "ok" && (
          <span className={`badge kind-badge kind-${detail.value.kind}`}>
            {detail.value.kind === "super" ? "supertable" : detail.value.kind === "sub" ? `subtable of ${detail.value.stable}` : "table"}
          </span>
        )}
      </h2>
      {detail.state === "loading" && <Loading what="Loading schema" />}
      {detail.state === "error" && <ErrorBanner error={detail.text} />}
      {detail.state === "ok" && <Schema d={detail.value} />}

      <Section title="Data">
        <form
          className="range-form"
          onSubmit={(e) => {
            e.preventDefault();
            loadRows();
          }}
        >
          <label>
            From <input type="datetime-local" step="1" value={start} onChange={(e) => setStart(e.target.value)} aria-label="Start time" />
          </label>
          <label>
            to <input type="datetime-local" step="1" value={end} onChange={(e) => setEnd(e.target.value)} aria-label="End time" />
          </label>
          <label>
            limit{" "}
            <select value={limit} onChange={(e) => setLimit(Number(e.target.value))} aria-label="Row limit">
              {[50, 200, 1000, 5000].map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="btn-sm">
            Load
          </button>
          <span className="muted small">times in {localOffsetLabel()}</span>
        </form>
        {rows?.state === "loading" && <Loading what="Loading rows" />}
        {rows?.state === "error" && <ErrorBanner error={rows.text} />}
        {rows?.state === "ok" && (
          <>
            <RowsChart result={rows.value} tags={detail.state === "ok" && detail.value.kind === "super" ? detail.value.tags.map((t) => t.name) : []} />
            <RowsTable columns={rows.value.columns} types={rows.value.types} rows={rows.value.rows} />
          </>
        )}
      </Section>

      <CsvImport db={db} table={table} isSuper={detail.state === "ok" && detail.value.kind === "super"} onImported={loadRows} />
    </div>
  );
}

export const IMPORT_POLL_MS = 1000;

type ImportView =
  | { phase: "idle" }
  | { phase: "uploading"; loaded: number; total: number | null }
  | { phase: "importing"; job: ImportJob }
  | { phase: "done"; job: ImportJob }
  | { phase: "failed"; text: string; row: number | null; column: string | null };

/** Where an import failed, from an IngestError body (row 1-based, header not counted). */
function failure(e: unknown): Extract<ImportView, { phase: "failed" }> {
  const body = (e instanceof ApiError && e.body && typeof e.body === "object" ? e.body : {}) as Partial<IngestError>;
  return { phase: "failed", text: errorText(e), row: body.row ?? null, column: body.column ?? null };
}

/**
 * CSV file → POST multipart to the rows endpoint. The bar shows the upload (bytes, from XHR
 * upload events), then the import job's rows_done / rows_total (GET imports/{id}/ every second
 * while it is running), then the result or the error with its row and column.
 */
function CsvImport({ db, table, isSuper, onImported }: { db: string; table: string; isSuper: boolean; onImported: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [view, setView] = useState<ImportView>({ phase: "idle" });
  const abort = useRef<(() => void) | null>(null);
  const inputRef = useRef<HTMLInputElement>(null);

  // Poll the job while it runs.
  const jobId = view.phase === "importing" ? view.job.id : null;
  useEffect(() => {
    if (jobId === null) return undefined;
    let cancelled = false;
    const t = setInterval(() => {
      getImport(jobId)
        .then((job) => {
          if (cancelled) return;
          if (job.state === "running") setView({ phase: "importing", job });
          else if (job.state === "done") {
            setView({ phase: "done", job });
            onImported();
          } else setView({ phase: "failed", text: job.error || "the import failed", row: null, column: null });
        })
        .catch((e) => !cancelled && setView(failure(e)));
    }, IMPORT_POLL_MS);
    return () => {
      cancelled = true;
      clearInterval(t);
    };
  }, [jobId, onImported]);

  useEffect(() => () => abort.current?.(), []);

  const start = async () => {
    if (!file) return;
    setView({ phase: "uploading", loaded: 0, total: file.size || null });
    const up = uploadCsv(db, table, file, (p) => setView({ phase: "uploading", loaded: p.loaded, total: p.total }));
    abort.current = up.abort;
    try {
      const job = await up.done;
      if (job.state === "running") setView({ phase: "importing", job });
      else if (job.state === "done") {
        setView({ phase: "done", job });
        onImported();
      } else setView({ phase: "failed", text: job.error || "the import failed", row: null, column: null });
    } catch (e) {
      setView(failure(e));
    } finally {
      abort.current = null;
    }
  };

  const busy = view.phase === "uploading" || view.phase === "importing";
  return (
    <Section title="Import rows from CSV" className="csv-import">
      <div className="import-bar">
        <input
          ref={inputRef}
          type="file"
          accept=".csv,.gz,text/csv"
          aria-label="CSV file"
          disabled={busy}
          onChange={(e) => {
            setFile(e.target.files?.[0] ?? null);
            setView({ phase: "idle" });
          }}
        />
        <button type="button" className="btn-primary btn-sm" disabled={!file || busy} onClick={() => void start()}>
          Import
        </button>
        {view.phase === "uploading" && (
          <button type="button" className="btn-sm" onClick={() => abort.current?.()}>
            Cancel
          </button>
        )}
        <span className="muted small">
          a header line of column names, then one row per line; timestamps ISO 8601 or epoch ms
          {isSuper ? "; a supertable needs a tbname column (and its tags for new subtables)" : ""}
        </span>
      </div>
      {view.phase === "uploading" && (
        <ProgressBar
          testId="import-progress"
          fraction={view.total ? view.loaded / view.total : null}
          label={`Uploading ${file?.name ?? ""}: ${formatBytes(view.loaded)}${view.total ? ` of ${formatBytes(view.total)}` : ""}`}
        />
      )}
      {view.phase === "importing" && (
        <ProgressBar
          testId="import-progress"
          fraction={view.job.fraction ?? (view.job.rows_total ? view.job.rows_done / view.job.rows_total : null)}
          label={`Importing: ${formatCount(view.job.rows_done)}${view.job.rows_total !== null ? ` of ${formatCount(view.job.rows_total)}` : ""} rows`}
        />
      )}
      {view.phase === "done" && (
        <div className="banner banner-ok" role="status" data-testid="import-result">
          Imported {view.job.rows_done} row{view.job.rows_done === 1 ? "" : "s"} into {db}.{table}
          {view.job.filename ? ` from ${view.job.filename}` : ""}.
        </div>
      )}
      {view.phase === "failed" && (
        <div className="banner banner-error" role="alert" data-testid="import-error">
          <strong>Import failed</strong>
          {view.row !== null && (
            <>
              {" "}
              at <span data-testid="import-error-row">row {view.row}</span>
            </>
          )}
          {view.column !== null && (
            <>
              , <span data-testid="import-error-column">column {view.column}</span>
            </>
          )}
          : {view.text}
        </div>
      )}
    </Section>
  );
}

function Schema({ d }: { d: TableDetail }) {
  return (
    <div className="schema">
      <FieldTable title={`Columns (${d.columns.length})`} fields={d.columns} />
      {d.tags.length > 0 && <FieldTable title={`Tags (${d.tags.length})`} fields={d.tags} values={d.kind === "sub" ? d.tag_values : undefined} />}
    </div>
  );
}

function FieldTable({ title, fields, values }: { title: string; fields: TableDetail["columns"]; values?: Record<string, unknown> }) {
  return (
    <div className="field-table">
      <h3>{title}</h3>
      <table className="grid">
        <thead>
          <tr>
            <th>Name</th>
            <th>Type</th>
            <th className="num">Length</th>
            {values && <th>Value</th>}
          </tr>
        </thead>
        <tbody>
          {fields.map((f) => (
            <tr key={f.name}>
              <td className="mono">{f.name}</td>
              <td className="mono">{f.type}</td>
              <td className="num">{f.length}</td>
              {values && <td className="mono">{f.name in values ? formatCell(values[f.name]) : ""}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function SqlConsole({ db, dbs, onDbChange }: { db: string; dbs: Database[]; onDbChange: (db: string) => void }) {
  const [sql, setSql] = useState("");
  const [running, setRunning] = useState(false);
  const [result, setResult] = useState<{ res: SqlResult; ms: number } | null>(null);
  const [error, setError] = useState<string | null>(null);

  const run = async () => {
    if (!sql.trim() || running) return;
    setRunning(true);
    setError(null);
    const t0 = performance.now();
    try {
      const res = await runSql(sql, db || undefined);
      setResult({ res, ms: performance.now() - t0 });
    } catch (e) {
      setResult(null);
      setError(errorText(e));
    } finally {
      setRunning(false);
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void run();
    }
  };

  const res = result?.res;
  return (
    <Section title="SQL console" className="sql-console">
      <div className="console-bar">
        <label>
          Database{" "}
          <select value={db} onChange={(e) => onDbChange(e.target.value)} aria-label="Console database">
            <option value="">(none)</option>
            {dbs.map((d) => (
              <option key={d.name} value={d.name}>
                {d.name}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="btn-primary btn-sm" disabled={running || !sql.trim()} onClick={() => void run()}>
          {running ? "Running…" : "Run"}
        </button>
        <span className="muted small">Ctrl+Enter</span>
      </div>
      <textarea
        className="console-input mono"
        aria-label="SQL console"
        spellCheck={false}
        rows={5}
        value={sql}
        placeholder="SELECT * FROM air.quality LIMIT 10"
        onChange={(e) => setSql(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <ErrorBanner error={error} />
      {res && res.code !== 0 && "desc" in res && (
        <div className="banner banner-error" role="alert" data-testid="console-error">
          <span className="mono">[0x{res.code.toString(16).padStart(4, "0")}]</span> {res.desc}
        </div>
      )}
      {res && res.code === 0 && "column_meta" in res && (
        <div className="console-result" data-testid="console-result">
          <div className="muted small">
            {res.rows} row{res.rows === 1 ? "" : "s"} · {Math.round(result!.ms)} ms
          </div>
          {res.column_meta.length > 0 && (
            <RowsTable columns={res.column_meta.map((c) => c[0])} types={res.column_meta.map((c) => c[1])} rows={res.data} />
          )}
        </div>
      )}
    </Section>
  );
}
