"""Entities, relations and the knowledge graph (see the knowledge-graph issue)."""
