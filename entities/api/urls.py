from django.urls import path

from entities.api.views import (
    CrossGraphView,
    EntityViewSet,
    GraphAnalysisView,
    GraphBulkView,
    GraphExportView,
    MemoryGraphViewSet,
    RelationViewSet,
    TagDetailView,
    TagListView,
)

entity_collection = EntityViewSet.as_view({"get": "list", "post": "create"})
entity_detail = EntityViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "put": "update", "delete": "destroy"}
)
relation_collection = RelationViewSet.as_view({"get": "list", "post": "create"})
relation_detail = RelationViewSet.as_view({"get": "retrieve", "delete": "destroy"})

urlpatterns = [
    path("entities/", entity_collection, name="entity-list"),
    path("entities/<str:pk>/", entity_detail, name="entity-detail"),
    path("entities/<str:pk>/graph/", EntityViewSet.as_view({"get": "graph"}), name="entity-graph"),
    path(
        "entities/<str:pk>/memories/",
        EntityViewSet.as_view({"get": "memories"}),
        name="entity-memories",
    ),
    path("relations/", relation_collection, name="relation-list"),
    # before relations/<pk>/ would read "delete-by-name" as an id
    path(
        "relations/delete-by-name/",
        RelationViewSet.as_view({"post": "delete_by_name"}),
        name="relation-delete-by-name",
    ),
    path("relations/<str:pk>/", relation_detail, name="relation-detail"),
    path(
        "relations/<str:pk>/close/",
        RelationViewSet.as_view({"post": "close"}),
        name="relation-close",
    ),
    path("tags/", TagListView.as_view(), name="tag-list"),
    path("tags/<path:name>/", TagDetailView.as_view(), name="tag-detail"),
    path("graph/bulk/", GraphBulkView.as_view(), name="graph-bulk"),
    path("graph/analysis/", GraphAnalysisView.as_view(), name="graph-analysis"),
    path("graph/subgraph/", CrossGraphView.as_view(), name="graph-subgraph"),
    path("graph/export/", GraphExportView.as_view(), name="graph-export"),
    # a path, not ?format=, which DRF reserves for choosing a renderer
    path(
        "graph/export/graphml/",
        GraphExportView.as_view(graphml=True),
        name="graph-export-graphml",
    ),
    path(
        "memories/<str:memory_pk>/traverse/",
        MemoryGraphViewSet.as_view({"get": "traverse"}),
        name="memory-traverse",
    ),
    path(
        "memories/<str:memory_pk>/causal-chain/",
        MemoryGraphViewSet.as_view({"get": "causal_chain"}),
        name="memory-causal-chain",
    ),
    path(
        "memories/<str:memory_pk>/entities/",
        MemoryGraphViewSet.as_view({"get": "entities"}),
        name="memory-entities",
    ),
]
