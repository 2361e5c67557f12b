"""Utility scoring: how useful a stored memory is likely to be (Memento's evaluator).

Every new memory, and every memory whose content changes, is scored by a background job
(`memories.tasks.score_utility`, enqueued when the write commits): the LLM when one is
configured, else an offline heuristic of five signals, each in [0, 1]:

- specificity: names, numbers, versions, paths and identifiers, against vague words;
- actionability: what an agent can act on (always/never/use/run/because, a procedure,
  a decision, an error's fix, a preference);
- length: a self-contained statement (about 8-80 words) beats a fragment or an essay;
- novelty: 1 - the cosine similarity to the closest other memory of the same scope;
- feedback: the share of agents' verdicts on this memory that said it helped
  (`MemoryFeedback`, given through `tool_feedback`), Laplace-smoothed; 0.5 without any.

The score (`utility_score`, 0.5 until assessed; `verified_at` is when it was) feeds search
ranking with a small weight (`memories.selectors.quality.rank_factor`,
MEMORY_UTILITY_RANK_WEIGHT) and the decay job:
useful memories decay more slowly (`lifecycle.py`). A failed LLM call falls back to the
heuristic; nothing a caller does waits for the score.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from memories.models import Memory, MemoryFeedback
from memories.services.keywords import STOPWORDS
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, NotFound, ProviderError, parse_uuid
from platformcore.llm import DATA_RULE, data_block, get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)

WEIGHTS = {
    "specificity": 0.25,
    "actionability": 0.25,
    "length": 0.15,
    "novelty": 0.15,
    "feedback": 0.20,
}
BATCH = 500  # memories scored per statement round

_WORD = re.compile(r"[\w'./:-]+", re.UNICODE)
_SPECIFIC = re.compile(
    r"\d|[A-Za-z]+[_./:][\w./:-]+|^[A-Z][a-z]+[A-Z]\w*$|^[A-Z]{2,}\d*$"  # numbers, paths, ids
)
_VAGUE = frozenset(
    "something stuff things thing somehow maybe probably various etc whatever somewhere".split()  # noqa: SIM905
)
_ACTION = frozenset(
    """always never must should avoid prefer prefers preferred use run set install configure
    fix fixed fixes because instead remember ensure don't do not requires required deploy
    restart retry check""".split()  # noqa: SIM905
)
_ACTIONABLE_TYPES = {"procedure": 0.4, "decision": 0.35, "error": 0.35, "preference": 0.3}

UTILITY_PROMPT = """You judge how useful a memory stored by an AI assistant will be later.
Consider informational value, specificity (concrete names, numbers, versions) and
actionability (can an agent act on it?). Answer as JSON: {"utility": <number from 0 to 1>,
"reason": "<one short sentence>"}. The memory is given in a MEMORY block."""


@dataclass(frozen=True)
class UtilityParts:
    specificity: float
    actionability: float
    length: float
    novelty: float
    feedback: float

    @property
    def score(self) -> float:
        total = sum(WEIGHTS[name] * value for name, value in asdict(self).items())
        return round(min(max(total, 0.0), 1.0), 4)


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def specificity(text: str) -> float:
    words = _words(text)
    if not words:
        return 0.0
    specific = sum(1 for w in words if _SPECIFIC.search(w))
    # a capitalised word after the first one is usually a name
    specific += sum(1 for w in words[1:] if w[:1].isupper() and w.lower() not in STOPWORDS)
    vague = sum(1 for w in words if w.lower() in _VAGUE)
    share = (specific - 2 * vague) / max(len(words), 1)
    return round(min(max(share / 0.3, 0.0), 1.0), 4)  # a third of the words: fully specific


def actionability(text: str, memory_type: str) -> float:
    words = {w.lower().strip(".,;:!?") for w in _words(text)}
    cues = len(words & _ACTION)
    value = _ACTIONABLE_TYPES.get(memory_type, 0.0) + min(cues, 3) * 0.2
    return round(min(value, 1.0), 4)


def length_fitness(text: str) -> float:
    n = len(_words(text))
    if n < 3:
        return 0.1
    if n < 8:
        return round(0.1 + 0.9 * (n - 2) / 6, 4)
    if n <= 80:
        return 1.0
    return round(max(0.3, 1.0 - (n - 80) / 400), 4)


def feedback_share(helpful: int, total: int) -> float:
    """Laplace-smoothed share of helpful verdicts: 0.5 without any."""
    return round((helpful + 1) / (total + 2), 4)


def heuristic_parts(
    memory: Memory, *, closest: float | None, helpful: int = 0, total: int = 0
) -> UtilityParts:
    text = memory.content
    return UtilityParts(
        specificity=specificity(text),
        actionability=actionability(text, memory.memory_type),
        length=length_fitness(text),
        novelty=round(1.0 - max(closest or 0.0, 0.0), 4),
        feedback=feedback_share(helpful, total),
    )


def decay_factor_sql(column: str = "m.utility_score") -> str:
    """SQL of the multiplier utility puts on the decay rate: 1.5 - utility, so a neutral
    memory decays at the base rate, the most useful at half of it, the least at 1.5 times."""
    return f"(1.5 - {column})"


# --- scoring ----------------------------------------------------------------------------------

_CLOSEST_SQL = """
SELECT m.id, (
    SELECT 1 - (o.embedding <=> m.embedding)
    FROM memories_memory o
    WHERE o.project_id = m.project_id AND o.deleted_at IS NULL AND o.id <> m.id
      AND o.embedding IS NOT NULL AND NOT o.vector_pending
      AND o.user_id IS NOT DISTINCT FROM m.user_id
      AND o.agent_id IS NOT DISTINCT FROM m.agent_id
      AND o.run_id IS NOT DISTINCT FROM m.run_id
    ORDER BY o.embedding <=> m.embedding LIMIT 1
)
FROM memories_memory m
WHERE m.id = ANY(%s) AND m.embedding IS NOT NULL
"""


def _closest(ids: list[UUID]) -> dict[UUID, float]:
    """Each memory's cosine similarity to the closest other live memory of its scope."""
    with connection.cursor() as cursor:
        cursor.execute(_CLOSEST_SQL, [ids])
        return {pk: float(sim) for pk, sim in cursor.fetchall() if sim is not None}


