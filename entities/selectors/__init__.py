"""Reads of the knowledge graph: entities, relations, traversal, graph search, analytics."""
