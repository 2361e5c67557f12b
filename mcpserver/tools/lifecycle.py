"""Lifecycle tools: consolidation, decay status, preservation."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from mcpserver.auth import actor_for
from mcpserver.schemas import MemoryOut
from mcpserver.tools import call
from mcpserver.tools.memory import MemoryId, memory_out
from memories.services.consolidation import memories_consolidate
from memories.services.lifecycle import memory_decay_status as decay_status_service
from memories.services.lifecycle import memory_preserve as preserve_service
from tenants.models import ApiKey


async def memory_consolidate(
    similarity_threshold: Annotated[
        float | None, Field(ge=0.5, le=1.0, description="Cosine similarity to cluster at")
    ] = None,
    dry_run: Annotated[bool, Field(description="Only report what would be merged")] = False,
) -> dict[str, Any]:
    """Merge clusters of near-duplicate memories into one (history and links kept), and
    report contradictions. Use dry_run=true first to preview the clusters."""

    def run(key: ApiKey) -> dict[str, Any]:
        report = memories_consolidate(
            project=key.project,
            actor=actor_for(key),
            similarity_threshold=similarity_threshold,
            dry_run=dry_run,
        )
        return report.as_dict()

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
