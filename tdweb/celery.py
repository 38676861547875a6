"""The Celery app: queue ``streams`` runs one supervising task per stream (thread pool, one
SparkSession per worker process); queue ``default`` runs short jobs; beat reconciles."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tdweb.settings")

app = Celery("tdweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["streams_app"])
