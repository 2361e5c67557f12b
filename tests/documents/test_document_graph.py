"""One knowledge graph across entities, memories, documents, chunks and episodes: a
document's chunks are linked to the entities they mention, walks and exports cross kinds,
and search finds and raises passages through the graph."""

from __future__ import annotations

import pytest

from documents.models import ChunkEntity, DocumentChunk
from entities.models import Entity

pytestmark = pytest.mark.django_db

POOLING = """# Connection pooling

## PgBouncer

Point the PgBouncer pool at the new primary after a failover. Restart it with
systemctl and check that clients reconnect.

## Monitoring

Grafana shows the pool's waiting clients; alert when more than twenty wait.
"""
SEARCH = "/api/v1/memories/search/"
SUBGRAPH = "/api/v1/graph/subgraph/"


@pytest.fixture
def runbook(alice, upload) -> dict:
    """A runbook of u1's, its chunks linked to their entities by the enrichment job."""
    return upload(POOLING, filename="pooling.md").json()


def chunk_about(document_id: str, word: str) -> DocumentChunk:
    return DocumentChunk.objects.get(document_id=document_id, content__contains=word)


def named(name: str) -> Entity:
    return Entity.objects.get(normalized_name=name.lower())


def test_a_documents_chunks_are_linked_to_the_entities_they_mention_in_its_scopes_graph(
    runbook,
):
    chunk = chunk_about(runbook["id"], "Point the PgBouncer")
    linked = set(
        ChunkEntity.objects.filter(chunk=chunk).values_list("entity__normalized_name", flat=True)
    )
    assert "pgbouncer" in linked
    assert named("PgBouncer").user_id == "u1"  # the document's user's graph, as memories'
    grafana = ChunkEntity.objects.get(entity=named("Grafana"))
    assert grafana.document_id == chunk.document_id and grafana.chunk_id != chunk.pk


def test_a_subgraph_around_a_document_shows_its_entities_and_the_memories_citing_it(
    alice, runbook, remember
):
    chunk = chunk_about(runbook["id"], "Point the PgBouncer")
    memory = remember("After a failover the pool must follow the new primary")
    cited = alice.post(
        f"/api/v1/memories/{memory['id']}/document-refs/",
        {"chunk_id": chunk.pk, "quote": "Point the PgBouncer pool at the new primary"},
    )
    assert cited.status_code == 201, cited.json()
    graph = alice.get(SUBGRAPH, {"node": f"document:{runbook['id']}"}).json()
    assert graph["center"] == {
        "key": f"document:{runbook['id']}",
        "type": "document",
        "id": runbook["id"],
        "label": "pooling.md",
        "subtype": "text/markdown",
        "depth": 0,
    }
    keys = {node["key"]: node for node in graph["nodes"]}
    pgbouncer = f"entity:{named('PgBouncer').pk}"
    assert keys[pgbouncer]["label"] == "PgBouncer" and keys[pgbouncer]["depth"] == 1
    assert f"memory:{memory['id']}" in keys and f"chunk:{chunk.pk}" in keys
    edges = {(e["type"], e["source"], e["target"]) for e in graph["edges"]}
    document = f"document:{runbook['id']}"
    assert ("mentions", document, pgbouncer) in edges
    assert ("cites", f"memory:{memory['id']}", document) in edges
    assert ("cites", f"memory:{memory['id']}", f"chunk:{chunk.pk}") in edges
    assert ("contains", document, f"chunk:{chunk.pk}") in edges


def test_a_walk_keeps_to_the_node_types_and_edge_types_asked_for(alice, runbook, remember):
    memory = remember("PgBouncer runs on every database host", entity_names=["PgBouncer"])
    center = f"entity:{named('PgBouncer').pk}"
    everything = alice.get(SUBGRAPH, {"node": center, "depth": 2}).json()
    kinds = {node["type"] for node in everything["nodes"]}
    assert {"entity", "memory", "chunk", "document"} <= kinds
    assert f"memory:{memory['id']}" in {node["key"] for node in everything["nodes"]}
    passages = alice.get(
        SUBGRAPH, {"node": center, "depth": 2, "node_types": "entity,chunk"}
    ).json()
    assert {node["type"] for node in passages["nodes"]} == {"entity", "chunk"}
    only_mentions = alice.get(SUBGRAPH, {"node": center, "edge_types": "mentions"}).json()
    assert {edge["type"] for edge in only_mentions["edges"]} == {"mentions"}
    capped = alice.get(SUBGRAPH, {"node": center, "depth": 2, "max_nodes": 2}).json()
    assert len(capped["nodes"]) == 2 and capped["truncated"] is True


