// "Why no output?" of one stream (GET streams/{id}/diagnosis/): the causes in plain words, each
// naming the stream option that explains it, then the figures they come from — watermark, latest
// event time, open windows and what closes them, dropped rows with a sample, rows the WHERE /
// PRE_FILTER clause removed (computed on request) with a sample, receivers that fail,
// and per group (PARTITION BY value) its latest event time and what closes its open window.
// Opened by its button, or at once when the page URL ends in #why (the inbox links there).
import { useCallback, useEffect, useState } from "react";
import { errorText, getDiagnosis, listStreams } from "../api/client";
import type { Diagnosis, FilterCheck } from "../api/types";
import { formatCount } from "../format";
import { urls } from "../page";
import { Empty, ErrorBanner, Loading } from "./common";

const DROP_LABELS: [keyof Diagnosis["dropped"], string][] = [
  ["expired", "expired (older than the watermark)"],
  ["late", "late (eKuiper watermark)"],
  ["beyond_delete_mark", "beyond DELETE_MARK"],
  ["filtered", "filtered in the engine"],
  ["disordered", "out of order"],
];

export function WhyNoOutput({ streamId, initiallyOpen = false }: { streamId: number; initiallyOpen?: boolean }) {
  const [open, setOpen] = useState(initiallyOpen);
  const [diagnosis, setDiagnosis] = useState<Diagnosis | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);

  const load = useCallback(() => {
    setLoading(true);
    setError(null);
    getDiagnosis(streamId)
      .then(setDiagnosis)
      .catch((e) => setError(`Could not diagnose the stream: ${errorText(e)}`))
      .finally(() => setLoading(false));
  }, [streamId]);

  useEffect(() => {
    if (open) load();
  }, [open, load]);

  return (
    <div className="why-no-output" data-testid="why-no-output">
      <button type="button" className="btn-sm" aria-expanded={open} onClick={() => setOpen((o) => !o)} data-testid="why-button">
        {open ? "Hide “why no output?”" : "Why no output?"}
      </button>
      {open && (
        <div className="why-panel" data-testid="why-panel">
          <ErrorBanner error={error} onDismiss={() => setError(null)} />
          {loading && !diagnosis && <Loading what="Diagnosing" />}
          {diagnosis && <DiagnosisView d={diagnosis} onRefresh={load} />}
        </div>
      )}
    </div>
  );
}

function DiagnosisView({ d, onRefresh }: { d: Diagnosis; onRefresh: () => void }) {
  const dropped = DROP_LABELS.filter(([k]) => d.dropped[k] > 0);
  return (
    <>
      <div className="why-head">
        <strong>Causes</strong>{" "}
        <button type="button" className="btn-sm" onClick={onRefresh}>
          Refresh
        </button>
      </div>
      {d.causes.length ? (
        <ul className="why-causes" data-testid="why-causes">
          {d.causes.map((c, i) => (
            <li key={i}>
              {c.option && <span className="badge mono">{c.option}</span>} {c.option ? c.text.slice(c.option.length + 2) : c.text}
            </li>
          ))}
        </ul>
      ) : (
        <Empty>Nothing recorded explains a silence: the stream reads rows and writes its windows.</Empty>
      )}
      <dl className="why-facts" data-testid="why-facts">
        <dt>Trigger</dt>
        <dd className="mono">{d.trigger}</dd>
        <dt>Watermark</dt>
        <dd>{d.watermark ?? "—"}</dd>
        <dt>Latest event time</dt>
        <dd>{d.latest_event_time ?? "—"}</dd>
        <dt>Rows read / written</dt>
        <dd>
          {formatCount(d.input_rows)} / {formatCount(d.output_rows)} <span className="muted small">({d.batches} micro-batches)</span>
        </dd>
        <dt>Open windows</dt>
        <dd>
          {d.open_windows.count}
          {d.open_windows.closes_when && <span className="muted"> — closes on {d.open_windows.closes_when}</span>}
        </dd>
        <dt>Dropped rows</dt>
        <dd data-testid="why-dropped">
          {dropped.length ? dropped.map(([k, label]) => `${formatCount(d.dropped[k])} ${label}`).join(", ") : "none"}
          {d.dropped_sample.length > 0 && <div className="muted small">sample: {d.dropped_sample.join(", ")}</div>}
        </dd>
        {d.filter_check && <FilterFacts f={d.filter_check} />}
        <dt>Notifications</dt>
        <dd data-testid="why-notifications">
          {formatCount(d.notifications.sent)} sent, {formatCount(d.notifications.failed)} failed
          {d.notifications.receivers.map((r) => (
            <div key={r.url} className="small">
              <span className="mono">{r.url}</span>: {r.failed} of {r.attempts} attempts failed ({r.last_error})
            </div>
          ))}
        </dd>
      </dl>
      {d.groups.length > 0 && (
        <table className="table why-groups" data-testid="why-groups">
          <thead>
            <tr>
              <th>Group</th>
              <th>Rows in source</th>
              <th>Latest event time</th>
              <th>Watermark</th>
              <th>What closes its open window</th>
            </tr>
          </thead>
          <tbody>
            {d.groups.map((g) => (
              <tr key={g.group}>
                <td className="mono">{g.group}</td>
                <td>{formatCount(g.rows)}</td>
                <td className="nowrap">{g.latest_event_time}</td>
                <td className="nowrap">{g.watermark}</td>
                <td>{g.closes_when}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** What the stream's WHERE / PRE_FILTER removed from the rows examined, with failing rows. */
function FilterFacts({ f }: { f: FilterCheck }) {
  return (
    <>
      <dt>Filtered by {f.clause}</dt>
      <dd data-testid="why-filter">
        {formatCount(f.failed)} of {formatCount(f.examined)} rows examined did not pass <span className="mono">{f.condition}</span>
        {!f.complete && <span className="muted"> (the newest rows read)</span>}
        {f.sample.map((s) => (
          <div key={`${s.tbname ?? ""}@${s.ts_ms}`} className="muted small">
            {s.tbname && <span className="mono">{s.tbname}</span>} {s.time}
            {Object.keys(s.values).length > 0 &&
              ` (${Object.entries(s.values)
                .map(([k, v]) => `${k}=${v === null ? "NULL" : String(v)}`)
                .join(", ")})`}
          </div>
        ))}
      </dd>
    </>
  );
}

/** Stream ids by name, for links from pages that know streams by name only (the inbox). */
export function useStreamIds(): Record<string, number> {
  const [ids, setIds] = useState<Record<string, number>>({});
  useEffect(() => {
    listStreams({ limit: 500 })
      .then((r) => setIds(Object.fromEntries(r.results.map((s) => [s.name, s.id]))))
      .catch(() => {
        /* no links then */
      });
  }, []);
  return ids;
}

/** One click to a stream's "Why no output?" panel (nothing for an unknown stream). */
export function WhyNoOutputLink({ id, name, compact = false }: { id: number | undefined; name: string; compact?: boolean }) {
  if (id === undefined) return null;
  return (
    <a className="small why-link" href={urls.streamWhy(id)} onClick={(e) => e.stopPropagation()} title={`Why no output from ${name}?`} data-testid={`why-link-${name}`}>
      {compact ? "why?" : `Why no output from ${name}?`}
    </a>
  );
}
