"""Memories citing document chunks: shown on the memory (document, title, page) and on the
document and its chunks; learned from a document by `add`; isolated per project."""

from __future__ import annotations

import pytest

from documents.models import DocumentChunk, MemoryRef
from tests.conftest import Tenant
from tests.documents.conftest import RUNBOOK, pdf_bytes
from tests.mcpserver.conftest import in_process, structured

pytestmark = pytest.mark.django_db
DOCUMENTS = "/api/v1/documents/"
MEMORIES = "/api/v1/memories/"


def _upload(tenant: Tenant, text: str = RUNBOOK, **fields: object) -> dict:
    body = {"text": text, "mime_type": "text/markdown", "user_id": "u1", **fields}
    response = tenant.post(DOCUMENTS, body)
    assert response.status_code == 201, response.json()
    return response.json()


def _pdf(tenant: Tenant) -> dict:
    import base64

    data = pdf_bytes(["Contents.", "To rotate TLS certificates run certbot renew."])
    body = {"content_base64": base64.b64encode(data).decode(), "user_id": "u1"}
    return tenant.post(DOCUMENTS, body).json()


def test_a_memory_citing_a_chunk_shows_its_document_and_page_and_the_document_lists_it(
    alice: Tenant, remember
) -> None:
    document = _pdf(alice)
    chunk = DocumentChunk.objects.get(document_id=document["id"], page=2)
    memory = remember("TLS certificates are rotated with certbot")
    response = alice.post(
        f"{MEMORIES}{memory['id']}/document-refs/",
        {"chunk_id": chunk.pk, "quote": "run certbot renew"},
    )
    assert response.status_code == 201, response.json()
    shown = alice.get(f"{MEMORIES}{memory['id']}/").json()["document_refs"]
    assert len(shown) == 1
    ref = shown[0]
    assert (ref["document_id"], ref["page"], ref["chunk_id"]) == (document["id"], 2, chunk.pk)
    assert ref["document_title"] == document["title"] and ref["relation"] == "cites"
    start = chunk.content.index("run certbot renew")
    assert (ref["quote_start"], ref["quote_end"]) == (start, start + len("run certbot renew"))
    cited_by = alice.get(f"{DOCUMENTS}{document['id']}/").json()["memory_refs"]
    assert [(r["memory_id"], r["chunk_id"]) for r in cited_by] == [(memory["id"], chunk.pk)]
    chunks = alice.get(f"{DOCUMENTS}{document['id']}/chunks/").json()["results"]
    assert {c["page"]: len(c["memory_refs"]) for c in chunks} == {1: 0, 2: 1}


def test_a_bad_quote_span_or_unknown_chunk_is_refused_naming_the_field(
    alice: Tenant, remember
) -> None:
    document = _upload(alice)
    chunk = DocumentChunk.objects.filter(document_id=document["id"]).first()
    memory = remember("Failover promotes the standby")
    url = f"{MEMORIES}{memory['id']}/document-refs/"
    too_far = alice.post(url, {"chunk_id": chunk.pk, "quote_start": 0, "quote_end": 10**6})
    assert too_far.status_code == 400 and "quote_end" in too_far.json()["error"]["fields"]
    missing = alice.post(url, {"chunk_id": 10**9})
    assert missing.status_code == 400 and "chunk_id" in missing.json()["error"]["fields"]


def test_charlie_can_neither_cite_alices_chunk_nor_see_her_references(
    alice: Tenant, charlie: Tenant, remember
) -> None:
    document = _upload(alice)
    chunk = DocumentChunk.objects.filter(document_id=document["id"]).first()
    memory = remember("Failover promotes the standby")
    alice.post(f"{MEMORIES}{memory['id']}/document-refs/", {"chunk_id": chunk.pk})
    own = charlie.post(MEMORIES, {"content": "Charlie's note", "user_id": "c1"}).json()
    stolen = charlie.post(f"{MEMORIES}{own['id']}/document-refs/", {"chunk_id": chunk.pk})
    assert stolen.status_code == 400  # alice's chunk is no chunk of charlie's project
    assert charlie.get(f"{MEMORIES}{memory['id']}/document-refs/").status_code == 404
    assert charlie.get(f"{DOCUMENTS}{document['id']}/").status_code == 404


