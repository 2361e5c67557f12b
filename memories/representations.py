"""How memories, their history and links look to every client: one representation, used by
the REST API's responses and the MCP tools alike (and by the apps above for memories they
return). Input validation lives in the REST layer (`memories.api.serializers`)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memories.models import Memory, MemoryHistory, MemoryLink
from memories.selectors.filters import effective_confidence_of
from memories.selectors.search import SearchResult
from memories.selectors.search.sources import SourceHit, SourcesResult, rendered_sources
from memories.selectors.search_types import SearchQuery
from platformcore.lib.hooks import run_hooks


class MemorySerializer(serializers.ModelSerializer):
    effective_confidence = serializers.SerializerMethodField()
    has_embedding = serializers.SerializerMethodField()
    episode_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = Memory
        fields = [
            "id",
            "content",
            "memory_type",
            "tags",
            "confidence",
            "effective_confidence",
            "importance",
            "source",
            "context",
            "metadata",
            "user_id",
            "agent_id",
            "run_id",
            "content_hash",
            "token_count",
            "has_embedding",
            "access_count",
            "last_accessed_at",
            "state",
            "decay_score",
            "decay_rate",
            "utility_score",
            "verified_at",
            "compressed",
            "pinned",
            "ttl_tier",
            "expires_at",
            "deleted_at",
            "version",
            "created_at",
            "updated_at",
            "layer",
            "episode_id",
            "occurred_at",
            "summary",
        ]
        read_only_fields = fields

    def get_effective_confidence(self, memory: Memory) -> float:
        value = getattr(memory, "effective_confidence", None)  # annotated by selectors
        return round(value if value is not None else effective_confidence_of(memory), 6)

    def get_has_embedding(self, memory: Memory) -> bool:
        annotated = getattr(memory, "has_vector", None)  # set by memory_queryset
        return bool(annotated) if annotated is not None else memory.embedding is not None

    def to_representation(self, memory: Memory) -> dict[str, Any]:
        """The fields above, written out. DRF's own path introspects the model for every
        serializer (ModelSerializer builds its fields anew each time) and then calls one
        field object per value, most of a search's serialisation; this is a tenth of that.
        Same output as DRF's path (tests compare them, field by field).
        Subclasses add their fields with `extra_representation`."""
        return {
            "id": str(memory.id),
            "content": memory.content,
            "memory_type": memory.memory_type,
            "tags": [str(tag) for tag in memory.tags],
            "confidence": float(memory.confidence),
            "effective_confidence": self.get_effective_confidence(memory),
            "importance": float(memory.importance),
            "source": memory.source,
            "context": memory.context,
            "metadata": memory.metadata,
            "user_id": memory.user_id,
            "agent_id": memory.agent_id,
            "run_id": memory.run_id,
            "content_hash": memory.content_hash,
            "token_count": int(memory.token_count),
            "has_embedding": self.get_has_embedding(memory),
            "access_count": int(memory.access_count),
            "last_accessed_at": _datetime(memory.last_accessed_at),
            "state": memory.state,
            "decay_score": float(memory.decay_score),
            "decay_rate": None if memory.decay_rate is None else float(memory.decay_rate),
            "utility_score": float(memory.utility_score),
            "verified_at": _datetime(memory.verified_at),
            "compressed": bool(memory.compressed),
            "pinned": bool(memory.pinned),
            "ttl_tier": memory.ttl_tier,
            "expires_at": _datetime(memory.expires_at),
            "deleted_at": _datetime(memory.deleted_at),
            "version": int(memory.version),
            "created_at": _datetime(memory.created_at),
            "updated_at": _datetime(memory.updated_at),
            "layer": memory.layer,
            "episode_id": None if memory.episode_id is None else str(memory.episode_id),
            "occurred_at": _datetime(memory.occurred_at),
            "summary": memory.summary,
        } | self.extra_representation(memory)

    def extra_representation(self, memory: Memory) -> dict[str, Any]:
        """A subclass's own fields (those after MemorySerializer's in its Meta.fields), by
        DRF's field path unless the subclass writes them out itself."""
        names = self.Meta.fields[len(MemorySerializer.Meta.fields) :]
        if not names:
            return {}
        fields = self.fields
        extra = {}
        for name in names:
            value = fields[name].get_attribute(memory)
            extra[name] = None if value is None else fields[name].to_representation(value)
        return extra


def episode_body(episode: Any, memories: list[Memory] | None = None) -> dict[str, Any]:
    """An episode; with `memories`, its memories in the order they were stored."""
    body = {
        "id": str(episode.pk),
        "name": episode.name,
        "user_id": episode.user_id,
        "agent_id": episode.agent_id,
        "run_id": episode.run_id,
        "metadata": episode.metadata,
        "started_at": _datetime(episode.started_at),
        "ended_at": _datetime(episode.ended_at),
        "open": episode.ended_at is None,
        "summary": episode.summary,
        "summary_method": episode.summary_method,
    }
    count = getattr(episode, "memory_count", None)  # annotated by the episode selectors
    if count is not None:
        body["memory_count"] = count
    if memories is not None:
        body["memories"] = MemorySerializer(memories, many=True).data
    return body


def memory_detail_body(*, project: Any, memory: Memory) -> dict[str, Any]:
    """One memory as a single read shows it: its representation and what the apps above
    add to it (the `memory_details` hook: the document chunks it cites)."""
    body = dict(MemorySerializer(memory).data)
    for extra in run_hooks("memory_details", project=project, memory=memory):
        body.update(extra or {})
    return body


_DATETIME = serializers.DateTimeField()  # DRF's format (ISO 8601, "Z" for UTC), unbound


