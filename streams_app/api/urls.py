"""``/api/v1/`` routes, by resource module (docs/architecture.md, "streams_app: the REST API")."""

from django.urls import include, path

from streams_app.api import auth, dashboard, designer, diagnosis, notifications, sql, streams, tables

urlpatterns = [
    path("", include(designer.urlpatterns)),
    path("me/", auth.MeApi.as_view(), name="api-me"),
    path("auth/token/", auth.AuthTokenApi.as_view(), name="api-auth-token"),
    path("dashboard/", dashboard.DashboardApi.as_view(), name="api-dashboard"),
    path("dashboard/series/", dashboard.DashboardSeriesApi.as_view(), name="api-dashboard-series"),
    path("streams/", streams.StreamListApi.as_view(), name="api-streams"),
    path("streams/<int:stream_id>/", streams.StreamDetailApi.as_view(), name="api-stream"),
    path("streams/<int:stream_id>/actions/", streams.StreamActionApi.as_view(), name="api-stream-actions"),
    path(
        "streams/<int:stream_id>/recalculate/diff/",
        streams.StreamRecalcDiffApi.as_view(),
        name="api-stream-recalc-diff",
    ),
    path(
        "streams/<int:stream_id>/progress/", streams.StreamProgressApi.as_view(), name="api-stream-progress"
    ),
    path(
        "streams/<int:stream_id>/deliveries/",
        streams.StreamDeliveriesApi.as_view(),
        name="api-stream-deliveries",
    ),
    path("streams/<int:stream_id>/runs/", streams.StreamRunsApi.as_view(), name="api-stream-runs"),
    path(
        "streams/<int:stream_id>/diagnosis/",
        diagnosis.StreamDiagnosisApi.as_view(),
        name="api-stream-diagnosis",
    ),
    path(
        "streams/<int:stream_id>/sql/reveal/",
        streams.StreamSqlRevealApi.as_view(),
        name="api-stream-sql-reveal",
    ),
    path("sql/", sql.SqlExecuteApi.as_view(), name="api-sql"),
    path("sql/validate/", sql.SqlValidateApi.as_view(), name="api-sql-validate"),
    path("databases/", tables.DatabaseListApi.as_view(), name="api-databases"),
    path("databases/<str:db>/tables/", tables.TableListApi.as_view(), name="api-tables"),
    path("databases/<str:db>/tables/<str:name>/", tables.TableDetailApi.as_view(), name="api-table"),
    path("databases/<str:db>/tables/<str:name>/rows/", tables.TableRowsApi.as_view(), name="api-table-rows"),
    path("imports/", tables.ImportListApi.as_view(), name="api-imports"),
    path("imports/<int:import_id>/", tables.ImportDetailApi.as_view(), name="api-import"),
    path("notifications/", notifications.NotificationListApi.as_view(), name="api-notifications"),
    path(
        "notifications/groups/",
        notifications.NotificationGroupListApi.as_view(),
        name="api-notifications-groups",
    ),
    path(
        "notifications/ack-all/",
        notifications.NotificationAckAllApi.as_view(),
        name="api-notifications-ack-all",
    ),
    path(
        "notifications/unread-count/",
        notifications.NotificationUnreadApi.as_view(),
        name="api-notifications-unread",
    ),
    path(
        "notifications/<int:notification_id>/ack/",
        notifications.NotificationAckApi.as_view(),
        name="api-notification-ack",
    ),
]
