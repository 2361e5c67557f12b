"""Every list a caller sends has a cap, held by the service (so REST, MCP and commands share
it): an oversized list is refused with a 400 naming the field before anything is stored."""

from __future__ import annotations

import pytest

from entities.models import Entity, Relation
from entities.services.relations import relations_delete_by_name
from memories.models import Memory
from platformcore.lib.errors import InvalidInput

pytestmark = pytest.mark.django_db


def test_a_graph_batch_of_more_than_a_thousand_entities_is_refused_whole(alice):
    entities = [{"name": f"E{n}", "entity_type": "concept"} for n in range(1001)]
    response = alice.post("/api/v1/graph/bulk/", {"entities": entities})
    assert response.status_code == 400
    assert "entities" in response.json()["error"]["fields"]
    assert not Entity.objects.filter(project=alice.project).exists()


def test_a_session_reflection_caps_each_list(alice):
    response = alice.post(
        "/api/v1/session/reflect/",
        {"agent_id": "coder", "summary": "A long day", "decisions": ["d"] * 101},
    )
    assert response.status_code == 400
    assert "decisions" in response.json()["error"]["fields"]
    assert not Memory.objects.filter(project=alice.project).exists()


def test_a_filter_in_list_is_capped(alice):
    response = alice.post(
        "/api/v1/memories/search/",
        {"query": "anything", "user_id": "u1", "filters": {"tags": {"in": ["t"] * 1001}}},
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"]


def test_deleting_relations_by_name_takes_at_most_a_thousand(alice):
    items = [{"source": "a", "target": "b", "relation_type": "uses"}] * 1001
    with pytest.raises(InvalidInput) as refused:
        relations_delete_by_name(project=alice.project, items=items)
    assert refused.value.fields == {"relations": ["at most 1000 items"]}
    assert not Relation.objects.exists()
