// The visual stream designer (page "designer"): palette | canvas | properties, tabs for SQL,
// paste SQL, preview and versions; a top bar to name, save and deploy the design.
// The design document (docs/designer.md) is the only state; the server validates every change.
import { ReactFlowProvider } from "@xyflow/react";
import type { DesignIssue } from "../api/designer";
import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { ApiError, errorText } from "../api/client";
import {
  createDraft,
  deployDraft,
  getCatalog,
  getDraft,
  getMe,
  impactOf,
  listTemplates,
  updateDraft,
  validateDesign,
  type Catalog,
  type CompileAnswer,
  type Design,
  type DraftBody,
  type Impact,
  type Me,
  type NodeKind,
  type StreamVersion,
  type Template,
  type ValidateAnswer,
} from "../api/designer";
import type { StreamSyntax } from "../api/types";
import { ErrorBanner } from "../components/common";
import { ConfirmDialog } from "../components/ConfirmDialog";
import { urls } from "../page";
import { Canvas, useCanvasView } from "./Canvas";
import { DesignerViewCtx, groupIssues } from "./context";
import { addNode, followTrigger, isNodeKind, KIND_LABEL, newDesign, presentKinds, removeNode, semanticKey, setNode, withAutoLayout, type NodeValue } from "./graph";
import { SqlTab, PasteTab, PreviewTab, VersionsTab } from "./panels";
import { Palette } from "./Palette";
import { addNodeByClick } from "./placement";
import { runtimeByNode, useStreamRuntime } from "./runtime";
import { changeTriggerType, PropertyPanel } from "./PropertyPanel";

export const VALIDATE_DEBOUNCE_MS = 300;
/** Edits closer together than this are one undo step. */
const UNDO_COALESCE_MS = 1000;

type Tab = "sql" | "paste" | "preview" | "versions";

interface Validation {
  answer: ValidateAnswer | null;
  checking: boolean;
  error: string | null;
}

interface Confirm {
  title: string;
  message: ReactNode;
  label: string;
  danger?: boolean;
  action: () => void;
}

export function DesignerPage({ draftId }: { draftId: number | null }) {
  return (
    <ReactFlowProvider>
      <DesignerEditor initialDraftId={draftId} />
    </ReactFlowProvider>
  );
}

/** A design read from the server, laid out when it has no positions. */
function laidOut(d: Design): Design {
  return d.layout && Object.keys(d.layout).length ? d : withAutoLayout(d);
}

function mergeCatalog(prev: Catalog | null, next: Catalog): Catalog {
  if (!prev) return next;
  const byName = new Map(prev.databases.map((d) => [d.name, d]));
  for (const d of next.databases) byName.set(d.name, d);
  return { ...prev, ...next, databases: [...byName.values()] };
}

