// The shared SqlEditor with a suggestion list for the word under the caret:
// ArrowUp/ArrowDown choose, Enter or Tab insert, Escape closes.
import { forwardRef, useImperativeHandle, useRef, useState, type KeyboardEvent } from "react";
import { SqlEditor, type SqlEditorHandle } from "../components/SqlEditor";
import { suggest, wordAt, type CompletionContext, type Suggestion } from "./completion";

export interface SqlCompleteEditorProps {
  value: string;
  onChange: (v: string) => void;
  completion: CompletionContext;
  label?: string;
  placeholder?: string;
  errorIndex?: number | null;
  minLines?: number;
}

interface Open {
  items: Suggestion[];
  start: number;
  caret: number;
  active: number;
}

export const SqlCompleteEditor = forwardRef<SqlEditorHandle, SqlCompleteEditorProps>(function SqlCompleteEditor(
  { value, onChange, completion, label, placeholder, errorIndex = null, minLines = 8 },
  ref,
) {
  const wrap = useRef<HTMLDivElement>(null);
  const inner = useRef<SqlEditorHandle>(null);
  const [open, setOpen] = useState<Open | null>(null);

  useImperativeHandle(ref, () => ({
    focus: () => inner.current?.focus(),
    insert: (t: string) => {
      setOpen(null);
      inner.current?.insert(t);
    },
  }));

  const textarea = () => wrap.current?.querySelector("textarea") ?? null;

  const change = (v: string) => {
    onChange(v);
    const caret = textarea()?.selectionStart ?? v.length;
    const { prefix, start } = wordAt(v, caret);
    const items = suggest(prefix, completion);
    setOpen(items.length ? { items, start, caret, active: 0 } : null);
  };

  const accept = (s: Suggestion) => {
    if (!open) return;
    const next = value.slice(0, open.start) + s.text + value.slice(open.caret);
    const at = open.start + s.text.length;
    setOpen(null);
    onChange(next);
    const el = textarea();
    if (el)
      requestAnimationFrame(() => {
        el.focus();
        el.setSelectionRange(at, at);
      });
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (!open) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const n = open.items.length;
      setOpen({ ...open, active: (open.active + (e.key === "ArrowDown" ? 1 : n - 1)) % n });
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      accept(open.items[open.active]);
    } else if (e.key === "Escape") {
      e.preventDefault();
      setOpen(null);
    }
  };

  return (
    <div className="dz-complete" ref={wrap} onBlur={(e) => !e.currentTarget.contains(e.relatedTarget as Node | null) && setOpen(null)}>
      <SqlEditor
        ref={inner}
        value={value}
        onChange={change}
        onKeyDown={onKeyDown}
        label={label}
        placeholder={placeholder}
        errorIndex={errorIndex}
        minLines={minLines}
      />
      {open && (
        <ul className="dz-suggest" role="listbox" aria-label="Suggestions" data-testid="suggestions">
          {open.items.map((s, i) => (
            <li
              key={`${s.kind}:${s.text}`}
              role="option"
              aria-selected={i === open.active}
              className={i === open.active ? "active" : ""}
              onMouseDown={(e) => {
                e.preventDefault();
                accept(s);
              }}
            >
              <span className="mono">{s.text}</span> <span className="muted small">{s.kind}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
});
