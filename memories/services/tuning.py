"""Tunable numbers of memory intelligence: a per-project override, else the global setting.

A project's `settings` JSON may carry any of these keys, e.g.
`{"pii_masking": false, "dedup_threshold": 0.97, "consolidation_interval": 0}`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from tenants.models import Project

# project settings key -> global Django setting
DEFAULTS = {
    "pii_masking": "MEMORY_PII_MASKING",
    "dedup_threshold": "MEMORY_DEDUP_THRESHOLD",
    "consolidation_threshold": "MEMORY_CONSOLIDATION_THRESHOLD",
    "consolidation_interval": "MEMORY_CONSOLIDATION_INTERVAL",
    "bulk_near_duplicates": "MEMORY_BULK_NEAR_DUPLICATES",
    "bulk_vector_index": "MEMORY_BULK_VECTOR_INDEX",
    "contradiction_min_similarity": "MEMORY_CONTRADICTION_MIN_SIMILARITY",
    "pruning": "MEMORY_PRUNING",
    "prune_threshold": "MEMORY_PRUNE_THRESHOLD",
    "decay_link_boost": "MEMORY_DECAY_LINK_BOOST",
    "archive_compress_chars": "MEMORY_ARCHIVE_COMPRESS_CHARS",
    "short_term_ttl_hours": "MEMORY_SHORT_TERM_TTL_HOURS",
    "session_idle_minutes": "MEMORY_SESSION_IDLE_MINUTES",
    "tier_expiry": "MEMORY_TIER_EXPIRY",
    "stale_thresholds": "MEMORY_STALE_THRESHOLDS",
    "delete_decisions": "MEMORY_DELETE_DECISIONS",
}


def tuning(project: Project, name: str) -> Any:
    overrides = project.settings if isinstance(project.settings, dict) else {}
    if name in overrides and overrides[name] is not None:
        return overrides[name]
    return getattr(settings, DEFAULTS[name])
