"""Where the lake lives: a local folder or an object-store URL, behind one interface.

``TDWEB_LAKE`` is either a local path (``var/lake``, ``/data/lake``, ``file:///data/lake``) or an
object-store URL delta-rs accepts (``s3://bucket/prefix``, ``gs://``, ``az://``/``abfss://``).
Delta tables are opened by URI with :func:`storage_options`; data files are read through the
pyarrow file system of :func:`filesystem`. Credentials and endpoint come from the standard
variables (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_ALLOW_HTTP``; the Google/Azure SDK variables for their schemes).

Commits on S3 must not overwrite each other: delta-rs writes each ``_delta_log`` entry with a
conditional put (``If-None-Match: *``); :func:`storage_options` asks for it explicitly
(``conditional_put=etag``) unless the operator chose a locking provider or unsafe renames
(``AWS_S3_LOCKING_PROVIDER``, ``AWS_S3_ALLOW_UNSAFE_RENAME``, ``AWS_CONDITIONAL_PUT``).

What needs a local folder even when the data is remote (the SQLite catalog, streaming
checkpoints) lives under :func:`local_root`: ``$TDWEB_VAR/lake-local/<hash of the URL>``.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs

_AWS_VARS = (
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ALLOW_HTTP",
)
_S3_COMMIT_CHOICES = ("AWS_S3_LOCKING_PROVIDER", "AWS_S3_ALLOW_UNSAFE_RENAME", "AWS_CONDITIONAL_PUT")


def is_remote(root: str | Path) -> bool:
    """True for an object-store URL (``scheme://...`` other than ``file://``)."""
    text = str(root)
    return "://" in text and not text.startswith("file://")


def normalize(root: str | Path) -> str:
    """The lake's URI: an absolute local path, or the URL without a trailing ``/``."""
    text = str(root)
    if is_remote(text):
        return text.rstrip("/")
    if text.startswith("file://"):
        text = text[len("file://") :]
    return os.path.abspath(os.path.expanduser(text))


def join(uri: str, *parts: str) -> str:
    """``uri/part/...`` with ``/`` separators (parts are storage keys, never ``..``)."""
    return posixpath.join(uri, *parts)


def local_root(uri: str, var_dir: str | Path | None = None) -> Path:
    """The local folder of a lake: the lake folder itself, or for a remote lake
    ``<var_dir or $TDWEB_VAR or ./var>/lake-local/<first 16 hex of sha256(uri)>``."""
    if not is_remote(uri):
        return Path(uri)
    base = Path(var_dir or os.environ.get("TDWEB_VAR") or "var").resolve()
    return base / "lake-local" / hashlib.sha256(uri.encode("utf-8")).hexdigest()[:16]


def executor_variables() -> dict[str, str]:
    """The object-store variables of this process that are set (``AWS_*`` credentials, endpoint,
    region and commit-protocol choices): what another host needs to open the same lake."""
    return {k: v for k in (*_AWS_VARS, *_S3_COMMIT_CHOICES) if (v := os.environ.get(k))}


def storage_options(uri: str) -> dict[str, str]:
    """delta-rs ``storage_options`` for ``uri``: the AWS_* variables that are set, and for
    ``s3://`` the conditional put of commit files (module docstring). Empty for local lakes."""
    if not is_remote(uri):
        return {}
    opts = {k: v for k in _AWS_VARS if (v := os.environ.get(k))}
    if urlparse(uri).scheme in ("s3", "s3a") and not any(os.environ.get(k) for k in _S3_COMMIT_CHOICES):
        opts["conditional_put"] = "etag"
    return opts


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """``(pyarrow FileSystem, path of uri inside it)``. S3 takes its endpoint, region and keys
    from the AWS_* variables (``AWS_ALLOW_HTTP=true`` allows an ``http://`` endpoint)."""
    if not is_remote(uri):
        return pafs.LocalFileSystem(), uri
    parsed = urlparse(uri)
    if parsed.scheme not in ("s3", "s3a"):
        fs, path = pafs.FileSystem.from_uri(uri)
        return fs, path
    kwargs: dict[str, object] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        ep = urlparse(endpoint if "://" in endpoint else "https://" + endpoint)
        kwargs["endpoint_override"] = ep.netloc
        kwargs["scheme"] = ep.scheme
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        kwargs["access_key"] = os.environ["AWS_ACCESS_KEY_ID"]
        kwargs["secret_key"] = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        if os.environ.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = os.environ["AWS_SESSION_TOKEN"]
    return pafs.S3FileSystem(**kwargs), (parsed.netloc + parsed.path).rstrip("/")  # type: ignore[arg-type]


def file_path(uri: str) -> str:
    """A data-file URI as delta-rs lists it -> the path the :func:`filesystem` of the lake uses
    (``file://`` and ``s3://`` prefixes dropped)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return uri[len("file://") :] if uri.startswith("file://") else uri
    if parsed.scheme in ("s3", "s3a", "gs", "gcs"):
        return (parsed.netloc + parsed.path).lstrip("/")
    return uri
