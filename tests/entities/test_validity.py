"""Relations are time-bounded: closed rather than deleted, and walkable "as of" a moment."""

from __future__ import annotations

from datetime import UTC, datetime

from entities.models import Entity, Relation
from entities.selectors.traversal import RelationFilter, entity_subgraph
from entities.services.relations import RelationSpec, relation_upsert
from tests.entities.conftest import build_graph


def when(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def test_a_new_employer_closes_the_previous_works_at_relation(alice):
    g = build_graph(alice.project, [("Alice", "works_at", "Acme")])
    build_graph(alice.project, [("Alice", "works_at", "Globex")])
    relations = {r.target.name: r for r in Relation.objects.filter(project=alice.project)}
    assert relations["Acme"].valid_to is not None and relations["Acme"].invalidated_at is not None
    assert relations["Globex"].valid_to is None
    graph = entity_subgraph(project=alice.project, entity_id=g["Alice"].pk, depth=1)
    assert {node.name for node in graph.nodes} == {"Alice", "Globex"}


def test_non_exclusive_relations_accumulate(alice):
    build_graph(alice.project, [("Alice", "uses", "Python"), ("Alice", "uses", "Rust")])
    assert Relation.objects.filter(project=alice.project).open().count() == 2


def test_traversal_as_of_a_past_date_sees_the_relations_valid_then(alice):
    build_graph(alice.project, [("Alice", "works_at", "Acme")], valid_from=when(2019))
    build_graph(alice.project, [("Alice", "works_at", "Globex")], valid_from=when(2023))
    alice_entity = Entity.objects.get(project=alice.project, name="Alice")

    def employers(year: int) -> set[str]:
        graph = entity_subgraph(
            project=alice.project,
            entity_id=alice_entity.pk,
            relations=RelationFilter(as_of=when(year)),
        )
        return {node.name for node in graph.nodes} - {"Alice"}

    assert employers(2018) == set()
    assert employers(2021) == {"Acme"}
    assert employers(2024) == {"Globex"}


def test_closing_a_relation_keeps_it_for_history(alice):
    g = build_graph(alice.project, [("A", "related_to", "B")], valid_from=when(2020))
    relation = Relation.objects.get(project=alice.project)
    response = alice.post(
        f"/api/v1/relations/{relation.pk}/close/", {"valid_to": "2022-01-01T00:00:00Z"}
    )
    assert response.status_code == 200 and response.json()["valid_now"] is False
    now = alice.get("/api/v1/relations/").json()
    assert now["count"] == 0
    then = alice.get("/api/v1/relations/", {"as_of": "2021-01-01T00:00:00Z"}).json()
    assert then["count"] == 1
    everything = alice.get("/api/v1/relations/", {"include_closed": "true"}).json()
    assert everything["count"] == 1
    graph = alice.get(
        f"/api/v1/entities/{g['A'].pk}/graph/", {"as_of": "2021-06-01T00:00:00Z"}
    ).json()
    assert {node["name"] for node in graph["nodes"]} == {"A", "B"}


def test_a_closed_relation_can_be_asserted_again(alice):
    g = build_graph(alice.project, [("A", "related_to", "B")], valid_from=when(2020))
    relation = Relation.objects.get(project=alice.project)
    alice.post(f"/api/v1/relations/{relation.pk}/close/", {"valid_to": "2021-01-01T00:00:00Z"})
    result = relation_upsert(
        project=alice.project,
        source=g["A"],
        target=g["B"],
        spec=RelationSpec(relation_type="related_to"),
    )
    assert result.created is True
    assert Relation.objects.filter(project=alice.project).count() == 2


def test_valid_to_before_valid_from_is_refused(alice):
    response = alice.post(
        "/api/v1/relations/",
        {
            "source": "A",
            "target": "B",
            "relation_type": "related_to",
            "valid_from": "2022-01-01T00:00:00Z",
            "valid_to": "2021-01-01T00:00:00Z",
        },
    )
    assert response.status_code == 400 and "valid_to" in response.json()["error"]["fields"]


def test_historical_relations_do_not_clash_with_the_open_one(alice):
    for start, end in ((2015, 2016), (2017, 2018)):
        response = alice.post(
            "/api/v1/relations/",
            {
                "source": "Alice",
                "target": "Acme",
                "relation_type": "works_at",
                "valid_from": when(start).isoformat(),
                "valid_to": when(end).isoformat(),
            },
        )
        assert response.status_code == 201
    alice.post(
        "/api/v1/relations/", {"source": "Alice", "target": "Acme", "relation_type": "works_at"}
    )
    assert Relation.objects.filter(project=alice.project).count() == 3
    assert Relation.objects.filter(project=alice.project).open().count() == 1