def test_an_episode_reaches_its_memories_and_documents(alice, upload, remember):
    episode = alice.post("/api/v1/episodes/", {"run_id": "r1", "name": "failover drill"}).json()
    memory = remember("The drill promoted the standby in 40 seconds", run_id="r1")
    document = upload("Drill notes: the standby took over.", run_id="r1").json()
    graph = alice.get(SUBGRAPH, {"node": f"episode:{episode['id']}"}).json()
    keys = {node["key"] for node in graph["nodes"]}
    assert {f"memory:{memory['id']}", f"document:{document['id']}"} <= keys
    assert graph["center"]["label"] == "failover drill"


def test_bad_nodes_and_kinds_are_400_naming_the_field(alice, runbook):
    for params, field in (
        ({"node": "planet:3"}, "node"),
        ({"node": "document:not-a-uuid"}, "node"),
        ({"node": "entity:1", "node_types": "entity,galaxy"}, "node_types"),
        ({"node": "entity:1", "edge_types": "orbits"}, "edge_types"),
        ({"node": f"document:{runbook['id']}", "node_types": "entity"}, "node_types"),
    ):
        response = alice.get(SUBGRAPH, params)
        assert response.status_code == 400, params
        assert field in response.json()["error"]["fields"], params


def test_another_project_sees_nothing_of_alices_graph(alice, charlie, runbook):
    for node in (f"document:{runbook['id']}", f"entity:{named('PgBouncer').pk}"):
        assert charlie.get(SUBGRAPH, {"node": node}).status_code == 404
    export = charlie.get("/api/v1/graph/export/", {"node_types": "all"}).json()
    assert export["nodes"] == [] and export["edges"] == []


def test_a_scoped_walk_passes_only_through_what_the_scope_sees(alice, upload, runbook):
    other = upload(POOLING.replace("twenty", "thirty"), filename="b.md", user_id="u2").json()
    center = f"document:{runbook['id']}"
    mine = alice.get(SUBGRAPH, {"node": center, "depth": 3, "user_id": "u1"}).json()
    assert f"document:{other['id']}" not in {node["key"] for node in mine["nodes"]}
    assert alice.get(SUBGRAPH, {"node": center, "user_id": "u2"}).status_code == 404


def test_the_export_has_typed_nodes_and_edges_in_json_and_graphml(alice, runbook):
    body = alice.get("/api/v1/graph/export/", {"node_types": "all"}).json()
    kinds = {node["type"] for node in body["nodes"]}
    assert {"entity", "document", "chunk"} <= kinds
    assert {"mentions", "contains"} <= {edge["type"] for edge in body["edges"]}
    only = alice.get("/api/v1/graph/export/", {"node_types": "document,entity"}).json()
    assert {node["type"] for node in only["nodes"]} == {"document", "entity"}
    xml = alice.get("/api/v1/graph/export/graphml/", {"node_types": "all"}).content.decode()
    assert f'<node id="document:{runbook["id"]}">' in xml and '<data key="type">chunk' in xml
    plain = alice.get("/api/v1/graph/export/").json()  # without node_types: as it was
    assert all("entity_type" in node for node in plain["nodes"])


def test_a_question_about_an_entity_finds_the_chunk_that_mentions_it_through_the_graph(
    alice, runbook
):
    relation = {"source": "PgBouncer", "target": "PostgreSQL", "relation_type": "depends_on"}
    bulk = alice.post("/api/v1/graph/bulk/", {"relations": [relation], "user_id": "u1"})
    assert bulk.status_code in (200, 201), bulk.json()
    body = alice.post(
        SEARCH,
        {
            "query": "what do we know about PostgreSQL?",
            "mode": "graph",
            "sources": ["documents"],
            "user_id": "u1",
        },
    ).json()
    assert body["results"], body
    top = body["results"][0]
    assert "Point the PgBouncer pool" in top["content"]  # the word PostgreSQL is not in it
    assert [entity["name"] for entity in top["entities"]] == ["PgBouncer"]
    assert top["score_parts"]["graph"] > 0


def test_hybrid_search_raises_a_chunk_that_mentions_the_questions_entity(alice, runbook):
    body = alice.post(
        SEARCH,
        {"query": "How do I restart PgBouncer?", "include_documents": True, "user_id": "u1"},
    ).json()
    passages = [hit for hit in body["results"] if hit["kind"] == "document"]
    top = passages[0]
    assert "Point the PgBouncer pool" in top["content"]
    assert top["score_parts"]["graph"] > 0
    assert [entity["name"] for entity in top["entities"]] == ["PgBouncer"]
    for other in passages[1:]:  # the passages that do not mention it are not raised
        if "PgBouncer" not in other["content"]:
            assert "graph" not in other["score_parts"] and other["entities"] == []
