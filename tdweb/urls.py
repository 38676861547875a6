"""URL routes: pages, sign-in, TDengine REST, the API and its schema."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from streams_app import views
from streams_app.api.influxdb import influxdb_write
from streams_app.api.rest_sql import rest_sql

urlpatterns = [
    path("", views.streams_page, name="streams"),
    path("streams/new/", views.create_page, name="stream-create"),
    path("streams/<int:stream_id>/", views.stream_page, name="stream"),
    path("designer/", views.designer_page, name="designer"),
    path("designer/<int:draft_id>/", views.designer_page, name="designer-draft"),
    path("dashboard/", views.dashboard_page, name="dashboard"),
    path("tables/", views.tables_page, name="tables"),
    path("inbox/", views.inbox_page, name="inbox"),
    path(
        "accounts/login/", auth_views.LoginView.as_view(template_name="streams_app/login.html"), name="login"
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("rest/sql", rest_sql),
    path("rest/sql/", rest_sql),
    path("rest/sql/<str:db>", rest_sql),
    path("rest/sql/<str:db>/", rest_sql),
    path("influxdb/v1/write", influxdb_write),
    path("api/v1/", include("streams_app.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("admin/", admin.site.urls),
    path("favicon.ico", RedirectView.as_view(url=static("streams_app/favicon.svg"), permanent=True)),
]

# Django's error pages as JSON on /rest/sql and /api/ (streams_app.api.errors)
handler400 = "streams_app.api.errors.bad_request"
handler403 = "streams_app.api.errors.permission_denied"
handler404 = "streams_app.api.errors.page_not_found"
handler500 = "streams_app.api.errors.server_error"
