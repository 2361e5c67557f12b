"""`add`: conversation in, memory events out (seed 003 §3.2 and §4).

parse → extract facts (LLM, or the offline extractor) → for each fact: embed, fetch the 5 most
similar memories in scope, decide ADD / UPDATE / DELETE / NONE (LLM, or similarity + slots
offline) → apply every event of the call in one transaction, through the same services as
every other write (history, dedup, entities, live events) → `{"results": [events]}`.

Degradation (seed 003 §14.3): extraction failing returns no events; a fact whose embedding
fails is skipped; a failed decision call falls back to the offline decision for that fact.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from memories.models import Memory
from memories.selectors.similar import Neighbour, memories_similar_to
from memories.services.content import Scope, check_metadata, content_hash
from memories.services.contradictions import contradiction_cues, contradictions_detect_for
from memories.services.dedup import lock_scopes
from memories.services.embedding import embed_or_none
from memories.services.extraction.llm import Decision, decide_llm, extract_facts_llm
from memories.services.extraction.messages import conversation_text, parse_messages
from memories.services.extraction.offline import (
    TYPE_IMPORTANCE,
    extract_facts_offline,
    infer_memory_type,
)
from memories.services.extraction.slots import fact_slot, normalise
from memories.services.memories import (
    MemoryInput,
    find_live_duplicate,
    memory_create,
    memory_update,
)
from memories.services.pii import mask_pii
from memories.services.supersede import memory_supersede
from memories.services.tuning import tuning
from memoryplatform.lib.actor import Actor
from memoryplatform.lib.errors import Conflict, InvalidInput, NotFound, ProviderError
from memoryplatform.llm import ChatLLM, get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)

CANDIDATES = 5
SOURCE = "add"


def _event(event: str, memory: Memory | None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(memory.pk) if memory is not None else None,
        "event": event,
        "memory": memory.content if memory is not None else None,
    }
    body.update({key: value for key, value in extra.items() if value is not None})
    return body


def _check_prompt(prompt: Any) -> str | None:
    if prompt is None or prompt == "":
        return None
    if not isinstance(prompt, str):
        raise InvalidInput("prompt must be a string", fields={"prompt": ["must be a string"]})
    return prompt


def memories_add(
    *,
    project: Project,
    messages: Any,
    scope: Scope,
    actor: Actor,
    metadata: dict[str, Any] | None = None,
    prompt: str | None = None,
    infer: bool = True,
) -> dict[str, list[dict[str, Any]]]:
    parsed = parse_messages(messages)
    metadata = check_metadata(metadata or {})
    prompt = _check_prompt(prompt)
    if scope.is_empty:
        Scope.of({}, required=True)  # raises the standard scope error
    if not infer:
        text = messages if isinstance(messages, str) else conversation_text(parsed)
        return {"results": _store_verbatim(project, text, scope, metadata, actor)}
    llm = get_llm()
    facts = _extract(project, llm, parsed, prompt)
    if facts is None:
        return {"results": []}
    vectors = _embed(facts)
    pipeline = _Pipeline(project=project, scope=scope, metadata=metadata, actor=actor, llm=llm)
    with transaction.atomic():
        lock_scopes(project=project, scopes=[scope])
        for fact, vector in zip(facts, vectors, strict=True):
            if vector is None:
                logger.warning("skipping a fact whose embedding failed")
                continue
            pipeline.process(fact, vector)
    return {"results": pipeline.events}


def _extract(project: Project, llm: ChatLLM | None, parsed: Any, prompt: str | None) -> Any:
    if llm is None:
        facts = extract_facts_offline(parsed)
    else:
        conversation = mask_pii(project=project, text=conversation_text(parsed))
        try:
            facts = extract_facts_llm(llm, conversation=conversation, prompt=prompt)
        except ProviderError as exc:
            logger.warning("fact extraction failed, nothing stored: %s", exc)
            return None
    masked = [mask_pii(project=project, text=fact) for fact in facts]
    return list(dict.fromkeys(fact for fact in masked if fact.strip()))


def _embed(facts: list[str]) -> list[list[float] | None]:
    """One batch; if it fails, fact by fact, so one bad fact does not sink the others."""
    vectors = embed_or_none(facts)
    if facts and all(vector is None for vector in vectors):
        vectors = [embed_or_none([fact])[0] for fact in facts]
    return vectors


def _store_verbatim(
    project: Project, text: str, scope: Scope, metadata: dict[str, Any], actor: Actor
) -> list[dict[str, Any]]:
    result = memory_create(
        project=project,
        data=MemoryInput(content=text, metadata=metadata, source=SOURCE, **scope.as_dict()),
        actor=actor,
    )
    if result.created:
        return [_event("ADD", result.memory, new_memory=result.memory.content)]
    return [_event("NONE", result.memory)]


class _Pipeline:
    def __init__(
        self,
        *,
        project: Project,
        scope: Scope,
        metadata: dict[str, Any],
        actor: Actor,
        llm: ChatLLM | None,
    ) -> None:
        self.project, self.scope, self.metadata, self.actor, self.llm = (
            project,
            scope,
            metadata,
            actor,
            llm,
        )
        self.events: list[dict[str, Any]] = []

    def process(self, fact: str, vector: list[float]) -> None:
        neighbours = memories_similar_to(
            project=self.project, embedding=vector, scope=self.scope, limit=CANDIDATES
        )
        decisions = self._decide(fact, neighbours)
        replacement: Memory | None = None
        deletes = [d for d in decisions if d.event == "DELETE"]
        for decision in [d for d in decisions if d.event != "DELETE"]:
            try:
                memory = self._apply(decision, fact, vector, neighbours)
            except NotFound:
                continue  # an earlier fact of this call already removed the target
            replacement = replacement or memory
        for decision in deletes:
            self._delete(decision, replacement)

    # --- decisions ---------------------------------------------------------------------

    def _decide(self, fact: str, neighbours: list[Neighbour]) -> list[Decision]:
        if self.llm is not None:
            try:
                return decide_llm(self.llm, fact=fact, candidates=[n.memory for n in neighbours])
            except ProviderError as exc:
                logger.warning("update decision failed, deciding offline: %s", exc)
        return decide_offline(project=self.project, fact=fact, neighbours=neighbours)

    # --- events ------------------------------------------------------------------------

    def _apply(
        self, decision: Decision, fact: str, vector: list[float], neighbours: list[Neighbour]
    ) -> Memory | None:
        if decision.event == "ADD":
            return self._add(decision.text or fact, fact, vector, neighbours)
        if decision.event == "UPDATE" and decision.target is not None:
            return self._update(decision.target, decision.text or fact)
        target = decision.target or (neighbours[0].memory if neighbours else None)
        self.events.append(_event("NONE", target))
        return None

    def _add(
        self, text: str, fact: str, vector: list[float], neighbours: list[Neighbour]
    ) -> Memory:
        memory_type = infer_memory_type(text)
        data = MemoryInput(
            content=text,
            memory_type=memory_type,
            importance=TYPE_IMPORTANCE.get(memory_type, 0.5),
            metadata=dict(self.metadata),
            source=SOURCE,
            **self.scope.as_dict(),
        )
        result = memory_create(
            project=self.project,
            data=data,
            actor=self.actor,
            embedding=vector if text == fact else None,
        )
        if not result.created:
            self.events.append(_event("NONE", result.memory))
            return result.memory
        self.events.append(_event("ADD", result.memory, new_memory=result.memory.content))
        contradictions_detect_for(
            project=self.project, memory=result.memory, neighbours=neighbours, use_llm=False
        )
        return result.memory

    def _update(self, target: Memory, text: str) -> Memory:
        if normalise(text) == normalise(target.content):
            self.events.append(_event("NONE", target))
            return target
        changes: dict[str, Any] = {"content": text}
        if self.metadata:
            changes["metadata"] = {**target.metadata, **self.metadata}
        old = target.content
        try:
            memory = memory_update(
                project=self.project, memory_id=target.pk, changes=changes, actor=self.actor
            )
        except Conflict:
            # the new text already exists as another memory: that one supersedes the target
            existing = find_live_duplicate(
                project=self.project, digest=content_hash(text), scope=Scope.of(target)
            )
            memory_supersede(project=self.project, old=target, new=existing, actor=self.actor)
            self.events.append(_event("DELETE", target, old_memory=old))
            return existing or target
        self.events.append(_event("UPDATE", memory, old_memory=old, new_memory=memory.content))
        return memory

    def _delete(self, decision: Decision, replacement: Memory | None) -> None:
        target = decision.target
        if target is None or target.deleted_at is not None:
            return
        if not Memory.objects.filter(pk=target.pk, deleted_at__isnull=True).exists():
            return
        memory_supersede(project=self.project, old=target, new=replacement, actor=self.actor)
        self.events.append(_event("DELETE", target, old_memory=target.content))


def decide_offline(*, project: Project, fact: str, neighbours: list[Neighbour]) -> list[Decision]:
    """Similarity and slots instead of a model: a (near-)duplicate is NONE; the same
    single-valued slot with another value ("lives in NYC" → "moved to SF") is an UPDATE of
    the old memory (its history keeps the superseded text); anything else is an ADD (with
    negation/antonym cues flagged for review by the contradiction detector, never deleted)."""
    digest = content_hash(fact)
    threshold = float(tuning(project, "dedup_threshold"))
    for neighbour in neighbours:
        if neighbour.memory.content_hash == digest:
            return [Decision("NONE", target=neighbour.memory)]
    if neighbours and neighbours[0].similarity >= threshold:
        top = neighbours[0].memory
        if not contradiction_cues(top.content, fact):
            return [Decision("NONE", target=top)]
    slot = fact_slot(fact)
    if slot is not None:
        for neighbour in neighbours:
            other = fact_slot(neighbour.memory.content)
            if other is None or other.name != slot.name:
                continue
            if other.value == slot.value:
                return [Decision("NONE", target=neighbour.memory)]
            return [Decision("UPDATE", text=fact, target=neighbour.memory)]
    return [Decision("ADD", text=fact)]