def _datetime(value: Any) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


class HistorySerializer(serializers.ModelSerializer):
    memory_id = serializers.UUIDField()
    is_deleted = serializers.SerializerMethodField()

    class Meta:
        model = MemoryHistory
        fields = [
            "id",
            "memory_id",
            "event",
            "old_content",
            "new_content",
            "old_values",
            "new_values",
            "actor",
            "user_id",
            "agent_id",
            "run_id",
            "is_deleted",
            "created_at",
        ]
        read_only_fields = fields

    def get_is_deleted(self, entry: MemoryHistory) -> bool:
        return entry.event == "DELETE"


class LinkSerializer(serializers.ModelSerializer):
    from_id = serializers.UUIDField(source="from_memory_id")
    to_id = serializers.UUIDField(source="to_memory_id")

    class Meta:
        model = MemoryLink
        fields = ["id", "from_id", "to_id", "link_type", "strength", "metadata", "created_at"]
        read_only_fields = fields


class ScoreSerializer(MemorySerializer):
    score = serializers.FloatField()
    score_parts = serializers.DictField(child=serializers.FloatField())
    summarized = serializers.BooleanField(
        default=False, help_text="true: a token budget took the summary, which `content` holds"
    )

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "score", "score_parts", "summarized"]
        read_only_fields = fields

    def extra_representation(self, memory: Memory) -> dict[str, Any]:
        parts = memory.score_parts  # type: ignore[attr-defined]
        summarized = bool(getattr(memory, "summarized", False))
        return {
            "score": float(memory.score),  # type: ignore[attr-defined]
            "score_parts": {str(name): float(value) for name, value in parts.items()},
            "summarized": summarized,
        } | ({"content": memory.summary} if summarized else {})


def budgeted_bodies(memories: list[Memory]) -> list[dict[str, Any]]:
    """Memories chosen under a token budget: each says whether the budget took its summary
    (`summarized`: `content` is then the summary) or its full text."""
    bodies = []
    for memory, body in zip(memories, MemorySerializer(memories, many=True).data, strict=True):
        summarized = bool(getattr(memory, "summarized", False))
        bodies.append(
            {**body, "summarized": summarized} | ({"content": memory.summary} if summarized else {})
        )
    return bodies


def context_body(context: Any) -> dict[str, Any]:
    """A session context (services/session.py), for REST and MCP alike."""
    return {
        "core": budgeted_bodies(context.core),
        "working": budgeted_bodies(context.working),
        "tokens_used": context.tokens_used,
        "token_budget": context.token_budget,
        "summarized": sum(
            1 for m in [*context.core, *context.working] if getattr(m, "summarized", False)
        ),
        "text": context.as_text(),
        "episode": episode_body(context.episode) if context.episode else None,
    }


def search_body(result: SearchResult) -> dict[str, Any]:
    results = []
    for hit in result.hits:
        hit.memory.score = round(hit.score, 6)
        hit.memory.score_parts = {name: round(value, 6) for name, value in hit.parts.items()}
        hit.memory.summarized = hit.summarized  # type: ignore[union-attr]
        results.append(hit.memory)
    return {
        "results": ScoreSerializer(results, many=True).data,
        "count": len(results),
        "mode": result.mode,
        "limit": result.limit,
        "offset": result.offset,
        "token_budget": result.token_budget,
        "tokens": result.tokens,
        "budget_exhausted": result.budget_exhausted,
    }


def sources_body(*, project: Any, query: SearchQuery, result: SourcesResult) -> dict[str, Any]:
    """A search across sources: each result says its `kind` ("memory", or the one its
    source renders, "document"); memories have the shape of `search_body`'s results."""
    rendered = rendered_sources(project=project, query=query, hits=result.hits)
    memories = [hit for hit in result.hits if not isinstance(hit, SourceHit)]
    only_memories = SearchResult(
        hits=memories,  # type: ignore[arg-type]
        mode=result.mode,
        limit=result.limit,
        offset=result.offset,
        token_budget=None,
        tokens=0,
        budget_exhausted=False,
    )
    memory_bodies = iter(search_body(only_memories)["results"])
    results = [
        rendered[i] if i in rendered else {"kind": "memory", **next(memory_bodies)}
        for i in range(len(result.hits))
    ]
    return {
        "results": results,
        "count": len(results),
        "sources": result.sources,
        "mode": result.mode,
        "limit": result.limit,
        "offset": result.offset,
        "token_budget": result.token_budget,
        "tokens": result.tokens,
        "budget_exhausted": result.budget_exhausted,
    }


def project_prompt_body(prompt: Any, *, active: bool = False) -> dict[str, Any]:
    """One version of a project's own LLM instructions (REST and MCP)."""
    return {
        "kind": prompt.kind,
        "version": prompt.version,
        "text": prompt.text,
        "active": active,
        "created_at": prompt.created_at.isoformat(),
        "created_by": prompt.created_by,
        "rolled_back_from": prompt.rolled_back_from,
    }


def project_prompts_body(versions: list[Any]) -> dict[str, Any]:
    """Every version, newest first by kind; `active` maps each kind to its version in force
    (None when there is none or the newest is empty)."""
    newest: dict[str, Any] = {}
    for prompt in versions:
        if prompt.kind not in newest or prompt.version > newest[prompt.kind].version:
            newest[prompt.kind] = prompt
    active = {kind: p.version for kind, p in newest.items() if p.text.strip()}
    return {
        "results": [
            project_prompt_body(p, active=active.get(p.kind) == p.version) for p in versions
        ],
        "active": active,
    }
