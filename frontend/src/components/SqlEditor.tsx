// Textarea SQL editor with line numbers and an overlay that underlines an error position.
import { forwardRef, useImperativeHandle, useMemo, useRef, type KeyboardEvent } from "react";

/** Server offsets count code points (Python); JS strings index UTF-16 units. */
export function codePointToIndex(text: string, cp: number): number {
  let i = 0;
  let n = 0;
  while (i < text.length && n < cp) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
    n++;
  }
  return i;
}

/** The [start, end) range to mark for an error at UTF-16 index `at`: the word there, or one char. */
export function errorRange(text: string, at: number): [number, number] {
  const i = Math.max(0, Math.min(at, text.length));
  if (i >= text.length || text[i] === "\n") return [i, i];
  const word = /[A-Za-z0-9_$]/;
  if (!word.test(text[i])) return [i, i + 1];
  let j = i;
  while (j < text.length && word.test(text[j])) j++;
  return [i, j];
}

export interface SqlEditorProps {
  value: string;
  onChange: (v: string) => void;
  /** UTF-16 index of an error in `value`, or null. */
  errorIndex?: number | null;
  onKeyDown?: (e: KeyboardEvent<HTMLTextAreaElement>) => void;
  placeholder?: string;
  minLines?: number;
  label?: string;
}

export interface SqlEditorHandle {
  focus(): void;
  /** Replaces the selection (or inserts at the caret) with `text`. */
  insert(text: string): void;
}

export const SqlEditor = forwardRef<SqlEditorHandle, SqlEditorProps>(function SqlEditor(
  { value, onChange, errorIndex = null, onKeyDown, placeholder, minLines = 12, label = "SQL" },
  ref,
) {
  const ta = useRef<HTMLTextAreaElement>(null);
  const overlay = useRef<HTMLPreElement>(null);
  const gutter = useRef<HTMLDivElement>(null);

  useImperativeHandle(
    ref,
    () => ({
      focus: () => ta.current?.focus(),
      insert: (text: string) => {
        const el = ta.current;
        if (!el) {
          onChange(value + text);
          return;
        }
        const start = el.selectionStart ?? value.length;
        const end = el.selectionEnd ?? value.length;
        const next = value.slice(0, start) + text + value.slice(end);
        onChange(next);
        requestAnimationFrame(() => {
          el.focus();
          el.setSelectionRange(start + text.length, start + text.length);
        });
      },
    }),
    [value, onChange],
  );

  const lines = Math.max(minLines, value.split("\n").length);
  const marked = useMemo(() => {
    if (errorIndex === null || errorIndex === undefined) return null;
    const [s, e] = errorRange(value, errorIndex);
    return { before: value.slice(0, s), mark: value.slice(s, e) || " ", after: value.slice(e) };
  }, [value, errorIndex]);

  const sync = () => {
    const el = ta.current;
    if (!el) return;
    if (overlay.current) {
      overlay.current.scrollTop = el.scrollTop;
      overlay.current.scrollLeft = el.scrollLeft;
    }
    if (gutter.current) gutter.current.scrollTop = el.scrollTop;
  };

  return (
    <div className="sql-editor" style={{ ["--lines" as string]: minLines }}>
      <div className="sql-gutter" ref={gutter} aria-hidden="true">
        {Array.from({ length: lines }, (_, i) => (
          <div key={i}>{i + 1}</div>
        ))}
      </div>
      <div className="sql-area">
        <pre className="sql-overlay" ref={overlay} aria-hidden="true">
          {marked ? (
            <>
              {marked.before}
              <mark className="sql-error-mark" data-testid="error-mark">
                {marked.mark}
              </mark>
              {marked.after}
            </>
          ) : (
            value
          )}
          {"\n"}
        </pre>
        <textarea
          ref={ta}
          className="sql-input"
          aria-label={label}
          spellCheck={false}
          autoCapitalize="off"
          autoComplete="off"
          autoCorrect="off"
          wrap="off"
          value={value}
          placeholder={placeholder}
          onChange={(e) => onChange(e.target.value)}
          onScroll={sync}
          onKeyDown={onKeyDown}
        />
      </div>
    </div>
  );
});

/** "line L, column C" and the offending line with a caret under the column. */
export function ErrorCaret({ text, line, column }: { text: string; line: number; column: number }) {
  const src = text.split("\n")[line - 1] ?? "";
  const chars = Array.from(src);
  const col = Math.max(1, column);
  const from = Math.max(0, col - 60);
  const shown = chars.slice(from, from + 120).join("");
  const caretPad = " ".repeat(Math.max(0, col - 1 - from));
  return (
    <pre className="error-caret" data-testid="error-caret">
      {`line ${line}, column ${column}\n`}
      {`${from > 0 ? "…" : ""}${shown}\n`}
      {`${from > 0 ? " " : ""}${caretPad}^`}
    </pre>
  );
}
