"""Another project's key never sees or changes alice's graph: 404 or empty, never data."""

from __future__ import annotations

import pytest

from entities.models import Entity, Relation
from tests.entities.conftest import build_graph


@pytest.fixture
def alice_graph(alice, remember):
    memory = remember("Alice works at Google", entity_names=["Alice"])
    g = build_graph(alice.project, [("Alice", "collaborates_with", "Bob")])
    relation = Relation.objects.filter(project=alice.project).first()
    return {"memory": memory, "alice": g["Alice"], "relation": relation}


def test_charlie_cannot_read_alices_entities(charlie, alice_graph):
    entity = alice_graph["alice"].pk
    assert charlie.get("/api/v1/entities/").json()["count"] == 0
    assert charlie.get("/api/v1/entities/", {"q": "Alice"}).json()["results"] == []
    semantic = charlie.get("/api/v1/entities/", {"q": "Alice", "match": "semantic"}).json()
    assert semantic["results"] == []
    for path in ("", "graph/", "memories/"):
        assert charlie.get(f"/api/v1/entities/{entity}/{path}").status_code == 404


def test_charlie_cannot_change_or_delete_alices_entities(charlie, alice_graph):
    entity = alice_graph["alice"].pk
    assert charlie.patch(f"/api/v1/entities/{entity}/", {"name": "Mallory"}).status_code == 404
    assert charlie.delete(f"/api/v1/entities/{entity}/").status_code == 404
    assert Entity.objects.get(pk=entity).name == "Alice"


def test_charlie_cannot_read_or_touch_alices_relations(charlie, alice_graph):
    relation = alice_graph["relation"].pk
    assert charlie.get("/api/v1/relations/").json()["count"] == 0
    assert charlie.get(f"/api/v1/relations/{relation}/").status_code == 404
    assert charlie.post(f"/api/v1/relations/{relation}/close/").status_code == 404
    assert charlie.delete(f"/api/v1/relations/{relation}/").status_code == 404
    deleted = charlie.post(
        "/api/v1/relations/delete-by-name/",
        {"relations": [{"source": "Alice", "target": "Bob", "relation_type": "collaborates_with"}]},
    )
    assert deleted.json() == {"deleted": 0}
    assert Relation.objects.filter(pk=relation, valid_to__isnull=True).exists()


def test_charlie_cannot_relate_alices_entities_by_id(charlie, alice_graph):
    entity = alice_graph["alice"].pk
    response = charlie.post(
        "/api/v1/relations/",
        {"source_id": entity, "target_id": entity + 1, "relation_type": "knows"},
    )
    assert response.status_code == 404


def test_names_resolve_within_the_callers_project_only(charlie, alice_graph):
    alices = set(Entity.objects.filter(name="Alice").values_list("pk", flat=True))
    response = charlie.post(
        "/api/v1/relations/", {"source": "Alice", "target": "Bob", "relation_type": "knows"}
    )
    assert response.status_code == 201
    charlies = Entity.objects.filter(project=charlie.project)
    assert set(charlies.values_list("name", flat=True)) == {"Alice", "Bob"}
    assert response.json()["source"]["id"] not in alices
    assert Entity.objects.filter(name="Alice").count() == len(alices) + 1


def test_charlie_cannot_walk_or_list_entities_of_alices_memories(charlie, alice_graph):
    memory = alice_graph["memory"]["id"]
    for path in ("traverse/", "causal-chain/", "entities/"):
        assert charlie.get(f"/api/v1/memories/{memory}/{path}").status_code == 404


def test_charlie_sees_an_empty_graph_in_analysis_and_export(charlie, alice_graph):
    analysis = charlie.get("/api/v1/graph/analysis/").json()
    assert analysis["entities"]["count"] == 0 and analysis["top_connectors"] == []
    export = charlie.get("/api/v1/graph/export/").json()
    assert export["nodes"] == [] and export["edges"] == []
    graphml = charlie.get("/api/v1/graph/export/graphml/").content.decode()
    assert "Alice" not in graphml


def test_charlies_graph_search_finds_nothing_of_alices(charlie, alice_graph):
    from entities.selectors.search import graph_search
    from memories.selectors.search_types import SearchQuery

    assert graph_search(project=charlie.project, query=SearchQuery(text="Alice")) == []


def test_charlies_reset_leaves_alices_graph_alone(charlie, alice_graph, alice):
    charlie.post("/api/v1/reset/")
    assert Entity.objects.filter(project=alice.project).count() >= 2


def test_read_only_keys_cannot_write_the_graph(alice):
    from tests.conftest import make_tenant

    reader = make_tenant("alice", scopes=["read"])
    assert reader.post("/api/v1/entities/", {"name": "X"}).status_code == 403
    assert reader.post("/api/v1/graph/bulk/", {"entities": [{"name": "X"}]}).status_code == 403
    assert reader.get("/api/v1/entities/").status_code == 200
