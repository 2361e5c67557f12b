"""Reads: documents and their chunks (documents.py), search over chunks (search.py)."""
