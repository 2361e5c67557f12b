from __future__ import annotations

from entities.selectors.traversal import entity_subgraph
from tests.entities.conftest import build_graph


def names(subgraph) -> set[str]:
    return {node.name for node in subgraph.nodes}


def test_depth_one_returns_the_center_and_its_neighbours(alice, abcd):
    graph = entity_subgraph(project=alice.project, entity_id=abcd["A"].pk, depth=1)
    assert names(graph) == {"A", "B", "C"}


def test_depth_two_adds_the_neighbours_of_neighbours(alice, abcd):
    graph = entity_subgraph(project=alice.project, entity_id=abcd["A"].pk, depth=2)
    assert names(graph) == {"A", "B", "C", "D"}
    assert {node.name: node.depth for node in graph.nodes} == {"A": 0, "B": 1, "C": 1, "D": 2}
    assert len(graph.edges) == 3


def test_traversal_survives_cycles(alice):
    g = build_graph(
        alice.project,
        [("X", "related_to", "Y"), ("Y", "related_to", "Z"), ("Z", "related_to", "X")],
    )
    graph = entity_subgraph(project=alice.project, entity_id=g["X"].pk, depth=5)
    assert names(graph) == {"X", "Y", "Z"}


def test_direction_out_follows_only_outgoing_relations(alice, abcd):
    graph = entity_subgraph(project=alice.project, entity_id=abcd["B"].pk, depth=2, direction="out")
    assert names(graph) == {"B", "D"}
    graph = entity_subgraph(project=alice.project, entity_id=abcd["B"].pk, depth=2, direction="in")
    assert names(graph) == {"A", "B"}
