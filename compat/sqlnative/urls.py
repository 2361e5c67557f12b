"""The SQL-native server's paths (its clients call them without a trailing slash; one is
accepted too). Its event stream, `/api/events`, is wired by the composition root."""

from __future__ import annotations

from django.urls import re_path

from analytics import api as analytics
from compat.sqlnative import views
from entities.api.urls import entity_collection, entity_detail, relation_collection
from entities.api.views import EntityViewSet, RelationViewSet

relation_detail = RelationViewSet.as_view({"get": "retrieve", "delete": "destroy"})

urlpatterns = [
    re_path(r"^api/memories/?$", views.MemoryCollectionView.as_view(), name="sqlnative-memories"),
    re_path(
        r"^api/memories/search/?$",
        views.MemorySearchView.as_view(),
        name="sqlnative-memory-search",
    ),
    re_path(
        r"^api/memories/consolidate/?$",
        views.ConsolidateView.as_view(),
        name="sqlnative-memory-consolidate",
    ),
    re_path(
        r"^api/memories/(?P<pk>[^/]+)/?$",
        views.MemoryDetailView.as_view(),
        name="sqlnative-memory",
    ),
    re_path(r"^api/entities/?$", entity_collection, name="sqlnative-entities"),
    re_path(r"^api/entities/(?P<pk>[^/]+)/?$", entity_detail, name="sqlnative-entity"),
    re_path(
        r"^api/entities/(?P<pk>[^/]+)/graph/?$",
        EntityViewSet.as_view({"get": "graph"}),
        name="sqlnative-entity-graph",
    ),
    re_path(
        r"^api/entities/(?P<pk>[^/]+)/memories/?$",
        EntityViewSet.as_view({"get": "memories"}),
        name="sqlnative-entity-memories",
    ),
    re_path(r"^api/relations/?$", relation_collection, name="sqlnative-relations"),
    re_path(r"^api/relations/(?P<pk>[^/]+)/?$", relation_detail, name="sqlnative-relation"),
    re_path(
        r"^api/analytics/overview/?$",
        analytics.OverviewView.as_view(),
        name="sqlnative-analytics-overview",
    ),
    re_path(
        r"^api/analytics/growth/?$",
        analytics.GrowthView.as_view(),
        name="sqlnative-analytics-growth",
    ),
    re_path(
        r"^api/analytics/types/?$", analytics.TypesView.as_view(), name="sqlnative-analytics-types"
    ),
    re_path(
        r"^api/analytics/tags/?$", analytics.TagsView.as_view(), name="sqlnative-analytics-tags"
    ),
    re_path(
        r"^api/analytics/confidence/?$",
        analytics.ConfidenceView.as_view(),
        name="sqlnative-analytics-confidence",
    ),
]
