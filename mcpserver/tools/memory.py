"""Memory tools: store, get, update, delete, history, link, stats, tool feedback."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from analytics.selectors import memory_stats as stats_selector
from analytics.services import tool_feedback_record
from mcpserver.auth import actor_for
from mcpserver.schemas import DeleteOut, FeedbackOut, HistoryOut, LinkResult, MemoryOut, StoreResult
from mcpserver.tools import call, session_id_of
from memories.models import LinkType as LinkTypes
from memories.models import Memory, MemoryLayer
from memories.models import MemoryType as MemoryTypes
from memories.representations import (
    HistorySerializer,
    LinkSerializer,
    MemorySerializer,
    memory_detail_body,
)
from memories.selectors.filters import ALL_STATES, MemoryFilters
from memories.selectors.memories import memory_get as get_selector
from memories.selectors.memories import memory_history as history_selector
from memories.services.links import memory_link_create
from memories.services.memories import (
    MemoryInput,
    memories_delete,
    memory_create,
)
from memories.services.reading import memory_read
from memories.services.supersede import memory_update_superseding
from memories.services.utility import memories_feedback
from tenants.models import ApiKey, Project

# MCP clients rarely know a user id; memories stored without any scope belong to this agent
# (Memento's "default" agent namespace), so they stay findable and deletable as a group.
DEFAULT_AGENT_ID = "default"

# The models' choices, so a tool's JSON schema lists exactly what the store accepts.
MemoryType = Literal[tuple(MemoryTypes.values)]  # type: ignore[valid-type]
LinkType = Literal[tuple(LinkTypes.values)]  # type: ignore[valid-type]
Layer = Literal[tuple(MemoryLayer.values)]  # type: ignore[valid-type]
MemoryId = Annotated[str, Field(description="Memory id (UUID)")]
UserId = Annotated[str | None, Field(description="User scope")]
AgentId = Annotated[str | None, Field(description="Agent scope")]
RunId = Annotated[str | None, Field(description="Run/session scope")]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]


def memory_out(project: Project, memory: Memory | str) -> MemoryOut:
    """The REST representation (decay-aware confidence included) of a live memory."""
    memory_id = memory if isinstance(memory, str) else memory.pk
    fresh = get_selector(project=project, memory_id=memory_id)
    return dict(MemorySerializer(fresh).data)  # type: ignore[return-value]


async def memory_store(
    content: Annotated[str, Field(description="The memory: one self-contained statement")],
    memory_type: MemoryType = "observation",
    tags: list[str] | None = None,
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
    confidence: Unit = 1.0,
    importance: Annotated[
        float | None,
        Field(ge=0.0, le=1.0, description="0-1; omitted: the type's default (preference 0.95...)"),
    ] = None,
    source: Annotated[str, Field(description="Where it came from")] = "",
    context: Annotated[str, Field(description="Surrounding context")] = "",
    metadata: dict[str, Any] | None = None,
    pinned: Annotated[bool, Field(description="Exempt from decay and bulk deletes")] = False,
    expires_at: datetime | None = None,
    occurred_at: Annotated[
        datetime | None,
        Field(description="When it happened or was said, if not now (e.g. an imported chat)"),
    ] = None,
    entity_names: Annotated[list[str] | None, Field(description="Entities it is about")] = None,
    layer: Annotated[
        Layer | None,
        Field(
            description="Default long_term. short_term: working memory of run_id (default: "
            "this MCP session), which leaves when the session ends unless promoted"
        ),
    ] = None,
    episode_id: Annotated[
        str | None, Field(description="Its episode; default: its run's open episode")
    ] = None,
    ctx: Context | None = None,
) -> StoreResult:
    """Store one memory (a fact, decision, preference, error, procedure...). Embeds it and
    deduplicates: exact same content in the same scope returns the existing memory with
    created=false. Without user_id/agent_id/run_id it is stored for agent_id "default"."""
    if layer == MemoryLayer.SHORT_TERM and not run_id:
        run_id = session_id_of(ctx)  # working memory belongs to a session
    if not (user_id or agent_id or run_id):
        agent_id = DEFAULT_AGENT_ID
    data = MemoryInput(
        content=content,
        memory_type=memory_type,
        tags=tags or [],
        user_id=user_id,
        agent_id=agent_id,
        run_id=run_id,
        confidence=confidence,
        importance=importance,
        source=source,
        context=context,
        metadata=metadata or {},
        pinned=pinned,
        expires_at=expires_at,
        occurred_at=occurred_at,
        entity_names=entity_names or [],
        layer=layer,
        episode_id=episode_id,
    )

    def run(key: ApiKey) -> StoreResult:
        result = memory_create(project=key.project, data=data, actor=actor_for(key))
        return {"created": result.created, "memory": memory_out(key.project, result.memory)}

    return await call("write", run)


async def memory_get(memory_id: MemoryId) -> MemoryOut:
    """Read one memory by id, with its decay-aware effective confidence. Reading a memory
    reinforces it (access count, last access, confidence), as a REST GET does."""

    def run(key: ApiKey) -> MemoryOut:
        memory = memory_read(project=key.project, memory_id=memory_id)
        return memory_detail_body(project=key.project, memory=memory)  # type: ignore[return-value]

    return await call("read", run)


async def memory_update(
    memory_id: MemoryId,
    content: Annotated[str | None, Field(description="New content (bumps version)")] = None,
    memory_type: MemoryType | None = None,
    tags: Annotated[list[str] | None, Field(description="Replaces all tags")] = None,
    confidence: Unit | None = None,
    importance: Unit | None = None,
    source: str | None = None,
    context: str | None = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="Replaces metadata")] = None,
    pinned: bool | None = None,
    expires_at: datetime | None = None,
    occurred_at: datetime | None = None,
    supersedes: Annotated[
        list[str] | None,
        Field(description="Ids of older memories this one replaces (soft-deleted and linked)"),
    ] = None,
) -> MemoryOut:
    """Amend a memory in place; only the fields given change. New content re-embeds it and
    bumps its version; the previous values are kept in its history (memory_history).
    `supersedes` retires older memories this one replaces: they are soft-deleted and linked
    superseded_by/supersedes, so the change stays auditable and undoable."""
    given = {
        "content": content,
        "memory_type": memory_type,
        "tags": tags,
        "confidence": confidence,
        "importance": importance,
        "source": source,
        "context": context,
        "metadata": metadata,
        "pinned": pinned,
        "expires_at": expires_at,
        "occurred_at": occurred_at,
    }
    changes = {name: value for name, value in given.items() if value is not None}

    def run(key: ApiKey) -> MemoryOut:
        memory = memory_update_superseding(
            project=key.project,
            memory_id=memory_id,
            changes=changes,
            supersedes=list(supersedes or []),
            actor=actor_for(key),
        )
        return memory_out(key.project, memory)

    return await call("write", run)


async def memory_delete(
    memory_ids: Annotated[list[str] | None, Field(description="Delete these ids")] = None,
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
    memory_types: list[MemoryType] | None = None,
    tags: Annotated[list[str] | None, Field(description="Memories having all these tags")] = None,
    before: Annotated[datetime | None, Field(description="Created before this time")] = None,
    confidence_below: Annotated[
        float | None, Field(ge=0.0, le=1.0, description="Effective confidence below this")
    ] = None,
    force: Annotated[bool, Field(description="Also delete pinned memories")] = False,
    reason: str = "",
) -> DeleteOut:
    """Delete memories by ids or by filter (all given criteria must match). At least one
    criterion is required. Pinned memories are skipped unless force=true. Deletion is soft:
    history keeps what was deleted and by whom."""
    filters = MemoryFilters(
        user_id=user_id,
        agent_id=agent_id,
        run_id=run_id,
        memory_types=list(memory_types or []),
        tags=tags or [],
        created_before=before,
        states=[ALL_STATES],
    )

    def run(key: ApiKey) -> DeleteOut:
        result = memories_delete(
            project=key.project,
            actor=actor_for(key),
            memory_ids=memory_ids,
            filters=filters,
            confidence_below=confidence_below,
            force=force,
            reason=reason,
        )
        out: DeleteOut = {
            "deleted": len(result.deleted_ids),
            "deleted_ids": result.deleted_ids,
            "skipped_pinned_ids": result.skipped_pinned_ids,
        }
        if result.skipped_pinned_ids:
            out["note"] = "pinned memories were kept; pass force=true to delete them"
        return out

    return await call("write", run)


async def memory_history(memory_id: MemoryId) -> HistoryOut:
    """The audit trail of a memory, oldest first: ADD, UPDATE (with old and new values),
    DELETE, MERGE, RESTORE, and who did it. Works for deleted memories too."""

    def run(key: ApiKey) -> HistoryOut:
        entries = history_selector(project=key.project, memory_id=memory_id)
        return {
            "memory_id": memory_id,
            "history": list(HistorySerializer(entries, many=True).data),  # type: ignore[typeddict-item]
        }

    return await call("read", run)


async def memory_link(
    from_id: MemoryId,
    to_id: MemoryId,
    link_type: LinkType = "relates_to",
    strength: Unit = 1.0,
    metadata: dict[str, Any] | None = None,
) -> LinkResult:
    """Link two memories with a typed, directed edge (e.g. an error caused_by a decision,
    resolved_by a procedure). Repeating the same link updates it instead of duplicating."""

    def run(key: ApiKey) -> LinkResult:
        link, created = memory_link_create(
            project=key.project,
            from_id=from_id,
            to_id=to_id,
            link_type=link_type,
            strength=strength,
            metadata=metadata,
        )
        return {"created": created, "link": dict(LinkSerializer(link).data)}  # type: ignore[typeddict-item]

    return await call("write", run)


async def memory_stats() -> dict[str, Any]:
    """Statistics of this project's memory: totals, counts by type and state, average and
    low (decayed) confidence, embedding coverage, entity/relation counts, tool feedback."""
    return await call("read", lambda key: stats_selector(project=key.project))


async def tool_feedback(
    tool_name: Annotated[str, Field(description="The tool being rated, e.g. memory_search")],
    relevant: Annotated[bool, Field(description="Were the results pertinent to the intent?")],
    sufficient: Annotated[bool, Field(description="Were they enough to finish the task?")],
    suggestion: Annotated[str, Field(description="How the tool could do better")] = "",
    context: Annotated[str, Field(description="What you were trying to do")] = "",
    session_id: str = "",
    trigger_type: Literal["voluntary", "sampled"] = "voluntary",
    memory_ids: Annotated[
        list[str] | None,
        Field(description="The memories the verdict is about: their utility is scored again"),
    ] = None,
) -> FeedbackOut:
    """Tell the platform whether a memory tool's results helped. Stored per project and shown
    in memory_stats and the admin, so retrieval can be tuned; with memory_ids, the verdict
    (relevant or not) also counts in those memories' utility scores."""

    def run(key: ApiKey) -> FeedbackOut:
        if memory_ids:
            memories_feedback(
                project=key.project,
                memory_ids=memory_ids,
                helpful=relevant,
                actor=actor_for(key),
                tool_name=tool_name,
            )
        feedback = tool_feedback_record(
            project=key.project,
            tool_name=tool_name,
            relevant=relevant,
            sufficient=sufficient,
            suggestion=suggestion,
            context=context,
            session_id=session_id,
            trigger_type=trigger_type,
            actor=actor_for(key),
        )
        return {"id": feedback.pk, "tool_name": feedback.tool_name, "recorded": True}

    return await call("write", run)
