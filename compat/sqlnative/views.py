"""The SQL-native server's memory endpoints: each validates that server's input, calls the
platform's service or selector and answers in its shape (a memory object; arrays for lists
and searches). Entities, relations and analytics are the platform's own views, mounted at
that server's paths (urls.py)."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from compat.sqlnative.serializers import (
    ConsolidateSerializer,
    MemoryFiltersSerializer,
    SearchSerializer,
    filters_of,
)
from memories.api.serializers import MemoryCreateSerializer, MemoryUpdateSerializer
from memories.representations import MemorySerializer, memory_detail_body, search_body
from memories.selectors.memories import memory_list
from memories.selectors.search_types import SearchQuery
from memories.services.maintenance import memories_maintain
from memories.services.memories import MemoryInput, memory_create, memory_delete
from memories.services.reading import memories_recall, memory_read
from memories.services.supersede import memory_update_superseding
from tenants.namespaces import SHARED_AGENT
from tenants.views import ProjectScopedMixin

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
# the consolidation report's fields, as the server's consolidate_memories returns them
REPORT_FIELDS = ("clusters_found", "memories_merged", "memories_deleted", "dry_run", "clusters")


class SqlNativeView(ProjectScopedMixin, APIView):
    """A SQL-native endpoint: the caller's project from its key. Left out of the OpenAPI
    schema, which describes the platform's own API (docs/compat-sqlnative.md lists these)."""

    schema = None


class MemoryCollectionView(SqlNativeView):
    def get(self, request: Request) -> Response:
        """`GET /api/memories`: the memories matching §5.6's filters, newest first."""
        data = self.validated(MemoryFiltersSerializer, request.query_params)
        page = memory_list(
            project=self.project,
            filters=filters_of(data),
            limit=data["limit"],
            offset=data["offset"],
        )
        return Response(MemorySerializer(page.results, many=True).data)

    def post(self, request: Request) -> Response:
        """`POST /api/memories`, store_memory's fields; a write naming no user, agent or run
        goes to the shared `default` agent, as the server (which has no scopes) stores it."""
        data = self.validated(MemoryCreateSerializer, request.data)
        if not any(data.get(name) for name in SCOPE_FIELDS):
            data["agent_id"] = SHARED_AGENT
        result = memory_create(project=self.project, data=MemoryInput(**data), actor=self.actor)
        body = MemorySerializer(result.memory).data | {"created": result.created}
        return Response(body, status=status.HTTP_201_CREATED if result.created else 200)


class MemoryDetailView(SqlNativeView):
    def get(self, request: Request, pk: str) -> Response:
        memory = memory_read(project=self.project, memory_id=pk)
        return Response(memory_detail_body(project=self.project, memory=memory))

    def put(self, request: Request, pk: str) -> Response:
        """New content re-embeds the memory and keeps the old one in its history."""
        changes = self.validated(MemoryUpdateSerializer, request.data)
        supersedes = changes.pop("supersedes", [])
        if "text" in changes:
            changes.setdefault("content", changes.pop("text"))
        memory = memory_update_superseding(
            project=self.project,
            memory_id=pk,
            changes=changes,
            supersedes=supersedes,
            actor=self.actor,
        )
        return Response(MemorySerializer(memory).data)

    patch = put

    def delete(self, request: Request, pk: str) -> Response:
        memory_delete(project=self.project, memory_id=pk, actor=self.actor)
        return Response({"id": pk, "deleted": True})


class MemorySearchView(SqlNativeView):
    throttle_scope = "search"

    def get(self, request: Request) -> Response:
        """`GET /api/memories/search?q=...&mode=&types=&tags=&limit=`: the matching memories,
        best first, each with its `score` (relevance × effective confidence)."""
        data = self.validated(SearchSerializer, request.query_params)
        query = SearchQuery(
            text=data["q"],
            mode=data["mode"],
            filters=filters_of(data),
            limit=data["limit"],
            offset=data["offset"],
        )
        result = memories_recall(project=self.project, query=query)
        return Response(search_body(result)["results"])


class ConsolidateView(SqlNativeView):
    throttle_scope = "admin"

    def post(self, request: Request) -> Response:
        """`POST /api/memories/consolidate`: clusters merged (only: decay and pruning keep
        their own schedules); `dry_run` previews."""
        data = self.validated(ConsolidateSerializer, request.data or {})
        body = memories_maintain(project=self.project, actor=self.actor, stages=["merge"], **data)
        return Response(_report(body))


def _report(body: dict[str, Any]) -> dict[str, Any]:
    return {name: body[name] for name in REPORT_FIELDS if name in body}
