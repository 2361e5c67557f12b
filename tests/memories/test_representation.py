"""The memory representation written out in MemorySerializer gives what DRF's field-by-field
path gives, for every field and for the subclasses that add their own."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers

from entities.api.serializers import MemoryNodeSerializer
from memories.api.search import ScoreSerializer
from memories.api.serializers import MemoryCreatedSerializer, MemorySerializer
from memories.models import Memory
from memories.selectors.memories import memory_queryset
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
