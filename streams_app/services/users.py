"""Users: the first-run admin account and its inbox (TDengine's users and grants over Django's
users are in ``services/access.py``)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model

from streams_app.models import Inbox
from streams_app.services.notifications import inbox_get_or_create

DEFAULT_INBOX = "inbox"


def admin_bootstrap() -> tuple[object, Inbox]:
    """Create ``root`` (password ``TDWEB_ADMIN_PASSWORD``, default ``taosdata``) the first time, and
    its inbox ``inbox``; later runs change nothing (a changed password is kept)."""
    User = get_user_model()
    user = User.objects.filter(username=settings.TDWEB_ADMIN_USER).first()
    if user is None:
        user = User.objects.create_superuser(
            settings.TDWEB_ADMIN_USER, email="", password=settings.TDWEB_ADMIN_PASSWORD
        )
    inbox = inbox_get_or_create(name=DEFAULT_INBOX, owner=user)
    return user, inbox


def inbox_url(*, inbox: Inbox, host: str | None = None, port: int | None = None) -> str:
    """The WebSocket URL producers use to notify this inbox."""
    h = host or settings.TDWEB_HOST
    p = port or settings.TDWEB_PORT
    return f"ws://{h}:{p}/ws/notify/{inbox.name}?key={inbox.key}"
