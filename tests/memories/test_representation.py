"""The memory representation written out in MemorySerializer gives what DRF's field-by-field
path gives, for every field and for the subclasses that add their own."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest
from django.utils import timezone
from rest_framework import serializers

from entities.api.serializers import MemoryNodeSerializer
from memories.api.search import ScoreSerializer
from memories.api.serializers import MemoryCreatedSerializer, MemorySerializer
from memories.models import Memory
from memories.selectors.memories import memories_by_id, memory_queryset
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def drf_path(serializer: serializers.Serializer, memory: Memory) -> dict:
    return serializers.ModelSerializer.to_representation(serializer, memory)


def test_written_out_fields_match_drf(alice: Tenant, remember) -> None:
    plain = remember("User prefers dark mode", user_id="u1")
    full = remember(
        "Deploy with blue-green switches",
        agent_id="ops-bot",
        run_id="run-7",
        tags=["ops", "deploy"],
        metadata={"team": "infra", "nested": {"a": [1, 2.5, None]}, "flag": True},
        source="runbook",
        context="said in the retro",
        memory_type="procedure",
        confidence=0.75,
        importance=0.3,
        pinned=True,
        expires_at=(timezone.now() + timedelta(days=3)).isoformat(),
    )
    Memory.objects.filter(pk=full["id"]).update(
        last_accessed_at=timezone.now() - timedelta(days=2), access_count=4
    )
    project = alice.project
    for row in memory_queryset(project=project).filter(pk__in=[plain["id"], full["id"]]):
        assert MemorySerializer(row).data == drf_path(MemorySerializer(row), row)
        assert list(MemorySerializer(row).data) == MemorySerializer.Meta.fields
        bare = Memory.objects.get(pk=row.pk)  # no selector annotations
        assert MemorySerializer(bare).data == drf_path(MemorySerializer(bare), bare)

        row.score, row.score_parts = 0.5, {"keyword": 1.0, "semantic": 0.25}
        scored = ScoreSerializer(row)
        assert scored.data == drf_path(ScoreSerializer(row), row)
        assert list(scored.data) == ScoreSerializer.Meta.fields

        context = {"created": True}
        created = MemoryCreatedSerializer(row, context=context)
        assert created.data == drf_path(MemoryCreatedSerializer(row, context=context), row)
        assert created.data["created"] is True

        row.depth = 2
        assert MemoryNodeSerializer(row).data == drf_path(MemoryNodeSerializer(row), row)


def test_memories_by_id_loads_what_memory_queryset_loads(
    alice: Tenant, bob: Tenant, remember
) -> None:
    """Search pages, entity pages and graph walks load rows through `memories_by_id`, a
    statement written out once: the same memories, fields and serialisation as the queryset
    every other read starts from; deleted memories and other projects' are not found."""
    plain = remember("User prefers dark mode")
    full = remember(
        "Deploy with blue-green switches",
        tags=["ops", "deploy"],
        metadata={"team": "infra", "nested": {"a": [1, 2.5, None]}, "flag": True},
        pinned=True,
        expires_at=(timezone.now() + timedelta(days=3)).isoformat(),
    )
    gone = remember("An old note")
    Memory.objects.filter(pk=gone["id"]).update(deleted_at=timezone.now())
    Memory.objects.filter(pk=plain["id"]).update(embedding=None)
    other = bob.post("/api/v1/memories/", {"content": "Bob's note", "user_id": "u1"}).json()
    ids = [UUID(m["id"]) for m in (plain, full, gone, other)]

    found = memories_by_id(project=alice.project, ids=ids)
    expected = {row.pk: row for row in memory_queryset(project=alice.project).filter(pk__in=ids)}
    assert set(found) == set(expected) == {UUID(plain["id"]), UUID(full["id"])}
    for pk, row in expected.items():
        assert MemorySerializer(found[pk]).data == MemorySerializer(row).data
        assert found[pk].get_deferred_fields() == row.get_deferred_fields()
        assert found[pk].has_vector == row.has_vector
    assert found[UUID(plain["id"])].has_vector is False
    assert found[UUID(full["id"])].metadata == full["metadata"]
    assert memories_by_id(project=alice.project, ids=[]) == {}
