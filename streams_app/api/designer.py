"""``/api/v1/designer/`` and stream versions: the visual designer's endpoints (docs/designer.md)."""

from __future__ import annotations

from django.urls import path

urlpatterns: list = []  # filled in by the designer endpoints (compile, validate, preview, drafts, ...)
_ = path
