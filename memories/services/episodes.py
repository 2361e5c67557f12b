"""Episodes: start one for a conversation or task, attach what is stored during it, close it
with a summary (docs/episodes.md).

A memory joins the episode its writer names (`episode_id`), else the open episode of its run
(`run_id`): an agent that starts an episode for its session finds every memory of the
session in it, in order. A run has at most one open episode (a database constraint); starting
another for the same run closes the open one first. Closing writes the episode's summary: the
caller's text, else the LLM's (when one is configured; the memories are quoted to it as data),
else an extractive one (the most important memories, in the order they were stored). The
summary is also stored as a memory of the episode (type `episode`, layer `episodic`, tag
`episode_summary`), so search finds past episodes by what happened in them.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.memory_scope import Scope
from memories.models import Episode, Memory, MemoryLayer, MemoryType
from memories.selectors.episodes import episode_memories, episode_open_for_run
from memories.services.content import capped_text, check_metadata
from memories.services.layers import session_close
from platformcore.events import emit
from platformcore.lib.actor import Actor
from platformcore.lib.errors import Conflict, InvalidInput, NotFound, ProviderError, parse_uuid
from platformcore.llm import DATA_RULE, data_block, get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)

MAX_NAME = 200
MAX_SUMMARY = 4000
EXTRACTIVE_ITEMS = 8  # memories an extractive summary quotes
LLM_MEMORIES = 200  # memories shown to the model, each cut to LLM_MEMORY_CHARS
LLM_MEMORY_CHARS = 1000
SUMMARY_TAG = "episode_summary"
# what an extractive summary prefers, after importance: what is costly to relearn
_TYPE_ORDER = ["decision", "error", "procedure", "preference", "learning", "fact"]

SUMMARY_PROMPT = """\
You summarise one episode (a conversation or a task) of an AI assistant from the memories it
stored during it, given in the order they were stored. Write 2 to 6 plain sentences: what the
episode was about, what was decided, what failed and how it was resolved, and what remains
open. Use only what the memories say. Answer with a JSON object {"summary": "..."}."""


@transaction.atomic
def episode_start(
    *,
    project: Project,
    scope: Scope,
    actor: Actor,
    name: Any = "",
    metadata: dict[str, Any] | None = None,
) -> Episode:
    """Open an episode in `scope` (its run_id is the session). An episode still open for the
    same run is closed first, with its summary."""
    name = capped_text("name", name if name is not None else "", MAX_NAME).strip()
    metadata = check_metadata(metadata or {})
    if scope.is_empty:
        Scope.of({}, required=True)
    previous = episode_open_for_run(project=project, run_id=scope.run_id)
    if previous is not None:  # the session goes on: its working memory stays
        episode_close(project=project, episode_id=previous.pk, actor=actor, end_session=False)
    episode = Episode(project=project, name=name, metadata=metadata, **scope.as_dict())
    try:
        with transaction.atomic():
            episode.save(force_insert=True)
    except IntegrityError as exc:  # a concurrent start for the same run won
        raise Conflict(
            "another episode was started for this run at the same time; retry",
            fields={"run_id": ["an episode is already open for this run"]},
        ) from exc
    _emit(project, episode, "episode_started")
    return episode


@transaction.atomic
def episode_close(
    *,
    project: Project,
    episode_id: UUID | str,
    actor: Actor,
    summary: Any = None,
    summarize: bool = True,
    end_session: bool = True,
) -> Episode:
    """Close an episode: `ended_at` now and its summary (see the module docstring; none with
    `summarize` false and no `summary`), and with `end_session` its run's working memory
    (services/layers.py, `session_close`). Closing a closed episode changes nothing."""
    pk = parse_uuid(episode_id, what="episode")
    episode = Episode.objects.select_for_update().filter(project=project, pk=pk).first()
    if episode is None:
        raise NotFound("episode not found")
    if episode.ended_at is not None:
        return episode
    memories = episode_memories(project=project, episode=episode)
    text, method = _summary(episode, memories, summary, summarize)
    episode.ended_at = max(timezone.now(), episode.started_at)
    episode.summary, episode.summary_method = text, method
    episode.save(update_fields=["ended_at", "summary", "summary_method"])
    if text:
        _store_summary(project, episode, text, actor)
    _emit(project, episode, "episode_closed")
    if end_session and episode.run_id:
        session_close(project=project, session_id=episode.run_id, actor=actor)
    return episode


def _summary(
    episode: Episode, memories: list[Memory], given: Any, summarize: bool
) -> tuple[str, str]:
    if given is not None and given != "":
        return capped_text("summary", given, MAX_SUMMARY).strip(), "given"
    if not summarize or not memories:
        return "", ""
    written = _llm_summary(memories)
    if written:
        return written, "llm"
    return extractive_summary(memories), "extractive"


def _llm_summary(memories: list[Memory]) -> str:
    """The model's summary, "" when no LLM is configured or the call fails."""
    llm = get_llm()
    if llm is None:
        return ""
    shown = [
        {"type": m.memory_type, "content": m.content[:LLM_MEMORY_CHARS]}
        for m in memories[:LLM_MEMORIES]
    ]
    try:
        answer = llm.complete_json(
            system=f"{SUMMARY_PROMPT}\n\n{DATA_RULE}", user=data_block("EPISODE_MEMORIES", shown)
        )
    except ProviderError as exc:
        logger.warning("episode summary fell back to the extractive one: %s", exc)
        return ""
    text = answer.get("summary") if isinstance(answer, dict) else None
    if not isinstance(text, str) or not text.strip():
        return ""
    return text.strip()[:MAX_SUMMARY]