def _feedback(project: Project, ids: list[UUID]) -> dict[UUID, tuple[int, int]]:
    rows = (
        MemoryFeedback.objects.filter(project=project, memory_id__in=ids)
        .values("memory_id")
        .annotate(total=Count("id"), helpful=Count("id", filter=Q(helpful=True)))
    )
    return {row["memory_id"]: (row["helpful"], row["total"]) for row in rows}


def _llm_scores(memories: list[Memory]) -> dict[UUID, float]:
    """The LLM's scores, {} when none is configured; a failed call skips that memory."""
    llm = get_llm()
    if llm is None:
        return {}
    scores: dict[UUID, float] = {}
    for memory in memories:
        try:
            answer = llm.complete_json(
                system=f"{UTILITY_PROMPT}\n\n{DATA_RULE}",
                user=data_block(
                    "MEMORY", {"type": memory.memory_type, "content": memory.content[:4000]}
                ),
            )
        except ProviderError as exc:
            logger.warning("utility scoring fell back to the heuristic: %s", exc)
            continue
        value = answer.get("utility") if isinstance(answer, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            scores[memory.pk] = round(min(max(float(value), 0.0), 1.0), 4)
    return scores


@dataclass
class UtilityReport:
    scored: int = 0
    by_llm: int = 0
    skipped: int = 0  # already assessed since their last change
    pending: int = 0  # left for a later run (beyond the run's limit)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def memories_score_utility(
    *,
    project: Project,
    memory_ids: Iterable[UUID | str] | None = None,
    force: bool = False,
    use_llm: bool = True,
    limit: int | None = None,
    dry_run: bool = False,
    changed_before: datetime | None = None,
) -> UtilityReport:
    """Score the given memories (default: every live memory not assessed since its last
    change) and store `utility_score` and `verified_at`. Without `force`, a memory assessed
    after its last change is skipped. At most `limit` are scored (the rest are `pending`);
    `dry_run` only counts them; `changed_before` leaves out memories changed since then."""
    queryset = Memory.objects.for_project(project).alive()
    report = UtilityReport()
    if memory_ids is not None:
        ids = [parse_uuid(value, what="memory") for value in memory_ids]
        queryset = queryset.filter(pk__in=ids)
        requested = len(set(ids))
    else:
        requested = None
    if not force:
        queryset = queryset.filter(Q(verified_at__isnull=True) | Q(verified_at__lt=F("updated_at")))
    if changed_before is not None:
        queryset = queryset.filter(updated_at__lt=changed_before)
    pending = list(queryset.order_by("pk").values_list("pk", flat=True))
    if requested is not None:
        report.skipped = requested - len(pending)
    if limit is not None and len(pending) > limit:
        pending, report.pending = pending[:limit], len(pending) - limit
    if dry_run:
        report.scored = len(pending)
        return report
    for start in range(0, len(pending), BATCH):
        _score_batch(project, pending[start : start + BATCH], report, use_llm)
    return report


