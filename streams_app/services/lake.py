"""The process's lake and SQL executors, configured from settings."""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from spark_workers.lake.store import Lake
from spark_workers.limits import Limits, configure_limits
from spark_workers.statements.executor import Executor


@lru_cache(maxsize=4)
def _lake(root: str) -> Lake:
    return Lake(root)


def lake_get() -> Lake:
    """The lake at ``TDWEB_LAKE`` (one instance per process)."""
    return _lake(str(settings.TDWEB_LAKE))


def sql_limits_configure() -> None:
    """Apply the ``TDWEB_SQL_*`` settings to this process's SQL limits (docs/decisions.md, "SQL
    sandbox and limits"; cheap: a no-op while they are unchanged).

    Raises:
        ValueError: a setting is out of range (``TDWEB_SQL_TIMEOUT_S`` above 300, a limit <= 0).
    """
    configure_limits(
        Limits.from_settings(
            memory_limit=settings.TDWEB_SQL_MEMORY_LIMIT,
            timeout_s=settings.TDWEB_SQL_TIMEOUT_S,
            max_rows=settings.TDWEB_SQL_MAX_ROWS,
            max_result_bytes=settings.TDWEB_SQL_MAX_RESULT_BYTES,
            max_window_rows=settings.TDWEB_SQL_MAX_WINDOW_ROWS,
            max_statements=settings.TDWEB_SQL_MAX_STATEMENTS,
            max_depth=settings.TDWEB_SQL_MAX_DEPTH,
            max_sql_chars=settings.TDWEB_SQL_MAX_LENGTH,
            concurrency=settings.TDWEB_SQL_CONCURRENCY,
        )
    )


def executor_for(*, db: str | None = None, user: object | None = None) -> Executor:
    """An executor running every statement with ``user``'s privileges (TDengine's users and
    grants, ``services/users.principal_for``); its streams are registered in the metadata DB and
    owned by ``user``; CREATE/ALTER/DROP USER and GRANT/REVOKE change Django's users; NOTIFY URLs
    copied redacted from a page get their secrets back where ``user`` may use them
    (``notifications.notify_url_unredact``).

    Raises:
        PermissionError: ``user`` is None, anonymous or inactive.
    """
    from streams_app.services.notifications import notify_url_unredact
    from streams_app.services.registry import DjangoStreamRegistry
    from streams_app.services.users import DjangoUserDirectory, principal_for

    sql_limits_configure()
    return Executor(
        lake_get(),
        DjangoStreamRegistry(user=user),
        tz=settings.TDWEB_TIMEZONE,
        default_db=db or None,
        principal=principal_for(user),
        users=DjangoUserDirectory(),
        notify_secrets=lambda url: notify_url_unredact(user=user, url=url),
    )
