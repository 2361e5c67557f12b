"""Decay control (the mcp-ai-memory plan): pausing and resuming the scheduled decay per
project, a memory's own decay rate, the link boost, and compression of archived memories
that loses nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memories.models import MaintenanceState, Memory, MemoryArchive
from memories.services.archive import summarize
from memories.services.decay_control import decay_pause
from memories.services.lifecycle import memories_decay
from memories.tasks import run_decay
from platformcore.lib.actor import command

LONG = (
    "The billing service retries failed card payments three times with exponential backoff "
    "starting at 30 seconds. After the third failure the invoice moves to the dunning queue, "
    "which emails the customer on days 1, 3 and 7 and suspends the workspace on day 14. "
    "Support can lift a suspension from the admin console under Billing > Overrides, but only "
    "a finance lead can write off the debt. The retry schedule lives in billing/config.py and "
    "was last changed in release 4.12 after the March incident with Stripe webhooks."
)


def _age(memory_id, days):
    then = timezone.now() - timezone.timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None)


# --- pause and resume ------------------------------------------------------------------------


def test_a_paused_project_is_skipped_by_the_scheduled_job_and_resumed_runs_again(alice, remember):
    memory = remember("Old news")
    _age(memory["id"], 400)
    assert alice.post("/api/v1/memories/decay/pause/").json()["paused"] is True
    assert run_decay(alice.project.pk)["alice"]["paused"] is True
    assert Memory.objects.get(pk=memory["id"]).state == "active"
    status = alice.get("/api/v1/memories/decay/").json()
    assert status["paused"] is True and status["paused_by"].startswith("key:")
    assert alice.post("/api/v1/memories/decay/resume/").json()["paused"] is False
    assert run_decay(alice.project.pk)["alice"]["transitions"] == {"active>archived": 1}


def test_an_explicit_decay_run_still_runs_while_paused(alice, remember):
    memory = remember("Old news")
    _age(memory["id"], 400)
    decay_pause(project=alice.project, actor=command("test"))
    report = alice.post("/api/v1/memories/decay/").json()
    assert report["transitions"] == {"active>archived": 1}
    assert report["demoted"] == 1


def test_pausing_alices_decay_leaves_charlies_running(alice, charlie):
    alice.post("/api/v1/memories/decay/pause/")
    status = charlie.get("/api/v1/memories/decay/").json()
    assert (status["project"], status["paused"]) == ("charlie", False)


def test_pause_and_resume_need_the_admin_scope(alice):
    from tests.conftest import make_tenant

    writer = make_tenant("alice", scopes=["read", "write"])
    assert writer.post("/api/v1/memories/decay/pause/").status_code == 403
    assert not MaintenanceState.objects.filter(
        project=alice.project, decay_paused_at__isnull=False
    ).exists()


def test_the_command_pauses_resumes_and_reports(alice):
    out = StringIO()
    call_command("decay_control", "pause", "--project", "alice", stdout=out)
    call_command("decay_control", "status", "--project", "alice", stdout=out)
    assert "alice: decay paused since" in out.getvalue()
    call_command("decay_control", "resume", "--project", "alice", stdout=out)
    assert out.getvalue().strip().endswith("alice: decay running")


def test_the_command_fails_on_an_unknown_project(db):
    with pytest.raises(CommandError):
        call_command("decay_control", "pause", "--project", "nobody", stdout=StringIO())


# --- a memory's own decay rate, the link boost -------------------------------------------------


def test_a_memory_with_its_own_zero_rate_does_not_decay_by_age(alice, remember):
    kept, plain = remember("Kept fact", user_id="u1"), remember("Plain fact", user_id="u2")
    response = alice.patch(f"/api/v1/memories/{kept['id']}/decay/", {"decay_rate": 0.0})
    assert response.status_code == 200
    assert response.json()["decay_rate"] == 0.0
    for memory in (kept, plain):
        _age(memory["id"], 400)
    memories_decay(project=alice.project, actor=command("test"))
    assert Memory.objects.get(pk=kept["id"]).state == "active"
    assert Memory.objects.get(pk=plain["id"]).state == "archived"
    reset = alice.patch(f"/api/v1/memories/{kept['id']}/decay/", {"decay_rate": None}).json()
    assert reset["decay_rate"] is None


def test_a_decay_rate_out_of_range_is_a_400_naming_the_field(alice, remember):
    memory = remember("A fact")
    response = alice.patch(f"/api/v1/memories/{memory['id']}/decay/", {"decay_rate": 5})
    assert response.status_code == 400
    assert "decay_rate" in response.json()["error"]["fields"]


def test_charlie_cannot_set_the_decay_rate_of_alices_memory(alice, charlie, remember):
    memory = remember("A fact")
    response = charlie.patch(f"/api/v1/memories/{memory['id']}/decay/", {"decay_rate": 0.5})
    assert response.status_code == 404
    assert Memory.objects.get(pk=memory["id"]).decay_rate is None


def test_the_link_boost_keeps_a_well_linked_memory_above_an_unlinked_one(alice, remember):
    hub, lonely = remember("Hub fact", user_id="u1"), remember("Lonely fact", user_id="u2")
    for i in range(6):
        other = remember(f"Neighbour {i}", user_id="u1")
        alice.post(f"/api/v1/memories/{other['id']}/links/", {"to_id": hub["id"]})
    alice.project.settings = {"decay_link_boost": 0.1}
    alice.project.save()
    status = alice.get(f"/api/v1/memories/{hub['id']}/decay/").json()
    assert status["links"] == 6
    lonely_status = alice.get(f"/api/v1/memories/{lonely['id']}/decay/").json()
    assert status["current_score"] > lonely_status["current_score"]


# --- compression of archived memories ------------------------------------------------------------


def _row(memory_id):
    memory = Memory.objects.get(pk=memory_id)
    return {
        name: getattr(memory, name)
        for name in (
            "content",
            "context",
            "content_hash",
            "token_count",
            "tags",
            "metadata",
            "version",
            "memory_type",
            "importance",
            "confidence",
            "updated_at",
        )
    } | {"embedding": list(memory.embedding)}


def test_an_archived_long_memory_is_compressed_and_restored_without_loss(alice, remember):
    memory = remember(LONG, context="from the billing runbook", tags=["billing"])
    before = _row(memory["id"])
    history = alice.get(f"/api/v1/memories/{memory['id']}/history/").json()
    _age(memory["id"], 400)
    report = memories_decay(project=alice.project, actor=command("test"))
    assert report.compressed == 1
    compressed = alice.get(f"/api/v1/memories/{memory['id']}/").json()
    assert compressed["compressed"] is True
    assert compressed["content"] == summarize(LONG)
    assert len(compressed["content"]) < len(LONG)
    assert MemoryArchive.objects.get(memory_id=memory["id"]).content == LONG
    # the summary is searchable by keyword; the embedding is still the full text's
    found = alice.post(
        "/api/v1/memories/search/", {"query": "exponential backoff", "mode": "keyword"}
    ).json()
    assert memory["id"] in [hit["id"] for hit in found["results"]]
    restored = alice.post(f"/api/v1/memories/{memory['id']}/decompress/").json()
    assert restored["compressed"] is False
    assert _row(memory["id"]) == before
    assert alice.get(f"/api/v1/memories/{memory['id']}/history/").json() == history
    assert not MemoryArchive.objects.filter(memory_id=memory["id"]).exists()


def test_a_compressed_memory_read_again_gets_its_text_back_at_the_next_decay(alice, remember):
    memory = remember(LONG)
    _age(memory["id"], 400)
    memories_decay(project=alice.project, actor=command("test"))
    Memory.objects.filter(pk=memory["id"]).update(last_accessed_at=timezone.now())
    report = memories_decay(project=alice.project, actor=command("test"))
    assert report.restored == 1
    assert Memory.objects.get(pk=memory["id"]).content == LONG


def test_an_edit_made_while_compressed_is_kept_when_the_archive_is_dropped(alice, remember):
    memory = remember(LONG)
    _age(memory["id"], 400)
    memories_decay(project=alice.project, actor=command("test"))
    alice.patch(f"/api/v1/memories/{memory['id']}/", {"content": "Billing retries twice now"})
    alice.post(f"/api/v1/memories/{memory['id']}/decompress/")
    assert Memory.objects.get(pk=memory["id"]).content == "Billing retries twice now"


def test_short_memories_are_archived_but_not_compressed(alice, remember):
    memory = remember("Old news")
    _age(memory["id"], 400)
    assert memories_decay(project=alice.project, actor=command("test")).compressed == 0
    assert alice.post(f"/api/v1/memories/{memory['id']}/decompress/").status_code == 400


def test_charlie_cannot_decompress_alices_memory(alice, charlie, remember):
    memory = remember(LONG)
    _age(memory["id"], 400)
    memories_decay(project=alice.project, actor=command("test"))
    assert charlie.post(f"/api/v1/memories/{memory['id']}/decompress/").status_code == 404
    assert Memory.objects.get(pk=memory["id"]).compressed is True
