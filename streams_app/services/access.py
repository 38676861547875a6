"""Who a signed-in Django user is to the SQL engine: the principal statements run as and
TDengine's users and grants over Django's users (``spark_workers.access``), and the secrets a
user may get back in a NOTIFY URL copied redacted (docs/security.md, "Secrets")."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.contrib.auth import get_user_model
from django.db import transaction

from spark_workers.access import (
    REDACTED,
    Grant,
    Principal,
    UserInfo,
    denied,
    merge_grant,
    redact_secrets,
)
from spark_workers.errors import CatalogError, Code
from spark_workers.streams.spec import StreamSpec
from streams_app.models import Inbox, Privilege, Stream, UserProfile


def principal_for(user: Any) -> Principal:
    """The principal a signed-in Django user's statements run as (``spark_workers.access``):
    superuser = ``is_superuser``; stream operator = ``is_staff``; SYSINFO/CREATEDB from the user's
    :class:`UserProfile` (TDengine's defaults 1/0 without one); the user's grants.

    Raises:
        PermissionError: ``user`` is anonymous or inactive (callers authenticate first).
    """
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        raise PermissionError("statements run as a signed-in, active user")
    profile = UserProfile.objects.filter(user=user).first()
    grants = tuple(
        Grant(p.db, p.table or None, read=p.read, write=p.write)
        for p in Privilege.objects.filter(user=user).order_by("db", "table")
    )
    return Principal(
        user.username,
        super=bool(user.is_superuser),
        sysinfo=profile.sysinfo if profile else True,
        createdb=bool(user.is_superuser) or (profile.createdb if profile else False),
        grants=grants,
        operator=bool(user.is_staff),
    )


def _user(name: str) -> Any:
    user = get_user_model().objects.filter(username__iexact=name).first()
    if user is None:
        raise CatalogError(f"User not exist: {name}", code=Code.USER_NOT_EXIST)
    return user


class DjangoUserDirectory:
    """``spark_workers.access.UserDirectory`` over Django's users: TDengine's CREATE/ALTER/DROP
    USER and GRANT/REVOKE change the same accounts the web pages, ``/api/v1`` and ``/rest/sql``
    sign in with. A password change goes through ``set_password`` (sessions and API tokens of the
    user stop working, see ``streams_app.signals``)."""

    def create_user(self, name: str, password: str, *, sysinfo: bool, createdb: bool) -> None:
        User = get_user_model()
        with transaction.atomic():
            if User.objects.filter(username__iexact=name).exists():
                raise CatalogError(f"User already exists: {name}", code=Code.USER_ALREADY_EXIST)
            user = User.objects.create_user(name, password=password)
            UserProfile.objects.create(user=user, sysinfo=sysinfo, createdb=createdb)

    def alter_user(
        self,
        name: str,
        *,
        password: str | None = None,
        sysinfo: bool | None = None,
        createdb: bool | None = None,
        enable: bool | None = None,
    ) -> None:
        with transaction.atomic():
            user = _user(name)
            if password is not None:
                user.set_password(password)
            if enable is not None:
                user.is_active = enable
            user.save()
            if sysinfo is not None or createdb is not None:
                profile, _ = UserProfile.objects.get_or_create(user=user)
                if sysinfo is not None:
                    profile.sysinfo = sysinfo
                if createdb is not None:
                    profile.createdb = createdb
                profile.save()

    def drop_user(self, name: str) -> None:
        user = _user(name)
        if user.is_superuser and get_user_model().objects.filter(is_superuser=True).count() <= 1:
            raise CatalogError("Invalid alter operation: the last superuser cannot be dropped",
                               code=Code.INVALID_ALTER_OPER)  # fmt: skip
        user.delete()

    def users(self) -> list[UserInfo]:
        profiles = {p.user_id: p for p in UserProfile.objects.all()}
        out = []
        for u in get_user_model().objects.order_by("username"):
            p = profiles.get(u.pk)
            out.append(
                UserInfo(
                    u.username,
                    bool(u.is_superuser),
                    bool(u.is_active),
                    p.sysinfo if p else True,
                    bool(u.is_superuser) or (p.createdb if p else False),
                    int(u.date_joined.timestamp() * 1000),
                )
            )
        return out

    def grant(self, name: str, grant: Grant) -> None:
        self._change(name, grant, add=True)

    def revoke(self, name: str, grant: Grant) -> None:
        self._change(name, grant, add=False)

    def _change(self, name: str, grant: Grant, *, add: bool) -> None:
        with transaction.atomic():
            user = _user(name)
            row = (
                Privilege.objects.select_for_update()
                .filter(user=user, db=grant.db, table=grant.table or "")
                .first()
            )
            held = [Grant(row.db, row.table or None, read=row.read, write=row.write)] if row else []
            after = merge_grant(held, grant, add=add)
            if not after:
                if row is not None:
                    row.delete()
                return
            g = after[0]
            if row is None:
                Privilege.objects.create(user=user, db=g.db, table=g.table or "", read=g.read, write=g.write)
            else:
                row.read, row.write = g.read, g.write
                row.save(update_fields=["read", "write", "updated_at"])

    def privileges(self) -> list[tuple[str, Grant]]:
        return [
            (p.user.username, Grant(p.db, p.table or None, read=p.read, write=p.write))
            for p in Privilege.objects.select_related("user").order_by("user__username", "db", "table")
        ]


def notify_url_unredact(*, user: Any, url: str) -> str | None:
    """The real NOTIFY URL behind ``url`` as shown redacted (``access.redact_secrets``), if
    ``user`` may use it, else None.

    Either ``url`` points to one of tdweb's inboxes (``/ws/notify/<inbox>?key=******``) that
    ``user`` owns (any inbox for superusers): its key is filled in; or it is, redacted, a NOTIFY
    URL of a stream ``user`` created (a stream edited and redeployed from the designer).
    """
    parts = urlsplit(url)
    m = re.fullmatch(r"/ws/notify/([-a-zA-Z0-9_]+)/?", parts.path)
    if m is not None:
        inbox = Inbox.objects.filter(name=m.group(1)).first()
        params = parse_qsl(parts.query, keep_blank_values=True)
        others_redacted = any(REDACTED in v for k, v in params if k != "key")
        if inbox is not None and not others_redacted and (user.is_superuser or inbox.owner_id == user.pk):
            query = urlencode([(k, inbox.key if k == "key" else v) for k, v in params])
            return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    for spec in Stream.objects.filter(owner=user).order_by("-id").values_list("spec", flat=True):
        notify = StreamSpec.from_json(spec).notify
        for real in notify.urls if notify is not None else []:
            if redact_secrets(real) == url:
                return real
    return None


def stream_sql_reveal(*, user: Any, stream: Stream) -> str:
    """A stream's SQL as written, NOTIFY URL secrets included (inbox keys, receivers' tokens), for
    its owner or a superuser: the SQL shown everywhere else is redacted (``redact_secrets``), and
    this is the owner's explicit "show" / copy.

    Raises:
        SqlError: PERMISSION_DENIED (0x2644) for anyone else, staff users included.
    """
    if getattr(user, "is_superuser", False) or stream.owner_id == getattr(user, "pk", None):
        return stream.sql
    raise denied(f"the NOTIFY secrets of stream {stream.name} are shown to its owner only")
