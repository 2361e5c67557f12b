"""Uploading documents over REST: each supported type, dedup, refusals, caps, the embedding
job's progress, list/get/delete, and isolation between projects."""

from __future__ import annotations

import base64
import itertools

import pytest

from documents.models import Document, DocumentChunk
from tests.documents.conftest import PAGE, RUNBOOK, pdf_bytes

pytestmark = pytest.mark.django_db


def current(tenant, body: dict) -> dict:
    """The document as the API shows it now (the upload's answer predates its job)."""
    return tenant.get(f"/api/v1/documents/{body['id']}/").json()


def chunks_of(document_id: str) -> list[DocumentChunk]:
    return list(DocumentChunk.objects.filter(document_id=document_id).order_by("ordinal"))


def test_a_markdown_runbook_is_chunked_by_its_headings_and_embedded(alice, upload):
    response = upload(RUNBOOK, filename="runbook.md")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["created"] is True
    assert (body["mime_type"], body["title"]) == ("text/markdown", "runbook.md")
    assert body["status"] == "pending"  # answered before the embedding job ran
    assert body["progress"] == {"chunks_embedded": 0, "chunks_total": 3}
    body = current(alice, body)
    assert body["status"] == "ready"
    assert body["progress"] == {"chunks_embedded": 3, "chunks_total": 3}
    assert body["indexed_at"] is not None
    chunks = chunks_of(body["id"])
    assert [chunk.heading_path for chunk in chunks] == [
        ["Database runbook"],
        ["Database runbook", "Failover"],
        ["Database runbook", "Backups"],
    ]
    assert all(chunk.embedding is not None for chunk in chunks)
    assert "# Failover" not in chunks[1].content
    assert RUNBOOK[chunks[1].char_start : chunks[1].char_end] == chunks[1].content


def test_plain_text_sent_as_json_is_stored_with_a_title_from_its_first_line(upload):
    body = upload("Rotate the API keys every quarter.\n\nRevoke the old ones a week later.").json()
    assert (body["mime_type"], body["title"]) == (
        "text/plain",
        "Rotate the API keys every quarter.",
    )
    assert [chunk.content for chunk in chunks_of(body["id"])] == [
        "Rotate the API keys every quarter.\n\nRevoke the old ones a week later."
    ]


def test_html_is_stored_as_its_readable_text_without_markup_scripts_or_styles(upload):
    body = upload(PAGE, filename="deploy.html", title="Deploy guide").json()
    assert body["mime_type"] == "text/html"
    chunks = chunks_of(body["id"])
    text = " ".join(chunk.content for chunk in chunks)
    assert "Roll out with the blue-green switch" in text
    assert "<" not in text and "tracking" not in text and "color" not in text
    assert chunks[-1].heading_path == ["Deploying the web tier", "Rollback"]


def test_a_pdf_is_chunked_by_page(alice, upload):
    pdf = pdf_bytes(
        ["Failover starts with promoting the standby.", "Backups restore from cold storage."]
    )
    body = current(alice, upload(pdf, filename="ops.pdf").json())
    assert (body["mime_type"], body["page_count"], body["status"]) == (
        "application/pdf",
        2,
        "ready",
    )
    chunks = chunks_of(body["id"])
    assert [(chunk.page, chunk.content) for chunk in chunks] == [
        (1, "Failover starts with promoting the standby."),
        (2, "Backups restore from cold storage."),
    ]


def test_a_pdf_can_be_sent_as_base64_in_json(alice, django_capture_on_commit_callbacks):
    pdf = pdf_bytes(["Only page."])
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(
            "/api/v1/documents/",
            {"content_base64": base64.b64encode(pdf).decode(), "agent_id": "ops"},
        )
    assert response.status_code == 201, response.json()
    assert response.json()["mime_type"] == "application/pdf"  # by its magic bytes


def test_uploading_the_same_content_again_returns_the_stored_document(upload):
    first = upload(RUNBOOK, filename="runbook.md")
    again = upload(RUNBOOK, filename="copy.md", title="Another title")
    assert again.status_code == 200
    assert again.json()["created"] is False
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["title"] == "runbook.md"
    assert Document.objects.count() == 1
    other_scope = upload(RUNBOOK, filename="runbook.md", user_id="u2")
    assert other_scope.status_code == 201  # unique per project and scope


def test_an_unsupported_type_is_refused_with_415_naming_the_type(upload):
    response = upload(b"PK\x03\x04 zip bytes", filename="book.docx", mime_type="application/zip")
    assert response.status_code == 415
    error = response.json()["error"]
    assert error["code"] == "unsupported_media_type"
    assert "application/zip" in error["message"]
    assert "mime_type" in error["fields"]
    assert Document.objects.count() == 0


def test_a_file_over_the_size_cap_is_refused_with_413(upload, settings):
    settings.MEMORY_DOCUMENT_MAX_BYTES = 100
    response = upload("x " * 100, filename="big.txt")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert "at most 100 bytes" in response.json()["error"]["fields"]["file"][0]


def test_a_pdf_over_the_page_cap_is_refused_with_413(upload, settings):
    settings.MEMORY_DOCUMENT_MAX_PAGES = 2
    response = upload(pdf_bytes(["one", "two", "three"]), filename="long.pdf")
    assert response.status_code == 413
    assert "at most 2 pages, got 3" in response.json()["error"]["fields"]["file"][0]


