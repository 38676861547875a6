"""tdweb's metadata: streams and their runs, progress and deliveries; notification inboxes.

The time-series data itself lives in the lake (``spark_workers.lake``), not here.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q


class TimeStamped(models.Model):
    """``created_at`` / ``updated_at`` for every model."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Stream(TimeStamped):
    """A stream as created by CREATE STREAM (or the designer), with the state of its query.

    ``desired_state`` is what users asked for (running, paused, stopped); ``status`` is what the
    worker reports. ``key`` names the stream's checkpoint folder and Delta ``txn`` app id; it never
    changes, so a restarted query resumes where it stopped.
    """

    class Syntax(models.TextChoices):
        LEGACY = "legacy", "legacy (3.0-3.3.6)"
        V337 = "3.3.7", "3.3.7"

    class Desired(models.TextChoices):
        RUNNING = "running"
        PAUSED = "paused"
        STOPPED = "stopped"

    class Status(models.TextChoices):
        STARTING = "starting"
        RUNNING = "running"
        CATCHING_UP = "catching_up"
        PAUSED = "paused"
        STOPPED = "stopped"
        FAILED = "failed"
        DROPPED = "dropped"

    name = models.CharField(max_length=192)
    name_key = models.CharField(max_length=260, help_text="lower-case [db.]name, unique among live streams")
    db = models.CharField(max_length=64, blank=True, default="")
    key = models.CharField(max_length=64, unique=True)
    syntax = models.CharField(max_length=8, choices=Syntax.choices, default=Syntax.LEGACY)
    sql = models.TextField()
    spec = models.JSONField()
    compiled = models.JSONField(
        null=True,
        blank=True,
        help_text="the compiled form workers run (spark_workers/streams/stored.py); null: compiled at start",
    )
    desired_state = models.CharField(max_length=10, choices=Desired.choices, default=Desired.RUNNING)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.STARTING, db_index=True)
    start_version = models.BigIntegerField(help_text="source Delta version at CREATE STREAM")
    history_version = models.BigIntegerField(null=True, blank=True, help_text="FILL_HISTORY snapshot version")
    ignore_until_version = models.BigIntegerField(
        null=True, blank=True, help_text="RESUME ... IGNORE UNTREATED: skip changes up to it"
    )
    history_cancelled = models.JSONField(
        null=True,
        blank=True,
        help_text="the FILL_HISTORY catch-up was cancelled: {at, rows_done, rows_total, fraction, label} "
        "when it was (services/stream_control.stream_history_cancel); the rest of the snapshot is skipped",
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="streams"
    )
    worker = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_batch_id = models.BigIntegerField(null=True, blank=True)
    processed_version = models.BigIntegerField(
        null=True, blank=True, help_text="source Delta version the query has committed"
    )
    last_progress = models.JSONField(null=True, blank=True)
    spark_ui_url = models.CharField(max_length=256, blank=True, default="")
    rows_in = models.BigIntegerField(default=0)
    windows_out = models.BigIntegerField(default=0)
    notifications_sent = models.BigIntegerField(default=0)
    notifications_failed = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["name_key"], condition=~Q(status="dropped"), name="stream_live_name_unique"
            ),
            models.CheckConstraint(
                condition=Q(rows_in__gte=0) & Q(windows_out__gte=0), name="stream_counters_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.db + '.' if self.db else ''}{self.name} ({self.status})"

    @staticmethod
    def new_key() -> str:
        return secrets.token_hex(8)


class StreamRun(TimeStamped):
    """One attempt of a worker to run a stream's query (a start after create, resume or failure)."""

    class State(models.TextChoices):
        RUNNING = "running"
        STOPPED = "stopped"
        FAILED = "failed"

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="runs")
    worker = models.CharField(max_length=128, blank=True, default="")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING)
    error = models.TextField(blank=True, default="")
    restarts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.stream_id} ({self.state})"


