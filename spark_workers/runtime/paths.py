"""Where a stream's runtime state lives (no Spark import: the web process uses it too).

A stream's state is kept under the lake's ``_streams`` folder (a name users cannot take, see
``lake/names.py``) of the lake's local folder (``location.local_root``: the lake folder, or
``$TDWEB_VAR/lake-local/<hash>`` for a lake on object storage), one folder per stream key: the
Spark checkpoint and, for PERIOD triggers, the scheduler's state file (``runtime/period.py``).
"""

from __future__ import annotations

from pathlib import Path

from spark_workers.lake.location import local_root, normalize


def stream_state_dir(lake_root: str | Path, stream_key: str) -> Path:
    """``<local folder of the lake>/_streams/<key>``: everything a stream's runs keep (removed
    when it is dropped); ``lake_root`` is the lake's URI or local folder."""
    return local_root(normalize(lake_root)) / "_streams" / stream_key


def checkpoint_dir(lake_root: str | Path, stream_key: str) -> Path:
    """Checkpoint folder of a stream: ``<lake>/_streams/<key>/checkpoint``."""
    return stream_state_dir(lake_root, stream_key) / "checkpoint"
