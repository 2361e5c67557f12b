"""Summaries of long memories: a few sentences that stand for the text.

A memory of at least MEMORY_SUMMARY_MIN_TOKENS tokens gets a summary in the background (the
`summarize_memories` job, enqueued when the write commits): the LLM's when one is configured
(the text quoted to it as data), else an extractive one, its most telling sentences in the
order written. Search matches the summary beside the content (its words, and its vector:
an embedding model reads only a text's first ~256 tokens, the summary speaks for all of it),
and a budgeted context or MCP result sends the summary of a memory whose full text does not
fit, marked `summarized` (docs/search.md, "Summaries").

`summarize_text` is the one summariser: document chunks use it too.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from memories.models import Memory
from memories.services.embedding import embed_or_none
from memories.services.keywords import STOPWORDS
from platformcore.lib.bulk import update_rows
from platformcore.lib.errors import ProviderError
from platformcore.lib.tokens import count_tokens_batch
from platformcore.llm import DATA_RULE, data_block, get_llm
from tenants.models import Project

logger = logging.getLogger(__name__)
SUMMARY_TASK = "memories.tasks.summarize_memories"
LLM_TEXT_CHARS = 12_000  # what a model is shown of one text
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$)|\n|$)")
_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)
SUMMARY_PROMPT = (
    "Summarise the text in at most {sentences} sentences and {words} words, for a reader "
    "who will not see the text. Keep names, numbers, commands and decisions. "
    'Answer as JSON: {{"summary": "..."}}.'
)


@dataclass(frozen=True)
class Summary:
    text: str
    method: str  # extractive | llm
    tokens: int


def summarize_text(text: str) -> Summary | None:
    """The summary of `text`: the LLM's when one is configured and answers, else the
    extractive one. None when nothing shorter than the text can be said."""
    written = _llm_summary(text)
    method = "llm" if written else "extractive"
    written = written or extractive_summary(text)
    if not written or len(written) >= len(text.strip()):
        return None
    return Summary(written, method, count_tokens_batch([written])[0])


def extractive_summary(text: str, *, sentences: int | None = None) -> str:
    """Up to `sentences` (MEMORY_SUMMARY_SENTENCES) of the text's sentences, in their order:
    those whose words recur most in the text (each word by its frequency, a sentence by its
    words' mean so a long one does not win by length), the first sentence favoured as the
    one that usually says what the text is about. At most MEMORY_SUMMARY_MAX_CHARS."""
    limit = sentences or settings.MEMORY_SUMMARY_SENTENCES
    found = [s.strip() for s in _SENTENCE.findall(text) if _WORD.search(s)]
    if not found:
        return ""
    frequency = Counter(w for s in found for w in _words(s))
    scores = []
    for index, sentence in enumerate(found):
        words = _words(sentence)
        score = sum(frequency[w] for w in words) / math.sqrt(len(words)) if words else 0.0
        scores.append(score * (1.5 if index == 0 else 1.0))
    best = sorted(range(len(found)), key=lambda i: (-scores[i], i))[:limit]
    return _capped(" ".join(found[i] for i in sorted(best)))


def _words(sentence: str) -> list[str]:
    return [w for w in (m.lower() for m in _WORD.findall(sentence)) if w not in STOPWORDS]


def _capped(text: str) -> str:
    limit = settings.MEMORY_SUMMARY_MAX_CHARS
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def _llm_summary(text: str) -> str:
    """The model's summary, "" without an LLM or when the call fails."""
    llm = get_llm()
    if llm is None:
        return ""
    prompt = SUMMARY_PROMPT.format(
        sentences=settings.MEMORY_SUMMARY_SENTENCES, words=settings.MEMORY_SUMMARY_MAX_CHARS // 6
    )
    try:
        answer = llm.complete_json(
            system=f"{prompt}\n\n{DATA_RULE}", user=data_block("TEXT", text[:LLM_TEXT_CHARS])
        )
    except ProviderError as exc:
        logger.warning("summary fell back to the extractive one: %s", exc)
        return ""
    written = answer.get("summary") if isinstance(answer, dict) else None
    if not isinstance(written, str) or not written.strip():
        return ""
    return _capped(" ".join(written.split()))


# --- memories ------------------------------------------------------------------------------


def needs_summary(token_count: int) -> bool:
    threshold = settings.MEMORY_SUMMARY_MIN_TOKENS
    return threshold > 0 and token_count >= threshold


def summaries_enqueue(*, project: Project, memories: Sequence[Memory]) -> None:
    """Summarise these memories in the background once the write commits, those long
    enough to need it; a shorter new text clears a summary the old one had."""
    long = [str(m.pk) for m in memories if needs_summary(m.token_count)]
    if long:
        # imported here: memories.tasks imports this module (cycle)
        from memories.tasks import enqueue

        enqueue(SUMMARY_TASK, project.pk, long)


def memories_summarize(*, project: Project, memory_ids: Sequence[UUID | str]) -> int:
    """Write the summary (and its vector) of each live memory still long enough; a memory
    edited meanwhile is summarised as it is now. How many got one."""
    memories = list(
        Memory.objects.for_project(project)
        .alive()
        .filter(pk__in=list(memory_ids))
        .only("id", "content", "token_count")
    )
    written = []
    for memory in memories:
        summary = summarize_text(memory.content) if needs_summary(memory.token_count) else None
        memory.summary = summary.text if summary else ""
        memory.summary_method = summary.method if summary else ""
        memory.summary_tokens = summary.tokens if summary else 0
        written.append(memory)
    with transaction.atomic():
        # embedded inside the write's transaction: during a live switch of the embedding
        # model the vectors are then of the column they go to (store_embedder_for_write)
        with_text = iter(embed_or_none([m.summary for m in written if m.summary]))
        for memory in written:
            memory.summary_embedding = next(with_text) if memory.summary else None
        update_rows(written, ["summary", "summary_method", "summary_tokens", "summary_embedding"])
    if any(m.summary for m in written):
        mark_summarized(project.pk)
    return sum(1 for m in written if m.summary)


def summary_cleared(memory: Memory) -> None:
    """New content: the old summary no longer says what the memory says."""
    memory.summary, memory.summary_method = "", ""
    memory.summary_tokens, memory.summary_embedding = 0, None


SUMMARIZED_KEY = "summaries:project:{}"


def mark_summarized(project_id: int) -> None:
    """Searches of this project look at summaries too (selectors/search/summaries.py)."""
    cache.set(SUMMARIZED_KEY.format(project_id), True, None)


def has_summaries(project_id: int) -> bool:
    """Whether the project may hold summarised memories: remembered per process for a
    minute, so the searches of a project without any skip the summary statements."""
    key = SUMMARIZED_KEY.format(project_id)
    known = cache.get(key)
    if known is None:
        known = (
            Memory.objects.filter(project_id=project_id, deleted_at__isnull=True)
            .exclude(summary="")
            .exists()
        )
        cache.set(key, known, None if known else 60)
    return bool(known)