class StreamProgress(models.Model):
    """Progress of one micro-batch (``spark_workers.runtime.sink.BatchReport``)."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="progress")
    batch_id = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    phase = models.CharField(max_length=8, default="live")
    input_rows = models.BigIntegerField(default=0)
    output_rows = models.BigIntegerField(default=0)
    removed_windows = models.BigIntegerField(default=0)
    rows_per_s = models.FloatField(default=0.0)
    duration_ms = models.FloatField(default=0.0)
    open_windows = models.BigIntegerField(default=0)
    state_bytes = models.BigIntegerField(default=0)
    watermark_ms = models.BigIntegerField(null=True, blank=True)
    max_event_ms = models.BigIntegerField(null=True, blank=True)
    notifications_sent = models.BigIntegerField(default=0)
    notifications_failed = models.BigIntegerField(default=0)
    expired_rows = models.BigIntegerField(default=0)
    recalculated = models.BigIntegerField(default=0)
    drops = models.JSONField(
        default=dict, blank=True, help_text="dropped-row counters and sample (BatchReport.drops)"
    )

    class Meta:
        ordering = ["stream", "id"]
        indexes = [models.Index(fields=["stream", "-id"], name="progress_stream_recent")]

    def __str__(self) -> str:
        return f"stream {self.stream_id} batch {self.batch_id}"


class Delivery(models.Model):
    """One attempt to deliver a notification message to one URL (the delivery log)."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="deliveries")
    created_at = models.DateTimeField(auto_now_add=True)
    url = models.CharField(max_length=1024)
    message_id = models.CharField(max_length=64)
    events = models.PositiveIntegerField(default=0)
    ok = models.BooleanField()
    latency_ms = models.FloatField(default=0.0)
    error = models.TextField(blank=True, default="")
    attempt = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["stream", "-id"], name="delivery_stream_recent")]

    def __str__(self) -> str:
        return f"{self.message_id} -> {self.url} ({'ok' if self.ok else 'failed'})"


class Inbox(TimeStamped):
    """A receiving endpoint ``/ws/notify/<name>?key=<key>`` for TDengine notification messages.

    Its owner and staff users see its notifications in the browser inbox.
    """

    name = models.SlugField(max_length=64, unique=True)
    key = models.CharField(max_length=64)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="inboxes"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def new_key() -> str:
        return secrets.token_urlsafe(24)


class Notification(models.Model):
    """One event received by an inbox, stored once (``dedupe_key``)."""

    inbox = models.ForeignKey(Inbox, on_delete=models.CASCADE, related_name="notifications")
    dedupe_key = models.CharField(max_length=64)
    message_id = models.CharField(max_length=128)
    stream_name = models.CharField(max_length=192, db_index=True)
    event_type = models.CharField(max_length=32, db_index=True)
    table_name = models.CharField(max_length=192, blank=True, default="")
    window_id = models.CharField(max_length=128, blank=True, default="")
    window_start = models.BigIntegerField(null=True, blank=True)
    window_end = models.BigIntegerField(null=True, blank=True)
    event_time = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField()
    acknowledged = models.BooleanField(default=False, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["inbox", "dedupe_key"], name="notification_once_per_inbox")
        ]

    def __str__(self) -> str:
        return f"{self.stream_name} {self.event_type} {self.window_start}"


