"""Analytics endpoints: overview, growth, types and states, tags, confidence, search
statistics, relations, tool feedback."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analytics.selectors import (
    GROWTH_INTERVALS,
    confidence_histogram,
    memory_growth,
    memory_stats,
    relation_distribution,
    search_statistics,
    tag_frequency,
    tool_feedback_report,
)
from tenants.views import ProjectScopedMixin


class GrowthQuery(serializers.Serializer):
    interval = serializers.ChoiceField(choices=GROWTH_INTERVALS, default="day")
    days = serializers.IntegerField(min_value=1, max_value=3650, default=30)


class TagsQuery(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=500, default=50)


class ConfidenceQuery(serializers.Serializer):
    buckets = serializers.IntegerField(min_value=1, max_value=100, default=10)


class DaysQuery(serializers.Serializer):
    days = serializers.IntegerField(min_value=1, max_value=366, default=30)


class OverviewView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict}, description="Counts and averages for the project.")
    def get(self, request: Request) -> Response:
        return Response(memory_stats(project=self.project))


class GrowthView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[GrowthQuery], responses={200: dict})
    def get(self, request: Request) -> Response:
        query = self.validated(GrowthQuery, request.query_params)
        return Response(
            {"interval": query["interval"], "results": memory_growth(project=self.project, **query)}
        )


class TypesView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request) -> Response:
        stats = memory_stats(project=self.project)
        return Response(
            {"by_type": stats["memories_by_type"], "by_state": stats["memories_by_state"]}
        )


class TagsView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[TagsQuery], responses={200: dict})
    def get(self, request: Request) -> Response:
        query = self.validated(TagsQuery, request.query_params)
        return Response({"results": tag_frequency(project=self.project, **query)})


class ConfidenceView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[ConfidenceQuery], responses={200: dict})
    def get(self, request: Request) -> Response:
        query = self.validated(ConfidenceQuery, request.query_params)
        return Response({"results": confidence_histogram(project=self.project, **query)})


class SearchStatsView(ProjectScopedMixin, APIView):
    @extend_schema(
        parameters=[DaysQuery],
        responses={200: dict},
        description="Searches per day, empty-result rate and latency percentiles (ms), "
        "overall, per mode and per day (UTC).",
    )
    def get(self, request: Request) -> Response:
        query = self.validated(DaysQuery, request.query_params)
        return Response(search_statistics(project=self.project, **query))


class RelationsView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict}, description="Relations by type, open and closed.")
    def get(self, request: Request) -> Response:
        return Response(relation_distribution(project=self.project))


class FeedbackView(ProjectScopedMixin, APIView):
    @extend_schema(
        parameters=[DaysQuery],
        responses={200: dict},
        description="Tool feedback per tool: reports, relevant and sufficient rates.",
    )
    def get(self, request: Request) -> Response:
        query = self.validated(DaysQuery, request.query_params)
        return Response(tool_feedback_report(project=self.project, **query))


urlpatterns = [
    path("overview/", OverviewView.as_view(), name="analytics-overview"),
    path("growth/", GrowthView.as_view(), name="analytics-growth"),
    path("types/", TypesView.as_view(), name="analytics-types"),
    path("tags/", TagsView.as_view(), name="analytics-tags"),
    path("confidence/", ConfidenceView.as_view(), name="analytics-confidence"),
    path("search/", SearchStatsView.as_view(), name="analytics-search"),
    path("relations/", RelationsView.as_view(), name="analytics-relations"),
    path("feedback/", FeedbackView.as_view(), name="analytics-feedback"),
]
