"""mem0's open-source `Memory` contract over the platform's services: what the in-process
`memoryplatform.Memory`, the `/v1/` REST wrapper of that API and the paths of mem0's
self-hosted server (`POST /memories`, `POST /search`, ...) share.

Each function takes validated input (compat/mem0/serializers.py, the `Oss*` classes), calls
one service or selector for the caller's project and answers in mem0's open-source shapes: a
memory is `{id, memory, hash (md5 of the text), metadata, created_at, updated_at}` with its
scope (and `score` in search results), an add event `{id, event, memory}` with `old_memory` /
`previous_memory` and `new_memory` where they apply, a history entry
compat.mem0.representations.history_body. With graph results on, `search` and `add` also
return `relations` (`{source, relationship, destination}`), as mem0's graph memory does.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from compat.mem0.filters import scope_of, translate_oss_filters
from compat.mem0.representations import history_body, iso_time, mem0_hash
from entities.models import Entity, EntityMemory, Relation
from entities.scope import GraphScope
from entities.selectors.entities import entity_find_by_name, entity_list, relation_queryset
from entities.selectors.search import entities_in_text
from memories.memory_scope import SCOPE_FIELDS, Scope
from memories.models import Memory
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memory_get, memory_history, memory_list
from memories.selectors.search import memory_search
from memories.selectors.search_types import SearchQuery
from memories.services.fact_extraction import memories_add
from memories.services.fact_extraction.messages import parse_messages
from memories.services.memories import memories_delete_scope, memory_delete, memory_update
from memories.services.reading import memories_recall
from memories.services.reset import project_reset
from platformcore.lib.actor import Actor
from platformcore.lib.after_response import answered_with_it
from platformcore.lib.errors import InvalidInput, NotFound
from tenants.models import Project

MAX_RELATIONS = 100


def oss_item(memory: Memory, *, score: float | None = None) -> dict[str, Any]:
    """A memory as mem0's open-source `Memory` returns it."""
    body: dict[str, Any] = {
        "id": str(memory.pk),
        "memory": memory.content,
        "hash": mem0_hash(memory.content),
        "metadata": memory.metadata if isinstance(memory.metadata, dict) else {},
        "created_at": iso_time(memory.occurred_at or memory.created_at),
        "updated_at": iso_time(memory.updated_at),
    }
    body.update({name: getattr(memory, name) for name in SCOPE_FIELDS if getattr(memory, name)})
    if score is not None:
        body["score"] = round(score, 6)
    return body


def oss_event(event: dict[str, Any]) -> dict[str, Any]:
    """One event of the platform's `add` (id, event, memory, old_memory, new_memory), with
    mem0's `previous_memory` beside `old_memory` on an UPDATE."""
    body = {key: value for key, value in event.items() if value is not None}
    if event["event"] == "UPDATE" and event.get("old_memory") is not None:
        body["previous_memory"] = event["old_memory"]
    return body


def scope_from(data: dict[str, Any]) -> Scope:
    """The scope given at the top of the input or as equalities in `filters` (mem0's newer
    `filters={"user_id": ...}`); at least one field, else the scope error."""
    return Scope.of(scope_of(data, data.get("filters")), required=True)


# --- writes -------------------------------------------------------------------------------


def oss_add(
    *, project: Project, actor: Actor, data: dict[str, Any], graph: bool = False
) -> dict[str, Any]:
    """mem0's `add`: facts extracted and reconciled (`infer`, the default), or each user
    and assistant message stored as given (`infer=False`; system messages are skipped)."""
    scope = scope_from(data)
    common = {
        "project": project,
        "scope": scope,
        "actor": actor,
        "metadata": data.get("metadata") or {},
    }
    messages = [data["messages"]] if isinstance(data["messages"], dict) else data["messages"]
    with answered_with_it() if graph else nullcontext():  # the graph is in the answer
        if data.get("infer") is False:
            events = store_each_message(messages, common)
        else:
            events = memories_add(messages=messages, prompt=data.get("prompt"), **common)["results"]
    body: dict[str, Any] = {"results": [oss_event(event) for event in events]}
    if graph:
        touched = [e["id"] for e in events if e.get("id") and e["event"] in ("ADD", "UPDATE")]
        body["relations"] = {
            "added_entities": _memory_relations(project, scope, touched),
            "deleted_entities": [],
        }
    return body


