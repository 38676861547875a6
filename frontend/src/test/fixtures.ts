import type { Dashboard, Delivery, ImportJob, Notification, Paginated, Progress, Run, Stream, StreamDetail } from "../api/types";

/** A DRF limit/offset page of `results` (count defaults to the number of results). */
export function page<T>(results: T[], count = results.length, next: string | null = null, previous: string | null = null): Paginated<T> {
  return { count, next, previous, results } as Paginated<T>;
}

export function makeProgress(over: Partial<Progress> = {}): Progress {
  return {
    batch_id: 1,
    created_at: "2024-06-01T10:00:00Z",
    phase: "live",
    input_rows: 100,
    output_rows: 2,
    rows_per_s: 50,
    duration_ms: 120,
    open_windows: 3,
    state_bytes: 2048,
    watermark_ms: Date.parse("2024-06-01T09:59:50Z"),
    max_event_ms: Date.parse("2024-06-01T09:59:55Z"),
    notifications_sent: 0,
    notifications_failed: 0,
    expired_rows: 0,
    recalculated: 0,
    removed_windows: 0,
    ...over,
  };
}

export function makeStream(over: Partial<Stream> = {}): Stream {
  return {
    id: 1,
    name: "daily_avg",
    db: "weather",
    syntax: "legacy",
    status: "running",
    desired_state: "running",
    sql: "CREATE STREAM daily_avg INTO out AS SELECT _wstart, avg(t) FROM readings INTERVAL(1d)",
    source: "weather.readings",
    target: "weather.daily_avg_out",
    trigger: "WINDOW_CLOSE",
    window: "INTERVAL(1d)",
    created_at: "2024-06-01T08:00:00Z",
    last_error: "",
    spark_ui_url: null,
    last_progress: makeProgress(),
    history_cancelled: null,
    worker: "",
    counters: { rows_in: 1000, windows_out: 10, notifications_sent: 0, notifications_failed: 0 },
    throughput: [10, 20, 30],
    lag_ms: 5000,
    progress: null,
    ...over,
  };
}

export function makeDetail(over: Partial<StreamDetail> = {}): StreamDetail {
  return { ...makeStream(), spec: { kind: "interval" }, ...over };
}

export function makeNotification(over: Partial<Notification> = {}): Notification {
  return {
    id: 1,
    inbox: "alice",
    stream_name: "alerts_6h",
    event_type: "WINDOW_CLOSE",
    table_name: "t_1",
    window_id: "w1",
    window_start: Date.parse("2024-06-01T00:00:00Z"),
    window_end: Date.parse("2024-06-01T06:00:00Z"),
    event_time: Date.parse("2024-06-01T06:00:01Z"),
    message_id: "m1",
    payload: { tableName: "t_1", eventType: "WINDOW_CLOSE", result: { "max(temperature)": 41.5 } },
    acknowledged: false,
    created_at: "2024-06-01T06:00:02Z",
    group_tags: {},
    ...over,
  };
}

export function makeDelivery(over: Partial<Delivery> = {}): Delivery {
  return {
    id: 1,
    created_at: "2024-06-01T06:00:02Z",
    url: "ws://localhost:8080/notify",
    message_id: "abc123",
    events: 4,
    ok: true,
    latency_ms: 12,
    error: "",
    attempt: 1,
    ...over,
  };
}

export function makeRun(over: Partial<Run> = {}): Run {
  return {
    id: 1,
    started_at: "2024-06-01T08:00:00Z",
    ended_at: null,
    state: "running",
    error: "",
    restarts: 0,
    worker: "worker-1",
    ...over,
  };
}

export function makeDashboard(over: Partial<Dashboard> = {}): Dashboard {
  return {
    streams_total: 5,
    streams_by_status: { running: 2, catching_up: 1, paused: 1, failed: 1 },
    throughput_rows_per_s: 2500,
    failures: {
      streams_failed: 1,
      recent_errors: [{ stream_id: 7, name: "broken", error: "Spark job aborted: OOM\n  at stage 3", at: "2024-06-01T10:00:00Z" }],
    },
    notifications: {
      sent: 90,
      failed: 10,
      delivery_rate: 0.9,
      last_24h: { attempts: 20, ok: 19, failed: 1, delivery_rate: 0.95 },
    },
    inbox_unread: 4,
    ...over,
  };
}

export function makeImport(over: Partial<ImportJob> = {}): ImportJob {
  return {
    id: 11,
    db: "power",
    table: "d1001",
    filename: "rows.csv",
    state: "running",
    rows_total: 100,
    rows_done: 0,
    fraction: 0,
    error: "",
    created_at: "2024-06-01T10:00:00Z",
    updated_at: "2024-06-01T10:00:00Z",
    ...over,
  };
}
