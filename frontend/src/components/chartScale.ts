// The time axis of the live charts: a sensible x range whatever the data's spread.

/** Narrowest x span (seconds) a chart shows: a single point gets this window around it. */
export const MIN_X_SPAN_S = 60;

/**
 * x-axis range for a time scale in epoch seconds. uPlot pads a zero-width range by a fraction of
 * the value's magnitude, so one batch at ~1.7e9 s drew an axis over years (issue 16 item 5); here
 * a range narrower than `minSpanS` (one point, or points a few seconds apart) is widened to
 * `minSpanS` centred on the data, and a wider one is kept exactly as the data's [min, max].
 * Null bounds (no data) pass through.
 */
export function timeAxisRange(min: number | null, max: number | null, minSpanS: number = MIN_X_SPAN_S): [number | null, number | null] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [min, max];
  if (max - min >= minSpanS) return [min, max];
  const mid = (min + max) / 2;
  return [mid - minSpanS / 2, mid + minSpanS / 2];
}
