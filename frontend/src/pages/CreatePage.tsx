// Create a stream from SQL: editor, database selector, live validation, snippets.
import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { ApiError, createStream, errorText, listDatabases, validateSql } from "../api/client";
import type { Database, SqlErrorBody } from "../api/types";
import { ErrorBanner } from "../components/common";
import { useDebouncedEffect } from "../components/hooks";
import { codePointToIndex, ErrorCaret, SqlEditor, type SqlEditorHandle } from "../components/SqlEditor";
import { truncate } from "../format";
import { nav, urls } from "../page";

export const VALIDATE_DEBOUNCE_MS = 400;

export interface Snippet {
  label: string;
  title: string;
  sql: (db: string) => string;
}

/** Templates over the demo's data (`make demo` loads the Beijing readings into `air.quality`),
 * in both stream syntaxes; table names are qualified, so they run whichever database is selected. */
export const SNIPPETS: Snippet[] = [
  {
    label: "Daily average per station",
    title: "Legacy syntax: INTERVAL(1d) average per station, written when each day closes",
    sql: () => `CREATE STREAM IF NOT EXISTS station_daily_avg
  TRIGGER WINDOW_CLOSE
  INTO air.station_daily_avg_out
  AS SELECT _wstart, AVG(pm25) AS avg_pm25, COUNT(*) AS samples
  FROM air.quality
  PARTITION BY tbname
  INTERVAL(1d);`,
  },
  {
    label: "6-hour alerts (NOTIFY)",
    title: "Legacy syntax: 6-hour windows with a notification when each window closes",
    sql: () => `CREATE STREAM IF NOT EXISTS pm25_alerts_6h
  TRIGGER WINDOW_CLOSE
  INTO air.pm25_alerts_6h_out
  AS SELECT _wstart, _wend, MAX(pm25) AS max_pm25, COUNT(*) AS samples
  FROM air.quality
  PARTITION BY tbname
  INTERVAL(6h)
  NOTIFY ('ws://localhost:8080/notify')
  ON ('WINDOW_CLOSE');`,
  },
  {
    label: "Pollution episodes (3.3.7)",
    title: "TDengine 3.3.7 syntax: an EVENT_WINDOW per station from PM2.5 > 150 until it is back under 75",
    sql: () => `CREATE STREAM IF NOT EXISTS air.pm25_episodes
  EVENT_WINDOW(START WITH pm25 > 150 END WITH pm25 <= 75)
  FROM air.quality PARTITION BY tbname
  INTO air.pm25_episodes_out
  AS SELECT _twstart AS wstart, _twend AS wend, MAX(pm25) AS peak_pm25 FROM %%trows;`,
  },
];

type Validation =
  | { state: "idle" }
  | { state: "checking" }
  | { state: "ok"; statement: string }
  | { state: "error"; err: SqlErrorBody }
  | { state: "unavailable"; text: string };

