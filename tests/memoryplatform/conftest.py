"""Fixtures of the operator-facing tests."""

from __future__ import annotations

import pytest

from documents.models import DocumentChunk
from entities.models import Entity
from maintenance import embedding_switch
from maintenance.vector_schema import resize_vector_columns
from memories.embeddings import get_embedder
from memories.models import EmbeddingSpace, Memory
from memories.services.embedding_space import Space, embedding_space_record, followed
from memories.vector_storage import storage_for


@pytest.fixture
def switchable(transactional_db, settings):
    """A store that may be switched (index builds run outside transactions), put back to
    all-MiniLM-L6-v2's columns afterwards."""
    settings.MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS = 0.05
    yield
    embedding_switch.switch_abort()
    Memory.objects.update(embedding=None, summary_embedding=None)
    Entity.objects.update(embedding=None)
    DocumentChunk.objects.update(embedding=None)
    resize_vector_columns(storage_for(384))
    embedding_space_record(space=Space("local", "all-MiniLM-L6-v2", 384))
    EmbeddingSpace.objects.filter(key="default").update(generation=0)
    followed.refresh(force=True)
    get_embedder.cache_clear()
