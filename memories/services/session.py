"""Session tools: `reflect` at session end, `context` at session start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Case, Q, QuerySet, When

from memories.memory_scope import Scope
from memories.models import Episode, Memory, MemoryLayer, MemoryType, default_importance
from memories.selectors.episodes import episode_open_for_run
from memories.selectors.search_types import summary_fits
from memories.services.bulk import memories_create_bulk
from memories.services.content import check_metadata
from memories.services.episodes import episode_close
from memories.services.layers import SessionCloseReport, check_promote, session_close
from memories.services.memories import MemoryInput
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, check_count
from tenants.models import Project
from tenants.namespaces import current_namespace

# reflect parameter -> memory type (Memento); open questions are facts tagged as such
REFLECT_FIELDS = {
    "decisions": ("decision", []),
    "errors_resolved": ("error", ["resolved"]),
    "new_procedures": ("procedure", []),
    "open_questions": ("fact", ["open_question"]),
}
DEFAULT_CONTEXT_TYPES = ["preference", "error", "procedure"]
DEFAULT_TOKEN_BUDGET = 2000

# items of one list of a session reflection (decisions, errors, learnings...)
MAX_REFLECT_ITEMS = 100


def _strings(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name} must be a list of strings", fields={name: ["list of strings"]})
    return [v.strip() for v in value if v.strip()]


@dataclass
class Reflection:
    results: list[Any]  # the create results in order, the summary first
    session: SessionCloseReport | None  # the session's working memory, closed

    def as_dict(self) -> dict[str, Any]:
        return {
            "results": [
                {
                    "id": str(result.memory.pk),
                    "memory_type": result.memory.memory_type,
                    "content": result.memory.content,
                    "created": result.created,
                }
                for result in self.results
            ],
            "session": self.session.as_dict() if self.session is not None else None,
        }


@transaction.atomic
def session_reflect(
    *,
    project: Project,
    scope: Scope,
    actor: Actor,
    summary: str,
    session_id: str | None = None,
    lists: dict[str, Any] | None = None,
    task_effectiveness: dict[str, Any] | None = None,
    promote: list[Any] | None = None,
) -> Reflection:
    """Turn a session summary into typed memories (the summary first). `session_id` becomes
    the memories' run_id when no run_id is given. The memories join the run's open episode,
    which the reflection then closes with `summary` as its summary (the summary memory is
    episodic), and the session ends: its working memory leaves but for what the promotion
    rule keeps and `promote` names (services/layers.py, `session_close`)."""
    wanted = check_promote(promote)
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidInput("summary is required", fields={"summary": ["must not be empty"]})
    scope = Scope(scope.user_id, scope.agent_id, scope.run_id or session_id)
    Scope.of(scope.as_dict())  # at least one scope field
    lists = lists or {}
    for name, values in lists.items():
        check_count(name, values, MAX_REFLECT_ITEMS)
    base = {"source": "reflect", "metadata": {"session_id": session_id} if session_id else {}}
    summary_meta = dict(base["metadata"])
    if task_effectiveness is not None:
        summary_meta["task_effectiveness"] = check_metadata(task_effectiveness)
    items = [
        MemoryInput(
            content=summary.strip(),
            memory_type="fact",
            layer=MemoryLayer.EPISODIC,
            tags=["session_summary"],
            importance=default_importance("fact"),
            source="reflect",
            metadata=summary_meta,
            **scope.as_dict(),
        )
    ]
    for name, (memory_type, tags) in REFLECT_FIELDS.items():
        for text in _strings(name, lists.get(name)):
            items.append(
                MemoryInput(
                    content=text,
                    memory_type=memory_type,
                    tags=list(tags),
                    importance=default_importance(memory_type),
                    source="reflect",
                    metadata=dict(base["metadata"]),
                    **scope.as_dict(),
                )
            )
    results = memories_create_bulk(project=project, items=items, actor=actor)
    _close_episode(project, scope, actor, summary.strip())
    session = None
    if scope.run_id:
        session = session_close(
            project=project, session_id=scope.run_id, actor=actor, promote=wanted
        )
    return Reflection(results, session)


def _close_episode(project: Project, scope: Scope, actor: Actor, summary: str) -> None:
    owner = {"user_id": scope.user_id, "agent_id": scope.agent_id}
    episode = episode_open_for_run(project=project, run_id=scope.run_id, **owner)
    if episode is not None:
        episode_close(
            project=project,
            episode_id=episode.pk,
            actor=actor,
            summary=summary,
            end_session=False,  # the reflection ends it, with what it promotes
        )


@dataclass
class SessionContext:
    core: list[Memory]
    working: list[Memory]
    tokens_used: int
    token_budget: int
    episode: Episode | None = None  # the session's open episode, if any

    def as_text(self) -> str:
        lines = [_line(m) for m in self.core]
        if self.episode is not None:
            lines += ["", f"Current episode: {self.episode.name or self.episode.pk}"]
        if self.working:
            lines += ["", "Working memory (this session):"]
            lines += [_line(m) for m in self.working]
        return "\n".join(lines)


def _line(memory: Memory) -> str:
    if getattr(memory, "summarized", False):
        return f"[{memory.memory_type}] (summary) {memory.summary}"
    return f"[{memory.memory_type}] {memory.content}"


def _fill(queryset: QuerySet[Memory], budget: int, limit: int = 200) -> tuple[list[Memory], int]:
    """Memories in order while they fit; one whose full text does not fit goes as its
    summary when that does (`summarized`), else a shorter memory further down may."""
    chosen, used = [], 0
    for memory in queryset[:limit]:
        cost = memory.token_count or 1
        if used + cost > budget:
            if not summary_fits(memory, budget - used):
                continue
            memory.summarized, cost = True, memory.summary_tokens  # type: ignore[attr-defined]
        chosen.append(memory)
        used += cost
    return chosen, used


def session_context(
    *,
    project: Project,
    scope: Scope,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    types: list[str] | None = None,
    session_id: str | None = None,
) -> SessionContext:
    """Core memory (the most important memories of `types` in the user/agent scope, any state)
    then, with `session_id`, working memory (that run's memories and those of its open
    episode: short-term ones first, newest first), together within `token_budget` tokens.
    Core gets two thirds of the budget when a session is given; anything it leaves unused
    goes to working memory."""
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise InvalidInput("token_budget must be a positive integer", fields={"token_budget": []})
    types = types or DEFAULT_CONTEXT_TYPES
    unknown = [t for t in types if t not in MemoryType.values]
    if unknown:
        raise InvalidInput("unknown memory type", fields={"types": unknown})
    base = Memory.objects.for_project(project).alive()  # within the caller's agent namespace
    base = base.defer("embedding", "search_vector", "summary_embedding")
    owner = Scope(scope.user_id, scope.agent_id, None)
    if owner.is_empty and not session_id:
        Scope.of({}, required=True)
    namespace = current_namespace()
    if namespace is not None and owner.agent_id == namespace.agent:
        owner = Scope(owner.user_id, None, None)  # the reading agent: its own and the pool's
    core_qs = base.filter(memory_type__in=types, **owner.as_filter()).order_by(
        "-pinned", "-importance", "-decay_score", "-created_at"
    )
    if session_id:
        core_qs = core_qs.exclude(run_id=session_id)
    core_budget = token_budget * 2 // 3 if session_id else token_budget
    core, used = _fill(core_qs, core_budget)
    working: list[Memory] = []
    episode = episode_open_for_run(
        project=project, run_id=session_id, user_id=scope.user_id, agent_id=scope.agent_id
    )
    if session_id:
        in_session = Q(run_id=session_id) | Q(episode=episode) if episode else Q(run_id=session_id)
        working_qs = base.filter(in_session, **owner.as_filter()).order_by(
            _short_term_first(), "-created_at"
        )
        working, used_working = _fill(working_qs, token_budget - used)
        used += used_working
    return SessionContext(
        core=core, working=working, tokens_used=used, token_budget=token_budget, episode=episode
    )


def _short_term_first() -> Any:
    """The session's short-term memories before what it promoted or summarised."""
    return Case(When(layer=MemoryLayer.SHORT_TERM, then=0), default=1)
