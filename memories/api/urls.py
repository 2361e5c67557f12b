from django.urls import path

from memories.api import episodes, prompts
from memories.api import intelligence as intel
from memories.api.search import MemorySearchView
from memories.api.views import MemoryLinkViewSet, MemoryViewSet, ResetView

memory_collection = MemoryViewSet.as_view(
    {"get": "list", "post": "create", "delete": "destroy_scope"}
)
memory_detail = MemoryViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "put": "update", "delete": "destroy"}
)
link_collection = MemoryLinkViewSet.as_view({"get": "list", "post": "create"})
link_detail = MemoryLinkViewSet.as_view({"delete": "destroy"})

urlpatterns = [
    path("memories/", memory_collection, name="memory-list"),
    # before memories/<pk>/, which would otherwise take "search" for an id
    path("memories/search/", MemorySearchView.as_view(), name="memory-search"),
    path("memories/bulk/", MemoryViewSet.as_view({"post": "bulk"}), name="memory-bulk"),
    # intelligence (memories/api/intelligence.py); collection routes before memories/<pk>/
    path("memories/add/", intel.AddView.as_view(), name="memory-add"),
    path("memories/consolidate/", intel.ConsolidateView.as_view(), name="memory-consolidate"),
    path("memories/decay/", intel.DecayRunView.as_view(), name="memory-decay-run"),
    path("memories/decay/pause/", intel.DecayPauseView.as_view(), name="memory-decay-pause"),
    path(
        "memories/decay/resume/",
        intel.DecayPauseView.as_view(resume=True),
        name="memory-decay-resume",
    ),
    path("memories/prune/", intel.PruneView.as_view(), name="memory-prune"),
    path("memories/<str:pk>/decay/", intel.DecayStatusView.as_view(), name="memory-decay"),
    path("memories/<str:pk>/preserve/", intel.PreserveView.as_view(), name="memory-preserve"),
    path("memories/<str:pk>/decompress/", intel.DecompressView.as_view(), name="memory-decompress"),
    path("memories/<str:pk>/utility/", intel.UtilityView.as_view(), name="memory-utility"),
    path("memories/<str:pk>/feedback/", intel.FeedbackView.as_view(), name="memory-feedback"),
    path("contradictions/", intel.ContradictionListView.as_view(), name="contradiction-list"),
    path(
        "contradictions/<str:pk>/",
        intel.ContradictionDetailView.as_view(),
        name="contradiction-detail",
    ),
    path(
        "contradictions/<str:pk>/resolve/",
        intel.ContradictionResolveView.as_view(),
        name="contradiction-resolve",
    ),
    path("session/reflect/", intel.ReflectView.as_view(), name="session-reflect"),
    path("session/context/", intel.ContextView.as_view(), name="session-context"),
    path("session/close/", intel.SessionCloseView.as_view(), name="session-close"),
    path("memories/<str:pk>/", memory_detail, name="memory-detail"),
    path(
        "memories/<str:pk>/history/",
        MemoryViewSet.as_view({"get": "history"}),
        name="memory-history",
    ),
    path(
        "memories/<str:pk>/restore/",
        MemoryViewSet.as_view({"post": "restore"}),
        name="memory-restore",
    ),
    path("memories/<str:memory_pk>/links/", link_collection, name="memory-links"),
    path("memories/<str:memory_pk>/links/<str:pk>/", link_detail, name="memory-link-detail"),
    path("reset/", ResetView.as_view(), name="reset"),
    path("episodes/", episodes.EpisodeView.as_view(), name="episode-list"),
    path("episodes/<str:pk>/", episodes.EpisodeDetailView.as_view(), name="episode-detail"),
    path("episodes/<str:pk>/close/", episodes.EpisodeCloseView.as_view(), name="episode-close"),
    path("project/prompts/", prompts.ProjectPromptsView.as_view(), name="project-prompts"),
    path(
        "project/prompts/rollback/",
        prompts.ProjectPromptRollbackView.as_view(),
        name="project-prompts-rollback",
    ),
]
