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
    filter_expression: dict[str, Any] | None = None  # seed-003 AND/OR/NOT language
    limit: int = 20
    offset: int = 0
    min_similarity: float | None = None  # semantic floor; None = setting default, 0 = off
    token_budget: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  # mode-specific knobs (alpha, fusion...)


@dataclass
class SearchHit:
    memory: Memory
    score: float
    parts: dict[str, float] = field(default_factory=dict)  # keyword, semantic, graph, confidence...
