"""Maintenance that spans the apps below it (tenants, memories, entities, documents): keeping
every stored vector in the configured embedding model's space (`embeddings.py`)."""
