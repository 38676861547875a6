"""The ``SECRET_KEY`` of an installation: from ``TDWEB_SECRET_KEY``, or generated once per ``TDWEB_VAR``.

Rule (docs/security.md "Production configuration and TLS"): with ``DEBUG`` off the service refuses
to start on a key everybody knows (tdweb's old built-in default) or on one shorter than Django's
own minimum (50 characters, ``security.W009``). When no key is configured, a random one is written
once to ``<TDWEB_VAR>/secret_key`` (mode 0600) and used from then on, so the one-machine default
(``make demo``, ``make up``) starts with a key of its own and keeps its sessions across restarts.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

KNOWN_DEFAULT_KEYS = frozenset(
    {
        "tdweb-embedded-insecure-key-change-me-in-production",
        "change-me-in-production",  # docker-compose.yml's placeholder before the key file
    }
)
MIN_LENGTH = 50  # Django's security.W009 minimum
KEY_FILE = "secret_key"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"  # Django's get_random_secret_key()


def secret_key_generate() -> str:
    """A new random key: 64 characters of Django's secret-key alphabet (about 360 bits)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(64))


def secret_key_file_load(var_dir: Path) -> str:
    """The key kept in ``var_dir/secret_key``; writes a new random one (mode 0600) if there is none.

    Safe when several processes start at once (web, worker and beat of ``make up``): the key is
    written to a private temporary file that is hard-linked into place, so every process reads the
    same complete key. Raises ``ImproperlyConfigured`` if the file exists but is empty or too short.
    """
    var_dir.mkdir(parents=True, exist_ok=True)
    path = var_dir / KEY_FILE
    if not path.exists():
        tmp = var_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secret_key_generate() + "\n")
            with contextlib.suppress(FileExistsError):  # another process was first: use its key
                os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    key = path.read_text().strip()
    if len(key) < MIN_LENGTH:
        raise ImproperlyConfigured(
            f"{path} holds a key of {len(key)} characters (at least {MIN_LENGTH}); delete it to get a new one"
        )
    return key


def secret_key_load(*, configured: str, debug: bool, var_dir: Path) -> str:
    """The ``SECRET_KEY`` to use.

    Args:
        configured: the value of ``TDWEB_SECRET_KEY`` ("" when unset).
        debug: ``DEBUG``; a weak configured key is accepted only in debug mode.
        var_dir: ``TDWEB_VAR``, where a generated key is kept.

    Returns:
        ``configured`` when set, else the installation's generated key (see
        ``secret_key_file_load``).

    Raises:
        ImproperlyConfigured: with ``debug`` off, ``configured`` is a well-known default key or is
            shorter than 50 characters.
    """
    key = configured.strip()
    if not key:
        return secret_key_file_load(var_dir)
    if not debug:
        if key in KNOWN_DEFAULT_KEYS:
            raise ImproperlyConfigured(
                "TDWEB_SECRET_KEY is tdweb's published default key: set a random key of at least "
                f"{MIN_LENGTH} characters, or unset it to use a generated one (docs/security.md)"
            )
        if len(key) < MIN_LENGTH:
            raise ImproperlyConfigured(
                f"TDWEB_SECRET_KEY has {len(key)} characters; use a random key of at least {MIN_LENGTH} "
                "(docs/security.md)"
            )
    return key
