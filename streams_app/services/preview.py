"""Preview a stream design over a time range of the real tables (the designer's "Preview before
deploy"); the work is ``spark_workers.runtime.preview``: nothing is written to the lake, nothing
is sent, no stream is registered."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from spark_workers.runtime.preview import preview_stream
from streams_app.services.access import principal_for
from streams_app.services.lake import lake_get

PREVIEW_MAX_INPUT_ROWS = 500_000
# a blank start: this long before the trigger table's last row (the Preview tab's label says so)
PREVIEW_DEFAULT_SPAN_MS = 30 * 86_400_000


def preview(
    user: Any,
    sql: str,
    *,
    start_ms: int | None,
    end_ms: int | None,
    limit: int = 1000,
    default_db: str | None = None,
) -> dict[str, Any]:
    """Run the CREATE STREAM statement ``sql`` with the batch engine over the rows of its trigger
    table in ``[start_ms, end_ms)`` (epoch ms; None = open) of the process's lake, in
    ``TDWEB_TIMEZONE``.

    Args:
        user: the signed-in user asking: the preview reads the stream's tables with the user's
            privileges (PERMISSION_DENIED otherwise).
        sql: one CREATE STREAM statement, either syntax.
        start_ms / end_ms: the time range of the trigger table's first column; a blank start is
            ``PREVIEW_DEFAULT_SPAN_MS`` (30 days) before the trigger table's last row before
            ``end_ms``, a blank end is open (after the last row).
        limit: at most this many output rows and notification events.
        default_db: the database of unqualified names (the design's stream database).

    Returns:
        ``preview_stream``'s answer: ``windows``, ``rows`` (``columns``, ``data``),
        ``notifications``, ``input_rows``, ``output_rows``, ``elapsed_ms``, ``truncated``,
        ``range`` (the range run) and ``deploy`` (what deploying does with these rows: FILL_HISTORY
        and NOTIFY_HISTORY respected; see its docstring).

    Raises:
        SqlError: bad SQL (positioned), an unsupported stream (PERIOD triggers), an empty range or
            more than ``PREVIEW_MAX_INPUT_ROWS`` rows in it.
        CatalogError: a database or table is missing.
    """
    return preview_stream(
        lake_get(),
        sql,
        start_ms=start_ms,
        end_ms=end_ms,
        limit=limit,
        max_input_rows=PREVIEW_MAX_INPUT_ROWS,
        tz=settings.TDWEB_TIMEZONE,
        principal=principal_for(user),
        default_db=default_db,
        default_span_ms=PREVIEW_DEFAULT_SPAN_MS,
    )
