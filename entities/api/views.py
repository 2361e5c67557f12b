"""REST endpoints for the knowledge graph: thin layers over services and selectors."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from entities.api.serializers import (
    AnalysisQuerySerializer,
    CrossGraphQuerySerializer,
    EntityCreatedSerializer,
    EntityDeleteQuerySerializer,
    EntityDetailSerializer,
    EntityGraphQuerySerializer,
    EntityListQuerySerializer,
    EntityScopeQuerySerializer,
    EntitySerializer,
    EntityUpdateSerializer,
    EntityWriteSerializer,
    ExportQuerySerializer,
    GraphBulkSerializer,
    MemoryTraverseQuerySerializer,
    NamedRelationSerializer,
    PageQuerySerializer,
    RelationCloseSerializer,
    RelationCreateSerializer,
    RelationDeleteByNameSerializer,
    RelationFieldsSerializer,
    RelationListQuerySerializer,
    RelationSerializer,
    TagDescribeSerializer,
    TagListQuerySerializer,
    entity_spec,
    read_scope,
    write_scope,
)
from entities.representations import (
    cross_export_body,
    cross_graph_body,
    memory_graph_body,
    subgraph_body,
    tag_body,
)
from entities.scope import GRAPH_SCOPE_FIELDS
from entities.selectors.analytics import (
    graph_analysis,
    graph_export,
    graph_export_graphml,
    graph_export_kinds_graphml,
)
from entities.selectors.entities import (
    entity_get,
    entity_list,
    entity_memories,
    entity_relations,
    memory_entities,
    relation_get,
    relation_list,
)
from entities.selectors.graph import Walk, graph_export_kinds, graph_subgraph, parse_node
from entities.selectors.tags import tag_get, tag_list
from entities.selectors.traversal import (
    RelationFilter,
    entity_subgraph,
    memory_causal_chain,
    memory_traverse,
)
from entities.services.entities import entity_create, entity_delete, entity_update
from entities.services.graph import graph_bulk_create
from entities.services.relations import (
    NamedRelation,
    relation_close,
    relation_create,
    relation_delete,
    relations_create_by_name,
    relations_delete_by_name,
)
from entities.services.tags import tag_describe, tag_forget
from memories.representations import MemorySerializer
from platformcore.lib.schema import error_response, page_of, path_ids
from tenants.views import ProjectScopedMixin


def _page_size(query: dict[str, Any]) -> int:
    return query.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE


_ENTITY_UPDATED = {
    200: EntityDetailSerializer,
    409: error_response("Another entity of the project has that name and type."),
}


@path_ids(id="int")
class EntityViewSet(ProjectScopedMixin, viewsets.ViewSet):
    @extend_schema(parameters=[EntityListQuerySerializer], responses=page_of(EntitySerializer))
    def list(self, request: Request) -> Response:
        query = self.validated(EntityListQuerySerializer, request.query_params)
        page = entity_list(
            project=self.project,
            query=query["q"],
            entity_types=query["entity_type"],
            match=query["match"],
            limit=_page_size(query),
            offset=query["offset"],
            scope=read_scope(query),
            tags=query["tags"],
        )
        return self.page_response(page, EntitySerializer)

    @extend_schema(
        request=EntityWriteSerializer,
        responses={201: EntityCreatedSerializer, 200: EntityCreatedSerializer},
        description="Create an entity (embedded from name + description) in the graph of "
        "`user_id` / `agent_id` / `run_id`, or the project-wide graph without them. The same "
        "name and type in that graph returns the existing entity with `created: false` and "
        "status 200. `entity_type` is open: a built-in type or any lower-case identifier.",
    )
    def create(self, request: Request) -> Response:
        data = self.validated(EntityWriteSerializer, request.data)
        entity, created = entity_create(project=self.project, spec=entity_spec(data))
        body = EntityCreatedSerializer(entity, context={"created": created}).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(parameters=[EntityScopeQuerySerializer], responses=EntityDetailSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        scope = read_scope(self.validated(EntityScopeQuerySerializer, request.query_params))
        entity = entity_get(project=self.project, entity_id=pk, scope=scope)
        relations = entity_relations(project=self.project, entity=entity, scope=scope)
        return Response(EntityDetailSerializer(entity, context={"relations": relations}).data)

    @extend_schema(request=EntityUpdateSerializer, responses=_ENTITY_UPDATED)
    def partial_update(self, request: Request, pk: str) -> Response:
        changes = self.validated(EntityUpdateSerializer, request.data)
        entity_update(project=self.project, entity_id=pk, changes=changes)
        return self.retrieve(request, pk)

    @extend_schema(request=EntityUpdateSerializer, responses=_ENTITY_UPDATED)
    def update(self, request: Request, pk: str) -> Response:
        return self.partial_update(request, pk)

    @extend_schema(parameters=[EntityDeleteQuerySerializer], responses={200: dict})
    def destroy(self, request: Request, pk: str) -> Response:
        query = self.validated(EntityDeleteQuerySerializer, request.query_params)
        counts = entity_delete(
            project=self.project,
            entity_id=pk,
            actor=self.actor,
            cascade_memories=query["cascade_memories"],
        )
        return Response({"deleted": counts})

    @extend_schema(parameters=[EntityGraphQuerySerializer], responses={200: dict})
    @action(detail=True, methods=["get"])
    def graph(self, request: Request, pk: str) -> Response:
        query = self.validated(EntityGraphQuerySerializer, request.query_params)
        subgraph = entity_subgraph(
            project=self.project,
            entity_id=pk,
            depth=query["depth"],
            relations=RelationFilter(
                min_strength=query["min_strength"],
                relation_types=query["relation_type"] or None,
                as_of=query["as_of"],
                scope=read_scope(query),
            ),
            direction=query["direction"],
            max_nodes=query["max_nodes"],
            include_memories=query["include_memories"],
            memories_per_node=query["memories_per_node"],
        )
        return Response(subgraph_body(subgraph, include_memories=query["include_memories"]))

    @extend_schema(
        parameters=[PageQuerySerializer], responses=page_of(MemorySerializer, "EntityMemory")
    )
    @action(detail=True, methods=["get"])
    def memories(self, request: Request, pk: str) -> Response:
        query = self.validated(PageQuerySerializer, request.query_params)
        limit = _page_size(query)
        memories, count = entity_memories(
            project=self.project, entity_id=pk, limit=limit, offset=query["offset"]
        )
        results = [
            {**MemorySerializer(memory).data, "relevance": memory.relevance}  # type: ignore[attr-defined]
            for memory in memories
        ]
        return Response(
            {"results": results, "count": count, "limit": limit, "offset": query["offset"]}
        )


@path_ids(id="int")
class RelationViewSet(ProjectScopedMixin, viewsets.ViewSet):
    @extend_schema(
        parameters=[RelationListQuerySerializer],
        responses={200: page_of(RelationSerializer), 404: error_response("No such entity.")},
    )
    def list(self, request: Request) -> Response:
        query = self.validated(RelationListQuerySerializer, request.query_params)
        limit = _page_size(query)
        relations, count = relation_list(
            project=self.project,
            entity_id=query.get("entity_id"),
            relation_types=query["relation_type"],
            as_of=query.get("as_of"),
            include_closed=query["include_closed"],
            limit=limit,
            offset=query["offset"],
            scope=read_scope(query),
        )
        return Response(
            {
                "results": RelationSerializer(relations, many=True).data,
                "count": count,
                "limit": limit,
                "offset": query["offset"],
            }
        )

    @extend_schema(
        request=RelationCreateSerializer,
        responses={
            201: RelationSerializer,
            200: RelationSerializer,
            404: error_response("No entity with `source_id` or `target_id`."),
        },
        description="Create a relation between entities given by id (`source_id`, "
        "`target_id`) or by name (`source`, `target`; unknown names create `unknown` "
        "entities). The same open (source, target, type) is updated (200), not duplicated.",
    )
    def create(self, request: Request) -> Response:
        data = self.validated(RelationCreateSerializer, request.data)
        spec = RelationFieldsSerializer.spec_from(data)
        if "source_id" in data and "target_id" in data:
            result = relation_create(
                project=self.project,
                source_id=data["source_id"],
                target_id=data["target_id"],
                spec=spec,
                scope=write_scope(data),
            )
        else:
            result = self._create_mixed(data, spec)
        body = RelationSerializer(
            relation_get(project=self.project, relation_id=result.relation.pk)
        )
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return Response({**body.data, "closed": [r.pk for r in result.closed]}, status=code)

    def _create_mixed(self, data: dict[str, Any], spec: Any) -> Any:
        scope = write_scope(data)
        ends = {}
        for end in ("source", "target"):
            if f"{end}_id" in data:
                entity = entity_get(project=self.project, entity_id=data[f"{end}_id"])
                ends[end] = entity.name
            else:
                ends[end] = data[end]
        item = NamedRelation(source=ends["source"], target=ends["target"], spec=spec)
        return relations_create_by_name(project=self.project, items=[item], scope=scope)[0]

    @extend_schema(responses=RelationSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(RelationSerializer(relation_get(project=self.project, relation_id=pk)).data)

    @extend_schema(responses={204: OpenApiResponse(description="deleted")})
    def destroy(self, request: Request, pk: str) -> Response:
        relation_delete(project=self.project, relation_id=pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=RelationCloseSerializer, responses=RelationSerializer)
    @action(detail=True, methods=["post"])
    def close(self, request: Request, pk: str) -> Response:
        data = self.validated(RelationCloseSerializer, request.data)
        relation_close(project=self.project, relation_id=pk, valid_to=data["valid_to"])
        return self.retrieve(request, pk)

    @extend_schema(request=RelationDeleteByNameSerializer, responses={200: dict})
    @action(detail=False, methods=["post"], url_path="delete-by-name")
    def delete_by_name(self, request: Request) -> Response:
        data = self.validated(RelationDeleteByNameSerializer, request.data)
        deleted = relations_delete_by_name(
            project=self.project, items=data["relations"], scope=read_scope(data)
        )
        return Response({"deleted": deleted})


class GraphBulkView(ProjectScopedMixin, APIView):
    @extend_schema(
        request=GraphBulkSerializer,
        responses={200: dict},
        description="Create entities and relations by name in one transaction (MCP "
        "`create_entities` + `create_relations`). Names are deduplicated (also by alias and "
        "near-duplicate embedding); a relation naming an unknown entity creates it as "
        "`unknown`.",
    )
    def post(self, request: Request) -> Response:
        data = self.validated(GraphBulkSerializer, request.data)
        scope = write_scope(data)
        entities, results = graph_bulk_create(
            project=self.project,
            entities=[entity_spec(item, scope) for item in data["entities"]],
            relations=[NamedRelationSerializer.named(item) for item in data["relations"]],
            scope=scope,
        )
        relations = [result.relation for result in results]
        return Response(
            {
                "entities": EntitySerializer(entities, many=True).data,
                "relations": RelationSerializer(relations, many=True).data,
                "created_relations": sum(result.created for result in results),
                "closed_relations": [r.pk for result in results for r in result.closed],
            }
        )


class GraphAnalysisView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[AnalysisQuerySerializer], responses={200: dict})
    def get(self, request: Request) -> Response:
        query = self.validated(AnalysisQuerySerializer, request.query_params)
        scope = read_scope(query)
        return Response(graph_analysis(project=self.project, top=query["top"], scope=scope))


class GraphExportView(ProjectScopedMixin, APIView):
    graphml = False  # the graphml/ route sets it

    @extend_schema(
        parameters=[ExportQuerySerializer],
        responses={200: OpenApiResponse(description="JSON {nodes, edges} or GraphML XML")},
    )
    def get(self, request: Request) -> Response | HttpResponse:
        query = self.validated(ExportQuerySerializer, request.query_params)
        if query["node_types"]:
            return self._typed(query)
        options = {"as_of": query["as_of"], "include_closed": query["include_closed"]}
        if self.graphml:
            xml = graph_export_graphml(project=self.project, **options)
            response = HttpResponse(xml, content_type="application/graphml+xml")
            response["Content-Disposition"] = f'attachment; filename="{self.project.slug}.graphml"'
            return response
        return Response(graph_export(project=self.project, **options))

    def _typed(self, query: dict[str, Any]) -> Response | HttpResponse:
        """The graph across kinds: nodes of `node_types` and the edges among them."""
        kinds = [] if query["node_types"] == ["all"] else query["node_types"]
        walk = Walk(
            node_types=tuple(kinds), edge_types=tuple(query["edge_types"]), as_of=query["as_of"]
        )
        export = graph_export_kinds(project=self.project, walk=walk, max_nodes=query["max_nodes"])
        if self.graphml:
            xml = graph_export_kinds_graphml(project=self.project, export=export)
            response = HttpResponse(xml, content_type="application/graphml+xml")
            response["Content-Disposition"] = f'attachment; filename="{self.project.slug}.graphml"'
            return response
        return Response(cross_export_body(self.project, export))


class CrossGraphView(ProjectScopedMixin, APIView):
    """The one graph across kinds around any node: entities, memories, episodes, documents
    and their chunks, with the edges between them (docs/graph.md, "One graph across kinds")."""

    @extend_schema(parameters=[CrossGraphQuerySerializer], responses={200: dict})
    def get(self, request: Request) -> Response:
        query = self.validated(CrossGraphQuerySerializer, request.query_params)
        walk = Walk(
            node_types=tuple(query["node_types"]),
            edge_types=tuple(query["edge_types"]),
            direction=query["direction"],
            scope=read_scope(query),
            as_of=query["as_of"],
        )
        graph = graph_subgraph(
            project=self.project,
            node=parse_node(query["node"]),
            depth=query["depth"],
            walk=walk,
            max_nodes=query["max_nodes"],
        )
        return Response(cross_graph_body(graph))


@path_ids(memory_pk="uuid")
class MemoryGraphViewSet(ProjectScopedMixin, viewsets.ViewSet):
    """Walks over memory-to-memory links, and the entities of a memory."""

    @extend_schema(parameters=[MemoryTraverseQuerySerializer], responses={200: dict})
    def traverse(self, request: Request, memory_pk: str) -> Response:
        query = self.validated(MemoryTraverseQuerySerializer, request.query_params)
        graph = memory_traverse(
            project=self.project,
            memory_id=memory_pk,
            depth=query["depth"],
            link_types=query["link_type"] or None,
            direction=query["direction"],
            min_strength=query["min_strength"],
            max_nodes=query["max_nodes"],
            strategy=query["strategy"],
            time_budget_ms=query["time_budget_ms"],
            memory_types=query["memory_type"] or None,
            tags=query["tags"] or None,
            include_parent_links=query["include_parent_links"],
            **_walk_scope(query),
        )
        return Response(memory_graph_body(graph))

    @extend_schema(parameters=[MemoryTraverseQuerySerializer], responses={200: dict})
    def causal_chain(self, request: Request, memory_pk: str) -> Response:
        query = self.validated(MemoryTraverseQuerySerializer, request.query_params)
        graph = memory_causal_chain(
            project=self.project,
            memory_id=memory_pk,
            depth=query["depth"],
            max_nodes=query["max_nodes"],
            **_walk_scope(query),
        )
        return Response(memory_graph_body(graph))

    @extend_schema(responses=EntitySerializer(many=True))
    def entities(self, request: Request, memory_pk: str) -> Response:
        entities = memory_entities(project=self.project, memory_id=memory_pk)
        return Response(EntitySerializer(entities, many=True).data)


def _walk_scope(query: dict[str, Any]) -> dict[str, str | None]:
    return {name: query.get(name) or None for name in GRAPH_SCOPE_FIELDS}


class TagListView(ProjectScopedMixin, APIView):
    @extend_schema(
        operation_id="v1_tags_list", parameters=[TagListQuerySerializer], responses={200: dict}
    )
    def get(self, request: Request) -> Response:
        """The project's tag registry: every tag in use on its memories and entities and
        every described tag, with its description and counts, most used first."""
        query = self.validated(TagListQuerySerializer, request.query_params)
        page = tag_list(
            project=self.project, query=query["q"], limit=_page_size(query), offset=query["offset"]
        )
        return Response(
            {
                "results": [tag_body(tag) for tag in page.results],
                "count": page.count,
                "limit": page.limit,
                "offset": page.offset,
            }
        )


class TagDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict, 404: error_response("No such tag.")})
    def get(self, request: Request, name: str) -> Response:
        """One tag: description and counts."""
        return Response(tag_body(tag_get(project=self.project, name=name)))

    @extend_schema(request=TagDescribeSerializer, responses={200: dict})
    def put(self, request: Request, name: str) -> Response:
        """Register a tag with its description (or change the description)."""
        data = self.validated(TagDescribeSerializer, request.data)
        tag = tag_describe(project=self.project, name=name, description=data["description"])
        return Response(tag_body(tag_get(project=self.project, name=tag.name)))

    @extend_schema(responses={204: OpenApiResponse(description="description dropped")})
    def delete(self, request: Request, name: str) -> Response:
        """Drop the tag's description (a tag in use stays listed)."""
        tag_forget(project=self.project, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)
