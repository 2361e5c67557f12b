"""Episode tools: start an episode for a conversation or task, read one with its memories in
order, close it with a summary, list them. The same services and representation as REST."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from mcpserver.auth import actor_for
from mcpserver.tools import call, page_body, session_id_of
from mcpserver.tools.memory import AgentId, UserId
from memories.memory_scope import Scope
from memories.representations import episode_body
from memories.selectors.episodes import (
    EpisodeFilters,
    episode_get,
    episode_list,
    episode_memories,
)
from memories.services.episodes import MAX_NAME, MAX_SUMMARY, episode_close, episode_start
from tenants.models import ApiKey

EpisodeId = Annotated[str, Field(description="Episode id (UUID)")]


async def episode_start_tool(
    name: Annotated[str, Field(max_length=MAX_NAME, description="What the episode is")] = "",
    run_id: Annotated[
        str | None,
        Field(
            description="The run or session it groups (default: this MCP session); memories "
            "stored with this run_id join the episode"
        ),
    ] = None,
    user_id: UserId = None,
    agent_id: AgentId = None,
    metadata: dict[str, Any] | None = None,
    ctx: Context | None = None,
) -> dict[str, Any]:
    """Start an episode (a conversation or a task). Every memory stored with its run_id
    until it is closed belongs to it, in order; an episode still open for the same run is
    closed first."""
    scope = Scope(user_id or None, agent_id or None, run_id or session_id_of(ctx))

    def run(key: ApiKey) -> dict[str, Any]:
        episode = episode_start(
            project=key.project,
            scope=scope,
            actor=actor_for(key),
            name=name,
            metadata=metadata or {},
        )
        return episode_body(episode)

    return await call("write", run)


async def episode_get_tool(episode_id: EpisodeId) -> dict[str, Any]:
    """Read an episode: its name, run, times, summary and its memories in the order they
    were stored."""

    def run(key: ApiKey) -> dict[str, Any]:
        episode = episode_get(project=key.project, episode_id=episode_id)
        return episode_body(episode, episode_memories(project=key.project, episode=episode))

    return await call("read", run)


async def episode_close_tool(
    episode_id: EpisodeId,
    summary: Annotated[
        str | None,
        Field(
            max_length=MAX_SUMMARY,
            description="Your summary; default: written from the episode's memories",
        ),
    ] = None,
    summarize: Annotated[bool, Field(description="false: close without a summary")] = True,
) -> dict[str, Any]:
    """Close an episode. Its summary (yours, else the LLM's when one is configured, else the
    most important memories quoted) is kept with it and stored as an episodic memory that
    search finds later."""

    def run(key: ApiKey) -> dict[str, Any]:
        episode_close(
            project=key.project,
            episode_id=episode_id,
            actor=actor_for(key),
            summary=summary,
            summarize=summarize,
        )
        return episode_body(episode_get(project=key.project, episode_id=episode_id))

    return await call("write", run)


async def episode_list_tool(
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: Annotated[str | None, Field(description="Run/session scope")] = None,
    open: Annotated[bool | None, Field(description="true: open only; false: closed only")] = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> dict[str, Any]:
    """List episodes, the latest started first, with their summaries and memory counts."""
    filters = EpisodeFilters(user_id=user_id, agent_id=agent_id, run_id=run_id, open=open)

    def run(key: ApiKey) -> dict[str, Any]:
        page = episode_list(project=key.project, filters=filters, limit=limit, offset=offset)
        return page_body(page, episode_body)

    return await call("read", run)
