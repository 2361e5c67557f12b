"""Conversation and session tools: add (facts from messages), context (session start),
reflect (session end)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from mcpserver.auth import actor_for
from mcpserver.tools import call, session_id_of
from mcpserver.tools.memory import DEFAULT_AGENT_ID, AgentId, MemoryType, RunId, UserId
from memories.memory_scope import Scope
from memories.representations import context_body
from memories.services.fact_extraction import memories_add
from memories.services.session import session_context, session_reflect
from tenants.models import ApiKey


class Message(BaseModel):
    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str


def scope_or_default(user_id: str | None, agent_id: str | None, run_id: str | None) -> Scope:
    """The given scope, or the default agent's when none is given (as memory_store does)."""
    scope = Scope(user_id or None, agent_id or None, run_id or None)
    return Scope(agent_id=DEFAULT_AGENT_ID) if scope.is_empty else scope


async def memory_add(
    messages: Annotated[
        list[Message] | str, Field(description="The conversation, or one text to learn from")
    ],
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
    metadata: dict[str, Any] | None = None,
    infer: Annotated[
        bool, Field(description="Extract facts and reconcile (ADD/UPDATE/DELETE/NONE)")
    ] = True,
    prompt: Annotated[
        str | None,
        Field(description="Replaces the fact-extraction prompt for this call (LLM only)"),
    ] = None,
) -> dict[str, Any]:
    """Learn from a conversation: extract the durable facts, compare each with what is
    already known in the scope and ADD, UPDATE, DELETE (a soft delete, restorable) or skip
    (NONE). Returns the events. Works offline; uses the configured LLM when there is one."""
    raw = messages if isinstance(messages, str) else [m.model_dump() for m in messages]

    def run(key: ApiKey) -> dict[str, Any]:
        return memories_add(
            project=key.project,
            messages=raw,
            scope=scope_or_default(user_id, agent_id, run_id),
            actor=actor_for(key),
            metadata=metadata,
            prompt=prompt,
            infer=infer,
        )

    return await call("write", run)


async def memory_context(
    user_id: UserId = None,
    agent_id: AgentId = None,
    session_id: Annotated[
        str | None, Field(description="Also load this session's memories")
    ] = None,
    token_budget: Annotated[int, Field(ge=1, le=20000)] = 2000,
    types: Annotated[
        list[MemoryType] | None, Field(description="Default: preference, error, procedure")
    ] = None,
) -> dict[str, Any]:
    """Load what to know at the start of a session: the most important preferences, errors
    and procedures (core memory) and, with session_id, that session's memories, within a
    token budget. `text` is ready to read."""

    def run(key: ApiKey) -> dict[str, Any]:
        context = session_context(
            project=key.project,
            scope=scope_or_default(user_id, agent_id, None),
            token_budget=token_budget,
            types=list(types) if types else None,
            session_id=session_id,
        )
        return context_body(context)

    return await call("read", run)


class TaskEffectiveness(BaseModel):
    overall_success: bool
    tool_highlights: list[str] = Field(default_factory=list)
    tool_pain_points: list[str] = Field(default_factory=list)


async def memory_reflect(
    summary: Annotated[str, Field(description="What happened in this session")],
    decisions: list[str] | None = None,
    errors_resolved: Annotated[list[str] | None, Field(description="Error and its fix")] = None,
    new_procedures: list[str] | None = None,
    open_questions: list[str] | None = None,
    session_id: str | None = None,
    user_id: UserId = None,
    agent_id: AgentId = None,
    task_effectiveness: TaskEffectiveness | None = None,
    promote: Annotated[
        list[str] | None,
        Field(description="Ids of the session's working memory to keep as long-term memory"),
    ] = None,
) -> dict[str, Any]:
    """At the end of a session, turn its summary into typed memories for the next one:
    decisions, resolved errors, new procedures and open questions (the summary is kept as a
    fact). With session_id the session ends: its working memory leaves, but for what is
    important, pinned, often read or named in promote."""
    lists = {
        "decisions": decisions,
        "errors_resolved": errors_resolved,
        "new_procedures": new_procedures,
        "open_questions": open_questions,
    }

    def run(key: ApiKey) -> dict[str, Any]:
        reflection = session_reflect(
            project=key.project,
            scope=scope_or_default(user_id, agent_id, None),
            actor=actor_for(key),
            summary=summary,
            session_id=session_id,
            lists=lists,
            task_effectiveness=task_effectiveness.model_dump() if task_effectiveness else None,
            promote=promote,
        )
        return reflection.as_dict()

    return await call("write", run)


# --- Memento names -----------------------------------------------------


async def reflect(
    summary: str,
    sessionId: Annotated[
        str | None, Field(description="The session that ends (default: this MCP session)")
    ] = None,
    decisions: list[str] | None = None,
    errors_resolved: list[str] | None = None,
    new_procedures: list[str] | None = None,
    open_questions: list[str] | None = None,
    agentId: str | None = None,
    task_effectiveness: TaskEffectiveness | None = None,
    promote: Annotated[
        list[str] | None,
        Field(description="Ids of session fragments to keep beyond the session"),
    ] = None,
    ctx: Context | None = None,
) -> dict[str, Any]:
    """Convert a session summary into typed fragments at session end; the session's
    working memory (scope "session" fragments) then leaves, but for `promote`."""
    return await memory_reflect(
        summary=summary,
        session_id=sessionId or session_id_of(ctx),
        promote=promote,
        decisions=decisions,
        errors_resolved=errors_resolved,
        new_procedures=new_procedures,
        open_questions=open_questions,
        agent_id=agentId,
        task_effectiveness=task_effectiveness,
    )


async def context(
    tokenBudget: Annotated[int, Field(ge=1, le=20000)] = 2000,
    types: list[MemoryType] | None = None,
    sessionId: Annotated[
        str | None, Field(description="Whose working memory (default: this MCP session's)")
    ] = None,
    agentId: str | None = None,
    ctx: Context | None = None,
) -> dict[str, Any]:
    """Load core memory and a session's working memory (what `remember` stored with
    scope "session"; by default this MCP session's) at session start."""
    return await memory_context(
        agent_id=agentId,
        session_id=sessionId or session_id_of(ctx),
        token_budget=tokenBudget,
        types=types,
    )
