"""Lifecycle tools: the consolidation pipeline, decay status and control, preservation,
compressed archives."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from mcpserver.auth import actor_for
from mcpserver.schemas import MemoryOut
from mcpserver.tools import call
from mcpserver.tools.memory import MemoryId, memory_out
from memories.models import MAX_DECAY_RATE
from memories.services.archive import memory_decompress as decompress_service
from memories.services.decay_control import (
    decay_control_status,
    decay_pause,
    decay_resume,
)
from memories.services.decay_control import memory_set_decay_rate as set_decay_rate_service
from memories.services.lifecycle import memory_decay_status as decay_status_service
from memories.services.lifecycle import memory_preserve as preserve_service
from memories.services.maintenance import STAGES, memories_maintain
from tenants.models import ApiKey


async def memory_consolidate(
    similarity_threshold: Annotated[
        float | None, Field(ge=0.5, le=1.0, description="Cosine similarity to cluster at")
    ] = None,
    dry_run: Annotated[bool, Field(description="Only report what would be done")] = False,
    stages: Annotated[
        list[Literal[STAGES]] | None,  # type: ignore[valid-type]
        Field(description="Stages to run (default: all, in this order)"),
    ] = None,
) -> dict[str, Any]:
    """Run the maintenance pipeline: back-fill missing embeddings, merge clusters of
    near-duplicate memories (history and links kept) and record contradictions, score
    utility, recompute decay (compressing archived memories), prune. Returns the merge report
    and `stages`: per-stage counts. Use dry_run=true first to preview."""

    def run(key: ApiKey) -> dict[str, Any]:
        return memories_maintain(
            project=key.project,
            actor=actor_for(key),
            similarity_threshold=similarity_threshold,
            dry_run=dry_run,
            stages=stages,
        )

    return await call("read" if dry_run else "write", run)


async def memory_decay_status(memory_id: MemoryId) -> dict[str, Any]:
    """A memory's lifecycle: state (active, dormant, archived, expired), decay score now,
    predicted next state and when, and whether it is preserved (pinned, tag or date)."""
    return await call(
        "read", lambda key: decay_status_service(project=key.project, memory_id=memory_id)
    )


async def memory_preserve(
    memory_id: MemoryId,
    until: Annotated[
        datetime | None, Field(description="Preserve until this time (default: for good)")
    ] = None,
) -> MemoryOut:
    """Keep a memory from decaying: tags it `preserved` (or until a date) and resets its
    decay score to 1.0."""

    def run(key: ApiKey) -> MemoryOut:
        memory = preserve_service(
            project=key.project, memory_id=memory_id, actor=actor_for(key), until=until
        )
        return memory_out(key.project, memory)

    return await call("write", run)


async def memory_decay_control(
    action: Annotated[
        Literal["status", "pause", "resume"],
        Field(description="pause or resume the hourly decay job for this project"),
    ] = "status",
) -> dict[str, Any]:
    """Pause or resume this project's scheduled decay (a safety valve: scores and states stay
    as they are while paused), or see whether it is paused. Pausing needs the admin scope."""
    if action == "status":
        return await call("read", lambda key: decay_control_status(project=key.project))
    control = decay_pause if action == "pause" else decay_resume
    return await call("admin", lambda key: control(project=key.project, actor=actor_for(key)))


async def memory_set_decay_rate(
    memory_id: MemoryId,
    decay_rate: Annotated[
        float | None,
        Field(
            ge=0.0,
            le=MAX_DECAY_RATE,
            description="Decay per day (0: never by age); null: the project's rate",
        ),
    ],
) -> dict[str, Any]:
    """Give one memory its own decay rate; returns its decay status with the new rate."""

    def run(key: ApiKey) -> dict[str, Any]:
        set_decay_rate_service(project=key.project, memory_id=memory_id, decay_rate=decay_rate)
        return decay_status_service(project=key.project, memory_id=memory_id)

    return await call("write", run)


async def memory_decompress(memory_id: MemoryId) -> MemoryOut:
    """Put back the full text of an archived memory that was compressed to a summary."""

    def run(key: ApiKey) -> MemoryOut:
        memory = decompress_service(project=key.project, memory_id=memory_id)
        return memory_out(key.project, memory)

    return await call("write", run)
