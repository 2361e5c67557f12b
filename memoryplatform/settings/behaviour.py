"""How memories behave: layers and sessions, namespaces, documents and summaries, decay,
reinforcement, intelligence (dedup, consolidation, pruning), the knowledge graph."""

from __future__ import annotations

from memoryplatform.settings.env import env_bool, env_choice, env_float, env_int

# Memory layers (docs/episodes.md): a short-term memory expires this many hours after it was
# stored (project setting `short_term_ttl_hours`; 0: never) unless the layer job promotes it, for
# an importance of at least MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE or at least
# MEMORY_SHORT_TERM_PROMOTE_ACCESSES reads. Search and session context add
# MEMORY_SHORT_TERM_SESSION_BOOST to the caller's run's recent short-term memories.
MEMORY_SHORT_TERM_TTL_HOURS = env_float("MEMORY_SHORT_TERM_TTL_HOURS", 24.0, minimum=0)
MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE = env_float(
    "MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE", 0.8, minimum=0, maximum=1
)
MEMORY_SHORT_TERM_PROMOTE_ACCESSES = env_int("MEMORY_SHORT_TERM_PROMOTE_ACCESSES", 3, minimum=1)
MEMORY_SHORT_TERM_SESSION_BOOST = env_float(
    "MEMORY_SHORT_TERM_SESSION_BOOST", 0.1, minimum=0, maximum=1
)
# A session's working memory (its run's short-term memories) ends with the session: closed
# explicitly, or after this many minutes without a write or read (project setting
# `session_idle_minutes`; 0: only explicit closes). Memento's sessions last 60 minutes idle.
MEMORY_SESSION_IDLE_MINUTES = env_float("MEMORY_SESSION_IDLE_MINUTES", 60.0, minimum=0)
# Agent namespaces (tenants/namespaces.py): an agent reads its own memories and the shared
# pool. Off by default; a project's `agent_namespaces` setting, or the memento MCP profile,
# turns them on.
MEMORY_AGENT_NAMESPACES = env_bool("MEMORY_AGENT_NAMESPACES", False)
# Uploaded documents (docs/documents.md): caps on what one upload may cost, and chunking.
MEMORY_DOCUMENT_MAX_BYTES = env_int("MEMORY_DOCUMENT_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
MEMORY_DOCUMENT_MAX_PAGES = env_int("MEMORY_DOCUMENT_MAX_PAGES", 500, minimum=1)
MEMORY_DOCUMENT_MAX_CHUNKS = env_int("MEMORY_DOCUMENT_MAX_CHUNKS", 5000, minimum=1)
MEMORY_DOCUMENT_CHUNK_CHARS = env_int("MEMORY_DOCUMENT_CHUNK_CHARS", 1200, minimum=100)
MEMORY_DOCUMENT_CHUNK_OVERLAP = env_int("MEMORY_DOCUMENT_CHUNK_OVERLAP", 150, minimum=0)
MEMORY_DOCUMENT_EMBED_BATCH = env_int("MEMORY_DOCUMENT_EMBED_BATCH", 64, minimum=1)
# Summaries (memories/services/summaries.py): memories of at least MEMORY_SUMMARY_MIN_TOKENS
# tokens (0: none) and document chunks get one of up to MEMORY_SUMMARY_SENTENCES sentences and
# MEMORY_SUMMARY_MAX_CHARS characters, written in the background (the LLM's when configured).
MEMORY_SUMMARY_MIN_TOKENS = env_int("MEMORY_SUMMARY_MIN_TOKENS", 150, minimum=0)
MEMORY_SUMMARY_SENTENCES = env_int("MEMORY_SUMMARY_SENTENCES", 3, minimum=1)
MEMORY_SUMMARY_MAX_CHARS = env_int("MEMORY_SUMMARY_MAX_CHARS", 400, minimum=40)
# Days of per-day search statistics kept (analytics.SearchStat, a rolling table).
MEMORY_ANALYTICS_SEARCH_DAYS = env_int("MEMORY_ANALYTICS_SEARCH_DAYS", 90, minimum=1)

MEMORY_DECAY_HALF_LIFE_DAYS = env_float("MEMORY_DECAY_HALF_LIFE_DAYS", 30.0, minimum=0.01)
MEMORY_REINFORCEMENT_STEP = env_float("MEMORY_REINFORCEMENT_STEP", 0.1, minimum=0, maximum=1)
# Reads of this long are merged into one reinforcement UPDATE (memories/services/reinforcement.py).
MEMORY_REINFORCEMENT_DELAY_MS = env_int("MEMORY_REINFORCEMENT_DELAY_MS", 200, minimum=0)
# Long-lived connections (websocket, SSE, MCP over stdio) check their key again this often and
# end (websocket close code 4401) once it is revoked or expired.
MEMORY_KEY_RECHECK_SECONDS = env_float("MEMORY_KEY_RECHECK_SECONDS", 60.0, minimum=0.01)
# events kept per project for clients that reconnect (Last-Event-ID, last_event_id)
MEMORY_EVENT_REPLAY = env_int("MEMORY_EVENT_REPLAY", 1000, minimum=1)
MEMORY_API_KEY_TOUCH_SECONDS = env_int("MEMORY_API_KEY_TOUCH_SECONDS", 60, minimum=0)

# Memory intelligence (docs/intelligence.md); per-project overrides live in Project.settings.
MEMORY_PII_MASKING = env_bool("MEMORY_PII_MASKING", default=True)
MEMORY_DEDUP_THRESHOLD = env_float("MEMORY_DEDUP_THRESHOLD", 0.95, minimum=0, maximum=1)
MEMORY_CONSOLIDATION_THRESHOLD = env_float(
    "MEMORY_CONSOLIDATION_THRESHOLD", 0.85, minimum=0, maximum=1
)
MEMORY_CONSOLIDATION_INTERVAL = env_int("MEMORY_CONSOLIDATION_INTERVAL", 50, minimum=0)
# Near-duplicates in bulk writes: merged in the write (inline), or left to the consolidation
# job that follows it (consolidation: faster imports, merged within seconds to a day).
MEMORY_BULK_NEAR_DUPLICATES = env_choice(
    "MEMORY_BULK_NEAR_DUPLICATES", "inline", {"inline", "consolidation"}
)
# The HNSW inserts of bulk writes: in the write (inline), or by the indexing job that follows
# it (deferred: faster bulk writes; searches compare the waiting rows exactly meanwhile).
MEMORY_BULK_VECTOR_INDEX = env_choice("MEMORY_BULK_VECTOR_INDEX", "inline", {"inline", "deferred"})
# Connections the indexing job inserts deferred vectors with, at once (each insert is one
# backend's CPU; pgvector's graph takes concurrent inserts).
MEMORY_VECTOR_INDEX_WORKERS = env_int("MEMORY_VECTOR_INDEX_WORKERS", 2, minimum=1)
# What `add` does with a DELETE decision (the model's, or offline an explicit end of a stored
# state): `apply` soft-deletes the memory (history, event, restorable), `review` opens a
# contradiction review instead; a project may set "delete_decisions" (docs/intelligence.md).
MEMORY_DELETE_DECISIONS = env_choice("MEMORY_DELETE_DECISIONS", "apply", {"apply", "review"})
MEMORY_CONTRADICTION_MIN_SIMILARITY = env_float(
    "MEMORY_CONTRADICTION_MIN_SIMILARITY", 0.6, minimum=0, maximum=1
)
MEMORY_DECAY_RATE = env_float("MEMORY_DECAY_RATE", 0.01, minimum=0)
MEMORY_DECAY_ACCESS_BOOST = env_float("MEMORY_DECAY_ACCESS_BOOST", 0.1, minimum=0)
MEMORY_DECAY_GRACE_DAYS = env_float("MEMORY_DECAY_GRACE_DAYS", 7.0, minimum=0)
MEMORY_ARCHIVAL_THRESHOLD = env_float("MEMORY_ARCHIVAL_THRESHOLD", 0.1, minimum=0, maximum=1)
MEMORY_EXPIRED_RETENTION_DAYS = env_float("MEMORY_EXPIRED_RETENTION_DAYS", 30.0, minimum=0)
MEMORY_PRUNE_THRESHOLD = env_float("MEMORY_PRUNE_THRESHOLD", 0.05, minimum=0, maximum=1)
# The daily prune job removes memories below the threshold (memories/services/lifecycle.py);
# false: it removes nothing (a project may also set "pruning": false in its settings).
MEMORY_PRUNING = env_bool("MEMORY_PRUNING", True)
# Decay boost per link: + ln(1 + links) x this, for memories many others link to (0 = off;
# a project may set "decay_link_boost"). Archived memories longer than this many characters
# have their text compressed to a summary (0 = never; the full text is kept, restorable).
MEMORY_DECAY_LINK_BOOST = env_float("MEMORY_DECAY_LINK_BOOST", 0.0, minimum=0)
MEMORY_ARCHIVE_COMPRESS_CHARS = env_int("MEMORY_ARCHIVE_COMPRESS_CHARS", 400, minimum=0)
# Memento's TTL tiers (hot / warm / cold / permanent, stored per memory): a memory turns cold
# after half its type's stale threshold unread (days; a project's `stale_thresholds` overrides
# them); with `tier_expiry` (project setting, or this) the prune job also removes cold
# memories unread for the whole threshold. Off by default: decay ranks, pruning stays the
# effective-confidence rule (docs/intelligence.md, "TTL tiers").
MEMORY_STALE_THRESHOLDS = {"procedure": 30, "fact": 60, "decision": 90, "default": 60}
MEMORY_TIER_EXPIRY = env_bool("MEMORY_TIER_EXPIRY", False)
# Utility scoring of new and changed memories (a background job; memories/services/utility.py)
# and its weight in search ranking: a score of 1 multiplies a hit by 1 + weight/2, 0 by
# 1 - weight/2, the unassessed 0.5 by 1.
MEMORY_UTILITY_SCORING = env_bool("MEMORY_UTILITY_SCORING", True)
MEMORY_UTILITY_RANK_WEIGHT = env_float("MEMORY_UTILITY_RANK_WEIGHT", 0.2, minimum=0, maximum=1)

# Knowledge graph: entity/relation extraction on store. auto = offline extractor after the
# answer of an API write (inline elsewhere), LLM extractor as a background job; sync (inline,
# in the write's transaction) / async (a job) force one; off disables extraction.
MEMORY_GRAPH_EXTRACTION = env_choice(
    "MEMORY_GRAPH_EXTRACTION", "auto", {"auto", "sync", "async", "off"}
)
# Whose graph a memory's entities and relations go to (docs/graph.md, "Scoped graphs"):
# user = its user's, as mem0's graph memory is per user (a memory without a user builds the
# project-wide graph); memory = its whole scope (user, agent and run); project = always the
# project-wide graph. A project's settings may override it (`{"graph_scope": "project"}`).
MEMORY_GRAPH_SCOPE = env_choice("MEMORY_GRAPH_SCOPE", "user", {"user", "memory", "project"})
