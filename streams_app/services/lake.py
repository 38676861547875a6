"""The process's lake and SQL limits, configured from settings (the executors a user's
statements run in are ``services/sql.executor_for``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core import checks

from spark_workers.lake.store import Lake
from spark_workers.limits import Limits, configure_limits
from spark_workers.runtime.deployment import cluster_problems


@lru_cache(maxsize=4)
def _lake(root: str, catalog_url: str) -> Lake:
    return Lake(root, catalog_url)


def lake_get() -> Lake:
    """The lake at ``TDWEB_LAKE`` with its catalog at ``TDWEB_CATALOG_URL`` (one instance per
    process)."""
    return _lake(str(settings.TDWEB_LAKE), str(settings.TDWEB_CATALOG_URL or ""))


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


def deployment_problems() -> dict[str, str]:
    """What this deployment's settings lack for its Spark master (``runtime/deployment.py``):
    ``SPARK_MASTER`` on a cluster with the lake on object storage needs ``TDWEB_CATALOG_URL`` and
    ``TDWEB_CHECKPOINTS``: ``{setting: sentence naming it}``."""
    return cluster_problems(
        master=str(settings.SPARK_MASTER),
        lake=str(settings.TDWEB_LAKE),
        catalog_url=str(settings.TDWEB_CATALOG_URL or ""),
        checkpoints=str(settings.TDWEB_CHECKPOINTS or ""),
    )


def deployment_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Django system check (``manage.py check``, every ``manage.py`` command): one error per
    :func:`deployment_problems` entry: ``tdweb.E001`` the catalog, ``tdweb.E002`` the checkpoints."""
    ids = {"TDWEB_CATALOG_URL": "tdweb.E001", "TDWEB_CHECKPOINTS": "tdweb.E002"}
    return [
        checks.Error(text, id=ids[setting], hint="docs/operations.md, Spark cluster")
        for setting, text in deployment_problems().items()
    ]
