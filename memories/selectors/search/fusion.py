"""Calibrated fusion: each signal's contribution says how well it matched, not where the
match stands in its candidate list.

Min-max fusion scales the keyword scores of one query's candidates to 0-1, so the best
keyword match gets 1.0 whatever it matched: a memory sharing one common word with the
question ("team") outranked one whose meaning matched twice as well. Here each side is
calibrated on its own, the same for every query:

- keyword evidence: the IDF-weighted share of the query's (stemmed) terms the memory holds
  (`coverage`: a term no memory holds weighs most, one every keyword candidate holds next to
  nothing), through a BM25-like saturation, `c (1 + K) / (c + K)`, so holding most of a
  question's weight counts nearly as much as holding all of it;
- semantic evidence: the cosine similarity above SEMANTIC_FLOOR, over SEMANTIC_SPAN (what
  an unrelated text and a close paraphrase score with the default model), within 0-1.

relevance = α × keyword evidence + (1 − α) × semantic evidence (α, the keyword weight, from
the `alpha` option or MEMORY_SEARCH_HYBRID_ALPHA). The figures that chose the constants are
in docs/search.md ("Calibrated fusion").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memories.selectors.search_types import Ranked, SearchHit

SEMANTIC_FLOOR = 0.15  # cosine of unrelated texts sits below it (all-MiniLM-L6-v2)
SEMANTIC_SPAN = 0.4  # similarity above the floor that counts as full semantic evidence
KEYWORD_SATURATION = 0.5  # K: half the query's weight counts 0.75, all of it 1.0


@dataclass
class Signals:
    """What one candidate's two sides found: its cosine similarity (None: not among the
    semantic candidates), its keyword score and the share of the query it covers."""

    semantic: float | None = None
    keyword_rank: float | None = None
    coverage: float = 0.0

    def keyword_evidence(self) -> float:
        return keyword_evidence(self.coverage) if self.keyword_rank is not None else 0.0

    def semantic_evidence(self) -> float:
        return semantic_evidence(self.semantic) if self.semantic is not None else 0.0

    def parts(self) -> dict[str, float]:
        parts = {"keyword": self.keyword_evidence(), "semantic": self.semantic or 0.0}
        if self.keyword_rank is not None:
            parts |= {"keyword_rank": self.keyword_rank, "keyword_coverage": self.coverage}
        if self.semantic is not None:
            parts["semantic_evidence"] = self.semantic_evidence()
        return parts


KEYWORD_POWER = 1.0


def keyword_evidence(coverage: float) -> float:
    coverage = min(max(coverage, 0.0), 1.0) ** KEYWORD_POWER
    return coverage * (1 + KEYWORD_SATURATION) / (coverage + KEYWORD_SATURATION)


SEMANTIC_CAP = 1.0


def semantic_evidence(similarity: float) -> float:
    return min(max((similarity - SEMANTIC_FLOOR) / SEMANTIC_SPAN, 0.0), SEMANTIC_CAP)


def idf_weights(total: float, frequencies: Sequence[float]) -> list[float]:
    """BM25's inverse document frequency of each query term, `total` documents of which
    `frequencies[i]` hold term i (the formula keyword search ranks with)."""
    return [math.log(1 + (total - df + 0.5) / (df + 0.5)) for df in frequencies]


def idf_coverage(held: Iterable[bool], weights: Sequence[float]) -> float:
    """The share of the query's IDF weight in the terms a memory holds (`held[i]`: term i)."""
    whole = sum(weights)
    if whole <= 0:
        return 0.0
    return sum(weight for weight, has in zip(weights, held, strict=False) if has) / whole


def fuse(
    keyword: Ranked, semantic: Ranked, coverage: dict[Any, float], alpha: float
) -> list[SearchHit]:
    """Calibrated hits for the keyword candidates (with their `coverage`, by pk; a candidate
    missing from it covers the whole query, as a strict all-terms match does) and the
    semantic ones (with their cosine similarity)."""
    found: dict[Any, tuple[Any, Signals]] = {}
    for memory, rank in keyword:
        share = coverage.get(memory.pk, 1.0)
        found[memory.pk] = (memory, Signals(keyword_rank=rank, coverage=share))
    for memory, similarity in semantic:
        _, signals = found.setdefault(memory.pk, (memory, Signals()))
        signals.semantic = similarity
    return [
        SearchHit(
            memory,
            alpha * signals.keyword_evidence() + (1 - alpha) * signals.semantic_evidence(),
            signals.parts(),
        )
        for memory, signals in found.values()
    ]
