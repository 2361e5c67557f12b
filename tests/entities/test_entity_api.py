"""Entity and graph behaviour, as the SQL-native memory server specifies it, through REST."""

from __future__ import annotations

from entities.models import Entity, EntityMemory, Relation
from memories.models import Memory


def create_entity(tenant, name, entity_type="person", **fields):
    response = tenant.post(
        "/api/v1/entities/", {"name": name, "entity_type": entity_type, **fields}
    )
    assert response.status_code in (200, 201), response.json()
    return response.json()


def relate(tenant, source, target, relation_type="related_to", **fields):
    response = tenant.post(
        "/api/v1/relations/",
        {"source": source, "target": target, "relation_type": relation_type, **fields},
    )
    assert response.status_code in (200, 201), response.json()
    return response.json()


def test_create_entity_stores_it_with_an_embedding(alice):
    body = create_entity(alice, "Alice", description="Software engineer")
    assert body["created"] is True
    assert body["entity_type"] == "person"
    entity = Entity.objects.get(pk=body["id"])
    assert entity.embedding is not None and len(entity.embedding) == 384


def test_creating_the_same_name_and_type_returns_the_existing_entity(alice):
    first = create_entity(alice, "Alice")
    response = alice.post("/api/v1/entities/", {"name": "  alice ", "entity_type": "person"})
    assert response.status_code == 200
    assert response.json()["id"] == first["id"] and response.json()["created"] is False


def test_the_same_name_with_another_type_is_another_entity(alice):
    person = create_entity(alice, "Jordan", "person")
    place = create_entity(alice, "Jordan", "location")
    assert person["id"] != place["id"]


def test_create_relation_by_names_and_look_it_up_by_entity(alice):
    create_entity(alice, "Alice")
    create_entity(alice, "Bob")
    relation = relate(alice, "Alice", "Bob", "collaborates_with", strength=0.8)
    assert relation["source"]["name"] == "Alice" and relation["target"]["name"] == "Bob"
    assert relation["strength"] == 0.8 and relation["valid_now"] is True
    listed = alice.get("/api/v1/relations/", {"entity_id": relation["source"]["id"]}).json()
    assert [r["relation_type"] for r in listed["results"]] == ["collaborates_with"]


def test_create_relation_by_ids(alice):
    a, b = create_entity(alice, "Alice"), create_entity(alice, "Bob")
    response = alice.post(
        "/api/v1/relations/",
        {"source_id": a["id"], "target_id": b["id"], "relation_type": "Reports To"},
    )
    assert response.status_code == 201
    assert response.json()["relation_type"] == "reports_to"


def test_a_duplicate_relation_updates_the_existing_one(alice):
    first = relate(alice, "Alice", "Bob", "collaborates_with", strength=0.5)
    response = alice.post(
        "/api/v1/relations/",
        {"source": "Alice", "target": "Bob", "relation_type": "collaborates_with", "strength": 0.9},
    )
    assert response.status_code == 200
    assert response.json()["id"] == first["id"] and response.json()["strength"] == 0.9
    assert Relation.objects.filter(project=alice.project).count() == 1


def test_relations_to_unknown_names_auto_create_unknown_entities(alice):
    relate(alice, "Nobody Yet", "Somewhere", "located_in")
    types = dict(Entity.objects.filter(project=alice.project).values_list("name", "entity_type"))
    assert types == {"Nobody Yet": "unknown", "Somewhere": "unknown"}


def test_entity_graph_depth_one_returns_a_b_c_but_not_d(alice):
    relate(alice, "A", "B")
    relate(alice, "A", "C")
    relate(alice, "B", "D")
    a = Entity.objects.get(project=alice.project, name="A")
    body = alice.get(f"/api/v1/entities/{a.pk}/graph/", {"depth": 1}).json()
    assert {node["name"] for node in body["nodes"]} == {"A", "B", "C"}
    assert len(body["edges"]) == 2


def test_entity_graph_depth_two_returns_a_b_c_d(alice):
    relate(alice, "A", "B")
    relate(alice, "A", "C")
    relate(alice, "B", "D")
    a = Entity.objects.get(project=alice.project, name="A")
    body = alice.get(f"/api/v1/entities/{a.pk}/graph/", {"depth": 2}).json()
    assert {node["name"]: node["depth"] for node in body["nodes"]} == {
        "A": 0,
        "B": 1,
        "C": 1,
        "D": 2,
    }


def test_entity_graph_filters_by_strength_and_relation_type(alice):
    relate(alice, "A", "B", "uses", strength=0.9)
    relate(alice, "A", "C", "manages", strength=0.2)
    a = Entity.objects.get(project=alice.project, name="A")
    strong = alice.get(f"/api/v1/entities/{a.pk}/graph/", {"min_strength": 0.5}).json()
    assert {node["name"] for node in strong["nodes"]} == {"A", "B"}
    managed = alice.get(f"/api/v1/entities/{a.pk}/graph/", {"relation_type": "manages"}).json()
    assert {node["name"] for node in managed["nodes"]} == {"A", "C"}


