"""How a memory row is laid out on disk matters to every search: the values a search reads per
row (the embedding for exact scans, the search_vector for every keyword match) stay in the
heap tuple instead of PostgreSQL's TOAST table."""

from __future__ import annotations

import pytest
from django.db import connection


def _out_of_line(memory_id: str) -> dict[str, bool]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL,"
            " pg_column_toast_chunk_id(search_vector) IS NOT NULL"
            " FROM memories_memory WHERE id = %s",
            [memory_id],
        )
        embedding, search_vector = cursor.fetchone()
    return {"embedding": embedding, "search_vector": search_vector}


def test_a_typical_memory_keeps_its_vector_and_search_vector_in_the_row(remember):
    if connection.pg_version < 170000:
        pytest.skip("pg_column_toast_chunk_id needs PostgreSQL 17")
    memory = remember(
        "Dana prefers the blue-green deploy for the payments service; the canary stage "
        "caught two regressions last quarter and she wants it kept before every release.",
        metadata={"team": "payments", "priority": 2, "ticket": "PAY-1432"},
        tags=["deploy", "payments", "release"],
    )
    assert _out_of_line(memory["id"]) == {"embedding": False, "search_vector": False}


@pytest.mark.django_db
def test_the_vector_index_grows_with_the_wider_build_breadth():
    """Migration 0009: every insert into the HNSW graph searches 128 candidates for its links
    (pgvector's default 64 left clusters of near-identical memories unreachable)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'memory_embedding_hnsw'")
        (options,) = cursor.fetchone()
    assert "ef_construction=128" in options and "m=16" in options
