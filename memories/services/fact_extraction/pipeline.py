"""`add`: conversation in, memory events out.

parse → extract facts (LLM, or the offline extractor) → for each fact: embed, fetch the 5 most
similar memories in scope, decide ADD / UPDATE / DELETE / NONE (LLM, or similarity + slots
offline) → apply every event of the call in one transaction, through the same services as
every other write (history, dedup, entities, live events) → `{"results": [events]}`.
A DELETE (the model's, or offline an explicit end of a stored state: "no longer", "started
eating meat" against "is vegetarian") is a soft delete with a DELETE history entry, restorable;
a project with `"delete_decisions": "review"`, and any pinned target, gets a contradiction
review instead (`_Applier._review_delete`).

Everything up to the decisions runs outside any transaction and without the scope's lock, so
a slow model never blocks the scope's other writers; only applying the events takes the lock.
The store may have changed in between, so each decision is checked again under the lock
against the memory the model was shown (`_Applier._current`): a target that was deleted, or
whose content changed (not by this call), voids the decision: UPDATE and NONE become an ADD
of their text (the write-time duplicate rules still merge it into an equal or near-identical
memory), DELETE becomes NONE (nothing is removed on the strength of a text the model never
saw).

Degradation: extraction failing returns no events; a fact whose embedding
fails is skipped; a failed decision call falls back to the offline decision for that fact.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction

from memories.memory_scope import Scope
from memories.models import Memory, MemoryLayer
from memories.selectors.similar import Neighbour, memories_similar_to
from memories.services.content import check_metadata, content_hash
from memories.services.contradictions import (
    Verdict,
    contradiction_cues,
    contradiction_record,
    contradictions_detect_for,
)
from memories.services.dedup import lock_scopes
from memories.services.embedding import embed_or_none, prefetched_embeddings
from memories.services.fact_extraction.llm import Decision, decide_llm, extract_facts_llm
from memories.services.fact_extraction.messages import conversation_text, parse_messages
from memories.services.fact_extraction.retraction import ends_state
from memories.services.memories import (
    MemoryInput,
    find_live_duplicate,
    memory_create,
    memory_delete,
    memory_update,
)
from memories.services.pii import mask_pii
from memories.services.supersede import memory_supersede
from memories.services.tuning import tuning
from platformcore.lib.actor import Actor
from platformcore.lib.errors import Conflict, InvalidInput, NotFound, ProviderError
from platformcore.lib.hooks import run_hooks
from platformcore.lib.text.offline_facts import (
    extract_facts_offline,
    infer_memory_type,
)
from platformcore.lib.text.slots import fact_slot, normalise
from platformcore.llm import ChatLLM, get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)

CANDIDATES = 5
SOURCE = "add"


@dataclass(frozen=True)
class FactPlan:
    """One fact and what was decided about it, before anything is written."""

    fact: str
    vector: list[float]
    decisions: list[Decision]
    decided_by: str = "offline"  # or "llm"


def _event(event: str, memory: Memory | None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(memory.pk) if memory is not None else None,
        "event": event,
        "memory": memory.content if memory is not None else None,
    }
    body.update({key: value for key, value in extra.items() if value is not None})
    return body


MAX_PROMPT_CHARS = 4000


def _check_prompt(prompt: Any) -> str | None:
    if prompt is None or prompt == "":
        return None
    if not isinstance(prompt, str):
        raise InvalidInput("prompt must be a string", fields={"prompt": ["must be a string"]})
    if len(prompt) > MAX_PROMPT_CHARS:
        message = f"at most {MAX_PROMPT_CHARS} characters"
        raise InvalidInput(f"prompt: {message}", fields={"prompt": [message]})
    return prompt


def _check_input_size(conversation: str) -> None:
    """What one call may send the model (MEMORY_LLM_MAX_INPUT_CHARS)."""
    limit = settings.MEMORY_LLM_MAX_INPUT_CHARS
    if len(conversation) > limit:
        message = f"the conversation is longer than {limit} characters; send it in parts"
        raise InvalidInput(message, fields={"messages": [message]})


def memories_add(
    *,
    project: Project,
    messages: Any,
    scope: Scope,
    actor: Actor,
    metadata: dict[str, Any] | None = None,
    prompt: str | None = None,
    infer: bool = True,
    origin: dict[str, Any] | None = None,
    occurred_at: datetime | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """`prompt` replaces our extraction task for this call (mem0's `prompt`; the output
    format and the data rule stay after it, docs/security.md). `origin` says where the messages
    came from (a document chunk: `{"chunk_id": ...}`, documents.refs.document_learn): what is
    learned is stored in the documentary layer and the `memories_learned` hooks record the
    source of every memory the call added, updated or matched. `occurred_at` is when the
    messages were said, if not now (mem0's `timestamp`): the memories added carry it."""
    parsed = parse_messages(messages)
    _check_input_size(conversation_text(parsed))  # offline too: the work one call may ask for
    metadata = check_metadata(metadata or {})
    prompt = _check_prompt(prompt)
    if scope.is_empty:
        Scope.of({}, required=True)  # raises the standard scope error
    if not infer:
        text = messages if isinstance(messages, str) else conversation_text(parsed)
        with transaction.atomic():
            events = _store_verbatim(project, text, scope, metadata, actor, origin, occurred_at)
            _learned(project, events, origin)
        return {"results": events}
    llm = get_llm()
    contexts = _extract(project, llm, parsed, prompt)
    if contexts is None:
        return {"results": []}
    # reads and model calls: no transaction, no lock
    plans = _plan(project, scope, llm, list(contexts))
    rewritten = [d.text for p in plans for d in p.decisions if d.text and d.text != p.fact]
    applier = _Applier(
        project=project, scope=scope, metadata=metadata, actor=actor, contexts=contexts
    )
    applier.layer = MemoryLayer.DOCUMENTARY if origin else None
    applier.occurred_at = occurred_at
    with prefetched_embeddings(rewritten), transaction.atomic():  # embedded before the lock
        lock_scopes(project=project, scopes=[scope])
        for plan in plans:
            applier.apply(plan)
        _learned(project, applier.events, origin)
    return {"results": applier.events}


def _learned(project: Project, events: list[dict[str, Any]], origin: dict[str, Any] | None) -> None:
    """Tell the `memories_learned` hooks where the call's memories were learned from."""
    ids = [e["id"] for e in events if e.get("id") and e["event"] in ("ADD", "UPDATE", "NONE")]
    if origin and ids:
        run_hooks("memories_learned", project=project, memory_ids=ids, origin=origin)


def _plan(project: Project, scope: Scope, llm: ChatLLM | None, facts: list[str]) -> list[FactPlan]:
    plans = []
    for fact, vector in zip(facts, _embed(facts), strict=True):
        if vector is None:
            logger.warning("skipping a fact whose embedding failed")
            continue
        neighbours = memories_similar_to(
            project=project, embedding=vector, scope=scope, limit=CANDIDATES
        )
        decisions, by = _decide(project, llm, fact, neighbours)
        plans.append(FactPlan(fact, vector, [_with_target(d, neighbours) for d in decisions], by))
    return plans


def _with_target(decision: Decision, neighbours: list[Neighbour]) -> Decision:
    """A NONE without a target is about the closest memory (reported as the event's id)."""
    if decision.event == "NONE" and decision.target is None and neighbours:
        return Decision("NONE", decision.text, neighbours[0].memory)
    return decision


def _decide(
    project: Project, llm: ChatLLM | None, fact: str, neighbours: list[Neighbour]
) -> tuple[list[Decision], str]:
    """The decisions about one fact, and who made them ("llm" or "offline")."""
    if llm is not None:
        try:
            candidates = [n.memory for n in neighbours]
            return decide_llm(llm, fact=fact, candidates=candidates, project=project), "llm"
        except ProviderError as exc:
            logger.warning("update decision failed, deciding offline: %s", exc)
    return decide_offline(project=project, fact=fact, neighbours=neighbours), "offline"


def _extract(
    project: Project, llm: ChatLLM | None, parsed: Any, prompt: str | None
) -> dict[str, str] | None:
    """{fact: its context} in order (the offline extractor's message the fact replied to;
    the model writes self-contained facts, with no context), or None if extraction failed."""
    if llm is None:
        facts = extract_facts_offline(parsed)
    else:
        conversation = mask_pii(project=project, text=conversation_text(parsed))
        _check_input_size(conversation)
        try:
            extracted = extract_facts_llm(
                llm, conversation=conversation, prompt=prompt, project=project
            )
            facts = dict.fromkeys(extracted, "")
        except ProviderError as exc:
            logger.warning("fact extraction failed, nothing stored: %s", exc)
            return None
    masked: dict[str, str] = {}
    for fact, context in facts.items():
        fact = mask_pii(project=project, text=fact)
        if fact.strip() and fact not in masked:
            masked[fact] = mask_pii(project=project, text=context) if context else ""
    return masked


def _embed(facts: list[str]) -> list[list[float] | None]:
    """One batch; if it fails, fact by fact, so one bad fact does not sink the others."""
    vectors = embed_or_none(facts)
    if facts and all(vector is None for vector in vectors):
        vectors = [embed_or_none([fact])[0] for fact in facts]
    return vectors


def _store_verbatim(
    project: Project,
    text: str,
    scope: Scope,
    metadata: dict[str, Any],
    actor: Actor,
    origin: dict[str, Any] | None = None,
    occurred_at: datetime | None = None,
) -> list[dict[str, Any]]:
    layer = MemoryLayer.DOCUMENTARY if origin else None
    data = MemoryInput(
        content=text,
        metadata=metadata,
        source=SOURCE,
        layer=layer,
        occurred_at=occurred_at,
        **scope.as_dict(),
    )
    result = memory_create(project=project, data=data, actor=actor)
    if result.created:
        return [_event("ADD", result.memory, new_memory=result.memory.content)]
    return [_event("NONE", result.memory)]


class _Applier:
    """Applies the plans of one call under the scope's lock, checking each decision again."""

    def __init__(
        self,
        *,
        project: Project,
        scope: Scope,
        metadata: dict[str, Any],
        actor: Actor,
        contexts: dict[str, str],
    ) -> None:
        self.project, self.scope, self.metadata, self.actor = project, scope, metadata, actor
        self.contexts = contexts  # fact -> the context an ADD of it is stored with
        self.events: list[dict[str, Any]] = []
        self.written: dict[UUID, str] = {}  # content hash this call gave a memory
        self.layer: str | None = None  # of what is added (None: the write's default)
        self.occurred_at: datetime | None = None  # when the messages were said, if given

    def apply(self, plan: FactPlan) -> None:
        replacement: Memory | None = None
        decisions = [self._revalidated(plan.fact, decision) for decision in plan.decisions]
        deletes = [d for d in decisions if d.event == "DELETE"]
        if tuning(self.project, "delete_decisions") != "review":
            # first, so the new fact is not flagged as contradicting what it just ended
            deletes = [d for d in deletes if not self._delete(d, plan)]
        for decision in [d for d in decisions if d.event != "DELETE"]:
            try:
                memory = self._apply(decision, plan)
            except NotFound:
                continue  # the target vanished after it was checked (same transaction: rare)
            replacement = replacement or memory
        for decision in deletes:
            self._review_delete(decision, plan, replacement)

    # --- re-validation under the lock --------------------------------------------------

    def _current(self, shown: Memory) -> Memory | None:
        """The target as it is now, or None if it is gone or its content changed since the
        model was shown it (changes this call made itself do not count)."""
        current = Memory.objects.filter(pk=shown.pk, deleted_at__isnull=True).first()
        if current is None:
            return None
        if current.content_hash not in (shown.content_hash, self.written.get(current.pk)):
            return None
        return current

    def _revalidated(self, fact: str, decision: Decision) -> Decision:
        if decision.target is None or decision.event == "ADD":
            return decision
        current = self._current(decision.target)
        if current is not None:
            return Decision(decision.event, decision.text, current)
        logger.info(
            "%s of %s is stale (deleted or changed meanwhile)", decision.event, decision.target.pk
        )
        if decision.event == "DELETE":  # reported with the memory as it is now
            row = Memory.objects.filter(pk=decision.target.pk).first()
            return Decision("NONE", None, row or decision.target)
        return Decision("ADD", decision.text or fact)  # UPDATE or NONE of a vanished memory

    # --- events ------------------------------------------------------------------------

    def _apply(self, decision: Decision, plan: FactPlan) -> Memory | None:
        if decision.event == "ADD":
            return self._add(decision.text or plan.fact, plan)
        if decision.event == "UPDATE" and decision.target is not None:
            return self._update(decision.target, decision.text or plan.fact)
        self.events.append(_event("NONE", decision.target))
        return None

    def _add(self, text: str, plan: FactPlan) -> Memory:
        memory_type = infer_memory_type(text)
        data = MemoryInput(
            content=text,
            context=self.contexts.get(plan.fact, ""),
            memory_type=memory_type,
            metadata=dict(self.metadata),
            source=SOURCE,
            layer=self.layer,
            occurred_at=self.occurred_at,
            **self.scope.as_dict(),
        )
        result = memory_create(
            project=self.project,
            data=data,
            actor=self.actor,
            embedding=plan.vector if text == plan.fact else None,
        )
        if not result.created:
            self.events.append(_event("NONE", result.memory))
            return result.memory
        self.events.append(_event("ADD", result.memory, new_memory=result.memory.content))
        # neighbours as they are now, under the lock (cheap: no model involved)
        contradictions_detect_for(project=self.project, memory=result.memory, use_llm=False)
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
        self.written[memory.pk] = memory.content_hash
        self.events.append(_event("UPDATE", memory, old_memory=old, new_memory=memory.content))
        return memory

    def _delete(self, decision: Decision, plan: FactPlan) -> bool:
        """Carry out a DELETE as a soft delete (history, `memory_deleted` event, restorable);
        False when it is left to review: the target is pinned."""
        target = decision.target
        live = Memory.objects.filter(deleted_at__isnull=True)
        current = live.filter(pk=target.pk).first() if target is not None else None
        if current is None:
            return True  # an earlier decision of this call removed it already
        if current.pinned:
            return False
        reason = f"add ({plan.decided_by}): {plan.fact}"[:300]
        memory_delete(project=self.project, memory_id=current.pk, actor=self.actor, reason=reason)
        self.events.append(_event("DELETE", current, old_memory=current.content))
        return True

    def _review_delete(
        self, decision: Decision, plan: FactPlan, replacement: Memory | None
    ) -> None:
        """A DELETE left to a person (`"delete_decisions": "review"`, or a pinned target):
        the target and the memory that holds the new fact (added when nothing else was
        decided for it) go to contradiction review."""
        target = decision.target
        live = Memory.objects.filter(deleted_at__isnull=True)
        if target is None or not live.filter(pk=target.pk).exists():
            return  # an earlier decision of this call superseded it already
        newer = replacement or self._add(plan.fact, plan)
        if newer.pk == target.pk:
            return
        by_model = plan.decided_by == "llm"
        verdict = Verdict(
            contradicts=True,
            cues=["model_delete" if by_model else "ended_state"],
            reason=f"a DELETE decision on reading: {plan.fact}"[:500],
            detected_by="llm" if by_model else "heuristic",
        )
        contradiction_record(
            project=self.project, older=target, newer=newer, similarity=0.0, verdict=verdict
        )


def decide_offline(*, project: Project, fact: str, neighbours: list[Neighbour]) -> list[Decision]:
    """Similarity and slots instead of a model: a (near-)duplicate is NONE; a fact that
    explicitly ends a stored state ("User no longer lives in Berlin", "User started eating
    meat again" against "User is vegetarian": `retraction.ends_state`) DELETEs it and is
    ADDed; the same single-valued slot with another value ("lives in NYC" → "moved to SF")
    is an UPDATE of the old memory (its history keeps the superseded text); anything else is
    an ADD (weaker negation/antonym cues are flagged for review by the contradiction
    detector, never deleted)."""
    digest = content_hash(fact)
    threshold = float(tuning(project, "dedup_threshold"))
    for neighbour in neighbours:
        if neighbour.memory.content_hash == digest:
            return [Decision("NONE", target=neighbour.memory)]
    if neighbours and neighbours[0].similarity >= threshold:
        top = neighbours[0].memory
        if not contradiction_cues(top.content, fact):
            return [Decision("NONE", target=top)]
    ended = [n.memory for n in neighbours if ends_state(older=n.memory.content, newer=fact)]
    if ended:
        return [*(Decision("DELETE", target=memory) for memory in ended), Decision("ADD", fact)]
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