def test_entity_graph_includes_memories_per_node_by_default(alice, remember):
    memory = remember("Bob fixed the flaky test", entity_names=["Bob"])  # user u1's graph
    relate(alice, "Alice", "Bob", "collaborates_with", user_id="u1")
    a = Entity.objects.get(project=alice.project, name="Alice")
    body = alice.get(f"/api/v1/entities/{a.pk}/graph/").json()
    bob = next(node for node in body["nodes"] if node["name"] == "Bob")
    assert [m["id"] for m in bob["memories"]] == [memory["id"]]
    without = alice.get(f"/api/v1/entities/{a.pk}/graph/", {"include_memories": "false"}).json()
    assert all(node["memories"] is None for node in without["nodes"])


def test_graph_parameters_out_of_range_are_a_400_naming_the_field(alice):
    a = create_entity(alice, "A")
    response = alice.get(f"/api/v1/entities/{a['id']}/graph/", {"depth": 6})
    assert response.status_code == 400
    assert "depth" in response.json()["error"]["fields"]
    response = alice.get(f"/api/v1/entities/{a['id']}/graph/", {"max_nodes": 5000})
    assert "max_nodes" in response.json()["error"]["fields"]


def test_deleting_an_entity_cascades_to_relations_but_keeps_memories(alice, remember):
    memory = remember("Alice pairs with Bob on Fridays", entity_names=["Alice"])
    relate(alice, "Alice", "Bob", "collaborates_with")
    entity = Entity.objects.get(project=alice.project, name="Alice", entity_type="unknown")
    response = alice.delete(f"/api/v1/entities/{entity.pk}/")
    assert response.status_code == 200
    assert not Entity.objects.filter(pk=entity.pk).exists()
    assert not Relation.objects.filter(project=alice.project, source_id=entity.pk).exists()
    assert not EntityMemory.objects.filter(entity_id=entity.pk).exists()
    assert alice.get(f"/api/v1/memories/{memory['id']}/").status_code == 200


def test_deleting_an_entity_with_cascade_memories_soft_deletes_its_memories(alice, remember):
    memory = remember("Zed owns the billing service", entity_names=["Zed"])
    entity = Entity.objects.get(project=alice.project, name="Zed")
    response = alice.delete(f"/api/v1/entities/{entity.pk}/?cascade_memories=true")
    assert response.json()["deleted"]["memories"] == 1
    assert alice.get(f"/api/v1/memories/{memory['id']}/").status_code == 404
    history = alice.get(f"/api/v1/memories/{memory['id']}/history/").json()
    assert history[-1]["event"] == "DELETE"


def test_storing_a_memory_with_entity_names_auto_creates_unknown_entities(alice, remember):
    memory = remember("Met someone new today", entity_names=["NewPerson"])
    entity = Entity.objects.get(project=alice.project, name="NewPerson")
    assert entity.entity_type == "unknown"
    linked = alice.get(f"/api/v1/entities/{entity.pk}/memories/").json()
    assert [m["id"] for m in linked["results"]] == [memory["id"]]
    assert linked["results"][0]["relevance"] == 1.0
    names = [e["name"] for e in alice.get(f"/api/v1/memories/{memory['id']}/entities/").json()]
    assert "NewPerson" in names


def test_entity_names_reuse_an_existing_entity_by_name_or_alias(alice, remember):
    entity = create_entity(alice, "Robert", aliases=["Bob"])
    remember("Bob likes tea", entity_names=["bob"])
    assert Entity.objects.filter(project=alice.project).count() == 1
    assert alice.get(f"/api/v1/entities/{entity['id']}/memories/").json()["count"] == 1


def test_entity_memories_hide_soft_deleted_memories(alice, remember):
    memory = remember("Dana reviewed the design", entity_names=["Dana"])
    entity = Entity.objects.get(project=alice.project, name="Dana")
    alice.delete(f"/api/v1/memories/{memory['id']}/")
    assert alice.get(f"/api/v1/entities/{entity.pk}/memories/").json()["count"] == 0


def test_entity_detail_lists_its_current_relations(alice):
    relate(alice, "Alice", "Google", "works_at")
    entity = Entity.objects.get(project=alice.project, name="Alice")
    body = alice.get(f"/api/v1/entities/{entity.pk}/").json()
    assert [(r["relation_type"], r["target"]["name"]) for r in body["relations"]] == [
        ("works_at", "Google")
    ]


def test_update_entity_renames_and_re_embeds(alice):
    entity = create_entity(alice, "Postgre", "technology")
    before = Entity.objects.get(pk=entity["id"]).embedding
    response = alice.patch(f"/api/v1/entities/{entity['id']}/", {"name": "PostgreSQL"})
    assert response.status_code == 200 and response.json()["name"] == "PostgreSQL"
    after = Entity.objects.get(pk=entity["id"])
    assert after.normalized_name == "postgresql"
    assert list(after.embedding) != list(before)


