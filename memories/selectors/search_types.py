"""The contract between the search dispatcher and the modes that plug into it.

A mode is a function `(*, project, query: SearchQuery) -> list[SearchHit]` registered under a
name (`keyword`, `semantic`, `hybrid`, and `graph` from the entities app). Hits carry the
score parts so ranking is explainable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memories.models import Memory
from memories.selectors.filters import MemoryFilters


@dataclass
class SearchQuery:
    text: str
    mode: str = "hybrid"
    filters: MemoryFilters = field(default_factory=MemoryFilters)
    filter_expression: dict[str, Any] | None = None  # mem0-style AND/OR/NOT language
    limit: int = 20
    offset: int = 0
    min_similarity: float | None = None  # semantic floor; None = setting default, 0 = off
    token_budget: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  # mode-specific knobs (alpha, fusion...)


class Candidate:
    """A memory as a mode found it: what ranking reads of it (CANDIDATE_FIELDS and, when the
    search computed it, effective_confidence). The dispatcher replaces the returned page's
    candidates by whole rows. A plain object: building Memory instances for a hybrid
    search's ~100 candidates is a noticeable share of its Python time."""

    __slots__ = (
        "created_at",
        "effective_confidence",
        "occurred_at",
        "pk",
        "run_id",
        "token_count",
        "utility_score",
    )

    def __init__(
        self,
        pk: Any,
        created_at: Any,
        token_count: int,
        utility_score: float | None = None,
        run_id: str | None = None,
        occurred_at: Any = None,
    ) -> None:
        self.pk = pk
        self.created_at = created_at
        self.token_count = token_count
        self.utility_score = utility_score
        self.run_id = run_id
        self.occurred_at = occurred_at

    @property
    def id(self) -> Any:
        return self.pk

    def __repr__(self) -> str:
        return f"<Candidate {self.pk}>"


# A mode's ranking before paging: (memory, relevance), best first.
Ranked = list[tuple[Candidate | Memory, float]]


@dataclass
class SearchHit:
    memory: Memory | Candidate  # whole rows once the dispatcher has paged the hits
    score: float
    parts: dict[str, float] = field(default_factory=dict)  # keyword, semantic, graph, confidence...
    summarized: bool = False  # a token budget took the memory's summary, not its full text

    @property
    def tokens(self) -> int:
        """What the hit costs a budget: its summary's tokens when the summary is sent."""
        if self.summarized:
            return int(getattr(self.memory, "summary_tokens", 0))
        return int(self.memory.token_count)


def summary_fits(memory: Memory | Candidate, room: int) -> bool:
    """Whether the memory has a summary of at most `room` tokens (a whole row's fields)."""
    summary_tokens = getattr(memory, "summary_tokens", 0) or 0
    return bool(getattr(memory, "summary", "")) and 0 < summary_tokens <= room
