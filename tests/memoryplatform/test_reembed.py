"""Keeping every stored vector in the configured model's space: missing vectors of memories,
entities and document chunks filled, and all of them re-embedded once the model changed."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command

from documents.models import Document, DocumentChunk
from entities.models import Entity
from maintenance.embeddings import embeddings_refresh, model_changed
from memories.models import EmbeddingSpace, Memory
from tests.conftest import make_tenant
from tests.documents.conftest import RUNBOOK

pytestmark = pytest.mark.django_db


def test_missing_vectors_of_chunks_entities_and_memories_are_filled(alice, remember):
    memory = remember("The deploy runbook lives in the ops wiki")
    Memory.objects.filter(pk=memory["id"]).update(embedding=None)
    body = alice.post("/api/v1/documents/", {"text": RUNBOOK, "user_id": "u1"}).json()
    assert DocumentChunk.objects.filter(document_id=body["id"], embedding__isnull=True).exists()
    entity = Entity.objects.create(
        project=alice.project, name="Ops wiki", normalized_name="ops wiki"
    )
    report = embeddings_refresh(projects=[alice.project])
    assert report.model_changed is False and report.space_recorded is False
    assert report.embedded["memories"] == 1 and report.embedded["entities"] >= 1
    assert not DocumentChunk.objects.filter(document_id=body["id"], embedding__isnull=True).exists()
    assert Document.objects.get(pk=body["id"]).status == "ready"
    entity.refresh_from_db()
    memory_row = Memory.objects.get(pk=memory["id"])
    assert entity.embedding is not None and memory_row.embedding is not None


@pytest.mark.django_db(transaction=True)
def test_once_the_model_changed_reembed_moves_every_vector_and_records_the_model(switchable):
    alice = make_tenant("alice")
    memory = alice.post("/api/v1/memories/", {"content": "Backups run nightly", "user_id": "u1"})
    real = np.array(Memory.objects.get(pk=memory.json()["id"]).embedding)
    Memory.objects.filter(pk=memory.json()["id"]).update(embedding=[0.05] * 384)
    EmbeddingSpace.objects.filter(key="default").update(model_name="an-older-model")
    assert model_changed()
    report = embeddings_refresh()  # the hourly job does not rewrite vectors of another model
    assert report.embedded == {} and model_changed()
    call_command("reembed", verbosity=0)  # a live switch to the configured model
    assert not model_changed()
    again = np.array(Memory.objects.get(pk=memory.json()["id"]).embedding)
    assert np.allclose(again, real, atol=1e-5)
