"""REST endpoints for memories: thin layers over services and selectors."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import (
    DeletedCountSerializer,
    HistorySerializer,
    LinkCreateSerializer,
    LinkSerializer,
    MemoryBulkCreatedSerializer,
    MemoryBulkCreateSerializer,
    MemoryCreatedSerializer,
    MemoryCreateSerializer,
    MemoryListQuerySerializer,
    MemoryPageSerializer,
    MemorySerializer,
    MemoryUpdateSerializer,
    ScopeSerializer,
)
from memories.memory_scope import Scope
from memories.representations import memory_detail_body
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memory_get, memory_history, memory_links, memory_list
from memories.services.bulk import memories_create_bulk
from memories.services.links import memory_link_create, memory_link_delete
from memories.services.memories import (
    MemoryInput,
    memories_delete_scope,
    memory_create,
    memory_delete,
    memory_restore,
)
from memories.services.reading import memory_read
from memories.services.reset import project_reset
from memories.services.supersede import memory_update_superseding
from platformcore.lib.schema import error_response, path_ids
from tenants.views import ProjectScopedMixin

FILTER_FIELDS = {
    "user_id": "user_id",
    "agent_id": "agent_id",
    "run_id": "run_id",
    "memory_type": "memory_types",
    "tags": "tags",
    "source": "source",
    "state": "states",
    "created_after": "created_after",
    "created_before": "created_before",
    "min_confidence": "min_confidence",
    "pinned": "pinned",
    "entity_ids": "entity_ids",
    "entities": "entities",
    "filters": "expression",
    "layer": "layers",
    "episode_id": "episode_id",
}


def filters_from(query: dict[str, Any]) -> MemoryFilters:
    return MemoryFilters(
        **{target: query[name] for name, target in FILTER_FIELDS.items() if name in query}
    )


_MEMORY_UPDATED = {
    200: MemorySerializer,
    409: error_response("Another memory in this scope has this content."),
}


@path_ids(id="uuid")
class MemoryViewSet(ProjectScopedMixin, viewsets.ViewSet):
    lookup_value_regex = "[^/]+"

    @extend_schema(parameters=[MemoryListQuerySerializer], responses=MemoryPageSerializer)
    def list(self, request: Request) -> Response:
        query = self.validated(MemoryListQuerySerializer, request.query_params)
        page = memory_list(
            project=self.project,
            filters=filters_from(query),
            limit=query.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE,
            offset=query["offset"],
            include_deleted=self._include_deleted(query),
        )
        return self.page_response(page, MemorySerializer)

    def _include_deleted(self, query: dict[str, Any]) -> bool:
        if query.get("include_deleted") and not self.request.auth.has_scope("admin"):  # type: ignore[union-attr]
            raise PermissionDenied("include_deleted needs an API key with the 'admin' scope.")
        return bool(query.get("include_deleted"))

    @extend_schema(
        request=MemoryCreateSerializer,
        responses={201: MemoryCreatedSerializer, 200: MemoryCreatedSerializer},
        description="Store one memory. Exact duplicate content in the same scope returns the "
        "existing memory with `created: false` and status 200.",
    )
    def create(self, request: Request) -> Response:
        data = self.validated(MemoryCreateSerializer, request.data)
        result = memory_create(project=self.project, data=MemoryInput(**data), actor=self.actor)
        body = MemoryCreatedSerializer(result.memory, context={"created": result.created}).data
        return Response(
            body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )

    @extend_schema(
        request=MemoryBulkCreateSerializer,
        responses={201: MemoryBulkCreatedSerializer, 200: MemoryBulkCreatedSerializer},
        description="Store up to 1,000 memories in one transaction (all or nothing on invalid "
        "input; errors name `memories.<i>.<field>`). Each result is the stored memory with "
        "`created`; exact duplicates and near-duplicates return the memory they matched "
        "(near-duplicates only with `near_duplicates: inline`, the default).",
    )
    def bulk(self, request: Request) -> Response:
        data = self.validated(MemoryBulkCreateSerializer, request.data)
        items = [MemoryInput(**item) for item in data["memories"]]
        results = memories_create_bulk(
            project=self.project,
            items=items,
            actor=self.actor,
            near_duplicates=data.get("near_duplicates"),
            vector_index=data.get("vector_index"),
        )
        created = sum(result.created for result in results)
        body = {
            "results": [
                MemoryCreatedSerializer(r.memory, context={"created": r.created}).data
                for r in results
            ],
            "created": created,
            "existing": len(results) - created,
        }
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses=MemorySerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        if request.method != "GET":  # HEAD: not a read of the memory
            return Response(MemorySerializer(memory_get(project=self.project, memory_id=pk)).data)
        memory = memory_read(project=self.project, memory_id=pk)
        return Response(memory_detail_body(project=self.project, memory=memory))

    @extend_schema(request=MemoryUpdateSerializer, responses=_MEMORY_UPDATED)
    def partial_update(self, request: Request, pk: str) -> Response:
        changes = self.validated(MemoryUpdateSerializer, request.data)
        if "text" in changes:  # mem0 clients send {"text": ...}
            text = changes.pop("text")
            changes.setdefault("content", text)
        supersedes = changes.pop("supersedes", [])
        memory_update_superseding(
            project=self.project,
            memory_id=pk,
            changes=changes,
            supersedes=supersedes,
            actor=self.actor,
        )
        return self.retrieve(request, pk)

    @extend_schema(request=MemoryUpdateSerializer, responses=_MEMORY_UPDATED)
    def update(self, request: Request, pk: str) -> Response:
        return self.partial_update(request, pk)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        memory_delete(project=self.project, memory_id=pk, actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="v1_memories_destroy_scope",
        parameters=[ScopeSerializer],
        responses={200: DeletedCountSerializer},
    )
    def destroy_scope(self, request: Request) -> Response:
        scope = Scope.of(self.validated(ScopeSerializer, request.query_params), required=False)
        deleted = memories_delete_scope(project=self.project, scope=scope, actor=self.actor)
        return Response({"deleted": deleted})

    @extend_schema(responses=HistorySerializer(many=True))
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        entries = memory_history(project=self.project, memory_id=pk)
        return Response(HistorySerializer(entries, many=True).data)

    @extend_schema(
        request=None,
        responses={
            200: MemorySerializer,
            409: error_response("A live memory with the same content exists in this scope."),
        },
    )
    @action(detail=True, methods=["post"])
    def restore(self, request: Request, pk: str) -> Response:
        memory_restore(project=self.project, memory_id=pk, actor=self.actor)
        return self.retrieve(request, pk)


@path_ids(memory_pk="uuid", id="uuid")
class MemoryLinkViewSet(ProjectScopedMixin, viewsets.ViewSet):
    @extend_schema(responses=LinkSerializer(many=True))
    def list(self, request: Request, memory_pk: str) -> Response:
        links = memory_links(project=self.project, memory_id=memory_pk)
        return Response(LinkSerializer(links, many=True).data)

    @extend_schema(
        request=LinkCreateSerializer, responses={201: LinkSerializer, 200: LinkSerializer}
    )
    def create(self, request: Request, memory_pk: str) -> Response:
        data = self.validated(LinkCreateSerializer, request.data)
        link, created = memory_link_create(project=self.project, from_id=memory_pk, **data)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(LinkSerializer(link).data, status=code)

    @extend_schema(responses={204: OpenApiResponse(description="deleted")})
    def destroy(self, request: Request, memory_pk: str, pk: str) -> Response:
        memory_link_delete(project=self.project, link_id=pk, memory_id=memory_pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ResetView(ProjectScopedMixin, APIView):
    required_scopes = {None: "admin"}

    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request) -> Response:
        return Response({"deleted": project_reset(project=self.project)})
