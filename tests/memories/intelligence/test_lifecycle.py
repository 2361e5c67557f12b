"""Decay scores and lifecycle states, preservation, pruning."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryHistory
from memories.services.lifecycle import memories_decay, memories_prune
from platformcore.lib.actor import SYSTEM


def _age(memory_id: str, days: float, **fields) -> None:
    then = timezone.now() - timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None, **fields)


def _decay(tenant) -> dict:
    response = tenant.post("/api/v1/memories/decay/")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.parametrize(
    ("days", "importance", "state"),
    [
        (3, 0.5, "active"),  # inside the 7-day grace window although the score is < 0.5
        (10, 0.5, "dormant"),
        (30, 1.0, "active"),
        (200, 0.5, "archived"),
    ],
)
def test_decay_moves_memories_through_the_states(alice, remember, days, importance, state):
    memory = remember("The build runs on Tuesdays", importance=importance)
    _age(memory["id"], days)
    _decay(alice)
    stored = Memory.objects.get(pk=memory["id"])
    assert stored.state == state
    assert stored.decay_score == pytest.approx(importance * math.exp(-0.01 * days), abs=1e-3)


def test_decay_never_removes_a_memory_only_the_prune_job_does_with_history(alice, remember):
    memory = remember("An old note")
    _age(memory["id"], 400)
    report = _decay(alice)
    assert report["transitions"] == {"active>archived": 1}
    stored = Memory.objects.get(pk=memory["id"])
    assert (stored.state, stored.deleted_at) == ("archived", None)
    assert alice.get("/api/v1/memories/").json()["count"] == 1  # archived, still listed
    candidates = alice.get("/api/v1/memories/prune/").json()
    assert [m["id"] for m in candidates["results"]] == [memory["id"]]
    assert (candidates["count"], candidates["enabled"]) == (1, True)
    assert alice.post("/api/v1/memories/prune/", {}).json()["pruned"] == 1
    stored.refresh_from_db()
    assert (stored.state, stored.deleted_at is not None) == ("expired", True)
    entry = MemoryHistory.objects.get(memory_id=memory["id"], event="DELETE")
    assert entry.new_values == {"reason": "pruned", "threshold": 0.05}


def test_access_frequency_and_confidence_enter_the_score(alice, remember):
    memory = remember("Frequently used", confidence=0.8)
    _age(memory["id"], 50, access_count=10)
    _decay(alice)
    expected = (0.5 * math.exp(-0.5) + math.log1p(10) * 0.1) * 0.8
    assert Memory.objects.get(pk=memory["id"]).decay_score == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize(
    "fields",
    [{"pinned": True}, {"tags": ["important"]}, {"tags": ["bookmark"]}],
)
def test_pinned_and_preservation_tagged_memories_stay_active(alice, remember, fields):
    memory = remember("Keep me", **fields)
    _age(memory["id"], 400)
    _decay(alice)
    stored = Memory.objects.get(pk=memory["id"])
    assert (stored.state, stored.decay_score, stored.deleted_at) == ("active", 1.0, None)


def test_preferences_never_go_below_dormant(alice, remember):
    memory = remember("User prefers tabs", memory_type="preference", importance=0.9)
    _age(memory["id"], 1000)
    _decay(alice)
    assert Memory.objects.get(pk=memory["id"]).state == "dormant"


def test_decay_status_reports_state_score_prediction_and_preservation(alice, remember):
    memory = remember("Status check")
    _age(memory["id"], 10)
    _decay(alice)
    status = alice.get(f"/api/v1/memories/{memory['id']}/decay/").json()
    assert status["state"] == "dormant"
    assert status["preserved"] is False
    assert status["predicted_next_state"] == "archived"
    # 0.5·e^(−0.01·d) = 0.1 at d = ln 5 / 0.01 ≈ 160.9 days, 10 of them passed
    assert status["predicted_in_days"] == pytest.approx(150.9, abs=0.2)
    assert status["last_decay_update"] is not None


def test_preserve_adds_the_tag_and_resets_the_score(alice, remember):
    memory = remember("Precious")
    _age(memory["id"], 100)
    _decay(alice)
    response = alice.post(f"/api/v1/memories/{memory['id']}/preserve/", {})
    assert response.status_code == 200
    assert response.json()["tags"] == ["preserved"]
    assert (response.json()["state"], response.json()["decay_score"]) == ("active", 1.0)
    status = alice.get(f"/api/v1/memories/{memory['id']}/decay/").json()
    assert status["preserved_by"] == ["preserved"]


def test_preserve_until_lapses_by_itself(alice, remember):
    memory = remember("Until then")
    until = timezone.now() + timedelta(days=5)
    response = alice.post(
        f"/api/v1/memories/{memory['id']}/preserve/", {"until": until.isoformat()}
    )
    assert "preserved_until" in response.json()["metadata"]
    _age(memory["id"], 100)
    memories_decay(project=alice.project, actor=SYSTEM)
    assert Memory.objects.get(pk=memory["id"]).state == "active"
    memories_decay(project=alice.project, actor=SYSTEM, now=timezone.now() + timedelta(days=6))
    assert Memory.objects.get(pk=memory["id"]).state == "dormant"


def test_preserve_until_in_the_past_is_refused(alice, remember):
    memory = remember("Too late")
    past = (timezone.now() - timedelta(days=1)).isoformat()
    response = alice.post(f"/api/v1/memories/{memory['id']}/preserve/", {"until": past})
    assert response.status_code == 400
    assert "until" in response.json()["error"]["fields"]


def test_prune_soft_deletes_below_the_effective_confidence_threshold(alice, remember):
    stale = remember("Stale")
    pinned = remember("Stale but pinned", pinned=True)
    fresh = remember("Fresh")
    for memory in (stale, pinned):
        _age(memory["id"], 200)  # 0.5^(200/30) ≈ 0.0098 < 0.05
    dry = alice.post("/api/v1/memories/prune/", {"dry_run": True}).json()
    assert (dry["pruned"], dry["pruned_ids"]) == (1, [stale["id"]])
    assert Memory.objects.get(pk=stale["id"]).deleted_at is None
    report = alice.post("/api/v1/memories/prune/", {}).json()
    assert report["pruned"] == 1
    assert Memory.objects.get(pk=stale["id"]).deleted_at is not None
    assert Memory.objects.get(pk=pinned["id"]).deleted_at is None
    assert Memory.objects.get(pk=fresh["id"]).deleted_at is None


def test_expired_memories_are_purged_after_the_retention_window(alice, remember):
    expired = remember("Gone soon")
    deleted_by_user = remember("Deleted by a person")
    long_ago = timezone.now() - timedelta(days=40)
    Memory.objects.filter(pk=expired["id"]).update(state="expired", deleted_at=long_ago)
    Memory.objects.filter(pk=deleted_by_user["id"]).update(deleted_at=long_ago)
    report = memories_prune(project=alice.project, actor=SYSTEM)
    assert report.purged == 1
    assert not Memory.objects.filter(pk=expired["id"]).exists()
    assert Memory.objects.filter(pk=deleted_by_user["id"]).exists()  # its audit trail stays


def test_lifecycle_endpoints_never_reach_another_project(alice, charlie, remember):
    memory = remember("Alice only")
    _age(memory["id"], 400)
    assert charlie.get(f"/api/v1/memories/{memory['id']}/decay/").status_code == 404
    assert charlie.post(f"/api/v1/memories/{memory['id']}/preserve/", {}).status_code == 404
    assert charlie.post("/api/v1/memories/decay/").json()["scanned"] == 0
    assert charlie.post("/api/v1/memories/prune/", {}).json()["pruned"] == 0
    assert Memory.objects.get(pk=memory["id"]).deleted_at is None


def test_bad_prune_threshold_is_a_named_400(alice):
    response = alice.post("/api/v1/memories/prune/", {"threshold": 2})
    assert response.status_code == 400
    assert "threshold" in response.json()["error"]["fields"]
