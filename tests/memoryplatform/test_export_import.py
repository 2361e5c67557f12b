"""Exporting a project to a JSON-lines file and importing it: the same rows and search results
in the new project, checked before anything is written, idempotent, and over the API as a
background job for admin keys."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from documents.models import Document, DocumentChunk
from entities.models import Entity, EntityMemory, Relation
from memories.models import Episode, Memory, MemoryLink
from portability.sections import LEFT_OUT, SECTIONS, check_registry
from tenants.models import Project
from tests.conftest import make_tenant
from tests.documents.conftest import RUNBOOK

pytestmark = pytest.mark.django_db
SEARCH = "/api/v1/memories/search/"


@pytest.fixture
def stocked(alice, remember):
    """Alice's project with memories, an update (history), a link, a relation between two
    entities linked to a memory, and a Markdown document with its chunks."""
    a = remember("Postgres failover promotes the standby with pg_ctl promote")
    b = remember("Replication lag above 30 seconds blocks a failover")
    alice.patch(f"/api/v1/memories/{b['id']}/", {"importance": 0.9})
    link = alice.post(
        f"/api/v1/memories/{a['id']}/links/", {"to_id": b["id"], "link_type": "supports"}
    )
    assert link.status_code == 201, link.json()
    relation = alice.post(
        "/api/v1/relations/",
        {"source": "Dana", "target": "Postgres", "relation_type": "manages"},
    )
    assert relation.status_code in (200, 201), relation.json()
    entity = Entity.objects.filter(project=alice.project, normalized_name="postgres").first()
    EntityMemory.objects.get_or_create(project=alice.project, entity=entity, memory_id=a["id"])
    upload = alice.post(
        "/api/v1/documents/", {"text": RUNBOOK, "filename": "runbook.md", "user_id": "u1"}
    )
    assert upload.status_code == 201, upload.json()
    return alice


def export(slug: str, out: Path, *args: str) -> Path:
    call_command("export_project", slug, "--out", str(out), *args, verbosity=0)
    return out


def lines(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return [json.loads(line) for line in handle]


def counts(project: Project) -> dict[str, int]:
    return {
        section.name: section.model._default_manager.filter(project=project).count()
        for section in SECTIONS
    }


def found(tenant, query: str, **options) -> list[str]:
    body = tenant.post(SEARCH, {"query": query, "user_id": "u1", **options}).json()
    return [hit.get("content") or hit.get("snippet") for hit in body["results"]]


def test_a_project_imported_under_new_ids_has_the_same_rows_and_search_results(stocked, tmp_path):
    path = export("alice", tmp_path / "alice.jsonl.gz")
    call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    copy = make_tenant("alice-copy")
    assert counts(copy.project) == counts(stocked.project)
    assert counts(copy.project)["memory_history"] >= 3
    original_ids = set(Memory.objects.filter(project=stocked.project).values_list("pk", flat=True))
    copied_ids = set(Memory.objects.filter(project=copy.project).values_list("pk", flat=True))
    assert original_ids.isdisjoint(copied_ids)
    for query in ("promote the standby", "replication lag"):
        assert found(copy, query) == found(stocked, query)
        assert found(copy, query, include_documents=True) == found(
            stocked, query, include_documents=True
        )
    link = MemoryLink.objects.get(project=copy.project)
    assert {link.from_memory_id, link.to_memory_id} <= copied_ids
    relation = Relation.objects.select_related("source", "target").get(project=copy.project)
    assert (relation.source.name, relation.target.name) == ("Dana", "Postgres")
    assert relation.source.project_id == copy.project.pk


def test_the_file_has_a_header_rows_by_section_in_order_and_a_footer_with_counts(stocked, tmp_path):
    body = lines(export("alice", tmp_path / "alice.jsonl"))
    assert body[0]["header"]["project"]["slug"] == "alice"
    assert body[0]["header"]["embeddings"] is True
    sections = [line["section"] for line in body[1:-1]]
    order = [section.name for section in SECTIONS]
    assert sections == sorted(sections, key=order.index)
    assert body[-1]["footer"]["counts"]["memories"] == 2
    assert len(base64.b64decode(body[1]["data"]["embedding"])) == 384 * 4


def test_importing_the_same_file_again_changes_nothing(stocked, tmp_path):
    path = export("alice", tmp_path / "alice.jsonl")
    call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    copy = Project.objects.get(slug="alice-copy")
    before = counts(copy)
    call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    assert counts(copy) == before


def test_a_project_moved_with_its_ids_keeps_them_and_reimporting_into_it_changes_nothing(
    stocked, tmp_path
):
    path = export("alice", tmp_path / "alice.jsonl")
    ids = set(Memory.objects.filter(project=stocked.project).values_list("pk", flat=True))
    Project.objects.filter(slug="alice").delete()  # as on another deployment
    call_command("import_project", str(path), "--project", "alice", verbosity=0)
    moved = Project.objects.get(slug="alice")
    assert set(Memory.objects.filter(project=moved).values_list("pk", flat=True)) == ids
    before = counts(moved)
    call_command("import_project", str(path), "--project", "alice", verbosity=0)
    assert counts(moved) == before
    assert before["entities"] >= 2 and before["document_chunks"] >= 1


def test_keeping_ids_beside_the_original_is_refused_with_a_hint_to_remap(stocked, tmp_path):
    path = export("alice", tmp_path / "alice.jsonl")
    with pytest.raises(CommandError, match="--remap"):
        call_command("import_project", str(path), "--project", "alice-two", verbosity=0)
    assert not Memory.objects.filter(project__slug="alice-two").exists()


def test_ids_another_project_holds_in_a_later_section_are_refused_and_nothing_is_written(
    stocked, tmp_path
):
    """The keys are (id, project_id): the import, not the database, refuses ids of another
    project, section by section, and what earlier sections wrote is rolled back."""
    path = export("alice", tmp_path / "alice.jsonl")
    for model in (Memory, Episode):  # their ids are free again; the entities' are not
        model.objects.filter(project=stocked.project).delete()
    with pytest.raises(CommandError, match=r"entities .*belong to another project here.*--remap"):
        call_command("import_project", str(path), "--project", "alice-two", verbosity=0)
    assert not Memory.objects.filter(project__slug="alice-two").exists()
    assert not Entity.objects.filter(project__slug="alice-two").exists()


def test_a_bad_line_writes_nothing_and_names_its_line_and_field(stocked, tmp_path):
    path = export("alice", tmp_path / "alice.jsonl")
    body = path.read_text().splitlines()
    row = json.loads(body[2])
    assert row["section"] == "memories"
    row["data"]["importance"] = "very"
    body[2] = json.dumps(row)
    path.write_text("\n".join(body) + "\n")
    with pytest.raises(CommandError, match=r"line 3: memories\.importance"):
        call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    assert not Project.objects.filter(slug="alice-copy").exists()


def test_a_truncated_file_or_a_dangling_reference_is_refused(stocked, tmp_path):
    path = export("alice", tmp_path / "alice.jsonl")
    body = path.read_text().splitlines()
    path.write_text("\n".join(body[:-1]) + "\n")
    with pytest.raises(CommandError, match="footer: missing"):
        call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    without_memories = [line for line in body if '"section":"memories"' not in line]
    path.write_text("\n".join(without_memories) + "\n")
    with pytest.raises(CommandError, match=r"memory_history\.memory_id: refers to memories"):
        call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    assert not Project.objects.filter(slug="alice-copy").exists()


def test_an_export_without_vectors_gets_them_computed_on_import(stocked, tmp_path):
    path = export("alice", tmp_path / "alice.jsonl", "--no-embeddings")
    assert all("embedding" not in line.get("data", {}) for line in lines(path))
    call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    copy = Project.objects.get(slug="alice-copy")
    assert not Memory.objects.filter(project=copy, embedding__isnull=True).exists()
    assert not DocumentChunk.objects.filter(project=copy, embedding__isnull=True).exists()
    assert Document.objects.get(project=copy).status == "ready"


def test_every_tenant_table_is_exported_or_deliberately_left_out():
    assert check_registry() == []
    exported = {section.model._meta.label for section in SECTIONS}
    tenant_tables = {
        model._meta.label
        for model in apps.get_models()
        if not model._meta.proxy
        and any(field.name == "project" and field.is_relation for field in model._meta.fields)
    }
    assert tenant_tables - exported - LEFT_OUT == set()


def test_an_admin_key_exports_its_project_as_a_job_and_downloads_the_file(
    stocked, bob, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = stocked.post("/api/v1/exports/", {"embeddings": False})
    assert response.status_code == 202, response.json()
    job = stocked.get(f"/api/v1/exports/{response.json()['id']}/").json()
    assert job["status"] == "done", job
    assert job["counts"]["memories"] == 2
    download = stocked.get(job["download_url"])
    assert download.status_code == 200
    body = [
        json.loads(line)
        for line in gzip.decompress(b"".join(download.streaming_content)).splitlines()
    ]
    assert body[0]["header"]["project"]["slug"] == "alice"
    assert bob.get(f"/api/v1/exports/{job['id']}/").status_code == 404
    assert bob.get(job["download_url"]).status_code == 404


def test_exports_need_an_admin_key(alice):
    reader = make_tenant("alice", scopes=["read", "write"])
    assert reader.post("/api/v1/exports/", {}).status_code == 403
    assert alice.get("/api/v1/exports/not-a-uuid/").status_code == 404


def test_a_link_of_a_type_outside_the_vocabulary_imports_as_relates_to_keeping_the_original(
    alice, remember, tmp_path
):
    cause = remember("The cache warms up after each deploy")
    effect = remember("The first requests after a deploy are slow")
    alice.post(
        f"/api/v1/memories/{cause['id']}/links/", {"to_id": effect["id"], "link_type": "supports"}
    )
    path = export("alice", tmp_path / "alice.jsonl")
    body = lines(path)
    for row in body:
        if row.get("section") == "memory_links":
            row["data"]["link_type"] = "blocks"  # legacy data: a type the plan's v1 lacks
    path.write_text("\n".join(json.dumps(row) for row in body) + "\n")
    call_command("import_project", str(path), "--project", "alice-copy", "--remap", verbosity=0)
    link = MemoryLink.objects.get(project__slug="alice-copy")
    assert link.link_type == "relates_to"
    assert link.metadata["original_link_type"] == "blocks"
