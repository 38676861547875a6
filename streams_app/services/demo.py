"""The main job on real data (issue "Foundation", capability 9).

Loads the Beijing Multi-Site Air-Quality dataset into database ``air``: supertable
``air.quality`` with one subtable per station (lower-case station name), ``ts`` = the row's
year/month/day/hour read as Asia/Shanghai local time, ``NA`` as NULL. Rows before
2017-02-20 00:00 local time are written as history; then the demo streams are created (the two
INTERVAL streams of the foundation issue, and one each of STATE_WINDOW, SESSION and COUNT_WINDOW),
and the remaining rows are replayed in event-time order through the normal write path (SQL INSERT
through the executor) at ``speed`` data-seconds per wall-second.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from django.conf import settings

from spark_workers.errors import TdError
from streams_app.models import Inbox, Stream
from streams_app.services.lake import lake_get
from streams_app.services.sql import executor_for
from streams_app.services.users import inbox_url

DB = "air"
LOCAL_TZ = "Asia/Shanghai"
HISTORY_CUTOFF_LOCAL = "2017-02-20 00:00:00"
COLUMNS = [
    ("pm25", "PM2.5"),
    ("pm10", "PM10"),
    ("so2", "SO2"),
    ("no2", "NO2"),
    ("co", "CO"),
    ("o3", "O3"),
    ("temp", "TEMP"),
    ("pres", "PRES"),
    ("dewp", "DEWP"),
    ("rain", "RAIN"),
    ("wd", "wd"),
    ("wspm", "WSPM"),
]
STREAM_NAMES = (
    "pm25_daily",
    "pm25_6h_alerts",
    "wd_states",
    "rain_sessions",
    "temp_24h",
    "pollution_episodes",
    "ingest_per_minute",
)
OUTPUT_TABLES = (
    "pm25_daily",
    "pm25_6h",
    "wd_states",
    "rain_sessions",
    "temp_24h",
    "pollution_episodes",
    "ingest_per_minute",
)
STREAM_DBS = {"pollution_episodes": DB, "ingest_per_minute": DB}  # TDengine 3.3.7 streams: air.<name>
RAIN_GAP_HOURS = 3


def dataset_dir() -> Path:
    """Where the CSVs are: ``TDWEB_DATASET``, else the repository's own copy in
    ``data/beijing-air-quality``, else ``../shared/datasets/beijing-air-quality`` beside the
    checkout. Raises ``FileNotFoundError`` when none holds the 12 files."""
    import os

    base = Path(settings.BASE_DIR)
    candidates: list[Path] = [Path(os.environ["TDWEB_DATASET"])] if os.environ.get("TDWEB_DATASET") else []
    candidates += [base / "data/beijing-air-quality", base.parent / "shared/datasets/beijing-air-quality"]
    for c in candidates:
        if len(list(c.glob("PRSA_Data_*.csv.gz"))) == 12:
            return c
    raise FileNotFoundError("Beijing air-quality CSVs not found; set TDWEB_DATASET to their folder")


def read_dataset(path: Path | None = None) -> pd.DataFrame:
    """All rows: ``station`` (subtable name), ``station_name`` (as in the CSV), ``ts`` (epoch ms, UTC)
    and the measurement columns (NaN for NA), sorted by (ts, station)."""
    path = path or dataset_dir()
    frames = []
    for f in sorted(path.glob("PRSA_Data_*.csv.gz")):
        # "NA" marks gaps; one SO2 cell in the Aotizhongxin file is a lone blank, also a gap
        df = pd.read_csv(f, na_values=["NA", "", " "], keep_default_na=False)
        local = pd.to_datetime(df[["year", "month", "day", "hour"]])
        utc = local.dt.tz_localize(LOCAL_TZ).dt.tz_convert("UTC")
        out = pd.DataFrame(
            {
                "station": df["station"].str.lower(),
                "station_name": df["station"],
                "ts": (utc.astype("int64") // 1_000_000).astype("int64"),
            }
        )
        for col, src in COLUMNS:
            out[col] = df[src] if col == "wd" else df[src].astype("float64")
        frames.append(out)
    data = pd.concat(frames, ignore_index=True)
    return data.sort_values(["ts", "station"], kind="stable").reset_index(drop=True)


def cutoff_ms() -> int:
    return int(pd.Timestamp(HISTORY_CUTOFF_LOCAL, tz=LOCAL_TZ).tz_convert("UTC").value // 1_000_000)


def stream_sql(*, notify_url: str) -> list[str]:
    """The demo streams.

    - ``pm25_daily`` / ``pm25_6h_alerts``: daily and 6-hour PM2.5 windows (INTERVAL);
    - ``wd_states``: one window per run of the same wind direction per station (STATE_WINDOW; rows
      without a direction belong to no window);
    - ``rain_sessions``: rain episodes per station (SESSION over the rows with rain, a gap of more
      than 3 hours ends an episode), notifying the inbox when an episode starts and ends;
    - ``temp_24h``: temperature over every 24 readings of a station (COUNT_WINDOW);
    - ``pollution_episodes`` (TDengine 3.3.7 syntax): heavy-pollution episodes per station, from a
      reading above 150 µg/m³ PM2.5 until one at or below 75 (EVENT_WINDOW), history included,
      notifying the inbox when an episode starts and ends;
    - ``ingest_per_minute`` (3.3.7): every minute of system time, the rows written to
      ``air.quality`` during that minute (PERIOD(1m) over ``%%trows``).
    """
    return [
        "CREATE STREAM IF NOT EXISTS pm25_daily FILL_HISTORY 1 INTO air.pm25_daily "
        "TAGS (station VARCHAR(32)) AS\n"
        "  SELECT _wstart AS wstart, avg(pm25) AS avg_pm25, max(pm25) AS max_pm25, count(*) AS n\n"
        "  FROM air.quality PARTITION BY station INTERVAL(1d);",
        "CREATE STREAM IF NOT EXISTS pm25_6h_alerts INTO air.pm25_6h TAGS (station VARCHAR(32)) AS\n"
        "  SELECT _wstart AS wstart, avg(pm25) AS avg_pm25, max(pm25) AS max_pm25\n"
        "  FROM air.quality PARTITION BY station INTERVAL(6h)\n"
        f"  NOTIFY ('{notify_url}') ON ('WINDOW_CLOSE') NOTIFY_HISTORY 0 ON_FAILURE DROP;",
        "CREATE STREAM IF NOT EXISTS wd_states FILL_HISTORY 1 INTO air.wd_states "
        "TAGS (station VARCHAR(32)) AS\n"
        "  SELECT _wstart AS wstart, _wend AS wend, first(wd) AS wd, count(*) AS n, avg(wspm) AS avg_wspm\n"
        "  FROM air.quality PARTITION BY tbname, station STATE_WINDOW(wd);",
        "CREATE STREAM IF NOT EXISTS rain_sessions FILL_HISTORY 1 INTO air.rain_sessions "
        "TAGS (station VARCHAR(32)) AS\n"
        "  SELECT _wstart AS wstart, _wend AS wend, sum(rain) AS rain_mm, max(rain) AS max_rain, "
        "count(*) AS hours\n"
        f"  FROM air.quality WHERE rain > 0 PARTITION BY tbname, station SESSION(ts, {RAIN_GAP_HOURS}h)\n"
        f"  NOTIFY ('{notify_url}') ON ('WINDOW_OPEN', 'WINDOW_CLOSE') NOTIFY_HISTORY 0 ON_FAILURE DROP;",
        "CREATE STREAM IF NOT EXISTS temp_24h FILL_HISTORY 1 INTO air.temp_24h "
        "TAGS (station VARCHAR(32)) AS\n"
        "  SELECT _wstart AS wstart, _wend AS wend, avg(temp) AS avg_temp, min(temp) AS min_temp, "
        "max(temp) AS max_temp, count(*) AS n\n"
        "  FROM air.quality PARTITION BY tbname, station COUNT_WINDOW(24);",
        "CREATE STREAM IF NOT EXISTS air.pollution_episodes EVENT_WINDOW(START WITH pm25 > 150 END WITH "
        "pm25 <= 75) FROM air.quality PARTITION BY tbname STREAM_OPTIONS(FILL_HISTORY) "
        f"NOTIFY('{notify_url}') ON (WINDOW_OPEN|WINDOW_CLOSE) INTO air.pollution_episodes AS "
        "SELECT _twstart AS wstart, _twend AS wend, _twrownum AS nrows, max(pm25) AS peak_pm25 FROM %%trows;",
        "CREATE STREAM IF NOT EXISTS air.ingest_per_minute PERIOD(1m) FROM air.quality "
        "INTO air.ingest_per_minute AS\n"
        "  SELECT _tlocaltime AS ts, count(*) AS rows_ingested FROM %%trows;",
    ]


def demo_reset(*, user: object) -> None:
    """Drop the demo streams and database (the demo always starts from the dataset)."""
    ex = executor_for(user=user)
    for name in STREAM_NAMES:
        db = STREAM_DBS.get(name)
        ex.execute_one(f"DROP STREAM IF EXISTS {db + '.' if db else ''}{name}")
    ex.execute_one(f"DROP DATABASE IF EXISTS {DB} FORCE")


def schema_sql(data: pd.DataFrame) -> list[str]:
    """The statements creating database ``air``, supertable ``air.quality`` and one subtable per
    station of ``data`` (all IF NOT EXISTS)."""
    cols = ", ".join(f"{c} {'VARCHAR(8)' if c == 'wd' else 'DOUBLE'}" for c, _ in COLUMNS)
    stations = data.drop_duplicates("station")[["station", "station_name"]]
    return [
        f"CREATE DATABASE IF NOT EXISTS {DB} PRECISION 'ms'",
        f"CREATE STABLE IF NOT EXISTS {DB}.quality (ts TIMESTAMP, {cols}) TAGS (station VARCHAR(32))",
        "CREATE TABLE "
        + " ".join(
            f"IF NOT EXISTS {DB}.{s} USING {DB}.quality TAGS ('{n}')"
            for s, n in stations.itertuples(index=False)
        ),
    ]


def quality_rows(frame: pd.DataFrame) -> pa.Table:
    """Rows of ``read_dataset()`` as ``air.quality`` rows for ``Lake.write``: ``tbname`` (the
    station), ``ts`` (epoch ms) and the measurement columns (NA as NULL)."""
    arrays = {
        "tbname": pa.array(frame["station"].to_numpy(), pa.string()),
        "ts": pa.array(frame["ts"].to_numpy(), pa.int64()),
    }
    for c, _ in COLUMNS:
        arrays[c] = pa.array(
            frame[c].to_numpy(), pa.string() if c == "wd" else pa.float64(), from_pandas=True
        )
    return pa.table(arrays)


def demo_load_history(*, user: object, data: pd.DataFrame, log: Callable[[str], None] = print) -> int:
    """Create ``air`` and ``air.quality`` with its subtables, and bulk-write the history rows
    (before the cutoff) through the lake's write path. Returns the rows written."""
    ex = executor_for(user=user)
    for stmt in schema_sql(data):
        ex.execute_one(stmt)
    hist = data[data["ts"] < cutoff_ms()]
    lake = lake_get()
    db = lake.catalog.require_database(DB)
    table = lake.catalog.require_table(DB, "quality")
    step = 100_000
    for i in range(0, len(hist), step):
        lake.write(db, table, quality_rows(hist.iloc[i : i + step]))
        log(f"  history: {min(i + step, len(hist)):,} / {len(hist):,} rows")
    return len(hist)


