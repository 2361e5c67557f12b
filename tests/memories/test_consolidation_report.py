"""The consolidation pipeline's report: per-stage counts as Memento's memory_consolidate
returns them (duplicates merged, contradictions, decay moves, embeddings back-filled,
pruned), through REST; memory_stats by lifecycle tier."""

from __future__ import annotations

from django.utils import timezone

from memories.models import Memory

REACT = [
    "React hooks let you use state in function components",
    "React hooks let function components use state",
    "With React hooks, function components can use state",
]


def _store_all(tenant, contents, **fields):
    """Stored with near-duplicate merging off, as if written before it existed."""
    tenant.project.settings = {"dedup_threshold": 1.0}
    tenant.project.save()
    ids = []
    for index, content in enumerate(contents):
        body = {"content": content, "user_id": "u1", "confidence": 0.5 + index / 20, **fields}
        ids.append(tenant.post("/api/v1/memories/", body).json()["id"])
    return ids


def _age(memory_id, days):
    then = timezone.now() - timezone.timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None)


def _prepared(alice):
    """Three near-duplicates, a contradiction, a memory to archive, one to prune, one without
    a vector."""
    _store_all(alice, [*REACT, "User is vegetarian", "User is not vegetarian"])
    old = alice.post("/api/v1/memories/", {"content": "Old news", "user_id": "u2"}).json()
    _age(old["id"], 100)  # dormant by decay, above the prune threshold
    ancient = alice.post(
        "/api/v1/memories/", {"content": "Ancient trivia", "user_id": "u3", "confidence": 0.2}
    ).json()
    _age(ancient["id"], 900)
    bare = alice.post("/api/v1/memories/", {"content": "Stored while down", "user_id": "u4"})
    Memory.objects.filter(pk=bare.json()["id"]).update(embedding=None)
    return old, ancient


def test_the_report_counts_every_stage(alice):
    old, ancient = _prepared(alice)
    report = alice.post("/api/v1/memories/consolidate/", {}).json()
    stages = report["stages"]
    assert report["stages_run"] == ["embeddings", "merge", "utility", "decay", "prune"]
    assert stages["embeddings_backfilled"] == 1
    assert stages["duplicates_merged"] == 2
    assert stages["clusters_found"] == 1
    assert stages["contradictions_found"] == 1
    assert stages["utility_scored"] == 8 - 2  # the merged ones are gone
    assert stages["demoted"] == 2 and stages["promoted"] == 0
    assert stages["transitions"] == {"active>dormant": 1, "active>archived": 1}
    assert stages["pruned"] == 1
    # the merge report's own fields are still there
    assert report["memories_merged"] == 2
    assert Memory.objects.get(pk=old["id"]).state == "dormant"
    assert Memory.objects.get(pk=ancient["id"]).deleted_at is not None


def test_a_dry_run_reports_the_same_counts_and_changes_nothing(alice):
    _prepared(alice)
    before = list(Memory.objects.order_by("pk").values_list("pk", "state", "deleted_at"))
    report = alice.post("/api/v1/memories/consolidate/", {"dry_run": True}).json()
    stages = report["stages"]
    assert report["dry_run"] is True
    assert (stages["duplicates_merged"], stages["demoted"], stages["pruned"]) == (2, 2, 1)
    assert stages["embeddings_backfilled"] == 1
    after = list(Memory.objects.order_by("pk").values_list("pk", "state", "deleted_at"))
    assert after == before
    assert not Memory.objects.filter(verified_at__isnull=False).exists()


def test_stages_can_be_chosen(alice):
    _prepared(alice)
    report = alice.post("/api/v1/memories/consolidate/", {"stages": ["merge"]}).json()
    assert report["stages_run"] == ["merge"]
    assert report["stages"]["duplicates_merged"] == 2
    assert report["stages"]["pruned"] == 0
    assert not Memory.objects.exclude(state="active").exists()


def test_an_unknown_stage_is_a_400_naming_the_field(alice):
    response = alice.post("/api/v1/memories/consolidate/", {"stages": ["vacuum"]})
    assert response.status_code == 400
    assert any(name.startswith("stages") for name in response.json()["error"]["fields"])


def test_pruning_switched_off_prunes_nothing_in_the_pipeline(alice):
    _, ancient = _prepared(alice)
    alice.project.settings = {**alice.project.settings, "pruning": False}
    alice.project.save()
    stages = alice.post("/api/v1/memories/consolidate/", {}).json()["stages"]
    assert (stages["pruned"], stages["pruning_enabled"]) == (0, False)
    assert Memory.objects.get(pk=ancient["id"]).deleted_at is None


def test_charlies_consolidation_touches_none_of_alices_memories(alice, charlie):
    _prepared(alice)
    stages = charlie.post("/api/v1/memories/consolidate/", {}).json()["stages"]
    assert stages["duplicates_merged"] == stages["demoted"] == stages["pruned"] == 0
    assert stages["embeddings_backfilled"] == 0
    assert Memory.objects.filter(deleted_at__isnull=False).count() == 0


def test_stats_give_the_distribution_by_tier(alice, remember):
    remember("A preference", memory_type="preference")
    old = remember("Old news")
    _age(old["id"], 400)
    stale = remember("Unread for two weeks", memory_type="procedure")
    _age(stale["id"], 14)
    remember("A fresh procedure", memory_type="procedure")
    alice.post("/api/v1/memories/decay/")  # the stored tiers move with the decay job
    stats = alice.get("/api/v1/analytics/overview/").json()
    assert stats["memories_by_tier"] == {"hot": 1, "warm": 1, "cold": 1, "permanent": 1}
    assert stats["mean_utility"] == 0.5
