"""Writes to the knowledge graph: entities, relations, memory links and extraction."""