function DesignerEditor({ initialDraftId }: { initialDraftId: number | null }) {
  const [design, setDesignState] = useState<Design>(newDesign);
  const designRef = useRef(design);
  const past = useRef<Design[]>([]);
  const future = useRef<Design[]>([]);
  const lastEdit = useRef(0);
  const [loaded, setLoaded] = useState(initialDraftId === null);
  const [draftId, setDraftIdState] = useState<number | null>(initialDraftId);
  const [streamId, setStreamIdState] = useState<number | null>(null);
  // Deploy's confirm dialog runs a closure from an earlier render: ids are read through refs.
  const ids = useRef({ draft: initialDraftId, stream: null as number | null });
  const setDraftId = (id: number) => {
    ids.current.draft = id;
    setDraftIdState(id);
  };
  const setStreamId = (id: number | null) => {
    ids.current.stream = id;
    setStreamIdState(id);
  };
  const [savedKey, setSavedKey] = useState<string | null>(null);
  const [selected, setSelected] = useState<NodeKind | null>(null);
  const [catalog, setCatalog] = useState<Catalog | null>(null);
  const [templates, setTemplates] = useState<Template[] | null>(null);
  const [banner, setBanner] = useState<string | null>(null);
  const [hint, setHint] = useState<string | null>(null);
  const [tab, setTab] = useState<Tab>("sql");
  const [confirm, setConfirm] = useState<Confirm | null>(null);
  const [busy, setBusy] = useState<"save" | "deploy" | null>(null);
  const [deployed, setDeployed] = useState<{ streamId: number; impact: Impact | null; version: number | null } | null>(null);
  /** semanticKey of the design last deployed from this page. */
  const [deployedKey, setDeployedKey] = useState<string | null>(null);
  const [fitKey, setFitKey] = useState(0);
  const [reveal, setReveal] = useState<{ kind: NodeKind; seq: number } | null>(null);
  const me = useRef<Promise<Me> | null>(null);
  const canvasView = useCanvasView();

  // --- changes and undo ---

  const commit = useCallback((next: Design, coalesce = false) => {
    const prev = designRef.current;
    if (next === prev) return;
    const now = Date.now();
    if (!(coalesce && now - lastEdit.current < UNDO_COALESCE_MS)) {
      past.current.push(prev);
      if (past.current.length > 100) past.current.shift();
    }
    lastEdit.current = coalesce ? now : 0;
    future.current = [];
    designRef.current = next;
    setDesignState(next);
  }, []);

  const update = useCallback((fn: (d: Design) => Design, coalesce = false) => commit(fn(designRef.current), coalesce), [commit]);

  const replace = useCallback(
    (d: Design) => {
      commit(d);
      setSelected(null);
      setFitKey((k) => k + 1);
    },
    [commit],
  );

  const undo = useCallback(() => {
    const prev = past.current.pop();
    if (!prev) return;
    future.current.push(designRef.current);
    designRef.current = prev;
    lastEdit.current = 0;
    setDesignState(prev);
  }, []);

  const redo = useCallback(() => {
    const next = future.current.pop();
    if (!next) return;
    past.current.push(designRef.current);
    designRef.current = next;
    lastEdit.current = 0;
    setDesignState(next);
  }, []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
      if (!(e.ctrlKey || e.metaKey) || e.key.toLowerCase() !== "z") return;
      e.preventDefault();
      if (e.shiftKey) redo();
      else undo();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [undo, redo]);

  // --- loading ---

  useEffect(() => {
    if (initialDraftId === null) return;
    getDraft(initialDraftId)
      .then((d) => {
        const des = laidOut(d.design);
        designRef.current = des;
        setDesignState(des);
        setStreamId(d.stream_id ?? null);
        setSavedKey(JSON.stringify(des));
        setFitKey((k) => k + 1);
      })
      .catch((e) => setBanner(`Could not load draft ${initialDraftId}: ${errorText(e)}`))
      .finally(() => setLoaded(true));
  }, [initialDraftId]);

  useEffect(() => {
    listTemplates()
      .then(setTemplates)
      .catch(() => setTemplates([]));
  }, []);

  const catalogDb = ((design.nodes.source?.db as string | null | undefined) ?? design.db ?? null) || null;
  useEffect(() => {
    let live = true;
    getCatalog(catalogDb)
      .then((c) => live && setCatalog((prev) => mergeCatalog(prev, c)))
      .catch((e) => live && setHint(`Catalog unavailable: ${errorText(e)}`));
    return () => {
      live = false;
    };
  }, [catalogDb]);

  // --- live validation: debounced; answers to older designs are dropped ---

  const [val, setVal] = useState<Validation>({ answer: null, checking: false, error: null });
  const seq = useRef(0);
  const semKey = useMemo(() => `${semanticKey(design)}|${streamId ?? ""}`, [design, streamId]);
  useEffect(() => {
    if (!loaded) return undefined;
    const my = ++seq.current;
    setVal((v) => ({ ...v, checking: true }));
    const t = setTimeout(() => {
      const sid = streamId;
      validateDesign(sid !== null ? { design: designRef.current, stream_id: sid } : { design: designRef.current })
        .then((answer) => {
          if (my === seq.current) setVal({ answer, checking: false, error: null });
        })
        .catch((e) => {
          if (my === seq.current) setVal((v) => ({ ...v, checking: false, error: errorText(e) }));
        });
    }, VALIDATE_DEBOUNCE_MS);
    return () => clearTimeout(t);
    // semKey stands for the design without its layout, and the stream id
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [semKey, loaded]);

  const answer = val.answer;
  const issues = useMemo(() => answer?.issues ?? [], [answer]);
  const runtime = useStreamRuntime(streamId);
  const view = useMemo(() => ({ issuesByNode: groupIssues(issues), runtime: runtimeByNode(runtime) }), [issues, runtime]);
  const kinds = useMemo(() => new Set(presentKinds(design.nodes)), [design.nodes]);
  const triggerType = String(design.nodes.trigger?.type ?? "");
  const placeholders = val.answer?.placeholders ?? catalog?.placeholders?.[triggerType] ?? [];

  // --- actions ---

  /** Adds a node: dropped at `at`, or by a click (no `at`) in the visible viewport (placement.ts). */
  const add = (kind: NodeKind, at?: { x: number; y: number }, trigger?: string) => {
    const byClick = at === undefined && !designRef.current.nodes[kind];
    const visible = byClick ? canvasView.visible() : null;
    update((d) => {
      const next = at ? addNode(d, kind, at) : addNodeByClick(d, kind, visible);
      return trigger === undefined ? next : setNode(next, "trigger", changeTriggerType((next.nodes.trigger ?? {}) as NodeValue, trigger));
    });
    setSelected(kind);
    if (byClick) setReveal((r) => ({ kind, seq: (r?.seq ?? 0) + 1 }));
  };

  const tidy = () => {
    update((d) => withAutoLayout(d));
    setFitKey((k) => k + 1);
  };

  const myInbox = async (): Promise<string | null> => {
    me.current ??= getMe();
    try {
      const m = await me.current;
      return m.inboxes[0]?.url ?? null;
    } catch (e) {
      me.current = null;
      throw e;
    }
  };

  const askReplace = (title: string, what: string, d: Design) =>
    setConfirm({
      title,
      message: (
        <p>
          Replace the current design with {what}? {past.current.length || savedKey !== JSON.stringify(design) ? "Undo (Ctrl+Z) brings it back." : ""}
        </p>
      ),
      label: "Replace",
      action: () => replace(laidOut(d)),
    });

  const pickTemplate = (id: string) => {
    const t = templates?.find((x) => String(x.id) === id);
    if (t) askReplace("Use template", `the template “${t.title}”`, t.design);
  };

  const onCompiled = (a: CompileAnswer) => replace(withAutoLayout(a.design));

  const openVersion = (v: StreamVersion) => v.design && askReplace("Open version", `version ${v.number} of the stream`, v.design);

  const save = async (): Promise<number | null> => {
    const d = designRef.current;
    const { draft, stream } = ids.current;
    const body: DraftBody = { name: d.name || "untitled", design: d };
    if (stream !== null) body.stream_id = stream;
    try {
      const saved = draft !== null ? await updateDraft(draft, body) : await createDraft(body);
      setDraftId(saved.id);
      setSavedKey(JSON.stringify(d));
      if (draft === null) window.history.replaceState(window.history.state, "", urls.designer(saved.id));
      return saved.id;
    } catch (e) {
      setBanner(`Could not save the draft: ${errorText(e)}`);
      return null;
    }
  };

  const onSave = async () => {
    setBusy("save");
    setBanner(null);
    await save();
    setBusy(null);
  };

  const deploy = async (confirmImpact: boolean) => {
    setBusy("deploy");
    setBanner(null);
    try {
      const id = await save();
      if (id === null) return;
      const a = await deployDraft(id, confirmImpact);
      const sid = a.stream.id;
      const version = a.version?.number ?? null;
      setDeployed({ streamId: sid, impact: a.impact ?? null, version });
      setDeployedKey(semanticKey(designRef.current));
      setStreamId(sid);
    } catch (e) {
      if (e instanceof ApiError && e.status === 409 && !confirmImpact) {
        const impact = impactOf(e);
        setConfirm({
          title: "Deploying changes the running stream",
          message: (
            <div data-testid="impact-statement">
              <p>{impact?.statement ?? e.desc}</p>
              {impact?.kind && <p className="muted small">impact: {impact.kind}</p>}
            </div>
          ),
          label: "Deploy anyway",
          danger: impact?.kind === "reset" || impact?.kind === "recalculate",
          action: () => void deploy(true),
        });
      } else {
        setBanner(`Could not deploy: ${errorText(e)}`);
      }
    } finally {
      setBusy(null);
    }
  };

  const onDesignFromCanvas = useCallback((d: Design) => commit(d, true), [commit]);
  const onHint = useCallback((t: string) => setHint(t), []);
  useEffect(() => {
    if (!hint) return undefined;
    const t = setTimeout(() => setHint(null), 5000);
    return () => clearTimeout(t);
  }, [hint]);

  const dirty = savedKey !== JSON.stringify(design);
  // the design is what runs: deployed from here unchanged since, or a stream's draft with no change
  const isDeployed = streamId !== null && (deployedKey === semanticKey(design) || val.answer?.impact?.kind === "none");
  const canDeploy = !!val.answer?.valid && !val.checking;
  const deployTitle = canDeploy ? undefined : val.answer && !val.answer.valid ? `Fix the ${issues.length || ""} problem${issues.length === 1 ? "" : "s"} first (see the nodes marked and the SQL tab)` : "Checking the design…";
  const validity = !val.answer ? (
    <span className="dz-validity muted" data-testid="issues-count">
      {val.error ? "validation unavailable" : "checking…"}
    </span>
  ) : val.answer.valid ? (
    <span className="dz-validity ok" data-testid="issues-count">
      ✓ valid
    </span>
  ) : (
    <span className="dz-validity bad" data-testid="issues-count" title={issues.map((i) => i.message).join("\n")}>
      {issues.length ? `${issues.length} problem${issues.length === 1 ? "" : "s"}` : "invalid"}
    </span>
  );

  const syntaxDefaults = catalog?.defaults?.[design.syntax];
  const selectedDefaults = selected === "options" ? syntaxDefaults?.options : selected === "notify" ? syntaxDefaults?.notify : undefined;
  const setField = (key: "name" | "db" | "syntax" | "if_not_exists", value: unknown) => update((d) => ({ ...d, [key]: value }), true);

  return (
    <div className="page dz-page">
      <div className="dz-topbar">
        <label>
          Stream name{" "}
          <input name="name" className="mono" value={design.name ?? ""} placeholder="e.g. pollution_episodes" onChange={(e) => setField("name", e.target.value)} />
        </label>
        <label>
          Database{" "}
          <input
            name="db"
            className="mono dz-narrow"
            list="dz-dbs"
            value={design.db ?? ""}
            placeholder="e.g. air"
            onChange={(e) => setField("db", e.target.value.trim() ? e.target.value : null)}
          />
        </label>
        <datalist id="dz-dbs">
          {(catalog?.databases ?? []).map((d) => (
            <option key={d.name} value={d.name} />
          ))}
        </datalist>
        <label>
          Syntax{" "}
          <select name="syntax" value={design.syntax} onChange={(e) => setField("syntax", e.target.value as StreamSyntax)}>
            <option value="3.3.7">3.3.7</option>
            <option value="legacy">legacy</option>
          </select>
        </label>
        <label className="dz-check">
          <input type="checkbox" name="if_not_exists" checked={!!design.if_not_exists} onChange={(e) => setField("if_not_exists", e.target.checked)} /> IF NOT EXISTS
        </label>
        <label>
          Template{" "}
          <select name="template" value="" disabled={!templates?.length} onChange={(e) => e.target.value && pickTemplate(e.target.value)}>
            <option value="">{templates === null ? "loading…" : templates.length ? "choose…" : "none"}</option>
            {(templates ?? []).map((t) => (
              <option key={t.id} value={String(t.id)} title={t.description}>
                {t.title}
              </option>
            ))}
          </select>
        </label>
        <span className="toolbar-sep" />
        <button type="button" className="btn-sm" onClick={undo} disabled={!past.current.length} title="Undo (Ctrl+Z)">
          Undo
        </button>
        <button type="button" className="btn-sm" onClick={redo} disabled={!future.current.length} title="Redo (Ctrl+Shift+Z)">
          Redo
        </button>
        <span className="dz-grow" />
        {validity}
        {val.checking && val.answer && <span className="muted small">checking…</span>}
        <span className="muted small" data-testid="save-state">
          {draftId !== null ? `draft #${draftId}${dirty ? " · unsaved changes" : " · saved"}` : "not saved"}
        </span>
        <button type="button" onClick={() => void onSave()} disabled={busy !== null || !loaded}>
          {busy === "save" ? "Saving…" : "Save draft"}
        </button>
        <button
          type="button"
          className="btn-primary"
          data-testid="deploy"
          onClick={() => void deploy(false)}
          disabled={busy !== null || !loaded || !canDeploy}
          title={deployTitle}
        >
          {busy === "deploy" ? "Deploying…" : streamId !== null ? "Deploy changes" : "Deploy"}
        </button>
      </div>
      <ErrorBanner error={banner} onDismiss={() => setBanner(null)} />
      {hint && <div className="dz-hint muted small">{hint}</div>}
      {deployed && (
        <div className="banner dz-deployed" role="status" data-testid="deployed">
          Deployed{deployed.version !== null ? ` as version ${deployed.version}` : ""}.{" "}
          {deployed.impact && deployed.impact.statement && <span data-testid="deployed-impact">{deployed.impact.statement} </span>}
          <a href={urls.stream(deployed.streamId)}>Open the stream →</a>
        </div>
      )}
      <DesignerViewCtx.Provider value={view}>
        <div className="dz-main">
          <Palette present={kinds} onAdd={(k) => add(k)} syntax={design.syntax} onAddTrigger={(choice) => add("trigger", undefined, choice)} />
          <Canvas
            design={design}
            selected={selected}
            onDesign={onDesignFromCanvas}
            onSelect={setSelected}
            onDropKind={(k, at, trigger) => add(k, at, trigger)}
            onHint={onHint}
            onTidy={tidy}
            fitKey={fitKey}
            reveal={reveal}
          />
          <aside className="dz-side" aria-label="Properties">
            <StatementIssues issues={issues} present={kinds} onOpen={(k) => (kinds.has(k) ? setSelected(k) : add(k))} />
            {selected && design.nodes[selected] ? (
              <PropertyPanel
                key={selected}
                kind={selected}
                design={design}
                issues={view.issuesByNode[selected] ?? []}
                catalog={catalog}
                placeholders={placeholders}
                defaults={selectedDefaults}
                onChange={(v: NodeValue) => update((d) => (selected === "trigger" ? followTrigger(setNode(d, "trigger", v), d.nodes.trigger as NodeValue) : setNode(d, selected, v)), true)}
                onDelete={() => {
                  update((d) => removeNode(d, selected));
                  setSelected(null);
                }}
                myInbox={myInbox}
              />
            ) : (
              <div className="dz-props-empty muted">
                <p>Select a node to edit its properties.</p>
              </div>
            )}
          </aside>
        </div>
      </DesignerViewCtx.Provider>
      <div className="dz-tabs">
        <div role="tablist" aria-label="Designer panels" className="dz-tablist">
          {(
            [
              ["sql", "SQL"],
              ["paste", "Paste SQL"],
              ["preview", "Preview"],
              ...(streamId !== null ? [["versions", "Versions"]] : []),
            ] as [Tab, string][]
          ).map(([k, label]) => (
            <button key={k} type="button" role="tab" aria-selected={tab === k} className={tab === k ? "active" : ""} onClick={() => setTab(k)}>
              {label}
              {k === "sql" && issues.length > 0 && <span className="dz-tab-count">{issues.length}</span>}
            </button>
          ))}
        </div>
        <div role="tabpanel" className="dz-tabpanel">
          {tab === "sql" && <SqlTab answer={val.answer} syntax={design.syntax} deployed={isDeployed} checking={val.checking} error={val.error} onSelectNode={(n) => setSelected(n as NodeKind)} />}
          {tab === "paste" && <PasteTab db={design.db} onCompiled={onCompiled} />}
          {tab === "preview" && <PreviewTab design={design} />}
          {tab === "versions" && streamId !== null && <VersionsTab streamId={streamId} onOpen={openVersion} />}
        </div>
      </div>
      {confirm && (
        <ConfirmDialog
          title={confirm.title}
          message={confirm.message}
          confirmLabel={confirm.label}
          danger={confirm.danger}
          onCancel={() => setConfirm(null)}
          onConfirm={() => {
            const a = confirm.action;
            setConfirm(null);
            a();
          }}
        />
      )}
    </div>
  );
}

/**
 * The issues no form shows: those of the statement (the stream's name, database, syntax) and those
 * of a node not on the canvas (e.g. an option while the Options node is absent: its defaults
 * apply), each with its field, and a button opening (or adding) that node.
 */
export function StatementIssues({ issues, present, onOpen }: { issues: DesignIssue[]; present: Set<NodeKind>; onOpen: (k: NodeKind) => void }) {
  const shown = issues.filter((i) => !i.node || !isNodeKind(i.node) || !present.has(i.node));
  return (
    <>
      {shown.map((i, k) => (
        <div key={k} className="dz-field-error" data-testid={`error-${i.node ?? "stream"}-${i.field ?? "statement"}`}>
          <strong>{i.node && isNodeKind(i.node) ? KIND_LABEL[i.node] : "Stream"}</strong>
          {i.field ? ` · ${i.field}` : ""}: {i.message}{" "}
          {i.node && isNodeKind(i.node) && (
            <button type="button" className="btn-sm" onClick={() => onOpen(i.node as NodeKind)}>
              {present.has(i.node) ? "Open" : `Add ${KIND_LABEL[i.node]}`}
            </button>
          )}
        </div>
      ))}
    </>
  );
}
