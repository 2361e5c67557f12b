"""Search (docs/search.md): the result cache, the semantic floor, hybrid fusion, the
candidate pool, neighbours, dates, re-ranking."""

from __future__ import annotations

from memoryplatform.settings.env import env_choice, env_float, env_int, env_str

# A repeated search within this many seconds is answered from the process's result cache,
# unless a write in its project came in between (platformcore/lib/result_cache.py); 0: off.
MEMORY_SEARCH_CACHE_SECONDS = env_float("MEMORY_SEARCH_CACHE_SECONDS", 30, minimum=0)
MEMORY_SEARCH_CACHE_ENTRIES = env_int("MEMORY_SEARCH_CACHE_ENTRIES", 2000, minimum=1)

# Semantic floor, hybrid fusion, candidate pool (HNSW query breadth: database.py).
# Floor 0.15: a paraphrase shares little with what it asks for (median cosine 0.38 between a
# question and its memory with all-MiniLM-L6-v2): top-5 recall of paraphrased questions 0.368
# at 0.5 -> 0.816, LoCoMo hybrid R@10 0.722 -> 0.729 (python -m benchmarks.paraphrase;
# python -m benchmarks.locomo --min-similarity 0.15). Any floor from 0 to 0.25 scores the
# same on both; 0.15 still drops 85% of unrelated memories from the semantic candidates.
MEMORY_SEARCH_MIN_SIMILARITY = env_float("MEMORY_SEARCH_MIN_SIMILARITY", 0.15, minimum=0, maximum=1)
MEMORY_SEARCH_FUSION = env_choice(
    "MEMORY_SEARCH_FUSION", "calibrated", {"calibrated", "minmax", "rrf"}
)
# The keyword weight. Calibrated fusion 0.7: the paraphrase check's hit@1 equals semantic
# search's with LoCoMo R@10 unchanged (docs/search.md, "Calibrated fusion"); min-max and RRF
# were chosen at 0.5 on LoCoMo.
MEMORY_SEARCH_HYBRID_ALPHA = env_float(
    "MEMORY_SEARCH_HYBRID_ALPHA",
    0.7 if MEMORY_SEARCH_FUSION == "calibrated" else 0.5,
    minimum=0,
    maximum=1,
)
MEMORY_SEARCH_RRF_K = env_int("MEMORY_SEARCH_RRF_K", 60, minimum=1)
MEMORY_SEARCH_CANDIDATES = env_int("MEMORY_SEARCH_CANDIDATES", 50, minimum=1)
# Keyword scoring reads at most this many memories per query term (docs/search.md).
MEMORY_SEARCH_TERM_CAP = env_int("MEMORY_SEARCH_TERM_CAP", 100, minimum=10)
# Hybrid search adds a share of its best hits' relevance to the memories stored just before and
# after them in their run (memories/selectors/search/neighbours.py; 0 switches it off).
MEMORY_SEARCH_NEIGHBOURS = min(env_int("MEMORY_SEARCH_NEIGHBOURS", 2, minimum=0), 5)
MEMORY_SEARCH_NEIGHBOUR_WEIGHT = env_float(
    "MEMORY_SEARCH_NEIGHBOUR_WEIGHT", 0.3, minimum=0, maximum=1
)
MEMORY_SEARCH_NEIGHBOUR_SEEDS = env_int("MEMORY_SEARCH_NEIGHBOUR_SEEDS", 5, minimum=1)
# relevance added to a hit dated within a time the question names ("in May 2023", "last
# week"): memories.selectors.search.dates; 0 switches it off
MEMORY_SEARCH_DATE_WEIGHT = env_float("MEMORY_SEARCH_DATE_WEIGHT", 0.3, minimum=0, maximum=1)
# A cross-encoder (sentence-transformers CrossEncoder name or directory) that re-scores the
# best MEMORY_SEARCH_RERANK_TOP hybrid hits after fusion, within MEMORY_SEARCH_RERANK_BUDGET_MS
# (past it the fused order stands): memories/selectors/search/rerank.py. Empty: none.
MEMORY_SEARCH_RERANKER = env_str("MEMORY_SEARCH_RERANKER", "")
MEMORY_SEARCH_RERANK_TOP = env_int("MEMORY_SEARCH_RERANK_TOP", 20, minimum=1)
MEMORY_SEARCH_RERANK_BUDGET_MS = env_float("MEMORY_SEARCH_RERANK_BUDGET_MS", 300.0, minimum=0)
