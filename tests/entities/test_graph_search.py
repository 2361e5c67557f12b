"""`mode=graph` and the hybrid graph boost."""

from __future__ import annotations

from entities.selectors.search import (
    BOOST_WEIGHT,
    entities_in_text,
    entity_scores,
    graph_boost,
    graph_search,
)
from memories.selectors.search_types import SearchHit, SearchQuery
from tests.entities.conftest import build_graph


def test_the_query_names_entities_by_name_alias_or_near_spelling(alice):
    g = build_graph(
        alice.project, [("Alice", "works_at", "Google"), ("Alice", "uses", "Kubernetes")]
    )
    assert set(entities_in_text(project=alice.project, text="where does alice work?")) == {
        g["Alice"].pk
    }
    fuzzy = entities_in_text(project=alice.project, text="our kubernets cluster")
    assert list(fuzzy) == [g["Kubernetes"].pk] and fuzzy[g["Kubernetes"].pk] < 1.0
    assert entities_in_text(project=alice.project, text="nothing here") == {}
    # near spellings count only when nothing is named exactly
    exact_first = entities_in_text(project=alice.project, text="alice and our kubernets")
    assert exact_first == {g["Alice"].pk: 1.0}


def test_graph_search_returns_memories_of_connected_entities(alice, remember):
    remember("Alice works at Google")
    about_google = remember("Google moved the search team to Zurich", entity_names=["Google"])
    remember("The weather was nice", entity_names=["Weather"])
    hits = graph_search(project=alice.project, query=SearchQuery(text="What about Alice?"))
    contents = [hit.memory.content for hit in hits]
    assert contents[0] == "Alice works at Google"
    assert about_google["content"] in contents
    assert "The weather was nice" not in contents
    assert all(0 < hit.score <= 1 and "graph" in hit.parts for hit in hits)


def test_graph_search_ranks_closer_and_stronger_paths_higher(alice, remember):
    build_graph(alice.project, [("Alice", "collaborates_with", "Bob")], strength=0.9)
    build_graph(alice.project, [("Bob", "collaborates_with", "Carol")], strength=0.9)
    remember("Carol note", entity_names=["Carol"])
    remember("Bob note", entity_names=["Bob"])
    hits = graph_search(project=alice.project, query=SearchQuery(text="Alice"))
    assert [hit.memory.content for hit in hits] == ["Bob note", "Carol note"]
    one_hop = graph_search(
        project=alice.project, query=SearchQuery(text="Alice", options={"depth": 1})
    )
    assert [hit.memory.content for hit in one_hop] == ["Bob note"]


def test_graph_search_applies_the_memory_filters(alice, remember):
    remember("Alice likes tea", entity_names=["Alice"], user_id="u1")
    remember("Alice likes coffee", entity_names=["Alice"], user_id="u2")
    query = SearchQuery(text="Alice")
    query.filters.user_id = "u2"
    assert [h.memory.content for h in graph_search(project=alice.project, query=query)] == [
        "Alice likes coffee"
    ]


def test_graph_search_through_the_search_endpoint(alice, remember):
    remember("Alice works at Google")
    response = alice.get("/api/v1/memories/search/", {"q": "Alice", "mode": "graph"})
    if response.status_code == 404:  # the search endpoint belongs to the search issue
        return
    assert response.status_code == 200, response.json()
    body = response.json()
    results = body.get("results", body)
    assert any("Alice works at Google" in str(item) for item in results)


def test_graph_boost_raises_hits_linked_to_entities_the_query_names(alice, remember):
    linked = remember("Alice works at Google")
    other = remember("Something about search engines")
    from memories.models import Memory

    hits = [
        SearchHit(memory=Memory.objects.get(pk=linked["id"]), score=0.5),
        SearchHit(memory=Memory.objects.get(pk=other["id"]), score=0.5),
    ]
    boosts = graph_boost(project=alice.project, query=SearchQuery(text="Google"), hits=hits)
    assert set(map(str, boosts)) == {linked["id"]}
    # a share of the hit's relevance, at most graph_weight (BOOST_WEIGHT) of it
    assert 0 < next(iter(boosts.values())) <= BOOST_WEIGHT * 0.5
    off = graph_boost(
        project=alice.project,
        query=SearchQuery(text="Google", options={"graph_weight": 0}),
        hits=hits,
    )
    assert off == {}


def test_graph_boost_ignores_an_entity_every_memory_mentions(alice, remember):
    from memories.models import Memory

    stored = [remember(f"Caroline: note {n}", entity_names=["Caroline"]) for n in range(3)]
    hits = [SearchHit(memory=Memory.objects.get(pk=m["id"]), score=0.5) for m in stored]
    assert graph_boost(project=alice.project, query=SearchQuery(text="Caroline?"), hits=hits) == {}


def test_a_one_hop_walk_scores_neighbours_either_way_and_keeps_the_strongest(alice):
    """The boost's walk (depth 1, one statement): a neighbour scores the best seed score ×
    strength × confidence over its relations in either direction, a seed keeps its own
    score unless a relation from another seed gives it more, and past `max_nodes` the most
    strongly connected neighbours are kept, as a walk's level keeps them."""
    g = build_graph(alice.project, [("Alice", "works_at", "Google")], strength=0.8, confidence=0.5)
    build_graph(alice.project, [("Bob", "mentors", "Alice")], strength=0.6)
    build_graph(alice.project, [("Alice", "knows", "Carol")], strength=0.9)
    build_graph(alice.project, [("Carol", "knows", "Dave")], strength=0.9)
    seeds = {g["Alice"].pk: 1.0}
    scores = entity_scores(project=alice.project, seeds=seeds, depth=1)
    by_name = {name: scores.get(entity.pk) for name, entity in _entities(alice).items()}
    assert by_name["Alice"] == 1.0
    assert by_name["Google"] == 0.8 * 0.5  # outgoing, strength × confidence
    assert by_name["Bob"] == 0.6  # incoming
    assert by_name["Carol"] == 0.9
    assert by_name["Dave"] is None  # two hops away
    two_seeds = entity_scores(
        project=alice.project, seeds={g["Alice"].pk: 1.0, g["Google"].pk: 0.1}, depth=1
    )
    assert two_seeds[g["Google"].pk] == 0.8 * 0.5  # raised by the relation from Alice
    strongest = entity_scores(project=alice.project, seeds=seeds, depth=1, max_nodes=2)
    assert set(strongest) == {g["Alice"].pk, _entities(alice)["Carol"].pk}


def _entities(alice) -> dict:
    from entities.models import Entity

    return {entity.name: entity for entity in Entity.objects.filter(project=alice.project)}