def extractive_summary(memories: list[Memory]) -> str:
    """The most important memories (by importance, then type: decisions and errors before
    plain facts), quoted in the order they were stored, one a line."""

    def rank(item: tuple[int, Memory]) -> tuple[float, int, int]:
        index, memory = item
        kind = memory.memory_type
        order = _TYPE_ORDER.index(kind) if kind in _TYPE_ORDER else len(_TYPE_ORDER)
        return (-memory.importance, order, index)

    chosen = sorted(sorted(enumerate(memories), key=rank)[:EXTRACTIVE_ITEMS])
    lines = [f"- [{memory.memory_type}] {_first_line(memory.content)}" for _, memory in chosen]
    header = f"{len(memories)} memories; the most important:"
    return "\n".join([header, *lines])[:MAX_SUMMARY]


def _first_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _store_summary(project: Project, episode: Episode, text: str, actor: Actor) -> None:
    # memory_create assigns every new memory its episode (this module): the summary is one
    # such write, so this import closes a loop and cannot move up
    from memories.services.memories import MemoryInput, memory_create

    data = MemoryInput(
        content=text,
        memory_type=MemoryType.EPISODE,
        layer=MemoryLayer.EPISODIC,
        tags=[SUMMARY_TAG],
        source="episode",
        metadata={"episode_id": str(episode.pk), "episode_name": episode.name},
        episode_id=episode.pk,
        user_id=episode.user_id,
        agent_id=episode.agent_id,
        run_id=episode.run_id,
    )
    memory_create(project=project, data=data, actor=actor)


def episodes_for_memories(
    *, project: Project, memories: list[Memory], requested: list[Any]
) -> None:
    """Set each new memory's episode: the one requested (it must be the project's), else the
    open episode of its run. Two queries at most, whatever the number of memories."""
    named = {parse_episode_id(value) for value in requested if value}
    if named:
        found = set(
            Episode.objects.filter(project=project, pk__in=named).values_list("pk", flat=True)
        )
        missing = sorted(str(pk) for pk in named - found)
        if missing:
            message = f"no episode {missing[0]} in this project"
            raise InvalidInput(message, fields={"episode_id": [message]})
    pairs = list(zip(memories, requested, strict=True))
    runs = {memory.run_id for memory, value in pairs if not value and memory.run_id}
    open_by_run: dict[str | None, Any] = {}
    if runs:
        still_open = Episode.objects.filter(project=project, run_id__in=runs, ended_at=None)
        open_by_run = dict(still_open.values_list("run_id", "pk"))
    for memory, value in pairs:
        memory.episode_id = parse_episode_id(value) if value else open_by_run.get(memory.run_id)


def parse_episode_id(value: Any) -> UUID:
    try:
        return parse_uuid(value, what="episode")
    except NotFound as exc:
        message = "not a valid episode id"
        raise InvalidInput(message, fields={"episode_id": [message]}) from exc


def _emit(project: Project, episode: Episode, type: Any) -> None:
    emit(
        project_id=project.pk,
        project_slug=project.slug,
        type=type,
        data={"id": str(episode.pk), "name": episode.name, "summary": episode.summary},
        scope={n: v for n in ("user_id", "agent_id", "run_id") if (v := getattr(episode, n))},  # type: ignore[misc,arg-type]
    )
