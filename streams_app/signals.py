"""Signal receivers, connected in ``StreamsAppConfig.ready``.

- A user's API tokens are deleted when their password changes (a save that changes the stored
  password hash: ``set_password`` from any path, the admin, ``changepassword``, or a hash written
  directly). Django's sessions end by themselves then (their auth hash no longer matches) and the
  ``/rest/sql`` Basic-auth cache compares the stored hash on every hit.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from streams_app.services.api_tokens import api_tokens_revoke


def user_password_remember(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    """``pre_save`` of the user model: note whether this save changes the password hash."""
    instance._tdweb_password_changed = False
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    old = type(instance)._default_manager.filter(pk=instance.pk).values_list("password", flat=True).first()
    instance._tdweb_password_changed = old is not None and old != instance.password


def user_password_changed(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    """``post_save`` of the user model: revoke the API tokens if the password hash changed."""
    if getattr(instance, "_tdweb_password_changed", False):
        instance._tdweb_password_changed = False
        api_tokens_revoke(user_id=instance.pk)


def signals_connect() -> None:
    """Connect the receivers above to the active user model."""
    from django.db.models.signals import post_save, pre_save

    user_model = get_user_model()
    pre_save.connect(user_password_remember, sender=user_model, dispatch_uid="tdweb-password-remember")
    post_save.connect(user_password_changed, sender=user_model, dispatch_uid="tdweb-password-changed")
