"""API tokens (``Authorization: Token <key>``): created, checked and revoked; kept hashed at rest.

A key is ``tdw_`` followed by 43 URL-safe characters (32 random bytes from ``secrets``); the
database keeps only its SHA-256 (``ApiToken.digest``), so a copy of the database gives no usable
key. A plain hash without salt or stretching suffices because the key is random with 256 bits of
entropy (a password needs a slow hash because it is guessable; a key is not).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from streams_app.models import ApiToken

KEY_PREFIX = "tdw_"


def api_token_digest(key: str) -> str:
    """Hex SHA-256 (64 characters) of a token key, what ``ApiToken.digest`` holds."""
    return hashlib.sha256(key.encode("utf-8", errors="surrogateescape")).hexdigest()


def api_token_create(*, user: Any) -> tuple[ApiToken, str]:
    """A new token of ``user``; returns the stored token and its key (shown to the user once,
    never stored)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, digest=api_token_digest(key), prefix=key[:8])
    return token, key


def api_token_user(*, key: str) -> Any | None:
    """The user of the token with this key, or None (unknown key). One indexed lookup by digest,
    then a constant-time comparison of the digests (``hmac.compare_digest``)."""
    if not key or len(key) > 256:
        return None
    digest = api_token_digest(key)
    token = ApiToken.objects.select_related("user").filter(digest=digest).first()
    if token is None or not hmac.compare_digest(token.digest, digest):
        return None
    return token.user


def api_tokens_revoke(*, user_id: int) -> int:
    """Delete every token of a user (their password changed); returns how many."""
    deleted, _ = ApiToken.objects.filter(user_id=user_id).delete()
    return deleted
