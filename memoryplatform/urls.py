from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from memoryplatform import sse
from memoryplatform.views import liveness, metrics_view, readiness

handler400 = "memoryplatform.views.bad_request"  # Django's own 400s as JSON errors

urlpatterns = [
    path("admin/", admin.site.urls),
    # probes and metrics answer with or without a trailing slash, never with a redirect
    re_path(r"^health/?$", readiness, name="health"),
    re_path(r"^health/ready/?$", readiness, name="health-ready"),
    re_path(r"^health/live/?$", liveness, name="health-live"),
    re_path(r"^metrics/?$", metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    path("api/v1/events/", sse.events, name="events"),
    path("api/v1/events/schema/", sse.events_schema, name="events-schema"),
    path("api/v1/analytics/", include("analytics.api")),
    path("api/v1/", include("memories.api.urls")),
    path("api/v1/", include("entities.api.urls")),
    path("api/v1/", include("documents.api.urls")),
    path("api/v1/", include("portability.api")),
    path("", include("tenants.oauth.urls")),  # OAuth for MCP clients, /.well-known/
    path("", include("compat.urls")),  # mem0's client paths (/v1/, /v2/, /v3/): compat/mem0
    # the SQL-native entity memory server's event stream (registered by compat/sqlnative)
    re_path(r"^api/events/?$", sse.feed_view("sqlnative"), name="sqlnative-events"),
]