def store_each_message(messages: Any, common: dict[str, Any]) -> list[dict[str, Any]]:
    """infer=false: each user and assistant message stored as given, as mem0 does (a string
    is one message; system messages are skipped)."""
    if isinstance(messages, str):
        texts = [messages]
    else:
        listed = [messages] if isinstance(messages, dict) else messages
        texts = [m.content for m in parse_messages(listed) if m.role != "system"]
    with transaction.atomic():
        return [
            event
            for text in texts
            if text.strip()
            for event in memories_add(messages=text, infer=False, **common)["results"]
        ]


def oss_update(
    *, project: Project, actor: Actor, memory_id: str, data: dict[str, Any]
) -> dict[str, str]:
    """mem0's `update(memory_id, text)`: new text re-embeds, bumps the version and writes
    history; `metadata` replaces the memory's."""
    changes: dict[str, Any] = {}
    if data.get("text") is not None:
        changes["content"] = data["text"]
    if data.get("metadata") is not None:
        changes["metadata"] = data["metadata"]
    if not changes:
        message = "give text or metadata"
        raise InvalidInput(message, fields={"text": [message]})
    memory_update(project=project, memory_id=memory_id, changes=changes, actor=actor)
    return {"message": "Memory updated successfully!"}


def oss_delete(*, project: Project, actor: Actor, memory_id: str) -> dict[str, str]:
    memory_delete(project=project, memory_id=memory_id, actor=actor)
    return {"message": "Memory deleted successfully!"}


