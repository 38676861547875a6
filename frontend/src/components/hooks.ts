import { useCallback, useEffect, useRef } from "react";

/**
 * Returns a trigger that runs `fn` once, `ms` after the first call of a burst (later calls in the
 * burst are absorbed). Pending runs are cancelled on unmount.
 */
export function useCoalesced(fn: () => void, ms: number): () => void {
  const f = useRef(fn);
  f.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  return useCallback(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      f.current();
    }, ms);
  }, [ms]);
}

/** Calls `fn(value)` `ms` after `value` stops changing. */
export function useDebouncedEffect<T>(value: T, ms: number, fn: (v: T) => void): void {
  const f = useRef(fn);
  f.current = fn;
  useEffect(() => {
    const t = setTimeout(() => f.current(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
}
