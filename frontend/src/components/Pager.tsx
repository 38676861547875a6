// Previous / next controls of a limit/offset list ("1–25 of 60").
export function Pager({
  offset,
  size,
  count,
  shown,
  onOffset,
  testId = "pager",
  prevLabel = "‹ Previous",
  nextLabel = "Next ›",
}: {
  offset: number;
  size: number;
  count: number;
  /** Items on the current page. */
  shown: number;
  onOffset: (offset: number) => void;
  testId?: string;
  prevLabel?: string;
  nextLabel?: string;
}) {
  return (
    <div className="pager" data-testid={testId}>
      <button type="button" className="btn-sm" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - size))}>
        {prevLabel}
      </button>
      <span className="pager-range" data-testid={`${testId}-range`}>
        {count === 0 || shown === 0 ? 0 : offset + 1}–{offset + shown} of {count}
      </span>
      <button type="button" className="btn-sm" disabled={offset + size >= count} onClick={() => onOffset(offset + size)}>
        {nextLabel}
      </button>
    </div>
  );
}
