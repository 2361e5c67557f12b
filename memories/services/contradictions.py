"""Contradictions: found, linked and queued for review; never resolved by deleting silently.

A candidate pair is two live memories of one scope that are similar enough to talk about the
same thing (`contradiction_min_similarity`, 0.6) and carry a cue that they disagree: one side
negates the other ("likes" / "does not like"), an antonym pair ("vegetarian" / "meat"), or the
same single-valued slot with another value ("lives in NYC" / "lives in SF"). With an LLM
configured the model judges the pair instead (falling back to the cues when it fails). A
contradiction gets `contradicts` links both ways and an open `ContradictionReview`; resolving
it (keep_a, keep_b, keep_both, merge) records who decided and when.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memories.memory_scope import Scope
from memories.models import (
    ContradictionResolution,
    ContradictionReview,
    ContradictionStatus,
    LinkType,
    Memory,
    MemoryLink,
)
from memories.selectors.similar import Neighbour, memories_similar_to
from memories.services.memories import memory_update
from memories.services.pii import scrub_for_storage
from memories.services.supersede import link_pair, memory_supersede
from memories.services.tuning import tuning
from platformcore.events import emit
from platformcore.lib.actor import Actor
from platformcore.lib.errors import Conflict, InvalidInput, NotFound, ProviderError, parse_uuid
from platformcore.lib.text.slots import Slot, fact_slot, normalise
from platformcore.llm import DATA_RULE, answer_bool, data_block, get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)

_NEGATION = re.compile(
    r"\b(?:not|no longer|never|none|nobody|nothing|neither|nor|cannot|stopped|quit|"
    r"gave up|anymore|any more|no)\b|n't\b"
)
_ANTONYMS = [
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("enjoys", "hates"),
    ("vegetarian", "meat"),
    ("vegan", "meat"),
    ("vegan", "dairy"),
    ("always", "never"),
    ("true", "false"),
    ("enabled", "disabled"),
    ("allowed", "forbidden"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("light", "dark"),
    ("increase", "decrease"),
    ("married", "divorced"),
    ("married", "single"),
    ("smoker", "non-smoker"),
    ("introvert", "extrovert"),
    ("morning", "night"),
    ("remote", "office"),
]
_WORDS = re.compile(r"[\w'-]+")

CONTRADICTION_PROMPT = """You compare two statements stored in an assistant's memory, given
as JSON strings in a <<<STATEMENT_A block and a <<<STATEMENT_B block.
Decide whether they contradict each other: both cannot be true at the same time for the same
subject (a changed value, a negation, an incompatible preference). Statements that merely add
detail or talk about different things do not contradict.
Return a JSON object: {"contradicts": true or false, "reason": "<one short sentence>"}"""


@dataclass(frozen=True)
class _Reading:
    """What the cues look at in one statement."""

    negated: bool
    antonyms: frozenset[str]  # its words that belong to an antonym pair
    slot: Slot | None


_ANTONYM_WORDS = frozenset(word for pair in _ANTONYMS for word in pair)


@functools.lru_cache(maxsize=32_768)
def _read(text: str) -> _Reading:
    """Each statement read once: consolidation checks one memory against all its neighbours
    (~100k pairs for 4,000 new memories in the scale benchmark's store)."""
    folded = text.casefold()
    words = frozenset(_WORDS.findall(folded)) & _ANTONYM_WORDS
    return _Reading(bool(_NEGATION.search(folded)), words, fact_slot(text))


def contradiction_cues(a: str, b: str) -> list[str]:
    """Why statements `a` and `b` look contradictory (empty: they do not)."""
    cues = []
    reading_a, reading_b = _read(a), _read(b)
    if reading_a.negated != reading_b.negated:
        cues.append("negation")
    words_a, words_b = reading_a.antonyms, reading_b.antonyms
    if words_a or words_b:
        for left, right in _ANTONYMS:
            if (left in words_a and right in words_b and left not in words_b) or (
                right in words_a and left in words_b and right not in words_b
            ):
                cues.append(f"antonym:{left}/{right}")
    slot_a, slot_b = reading_a.slot, reading_b.slot
    same_slot = slot_a and slot_b and slot_a.name == slot_b.name
    if same_slot and not (slot_a.value in slot_b.value or slot_b.value in slot_a.value):
        cues.append(f"changed_value:{slot_a.name}")
    return cues


@dataclass(frozen=True)
class Verdict:
    contradicts: bool
    cues: list[str]
    reason: str
    detected_by: str


def judge(a: str, b: str, *, use_llm: bool = True) -> Verdict:
    """Cue heuristics, or the LLM when one is configured (cues again if it fails)."""
    cues = contradiction_cues(a, b)
    if normalise(a) == normalise(b):
        return Verdict(False, [], "same statement", "heuristic")
    if use_llm:
        llm = get_llm()
        if llm is not None:
            try:
                answer = llm.complete_json(
                    system=f"{CONTRADICTION_PROMPT}\n\n{DATA_RULE}",
                    user=f"{data_block('STATEMENT_A', a)}\n\n{data_block('STATEMENT_B', b)}",
                )
                if isinstance(answer, dict) and "contradicts" in answer:
                    return Verdict(
                        answer_bool(answer["contradicts"]),
                        cues,
                        str(answer.get("reason") or "")[:500],
                        "llm",
                    )
            except ProviderError as exc:
                logger.warning("contradiction check fell back to cues: %s", exc)
    reason = ", ".join(cues)
    return Verdict(bool(cues), cues, reason, "heuristic")


def _reviewed(project: Project, a: Memory, b: Memory) -> bool:
    return ContradictionReview.objects.filter(
        Q(memory_a=a, memory_b=b) | Q(memory_a=b, memory_b=a), project=project
    ).exists()


def contradiction_record(
    *, project: Project, older: Memory, newer: Memory, similarity: float, verdict: Verdict
) -> ContradictionReview | None:
    """Link the pair and open a review, unless this pair was already reviewed."""
    if older.pk == newer.pk or _reviewed(project, older, newer):
        return None
    link_pair(
        project=project,
        source=newer,
        target=older,
        link_type=LinkType.CONTRADICTS,
        inverse=LinkType.CONTRADICTS,
        metadata={"cues": verdict.cues},
        strength=max(0.0, min(1.0, similarity)),
    )
    review = ContradictionReview.objects.create(
        project=project,
        memory_a=older,
        memory_b=newer,
        similarity=similarity,
        cues=verdict.cues,
        detected_by=verdict.detected_by,
        reason=verdict.reason,
    )
    emit(
        project_id=project.pk,
        project_slug=project.slug,
        type="contradiction_detected",
        data={
            "id": str(review.pk),
            "memory_a": str(older.pk),
            "memory_b": str(newer.pk),
            "cues": verdict.cues,
        },
    )
    return review


@transaction.atomic
def contradictions_detect_for(
    *,
    project: Project,
    memory: Memory,
    neighbours: list[Neighbour] | None = None,
    use_llm: bool = True,
) -> list[ContradictionReview]:
    """Check one (new) memory against its closest live neighbours of the same scope."""
    if neighbours is None:
        if memory.embedding is None:
            return []
        neighbours = memories_similar_to(
            project=project,
            embedding=list(memory.embedding),
            scope=Scope.of(memory),
            limit=5,
            exclude_ids=[memory.pk],
        )
    floor = float(tuning(project, "contradiction_min_similarity"))
    reviews = []
    for neighbour in neighbours:
        other = neighbour.memory
        if other.pk == memory.pk or neighbour.similarity < floor or other.deleted_at:
            continue
        verdict = judge(other.content, memory.content, use_llm=use_llm)
        if verdict.contradicts:
            review = contradiction_record(
                project=project,
                older=other,
                newer=memory,
                similarity=neighbour.similarity,
                verdict=verdict,
            )
            if review is not None:
                reviews.append(review)
    return reviews


# --- review ------------------------------------------------------------------------------


def contradiction_list(*, project: Project, status: str = "open") -> Any:
    reviews = ContradictionReview.objects.filter(project=project).select_related(
        "memory_a", "memory_b"
    )
    if status != "all":
        reviews = reviews.filter(status=status)
    return reviews.order_by("-created_at", "id")


def contradiction_get(*, project: Project, review_id: UUID | str) -> ContradictionReview:
    pk = parse_uuid(review_id, what="contradiction")
    review = contradiction_list(project=project, status="all").filter(pk=pk).first()
    if review is None:
        raise NotFound("contradiction not found")
    return review


def _live(memory: Memory, label: str) -> Memory:
    fresh = Memory.objects.filter(pk=memory.pk, deleted_at__isnull=True).first()
    if fresh is None:
        raise Conflict(
            f"memory {label} was deleted meanwhile; restore it or resolve with the other one",
            fields={"resolution": [f"memory {label} is deleted"]},
        )
    return fresh


@transaction.atomic
def contradiction_resolve(
    *,
    project: Project,
    review_id: UUID | str,
    resolution: str,
    actor: Actor,
    content: str | None = None,
    note: str = "",
) -> ContradictionReview:
    """Close a review. keep_a / keep_b supersede the other memory; merge rewrites memory A
    (with `content`, or A's content) absorbing B's tags and metadata, then supersedes B;
    keep_both removes the `contradicts` links and deletes nothing."""
    if resolution not in ContradictionResolution.values:
        allowed = ", ".join(ContradictionResolution.values)
        raise InvalidInput(
            f"resolution must be one of {allowed}", fields={"resolution": [f"one of {allowed}"]}
        )
    review = contradiction_get(project=project, review_id=review_id)
    review = ContradictionReview.objects.select_for_update().get(pk=review.pk)
    if review.status == ContradictionStatus.RESOLVED:
        raise Conflict("this contradiction is already resolved", fields={"resolution": ["done"]})
    a, b = review.memory_a, review.memory_b
    match resolution:
        case ContradictionResolution.KEEP_A:
            memory_supersede(project=project, old=_live(b, "b"), new=_live(a, "a"), actor=actor)
        case ContradictionResolution.KEEP_B:
            memory_supersede(project=project, old=_live(a, "a"), new=_live(b, "b"), actor=actor)
        case ContradictionResolution.MERGE:
            a, b = _live(a, "a"), _live(b, "b")
            changes: dict[str, Any] = {
                "tags": list(dict.fromkeys([*a.tags, *b.tags])),
                "metadata": {**a.metadata, **b.metadata},
            }
            if content:
                changes["content"] = content
            merged = memory_update(project=project, memory_id=a.pk, changes=changes, actor=actor)
            memory_supersede(project=project, old=b, new=merged, actor=actor)
        case ContradictionResolution.KEEP_BOTH:
            MemoryLink.objects.filter(
                Q(from_memory=a, to_memory=b) | Q(from_memory=b, to_memory=a),
                project=project,
                link_type=LinkType.CONTRADICTS,
            ).delete()
    review.status = ContradictionStatus.RESOLVED
    review.resolution = resolution
    review.resolved_by = str(actor)
    review.resolved_at = timezone.now()
    review.note = scrub_for_storage(project=project, values={"note": note})["note"]
    review.save(update_fields=["status", "resolution", "resolved_by", "resolved_at", "note"])
    return review
