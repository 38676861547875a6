"""Django admin for the metadata models."""

from django.contrib import admin

from streams_app.models import Delivery, Inbox, Notification, Stream, StreamProgress, StreamRun


@admin.register(Stream)
class StreamAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "db",
        "status",
        "desired_state",
        "worker",
        "heartbeat_at",
        "rows_in",
        "windows_out",
    )
    list_filter = ("status", "syntax")
    search_fields = ("name", "sql")


@admin.register(StreamRun)
class StreamRunAdmin(admin.ModelAdmin):
    list_display = ("stream", "worker", "started_at", "ended_at", "state", "restarts")


@admin.register(StreamProgress)
class StreamProgressAdmin(admin.ModelAdmin):
    list_display = ("stream", "batch_id", "phase", "input_rows", "output_rows", "duration_ms", "created_at")


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("stream", "url", "message_id", "ok", "latency_ms", "attempt", "created_at")


@admin.register(Inbox)
class InboxAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "created_at")


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("stream_name", "event_type", "table_name", "window_start", "acknowledged", "created_at")
    list_filter = ("event_type", "acknowledged")
