"""tdweb Django project (wiring only: settings, ASGI routing, URLs, the Celery app)."""

from tdweb.celery import app as celery_app

__all__ = ["celery_app"]
