"""Where a stream's runtime state lives (no Spark import: the web process uses it too).

A stream keeps, in one folder per stream key, its Spark checkpoint (``checkpoint/``: offsets,
commits, the RocksDB state of the kernel) and, for PERIOD triggers, the scheduler's state file
(``period.json``, ``runtime/period.py``). The folders live under the **checkpoint root**:

- ``TDWEB_CHECKPOINTS`` when set: a path every Spark host and every tdweb worker reaches (a shared
  mount) or a Hadoop file-system URI (``s3a://bucket/prefix``, ``hdfs://namenode/path``;
  docs/operations.md "Spark cluster" names the jars these need). A stream restarted on another
  worker host continues from the same checkpoint, so no window is lost or written twice.
- otherwise ``<local folder of the lake>/_streams`` (``location.local_root``: the lake folder, a
  name users cannot take, see ``lake/names.py``; ``$TDWEB_VAR/lake-local/<hash>`` for a lake on
  object storage): the embedded one-host default.

Spark reads and writes the checkpoint itself (Hadoop file systems); tdweb's own files go through
the pyarrow file system of ``lake/location.filesystem`` (``s3a://`` as S3 with the ``AWS_*``
variables, ``hdfs://`` through libhdfs).
"""

from __future__ import annotations

import contextlib
import posixpath
from pathlib import Path

import pyarrow.fs as pafs

from spark_workers.lake.location import filesystem, is_remote, local_root, normalize


def checkpoints_root(lake_root: str | Path, checkpoints: str = "") -> str:
    """The checkpoint root (module docstring): ``checkpoints`` (``TDWEB_CHECKPOINTS``; a local path
    made absolute, ``file://`` dropped, a URI kept without its trailing ``/``) or
    ``<local folder of the lake>/_streams``; ``lake_root`` is the lake's URI or local folder."""
    if checkpoints:
        return normalize(checkpoints)
    return str(local_root(normalize(lake_root)) / "_streams")


def stream_state_location(lake_root: str | Path, stream_key: str, checkpoints: str = "") -> str:
    """``<checkpoint root>/<key>``: everything a stream's runs keep (removed when it is dropped)."""
    root = checkpoints_root(lake_root, checkpoints)
    return posixpath.join(root, stream_key) if is_remote(root) else str(Path(root) / stream_key)


def checkpoint_location(lake_root: str | Path, stream_key: str, checkpoints: str = "") -> str:
    """The stream's Spark ``checkpointLocation``: ``<checkpoint root>/<key>/checkpoint``."""
    base = stream_state_location(lake_root, stream_key, checkpoints)
    return posixpath.join(base, "checkpoint") if is_remote(base) else str(Path(base) / "checkpoint")


class StreamState:
    """A stream's state folder (module docstring) and the small files tdweb keeps in it.

    Args:
        lake_root: the lake's URI or local folder.
        stream_key: the stream's key (``Stream.key``).
        checkpoints: ``TDWEB_CHECKPOINTS`` ("" = the lake's local folder).
    """

    def __init__(self, lake_root: str | Path, stream_key: str, checkpoints: str = "") -> None:
        self.location = stream_state_location(lake_root, stream_key, checkpoints)
        self.checkpoint = checkpoint_location(lake_root, stream_key, checkpoints)
        self._fs, self._path = filesystem(self.location)  # s3a:// is S3 there too

    def read_text(self, name: str) -> str | None:
        """The text of file ``name`` of the folder, or None when there is none."""
        path = posixpath.join(self._path, name)
        if self._fs.get_file_info(path).type != pafs.FileType.File:
            return None
        with self._fs.open_input_stream(path) as f:
            return bytes(f.read()).decode("utf-8")

    def write_text(self, name: str, text: str) -> None:
        """Replace file ``name`` with ``text`` whole: a local file through a temporary file and a
        rename, an object with one PUT (a reader sees the old or the new text, never a part)."""
        self._fs.create_dir(self._path, recursive=True)
        path = posixpath.join(self._path, name)
        if isinstance(self._fs, pafs.LocalFileSystem):
            tmp = Path(path + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
            return
        with self._fs.open_output_stream(path) as f:
            f.write(text.encode("utf-8"))

    def make_parent(self) -> None:
        """Create the folder holding the checkpoint when it is local (Spark creates remote ones)."""
        if isinstance(self._fs, pafs.LocalFileSystem):
            Path(self._path).mkdir(parents=True, exist_ok=True)

    def remove(self) -> None:
        """Delete the folder with everything in it (a dropped stream); nothing there is fine."""
        with contextlib.suppress(FileNotFoundError, OSError):
            self._fs.delete_dir(self._path)
