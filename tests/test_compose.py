"""docker-compose.yml describes the deployment with the same variables as ``make up`` (issue 14):
every variable it gives the tdweb services is one the settings read (``tdweb/settings.py`` through
django-environ) or one the lake reads for object storage (``spark_workers/lake/location.py``'s
``AWS_*``). A variable the code never reads would be a setting that silently does nothing."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from spark_workers.lake import location

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_READ = re.compile(r"""\benv(?:\.\w+)?\(\s*["']([A-Z][A-Z0-9_]*)["']""")


def read_variables() -> set[str]:
    """The environment variables the settings module reads (``env.str("X", ...)``, ``env.db("X")``,
    ``env("X")``) and the object-store variables of the lake."""
    names = set(SETTINGS_READ.findall((ROOT / "tdweb" / "settings.py").read_text()))
    return names | set(location._AWS_VARS) | set(location._S3_COMMIT_CHOICES)


def compose_variables(text: str) -> dict[str, set[str]]:
    """Per service of a compose file built from the tdweb image (``build: .``), the names of the
    variables it sets."""
    doc = yaml.safe_load(text)
    out: dict[str, set[str]] = {}
    for name, svc in doc["services"].items():
        if svc.get("build") != "." and svc.get("image") != "tdweb:latest":
            continue
        env = svc.get("environment") or {}
        keys = env.keys() if isinstance(env, dict) else (e.split("=", 1)[0] for e in env)
        out[name] = set(keys)
    return out


# what pyspark's spark-class launcher and the standalone daemons read (Spark's "Spark Standalone
# Mode" page): allowed on the Spark services only
SPARK_DAEMON_VARIABLES = {
    "SPARK_MASTER_OPTS",
    "SPARK_WORKER_OPTS",
    "SPARK_WORKER_CORES",
    "SPARK_WORKER_MEMORY",
}


def unread(text: str) -> dict[str, set[str]]:
    known = read_variables()
    out = {}
    for svc, names in compose_variables(text).items():
        missing = names - known - (SPARK_DAEMON_VARIABLES if svc.startswith("spark-") else set())
        if missing:
            out[svc] = missing
    return out


def test_every_compose_variable_is_read_by_the_settings() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    services = compose_variables(text)
    assert {"web", "worker", "beat", "migrate", "spark-master", "spark-worker"} <= set(services)
    assert unread(text) == {}
    # the deployment of issue 14: the shared catalog and the object store's variables reach every
    # tdweb service
    for svc in ("web", "worker", "beat"):
        want = {"TDWEB_LAKE", "TDWEB_CATALOG_URL", "TDWEB_CHECKPOINTS", "AWS_ENDPOINT_URL", "SPARK_MASTER"}
        assert want <= services[svc]
    # the Spark services: executors get the object store's variables, the master shares its cores
    assert {"AWS_ENDPOINT_URL", "SPARK_MASTER_OPTS"} <= services["spark-master"]
    assert {"AWS_ENDPOINT_URL", "SPARK_WORKER_CORES"} <= services["spark-worker"]


def test_a_variable_nothing_reads_is_reported() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    doc = yaml.safe_load(text)
    doc["services"]["worker"]["environment"] = {
        **doc["services"]["worker"]["environment"],
        "TDWEB_LAKE_URL": "x",
    }
    assert unread(yaml.safe_dump(doc)) == {"worker": {"TDWEB_LAKE_URL"}}
    doc["services"]["worker"]["environment"]["SPARK_WORKER_CORES"] = "2"  # Spark's, not tdweb's
    assert unread(yaml.safe_dump(doc)) == {"worker": {"TDWEB_LAKE_URL", "SPARK_WORKER_CORES"}}