class StreamDraft(TimeStamped):
    """A design being edited in the visual designer (docs/designer.md), not yet deployed.

    ``design`` is the design document (``spark_workers.streams.design``); ``stream`` is the deployed
    stream this draft edits, or None for a new stream.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="stream_drafts"
    )
    name = models.CharField(max_length=192)
    design = models.JSONField()
    stream = models.ForeignKey(
        Stream, null=True, blank=True, on_delete=models.SET_NULL, related_name="drafts"
    )

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"draft {self.name}"


class StreamVersion(models.Model):
    """One deployed version of a stream: its SQL and design, numbered from 1 per ``name_key``.

    Versions are kept by name so a stream's history survives a redeploy (DROP + CREATE).
    """

    name_key = models.CharField(max_length=260, db_index=True)
    number = models.PositiveIntegerField()
    stream = models.ForeignKey(
        Stream, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    sql = models.TextField()
    design = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    impact = models.JSONField(
        null=True, blank=True, help_text="what deploying this version did to the stream"
    )

    class Meta:
        ordering = ["name_key", "-number"]
        constraints = [models.UniqueConstraint(fields=["name_key", "number"], name="stream_version_once")]

    def __str__(self) -> str:
        return f"{self.name_key} v{self.number}"


class ImportJob(TimeStamped):
    """A file of rows being written into a table (CSV or JSON upload), with its progress."""

    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs")
    db = models.CharField(max_length=64)
    table = models.CharField(max_length=192)
    filename = models.CharField(max_length=256, blank=True, default="")
    state = models.CharField(max_length=8, choices=State.choices, default=State.RUNNING)
    rows_total = models.BigIntegerField(null=True, blank=True)
    rows_done = models.BigIntegerField(default=0)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"import {self.filename} -> {self.db}.{self.table} ({self.state})"


class RecalcJob(TimeStamped):
    """A RECALCULATE STREAM run in the background (issue 16, "progress you can trust"): its range,
    its progress (source rows done of total, rows/s, ETA) and whether it was asked to stop.
    ``services/recalc_jobs.py`` runs it; its output is committed at once at the end, or not at all."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"
        FAILED = "failed"

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="recalc_jobs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recalc_jobs")
    start = models.DateTimeField()
    end = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    rows_total = models.BigIntegerField(null=True, blank=True)
    rows_done = models.BigIntegerField(default=0)
    fraction = models.FloatField(default=0.0)
    rows_per_s = models.FloatField(null=True, blank=True)
    eta_s = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    windows = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"recalculation of stream {self.stream_id} ({self.state})"


class UserProfile(TimeStamped):
    """TDengine's attributes of a user (``CREATE USER ... SYSINFO {1|0} CREATEDB {1|0}``; TDengine
    SQL manual, "Users"). A user without a profile has TDengine's defaults: SYSINFO 1, CREATEDB 0.
    Superusers are Django's ``is_superuser``; ``ENABLE`` is Django's ``is_active``."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="td_profile")
    sysinfo = models.BooleanField(default=True, help_text="may view system information")
    createdb = models.BooleanField(default=False, help_text="may create databases")

    class Meta:
        ordering = ["user_id"]

    def __str__(self) -> str:
        return f"profile of {self.user_id} (sysinfo={int(self.sysinfo)}, createdb={int(self.createdb)})"


class Privilege(TimeStamped):
    """One level of a user's grants (``GRANT {ALL|READ|WRITE} ON db.* | db.tbl | *.* TO user``;
    TDengine SQL manual, "Permissions"): ``db`` is ``*`` for every database, ``table`` is empty for
    every table of ``db``. A row holds at least one privilege."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="td_privileges")
    db = models.CharField(max_length=64)
    table = models.CharField(max_length=192, blank=True, default="")
    read = models.BooleanField(default=False)
    write = models.BooleanField(default=False)

    class Meta:
        ordering = ["user_id", "db", "table"]
        constraints = [
            models.UniqueConstraint(fields=["user", "db", "table"], name="privilege_once_per_level"),
            models.CheckConstraint(condition=Q(read=True) | Q(write=True), name="privilege_not_empty"),
        ]

    def __str__(self) -> str:
        held = "all" if self.read and self.write else ("read" if self.read else "write")
        return f"{held} on {self.db}.{self.table or '*'} for {self.user_id}"


class ApiToken(TimeStamped):
    """An API token of a user (``Authorization: Token <key>``), stored as the SHA-256 of its key.

    The key is shown once, when the token is created (``POST /api/v1/auth/token/``,
    ``streams_app.services.api_tokens``); the database keeps ``digest`` (hex SHA-256 of the key,
    what authentication looks up) and ``prefix`` (the key's first 8 characters, to tell tokens
    apart). Every token of a user is deleted when their password changes (``streams_app.signals``).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True, help_text="hex SHA-256 of the key")
    prefix = models.CharField(max_length=8, help_text="first characters of the key")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(digest=""), name="api_token_digest_set"),
        ]

    def __str__(self) -> str:
        return f"token {self.prefix}… of user {self.user_id}"
