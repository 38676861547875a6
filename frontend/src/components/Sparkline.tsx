// Inline-SVG sparkline (cheap enough for one per table row).
import { formatRate } from "../format";

export function sparklinePoints(values: number[], width: number, height: number): string {
  if (values.length === 0) return "";
  const max = Math.max(...values.map((v) => (Number.isFinite(v) ? v : 0)), 0);
  const n = values.length;
  const step = n > 1 ? width / (n - 1) : 0;
  return values
    .map((v, i) => {
      const y = max > 0 ? height - 1 - ((Number.isFinite(v) ? v : 0) / max) * (height - 2) : height - 1;
      return `${(i * step).toFixed(1)},${y.toFixed(1)}`;
    })
    .join(" ");
}

export function Sparkline({ values, width = 120, height = 24 }: { values: number[]; width?: number; height?: number }) {
  const pts = sparklinePoints(values, width, height);
  const last = values.length ? values[values.length - 1] : null;
  return (
    <svg
      className="sparkline"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={`throughput sparkline, ${values.length} samples, last ${formatRate(last)}`}
      data-samples={values.length}
    >
      {pts ? (
        <>
          <polygon className="sparkline-area" points={`0,${height} ${pts} ${values.length > 1 ? width : 0},${height}`} />
          <polyline className="sparkline-line" points={pts} />
        </>
      ) : (
        <line className="sparkline-none" x1="0" y1={height - 1} x2={width} y2={height - 1} />
      )}
    </svg>
  );
}
