"""Originals: the uploaded bytes kept (in the database when small, else in the configured
storage), downloaded byte for byte, deleted with their document, carried by exports, and
read again to re-chunk a document."""

from __future__ import annotations

import hashlib

import pytest
from django.core.management import call_command

from documents.models import Document, DocumentChunk, DocumentOriginal, MemoryRef
from tests.conftest import make_tenant
from tests.documents.conftest import RUNBOOK, pdf_bytes

pytestmark = pytest.mark.django_db

PAGES = ["Failover starts with promoting the standby.", "Backups restore from cold storage."]


def download(tenant, document_id: str):
    return tenant.get(f"/api/v1/documents/{document_id}/original/")


def test_an_uploaded_pdf_downloads_byte_for_byte_with_its_type_and_name(alice, upload):
    pdf = pdf_bytes(PAGES)
    body = upload(pdf, filename="ops manual.pdf").json()
    assert body["original"] == {
        "filename": "ops manual.pdf",
        "size_bytes": len(pdf),
        "sha256": hashlib.sha256(pdf).hexdigest(),
        "download_url": f"/api/v1/documents/{body['id']}/original/",
    }
    response = download(alice, body["id"])
    assert response.status_code == 200
    assert response.content == pdf
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="ops manual.pdf"'
    assert response["ETag"] == f'"{hashlib.sha256(pdf).hexdigest()}"'
    kept = DocumentOriginal.objects.get(document_id=body["id"])
    assert bytes(kept.data) == pdf and kept.storage_name == ""  # small: in the database


def test_a_large_original_goes_to_the_storage_and_leaves_with_its_document(
    alice, upload, settings, originals_dir, django_capture_on_commit_callbacks
):
    settings.MEMORY_DOCUMENT_INLINE_BYTES = 0
    body = upload(RUNBOOK, filename="runbook.md").json()
    kept = DocumentOriginal.objects.get(document_id=body["id"])
    assert kept.data is None
    path = originals_dir / kept.storage_name
    assert path.read_bytes() == RUNBOOK.encode()
    assert download(alice, body["id"]).content == RUNBOOK.encode()
    with django_capture_on_commit_callbacks(execute=True):
        assert alice.delete(f"/api/v1/documents/{body['id']}/").status_code == 200
    assert not path.exists() and not DocumentOriginal.objects.filter(pk=kept.pk).exists()


def test_the_database_can_hold_every_original(alice, upload, settings, originals_dir):
    settings.MEMORY_DOCUMENT_STORAGE = "database"
    settings.MEMORY_DOCUMENT_INLINE_BYTES = 0
    body = upload(RUNBOOK, filename="runbook.md").json()
    assert bytes(DocumentOriginal.objects.get(document_id=body["id"]).data) == RUNBOOK.encode()
    assert not originals_dir.exists()


def test_another_project_cannot_download_or_rechunk(alice, charlie, upload):
    body = upload(RUNBOOK, filename="runbook.md").json()
    assert download(charlie, body["id"]).status_code == 404
    rechunk = charlie.post(f"/api/v1/documents/{body['id']}/rechunk/", {"chunk_size": 200})
    assert rechunk.status_code == 404


def test_a_document_stored_before_originals_were_kept_says_so(alice, upload):
    body = upload(RUNBOOK, filename="runbook.md").json()
    DocumentOriginal.objects.filter(document_id=body["id"]).delete()
    response = download(alice, body["id"])
    assert response.status_code == 404 and "upload it again" in response.json()["error"]["message"]
    assert alice.get(f"/api/v1/documents/{body['id']}/").json()["original"] is None
    rechunk = alice.post(f"/api/v1/documents/{body['id']}/rechunk/", {"chunk_size": 200})
    assert rechunk.status_code == 409


def test_rechunking_cuts_the_original_again_and_citations_follow_their_passage(
    alice, upload, remember, django_capture_on_commit_callbacks
):
    body = upload(RUNBOOK, filename="runbook.md").json()
    failover = DocumentChunk.objects.get(
        document_id=body["id"], heading="Database runbook / Failover"
    )
    memory = remember("Check replication lag before promoting a standby")
    quote = "more than 30 seconds behind"
    alice.post(
        f"/api/v1/memories/{memory['id']}/document-refs/",
        {"chunk_id": failover.pk, "quote": quote},
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(
            f"/api/v1/documents/{body['id']}/rechunk/", {"chunk_size": 100, "chunk_overlap": 0}
        )
    assert response.status_code == 200, response.json()
    rechunked = alice.get(f"/api/v1/documents/{body['id']}/").json()
    assert (rechunked["chunk_size"], rechunked["chunk_overlap"]) == (100, 0)
    assert rechunked["progress"]["chunks_total"] > 3 and rechunked["status"] == "ready"
    ref = MemoryRef.objects.get(memory_id=memory["id"])
    assert quote in ref.chunk.content
    assert ref.chunk.content[ref.quote_start : ref.quote_end] == quote
    assert not DocumentChunk.objects.filter(pk=failover.pk).exists()
    bad = alice.post(f"/api/v1/documents/{body['id']}/rechunk/", {"chunk_size": 10})
    assert bad.status_code == 400 and "chunk_size" in bad.json()["error"]["fields"]


def test_an_export_carries_the_original_into_another_project(
    alice, upload, settings, originals_dir, tmp_path
):
    settings.MEMORY_DOCUMENT_INLINE_BYTES = 0
    pdf = pdf_bytes(PAGES)
    body = upload(pdf, filename="ops.pdf").json()
    out = tmp_path / "alice.jsonl.gz"
    call_command("export_project", "alice", "--out", str(out), verbosity=0)
    call_command(
        "import_project", str(out), "--project", "alice-copy", "--remap", "--no-embed", verbosity=0
    )
    copy = make_tenant("alice-copy")
    copied = Document.objects.get(project=copy.project)
    assert copied.pk != body["id"]
    assert download(copy, str(copied.pk)).content == pdf
    kept = DocumentOriginal.objects.get(document=copied)
    assert kept.data is None and (originals_dir / kept.storage_name).read_bytes() == pdf