def test_learning_a_document_offline_stores_documentary_memories_citing_their_chunks(
    alice: Tenant,
) -> None:
    document = _upload(alice)
    learned = alice.post(f"{DOCUMENTS}{document['id']}/learn/", {})
    assert learned.status_code == 200, learned.json()
    chunks = learned.json()["chunks"]
    assert len(chunks) == document["progress"]["chunks_total"]
    first = chunks[0]["results"][0]
    assert first["event"] == "ADD"
    memory = alice.get(f"{MEMORIES}{first['id']}/").json()
    assert memory["layer"] == "documentary"
    assert [r["relation"] for r in memory["document_refs"]] == ["learned_from"]
    assert memory["document_refs"][0]["chunk_id"] == chunks[0]["chunk_id"]
    again = alice.post(f"{DOCUMENTS}{document['id']}/learn/", {}).json()
    assert {r["event"] for c in again["chunks"] for r in c["results"]} == {"NONE"}
    assert MemoryRef.objects.filter(document_id=document["id"]).count() == len(chunks)


def test_learning_with_an_llm_records_the_chunk_each_fact_came_from(
    alice: Tenant, fake_openai
) -> None:
    document = _upload(alice, text="# Ports\n\nThe API listens on port 8443.\n")
    fake_openai.answers.clear()
    fact = "The API listens on port 8443"
    fake_openai.reply({"facts": [fact]}, {"memory": [{"event": "ADD", "text": fact}]})
    body = alice.post(f"{DOCUMENTS}{document['id']}/learn/", {}).json()
    events = body["chunks"][0]["results"]
    assert [e["event"] for e in events] == ["ADD"], events
    memory = alice.get(f"{MEMORIES}{events[0]['id']}/").json()
    assert (memory["content"], memory["layer"]) == ("The API listens on port 8443", "documentary")
    assert memory["document_refs"][0]["document_id"] == document["id"]


def test_deleting_the_document_removes_its_references(alice: Tenant, remember) -> None:
    document = _upload(alice)
    chunk = DocumentChunk.objects.filter(document_id=document["id"]).first()
    memory = remember("Failover promotes the standby")
    alice.post(f"{MEMORIES}{memory['id']}/document-refs/", {"chunk_id": chunk.pk})
    assert alice.delete(f"{DOCUMENTS}{document['id']}/").status_code == 200
    assert alice.get(f"{MEMORIES}{memory['id']}/").json()["document_refs"] == []


def test_a_reference_can_be_removed(alice: Tenant, remember) -> None:
    document = _upload(alice)
    chunk = DocumentChunk.objects.filter(document_id=document["id"]).first()
    memory = remember("Failover promotes the standby")
    url = f"{MEMORIES}{memory['id']}/document-refs/"
    alice.post(url, {"chunk_id": chunk.pk})
    assert alice.delete(f"{url}{chunk.pk}/").status_code == 204
    assert alice.delete(f"{url}{chunk.pk}/").status_code == 404
    assert alice.get(url).json()["document_refs"] == []


def test_a_document_uploaded_during_an_episode_belongs_to_it(alice: Tenant) -> None:
    episode = alice.post("/api/v1/episodes/", {"user_id": "u1", "run_id": "r9"}).json()
    document = _upload(alice, run_id="r9")
    assert document["episode_id"] == episode["id"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_memory_cite_and_document_learn_over_mcp_show_the_chunk_on_memory_get(alice):
    async with in_process(alice) as client:
        document = structured(
            await client.call_tool("document_add", {"text": RUNBOOK, "user_id": "u1"})
        )
        learned = structured(
            await client.call_tool("document_learn", {"document_id": document["id"]})
        )
        note = {"content": "Promote carefully", "user_id": "u1"}
        stored = structured(await client.call_tool("memory_store", note))
        memory_id = stored["memory"]["id"]
        chunk_id = learned["chunks"][0]["chunk_id"]
        cited = structured(
            await client.call_tool(
                "memory_cite",
                {"memory_id": memory_id, "chunk_id": chunk_id, "quote": "Failover"},
            )
        )
        got = structured(await client.call_tool("memory_get", {"memory_id": memory_id}))
    assert learned["chunks"][0]["results"][0]["event"] == "ADD"
    assert [r["chunk_id"] for r in cited["document_refs"]] == [chunk_id]
    assert got["document_refs"][0]["document_id"] == document["id"]
    assert got["layer"] == "long_term"
