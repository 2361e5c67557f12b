"""Search across memories and document passages: `include_documents` / `sources` on the REST
search, the same scope, fusion and token budget, and isolation between projects."""

from __future__ import annotations

import pytest

from tests.documents.conftest import RUNBOOK, pdf_bytes

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memories/search/"


@pytest.fixture
def library(upload, remember):
    """A runbook and a PDF for u1, a memory beside them, a document of another user."""
    runbook = upload(RUNBOOK, filename="runbook.md").json()
    pdf = pdf_bytes(
        ["Cover page of the operations manual.", "To rotate TLS certificates run certbot renew."]
    )
    manual = upload(pdf, filename="manual.pdf", title="Operations manual").json()
    memory = remember("The on-call engineer prefers promoting the standby during failover")
    upload("Failover notes of another user: promote the standby.", user_id="u2")
    return {"runbook": runbook, "manual": manual, "memory": memory}


def test_a_search_without_sources_returns_memories_only_as_before(alice, library):
    body = alice.post(SEARCH, {"query": "promote the standby", "user_id": "u1"}).json()
    assert "sources" not in body
    assert all("kind" not in result for result in body["results"])
    assert [r["id"] for r in body["results"]] == [library["memory"]["id"]]


def test_include_documents_finds_the_runbook_section_with_a_highlighted_snippet(alice, library):
    body = alice.post(
        SEARCH, {"query": "promote the standby", "user_id": "u1", "include_documents": True}
    ).json()
    assert body["sources"] == ["memories", "documents"]
    kinds = {result["kind"] for result in body["results"]}
    assert kinds == {"memory", "document"}
    passage = next(r for r in body["results"] if r["kind"] == "document")
    assert passage["document_id"] == library["runbook"]["id"]
    assert passage["document_title"] == "runbook.md"
    assert passage["heading_path"] == ["Database runbook", "Failover"]
    assert "**promote**" in passage["snippet"] and "**standby**" in passage["snippet"]
    assert passage["char_start"] < passage["char_end"]
    assert {"keyword", "semantic"} <= set(passage["score_parts"])
    memory = next(r for r in body["results"] if r["kind"] == "memory")
    assert memory["id"] == library["memory"]["id"] and "score_parts" in memory


def test_a_pdf_passage_is_found_by_its_page_through_a_get_search(alice, library):
    body = alice.get(
        SEARCH, {"q": "rotate TLS certificates", "user_id": "u1", "sources": "documents"}
    ).json()
    assert body["sources"] == ["documents"]
    top = body["results"][0]
    assert (top["kind"], top["document_title"], top["page"]) == (
        "document",
        "Operations manual",
        2,
    )
    assert "**certificates**" in top["snippet"]


def test_documents_of_another_scope_are_not_found(alice, library):
    body = alice.post(
        SEARCH, {"query": "failover notes", "user_id": "u1", "sources": ["documents"]}
    ).json()
    other_users = [r for r in body["results"] if "another user" in r["content"]]
    assert other_users == []
    scoped_to_u2 = alice.post(
        SEARCH, {"query": "failover notes", "user_id": "u2", "sources": ["documents"]}
    ).json()
    assert [r["content"] for r in scoped_to_u2["results"]] == [
        "Failover notes of another user: promote the standby."
    ]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_each_mode_searches_documents(alice, library, mode):
    body = alice.post(
        SEARCH,
        {"query": "failover standby", "user_id": "u1", "sources": ["documents"], "mode": mode},
    ).json()
    assert body["results"], body
    assert body["results"][0]["heading_path"][-1] == "Failover"


def test_rrf_fusion_applies_to_passages(alice, library):
    body = alice.post(
        SEARCH,
        {"query": "failover", "user_id": "u1", "sources": ["documents"], "fusion": "rrf"},
    ).json()
    assert body["results"][0]["heading_path"][-1] == "Failover"
    assert body["results"][0]["score"] == pytest.approx(1.0, abs=0.02)  # rank 1 in both


def test_the_token_budget_counts_passages_and_memories_together(alice, library):
    full = alice.post(
        SEARCH, {"query": "standby failover", "user_id": "u1", "include_documents": True}
    ).json()
    first = full["results"][0]["token_count"]
    budget = first + 1
    body = alice.post(
        SEARCH,
        {
            "query": "standby failover",
            "user_id": "u1",
            "include_documents": True,
            "token_budget": budget,
        },
    ).json()
    assert body["tokens"] <= budget
    assert body["budget_exhausted"] is True
    assert len(body["results"]) < full["count"]


def test_an_unknown_source_is_a_400_naming_sources(alice):
    response = alice.post(SEARCH, {"query": "x", "sources": ["memories", "emails"]})
    assert response.status_code == 400
    assert "sources" in response.json()["error"]["fields"]


def test_paging_across_sources_is_bounded_by_the_page_size(alice, settings):
    settings.MEMORY_MAX_PAGE_SIZE = 10
    response = alice.post(
        SEARCH, {"query": "x", "sources": ["documents"], "limit": 10, "offset": 5}
    )
    assert response.status_code == 400
    assert "offset" in response.json()["error"]["fields"]


def test_another_projects_key_finds_none_of_alices_passages(charlie, library):
    body = charlie.post(
        SEARCH, {"query": "promote the standby failover", "sources": ["memories", "documents"]}
    ).json()
    assert body["results"] == []
