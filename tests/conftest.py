"""Shared fixtures: a clean lake per test module, the admin user, executors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def lake(settings, tmp_path):  # type: ignore[no-untyped-def]
    """A fresh lake for one test (and the services pointed at it)."""
    from streams_app.services import lake as lake_service

    root = tmp_path / "lake"
    settings.TDWEB_LAKE = str(root)
    lake_service._lake.cache_clear()
    yield lake_service.lake_get()
    lake_service._lake.cache_clear()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def admin(db):  # type: ignore[no-untyped-def]
    from streams_app.services.users import admin_bootstrap

    user, _inbox = admin_bootstrap()
    return user


@pytest.fixture
def shared_dir() -> Path | None:
    p = Path(__file__).resolve().parents[2] / "shared"
    return p if p.is_dir() else None
