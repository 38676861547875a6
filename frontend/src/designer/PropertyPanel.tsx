// The property form of the selected node: every field of docs/designer.md with units, defaults
// and the server's field-level errors (data-testid="error-<node>-<field>").
import { useRef, useState, type ReactNode } from "react";
import type { Catalog, CatalogDatabase, CatalogTable, Design, DesignIssue, NodeKind, OutputColumn, OutputTag, PartitionItem, Placeholder } from "../api/designer";
import { errorText } from "../api/client";
import type { StreamSyntax } from "../api/types";
import type { SqlEditorHandle } from "../components/SqlEditor";
import {
  fieldRoot,
  formFields,
  isUnset,
  INVALIDATION_NOTE,
  NOTIFY_DEFAULTS,
  notifyEventChoices,
  OPTION_FIELDS,
  optionKeysShown,
  TRIGGER_CHOICES,
  TRIGGER_FIELDS,
  type FieldSpec,
} from "./fields";
import { FILL_MODES, FILL_VALUE_MODES, fillOf, withFill } from "./fill";
import { KIND_HELP, KIND_LABEL, type NodeValue } from "./graph";
import { SqlCompleteEditor } from "./SqlCompleteEditor";
import { hiddenSubtables, pickerEntries } from "./tablePicker";

export interface PropertyPanelProps {
  kind: NodeKind;
  design: Design;
  /** The issues the server reported for this node. */
  issues: DesignIssue[];
  catalog: Catalog | null;
  /** Placeholders valid for the chosen trigger. */
  placeholders: Placeholder[];
  /** What this node's null fields mean in the design's syntax (catalog `defaults`). */
  defaults?: Record<string, unknown>;
  onChange: (value: NodeValue) => void;
  onDelete: () => void;
  /** Resolves to the user's inbox URL (GET /api/v1/me/). */
  myInbox: () => Promise<string | null>;
}

