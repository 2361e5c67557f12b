"""REST API of the knowledge graph."""
