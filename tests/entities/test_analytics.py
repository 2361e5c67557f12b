"""Graph analytics on demand and export as JSON and GraphML."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from tests.entities.conftest import build_graph


def test_analysis_reports_degrees_top_connectors_and_type_distribution(alice):
    build_graph(
        alice.project,
        [
            ("Hub", "uses", "A"),
            ("Hub", "uses", "B"),
            ("C", "depends_on", "Hub"),
            ("A", "uses", "B"),
        ],
    )
    body = alice.get("/api/v1/graph/analysis/", {"top": 2}).json()
    assert body["entities"]["count"] == 4
    assert body["relations"]["count"] == 4
    assert body["relations"]["by_type"] == {"uses": 3, "depends_on": 1}
    top = body["top_connectors"][0]
    assert (top["name"], top["out_degree"], top["in_degree"], top["degree"]) == ("Hub", 2, 1, 3)
    assert len(body["top_connectors"]) == 2
    assert body["relations"]["average_degree"] == 2.0


def test_analysis_covers_memory_links(alice, remember):
    a, b = remember("first"), remember("second")
    alice.post(f"/api/v1/memories/{a['id']}/links/", {"to_id": b["id"], "link_type": "supports"})
    body = alice.get("/api/v1/graph/analysis/").json()
    assert body["memory_links"]["count"] == 1
    assert body["memory_links"]["by_type"] == {"supports": 1}
    assert body["memory_links"]["top_connectors"][0]["degree"] == 1


def test_export_as_json_lists_nodes_and_edges(alice):
    g = build_graph(alice.project, [("Alice", "works_at", "Acme")])
    body = alice.get("/api/v1/graph/export/").json()
    assert {node["name"] for node in body["nodes"]} == {"Alice", "Acme"}
    assert body["edges"][0]["source_id"] == g["Alice"].pk
    assert body["edges"][0]["relation_type"] == "works_at"


def test_export_as_graphml_is_valid_xml(alice):
    build_graph(alice.project, [("Alice", "works_at", "Acme")])
    response = alice.get("/api/v1/graph/export/graphml/")
    assert response["Content-Type"].startswith("application/graphml+xml")
    root = ET.fromstring(response.content)
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall(".//g:node", ns)) == 2
    edge = root.find(".//g:edge", ns)
    assert edge is not None
    assert edge.find("g:data[@key='relation_type']", ns).text == "works_at"


def test_export_leaves_out_closed_relations_unless_asked(alice):
    build_graph(alice.project, [("Alice", "works_at", "Acme")])
    build_graph(alice.project, [("Alice", "works_at", "Globex")])
    assert len(alice.get("/api/v1/graph/export/").json()["edges"]) == 1
    everything = alice.get("/api/v1/graph/export/", {"include_closed": "true"}).json()
    assert len(everything["edges"]) == 2