def test_renaming_onto_an_existing_name_and_type_is_a_conflict(alice):
    create_entity(alice, "Alice")
    other = create_entity(alice, "Alicia")
    response = alice.patch(f"/api/v1/entities/{other['id']}/", {"name": "alice"})
    assert response.status_code == 409
    assert "name" in response.json()["error"]["fields"]


def test_search_entities_by_name_tolerates_typos(alice):
    create_entity(alice, "Kubernetes", "technology")
    create_entity(alice, "Alice")
    names = [
        e["name"] for e in alice.get("/api/v1/entities/", {"q": "kubernets"}).json()["results"]
    ]
    assert names == ["Kubernetes"]


def test_search_entities_by_name_puts_the_exact_name_or_alias_first(alice):
    create_entity(alice, "Bob's Burgers", "organization")
    create_entity(alice, "Bobby Tables")
    create_entity(alice, "Robert Smith", aliases=["Bob"])
    names = [e["name"] for e in alice.get("/api/v1/entities/", {"q": "bob"}).json()["results"]]
    assert names[0] == "Robert Smith"
    create_entity(alice, "Alice Chen")
    create_entity(alice, "Alice")
    names = [e["name"] for e in alice.get("/api/v1/entities/", {"q": "alice"}).json()["results"]]
    assert names[0] == "Alice"


def test_search_entities_by_meaning(alice):
    create_entity(alice, "PostgreSQL", "technology", description="relational database")
    create_entity(alice, "Paris", "location", description="capital of France")
    results = alice.get("/api/v1/entities/", {"q": "SQL database", "match": "semantic"}).json()
    assert results["results"][0]["name"] == "PostgreSQL"


def test_list_entities_filters_by_type(alice):
    create_entity(alice, "Alice")
    create_entity(alice, "Paris", "location")
    body = alice.get("/api/v1/entities/", {"entity_type": "location"}).json()
    assert [e["name"] for e in body["results"]] == ["Paris"] and body["count"] == 1


def test_bad_entity_input_is_a_400_naming_the_field(alice):
    for garbage in ("9lives", "plan-et!", "x" * 51, 7):
        response = alice.post("/api/v1/entities/", {"name": "X", "entity_type": garbage})
        assert response.status_code == 400 and "entity_type" in response.json()["error"]["fields"]
    response = alice.post(
        "/api/v1/relations/", {"source": "A", "target": "B", "relation_type": "!!"}
    )
    assert response.status_code == 400 and "relation_type" in response.json()["error"]["fields"]
    response = alice.post(
        "/api/v1/relations/", {"source": "A", "target": "B", "relation_type": "x", "strength": 2}
    )
    assert "strength" in response.json()["error"]["fields"]
    response = alice.post(
        "/api/v1/relations/", {"source": "A", "target": "A", "relation_type": "x"}
    )
    assert response.status_code == 400 and "target" in response.json()["error"]["fields"]


def test_delete_relation(alice):
    relation = relate(alice, "A", "B")
    assert alice.delete(f"/api/v1/relations/{relation['id']}/").status_code == 204
    assert alice.get(f"/api/v1/relations/{relation['id']}/").status_code == 404


def test_delete_relations_by_name(alice):
    relate(alice, "A", "B", "uses")
    relate(alice, "A", "C", "uses")
    response = alice.post(
        "/api/v1/relations/delete-by-name/",
        {"relations": [{"source": "a", "target": "B", "relation_type": "uses"}]},
    )
    assert response.json() == {"deleted": 1}
    assert Relation.objects.filter(project=alice.project).count() == 1


def test_bulk_create_entities_and_relations_by_name(alice):
    response = alice.post(
        "/api/v1/graph/bulk/",
        {
            "entities": [
                {"name": "Alice", "entity_type": "person"},
                {"name": "Acme", "entity_type": "organization", "description": "a company"},
            ],
            "relations": [
                {"source": "Alice", "target": "Acme", "relation_type": "works_at"},
                {"source": "Alice", "target": "Rust", "relation_type": "uses", "strength": 0.9},
            ],
        },
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [e["name"] for e in body["entities"]] == ["Alice", "Acme"]
    assert body["created_relations"] == 2
    types = dict(Entity.objects.filter(project=alice.project).values_list("name", "entity_type"))
    assert types == {"Alice": "person", "Acme": "organization", "Rust": "unknown"}


def test_bulk_create_names_the_bad_item(alice):
    response = alice.post(
        "/api/v1/graph/bulk/",
        {"relations": [{"source": "A", "target": "B", "relation_type": "ok"}, {"source": "A"}]},
    )
    assert response.status_code == 400
    assert any(name.startswith("relations.1.") for name in response.json()["error"]["fields"])
    assert not Entity.objects.filter(project=alice.project).exists()


def test_reset_wipes_the_graph(alice, remember):
    remember("Alice works at Google", entity_names=["Alice"])
    relate(alice, "A", "B")
    response = alice.post("/api/v1/reset/")
    assert response.status_code == 200
    assert not Entity.objects.filter(project=alice.project).exists()
    assert not Relation.objects.filter(project=alice.project).exists()
    assert not Memory.objects.filter(project=alice.project).exists()
