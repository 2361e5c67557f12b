"""Walks over memory-to-memory links: `memory_traverse` and causal chains from an error."""

from __future__ import annotations


def link(tenant, source, target, link_type="relates_to", strength=1.0):
    response = tenant.post(
        f"/api/v1/memories/{source['id']}/links/",
        {"to_id": target["id"], "link_type": link_type, "strength": strength},
    )
    assert response.status_code in (200, 201), response.json()


def test_traverse_follows_links_to_the_requested_depth(alice, remember):
    a, b, c, d = (remember(f"memory {name}") for name in "abcd")
    link(alice, a, b)
    link(alice, b, c)
    link(alice, c, d)
    body = alice.get(f"/api/v1/memories/{a['id']}/traverse/", {"depth": 2}).json()
    assert {node["content"]: node["depth"] for node in body["nodes"]} == {
        "memory a": 0,
        "memory b": 1,
        "memory c": 2,
    }
    assert len(body["edges"]) == 2


def test_traverse_respects_direction_link_type_and_strength(alice, remember):
    a, b, c = (remember(f"memory {name}") for name in "abc")
    link(alice, a, b, "supports", strength=0.9)
    link(alice, c, a, "extends", strength=0.3)
    out = alice.get(f"/api/v1/memories/{a['id']}/traverse/", {"direction": "out"}).json()
    assert {node["content"] for node in out["nodes"]} == {"memory a", "memory b"}
    typed = alice.get(f"/api/v1/memories/{a['id']}/traverse/", {"link_type": "extends"}).json()
    assert {node["content"] for node in typed["nodes"]} == {"memory a", "memory c"}
    strong = alice.get(f"/api/v1/memories/{a['id']}/traverse/", {"min_strength": 0.5}).json()
    assert {node["content"] for node in strong["nodes"]} == {"memory a", "memory b"}


def test_traverse_skips_soft_deleted_memories(alice, remember):
    a, b, c = (remember(f"memory {name}") for name in "abc")
    link(alice, a, b)
    link(alice, b, c)
    alice.delete(f"/api/v1/memories/{b['id']}/")
    body = alice.get(f"/api/v1/memories/{a['id']}/traverse/", {"depth": 3}).json()
    assert [node["content"] for node in body["nodes"]] == ["memory a"]


def test_traverse_is_cycle_safe_and_capped_by_max_nodes(alice, remember):
    memories = [remember(f"memory {i}") for i in range(5)]
    for i, memory in enumerate(memories):
        link(alice, memory, memories[(i + 1) % 5])
    body = alice.get(f"/api/v1/memories/{memories[0]['id']}/traverse/", {"depth": 5}).json()
    assert len(body["nodes"]) == 5
    capped = alice.get(
        f"/api/v1/memories/{memories[0]['id']}/traverse/", {"depth": 5, "max_nodes": 3}
    ).json()
    assert len(capped["nodes"]) == 3


def test_causal_chain_from_an_error_follows_causes_and_resolutions(alice, remember):
    error = remember("Deploy failed: connection pool exhausted", memory_type="error")
    cause = remember("Pool size was left at 5 after the migration")
    fix = remember("Raised the pool size to 50", memory_type="procedure")
    unrelated = remember("The team prefers tabs")
    link(alice, error, cause, "caused_by")
    link(alice, error, fix, "resolved_by")
    link(alice, error, unrelated, "relates_to")
    body = alice.get(f"/api/v1/memories/{error['id']}/causal-chain/").json()
    assert {node["id"] for node in body["nodes"]} == {error["id"], cause["id"], fix["id"]}
    assert {edge["link_type"] for edge in body["edges"]} == {"caused_by", "resolved_by"}


def test_traverse_an_unknown_memory_is_a_404(alice):
    assert alice.get("/api/v1/memories/not-a-uuid/traverse/").status_code == 404
