"""Fixtures of the hardened web layer's tests (each test reproduces a finding, then checks the fix)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model


@pytest.fixture(autouse=True)
def _auth_cache_clear():  # type: ignore[no-untyped-def]
    """The REST endpoint caches Basic credentials per process; tests must not share them."""
    from streams_app.api import rest_sql

    rest_sql._auth_cache.clear()
    yield
    rest_sql._auth_cache.clear()


@pytest.fixture
def alice(db):  # type: ignore[no-untyped-def]
    """A non-staff user with password ``alice-pw``."""
    return get_user_model().objects.create_user("alice", password="alice-pw")


@pytest.fixture
def bob(db):  # type: ignore[no-untyped-def]
    """Another non-staff user, password ``bob-pw``."""
    return get_user_model().objects.create_user("bob", password="bob-pw")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the test settings have no collected static files; whitenoise warns about it on every request
    for item in items:
        if "tests/security/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings("ignore:No directory at:UserWarning"))
