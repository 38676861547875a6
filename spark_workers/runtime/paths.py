"""Where a stream's runtime state lives (no Spark import: the web process uses it too).

A stream's state is kept under the lake's ``_streams`` folder (a name users cannot take, see
``lake/names.py``), one folder per stream key: the Spark checkpoint and, for PERIOD triggers, the
scheduler's state file (``runtime/period.py``).
"""

from __future__ import annotations

from pathlib import Path


def stream_state_dir(lake_root: str | Path, stream_key: str) -> Path:
    """``<lake>/_streams/<key>``: everything a stream's runs keep (removed when it is dropped)."""
    return Path(lake_root) / "_streams" / stream_key


def checkpoint_dir(lake_root: str | Path, stream_key: str) -> Path:
    """Checkpoint folder of a stream: ``<lake>/_streams/<key>/checkpoint``."""
    return stream_state_dir(lake_root, stream_key) / "checkpoint"
