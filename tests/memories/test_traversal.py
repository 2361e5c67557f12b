"""Walks over memory links: breadth and depth first, a time budget, filters by memory type and
tag, the containment hierarchy on request, and the link vocabulary as a database constraint."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from memories.models import MemoryLink
from memories.selectors.link_traversal import memory_traverse


def link(tenant, source, target, link_type="relates_to", strength=1.0):
    response = tenant.post(
        f"/api/v1/memories/{source['id']}/links/",
        {"to_id": target["id"], "link_type": link_type, "strength": strength},
    )
    assert response.status_code in (200, 201), response.json()


def traverse(tenant, memory, **params):
    response = tenant.get(f"/api/v1/memories/{memory['id']}/traverse/", params)
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def tree(alice, remember):
    """root -> a (strong) -> a1 -> a2, root -> b (weak) -> b1 (weak)."""
    nodes = {name: remember(f"memory {name}") for name in ("root", "a", "a1", "a2", "b", "b1")}
    link(alice, nodes["root"], nodes["a"], strength=0.9)
    link(alice, nodes["a"], nodes["a1"])
    link(alice, nodes["a1"], nodes["a2"])
    link(alice, nodes["root"], nodes["b"], strength=0.5)
    link(alice, nodes["b"], nodes["b1"], strength=0.4)
    return nodes


def test_breadth_first_takes_every_memory_one_link_away_before_two(alice, tree):
    body = traverse(alice, tree["root"], depth=3, max_nodes=4, direction="out")
    assert body["strategy"] == "bfs"
    assert {n["content"] for n in body["nodes"]} == {
        "memory root",
        "memory a",
        "memory b",
        "memory a1",
    }


def test_depth_first_follows_the_strongest_link_as_deep_as_it_goes(alice, tree):
    body = traverse(alice, tree["root"], depth=3, max_nodes=4, direction="out", strategy="dfs")
    assert body["strategy"] == "dfs"
    assert [n["content"] for n in body["nodes"]] == [
        "memory root",
        "memory a",
        "memory a1",
        "memory a2",
    ]
    assert [n["depth"] for n in body["nodes"]] == [0, 1, 2, 3]


def test_depth_first_visits_siblings_after_the_deep_branch(alice, tree):
    body = traverse(alice, tree["root"], depth=5, direction="out", strategy="dfs")
    assert [n["content"] for n in body["nodes"]][-2:] == ["memory b", "memory b1"]


def test_a_spent_time_budget_returns_what_was_reached_marked_truncated(alice, tree, monkeypatch):
    import memories.selectors.link_traversal as traversal

    clock = iter(range(0, 10_000, 10))  # each reading is 10 s later
    monkeypatch.setattr(traversal.time, "monotonic", lambda: next(clock))
    graph = memory_traverse(
        project=alice.project, memory_id=tree["root"]["id"], depth=3, time_budget_ms=5
    )
    assert graph.truncated is True
    assert [node.content for node in graph.nodes] == ["memory root"]


def test_a_walk_within_its_budget_is_not_truncated(alice, tree):
    body = traverse(alice, tree["root"], depth=3, time_budget_ms=60_000)
    assert body["truncated"] is False
    assert len(body["nodes"]) == 6


def test_filters_by_memory_type_and_tag_neither_return_nor_pass_through_others(alice, remember):
    start = remember("start")
    error = remember("error one", memory_type="error", tags=["deploy"])
    fix = remember("fix one", memory_type="procedure", tags=["deploy"])
    behind = remember("behind the fix", memory_type="error", tags=["deploy"])
    other = remember("error two", memory_type="error", tags=["billing"])
    link(alice, start, error)
    link(alice, start, fix)
    link(alice, fix, behind)
    link(alice, start, other)
    typed = traverse(alice, start, depth=3, memory_type="error")
    assert {n["content"] for n in typed["nodes"]} == {"start", "error one", "error two"}
    tagged = traverse(alice, start, depth=3, tags="deploy")
    assert {n["content"] for n in tagged["nodes"]} == {
        "start",
        "error one",
        "fix one",
        "behind the fix",
    }


def test_parent_links_are_followed_beside_the_named_types_only_on_request(alice, remember):
    part, whole, support = remember("a part"), remember("the whole"), remember("a support")
    link(alice, part, whole, "part_of")
    link(alice, part, support, "supports")
    edge_only = traverse(alice, part, link_type="supports")
    assert {n["content"] for n in edge_only["nodes"]} == {"a part", "a support"}
    with_parents = traverse(alice, part, link_type="supports", include_parent_links="true")
    assert {n["content"] for n in with_parents["nodes"]} == {"a part", "a support", "the whole"}
    assert {e["link_type"] for e in with_parents["edges"]} == {"supports", "part_of"}


def test_bad_traversal_parameters_are_a_400_naming_the_field(alice, tree):
    root = tree["root"]["id"]
    for params, field in (
        ({"strategy": "random"}, "strategy"),
        ({"time_budget_ms": 0}, "time_budget_ms"),
        ({"memory_type": "gossip"}, "memory_types"),
    ):
        response = alice.get(f"/api/v1/memories/{root}/traverse/", params)
        assert response.status_code == 400, params
        assert field in response.json()["error"]["fields"]


def test_charlie_cannot_walk_from_alices_memory(alice, charlie, tree):
    response = charlie.get(f"/api/v1/memories/{tree['root']['id']}/traverse/", {"strategy": "dfs"})
    assert response.status_code == 404


def test_the_database_refuses_a_link_type_outside_the_vocabulary(alice, remember):
    a, b = remember("one"), remember("two")
    with pytest.raises(IntegrityError), transaction.atomic():
        MemoryLink.objects.create(
            project=alice.project, from_memory_id=a["id"], to_memory_id=b["id"], link_type="likes"
        )


def test_the_service_refuses_it_first_with_a_400(alice, remember):
    a, b = remember("one"), remember("two")
    response = alice.post(
        f"/api/v1/memories/{a['id']}/links/", {"to_id": b["id"], "link_type": "likes"}
    )
    assert response.status_code == 400
    assert "link_type" in response.json()["error"]["fields"]
