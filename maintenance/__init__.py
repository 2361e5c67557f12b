"""Maintenance that spans apps (the composition root may import them all): keeping every
stored vector in the configured embedding model's space (`embeddings.py`)."""
