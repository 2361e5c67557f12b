"""Search endpoint: POST /memories/search/ (JSON body) and GET /memories/search/?q=..."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import MemoryFilterSerializer
from memories.api.views import filters_from
from memories.representations import ScoreSerializer, search_body, sources_body
from memories.selectors.search.dispatch import MAX_OFFSET, MODES
from memories.selectors.search.hybrid import FUSIONS
from memories.selectors.search.neighbours import MAX_WIDTH
from memories.selectors.search.sources import MEMORIES, requested_sources
from memories.selectors.search_types import SearchQuery
from memories.services.reading import memories_recall, memories_recall_across_sources
from platformcore.lib.fields import (
    CommaListField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
)
from tenants.views import ProjectScopedMixin


class SearchRequestSerializer(MemoryFilterSerializer):
    query = StrictCharField(required=False, max_length=2000, help_text="the search text")
    q = StrictCharField(required=False, max_length=2000, help_text="alias of query")
    mode = serializers.ChoiceField(choices=list(MODES), default="hybrid")
    memory_types = CommaListField(
        child=StrictCharField(), required=False, help_text="alias of memory_type"
    )
    types = CommaListField(
        child=StrictCharField(), required=False, help_text="alias of memory_type"
    )
    limit = serializers.IntegerField(min_value=1, required=False)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET, default=0)
    min_similarity = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    token_budget = serializers.IntegerField(min_value=1, required=False)
    fusion = serializers.ChoiceField(choices=FUSIONS, required=False)
    alpha = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    neighbours = serializers.IntegerField(
        min_value=0,
        max_value=MAX_WIDTH,
        required=False,
        help_text="hybrid: memories on each side of the best hits in their run that come in "
        "with a share of the hit's relevance (0 switches it off; default "
        "MEMORY_SEARCH_NEIGHBOURS)",
    )
    neighbour_weight = StrictFloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        help_text="hybrid: the share of a hit's relevance its adjacent memory gets",
    )
    date_weight = StrictFloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        help_text="hybrid: added to memories dated when the question names (0 switches it off)",
    )
    rerank = StrictBooleanField(
        required=False,
        help_text="hybrid: re-order the best hits with the configured cross-encoder "
        "(MEMORY_SEARCH_RERANKER; default: when one is configured)",
    )
    sources = CommaListField(
        child=StrictCharField(),
        required=False,
        help_text="what to search: memories (default), documents (uploaded documents' passages)",
    )
    include_documents = StrictBooleanField(
        required=False, help_text="also search documents (as sources=memories,documents)"
    )
    session_id = StrictCharField(
        required=False,
        max_length=255,
        help_text="the caller's session (run): its recent short-term memories rank a little "
        "higher, other sessions' working memory is left out",
    )

    def validate_limit(self, value: int) -> int:
        if value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        text = attrs.get("query") or attrs.get("q")
        if not text or not text.strip():
            raise serializers.ValidationError({"query": ["a non-empty query is required"]})
        attrs["query"] = text
        for alias in ("memory_types", "types"):
            if attrs.get(alias):
                try:
                    attrs["memory_type"] = self.fields["memory_type"].run_validation(attrs[alias])
                except serializers.ValidationError as exc:
                    raise serializers.ValidationError({alias: exc.detail}) from exc
        return attrs


# the request fields passed to the search as its options
SEARCH_OPTIONS = (
    "fusion",
    "alpha",
    "session_id",
    "neighbours",
    "neighbour_weight",
    "date_weight",
    "rerank",
)


class SearchResponseSerializer(serializers.Serializer):
    results = ScoreSerializer(many=True)
    count = serializers.IntegerField()
    mode = serializers.CharField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    token_budget = serializers.IntegerField(allow_null=True)
    tokens = serializers.IntegerField()
    budget_exhausted = serializers.BooleanField()


def search_query_from(data: dict[str, Any]) -> SearchQuery:
    options = {name: data[name] for name in SEARCH_OPTIONS if name in data}
    filters = filters_from(data)
    filters.session_id = data.get("session_id") or None
    return SearchQuery(
        text=data["query"],
        mode=data["mode"],
        filters=filters,
        limit=data.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE,
        offset=data["offset"],
        min_similarity=data.get("min_similarity"),
        token_budget=data.get("token_budget"),
        options=options,
    )


class MemorySearchView(ProjectScopedMixin, APIView):
    """Search memories by keywords, meaning (semantic) or both (hybrid, the default)."""

    required_scopes = {None: "read"}  # POST carries a body but only reads

    @extend_schema(request=SearchRequestSerializer, responses=SearchResponseSerializer)
    def post(self, request: Request) -> Response:
        return self._search(request.data)

    @extend_schema(parameters=[SearchRequestSerializer], responses=SearchResponseSerializer)
    def get(self, request: Request) -> Response:
        return self._search(request.query_params)

    def _search(self, data: Any) -> Response:
        validated = self.validated(SearchRequestSerializer, data)
        query = search_query_from(validated)
        sources = requested_sources(validated.get("sources"), validated.get("include_documents"))
        if sources == [MEMORIES]:
            return Response(search_body(memories_recall(project=self.project, query=query)))
        result = memories_recall_across_sources(project=self.project, query=query, sources=sources)
        return Response(sources_body(project=self.project, query=query, result=result))
