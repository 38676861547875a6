"""What a deployment on several hosts needs (no Spark import: the web process checks it too).

With ``SPARK_MASTER=spark://...`` a stream's executors run on other hosts, and with several worker
hosts a stream restarts on another one after a failure (docs/operations.md "Spark cluster",
"Several worker and web hosts"). Then nothing a stream needs may live on one host's disk:

- the catalog: an executor opens the lake with it (the ``tdlake`` source, the kernel's
  recalculation reads); the SQLite catalog is a file of one host, so a lake on object storage with
  a cluster needs ``TDWEB_CATALOG_URL`` (PostgreSQL). A local lake folder with its SQLite file is
  fine when the folder is a mount every host shares (docker-compose's ``lake`` volume).
- the checkpoints: the kernel's state store writes them from the executors, and another worker
  continues from them; for a lake on object storage they default to this host's
  ``$TDWEB_VAR/lake-local/...``, so a cluster needs ``TDWEB_CHECKPOINTS``.
"""

from __future__ import annotations

from spark_workers.lake.location import is_remote


def is_cluster(master: str) -> bool:
    """True for a master whose executors are other processes, possibly on other hosts
    (``spark://``, ``yarn``, ``k8s://``): anything but ``local[...]``."""
    return not master.strip().startswith("local")


def cluster_problems(*, master: str, lake: str, catalog_url: str, checkpoints: str) -> dict[str, str]:
    """``{missing setting: sentence naming it}`` for what a deployment lacks for ``master``
    (module docstring), in the order catalog, checkpoints; empty when nothing is missing or the
    master is local."""
    if not is_cluster(master) or not is_remote(lake):
        return {}
    problems = {}
    if not catalog_url:
        problems["TDWEB_CATALOG_URL"] = (
            f"SPARK_MASTER={master} with the lake on object storage needs TDWEB_CATALOG_URL "
            "(a PostgreSQL catalog every host reaches): the SQLite catalog is a file of this host"
        )
    if not checkpoints:
        problems["TDWEB_CHECKPOINTS"] = (
            f"SPARK_MASTER={master} with the lake on object storage needs TDWEB_CHECKPOINTS "
            "(a shared path or an s3a:// or hdfs:// location): checkpoints would stay on this host"
        )
    return problems