def _score_batch(project: Project, ids: list[UUID], report: UtilityReport, use_llm: bool) -> None:
    memories = list(
        Memory.objects.filter(pk__in=ids).only("id", "content", "memory_type", "updated_at")
    )
    by_llm = _llm_scores(memories) if use_llm else {}
    closest, feedback = _closest(ids), _feedback(project, ids)
    now = timezone.now()
    scores = {}
    for memory in memories:
        helpful, total = feedback.get(memory.pk, (0, 0))
        near = closest.get(memory.pk)
        parts = heuristic_parts(memory, closest=near, helpful=helpful, total=total)
        llm = by_llm.get(memory.pk)
        # the LLM judges the text; agents' verdicts on the memory still count beside it
        scores[memory.pk] = (
            parts.score if llm is None else round(0.8 * llm + 0.2 * parts.feedback, 4)
        )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory m SET utility_score = s.score, verified_at = %s "
            "FROM unnest(%s::uuid[], %s::float8[]) AS s(id, score) WHERE m.id = s.id",
            [now, list(scores), list(scores.values())],
        )
    report.scored += len(scores)
    report.by_llm += len(by_llm)


def memory_utility(*, project: Project, memory_id: UUID | str) -> dict[str, Any]:
    """A memory's score, when it was assessed, and the heuristic's parts now (what explains
    the score offline)."""
    pk = parse_uuid(memory_id, what="memory")
    memory = Memory.objects.for_project(project).alive().filter(pk=pk).first()
    if memory is None:
        raise NotFound("memory not found")
    helpful, total = _feedback(project, [pk]).get(pk, (0, 0))
    parts = heuristic_parts(memory, closest=_closest([pk]).get(pk), helpful=helpful, total=total)
    return {
        "id": str(pk),
        "utility_score": memory.utility_score,
        "verified_at": memory.verified_at,
        "heuristic": {**asdict(parts), "score": parts.score},
        "feedback": {"helpful": helpful, "total": total},
    }


# --- when memories change, and what agents say about them -----------------------------------


def utility_enqueue(*, project: Project, memory_ids: Sequence[UUID]) -> None:
    """Score these memories in the background once the current write commits (at once when
    jobs run synchronously)."""
    if not memory_ids or not settings.MEMORY_UTILITY_SCORING:
        return
    # imported here: memories.tasks imports this module (cycle)
    from memories.tasks import enqueue

    enqueue("memories.tasks.score_utility", project.pk, [str(pk) for pk in memory_ids])


MAX_FEEDBACK_MEMORIES = 100


@transaction.atomic
def memories_feedback(
    *,
    project: Project,
    memory_ids: Sequence[UUID | str],
    helpful: bool,
    actor: Actor,
    tool_name: str = "",
) -> int:
    """Record an agent's verdict on memories a tool returned, and re-score them."""
    if not isinstance(memory_ids, list | tuple) or len(memory_ids) > MAX_FEEDBACK_MEMORIES:
        message = f"a list of at most {MAX_FEEDBACK_MEMORIES} memory ids"
        raise InvalidInput(message, fields={"memory_ids": [message]})
    pks = list(dict.fromkeys(parse_uuid(value, what="memory") for value in memory_ids))
    found = set(
        Memory.objects.for_project(project).alive().filter(pk__in=pks).values_list("pk", flat=True)
    )
    missing = [str(pk) for pk in pks if pk not in found]
    if missing:
        raise NotFound(f"{len(missing)} memory id(s) not found", fields={"memory_ids": missing})
    MemoryFeedback.objects.bulk_create(
        MemoryFeedback(
            project=project,
            memory_id=pk,
            helpful=bool(helpful),
            tool_name=tool_name[:100],
            actor=str(actor),
        )
        for pk in pks
    )
    # a verdict changes the score even though the memory did not change
    Memory.objects.filter(pk__in=pks).update(verified_at=None)
    utility_enqueue(project=project, memory_ids=pks)
    return len(pks)
