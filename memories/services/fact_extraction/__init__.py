"""Memory extraction from conversations: the mem0-style `add` pipeline (pipeline.py)."""

from __future__ import annotations

from typing import Any


def memories_add(**kwargs: Any) -> dict[str, list[dict[str, Any]]]:
    """See `memories.services.fact_extraction.pipeline.memories_add` (imported lazily: the
    contradiction detector imports this package's slot parser)."""
    from memories.services.fact_extraction.pipeline import memories_add as run

    return run(**kwargs)