def test_a_document_over_the_chunk_cap_is_refused_with_413(upload, settings):
    settings.MEMORY_DOCUMENT_MAX_CHUNKS = 2
    text = "\n\n".join(f"Paragraph {i} " + "word " * 40 for i in range(10))
    response = upload(text, chunk_size=200, chunk_overlap=0)
    assert response.status_code == 413
    assert "at most 2 chunks" in response.json()["error"]["fields"]["file"][0]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user_id": "u1"}, "file"),
        ({"text": "   ", "user_id": "u1"}, "file"),
        ({"text": "hello"}, "user_id"),
        ({"content_base64": "not base64!", "user_id": "u1"}, "content_base64"),
        ({"text": "hello", "user_id": "u1", "metadata": [1]}, "metadata"),
        ({"text": "hello", "user_id": "u1", "chunk_size": 5}, "chunk_size"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice, body, field):
    response = alice.post("/api/v1/documents/", body)
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]


def test_long_text_is_cut_into_overlapping_chunks_within_the_size(alice, upload):
    sentences = " ".join(f"Sentence number {i} is about topic {i % 7}." for i in range(60))
    body = current(alice, upload(sentences, chunk_size=300, chunk_overlap=60).json())
    chunks = chunks_of(body["id"])
    assert len(chunks) > 3
    assert all(len(chunk.content) <= 300 for chunk in chunks)
    for before, after in itertools.pairwise(chunks):
        assert after.char_start < before.char_end  # overlap
        assert sentences[after.char_start - 1] == " "  # starting on a word
    assert body["progress"] == {"chunks_embedded": len(chunks), "chunks_total": len(chunks)}


def test_embedding_runs_in_batches_and_records_its_progress(alice, upload, settings):
    from documents.services import document_embed

    settings.MEMORY_DOCUMENT_EMBED_BATCH = 2
    text = "\n\n".join(f"Paragraph {i}: " + "filler words here " * 10 for i in range(5))
    body = current(alice, upload(text, chunk_size=200, chunk_overlap=0).json())
    assert body["progress"]["chunks_total"] == 5
    assert body["progress"]["chunks_embedded"] == 5
    document = Document.objects.get(pk=body["id"])
    DocumentChunk.objects.filter(document=document, ordinal__gte=3).update(embedding=None)
    Document.objects.filter(pk=document.pk).update(status="pending", chunks_embedded=3)
    resumed = document_embed(project=document.project, document_id=document.pk)
    assert (resumed.status, resumed.chunks_embedded) == ("ready", 5)


def test_a_provider_failure_marks_the_document_failed_with_its_reason(alice, upload, monkeypatch):
    from platformcore.lib.errors import ProviderError

    class Broken:
        model_name, dimensions = "broken", 384

        def embed_batch(self, texts):
            raise ProviderError("provider down")

    monkeypatch.setattr("memories.services.embedding.store_embedder_for_write", lambda: Broken())
    body = current(alice, upload("Text that cannot be embedded right now.").json())
    assert body["status"] == "failed"
    assert "embedding provider failed" in body["status_reason"]
    assert body["progress"]["chunks_embedded"] == 0


def test_documents_are_listed_newest_first_read_and_deleted_with_their_chunks(alice, upload):
    first = upload("First document.").json()
    second = upload(RUNBOOK, filename="runbook.md", user_id="u2").json()
    listed = alice.get("/api/v1/documents/").json()
    assert [doc["id"] for doc in listed["results"]] == [second["id"], first["id"]]
    assert listed["count"] == 2
    scoped = alice.get("/api/v1/documents/", {"user_id": "u2"}).json()
    assert [doc["id"] for doc in scoped["results"]] == [second["id"]]
    assert alice.get(f"/api/v1/documents/{second['id']}/").json()["title"] == "runbook.md"
    chunks = alice.get(f"/api/v1/documents/{second['id']}/chunks/").json()
    assert chunks["count"] == 3 and chunks["results"][1]["heading_path"][-1] == "Failover"
    deleted = alice.delete(f"/api/v1/documents/{second['id']}/")
    assert deleted.json() == {"documents": 1, "chunks": 3}
    assert alice.get(f"/api/v1/documents/{second['id']}/").status_code == 404
    assert not DocumentChunk.objects.filter(document_id=second["id"]).exists()


def test_another_projects_key_sees_none_of_alices_documents(alice, charlie, upload):
    body = upload(RUNBOOK, filename="runbook.md").json()
    path = f"/api/v1/documents/{body['id']}/"
    assert charlie.get(path).status_code == 404
    assert charlie.get(f"{path}chunks/").status_code == 404
    assert charlie.delete(path).status_code == 404
    assert charlie.get("/api/v1/documents/").json()["count"] == 0
    # the same bytes in charlie's project are a document of its own
    assert upload(RUNBOOK, filename="runbook.md", tenant=charlie).status_code == 201
    assert alice.get(path).status_code == 200


def test_a_read_only_key_cannot_upload(alice, upload):
    from tests.conftest import make_tenant

    reader = make_tenant("alice", scopes=["read"])
    response = reader.post("/api/v1/documents/", {"text": "hello", "user_id": "u1"})
    assert response.status_code == 403


def test_a_project_reset_wipes_its_documents(alice, upload):
    upload(RUNBOOK, filename="runbook.md")
    assert alice.post("/api/v1/reset/").status_code == 200
    assert Document.objects.count() == 0 and DocumentChunk.objects.count() == 0