/** A placeholder as an example ("e.g. 10m"), so that it never reads as a value written. */
export const eg = (p: string | undefined): string | undefined => (p === undefined || p === "" || /^(e\.g\.|\(|blank)/.test(p) ? p : `e.g. ${p}`);

/** "" and whitespace mean "not written". */
const orNull = (v: string): string | null => (v.trim() === "" ? null : v);
const text = (v: unknown): string => (v === null || v === undefined ? "" : Array.isArray(v) ? v.join(", ") : String(v));
const csv = (v: string): string[] | null => {
  const xs = v
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  return xs.length ? xs : null;
};

function FieldErrors({ node, field, issues }: { node: string; field: string; issues: DesignIssue[] }) {
  const mine = issues.filter((i) => i.field && fieldRoot(i.field) === field);
  if (!mine.length) return null;
  return (
    <div className="dz-field-error" role="alert" data-testid={`error-${node}-${field}`}>
      {mine.map((i, k) => (
        <div key={k}>{i.field !== field ? `${i.field}: ${i.message}` : i.message}</div>
      ))}
    </div>
  );
}

interface RowProps {
  node: string;
  name: string;
  label: string;
  help?: ReactNode;
  issues: DesignIssue[];
  children: ReactNode;
  /** The control is a group (checkboxes, list): use a fieldset legend instead of a label. */
  group?: boolean;
}

function Row({ node, name, label, help, issues, children, group }: RowProps) {
  const bad = issues.some((i) => i.field && fieldRoot(i.field) === name);
  const body = (
    <>
      {children}
      {help && <div className="dz-help">{help}</div>}
      <FieldErrors node={node} field={name} issues={issues} />
    </>
  );
  if (group) {
    return (
      <fieldset className={`dz-field${bad ? " bad" : ""}`}>
        <legend>{label}</legend>
        {body}
      </fieldset>
    );
  }
  return (
    <div className={`dz-field${bad ? " bad" : ""}`}>
      <label htmlFor={`dz-${node}-${name}`}>{label}</label>
      {body}
    </div>
  );
}

function helpOf(f: FieldSpec, serverDefault: unknown): ReactNode {
  const def = serverDefault !== undefined && serverDefault !== null ? text(serverDefault) : f.default;
  const parts = [f.help, def !== undefined ? `default: ${def}` : undefined, f.required ? "required" : undefined].filter(Boolean);
  return parts.length ? parts.join(" · ") : undefined;
}

/** One field of a FieldSpec list (triggers, options). */
function SpecField({
  node,
  spec,
  value,
  issues,
  syntax,
  serverDefault,
  onChange,
}: {
  node: string;
  spec: FieldSpec;
  value: unknown;
  issues: DesignIssue[];
  syntax: StreamSyntax;
  serverDefault?: unknown;
  onChange: (v: unknown) => void;
}) {
  const id = `dz-${node}-${spec.name}`;
  const label = spec.syntax && spec.syntax !== syntax ? `${spec.label} (${spec.syntax} only)` : spec.label;
  const help = helpOf(spec, serverDefault);
  const def = serverDefault !== undefined && serverDefault !== null ? text(serverDefault) : spec.default;
  let control: ReactNode;
  switch (spec.kind) {
    case "flag":
      control = (
        <select id={id} name={spec.name} value={value === true ? "true" : value === false ? "false" : ""} onChange={(e) => onChange(e.target.value === "" ? null : e.target.value === "true")}>
          <option value="">{`not set${def !== undefined ? ` (default ${def})` : ""}`}</option>
          <option value="true">on</option>
          <option value="false">off</option>
        </select>
      );
      break;
    case "int":
      control = (
        <input
          id={id}
          name={spec.name}
          type="text"
          inputMode="numeric"
          className="mono"
          value={text(value)}
          placeholder={eg(spec.placeholder)}
          onChange={(e) => onChange(intOrText(e.target.value))}
        />
      );
      break;
    case "intcsv":
      control = <CsvInput id={id} name={spec.name} value={value} placeholder={eg(spec.placeholder)} onChange={onChange} ints />;
      break;
    case "choice":
      control = (
        <select id={id} name={spec.name} value={text(value)} onChange={(e) => onChange(orNull(e.target.value))}>
          <option value="">{`not set${def !== undefined ? ` (default ${def})` : ""}`}</option>
          {(spec.choices ?? []).map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
          {value && !(spec.choices ?? []).includes(String(value)) ? <option value={String(value)}>{String(value)}</option> : null}
        </select>
      );
      break;
    case "multi": {
      const list = Array.isArray(value) ? (value as string[]) : [];
      return (
        <Row node={node} name={spec.name} label={label} help={help} issues={issues} group>
          <div className="dz-checks">
            {(spec.choices ?? []).map((c) => (
              <label key={c} className="dz-check">
                <input
                  type="checkbox"
                  name={spec.name}
                  value={c}
                  checked={list.includes(c)}
                  onChange={(e) => {
                    const next = e.target.checked ? [...list, c] : list.filter((x) => x !== c);
                    onChange(next.length ? next : null);
                  }}
                />{" "}
                {c}
              </label>
            ))}
          </div>
        </Row>
      );
    }
    case "csv":
      control = <CsvInput id={id} name={spec.name} value={value} placeholder={eg(spec.placeholder)} onChange={onChange} />;
      break;
    default:
      control = (
        <input
          id={id}
          name={spec.name}
          type="text"
          className={spec.kind === "expr" || spec.kind === "duration" ? "mono" : undefined}
          value={text(value)}
          placeholder={eg(spec.placeholder)}
          spellCheck={false}
          autoComplete="off"
          onChange={(e) => onChange(orNull(e.target.value))}
        />
      );
  }
  return (
    <Row node={node} name={spec.name} label={label} help={help} issues={issues}>
      {control}
    </Row>
  );
}

/** Digits become a number (the server's int fields); anything else stays text for it to report. */
function intOrText(v: string): number | string | null {
  const t = v.trim();
  if (!t) return null;
  return /^\d+$/.test(t) ? Number(t) : v;
}

/** Comma-separated list input that keeps what is typed (e.g. a trailing ", ") while editing. */
function CsvInput({
  id,
  name,
  value,
  placeholder,
  onChange,
  ints = false,
}: {
  id: string;
  name: string;
  value: unknown;
  placeholder?: string;
  onChange: (v: unknown) => void;
  ints?: boolean;
}) {
  const [draft, setDraft] = useState<string | null>(null);
  const shown = draft ?? text(value);
  return (
    <input
      id={id}
      name={name}
      type="text"
      className="mono"
      value={shown}
      placeholder={eg(placeholder)}
      onChange={(e) => {
        setDraft(e.target.value);
        const xs = csv(e.target.value);
        onChange(ints && xs ? xs.map(intOrText) : xs);
      }}
      onBlur={() => setDraft(null)}
    />
  );
}

function Text({
  node,
  name,
  label,
  value,
  issues,
  onChange,
  placeholder,
  help,
  mono = true,
  list,
}: {
  node: string;
  name: string;
  label: string;
  value: unknown;
  issues: DesignIssue[];
  onChange: (v: string | null) => void;
  placeholder?: string;
  help?: ReactNode;
  mono?: boolean;
  list?: string;
}) {
  return (
    <Row node={node} name={name} label={label} help={help} issues={issues}>
      <input
        id={`dz-${node}-${name}`}
        name={name}
        type="text"
        className={mono ? "mono" : undefined}
        value={text(value)}
        placeholder={eg(placeholder)}
        spellCheck={false}
        autoComplete="off"
        list={list}
        onChange={(e) => onChange(orNull(e.target.value))}
      />
    </Row>
  );
}

/** The option keys the catalog offers with a trigger type (null: no catalog answer, offer all). */
export function offeredOptions(catalog: Catalog | null, syntax: StreamSyntax, triggerType: string): string[] | null {
  return catalog?.options?.[syntax]?.[triggerType] ?? null;
}

function findTable(catalog: Catalog | null, db: unknown, table: unknown): CatalogTable | undefined {
  if (!catalog || !table) return undefined;
  const d = catalog.databases.find((x) => x.name === db) ?? catalog.databases.find((x) => x.tables.some((t) => t.name === table));
  return d?.tables.find((t) => t.name === table);
}

// --- per kind -----------------------------------------------------------------------------------

/**
 * The trigger table: supertables and normal tables of the database (of every database, as
 * db.table, while none is chosen), subtables behind "show subtables", a search box (tablePicker.ts).
 */
function TriggerTablePicker({ v, set, issues, dbs, db }: { v: NodeValue; set: (patch: NodeValue) => void; issues: DesignIssue[]; dbs: CatalogDatabase[]; db: string | null }) {
  const [search, setSearch] = useState("");
  const [showSubtables, setShowSubtables] = useState(false);
  // no database chosen yet: every database's tables, as db.table; picking one sets its database
  const pool = db ? (dbs.find((d) => d.name === db)?.tables ?? []).map((t) => ({ db, t })) : dbs.flatMap((d) => d.tables.map((t) => ({ db: d.name, t })));
  const entries = pickerEntries(pool, { search, showSubtables }, !db);
  const hidden = hiddenSubtables(pool);
  const current = text(v.table);
  return (
    <Row node="source" name="table" label="Trigger table" issues={issues} help="supertable, subtable, normal table or virtual table (virtual supertables too); none for a PERIOD schedule">
      <div className="dz-picker-tools">
        <input type="search" name="table_search" aria-label="Search tables" className="mono" placeholder="search tables…" value={search} onChange={(e) => setSearch(e.target.value)} />
        <label className="dz-check small" title={hidden.generated ? `${hidden.generated} of them are output subtables streams generated (t_<md5>)` : undefined}>
          <input type="checkbox" name="show_subtables" checked={showSubtables} onChange={(e) => setShowSubtables(e.target.checked)} /> show subtables ({hidden.all})
        </label>
      </div>
      <select
        id="dz-source-table"
        name="table"
        value={current}
        onChange={(e) => {
          const picked = entries.find((x) => x.value === e.target.value);
          set(picked && !db ? { db: picked.db, table: picked.table.name } : { table: orNull(e.target.value) });
        }}
      >
        <option value="">(none)</option>
        {entries.map((x) => (
          <option key={`${x.db}.${x.table.name}`} value={x.value}>
            {x.label}
          </option>
        ))}
        {current && !entries.some((x) => x.value === current) ? <option value={current}>{current}</option> : null}
      </select>
    </Row>
  );
}

interface FormProps {
  v: NodeValue;
  set: (patch: NodeValue) => void;
  issues: DesignIssue[];
  p: PropertyPanelProps;
}

function SourceForm({ v, set, issues, p }: FormProps) {
  const dbs = p.catalog?.databases ?? [];
  const db = (v.db as string | null) ?? p.design.db;
  const parts = (Array.isArray(v.partition_by) ? v.partition_by : []) as PartitionItem[];
  const table = findTable(p.catalog, db, v.table);
  const setParts = (next: PartitionItem[]) => set({ partition_by: next });
  return (
    <>
      <Row node="source" name="db" label="Database" issues={issues} help={`not set: the stream's database${p.design.db ? ` (${p.design.db})` : ""}`}>
        <select id="dz-source-db" name="db" value={text(v.db)} onChange={(e) => set({ db: orNull(e.target.value) })}>
          <option value="">(stream database)</option>
          {dbs.map((d) => (
            <option key={d.name} value={d.name}>
              {d.name}
            </option>
          ))}
          {v.db && !dbs.some((d) => d.name === v.db) ? <option value={String(v.db)}>{String(v.db)}</option> : null}
        </select>
      </Row>
      <TriggerTablePicker v={v} set={set} issues={issues} dbs={dbs} db={db} />
      {(p.design.syntax === "legacy" || v.from) && (
        <Text
          node="source"
          name="from"
          label="FROM subquery or join (legacy)"
          value={v.from}
          issues={issues}
          onChange={(x) => set({ from: x })}
          placeholder="(SELECT ts, a FROM t WHERE a > 1)"
          help="instead of the trigger table: what the legacy query reads (seed 000); no 3.3.7 equivalent"
        />
      )}
      <Row node="source" name="partition_by" label="PARTITION BY" issues={issues} group help="expressions, e.g. tbname or a tag; optional alias">
        <datalist id="dz-partition-choices">
          <option value="tbname" />
          {(table?.tags ?? []).map((t) => (
            <option key={t.name} value={t.name} />
          ))}
          {(table?.columns ?? []).map((c) => (
            <option key={c.name} value={c.name} />
          ))}
        </datalist>
        {parts.map((it, i) => (
          <div className="dz-list-row" key={i}>
            <input
              name={`partition_by.${i}.sql`}
              aria-label={`Partition item ${i + 1}`}
              className="mono"
              list="dz-partition-choices"
              value={text(it.sql)}
              placeholder="e.g. tbname"
              onChange={(e) => setParts(parts.map((x, j) => (j === i ? { ...x, sql: e.target.value } : x)))}
            />
            <input
              name={`partition_by.${i}.alias`}
              aria-label={`Partition alias ${i + 1}`}
              className="mono dz-narrow"
              value={text(it.alias)}
              placeholder="AS alias"
              onChange={(e) => setParts(parts.map((x, j) => (j === i ? { ...x, alias: orNull(e.target.value) } : x)))}
            />
            <button type="button" className="btn-sm" aria-label={`Remove partition item ${i + 1}`} onClick={() => setParts(parts.filter((_, j) => j !== i))}>
              ×
            </button>
          </div>
        ))}
        <div className="dz-list-actions">
          <button type="button" className="btn-sm" onClick={() => setParts([...parts, { sql: "", alias: null }])}>
            + item
          </button>
          {!parts.some((x) => x.sql === "tbname") && (
            <button type="button" className="btn-sm" onClick={() => setParts([...parts, { sql: "tbname", alias: null }])}>
              + tbname
            </button>
          )}
        </div>
      </Row>
    </>
  );
}

/** The select value of a trigger: its type, or ekuiper:<function>. */
export function triggerChoice(v: NodeValue): string {
  return v.type === "ekuiper" ? `ekuiper:${text(v.function) || "tumbling"}` : text(v.type);
}

/** The trigger after choosing `choice`: fields of the new type, same-named values kept. */
export function changeTriggerType(v: NodeValue, choice: string): NodeValue {
  const [type, fn] = choice.split(":");
  const next: NodeValue = { type };
  for (const f of TRIGGER_FIELDS[type] ?? []) next[f.name] = v[f.name] ?? null;
  if (type === "ekuiper") next.function = fn ?? "tumbling";
  return next;
}

function TriggerForm({ v, set, issues, p }: FormProps) {
  const choice = triggerChoice(v);
  const fields = TRIGGER_FIELDS[String(v.type)] ?? [];
  const syntax = p.design.syntax;
  return (
    <>
      <Row node="trigger" name="type" label="Trigger type" issues={issues}>
        <select id="dz-trigger-type" name="type" value={choice} onChange={(e) => p.onChange(changeTriggerType(v, e.target.value))}>
          {TRIGGER_CHOICES.map((c) => (
            <option key={c.value} value={c.value}>
              {c.label}
              {c.syntax && c.syntax !== syntax ? ` (${c.syntax} syntax)` : ""}
            </option>
          ))}
          {!TRIGGER_CHOICES.some((c) => c.value === choice) && <option value={choice}>{choice}</option>}
        </select>
      </Row>
      {fields
        .filter((f) => !(v.type === "ekuiper" && f.name === "function"))
        .map((f) => (
          <SpecField key={f.name} node="trigger" spec={f} value={v[f.name]} issues={issues} syntax={syntax} serverDefault={p.defaults?.[f.name]} onChange={(x) => set({ [f.name]: x })} />
        ))}
    </>
  );
}

function OptionsForm({ v, set, issues, p }: FormProps) {
  const syntax = p.design.syntax;
  const specs = OPTION_FIELDS[syntax] ?? [];
  const other = syntax === "legacy" ? "3.3.7" : "legacy";
  const shown = optionKeysShown(v, syntax).filter((k) => !specs.some((f) => f.name === k));
  const otherSpecs = OPTION_FIELDS[other].filter((f) => shown.includes(f.name));
  const extra = shown.filter((k) => !otherSpecs.some((f) => f.name === k));
  const triggerType = String(p.design.nodes.trigger?.type ?? "");
  const offered = offeredOptions(p.catalog, syntax, triggerType);
  // an option the seeds forbid with this trigger is not offered; one set anyway stays, to be cleared
  const mine = specs.filter((f) => !offered || offered.includes(f.name) || !isUnset(v[f.name]));
  const hidden = specs.length - mine.length;
  return (
    <>
      {hidden > 0 && (
        <div className="dz-help" data-testid="options-hidden">
          {hidden} option{hidden === 1 ? "" : "s"} not offered: the seeds do not allow {hidden === 1 ? "it" : "them"} with a {triggerType.toUpperCase()} trigger.
        </div>
      )}
      {mine.map((f) => (
        <SpecField key={f.name} node="options" spec={f} value={v[f.name]} issues={issues} syntax={syntax} serverDefault={p.defaults?.[f.name]} onChange={(x) => set({ [f.name]: x })} />
      ))}
      {otherSpecs.map((f) => (
        <SpecField
          key={f.name}
          node="options"
          spec={{ ...f, syntax: other, help: `not a ${syntax} option: clear it` }}
          value={v[f.name]}
          issues={issues}
          syntax={syntax}
          onChange={(x) => set({ [f.name]: x })}
        />
      ))}
      {extra.map((k) => (
        <Row key={k} node="options" name={k} label={`${k} (unknown option)`} issues={issues} help="JSON value; clear to remove">
          <JsonInput id={`dz-options-${k}`} name={k} value={v[k]} onChange={(x) => set({ [k]: x })} onRemove={() => p.onChange(Object.fromEntries(Object.entries(v).filter(([kk]) => kk !== k)))} />
        </Row>
      ))}
    </>
  );
}

function JsonInput({ id, name, value, onChange, onRemove }: { id: string; name: string; value: unknown; onChange: (v: unknown) => void; onRemove: () => void }) {
  const [draft, setDraft] = useState(JSON.stringify(value));
  return (
    <input
      id={id}
      name={name}
      className="mono"
      value={draft}
      onChange={(e) => {
        setDraft(e.target.value);
        if (!e.target.value.trim()) return onRemove();
        try {
          onChange(JSON.parse(e.target.value));
        } catch {
          /* keep typing */
        }
      }}
    />
  );
}

function ComputationForm({ v, set, issues, p }: FormProps) {
  const editor = useRef<SqlEditorHandle>(null);
  const query = text(v.query);
  const src = p.design.nodes.source;
  const pos = issues.find((i) => fieldRoot(i.field ?? "") === "query" && i.position)?.position;
  const placeholders = p.placeholders;
  return (
    <>
      <div className="dz-placeholders" aria-label="Placeholders">
        <span className="muted small">Placeholders:</span>{" "}
        {placeholders.length ? (
          placeholders.map((ph) => (
            <button
              key={ph.name}
              type="button"
              className="btn-sm mono"
              data-testid={`placeholder-${ph.name}`}
              title={`Insert ${ph.name}: ${ph.description}`}
              onClick={() => editor.current?.insert(ph.name)}
            >
              {ph.name}
            </button>
          ))
        ) : (
          <span className="muted small">none for this trigger</span>
        )}
      </div>
      <Row node="computation" name="query" label="Query" issues={issues} help="TDengine SELECT; Tab/Enter completes names">
        <div id="dz-computation-query">
          <SqlCompleteEditor
            ref={editor}
            value={query}
            label="Query"
            minLines={8}
            placeholder="e.g. SELECT _twstart, avg(x) FROM %%trows"
            errorIndex={null}
            onChange={(q) => set({ query: orNull(q) })}
            completion={{
              catalog: p.catalog,
              placeholders,
              db: (src?.db as string | null) ?? p.design.db,
              table: (src?.table as string | null) ?? null,
            }}
          />
        </div>
      </Row>
      {pos && <div className="muted small">Error at line {pos.line}, column {pos.column} of the rendered SQL.</div>}
      <FillFields query={query} onChange={(q) => set({ query: orNull(q) })} />
    </>
  );
}

/** FILL of the computation's window: a mode, and the values of VALUE / VALUE_F (edits the query's
 * FILL clause; the server checks it against the trigger, seed 000). */
function FillFields({ query, onChange }: { query: string; onChange: (q: string) => void }) {
  const fill = fillOf(query);
  const [draft, setDraft] = useState<string | null>(null);
  const mode = fill?.mode ?? "";
  const takesValues = FILL_VALUE_MODES.includes(mode);
  return (
    <div className="dz-field" data-testid="fill-fields">
      <label htmlFor="dz-computation-fill_mode">FILL</label>
      <select
        id="dz-computation-fill_mode"
        name="fill_mode"
        value={mode}
        onChange={(e) => {
          const m = e.target.value;
          onChange(withFill(query, m ? { mode: m, values: FILL_VALUE_MODES.includes(m) ? fill?.values ?? [] : [] } : null));
        }}
      >
        <option value="">not set (windows without rows are not output)</option>
        {FILL_MODES.map((m) => (
          <option key={m} value={m}>
            {m}
          </option>
        ))}
        {mode && !FILL_MODES.includes(mode) ? <option value={mode}>{mode}</option> : null}
      </select>
      {takesValues && (
        <input
          id="dz-computation-fill_values"
          name="fill_values"
          aria-label="FILL values"
          className="mono"
          placeholder="e.g. 0, 0.5"
          value={draft ?? (fill?.values ?? []).join(", ")}
          onChange={(e) => {
            setDraft(e.target.value);
            const values = e.target.value
              .split(",")
              .map((x) => x.trim())
              .filter(Boolean);
            onChange(withFill(query, { mode, values }));
          }}
          onBlur={() => setDraft(null)}
        />
      )}
      <div className="dz-help">
        fills the INTERVAL windows without rows{takesValues ? "; one value per filled column, comma separated" : ""} · legacy TRIGGER FORCE_WINDOW_CLOSE takes PREV, NULL, NONE or VALUE (seed 000)
      </div>
    </div>
  );
}

function OutputForm({ v, set, issues, p }: FormProps) {
  const dbs = p.catalog?.databases ?? [];
  const db = (v.db as string | null) ?? p.design.db;
  const tables = dbs.find((d) => d.name === db)?.tables ?? [];
  const tags = (Array.isArray(v.tags) ? v.tags : []) as OutputTag[];
  const cols = (Array.isArray(v.columns) ? v.columns : []) as OutputColumn[];
  const setTags = (next: OutputTag[]) => set({ tags: next });
  const setCols = (next: OutputColumn[]) => set({ columns: next });
  const colName = (c: OutputColumn) => (typeof c === "string" ? c : c.name);
  return (
    <>
      <datalist id="dz-output-dbs">
        {dbs.map((d) => (
          <option key={d.name} value={d.name} />
        ))}
      </datalist>
      {/* suggestions: supertables and normal tables (a stream writes one of them), no subtable */}
      <datalist id="dz-output-tables">
        {pickerEntries(
          tables.map((t) => ({ db: db ?? "", t })),
          { showSubtables: false, search: "" },
          false,
        ).map((x) => (
          <option key={x.value} value={x.value} />
        ))}
      </datalist>
      <Text node="output" name="db" label="Database" value={v.db} issues={issues} list="dz-output-dbs" onChange={(x) => set({ db: x })} help="not set: the stream's database" />
      <Text node="output" name="table" label="Output table" value={v.table} issues={issues} list="dz-output-tables" onChange={(x) => set({ table: x })} placeholder="pollution_episodes" help="created when missing (a supertable when grouped)" />
      <Text node="output" name="subtable" label="SUBTABLE expression" value={v.subtable} issues={issues} onChange={(x) => set({ subtable: x })} placeholder="concat('out_', %%1)" help="name of each group's subtable; default: generated" />
      <Row node="output" name="tags" label="TAGS" issues={issues} group help="name, type and AS expression per tag; default: from the grouping columns">
        {tags.map((t, i) => (
          <div className="dz-list-row" key={i}>
            <input name={`tags.${i}.name`} aria-label={`Tag ${i + 1} name`} className="mono dz-narrow" placeholder="e.g. name" value={text(t.name)} onChange={(e) => setTags(tags.map((x, j) => (j === i ? { ...x, name: e.target.value } : x)))} />
            <input name={`tags.${i}.type`} aria-label={`Tag ${i + 1} type`} className="mono dz-narrow" placeholder="e.g. VARCHAR(64)" value={text(t.type)} onChange={(e) => setTags(tags.map((x, j) => (j === i ? { ...x, type: e.target.value } : x)))} />
            <input name={`tags.${i}.expr`} aria-label={`Tag ${i + 1} AS expression`} className="mono" placeholder="e.g. AS %%tbname" value={text(t.expr)} onChange={(e) => setTags(tags.map((x, j) => (j === i ? { ...x, expr: orNull(e.target.value) } : x)))} />
            <button type="button" className="btn-sm" aria-label={`Remove tag ${i + 1}`} onClick={() => setTags(tags.filter((_, j) => j !== i))}>
              ×
            </button>
          </div>
        ))}
        <button type="button" className="btn-sm" onClick={() => setTags([...tags, { name: "", type: "VARCHAR(64)", comment: null, expr: null }])}>
          + tag
        </button>
      </Row>
      <Row node="output" name="columns" label="Columns" issues={issues} group help="output column names in query order; default: the query's names">
        {cols.map((c, i) => (
          <div className="dz-list-row" key={i}>
            <input
              name={`columns.${i}.name`}
              aria-label={`Column ${i + 1} name`}
              className="mono"
              value={colName(c)}
              onChange={(e) => setCols(cols.map((x, j) => (j === i ? (typeof x === "string" ? e.target.value : { ...x, name: e.target.value }) : x)))}
            />
            {typeof c !== "string" && (
              <label className="dz-check small">
                <input
                  type="checkbox"
                  name={`columns.${i}.composite_key`}
                  checked={!!c.composite_key}
                  onChange={(e) => setCols(cols.map((x, j) => (j === i && typeof x !== "string" ? { ...x, composite_key: e.target.checked } : x)))}
                />{" "}
                COMPOSITE KEY
              </label>
            )}
            <button type="button" className="btn-sm" aria-label={`Remove column ${i + 1}`} onClick={() => setCols(cols.filter((_, j) => j !== i))}>
              ×
            </button>
          </div>
        ))}
        <button type="button" className="btn-sm" onClick={() => setCols([...cols, { name: "", composite_key: false }])}>
          + column
        </button>
      </Row>
    </>
  );
}

function NotifyForm({ v, set, issues, p }: FormProps) {
  const urls = (Array.isArray(v.urls) ? v.urls : []) as string[];
  const events = (Array.isArray(v.events) ? v.events : []) as string[];
  const choices = notifyEventChoices(p.design.syntax, events);
  const defs = NOTIFY_DEFAULTS[p.design.syntax] ?? NOTIFY_DEFAULTS["3.3.7"];
  const [inboxErr, setInboxErr] = useState<string | null>(null);
  const addInbox = async () => {
    setInboxErr(null);
    try {
      const url = await p.myInbox();
      if (!url) setInboxErr("You have no inbox.");
      else if (!urls.includes(url)) set({ urls: [...urls, url] });
    } catch (e) {
      setInboxErr(errorText(e));
    }
  };
  const hist = p.defaults?.history ?? defs.history;
  const fail = p.defaults?.on_failure ?? defs.on_failure;
  return (
    <>
      <Row node="notify" name="urls" label="URLs" issues={issues} group help="ws:// or wss:// addresses">
        {urls.map((u, i) => (
          <div className="dz-list-row" key={i}>
            <input
              name={`urls.${i}`}
              aria-label={`URL ${i + 1}`}
              className="mono"
              value={u}
              placeholder="e.g. ws://host:port/path"
              onChange={(e) => set({ urls: urls.map((x, j) => (j === i ? e.target.value : x)) })}
            />
            <button type="button" className="btn-sm" aria-label={`Remove URL ${i + 1}`} onClick={() => set({ urls: urls.filter((_, j) => j !== i) })}>
              ×
            </button>
          </div>
        ))}
        <div className="dz-list-actions">
          <button type="button" className="btn-sm" onClick={() => set({ urls: [...urls, ""] })}>
            + URL
          </button>
          <button type="button" className="btn-sm" onClick={() => void addInbox()}>
            My inbox
          </button>
        </div>
        {inboxErr && <div className="dz-field-error">{inboxErr}</div>}
      </Row>
      <Row node="notify" name="events" label="ON events" issues={issues} group help="required except for SLIDING and PERIOD triggers (ON_TIME is theirs, 3.3.7)">
        <div className="dz-checks">
          {choices.map((ev) => (
            <label key={ev} className="dz-check">
              <input
                type="checkbox"
                name="events"
                value={ev}
                checked={events.includes(ev)}
                onChange={(e) => set({ events: e.target.checked ? choices.filter((x) => x === ev || events.includes(x)) : events.filter((x) => x !== ev) })}
              />{" "}
              {ev}
            </label>
          ))}
        </div>
        <div className="dz-help" data-testid="notify-invalidation-note">
          {INVALIDATION_NOTE}
        </div>
      </Row>
      <Text node="notify" name="where" label="WHERE" value={v.where} issues={issues} onChange={(x) => set({ where: x })} placeholder="peak_pm25 > 200" help="3.3.7: notify only when it holds; result columns and constants only (seed 002)" />
      <Row node="notify" name="history" label="NOTIFY_HISTORY" issues={issues} help="notify while computing history">
        <select id="dz-notify-history" name="history" value={v.history === true ? "true" : v.history === false ? "false" : ""} onChange={(e) => set({ history: e.target.value === "" ? null : e.target.value === "true" })}>
          <option value="">{`not set (default ${text(hist)})`}</option>
          <option value="true">on</option>
          <option value="false">off</option>
        </select>
      </Row>
      <Row node="notify" name="on_failure" label="ON_FAILURE" issues={issues} help="when a URL cannot be reached">
        <select id="dz-notify-on_failure" name="on_failure" value={text(v.on_failure)} onChange={(e) => set({ on_failure: orNull(e.target.value) })}>
          <option value="">{`not set (default ${text(fail)})`}</option>
          <option value="DROP">DROP</option>
          <option value="PAUSE">PAUSE</option>
        </select>
      </Row>
    </>
  );
}

function PrefilterForm({ v, set, issues }: FormProps) {
  return (
    <Text
      node="prefilter"
      name="condition"
      label="Condition"
      value={v.condition}
      issues={issues}
      onChange={(x) => set({ condition: x })}
      placeholder="e.g. pm25 IS NOT NULL"
      help="rows of the trigger table that fail it are ignored (columns, tags, constants)"
    />
  );
}

const FORMS: Record<NodeKind, (p: FormProps) => ReactNode> = {
  source: SourceForm,
  prefilter: PrefilterForm,
  trigger: TriggerForm,
  options: OptionsForm,
  computation: ComputationForm,
  output: OutputForm,
  notify: NotifyForm,
};

export function PropertyPanel(props: PropertyPanelProps) {
  const { kind, design, issues } = props;
  const v = (design.nodes[kind] ?? {}) as NodeValue;
  // the node as last rendered: a patch applied after an await (My inbox) keeps later edits
  const latest = useRef(v);
  latest.current = v;
  const set = (patch: NodeValue) => props.onChange({ ...latest.current, ...patch });
  const known = formFields(kind, v, design.syntax);
  const loose = issues.filter((i) => !i.field || !known.includes(fieldRoot(i.field)));
  const Form = FORMS[kind];
  return (
    <div className="dz-props" data-testid={`props-${kind}`}>
      <div className="dz-props-head">
        <h2>{KIND_LABEL[kind]}</h2>
        <button type="button" className="btn-sm btn-danger-outline" onClick={props.onDelete} title="Remove this node (Delete)">
          Remove
        </button>
      </div>
      <div className="muted small">{KIND_HELP[kind]}</div>
      {loose.length > 0 && (
        <div className="dz-field-error" role="alert" data-testid={`error-${kind}-${loose[0].field ?? "node"}`}>
          {loose.map((i, k) => (
            <div key={k}>
              {i.field ? <span className="mono">{i.field}: </span> : null}
              {i.message}
            </div>
          ))}
        </div>
      )}
      <form className="dz-form" onSubmit={(e) => e.preventDefault()} aria-label={`${KIND_LABEL[kind]} properties`}>
        <Form v={v} set={set} issues={issues} p={props} />
      </form>
    </div>
  );
}