export function CreatePage() {
  const [sql, setSql] = useState("");
  const [db, setDb] = useState("");
  const [dbs, setDbs] = useState<Database[] | null>(null);
  const [dbError, setDbError] = useState<string | null>(null);
  const [validation, setValidation] = useState<Validation>({ state: "idle" });
  const [createErr, setCreateErr] = useState<{ err: SqlErrorBody; sql: string } | null>(null);
  const [bannerError, setBannerError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const editor = useRef<SqlEditorHandle>(null);
  const seq = useRef(0);

  useEffect(() => {
    listDatabases()
      .then(setDbs)
      .catch((e) => setDbError(`Could not load databases: ${errorText(e)}`));
  }, []);

  const input = useMemo(() => ({ sql, db }), [sql, db]);
  useDebouncedEffect(input, VALIDATE_DEBOUNCE_MS, ({ sql: text, db: d }) => {
    const my = ++seq.current;
    if (!text.trim()) {
      setValidation({ state: "idle" });
      return;
    }
    setValidation({ state: "checking" });
    validateSql(text, d || undefined)
      .then((r) => {
        if (my !== seq.current) return;
        if (r.ok) setValidation({ state: "ok", statement: r.statement });
        else setValidation({ state: "error", err: { code: r.code, desc: r.desc, position: r.position } });
      })
      .catch((e) => {
        if (my === seq.current) setValidation({ state: "unavailable", text: errorText(e) });
      });
  });

  const change = (v: string) => {
    setSql(v);
    if (createErr && createErr.sql !== v) setCreateErr(null);
  };

  const submit = async () => {
    if (!sql.trim() || creating) return;
    setCreating(true);
    setBannerError(null);
    try {
      const s = await createStream({ sql, db: db || undefined });
      nav.go(urls.stream(s.id));
    } catch (e) {
      if (e instanceof ApiError && e.status === 400) {
        setCreateErr({ err: { code: e.code ?? 0, desc: e.desc, position: e.position }, sql });
      } else {
        setBannerError(`Could not create the stream: ${errorText(e)}`);
      }
    } finally {
      setCreating(false);
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void submit();
    }
  };

  // The create error wins over the (possibly older) validation result.
  const shown: SqlErrorBody | null = createErr?.err ?? (validation.state === "error" ? validation.err : null);
  const errorIndex = shown?.position ? codePointToIndex(sql, shown.position.offset) : null;

  return (
    <div className="page page-create">
      <div className="page-head">
        <h1>Create stream</h1>
      </div>
      <ErrorBanner error={bannerError ?? dbError} onDismiss={() => (bannerError ? setBannerError(null) : setDbError(null))} />
      <div className="create-toolbar">
        <label>
          Database{" "}
          <select value={db} onChange={(e) => setDb(e.target.value)} aria-label="Database">
            <option value="">(none — qualify table names)</option>
            {(dbs ?? []).map((d) => (
              <option key={d.name} value={d.name}>
                {d.name} ({d.precision}, {d.ntables} tables)
              </option>
            ))}
          </select>
        </label>
        <span className="toolbar-sep" />
        <span className="muted small">Insert example:</span>
        {SNIPPETS.map((s) => (
          <button key={s.label} type="button" className="btn-sm" title={s.title} onClick={() => editor.current?.insert(s.sql(db))}>
            {s.label}
          </button>
        ))}
      </div>
      <SqlEditor
        ref={editor}
        value={sql}
        onChange={change}
        errorIndex={errorIndex}
        onKeyDown={onKeyDown}
        placeholder="CREATE STREAM name [options] INTO target AS SELECT _wstart, ... FROM table INTERVAL(...)"
        minLines={14}
      />
      <div className="validation" aria-live="polite" data-testid="validation">
        {shown ? (
          <div className="sql-error" role="alert">
            <div>
              <span className="err-code">{createErr ? "Create failed" : "Invalid"}</span>
              {shown.code ? <span className="mono"> [0x{shown.code.toString(16).padStart(4, "0")}]</span> : null}{" "}
              <span data-testid="error-desc">{shown.desc}</span>
            </div>
            {shown.position && <ErrorCaret text={createErr?.sql ?? sql} line={shown.position.line} column={shown.position.column} />}
          </div>
        ) : validation.state === "ok" ? (
          <div className="sql-ok">
            ✓ Valid{" "}
            <span className="mono" title={validation.statement}>
              {truncate(validation.statement, 160)}
            </span>
          </div>
        ) : validation.state === "checking" ? (
          <div className="muted">Checking…</div>
        ) : validation.state === "unavailable" ? (
          <div className="muted">Validation unavailable: {validation.text}</div>
        ) : (
          <div className="muted">Type a CREATE STREAM statement; it is checked as you type.</div>
        )}
      </div>
      <div className="create-actions">
        <button type="button" className="btn-primary" disabled={!sql.trim() || creating} onClick={() => void submit()}>
          {creating ? "Creating…" : "Create stream"}
        </button>
        <span className="muted small">Ctrl+Enter</span>
      </div>
    </div>
  );
}
