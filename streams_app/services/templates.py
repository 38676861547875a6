"""The designer's starting points: one stream per pattern of seed 002's "Designing Streams" guidance
and "Stream Creation Example", written in TDengine 3.3.7 syntax over the demo table ``air.quality``
(``streams_app.services.demo.schema_sql``: ``ts``, ``pm25``, ``pm10``, ``so2``, ``no2``, ``co``,
``o3``, ``temp``, ``pres``, ``dewp``, ``rain`` DOUBLE, ``wd`` VARCHAR(8), ``wspm`` DOUBLE, tag
``station`` VARCHAR(32); one subtable per station).

Every template is a complete CREATE STREAM that tdweb runs as written (tests/web/test_designer_api.py
compiles each one and validates it against a lake holding the demo schema).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spark_workers.streams.design import design_from_sql

DEFAULT_NOTIFY_URL = "ws://127.0.0.1:8000/ws/notify/inbox"
NOTIFY_URL = "{notify_url}"


@dataclass(frozen=True)
class StreamTemplate:
    """One template: ``sql`` holds ``{notify_url}`` where a NOTIFY clause names its receiver."""

    id: str
    title: str
    description: str
    sql: str

    def render(self, *, notify_url: str) -> str:
        return self.sql.replace(NOTIFY_URL, notify_url.replace("'", "''"))


TEMPLATES: tuple[StreamTemplate, ...] = (
    StreamTemplate(
        "per_device_averages",
        "Per-device averages",
        "Hourly PM2.5 average, maximum and reading count of every station (one output subtable per "
        "station), computed when each hour closes, history included. Seed 002: group by child table "
        "when results are needed per device; an INTERVAL window trigger computes per time window.",
        "CREATE STREAM IF NOT EXISTS air.pm25_hourly INTERVAL(1h) SLIDING(1h) FROM air.quality "
        "PARTITION BY tbname\n"
        "  STREAM_OPTIONS(IGNORE_NODATA_TRIGGER | FILL_HISTORY)\n"
        "  INTO air.pm25_hourly AS\n"
        "  SELECT _twstart AS wstart, avg(pm25) AS avg_pm25, max(pm25) AS max_pm25, count(*) AS n "
        "FROM %%trows",
    ),
    StreamTemplate(
        "threshold_episodes",
        "Threshold episodes (event window)",
        "Heavy-pollution episodes per station: a window opens when PM2.5 rises above 150 and closes "
        "when it falls to 75 or below; episodes shorter than 3 hours are ignored (TRUE_FOR). The "
        "inbox hears when an episode starts and ends; its length and peak are stored.",
        "CREATE STREAM IF NOT EXISTS air.pm25_episodes EVENT_WINDOW(START WITH pm25 > 150 "
        "END WITH pm25 <= 75) TRUE_FOR(3h)\n"
        "  FROM air.quality PARTITION BY tbname STREAM_OPTIONS(FILL_HISTORY)\n"
        f"  NOTIFY('{NOTIFY_URL}') ON (WINDOW_OPEN|WINDOW_CLOSE)\n"
        "  INTO air.pm25_episodes AS\n"
        "  SELECT _twstart AS wstart, _twend AS wend, _twrownum AS hours, max(pm25) AS peak_pm25 "
        "FROM %%trows",
    ),
    StreamTemplate(
        "state_changes",
        "State changes (state window)",
        "One window per run of the same wind direction at each station: when the direction changes "
        "the run is stored with its length and mean wind speed. Readings without a direction are "
        "filtered out before window detection (PRE_FILTER).",
        "CREATE STREAM IF NOT EXISTS air.wind_changes STATE_WINDOW(wd) FROM air.quality "
        "PARTITION BY tbname\n"
        "  STREAM_OPTIONS(PRE_FILTER(wd IS NOT NULL) | FILL_HISTORY)\n"
        "  INTO air.wind_changes AS\n"
        "  SELECT _twstart AS wstart, _twend AS wend, first(wd) AS wd, count(*) AS n, "
        "avg(wspm) AS avg_wspm FROM %%trows",
    ),
    StreamTemplate(
        "scheduled_report",
        "Scheduled report (PERIOD)",
        "Every hour of system time, the number of readings written to air.quality during that hour "
        "and their PM2.5 average. Seed 002: a periodic trigger computes on processing time; the "
        "trigger table gives the rows of the period (%%trows).",
        "CREATE STREAM IF NOT EXISTS air.hourly_report PERIOD(1h) FROM air.quality\n"
        "  INTO air.hourly_report AS\n"
        "  SELECT _tlocaltime AS ts, count(*) AS readings, avg(pm25) AS avg_pm25 FROM %%trows",
    ),
    StreamTemplate(
        "notify_only_alert",
        "Notify-only alert",
        "No computation and no output table: the inbox is told when a station's PM2.5 goes above "
        "250 and when it is back at 150 or below. Seed 002: notification-only mode, for event "
        "triggers that need no computation.",
        "CREATE STREAM IF NOT EXISTS air.pm25_alerts EVENT_WINDOW(START WITH pm25 > 250 "
        "END WITH pm25 <= 150)\n"
        "  FROM air.quality PARTITION BY tbname\n"
        f"  NOTIFY('{NOTIFY_URL}') ON (WINDOW_OPEN|WINDOW_CLOSE)",
    ),
    StreamTemplate(
        "notify_results",
        "Daily results as notifications",
        "The daily PM2.5 average of every station sent to the inbox when the day closes, without "
        "storing it. Seed 002: CALC_NOTIFY_ONLY when results only need to be notified.",
        "CREATE STREAM IF NOT EXISTS air.pm25_daily_notify INTERVAL(1d) SLIDING(1d) FROM air.quality "
        "PARTITION BY tbname\n"
        "  STREAM_OPTIONS(IGNORE_NODATA_TRIGGER | CALC_NOTIFY_ONLY)\n"
        f"  NOTIFY('{NOTIFY_URL}') ON (WINDOW_CLOSE) AS\n"
        "  SELECT _twstart AS wstart, avg(pm25) AS avg_pm25 FROM %%trows",
    ),
    StreamTemplate(
        "sessions",
        "Sessions (session window)",
        "Rain episodes per station: rainy hours less than 3 hours apart form one session, stored "
        "with the rain that fell and its duration.",
        "CREATE STREAM IF NOT EXISTS air.rain_sessions SESSION(ts, 3h) FROM air.quality "
        "PARTITION BY tbname\n"
        "  STREAM_OPTIONS(PRE_FILTER(rain > 0) | FILL_HISTORY)\n"
        "  INTO air.rain_sessions AS\n"
        "  SELECT _twstart AS wstart, _twend AS wend, sum(rain) AS rain_mm, count(*) AS hours "
        "FROM %%trows",
    ),
    StreamTemplate(
        "count_windows",
        "Every N readings (count window)",
        "Temperature statistics of every 24 readings of a station. Seed 002: a count trigger "
        "processes after a number of rows is written; history is included.",
        "CREATE STREAM IF NOT EXISTS air.temp_24 COUNT_WINDOW(24) FROM air.quality PARTITION BY tbname\n"
        "  STREAM_OPTIONS(FILL_HISTORY)\n"
        "  INTO air.temp_24 AS\n"
        "  SELECT _twstart AS wstart, _twend AS wend, avg(temp) AS avg_temp, min(temp) AS min_temp, "
        "max(temp) AS max_temp FROM %%trows",
    ),
)


def template_list(*, notify_url: str | None = None) -> list[dict[str, Any]]:
    """The templates as the designer shows them.

    Args:
        notify_url: the receiver written into NOTIFY clauses (the user's inbox URL); default
            ``DEFAULT_NOTIFY_URL``.

    Returns:
        ``[{id, title, description, sql, design}]`` in a fixed order; ``design`` is
        ``spark_workers.streams.design.design_from_sql(sql)``.
    """
    out = []
    for t in TEMPLATES:
        sql = t.render(notify_url=notify_url or DEFAULT_NOTIFY_URL)
        out.append(
            {
                "id": t.id,
                "title": t.title,
                "description": t.description,
                "sql": sql,
                "design": design_from_sql(sql),
            }
        )
    return out
