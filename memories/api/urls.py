from django.urls import path

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
]