def oss_delete_all(*, project: Project, actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    """Every memory of one scope (soft deletes, each with history); never without a scope."""
    deleted = memories_delete_scope(project=project, scope=scope_from(data), actor=actor)
    return {"message": "Memories deleted successfully!", "deleted": deleted}


def oss_reset(*, project: Project) -> dict[str, Any]:
    """Everything the project stored, gone for good: memories, history, links, the graph."""
    return {"message": "All memories reset", "deleted": project_reset(project=project)}


# --- reads --------------------------------------------------------------------------------


def oss_get(*, project: Project, memory_id: str) -> dict[str, Any] | None:
    """One live memory, or None (an unknown id, another project's, a deleted one)."""
    try:
        return oss_item(memory_get(project=project, memory_id=memory_id))
    except NotFound:
        return None


def _filters(data: dict[str, Any], scope: Scope) -> MemoryFilters:
    return MemoryFilters(**scope.as_filter(), expression=translate_oss_filters(data.get("filters")))


def oss_get_all(*, project: Project, data: dict[str, Any]) -> dict[str, Any]:
    """The scope's memories, newest first, at most `limit`."""
    scope = scope_from(data)
    page = memory_list(
        project=project, filters=_filters(data, scope), limit=data["limit"], offset=0
    )
    return {"results": [oss_item(memory) for memory in page.results]}


def oss_list_project(*, project: Project, limit: int) -> dict[str, Any]:
    """Every memory of the project, newest first (mem0's server lists them for admins)."""
    page = memory_list(project=project, filters=MemoryFilters(), limit=limit, offset=0)
    return {"results": [oss_item(memory) for memory in page.results]}


def oss_search(*, project: Project, data: dict[str, Any], graph: bool = False) -> dict[str, Any]:
    """Hybrid search within the scope and `filters`, best first; `threshold` is the
    semantic floor. With graph results on, memories of the entities the query names and
    of their neighbours follow the hits (mem0's graph memory), and `relations` lists the
    relations of the entities the query names."""
    scope = scope_from(data)
    query = SearchQuery(
        text=data["query"],
        filters=_filters(data, scope),
        limit=data["limit"],
        min_similarity=data.get("threshold"),
    )
    hits = list(memories_recall(project=project, query=query).hits)
    if graph and len(hits) < query.limit:
        seen = {hit.memory.pk for hit in hits}
        query.mode = "graph"
        extra = memory_search(project=project, query=query).hits
        hits += [hit for hit in extra if hit.memory.pk not in seen][: query.limit - len(hits)]
    body: dict[str, Any] = {"results": [oss_item(h.memory, score=h.score) for h in hits]}  # type: ignore[arg-type]
    if graph:
        body["relations"] = _query_relations(project, scope, data["query"])
    return body


def oss_history(*, project: Project, memory_id: str) -> list[dict[str, Any]]:
    """The memory's audit trail, oldest first (it outlives a delete); [] for an unknown id."""
    try:
        return [
            history_body(entry) for entry in memory_history(project=project, memory_id=memory_id)
        ]
    except NotFound:
        return []


# --- the knowledge graph --------------------------------------------------------------------


def entity_body(entity: Entity) -> dict[str, Any]:
    return {
        "id": entity.pk,
        "name": entity.name,
        "type": entity.entity_type,
        "description": entity.description,
    }


def relation_body(relation: Relation) -> dict[str, Any]:
    """mem0's graph memory relation."""
    return {
        "source": relation.source.name,
        "relationship": relation.relation_type,
        "destination": relation.target.name,
    }


def oss_entities(*, project: Project, data: dict[str, Any]) -> dict[str, Any]:
    """The entities of the scope's graph (and the project-wide one), alphabetically."""
    scope = GraphScope.of(scope_from(data).as_dict())
    page = entity_list(project=project, scope=scope, limit=data["limit"])
    return {"results": [entity_body(entity) for entity in page.results]}


def oss_entity_relations(*, project: Project, name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The relations of the entity named `name` (or an alias) valid now, strongest first."""
    scope = GraphScope.of(scope_from(data).as_dict())
    entity = entity_find_by_name(project=project, name=name, scope=scope)
    if entity is None:
        raise NotFound("entity not found", fields={"name": ["no entity with this name"]})
    relations = _valid_now(relation_queryset(project=project, scope=scope)).filter(
        Q(source=entity) | Q(target=entity)
    )
    return {"results": [relation_body(r) for r in relations.order_by("-strength", "id")[:100]]}


def _valid_now(relations: Any) -> Any:
    now = timezone.now()
    return relations.filter(valid_from__lte=now).filter(
        Q(valid_to__isnull=True) | Q(valid_to__gt=now)
    )


def _query_relations(project: Project, scope: Scope, text: str) -> list[dict[str, Any]]:
    graph_scope = GraphScope.of(scope.as_dict())
    named = list(entities_in_text(project=project, text=text, scope=graph_scope))
    return _relations_of(project, graph_scope, named)


def _memory_relations(project: Project, scope: Scope, memory_ids: list[str]) -> list[dict]:
    linked = EntityMemory.objects.filter(project=project, memory_id__in=memory_ids)
    ids = list(linked.values_list("entity_id", flat=True).distinct())
    return _relations_of(project, GraphScope.of(scope.as_dict()), ids)


def _relations_of(project: Project, scope: GraphScope, entity_ids: list[int]) -> list[dict]:
    if not entity_ids:
        return []
    relations = _valid_now(relation_queryset(project=project, scope=scope)).filter(
        Q(source_id__in=entity_ids) | Q(target_id__in=entity_ids)
    )
    return [relation_body(r) for r in relations.order_by("-strength", "id")[:MAX_RELATIONS]]


def default_limit() -> int:
    """The specification's default of 100 results, within the platform's page size."""
    return min(100, settings.MEMORY_MAX_PAGE_SIZE)
