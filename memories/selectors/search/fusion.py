"""Calibrated fusion (hybrid search's default): each side's contribution says how well it
matched, so a weak list is never stretched into a strong one.

Min-max fusion scaled the keyword scores of one query's candidates to 0-1, so the best
keyword match got 1.0 whatever it matched: a memory sharing one common word with the
question ("team") outranked one whose meaning matched twice as well. Here:

- keyword evidence starts from `coverage`, the IDF-weighted share of the query's (stemmed)
  terms a memory holds (keyword.py: a term no candidate holds weighs most, one every
  candidate holds next to nothing). The list's best coverage counts as full evidence only
  when it is at least KEYWORD_FULL (a list of weak matches keeps weak evidence, whatever
  it holds), and the share is squared (KEYWORD_POWER), so a match holding a small part of
  the question's weight stays a small signal: 0.2 of it weighs 0.11 at most, 0.6 or more 1.
  A match holding one term of a question of LONE_TERMS or more counts LONE_SHARE of its
  share: one word in common ("team", "week") says little about which memory answers, even
  when few memories hold that word.
- semantic evidence is the cosine similarity above SEMANTIC_FLOOR over SEMANTIC_SPAN (an
  unrelated text and a close paraphrase with the default model), within 0-1; when the best
  candidate is more similar than floor + span, over its similarity instead, so the order
  among strong matches is kept (a longer span, never a shorter one).

relevance = α × keyword evidence + (1 − α) × semantic evidence, α (the keyword weight) from
the `alpha` option or MEMORY_SEARCH_HYBRID_ALPHA. The figures that chose the constants:
docs/search.md, "Calibrated fusion".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memories.selectors.search_types import Ranked, SearchHit

SEMANTIC_FLOOR = 0.15  # cosine of unrelated texts sits below it (all-MiniLM-L6-v2)
SEMANTIC_SPAN = 0.35  # similarity above the floor that counts as full semantic evidence
KEYWORD_FULL = 0.6  # coverage that counts as full keyword evidence when a list's best
KEYWORD_POWER = 2.0
LONE_TERMS = 3  # a question with this many terms or more...
LONE_SHARE = 0.5  # ...counts this much of a match's share when it holds only one of them


@dataclass
class Signals:
    """What one candidate's two sides found: its cosine similarity (None: not among the
    semantic candidates), its keyword score (None: not a keyword match) and the share of
    the query's terms it holds."""

    semantic: float | None = None
    keyword_rank: float | None = None
    coverage: float = 0.0


@dataclass(frozen=True)
class Scales:
    """One query's calibration: the coverage and the similarity span that count as full
    evidence (fixed, or the list's best when that is stronger)."""

    full_coverage: float = KEYWORD_FULL
    semantic_span: float = SEMANTIC_SPAN

    @classmethod
    def of(cls, best_coverage: float, best_similarity: float) -> Scales:
        return cls(
            full_coverage=max(KEYWORD_FULL, best_coverage),
            semantic_span=max(SEMANTIC_SPAN, best_similarity - SEMANTIC_FLOOR),
        )

    def keyword(self, signals: Signals) -> float:
        if signals.keyword_rank is None:
            return 0.0
        return min(max(signals.coverage, 0.0) / self.full_coverage, 1.0) ** KEYWORD_POWER

    def semantic(self, signals: Signals) -> float:
        if signals.semantic is None:
            return 0.0
        return min(max((signals.semantic - SEMANTIC_FLOOR) / self.semantic_span, 0.0), 1.0)

    def parts(self, signals: Signals) -> dict[str, float]:
        """The score parts: `keyword` and `semantic_evidence` as fused, with what they came
        from (`keyword_rank`, `keyword_coverage`, `semantic`: the cosine similarity)."""
        parts = {"keyword": self.keyword(signals), "semantic": signals.semantic or 0.0}
        if signals.keyword_rank is not None:
            parts |= {"keyword_rank": signals.keyword_rank, "keyword_coverage": signals.coverage}
        if signals.semantic is not None:
            parts["semantic_evidence"] = self.semantic(signals)
        return parts


def idf_weights(total: float, frequencies: Sequence[float]) -> list[float]:
    """BM25's inverse document frequency of each query term, `total` documents of which
    `frequencies[i]` hold term i (the formula keyword search ranks with)."""
    return [math.log(1 + (total - df + 0.5) / (df + 0.5)) for df in frequencies]


def idf_coverage(held: Iterable[bool], weights: Sequence[float]) -> float:
    """The share of the query's IDF weight in the terms a memory holds (`held[i]`: term i),
    LONE_SHARE of it for a lone term of a longer question."""
    whole = sum(weights)
    if whole <= 0:
        return 0.0
    found = [weight for weight, has in zip(weights, held, strict=False) if has]
    lone = len(found) == 1 and len(weights) >= LONE_TERMS
    return sum(found) / whole * (LONE_SHARE if lone else 1.0)


def fuse(
    keyword: Ranked, semantic: Ranked, coverage: dict[Any, float], alpha: float
) -> list[SearchHit]:
    """Calibrated hits for the keyword candidates (with their `coverage`, by pk; one missing
    from it covers the whole query, as a strict all-terms match does) and the semantic ones
    (with their cosine similarity)."""
    found: dict[Any, tuple[Any, Signals]] = {}
    for memory, rank in keyword:
        share = coverage.get(memory.pk, 1.0)
        found[memory.pk] = (memory, Signals(keyword_rank=rank, coverage=share))
    for memory, similarity in semantic:
        _, signals = found.setdefault(memory.pk, (memory, Signals()))
        signals.semantic = similarity
    scales = Scales.of(
        max((s.coverage for _, s in found.values() if s.keyword_rank is not None), default=0.0),
        max((similarity for _, similarity in semantic), default=0.0),
    )
    return [
        SearchHit(
            memory,
            alpha * scales.keyword(signals) + (1 - alpha) * scales.semantic(signals),
            scales.parts(signals),
        )
        for memory, signals in found.values()
    ]
