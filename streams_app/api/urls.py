"""``/api/v1/`` routes."""

from django.urls import include, path

from streams_app.api import designer, v1

urlpatterns = [
    path("", include(designer.urlpatterns)),
    path("me/", v1.MeApi.as_view(), name="api-me"),
    path("auth/token/", v1.AuthTokenApi.as_view(), name="api-auth-token"),
    path("dashboard/", v1.DashboardApi.as_view(), name="api-dashboard"),
    path("streams/", v1.StreamListApi.as_view(), name="api-streams"),
    path("streams/<int:stream_id>/", v1.StreamDetailApi.as_view(), name="api-stream"),
    path("streams/<int:stream_id>/actions/", v1.StreamActionApi.as_view(), name="api-stream-actions"),
    path("streams/<int:stream_id>/progress/", v1.StreamProgressApi.as_view(), name="api-stream-progress"),
    path(
        "streams/<int:stream_id>/deliveries/", v1.StreamDeliveriesApi.as_view(), name="api-stream-deliveries"
    ),
    path("streams/<int:stream_id>/runs/", v1.StreamRunsApi.as_view(), name="api-stream-runs"),
    path("sql/", v1.SqlExecuteApi.as_view(), name="api-sql"),
    path("sql/validate/", v1.SqlValidateApi.as_view(), name="api-sql-validate"),
    path("databases/", v1.DatabaseListApi.as_view(), name="api-databases"),
    path("databases/<str:db>/tables/", v1.TableListApi.as_view(), name="api-tables"),
    path("databases/<str:db>/tables/<str:name>/", v1.TableDetailApi.as_view(), name="api-table"),
    path("databases/<str:db>/tables/<str:name>/rows/", v1.TableRowsApi.as_view(), name="api-table-rows"),
    path("imports/", v1.ImportListApi.as_view(), name="api-imports"),
    path("imports/<int:import_id>/", v1.ImportDetailApi.as_view(), name="api-import"),
    path("notifications/", v1.NotificationListApi.as_view(), name="api-notifications"),
    path("notifications/ack-all/", v1.NotificationAckAllApi.as_view(), name="api-notifications-ack-all"),
    path("notifications/unread-count/", v1.NotificationUnreadApi.as_view(), name="api-notifications-unread"),
    path(
        "notifications/<int:notification_id>/ack/",
        v1.NotificationAckApi.as_view(),
        name="api-notification-ack",
    ),
]
