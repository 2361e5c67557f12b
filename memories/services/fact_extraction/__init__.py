"""Memory extraction from conversations: the mem0-style `add` pipeline (pipeline.py)."""

from __future__ import annotations

from memories.services.fact_extraction.pipeline import memories_add

__all__ = ["memories_add"]