def demo_create_streams(*, user: object, host: str, port: int) -> list[str]:
    """Create the demo streams, notifying the admin's inbox; returns their SQL."""
    inbox = Inbox.objects.get(name="inbox")
    sqls = stream_sql(notify_url=inbox_url(inbox=inbox, host=host, port=port))
    ex = executor_for(user=user)
    for sql in sqls:
        ex.execute_one(sql)
    return sqls


def _value(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(float(v)) if isinstance(v, float | np.floating) else str(v)


def replay_statements(data: pd.DataFrame) -> Iterator[tuple[int, str]]:
    """``(ts, INSERT ...)`` per event time after the cutoff: one multi-table INSERT per hour."""
    live = data[data["ts"] >= cutoff_ms()]
    for ts, group in live.groupby("ts", sort=True):
        parts = []
        for row in group.itertuples(index=False):
            vals = ", ".join([str(int(ts))] + [_value(getattr(row, c)) for c, _ in COLUMNS])
            parts.append(f"{DB}.{row.station} VALUES ({vals})")
        yield int(ts), "INSERT INTO " + " ".join(parts)


def demo_replay(*, user: object, data: pd.DataFrame, speed: float, log: Callable[[str], None] = print) -> int:
    """Write the rows after the cutoff in event-time order, paced at ``speed`` (data seconds per
    wall second; 0 = as fast as possible). Returns the rows written."""
    ex = executor_for(user=user)
    start_wall = time.monotonic()
    first_ts = None
    rows = 0
    for i, (ts, sql) in enumerate(replay_statements(data)):
        if first_ts is None:
            first_ts = ts
        if speed > 0:
            due = start_wall + (ts - first_ts) / 1000.0 / speed
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        rows += ex.execute_one(sql).affected_rows or 0
        if i % 24 == 0:
            log(
                f"  replay: {pd.Timestamp(ts, unit='ms', tz='UTC').tz_convert(LOCAL_TZ):%Y-%m-%d %H:%M} "
                f"local, {rows:,} rows"
            )
    return rows


@dataclass
class StreamSummary:
    name: str
    status: str
    rows_in: int
    windows_out: int
    notifications_sent: int
    notifications_failed: int


def demo_wait_caught_up(
    *, timeout_s: float = 900.0, log: Callable[[str], None] = print
) -> list[StreamSummary]:
    """Wait until every demo stream has processed the source's latest version; raises
    ``TimeoutError`` (naming the laggards) otherwise."""
    lake = lake_get()
    target = lake.version(DB, "quality")
    deadline = time.monotonic() + timeout_s
    last_note = 0.0
    while True:
        streams = list(Stream.objects.filter(name__in=STREAM_NAMES).exclude(status=Stream.Status.DROPPED))
        behind = [s for s in streams if s.processed_version is None or s.processed_version < target]
        failed = [s for s in streams if s.status == Stream.Status.FAILED]
        if len(streams) == len(STREAM_NAMES) and not behind:
            return [
                StreamSummary(
                    s.name, s.status, s.rows_in, s.windows_out, s.notifications_sent, s.notifications_failed
                )
                for s in sorted(streams, key=lambda s: s.name)
            ]
        if time.monotonic() > deadline:
            names = ", ".join(
                f"{s.name} ({s.status}, at version {s.processed_version} of {target}; {s.last_error[:200]})"
                for s in behind or streams
            )
            raise TimeoutError(f"demo streams did not catch up within {timeout_s:.0f}s: {names}")
        if time.monotonic() - last_note > 10:
            last_note = time.monotonic()
            log(
                "  waiting for: "
                + ", ".join(
                    f"{s.name} {s.status} v{s.processed_version}/{target}"
                    + (f" [{s.last_error[:120]}]" if s in failed else "")
                    for s in behind
                )
            )
        time.sleep(1.0)


def summary_table(rows: list[StreamSummary]) -> str:
    """The summary printed at the end of ``make demo ONCE=1``."""
    head = ("stream", "status", "rows in", "windows out", "notifications sent", "failed")
    body = [
        (
            r.name,
            r.status,
            f"{r.rows_in:,}",
            f"{r.windows_out:,}",
            f"{r.notifications_sent:,}",
            f"{r.notifications_failed:,}",
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    fmt = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    return "\n".join([line, fmt.format(*head), line, *[fmt.format(*b) for b in body], line])


def demo_check(*, user: object) -> str | None:
    """Quick sanity check after catch-up: None if the output tables have rows, else a message."""
    ex = executor_for(user=user)
    counts = {}
    try:
        for t in OUTPUT_TABLES:
            counts[t] = ex.execute_one(f"SELECT count(*) FROM {DB}.{t}").rows[0][0]
    except TdError as e:
        return e.desc
    empty = [t for t, n in counts.items() if not n]
    if empty:
        return "output tables are empty: " + ", ".join(empty)
    return None
