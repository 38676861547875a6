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

/**
 * The x scale's range function: uPlot calls it with the data's [min, max] (or a zoom), but for a
 * single point it first widens max to min + one day, so the span is judged on the data itself
 * (`xs`, ascending): data narrower than `minSpanS` get the centred window of `timeAxisRange`;
 * otherwise uPlot's [min, max] is kept (widened to `minSpanS` if narrower).
 */
export function xScaleRange(
  xs: ArrayLike<number | null | undefined> | undefined,
  min: number | null,
  max: number | null,
  minSpanS: number = MIN_X_SPAN_S,
): [number | null, number | null] {
  const first = xs && xs.length > 0 ? xs[0] : null;
  const last = xs && xs.length > 0 ? xs[xs.length - 1] : null;
  if (first != null && last != null && last - first < minSpanS) return timeAxisRange(first, last, minSpanS);
  return timeAxisRange(min, max, minSpanS);
}
