import { useEffect, useRef, type ReactNode } from "react";

export interface ConfirmDialogProps {
  title: string;
  message: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  /** Extra content under the message (e.g. inputs the action needs). */
  children?: ReactNode;
  /** Disables the confirm button (e.g. while the inputs are invalid). */
  confirmDisabled?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}

/** Modal confirmation (rendered only while open). Escape cancels. */
export function ConfirmDialog({ title, message, confirmLabel, danger, children, confirmDisabled, onConfirm, onCancel }: ConfirmDialogProps) {
  const confirmBtn = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!children) confirmBtn.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") onCancel();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
    // focus once on open
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [onCancel]);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onCancel()}>
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
        <h3 id="confirm-title">{title}</h3>
        <div className="modal-body">{message}</div>
        {children}
        <div className="modal-actions">
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
          <button
            type="button"
            ref={confirmBtn}
            className={danger ? "btn-danger" : "btn-primary"}
            disabled={confirmDisabled}
            onClick={onConfirm}
          >
            {confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
