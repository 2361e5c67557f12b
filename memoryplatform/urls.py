from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memoryplatform import sse
from memoryplatform.views import health

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health/", health, name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/v1/events/", sse.events, name="events"),
    path("api/v1/analytics/", include("analytics.api")),
    path("api/v1/", include("memories.api.urls")),
    path("api/v1/", include("entities.api.urls")),
]
