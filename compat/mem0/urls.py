"""mem0's paths, mounted at the root: its platform's (as `mem0ai` 2.2's clients call them),
the `/v1/` wrapper of its open-source `Memory`, and its self-hosted server's (no trailing
slash; one is accepted)."""

from typing import Any

from django.urls import path, re_path

from compat.mem0.views import entities, extras, memories, oss
from compat.mem0.views.extras import NotSupportedView

ORGS_INSTEAD = "Projects and keys are managed with `manage.py create_project` / `create_api_key`."
WEBHOOKS_INSTEAD = "Subscribe to the live feed instead: ws://<host>/ws/events/ or /api/v1/events/."
SUMMARY_INSTEAD = "Search or list the memories instead (counts: /api/v1/analytics/overview/)."
CONFIGURE_INSTEAD = (
    "The server is configured by its environment (MEMORY_LLM_*, MEMORY_EMBEDDING_*; README, "
    "Configuration); in-process, Memory.from_config({...})."
)


def not_supported(feature: str, instead: str = "") -> Any:
    return NotSupportedView.as_view(feature=feature, instead=instead)


urlpatterns = [
    path("v1/ping/", extras.PingView.as_view(), name="mem0-ping"),
    path("v3/memories/add/", memories.AddView.as_view(), name="mem0-add"),
    path("v3/memories/search/", memories.SearchView.as_view(), name="mem0-search"),
    path("v3/memories/", memories.MemoryListView.as_view(), name="mem0-list"),
    path("v1/memories/", oss.V1MemoriesView.as_view(), name="mem0-memories"),
    path("v1/memories/search/", oss.V1SearchView.as_view(), name="oss-search"),
    path("v1/memories/<str:memory_id>/", memories.MemoryDetailView.as_view(), name="mem0-memory"),
    path(
        "v1/memories/<str:memory_id>/history/",
        memories.HistoryView.as_view(),
        name="mem0-memory-history",
    ),
    path("v1/batch/", memories.BatchView.as_view(), name="mem0-batch"),
    path("v1/entities/", oss.V1EntitiesView.as_view(), name="mem0-entities"),
    path(
        "v1/entities/<path:name>/relations/",
        oss.V1EntityRelationsView.as_view(),
        name="oss-entity-relations",
    ),
    path("v1/reset/", oss.ResetView.as_view(), name="oss-reset"),
    path(
        "v2/entities/<str:kind>/<path:name>/profile/",
        not_supported("Profiles"),
        name="mem0-profile",
    ),
    path(
        "v2/entities/<str:kind>/<path:name>/",
        entities.EntityDetailView.as_view(),
        name="mem0-entity",
    ),
    path("v1/feedback/", extras.FeedbackView.as_view(), name="mem0-feedback"),
    path("v1/exports/", extras.ExportCreateView.as_view(), name="mem0-export-create"),
    path("v1/exports/get/", extras.ExportGetView.as_view(), name="mem0-export-get"),
    path("v1/summary/", not_supported("Summaries", SUMMARY_INSTEAD), name="mem0-summary"),
    path("v2/profiles/<path:rest>", not_supported("Profiles"), name="mem0-profiles"),
    path("api/v1/orgs/<path:rest>", not_supported("Organisations", ORGS_INSTEAD)),
    path("api/v1/webhooks/<path:rest>", not_supported("Webhooks", WEBHOOKS_INSTEAD)),
    # mem0's self-hosted server (its server/main.py)
    re_path(r"^memories/?$", oss.ServerMemoriesView.as_view(), name="mem0-server-memories"),
    re_path(
        r"^memories/(?P<memory_id>[^/]+)/?$",
        oss.ServerMemoryView.as_view(),
        name="mem0-server-memory",
    ),
    re_path(
        r"^memories/(?P<memory_id>[^/]+)/history/?$",
        oss.ServerHistoryView.as_view(),
        name="mem0-server-history",
    ),
    re_path(r"^search/?$", oss.ServerSearchView.as_view(), name="mem0-server-search"),
    re_path(r"^reset/?$", oss.ResetView.as_view(), name="mem0-server-reset"),
    re_path(
        r"^configure(?:/providers)?/?$",
        not_supported("Configuring the server over HTTP", CONFIGURE_INSTEAD),
        name="mem0-server-configure",
    ),
]
